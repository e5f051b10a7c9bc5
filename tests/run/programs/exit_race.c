/* Threads born while the process exits: two threads start threads without
 * end while main calls exit(). A thread the kernel creates just as the
 * group exits may stop at its exit before its clone event is ever
 * reported (the cloning thread dies first): reticle must let it go on, or
 * the process, and reticle waiting for it, never end (run.go.static hung
 * so: Go's runtime starts threads until the end). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void *nothing(void *arg)
{
	return arg;
}

static void *spawner(void *arg)
{
	for (;;) {
		pthread_t t;
		if (pthread_create(&t, NULL, nothing, NULL) == 0)
			pthread_detach(t);
	}
	return arg;
}

int main(void)
{
	pthread_t s[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&s[i], NULL, spawner, NULL);
	usleep(30000);
	printf("exiting\n");
	fflush(stdout);
	exit(3);
}
