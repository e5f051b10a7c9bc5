/* Seed Table 1: quick sort of 100,000 integers initialised in descending order. */
#include <stdio.h>
#include <stdlib.h>
#define N 100000
static void quicksort(int *v, long lo, long hi)
{
	while (lo < hi) {
		int pivot = v[lo + (hi - lo) / 2];
		long i = lo, j = hi;
		while (i <= j) {
			while (v[i] < pivot) i++;
			while (v[j] > pivot) j--;
			if (i <= j) {
				int t = v[i]; v[i] = v[j]; v[j] = t;
				i++; j--;
			}
		}
		if (j - lo < hi - i) { quicksort(v, lo, j); lo = i; }
		else { quicksort(v, i, hi); hi = j; }
	}
}
int main(void)
{
	int *v = malloc(N * sizeof *v);
	if (!v)
		return 1;
	for (int i = 0; i < N; i++)
		v[i] = N - i;
	quicksort(v, 0, N - 1);
	for (int i = 1; i < N; i++)
		if (v[i - 1] > v[i]) {
			printf("qs: not sorted at %d\n", i);
			return 1;
		}
	printf("qs sorted %d: first %d middle %d last %d\n", N, v[0], v[N / 2], v[N - 1]);
	free(v);
	return 0;
}
