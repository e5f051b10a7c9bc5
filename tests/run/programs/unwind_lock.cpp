/* Threads throw exceptions without pause (the unwinder holds libgcc's
 * object lock while it meets its own functions for the first time) while
 * the main thread calls hundreds of C++ functions for the first time, each
 * of which reticle registers unwind information for by an inferior call
 * that takes the same lock. reticle must not wait for a thread it keeps
 * stopped. */
#include <atomic>
#include <cstdio>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

static std::atomic<int> stop{0};

template <int N> __attribute__((noinline)) int g(int x)
{
	if (x < 0)
		throw std::runtime_error("g");
	return x * (N + 3) + 1;
}

typedef int (*fn)(int);
template <int... I> static std::vector<fn> table(std::integer_sequence<int, I...>)
{
	return { g<I>... };
}

__attribute__((noinline)) int thrower(int k)
{
	if (k >= 0)
		throw std::runtime_error("t");
	return k;
}

static void spin()
{
	long c = 0;
	while (!stop.load()) {
		try {
			thrower((int)(c++ & 7));
		} catch (const std::exception &) {
		}
	}
}

int main()
{
	std::vector<fn> tab = table(std::make_integer_sequence<int, 600>());
	std::vector<std::thread> ts;
	for (int t = 0; t < 3; t++)
		ts.emplace_back(spin);
	long s = 0;
	for (size_t i = 0; i < tab.size(); i++) {
		try {
			s += tab[i](i % 5 == 0 ? -1 : (int)i);
		} catch (const std::exception &) {
			s -= 1;
		}
	}
	stop = 1;
	for (auto &t : ts)
		t.join();
	printf("%ld\n", s);
	return 0;
}
