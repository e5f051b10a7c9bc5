#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <pthread.h>
static void spin_ms(double ms) { struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a); do clock_gettime(CLOCK_MONOTONIC, &b); while ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6 < ms); }
volatile int sink;
__attribute__((noinline)) void send_msg(int ms) { spin_ms(ms); sink++; }
__attribute__((noinline)) void foo(void) { send_msg(10); send_msg(5); sink++; }
__attribute__((noinline)) void bar(void) { send_msg(20); sink++; }
static void *worker(void *a) { (void)a; for (int i = 0; i < 5; i++) foo(); return NULL; }
int main(void) {
	pthread_t t; pthread_create(&t, NULL, worker, NULL);
	for (int i = 0; i < 5; i++) { foo(); bar(); }
	pthread_join(t, NULL);
	puts("done");
	return 0;
}
