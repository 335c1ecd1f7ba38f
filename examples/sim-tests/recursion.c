/* Recursion: Fibonacci, Ackermann, Towers of Hanoi, a recursive descent parser. */
#include <stdio.h>

static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static int ack(int m, int n) {
	if (m == 0) return n + 1;
	if (n == 0) return ack(m - 1, 1);
	return ack(m - 1, ack(m, n - 1));
}

static long moves;
static void hanoi(int n, int from, int to, int via) {
	if (n == 0) return;
	hanoi(n - 1, from, via, to);
	moves++;
	hanoi(n - 1, via, to, from);
}

static const char *p;
static long expr(void);
static long factor(void) {
	if (*p == '(') { p++; long v = expr(); p++; return v; }
	if (*p == '-') { p++; return -factor(); }
	long v = 0;
	while (*p >= '0' && *p <= '9') v = v * 10 + (*p++ - '0');
	return v;
}
static long term(void) {
	long v = factor();
	while (*p == '*' || *p == '/' || *p == '%') {
		char op = *p++;
		long r = factor();
		v = op == '*' ? v * r : op == '/' ? v / r : v % r;
	}
	return v;
}
static long expr(void) {
	long v = term();
	while (*p == '+' || *p == '-') {
		char op = *p++;
		long r = term();
		v = op == '+' ? v + r : v - r;
	}
	return v;
}

int main(void) {
	for (int i = 0; i <= 20; i += 5) printf("fib(%d) = %ld\n", i, fib(i));
	printf("ack(2,3) = %d, ack(3,3) = %d\n", ack(2, 3), ack(3, 3));
	hanoi(12, 1, 3, 2);
	printf("hanoi(12) = %ld moves\n", moves);
	const char *exprs[] = {"1+2*3", "(1+2)*3", "-(7*(8-3))/2+100%7", "((((((42))))))"};
	for (int i = 0; i < 4; i++) { p = exprs[i]; printf("%s = %ld\n", exprs[i], expr()); }
	return 0;
}
