package sim

import (
	"math/bits"

	"github.com/rvtrace/rvtrace/pmu"
)

// This file executes the extensions that current Linux kernels and
// toolchains use beyond RV64GC with Zba/Zbb/Zbs: Zbc (carry-less
// multiplication), Zbkb (pack, packh, packw, brev8, zip, unzip; its
// rotates, rev8, andn, orn and xnor are Zbb's and run in the main loop),
// Zbkx (crossbar permutations), Zicond (conditional zero) and Zicbom/Zicboz
// (cache-block operations), and Svinval's fences. Half precision
// (Zfh/Zfhmin) is in zfh.go.
//
// Instructions that need no operation of their own are decoded to
// existing ones (decode.go): the Zicbop prefetches are ori with rd = x0,
// pause (Zihintpause) is a fence, mop.r.N and mop.rr.N (Zimop) write 0 to
// rd (addi rd,x0,0) and c.mop.N (Zcmop) is a no-op (addi x0,x0,0).

// isaExt lists the extensions of this file and zfh.go in the device
// tree's riscv,isa string (after rv64imafdc_zicsr_zifencei_zba_zbb_zbs).
const isaExt = "_zbc_zbkb_zbkx_zfh_zfhmin_zicbom_zicboz_zicbop_zicond_zihintpause_zimop_zcmop"

// isaSupervisor lists the supervisor-level extensions of the MMU
// (access.go) in the device tree's ISA string, after the others: Svinval
// and, with Sv39 (RV64), Svpbmt.
func isaSupervisor(xlen int) string {
	if xlen == 32 {
		return "_svinval"
	}
	return "_svinval_svpbmt"
}

// cboBlock is the cache-block size of Zicbom and Zicboz in bytes (the
// device tree's riscv,cbom-block-size and riscv,cboz-block-size).
const cboBlock = 64

// menvcfg/senvcfg fields of Zicbom and Zicboz (privileged spec, "Machine
// Environment Configuration Register").
const (
	envcfgCBIE  = 3 << 4 // cbo.inval: 00 illegal, 01 as flush, 11 invalidate (10 reserved)
	envcfgCBCFE = 1 << 6 // cbo.clean and cbo.flush enabled
	envcfgCBZE  = 1 << 7 // cbo.zero enabled
	// envcfgMask is what menvcfg and senvcfg hold: FIOM and the three.
	envcfgMask = 1 | envcfgCBIE | envcfgCBCFE | envcfgCBZE
)

// envcfgWrite returns the WARL value of a write of v to menvcfg or
// senvcfg whose old value is old: the reserved CBIE value 10 keeps the
// old field.
func envcfgWrite(old, v uint64) uint64 {
	v &= envcfgMask
	if v&envcfgCBIE == 2<<4 {
		v = v&^envcfgCBIE | old&envcfgCBIE
	}
	return v
}

func init() {
	kindOfOp[opFLH] = pmu.KindLoad
	kindOfOp[opFSH] = pmu.KindStore
	kindOfOp[opFPH] = pmu.KindFP
	kindOfOp[opCBOZERO] = pmu.KindStore
	kindOfOp[opSFENCEINVAL] = pmu.KindFence
	for _, op := range []uint8{opCLMUL, opCLMULH, opCLMULR} {
		kindOfOp[op] = pmu.KindMulDiv
	}
}

