# llvm-objdump fixture source for Zcb on RV64 (see gen.sh).
zc:
	c.lbu	a0, 2(a1)
	c.lhu	s0, 0(s1)
	c.lh	a0, 2(a1)
	c.sb	a0, 0(a1)
	c.sh	a5, 2(a4)
	c.zext.b	a0
	c.sext.b	a1
	c.zext.h	a2
	c.sext.h	a3
	c.zext.w	s1
	c.not	a4
	c.mul	a0, a1
	.insn	0x8c40		# c.sh with bit 6: reserved
	.insn	0x9c7d		# reserved
