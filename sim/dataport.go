package sim

import (
	"fmt"

	"github.com/rvtrace/rvtrace/ingress"
)

// DataPort drives a hart's data trace interface (E-Trace 2.0 "Data Trace
// Interface", unified protocol, or split: see SetSplit) from the accesses the hart reports to its
// Observer: for each retired load, store, atomic memory operation and
// LR/SC it sends one ingress.Access to a DataSink, with the address of the
// instruction, before the ingress block that retires the instruction (the
// hart reports an instruction's accesses to its observer before the block
// that holds it ends). It is a sim.Observer; Next, if set, sees every call
// too (a Tarmac writer, say), so one run can write both.
//
//   - A load (and lr.w/lr.d) is dtype 0, a store (and a successful
//     sc.w/sc.d) dtype 1, with the value read or written.
//   - An AMO is one access of dtype 8..14 (amomaxu and amominu are
//     reported as max and min, the table has no unsigned codes) with the
//     value loaded (Data) and the value stored (SData).
//   - A store-conditional that fails is dtype 15, with its address and no
//     data. The address is rs1, read from the hart after the instruction;
//     when the instruction's rd is rs1 (overwritten with the failure code)
//     the address of the hart's last lr is used instead and Inexact is
//     counted. An sc with rd x0 whose failure is only known when the next
//     instruction comes reports it then; Late counts those.
//   - A misaligned access that the hart splits into bytes is one access
//     (the hart reports it whole).
//   - A Zcmp push or pop (cm.push, cm.pop, cm.popret, cm.popretz) is
//     one access per register of its list, all with the instruction's
//     address, in the specification's order (from s11 down to ra, from
//     the highest address down); none of an attempt that trapped. A
//     cbo.zero is eight doubleword stores, from the lowest address up.
//   - With TraceCSR set, each retired csrrw, csrrs, csrrc, csrrwi, csrrsi and
//     csrrci is one access of dtype 4, 5 or 6 (CSR read-write, read-set,
//     read-clear) to the CSR number, of the hart's XLEN, with the value
//     read (SData: the CSR's value before the instruction, what rd
//     receives, as the hart's Tarmac R record of rd has it) and the
//     operand (Data: rs1's value before the instruction, or the uimm).
//     Those with rd x0 or rs1 x0 are accesses too: the specification
//     exempts none. The hart reads the CSR for every one of them, rd x0
//     included (its CSR reads have no side effects, so Zicsr's "shall not
//     read" is not observable), so the value read is always the CSR's
//     value before the instruction (etrace/datacsr.go).
//
// Multi-access instructions are retired on the instruction trace
// interface once per access, as E-Trace's "Data Trace Interface
// requirements" section requires: an instruction that makes more than
// one access (a push or pop of two registers or more, a cbo.zero, "any
// other future instructions with similar characteristics") is reported
// by Ingress's sink as that many retirements with the same address, each
// after its access: the first ends a block (of the instructions before
// it and itself) with itype 0, the next ones but the last are single
// retirements with itype 0, and the last begins the rest of the hart's
// block, which ends with the block's own itype (a pop-return's last
// retirement is a single one of itype 13, the return). The hart itself
// reports the instruction once (its ingress port without data trace, the
// PC list, the observer's Tarmac records): the specification's note
// allows that when data trace is not implemented, and only the port's
// data trace interface needs the accesses lined up. A push or pop that
// traps part way has no retirement at all (the hart reports none of the
// accesses of the attempt that trapped; its restart makes them all).
// IngressSplit gives the hart's own blocks to the sinks that want one
// retirement per instruction execution (flow outputs, an N-Trace
// encoder) alongside. An E-Trace encoder given the repeated retirements
// folds them back (ingress.Folder).
//
// With SetSplit the port drives the split protocol instead: a load (lr
// included) or an AMO is a request (Split set, with an lrid, no load
// data) and, some instructions later, a LoadResponse with the data. The
// delay of each response is a fixed pseudo-random function of the
// request's number (0 to 7 instructions), so responses come out of order;
// when every lrid is in flight the response due first is sent before the
// new request. Stores and failed store-conditionals stay unified. A
// response's Time is the time of the instruction it comes with (those
// Flush sends: one more than the last).
type DataPort struct {
	// Next, if not nil, also receives every observer call.
	Next Observer
	// Inexact counts failed store-conditionals whose address could not be
	// read back (rd = rs1) and was taken from the last lr.
	Inexact uint64
	// Late counts failed store-conditionals with rd x0, reported after
	// the next instruction retired.
	Late uint64
	// Accesses counts the accesses sent.
	Accesses uint64
	// TraceCSR makes the port report CSR accesses (CSR data trace).
	TraceCSR bool

	m    *Machine
	sink ingress.DataSink
	a    ingress.Access

	pc      uint64
	kind    uint8 // of the instruction at pc: dpPlain, dpAMO, dpLR, dpSC
	amoType ingress.DType
	size    uint8
	amoLoad uint64
	amoHave bool
	scPend  bool // an sc with rd x0: failed unless a store comes
	scAddr  uint64
	lrAddr  uint64

	// split protocol
	split ingress.SplitDataSink
	pend  []pendLoad // by lrid
	npend int
	ninst uint64 // instructions seen
	nreq  uint64 // requests sent
	resp  ingress.LoadResponse
	now   uint64 // the time of the instruction last seen (responses' Time)

	// a block ending in a return, held until the accesses of its last
	// instruction (a Zcmp pop-return's loads) were sent: see Ingress
	held    ingress.Block
	heldTo  *portIngress
	holding bool

	// multi-access instructions: the current instruction's size and
	// accesses sent, and from the second access of the first one in the
	// open block on, the accesses and responses held for the block
	isize uint8
	nsend int
	recs  []multiRec
	evs   []portEv
}

