# The RV32 CSR test program (etrace/datacsr_test.go): 32-bit CSRs, among
# them negative values and the read-only cycle and cycleh. 40 iterations
# of 6 Zicsr instructions; exit code 0.
# Build: scripts/build-etrace-tests.sh

	.option norvc
	.section .text.init
	.globl _start
_start:
	lla s0, buf
	li s1, 40
1:	neg t0, s1                      # a negative value
	csrrw t1, mscratch, t0
	sw t1, 0(s0)
	csrrs t1, mscratch, s1
	csrrci t1, mscratch, 5
	lw t2, 0(s0)
	csrr t1, mstatus
	csrr t1, cycle
	csrr t2, cycleh
	addi s1, s1, -1
	bnez s1, 1b
	li t0, 1                        # exit code 0
	lla t1, tohost
	sw t0, 0(t1)
	sw zero, 4(t1)
2:	j 2b

	.section .tohost, "aw", @progbits
	.align 6
	.globl tohost
tohost: .dword 0

	.data
	.align 3
buf:	.space 16
