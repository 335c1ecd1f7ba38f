package sim

import (
	"github.com/rvtrace/rvtrace/ingress"
)

// BlockMode selects how retirements are grouped into ingress blocks.
type BlockMode int

const (
	// Coalesced merges straight-line instructions into one block, ended by
	// an instruction with a non-zero itype, a trap, a privilege change or
	// a context change. Time is the time of the block's last instruction.
	Coalesced BlockMode = iota
	// PerInstruction emits one block per retired instruction.
	PerInstruction
)

func (m BlockMode) String() string {
	if m == PerInstruction {
		return "per-instruction"
	}
	return "coalesced"
}

// itEnd is the pseudo-itype an instruction reports to end its block with
// itype 0 (a write of scontext).
const itEnd = 16

// tracer drives one hart's ingress port.
type tracer struct {
	h    *Hart
	sink ingress.Sink
	hook func(pc uint64)
	per  bool // PerInstruction mode

	start    uint64 // coalesced: address of the open block's first instruction
	startRet uint64 // instret when the open block began
	priv     uint8  // privilege of the open block

	ctx        uint64
	ctype      ingress.CType
	newCtx     uint64
	ctxPending bool // scontext written: applies from the next block

	blk      ingress.Block
	pend     ingress.Block // per-instruction mode: the last block, not yet sent
	pendRet  uint64        // instret before pend's instruction
	havePend bool
	// emitRet is the instret before the first instruction of the block
	// being sent to the sink (Machine.BlockInstret)
	emitRet  uint64
	skipNext bool // per-instruction mode: the next retirement was sent early (tracectl.go)
	// per-instruction mode: the register the last retired instruction
	// loaded with a constant (0: none) and the address after it, for the
	// sijump signal of a jump retired right after it
	constRd   uint8
	constNext uint64
	err       error

	// the jumps and branches the interpreter loop retired without
	// leaving (Hart.brBatch), reported by drain when it returns
	brs [brRing]brRec
	nbr uint
	// batch is sink when it is a BlockBatcher (drain's blocks: bat)
	batch BlockBatcher
	bat   [brRing]ingress.Block
}

// brRing is the number of jumps and branches the interpreter loop records
// before it leaves to report them.
const brRing = 128

// brRec is a jump or branch the interpreter loop retired and recorded
// (loopBatch): its address, the next pc, the hart's cycle count after it,
// the loop's count of instructions left then (its instret follows), its
// size (low byte) and itype (high byte).
type brRec struct {
	pc, npc, cycle, left uint64
	sizeIt               uint16
}

// BlockBatcher is an ingress sink that also takes several blocks in one
// call, in order, as if given to Block one by one. The simulator hands
// the blocks of the jumps and branches its interpreter loop recorded to
// such a sink in one call; a sink that looks at the hart while it takes
// a block (Machine.BlockInstret, the hart's instret or memory) must not
// be one: during Blocks, BlockInstret is the count before the first
// block, and the hart's cycle and instret counts and pc are those at the
// last block's last instruction.
type BlockBatcher interface {
	ingress.Sink
	Blocks(bs []ingress.Block) error
}

// drain reports the jumps and branches the interpreter loop recorded, in
// order, as retireCF would have when each retired (base less a record's
// left is its instret). A sink that is a BlockBatcher takes them in one
// call (unless a new context is pending, which applies from the second
// block); any other takes them one by one, the hart's cycle and instret
// counts and pc being those at the block's last instruction while it
// does (with a BlockBatcher: at the last block's).
func (t *tracer) drain(base uint64) {
	h := t.h
	k := t.nbr
	t.nbr = 0
	cycle, instret, pc := h.cycle, h.instret, h.pc
	if t.batch != nil && !t.ctxPending {
		last := &t.brs[k-1]
		h.cycle, h.instret, h.pc = last.cycle, base-last.left, last.pc
		if t.err == nil {
			bs := t.bat[:k]
			start, priv, ctx, ctype, amask := t.start, ingress.Priv(t.priv), t.ctx, t.ctype, h.amask
			for i := range bs {
				r, b := &t.brs[i], &bs[i]
				b.IAddr, b.Context, b.Time = start, ctx, r.cycle
				b.Cause, b.TVal, b.SIJump = 0, 0, false
				size := uint8(r.sizeIt)
				b.IRetire = uint32(((r.pc + uint64(size) - start) & amask) / 2)
				b.IType, b.ILastSize = ingress.IType(r.sizeIt>>8), lastSizeCode(size)
				b.Priv, b.CType = priv, ctype
				start, ctype = r.npc, ingress.CTypeUnreported
			}
			t.ctype = ctype
			t.emitRet = t.startRet
			if err := t.batch.Blocks(bs); err != nil {
				t.err = err
				h.fail(err)
			}
		}
		t.afterBlock(last.npc)
		h.cycle, h.instret, h.pc = cycle, instret, pc
		return
	}
	b := &t.blk
	for i := range t.brs[:k] {
		r := &t.brs[i]
		h.cycle, h.instret, h.pc = r.cycle, base-r.left, r.pc
		t.fill(b)
		b.IAddr = t.start
		size := uint8(r.sizeIt)
		b.IRetire = uint32(((r.pc + uint64(size) - t.start) & h.amask) / 2)
		b.IType = ingress.IType(r.sizeIt >> 8)
		b.ILastSize = lastSizeCode(size)
		if t.err == nil {
			t.emitRet = t.startRet
			if err := t.sink.Block(b); err != nil {
				t.err = err
				h.fail(err)
			}
		}
		t.afterBlock(r.npc)
	}
	h.cycle, h.instret, h.pc = cycle, instret, pc
}

