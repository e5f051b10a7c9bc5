/* The MIPS o32 system-call ABI: numbers 4000 + n, 32-bit structures. Calls
 * whose arguments match asm-generic are renumbered and handed to the generic
 * table (linux.c); the others are translated here. The register convention
 * (v0, a0..a3, stack arguments, a3 error flag) is in descriptions/mips32.nml. */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <poll.h>
#include <stdint.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "sim/machine.h"

#define G(addr) ((void *)(m->mem + ((addr) & (m->mem_size - 1))))

typedef int64_t (*generic_fn)(struct rtl_sim *, uint64_t, uint64_t, const uint64_t *);

/* o32 number - 4000 -> asm-generic number, for calls with the same arguments */
static const struct { short o32, gen; } same[] = {
	{ 1, 93 }, { 3, 63 }, { 4, 64 }, { 6, 57 }, { 19, 62 }, { 20, 172 }, { 24, 174 }, { 37, 129 },
	{ 45, 214 }, { 47, 176 }, { 49, 175 }, { 50, 177 }, { 64, 173 }, { 91, 215 },
	{ 116, 179 }, { 122, 160 }, { 125, 226 }, { 145, 65 }, { 146, 66 }, { 167, 216 }, { 194, 134 }, { 195, 135 },
	{ 203, 17 }, { 206, 132 }, { 218, 233 }, { 222, 178 }, { 238, 98 }, { 240, 123 },
	{ 246, 94 }, { 252, 96 }, { 266, 131 }, { 298, 78 }, { 300, 48 }, { 309, 99 },
	{ 338, 261 }, { 353, 278 }, { 366, 291 }, { 367, 293 }, { 403, 113 },
	{ 41, 23 }, { 327, 24 }, { 328, 59 }, { 219, 61 }, { 237, 71 }, { 12, 49 }, { 133, 50 },
	{ 294, 35 }, { 289, 34 }, { 299, 53 }, { 94, 52 }, { 95, 55 }, { 291, 54 }, { 295, 38 },
	{ 296, 37 }, { 297, 36 }, { 435, 435 }, { 439, 439 },
	{ 422, 98 },   /* futex_time64: futex ignores its timeout */
	{ 36, 81 }, { 57, 154 }, { 132, 155 }, { 151, 156 }, { 66, 157 }, { 80, 158 }, { 290, 33 }, { 118, 82 }, { 152, 83 }, { 60, 166 }, { 114, 260 }, { 120, 220 }, { 11, 221 }, { 162, 124 },
};

/* MIPS open flags that differ from the host's (x86-64). */
static const struct { uint32_t mips, host; } oflags[] = {
	{ 0x0008, O_APPEND }, { 0x0010, O_DSYNC }, { 0x0080, O_NONBLOCK }, { 0x0100, O_CREAT },
	{ 0x0200, O_TRUNC }, { 0x0400, O_EXCL }, { 0x0800, O_NOCTTY }, { 0x1000, FASYNC },
	{ 0x2000, 0 /* O_LARGEFILE: implied */ }, { 0x8000, O_DIRECT }, { 0x10000, O_DIRECTORY },
	{ 0x20000, O_NOFOLLOW }, { 0x40000, O_NOATIME }, { 0x80000, O_CLOEXEC }, { 0x4000, O_SYNC & ~O_DSYNC },
	{ 0x200000, O_PATH },
};

static int host_oflags(uint64_t g)
{
	int h = (int)(g & 3);   /* O_RDONLY, O_WRONLY, O_RDWR */
	for (size_t i = 0; i < sizeof oflags / sizeof oflags[0]; i++)
		if (g & oflags[i].mips)
			h |= (int)oflags[i].host;
	return h;
}

static uint64_t guest_oflags(int h)
{
	uint64_t g = (uint64_t)(h & 3);
	for (size_t i = 0; i < sizeof oflags / sizeof oflags[0]; i++)
		if (oflags[i].host && (h & (int)oflags[i].host) == (int)oflags[i].host)
			g |= oflags[i].mips;
	return g;
}