// multiRec is an instruction of the open block that made more than one
// access: it retires once per access.
type multiRec struct {
	pc   uint64
	size uint8 // bytes
}

// portEv is an access or (resp) a split load response held until the
// block of its instruction comes: the retirements of the multi-access
// instructions are placed among them. seg is 1 + the index in recs of the
// instruction whose next retirement the access comes with (0: none; first:
// its second access, the first retirement ends before it).
type portEv struct {
	a     ingress.Access
	r     ingress.LoadResponse
	seg   int32
	first bool
	resp  bool
}

// maxPortEvs bounds the accesses held for a block.
const maxPortEvs = 1 << 16

// pendLoad is a split request waiting for its response.
type pendLoad struct {
	busy bool
	due  uint64 // instruction count at which the response comes
	n    uint64 // request number (ties)
	data uint64
}

// SetSplit switches the port to the split protocol with lrid_width_p
// bits of lrid (1..16). The sink must be an ingress.SplitDataSink.
func (p *DataPort) SetSplit(lridWidth int) error {
	s, ok := p.sink.(ingress.SplitDataSink)
	if !ok {
		return fmt.Errorf("sim: data port: the split protocol needs a sink that takes load responses")
	}
	if lridWidth < 1 || lridWidth > 16 {
		return fmt.Errorf("sim: data port: lrid width %d out of range 1..16", lridWidth)
	}
	p.split, p.pend = s, make([]pendLoad, 1<<lridWidth)
	return nil
}

// request sends a as a split request whose response carries data.
func (p *DataPort) request(a *ingress.Access, data uint64) error {
	id := -1
	for i := range p.pend {
		if !p.pend[i].busy {
			id = i
			break
		}
	}
	if id < 0 {
		// every lrid in flight: the response due first comes now
		if err := p.respond(^uint64(0), 1); err != nil {
			return err
		}
		return p.request(a, data)
	}
	p.nreq++
	delay := (p.nreq * 0x9E3779B97F4A7C15) >> 61
	p.pend[id] = pendLoad{busy: true, due: p.ninst + delay, n: p.nreq, data: data}
	p.npend++
	a.Split, a.LRID, a.Data = true, uint32(id), 0
	return p.send(a)
}

