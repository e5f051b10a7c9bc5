/* Seed Table 1: all placements of N queens on an NxN board, N = 12 (N from argv[1] if given). */
#include <stdio.h>
#include <stdlib.h>
static int n, cols[32];
static long solutions;
static int safe(int row, int col)
{
	for (int r = 0; r < row; r++) {
		int c = cols[r];
		if (c == col || abs(c - col) == row - r)
			return 0;
	}
	return 1;
}
static void place(int row)
{
	if (row == n) {
		solutions++;
		return;
	}
	for (int col = 0; col < n; col++)
		if (safe(row, col)) {
			cols[row] = col;
			place(row + 1);
		}
}
int main(int argc, char **argv)
{
	n = argc > 1 ? atoi(argv[1]) : 12;
	if (n < 1 || n > 32)
		return 2;
	place(0);
	printf("nqueen %d: %ld solutions\n", n, solutions);
	return 0;
}
