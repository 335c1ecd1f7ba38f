# Svpbmt and Svinval test (bare metal, RV64, HTIF exit): M-mode builds
# Sv39 page tables, enters S-mode at a virtual alias of the program and
# checks the page-based memory types (PBMT, PTE bits 62:61) with
# menvcfg.PBMTE clear and set, the reserved PBMT value 3, PBMT, D, A and U
# in non-leaf PTEs, the reserved bits 60:54 and 63, and Svinval's
# instructions (sfence.w.inval, sinval.vma, sfence.inval.ir making a new
# mapping visible; mstatus.TVM trapping sinval.vma but not the two
# fences). Exit code 0: all passed; otherwise the failing test number (or
# 100 + mcause for an unexpected trap into M-mode). QEMU runs it with
# -cpu rv64,svpbmt=on,svinval=on, built with -DQEMU72: QEMU 7.2 ignores
# menvcfg.PBMTE, accepts the reserved PBMT value 3 and, with Svpbmt, the
# reserved bits 60:54 and 63 (tests 1, 2, 5, 6 and 7 are left out).
#
# Virtual memory map (S-mode):
#   0xC0000000 1 GiB gigapage -> 0x80000000 (the program)
#   0x00001000 P1, R W, PBMT=NC
#   0x00002000 P2, R W, PBMT=IO
#   0x00003000 P3, R W, PBMT=3 (reserved)
#   0x00004000 P4, R, bit 54 set (reserved)
#   0x00005000 P4, R, bit 63 set (Svnapot's N: reserved without Svnapot)
#   0x00006000 P1, later P2 (Svinval)
#   0x00200000 l1[1] -> l0b (non-leaf; its flags change per test), whose
#              entry 0 maps P1 at 0x00200000

	.option norvc
	.equ ALIAS, 0x40000000
	.equ PTE_V, 1
	.equ PTE_R, 2
	.equ PTE_W, 4
	.equ PTE_X, 8
	.equ PTE_U, 16
	.equ PTE_A, 64
	.equ PTE_D, 128
	.equ RWAD, PTE_V | PTE_R | PTE_W | PTE_A | PTE_D
	.equ PBMTE, 62                  # menvcfg bit

	.section .text.init
	.globl _start
_start:
	lla t0, m_trap
	csrw mtvec, t0
	li t0, -1
	csrw pmpaddr0, t0
	li t0, 0x1f
	csrw pmpcfg0, t0
	csrw menvcfg, zero              # PBMTE clear

	lla s0, root
	lla s1, l1
	lla s2, l0
	lla s3, l0b
	li t0, (0x80000000 >> 12) << 10 | PTE_V | PTE_R | PTE_W | PTE_X | PTE_A | PTE_D
	sd t0, 3*8(s0)                  # the alias gigapage
	srli t0, s1, 12
	slli t0, t0, 10
	ori t0, t0, PTE_V
	sd t0, 0(s0)                    # root[0] -> l1
	srli t0, s2, 12
	slli t0, t0, 10
	ori t0, t0, PTE_V
	sd t0, 0(s1)                    # l1[0] -> l0
	lla a0, p1
	li a1, RWAD
	li a2, 0
	mv a3, s3
	call map                        # l0b[0]: P1
	lla a0, p1
	li a1, RWAD | (1 << 61)
	li a2, 1
	mv a3, s2
	call map                        # NC
	lla a0, p2
	li a1, RWAD | (2 << 61)
	li a2, 2
	call map                        # IO
	lla a0, p3
	li a1, RWAD | (3 << 61)
	li a2, 3
	call map                        # reserved PBMT
	lla a0, p4
	li a1, PTE_V | PTE_R | PTE_A | (1 << 54)
	li a2, 4
	call map
	lla a0, p4
	li a1, PTE_V | PTE_R | PTE_A | (1 << 63)
	li a2, 5
	call map
	lla a0, p1
	li a1, PTE_V | PTE_R | PTE_A
	li a2, 6
	call map

	li t0, (1 << 12) | (1 << 13) | (1 << 15)
	csrw medeleg, t0                # page faults to S-mode
	lla t0, s_trap
	li t1, ALIAS
	add t0, t0, t1
	csrw stvec, t0
	srli t0, s0, 12
	li t1, 8 << 60
	or t0, t0, t1
	csrw satp, t0
	sfence.vma
	lla t0, s_main
	li t1, ALIAS
	add t0, t0, t1
	csrw mepc, t0
	li t0, 3 << 11
	csrc mstatus, t0
	li t0, 1 << 11
	csrs mstatus, t0
	mret

