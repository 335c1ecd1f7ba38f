package sim

// Half precision (Zfh, with Zfhmin): binary16 values live in the f
// registers NaN-boxed in 64 bits (the upper 48 bits all ones); a value
// that is not properly boxed reads as the canonical NaN 0x7e00 (ISA
// manual, "NaN Boxing of Narrower Values"). The arithmetic is fp.go's:
// exact results rounded to binary16 by roundPack in the requested mode,
// with the same flags, NaN and saturation rules as F and D.

var fmtH = fpFormat{5, 10, 15}

const (
	canonNaNH = 0x7e00
	boxMaskH  = 0xffffffffffff0000
)

// readH returns a half from an FP register, the canonical NaN when it is
// not NaN-boxed.
func (h *Hart) readH(r uint8) uint64 {
	v := h.f[r&31]
	if v&boxMaskH != boxMaskH {
		return canonNaNH
	}
	return v & 0xffff
}

// writeH writes a half to an FP register, NaN-boxed.
func (h *Hart) writeH(r uint8, v uint64) {
	h.f[r&31] = v&0xffff | boxMaskH
	h.fsDirty()
}

// fphToX reports whether the half-precision operation fop writes an
// integer register.
func fphToX(fop uint8) bool {
	switch fop {
	case fpCVTWf, fpCVTWUf, fpCVTLf, fpCVTLUf, fpMVXf, fpEQ, fpLT, fpLE, fpCLASS:
		return true
	}
	return false
}

// decodeFPH decodes the OP-FP instructions with fmt H and fcvt.s.h and
// fcvt.d.h (fmt S and D with rs2 = 2).
func decodeFPH(d inst, f3, f7 uint32) inst {
	ill := inst{op: opIllegal}
	d.op = opFPH
	switch f7 {
	case 0x20:
		d.fop = fpCVTSH
		return d
	case 0x21:
		d.fop = fpCVTDH
		return d
	}
	switch f7 >> 2 {
	case 0x00:
		d.fop = fpADD
	case 0x01:
		d.fop = fpSUB
	case 0x02:
		d.fop = fpMUL
	case 0x03:
		d.fop = fpDIV
	case 0x0b:
		if d.rs2 != 0 {
			return ill
		}
		d.fop = fpSQRT
	case 0x04:
		if f3 > 2 {
			return ill
		}
		d.fop = [3]uint8{fpSGNJ, fpSGNJN, fpSGNJX}[f3]
	case 0x05:
		if f3 > 1 {
			return ill
		}
		d.fop = [2]uint8{fpMIN, fpMAX}[f3]
	case 0x08:
		switch d.rs2 {
		case 0:
			d.fop = fpCVTHS
		case 1:
			d.fop = fpCVTHD
		default:
			return ill
		}
	case 0x14:
		if f3 > 2 {
			return ill
		}
		d.fop = [3]uint8{fpLE, fpLT, fpEQ}[f3]
	case 0x18:
		if d.rs2 > 3 {
			return ill
		}
		d.fop = [4]uint8{fpCVTWf, fpCVTWUf, fpCVTLf, fpCVTLUf}[d.rs2]
	case 0x1a:
		if d.rs2 > 3 {
			return ill
		}
		d.fop = [4]uint8{fpCVTfW, fpCVTfWU, fpCVTfL, fpCVTfLU}[d.rs2]
	case 0x1c:
		if d.rs2 != 0 || f3 > 1 {
			return ill
		}
		d.fop = [2]uint8{fpMVXf, fpCLASS}[f3]
	case 0x1e:
		if d.rs2 != 0 || f3 != 0 {
			return ill
		}
		d.fop = fpMVfX
	default:
		return ill
	}
	return d
}

// decodeCBO decodes MISC-MEM funct3 2: the Zicbom and Zicboz operations
// (rd must be x0).
func decodeCBO(d inst, w uint32) inst {
	if d.rd != 0 {
		return inst{op: opIllegal}
	}
	switch w >> 20 {
	case 0:
		d.op = opCBOINVAL
	case 1:
		d.op = opCBOCLEAN
	case 2:
		d.op = opCBOFLUSH
	case 4:
		d.op = opCBOZERO
	default:
		return inst{op: opIllegal}
	}
	return d
}

// isMop reports whether a SYSTEM instruction with funct3 4 is a Zimop
// mop.r.N or mop.rr.N.
func isMop(w uint32) bool {
	return w&0xb3c0707f == 0x81c04073 || w&0xb200707f == 0x82004073
}