// respond sends up to max responses due by now, the earliest first.
func (p *DataPort) respond(now uint64, max int) error {
	for ; max > 0 && p.npend > 0; max-- {
		best := -1
		for i := range p.pend {
			q := &p.pend[i]
			if q.busy && q.due <= now && (best < 0 || q.due < p.pend[best].due || q.due == p.pend[best].due && q.n < p.pend[best].n) {
				best = i
			}
		}
		if best < 0 {
			return nil
		}
		q := &p.pend[best]
		q.busy = false
		p.npend--
		p.resp = ingress.LoadResponse{LID: uint32(best), Resp: ingress.LRespOkay, Data: q.data, Time: p.now}
		if len(p.recs) > 0 {
			// held with the accesses, in its place
			if err := p.hold(portEv{r: p.resp, resp: true}); err != nil {
				return err
			}
			continue
		}
		if err := p.split.Response(&p.resp); err != nil {
			return err
		}
	}
	return nil
}

const (
	dpPlain = iota
	dpAMO
	dpLR
	dpSC
)

// NewDataPort returns a data trace interface for m's harts, sending
// accesses to sink.
func NewDataPort(m *Machine, sink ingress.DataSink) *DataPort {
	return &DataPort{m: m, sink: sink}
}

// amoTypes maps the funct5 of an AMO (bits 31:27) to its dtype.
var amoTypes = [32]ingress.DType{
	0x01: ingress.DTypeAtomicSwp, 0x00: ingress.DTypeAtomicAdd, 0x04: ingress.DTypeAtomicXor,
	0x0c: ingress.DTypeAtomicAnd, 0x08: ingress.DTypeAtomicOr, 0x10: ingress.DTypeAtomicMin,
	0x14: ingress.DTypeAtomicMax, 0x18: ingress.DTypeAtomicMin, 0x1c: ingress.DTypeAtomicMax,
}

// send sends an access of the instruction at p.pc, or holds it when a
// multi-access instruction's retirements must be placed among the
// accesses (from its second access on).
func (p *DataPort) send(a *ingress.Access) error {
	p.Accesses++
	p.nsend++
	if p.nsend == 2 {
		p.recs = append(p.recs, multiRec{pc: p.pc, size: p.isize})
	}
	if p.nsend < 2 && len(p.recs) == 0 {
		return p.sink.Access(a)
	}
	e := portEv{a: *a}
	if p.nsend >= 2 {
		e.seg, e.first = int32(len(p.recs)), p.nsend == 2
	}
	return p.hold(e)
}

// hold appends e to the events held for the open block.
func (p *DataPort) hold(e portEv) error {
	if len(p.evs) >= maxPortEvs {
		return fmt.Errorf("sim: data port: %d accesses held without the ingress block of their instructions", len(p.evs))
	}
	p.evs = append(p.evs, e)
	return nil
}

// sendHeld sends the events held (with no retirements among them: the
// run ended without the block).
func (p *DataPort) sendHeld() error {
	evs := p.evs
	p.evs, p.recs = p.evs[:0], p.recs[:0]
	for i := range evs {
		if err := p.sendEv(&evs[i]); err != nil {
			return err
		}
	}
	return nil
}

// sendEv sends one event held.
func (p *DataPort) sendEv(e *portEv) error {
	if e.resp {
		return p.split.Response(&e.r)
	}
	return p.sink.Access(&e.a)
}

// flush reports a pending failed sc (rd x0).
func (p *DataPort) flush() error {
	if !p.scPend {
		return nil
	}
	p.scPend = false
	p.Late++
	p.a = ingress.Access{IAddr: p.pc, DAddr: p.scAddr, DType: ingress.DTypeSCFail, DSize: p.size}
	return p.send(&p.a)
}