/* MIPS fcntl commands that differ. The 64-bit locks' struct flock64 (o32:
 * type, whence, start at 8, len at 16, pid at 24) is the host's struct
 * flock; F_GETLK, F_SETLK and F_SETLKW take a 32-bit one (o32_flock32). */
static const struct { int mips, host; } fcntl_cmds[] = {
	{ 33, F_GETLK }, { 34, F_SETLK }, { 35, F_SETLKW }, { 23, F_GETOWN }, { 24, F_SETOWN },
};

/* fcntl with MIPS's 32-bit struct flock: short type, short whence, then
 * 32-bit start, len, sysid, pid and padding. CMD is 14 (F_GETLK), 6 or 7. */
static int64_t o32_flock32(struct rtl_sim *m, int fd, int cmd, uint64_t ga)
{
	uint8_t *g = G(ga);
	struct flock fl = { 0 };
	int32_t start, len, pid;
	memcpy(&fl.l_type, g, 2);
	memcpy(&fl.l_whence, g + 2, 2);
	memcpy(&start, g + 4, 4);
	memcpy(&len, g + 8, 4);
	fl.l_start = start, fl.l_len = len;
	if (fcntl(fd, cmd == 14 ? F_GETLK : cmd == 6 ? F_SETLK : F_SETLKW, &fl) < 0)
		return -errno;
	if (cmd == 14) {
		if (fl.l_start > INT32_MAX || fl.l_len > INT32_MAX)
			return -EOVERFLOW;
		start = (int32_t)fl.l_start, len = (int32_t)fl.l_len, pid = fl.l_pid;
		memcpy(g, &fl.l_type, 2);
		memcpy(g + 2, &fl.l_whence, 2);
		memcpy(g + 4, &start, 4);
		memcpy(g + 8, &len, 4);
		memcpy(g + 16, &pid, 4);
	}
	return 0;
}

/* MIPS mmap flags: MAP_ANONYMOUS is 0x800 and MAP_NORESERVE 0x400. */
static uint64_t host_mmap_flags(uint64_t g)
{
	uint64_t h = g & ~(uint64_t)0xc00;
	if (g & 0x800)
		h |= MAP_ANONYMOUS;
	if (g & 0x400)
		h |= MAP_NORESERVE;
	return h;
}

static void put_stat64(struct rtl_sim *m, uint64_t ga, const struct stat *st)
{
	uint8_t *g = G(ga);
	memset(g, 0, 104);
#define P64(off, v) do { uint64_t x_ = (uint64_t)(v); memcpy(g + (off), &x_, 8); } while (0)
#define P32(off, v) do { uint32_t x_ = (uint32_t)(v); memcpy(g + (off), &x_, 4); } while (0)
	P32(0, st->st_dev); P64(16, st->st_ino); P32(24, st->st_mode); P32(28, st->st_nlink);
	P32(32, st->st_uid); P32(36, st->st_gid); P32(40, st->st_rdev); P64(56, st->st_size);
	P32(64, st->st_atim.tv_sec); P32(68, st->st_atim.tv_nsec); P32(72, st->st_mtim.tv_sec);
	P32(76, st->st_mtim.tv_nsec); P32(80, st->st_ctim.tv_sec); P32(84, st->st_ctim.tv_nsec);
	P32(88, st->st_blksize); P64(96, st->st_blocks);
#undef P64
#undef P32
}

static int64_t err(int64_t r) { return r < 0 ? -errno : r; }

/* Host (x86-64, asm-generic) errno -> MIPS errno, from the kernel's
 * arch/mips/include/uapi/asm/errno.h; 0: the same number. Numbers 1-34
 * and a few above (ENODATA, EPROTO...) are the same on both. */
