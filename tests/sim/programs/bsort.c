/* Seed Table 1: bubble sort of 1500 integers initialised in descending order. */
#include <stdio.h>
#define N 1500
static int v[N];
int main(void)
{
	for (int i = 0; i < N; i++)
		v[i] = N - i;
	for (int i = 0; i < N - 1; i++)
		for (int j = 0; j < N - 1 - i; j++)
			if (v[j] > v[j + 1]) {
				int t = v[j];
				v[j] = v[j + 1];
				v[j + 1] = t;
			}
	for (int i = 1; i < N; i++)
		if (v[i - 1] > v[i]) {
			printf("bsort: not sorted at %d\n", i);
			return 1;
		}
	printf("bsort sorted %d: first %d last %d\n", N, v[0], v[N - 1]);
	return 0;
}
