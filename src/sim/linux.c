/* Linux user-mode emulation: the system calls static glibc start-up and
 * stdio use, in asm-generic numbering (the "generic" syscall_abi of a
 * description). Guest structures are translated where their layout differs
 * from the host's; file descriptors are the host's. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <sys/wait.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <stdlib.h>
#include "sim/machine.h"
#include "sim/syscall_names.h"

enum {
	G_getcwd = 17, G_fcntl = 25, G_ioctl = 29, G_faccessat = 48, G_openat = 56, G_close = 57,
	G_lseek = 62, G_read = 63, G_write = 64, G_readv = 65, G_writev = 66, G_pread64 = 67,
	G_readlinkat = 78, G_newfstatat = 79, G_fstat = 80, G_exit = 93, G_exit_group = 94,
	G_set_tid_address = 96, G_futex = 98, G_set_robust_list = 99, G_nanosleep = 101,
	G_clock_gettime = 113, G_sched_getaffinity = 123, G_kill = 129, G_tkill = 130, G_tgkill = 131,
	G_sigaltstack = 132, G_rt_sigaction = 134, G_rt_sigprocmask = 135, G_uname = 160,
	G_getrlimit = 163, G_gettimeofday = 169, G_getpid = 172, G_getppid = 173, G_getuid = 174,
	G_geteuid = 175, G_getgid = 176, G_getegid = 177, G_gettid = 178, G_sysinfo = 179,
	G_brk = 214, G_munmap = 215, G_mremap = 216, G_mmap = 222, G_mprotect = 226, G_madvise = 233,
	G_prlimit64 = 261, G_getrandom = 278, G_statx = 291, G_rseq = 293,
};

/* The guest's name for its call NR (the number it passed, before any
 * renumbering): "syscall_NR" when the kernel defines none. */
static const char *guest_call_name(const struct rtl_sim *m, uint64_t nr, char *buf, size_t n)
{
	const char *name = sim_syscall_name(m->isa->syscall_abi[0] == 'm', nr);
	if (name)
		return name;
	snprintf(buf, n, "syscall_%llu", (unsigned long long)nr);
	return buf;
}

/* Stops the simulation at the guest's current system call, which is not
 * emulated, naming it with the guest's number. */
int64_t sim_unsupported(struct rtl_sim *m, uint64_t pc)
{
	char buf[32];
	sim_stop(m, "unsupported system call %s (%llu) at 0x%llx", guest_call_name(m, m->sys_nr, buf, sizeof buf),
		 (unsigned long long)m->sys_nr, (unsigned long long)pc);
	return -ENOSYS;
}

void sim_stop(struct rtl_sim *m, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->msg, sizeof m->msg, fmt, ap);
	va_end(ap);
	m->failed = 1;
	m->cpu->stop = 1;
}

void rtl_sim_trap(struct rtl_sim_cpu *cpu, uint64_t pc, const char *what)
{
	sim_stop(cpu->machine, "%s at 0x%llx", what, (unsigned long long)pc);
}

int sim_mips_host_signal(int sig);

/* Exit statuses report the host's number of the signal, as a shell sees a
 * process killed by it (and as qemu-user's are). */
int sim_host_signal(struct rtl_sim *m, int sig)
{
	return m->isa->syscall_abi[0] == 'm' ? sim_mips_host_signal(sig) : sig;
}

void rtl_sim_raise(struct rtl_sim_cpu *cpu, uint64_t pc, uint64_t sig)
{
	struct rtl_sim *m = cpu->machine;
	int hs = sim_host_signal(m, (int)(sig & 0x7f));
	snprintf(m->msg, sizeof m->msg, "guest killed by %s at 0x%llx", strsignal(hs), (unsigned long long)pc);
	m->exit_status = 128 + hs;
	m->exited = 1;
	cpu->stop = 1;
}

int64_t rtl_sim_syscall(struct rtl_sim_cpu *cpu, uint64_t pc, uint64_t nr, uint64_t a0, uint64_t a1,
			uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	const uint64_t a[6] = { a0, a1, a2, a3, a4, a5 };
	return sim_linux_syscall(cpu->machine, pc, nr, a);
}

