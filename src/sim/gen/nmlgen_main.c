/* reticle-nmlgen: turns a Sim-nML description into a C simulator source.
 *   reticle-nmlgen DESCRIPTION.nml PREFIX OUTPUT.c   generate
 *   reticle-nmlgen --check DESCRIPTION.nml           parse, flatten, check encodings */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "nml.h"

/* The tool never frees its syntax tree (it exits when done): tell
 * LeakSanitizer, in RETICLE_SANITIZE builds, not to report it. */
const char *__lsan_default_options(void);
const char *__lsan_default_options(void) { return "detect_leaks=0"; }

int main(int argc, char **argv)
{
	struct spec spec = { 0 };
	FILE *out;

	if (argc == 3 && !strcmp(argv[1], "--check")) {
		nml_parse_file(argv[2], &spec);
		out = fopen("/dev/null", "w");
		return nml_generate(&spec, "check", out);
	}
	if (argc != 4) {
		fputs("usage: reticle-nmlgen DESCRIPTION.nml PREFIX OUTPUT.c\n"
		      "       reticle-nmlgen --check DESCRIPTION.nml\n", stderr);
		return 2;
	}
	nml_parse_file(argv[1], &spec);
	out = fopen(argv[3], "w");
	if (!out) {
		perror(argv[3]);
		return 1;
	}
	if (nml_generate(&spec, argv[2], out)) {
		fclose(out);
		remove(argv[3]);
		return 1;
	}
	if (fclose(out)) {
		perror(argv[3]);
		remove(argv[3]);
		return 1;
	}
	return 0;
}
