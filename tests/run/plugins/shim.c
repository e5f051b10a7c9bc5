/* An LD_PRELOAD interposer of puts, as fakeroot-style shims are written:
 * it finds the real puts with dlsym(RTLD_NEXT), which identifies the
 * calling object by the return address. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) void shim_note(void) { __asm__ volatile(""); }

int puts(const char *s)
{
	static int (*real)(const char *);
	if (!real)
		real = (int (*)(const char *))dlsym(RTLD_NEXT, "puts");
	if (!real) {
		fprintf(stderr, "shim: dlsym(RTLD_NEXT, puts): %s\n", dlerror());
		exit(3);
	}
	shim_note();
	fputs("[shim] ", stdout);
	return real(s);
}
