/* perf_event_open on a task, its ring buffer and its records. */
#include "os/linux/perf_ring.h"
#include "util/array.h"

#include <dirent.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* One ring per CPU: the kernel does not map an inherited event of a task
 * on every CPU (cpu -1), so there is an event per CPU, each with its ring,
 * and the records are put back in time order a batch at a time. */
struct cpu_ring {
	int fd;
	struct perf_event_mmap_page *meta;
	uint8_t *data;
	size_t data_size;         /* a power of two */
	size_t map_size;
	uint64_t head;            /* of the batch being read */
	/* the events of a running process's other threads on this CPU, whose
	 * records go to this ring (PERF_EVENT_IOC_SET_OUTPUT) */
	int *more;
	size_t nmore, capmore;
};

struct batch_rec {
	uint64_t time;
	const uint8_t *rec;
	size_t seq;
};

struct perf_ring {
	struct cpu_ring *cpu;
	size_t ncpu;
	bool kernel;
	/* records of a batch that wrap around a ring's end, copied whole */
	uint8_t *scratch;
	size_t scratch_len, scratch_cap;
	struct batch_rec *batch;
	size_t nbatch, capbatch;
};

static const struct {
	const char *name;
	uint32_t type;
	uint64_t config;
} events[] = {
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES },
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES },
};

/* the registers of enum PR_*, as perf's x86 register numbers */
static const int perf_regno[PR_NREGS] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 16, 17, 18, 19, 20, 21, 22, 23 };

/* The number in the sysctl file NAME (kernel.NAME), or DEFAULT. */
static long sysctl_kernel(const char *name, long dflt)
{
	char path[128];
	snprintf(path, sizeof(path), "/proc/sys/kernel/%s", name);
	FILE *f = fopen(path, "r");
	long v = dflt;
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = dflt;
		fclose(f);
	}
	return v;
}

unsigned perf_max_sample_rate(void)
{
	long v = sysctl_kernel("perf_event_max_sample_rate", 0);
	return v > 0 ? (unsigned)v : 0;
}

static int paranoid(void)
{
	return (int)sysctl_kernel("perf_event_paranoid", 2);
}

static int explain(int err, const char *event, bool hw, char *why, size_t len)
{
	if (hw && (err == ENOENT || err == EOPNOTSUPP || err == ENODEV)) {
		snprintf(why, len, "event '%s' needs a hardware performance counter, and this machine has none "
			 "(a virtual machine without a PMU?): use cpu-clock or task-clock", event);
		return -EOPNOTSUPP;   /* -ENOENT means an unknown name */
	} else if (err == EACCES || err == EPERM)
		snprintf(why, len, "perf_event_open is not allowed (kernel.perf_event_paranoid is %d): run as root, "
			 "or set it to 2 or below (sysctl kernel.perf_event_paranoid=2)", paranoid());
	else if (err == ENOSYS)
		snprintf(why, len, "this kernel has no perf_event_open");
	else
		snprintf(why, len, "perf_event_open for '%s': %s", event, strerror(err));
	return -err;
}

static int cpus_online(int *cpus, int max)
{
	FILE *f = fopen("/sys/devices/system/cpu/online", "r");
	int n = 0, a, b;
	char sep;
	if (f) {
		while (n < max && fscanf(f, "%d", &a) == 1) {
			b = a;
			if (fscanf(f, "%c", &sep) == 1 && sep == '-' && fscanf(f, "%d%c", &b, &sep) < 1)
				break;
			for (int c = a; c <= b && n < max; c++)
				cpus[n++] = c;
			if (sep != ',')
				break;
		}
		fclose(f);
	}
	if (!n) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		for (n = 0; n < (c > 0 ? c : 1) && n < max; n++)
			cpus[n] = n;
	}
	return n;
}

/* The threads of process PID now. */
static int task_list(pid_t pid, pid_t **out, size_t *n)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	size_t cap = 0;
	*out = NULL;
	*n = 0;
	if (!d)
		return -errno;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		if (rtl_grow(out, &cap, *n + 1, sizeof(**out))) {
			closedir(d);
			return -ENOMEM;
		}
		(*out)[(*n)++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return *n ? 0 : -ESRCH;
}

