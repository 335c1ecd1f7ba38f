/* mt-shared: two harts working on shared memory, bare metal (HTIF
 * tohost exit), for multi-hart data trace tests (rvtrace run --harts 2
 * --trace etrace --data-trace). Each hart sums its half of a shared
 * array with loads and stores, adds to shared counters with AMOs and an
 * lr/sc loop, and meets the other at a barrier; hart 0 checks the totals
 * and exits. Harts past 1 park.
 *
 * Built by scripts/build-examples.sh: riscv64-linux-gnu-gcc -O1 -march=rv64gc -mabi=lp64d -mcmodel=medany
 *   -nostdlib -nostartfiles -static -Wl,-Ttext=0x80000000 -o mt-shared.elf mt-shared.c
 */
typedef unsigned long u64;

volatile u64 tohost __attribute__((section(".tohost"), aligned(64)));
volatile u64 fromhost __attribute__((section(".tohost"), aligned(64)));

#define N 256
static volatile u64 data[N];
static u64 partial[2];
static volatile u64 amo_total, sc_total, arrived, phase;
char stacks[2][4096] __attribute__((aligned(16)));

__asm__(".section .text.init\n"
	".globl _start\n"
	"_start:\n"
	"  csrr a0, mhartid\n"
	"  li t0, 2\n"
	"1: bgeu a0, t0, 1b\n"
	"  la sp, stacks\n"
	"  addi t1, a0, 1\n"
	"  slli t1, t1, 12\n"
	"  add sp, sp, t1\n"
	"  call hart_main\n"
	"2: j 2b\n"
	".text\n");

static void barrier(u64 h) {
	u64 p = phase;
	if (__atomic_add_fetch(&arrived, 1, __ATOMIC_SEQ_CST) == 2) {
		arrived = 0;
		__atomic_store_n(&phase, p + 1, __ATOMIC_SEQ_CST);
	} else {
		while (__atomic_load_n(&phase, __ATOMIC_SEQ_CST) == p)
			;
	}
	(void)h;
}

static void sc_add(volatile u64 *p, u64 v) {
	u64 old, fail;
	do {
		__asm__ volatile("lr.d %0, (%2)\n"
				 "add t0, %0, %3\n"
				 "sc.d %1, t0, (%2)"
				 : "=&r"(old), "=&r"(fail)
				 : "r"(p), "r"(v)
				 : "t0", "memory");
	} while (fail);
}

void hart_main(u64 h) {
	for (u64 i = h; i < N; i += 2)
		data[i] = i * 3 + 1;
	barrier(h);
	u64 s = 0;
	for (u64 i = h * (N / 2); i < (h + 1) * (N / 2); i++) {
		s += data[i];
		if (i % 8 == 0)
			__atomic_fetch_add(&amo_total, data[i], __ATOMIC_RELAXED);
		if (i % 16 == 1)
			sc_add(&sc_total, i);
	}
	partial[h] = s;
	barrier(h);
	if (h != 0)
		for (;;)
			;
	u64 want = 0, amo = 0, sc = 0;
	for (u64 i = 0; i < N; i++) {
		want += i * 3 + 1;
		if (i % 8 == 0)
			amo += i * 3 + 1;
		if (i % 16 == 1)
			sc += i;
	}
	int ok = partial[0] + partial[1] == want && amo_total == amo && sc_total == sc;
	tohost = ok ? 1 : 3;
	for (;;)
		;
}
