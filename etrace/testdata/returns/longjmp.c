/* setjmp/longjmp for the E-Trace implicit return tests
 * (etrace/returns_test.go): a longjmp at the depth setjmp returned from,
 * out of a recursion deeper than the return stack, and out of three
 * nested functions at once (as C++ exceptions unwind), in a loop.
 * Build with scripts/build-etrace-tests.sh. */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
static volatile int sink;

static __attribute__((noinline)) void same_depth(void) { longjmp(env, 1); }

static __attribute__((noinline)) void dive(int n) {
	sink = n;
	if (n == 0)
		longjmp(env, 2);
	dive(n - 1);
	sink++;
}

static __attribute__((noinline)) int inner(int x) {
	if (x % 3 == 0)
		longjmp(env, 3);
	return x * 2;
}
static __attribute__((noinline)) int middle(int x) { return inner(x) + 1; }
static __attribute__((noinline)) int outer(int x) { return middle(x) + middle(x + 1); }

int main(void) {
	volatile int total = 0;
	for (volatile int i = 0; i < 6; i++) {
		int r = setjmp(env);
		if (r == 0)
			same_depth();
		total += r;
		if ((r = setjmp(env)) == 0)
			dive(10 + i);
		total += r;
		if ((r = setjmp(env)) == 0)
			total += outer(i);
		total += r;
	}
	printf("total %d\n", total);
	return 0;
}