static int map_ring(struct cpu_ring *c, size_t pages)
{
	long page = sysconf(_SC_PAGESIZE);
	for (; pages >= 8; pages /= 2) {
		c->data_size = pages * (size_t)page;
		c->map_size = c->data_size + (size_t)page;
		void *m = mmap(NULL, c->map_size, PROT_READ | PROT_WRITE, MAP_SHARED, c->fd, 0);
		if (m != MAP_FAILED) {
			c->meta = m;
			c->data = (uint8_t *)m + page;
			return 0;
		}
		if (errno != EPERM && errno != ENOMEM)
			break;
	}
	return -errno;
}

int perf_ring_open(const struct perf_ring_opts *o, pid_t pid, struct perf_ring **out, char *why, size_t len)
{
	size_t e = 0;
	while (e < sizeof(events) / sizeof(events[0]) && strcmp(events[e].name, o->event))
		e++;
	if (e == sizeof(events) / sizeof(events[0])) {
		snprintf(why, len, "unknown event '%s' (cpu-clock, task-clock, page-faults, context-switches, "
			 "cycles, instructions, cache-references, cache-misses, branches, branch-misses)", o->event);
		return -ENOENT;
	}
	unsigned max = perf_max_sample_rate();
	if (!o->freq || (max && o->freq > max)) {
		snprintf(why, len, "--freq %u is beyond what the kernel allows (1 to kernel.perf_event_max_sample_rate, %u)",
			 o->freq, max);
		return -EINVAL;
	}
	struct perf_event_attr a;
	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = events[e].type;
	a.config = events[e].config;
	a.freq = 1;
	a.sample_freq = o->freq;
	a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD |
			PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER;
	for (int i = 0; i < PR_NREGS; i++)
		a.sample_regs_user |= 1ull << perf_regno[i];
	a.sample_stack_user = (o->stack_bytes + 7) & ~7u;
	a.inherit = 1;
	a.mmap = 1;
	a.mmap2 = 1;
	a.comm = 1;
	a.comm_exec = 1;
	a.task = 1;
	a.sample_id_all = 1;   /* every record has a time: the rings are merged by it */
	a.use_clockid = 1;
	a.clockid = CLOCK_MONOTONIC;
	a.exclude_hv = 1;
	a.exclude_kernel = !o->kernel;
	a.watermark = 1;
	a.wakeup_watermark = 1 << 19;
	int cpus[1024];
	int ncpus = cpus_online(cpus, 1024);
	struct perf_ring *r = calloc(1, sizeof(*r));
	if (!r || !(r->cpu = calloc((size_t)ncpus, sizeof(*r->cpu)))) {
		free(r);
		return -ENOMEM;
	}
	/* 64 MiB in all, 512 KiB to 16 MiB a CPU (~1,000 samples of 16 KiB) */
	size_t pages = 4096;
	while (pages > 128 && pages * 4096 * (size_t)ncpus > (64u << 20))
		pages /= 2;
	int err = 0;
	/* a running process: every thread it has now (each inherits to what it
	 * creates from now on); a launched one: its one thread */
	pid_t *tids = NULL;
	size_t ntids = 0;
	if (o->all_threads && (err = task_list(pid, &tids, &ntids))) {
		snprintf(why, len, "process %d: %s", (int)pid, strerror(-err));
		perf_ring_close(r);
		return err;
	}
	pid_t lead = ntids ? tids[0] : pid;   /* the ring's own event; the others' go to it */
	for (int i = 0; i < ncpus && !err; i++) {
		long fd = syscall(SYS_perf_event_open, &a, lead, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
		if (fd < 0 && (errno == EACCES || errno == EPERM) && !a.exclude_kernel && !i) {
			a.exclude_kernel = 1;   /* user samples are allowed at paranoid 2 */
			fd = syscall(SYS_perf_event_open, &a, lead, cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
		}
		if (fd < 0) {
			err = explain(errno, o->event, events[e].type == PERF_TYPE_HARDWARE, why, len);
			break;
		}
		struct cpu_ring *c = &r->cpu[r->ncpu++];
		c->fd = (int)fd;
		if ((err = map_ring(c, pages)))
			snprintf(why, len, "cannot map the sample buffer: %s", strerror(-err));
		for (size_t k = 1; k < ntids && !err; k++) {
			long more = syscall(SYS_perf_event_open, &a, tids[k], cpus[i], -1, PERF_FLAG_FD_CLOEXEC);
			if (more < 0)
				continue;   /* the thread has ended since */
			if (rtl_grow(&c->more, &c->capmore, c->nmore + 1, sizeof(*c->more)) ||
			    ioctl((int)more, PERF_EVENT_IOC_SET_OUTPUT, c->fd)) {
				close((int)more);
				continue;
			}
			c->more[c->nmore++] = (int)more;
		}
	}
	free(tids);
	r->kernel = !a.exclude_kernel;
	if (err) {
		perf_ring_close(r);
		return err;
	}
	*out = r;
	return 0;
}

void perf_ring_close(struct perf_ring *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->ncpu; i++) {
		for (size_t k = 0; k < r->cpu[i].nmore; k++)
			close(r->cpu[i].more[k]);
		free(r->cpu[i].more);
		if (r->cpu[i].meta)
			munmap(r->cpu[i].meta, r->cpu[i].map_size);
		close(r->cpu[i].fd);
	}
	free(r->cpu);
	free(r->scratch);
	free(r->batch);
	free(r);
}

size_t perf_ring_nfds(const struct perf_ring *r) { return r->ncpu; }
int perf_ring_fd(const struct perf_ring *r, size_t i) { return r->cpu[i].fd; }
bool perf_ring_kernel(const struct perf_ring *r) { return r->kernel; }

static uint64_t u64_at(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t u32_at(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static bool parse_sample(const uint8_t *p, const uint8_t *end, uint16_t misc, struct perf_sample *s)
{
	memset(s, 0, sizeof(*s));
	if (end - p < 8 + 8 + 8 + 8 + 8)
		return false;
	uint64_t ip = u64_at(p);
	p += 8;
	s->pid = (pid_t)u32_at(p);
	s->tid = (pid_t)u32_at(p + 4);
	p += 8;
	s->time = u64_at(p);
	p += 8;
	s->period = u64_at(p);
	p += 8;
	s->in_kernel = (misc & PERF_RECORD_MISC_CPUMODE_MASK) == PERF_RECORD_MISC_KERNEL;
	uint64_t abi = u64_at(p);
	p += 8;
	if (abi) {
		if (end - p < (long)(8 * PR_NREGS))
			return false;
		for (int i = 0; i < PR_NREGS; i++)
			s->regs[i] = u64_at(p + 8 * i);
		p += 8 * PR_NREGS;
		s->have_regs = true;
	}
	if (!s->in_kernel)
		s->regs[PR_IP] = ip;
	if (end - p < 8)
		return false;
	uint64_t size = u64_at(p);
	p += 8;
	if (size) {
		if ((uint64_t)(end - p) < size + 8)
			return false;
		uint64_t dyn = u64_at(p + size);
		s->stack = p;
		s->stack_len = dyn < size ? dyn : size;
	}
	return true;
}

static void dispatch(const uint8_t *rec, void (*fn)(const struct perf_rec *, void *), void *user)
{
	const struct perf_event_header *h = (const void *)rec;
	const uint8_t *p = rec + sizeof(*h), *end = rec + h->size;
	struct perf_rec r;
	memset(&r, 0, sizeof(r));
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		if (!parse_sample(p, end, h->misc, &r.sample))
			return;
		r.kind = PERF_REC_SAMPLE;
		r.pid = r.sample.pid;
		r.tid = r.sample.tid;
		break;
	case PERF_RECORD_MMAP2:
		/* pid, tid, addr, len, pgoff, maj, min, ino, ino_generation, prot, flags, filename */
		if (end - p < 8 + 8 * 3 + 4 * 2 + 8 * 2 + 4 * 2 + 1)
			return;
		r.kind = PERF_REC_MMAP;
		r.pid = (pid_t)u32_at(p);
		r.tid = (pid_t)u32_at(p + 4);
		r.addr = u64_at(p + 8);
		r.len = u64_at(p + 16);
		r.pgoff = u64_at(p + 24);
		r.path = (const char *)p + 8 + 24 + 8 + 16 + 8;
		if (!memchr(r.path, 0, (size_t)(end - (const uint8_t *)r.path)))
			return;
		break;
	case PERF_RECORD_FORK:
		if (end - p < 16)
			return;
		r.kind = PERF_REC_FORK;
		r.pid = (pid_t)u32_at(p);
		r.ppid = (pid_t)u32_at(p + 4);
		r.tid = (pid_t)u32_at(p + 8);
		break;
	case PERF_RECORD_COMM:
		if (!(h->misc & PERF_RECORD_MISC_COMM_EXEC) || end - p < 8)
			return;
		r.kind = PERF_REC_EXEC;
		r.pid = (pid_t)u32_at(p);
		r.tid = (pid_t)u32_at(p + 4);
		break;
	case PERF_RECORD_LOST:
		if (end - p < 16)
			return;
		r.kind = PERF_REC_LOST;
		r.lost = u64_at(p + 8);
		break;
	default:
		return;
	}
	fn(&r, user);
}

/* The time of a record: a sample's own, else the sample_id at its end. */
static uint64_t time_of(const uint8_t *rec)
{
	const struct perf_event_header *h = (const void *)rec;
	uint64_t t = 0;
	if (h->type == PERF_RECORD_SAMPLE && h->size >= sizeof(*h) + 24)
		memcpy(&t, rec + sizeof(*h) + 16, 8);
	else if (h->size >= sizeof(*h) + 8)
		memcpy(&t, rec + h->size - 8, 8);
	return t;
}

static int by_time(const void *a, const void *b)
{
	const struct batch_rec *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return (x->seq > y->seq) - (x->seq < y->seq);
}

/* Room for a record that wraps: the scratch area grows before the batch
 * takes pointers into it (two passes would be needed otherwise), so it is
 * sized for the worst case up front: every ring's pending bytes. */
static const uint8_t *unwrap(struct perf_ring *r, const struct cpu_ring *c, size_t off, size_t size)
{
	if (r->scratch_len + size > r->scratch_cap)
		return NULL;
	uint8_t *d = r->scratch + r->scratch_len;
	size_t first = c->data_size - off;
	memcpy(d, c->data + off, first);
	memcpy(d + first, c->data, size - first);
	r->scratch_len += size;
	return d;
}

size_t perf_ring_read(struct perf_ring *r, void (*fn)(const struct perf_rec *rec, void *user), void *user)
{
	r->nbatch = 0;
	r->scratch_len = 0;
	size_t pending = 0;
	for (size_t i = 0; i < r->ncpu; i++) {
		struct cpu_ring *c = &r->cpu[i];
		c->head = __atomic_load_n(&c->meta->data_head, __ATOMIC_ACQUIRE);
		pending += (size_t)(c->head - c->meta->data_tail);
	}
	if (pending > r->scratch_cap) {
		uint8_t *s = realloc(r->scratch, pending);
		if (!s)
			return 0;
		r->scratch = s;
		r->scratch_cap = pending;
	}
	for (size_t i = 0; i < r->ncpu; i++) {
		struct cpu_ring *c = &r->cpu[i];
		uint64_t tail = c->meta->data_tail;
		size_t mask = c->data_size - 1;
		while (tail + sizeof(struct perf_event_header) <= c->head) {
			struct perf_event_header h;
			size_t off = (size_t)(tail & mask);
			if (off + sizeof(h) <= c->data_size)
				memcpy(&h, c->data + off, sizeof(h));
			else {
				size_t first = c->data_size - off;
				memcpy(&h, c->data + off, first);
				memcpy((uint8_t *)&h + first, c->data, sizeof(h) - first);
			}
			if (h.size < sizeof(h) || tail + h.size > c->head)
				break;
			const uint8_t *rec = off + h.size <= c->data_size ? c->data + off : unwrap(r, c, off, h.size);
			if (rec && !rtl_grow(&r->batch, &r->capbatch, r->nbatch + 1, sizeof(*r->batch))) {
				r->batch[r->nbatch] = (struct batch_rec){ time_of(rec), rec, r->nbatch };
				r->nbatch++;
			}
			tail += h.size;
		}
		c->head = tail;
	}
	qsort(r->batch, r->nbatch, sizeof(*r->batch), by_time);
	for (size_t i = 0; i < r->nbatch; i++)
		dispatch(r->batch[i].rec, fn, user);
	for (size_t i = 0; i < r->ncpu; i++)
		__atomic_store_n(&r->cpu[i].meta->data_tail, r->cpu[i].head, __ATOMIC_RELEASE);
	return r->nbatch;
}
