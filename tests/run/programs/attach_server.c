/* A threaded server on the loopback interface for reticle attach: it keeps
 * its own count of requests (the oracle for the counts over an attached
 * window). Prints "port N" once listening. Each connection is served by a
 * thread of a pool, line by line:
 *   "N"      -> handle(N): mix() applied N % 7 + 1 times
 *   "count"  -> the number of "N" requests handled so far
 *   "quit"   -> the process exits 0 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/ucontext.h>
#include <unistd.h>

enum { WORKERS = 6 };

static atomic_ulong handled;
static int listener;

__attribute__((noinline)) unsigned long mix(unsigned long x, unsigned long i)
{
	return (x * 2654435761ul + i) % 1000003ul;
}

__attribute__((noinline)) unsigned long handle(unsigned long n)
{
	unsigned long r = n;
	for (unsigned long i = 0; i < n % 7 + 1; i++)
		r = mix(r, i);
	atomic_fetch_add(&handled, 1);
	return r;
}

static void serve(int fd)
{
	FILE *in = fdopen(fd, "r");
	char line[128];
	while (in && fgets(line, sizeof(line), in)) {
		char out[64];
		if (!strncmp(line, "quit", 4))
			exit(0);
		if (!strncmp(line, "count", 5))
			snprintf(out, sizeof(out), "%lu\n", (unsigned long)atomic_load(&handled));
		else
			snprintf(out, sizeof(out), "%lu\n", handle(strtoul(line, NULL, 10)));
		size_t len = strlen(out);
		if (write(fd, out, len) != (ssize_t)len)
			break;
	}
	if (in)
		fclose(in);
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		int fd = accept(listener, NULL, NULL);
		if (fd >= 0)
			serve(fd);
	}
	return NULL;
}

/* A fault says where it happened, and the mappings around it, before the
 * process dies of it: the test prints it (a crash after a detach is
 * otherwise only a closed connection). */
static void crashed(int sig, siginfo_t *si, void *uc_)
{
	ucontext_t *uc = uc_;
	char buf[4096];
	int n = snprintf(buf, sizeof(buf), "attach_server: signal %d at pc %#llx, address %p\n", sig,
			 (unsigned long long)uc->uc_mcontext.gregs[REG_RIP], si->si_addr);
	if (write(2, buf, (size_t)n) < 0)
		_exit(128 + sig);
	FILE *maps = fopen("/proc/self/maps", "r");
	while (maps && fgets(buf, sizeof(buf), maps))
		if (write(2, buf, strlen(buf)) < 0)
			break;
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(void)
{
	struct sigaction sa = { .sa_sigaction = crashed, .sa_flags = SA_SIGINFO };
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGILL, &sa, NULL);
	sigaction(SIGTRAP, &sa, NULL);
	sigaction(SIGFPE, &sa, NULL);

	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	listener = socket(AF_INET, SOCK_STREAM, 0);
	if (listener < 0 || bind(listener, (struct sockaddr *)&a, sizeof(a)) || listen(listener, 64) ||
	    getsockname(listener, (struct sockaddr *)&a, &len)) {
		perror("attach_server");
		return 1;
	}
	printf("port %d\n", ntohs(a.sin_port));
	fflush(stdout);
	pthread_t t[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	/* a stack word of all ones, as the JVM's threads have: no address of
	 * the code cache (an overflowing range test kept it mapped) */
	volatile uint64_t all_ones = ~0ull;
	pthread_join(t[0], NULL);
	return (int)(all_ones & 0);
}
