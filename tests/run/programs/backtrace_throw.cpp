/* A C++ program that walks its own stack and throws: it calls backtrace()
 * through a GOT slot (-fno-plt, -z now: no backtrace@plt to see), so
 * reticle must find the import itself and run it with original return
 * addresses. Then the unwinder finds each frame's handler by its original
 * return address and lands in the original code at the landing pad, which
 * must lead back into the copy (not into a return-point patch: SIGILL).
 * ends_in_fail's call is its last instruction (fail does not return): its
 * frame must still be named; so must call_through's, whose call returns
 * inside the 5 bytes a jump at its entry would take (Rust's
 * __rust_begin_short_backtrace has this shape). Names only: addresses
 * change with ASLR. */
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

extern "C" void call_through(void (*fn)(void));
__asm__(".globl call_through\n"
	".type call_through, @function\n"
	"call_through:\n"
	".cfi_startproc\n"
	"push %rax\n"
	".cfi_adjust_cfa_offset 8\n"
	"call *%rdi\n"
	"pop %rcx\n"
	".cfi_adjust_cfa_offset -8\n"
	"ret\n"
	".cfi_endproc\n"
	".size call_through, .-call_through\n");

static long sum;

__attribute__((noinline)) static void run_all(void)
{
	for (int i = 0; i < 300; i++)
		sum += middle(i);
}

int main()
{
	call_through(run_all);
	call_through(run_all);
	printf("%ld\n", sum);
	show("main");
	return 3;
}
