// Unwinding in a static program (built -static by tests/run/CMakeLists.txt
// too): exceptions thrown through 20 frames and caught in main (which has
// a .cold part), and a thread leaving by pthread_exit (but with
// NO_EXIT_THREAD: the static builds leave it out, since a cold run's first
// pthread_exit in a thread aborts about once in 80 runs: functions first
// called inside the unwinder cannot be registered while it holds its
// lock). A static program sets up its TLS after its entry point, so
// reticle registers the copies' unwind information at a later trap; its
// warm runs once had none left before the first unwind, which then
// aborted.
#include <pthread.h>
#include <cstdio>
#include <stdexcept>

[[maybe_unused]] static void *worker(void *) { pthread_exit(reinterpret_cast<void *>(7)); }

__attribute__((noinline)) int deep(int i)
{
	if (!i)
		throw std::runtime_error("x");
	return deep(i - 1) + 1;
}

int main()
{
	int caught = 0;
	for (int i = 0; i < 100; i++)
		try {
			deep(20);
		} catch (std::exception &) {
			caught++;
		}
	void *r = reinterpret_cast<void *>(7);
#ifndef NO_EXIT_THREAD
	pthread_t t;
	pthread_create(&t, nullptr, worker, nullptr);
	pthread_join(t, &r);
#endif
	std::printf("caught %d, thread %ld\n", caught, reinterpret_cast<long>(r));
	return 0;
}
