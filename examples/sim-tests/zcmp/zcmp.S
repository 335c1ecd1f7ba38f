# Zcmp and Zcmt test (bare metal, HTIF exit), for RV32 and RV64 (built
# with llvm-mc --defsym XLEN=32 or 64 by scripts/build-zcmp-tests.sh; GNU
# as 2.40 has no Zcmp). Every expected value below is computed by hand
# from the pseudo-code of the unprivileged specification's chapter
# "Zc* Standard Extension for Code Size Reduction":
#   cm.push: addr = sp - XLEN/8; for i in 27..18, 9, 8, 1 in the list:
#            store x[i] at addr, addr -= XLEN/8; then sp -= stack_adj
#   cm.pop:  addr = sp + stack_adj - XLEN/8; the same order of loads;
#            then sp += stack_adj (cm.popretz: a0 = 0; both popret: ret)
#   cm.mvsa01 r1s', r2s': r1s' = a0, r2s' = a1; cm.mva01s: a0, a1 = r1s', r2s'
#   cm.jt/cm.jalt index: jump (and link ra) to table[index] & ~1, the
#            table at jvt.base (jvt.mode is WARL 0, the only mode)
# and faults in the middle of push and pop re-execute the whole
# instruction with sp unchanged ("PUSH/POP Fault handling"); a table jump
# whose table entry faults traps with mepc = the table jump, mtval = the
# entry's address, mcause = an instruction fetch fault.
#
# Exit code 0: every check passed; otherwise the number of the failing
# check (100 + mcause: an unexpected trap).

	.if XLEN == 64
	.attribute arch, "rv64i2p1_m2p0_zicsr2p0_zca1p0_zcmp1p0_zcmt1p0"
	.equ B, 8
	.else
	.attribute arch, "rv32i2p1_m2p0_zicsr2p0_zca1p0_zcmp1p0_zcmt1p0"
	.equ B, 4
	.endif
	.equ JVT, 0x017
	.equ HOLE, 0x20000000           # the second RAM bank starts here; below: nothing

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
	.macro ENTRY sym
	.if XLEN == 64
	.dword \sym
	.else
	.word \sym
	.endif
	.endm
	# the test value of register number n
	.macro SETV rd, n
	.if XLEN == 64
	li \rd, 0x5a5a000000000000 + \n * 0x0000010000000101
	.else
	li \rd, 0x5a000000 + \n * 0x00010101
	.endif
	.endm
	# check number n: a == b
	.macro CHKEQ a, b, n
	beq \a, \b, 1f
	li gp, \n
	j fail
1:
	.endm
	# check n: register rd holds the test value of register number v
	.macro CHKV rd, v, n
	SETV t1, \v
	CHKEQ \rd, t1, \n
	.endm
	# check n: the word at off(sp) is register rs
	.macro CHKMEM off, rs, n
	LREG t1, \off, sp
	CHKEQ t1, \rs, \n
	.endm
	.macro SETALL
	SETV ra, 1
	SETV s0, 8
	SETV s1, 9
	SETV s2, 18
	SETV s3, 19
	SETV s4, 20
	SETV s5, 21
	SETV s6, 22
	SETV s7, 23
	SETV s8, 24
	SETV s9, 25
	SETV s10, 26
	SETV s11, 27
	.endm
	.macro CLRALL
	li ra, 0
	li s0, 0
	li s1, 0
	li s2, 0
	li s3, 0
	li s4, 0
	li s5, 0
	li s6, 0
	li s7, 0
	li s8, 0
	li s9, 0
	li s10, 0
	li s11, 0
	.endm
	# checks n..n+12: ra, s0-s11 hold their test values
	.macro CHKALL n
	CHKV ra, 1, \n
	CHKV s0, 8, \n+1
	CHKV s1, 9, \n+2
	CHKV s2, 18, \n+3
	CHKV s3, 19, \n+4
	CHKV s4, 20, \n+5
	CHKV s5, 21, \n+6
	CHKV s6, 22, \n+7
	CHKV s7, 23, \n+8
	CHKV s8, 24, \n+9
	CHKV s9, 25, \n+10
	CHKV s10, 26, \n+11
	CHKV s11, 27, \n+12
	.endm
	# checks n..n+12: the frame of cm.push {ra, s0-s11}, -112 at sp
	.macro CHKFRAME n
	CHKMEM 112-1*B, s11, \n
	CHKMEM 112-2*B, s10, \n+1
	CHKMEM 112-3*B, s9, \n+2
	CHKMEM 112-4*B, s8, \n+3
	CHKMEM 112-5*B, s7, \n+4
	CHKMEM 112-6*B, s6, \n+5
	CHKMEM 112-7*B, s5, \n+6
	CHKMEM 112-8*B, s4, \n+7
	CHKMEM 112-9*B, s3, \n+8
	CHKMEM 112-10*B, s2, \n+9
	CHKMEM 112-11*B, s1, \n+10
	CHKMEM 112-12*B, s0, \n+11
	CHKMEM 112-13*B, ra, \n+12
	.endm
	# expect a trap: cause, mepc, mtval; the handler then sets sp (kind
	# 0) or jvt (kind 1) to fix (a6 set: it checks that s11 is 0)
	.macro EXPECT cause, epc, tval, kind, fix
	li a6, 0
	li t4, \cause
	la t5, \epc
	li a4, \tval
	li a5, \kind
	la t6, \fix
	.endm

	.section .text.init, "ax", @progbits
	.globl _start
