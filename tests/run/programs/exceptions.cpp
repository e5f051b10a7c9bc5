// C++ exceptions thrown through instrumented frames and caught above them.
#include <cstdio>
#include <stdexcept>
#include <string>

#define NOINLINE __attribute__((noinline))

NOINLINE int leaf(int i)
{
	if (i % 3 == 0)
		throw std::runtime_error("bad " + std::to_string(i));
	return i * 2;
}

NOINLINE int middle(int i)
{
	std::string guard = "frame";   // a destructor runs during unwinding
	return leaf(i) + (int)guard.size();
}

int main()
{
	int caught = 0, sum = 0;
	for (int i = 0; i < 300; i++) {
		try {
			sum += middle(i);
		} catch (const std::exception &e) {
			caught++;
		}
	}
	std::printf("caught %d sum %d\n", caught, sum);
	return 0;
}
