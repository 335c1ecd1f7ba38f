# Sv39 test (bare metal, HTIF exit): M-mode builds page tables, enters
# S-mode at a virtual alias of the program and checks translation, page
# faults (scause/stval/sepc), hardware A/D updates, SUM, MXR, sfence.vma,
# non-canonical addresses, misaligned superpages and reserved PTE
# encodings. Exit code 0: all passed; otherwise the failing test number
# (or 100 + mcause for an unexpected trap into M-mode).
#
# Virtual memory map (S-mode):
#   0xC0000000 1 GiB gigapage -> 0x80000000 (the program: text, data, tables)
#   0x80000000 1 GiB gigapage -> 0x80000000 (identity, unused by S-mode)
#   0x00001000 P1, R W, A=0 D=0       (A/D updates)
#   0x00002000 P2, R (read-only)      (store page fault)
#   0x00003000 invalid                (load page fault)
#   0x00004000 P3, R W U              (SUM)
#   0x00005000 P4, X only             (MXR)
#   0x00006000 P5, R (not executable) (instruction page fault)
#   0x00007000 P2, later P6           (sfence.vma)
#   0x00008000 P1, W only             (reserved encoding: page fault)
#   0x00009000 the page of sfunc, X, A=0 (A set by a fetch)
#   0x100000000 gigapage with a misaligned PPN (page fault)

	.option norvc
	.equ ALIAS, 0x40000000          # VA - PA of the program's alias
	.equ PTE_V, 1
	.equ PTE_R, 2
	.equ PTE_W, 4
	.equ PTE_X, 8
	.equ PTE_U, 16
	.equ PTE_A, 64
	.equ PTE_D, 128

	.section .text.init
	.globl _start
_start:
	lla t0, m_trap
	csrw mtvec, t0
	# PMP: allow everything to S/U
	li t0, -1
	csrw pmpaddr0, t0
	li t0, 0x1f                     # NAPOT RWX
	csrw pmpcfg0, t0

	lla s0, root
	lla s1, l1
	lla s2, l0
	# root[2]: identity gigapage; root[3]: alias gigapage
	li t0, (0x80000000 >> 12) << 10 | PTE_V | PTE_R | PTE_W | PTE_X | PTE_A | PTE_D
	sd t0, 2*8(s0)
	sd t0, 3*8(s0)
	# root[4]: misaligned gigapage (PPN not a multiple of 2^18)
	li t0, (0x80001000 >> 12) << 10 | PTE_V | PTE_R | PTE_A
	sd t0, 4*8(s0)
	# root[0] -> l1, l1[0] -> l0
	srli t0, s1, 12
	slli t0, t0, 10
	ori t0, t0, PTE_V
	sd t0, 0(s0)
	srli t0, s2, 12
	slli t0, t0, 10
	ori t0, t0, PTE_V
	sd t0, 0(s1)
	# l0 leaves
	lla a0, p1
	li a1, PTE_V | PTE_R | PTE_W
	li a2, 1
	call map
	lla a0, p2
	li a1, PTE_V | PTE_R | PTE_A
	li a2, 2
	call map
	lla a0, p3
	li a1, PTE_V | PTE_R | PTE_W | PTE_U | PTE_A | PTE_D
	li a2, 4
	call map
	lla a0, p4
	li a1, PTE_V | PTE_X | PTE_A
	li a2, 5
	call map
	lla a0, p5
	li a1, PTE_V | PTE_R | PTE_A
	li a2, 6
	call map
	lla a0, p2
	li a1, PTE_V | PTE_R | PTE_A
	li a2, 7
	call map
	lla a0, p1
	li a1, PTE_V | PTE_W | PTE_A | PTE_D
	li a2, 8
	call map
	lla a0, sfunc
	li a1, PTE_V | PTE_X
	li a2, 9
	call map

	# page faults to S-mode
	li t0, (1 << 12) | (1 << 13) | (1 << 15)
	csrw medeleg, t0
	lla t0, s_trap
	li t1, ALIAS
	add t0, t0, t1
	csrw stvec, t0
	srli t0, s0, 12
	li t1, 8 << 60
	or t0, t0, t1
	csrw satp, t0
	sfence.vma
	# mret to S-mode at the alias of s_main
	lla t0, s_main
	li t1, ALIAS
	add t0, t0, t1
	csrw mepc, t0
	li t0, 3 << 11
	csrc mstatus, t0
	li t0, 1 << 11
	csrs mstatus, t0
	mret

# map a0 = physical page, a1 = flags, at l0[a2] (M-mode, physical
# addresses)
map:
	srli t0, a0, 12
	slli t0, t0, 10
	or t0, t0, a1
	slli t1, a2, 3
	add t1, t1, s2
	sd t0, 0(t1)
	ret

# unexpected trap into M-mode: exit with 100 + mcause
m_trap:
	csrr t0, mcause
	addi t0, t0, 100
	j m_exit
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
# S-mode code: runs at VA = PA + ALIAS; la is pc-relative, so the
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

.macro TEST n
	li s11, \n
.endm

