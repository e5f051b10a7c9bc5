/* Times rtl_binary_open and rtl_binary_check_functions on each argument
 * (best of 5 runs, or of N with -n N: -n 1 and one argument time a first
 * open, where all memory is fresh as in `reticle run`). Built and run by
 * bench/binary-open.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <reticle/binary.h>
#include <reticle/error.h>

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int reps = 5, first = 1;
	if (argc > 2 && !strcmp(argv[1], "-n")) {
		reps = atoi(argv[2]) > 0 ? atoi(argv[2]) : 1;
		first = 3;
	}
	for (int i = first; i < argc; i++) {
		double best_open = 1e9, best_check = 1e9;
		size_t nf = 0, ncp = 0;
		for (int rep = 0; rep < reps; rep++) {
			rtl_binary *b;
			double t0 = now();
			int err = rtl_binary_open(argv[i], &b);
			double t1 = now();
			if (err) {
				printf("%s: %s\n", argv[i], rtl_strerror(err));
				break;
			}
			rtl_binary_check_functions(b);
			double t2 = now();
			best_open = t1 - t0 < best_open ? t1 - t0 : best_open;
			best_check = t2 - t1 < best_check ? t2 - t1 : best_check;
			nf = rtl_binary_function_count(b);
			ncp = rtl_binary_code_pointer_count(b);
			rtl_binary_close(b);
		}
		if (nf)
			printf("%-45s open %7.1f ms  check %6.1f ms  %6zu functions %7zu code pointers\n",
			       argv[i], best_open * 1e3, best_check * 1e3, nf, ncp);
	}
	return 0;
}
