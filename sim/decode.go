package sim

// This file is the executor's own decoder: it turns instruction bits into
// the pre-decoded form the interpreter dispatches on (inst). Compressed
// instructions are expanded to the operation of their 32-bit equivalent;
// the size field and the raw bits keep what was fetched.

// Operation codes of decoded instructions. opInvalid (0) marks a slot of
// the decoded-instruction cache that has not been decoded yet; opIllegal
// is an instruction the hart does not implement.
const (
	opInvalid uint8 = iota
	opIllegal
	// RV32I/RV64I
	opLUI
	opAUIPC
	opJAL
	opJALR
	opBEQ
	opBNE
	opBLT
	opBGE
	opBLTU
	opBGEU
	opLB
	opLH
	opLW
	opLD
	opLBU
	opLHU
	opLWU
	opSB
	opSH
	opSW
	opSD
	opADDI
	opSLTI
	opSLTIU
	opXORI
	opORI
	opANDI
	opSLLI
	opSRLI
	opSRAI
	opADD
	opSUB
	opSLL
	opSLT
	opSLTU
	opXOR
	opSRL
	opSRA
	opOR
	opAND
	opADDIW
	opSLLIW
	opSRLIW
	opSRAIW
	opADDW
	opSUBW
	opSLLW
	opSRLW
	opSRAW
	opFENCE
	// M
	opMUL
	opMULH
	opMULHSU
	opMULHU
	opDIV
	opDIVU
	opREM
	opREMU
	opMULW
	opDIVW
	opDIVUW
	opREMW
	opREMUW
	// Zba
	opSH1ADD
	opSH2ADD
	opSH3ADD
	opADDUW
	opSH1ADDUW
	opSH2ADDUW
	opSH3ADDUW
	opSLLIUW
	// Zbb
	opANDN
	opORN
	opXNOR
	opCLZ
	opCTZ
	opCPOP
	opCLZW
	opCTZW
	opCPOPW
	opMAX
	opMAXU
	opMIN
	opMINU
	opSEXTB
	opSEXTH
	opZEXTH
	opROL
	opROR
	opRORI
	opROLW
	opRORW
	opRORIW
	opORCB
	opREV8
	// Zbs
	opBCLR
	opBCLRI
	opBEXT
	opBEXTI
	opBINV
	opBINVI
	opBSET
	opBSETI
	// RV32 variants whose results need sign extension from bit 31 or
	// whose shift amounts are 5 bits.
	opAUIPC32
	opJAL32
	opJALR32
	opMULH32
	opMULHSU32
	opMULHU32
	opSH1ADD32
	opSH2ADD32
	opSH3ADD32
	opORCB32
	opREV832
	opBCLR32
	opBEXT32
	opBINV32
	opBSET32
	opBCLRI32
	opBINVI32
	opBSETI32

	// opFENCEI and the operations after it are executed out of the main
	// loop (execSlow).
	opFENCEI
	opECALL
	opEBREAK
	opMRET
	opSRET
	opWFI
	opSFENCEVMA
	opCSRRW
	opCSRRS
	opCSRRC
	opCSRRWI
	opCSRRSI
	opCSRRCI
	opLRW
	opSCW
	opLRD
	opSCD
	opAMOW // funct5 in inst.rm
	opAMOD
	opFP // floating point: sub-operation in inst.rm2, rounding mode in rm
	opFLW
	opFSW
	opFLD
	opFSD

	// Extensions executed by execExt (ext.go, zfh.go).
	opCLMUL
	opCLMULH
	opCLMULR
	opPACK
	opPACKH
	opPACKW
	opBREV8
	opZIP
	opUNZIP
	opXPERM4
	opXPERM8
	opCZEROEQZ
	opCZERONEZ
	opCBOCLEAN
	opCBOFLUSH
	opCBOINVAL
	opCBOZERO
	opFLH
	opFSH
	opFPH // half precision (and fcvt.s.h, fcvt.d.h): sub-operation in fop
	// Svinval's sfence.w.inval and sfence.inval.ir (its sinval.vma is
	// opSFENCEVMA)
	opSFENCEINVAL

	// Zcmp and Zcmt (zcmp.go), from opCMPUSH to opCMJALT: push and pop
	// (the register list in rm, stack_adj in imm), the double moves (the
	// two s registers in rs1 and rs2) and the table jumps (the index in
	// imm).
	opCMPUSH
	opCMPOP
	opCMPOPRETZ
	opCMPOPRET
	opCMMVSA01
	opCMMVA01S
	opCMJT
	opCMJALT
)

