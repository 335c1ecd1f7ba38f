/* printf: integers, strings, padding, floating point (%f %e %g %a). */
#include <stdio.h>
#include <stdint.h>
#include <inttypes.h>

int main(void) {
	printf("[%d] [%5d] [%-5d] [%05d] [%+d] [%x] [%#o] [%X]\n", 42, 42, 42, 42, 42, 0xbeef, 8, 0xcafe);
	printf("[%ld] [%lu] [%" PRId64 "] [%" PRIx64 "]\n", -1234567890123L, 18446744073709551615UL, INT64_MIN, UINT64_MAX);
	printf("[%s] [%10s] [%-10s] [%.3s] [%c]\n", "hello", "right", "left", "truncate", 'Z');
	double d[] = {0.0, -0.0, 1.0, 3.14159265358979, 2.5e-300, 1e300, 123456.789, -1.0 / 3.0, 6.02214076e23};
	for (unsigned i = 0; i < sizeof d / sizeof d[0]; i++)
		printf("%f | %.10e | %g | %a\n", d[i], d[i], d[i], d[i]);
	float f = 1.0f / 7.0f;
	printf("%.9f %e\n", f, (double)f * 1e-40);
	char buf[64];
	int n = snprintf(buf, sizeof buf, "%08.3f|%-8.2e|%%", 3.14159, 271.828);
	printf("%s (%d)\n", buf, n);
	return 0;
}