// execExt executes the operations from opCLMUL on (execSlow calls it). It
// returns the next pc, the itype (always 0) and false when an exception
// was recorded.
func (h *Hart) execExt(d *inst, npc uint64) (uint64, uint8, bool) {
	if d.op >= opCMPUSH {
		return h.execZcm(d, npc) // zcmp.go
	}
	x := &h.x
	a, b := x[d.rs1&31], x[d.rs2&31]
	rv32 := h.xlen == 32
	var r uint64
	switch d.op {
	case opCLMUL:
		_, r = clmul(a, b)
		r = h.sext32(r)
	case opCLMULH:
		if rv32 {
			_, p := clmul(uint64(uint32(a)), uint64(uint32(b)))
			r = uint64(int64(int32(p >> 32)))
		} else {
			r, _ = clmul(a, b)
		}
	case opCLMULR:
		if rv32 {
			_, p := clmul(uint64(uint32(a)), uint64(uint32(b)))
			r = uint64(int64(int32(p >> 31)))
		} else {
			hi, lo := clmul(a, b)
			r = hi<<1 | lo>>63
		}
	case opPACK:
		if rv32 {
			r = uint64(int64(int32(uint32(uint16(a)) | uint32(b)<<16)))
		} else {
			r = uint64(uint32(a)) | b<<32
		}
	case opPACKH:
		r = uint64(uint8(a)) | uint64(uint8(b))<<8
	case opPACKW:
		r = uint64(int64(int32(uint32(uint16(a)) | uint32(b)<<16)))
	case opBREV8:
		r = h.sext32(brev8(a))
	case opZIP:
		r = uint64(int64(int32(zip32(uint32(a)))))
	case opUNZIP:
		r = uint64(int64(int32(unzip32(uint32(a)))))
	case opXPERM4:
		if rv32 {
			r = uint64(int64(int32(xperm(uint64(uint32(a)), uint64(uint32(b)), 4, 32))))
		} else {
			r = xperm(a, b, 4, 64)
		}
	case opXPERM8:
		if rv32 {
			r = uint64(int64(int32(xperm(uint64(uint32(a)), uint64(uint32(b)), 8, 32))))
		} else {
			r = xperm(a, b, 8, 64)
		}
	case opCZEROEQZ:
		if b != 0 {
			r = a
		}
	case opCZERONEZ:
		if b == 0 {
			r = a
		}
	case opCBOCLEAN, opCBOFLUSH, opCBOINVAL, opCBOZERO:
		if !h.execCBO(d) {
			return 0, 0, false
		}
		return npc, 0, true
	case opSFENCEINVAL:
		// Svinval: only ordering, which the simulator always has;
		// "Attempting to execute SFENCE.W.INVAL or SFENCE.INVAL.IR in
		// U-mode raises an illegal-instruction exception" (mstatus.TVM
		// does not apply).
		if h.priv == privU {
			h.illegal(d)
			return 0, 0, false
		}
		return npc, 0, true
	case opFLH, opFSH, opFPH:
		if h.fsOff || !h.execFPH(d) {
			if h.fsOff {
				h.illegal(d)
			}
			return 0, 0, false
		}
		return npc, 0, true
	default:
		h.illegal(d)
		return 0, 0, false
	}
	x[d.rd&31] = r
	return npc, 0, true
}

// clmul returns the 128-bit carry-less product of a and b.
func clmul(a, b uint64) (hi, lo uint64) {
	for i := uint(0); i < 64; i++ {
		if b>>i&1 != 0 {
			lo ^= a << i
			if i > 0 {
				hi ^= a >> (64 - i)
			}
		}
	}
	return hi, lo
}

// brev8 reverses the bits of every byte of v.
func brev8(v uint64) uint64 {
	return bits.ReverseBytes64(bits.Reverse64(v))
}

// zip32 interleaves the halves of v: bit i goes to bit 2i and bit i+16 to
// bit 2i+1 (Zbkb zip, RV32).
func zip32(v uint32) uint32 {
	var r uint32
	for i := uint(0); i < 16; i++ {
		r |= (v>>i&1)<<(2*i) | (v>>(i+16)&1)<<(2*i+1)
	}
	return r
}

// unzip32 is the inverse of zip32: even bits to the low half, odd bits to
// the high half.
func unzip32(v uint32) uint32 {
	var r uint32
	for i := uint(0); i < 16; i++ {
		r |= (v>>(2*i)&1)<<i | (v>>(2*i+1)&1)<<(i+16)
	}
	return r
}