// emit sends a block to the sink; ret is the instret before its first
// instruction.
func (t *tracer) emit(b *ingress.Block, ret uint64) {
	if t.err != nil {
		return
	}
	t.emitRet = ret
	if err := t.sink.Block(b); err != nil {
		t.err = err
		t.h.fail(err)
	}
}

func lastSizeCode(size uint8) uint8 {
	if size == 4 {
		return 1
	}
	return 0
}

// fill sets the fields shared by every block.
func (t *tracer) fill(b *ingress.Block) {
	b.Priv = ingress.Priv(t.priv)
	b.Time = t.h.cycle
	b.Context = t.ctx
	b.CType = t.ctype
	b.Cause, b.TVal, b.SIJump = 0, 0, false
	t.ctype = ingress.CTypeUnreported
}

// afterBlock starts the next block at npc.
func (t *tracer) afterBlock(npc uint64) {
	t.start = npc
	t.startRet = t.h.instret
	t.priv = t.h.priv
	if t.ctxPending {
		t.ctx, t.ctype, t.ctxPending = t.newCtx, ingress.CTypePrecise, false
	}
}

// retireCF ends the open block with the instruction d at pc (coalesced
// mode).
func (t *tracer) retireCF(pc uint64, d *inst, npc uint64, it uint8) {
	if t.per || t.sink == nil {
		return
	}
	if it == itEnd {
		it = 0
	}
	size := d.size
	b := &t.blk
	t.fill(b)
	b.IAddr = t.start
	b.IRetire = uint32(((pc + uint64(size) - t.start) & t.h.amask) / 2)
	b.IType = ingress.IType(it)
	b.ILastSize = lastSizeCode(size)
	if b.IType.Uninferable() && pc != t.start {
		// The instruction before the jump retired just before it, in
		// this block: the hart's sijump signal.
		rd := t.constLoadAt(pc-uint64(t.h.prevSize), t.h.prevSize)
		b.SIJump = rd != 0 && rd == d.rs1&31
	}
	// emit, without its call (once per jump or branch)
	if t.err == nil {
		t.emitRet = t.startRet
		if err := t.sink.Block(b); err != nil {
			t.err = err
			t.h.fail(err)
		}
	}
	t.afterBlock(npc)
}

// constLoadAt returns the register that the instruction of the given size
// at pc loads with a constant (lui, auipc or c.lui), or 0 when it is none
// of those: with the uninferable jump that follows it and reads that
// register, it makes a sequentially inferable jump (E-Trace "Jump
// classification and target inference", the ingress sijump signal).
func (t *tracer) constLoadAt(pc uint64, size uint8) uint8 {
	h := t.h
	pc &= h.amask
	if off := pc - h.fbase; off < pageSize && h.fpage != nil {
		// decoded in the fetch window already (the common case)
		if d := &h.fpage.insts[off>>1]; d.op != opInvalid && d.size == size {
			return constLoadRd(*d)
		}
	}
	raw, n := h.peekInst(pc)
	if n != size || n == 0 {
		return 0
	}
	return constLoadRd(decode(raw, t.h.xlen))
}

// constLoadRd is the register d loads with a constant (lui, auipc, c.lui),
// or 0.
func constLoadRd(d inst) uint8 {
	switch d.op {
	case opLUI, opAUIPC, opAUIPC32:
		return d.rd & 31
	}
	return 0
}

