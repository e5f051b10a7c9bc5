/* Failing system calls: the errno numbers and messages the program sees
 * (Linux/MIPS numbers differ from the generic ones above 34: ENAMETOOLONG
 * is 78, not 36). Makes and removes the directory argv[1].
 * compare.sh checks the output against qemu-user's. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static void show(const char *what, long r)
{
	int e = errno;
	printf("%-22s %ld", what, r);
	if (r < 0)
		printf(" errno %d (%s)", e, strerror(e));
	putchar('\n');
	errno = 0;
}

int main(int argc, char **argv)
{
	static char lng[5000];
	char d[512], sub[600], loop[600], f[600];
	struct stat st;

	if (argc < 2)
		return 2;
	snprintf(d, sizeof d, "%s", argv[1]);
	snprintf(sub, sizeof sub, "%s/sub", d);
	snprintf(loop, sizeof loop, "%s/loop", d);
	snprintf(f, sizeof f, "%s/file", d);
	memset(lng, 'a', sizeof lng - 1);
	mkdir(d, 0755);
	mkdir(sub, 0755);
	symlink("loop", loop);
	close(open(f, O_CREAT | O_WRONLY, 0644));
	errno = 0;
	show("open ENAMETOOLONG", open(lng, O_RDONLY));
	show("stat ENAMETOOLONG", stat(lng, &st));
	show("mkdir ENAMETOOLONG", mkdir(lng, 0755));
	show("access ENAMETOOLONG", access(lng, F_OK));
	show("rmdir ENOTEMPTY", rmdir(d));
	show("open ELOOP", open(loop, O_RDONLY));
	show("stat ELOOP", stat(loop, &st));
	show("chdir ELOOP", chdir(loop));
	show("open ENOENT", open("/nonexistent/x", O_RDONLY));
	show("open ENOTDIR", open(strcat(strcpy(lng, f), "/x"), O_RDONLY));
	show("open EISDIR", open(d, O_WRONLY));
	show("lseek EBADF", lseek(-1, 0, SEEK_SET));
	show("rseq ENOSYS", syscall(SYS_rseq, 0, 0, 0, 0));
	unlink(f);
	unlink(loop);
	rmdir(sub);
	show("rmdir", rmdir(d));
	return 0;
}