// Inst implements Observer.
func (p *DataPort) Inst(hart int, time uint64, pc uint64, raw uint32, priv ingress.Priv) error {
	if p.holding && pc != p.heldLast() {
		if err := p.release(); err != nil {
			return err
		}
	}
	if err := p.flush(); err != nil {
		return err
	}
	p.ninst++
	p.now = time
	p.nsend, p.isize = 0, 4
	if raw&3 != 3 {
		p.isize = 2
	}
	if p.npend > 0 {
		if err := p.respond(p.ninst, len(p.pend)); err != nil {
			return err
		}
	}
	p.pc, p.kind, p.amoHave = pc, dpPlain, false
	if p.TraceCSR && raw&0x7f == 0x73 && (raw>>12)&3 != 0 {
		if err := p.csrAccess(hart, pc, raw); err != nil {
			return err
		}
	}
	if raw&0x7f == 0x2f && (raw>>12)&7 >= 2 && (raw>>12)&7 <= 3 {
		// A extension: lr, sc, amo*
		p.size = uint8((raw >> 12) & 7)
		f5 := raw >> 27
		rd, rs1 := int(raw>>7)&31, int(raw>>15)&31
		h := p.m.Hart(hart)
		switch f5 {
		case 0x02:
			p.kind = dpLR
		case 0x03:
			p.kind = dpSC
			if h == nil {
				return fmt.Errorf("sim: data port: no hart %d", hart)
			}
			addr := h.Reg(rs1) & h.amask
			if rd == rs1 && rd != 0 {
				addr = p.lrAddr
			}
			switch {
			case rd == 0:
				p.scPend, p.scAddr = true, addr
			case h.Reg(rd) != 0:
				if rd == rs1 {
					p.Inexact++
				}
				p.a = ingress.Access{IAddr: pc, DAddr: addr, DType: ingress.DTypeSCFail, DSize: p.size}
				if err := p.send(&p.a); err != nil {
					return err
				}
			}
		default:
			p.kind, p.amoType = dpAMO, amoTypes[f5]
		}
	}
	if p.Next != nil {
		return p.Next.Inst(hart, time, pc, raw, priv)
	}
	return nil
}

// csrAccess sends the CSR access of the Zicsr instruction at pc, which
// the hart recorded while executing it.
func (p *DataPort) csrAccess(hart int, pc uint64, raw uint32) error {
	h := p.m.Hart(hart)
	if h == nil || h.obs == nil || !h.obs.csrAcc.have {
		return fmt.Errorf("sim: data port: the CSR instruction at pc %#x retired without a CSR access recorded", pc)
	}
	r := &h.obs.csrAcc
	t := [4]ingress.DType{1: ingress.DTypeCSRRW, 2: ingress.DTypeCSRRS, 3: ingress.DTypeCSRRC}[raw>>12&3]
	ds := uint8(3)
	if h.xlen == 32 {
		ds = 2
	}
	p.a = ingress.Access{IAddr: pc, DAddr: uint64(r.n), Data: r.op & h.amask, SData: r.old, DType: t, DSize: ds}
	return p.send(&p.a)
}

// IntReg implements Observer.
func (p *DataPort) IntReg(hart int, n int, value uint64) error {
	if p.Next != nil {
		return p.Next.IntReg(hart, n, value)
	}
	return nil
}

// FPReg implements Observer.
func (p *DataPort) FPReg(hart int, n int, value uint64) error {
	if p.Next != nil {
		return p.Next.FPReg(hart, n, value)
	}
	return nil
}

// CSR implements Observer.
func (p *DataPort) CSR(hart int, n uint16, value uint64) error {
	if p.Next != nil {
		return p.Next.CSR(hart, n, value)
	}
	return nil
}

// log2Size returns log2 of an access size of 1, 2, 4 or 8 bytes.
func log2Size(size int) (uint8, bool) {
	switch size {
	case 1:
		return 0, true
	case 2:
		return 1, true
	case 4:
		return 2, true
	case 8:
		return 3, true
	}
	return 0, false
}

