package sim

import (
	"fmt"

	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/pmu"
)

// Observer watches a hart's run instruction by instruction, with every
// effect of each instruction (the Tarmac writer, tarmac.Writer, is one).
// For each retired instruction the hart calls Inst, then IntReg, FPReg
// and CSR for the registers it wrote and Mem for its data accesses, in
// that order; Trap reports an exception or interrupt taken before the
// next Inst. An error stops the run (Result reports it).
type Observer interface {
	// Inst reports an instruction retired by hart at time (the hart's
	// cycle count), at pc with encoding raw (16-bit encodings in the low
	// half), in privilege priv.
	Inst(hart int, time uint64, pc uint64, raw uint32, priv ingress.Priv) error
	// IntReg reports integer register xn (1..31) written by the last
	// instruction, with its new value.
	IntReg(hart int, n int, value uint64) error
	// FPReg reports floating-point register fn written by the last
	// instruction, with its new value (the raw 64 bits, NaN-boxed for
	// single precision).
	FPReg(hart int, n int, value uint64) error
	// CSR reports CSR number n (0..0xfff) written by the last
	// instruction, with its value after the instruction.
	CSR(hart int, n uint16, value uint64) error
	// Mem reports a data access of the last instruction: size bytes at
	// addr (a load unless write), with the value read or written.
	Mem(hart int, write bool, addr uint64, size int, value uint64) error
	// Trap reports an exception or interrupt taken at time from
	// privilege priv (that of the instruction that trapped, or that
	// would have executed next): cause is the mcause/scause code without
	// the interrupt bit, epc the address of the instruction that trapped
	// (exceptions) or would have executed next (interrupts), tval the
	// trap value.
	Trap(hart int, time uint64, priv ingress.Priv, interrupt bool, cause, epc, tval uint64) error
}

// observer holds what watches a hart instruction by instruction: an
// Observer (full records: instructions, register writes, memory
// accesses, traps) and the micro-architecture event model. A hart with
// an observer reports every retirement (the per-instruction path of the
// interpreter loop); without one the loop pays nothing.
type observer struct {
	tr    Observer
	model *pmu.Model
	prof  func(pc uint64, m *pmu.Model, cost uint64)

	priv uint8 // privilege the next instruction executes in (Tarmac mode)
	// privAfter: the instruction retiring (mret, sret) changed the
	// privilege; priv and the event model's privilege are still the
	// one it executed in, and switch to the hart's after it (retireHook)
	privAfter bool
	quiet     int // >0: inside a misaligned access split into bytes
	mems      []memRec
	csrs      []uint32
	csrAcc    csrRec // the CSR access of the instruction retiring (DataPort)
	fflag     uint64
	err       error
}

// csrRec is the CSR access of a Zicsr instruction, for the data trace
// port: the CSR number, the operand (rs1's value or the uimm) and the
// value read (the CSR's value before the instruction, what rd receives).
type csrRec struct {
	have    bool
	n       uint32
	op, old uint64
}

type memRec struct {
	write     bool
	addr, val uint64
	size      int
}

// SetObserver makes hart report its run to t (a tarmac.Writer writes it
// as full Tarmac): every retired instruction (Inst), every integer, FP
// and CSR register it writes (IntReg, FPReg, CSR, after the Inst), every
// data memory access with its value (Mem) and every trap (Trap). Loads
// and stores then all take the simulator's slow path. nil removes the
// observer; without one the interpreter loop pays nothing for it.
func (m *Machine) SetObserver(hart int, t Observer) error {
	h := m.Hart(hart)
	if h == nil {
		return fmt.Errorf("sim: no hart %d (load a program first)", hart)
	}
	o := h.observer()
	o.tr = t
	o.priv = h.priv
	o.fflag = h.csr.fflags
	h.noFastMem = t != nil
	h.flushTLB()
	h.dropObserverIfIdle()
	return nil
}

