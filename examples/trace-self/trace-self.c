// trace-self: a bare-metal RISC-V program that traces itself through the
// RISC-V Trace Control Interface, as software on a chip with a trace
// encoder, a funnel and a RAM sink would (rvtrace run maps them; README,
// "Tracing like on silicon").
//
// It discovers the components as the specification's "Reset and
// Discovery" section says (reset, release, read tr??Impl in each 4 KiB
// slot), programs the RAM sink in SMEM mode (a circular buffer in this
// program's memory), the funnel, and the encoder of hart 0: N-Trace
// HTM with implicit return, and a range filter (comparator 0: iaddr >=
// __work_start && iaddr < __work_end) so that only the function work is
// traced. It runs a workload, disables encoder, funnel and sink in that
// order ("Enabling and Disabling"), and prints the number of bytes
// captured. The capture is what rvtrace run --trace-capture writes.
//
// Built with -DSMODE (trace-self-s.elf) it runs in S-mode under an SBI
// firmware, with the SBI console and system reset: the trace registers
// are the same loads and stores from S-mode.

typedef unsigned long u64;
typedef unsigned int u32;

#ifdef SMODE
// S-mode under an SBI (rvtrace run --machine sbi: the simulator's own;
// --machine virt: OpenSBI): the console and the exit are SBI calls.
struct sbiret {
	long error, value;
};

static struct sbiret sbi(u64 ext, u64 fid, u64 a0, u64 a1) {
	register u64 r0 asm("a0") = a0;
	register u64 r1 asm("a1") = a1;
	register u64 r6 asm("a6") = fid;
	register u64 r7 asm("a7") = ext;
	asm volatile("ecall" : "+r"(r0), "+r"(r1) : "r"(r6), "r"(r7) : "memory");
	struct sbiret r = {(long)r0, (long)r1};
	return r;
}

#define SBI_EXT_BASE 0x10
#define SBI_EXT_DBCN 0x4442434E
#define SBI_EXT_SRST 0x53525354

static void console_write(const char *s, u64 n) {
	static int dbcn = -1;
	if (dbcn < 0)
		dbcn = sbi(SBI_EXT_BASE, 3, SBI_EXT_DBCN, 0).value != 0; // probe_extension
	for (u64 i = 0; i < n; i++) {
		if (dbcn)
			sbi(SBI_EXT_DBCN, 2, (unsigned char)s[i], 0); // console_write_byte
		else
			sbi(1, 0, (unsigned char)s[i], 0); // legacy console_putchar
	}
}

static void exit_(int code) {
	sbi(SBI_EXT_SRST, 0, 0, code != 0); // shutdown; reason 1: system failure
	for (;;)
		;
}
#else
volatile u64 tohost __attribute__((section(".tohost"), aligned(8)));
volatile u64 fromhost __attribute__((section(".tohost"), aligned(8)));

