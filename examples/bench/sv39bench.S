# A bare-metal Sv39 workload for timing the simulator (rvtrace bench
# --sim): M-mode maps the program twice with 1 GiB pages (identity at
# 0x80000000 for U-mode, an alias at 0xC0000000 for S-mode), then U-mode
# walks a 64 KiB buffer (16 pages) with loads and stores and makes a
# system call (ecall, delegated to S-mode, whose handler does an atomic
# add and returns with sret) every 64 buffer words: about 45 M
# instructions and 77 K traps. Exit code 0 when the counts add up.
# It also runs on qemu-system-riscv64 -M spike -bios none -kernel (exit 0).
# Build: scripts/build-bench.sh (riscv64-linux-gnu-gcc -march=rv64gc
#   -mabi=lp64d -nostdlib -static -fno-pie -no-pie -Wl,--build-id=none
#   -Wl,--no-warn-rwx-segments -T ../sim-tests/vm/link.ld sv39bench.S
#   -o sv39bench.elf, through a named object file)
	.option norvc
	.equ ALIAS, 0x40000000
	.equ ROUNDS, 600
	.equ WORDS, 8192                # 64 KiB of doublewords
	.equ PTE_VRWXAD, 0xcf
	.equ PTE_U, 16

	.section .text.init
	.globl _start
_start:
	lla t0, m_trap
	csrw mtvec, t0
	li t0, -1
	csrw pmpaddr0, t0
	li t0, 0x1f
	csrw pmpcfg0, t0
	lla s0, root
	li t0, (0x80000000 >> 12) << 10 | PTE_VRWXAD | PTE_U
	sd t0, 2*8(s0)                  # identity, user
	li t0, (0x80000000 >> 12) << 10 | PTE_VRWXAD
	sd t0, 3*8(s0)                  # alias, supervisor
	li t0, 1 << 8                   # ecall from U to S
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
	lla t0, s_main
	li t1, ALIAS
	add t0, t0, t1
	csrw mepc, t0
	li t0, 3 << 11
	csrc mstatus, t0
	li t0, 1 << 11
	csrs mstatus, t0                # MPP = S
	mret

m_trap:                                 # unexpected: exit 100 + mcause
	csrr t0, mcause
	addi t0, t0, 100
	slli t0, t0, 1
	ori t0, t0, 1
	lla t1, tohost
	sd t0, 0(t1)
1:	j 1b

	.text
s_main:                                 # S-mode, at the alias
	lla t0, u_main
	li t1, ALIAS
	sub t0, t0, t1                  # its identity address
	csrw sepc, t0
	li t0, 1 << 8
	csrc sstatus, t0                # SPP = U
	sret

s_trap:                                 # S-mode: count the call, return
	csrr t0, sepc
	addi t0, t0, 4
	csrw sepc, t0
	lla t0, calls                   # alias address (not a user page)
	li t1, 1
	amoadd.d zero, t1, (t0)
	sret

u_main:                                 # U-mode, identity addresses
	li s1, ROUNDS
	li s3, 0                        # checksum
	li s4, 0                        # system calls made
2:	lla s0, buf
	li s2, WORDS
3:	ld t0, 0(s0)
	add t0, t0, s2
	xor s3, s3, t0
	sd t0, 0(s0)
	addi s0, s0, 8
	addi s2, s2, -1
	andi t1, s2, 63
	bnez t1, 4f
	ecall
	addi s4, s4, 1
4:	bnez s2, 3b
	addi s1, s1, -1
	bnez s1, 2b
	# exit 0 when the handler counted every call
	lla t0, calls
	ld t0, 0(t0)
	li t1, ROUNDS * WORDS / 64
	sub t0, t0, t1
	sub t2, s4, t1
	or t0, t0, t2
	snez t0, t0
	slli t0, t0, 1
	ori t0, t0, 1
	lla t1, tohost
	sd t0, 0(t1)
5:	j 5b

	.section .tohost, "aw", @progbits
	.align 3
	.globl tohost, fromhost
	.type tohost, @object
	.size tohost, 8
tohost: .dword 0
	.type fromhost, @object
	.size fromhost, 8
fromhost: .dword 0

	.bss
	.align 12
root:	.zero 4096
calls:	.dword 0
	.align 12
buf:	.zero WORDS * 8
