# Guest program for TestTraceControlGuest: programs the Trace Control
# Interface components with 32-bit stores, as an internal debugger does
# ("Enabling and Disabling"), traces a loop with calls, disables the
# components in order and exits with trRamImpl's component type (9).
	.section .text.init
	.globl _start
_start:
	li	s0, 0x03000000		# encoder of hart 0
	li	s1, 0x03018000		# funnel
	li	s2, 0x03019000		# RAM sink
	# reset and release every component
	sw	zero, 0(s2)
	sw	zero, 0(s1)
	sw	zero, 0(s0)
	li	t0, 1
	sw	t0, 0(s2)
	sw	t0, 0(s1)
	sw	t0, 0(s0)
	# sink: SRAM, trRamWP = trRamStart, enable
	lw	t1, 0x10(s2)
	sw	t1, 0x20(s2)
	li	t0, 3
	sw	t0, 0(s2)
	# funnel: all inputs, enable
	sw	zero, 8(s1)
	sw	t0, 0(s1)
	# encoder: implicit return (full), then HTM N-Trace, enable, tracing
	li	t0, (1<<3)|(3<<6)
	sw	t0, 8(s0)
	li	t0, 1|(6<<4)|(1<<24)
	sw	t0, 0(s0)
	li	t0, 1|2|4|(6<<4)|(1<<24)
	sw	t0, 0(s0)
	# traced work: sum f(i) for i = 0..199
	li	s3, 0
	li	s4, 0
1:	mv	a0, s4
	call	f
	add	s3, s3, a0
	addi	s4, s4, 1
	li	t0, 200
	blt	s4, t0, 1b
	# disable encoder, funnel, sink (each waits for Enable=0, Empty=1)
	li	t0, 1|(6<<4)|(1<<24)
	sw	t0, 0(s0)
2:	lw	t1, 0(s0)
	andi	t1, t1, 0xA
	li	t2, 8
	bne	t1, t2, 2b
	li	t0, 1
	sw	t0, 0(s1)
	sw	t0, 0(s2)
3:	lw	t1, 0(s2)
	andi	t1, t1, 0xA
	bne	t1, t2, 3b
	# exit with trRamCompType
	lw	a0, 4(s2)
	srli	a0, a0, 8
	andi	a0, a0, 0xF
	slli	a0, a0, 1
	ori	a0, a0, 1
	la	t0, tohost
	sd	a0, 0(t0)
4:	j	4b

f:	andi	t0, a0, 3
	beqz	t0, 5f
	slli	a0, a0, 1
	ret
5:	addi	a0, a0, 7
	ret

	.section .tohost, "aw"
	.align 3
	.globl tohost
tohost:	.dword 0
	.globl fromhost
fromhost: .dword 0
