package etrace

import (
	"fmt"
	"io"
	"unsafe"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// Stats counts what an encoder has produced or a decoder has read.
type Stats struct {
	Packets      uint64    // te_inst and support packets (decoder: malformed ones included)
	ByFormat     [4]uint64 // te_inst packets per format
	Sync         [4]uint64 // format 3 packets per subformat
	Bytes        uint64    // bytes written or read, framing included
	Blocks       uint64    // ingress blocks (encoder)
	Instructions uint64    // instructions retired (encoder: counted with an image, else blocks' halfwords/2) or decoded
	Reasons      [8]uint64 // address packets by reason (R1 target, R2 last, R3 notify; encoder)
	Gaps         uint64    // gaps reported (decoder)
	// Anchors counts the synchronisation packets the encoder sent to
	// keep a reported instruction unambiguous: before a return whose
	// address is not the predicted one when the decoder could take an
	// earlier, correctly predicted return at the same depth for it, and
	// on a branch-free path that comes back to an instruction (an idle
	// loop). Encoder only.
	Anchors uint64
	// RetMisses counts returns in call counter mode that did not go to
	// the instruction after their call (longjmp, unwinding, a modified
	// return address), which the specification's call counter cannot
	// trace; the encoder resynchronises before each (see
	// Encoder.Warning), unless the return is itself the target of an
	// uninferable jump, which is reported with irreport as with a stack.
	// RetMiss and RetMissTo are the first such return and where it went.
	RetMisses          uint64
	RetMiss, RetMissTo uint64
}

// BitsPerInstruction returns the trace size in bits per retired
// instruction.
func (s *Stats) BitsPerInstruction() float64 {
	if s.Instructions == 0 {
		return 0
	}
	return float64(s.Bytes*8) / float64(s.Instructions)
}

// step kinds: the encoder sees the ingress port as a sequence of
// interesting instructions and traps.
const (
	stInst = iota
	stTrap
	stEnd
)

// step is one instruction (or trap) the encoder algorithm looks at. Only
// the first and last instruction of a block matter; the ones between are
// linear and leave the encoder state unchanged.
type step struct {
	kind      uint8
	itype     ingress.IType // termination type of this instruction (ITypeNone inside a block)
	ctype     ingress.CType // on the first instruction of a block only
	priv      ingress.Priv
	sijump    bool
	notify    bool
	first     bool   // the first step of a block
	end       uint64 // with first: the block's last instruction address
	interrupt bool
	addr      uint64 // instruction address; for a trap, the EPC
	next      uint64 // address of the sequentially next instruction
	context   uint64
	time      uint64
	cause     uint64
	tval      uint64
}

// address packet reasons.
const (
	rNone   = iota
	rTarget // R1: reports the target of an uninferable discontinuity
	rLast   // R2: the last instruction before a trap, sync or the end of tracing
	rNotify // R3: a notification (or a branch count overflow)
)

// Encoder turns ingress blocks into E-Trace packets. It implements
// ingress.Sink and ingress.Gated. It is not safe for concurrent use.
type Encoder struct {
	cfg   Config
	codec *Codec
	out   *Writer
	img   *image.Set
	st    Stats
	// OnPacket, if set, is called with each packet as it is written (for
	// CSV output and tests).
	OnPacket func(p *Packet)
	onPkt    Packet

	v026   bool
	bpred  bool // branch prediction mode in effect
	jtcOn  bool // jump target cache mode in effect
	irOn   bool // implicit return mode in effect
	lsb    uint
	amask  uint64
	period int

	// pipeline
	curr    step
	hasCurr bool
	notify  bool // Gated.Notify: the next block's last instruction

	// algorithm state
	started      bool
	supportSent  bool
	prevUpd      bool // previous instruction's target must be reported
	prevRetMiss  bool // ... because its return address was mispredicted
	prevTrap     bool // previous step was a trap
	trapReported bool // ... already reported with thaddr=0
	trap         step // that trap
	prevPriv     ingress.Priv
	syncNext     bool // a sync packet is due on the next instruction
	resyncCount  int
	lastAddr     uint64 // last address reported (delta base)

	mapBits    uint32
	mapN       int
	mapCorrect bool   // every branch in the map was predicted correctly
	pbc        uint64 // correctly predicted branches being counted (>= 31)
	irSince    bool   // a return was inferred since the last address packet
	stack      decode.ReturnStack
	pred       predictor
	jtc        jumpCache
	blocks     blockCache // what the walk through img found per block
	noQuiet    bool       // tests: every instruction step takes doInst (see quiet)
	noRuns     bool       // tests: Block and Branches take no block through quietBlocks

	// the last address packet, held until the next packet shows whether
	// its updiscon bit must be set
	pend     Packet
	pendOK   bool
	pendKind int
	pendAddr uint64 // the instruction address the pending packet reports
	pendIdx  bool   // pending packet uses a jump target cache index
	pendBase uint64 // delta base of the pending packet

	// The decoder stops at the first instruction on its path that
	// matches a reported address once no branch outcome is left: tail
	// holds the address ranges executed since the last instruction it
	// stopped at or the last branch (the anchor), so that a path that
	// comes back to one of them is pinned first (see revisits).
	// the previous step, for a packet that reports it before a sync
	// packet at the current one (see anchor)
	pAddr  uint64
	pDepth int  // return stack depth before the previous step
	pHere  bool // the decoder stops at the previous step (a packet reported it)
	here   bool // ... at the current step
	// irSeen has bit d%64 set when a return was inferred at stack depth
	// d since the last instruction the decoder stops at: a return
	// reported with irreport at such a depth would be ambiguous.
	irSeen uint64

	tail     [][2]uint64 // closed ranges, first and last instruction address
	tailFrom uint64      // start of the open range, which ends at the current step
	tailOpen bool
	anchored bool // a packet reported the current step
	syncAt   bool // ... and it was a sync packet

	err error

	// blind makes call counter mode behave as the specification's
	// minimal counter, which cannot check return addresses (tests only):
	// every return with a non-zero count is treated as inferable.
	blind bool
}

// maxTail bounds the ranges kept for one branch-free path; a longer one is
// pinned with a notification as if it came back.
const maxTail = 64

// revisits reports whether the block starting at n executes an instruction
// already executed since the anchor: the decoder could then not tell the
// two executions apart, so c, the instruction before it, must be reported
// first.
func (e *Encoder) revisits(c, n *step) bool {
	if n.kind != stInst || !n.first {
		return false
	}
	lo, hi := n.addr, n.end
	if e.tailOpen && lo <= c.addr && hi >= e.tailFrom {
		return true
	}
	for _, r := range e.tail {
		if lo <= r[1] && hi >= r[0] {
			return true
		}
	}
	return len(e.tail) >= maxTail
}

// advance moves the tail past c: if c is the new anchor (a packet reported
// it, or it is a branch), the tail restarts after it; a new block at n
// closes the open range and opens one at n.
func (e *Encoder) advance(c, n *step, anchor bool) {
	if anchor {
		e.tail = e.tail[:0]
		e.tailOpen = false
		if e.v026 && e.anchored && !e.syncAt {
			// 0.026: the decoder may stop without moving after an
			// address packet (see walk), so a later execution of the
			// reported instruction counts as coming back to it.
			e.tail = append(e.tail, [2]uint64{c.addr, c.addr})
		}
	}
	e.anchored, e.syncAt = false, false
	if n.kind != stInst {
		e.tail = e.tail[:0]
		e.tailOpen = false
		return
	}
	if n.first && !(e.tailOpen && n.addr == c.next) {
		if e.tailOpen {
			e.tail = append(e.tail, [2]uint64{e.tailFrom, c.addr})
		}
		e.tailFrom, e.tailOpen = n.addr, true
	} else if !e.tailOpen {
		e.tailFrom, e.tailOpen = c.addr+1, true
	}
}

// NewEncoder returns an encoder writing to w. img, if not nil, is the
// program image: with it the encoder counts instructions, classifies the
// jumps of a 3-bit itype port and finds the branches inside blocks of
// harts that retire several branches per block (ntkn).
func NewEncoder(w io.Writer, cfg Config, img *image.Set) (*Encoder, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	e := &Encoder{cfg: cfg, codec: NewCodec(&cfg), out: NewWriter(w, &cfg), img: img}
	e.v026 = cfg.Version == V026
	p := &e.cfg.Params
	e.bpred = cfg.Options.BranchPrediction && p.BPredSize > 0
	e.jtcOn = cfg.Options.JumpTargetCache && p.CacheSize > 0
	e.irOn = cfg.Options.ImplicitReturn && p.stackMax() > 0
	e.lsb = uint(p.IAddressLSB)
	e.amask = p.addrMask()
	e.period = cfg.ResyncPeriod
	e.stack = decode.NewReturnStack(p.stackMax())
	e.pred = newPredictor(p)
	e.jtc = newJumpCache(p)
	return e, nil
}

// stackTop returns the return address on top of the implicit return stack
// (0 when it is empty: callers check its depth first).
func (e *Encoder) stackTop() uint64 {
	a, _ := e.stack.Top()
	return a
}

// Stats returns the encoder's counters.
func (e *Encoder) Stats() *Stats {
	s := e.st
	s.Bytes = uint64(e.out.Bytes) + uint64(len(e.out.buf))
	return &s
}

// Config returns the encoder's configuration.
func (e *Encoder) Config() Config { return e.cfg }

// Block encodes one ingress block. A block Branches would take without
// sending a packet takes its path (quietBlocks), the others the step
// pipeline below.
func (e *Encoder) Block(b *ingress.Block) error {
	if e.curr.itype.IsBranch() {
		// (after a branch: most blocks but on a port that retires one
		// instruction per block, where the step pipeline costs less)
		if k, _ := e.quietBlocks(unsafe.Slice(b, 1)); k == 1 {
			// what follows does for it, in short (see Branches)
			return e.err
		}
	}
	if e.err != nil {
		return e.err
	}
	e.st.Blocks++
	notify := e.notify
	e.notify = false
	var s step
	s.priv, s.context, s.time = b.Priv, b.Context, b.Time
	it := b.IType
	if e.cfg.Params.ITypeWidth == 3 && e.img == nil {
		it = it.To3Bit()
	}
	if b.IRetire > 0 {
		last := b.LastAddr()
		first := true
		addr := b.IAddr
		if e.img != nil {
			if c := e.blocks.lookup(e.img.Generation(), b); c != nil {
				// the walk's result for this block, cached: its
				// first step (as interior pushes it) and the count
				e.st.Instructions += uint64(c.n)
				if addr != last {
					s.kind, s.addr, s.next, s.itype, s.ctype = stInst, addr, 0, ingress.ITypeNone, b.CType
					s.first, s.end = true, last
					e.push(&s)
					s.first = false
					first = false
				}
				it = refined(it, c.ref)
			} else {
				n := e.st.Instructions
				run, err := e.interior(b, &s, &first)
				if err != nil {
					return e.fail(err)
				}
				ref := refineKeep
				if in := e.img.InstPtr(last); in != nil {
					ref = lastRefinement(in)
				}
				it = refined(it, ref)
				if run {
					e.blocks.store(e.img.Generation(), b, uint32(e.st.Instructions-n), ref)
				}
			}
		} else {
			e.st.Instructions += uint64(b.IRetire) / 2
			if e.cfg.Params.ITypeWidth != 3 {
				// what Branches takes the block with next time
				// (noImageGen; a 3-bit port's itypes take Block)
				e.blocks.store(noImageGen, b, b.IRetire/2, refineKeep)
			}
			if b.IRetire*2 > uint32(b.LastSize()) {
				s.kind, s.addr, s.next, s.itype = stInst, addr, 0, ingress.ITypeNone
				s.ctype = b.CType
				s.first, s.end = true, last
				e.push(&s)
				first = false
			}
		}
		s.kind, s.addr, s.next = stInst, last, b.NextAddr()
		s.itype = it
		if it.IsTrap() {
			s.itype = ingress.ITypeNone
		}
		s.sijump = b.SIJump
		s.notify = notify
		s.ctype = 0
		if first {
			s.ctype = b.CType
		}
		s.first, s.end = first, last
		e.push(&s)
		s.sijump, s.notify, s.ctype, s.first = false, false, 0, false
	}
	if it.IsTrap() {
		s.kind = stTrap
		s.interrupt = it == ingress.ITypeInterrupt
		s.cause, s.tval = b.Cause, b.TVal
		switch {
		case b.IRetire == 0:
			s.addr = b.IAddr
		case s.interrupt:
			s.addr = b.NextAddr()
		default:
			s.addr = b.LastAddr()
		}
		s.itype = it
		e.push(&s)
	}
	return e.err
}

// interior pushes the steps for a block's instructions before its last one
// (its first instruction and any control-flow instruction inside it, such
// as the not-taken branches of an ntkn port), and counts instructions.
// run reports that the block is one straight-line run of the image (no
// control-flow instruction before its last one): what it pushed and
// counted then depends on the block's first and last addresses alone, and
// the encoder caches it (see blockCache).
func (e *Encoder) interior(b *ingress.Block, s *step, first *bool) (run bool, err error) {
	last := b.LastAddr()
	a := b.IAddr
	inner := false // a control-flow instruction inside the block
	for {
		r, err := e.img.Run(a)
		if err != nil {
			return false, fmt.Errorf("etrace: block at %#x: %w", b.IAddr, err)
		}
		if last < r.Start {
			return false, fmt.Errorf("etrace: block at %#x: last instruction %#x not on the path", b.IAddr, last)
		}
		if last <= r.LastAddr {
			n := uint64(r.N)
			if last != r.LastAddr {
				n = 0
				for x := r.Start; x <= last; {
					in, ok := e.img.Inst(x)
					if !ok || in.Len == 0 {
						return false, fmt.Errorf("etrace: block at %#x: no instruction at %#x", b.IAddr, x)
					}
					n++
					x += uint64(in.Len)
				}
			}
			e.st.Instructions += n
			if *first && a != last {
				s.kind, s.addr, s.next, s.itype, s.ctype = stInst, a, 0, ingress.ITypeNone, b.CType
				s.first, s.end = true, last
				e.push(s)
				s.first = false
				*first = false
			}
			return !inner, nil
		}
		// A control-flow instruction inside the block.
		inner = true
		e.st.Instructions += uint64(r.N)
		if *first && r.Start != r.LastAddr {
			s.kind, s.addr, s.next, s.itype, s.ctype = stInst, a, 0, ingress.ITypeNone, b.CType
			s.first, s.end = true, last
			e.push(s)
			s.first = false
			*first = false
		}
		s.kind, s.addr, s.next = stInst, r.LastAddr, r.End()
		s.itype = refineIType(ingress.ITypeNone, r.Last)
		s.ctype = 0
		if *first {
			s.ctype = b.CType
		}
		s.first, s.end = *first, last
		e.push(s)
		s.first = false
		*first = false
		s.ctype = 0
		a = r.End()
		if s.itype.Uninferable() && a != last {
			// the instruction after an interior uninferable jump is its target
			s.kind, s.addr, s.next, s.itype = stInst, a, 0, ingress.ITypeNone
			e.push(s)
		}
	}
}

// refineIType returns the 4-bit itype of instruction in, given the itype a
// (possibly 3-bit) port reported for it.
func refineIType(it ingress.IType, in riscv.Inst) ingress.IType {
	return refined(it, lastRefinement(&in))
}

// imgGen returns the generation of the encoder's image, or noImageGen
// without one: the block cache's entries hold for it.
func (e *Encoder) imgGen() uint64 {
	if e.img == nil {
		return noImageGen
	}
	return e.img.Generation()
}

// refineKeep is the lastRefinement of an instruction whose reported itype
// stands (or of an address the image has no instruction at).
const refineKeep = ingress.IType(0xff)

// lastRefinement returns what refined makes of the itype reported for
// instruction in: refineKeep, or the itype that replaces the port's.
func lastRefinement(in *riscv.Inst) ingress.IType {
	switch in.Class {
	case riscv.ClassBranch:
		return ingress.ITypeNotTaken
	case riscv.ClassLinear, riscv.ClassECall, riscv.ClassEBreak, riscv.ClassIllegal:
		return refineKeep
	}
	return itypeOf(in, true)
}

// refined returns the 4-bit itype of an instruction reported with itype
// it, given its lastRefinement ref: traps, trap returns and branch
// outcomes stand as reported.
func refined(it, ref ingress.IType) ingress.IType {
	if ref == refineKeep || it.IsTrap() || it == ingress.ITypeTrapReturn || it.IsBranch() {
		return it
	}
	return ref
}

// Notify implements ingress.Gated: report the last instruction of the
// next block.
func (e *Encoder) Notify() error {
	e.notify = true
	return e.err
}

// TraceOff implements ingress.Gated: tracing stops after the last block
// given; the encoder reports the final instruction and a support packet
// with qual_status ended_rep or ended_ntr.
func (e *Encoder) TraceOff() error { return e.stop(1) }

// Close ends the trace: like TraceOff, with ienable=0 in the support
// packet, and flushes the output.
func (e *Encoder) Close() error {
	if err := e.stop(0); err != nil {
		return err
	}
	return e.fail(e.out.Flush())
}

func (e *Encoder) stop(ienable uint8) error {
	if e.err != nil {
		return e.err
	}
	if !e.hasCurr && !e.started {
		return nil
	}
	if e.hasCurr {
		end := step{kind: stEnd}
		e.process(&e.curr, &end)
		e.hasCurr = false
	}
	qual := uint8(QualEndedRep)
	if e.pendOK && e.pendKind == rTarget {
		qual = QualEndedNtr
	}
	e.support(ienable, qual)
	e.started = false
	e.prevTrap, e.trapReported, e.prevUpd, e.syncNext = false, false, false, false
	return e.err
}

func (e *Encoder) fail(err error) error {
	if err != nil && e.err == nil {
		e.err = err
	}
	return e.err
}

// push feeds one step into the pipeline.
func (e *Encoder) push(s *step) {
	if e.hasCurr {
		e.process(&e.curr, s)
	}
	e.curr = *s
	e.hasCurr = true
}

func (e *Encoder) process(c, n *step) {
	depth := e.stack.Depth()
	switch {
	case c.kind == stTrap:
		e.doTrap(c, n)
	case !e.noQuiet && e.quiet(c, n):
		// what doInst does for such a step
		e.prevRetMiss = false
		e.advance(c, n, e.anchored)
	default:
		e.doInst(c, n)
	}
	e.pAddr, e.pDepth, e.pHere = c.addr, depth, e.here
	e.here = false
}

// quiet reports whether doInst would send no packet for c and change no
// state but the tail and prevRetMiss: c is the first instruction of a
// block that goes on to n (so neither is a control-flow instruction, a
// notification, a context report or a privilege change), and nothing is
// due (no sync, trap report or target report pending, no resync period
// reached, no full branch map or branch count).
func (e *Encoder) quiet(c, n *step) bool {
	return c.itype == ingress.ITypeNone && !c.notify && c.ctype == 0 &&
		n.kind == stInst && !n.first && !n.notify && n.ctype == 0 && n.priv == c.priv &&
		e.started && !e.prevTrap && !e.prevUpd && c.priv == e.prevPriv && !e.syncNext &&
		(e.period == 0 || e.resyncCount < e.period) && e.mapN != 31 && e.pbc < 31+0xffffffff
}

// doTrap handles a trap: it is reported here only when the handler's
// first instruction will not be (thaddr=0); otherwise on that instruction.
func (e *Encoder) doTrap(c, n *step) {
	e.trap = *c
	e.trapReported = false
	switch {
	case !e.started:
		if !e.v026 {
			e.begin()
			e.trapPacket(c, c, 0)
			e.started = true
		}
	case e.prevUpd || n.kind != stInst:
		if !e.v026 {
			e.trapPacket(c, c, 0)
		}
	}
	e.prevTrap = true
	e.prevUpd, e.prevRetMiss = false, false
	e.advance(c, n, true)
}

// begin sends the support packet that precedes the first sync.
func (e *Encoder) begin() {
	if !e.supportSent {
		e.support(1, QualNoChange)
		e.supportSent = true
	}
}

// needFlush reports whether state must be reported before a sync packet.
func (e *Encoder) needFlush() bool { return e.mapN > 0 || e.pbc > 0 || e.irSince }

func (e *Encoder) doInst(c, n *step) {
	isBranch := c.itype.IsBranch()
	taken := c.itype == ingress.ITypeTaken

	// A path that comes back to an instruction is pinned, unless c is an
	// uninferable jump whose target the next packet reports: the decoder
	// stops at the first such jump, so that packet is unambiguous.
	pin := !isBranch && !(!e.v026 && e.targetReported(c, n)) && e.revisits(c, n)
	miss := e.retMiss(c, n)
	// A sync packet at c is the only packet of the specification that
	// pins the decoder on c, an instruction that is not the target of an
	// uninferable discontinuity, when no format 3 packet follows (notify
	// means a trigger[2] request): see anchor.
	// A notification the hart requested for c pins it too.
	anchor := !e.v026 && e.started && !e.prevTrap && !e.prevUpd &&
		(pin && !c.notify || miss && e.missNeedsSync(c, n))
	// Format 3 packets reported at c.
	sync := true
	switch {
	case !e.started:
		e.begin()
		if e.v026 && e.prevTrap {
			e.trapPacket(c, &e.trap, 1)
		} else {
			e.syncPacket(c)
		}
		e.started = true
	case e.prevTrap:
		if e.trapReported {
			e.syncPacket(c)
		} else {
			e.trapPacket(c, &e.trap, 1)
		}
	case c.priv != e.prevPriv, c.ctype >= ingress.CTypePrecise, e.syncNext,
		e.v026 && c.notify,
		e.period > 0 && e.resyncCount >= e.period && !e.needFlush():
		e.syncPacket(c)
	case anchor:
		e.anchor(c, n, miss)
	case e.v026 && pin:
		// 0.026 has no notify bit: pin the decoder with a sync packet.
		if e.needFlush() || e.prevUpd {
			kind := rLast
			if e.prevUpd {
				kind = rTarget
			}
			e.addrPacket(c, kind, false, e.stack.Depth())
		}
		e.syncPacket(c)
	case e.v026 && e.irOn && c.itype == ingress.ITypeReturn && e.stack.Depth() > 0 &&
		n.kind != stEnd && e.stackTop() != n.addr && !(e.cfg.Options.SIJump && c.sijump):
		// 0.026 has no irreport: resynchronise before a mispredicted return.
		switch {
		case e.prevUpd:
			e.addrPacket(c, rTarget, false, e.stack.Depth())
		case e.needFlush():
			e.addrPacket(c, rLast, false, e.stack.Depth())
		}
		e.syncPacket(c)
	default:
		sync = false
	}
	if sync {
		e.afterSync()
		if isBranch && e.bpred {
			e.pred.update(c.addr, taken)
		}
		e.control(c, n, true)
		e.prevPriv = c.priv
		e.advance(c, n, true)
		return
	}

	// Branch outcome of c.
	mispred := false
	if isBranch {
		correct := true
		if e.bpred {
			correct = e.pred.predict(c.addr) == taken
			e.pred.update(c.addr, taken)
		}
		switch {
		case e.bpred && !e.v026 && e.pbc >= 31:
			if correct {
				e.pbc++
			} else {
				mispred = true
			}
		default:
			if !taken {
				e.mapBits |= 1 << uint(e.mapN)
			}
			if e.mapN == 0 {
				e.mapCorrect = true
			}
			e.mapN++
			e.mapCorrect = e.mapCorrect && correct
			if e.bpred && !e.v026 && e.mapN == 31 && e.mapCorrect {
				e.pbc, e.mapN, e.mapBits = 31, 0, 0
			}
		}
	}

	kind := rNone
	switch {
	case e.prevUpd:
		kind = rTarget
	case n.kind != stInst:
		kind = rLast
	case n.ctype == ingress.CTypeAsynchronous,
		(n.priv != c.priv || n.ctype >= ingress.CTypePrecise || e.v026 && n.notify) && (e.needFlush() || mispred):
		kind = rLast
	case e.period > 0 && e.resyncCount >= e.period && !miss:
		kind = rLast // resync: report branches before the sync
		e.syncNext = true
	case c.notify && !e.v026:
		kind = rNotify
	case e.pbc >= 31+0xffffffff:
		kind = rNotify
	}
	if kind != rNone {
		if n.kind == stInst && e.period > 0 && e.resyncCount+1 >= e.period && !miss {
			e.syncNext = true
		}
		e.addrPacket(c, kind, mispred, e.stack.Depth())
	} else if mispred {
		p := Packet{Format: FormatExt, Subformat: SubBranchCount, BranchCount: uint32(e.pbc - 31), BranchFmt: BranchFmtNoAddr}
		e.pbc = 0
		e.emit(&p, rNone)
	} else if e.mapN == 31 {
		p := Packet{Format: FormatBranch, Branches: 0, BranchMap: e.mapBits}
		e.mapN, e.mapBits = 0, 0
		e.emit(&p, rNone)
	} else if c.ctype == ingress.CTypeImprecise {
		p := Packet{Format: FormatSync, Subformat: SubContext, Privilege: uint8(c.priv), Time: c.time, Context: c.context}
		e.emit(&p, rNone)
	}
	e.control(c, n, false)
	e.prevPriv = c.priv
	e.advance(c, n, isBranch || e.anchored)
}

// targetReported reports whether c is an uninferable jump whose target
// (n) will be reported: not a sequentially inferable jump nor a return
// the return stack predicts.
func (e *Encoder) targetReported(c, n *step) bool {
	it := c.itype
	if !it.Uninferable() || e.cfg.Options.SIJump && c.sijump {
		return false
	}
	return !(e.irOn && it == ingress.ITypeReturn && e.stack.Depth() > 0 && n.kind == stInst &&
		(e.stackTop() == n.addr || e.blind && e.cfg.Params.ReturnStackSize == 0))
}

// retMiss reports whether c is a return that the return stack (or the
// call counter variant, which keeps the return addresses too) predicts
// wrongly: n, the instruction after it, is not the address on top.
func (e *Encoder) retMiss(c, n *step) bool {
	return e.irOn && c.itype == ingress.ITypeReturn && e.retMissed(c, n) // (inlined: most steps are no return)
}

// retMissed is retMiss for a return with implicit return on.
func (e *Encoder) retMissed(c, n *step) bool {
	if e.blind && e.cfg.Params.ReturnStackSize == 0 {
		return false
	}
	return e.stack.Depth() > 0 && n.kind == stInst && e.stackTop() != n.addr && !(e.cfg.Options.SIJump && c.sijump)
}

// missNeedsSync reports whether the mispredicted return c must be
// preceded by a sync packet at c rather than reported with irreport in
// the packet reporting n:
//   - the decoder takes the first return at the depth irdepth gives for
//     the mispredicted one (as the specification's decoder does), so a
//     return inferred at that depth since the last instruction it
//     stopped at would be taken for it (a correctly predicted return and
//     a mispredicted one at the same depth within one packet interval,
//     as with setjmp/longjmp);
//   - with a call counter, the specification defines no report of a
//     return that does not go back to its call site ("any program that
//     modifies return addresses cannot be traced"): the encoder
//     resynchronises, so that the return is an ordinary uninferable
//     jump, and counts it (RetMisses);
//   - when n is reported with a sync packet (a privilege or precise
//     context change, a resynchronisation), whose walk from c would
//     infer the return.
func (e *Encoder) missNeedsSync(c, n *step) bool {
	if e.cfg.Params.ReturnStackSize == 0 {
		return true
	}
	if e.irSeen&(1<<(uint(e.stack.Depth())&63)) != 0 {
		return true
	}
	return n.priv != c.priv || n.ctype >= ingress.CTypePrecise || e.period > 0 && e.resyncCount+1 >= e.period
}

// anchor pins the decoder on c with a sync packet (the specification's
// resynchronisation, which an encoder may send at any instruction). The
// branch outcomes the sync would drop are first reported with a format
// 0/1/2 packet reporting the previous instruction, unless the decoder
// already stops there: that packet is followed by the sync, so it
// reports the last instruction before it, and the decoder reaches c from
// it in one step. An inferred return alone needs no such packet: c has
// not been executed since the decoder's last stopping point or the last
// branch (revisits pins a path before it comes back), so the sync's walk
// cannot stop at c in a wrong call. miss says c is a mispredicted return;
// after the sync the stack is empty and its target is reported as that
// of an uninferable jump.
func (e *Encoder) anchor(c, n *step, miss bool) {
	if (e.mapN > 0 || e.pbc > 0) && !e.pHere {
		e.addrPacket(&step{addr: e.pAddr}, rLast, false, e.pDepth)
	}
	e.st.Anchors++
	if miss {
		e.counterMiss(c, n)
	}
	e.syncPacket(c)
}

// counterMiss counts the mispredicted return c in call counter mode.
func (e *Encoder) counterMiss(c, n *step) {
	if e.cfg.Params.ReturnStackSize != 0 {
		return
	}
	if e.st.RetMisses == 0 {
		e.st.RetMiss, e.st.RetMissTo = c.addr, n.addr
	}
	e.st.RetMisses++
}

// Warning returns what the user should know about the trace written so
// far, or "": returns that call counter mode cannot follow.
func (e *Encoder) Warning() string {
	if e.st.RetMisses == 0 {
		return ""
	}
	return fmt.Sprintf("%d returns went elsewhere than after their call (the first at %#x, to %#x), which "+
		"the call counter variant of implicit return cannot trace; the encoder resynchronised before them "+
		"(the trace stays exact; a return stack, --implicit-return stack, reports them with irreport)",
		e.st.RetMisses, e.st.RetMiss, e.st.RetMissTo)
}

// control applies c's own control flow: whether the instruction after it
// must be reported, and the return stack.
func (e *Encoder) control(c, n *step, synced bool) {
	it := c.itype
	e.prevUpd, e.prevRetMiss = false, false
	e.prevTrap = false
	if it.Uninferable() {
		switch {
		case e.cfg.Options.SIJump && c.sijump && !synced:
			// sequentially inferable: the decoder computes the target
		case e.irOn && it == ingress.ITypeReturn && e.stack.Depth() > 0 && n.kind != stEnd:
			if e.stackTop() == n.addr || e.blind && e.cfg.Params.ReturnStackSize == 0 {
				e.irSeen |= 1 << (uint(e.stack.Depth()) & 63)
				e.stack.Pop()
				e.irSince = true
			} else {
				// (in call counter mode, only when c is also the
				// target of an uninferable jump: see missNeedsSync)
				e.counterMiss(c, n)
				e.prevUpd, e.prevRetMiss = true, true
			}
		default:
			e.prevUpd = true
		}
	}
	if e.irOn && it.Pushes() {
		e.stack.Push(c.next)
	}
}

// afterSync resets the state a sync packet resets.
func (e *Encoder) afterSync() {
	e.mapN, e.mapBits, e.pbc = 0, 0, 0
	e.irSince = false
	e.stack.Reset()
	if e.pred.t != nil {
		e.pred.reset()
	}
	if e.jtc.a != nil {
		e.jtc.reset()
	}
	e.resyncCount = 0
	e.syncNext = false
	e.prevTrap, e.trapReported = false, false
}

func (e *Encoder) checkAddr(a uint64) {
	if a&^e.amask != 0 {
		e.fail(fmt.Errorf("etrace: address %#x wider than iaddress_width_p %d", a, e.cfg.Params.IAddressWidth))
	}
}

// syncPacket sends format 3 subformat 0 for c.
func (e *Encoder) syncPacket(c *step) {
	e.checkAddr(c.addr)
	p := Packet{Format: FormatSync, Subformat: SubStart, Branch: 1, Privilege: uint8(c.priv),
		Time: c.time, Context: c.context, Address: c.addr >> e.lsb}
	if c.itype == ingress.ITypeTaken {
		p.Branch = 0
	}
	e.lastAddr = c.addr
	e.anchored, e.syncAt = true, true
	e.emit(&p, rNone)
}

// trapPacket sends format 3 subformat 1 for trap t: with thaddr=1 c is the
// handler's first instruction; with thaddr=0 c is the trap itself and
// address holds the EPC.
func (e *Encoder) trapPacket(c, t *step, thaddr uint8) {
	p := Packet{Format: FormatSync, Subformat: SubTrap, Branch: 1, Privilege: uint8(c.priv),
		Time: c.time, Context: c.context, Thaddr: thaddr,
		Ecause: t.cause & mask(e.cfg.Params.EcauseWidth)}
	if t.interrupt {
		p.Interrupt = 1
	} else {
		p.Tval = t.tval
	}
	if thaddr == 1 && c.itype == ingress.ITypeTaken {
		p.Branch = 0
	}
	e.checkAddr(c.addr)
	p.Address = c.addr >> e.lsb
	if thaddr == 1 && !e.v026 && e.cfg.Options.ImplicitException {
		if h, ok := e.cfg.Params.handler(t.cause, t.interrupt); !ok || h != c.addr {
			// The decoder would not find the handler: report the trap
			// with thaddr=0 and the handler with a sync packet.
			p.Thaddr = 0
			p.Address = t.addr >> e.lsb
			p.Privilege = uint8(t.priv)
			e.lastAddr = t.addr
			e.emit(&p, rNone)
			e.syncPacket(c)
			return
		}
		p.Address = 0
	} else {
		e.lastAddr = c.addr
		if thaddr == 0 {
			e.lastAddr = t.addr
		}
	}
	if thaddr == 0 {
		e.trapReported = true
	}
	e.emit(&p, rNone)
}

// handler returns the trap handler address implied by the trap vector.
func (p *Params) handler(cause uint64, interrupt bool) (uint64, bool) {
	if p.TVec == 0 {
		return 0, false
	}
	base := p.TVec &^ 3
	if p.TVec&1 != 0 && interrupt {
		return base + 4*(cause&mask(p.EcauseWidth)), true
	}
	return base, true
}

// addrPacket sends a format 0, 1 or 2 packet reporting c.
func (e *Encoder) addrPacket(c *step, kind int, mispred bool, depth int) {
	e.st.Reasons[kind]++
	a := c.addr
	e.checkAddr(a)
	p := Packet{}
	switch kind {
	case rTarget:
		if e.prevRetMiss && !e.v026 {
			p.Irreport, p.Irdepth = true, uint32(depth)
		}
	default:
		if e.irOn && e.irSince && !e.v026 {
			p.Irreport, p.Irdepth = true, uint32(depth)
		}
		p.Notify = kind == rNotify
	}
	base := e.lastAddr
	p.Address = e.wireAddr(a, base)
	idx := false
	switch {
	case e.bpred && !e.v026 && e.pbc >= 31:
		p.Format, p.Subformat = FormatExt, SubBranchCount
		p.BranchCount = uint32(e.pbc - 31)
		p.BranchFmt = BranchFmtAddr
		if mispred {
			p.BranchFmt = BranchFmtAddrFail
		}
		e.pbc = 0
	case e.mapN > 0:
		p.Format = FormatBranch
		if e.v026 && e.cfg.Options.FullAddress {
			p.Format = FormatExt
		}
		p.Branches, p.BranchMap = uint8(e.mapN), e.mapBits
	default:
		p.Format = FormatAddr
	}
	if kind == rTarget && e.jtcOn && !e.v026 {
		if i, hit := e.jtc.lookup(a); !hit {
			e.jtc.store(a)
		} else if p.Format != FormatExt {
			q := Packet{Format: FormatExt, Subformat: SubJumpCache, Index: i, Branches: p.Branches,
				BranchMap: p.BranchMap, Irreport: p.Irreport, Irdepth: p.Irdepth}
			if e.codec.Size(&q) < e.codec.Size(&p) {
				p, idx = q, true
			}
		}
	}
	e.mapN, e.mapBits = 0, 0
	e.irSince = false
	e.anchored = true
	if !idx {
		e.lastAddr = a
	}
	e.emit(&p, kind)
	e.pendAddr, e.pendIdx, e.pendBase = a, idx, base
}

// wireAddr returns the address field reporting a: differential from base
// unless in full address mode.
func (e *Encoder) wireAddr(a, base uint64) uint64 {
	if e.cfg.Options.FullAddress {
		return a >> e.lsb
	}
	return uint64(int64(a-base)>>e.lsb) & mask(e.cfg.Params.addrBits())
}

// support sends a support packet.
func (e *Encoder) support(ienable, qual uint8) {
	p := Packet{Format: FormatSync, Subformat: SubSupport, IEnable: ienable, QualStatus: qual,
		IOptions: e.cfg.Options.Bits()}
	if d := e.cfg.Data; d != nil {
		p.DEnable, p.DOptions = 1, d.DOptions()
	}
	e.emit(&p, rNone)
}

// emit queues or writes a packet. Address packets are held until the next
// packet is known.
func (e *Encoder) emit(p *Packet, kind int) {
	if e.err != nil {
		return
	}
	if e.pendOK {
		f3 := p.Format == FormatSync && (p.Subformat == SubStart || p.Subformat == SubTrap ||
			p.Subformat == SubSupport && p.QualStatus != QualNoChange && p.QualStatus != QualTraceLost)
		ended := p.Format == FormatSync && p.Subformat == SubSupport && p.QualStatus == QualEndedNtr
		if e.pendKind == rTarget && f3 && !ended {
			if e.v026 {
				e.write(&e.pend)
				// A zero-length addr-only packet pins the decoder on the
				// reported instruction.
				stay := Packet{Format: FormatAddr}
				if e.cfg.Options.FullAddress {
					stay.Address = e.pendAddr >> e.lsb
				}
				e.pend = stay
			} else {
				if e.pendIdx {
					e.unindex()
				}
				e.pend.Updiscon = true
			}
		}
		e.write(&e.pend)
		e.pendOK = false
	}
	if p.Format != FormatSync || p.Subformat == SubStart || p.Subformat == SubTrap {
		// The decoder stops at the instruction this packet reports
		// (a format 0/1/2 packet, a sync packet).
		e.here, e.irSeen = true, 0
	}
	if p.Format != FormatSync || p.Subformat != SubSupport {
		e.resyncCount++
		e.st.ByFormat[p.Format&3]++
		if p.Format == FormatSync {
			e.st.Sync[p.Subformat&3]++
		}
	}
	if kind != rNone {
		e.pend, e.pendOK, e.pendKind = *p, true, kind
		return
	}
	e.write(p)
}

// unindex turns the pending jump target cache packet into an address
// packet, so that its updiscon bit can be set.
func (e *Encoder) unindex() {
	q := e.pend
	p := Packet{Branches: q.Branches, BranchMap: q.BranchMap, Irreport: q.Irreport, Irdepth: q.Irdepth}
	p.Format = FormatAddr
	if q.Branches > 0 {
		p.Format = FormatBranch
	}
	p.Address = e.wireAddr(e.pendAddr, e.pendBase)
	e.pend = p
	e.pendIdx = false
}

func (e *Encoder) write(p *Packet) {
	if e.err != nil {
		return
	}
	e.st.Packets++
	if e.OnPacket != nil {
		// a copy, so that the packets built on the stack do not escape
		e.onPkt = *p
		e.OnPacket(&e.onPkt)
	}
	if err := e.out.Write(p, p.Time); err != nil {
		e.fail(err)
	}
}

// Flush writes buffered output (the pending packet stays pending).
func (e *Encoder) Flush() error {
	return e.fail(e.out.Flush())
}