// SetEventModel attaches the micro-architecture event model to hart (nil
// detaches it). The model sees every retired instruction, produces the
// hardware events the mhpmcounters and the PMU count, and adds its stall
// cycles to the hart's cycle count.
func (m *Machine) SetEventModel(hart int, model *pmu.Model) error {
	h := m.Hart(hart)
	if h == nil {
		return fmt.Errorf("sim: no hart %d (load a program first)", hart)
	}
	o := h.observer()
	o.model = model
	if model != nil {
		model.SetPriv(int(h.priv))
		model.Track = o.prof != nil
	}
	h.dropObserverIfIdle()
	return nil
}

// EventModel returns hart's event model (nil when none).
func (m *Machine) EventModel(hart int) *pmu.Model {
	h := m.Hart(hart)
	if h == nil || h.obs == nil {
		return nil
	}
	return h.obs.model
}

// SetProfileHook calls f after every instruction hart retires with the
// event model attached: pc, the model (whose Last field describes what
// the instruction did) and the cycles the instruction cost (its class
// cost, the taken-jump penalty and the model's stalls). nil removes it.
func (m *Machine) SetProfileHook(hart int, f func(pc uint64, model *pmu.Model, cycles uint64)) error {
	h := m.Hart(hart)
	if h == nil {
		return fmt.Errorf("sim: no hart %d (load a program first)", hart)
	}
	o := h.observer()
	o.prof = f
	if o.model != nil {
		o.model.Track = f != nil
	}
	h.dropObserverIfIdle()
	return nil
}

func (h *Hart) observer() *observer {
	if h.obs == nil {
		h.obs = &observer{priv: h.priv}
	}
	return h.obs
}

func (h *Hart) dropObserverIfIdle() {
	if o := h.obs; o != nil && o.tr == nil && o.model == nil && o.prof == nil {
		h.obs = nil
	}
	h.updateTraceFlags()
}

// updateFast enables the event model's fast paths (the interpreter loop
// drives the model itself, see retireHook) when nothing else watches
// every retirement, translation is off and no counter may overflow. It
// is called whenever one of these changes (satp writes, rearm, and after
// every instruction retireHook sees).
func (h *Hart) updateFast() {
	h.fast = nil
	if o := h.obs; o != nil && o.tr == nil && o.prof == nil && o.model != nil && !h.trOne &&
		!h.hpm.armed && h.csr.satp == 0 {
		h.fast = o.model
	}
}

// mkSystem marks the instructions that always take retireHook when the
// event model is on (inst.mk): those that may change what the model's
// fast paths depend on (privilege, satp, the counters' configuration)
// or flush the model's TLBs.
const mkSystem = 0x80

// mkSystem must be above every pmu.FastKind (compile-time check).
const _ = uint(mkSystem - pmu.FastKindMax)

// modelKind returns the event-model kind of a decoded instruction.
func modelKind(d *inst) uint8 {
	k := kindOfOp[d.op]
	if isJumpOp(d.op) {
		k = kindOfIType[d.itype&15]
	}
	mk := pmu.FastKind(k, d.size)
	if d.op >= opFENCEI && !(d.op >= opLRW && d.op <= opFSD) {
		mk |= mkSystem
	}
	return mk
}