static const uint16_t mips_errno[] = {
	[EDEADLK] = 45, [ENAMETOOLONG] = 78, [ENOLCK] = 46, [ENOSYS] = 89, [ENOTEMPTY] = 93, [ELOOP] = 90,
	[ENOMSG] = 35, [EIDRM] = 36, [ECHRNG] = 37, [EL2NSYNC] = 38, [EL3HLT] = 39, [EL3RST] = 40,
	[ELNRNG] = 41, [EUNATCH] = 42, [ENOCSI] = 43, [EL2HLT] = 44, [EBADE] = 50, [EBADR] = 51,
	[EXFULL] = 52, [ENOANO] = 53, [EBADRQC] = 54, [EBADSLT] = 55, [EMULTIHOP] = 74, [EBADMSG] = 77,
	[EOVERFLOW] = 79, [ENOTUNIQ] = 80, [EBADFD] = 81, [EREMCHG] = 82, [ELIBACC] = 83, [ELIBBAD] = 84,
	[ELIBSCN] = 85, [ELIBMAX] = 86, [ELIBEXEC] = 87, [EILSEQ] = 88, [ERESTART] = 91, [ESTRPIPE] = 92,
	[EUSERS] = 94, [ENOTSOCK] = 95, [EDESTADDRREQ] = 96, [EMSGSIZE] = 97, [EPROTOTYPE] = 98,
	[ENOPROTOOPT] = 99, [EPROTONOSUPPORT] = 120, [ESOCKTNOSUPPORT] = 121, [EOPNOTSUPP] = 122,
	[EPFNOSUPPORT] = 123, [EAFNOSUPPORT] = 124, [EADDRINUSE] = 125, [EADDRNOTAVAIL] = 126,
	[ENETDOWN] = 127, [ENETUNREACH] = 128, [ENETRESET] = 129, [ECONNABORTED] = 130,
	[ECONNRESET] = 131, [ENOBUFS] = 132, [EISCONN] = 133, [ENOTCONN] = 134, [ESHUTDOWN] = 143,
	[ETOOMANYREFS] = 144, [ETIMEDOUT] = 145, [ECONNREFUSED] = 146, [EHOSTDOWN] = 147,
	[EHOSTUNREACH] = 148, [EALREADY] = 149, [EINPROGRESS] = 150, [ESTALE] = 151, [EUCLEAN] = 135,
	[ENOTNAM] = 137, [ENAVAIL] = 138, [EISNAM] = 139, [EREMOTEIO] = 140, [EDQUOT] = 1133,
	[ENOMEDIUM] = 159, [EMEDIUMTYPE] = 160, [ECANCELED] = 158, [ENOKEY] = 161, [EKEYEXPIRED] = 162,
	[EKEYREVOKED] = 163, [EKEYREJECTED] = 164, [EOWNERDEAD] = 165, [ENOTRECOVERABLE] = 166,
	[ERFKILL] = 167, [EHWPOISON] = 168,
};

/* A result in -4095..-1 is -errno in the host's numbering: the guest gets MIPS's. */
static int64_t guest_result(int64_t r)
{
	if (r < 0 && r >= -4095 && (uint64_t)-r < sizeof mips_errno / sizeof mips_errno[0] && mips_errno[-r])
		return -(int64_t)mips_errno[-r];
	return r;
}

/* MIPS signal numbers that differ from the host's (x86-64, asm-generic). */
int sim_mips_host_signal(int sig)
{
	switch (sig) {
	case 10: return SIGBUS;
	case 16: return SIGUSR1;
	case 17: return SIGUSR2;
	case 18: return SIGCHLD;
	case 7: case 12: return SIGSYS;   /* SIGEMT has no host twin; SIGSYS is 12 on MIPS */
	default: return sig;
	}
}

/* A 32-bit timespec of the guest; NULL for guest NULL. */
static struct timespec *get_ts32(struct rtl_sim *m, uint64_t ga, struct timespec *ts)
{
	int32_t v[2];
	if (!ga)
		return NULL;
	memcpy(v, G(ga), 8);
	ts->tv_sec = v[0];
	ts->tv_nsec = v[1];
	return ts;
}

