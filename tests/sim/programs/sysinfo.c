/* sysinfo, the CPU affinity and mremap as a program sees them: the answers
 * that do not change from run to run (whether they succeed, whether their
 * values are sane, what glibc derives from them), and a qsort and a large
 * realloc that go through them. compare.sh checks the output against
 * qemu-user's. */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysinfo.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}

int main(void)
{
	struct sysinfo si;
	memset(&si, 0xff, sizeof si);
	int r = sysinfo(&si);
	printf("sysinfo: %d%s\n", r, r ? strerror(errno) : "");
	printf("mem_unit a power of two: %d\n", si.mem_unit && !(si.mem_unit & (si.mem_unit - 1)));
	printf("totalram > 0: %d, uptime > 0: %d, procs > 0: %d\n", si.totalram > 0, si.uptime > 0, si.procs > 0);
	long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
	printf("phys pages from sysinfo: %d\n",
	       pages == (long)((unsigned long long)si.totalram * si.mem_unit / (unsigned long long)psize));

	cpu_set_t set;
	r = sched_getaffinity(0, sizeof set, &set);
	printf("sched_getaffinity: %d%s, cpus %d, nprocs %ld\n", r, r ? strerror(errno) : "", CPU_COUNT(&set),
	       sysconf(_SC_NPROCESSORS_ONLN));

	/* qsort of 4 MiB: glibc weighs it against the physical memory */
	size_t n = 1 << 20;
	unsigned *v = malloc(n * sizeof *v), sum = 0, x = 12345;
	for (size_t i = 0; i < n; i++)
		v[i] = x = x * 1103515245 + 12345;
	qsort(v, n, sizeof *v, cmp);
	for (size_t i = 1; i < n; i++)
		sum += v[i] >= v[i - 1];
	printf("qsort: %u of %zu in order\n", sum + 1, n);

	/* mremap: a large block grows (glibc's realloc of an mmapped chunk) */
	char *p = malloc(1 << 20);
	memset(p, 7, 1 << 20);
	p = realloc(p, 4 << 20);
	printf("realloc kept the data: %d\n", p && p[0] == 7 && p[(1 << 20) - 1] == 7);
	free(v);
	free(p);
	/* last: qemu-mipsel 7.2 faults in the next munmap after these */
	char *q = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	q[0] = 1;
	char *q2 = mremap(q, 8192, 4096, 0);
	printf("mremap shrink in place: %d\n", q2 == q && q2[0] == 1);
	q2 = mremap(q, 4096, 1 << 20, MREMAP_MAYMOVE);
	printf("mremap grow: %d %d\n", q2 != MAP_FAILED, q2 != MAP_FAILED && q2[0] == 1 && q2[(1 << 20) - 1] == 0);
	return 0;
}
