/* Where the warm-start cache lives, and how much it may hold: shared by the
 * commands that instrument (run, attach, top). */
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
