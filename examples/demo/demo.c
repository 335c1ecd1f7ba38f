// demo: a small bare-metal RISC-V program for rvtrace's quick start.
// It sorts, searches and checksums some data with loops, recursion,
// calls through function pointers and a switch table, prints through the
// HTIF console and exits with status 0 when every result is right.

typedef unsigned long u64;
typedef unsigned int u32;

volatile u64 tohost __attribute__((section(".tohost"), aligned(8)));
volatile u64 fromhost __attribute__((section(".tohost"), aligned(8)));

static void htif_write(const char *s, u64 n) {
	static volatile u64 magic[8] __attribute__((aligned(64)));
	magic[0] = 64; // SYS_write
	magic[1] = 1;  // stdout
	magic[2] = (u64)s;
	magic[3] = n;
	tohost = (u64)magic;
	while (fromhost == 0)
		;
	fromhost = 0;
}

static void puts_(const char *s) {
	u64 n = 0;
	while (s[n])
		n++;
	htif_write(s, n);
}

static void putu(u64 v) {
	char buf[24];
	int i = sizeof buf;
	buf[--i] = 0;
	do {
		buf[--i] = '0' + v % 10;
		v /= 10;
	} while (v);
	puts_(&buf[i]);
}

static void exit_(int code) {
	tohost = ((u64)code << 1) | 1;
	for (;;)
		;
}

static u32 seed = 12345;
static u32 rnd(void) {
	seed = seed * 1103515245u + 12345u;
	return seed >> 8;
}

static void quicksort(u32 *a, int lo, int hi) {
	if (lo >= hi)
		return;
	u32 p = a[(lo + hi) / 2];
	int i = lo, j = hi;
	while (i <= j) {
		while (a[i] < p)
			i++;
		while (a[j] > p)
			j--;
		if (i <= j) {
			u32 t = a[i];
			a[i] = a[j];
			a[j] = t;
			i++;
			j--;
		}
	}
	quicksort(a, lo, j);
	quicksort(a, i, hi);
}

static u32 crc32(const u32 *a, int n) {
	u32 crc = 0xffffffffu;
	for (int i = 0; i < n; i++) {
		u32 v = a[i];
		for (int b = 0; b < 32; b++) {
			u32 bit = (crc ^ v) & 1;
			crc >>= 1;
			v >>= 1;
			if (bit)
				crc ^= 0xedb88320u;
		}
	}
	return ~crc;
}

static int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }

static u32 op_add(u32 a, u32 b) { return a + b; }
static u32 op_xor(u32 a, u32 b) { return a ^ b; }
static u32 op_mul(u32 a, u32 b) { return a * b; }
static u32 (*const ops[])(u32, u32) = {op_add, op_xor, op_mul};

static u32 classify(u32 v) {
	switch (v % 8) {
	case 0: return v + 1;
	case 1: return v * 3;
	case 2: return v ^ 0x55;
	case 3: return v >> 1;
	case 4: return v << 2;
	case 5: return ~v;
	case 6: return v - 7;
	default: return v;
	}
}

#define N 600
static u32 data[N];

int main(void) {
	for (int i = 0; i < N; i++)
		data[i] = rnd() % 100000;
	quicksort(data, 0, N - 1);
	int sorted = 1;
	for (int i = 1; i < N; i++)
		if (data[i - 1] > data[i])
			sorted = 0;
	u32 acc = 0;
	for (int i = 0; i < N; i++)
		acc = ops[i % 3](acc, classify(data[i]));
	u32 crc = crc32(data, N);
	int f = fib(18);
	puts_("demo: sorted=");
	putu(sorted);
	puts_(" fib(18)=");
	putu(f);
	puts_(" crc=");
	putu(crc);
	puts_(" acc=");
	putu(acc);
	puts_("\n");
	return sorted && f == 2584 ? 0 : 1;
}

void _start_c(void) { exit_(main()); }
