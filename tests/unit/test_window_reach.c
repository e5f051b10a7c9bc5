/* A code cache must lie where every byte of it reaches every byte of its
 * module with a rel32 (find_free_range_near): its copies address the
 * module's data, and the module's entries jump into it. The only free
 * range here lies just beyond that reach (a hole in a reserved 6 GiB):
 * none may be given, and one well within it is taken. Before the fix,
 * the reach's safety margin was subtracted from it on one side (a macro
 * without parentheses): libLLVM's 16-times window lay 2 GiB + 30 MiB from
 * the module's end, and clang under bbv died ("pure virtual method
 * called"). */
#include <stdbool.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>
#include "check.h"
#include "runtime/window.h"

enum { MIB = 1 << 20 };

static bool reaches(uint64_t a, size_t len, uint64_t lo, uint64_t hi)
{
	/* the farthest pair of bytes: the window's first and the module's
	 * last, or the module's first and the window's last */
	uint64_t far = a < lo ? hi - a : a + len - lo;
	return far < (1ull << 31);
}

int main(void)
{
	const uint64_t size = 6ull << 30;
	uint8_t *r = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (r == MAP_FAILED) {
		fprintf(stderr, "no 6 GiB of address space: not tested\n");
		return 0;
	}
	uint64_t lo = (uint64_t)r + (3ull << 30), hi = lo + MIB;   /* the module */
	const size_t len = 16 * MIB;
	/* a hole from 2,100 to 2,040 MiB below the module: a window there
	 * would be 2,040 MiB or more from the module's end */
	uint64_t hole = lo - 2100ull * MIB;
	CHECK(!munmap((void *)hole, 60ull * MIB));
	uint64_t a = find_free_range_near(getpid(), lo, hi, len, 0, 0);
	CHECK(a == 0 || reaches(a, len, lo, hi));
	/* and a hole from 1,500 to 1,440 MiB below it: taken */
	uint64_t near = lo - 1500ull * MIB;
	CHECK(!munmap((void *)near, 60ull * MIB));
	a = find_free_range_near(getpid(), lo, hi, len, 0, 0);
	CHECK(a >= near && a + len <= near + 60ull * MIB);
	CHECK(reaches(a, len, lo, hi));
	munmap(r, size);
	return CHECK_DONE();
}