# map a0 = physical page, a1 = flags, at entry a2 of table a3 (M-mode)
map:
	srli t0, a0, 12
	slli t0, t0, 10
	or t0, t0, a1
	slli t1, a2, 3
	add t1, t1, a3
	sd t0, 0(t1)
	ret

# M-mode trap handler. ecall from S: a7 = 1 sets menvcfg.PBMTE, 2 sets
# mstatus.TVM, 3 clears it. An illegal instruction is recorded in mlast
# (mcause, mtval) and skipped. Anything else exits with 100 + mcause.
m_trap:
	csrr t0, mcause
	li t1, 9
	beq t0, t1, m_ecall
	li t1, 2
	beq t0, t1, m_illegal
	addi t0, t0, 100
	j m_exit
m_ecall:
	li t1, 1
	bne a7, t1, 1f
	li t0, 1
	slli t0, t0, PBMTE
	csrs menvcfg, t0
	j m_skip
1:	li t0, 1 << 20                  # mstatus.TVM
	li t1, 2
	bne a7, t1, 2f
	csrs mstatus, t0
	j m_skip
2:	csrc mstatus, t0
	j m_skip
m_illegal:
	lla t1, mlast
	sd t0, 0(t1)
	csrr t0, mtval
	sd t0, 8(t1)
m_skip:
	csrr t0, mepc
	addi t0, t0, 4
	csrw mepc, t0
	mret
m_exit:
	slli t0, t0, 1
	ori t0, t0, 1
	lla t1, tohost
	sd t0, 0(t1)
1:	j 1b

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

	.text
# S-mode code: runs at VA = PA + ALIAS; lla is pc-relative, so the
# addresses it forms are virtual.

# expect cause, tval: the last S-mode trap; clears it
.macro EXPECT cause, tval
	lla t3, last
	ld t4, 0(t3)
	li t5, \cause
	bne t4, t5, fail
	ld t4, 8(t3)
	li t5, \tval
	bne t4, t5, fail
	sd zero, 0(t3)
	sd zero, 8(t3)
.endm

.macro NOTRAP
	lla t3, last
	ld t4, 0(t3)
	bnez t4, fail
.endm

# the last M-mode trap was an illegal instruction, with mtval 0 or \insn
# (either is allowed); clears it
.macro EXPECT_ILLEGAL insn
	lla t3, mlast
	ld t4, 0(t3)
	li t5, 2
	bne t4, t5, fail
	ld t4, 8(t3)                    # mtval: 0 or the instruction
	beqz t4, 1f
	li t5, \insn
	bne t4, t5, fail
1:	sd zero, 0(t3)
	sd zero, 8(t3)
.endm

.macro NOILLEGAL
	lla t3, mlast
	ld t4, 0(t3)
	bnez t4, fail
.endm

.macro TEST n
	li s11, \n
.endm

# set l1[1] (the non-leaf PTE of VA 0x200000) to l0b's PPN | \flags
.macro NONLEAF flags_hi, flags_lo
	lla t0, l0b
	li t1, ALIAS
	sub t0, t0, t1
	srli t0, t0, 12
	slli t0, t0, 10
	li t1, \flags_lo
	or t0, t0, t1
	li t1, \flags_hi
	slli t1, t1, 61
	or t0, t0, t1
	lla t1, l1
	sd t0, 8(t1)
	sfence.vma
.endm

s_main:
#ifndef QEMU72
	# 1-2: PBMTE clear: bits 62:61 are reserved, NC and IO fault ("When
	# PBMTE=0, the implementation behaves as though Svpbmt were not
	# implemented"). QEMU 7.2 ignores menvcfg.PBMTE (built with -DQEMU72
	# for it, the program leaves this out).
	TEST 1
	li a0, 0x1008
	ld a1, 0(a0)
	EXPECT 13, 0x1008
	TEST 2
	li a0, 0x2010
	sd zero, 0(a0)
	EXPECT 15, 0x2010
#endif

	# set menvcfg.PBMTE through M-mode
	li a7, 1
	ecall
	sfence.vma

	# 3-4: NC and IO pages translate (to the same memory as PMA)
	TEST 3
	li a0, 0x1008
	ld a1, 0(a0)
	NOTRAP
	li t0, 0x1111111111111111
	bne a1, t0, fail
	TEST 4
	li a0, 0x2010
	li t0, 0x77
	sd t0, 0(a0)
	NOTRAP
	lla t1, p2
	ld t2, 16(t1)
	bne t2, t0, fail

