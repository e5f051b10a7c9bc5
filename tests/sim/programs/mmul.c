/* Seed Table 1: integer matrix multiplication of two 100x100 matrices. */
#include <stdio.h>
#define N 100
static int a[N][N], b[N][N], c[N][N];
int main(void)
{
	long sum = 0;
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			a[i][j] = i + j;
			b[i][j] = i - j;
		}
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			int s = 0;
			for (int k = 0; k < N; k++)
				s += a[i][k] * b[k][j];
			c[i][j] = s;
		}
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++)
			sum += c[i][j] * (i ^ j);
	printf("mmul checksum %ld c[17][42]=%d\n", sum, c[17][42]);
	return 0;
}
