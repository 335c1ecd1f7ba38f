# CSR accesses mixed with loads and stores (bare metal, M-mode, HTIF
# exit), for the CSR data trace test (etrace/datacsr_test.go): every form
# of Zicsr instruction on mscratch (csrrw/csrrs/csrrc and the immediate
# forms, with rd x0 and rs1 x0 too), mstatus (read, set and clear of
# MPIE), and the read-only CSRs cycle, instret and mhartid (the packet's
# read-only layout), with values that change each iteration (small,
# negative and wide). Exit code 0.
# Build: scripts/build-etrace-tests.sh (it builds the RV32 program too)

	.option norvc
	.section .text.init
	.globl _start
_start:
	lla s0, buf
	li s1, 48                       # iterations
	li s2, 0x0123456789abcdef
1:	mul t0, s1, s2                  # a wide value
	csrrw t1, mscratch, t0
	sd t1, 0(s0)
	csrrw x0, mscratch, s1          # rd x0: no read
	csrrs t1, mscratch, s2
	csrrc t2, mscratch, t0
	ld t3, 0(s0)
	csrrwi t1, mscratch, 21
	csrrsi t1, mscratch, 10
	csrrci x0, mscratch, 3
	csrr t1, mscratch               # csrrs rs1 x0: no write
	csrrc t1, mscratch, x0          # csrrc rs1 x0: no write
	neg t4, s1
	csrw mscratch, t4               # a negative value
	sw t4, 8(s0)
	li t5, 1 << 7                   # mstatus.MPIE
	csrs mstatus, t5
	csrr t1, mstatus
	csrc mstatus, t5
	csrrci t1, mstatus, 0           # csrrci uimm 0: no write
	csrr t1, cycle                  # read-only CSRs
	csrr t2, instret
	csrrs t3, mhartid, x0
	lw t6, 8(s0)
	addi s1, s1, -1
	bnez s1, 1b
	li t0, 1                        # exit code 0
	lla t1, tohost
	sd t0, 0(t1)
2:	j 2b

	.section .tohost, "aw", @progbits
	.align 6
	.globl tohost
tohost: .dword 0

	.data
	.align 3
buf:	.space 16
