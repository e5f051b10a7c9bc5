/* What the commands that instrument (run, attach, top, detach) share: where
 * the warm-start cache lives and how much it may hold, and who traces a
 * process. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"

uint64_t cli_cache_max_bytes(void)
{
	const char *v = getenv("RETICLE_CACHE_MAX_MB");
	char *end;
	unsigned long long mb = v ? strtoull(v, &end, 10) : 0;
	return v && *v && !*end ? (uint64_t)mb << 20 : 0;
}

/* $RETICLE_CACHE_DIR, $XDG_CACHE_HOME/reticle or $HOME/.cache/reticle
 * (malloc'd), NULL when none is set. */
char *cli_warm_cache_dir(void)
{
	const char *dir = getenv("RETICLE_CACHE_DIR"), *xdg = getenv("XDG_CACHE_HOME"),
		   *home = getenv("HOME");
	char *out = NULL;
	if (dir && *dir)
		return strdup(dir);
	if (xdg && *xdg == '/') {
		if (asprintf(&out, "%s/reticle", xdg) < 0)
			return NULL;
	} else if (home && *home) {
		if (asprintf(&out, "%s/.cache/reticle", home) < 0)
			return NULL;
	}
	return out;
}

long cli_tracer_pid(pid_t pid)
{
	char path[64], line[256];
	long tracer = -1;
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "re");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "TracerPid: %ld", &tracer) == 1)
			break;
	fclose(f);
	return tracer;
}
