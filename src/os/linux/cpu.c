/* Which CPUs threads run on: sched_getaffinity/sched_setaffinity on tids. */
#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "os/linux/os.h"

int os_cpu_current(void)
{
	return sched_getcpu();
}

pid_t os_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

int os_cpus_get(pid_t tid, struct os_cpus *c)
{
	cpu_set_t set;
	if (sched_getaffinity(tid, sizeof(set), &set))
		return -errno;
	memcpy(c->bits, &set, sizeof(c->bits) < sizeof(set) ? sizeof(c->bits) : sizeof(set));
	return 0;
}

int os_cpus_set(pid_t tid, const struct os_cpus *c)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	memcpy(&set, c->bits, sizeof(c->bits) < sizeof(set) ? sizeof(c->bits) : sizeof(set));
	return sched_setaffinity(tid, sizeof(set), &set) ? -errno : 0;
}

int os_cpus_count(const struct os_cpus *c)
{
	int n = 0;
	for (size_t i = 0; i < sizeof(c->bits) / sizeof(c->bits[0]); i++)
		n += __builtin_popcountll(c->bits[i]);
	return n;
}

void os_cpus_one(struct os_cpus *c, int cpu)
{
	memset(c, 0, sizeof(*c));
	if (cpu >= 0 && (size_t)cpu < 64 * sizeof(c->bits) / sizeof(c->bits[0]))
		c->bits[cpu / 64] = 1ull << (cpu % 64);
}

bool os_cpus_equal(const struct os_cpus *a, const struct os_cpus *b)
{
	return !memcmp(a->bits, b->bits, sizeof(a->bits));
}
