/* A Linux user-mode workload for timing simulators (rvtrace bench --sim,
 * scripts/bench-sim.sh): sorting through a comparison function, a hash
 * table, double-precision matrix products, string formatting and CRC-32,
 * about 150 M RV64GC instructions at scale 1 (argv[1] multiplies it). It
 * prints a checksum, so that the outputs of two simulators can be
 * compared. Build: riscv64-linux-gnu-gcc -static -O2 simbench.c -o simbench */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t seed = 88172645463325252ULL;
static uint64_t rnd(void) {
	seed ^= seed << 13;
	seed ^= seed >> 7;
	seed ^= seed << 17;
	return seed;
}

static int cmp(const void *a, const void *b) {
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

#define NSORT 60000
#define NHASH (1 << 16)
#define NMAT 64

static uint32_t arr[NSORT];
static uint64_t keys[NHASH];
static uint32_t vals[NHASH];
static double ma[NMAT][NMAT], mb[NMAT][NMAT], mc[NMAT][NMAT];
static uint32_t crctab[256];

static uint32_t crc32(const uint8_t *p, size_t n, uint32_t c) {
	c = ~c;
	while (n--)
		c = crctab[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

int main(int argc, char **argv) {
	int scale = argc > 1 ? atoi(argv[1]) : 1;
	uint64_t sum = 0;
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crctab[i] = c;
	}
	for (int round = 0; round < scale; round++) {
		/* sort */
		for (int i = 0; i < NSORT; i++)
			arr[i] = (uint32_t)rnd();
		qsort(arr, NSORT, sizeof arr[0], cmp);
		for (int i = 0; i < NSORT; i += 97)
			sum = sum * 31 + arr[i];
		/* hash table with linear probing */
		memset(keys, 0, sizeof keys);
		for (int i = 0; i < NHASH / 2; i++) {
			uint64_t k = rnd() | 1;
			uint32_t h = (uint32_t)(k * 0x9e3779b97f4a7c15ULL >> 48);
			while (keys[h] && keys[h] != k)
				h = (h + 1) & (NHASH - 1);
			keys[h] = k;
			vals[h] += i;
		}
		for (int i = 0; i < NHASH; i++)
			sum += keys[i] ? vals[i] ^ (uint32_t)keys[i] : 0;
		/* matrices */
		for (int i = 0; i < NMAT; i++)
			for (int j = 0; j < NMAT; j++) {
				ma[i][j] = (double)(rnd() % 1000) / 7.0;
				mb[i][j] = (double)(rnd() % 1000) / 13.0;
			}
		for (int rep = 0; rep < 4; rep++)
			for (int i = 0; i < NMAT; i++)
				for (int j = 0; j < NMAT; j++) {
					double s = 0;
					for (int k = 0; k < NMAT; k++)
						s += ma[i][k] * mb[k][j];
					mc[i][j] = s;
				}
		for (int i = 0; i < NMAT; i++)
			sum += (uint64_t)mc[i][(i * 7) % NMAT];
		/* strings and CRC */
		char buf[256];
		uint32_t crc = 0;
		for (int i = 0; i < 20000; i++) {
			int n = snprintf(buf, sizeof buf, "line %d: %08llx %s", i, (unsigned long long)rnd(), i % 3 ? "abc" : "defgh");
			crc = crc32((const uint8_t *)buf, (size_t)n, crc);
		}
		sum += crc;
	}
	printf("simbench scale %d: checksum %016llx\n", scale, (unsigned long long)sum);
	return 0;
}
