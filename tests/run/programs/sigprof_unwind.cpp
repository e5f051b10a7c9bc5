// An in-process sampling profiler's handler: SIGPROF every 200 us walks
// the interrupted stack with _Unwind_Backtrace (as gperftools and absl
// do), over small functions whose exits calltime times. The module has a
// try/catch, so reticle registers its copies' unwind information. An
// interrupt between an epilogue's pops and its return leaves the unwinder
// the rows gcc keeps there (rbp at CFA-16, not restored): the exit's
// snippets once kept their registers in those words, and the walk read a
// timer's word for rbp and crashed. Prints what does not depend on where
// the samples fell. The timer stops before the one throw: a SIGPROF during
// that throw's unwind would deadlock on libgcc's object lock, which every
// lookup takes once objects are registered (docs/engine.md, Known limits).
#include <csignal>
#include <cstdio>
#include <cstring>
#include <sys/time.h>
#include <unwind.h>

static volatile long samples, frames;

static _Unwind_Reason_Code count_frame(struct _Unwind_Context *, void *)
{
	frames++;
	return _URC_NO_REASON;
}

static void on_prof(int) { samples++; _Unwind_Backtrace(count_frame, nullptr); }

__attribute__((noinline)) long body(long x)
{
	long s = 0;
	for (int i = 0; i < 100; i++)
		s += (x * i) % 7;
	return s;
}

__attribute__((noinline)) long mid(long x) { return body(x) + body(x + 1); }

static void maybe_throw(int x)
{
	if (x > 5)
		throw x;
}
static void (*volatile thrower)(int) = maybe_throw;

int main()
{
	struct sigaction sa;
	std::memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, nullptr);
	struct itimerval it = { { 0, 200 }, { 0, 200 } };
	setitimer(ITIMER_PROF, &it, nullptr);
	long s = 0;
	for (long i = 0; i < 2000000; i++)
		s += mid(i);
	struct itimerval off = {};
	setitimer(ITIMER_PROF, &off, nullptr);
	try {
		thrower(9);
	} catch (int e) {
		s += e;
	}
	std::printf("s=%ld sampled=%d\n", s, samples > 0 && frames >= samples);
	return 0;
}