static void console_write(const char *s, u64 n) {
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

static void exit_(int code) {
	tohost = ((u64)code << 1) | 1;
	for (;;)
		;
}
#endif

static void puts_(const char *s) {
	u64 n = 0;
	while (s[n])
		n++;
	console_write(s, n);
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

static void puthex(u64 v) {
	char buf[24];
	int i = sizeof buf;
	buf[--i] = 0;
	do {
		buf[--i] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	buf[--i] = 'x';
	buf[--i] = '0';
	puts_(&buf[i]);
}

// ---- the trace components -------------------------------------------

#define TRACE_BASE 0x03000000UL
#define TRACE_END (TRACE_BASE + 0x1A000UL)

static inline u32 rd(u64 a) { return *(volatile u32 *)a; }
static inline void wr(u64 a, u32 v) { *(volatile u32 *)a = v; }

// Register offsets (Trace Control Interface register map).
enum {
	CONTROL = 0x000, IMPL = 0x004,
	TE_INST_FEATURES = 0x008, TE_INST_FILTERS = 0x00C,
	TE_FILTER0_CONTROL = 0x400,
	TE_COMP0_CONTROL = 0x600, TE_COMP0_PMATCH_LOW = 0x610, TE_COMP0_PMATCH_HIGH = 0x614,
	TE_COMP0_SMATCH_LOW = 0x618, TE_COMP0_SMATCH_HIGH = 0x61C,
	FUNNEL_DIS_INPUT = 0x008,
	RAM_START_LOW = 0x010, RAM_START_HIGH = 0x014, RAM_LIMIT_LOW = 0x018, RAM_LIMIT_HIGH = 0x01C,
	RAM_WP_LOW = 0x020, RAM_WP_HIGH = 0x024,
};

// tr??Control bits and tr??CompType values.
enum {
	ACTIVE = 1, ENABLE = 2, TRACING = 4, EMPTY = 8,
	COMP_ENCODER = 1, COMP_FUNNEL = 8, COMP_RAM_SINK = 9,
};

// wait_control polls tr??Control until (v & mask) == want.
static int wait_control(u64 base, u32 mask, u32 want) {
	for (int i = 0; i < 1000; i++)
		if ((rd(base + CONTROL) & mask) == want)
			return 1;
	return 0;
}

static u64 encoder, funnel, ramsink;

// discover resets and releases each slot and reads its tr??Impl.
static void discover(void) {
	for (u64 b = TRACE_BASE; b < TRACE_END; b += 0x1000) {
		wr(b + CONTROL, 0);
		if (!wait_control(b, ACTIVE, 0))
			continue;
		wr(b + CONTROL, ACTIVE);
		if (!wait_control(b, ACTIVE, ACTIVE))
			continue; // nothing in this slot
		u32 impl = rd(b + IMPL);
		u32 type = impl >> 8 & 15, major = impl & 15, minor = impl >> 4 & 15;
		const char *name = type == COMP_ENCODER ? "trace encoder" : type == COMP_FUNNEL ? "trace funnel"
		                   : type == COMP_RAM_SINK ? "trace RAM sink" : "component";
		puts_(name);
		puts_(" at ");
		puthex(b);
		puts_(", version ");
		putu(major);
		puts_(".");
		putu(minor);
		puts_("\n");
		if (major != 1)
			continue; // only version 1.x is known
		if (type == COMP_ENCODER && !encoder)
			encoder = b;
		if (type == COMP_FUNNEL && !funnel)
			funnel = b;
		if (type == COMP_RAM_SINK && !ramsink)
			ramsink = b;
	}
}

// The circular buffer of the RAM sink in SMEM mode.
static u32 tracebuf[8192] __attribute__((aligned(64)));

// ---- the workload -----------------------------------------------------

static u32 seed = 12345;
static u32 rnd(void) {
	seed = seed * 1103515245u + 12345u;
	return seed >> 8;
}

// mix is called by work but lies outside the filtered range: not traced.
__attribute__((noinline)) static u32 mix(u32 h, u32 v) {
	h ^= v;
	h *= 16777619u;
	return h ^ (h >> 13);
}

// work is the traced function.
__attribute__((noinline, section(".work"))) u32 work(const u32 *a, int n) {
	u32 h = 2166136261u;
	for (int i = 0; i < n; i++) {
		if (a[i] & 1)
			h = mix(h, a[i]);
		else
			h += a[i] >> 3;
	}
	return h;
}

extern char __work_start[], __work_end[];

void _start_c(void) {
	discover();
	if (!encoder || !funnel || !ramsink) {
		puts_("trace components not found\n");
		exit_(2);
	}
	// RAM sink: SMEM mode, the buffer above, write pointer at its start.
	u64 start = (u64)tracebuf, limit = start + sizeof tracebuf - 4;
	wr(ramsink + CONTROL, ACTIVE | 1 << 4); // trRamMode = SMEM
	if (!(rd(ramsink + CONTROL) & 1 << 4)) {
		puts_("the RAM sink has no SMEM mode\n");
		exit_(3);
	}
	wr(ramsink + RAM_START_HIGH, start >> 32);
	wr(ramsink + RAM_START_LOW, start);
	wr(ramsink + RAM_LIMIT_HIGH, limit >> 32);
	wr(ramsink + RAM_LIMIT_LOW, limit);
	wr(ramsink + RAM_WP_HIGH, start >> 32);
	wr(ramsink + RAM_WP_LOW, start);
	wr(ramsink + CONTROL, ACTIVE | ENABLE | 1 << 4);
	// Funnel: every input, enabled.
	wr(funnel + FUNNEL_DIS_INPUT, 0);
	wr(funnel + CONTROL, ACTIVE | ENABLE);
	// Encoder: implicit return (full-address stack), a range filter on
	// work, then N-Trace HTM, enable, tracing.
	wr(encoder + TE_INST_FEATURES, 1 << 3 | 3 << 6);
	u64 lo = (u64)__work_start, hi = (u64)__work_end;
	wr(encoder + TE_COMP0_PMATCH_LOW, lo);
	wr(encoder + TE_COMP0_PMATCH_HIGH, lo >> 32);
	wr(encoder + TE_COMP0_SMATCH_LOW, hi);
	wr(encoder + TE_COMP0_SMATCH_HIGH, hi >> 32);
	// iaddr >= P (function 5) && iaddr < S (function 2), match mode P && S
	wr(encoder + TE_COMP0_CONTROL, 5 << 4 | 2 << 8 | 1 << 12);
	wr(encoder + TE_FILTER0_CONTROL, 1 | 1 << 4); // enabled, comparator 0
	wr(encoder + TE_INST_FILTERS, 1);             // filter 0 qualifies
	u32 ctl = ACTIVE | 6 << 4 | 1 << 24;          // trTeInstMode = HTM, trTeFormat = N-Trace
	wr(encoder + CONTROL, ctl);
	wr(encoder + CONTROL, ctl | ENABLE);
	if (!(rd(encoder + CONTROL) & ENABLE)) {
		puts_("the encoder did not enable\n");
		exit_(4);
	}
	wr(encoder + CONTROL, ctl | ENABLE | TRACING);

	// The workload.
	static u32 data[256];
	u32 sum = 0;
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 256; i++)
			data[i] = rnd();
		sum += work(data, 64 + round * 8);
	}

	// Disable encoder, funnel, sink, each after the one before has
	// flushed (Enable = 0, Empty = 1).
	wr(encoder + CONTROL, ctl);
	int ok = wait_control(encoder, ENABLE | EMPTY, EMPTY);
	wr(funnel + CONTROL, ACTIVE);
	ok &= wait_control(funnel, ENABLE | EMPTY, EMPTY);
	wr(ramsink + CONTROL, ACTIVE | 1 << 4);
	ok &= wait_control(ramsink, ENABLE | EMPTY, EMPTY);
	if (!ok) {
		puts_("the trace system did not flush\n");
		exit_(5);
	}
	u32 wp = rd(ramsink + RAM_WP_LOW);
	u64 wpa = (u64)rd(ramsink + RAM_WP_HIGH) << 32 | (wp & ~3u);
	puts_("checksum ");
	puthex(sum);
	puts_("\n");
	if (wp & 1) {
		puts_("the trace buffer wrapped: the oldest trace is lost\n");
		exit_(6);
	}
	puts_("captured ");
	putu(wpa - start);
	puts_(" bytes of trace\n");
	exit_(0);
}
