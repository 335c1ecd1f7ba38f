/* Long memcpy/memmove/memset/memcmp at every alignment, with a checksum. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>

/* FNV-1a: cheap enough to keep the program short under qemu -singlestep */
static uint32_t crc32(const uint8_t *p, size_t n) {
	uint32_t c = 2166136261u;
	while (n--) c = (c ^ *p++) * 16777619u;
	return c;
}

int main(void) {
	size_t n = 3000; /* long enough for the word loops, short enough to trace */
	uint8_t *a = malloc(n + 64), *b = malloc(n + 64);
	for (size_t i = 0; i < n + 64; i++) a[i] = (uint8_t)(i * 131 + (i >> 8));
	uint32_t acc = 0;
	for (int sa = 0; sa < 8; sa += 3)
		for (int da = 0; da < 8; da += 3) {
			memset(b, 0x5a, n + 64);
			memcpy(b + da, a + sa, n - 3 * sa - da);
			acc ^= crc32(b, n + 64) + sa * 8 + da;
		}
	printf("memcpy hash %08x\n", acc);
	memmove(a + 100, a + 99, 2000);
	memmove(a + 7, a + 13, 2500);
	printf("memmove hash %08x\n", crc32(a, n));
	printf("memcmp %d %d\n", memcmp(a, a, n) == 0, memcmp(a, b, n) != 0);
	char *s = malloc(20000);
	memset(s, 'x', 19999);
	s[19999] = 0;
	printf("strlen %zu strchr %td\n", strlen(s), strchr(s, 'x') - s);
	free(a);
	free(b);
	free(s);
	return 0;
}