#define G(addr) ((void *)(m->mem + ((addr) & (m->mem_size - 1))))
/* A guest buffer must lie inside the reservation. */
#define BUF(addr, len) ((addr) & (m->mem_size - 1)) + (uint64_t)(len) > m->mem_size ? NULL : G(addr)
#define CHECK(addr, len) do { if ((uint64_t)(len) > m->mem_size || !(BUF(addr, len))) return -EFAULT; } while (0)

static inline int64_t ret(int64_t x) { return x < 0 ? -errno : x; }
#define R(x) ret(x)   /* evaluates x once */

uint64_t sim_mmap_alloc(struct rtl_sim *m, uint64_t len)
{
	uint64_t at = m->mmap_next;
	len = (len + 4095) & ~4095ull;
	if (at + len > SIM_MMAP_END)
		return 0;
	m->mmap_next += len;
	return at;
}

static int64_t do_mmap(struct rtl_sim *m, const uint64_t *a)
{
	uint64_t addr = a[0], len = (a[1] + 4095) & ~4095ull;
	int flags = (int)a[3], fd = (int)a[4];

	if (!len)
		return -EINVAL;
	if (len > SIM_MMAP_END)
		return -ENOMEM;
	if (!(flags & MAP_FIXED) || addr + len > m->mem_size) {
		addr = sim_mmap_alloc(m, len);
		if (!addr)
			return -ENOMEM;
	}
	if (sim_map(m, addr, len) < 0)
		return -ENOMEM;
	memset(G(addr), 0, len);
	if (!(flags & MAP_ANONYMOUS)) {
		ssize_t r = pread(fd, G(addr), len, (off_t)a[5]);
		if (r < 0)
			return -errno;
	}
	return (int64_t)addr;
}

/* asm-generic struct stat (riscv64, aarch64): 128 bytes. */
static void put_stat(struct rtl_sim *m, uint64_t ga, const struct stat *st)
{
	uint8_t *g = G(ga);
	memset(g, 0, 128);
#define P64(off, v) do { uint64_t x_ = (uint64_t)(v); memcpy(g + (off), &x_, 8); } while (0)
#define P32(off, v) do { uint32_t x_ = (uint32_t)(v); memcpy(g + (off), &x_, 4); } while (0)
	P64(0, st->st_dev); P64(8, st->st_ino); P32(16, st->st_mode); P32(20, st->st_nlink);
	P32(24, st->st_uid); P32(28, st->st_gid); P64(32, st->st_rdev); P64(48, st->st_size);
	P32(56, st->st_blksize); P64(64, st->st_blocks);
	P64(72, st->st_atim.tv_sec); P64(80, st->st_atim.tv_nsec);
	P64(88, st->st_mtim.tv_sec); P64(96, st->st_mtim.tv_nsec);
	P64(104, st->st_ctim.tv_sec); P64(112, st->st_ctim.tv_nsec);
#undef P64
#undef P32
}

static int64_t do_iov(struct rtl_sim *m, int write_, const uint64_t *a)
{
	int cnt = (int)a[2];
	struct iovec iov[64];
	const uint64_t *g = G(a[1]);

	if (cnt < 0 || cnt > 64)
		return -EINVAL;
	for (int i = 0; i < cnt; i++) {
		if (m->isa->elf_class == 32) {
			const uint32_t *w = G(a[1]);
			iov[i].iov_base = G(w[2 * i]);
			iov[i].iov_len = w[2 * i + 1];
		} else {
			iov[i].iov_base = G(g[2 * i]);
			iov[i].iov_len = g[2 * i + 1];
		}
		CHECK((uint64_t)((uint8_t *)iov[i].iov_base - m->mem), iov[i].iov_len);
	}
	ssize_t r = write_ ? writev((int)a[0], iov, cnt) : readv((int)a[0], iov, cnt);
	return R(r);
}

static int64_t do_stat(struct rtl_sim *m, uint64_t nr, const uint64_t *a)
{
	struct stat st;
	int r = nr == G_fstat ? fstat((int)a[0], &st) : fstatat((int)a[0], G(a[1]), &st, (int)a[3]);
	if (r < 0)
		return -errno;
	put_stat(m, nr == G_fstat ? a[1] : a[2], &st);
	return 0;
}

/* clone: a thread (CLONE_VM) is a guest thread of this simulator
 * (threads.c); a new process (fork, vfork) forks the whole simulator, the
 * child going on with a copy of the guest. vfork's shared memory is not
 * needed by programs that follow the rules. */
