/* Descriptions given as files at run time (reticle sim --isa FILE.nml): the
 * seed's Fsimg way. reticle-nmlgen writes C, the system C compiler builds a
 * shared object against src/sim/isa.h, and dlopen loads it; the generated
 * code calls back into the core (the reticle executable exports it). The
 * generator and header paths are those of the build tree. */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <reticle/error.h>
#include "sim/machine.h"

#ifndef RETICLE_NMLGEN
#define RETICLE_NMLGEN "reticle-nmlgen"
#endif
#ifndef RETICLE_SIM_INCLUDE
#define RETICLE_SIM_INCLUDE "."
#endif

/* Runs cmd; on failure copies the first line of its output into msg. */
static int run(const char *cmd, char *msg, size_t n)
{
	char line[512] = "";
	FILE *p = popen(cmd, "r");
	if (!p)
		return -errno;
	if (fgets(line, sizeof line, p))
		line[strcspn(line, "\n")] = 0;
	while (fgetc(p) != EOF)
		;
	int st = pclose(p);
	if (st != 0) {
		snprintf(msg, n, "%s", *line ? line : "command failed");
		return -RTL_ERR_BAD_INPUT;
	}
	return 0;
}

static int shell_safe(const char *s)
{
	for (; *s; s++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+", *s))
			return 0;
	return 1;
}

int sim_isa_from_file(const char *path, const struct rtl_sim_isa **out, char *msg, size_t n)
{
	char dir[] = "/tmp/reticle-isa-XXXXXX", cmd[4096];
	int err;

	if (access(path, R_OK) < 0) {
		snprintf(msg, n, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (!shell_safe(path)) {
		snprintf(msg, n, "%s: unusual characters in the description's path", path);
		return -RTL_ERR_BAD_OPTION;
	}
	if (!mkdtemp(dir))
		return -errno;
	snprintf(cmd, sizeof cmd, "'%s' '%s' file '%s/gen.c' 2>&1 && "
		 "${CC:-cc} -std=gnu11 -O2 -w -fPIC -shared -I'%s' -o '%s/isa.so' '%s/gen.c' -lm 2>&1",
		 RETICLE_NMLGEN, path, dir, RETICLE_SIM_INCLUDE, dir, dir);
	err = run(cmd, msg, n);
	if (!err) {
		snprintf(cmd, sizeof cmd, "%s/isa.so", dir);
		void *h = dlopen(cmd, RTLD_NOW | RTLD_LOCAL);
		*out = h ? dlsym(h, "rtl_sim_isa_file") : NULL;
		if (!*out) {
			snprintf(msg, n, "%s: cannot load the generated simulator: %s", path, dlerror());
			err = -RTL_ERR_BAD_INPUT;
		}
	}
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		rtl_warn("could not remove %s", dir);
	return err;
}