// kindOfOp classifies operations for the event model (jumps are refined
// by their itype).
var kindOfOp = func() (k [256]pmu.Kind) {
	for _, op := range []uint8{opLB, opLH, opLW, opLD, opLBU, opLHU, opLWU, opFLW, opFLD} {
		k[op] = pmu.KindLoad
	}
	for _, op := range []uint8{opSB, opSH, opSW, opSD, opFSW, opFSD} {
		k[op] = pmu.KindStore
	}
	k[opLRW], k[opLRD] = pmu.KindLR, pmu.KindLR
	k[opSCW], k[opSCD] = pmu.KindSC, pmu.KindSC
	k[opAMOW], k[opAMOD] = pmu.KindAMO, pmu.KindAMO
	for _, op := range []uint8{opBEQ, opBNE, opBLT, opBGE, opBLTU, opBGEU} {
		k[op] = pmu.KindBranch
	}
	for _, op := range []uint8{opMUL, opMULH, opMULHSU, opMULHU, opDIV, opDIVU, opREM, opREMU,
		opMULW, opDIVW, opDIVUW, opREMW, opREMUW, opMULH32, opMULHSU32, opMULHU32} {
		k[op] = pmu.KindMulDiv
	}
	k[opFP] = pmu.KindFP
	for _, op := range []uint8{opCSRRW, opCSRRS, opCSRRC, opCSRRWI, opCSRRSI, opCSRRCI} {
		k[op] = pmu.KindCSR
	}
	k[opFENCE], k[opFENCEI], k[opSFENCEVMA] = pmu.KindFence, pmu.KindFence, pmu.KindFence
	// refined by kindOfIType
	k[opJAL], k[opJALR], k[opJAL32], k[opJALR32] = pmu.KindJump, pmu.KindJump, pmu.KindJump, pmu.KindJump
	return
}()

// kindOfIType classifies jumps by their N-Trace itype.
var kindOfIType = [16]pmu.Kind{
	8: pmu.KindCallIndirect, 9: pmu.KindCall, 10: pmu.KindIndirect, 11: pmu.KindJump,
	12: pmu.KindReturn, 13: pmu.KindReturn, 14: pmu.KindIndirect, 15: pmu.KindJump,
}

func isJumpOp(op uint8) bool {
	return op == opJAL || op == opJALR || op == opJAL32 || op == opJALR32
}

// xlatFlags tells the model which accesses of the instruction retiring
// went through the TLBs: those of the privilege it executed in (an mret
// or sret, o.privAfter, was fetched in o.priv and accesses no data).
func (h *Hart) xlatFlags(o *observer) uint8 {
	if h.csr.satp == 0 || h.satpMode() == 0 {
		return 0
	}
	if o.privAfter {
		if o.priv != privM {
			return pmu.XlatFetch
		}
		return 0
	}
	var f uint8
	if h.priv != privM {
		f = pmu.XlatFetch
	}
	if h.effPriv(accLoad) != privM {
		f |= pmu.XlatData
	}
	return f
}

// retireHook is the per-instruction path of the interpreter loop: the PC
// hook, the per-instruction ingress port and the observer. a is the
// value rs1 had before the instruction executed.
//
// While h.fast is set (updateFast) the interpreter loop drives the event
// model itself: pmu.Fast.Retire inline for the plain instructions, loads
// and stores that hit the most recently used lines of their sets,
// pmu.Model.Step for the others, but the mkSystem instructions, which
// come here.
func (h *Hart) retireHook(pc uint64, d *inst, npc uint64, it uint8, a uint64) {
	if h.trOne {
		h.tr.retireOne(pc, d, npc, it)
	}
	o := h.obs
	if o == nil {
		return
	}
	if o.model != nil {
		k := kindOfOp[d.op]
		if isJumpOp(d.op) {
			k = kindOfIType[d.itype&15]
		}
		ea := (a + uint64(d.imm)) & h.amask
		var stall uint64
		if d.op >= opCMPUSH && d.op <= opCMPOPRET {
			stall = h.zcmModel(o.model, pc, d, npc, k, h.xlatFlags(o))
		} else {
			stall = o.model.Retire(pc, d.size, k, ea, npc, h.xlatFlags(o))
		}
		h.cycle += stall
		if d.op == opSFENCEVMA {
			o.model.FlushTLBs()
		}
		if o.prof != nil {
			cost := uint64(d.cost) + stall
			if it != 0 && it != 4 && it < itEnd {
				cost += h.takenPenalty
			}
			o.prof(pc, o.model, cost)
		}
		if h.hpm.armed {
			h.hpmCheck()
		}
		h.updateFast()
	}
	if o.tr != nil {
		h.traceRetire(o, pc, d)
	}
	if o.privAfter {
		o.privAfter, o.priv = false, h.priv
		if o.model != nil {
			o.model.SetPriv(int(h.priv))
		}
	}
}