static int64_t do_clone(struct rtl_sim *m, uint64_t pc, const uint64_t *a)
{
	uint64_t flags = a[0];
	if (flags & CLONE_VM && !(flags & CLONE_VFORK))
		return sim_thread_clone(m, pc, a);   /* a thread */
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0)
		m->forked_child = 1;   /* its tools do not report: the parent does */
	return pid < 0 ? -errno : pid;
}

/* Reads a guest NULL-terminated array of string pointers. */
static char **guest_strv(struct rtl_sim *m, uint64_t ga, int skip)
{
	int word = m->isa->elf_class / 8, n = 0;
	char **v = NULL;
	for (;; n++) {
		uint64_t p = 0;
		memcpy(&p, G(ga + (uint64_t)n * word), word);
		v = realloc(v, sizeof *v * (n + skip + 2));
		if (!p || !v)
			break;
		v[n + skip] = G(p);
	}
	if (v)
		v[n + skip] = NULL;
	return v;
}

/* execve: a program for a described ISA runs in a new simulator (the
 * reticle executable, /proc/self/exe, "sim --"); any other is the host's. */
static int64_t do_execve(struct rtl_sim *m, const uint64_t *a)
{
	const char *path = G(a[0]);
	if (!strcmp(path, "/proc/self/exe"))
		path = m->path;   /* the guest's own program, not reticle */
	unsigned char h[20] = { 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC), described = 0;

	if (fd < 0)
		return -errno;
	if (read(fd, h, sizeof h) == (ssize_t)sizeof h && !memcmp(h, "\177ELF", 4))
		described = sim_isa_by_machine(h[18] | h[19] << 8, h[4] == 2 ? 64 : 32) != NULL;
	close(fd);
	char **argv = guest_strv(m, a[1], described ? 5 : 0), **envp = guest_strv(m, a[2], 0);
	if (!argv || !envp)
		return -ENOMEM;
	fflush(NULL);
	if (described) {
		/* reticle sim --argv0 ARGV0 -- PATH ARGS... (the guest's argv[0] moves) */
		char *argv0 = argv[5] ? argv[5] : (char *)path;
		argv[0] = "reticle", argv[1] = "sim", argv[2] = "--argv0", argv[3] = argv0, argv[4] = "--";
		argv[5] = (char *)path;
		execve("/proc/self/exe", argv, envp);
	} else {
		execve(path, argv, envp);
	}
	int e = errno;
	free(argv);
	free(envp);
	return -e;
}

static int64_t do_wait4(struct rtl_sim *m, const uint64_t *a)
{
	int st = 0;
	pid_t r = wait4((pid_t)(int)a[0], &st, (int)a[2], NULL);
	if (r < 0)
		return -errno;
	if (a[1])
		memcpy(G(a[1]), &st, 4);
	if (a[3])
		memset(G(a[3]), 0, m->isa->elf_class == 32 ? 72 : 144);   /* struct rusage: not measured */
	return r;
}

static int64_t do_exit(struct rtl_sim *m, uint64_t code)
{
	m->exit_status = (int)(code & 0xff);
	m->exited = 1;
	m->cpu->stop = 1;
	return 0;
}

/* struct sysinfo with the guest's long: 112 bytes with 64-bit longs, 64
 * with 32-bit ones. A 32-bit guest gets what a 64-bit kernel gives a
 * compat process: memory sizes in mem_unit units (a page) when a byte
 * count does not fit in 32 bits (compat_sysinfo). */
static int64_t do_sysinfo(struct rtl_sim *m, uint64_t ga)
{
	struct sysinfo si;
	unsigned word = m->isa->elf_class / 8;
	CHECK(ga, word == 8 ? 112 : 64);
	if (sysinfo(&si) < 0)
		return -errno;
	unsigned long *mem[] = { &si.totalram, &si.freeram, &si.sharedram, &si.bufferram, &si.totalswap,
				 &si.freeswap, &si.totalhigh, &si.freehigh };
	if (word == 4 && (si.totalram >> 32 || si.totalswap >> 32)) {
		int shift = 0;
		while (si.mem_unit < 4096)
			si.mem_unit <<= 1, shift++;
		for (size_t i = 0; i < sizeof mem / sizeof mem[0]; i++)
			*mem[i] >>= shift;
	}
	uint8_t *g = G(ga);
	memset(g, 0, word == 8 ? 112 : 64);
	/* uptime, loads[3], the six sizes, procs (u16), then two sizes and mem_unit (u32) */
	uint64_t longs[10] = { (uint64_t)si.uptime, si.loads[0], si.loads[1], si.loads[2], si.totalram, si.freeram,
			       si.sharedram, si.bufferram, si.totalswap, si.freeswap };
	for (int i = 0; i < 10; i++)
		memcpy(g + i * word, &longs[i], word);   /* little-endian guests: the low bytes */
	memcpy(g + 10 * word, &si.procs, 2);
	unsigned at = 10 * word + 4;
	at = (at + word - 1) & ~(word - 1);
	memcpy(g + at, &si.totalhigh, word);
	memcpy(g + at + word, &si.freehigh, word);
	memcpy(g + at + 2 * word, &si.mem_unit, 4);
	return 0;
}

