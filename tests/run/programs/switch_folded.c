/* Switches for cover against gcov: one on a constant, which GCC folds even
 * at -O0 (no dispatch: gcov counts none of its case labels, and a case
 * label above code of the kept case must not be given that code), and one
 * on a character whose cases share a break (run.cover_gcov.switch_folded). */
#include <stdio.h>

__attribute__((noinline)) unsigned long flags_of(void)
{
	unsigned long flags = 0;
	switch ((int)sizeof(int)) {
	case 2:     break;
	case 4:     flags += 1;     break;
	case 8:     flags += 2;     break;
	default:    flags += 3;
	}
	return flags;
}

__attribute__((noinline)) int parse(const char *mode)
{
	int r = 0;
	do {
		switch (*mode) {
		case 'r':
			r |= 1;
			break;
		case '+':
			return -1;
		case 'b':       /* ignored */
			break;
		case 'e':
			r |= 4;
			break;
		default:
			r |= 8;
		}
	} while (*++mode);
	return r;
}

int main(int argc, char **argv)
{
	printf("%lu %d\n", flags_of(), parse(argc > 1 ? argv[1] : "rb"));
	return 0;
}
