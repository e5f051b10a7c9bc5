/* Seed Table 1: floating-point matrix multiplication of two 100x100 matrices. */
#include <stdio.h>
#define N 100
static double a[N][N], b[N][N], c[N][N];
int main(void)
{
	double sum = 0;
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			a[i][j] = (i + 1) * 0.5 + j;
			b[i][j] = (i - j) / 3.0;
		}
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++) {
			double s = 0;
			for (int k = 0; k < N; k++)
				s += a[i][k] * b[k][j];
			c[i][j] = s;
		}
	for (int i = 0; i < N; i++)
		for (int j = 0; j < N; j++)
			sum += c[i][j] / (1 + i + j);
	printf("fmmul checksum %.6f c[17][42]=%.3f %g\n", sum, c[17][42], (float)sum);
	return 0;
}