/* The host's CPU affinity (the guest sees the machine's CPUs, as under
 * qemu-user), in the guest's buffer: bytes of a bit mask, the same for
 * 32- and 64-bit little-endian longs. Returns the bytes written. */
static int64_t do_getaffinity(struct rtl_sim *m, const uint64_t *a)
{
	uint8_t mask[1024] = { 0 };
	uint64_t len = a[1];
	pid_t pid = (pid_t)a[0];
	if (len % (m->isa->elf_class / 8))
		return -EINVAL;
	CHECK(a[2], len);
	if (pid == sim_thread_tid(m))
		pid = 0;   /* a guest thread's tid is not the host's */
	/* the host's long is 8 bytes: it may write up to 4 more than asked */
	long r = syscall(SYS_sched_getaffinity, pid, len + 7 < sizeof mask ? (len + 7) & ~7ull : sizeof mask, mask);
	if (r < 0)
		return -errno;   /* EINVAL: LEN too small for the host's CPUs */
	r = (uint64_t)r < len ? r : (long)len;
	memcpy(G(a[2]), mask, (size_t)r);
	return r;
}

/* mremap: shrinking unmaps the tail; growing moves the mapping to a new
 * range (with MREMAP_MAYMOVE, as glibc's realloc asks; else ENOMEM, which
 * Linux too may answer). MREMAP_FIXED and DONTUNMAP stop the simulation. */
static int64_t do_mremap(struct rtl_sim *m, uint64_t pc, const uint64_t *a)
{
	uint64_t old = a[0], old_len = (a[1] + 4095) & ~4095ull, len = (a[2] + 4095) & ~4095ull;
	uint64_t flags = a[3];
	if (flags & ~7ull)
		return -EINVAL;
	if (flags & 6)       /* MREMAP_FIXED, MREMAP_DONTUNMAP */
		return sim_unsupported(m, pc);
	if ((old & 4095) || !len || old + old_len > m->mem_size || old + old_len < old)
		return -EINVAL;
	if (len <= old_len) {
		if (len < old_len)
			sim_unmap(m, old + len, old_len - len);
		return (int64_t)old;
	}
	if (!(flags & 1))    /* MREMAP_MAYMOVE */
		return -ENOMEM;
	uint64_t at = sim_mmap_alloc(m, len);
	if (!at || sim_map(m, at, len) < 0)
		return -ENOMEM;
	memcpy(G(at), G(old), old_len);
	memset(G(at + old_len), 0, len - old_len);
	sim_unmap(m, old, old_len);
	return (int64_t)at;
}

/* fcntl: the commands whose argument points to a structure (record locks,
 * whose struct flock is the host's for 64-bit guests and o32's flock64,
 * and owners) get the guest's buffer; the others an integer. */
static int64_t do_fcntl(struct rtl_sim *m, const uint64_t *a)
{
	switch ((int)a[1]) {
	case F_GETLK: case F_SETLK: case F_SETLKW: case F_OFD_GETLK: case F_OFD_SETLK: case F_OFD_SETLKW:
		CHECK(a[2], sizeof(struct flock));
		return R(fcntl((int)a[0], (int)a[1], G(a[2])));
	case F_GETOWN_EX: case F_SETOWN_EX:
		CHECK(a[2], sizeof(struct f_owner_ex));
		return R(fcntl((int)a[0], (int)a[1], G(a[2])));
	default:
		return R(fcntl((int)a[0], (int)a[1], (long)a[2]));
	}
}