_start:
	la t0, trap
	csrw mtvec, t0
	li t4, -1                       # no trap expected
	la sp, stack_top

	# 1: jvt keeps base[XLEN-1:6]; mode is 0, the only mode (WARL)
	la t0, jtab
	ori t1, t0, 0x3f
	csrw JVT, t1
	csrr t2, JVT
	CHKEQ t2, t0, 1

	# 2-16: cm.push {ra, s0-s11}, -112 (RV32: rlist 15, spimm 3;
	# RV64: spimm 0)
	li t1, 0x11223344
	SREG t1, -14*B, sp              # below the frame's registers
	SREG t1, -112, sp               # the frame's lowest word
	SREG t1, 0, sp                  # above the frame
	SETALL
	mv t3, sp
	cm.push {ra, s0-s11}, -112
	addi t2, t3, -112
	CHKEQ sp, t2, 2
	CHKFRAME 3
	li t2, 0x11223344
	.if XLEN == 32
	LREG t1, 112-14*B, sp
	CHKEQ t1, t2, 16
	.endif
	LREG t1, 0, sp
	CHKEQ t1, t2, 17
	LREG t1, 112, sp
	CHKEQ t1, t2, 18

	# 19-32: cm.pop {ra, s0-s11}, 112
	CLRALL
	cm.pop {ra, s0-s11}, 112
	CHKEQ sp, t3, 19
	CHKALL 20

	# 33-44: cm.push with spimm, cm.popretz
	li a0, 123
	call f_popretz
ret1:
	CHKEQ a0, zero, 33
	CHKEQ sp, t3, 34
	CHKV s0, 8, 35
	CHKV s1, 9, 36
	CHKV s2, 18, 37
	la t1, ret1
	CHKEQ ra, t1, 38

	# 45-49: cm.popret keeps a0
	call f_popret
ret2:
	li t1, 99
	CHKEQ a0, t1, 45
	CHKEQ sp, t3, 46
	CHKV s0, 8, 47
	la t1, ret2
	CHKEQ ra, t1, 48

	# 50-57: double moves
	SETV a0, 10
	SETV a1, 11
	cm.mvsa01 s2, s7
	CHKV s2, 10, 50
	CHKV s7, 11, 51
	SETV a0, 12
	SETV a1, 13
	cm.mvsa01 s0, s1
	CHKV s0, 12, 52
	CHKV s1, 13, 53
	SETV s1, 9
	SETV s0, 8
	cm.mva01s s1, s0
	CHKV a0, 9, 54
	CHKV a1, 8, 55
	SETV s6, 22
	cm.mva01s s6, s6
	CHKV a0, 22, 56
	CHKV a1, 22, 57

	# 60-66: table jumps
	li a3, 0
	cm.jt 0
	li gp, 60
	j fail
jt0:
	li a3, 0x32
	cm.jalt 32
jalt32_ret:
	li t1, 0x320
	CHKEQ a3, t1, 61
	la t1, jalt32_ret
	CHKEQ ra, t1, 62
	cm.jalt 33                      # its entry has bit 0 set
jalt33_ret:
	li t1, 0x330
	CHKEQ a3, t1, 63
	la t1, jalt33_ret
	CHKEQ ra, t1, 64
	cm.jt 1
	li gp, 65
	j fail
jt1:
	li t1, 0x330
	CHKEQ a3, t1, 66                # cm.jt does not link: ra is as it was
	la t1, jalt33_ret
	CHKEQ ra, t1, 67

	# 70-86: a store access fault on the third store of cm.push: sp is
	# unchanged in the handler, which moves sp to stack_top; the push is
	# then executed again from its first store
	SETALL
	li sp, HOLE + 2*B
	EXPECT 7, push_fault, HOLE - B, 0, stack_top