// Mem implements Observer: it sends the access.
func (p *DataPort) Mem(hart int, write bool, addr uint64, size int, value uint64) error {
	ds, ok := log2Size(size)
	if !ok {
		return fmt.Errorf("sim: data port: access of %d bytes at %#x (pc %#x)", size, addr, p.pc)
	}
	a := &p.a
	switch {
	case p.kind == dpAMO && !write:
		p.amoLoad, p.amoHave = value, true
	case p.kind == dpAMO:
		if !p.amoHave {
			return fmt.Errorf("sim: data port: AMO at pc %#x stored without a load", p.pc)
		}
		*a = ingress.Access{IAddr: p.pc, DAddr: addr, Data: p.amoLoad, SData: value, DType: p.amoType, DSize: ds}
		p.amoHave = false
		var err error
		if p.split != nil {
			err = p.request(a, p.amoLoad)
		} else {
			err = p.send(a)
		}
		if err != nil {
			return err
		}
	default:
		if p.kind == dpLR {
			p.lrAddr = addr
		}
		if p.kind == dpSC {
			p.scPend = false
		}
		t := ingress.DTypeLoad
		if write {
			t = ingress.DTypeStore
		}
		*a = ingress.Access{IAddr: p.pc, DAddr: addr, Data: value, DType: t, DSize: ds}
		var err error
		if p.split != nil && !write {
			err = p.request(a, value)
		} else {
			err = p.send(a)
		}
		if err != nil {
			return err
		}
	}
	if p.Next != nil {
		return p.Next.Mem(hart, write, addr, size, value)
	}
	return nil
}

// Trap implements Observer.
func (p *DataPort) Trap(hart int, time uint64, priv ingress.Priv, interrupt bool, cause, epc, tval uint64) error {
	if err := p.release(); err != nil {
		return err
	}
	if err := p.flush(); err != nil {
		return err
	}
	p.kind = dpPlain
	if p.Next != nil {
		return p.Next.Trap(hart, time, priv, interrupt, cause, epc, tval)
	}
	return nil
}

// Ingress returns next, the sink of the hart's ingress blocks, wrapped
// so that closing it first sends what the port still holds (Flush): the
// simulator closes its ingress sink when the run ends, and the last
// responses of split requests must reach the encoder before. next sees
// the retirements of the port's instruction trace interface: a
// multi-access instruction once per access (see DataPort); IngressSplit
// also feeds a sink that sees each instruction once.
//
// The wrapper also keeps an instruction's accesses before the block that
// retires it: the hart ends a block at a control transfer before it
// reports the instruction's accesses, which only matters for the one
// control transfer that accesses memory, a Zcmp pop-return (cm.popret,
// cm.popretz). A block ending in a return is therefore held until the
// next block, the next instruction or trap, or the end.
func (p *DataPort) Ingress(next ingress.Sink) ingress.Sink { return &portIngress{lit: next, p: p} }

// IngressSplit is Ingress with two sinks: lit sees the retirements of the
// data trace interface's instruction side (a multi-access instruction
// once per access: an E-Trace encoder tracing data, the ingress CSV),
// plain the hart's own blocks (each instruction once: the flow outputs,
// an N-Trace encoder, anything that counts or follows instructions).
// Either may be nil. plain gets each block before lit gets its
// retirements.
func (p *DataPort) IngressSplit(lit, plain ingress.Sink) ingress.Sink {
	return &portIngress{lit: lit, plain: plain, p: p}
}

// portIngress is the ingress sink Ingress returns.
type portIngress struct {
	lit, plain ingress.Sink
	p          *DataPort
}

// Block implements ingress.Sink.
func (s *portIngress) Block(b *ingress.Block) error {
	p := s.p
	if err := p.release(); err != nil {
		return err
	}
	if b.IType == ingress.ITypeReturn {
		p.held, p.heldTo, p.holding = *b, s, true
		return nil
	}
	return s.deliver(b)
}