/* kill, tkill, tgkill. A signal to the program itself (its pid, its
 * process group, -1, one of its threads) ends it with status 128 + the
 * signal, since guest handlers are not modelled, unless Linux ignores the
 * signal by default (SIGCHLD, SIGCONT, SIGURG, SIGWINCH); signal 0 only
 * checks. Another process (a forked guest child) gets it from the host. */
static int64_t do_kill(struct rtl_sim *m, uint64_t nr, const uint64_t *a)
{
	int gsig = (int)(nr == G_tgkill ? a[2] : a[1]), sig = gsig ? sim_host_signal(m, gsig) : 0;
	pid_t pid = (pid_t)a[0];
	int self = nr == G_kill ? pid <= 0 || pid == getpid() :
		   nr == G_tgkill ? pid == getpid() : sim_thread_is_ours(m, pid);

	if (!self) {
		long r = nr == G_kill ? kill(pid, sig) : nr == G_tkill ? syscall(SYS_tkill, pid, sig) :
			 syscall(SYS_tgkill, pid, (pid_t)a[1], sig);
		return r < 0 ? -errno : 0;
	}
	if (sig == 0 || sig == SIGCHLD || sig == SIGCONT || sig == SIGURG || sig == SIGWINCH)
		return 0;
	m->exit_status = 128 + sig;
	m->exited = 1;
	m->cpu->stop = 1;
	return 0;
}

static int64_t do_misc(struct rtl_sim *m, uint64_t pc, uint64_t nr, const uint64_t *a)
{
	switch (nr) {
	case G_set_tid_address: return sim_thread_set_tid_address(m, a[0]);
	case G_gettid: return sim_thread_tid(m);
	case G_getpid: return getpid();
	case 124: return sim_thread_yield(m);   /* sched_yield */
	case 435: return -ENOSYS;              /* clone3: glibc falls back to clone */
	case G_getppid: return getppid();
	case G_getuid: return getuid();
	case G_geteuid: return geteuid();
	case G_getgid: return getgid();
	case G_getegid: return getegid();
	case G_set_robust_list: case G_rt_sigaction: case G_rt_sigprocmask: case G_sigaltstack:
	case G_mprotect: case G_madvise:
		return 0;
	case G_futex:
		return sim_thread_futex(m, pc, a);
	case G_munmap:
		return sim_unmap(m, a[0], a[1]);
	case G_rseq:   /* as a kernel before 4.18: glibc goes on without it */
		return -ENOSYS;
	case G_mremap:
		return do_mremap(m, pc, a);
	case G_sched_getaffinity:
		return do_getaffinity(m, a);
	case G_sysinfo:
		return do_sysinfo(m, a[0]);
	case G_statx:   /* struct statx has the same layout everywhere */
		return R(syscall(SYS_statx, (int)a[0], G(a[1]), (int)a[2], (unsigned)a[3], G(a[4])));
	case G_uname: {
		struct utsname u;
		if (uname(&u) < 0)
			return -errno;
		snprintf(u.machine, sizeof u.machine, "%s", m->isa->name);
		memcpy(G(a[0]), &u, sizeof u);
		return 0;
	}
	case G_clock_gettime: {
		struct timespec ts;
		if (clock_gettime((clockid_t)a[0], &ts) < 0)
			return -errno;
		uint64_t v[2] = { (uint64_t)ts.tv_sec, (uint64_t)ts.tv_nsec };
		memcpy(G(a[1]), v, 16);
		return 0;
	}
	case G_gettimeofday: {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		uint64_t v[2] = { (uint64_t)ts.tv_sec, (uint64_t)ts.tv_nsec / 1000 };
		if (a[0])
			memcpy(G(a[0]), v, 16);
		return 0;
	}
	case G_prlimit64: case G_getrlimit: {
		struct rlimit rl;
		int res = (int)(nr == G_getrlimit ? a[0] : a[1]);
		uint64_t out = nr == G_getrlimit ? a[1] : a[3];
		if (nr == G_prlimit64 && a[2])
			return 0;    /* setting limits: accepted, not applied */
		if (getrlimit(res, &rl) < 0)
			return -errno;
		if (res == RLIMIT_STACK)
			rl.rlim_cur = SIM_STACK_SIZE;
		if (out) {
			uint64_t v[2] = { rl.rlim_cur, rl.rlim_max };
			memcpy(G(out), v, 16);
		}
		return 0;
	}
	case G_getrandom:
		CHECK(a[0], a[1]);
		return R(getrandom(G(a[0]), a[1], (unsigned)a[2]));
	case G_kill: case G_tkill: case G_tgkill:
		return do_kill(m, nr, a);
	case G_nanosleep:
		return R(nanosleep(G(a[0]), NULL));
	}
	return sim_unsupported(m, pc);
}

