/* Function pointers: dispatch tables, qsort and bsearch callbacks, a tiny stack VM. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int add(int a, int b) { return a + b; }
static int sub(int a, int b) { return a - b; }
static int mul(int a, int b) { return a * b; }
static int dvd(int a, int b) { return b ? a / b : 0; }
static int (*const ops[])(int, int) = {add, sub, mul, dvd};

static int cmp_int(const void *a, const void *b) {
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

typedef void (*handler)(long *stack, int *sp);
static void h_dup(long *s, int *sp) { s[*sp] = s[*sp - 1]; (*sp)++; }
static void h_add(long *s, int *sp) { (*sp)--; s[*sp - 1] += s[*sp]; }
static void h_mul(long *s, int *sp) { (*sp)--; s[*sp - 1] *= s[*sp]; }
static void h_inc(long *s, int *sp) { s[*sp - 1]++; }

int main(void) {
	int acc = 7;
	for (int i = 0; i < 40; i++) acc = ops[i % 4](acc, i + 1) & 0xffff;
	printf("dispatch: %d\n", acc);
	int v[64];
	unsigned seed = 12345;
	for (int i = 0; i < 64; i++) { seed = seed * 1103515245 + 12345; v[i] = (seed >> 8) % 1000; }
	qsort(v, 64, sizeof v[0], cmp_int);
	for (int i = 0; i < 64; i += 8) printf("%d ", v[i]);
	int key = v[37];
	int *f = bsearch(&key, v, 64, sizeof v[0], cmp_int);
	printf("\nbsearch %d at %ld\n", key, f ? (long)(f - v) : -1L);
	char *words[] = {"pear", "apple", "fig", "banana", "cherry", "date", "elderberry", "grape"};
	qsort(words, 8, sizeof words[0], cmp_str);
	for (int i = 0; i < 8; i++) printf("%s%c", words[i], i == 7 ? '\n' : ',');
	handler prog[] = {h_dup, h_mul, h_inc, h_dup, h_add, h_inc};
	long stack[16] = {5};
	int sp = 1;
	for (int r = 0; r < 3; r++)
		for (unsigned i = 0; i < sizeof prog / sizeof prog[0]; i++) prog[i](stack, &sp);
	printf("vm: %ld\n", stack[0]);
	return 0;
}
