package sim

import (
	"encoding/binary"
	"math/bits"
)

// illegal records an illegal-instruction exception for d (tval is the
// instruction bits, as Spike reports them).
func (h *Hart) illegal(d *inst) {
	h.excCause, h.excTval = causeIllegal, uint64(d.raw)
}

// execSlow executes the operations kept out of the interpreter loop:
// system instructions, CSRs, atomics and floating point. It returns the
// next pc, the itype of the instruction and false when an exception was
// recorded (h.excCause/h.excTval).
func (h *Hart) execSlow(d *inst, pc, npc uint64) (uint64, uint8, bool) {
	x := &h.x
	switch d.op {
	case opIllegal, opInvalid:
		h.illegal(d)
		return 0, 0, false
	case opCPOP:
		x[d.rd&31] = uint64(bits.OnesCount64(x[d.rs1&31]))
		return npc, 0, true
	case opCPOPW:
		x[d.rd&31] = uint64(bits.OnesCount32(uint32(x[d.rs1&31])))
		return npc, 0, true
	case opFENCEI:
		h.dropFetchWindow()
		return npc, 0, true
	case opECALL:
		if h.lnx != nil {
			h.linuxSyscall()
			return npc, 0, true
		}
		if h.fw != nil && h.priv == privS {
			h.sbiCall()
			return npc, 0, true
		}
		h.excCause, h.excTval = causeEcallU+uint64(h.priv), 0
		if h.priv == privM {
			h.excCause = causeEcallM
		}
		return 0, 0, false
	case opEBREAK:
		h.excCause, h.excTval = causeBreakpoint, pc
		return 0, 0, false
	case opMRET:
		if h.priv != privM {
			h.illegal(d)
			return 0, 0, false
		}
		h.stop = true
		return h.xret(true), 3, true
	case opSRET:
		if h.priv < privS || (h.priv == privS && h.csr.mstatus&mstatusTSR != 0) {
			h.illegal(d)
			return 0, 0, false
		}
		h.stop = true
		return h.xret(false), 3, true
	case opWFI:
		if h.priv == privU || (h.priv < privM && h.csr.mstatus&mstatusTW != 0) {
			h.illegal(d)
			return 0, 0, false
		}
		if h.pendingInterrupts()&h.csr.mie == 0 {
			h.waiting = true
		}
		h.stop = true
		return npc, 0, true
	case opSFENCEVMA:
		if h.priv == privU || (h.priv == privS && h.csr.mstatus&mstatusTVM != 0) {
			h.illegal(d)
			return 0, 0, false
		}
		h.flushTLB()
		return npc, 0, true
	case opCSRRW, opCSRRS, opCSRRC, opCSRRWI, opCSRRSI, opCSRRCI:
		return h.execCSR(d, npc)
	case opLRW, opLRD:
		size := uint64(4)
		if d.op == opLRD {
			size = 8
		}
		va := (x[d.rs1&31]) & h.amask
		b, pa, ok := h.amoTarget(va, size, true)
		if !ok {
			return 0, 0, false
		}
		var v uint64
		if size == 4 {
			v = uint64(int64(int32(binary.LittleEndian.Uint32(b))))
		} else {
			v = binary.LittleEndian.Uint64(b)
		}
		h.resValid, h.resAddr = true, pa
		if h.obs != nil {
			h.noteMem(false, va, size, v)
		}
		x[d.rd&31] = v
		return npc, 0, true
	case opSCW, opSCD:
		size := uint64(4)
		if d.op == opSCD {
			size = 8
		}
		va := (x[d.rs1&31]) & h.amask
		b, pa, ok := h.amoTarget(va, size, false)
		if !ok {
			return 0, 0, false
		}
		if h.resValid && h.resAddr == pa {
			v := x[d.rs2&31]
			if size == 4 {
				binary.LittleEndian.PutUint32(b, uint32(v))
			} else {
				binary.LittleEndian.PutUint64(b, v)
			}
			h.amoStored(va, pa, size)
			if h.obs != nil {
				h.noteMem(true, va, size, v)
			}
			x[d.rd&31] = 0
		} else {
			x[d.rd&31] = 1
		}
		h.resValid = false
		return npc, 0, true
	case opAMOW, opAMOD:
		return h.execAMO(d, npc)
	case opFLW, opFLD, opFSW, opFSD, opFP:
		if h.fsOff {
			h.illegal(d)
			return 0, 0, false
		}
		if !h.execFP(d) {
			return 0, 0, false
		}
		return npc, 0, true
	}
	if d.op >= opCLMUL {
		return h.execExt(d, npc) // ext.go
	}
	h.illegal(d)
	return 0, 0, false
}