// deliver sends the hart's block b: to plain as it is, and to lit as the
// retirements of the instruction trace interface, the accesses held
// placed among them.
func (s *portIngress) deliver(b *ingress.Block) error {
	p := s.p
	if s.plain != nil {
		if err := s.plain.Block(b); err != nil {
			return err
		}
	}
	if len(p.recs) == 0 {
		if s.lit == nil {
			return nil
		}
		return s.lit.Block(b)
	}
	return p.retire(b, s.lit)
}

// retire sends block b as the retirements of the interface (to lit, if
// not nil), with the accesses and responses held among them: each
// multi-access instruction of recs (all in b) retires once per access,
// each retirement after its access (see DataPort).
func (p *DataPort) retire(b *ingress.Block, lit ingress.Sink) error {
	amask := ^uint64(0)
	if p.m.xlen == 32 {
		amask = 1<<32 - 1
	}
	total := 2 * uint64(b.IRetire)
	start := uint64(0) // offset in b of the retirements not yet sent
	r := *b
	r.Cause, r.TVal, r.SIJump, r.IType = 0, 0, false, ingress.ITypeNone
	evs := p.evs
	for i := range evs {
		e := &evs[i]
		if e.seg > 0 {
			m := p.recs[e.seg-1]
			off := (m.pc - b.IAddr) & amask
			if off < start || off+uint64(m.size) > total || !e.first && off != start {
				p.evs, p.recs = p.evs[:0], p.recs[:0]
				return fmt.Errorf("sim: data port: the accesses of the instruction at %#x do not belong to the ingress block %#x..%#x", m.pc, b.IAddr, b.LastAddr())
			}
			r.IAddr = (b.IAddr + start) & amask
			r.IRetire = uint32((off + uint64(m.size) - start) / 2)
			r.ILastSize = lastSizeCode(m.size)
			if lit != nil {
				if err := lit.Block(&r); err != nil {
					return err
				}
			}
			r.CType = ingress.CTypeUnreported // (reported once)
			start = off
		}
		if err := p.sendEv(e); err != nil {
			return err
		}
	}
	p.evs, p.recs = evs[:0], p.recs[:0]
	r = *b
	r.IAddr = (b.IAddr + start) & amask
	r.IRetire = uint32((total - start) / 2)
	if start > 0 {
		r.CType = ingress.CTypeUnreported
	}
	if lit == nil {
		return nil
	}
	return lit.Block(&r)
}

// heldLast returns the address of the last instruction of the held
// block.
func (p *DataPort) heldLast() uint64 {
	b := &p.held
	size := uint64(2)
	if b.ILastSize != 0 {
		size = 4
	}
	last := b.IAddr + 2*uint64(b.IRetire) - size
	if p.m.xlen == 32 {
		last &= 1<<32 - 1
	}
	return last
}

// release sends the held block.
func (p *DataPort) release() error {
	if !p.holding {
		return nil
	}
	p.holding = false
	return p.heldTo.deliver(&p.held)
}

// Close flushes the data port, then closes the sinks.
func (s *portIngress) Close() error {
	err := s.p.Flush()
	for _, k := range []ingress.Sink{s.plain, s.lit} {
		if k == nil {
			continue
		}
		if e := k.Close(); err == nil {
			err = e
		}
	}
	return err
}

// Flush reports what the port still holds (a failed sc with rd x0 that
// was the last instruction, the responses of split requests); call it
// when the run ends.
func (p *DataPort) Flush() error {
	if err := p.release(); err != nil {
		return err
	}
	if err := p.flush(); err != nil {
		return err
	}
	p.now++ // (the responses come after the last instruction)
	if err := p.respond(^uint64(0), len(p.pend)); err != nil {
		return err
	}
	return p.sendHeld()
}