static int64_t dispatch(struct rtl_sim *m, uint64_t pc, uint64_t nr, const uint64_t *a);

int64_t sim_mips_o32(struct rtl_sim *m, uint64_t pc, uint64_t nr, const uint64_t *a,
		     int64_t (*generic)(struct rtl_sim *, uint64_t, uint64_t, const uint64_t *));

/* RETICLE_SIM_STRACE=1 (reticle sim --strace) traces system calls on
 * stderr, with the guest's names, numbers and results (-errno as the guest
 * sees it). */
int64_t sim_linux_syscall(struct rtl_sim *m, uint64_t pc, uint64_t nr, const uint64_t *a)
{
	static int trace = -1;
	if (trace < 0)
		trace = getenv("RETICLE_SIM_STRACE") != NULL;
	m->sys_nr = nr;
	int64_t r = m->isa->syscall_abi[0] == 'm' ? sim_mips_o32(m, pc, nr, a, dispatch) : dispatch(m, pc, nr, a);
	if (trace) {
		char buf[32];
		fprintf(stderr, "[sim] 0x%llx %s(0x%llx, 0x%llx, 0x%llx) = %lld\n", (unsigned long long)pc,
			guest_call_name(m, nr, buf, sizeof buf), (unsigned long long)a[0], (unsigned long long)a[1],
			(unsigned long long)a[2], (long long)r);
	}
	return r;
}