s_main:
	# 1: running at the virtual alias
	TEST 1
	auipc t0, 0
	srli t0, t0, 28
	li t1, 0xc
	bne t0, t1, fail

	# 2-4: A and D set by the hardware
	TEST 2
	li a0, 0x1000
	ld a1, 0(a0)
	NOTRAP
	li t0, 0x1111111111111111
	bne a1, t0, fail
	lla s2, l0
	ld t0, 1*8(s2)
	andi t1, t0, PTE_A
	beqz t1, fail
	TEST 3
	andi t1, t0, PTE_D
	bnez t1, fail
	li t0, 0x5555
	sd t0, 8(a0)
	NOTRAP
	ld t0, 1*8(s2)
	andi t1, t0, PTE_D
	beqz t1, fail
	TEST 4
	lla t0, p1                       # the alias of P1: same physical page
	ld t1, 8(t0)
	li t2, 0x5555
	bne t1, t2, fail

	# 5: store to a read-only page
	TEST 5
	li a0, 0x2008
	li t0, 0x77
	sd t0, 0(a0)
	EXPECT 15, 0x2008
	lla t0, p2
	ld t1, 8(t0)
	li t2, 0x2222222222222222
	bne t1, t2, fail

	# 6: load from an invalid page
	TEST 6
	li a0, 0x3010
	ld a1, 0(a0)
	EXPECT 13, 0x3010

	# 7-8: U page from S-mode: faults unless sstatus.SUM
	TEST 7
	li a0, 0x4000
	lw a1, 4(a0)
	EXPECT 13, 0x4004
	TEST 8
	li t0, 1 << 18
	csrs sstatus, t0
	lw a1, 4(a0)
	NOTRAP
	li t0, 0x33333333
	bne a1, t0, fail
	li t0, 1 << 18
	csrc sstatus, t0

	# 9-10: execute-only page: loads fault unless sstatus.MXR
	TEST 9
	li a0, 0x5000
	ld a1, 16(a0)
	EXPECT 13, 0x5010
	TEST 10
	li t0, 1 << 19
	csrs sstatus, t0
	ld a1, 16(a0)
	NOTRAP
	li t0, 0x4444444444444444
	bne a1, t0, fail
	li t0, 1 << 19
	csrc sstatus, t0

	# 11: fetch from a page without X (the handler returns to ra)
	TEST 11
	lla ra, 1f
	li t0, 0x6000
	jr t0
1:	EXPECT 12, 0x6000
	lla t3, lastepc
	ld t4, 0(t3)
	li t5, 0x6000
	bne t4, t5, fail

	# 12-13: sfence.vma makes a new mapping visible
	TEST 12
	li a0, 0x7000
	ld a1, 0(a0)
	li t0, 0x2222222222222222
	bne a1, t0, fail
	TEST 13
	lla t0, p6
	li t1, ALIAS
	sub t0, t0, t1                  # physical address of P6
	srli t0, t0, 12
	slli t0, t0, 10
	ori t0, t0, PTE_V | PTE_R | PTE_A
	sd t0, 7*8(s2)
	sfence.vma a0, zero
	ld a1, 0(a0)
	li t0, 0x6666666666666666
	bne a1, t0, fail

	# 14: non-canonical address (bit 38 set, bits 63..39 clear)
	TEST 14
	li a0, 0x4000000000
	ld a1, 0(a0)
	EXPECT 13, 0x4000000000

	# 15: misaligned gigapage
	TEST 15
	li a0, 0x100000008
	ld a1, 0(a0)
	EXPECT 13, 0x100000008

	# 16: W without R is reserved: loads and stores fault
	TEST 16
	li a0, 0x8000
	sd zero, 0(a0)
	EXPECT 15, 0x8000
	ld a1, 0(a0)
	EXPECT 13, 0x8000

	# 17: a fetch sets A (sfunc's page at VA 0x9000)
	TEST 17
	lla t0, sfunc
	li t1, 0xfff
	and t0, t0, t1
	li t1, 0x9000
	add t0, t0, t1
	jalr t0
	NOTRAP
	li t0, 0x5a5a
	bne a0, t0, fail
	ld t0, 9*8(s2)
	andi t1, t0, PTE_A
	beqz t1, fail
	andi t1, t0, PTE_D
	bnez t1, fail

	# 18: U-mode: ecall from U is not delegated... stay in S; check
	# that satp reads back
	TEST 18
	csrr t0, satp
	srli t0, t0, 60
	li t1, 8
	bne t0, t1, fail

	# pass: exit code 0 through the alias of tohost
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

# S-mode trap handler: records scause, stval, sepc; skips the faulting
# instruction, or returns to ra after an instruction page fault
	.balign 4
s_trap:
	csrr t4, scause
	csrr t5, stval
	csrr t6, sepc
	lla t3, last
	sd t4, 0(t3)
	sd t5, 8(t3)
	sd t6, 16(t3)
	li t3, 12
	beq t4, t3, 1f
	addi t6, t6, 4
	csrw sepc, t6
	sret
1:	csrw sepc, ra
	sret

	.balign 4096
sfunc:
	li a0, 0x5a5a
	ret

	.data
	.balign 4096
root:	.zero 4096
l1:	.zero 4096
l0:	.zero 4096
.macro PAGE v
	.rept 512
	.dword \v
	.endr
.endm
p1:	PAGE 0x1111111111111111
p2:	PAGE 0x2222222222222222
p3:	PAGE 0x3333333333333333
p4:	PAGE 0x4444444444444444
p5:	PAGE 0x5555555555555555
p6:	PAGE 0x6666666666666666
last:	.dword 0, 0
lastepc: .dword 0
