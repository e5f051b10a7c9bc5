/* A program that leaves processes running when it ends: with "daemon" a
 * daemon (fork, setsid, fork), with "job" a background child in its own
 * session no more. Each child works on after the program has returned:
 * it waits for the file GO to appear, then calls functions it never called
 * before (their entries still armed when reticle let it go) and writes
 * their result to OUT. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) static unsigned long mix(unsigned long x, int i)
{
	return x * 2654435761u + (unsigned long)i;
}

/* called for the first time only after the program has ended */
__attribute__((noinline)) static unsigned long late_work(int n)
{
	unsigned long x = 1;
	char buf[64];
	for (int i = 0; i < n; i++) {
		x = mix(x, i) % 1000003;
		snprintf(buf, sizeof(buf), "%lu", x);
		x += strtoul(buf, NULL, 10) % 7;
	}
	return x;
}

static int compare(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

static void child(const char *go, const char *out)
{
	/* as daemons do: the caller's pipes are not held open */
	int null = open("/dev/null", O_RDWR);
	for (int fd = 0; fd < 3 && null >= 0; fd++)
		dup2(null, fd);
	for (int i = 0; i < 600 && access(go, F_OK); i++)
		usleep(10000);
	int v[100];
	for (int i = 0; i < 100; i++)
		v[i] = (int)(mix((unsigned long)i, 3) % 1000);
	qsort(v, 100, sizeof(*v), compare);
	FILE *f = fopen(out, "w");
	if (!f)
		_exit(1);
	fprintf(f, "%lu %d %d\n", late_work(200000), v[0], v[99]);
	fclose(f);
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: daemon daemon|job GO OUT\n");
		return 2;
	}
	unsigned long warm = 0;
	for (int i = 0; i < 1000; i++)
		warm = mix(warm, i);
	pid_t p = fork();
	if (p < 0)
		return 1;
	if (p == 0) {
		if (!strcmp(argv[1], "daemon")) {
			setsid();
			if (fork())
				_exit(0);
		}
		child(argv[2], argv[3]);
	}
	printf("started %lu\n", warm % 1000);
	return 3;
}
