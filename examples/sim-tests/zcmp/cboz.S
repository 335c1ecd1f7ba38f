# Zicboz data trace test (bare metal, HTIF exit), for RV32 and RV64
# (built with llvm-mc --defsym XLEN=32 or 64 by
# scripts/build-zcmp-tests.sh, next to the Zcmp test). cbo.zero zeroes the
# 64-byte block holding its address; the simulator stores the block as
# eight doublewords, so with data trace each cbo.zero retires eight times
# on the trace ingress port (E-Trace "Data Trace Interface requirements").
# The program fills a buffer of three blocks with a pattern, zeroes the
# middle one (the address given points into it, not at its start) in a
# loop's first iteration and the first one in its second, each with a
# load and a store next to it in the same block, and checks every word.
# Each iteration zeroes the block twice, by two cbo.zero in a row: the
# first one's last retirement begins the block that ends with the
# second's first.
#
# Exit code 0: every check passed; otherwise the number of the failing
# check (100 + mcause: a trap).

	.if XLEN == 64
	.attribute arch, "rv64i2p1_m2p0_zicsr2p0_zicboz1p0"
	.equ B, 8
	.else
	.attribute arch, "rv32i2p1_m2p0_zicsr2p0_zicboz1p0"
	.equ B, 4
	.endif

	.macro LREG rd, off, base
	.if XLEN == 64
	ld \rd, \off(\base)
	.else
	lw \rd, \off(\base)
	.endif
	.endm
	.macro SREG rs, off, base
	.if XLEN == 64
	sd \rs, \off(\base)
	.else
	sw \rs, \off(\base)
	.endif
	.endm

	.section .text.init, "ax", @progbits
	.globl _start
_start:
	la t0, trap
	csrw mtvec, t0
	# fill the three blocks with the pattern (index + 0x11)
	la s0, buf
	li t0, 0
	li t1, 192 / B
1:	addi t2, t0, 0x11
	slli t3, t0, (B / 4 + 1)
	add t3, s0, t3
	SREG t2, 0, t3
	addi t0, t0, 1
	bne t0, t1, 1b
	# zero the middle block (address inside it), then the first
	addi a0, s0, 64 + 24
	li s1, 2
2:	LREG t4, 0, s0                   # a load before, in the same block
	cbo.zero (a0)
	cbo.zero (a0)                    # again, in the same block
	SREG s1, 192, s0                 # a store after
	addi a0, s0, 8
	addi s1, s1, -1
	bnez s1, 2b
	# check: the first two blocks zero, the third the pattern
	li t0, 0
	li t1, 192 / B
3:	slli t3, t0, (B / 4 + 1)
	add t3, s0, t3
	LREG t2, 0, t3
	li t5, 128 / B
	li t6, 0
	bltu t0, t5, 4f
	addi t6, t0, 0x11
4:	addi gp, t0, 1
	bne t2, t6, fail
	addi t0, t0, 1
	bne t0, t1, 3b
	li gp, 0
	j fail

	.align 2
trap:
	csrr gp, mcause
	addi gp, gp, 100
fail:
	slli gp, gp, 1
	ori gp, gp, 1
	la t0, tohost
	sw gp, 0(t0)
	sw zero, 4(t0)
1:	j 1b

	.section .data
	.align 6
buf:	.zero 256

	.section .tohost, "aw", @progbits
	.align 6
	.globl tohost
	.type tohost, @object
	.size tohost, 8
tohost: .dword 0
