# objdump fixture source for rv32gc_zba_zbb_zbs (see gen.sh).
	.include "base.inc"
rv32:
	csrrs	a0, cycleh, zero
	csrrs	a0, timeh, zero
	csrrs	a0, instreth, zero
	.option	rvc
	c.jal	start
	c.jal	rv32end
	c.flw	fa0, 124(a1)
	c.fsw	fa0, 0(s0)
	c.flwsp	fa0, 252(sp)
	c.fswsp	fa0, 252(sp)
	.insn	0x1082		# c.slli ra,32: reserved on RV32
	.insn	0x0005b503	# ld: RV64 only
	.insn	0x6b85d513	# RV64 rev8: not RV32
rv32end:
	ret
