/* An MPI program with a deliberate imbalance (tests/run/mpi.py): rank R
 * calls work() on (R + 1 + OFFSET) units, OFFSET being argv[1], and
 * steady() on the same amount everywhere; rank 0 prints the sums. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long work(long units)
{
	long s = 0;
	for (long i = 0; i < units * 100000; i++)
		s += i % 7;
	return s;
}

__attribute__((noinline)) long steady(void)
{
	long s = 0;
	for (long i = 0; i < 200000; i++)
		s += i % 5;
	return s;
}

int main(int argc, char **argv)
{
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	long offset = argc > 1 ? atol(argv[1]) : 0;
	long mine[2] = { work(rank + 1 + offset), steady() }, total[2] = { 0, 0 };
	MPI_Reduce(mine, total, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
	if (rank == 0)
		printf("work %ld steady %ld over %d ranks\n", total[0], total[1], size);
	MPI_Finalize();
	return 0;
}
