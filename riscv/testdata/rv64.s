# objdump fixture source for rv64gc_zba_zbb_zbs (see gen.sh).
	.include "base.inc"
rv64:
	ld	a0, 8(a1)
	lwu	a0, 4(a1)
	sd	a0, -8(sp)
	addiw	a0, a1, -1
	addiw	a0, a1, 0
	slliw	a0, a1, 31
	srliw	a0, a1, 1
	sraiw	a0, a1, 3
	slli	a0, a1, 63
	srai	a0, a1, 32
	addw	a0, a1, a2
	subw	a0, a1, a2
	subw	a0, zero, a2
	sllw	a0, a1, a2
	srlw	a0, a1, a2
	sraw	a0, a1, a2
	mulw	a0, a1, a2
	divw	a0, a1, a2
	divuw	a0, a1, a2
	remw	a0, a1, a2
	remuw	a0, a1, a2
	lr.d	a0, (a1)
	sc.d.aq	a0, a2, (a1)
	amoswap.d	a0, a2, (a1)
	amoadd.d	a0, a2, (a1)
	amoxor.d	a0, a2, (a1)
	amoand.d	a0, a2, (a1)
	amoor.d	a0, a2, (a1)
	amomin.d	a0, a2, (a1)
	amomax.d.rl	a0, a2, (a1)
	amominu.d	a0, a2, (a1)
	amomaxu.d	a0, a2, (a1)
	fcvt.l.s	a0, fa0
	fcvt.lu.s	a0, fa0, rtz
	fcvt.s.l	fa0, a0
	fcvt.s.lu	fa0, a0
	fcvt.l.d	a0, fa0
	fcvt.lu.d	a0, fa0
	fcvt.d.l	fa0, a0, rne
	fcvt.d.lu	fa0, a0
	fmv.x.d	a0, fa0
	fmv.d.x	fa0, a0
	add.uw	a0, a1, a2
	add.uw	a0, a1, zero
	sh1add.uw	a0, a1, a2
	sh2add.uw	a0, a1, a2
	sh3add.uw	a0, a1, a2
	slli.uw	a0, a1, 63
	clzw	a0, a1
	ctzw	a0, a1
	cpopw	a0, a1
	rolw	a0, a1, a2
	rorw	a0, a1, a2
	roriw	a0, a1, 31
	bclri	a0, a1, 63
	rori	a0, a1, 63
	.option	rvc
	c.ld	a0, 248(a1)
	c.sd	a0, 0(s0)
	c.addiw	a0, -1
	c.addiw	a0, 0
	c.subw	a0, a1
	c.addw	a0, a1
	c.slli	a0, 63
	c.srli	a0, 32
	c.ldsp	ra, 504(sp)
	c.sdsp	ra, 504(sp)
	.insn	0x2001		# c.addiw zero: reserved
	.insn	0x6002		# c.ldsp zero: reserved
	ret