// Floating-point sub-operations (inst.fop).
const (
	fpInvalid uint8 = iota
	fpADD
	fpSUB
	fpMUL
	fpDIV
	fpSQRT
	fpSGNJ
	fpSGNJN
	fpSGNJX
	fpMIN
	fpMAX
	fpCVTWf  // fcvt.w.{s,d}
	fpCVTWUf // fcvt.wu
	fpCVTLf
	fpCVTLUf
	fpCVTfW
	fpCVTfWU
	fpCVTfL
	fpCVTfLU
	fpMVXf // fmv.x.w / fmv.x.d
	fpMVfX
	fpEQ
	fpLT
	fpLE
	fpCLASS
	fpCVTSD // fcvt.s.d
	fpCVTDS // fcvt.d.s
	fpMADD
	fpMSUB
	fpNMSUB
	fpNMADD
	fpCVTHS // fcvt.h.s
	fpCVTSH // fcvt.s.h
	fpCVTHD // fcvt.h.d
	fpCVTDH // fcvt.d.h
)

// inst is one pre-decoded instruction.
type inst struct {
	imm   int64
	raw   uint32
	op    uint8
	rd    uint8
	rs1   uint8
	rs2   uint8
	rs3   uint8
	size  uint8 // 2 or 4 bytes
	itype uint8 // static ingress itype of jumps (0 for others)
	rm    uint8 // FP rounding mode field; AMO funct5
	fop   uint8 // FP sub-operation
	dbl   bool  // FP: double precision
	cost  uint8 // cycles charged by the timing model
	class uint8 // timing class (see timing.go)
	mk    uint8 // event-model kind: pmu.FastKind, or mkSystem (observe.go)
}

func isLink(r uint8) bool { return r == 1 || r == 5 }

// jalrIType is the 4-bit itype of jalr rd, rs (N-Trace table "Generating
// itype for different instructions"); c.jr and c.jalr expand to jalr and
// follow the same rules.
func jalrIType(rd, rs uint8) uint8 {
	switch {
	case isLink(rd) && !isLink(rs):
		return 8
	case isLink(rd) && isLink(rs) && rd == rs:
		return 8
	case isLink(rd) && isLink(rs):
		return 12
	case isLink(rs):
		return 13
	case rd == 0:
		return 10
	default:
		return 14
	}
}

// jalIType is the 4-bit itype of jal rd.
func jalIType(rd uint8) uint8 {
	switch {
	case isLink(rd):
		return 9
	case rd == 0:
		return 11
	default:
		return 15
	}
}

func sext(v uint64, bits uint) int64 {
	s := 64 - bits
	return int64(v<<s) >> s
}

// decode decodes one instruction with the compressed extensions of a
// hart that has Zcd (the default; decodeZc chooses). raw holds 16
// (compressed) or 32 bits.
func decode(raw uint32, xlen int) inst { return decodeZc(raw, xlen, 0) }

// decode decodes one instruction with the hart's compressed extensions.
func (h *Hart) decode(raw uint32) inst { return decodeZc(raw, h.xlen, h.m.zc) }

// decodeZc decodes one instruction with the compressed extensions zc.
// raw holds 16 (compressed) or 32 bits.
func decodeZc(raw uint32, xlen int, zc zcSet) inst {
	var d inst
	if raw&3 != 3 {
		d = decodeC(uint16(raw), xlen, zc)
		d.raw = raw & 0xffff
		d.size = 2
	} else {
		d = decode32(raw, xlen)
		d.raw = raw
		d.size = 4
	}
	if xlen == 32 {
		d.op = rv32Variant(d.op)
	}
	d.class = classOf(&d)
	d.mk = modelKind(&d)
	return d
}

