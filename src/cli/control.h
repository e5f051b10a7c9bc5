/* Control files for reticle run -f (control.c). */
#ifndef RETICLE_CLI_CONTROL_H
#define RETICLE_CLI_CONTROL_H

#include <stddef.h>

/* What a control file sets; NULL, 0 or -1 (cold, stats) where it is silent. */
struct run_control {
	char *application;
	char **arguments;
	size_t narguments;
	char *collect;            /* comma-separated, as -c */
	char **plugins;           /* "./x.so[:ARGS]", as --collector */
	size_t nplugins;
	char *output;
	int cold, stats;
	char **debug_dirs;
	size_t ndebug_dirs;
	unsigned freq;            /* 0 when unset */
	char *event;
	char **modules, **functions;   /* the scope's globs */
	size_t nmodules, nfunctions;
	char *from, *to;               /* the span's edges */
};

/* Runs the control file PATH and reads what it set. 0, or a negative
 * error after a message naming the file and line. */
int control_load(const char *path, struct run_control *c);
void control_free(struct run_control *c);

#endif
