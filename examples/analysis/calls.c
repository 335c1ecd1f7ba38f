/*
 * calls.c: a test program with a known call graph for rvtrace's analyses
 * (call tree, folded stacks, pprof, coverage). Every function is noinline
 * so that the call graph in the binary is the one written here:
 *
 *   main -> fib (recursive, fib(FIB_N))
 *   main -> apply -> add1 / dbl          (indirect calls through a pointer)
 *   main -> add1 / dbl                   (indirect calls from a table)
 *   main -> tailer => tail_target -> leaf (tailer tail-calls tail_target)
 *   main -> catcher -> _setjmp, thrower -> thrower ... -> longjmp
 *           (longjmp unwinds THROW_DEPTH+1 thrower frames back to catcher)
 *   main -> is_even => is_odd => is_even ... (mutual tail calls)
 *   main -> ping -> pong -> ping ...     (mutual recursion, not tail calls)
 *
 * never_called is never executed: coverage must report it as not hit.
 * The program's exit status is its result modulo 256, so a wrong run shows.
 */
#include <setjmp.h>

#define FIB_N 10
#define THROW_DEPTH 3
#define TABLE_ROUNDS 4
#define PARITY_N 7

static jmp_buf env;
static volatile int throw_now = 1; /* volatile: thrower may return */
static volatile int sink;

typedef int (*op_fn)(int);

__attribute__((noinline)) int leaf(int x) { return x * 3 + 1; }

__attribute__((noinline)) int fib(int n)
{
	if (n < 2)
		return n;
	return fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) int add1(int x) { return x + 1; }

__attribute__((noinline)) int dbl(int x) { return x * 2; }

/* apply calls through a function pointer; the +1 keeps it from being a
 * tail call. */
__attribute__((noinline)) int apply(op_fn f, int x) { return f(x) + 1; }

__attribute__((noinline)) int tail_target(int x) { return leaf(x) + 2; }

/* tailer's call is in tail position and sibling-call optimisation is on
 * for it (it is off at -O1): it is compiled as a jump ("j tail_target"),
 * so tailer's frame is replaced. Everywhere else it stays off, so that no
 * recursion is turned into a loop. */
#define TAILCALLS __attribute__((noinline, optimize("optimize-sibling-calls")))

TAILCALLS int tailer(int x) { return tail_target(x + 1); }

__attribute__((noinline)) void thrower(int depth)
{
	if (depth == 0) {
		if (throw_now)
			longjmp(env, 1);
		return;
	}
	thrower(depth - 1);
	sink = leaf(depth); /* never reached: keeps the call from being a tail call */
}

__attribute__((noinline)) int catcher(void)
{
	if (setjmp(env) == 0) {
		thrower(THROW_DEPTH);
		return -1;
	}
	return 1;
}

/* is_even and is_odd call each other in tail position: each call is a
 * jump that replaces the caller's frame. */
TAILCALLS int is_odd(int n);

TAILCALLS int is_even(int n)
{
	if (n == 0)
		return 1;
	return is_odd(n - 1) + 0 * n;
}

TAILCALLS int is_odd(int n)
{
	if (n == 0)
		return 0;
	return is_even(n - 1) + 0 * n;
}

/* ping and pong recurse into each other with real calls. */
__attribute__((noinline)) int pong(int n);

__attribute__((noinline)) int ping(int n)
{
	if (n == 0)
		return 0;
	return 1 + pong(n - 1);
}

__attribute__((noinline)) int pong(int n)
{
	if (n == 0)
		return 0;
	return 2 + ping(n - 1);
}

__attribute__((noinline)) int never_called(int x) { return x ^ 0x5a5a; }

static op_fn table[2] = {add1, dbl};

int main(int argc, char **argv)
{
	(void)argv;
	int r = fib(FIB_N);              /* 55 */
	r += apply(add1, argc);          /* 1+1+1 = 3 */
	r += apply(dbl, argc);           /* 2+1 = 3 */
	for (int i = 0; i < TABLE_ROUNDS; i++)
		r += table[i & 1](i);    /* 1 + 2 + 3 + 6 = 12 */
	r += tailer(argc);               /* leaf(2)+2 = 9 */
	r += catcher();                  /* 1 */
	r += is_even(PARITY_N);          /* 0 */
	r += ping(PARITY_N);             /* 1+2+1+2+1+2+1 = 10 */
	if (argc > 100)
		r += never_called(argc);
	return r;                        /* 55+3+3+12+9+1+0+10 = 93 */
}