// execFPH executes flh, fsh and the half-precision operations (FS is
// already checked).
func (h *Hart) execFPH(d *inst) bool {
	switch d.op {
	case opFLH:
		va := (h.x[d.rs1&31] + uint64(d.imm)) & h.amask
		v, ok := h.loadSlow(va, 2)
		if !ok {
			return false
		}
		h.writeH(d.rd, v)
		return true
	case opFSH:
		va := (h.x[d.rs1&31] + uint64(d.imm)) & h.amask
		return h.storeSlow(va, 2, h.f[d.rs2&31]&0xffff)
	}
	f := fmtH
	rm := int(d.rm)
	if rm == rmDYN {
		rm = int(h.csr.frm)
	}
	switch d.fop {
	case fpSGNJ, fpSGNJN, fpSGNJX, fpMIN, fpMAX, fpEQ, fpLT, fpLE, fpCLASS, fpMVXf, fpMVfX:
	default:
		if rm > rmRMM {
			h.illegal(d)
			return false
		}
	}
	a, b := h.readH(d.rs1), h.readH(d.rs2)
	var res, fl uint64
	toX := false
	out := 'h' // format of an FP result: h, s or d
	switch d.fop {
	case fpADD:
		res, fl = f.add(a, b, rm)
	case fpSUB:
		res, fl = f.add(a, b^f.signBit(), rm)
	case fpMUL:
		res, fl = f.mul(a, b, rm)
	case fpDIV:
		res, fl = f.div(a, b, rm)
	case fpSQRT:
		res, fl = f.sqrt(a, rm)
	case fpMADD, fpMSUB, fpNMSUB, fpNMADD:
		res, fl = f.fma(a, b, h.readH(d.rs3), d.fop == fpNMSUB || d.fop == fpNMADD, d.fop == fpMSUB || d.fop == fpNMADD, rm)
	case fpSGNJ:
		res = a&^f.signBit() | b&f.signBit()
	case fpSGNJN:
		res = a&^f.signBit() | (^b)&f.signBit()
	case fpSGNJX:
		res = a ^ b&f.signBit()
	case fpMIN:
		res, fl = f.minmax(a, b, false)
	case fpMAX:
		res, fl = f.minmax(a, b, true)
	case fpEQ, fpLT, fpLE:
		toX = true
		if f.isNaN(a) || f.isNaN(b) {
			if d.fop != fpEQ || f.isSNaN(a) || f.isSNaN(b) {
				fl = fNV
			}
			break
		}
		bothZero := f.isZero(a) && f.isZero(b)
		switch d.fop {
		case fpEQ:
			res = b2u(a == b || bothZero)
		case fpLT:
			res = b2u(f.lt(a, b))
		default:
			res = b2u(f.lt(a, b) || a == b || bothZero)
		}
	case fpCLASS:
		toX = true
		res = f.class(a)
	case fpMVXf:
		toX = true
		res = uint64(int64(int16(h.f[d.rs1&31])))
	case fpMVfX:
		res = h.x[d.rs1&31] & 0xffff
	case fpCVTWf, fpCVTWUf, fpCVTLf, fpCVTLUf:
		toX = true
		long := d.fop == fpCVTLf || d.fop == fpCVTLUf
		if long && h.xlen == 32 {
			h.illegal(d)
			return false
		}
		nb := uint(32)
		if long {
			nb = 64
		}
		res, fl = f.toInt(a, rm, nb, d.fop == fpCVTWf || d.fop == fpCVTLf)
	case fpCVTfW, fpCVTfWU, fpCVTfL, fpCVTfLU:
		v := h.x[d.rs1&31]
		switch d.fop {
		case fpCVTfW:
			v = uint64(int64(int32(v)))
		case fpCVTfWU:
			v = uint64(uint32(v))
		default:
			if h.xlen == 32 {
				h.illegal(d)
				return false
			}
		}
		res, fl = f.fromInt(v, d.fop == fpCVTfW || d.fop == fpCVTfL, rm)
	case fpCVTHS:
		res, fl = f.convert(fmtS, h.readS(d.rs1), rm)
	case fpCVTHD:
		res, fl = f.convert(fmtD, h.f[d.rs1&31], rm)
	case fpCVTSH:
		res, fl = fmtS.convert(f, a, rm)
		out = 's'
	case fpCVTDH:
		res, fl = fmtD.convert(f, a, rm)
		out = 'd'
	default:
		h.illegal(d)
		return false
	}
	if fl != 0 {
		h.csr.fflags |= fl
		h.fsDirty()
	}
	switch {
	case toX:
		if d.rd != 0 {
			h.x[d.rd&31] = h.sext32(res)
		}
	case out == 's':
		h.writeF(d.rd, res, false)
	case out == 'd':
		h.writeF(d.rd, res, true)
	default:
		h.writeH(d.rd, res)
	}
	return true
}
