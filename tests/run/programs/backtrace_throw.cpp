/* A C++ program that walks its own stack and throws: it calls backtrace()
 * through a GOT slot (-fno-plt, -z now: no backtrace@plt to see), so
 * reticle must find the import itself and run it with original return
 * addresses. Then the unwinder finds each frame's handler by its original
 * return address and lands in the original code at the landing pad, which
 * must lead back into the copy (not into a return-point patch: SIGILL).
 * ends_in_fail's call is its last instruction (fail does not return): its
 * frame must still be named. Names only: addresses change with ASLR. */
#include <execinfo.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>

static void show(const char *why)
{
	void *pcs[32];
	int n = backtrace(pcs, 32);
	char **names = backtrace_symbols(pcs, n);
	printf("-- %s\n", why);
	for (int i = 0; i < n && names; i++) {
		char *at = strstr(names[i], " [");
		if (at)
			*at = 0;
		printf("%s\n", names[i]);
	}
	free(names);
}

[[noreturn]] __attribute__((noinline)) void fail(int k)
{
	if (k == 0)
		show("fail");
	throw std::runtime_error("k=" + std::to_string(k));
}

__attribute__((noinline)) void ends_in_fail(int k) { fail(k); }

__attribute__((noinline)) int middle(int k)
{
	std::string note = "middle " + std::to_string(k);
	try {
		if (k % 3 == 0)
			ends_in_fail(k);
		return k + (int)note.size();
	} catch (const std::exception &e) {
		printf("%s caught %s\n", note.c_str(), e.what());
		return -k;
	}
}

int main()
{
	long sum = 0;
	for (int i = 0; i < 300; i++)
		sum += middle(i);
	printf("%ld\n", sum);
	show("main");
	return 3;
}