#ifndef QEMU72
	# 5: PBMT=3 is reserved in a leaf: loads and stores fault (QEMU 7.2
	# accepts it)
	TEST 5
	li a0, 0x3000
	ld a1, 0(a0)
	EXPECT 13, 0x3000
	sd zero, 8(a0)
	EXPECT 15, 0x3008
#endif

#ifndef QEMU72
	# 6-7: reserved bit 54 ("If any of these bits are set, a page-fault
	# exception is raised") and bit 63 (N) without Svnapot ("If Svnapot is
	# not implemented, bit 63 remains reserved ... or else a page-fault
	# exception is raised"); QEMU 7.2 with Svpbmt ignores both
	TEST 6
	li a0, 0x4000
	ld a1, 0(a0)
	EXPECT 13, 0x4000
	TEST 7
	li a0, 0x5000
	ld a1, 0(a0)
	EXPECT 13, 0x5000
#endif

	# 8: a plain non-leaf PTE walks on to l0b[0] (P1)
	TEST 8
	NONLEAF 0, PTE_V
	li a0, 0x200008
	ld a1, 0(a0)
	NOTRAP
	li t0, 0x1111111111111111
	bne a1, t0, fail

	# 9-10: PBMT in a non-leaf PTE is reserved (NC, IO)
	TEST 9
	NONLEAF 1, PTE_V
	ld a1, 0(a0)
	EXPECT 13, 0x200008
	TEST 10
	NONLEAF 2, PTE_V
	ld a1, 0(a0)
	EXPECT 13, 0x200008

	# 11-13: D, A and U in a non-leaf PTE are reserved
	TEST 11
	NONLEAF 0, PTE_V | PTE_D
	ld a1, 0(a0)
	EXPECT 13, 0x200008
	TEST 12
	NONLEAF 0, PTE_V | PTE_A
	ld a1, 0(a0)
	EXPECT 13, 0x200008
	TEST 13
	NONLEAF 0, PTE_V | PTE_U
	ld a1, 0(a0)
	EXPECT 13, 0x200008

	# 14-15: Svinval: sfence.w.inval, sinval.vma, sfence.inval.ir make a
	# new mapping of VA 0x6000 visible
	TEST 14
	li a0, 0x6000
	ld a1, 0(a0)
	li t0, 0x1111111111111111
	bne a1, t0, fail
	TEST 15
	lla t0, p2
	li t1, ALIAS
	sub t0, t0, t1
	srli t0, t0, 12
	slli t0, t0, 10
	ori t0, t0, PTE_V | PTE_R | PTE_A
	lla t1, l0
	sd t0, 6*8(t1)
	sfence.w.inval
	sinval.vma a0, zero
	sfence.inval.ir
	ld a1, 0(a0)
	NOTRAP
	NOILLEGAL
	li t0, 0x2222222222222222
	bne a1, t0, fail

	# 16-17: with mstatus.TVM, sinval.vma is illegal in S-mode and the
	# two fences are not
	TEST 16
	li a7, 2
	ecall
	sinval.vma a0, zero
	EXPECT_ILLEGAL 0x16050073
	TEST 17
	sfence.w.inval
	sfence.inval.ir
	NOILLEGAL
	li a7, 3
	ecall

	li t0, 1
	lla t1, tohost
	sd t0, 0(t1)
1:	j 1b

fail:
	mv t0, s11
	slli t0, t0, 1
	ori t0, t0, 1
	lla t1, tohost
	sd t0, 0(t1)
1:	j 1b

# S-mode trap handler: records scause, stval; skips the instruction
	.balign 4
s_trap:
	csrr t4, scause
	csrr t5, stval
	lla t3, last
	sd t4, 0(t3)
	sd t5, 8(t3)
	csrr t6, sepc
	addi t6, t6, 4
	csrw sepc, t6
	sret

	.data
	.balign 4096
root:	.zero 4096
l1:	.zero 4096
l0:	.zero 4096
l0b:	.zero 4096
.macro PAGE v
	.rept 512
	.dword \v
	.endr
.endm
p1:	PAGE 0x1111111111111111
p2:	PAGE 0x2222222222222222
p3:	PAGE 0x3333333333333333
p4:	PAGE 0x4444444444444444
last:	.dword 0, 0
mlast:	.dword 0, 0
