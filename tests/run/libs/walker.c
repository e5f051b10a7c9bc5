/* A library that walks its caller's stack, as libasan's reports,
 * libgfortran's and libruby's backtraces do: the executable imports
 * neither backtrace nor _Unwind_Backtrace, so only the library tells
 * reticle that return addresses must be the program's own. */
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>

void walker_report(void)
{
	void *pcs[32];
	int n = backtrace(pcs, 32);
	for (int i = 0; i < n; i++) {
		Dl_info info;
		const char *name = dladdr(pcs[i], &info) && info.dli_sname ? info.dli_sname : "?";
		printf("#%d %s\n", i, name);
		if (name[0] == 'm' && name[1] == 'a' && name[2] == 'i' && name[3] == 'n' && !name[4])
			break;   /* below main: libc's start, the same either way */
	}
}