// rv32Variant maps an operation to the one with RV32 semantics. Registers
// of an RV32 hart hold their 32-bit values sign-extended to 64 bits, so
// most operations are shared with RV64 (the W forms where the result must
// be re-extended).
func rv32Variant(op uint8) uint8 {
	switch op {
	case opADD:
		return opADDW
	case opSUB:
		return opSUBW
	case opSLL:
		return opSLLW
	case opSRL:
		return opSRLW
	case opSRA:
		return opSRAW
	case opADDI:
		return opADDIW
	case opSLLI:
		return opSLLIW
	case opSRLI:
		return opSRLIW
	case opSRAI:
		return opSRAIW
	case opMUL:
		return opMULW
	case opDIV:
		return opDIVW
	case opDIVU:
		return opDIVUW
	case opREM:
		return opREMW
	case opREMU:
		return opREMUW
	case opCLZ:
		return opCLZW
	case opCTZ:
		return opCTZW
	case opCPOP:
		return opCPOPW
	case opROL:
		return opROLW
	case opROR:
		return opRORW
	case opRORI:
		return opRORIW
	case opAUIPC:
		return opAUIPC32
	case opJAL:
		return opJAL32
	case opJALR:
		return opJALR32
	case opMULH:
		return opMULH32
	case opMULHSU:
		return opMULHSU32
	case opMULHU:
		return opMULHU32
	case opSH1ADD:
		return opSH1ADD32
	case opSH2ADD:
		return opSH2ADD32
	case opSH3ADD:
		return opSH3ADD32
	case opORCB:
		return opORCB32
	case opREV8:
		return opREV832
	case opBCLR:
		return opBCLR32
	case opBEXT:
		return opBEXT32
	case opBINV:
		return opBINV32
	case opBSET:
		return opBSET32
	case opBCLRI:
		return opBCLRI32
	case opBINVI:
		return opBINVI32
	case opBSETI:
		return opBSETI32
	// RV64-only operations are illegal on RV32.
	case opLD, opLWU, opSD, opADDIW, opSLLIW, opSRLIW, opSRAIW, opADDW, opSUBW,
		opSLLW, opSRLW, opSRAW, opMULW, opDIVW, opDIVUW, opREMW, opREMUW,
		opADDUW, opSH1ADDUW, opSH2ADDUW, opSH3ADDUW, opSLLIUW, opCLZW, opCTZW,
		opCPOPW, opROLW, opRORW, opRORIW, opLRD, opSCD, opAMOD, opPACKW:
		return opIllegal
	}
	return op
}

