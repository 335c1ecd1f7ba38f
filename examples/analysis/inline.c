/* inline.c: inlined functions (static inline helpers that gcc -O2
 * inlines, nested two deep) and a qsort call, for the pprof (DWARF
 * inlined frames, per-line and per-instruction costs) and Chrome/Perfetto
 * tests of package analysis. Built with -O2 and inlining on (build.sh). */
#include <stdlib.h>

int data[200];

static inline int square(int x)
{
	return x * x;
}

static inline int sum_squares(const int *a, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += square(a[i]);
	return s;
}

static int cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

__attribute__((noinline)) int checksum(const int *a, int n)
{
	return sum_squares(a, n) ^ sum_squares(a, n / 2);
}

int main(void)
{
	for (int i = 0; i < 200; i++)
		data[i] = (i * 37) % 200;
	qsort(data, 200, sizeof data[0], cmp);
	for (int i = 0; i < 200; i++)
		if (data[i] != i)
			return 1;
	return checksum(data, 200) == 0;
}
