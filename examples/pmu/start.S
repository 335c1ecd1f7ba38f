/* S-mode entry and trap vector of the PMU test program. */
	.section .text.start
	.globl _start
_start:
	la	sp, stack_top
	la	t0, trap_vector
	csrw	stvec, t0
	call	main
	/* main returned: its value is the failure count */
	mv	a1, a0
	snez	a1, a1		/* reason: 0 none, 1 system failure */
	li	a0, 0		/* shutdown */
	li	a6, 0
	li	a7, 0x53525354	/* SRST */
	ecall
1:	wfi
	j	1b

/* The trap vector: illegal instructions are skipped (the firmware
 * counts them), the counter-overflow interrupt is recorded and returns
 * to ovf_resume; anything else stops the test. */
	.align	2
	.globl	trap_vector
trap_vector:
	csrw	sscratch, t0
	csrr	t0, scause
	bltz	t0, 2f
	li	t2, 2
	bne	t0, t2, 3f
	/* illegal instruction: skip it (4 bytes) */
	la	t0, illegal_traps
	ld	t2, 0(t0)
	addi	t2, t2, 1
	sd	t2, 0(t0)
	csrr	t0, sepc
	addi	t0, t0, 4
	csrw	sepc, t0
	csrr	t0, sscratch
	sret
2:	/* interrupt: record scause, sepc, t1, scountovf and sip */
	la	t2, ovf_scause
	sd	t0, 0(t2)
	csrr	t0, sepc
	sd	t0, 8(t2)
	sd	t1, 16(t2)
	csrr	t0, 0xda0	/* scountovf */
	sd	t0, 24(t2)
	csrr	t0, sip
	sd	t0, 32(t2)
	li	t0, 1 << 13
	csrc	sie, t0
	csrc	sip, t0
	la	t0, ovf_resume
	csrw	sepc, t0
	csrr	t0, sscratch
	sret
3:	/* unexpected exception: report through the globals and stop */
	la	t2, bad_trap
	sd	t0, 0(t2)
	csrr	t0, sepc
	sd	t0, 8(t2)
	csrr	t0, stval
	sd	t0, 16(t2)
	la	t0, bad_trap_resume
	csrw	sepc, t0
	csrr	t0, sscratch
	sret

/* Measured loops. */
	/* count_loop(n): 1 + 2n instructions between the two reads of the
	 * counter whose CSR is patched at run time (we pass a function). */
	.globl	loop2
loop2:	/* a0 = iterations; 2 instructions per iteration */
1:	addi	a0, a0, -1
	bnez	a0, 1b
	ret

	/* stride_walk(base, lines, stride): one load per line */
	.globl	stride_walk
stride_walk:
1:	ld	t0, 0(a0)
	add	a0, a0, a2
	addi	a1, a1, -1
	bnez	a1, 1b
	ret

	/* overflow_loop(ctr): counter_start(ctr, 1, SET_INIT_VALUE,
	 * -100), then li t1, 0 and addi/j forever; the overflow interrupt
	 * leaves through ovf_resume. The 100th instruction after the ecall
	 * is the 50th addi. */
	.globl	overflow_loop
	.globl	ovf_j
	.globl	ovf_resume
overflow_loop:
	li	a1, 1
	li	a2, 1
	li	a3, -100
	li	a4, 0
	li	a6, 3
	li	a7, 0x504D55
	ecall
	li	t1, 0
1:	addi	t1, t1, 1
ovf_j:	j	1b
ovf_resume:
	ret

	.globl	bad_trap_resume
bad_trap_resume:
	li	a0, 99
	j	_start_fail
_start_fail:
	mv	a1, a0
	li	a0, 0
	li	a6, 0
	li	a7, 0x53525354
	ecall
	j	.