// retireOne reports one retired instruction (PC hook, per-instruction mode).
func (t *tracer) retireOne(pc uint64, d *inst, npc uint64, it uint8) {
	if t.hook != nil {
		t.hook(pc)
	}
	if !t.per || t.sink == nil {
		return
	}
	if t.skipNext {
		t.skipNext = false
		return
	}
	if it == itEnd {
		it = 0
	}
	if t.havePend {
		t.emit(&t.pend, t.pendRet)
	}
	b := &t.pend
	t.pendRet = t.startRet
	t.fill(b)
	b.IAddr = pc
	b.IRetire = uint32(d.size / 2)
	b.IType = ingress.IType(it)
	b.ILastSize = lastSizeCode(d.size)
	if b.IType.Uninferable() && t.constRd != 0 && t.constNext == pc {
		b.SIJump = t.constRd == d.rs1&31
	}
	t.constRd, t.constNext = constLoadRd(*d), npc
	t.havePend = true
	t.afterBlock(npc)
}

// trap reports an exception (pc: the instruction that did not retire) or
// an interrupt (pc: the next instruction), before the hart enters the
// handler.
func (t *tracer) trap(pc, cause, tval uint64, intr bool) {
	if t.sink == nil {
		return
	}
	it := ingress.ITypeException
	if intr {
		it = ingress.ITypeInterrupt
	}
	t.constRd = 0
	if t.per {
		if t.havePend && t.pend.IType == 0 {
			t.pend.IType, t.pend.Cause, t.pend.TVal = it, cause, tval
			t.emit(&t.pend, t.pendRet)
			t.havePend = false
			return
		}
		if t.havePend {
			t.emit(&t.pend, t.pendRet)
			t.havePend = false
		}
		t.zeroTrapBlock(pc, cause, tval, it)
		return
	}
	if t.h.instret > t.startRet {
		b := &t.blk
		t.fill(b)
		b.IAddr = t.start
		b.IRetire = uint32(((pc - t.start) & t.h.amask) / 2)
		b.IType = it
		b.ILastSize = lastSizeCode(t.h.lastSize)
		b.Cause, b.TVal = cause, tval
		t.emit(b, t.startRet)
		return
	}
	t.zeroTrapBlock(pc, cause, tval, it)
}

func (t *tracer) zeroTrapBlock(pc, cause, tval uint64, it ingress.IType) {
	b := &t.blk
	t.fill(b)
	b.IAddr = pc
	b.IRetire = 0
	b.IType = it
	b.ILastSize = 0
	b.Cause, b.TVal = cause, tval
	t.emit(b, t.h.instret)
}

// restart begins a new block at pc after a trap.
func (t *tracer) restart(pc uint64) {
	if t.sink == nil {
		return
	}
	t.afterBlock(pc)
}

// contextChange records a write of scontext: the writing instruction ends
// its block and the next block reports the new context (CType precise).
func (t *tracer) contextChange(v uint64) {
	t.newCtx = v
	t.ctxPending = true
}

// ContextSource selects what the ingress port reports as the context.
type ContextSource uint8

const (
	// ContextSContext reports the value written to scontext (CSR 0x5A8).
	ContextSContext ContextSource = iota
	// ContextASID reports the ASID field of satp: every satp write that
	// changes it ends the block of the writing instruction, and the next
	// block reports the new ASID with CType precise (what identifies the
	// process under an operating system that gives each address space its
	// own ASID, as Linux does).
	ContextASID
)

// String returns "scontext" or "asid".
func (c ContextSource) String() string {
	if c == ContextASID {
		return "asid"
	}
	return "scontext"
}

// asidChange records a satp write under ContextASID: a change of ASID
// is reported like a write of scontext.
func (t *tracer) asidChange(asid uint64) {
	if t.sink == nil {
		return
	}
	cur := t.ctx
	if t.ctxPending {
		cur = t.newCtx
	}
	if asid != cur {
		t.contextChange(asid)
	}
}

// asid returns the ASID field of satp (0 in Bare mode).
func (h *Hart) asid() uint64 {
	if h.xlen == 32 {
		return h.csr.satp >> 22 & 0x1ff
	}
	return h.csr.satp >> 44 & 0xffff
}

// close flushes what the port holds and closes the sink.
func (t *tracer) close() error {
	if t.sink == nil {
		return nil
	}
	if t.per {
		if t.havePend {
			t.emit(&t.pend, t.pendRet)
			t.havePend = false
		}
	} else if t.h.instret > t.startRet && t.err == nil {
		b := &t.blk
		t.fill(b)
		b.IAddr = t.start
		b.IRetire = uint32(((t.h.pc - t.start) & t.h.amask) / 2)
		b.IType = 0
		b.ILastSize = lastSizeCode(t.h.lastSize)
		t.emit(b, t.startRet)
		t.startRet = t.h.instret
	}
	err := t.sink.Close()
	if t.err != nil {
		return t.err
	}
	return err
}