func decode32(w uint32, xlen int) inst {
	d := inst{
		rd:  uint8(w>>7) & 31,
		rs1: uint8(w>>15) & 31,
		rs2: uint8(w>>20) & 31,
		rs3: uint8(w >> 27),
		rm:  uint8(w>>12) & 7,
	}
	f3 := (w >> 12) & 7
	f7 := w >> 25
	immI := sext(uint64(w>>20), 12)
	immS := sext(uint64((w>>25)<<5|(w>>7)&31), 12)
	immB := sext(uint64((w>>31)<<12|((w>>7)&1)<<11|((w>>25)&63)<<5|((w>>8)&15)<<1), 13)
	immU := int64(int32(w & 0xfffff000))
	immJ := sext(uint64((w>>31)<<20|((w>>12)&255)<<12|((w>>20)&1)<<11|((w>>21)&1023)<<1), 21)
	shmask := uint32(63)
	if xlen == 32 {
		shmask = 31
	}
	ill := inst{op: opIllegal}
	switch w & 0x7f {
	case 0x37:
		d.op, d.imm = opLUI, immU
	case 0x17:
		d.op, d.imm = opAUIPC, immU
	case 0x6f:
		d.op, d.imm = opJAL, immJ
		d.itype = jalIType(d.rd)
	case 0x67:
		if f3 != 0 {
			return ill
		}
		d.op, d.imm = opJALR, immI
		d.itype = jalrIType(d.rd, d.rs1)
	case 0x63:
		d.imm = immB
		switch f3 {
		case 0:
			d.op = opBEQ
		case 1:
			d.op = opBNE
		case 4:
			d.op = opBLT
		case 5:
			d.op = opBGE
		case 6:
			d.op = opBLTU
		case 7:
			d.op = opBGEU
		default:
			return ill
		}
	case 0x03:
		d.imm = immI
		switch f3 {
		case 0:
			d.op = opLB
		case 1:
			d.op = opLH
		case 2:
			d.op = opLW
		case 3:
			d.op = opLD
		case 4:
			d.op = opLBU
		case 5:
			d.op = opLHU
		case 6:
			d.op = opLWU
		default:
			return ill
		}
	case 0x23:
		d.imm = immS
		switch f3 {
		case 0:
			d.op = opSB
		case 1:
			d.op = opSH
		case 2:
			d.op = opSW
		case 3:
			d.op = opSD
		default:
			return ill
		}
	case 0x13:
		d.imm = immI
		sh := (w >> 20) & 0x3f
		switch f3 {
		case 0:
			d.op = opADDI
		case 2:
			d.op = opSLTI
		case 3:
			d.op = opSLTIU
		case 4:
			d.op = opXORI
		case 6:
			d.op = opORI
		case 7:
			d.op = opANDI
		case 1:
			d.imm = int64(sh)
			switch {
			case w>>26 == 0:
				if sh&^shmask != 0 {
					return ill
				}
				d.op = opSLLI
			case w>>20 == 0x600:
				d.op = opCLZ
			case w>>20 == 0x601:
				d.op = opCTZ
			case w>>20 == 0x602:
				d.op = opCPOP
			case w>>20 == 0x604:
				d.op = opSEXTB
			case w>>20 == 0x605:
				d.op = opSEXTH
			case w>>20 == 0x08f && xlen == 32:
				d.op = opZIP
			case sh&^shmask != 0:
				return ill
			case w>>26 == 0x0a:
				d.op = opBSETI
			case w>>26 == 0x12:
				d.op = opBCLRI
			case w>>26 == 0x1a:
				d.op = opBINVI
			default:
				return ill
			}
		case 5:
			switch {
			case w>>20 == 0x687:
				d.op = opBREV8
				return d
			case w>>20 == 0x08f && xlen == 32:
				d.op = opUNZIP
				return d
			}
			if sh&^shmask != 0 {
				return ill
			}
			d.imm = int64(sh)
			switch w >> 26 {
			case 0:
				d.op = opSRLI
			case 0x10:
				d.op = opSRAI
			case 0x18:
				d.op = opRORI
			case 0x12:
				d.op = opBEXTI
			case 0x0a:
				if w>>20 != 0x287 {
					return ill
				}
				d.op = opORCB
			case 0x1a:
				if (xlen == 64 && w>>20 != 0x6b8) || (xlen == 32 && w>>20 != 0x698) {
					return ill
				}
				d.op = opREV8
			default:
				return ill
			}
		}
	case 0x1b: // OP-IMM-32
		d.imm = immI
		sh := (w >> 20) & 0x1f
		switch f3 {
		case 0:
			d.op = opADDIW
		case 1:
			d.imm = int64(sh)
			switch f7 {
			case 0:
				d.op = opSLLIW
			case 0x30:
				switch sh {
				case 0:
					d.op = opCLZW
				case 1:
					d.op = opCTZW
				case 2:
					d.op = opCPOPW
				default:
					return ill
				}
			default:
				if w>>26 == 0x02 { // slli.uw
					d.op = opSLLIUW
					d.imm = int64((w >> 20) & 0x3f)
				} else {
					return ill
				}
			}
		case 5:
			d.imm = int64(sh)
			switch f7 {
			case 0:
				d.op = opSRLIW
			case 0x20:
				d.op = opSRAIW
			case 0x30:
				d.op = opRORIW
			default:
				return ill
			}
		default:
			return ill
		}
	case 0x33:
		switch f7<<3 | f3 {
		case 0x00:
			d.op = opADD
		case 0x100:
			d.op = opSUB
		case 0x01:
			d.op = opSLL
		case 0x02:
			d.op = opSLT
		case 0x03:
			d.op = opSLTU
		case 0x04:
			d.op = opXOR
		case 0x05:
			d.op = opSRL
		case 0x105:
			d.op = opSRA
		case 0x06:
			d.op = opOR
		case 0x07:
			d.op = opAND
		case 0x08:
			d.op = opMUL
		case 0x09:
			d.op = opMULH
		case 0x0a:
			d.op = opMULHSU
		case 0x0b:
			d.op = opMULHU
		case 0x0c:
			d.op = opDIV
		case 0x0d:
			d.op = opDIVU
		case 0x0e:
			d.op = opREM
		case 0x0f:
			d.op = opREMU
		case 0x82:
			d.op = opSH1ADD
		case 0x84:
			d.op = opSH2ADD
		case 0x86:
			d.op = opSH3ADD
		case 0x107:
			d.op = opANDN
		case 0x106:
			d.op = opORN
		case 0x104:
			d.op = opXNOR
		case 0x2e:
			d.op = opMAX
		case 0x2f:
			d.op = opMAXU
		case 0x2c:
			d.op = opMIN
		case 0x2d:
			d.op = opMINU
		case 0x181:
			d.op = opROL
		case 0x185:
			d.op = opROR
		case 0x121:
			d.op = opBCLR
		case 0x125:
			d.op = opBEXT
		case 0x1a1:
			d.op = opBINV
		case 0xa1:
			d.op = opBSET
		case 0x24:
			if xlen != 32 || d.rs2 != 0 {
				d.op = opPACK
				break
			}
			d.op = opZEXTH
		case 0x27:
			d.op = opPACKH
		case 0x29:
			d.op = opCLMUL
		case 0x2a:
			d.op = opCLMULR
		case 0x2b:
			d.op = opCLMULH
		case 0xa2:
			d.op = opXPERM4
		case 0xa4:
			d.op = opXPERM8
		case 0x3d:
			d.op = opCZEROEQZ
		case 0x3f:
			d.op = opCZERONEZ
		default:
			return ill
		}
	case 0x3b:
		switch f7<<3 | f3 {
		case 0x00:
			d.op = opADDW
		case 0x100:
			d.op = opSUBW
		case 0x01:
			d.op = opSLLW
		case 0x05:
			d.op = opSRLW
		case 0x105:
			d.op = opSRAW
		case 0x08:
			d.op = opMULW
		case 0x0c:
			d.op = opDIVW
		case 0x0d:
			d.op = opDIVUW
		case 0x0e:
			d.op = opREMW
		case 0x0f:
			d.op = opREMUW
		case 0x20:
			d.op = opADDUW
		case 0x82:
			d.op = opSH1ADDUW
		case 0x84:
			d.op = opSH2ADDUW
		case 0x86:
			d.op = opSH3ADDUW
		case 0x181:
			d.op = opROLW
		case 0x185:
			d.op = opRORW
		case 0x24:
			if d.rs2 != 0 || xlen == 32 {
				d.op = opPACKW // illegal on RV32, as all of OP-32
				break
			}
			d.op = opZEXTH
		default:
			return ill
		}
	case 0x0f:
		switch f3 {
		case 0:
			d.op = opFENCE
		case 1:
			d.op = opFENCEI
		case 2:
			return decodeCBO(d, w)
		default:
			return ill
		}
	case 0x73:
		if f3 == 4 && isMop(w) {
			// Zimop: mop.r.N and mop.rr.N write 0 to rd.
			return inst{op: opADDI, rd: d.rd}
		}
		d.imm = int64(w >> 20) // CSR number
		switch f3 {
		case 0:
			switch {
			case w == 0x00000073:
				d.op = opECALL
			case w == 0x00100073:
				d.op = opEBREAK
			case w == 0x30200073:
				d.op = opMRET
			case w == 0x10200073:
				d.op = opSRET
			case w == 0x10500073:
				d.op = opWFI
			case f7 == 0x09 && d.rd == 0:
				d.op = opSFENCEVMA
			case f7 == 0x0b && d.rd == 0:
				// Svinval's sinval.vma: "Simpler implementations may
				// implement SINVAL.VMA ... identically to SFENCE.VMA"
				d.op = opSFENCEVMA
			case w == 0x18000073 || w == 0x18100073:
				d.op = opSFENCEINVAL // sfence.w.inval, sfence.inval.ir
			default:
				return ill
			}
		case 1:
			d.op = opCSRRW
		case 2:
			d.op = opCSRRS
		case 3:
			d.op = opCSRRC
		case 5:
			d.op = opCSRRWI
		case 6:
			d.op = opCSRRSI
		case 7:
			d.op = opCSRRCI
		default:
			return ill
		}
	case 0x2f:
		f5 := w >> 27
		d.rm = uint8(f5)
		switch f3 {
		case 2:
			switch f5 {
			case 2:
				if d.rs2 != 0 {
					return ill
				}
				d.op = opLRW
			case 3:
				d.op = opSCW
			case 0, 1, 4, 8, 12, 16, 20, 24, 28:
				d.op = opAMOW
			default:
				return ill
			}
		case 3:
			switch f5 {
			case 2:
				if d.rs2 != 0 {
					return ill
				}
				d.op = opLRD
			case 3:
				d.op = opSCD
			case 0, 1, 4, 8, 12, 16, 20, 24, 28:
				d.op = opAMOD
			default:
				return ill
			}
		default:
			return ill
		}
	case 0x07:
		d.imm = immI
		switch f3 {
		case 1:
			d.op = opFLH
		case 2:
			d.op = opFLW
		case 3:
			d.op = opFLD
		default:
			return ill
		}
	case 0x27:
		d.imm = immS
		switch f3 {
		case 1:
			d.op = opFSH
		case 2:
			d.op = opFSW
		case 3:
			d.op = opFSD
		default:
			return ill
		}
	case 0x43, 0x47, 0x4b, 0x4f:
		fmt2 := (w >> 25) & 3
		switch fmt2 {
		case 2:
			d.op = opFPH
			d.fop = [4]uint8{fpMADD, fpMSUB, fpNMSUB, fpNMADD}[(w>>2)&3]
			return d
		case 3:
			return ill
		}
		d.op = opFP
		d.dbl = fmt2 == 1
		d.fop = [4]uint8{fpMADD, fpMSUB, fpNMSUB, fpNMADD}[(w>>2)&3]
	case 0x53:
		return decodeFP(d, w, f3, f7)
	default:
		return ill
	}
	return d
}

