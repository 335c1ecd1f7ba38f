# Loads and stores in M-mode and in U-mode (bare metal, HTIF exit), for the
# data trace privilege filter test (etrace/datafilter_test.go): M-mode
# works on mbuf, enters U-mode, which works on ubuf and calls M-mode with
# ecall every eighth iteration (the handler counts in mcount), then exits
# with ecall (a7 = 93). Exit code 0; 100 + mcause for an unexpected trap.

	.option norvc
	.section .text.init
	.globl _start
_start:
	lla t0, m_trap
	csrw mtvec, t0
	# PMP: allow everything to U
	li t0, -1
	csrw pmpaddr0, t0
	li t0, 0x1f                     # NAPOT RWX
	csrw pmpcfg0, t0
	# M-mode accesses
	lla s0, mbuf
	li s1, 32
1:	sd s1, 0(s0)
	ld t1, 0(s0)
	add t1, t1, s1
	sw t1, 8(s0)
	lbu t2, 8(s0)
	addi s1, s1, -1
	bnez s1, 1b
	# mret to U-mode at u_main
	lla t0, u_main
	csrw mepc, t0
	li t0, 3 << 11                  # mstatus.MPP = U
	csrc mstatus, t0
	mret

u_main:
	lla s0, ubuf
	li s1, 40
2:	sd s1, 0(s0)
	lw t1, 0(s0)
	sh t1, 16(s0)
	lhu t2, 16(s0)
	andi t3, s1, 7
	bnez t3, 3f
	li a7, 1
	ecall                           # to M-mode, which counts
3:	addi s1, s1, -1
	bnez s1, 2b
	li a7, 93
	ecall                           # exit

m_trap:
	csrr t0, mcause
	li t1, 8                        # ecall from U
	bne t0, t1, m_fail
	li t1, 93
	beq a7, t1, m_done
	lla t1, mcount
	ld t2, 0(t1)
	addi t2, t2, 1
	sd t2, 0(t1)
	csrr t0, mepc
	addi t0, t0, 4
	csrw mepc, t0
	mret
m_fail:
	addi t0, t0, 100
	j m_exit
m_done:
	li t0, 0
m_exit:
	slli t0, t0, 1
	ori t0, t0, 1
	lla t1, tohost
	sd t0, 0(t1)
4:	j 4b

	.section .tohost, "aw", @progbits
	.align 6
	.globl tohost
tohost: .dword 0
	.align 6
	.globl fromhost
fromhost: .dword 0

	.data
	.align 3
mbuf:	.space 64
ubuf:	.space 64
mcount:	.dword 0
