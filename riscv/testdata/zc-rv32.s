# llvm-objdump fixture source for Zcb, Zcmp and Zcmt on RV32 (see gen.sh).
zc:
	c.lbu	a0, 0(a1)
	c.lbu	s0, 3(s1)
	c.lhu	a0, 2(a1)
	c.lh	a5, 0(a4)
	c.sb	a0, 1(a1)
	c.sh	a0, 2(a1)
	c.zext.b	a0
	c.sext.b	a1
	c.zext.h	a2
	c.sext.h	a3
	c.not	a4
	c.mul	a0, a1
	cm.push	{ra}, -16
	cm.push	{ra, s0}, -32
	cm.push	{ra, s0-s1}, -16
	cm.push	{ra, s0-s2}, -32
	cm.push	{ra, s0-s8}, -64
	cm.push	{ra, s0-s9}, -64
	cm.push	{ra, s0-s11}, -112
	cm.pop	{ra}, 16
	cm.pop	{ra, s0-s3}, 48
	cm.popret	{ra}, 16
	cm.popret	{ra, s0-s11}, 64
	cm.popretz	{ra, s0}, 32
	cm.popretz	{ra, s0-s5}, 80
	cm.mvsa01	s1, s0
	cm.mvsa01	s2, s7
	cm.mva01s	s1, s0
	cm.mva01s	s0, s0
	cm.jt	0
	cm.jt	31
	cm.jalt	32
	cm.jalt	255
	.insn	0xb802		# cm.push with rlist 0: reserved
	.insn	0xac22		# cm.mvsa01 s0,s0: reserved
	.insn	0xa402		# c.fsdsp slot: reserved with Zcmp
	.insn	0x9c71		# c.zext.w: RV64 only
	.insn	0x9c79		# reserved