static int64_t dispatch(struct rtl_sim *m, uint64_t pc, uint64_t nr, const uint64_t *a)
{
	switch (nr) {
	case G_read: CHECK(a[1], a[2]); return R(read((int)a[0], G(a[1]), a[2]));
	case G_write: CHECK(a[1], a[2]); return R(write((int)a[0], G(a[1]), a[2]));
	case G_pread64: CHECK(a[1], a[2]); return R(pread((int)a[0], G(a[1]), a[2], (off_t)a[3]));
	case G_readv: return do_iov(m, 0, a);
	case G_writev: return do_iov(m, 1, a);
	case G_openat: return R(openat((int)a[0], G(a[1]), (int)a[2], (mode_t)a[3]));
	case G_close: return R(close((int)a[0]));
	case G_lseek: return R(lseek((int)a[0], (off_t)a[1], (int)a[2]));
	case G_fstat: case G_newfstatat: return do_stat(m, nr, a);
	case G_faccessat: return R(faccessat((int)a[0], G(a[1]), (int)a[2], 0));
	case G_getcwd: return getcwd(G(a[0]), a[1]) ? (int64_t)strlen(G(a[0])) + 1 : -errno;
	case G_fcntl: return do_fcntl(m, a);
	case G_ioctl:
		if (a[1] == TCGETS || a[1] == TIOCGWINSZ)
			return R(ioctl((int)a[0], (unsigned long)a[1], G(a[2])));
		return -ENOTTY;
	case G_readlinkat: {
		const char *p = G(a[1]);
		if (!strcmp(p, "/proc/self/exe")) {
			/* the guest program's absolute path, as the kernel gives
			 * (glibc's static start-up asserts it starts with '/') */
			char real[PATH_MAX];
			const char *exe = realpath(m->path, real) ? real : m->path;
			size_t n = strlen(exe) < a[3] ? strlen(exe) : a[3];
			CHECK(a[2], n);
			memcpy(G(a[2]), exe, n);
			return (int64_t)n;
		}
		return R(readlinkat((int)a[0], p, G(a[2]), a[3]));
	}
	case G_exit:
		return sim_thread_exit(m) ? do_exit(m, a[0]) : 0;   /* the last thread ends the process */
	case G_exit_group: return do_exit(m, a[0]);
	case 23: return R(dup((int)a[0]));                                  /* dup */
	case 24: return R(dup3((int)a[0], (int)a[1], (int)a[2]));           /* dup3 */
	case 34: return R(mkdirat((int)a[0], G(a[1]), (mode_t)a[2]));       /* mkdirat */
	case 35: return R(unlinkat((int)a[0], G(a[1]), (int)a[2]));         /* unlinkat */
	case 36: return R(symlinkat(G(a[0]), (int)a[1], G(a[2])));          /* symlinkat */
	case 37: return R(linkat((int)a[0], G(a[1]), (int)a[2], G(a[3]), (int)a[4]));   /* linkat */
	case 38: return R(renameat((int)a[0], G(a[1]), (int)a[2], G(a[3])));            /* renameat */
	case 276: return R(syscall(SYS_renameat2, (int)a[0], G(a[1]), (int)a[2], G(a[3]),
				   (unsigned)a[4]));                          /* renameat2 */
	case 45: return R(truncate(G(a[0]), (off_t)a[1]));                   /* truncate */
	case 46: return R(ftruncate((int)a[0], (off_t)a[1]));                /* ftruncate */
	case 52: return R(fchmod((int)a[0], (mode_t)a[1]));                  /* fchmod */
	case 54: return R(fchownat((int)a[0], G(a[1]), (uid_t)a[2], (gid_t)a[3], (int)a[4]));
	case 55: return R(fchown((int)a[0], (uid_t)a[1], (gid_t)a[2]));      /* fchown */
	case 82: return R(fsync((int)a[0]));                                 /* fsync */
	case 83: return R(fdatasync((int)a[0]));                             /* fdatasync */
	case 88: return R(syscall(SYS_utimensat, (int)a[0], a[1] ? G(a[1]) : NULL,   /* utimensat: */
				  a[2] ? G(a[2]) : NULL, (int)a[3]));     /* 64-bit timespecs */
	case 439: return R(syscall(SYS_faccessat2, (int)a[0], G(a[1]), (int)a[2], (int)a[3]));
	case 49: return R(chdir(G(a[0])));                                   /* chdir */
	case 50: return R(fchdir((int)a[0]));                                /* fchdir */
	case 53: return R(fchmodat((int)a[0], G(a[1]), (mode_t)a[2], 0));   /* fchmodat */
	case 59: CHECK(a[0], 8); return R(pipe2(G(a[0]), (int)a[1]));        /* pipe2: int[2] everywhere */
	case 61: CHECK(a[1], a[2]);                                          /* getdents64: same layout */
		return R(syscall(SYS_getdents64, (int)a[0], G(a[1]), (unsigned)a[2]));
	case 71: return R(sendfile((int)a[0], (int)a[1], a[2] ? G(a[2]) : NULL, a[3]));  /* 64-bit offset */
	case 166: return umask((mode_t)a[0]);
	case 33: return R(syscall(SYS_mknodat, (int)a[0], G(a[1]), (unsigned)a[2], (unsigned)a[3]));   /* mknodat */
	case 81: sync(); return 0;                                           /* sync */
	case 115: return R(syscall(SYS_clock_nanosleep, (int)a[0], (int)a[1], G(a[2]),   /* clock_nanosleep: */
				   a[3] ? G(a[3]) : NULL));                   /* 64-bit timespecs */
	case 73: return R(syscall(SYS_ppoll, G(a[0]), (unsigned)a[1], a[2] ? G(a[2]) : NULL,  /* ppoll: the */
				  NULL, 8));          /* signal mask is not applied (no guest handlers) */
	case 154: return R(setpgid((pid_t)a[0], (pid_t)a[1]));               /* setpgid */
	case 155: return R(getpgid((pid_t)a[0]));                            /* getpgid */
	case 156: return R(getsid((pid_t)a[0]));                             /* getsid */
	case 157: return R(setsid());                                        /* setsid */
	case 158: CHECK(a[1], (uint64_t)(int)a[0] * 4);                      /* getgroups: */
		return R(getgroups((int)a[0], a[0] ? G(a[1]) : NULL));       /* 32-bit gids everywhere */
	case 220: return do_clone(m, pc, a);
	case 221: return do_execve(m, a);
	case 260: return do_wait4(m, a);
	case G_brk:
		if (a[0] >= m->brk_start && a[0] < SIM_MMAP_BASE) {
			if (a[0] > m->brk && sim_map(m, m->brk, a[0] - m->brk) < 0)
				return (int64_t)m->brk;
			if (a[0] > m->brk)
				memset(G(m->brk), 0, a[0] - m->brk);
			m->brk = a[0];
		}
		return (int64_t)m->brk;
	case G_mmap: return do_mmap(m, a);
	}
	return do_misc(m, pc, nr, a);
}
