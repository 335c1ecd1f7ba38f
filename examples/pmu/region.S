/* region.S: an S-mode program (SBI firmware) that measures a region of
 * code with the SBI PMU extension.
 *
 * It configures a counter for instructions (event 2) and one for
 * branches (event 5, all control transfers: the simulator counts them
 * with its event model only, and refuses the event without it; skipped
 * when the firmware does not support the event), both inhibited in
 * M-mode, starts them with one counter_start call, runs the region
 * (region_start up to and including the counter_stop ecall at
 * region_end: calls, loops, loads and stores, multiplications, an SBI
 * call, a CSR read and an illegal instruction skipped by the trap
 * handler), stops them and stores the counts in results:
 *
 *   results[0]  instructions counted over the region
 *   results[1]  branches counted over the region (~0: not configured)
 *   results[2]  error: 0 none, else the step that failed
 *   results[3]  illegal-instruction traps taken
 *
 * The counter_start ecall itself is not counted (the start takes
 * precedence over its own retirement, as a CSR write does), the
 * counter_stop ecall is (it retires before the counters stop). The
 * simulator's test (sim/region_test.go) compares results[0] with the
 * instructions a PC hook sees from region_start to region_end. */

	.equ	EXT_BASE, 0x10
	.equ	EXT_PMU, 0x504D55
	.equ	EXT_SRST, 0x53525354
	.equ	CFG_FLAGS, (1 << 1) | (1 << 3)	/* CLEAR_VALUE | SET_MINH */

	.section .text.start
	.globl	_start
_start:
	la	sp, stack_top
	la	t0, trap_vector
	csrw	stvec, t0
	la	s2, results
	li	t0, -1
	sd	t0, 8(s2)

	/* counter_config_matching(3, 0x1fffffff, flags, instructions, 0) */
	li	a0, 3
	li	a1, 0x1fffffff
	li	a2, CFG_FLAGS
	li	a3, 2
	li	a4, 0
	li	a6, 2
	li	a7, EXT_PMU
	ecall
	li	t0, 1
	bnez	a0, fail
	li	t1, 3
	li	t0, 2
	bne	a1, t1, fail		/* the counter must be hpmcounter3 */
	li	s1, 1			/* counter_start mask */

	/* counter_config_matching(4, 0x0fffffff, flags, branches, 0): from
	 * counter 4 on (a counter configured but not started may be
	 * chosen again) */
	li	a0, 4
	li	a1, 0x0fffffff
	li	a2, CFG_FLAGS
	li	a3, 5
	li	a4, 0
	li	a6, 2
	li	a7, EXT_PMU
	ecall
	bnez	a0, 1f			/* not supported: instructions only */
	li	t1, 4
	li	t0, 3
	bne	a1, t1, fail		/* the counter must be hpmcounter4 */
	li	s1, 3
1:
	/* counter_start(3, s1, 0, 0) */
	li	a0, 3
	mv	a1, s1
	li	a2, 0
	li	a3, 0
	li	a6, 3
	li	a7, EXT_PMU
	ecall

	.globl	region_start
region_start:
	li	s3, 50
2:	mv	a0, s3
	call	work
	addi	s3, s3, -1
	bnez	s3, 2b
	/* an SBI call: get_spec_version */
	li	a6, 0
	li	a7, EXT_BASE
	ecall
	/* a CSR read of the counter (S-mode may: mcounteren) */
	csrr	t2, hpmcounter3
	/* an illegal instruction (a write of the read-only cycle CSR),
	 * skipped by the trap handler: it does not retire */
	.4byte	0xc0001073
	/* an indirect call */
	la	t2, work
	li	a0, 7
	jalr	t2
	/* counter_stop(3, s1, 0) */
	li	a0, 3
	mv	a1, s1
	li	a2, 0
	li	a6, 4
	li	a7, EXT_PMU
	.globl	region_end
region_end:
	ecall

	csrr	t0, hpmcounter3
	sd	t0, 0(s2)
	li	t1, 3
	beq	s1, t1, 3f
	j	4f
3:	csrr	t0, hpmcounter4
	sd	t0, 8(s2)
4:	li	a1, 0
	j	shutdown
fail:
	sd	t0, 16(s2)
	li	a1, 1
shutdown:
	/* system_reset(shutdown, reason a1) */
	li	a0, 0
	li	a6, 0
	li	a7, EXT_SRST
	ecall
5:	wfi
	j	5b

/* work(n): a few loads, stores and multiplications over buf, n times
 * through a loop with a data-dependent branch. */
work:
	la	t3, buf
	li	t4, 0
6:	ld	t5, 0(t3)
	mul	t5, t5, a0
	add	t5, t5, t4
	sd	t5, 8(t3)
	andi	t6, a0, 1
	beqz	t6, 7f
	addi	t4, t4, 3
7:	addi	t3, t3, 16
	addi	a0, a0, -1
	bgtz	a0, 6b
	ret

/* The trap vector: an illegal instruction is skipped (4 bytes) and
 * counted; anything else stops the program with error 100. */
	.align	2
trap_vector:
	csrw	sscratch, t0
	csrr	t0, scause
	addi	t0, t0, -2
	bnez	t0, 8f
	csrr	t0, sepc
	addi	t0, t0, 4
	csrw	sepc, t0
	ld	t0, 24(s2)
	addi	t0, t0, 1
	sd	t0, 24(s2)
	csrr	t0, sscratch
	sret
8:	li	t0, 100
	j	fail

	.data
	.align	3
	.globl	results
results:
	.dword	0, 0, 0, 0
	.bss
	.align	4
buf:
	.space	16 * 64