func decodeFP(d inst, w, f3, f7 uint32) inst {
	ill := inst{op: opIllegal}
	if f7&3 == 2 || (f7 == 0x20 || f7 == 0x21) && d.rs2 == 2 {
		return decodeFPH(d, f3, f7) // Zfh, fcvt.s.h, fcvt.d.h
	}
	d.op = opFP
	d.dbl = f7&1 == 1
	if f7&2 != 0 { // Q format
		return ill
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
		switch f3 {
		case 0:
			d.fop = fpSGNJ
		case 1:
			d.fop = fpSGNJN
		case 2:
			d.fop = fpSGNJX
		default:
			return ill
		}
	case 0x05:
		switch f3 {
		case 0:
			d.fop = fpMIN
		case 1:
			d.fop = fpMAX
		default:
			return ill
		}
	case 0x08: // fcvt.s.d / fcvt.d.s
		switch {
		case !d.dbl && d.rs2 == 1:
			d.fop = fpCVTSD
		case d.dbl && d.rs2 == 0:
			d.fop = fpCVTDS
		default:
			return ill
		}
	case 0x14:
		switch f3 {
		case 0:
			d.fop = fpLE
		case 1:
			d.fop = fpLT
		case 2:
			d.fop = fpEQ
		default:
			return ill
		}
	case 0x18:
		switch d.rs2 {
		case 0:
			d.fop = fpCVTWf
		case 1:
			d.fop = fpCVTWUf
		case 2:
			d.fop = fpCVTLf
		case 3:
			d.fop = fpCVTLUf
		default:
			return ill
		}
	case 0x1a:
		switch d.rs2 {
		case 0:
			d.fop = fpCVTfW
		case 1:
			d.fop = fpCVTfWU
		case 2:
			d.fop = fpCVTfL
		case 3:
			d.fop = fpCVTfLU
		default:
			return ill
		}
	case 0x1c:
		if d.rs2 != 0 {
			return ill
		}
		switch f3 {
		case 0:
			d.fop = fpMVXf
		case 1:
			d.fop = fpCLASS
		default:
			return ill
		}
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

// decodeC expands a compressed instruction. zc says whether the
// encodings of c.fld, c.fsd, c.fldsp and c.fsdsp are Zcd's or Zcmp's and
// Zcmt's.
func decodeC(c uint16, xlen int, zc zcSet) inst {
	w := uint32(c)
	ill := inst{op: opIllegal}
	rdp := uint8(w>>2)&7 + 8  // rd'/rs2'
	rs1p := uint8(w>>7)&7 + 8 // rs1'/rd'
	rd := uint8(w>>7) & 31
	rs2 := uint8(w>>2) & 31
	f3 := w >> 13
	imm6 := sext(uint64((w>>12)&1)<<5|uint64((w>>2)&31), 6)
	var d inst
	switch w & 3 {
	case 0:
		switch f3 {
		case 0: // c.addi4spn
			nz := (w>>7)&0x30 | (w>>1)&0x3c0 | (w>>4)&4 | (w>>2)&8
			if nz == 0 {
				return ill
			}
			d = inst{op: opADDI, rd: rdp, rs1: 2, imm: int64(nz)}
		case 1: // c.fld
			if zc&zcNoZcd != 0 {
				return ill
			}
			d = inst{op: opFLD, rd: rdp, rs1: rs1p, imm: int64((w>>7)&0x38 | (w<<1)&0xc0)}
		case 2: // c.lw
			d = inst{op: opLW, rd: rdp, rs1: rs1p, imm: int64((w>>7)&0x38 | (w>>4)&4 | (w<<1)&0x40)}
		case 3: // c.ld (RV64) / c.flw (RV32)
			if xlen == 32 {
				d = inst{op: opFLW, rd: rdp, rs1: rs1p, imm: int64((w>>7)&0x38 | (w>>4)&4 | (w<<1)&0x40)}
			} else {
				d = inst{op: opLD, rd: rdp, rs1: rs1p, imm: int64((w>>7)&0x38 | (w<<1)&0xc0)}
			}
		case 5: // c.fsd
			if zc&zcNoZcd != 0 {
				return ill
			}
			d = inst{op: opFSD, rs2: rdp, rs1: rs1p, imm: int64((w>>7)&0x38 | (w<<1)&0xc0)}
		case 6: // c.sw
			d = inst{op: opSW, rs2: rdp, rs1: rs1p, imm: int64((w>>7)&0x38 | (w>>4)&4 | (w<<1)&0x40)}
		case 7:
			if xlen == 32 {
				d = inst{op: opFSW, rs2: rdp, rs1: rs1p, imm: int64((w>>7)&0x38 | (w>>4)&4 | (w<<1)&0x40)}
			} else {
				d = inst{op: opSD, rs2: rdp, rs1: rs1p, imm: int64((w>>7)&0x38 | (w<<1)&0xc0)}
			}
		default:
			return ill
		}
	case 1:
		switch f3 {
		case 0: // c.addi / c.nop
			d = inst{op: opADDI, rd: rd, rs1: rd, imm: imm6}
		case 1:
			if xlen == 32 { // c.jal
				imm := cjImm(w)
				d = inst{op: opJAL, rd: 1, imm: imm, itype: 9}
			} else { // c.addiw
				if rd == 0 {
					return ill
				}
				d = inst{op: opADDIW, rd: rd, rs1: rd, imm: imm6}
			}
		case 2: // c.li
			d = inst{op: opADDI, rd: rd, rs1: 0, imm: imm6}
		case 3:
			if rd == 2 { // c.addi16sp
				nz := sext(uint64((w>>3)&0x200|(w>>2)&0x10|(w<<1)&0x40|(w<<4)&0x180|(w<<3)&0x20), 10)
				if nz == 0 {
					return ill
				}
				d = inst{op: opADDI, rd: 2, rs1: 2, imm: nz}
			} else { // c.lui
				if imm6 == 0 {
					if rd&1 == 1 && rd < 16 {
						return inst{op: opADDI} // Zcmop c.mop.N: a no-op
					}
					return ill
				}
				d = inst{op: opLUI, rd: rd, imm: imm6 << 12}
			}
		case 4:
			sh := int64((w>>12)&1)<<5 | int64((w>>2)&31)
			switch (w >> 10) & 3 {
			case 0:
				if xlen == 32 && sh >= 32 {
					return ill
				}
				d = inst{op: opSRLI, rd: rs1p, rs1: rs1p, imm: sh}
			case 1:
				if xlen == 32 && sh >= 32 {
					return ill
				}
				d = inst{op: opSRAI, rd: rs1p, rs1: rs1p, imm: sh}
			case 2:
				d = inst{op: opANDI, rd: rs1p, rs1: rs1p, imm: imm6}
			case 3:
				ops := [8]uint8{opSUB, opXOR, opOR, opAND, opSUBW, opADDW, opIllegal, opIllegal}
				op := ops[(w>>12)&1<<2|(w>>5)&3]
				if op == opIllegal || (xlen == 32 && (op == opSUBW || op == opADDW)) {
					return ill
				}
				d = inst{op: op, rd: rs1p, rs1: rs1p, rs2: rdp}
			}
		case 5: // c.j
			d = inst{op: opJAL, rd: 0, imm: cjImm(w), itype: 11}
		case 6, 7: // c.beqz, c.bnez
			imm := sext(uint64((w>>4)&0x100|(w>>7)&0x18|(w<<1)&0xc0|(w>>2)&6|(w<<3)&0x20), 9)
			op := opBEQ
			if f3 == 7 {
				op = opBNE
			}
			d = inst{op: op, rs1: rs1p, rs2: 0, imm: imm}
		}
	case 2:
		switch f3 {
		case 0: // c.slli
			sh := int64((w>>12)&1)<<5 | int64((w>>2)&31)
			if xlen == 32 && sh >= 32 {
				return ill
			}
			d = inst{op: opSLLI, rd: rd, rs1: rd, imm: sh}
		case 1: // c.fldsp
			if zc&zcNoZcd != 0 {
				return ill
			}
			d = inst{op: opFLD, rd: rd, rs1: 2, imm: int64((w>>7)&0x20 | (w>>2)&0x18 | (w<<4)&0x1c0)}
		case 2: // c.lwsp
			if rd == 0 {
				return ill
			}
			d = inst{op: opLW, rd: rd, rs1: 2, imm: int64((w>>7)&0x20 | (w>>2)&0x1c | (w<<4)&0xc0)}
		case 3:
			if xlen == 32 { // c.flwsp
				d = inst{op: opFLW, rd: rd, rs1: 2, imm: int64((w>>7)&0x20 | (w>>2)&0x1c | (w<<4)&0xc0)}
			} else { // c.ldsp
				if rd == 0 {
					return ill
				}
				d = inst{op: opLD, rd: rd, rs1: 2, imm: int64((w>>7)&0x20 | (w>>2)&0x18 | (w<<4)&0x1c0)}
			}
		case 4:
			if (w>>12)&1 == 0 {
				if rs2 == 0 { // c.jr
					if rd == 0 {
						return ill
					}
					d = inst{op: opJALR, rd: 0, rs1: rd, itype: jalrIType(0, rd)}
				} else { // c.mv
					d = inst{op: opADD, rd: rd, rs1: 0, rs2: rs2}
				}
			} else {
				switch {
				case rd == 0 && rs2 == 0: // c.ebreak
					d = inst{op: opEBREAK}
				case rs2 == 0: // c.jalr
					d = inst{op: opJALR, rd: 1, rs1: rd, itype: jalrIType(1, rd)}
				default: // c.add
					d = inst{op: opADD, rd: rd, rs1: rd, rs2: rs2}
				}
			}
		case 5:
			if zc&(zcZcmp|zcZcmt) != 0 {
				return decodeZcm(w, xlen, zc)
			}
			if zc&zcNoZcd != 0 {
				return ill
			}
			// c.fsdsp
			d = inst{op: opFSD, rs1: 2, rs2: rs2, imm: int64((w>>7)&0x38 | (w>>1)&0x1c0)}
		case 6: // c.swsp
			d = inst{op: opSW, rs1: 2, rs2: rs2, imm: int64((w>>7)&0x3c | (w>>1)&0xc0)}
		case 7:
			if xlen == 32 { // c.fswsp
				d = inst{op: opFSW, rs1: 2, rs2: rs2, imm: int64((w>>7)&0x3c | (w>>1)&0xc0)}
			} else { // c.sdsp
				d = inst{op: opSD, rs1: 2, rs2: rs2, imm: int64((w>>7)&0x38 | (w>>1)&0x1c0)}
			}
		}
	}
	return d
}

func cjImm(w uint32) int64 {
	v := (w>>1)&0x800 | (w>>7)&0x10 | (w>>1)&0x300 | (w<<2)&0x400 | (w>>1)&0x40 | (w<<1)&0x80 | (w>>2)&0xe | (w<<3)&0x20
	return sext(uint64(v), 12)
}