func (h *Hart) execCSR(d *inst, npc uint64) (uint64, uint8, bool) {
	n := uint32(d.imm) & 0xfff
	var src uint64
	switch d.op {
	case opCSRRWI, opCSRRSI, opCSRRCI:
		src = uint64(d.rs1)
	default:
		src = h.x[d.rs1&31] & h.amask
	}
	write := true
	switch d.op {
	case opCSRRS, opCSRRC, opCSRRSI, opCSRRCI:
		write = d.rs1 != 0 // csrrs/csrrc with x0 (or uimm 0) only read
	}
	if !h.csrAllowed(n, write) {
		h.illegal(d)
		return 0, 0, false
	}
	old, ok := h.csrRead(n)
	if !ok {
		h.illegal(d)
		return 0, 0, false
	}
	if h.obs != nil {
		// the data trace port's CSR access: the value read (a trap
		// below drops it)
		h.obs.csrAcc = csrRec{have: true, n: n, op: src, old: old & h.amask}
	}
	if write {
		v := src
		switch d.op {
		case opCSRRS, opCSRRSI:
			v = old | src
		case opCSRRC, opCSRRCI:
			v = old &^ src
		}
		h.curCost = d.cost
		if !h.csrWrite(n, v) {
			h.illegal(d)
			return 0, 0, false
		}
		if h.obs != nil {
			h.noteCSR(n)
		}
		// a write may enable an interrupt or change translation: leave
		// the loop so that the step re-checks (Spike serializes CSR writes)
		h.stop = true
		if n == csrScontext || n == csrSatp && h.tr.ctxPending {
			h.x[d.rd&31] = h.sext32(old)
			return npc, itEnd, true
		}
	}
	h.x[d.rd&31] = h.sext32(old)
	return npc, 0, true
}

func (h *Hart) execAMO(d *inst, npc uint64) (uint64, uint8, bool) {
	size := uint64(4)
	if d.op == opAMOD {
		size = 8
	}
	va := h.x[d.rs1&31] & h.amask
	b, pa, ok := h.amoTarget(va, size, false)
	if !ok {
		return 0, 0, false
	}
	src := h.x[d.rs2&31]
	var old uint64
	if size == 4 {
		old = uint64(int64(int32(binary.LittleEndian.Uint32(b))))
		src = uint64(int64(int32(src)))
	} else {
		old = binary.LittleEndian.Uint64(b)
	}
	var v uint64
	switch d.rm {
	case 0x01: // amoswap
		v = src
	case 0x00: // amoadd
		v = old + src
	case 0x04: // amoxor
		v = old ^ src
	case 0x0c: // amoand
		v = old & src
	case 0x08: // amoor
		v = old | src
	case 0x10: // amomin
		v = old
		if int64(src) < int64(old) {
			v = src
		}
	case 0x14: // amomax
		v = old
		if int64(src) > int64(old) {
			v = src
		}
	case 0x18: // amominu
		v = old
		if src < old {
			v = src
		}
	case 0x1c: // amomaxu
		v = old
		if src > old {
			v = src
		}
	}
	if size == 4 {
		binary.LittleEndian.PutUint32(b, uint32(v))
	} else {
		binary.LittleEndian.PutUint64(b, v)
	}
	h.amoStored(va, pa, size)
	if h.obs != nil {
		h.noteMem(false, va, size, old)
		h.noteMem(true, va, size, v)
	}
	h.x[d.rd&31] = old
	return npc, 0, true
}