/* A time64 timespec of the guest: 64-bit seconds, 32-bit nanoseconds and
 * padding that Linux ignores for 32-bit programs. */
static struct timespec *get_ts64(struct rtl_sim *m, uint64_t ga, struct timespec *ts)
{
	int64_t sec;
	int32_t nsec;
	if (!ga)
		return NULL;
	memcpy(&sec, G(ga), 8);
	memcpy(&nsec, G(ga + 8), 4);
	ts->tv_sec = sec;
	ts->tv_nsec = nsec;
	return ts;
}

/* MIPS poll events: POLLWRBAND is 0x100 (the host's POLLWRNORM), the
 * host's 0x200; POLLWRNORM is POLLOUT. The rest agree. */
static int64_t o32_poll(struct rtl_sim *m, uint64_t gfds, uint64_t n, const struct timespec *ts)
{
	struct pollfd *f = G(gfds);
	if (n > 65536 || (gfds & (m->mem_size - 1)) + n * sizeof *f > m->mem_size)
		return -EINVAL;
	for (uint64_t i = 0; i < n; i++)
		if (f[i].events & 0x100)
			f[i].events = (short)((f[i].events & ~0x100) | POLLWRBAND);
	int r = ppoll(f, (nfds_t)n, ts, NULL);
	int e = errno;
	for (uint64_t i = 0; i < n; i++) {
		short ev = f[i].events, rev = f[i].revents;
		f[i].events = (short)(ev & POLLWRBAND ? (ev & ~POLLWRBAND) | 0x100 : ev);
		f[i].revents = (short)((rev & ~(POLLWRNORM | POLLWRBAND)) | (rev & POLLWRNORM ? POLLOUT : 0) |
				       (rev & POLLWRBAND ? 0x100 : 0));
	}
	return r < 0 ? -e : r;
}