// xperm is Zbkx's crossbar permutation on xlen-bit values with elements
// of w bits (4: xperm4, 8: xperm8): element i of the result is element
// b[i] of a, or 0 when that index is out of range.
func xperm(a, b uint64, w, xlen uint) uint64 {
	mask := uint64(1)<<w - 1
	var r uint64
	for i := uint(0); i < xlen; i += w {
		idx := b >> i & mask
		if idx*uint64(w) < uint64(xlen) {
			r |= (a >> (idx * uint64(w)) & mask) << i
		}
	}
	return r
}

// execCBO executes cbo.clean, cbo.flush, cbo.inval and cbo.zero. Memory is
// coherent in the model, so the first three only check that they are
// enabled (menvcfg/senvcfg CBCFE, CBIE) and that a load or a store may
// access the block; cbo.zero (enabled by CBZE) zeroes the 64-byte block
// like a store. Faults are store faults with the block's address as tval,
// as in Spike and QEMU.
func (h *Hart) execCBO(d *inst) bool {
	var field uint64
	switch d.op {
	case opCBOCLEAN, opCBOFLUSH:
		field = envcfgCBCFE
	case opCBOINVAL:
		field = envcfgCBIE
	default:
		field = envcfgCBZE
	}
	if h.priv < privM && h.csr.menvcfg&field == 0 || h.priv == privU && h.csr.senvcfg&field == 0 {
		h.illegal(d)
		return false
	}
	va := h.x[d.rs1&31] & h.amask &^ (cboBlock - 1)
	if d.op == opCBOZERO {
		pa, ok := h.storeTarget(va, cboBlock)
		if !ok {
			return false
		}
		if r := h.m.mem.find(pa); r != nil && h.obs == nil && r.flags[(pa-r.base)>>pageShift]&pfWatch == 0 {
			// RAM (a block never crosses a page, nor a bank): one clear;
			// the decoded instructions it overwrites are dropped
			clear(r.mem[pa-r.base : pa-r.base+cboBlock])
			if r.flags[(pa-r.base)>>pageShift]&pfCode != 0 {
				if h.m.mem.invalidateCode(pa, cboBlock) {
					h.m.codeWritten(h, va)
				}
				if h.m.codeHook != nil {
					h.m.codeHook(pa)
				}
			}
			return true
		}
		for i := uint64(0); i < cboBlock; i += 8 {
			if !h.storeSlow(va+i, 8, 0) {
				return false
			}
		}
		return true
	}
	if pa, ok := h.translate(va, accLoad); ok && h.pmpOK(pa, cboBlock, accLoad) {
		return true
	}
	pa, ok := h.translate(va, accStore)
	if !ok {
		return false // store page fault
	}
	if !h.pmpOK(pa, cboBlock, accStore) {
		h.excCause, h.excTval = causeStoreAccess, va
		return false
	}
	return true
}

// extClassOf is the timing class of the operations of this file and
// zfh.go (classOf's default).
func extClassOf(d *inst) uint8 {
	if d.op >= opCMPUSH {
		return zcmClassOf(d) // zcmp.go
	}
	switch d.op {
	case opCLMUL, opCLMULH, opCLMULR:
		return clMul
	case opFLH:
		return clLoad
	case opFSH, opCBOZERO:
		return clStore
	case opFPH:
		if d.fop == fpDIV || d.fop == fpSQRT {
			return clFPDiv
		}
		return clFP
	case opCBOCLEAN, opCBOFLUSH, opCBOINVAL, opSFENCEINVAL:
		return clSystem
	}
	return clALU
}

// extWritesX reports whether an operation of this file or zfh.go writes
// integer register rd (for writesX).
func extWritesX(d *inst) bool {
	switch d.op {
	case opFLH, opFSH, opCBOCLEAN, opCBOFLUSH, opCBOINVAL, opCBOZERO, opSFENCEINVAL:
		return false
	case opFPH:
		return fphToX(d.fop)
	}
	return true
}

// extWritesF reports whether d is a half-precision operation that writes
// floating-point register rd.
func extWritesF(d *inst) bool {
	return d.op == opFLH || d.op == opFPH && !fphToX(d.fop)
}
