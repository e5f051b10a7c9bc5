#include <stdio.h>
#include <unistd.h>
volatile long sink; int level;
__attribute__((noinline)) void work(int k) { for (int i = 0; i < 1000; i++) sink += k; }
__attribute__((noinline)) void outer(int k) { work(k); work(k + 1); sink++; }
int main(void) { for (long n = 0;; n++) { level = n % 4; outer((int)(n % 10)); if (n % 1000 == 0) usleep(1000); } }
