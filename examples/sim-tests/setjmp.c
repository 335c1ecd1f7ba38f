/* setjmp/longjmp: non-local exits from deep recursion, error handling. */
#include <setjmp.h>
#include <stdio.h>

static jmp_buf env;
static int depth;

static void dive(int n) {
	depth = n;
	if (n == 57) longjmp(env, n);
	dive(n + 1);
}

static jmp_buf errenv;
static int checked_div(int a, int b) {
	if (b == 0) longjmp(errenv, 1);
	return a / b;
}

int main(void) {
	volatile int tries = 0;
	int r = setjmp(env);
	tries++;
	if (r == 0) dive(0);
	printf("longjmp returned %d after depth %d, tries %d\n", r, depth, tries);
	int ok = 0, errs = 0;
	for (volatile int i = -3; i <= 3; i++) {
		if (setjmp(errenv)) { errs++; continue; }
		ok += checked_div(100, i);
	}
	printf("ok %d errors %d\n", ok, errs);
	return 0;
}
