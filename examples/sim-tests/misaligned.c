/* Misaligned loads and stores of every size at every offset, within a
 * page and across a page boundary, integer and floating point: Linux
 * performs them (the kernel emulates what the hardware does not), so the
 * simulator's output must equal qemu-riscv64's (sim/linux_test.go). */
#include <stdio.h>
#include <stdint.h>
#include <string.h>

static uint8_t buf[3 * 4096] __attribute__((aligned(4096)));

#define LOAD(insn, type, p) ({ type v_; __asm__ volatile(insn " %0, 0(%1)" : "=r"(v_) : "r"(p) : "memory"); v_; })
#define STORE(insn, v, p) __asm__ volatile(insn " %0, 0(%1)" : : "r"(v), "r"(p) : "memory")

static uint64_t mix(uint64_t h, uint64_t v) { return (h ^ v) * 0x100000001b3ULL; }

static uint64_t at(uint8_t *p) {
	uint64_t h = 0xcbf29ce484222325ULL;
	h = mix(h, (uint64_t)LOAD("lh", int64_t, p));
	h = mix(h, LOAD("lhu", uint64_t, p));
	h = mix(h, (uint64_t)LOAD("lw", int64_t, p));
	h = mix(h, LOAD("lwu", uint64_t, p));
	h = mix(h, LOAD("ld", uint64_t, p));
	float f;
	double d;
	__asm__ volatile("flw %0, 0(%1)" : "=f"(f) : "r"(p) : "memory");
	__asm__ volatile("fld %0, 0(%1)" : "=f"(d) : "r"(p) : "memory");
	uint32_t fb;
	uint64_t db;
	memcpy(&fb, &f, 4);
	memcpy(&db, &d, 8);
	return mix(mix(h, fb), db);
}

int main(void) {
	for (int i = 0; i < (int)sizeof buf; i++)
		buf[i] = (uint8_t)(i * 37 + (i >> 8));
	uint64_t total = 0;
	for (int base = 0; base < 2; base++) {
		uint8_t *q = buf + 4096 - 16 + base * 4096; /* the last bytes of a page */
		for (int off = 0; off < 16; off++) {
			uint8_t *p = q + off;
			uint64_t h = at(p);
			STORE("sh", (uint64_t)0x1122 + off, p);
			h = mix(h, at(p));
			STORE("sw", (uint64_t)0x33445566 + off, p);
			h = mix(h, at(p));
			STORE("sd", (uint64_t)0x778899aabbccddeeULL + off, p);
			h = mix(h, at(p));
			float f = 1.5f + off;
			double d = -2.25 + off;
			__asm__ volatile("fsw %0, 0(%1)" : : "f"(f), "r"(p) : "memory");
			h = mix(h, at(p));
			__asm__ volatile("fsd %0, 0(%1)" : : "f"(d), "r"(p) : "memory");
			h = mix(h, at(p));
			printf("page %d offset %2d: %016llx\n", base, off, (unsigned long long)h);
			total = mix(total, h);
		}
	}
	uint64_t sum = 0;
	for (int i = 0; i < (int)sizeof buf; i++)
		sum = mix(sum, buf[i]);
	printf("memory %016llx total %016llx\n", (unsigned long long)sum, (unsigned long long)total);
	return 0;
}
