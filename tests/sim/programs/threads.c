/* Four pthreads summing under a mutex, then joined: clone with CLONE_VM,
 * futex waits and wakes, CLONE_CHILD_CLEARTID at exit (pthread_join). */
#include <pthread.h>
#include <stdio.h>
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long total;
static void *work(void *arg)
{
	long id = (long)arg, local = 0;
	for (long i = 0; i < 20000; i++) local += (i ^ id) & 7;
	pthread_mutex_lock(&mu);
	total += local;
	pthread_mutex_unlock(&mu);
	return (void *)(id * 10);
}
int main(void)
{
	pthread_t t[4];
	for (long i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, (void *)i);
	long sum = 0;
	for (int i = 0; i < 4; i++) { void *r; pthread_join(t[i], &r); sum += (long)r; }
	printf("total %ld joined %ld\n", total, sum);
	return 0;
}