push_fault:
	cm.push {ra, s0-s11}, -112
	la t2, stack_top - 112
	CHKEQ sp, t2, 70
	CHKFRAME 71
	la t0, traps
	lw t1, 0(t0)
	li t2, 1
	CHKEQ t1, t2, 84
	# the two stores before the fault were made (the specification lets
	# them be made any number of times)
	li t0, HOLE
	LREG t1, B, t0
	CHKEQ t1, s11, 85
	LREG t1, 0, t0
	CHKEQ t1, s10, 86

	# 90-105: a load access fault on the second load of cm.pop: the
	# registers and sp are as they were in the handler, which moves sp
	# to the frame just pushed; the pop then loads all of it
	CLRALL
	li sp, HOLE + B - 112
	EXPECT 5, pop_fault, HOLE - B, 0, stack_top - 112
	li a6, 1
pop_fault:
	cm.pop {ra, s0-s11}, 112
	la t2, stack_top
	CHKEQ sp, t2, 90
	CHKALL 91
	la t0, traps
	lw t1, 0(t0)
	li t2, 2
	CHKEQ t1, t2, 104

	# 106-108: an access fault on the table entry of cm.jt: mepc is the
	# cm.jt, mtval the entry's address; the handler points jvt at the
	# table and the jump is made
	li t0, 0x7ffff000
	csrw JVT, t0
	EXPECT 1, jt_fault, 0x7ffff000 + 2*B, 1, jtab
jt_fault:
	cm.jt 2
	li gp, 106
	j fail
jt2:
	la t0, traps
	lw t1, 0(t0)
	li t2, 3
	CHKEQ t1, t2, 107
	csrr t1, JVT
	la t2, jtab
	CHKEQ t1, t2, 108

	li gp, 0
	j fail

# cm.push {ra, s0-s2}, -64 (RV32: rlist 7, spimm 3; RV64: spimm 2) and
# cm.popretz: checks 39-44 of the frame
f_popretz:
	cm.push {ra, s0-s2}, -64
	addi t2, t3, -64
	CHKEQ sp, t2, 39
	CHKMEM 64-1*B, s2, 40
	CHKMEM 64-2*B, s1, 41
	CHKMEM 64-3*B, s0, 42
	CHKMEM 64-4*B, ra, 43
	li s0, 0
	li s1, 0
	li s2, 0
	li a0, 77
	cm.popretz {ra, s0-s2}, 64

# cm.push {ra, s0}, -32 (spimm 1) and cm.popret: check 49
f_popret:
	cm.push {ra, s0}, -32
	addi t2, t3, -32
	CHKEQ sp, t2, 49
	li s0, 0
	li a0, 99
	cm.popret {ra, s0}, 32

f_jalt32:
	slli a3, a3, 4
	ret
f_jalt33:
	li a3, 0x330
	ret

	.align 2                        # mtvec.BASE: 4-byte aligned
trap:
	csrr t0, mcause
	bne t0, t4, unexpected
	csrr t0, mepc
	li gp, 97
	bne t0, t5, fail
	csrr t0, mtval
	li gp, 98
	bne t0, a4, fail
	beqz a6, 2f
	li gp, 99
	bnez s11, fail                  # nothing of a faulting pop is committed
2:
	la t0, traps
	lw t1, 0(t0)
	addi t1, t1, 1
	sw t1, 0(t0)
	li t4, -1
	bnez a5, 1f
	mv sp, t6
	mret
1:	csrw JVT, t6
	mret
unexpected:
	csrr gp, mcause
	addi gp, gp, 100
fail:
	slli gp, gp, 1
	ori gp, gp, 1
	la t0, tohost
	sw gp, 0(t0)
	sw zero, 4(t0)
1:	j 1b

	# the jump table: 64-byte aligned, XLEN-bit entries
	.align 6
	.globl __jvt_base$
__jvt_base$:
jtab:
	ENTRY jt0
	ENTRY jt1
	ENTRY jt2
	.rept 29
	ENTRY fail
	.endr
	ENTRY f_jalt32
	ENTRY f_jalt33 + 1

	.section .tohost, "aw", @progbits
	.align 6
	.globl tohost
	.type tohost, @object
	.size tohost, 8
tohost: .dword 0
	.align 6
	.globl fromhost
	.type fromhost, @object
	.size fromhost, 8
fromhost: .dword 0

	.data
traps:	.word 0

	.bss
	.align 4
	.space 1024
stack_top:
	.space 256
