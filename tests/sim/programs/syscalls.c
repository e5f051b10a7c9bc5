/* System calls of common tools beyond stdio: sleeping, file times, poll,
 * fifos, sizes, modes and owners, process groups and groups. Prints what
 * does not change from run to run; compare.sh checks it against qemu-user.
 * Makes and removes the directory argv[1]. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static void show(const char *what, long r)
{
	printf("%-26s %ld%s%s\n", what, r, r < 0 ? " " : "", r < 0 ? strerror(errno) : "");
}

int main(int argc, char **argv)
{
	char d[512], f[600], fifo[600], link[600];
	struct stat st;
	int p[2];

	if (argc < 2)
		return 2;
	snprintf(d, sizeof d, "%s", argv[1]);
	snprintf(f, sizeof f, "%s/f", d);
	snprintf(fifo, sizeof fifo, "%s/fifo", d);
	snprintf(link, sizeof link, "%s/l", d);
	show("mkdir", mkdir(d, 0755));

	struct timespec ts = { 0, 1000000 }, t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	show("nanosleep", nanosleep(&ts, NULL));
	show("clock_nanosleep", clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("slept >= 2 ms: %d\n", (t1.tv_sec - t0.tv_sec) * 1000000000L + t1.tv_nsec - t0.tv_nsec >= 2000000);

	int fd = open(f, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	show("write", write(fd, "hello", 5));
	struct timespec times[2] = { { 1000000000, 5 }, { 1234567890, 123456789 } };
	show("utimensat", utimensat(AT_FDCWD, f, times, 0));
	stat(f, &st);
	printf("atime %ld.%09ld mtime %ld.%09ld\n", (long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
	       (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	struct timespec omit[2] = { { 0, UTIME_OMIT }, { 7, 0 } };
	show("futimens omit", futimens(fd, omit));
	fstat(fd, &st);
	printf("atime %ld mtime %ld\n", (long)st.st_atim.tv_sec, (long)st.st_mtim.tv_sec);
	show("ftruncate", ftruncate(fd, 3));
	show("truncate", truncate(f, 1L << 20));
	stat(f, &st);
	printf("size %lld\n", (long long)st.st_size);
	show("chmod", chmod(f, 0600));
	show("chown", chown(f, getuid(), getgid()));
	show("symlink", symlink("f", link));
	show("lchown", lchown(link, getuid(), getgid()));
	stat(f, &st);
	printf("mode %o\n", st.st_mode & 07777);
	close(fd);

	show("mkfifo", mkfifo(fifo, 0640));
	show("mknod", mknod(fifo, S_IFIFO | 0600, 0));
	stat(fifo, &st);
	printf("fifo %d mode %o\n", S_ISFIFO(st.st_mode), st.st_mode & 07777);

	show("pipe", pipe(p));
	/* not POLLWRNORM or POLLWRBAND: their MIPS bits differ, which qemu-mipsel 7.2
	 * does not translate (a pipe's write end says POLLWRBAND under it) */
	struct pollfd fds[2] = { { p[0], POLLIN, 0 }, { p[1], POLLOUT, 0 } };
	show("poll", poll(fds, 2, 0));
	printf("revents in %#x out %#x\n", fds[0].revents, fds[1].revents);
	show("write pipe", write(p[1], "x", 1));
	show("ppoll", ppoll(fds, 2, &ts, NULL));
	printf("revents in %#x out %#x\n", fds[0].revents, fds[1].revents);
	show("poll timeout", poll(fds, 1, 1));

	show("sync", (sync(), 0));
	printf("getpgid(0) == getpgrp(): %d\n", getpgid(0) == getpgrp());
	printf("getsid(0) > 0: %d\n", getsid(0) > 0);
	/* record locks: the child sees the parent's and cannot take it */
	int lfd = open(f, O_RDWR);
	struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 10, .l_len = 20 };
	show("F_SETLK", fcntl(lfd, F_SETLK, &fl));
	show("F_SETOWN", fcntl(lfd, F_SETOWN, getpid()));
	printf("F_GETOWN is the pid: %d\n", fcntl(lfd, F_GETOWN) == getpid());
	fflush(stdout);
	pid_t locker = fork();
	if (locker == 0) {
		struct flock q = { .l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 100 };
		int r = fcntl(lfd, F_GETLK, &q);
		printf("child F_GETLK %d type %d start %ld len %ld pid is the parent's %d\n", r, q.l_type == F_WRLCK,
		       (long)q.l_start, (long)q.l_len, q.l_pid == getppid());
#if defined(__mips__)
		/* MIPS's F_GETLK (14) with the 32-bit struct flock (glibc uses F_GETLK64) */
		struct { short type, whence; int start, len, sysid, pid, pad[4]; } l32 = { F_WRLCK, SEEK_SET, 0, 100 };
		r = syscall(SYS_fcntl64, lfd, 14, &l32);
		printf("child F_GETLK 32 %d type %d start %d len %d pid is the parent's %d\n", r, l32.type == F_WRLCK,
		       l32.start, l32.len, l32.pid == getppid());
#endif
		q.l_type = F_RDLCK;
		r = fcntl(lfd, F_SETLK, &q);
		printf("child F_SETLK %d %s\n", r, r < 0 && (errno == EAGAIN || errno == EACCES) ? "refused" : "?");
		fflush(stdout);
		_exit(0);
	}
	waitpid(locker, NULL, 0);
	fl.l_type = F_UNLCK;
	show("F_SETLK unlock", fcntl(lfd, F_SETLK, &fl));
	close(lfd);

	fflush(stdout);
	pid_t child = fork();
	if (child == 0)   /* a new session: the child leads it */
		_exit(setsid() == getpid() && getsid(0) == getpid() && getpgid(0) == getpid() ? 0 : 1);
	int status = -1;
	waitpid(child, &status, 0);
	printf("setsid in a child: %d\n", WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* signals: 0 only checks, SIGCHLD is ignored by default, another process dies of one */
	show("kill self 0", kill(getpid(), 0));
	show("raise SIGCHLD", raise(SIGCHLD));
	pid_t sleeper = fork();
	if (sleeper == 0) {
		for (;;)
			nanosleep(&ts, NULL);
	}
	show("kill child SIGTERM", kill(sleeper, SIGTERM));
	status = -1;
	printf("child ended: %d\n", waitpid(sleeper, &status, 0) == sleeper);
	show("kill it again", kill(sleeper, 0));
	int n = getgroups(0, NULL);
	gid_t g[256];
	printf("getgroups: %d\n", n >= 0 && getgroups(256, g) == n);

#if defined(__mips__)
	/* the o32 time64 calls (glibc here uses the 32-bit ones): 64-bit seconds,
	 * 32-bit nanoseconds, padding the kernel ignores for 32-bit programs */
	struct { long long sec; int nsec, pad; } t64[2] = { { 1500000000, 7, -1 }, { 1600000000, 9, -1 } };
	show("utimensat_time64", syscall(4412, AT_FDCWD, f, t64, 0));
	stat(f, &st);
	printf("atime %ld.%09ld mtime %ld.%09ld\n", (long)st.st_atim.tv_sec, st.st_atim.tv_nsec,
	       (long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
	t64[0].sec = 0, t64[0].nsec = 1000000;
	show("clock_nanosleep_time64", syscall(4407, CLOCK_MONOTONIC, 0, t64, NULL));
	show("ppoll_time64", syscall(4414, fds, 2, t64, NULL, 16));
	printf("revents in %#x out %#x\n", fds[0].revents, fds[1].revents);
#endif
	unlink(link);
	unlink(fifo);
	unlink(f);
	show("rmdir", rmdir(d));
	return 0;
}
