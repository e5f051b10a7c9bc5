/* Programs that make glibc load libgcc_s while they run (it is dlopen'd on
 * first need): reticle's unwind registration must wait until the loader
 * has relocated it, and never hang. MODE: dlopen, backtrace, exit (a
 * thread calls pthread_exit), cancel (a thread is cancelled), all. */
#include <dlfcn.h>
#include <stdbool.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int frames(int depth)
{
	void *pcs[64];
	if (depth > 0)
		return frames(depth - 1) + 0 * depth;   /* nested calls below backtrace */
	return backtrace(pcs, 64);
}

static void *exits(void *arg)
{
	pthread_exit(arg);
	return NULL;
}

static void *waits(void *arg)
{
	for (;;)
		pause();   /* a cancellation point */
	return arg;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	bool all = !strcmp(mode, "all");
	if (all || !strcmp(mode, "dlopen"))
		printf("dlopen: %s\n", dlopen("libgcc_s.so.1", RTLD_NOW) ? "loaded" : dlerror());
	if (all || !strcmp(mode, "backtrace"))
		printf("backtrace: %s\n", frames(5) > 0 ? "frames" : "none");
	if (all || !strcmp(mode, "exit")) {
		pthread_t t;
		void *ret = NULL;
		pthread_create(&t, NULL, exits, (void *)42);
		pthread_join(t, &ret);
		printf("pthread_exit: %ld\n", (long)ret);
	}
	if (all || !strcmp(mode, "cancel")) {
		pthread_t t;
		void *ret = NULL;
		pthread_create(&t, NULL, waits, NULL);
		usleep(1000);
		pthread_cancel(t);
		pthread_join(t, &ret);
		printf("pthread_cancel: %s\n", ret == PTHREAD_CANCELED ? "cancelled" : "not cancelled");
	}
	return 0;
}