static int64_t o32_call(struct rtl_sim *m, uint64_t pc, uint64_t nr, const uint64_t *a, generic_fn generic)
{
	uint64_t n = nr - 4000, b[6];
	struct stat st;

	for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
		if ((uint64_t)same[i].o32 == n)
			return generic(m, pc, (uint64_t)same[i].gen, a);
	switch (n) {
	case 5:      /* open */
		return err(open(G(a[0]), host_oflags(a[1]), (mode_t)a[2]));
	case 288:    /* openat */
		memcpy(b, a, sizeof b);
		b[2] = (uint64_t)host_oflags(a[2]);
		return generic(m, pc, 56, b);
	case 220: {  /* fcntl64: the file status flags and the lock and owner commands differ */
		memcpy(b, a, sizeof b);
		if (a[1] == F_SETFL)
			b[2] = (uint64_t)host_oflags(a[2]);
		if (a[1] == 6 || a[1] == 7 || a[1] == 14)
			return o32_flock32(m, (int)a[0], (int)a[1], a[2]);
		for (size_t i = 0; i < sizeof fcntl_cmds / sizeof fcntl_cmds[0]; i++)
			if (a[1] == fcntl_cmds[i].mips)
				b[1] = (uint64_t)fcntl_cmds[i].host;
		int64_t r = generic(m, pc, 25, b);
		return a[1] == F_GETFL && r >= 0 ? (int64_t)guest_oflags((int)r) : r;
	}
	case 54:     /* ioctl: MIPS numbers for the terminal queries */
		memcpy(b, a, sizeof b);
		if (a[1] == 0x540d) {        /* TCGETS: only success matters (isatty); MIPS termios is longer */
			uint8_t t[64] = { 0 };
			b[1] = 0x5401, b[2] = 0;
			if (ioctl((int)a[0], TCGETS, t) < 0)
				return -errno;
			memcpy(G(a[2]), t, 36);
			return 0;
		}
		if (a[1] != 0x40087468)      /* not TIOCGWINSZ: MIPS's numbers must not reach the host */
			return -ENOTTY;      /* (its TCGETA is the host's TCGETS, whose termios is longer) */
		b[1] = 0x5413;               /* TIOCGWINSZ: same struct winsize */
		return generic(m, pc, 29, b);
	case 33:     /* access */
		return err(access(G(a[0]), (int)a[1]));
	case 2:      /* fork */
		b[0] = 17 /* SIGCHLD */, b[1] = b[2] = b[3] = b[4] = b[5] = 0;
		return generic(m, pc, 220, b);
	case 38:     /* rename */
		return err(rename(G(a[0]), G(a[1])));
	case 9:      /* link */
		return err(link(G(a[0]), G(a[1])));
	case 83:     /* symlink */
		return err(symlink(G(a[0]), G(a[1])));
	case 92:     /* truncate, 32-bit length */
		return err(truncate(G(a[0]), (off_t)(int32_t)a[1]));
	case 93:     /* ftruncate, 32-bit length */
		return err(ftruncate((int)a[0], (off_t)(int32_t)a[1]));
	case 10:     /* unlink */
		return err(unlink(G(a[0])));
	case 39:     /* mkdir */
		return err(mkdir(G(a[0]), (mode_t)a[1]));
	case 40:     /* rmdir */
		return err(rmdir(G(a[0])));
	case 15:     /* chmod */
		return err(chmod(G(a[0]), (mode_t)a[1]));
	case 202:    /* chown */
		return err(chown(G(a[0]), (uid_t)a[1], (gid_t)a[2]));
	case 16:     /* lchown */
		return err(lchown(G(a[0]), (uid_t)a[1], (gid_t)a[2]));
	case 65:     /* getpgrp */
		return getpgrp();
	case 14:     /* mknod */
		return err(syscall(SYS_mknodat, AT_FDCWD, G(a[0]), (unsigned)a[1], (unsigned)a[2]));
	case 211:    /* truncate64(path, pad, lo, hi) */
		return err(truncate(G(a[0]), (off_t)(((uint64_t)a[3] << 32) | (uint32_t)a[2])));
	case 212:    /* ftruncate64(fd, pad, lo, hi) */
		return err(ftruncate((int)a[0], (off_t)(((uint64_t)a[3] << 32) | (uint32_t)a[2])));
	case 166: {  /* nanosleep with 32-bit timespecs */
		struct timespec ts, rem;
		if (nanosleep(get_ts32(m, a[0], &ts), &rem) == 0)
			return 0;
		int e = errno;
		if (e == EINTR && a[1]) {
			int32_t v[2] = { (int32_t)rem.tv_sec, (int32_t)rem.tv_nsec };
			memcpy(G(a[1]), v, 8);
		}
		return -e;
	}
	case 265: case 407: {  /* clock_nanosleep with 32-bit timespecs, clock_nanosleep_time64 */
		struct timespec ts, rem;
		int t64 = n == 407, e = clock_nanosleep((clockid_t)a[0], (int)a[1],
							t64 ? get_ts64(m, a[2], &ts) : get_ts32(m, a[2], &ts), &rem);
		if (e == EINTR && a[3] && !(a[1] & TIMER_ABSTIME)) {
			int32_t v[2] = { (int32_t)rem.tv_sec, (int32_t)rem.tv_nsec };
			int64_t w[2] = { rem.tv_sec, rem.tv_nsec };
			memcpy(G(a[3]), t64 ? (void *)w : (void *)v, t64 ? 16 : 8);
		}
		return -e;
	}
	case 316: case 412: {  /* utimensat with 32-bit timespecs (UTIME_NOW, UTIME_OMIT fit), _time64 */
		struct timespec ts[2];
		unsigned size = n == 412 ? 16 : 8;
		for (int i = 0; a[2] && i < 2; i++)
			n == 412 ? get_ts64(m, a[2] + i * size, &ts[i]) : get_ts32(m, a[2] + i * size, &ts[i]);
		return err(syscall(SYS_utimensat, (int)a[0], a[1] ? G(a[1]) : NULL, a[2] ? ts : NULL, (int)a[3]));
	}
	case 188:    /* poll(fds, n, timeout in ms) */
		if ((int)a[2] >= 0) {
			struct timespec ts = { (int)a[2] / 1000, (long)((int)a[2] % 1000) * 1000000 };
			return o32_poll(m, a[0], a[1], &ts);
		}
		return o32_poll(m, a[0], a[1], NULL);
	case 302: {  /* ppoll with a 32-bit timespec; the signal mask is not applied */
		struct timespec ts;
		return o32_poll(m, a[0], a[1], get_ts32(m, a[2], &ts));
	}
	case 414: {  /* ppoll_time64 */
		struct timespec ts;
		return o32_poll(m, a[0], a[1], get_ts64(m, a[2], &ts));
	}
	case 192:    /* prctl: accepted, not applied (names, dumpable...) */
		return 0;
	case 63:     /* dup2 */
		return err(dup2((int)a[0], (int)a[1]));
	case 85:     /* readlink */
		b[0] = (uint64_t)AT_FDCWD, b[1] = a[0], b[2] = a[1], b[3] = a[2];
		return generic(m, pc, 78, b);
	case 140: {  /* _llseek(fd, hi, lo, result, whence) */
		off_t r = lseek((int)a[0], (off_t)((a[1] << 32) | (uint32_t)a[2]), (int)a[4]);
		if (r < 0)
			return -errno;
		uint64_t v = (uint64_t)r;
		memcpy(G(a[3]), &v, 8);
		return 0;
	}
	case 200:    /* pread64(fd, buf, count, pad, lo, hi) */
		return err(pread((int)a[0], G(a[1]), (size_t)a[2], (off_t)(((uint64_t)a[5] << 32) | (uint32_t)a[4])));
	case 210:    /* mmap2: offset in 4096-byte units */
		memcpy(b, a, sizeof b);
		b[3] = host_mmap_flags(a[3]);
		b[5] = a[5] * 4096;
		return generic(m, pc, 222, b);
	case 90:     /* old mmap */
		memcpy(b, a, sizeof b);
		b[3] = host_mmap_flags(a[3]);
		return generic(m, pc, 222, b);
	case 215:    /* fstat64 */
		if (fstat((int)a[0], &st) < 0)
			return -errno;
		put_stat64(m, a[1], &st);
		return 0;
	case 293:    /* fstatat64 */
		if (fstatat((int)a[0], G(a[1]), &st, (int)a[3]) < 0)
			return -errno;
		put_stat64(m, a[2], &st);
		return 0;
	case 263: {  /* clock_gettime with a 32-bit timespec */
		struct timespec ts;
		if (clock_gettime((clockid_t)a[0], &ts) < 0)
			return -errno;
		uint32_t v[2] = { (uint32_t)ts.tv_sec, (uint32_t)ts.tv_nsec };
		memcpy(G(a[1]), v, 8);
		return 0;
	}
	case 76: {   /* getrlimit with 32-bit limits (MIPS: infinity is 0x7fffffff) */
		struct rlimit rl;
		if (getrlimit((int)a[0], &rl) < 0)
			return -errno;
		if (a[0] == RLIMIT_STACK)
			rl.rlim_cur = SIM_STACK_SIZE;
		uint32_t w[2] = { rl.rlim_cur > 0x7fffffff ? 0x7fffffff : (uint32_t)rl.rlim_cur,
				  rl.rlim_max > 0x7fffffff ? 0x7fffffff : (uint32_t)rl.rlim_max };
		memcpy(G(a[1]), w, 8);
		return 0;
	}
	case 283: {  /* set_thread_area: the description names the register */
		unsigned size;
		uint64_t *r = sim_reg_ptr(m, m->isa->tls_register, &size);
		if (!r)
			break;
		memcpy(r, &a[0], size);
		return 0;
	}
	}
	return sim_unsupported(m, pc);
}

int64_t sim_mips_o32(struct rtl_sim *m, uint64_t pc, uint64_t nr, const uint64_t *a, generic_fn generic)
{
	return guest_result(o32_call(m, pc, nr, a, generic));
}