// writesX reports whether d writes integer register rd.
func writesX(d *inst) bool {
	if d.op >= opCLMUL {
		return extWritesX(d) // ext.go
	}
	switch d.op {
	case opBEQ, opBNE, opBLT, opBGE, opBLTU, opBGEU, opSB, opSH, opSW, opSD, opFSW, opFSD,
		opFLW, opFLD, opFENCE, opFENCEI, opECALL, opEBREAK, opMRET, opSRET, opWFI, opSFENCEVMA:
		return false
	case opFP:
		switch d.fop {
		case fpCVTWf, fpCVTWUf, fpCVTLf, fpCVTLUf, fpMVXf, fpEQ, fpLT, fpLE, fpCLASS:
			return true
		}
		return false
	}
	return true
}

// traceRetire reports a retired instruction and its effects to the
// observer.
func (h *Hart) traceRetire(o *observer, pc uint64, d *inst) {
	if o.err != nil {
		return
	}
	t := o.tr
	err := t.Inst(h.id, h.cycle, pc, d.raw, ingress.Priv(o.priv))
	o.priv = h.priv
	if err == nil {
		rd := d.rd & 31
		switch {
		case d.op >= opCMPUSH:
			err = h.traceZcm(t, d) // zcmp.go: several registers
		case writesX(d):
			if rd != 0 {
				err = t.IntReg(h.id, int(rd), h.Reg(int(rd)))
			}
		case d.op == opFLW || d.op == opFLD || d.op == opFP || extWritesF(d):
			err = t.FPReg(h.id, int(rd), h.f[rd])
		}
	}
	if err == nil && (d.op == opFP || d.op == opFPH) && h.csr.fflags != o.fflag {
		err = t.CSR(h.id, csrFflags, h.csr.fflags)
	}
	o.fflag = h.csr.fflags
	for _, n := range o.csrs {
		if err != nil {
			break
		}
		if v, ok := h.csrRead(n); ok {
			err = t.CSR(h.id, uint16(n), v)
		}
	}
	for _, r := range o.mems {
		if err != nil {
			break
		}
		err = t.Mem(h.id, r.write, r.addr, r.size, r.val)
	}
	o.csrs, o.mems, o.csrAcc.have = o.csrs[:0], o.mems[:0], false
	if err != nil {
		o.err = err
		h.fail(err)
	}
}

// traceTrap reports a trap to the observer (before the hart enters the
// handler).
func (h *Hart) traceTrap(pc, cause, tval uint64, intr bool) {
	o := h.obs
	if o.model != nil {
		o.model.Trap(intr)
	}
	o.csrs, o.mems, o.csrAcc.have = o.csrs[:0], o.mems[:0], false
	if o.tr == nil || o.err != nil {
		return
	}
	if err := o.tr.Trap(h.id, h.cycle, ingress.Priv(h.priv), intr, cause, pc, tval); err != nil {
		o.err = err
		h.fail(err)
	}
}

// noteMem records a data access for the observer.
func (h *Hart) noteMem(write bool, va, size, v uint64) {
	if o := h.obs; o != nil && o.tr != nil && o.quiet == 0 {
		if size < 8 {
			v &= 1<<(8*size) - 1
		}
		o.mems = append(o.mems, memRec{write: write, addr: va, val: v, size: int(size)})
	}
}

// noteCSR records an explicit CSR write for the observer.
func (h *Hart) noteCSR(n uint32) {
	if o := h.obs; o != nil && o.tr != nil {
		o.csrs = append(o.csrs, n)
	}
}
