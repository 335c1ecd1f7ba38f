package ntrace

import (
	"errors"
	"fmt"
	"io"
	"math/bits"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// DecoderConfig is what the decoder must know about the encoder's
// configuration: the wire format (SRC width, ExtendAddrMSB, XLEN) and
// whether direct jumps were reported as taken branches. Everything else
// (mode, implicit returns, sequential jumps, repeated history, timestamps)
// is recognised from the messages themselves.
type DecoderConfig struct {
	Wire     WireConfig
	AllJumps bool
	// StackDepth bounds the decoder's return-address stack; it must be
	// at least the encoder's. 0 means 1024, enough for every mode.
	StackDepth int
	// JVT is the base address of the Zcmt jump table (the jvt CSR) when
	// the traced code uses cm.jt/cm.jalt; the decoder reads the targets
	// from the image, as N-Trace treats table jumps as inferable. 0 means
	// unknown: a table jump on the traced path is then a gap.
	JVT uint64
	// MaxInstructions stops decoding with ErrTooManyInstructions once
	// that many instructions were decoded (0: no limit). Repeat counts
	// let a few bytes describe billions of instructions; this bounds the
	// work a hostile or corrupt trace can cause.
	MaxInstructions uint64
	// Decode holds the options every protocol's decoder shares.
	Decode decode.Options
}

// ErrTooManyInstructions is returned by Decode when
// DecoderConfig.MaxInstructions is reached.
var ErrTooManyInstructions = errors.New("instruction limit reached")

// Limits of the specification ("Maximum Field Sizes"), enforced by the
// decoder so that a corrupt field cannot ask for an unbounded walk.
const (
	maxICNT    = 1<<24 - 1 // NTRACE_MAX_ICNT is 22 bits; a block may overshoot it
	maxHRepeat = 1<<18 - 1 // NTRACE_MAX_HREPEAT
	maxBCnt    = 1<<18 - 1 // NTRACE_MAX_BCNT
)

// DecoderConfigFrom returns the decoder configuration matching an encoder
// configuration.
func DecoderConfigFrom(c Config) DecoderConfig {
	return DecoderConfig{Wire: c.Wire(), AllJumps: c.AllJumps}
}

// Decoder reconstructs the instruction flow from N-Trace messages and the
// program image (N-Trace chapter 11, "Decoding Algorithm Principles"),
// writing flow events to a sink. Messages of each SRC value are decoded
// independently; events carry the SRC in Event.Src.
type Decoder struct {
	cfg   DecoderConfig
	img   *image.Set
	sink  flow.Sink
	obs   flow.MessageObserver // the sink, when it counts messages
	xlen  int
	srcs  map[uint64]*srcState
	one   *srcState // fast path: the state of the last SRC seen
	oneID uint64
	ev    flow.Event
	rev   flow.Event // range events: only the range fields are ever set
	runs  [runCacheSize]runCacheEntry
	st    Stats
	cur   *Message // message being handled (for error offsets)
}

// srcState is the decoding state of one trace source.
type srcState struct {
	id      uint32
	synced  bool
	pc      uint64 // next instruction to execute
	addr    uint64 // reference for U-ADDR
	icntAcc int64  // I-CNT reported by ResourceFull RCODE=0 since the last I-CNT field
	used    int64  // halfwords walked since the last I-CNT field
	stack   []uint64
	sp      int // entries in stack (ring: top at (base+sp-1)%len)
	base    int
	last    Message // last branch message, for RepeatBranch
	haveBr  bool
	time    uint64
	hasTime bool
	priv    ingress.Priv
	prevIn  *riscv.Inst // last instruction walked (sequential jumps)
	prevPC  uint64
	prevOK  bool
}

// NewDecoder returns a decoder writing the flow to sink.
func NewDecoder(img *image.Set, sink flow.Sink, cfg DecoderConfig) *Decoder {
	if cfg.Wire.XLEN == 0 {
		cfg.Wire.XLEN = img.XLEN()
	}
	if cfg.StackDepth <= 0 {
		cfg.StackDepth = 1024
	}
	d := &Decoder{cfg: cfg, img: img, sink: sink, xlen: cfg.Wire.XLEN, srcs: map[uint64]*srcState{}}
	d.obs, _ = sink.(flow.MessageObserver)
	return d
}

// Stats returns counts of what was decoded so far.
func (d *Decoder) Stats() *Stats { return &d.st }

// Decode reads every message from r and decodes it. Malformed bytes and
// inconsistencies between trace and image are reported to the sink as
// gaps and decoding goes on from the next sync message; Decode returns an
// error only when reading fails or the sink returns one.
func (d *Decoder) Decode(r io.Reader) error {
	rd := NewReader(r, d.cfg.Wire)
	var m Message
	for {
		err := rd.Next(&m)
		if err != nil {
			if err == io.EOF {
				break
			}
			if fe, ok := err.(*FormatError); ok {
				d.st.Errors++
				if err := d.gapAll(fe.Offset, err); err != nil {
					return err
				}
				continue
			}
			return err
		}
		if err := d.Message(&m); err != nil {
			return err
		}
	}
	d.st.Idles = rd.Idles()
	return nil
}

// gapAll reports a gap in every source (a malformed message cannot be
// attributed to one).
func (d *Decoder) gapAll(off int64, err error) error {
	for _, s := range d.srcs {
		if s.synced {
			if e := d.gap(s, off, err); e != nil {
				return e
			}
		}
	}
	if len(d.srcs) == 0 {
		d.ev = flow.Event{Kind: flow.KindGap, Offset: off, Err: err}
		return d.sink.Event(&d.ev)
	}
	return nil
}

// runCacheSize is the number of entries of the decoder's direct-mapped
// cache of straight-line runs (in front of the image's own cache, which
// costs a segment and page lookup).
const runCacheSize = 1 << 12

type runCacheEntry struct {
	pc uint64
	r  *image.Run
}

// run returns the straight-line run at pc.
func (d *Decoder) run(pc uint64) (*image.Run, error) {
	e := &d.runs[(pc>>1)&(runCacheSize-1)]
	if e.r != nil && e.pc == pc {
		return e.r, nil
	}
	r, err := d.img.Run(pc)
	if err != nil {
		return nil, err
	}
	e.pc, e.r = pc, r
	return r, nil
}

// decodeError is an inconsistency between the trace and the image.
type decodeError struct {
	msg string
}

func (e *decodeError) Error() string { return e.msg }

func inconsistent(format string, args ...any) error {
	return &decodeError{fmt.Sprintf(format, args...)}
}

func (d *Decoder) state(src uint64) *srcState {
	if d.one != nil && d.oneID == src {
		return d.one
	}
	s := d.srcs[src]
	if s == nil {
		s = &srcState{id: uint32(src), stack: make([]uint64, d.cfg.StackDepth)}
		d.srcs[src] = s
	}
	d.one, d.oneID = s, src
	return s
}

// Message decodes one message.
func (d *Decoder) Message(m *Message) error {
	d.st.count(m)
	if d.obs != nil {
		d.obs.Message(m.TCode.String(), m.Offset, m.Size*8)
	}
	s := d.state(m.Get(FieldSRC))
	d.cur = m
	err := d.limits(m)
	if err == nil {
		err = d.handle(s, m)
	}
	if err == nil {
		return nil
	}
	if de, ok := err.(*decodeError); ok {
		return d.gap(s, m.Offset, fmt.Errorf("message %s at byte %d: %v", m.TCode, m.Offset, de))
	}
	return err
}

// limits rejects field values beyond the specification's maxima.
func (d *Decoder) limits(m *Message) error {
	switch {
	case m.Get(FieldICNT) > maxICNT:
		return inconsistent("I-CNT %d exceeds the N-Trace maximum", m.Get(FieldICNT))
	case m.TCode == TCodeResourceFull && m.Get(FieldRCODE) == RCodeICNT && m.Get(FieldRDATA) > maxICNT:
		return inconsistent("ResourceFull I-CNT %d exceeds the N-Trace maximum", m.Get(FieldRDATA))
	case m.Get(FieldHREPEAT) > maxHRepeat:
		return inconsistent("HREPEAT %d exceeds NTRACE_MAX_HREPEAT", m.Get(FieldHREPEAT))
	case m.Get(FieldBCNT) > maxBCnt:
		return inconsistent("B-CNT %d exceeds NTRACE_MAX_BCNT", m.Get(FieldBCNT))
	}
	return nil
}

// gap reports lost synchronisation and waits for the next sync message.
func (d *Decoder) gap(s *srcState, off int64, err error) error {
	s.synced = false
	d.ev = flow.Event{Kind: flow.KindGap, Src: s.id, Offset: off, Err: err}
	return d.sink.Event(&d.ev)
}

func (d *Decoder) handle(s *srcState, m *Message) error {
	if !m.TCode.Known() {
		return nil // vendor and reserved messages carry no program flow
	}
	if m.TCode.IsSync() {
		return d.sync(s, m)
	}
	if !s.synced {
		return nil // waiting for a sync message
	}
	switch m.TCode {
	case TCodeOwnership:
		return d.ownership(s, m)
	case TCodeDirectBranch, TCodeIndirectBranch, TCodeIndirectBranchHist:
		s.last, s.haveBr = *m, true
		return d.branchMsg(s, m)
	case TCodeRepeatBranch:
		if !s.haveBr {
			return inconsistent("RepeatBranch without a previous branch message")
		}
		n := m.Get(FieldBCNT)
		rep := s.last
		rep.Has &^= 1 << FieldTSTAMP // the repeat's own TSTAMP applies once
		for i := uint64(0); i < n; i++ {
			if err := d.branchMsg(s, &rep); err != nil {
				return err
			}
		}
		return d.timestamp(s, m)
	case TCodeResourceFull:
		switch m.Get(FieldRCODE) {
		case RCodeICNT:
			s.icntAcc += int64(m.Get(FieldRDATA))
		case RCodeHist:
			if err := d.hist(s, m.Get(FieldRDATA)); err != nil {
				return err
			}
		case RCodeHistRepeat:
			h := m.Get(FieldRDATA)
			for n := m.Get(FieldHREPEAT); n > 0; n-- {
				if err := d.hist(s, h); err != nil {
					return err
				}
			}
		default:
			// reserved and vendor resource codes: nothing to do
		}
		return d.timestamp(s, m)
	case TCodeProgTraceCorrelation:
		if m.Present(FieldHIST) {
			if err := d.hist(s, m.Get(FieldHIST)); err != nil {
				return err
			}
		}
		if err := d.finish(s, m.Get(FieldICNT), endStop); err != nil {
			return err
		}
		if err := d.timestamp(s, m); err != nil {
			return err
		}
		s.synced = false
		d.ev = flow.Event{Kind: flow.KindStop, Src: s.id, Reason: uint32(m.Get(FieldEVCODE)), Offset: m.Offset,
			Addr: s.pc, Priv: s.priv}
		return d.sink.Event(&d.ev)
	case TCodeError:
		s.synced = false
		d.ev = flow.Event{Kind: flow.KindGap, Src: s.id, Offset: m.Offset,
			Err: fmt.Errorf("Error message ETYPE=%d ECODE=%#x: trace lost", m.Get(FieldETYPE), m.Get(FieldECODE))}
		return d.sink.Event(&d.ev)
	}
	return nil
}

// How the last instruction of an I-CNT walk is treated.
const (
	endIndirect = iota // explicit uninferable jump: the message gives the target
	endTaken           // BTM DirectBranch: a taken branch
	endTrap            // a trap follows: the last instruction was inferable
	endSync            // the message gives the next address (sync)
	endStop            // trace stops
)

// branchMsg decodes DirectBranch, IndirectBranch and IndirectBranchHist.
func (d *Decoder) branchMsg(s *srcState, m *Message) error {
	if m.Present(FieldHIST) {
		if err := d.hist(s, m.Get(FieldHIST)); err != nil {
			return err
		}
	}
	if m.TCode == TCodeDirectBranch {
		if err := d.finish(s, m.Get(FieldICNT), endTaken); err != nil {
			return err
		}
		return d.timestamp(s, m)
	}
	bt := m.Get(FieldBTYPE)
	kind := endIndirect
	if bt != BTypeIndirect {
		kind = endTrap
	}
	if err := d.finish(s, m.Get(FieldICNT), kind); err != nil {
		return err
	}
	target := d.unxor(s.addr, m.Get(FieldUADDR))
	s.addr = target
	if err := d.jumpTo(s, target, bt, m); err != nil {
		return err
	}
	return d.timestamp(s, m)
}

func (d *Decoder) unxor(ref, field uint64) uint64 {
	a := ref ^ field<<1
	if d.xlen == 32 {
		a &= 1<<32 - 1
	}
	return a
}

// jumpTo moves to target after an explicit jump or a trap.
func (d *Decoder) jumpTo(s *srcState, target uint64, btype uint64, m *Message) error {
	if btype != BTypeIndirect {
		d.ev = flow.Event{Kind: flow.KindTrap, Src: s.id, Addr: s.pc, Target: target, HasTarget: true,
			Interrupt: btype == BTypeInterrupt, Offset: m.Offset, Priv: s.priv}
		if err := d.sink.Event(&d.ev); err != nil {
			return err
		}
		s.prevOK = false
	}
	s.pc = target
	return nil
}

// sync handles the four messages with SYNC and F-ADDR.
func (d *Decoder) sync(s *srcState, m *Message) error {
	faddr := m.Get(FieldFADDR) << 1
	if d.xlen == 32 {
		faddr &= 1<<32 - 1
	}
	bt := m.Get(FieldBTYPE)
	if s.synced {
		if m.Present(FieldHIST) {
			if err := d.hist(s, m.Get(FieldHIST)); err != nil {
				return err
			}
		}
		kind := endSync
		switch {
		case m.TCode == TCodeDirectBranchSync:
			kind = endTaken
		case bt != BTypeIndirect:
			kind = endTrap
		case m.TCode == TCodeIndirectBranchSync || m.TCode == TCodeIndirectBranchHistSync:
			kind = endSync // an indirect jump, or a sync on linear code
		}
		if err := d.finish(s, m.Get(FieldICNT), kind); err != nil {
			return err
		}
		if bt != BTypeIndirect {
			if err := d.jumpTo(s, faddr, bt, m); err != nil {
				return err
			}
		}
	}
	// Full reset of the state, as the encoder did.
	s.synced = true
	s.pc, s.addr = faddr, faddr
	s.icntAcc, s.used = 0, 0
	s.sp = 0
	s.haveBr = false
	s.prevOK = false
	if m.Present(FieldTSTAMP) {
		s.time, s.hasTime = m.Get(FieldTSTAMP), true
	}
	d.ev = flow.Event{Kind: flow.KindSync, Src: s.id, Addr: faddr, Reason: uint32(m.Get(FieldSYNC)),
		Offset: m.Offset, Priv: s.priv}
	if err := d.sink.Event(&d.ev); err != nil {
		return err
	}
	if s.hasTime && m.Present(FieldTSTAMP) {
		d.ev = flow.Event{Kind: flow.KindTime, Src: s.id, Time: s.time, Offset: m.Offset}
		return d.sink.Event(&d.ev)
	}
	return nil
}

func (d *Decoder) timestamp(s *srcState, m *Message) error {
	if !m.Present(FieldTSTAMP) {
		return nil
	}
	s.time += m.Get(FieldTSTAMP)
	d.ev = flow.Event{Kind: flow.KindTime, Src: s.id, Time: s.time, Offset: m.Offset}
	return d.sink.Event(&d.ev)
}

func (d *Decoder) ownership(s *srcState, m *Message) error {
	format, p, ctx := ParseProcess(m.Get(FieldPROCESS))
	s.priv = p
	d.ev = flow.Event{Kind: flow.KindContext, Src: s.id, Priv: p, Context: ctx, Offset: m.Offset,
		Reason: uint32(format)}
	if err := d.sink.Event(&d.ev); err != nil {
		return err
	}
	return d.timestamp(s, m)
}

// ---------------------------------------------------------------- walking

// push and pop mirror the encoder's return-address stack.
func (s *srcState) push(a uint64) {
	n := len(s.stack)
	if s.sp == n {
		s.base = (s.base + 1) % n // drop the oldest
		s.sp--
	}
	s.stack[(s.base+s.sp)%n] = a
	s.sp++
}

func (s *srcState) pop() (uint64, bool) {
	if s.sp == 0 {
		return 0, false
	}
	s.sp--
	return s.stack[(s.base+s.sp)%len(s.stack)], true
}

// emitRange reports n instructions from start to last.
func (d *Decoder) emitRange(s *srcState, start, last uint64, n uint32, end ingress.IType, next uint64, hasNext bool) error {
	ev := &d.rev
	ev.Kind, ev.Src, ev.Start, ev.Last, ev.N, ev.End = flow.KindRange, s.id, start, last, uint64(n), end
	ev.Target, ev.HasTarget, ev.Priv, ev.Offset = next, hasNext, s.priv, d.cur.Offset
	d.st.Instructions += uint64(n)
	if d.cfg.MaxInstructions > 0 && d.st.Instructions > d.cfg.MaxInstructions {
		return ErrTooManyInstructions
	}
	return d.sink.Event(ev)
}

// hist consumes the branch outcomes of a HIST value (stop bit first).
func (d *Decoder) hist(s *srcState, h uint64) error {
	if h == 0 {
		return inconsistent("HIST field without stop bit")
	}
	for bit := 62 - bits.LeadingZeros64(h); bit >= 0; bit-- {
		if err := d.walkToBranch(s, h>>uint(bit)&1 == 1); err != nil {
			return err
		}
	}
	return nil
}

// walkToBranch walks from the current PC through inferable instructions
// to the next conditional branch (or, with AllJumps, direct jump) and
// applies the outcome taken to it.
func (d *Decoder) walkToBranch(s *srcState, taken bool) error {
	for guard := 0; ; guard++ {
		if guard > 1<<16 {
			return inconsistent("no branch found for a HIST bit after %d runs", guard)
		}
		r, err := d.run(s.pc)
		if err != nil {
			return inconsistent("walking for a HIST bit from %#x: %v", s.pc, err)
		}
		last := &r.Last
		s.used += int64(r.Halfwords)
		if d.isHistInst(last) {
			next := last.Next(r.LastAddr)
			it := ingress.ITypeNotTaken
			if taken {
				next = last.Target(r.LastAddr)
				it = ingress.ITypeTaken
				if last.Class == riscv.ClassJump {
					it = ingress.ITypeOf(*last, true)
					if last.Link == riscv.LinkCall || last.Link == riscv.LinkOther {
						if last.Link == riscv.LinkCall {
							s.push(last.Next(r.LastAddr))
						}
					}
				}
			} else if last.Class == riscv.ClassJump {
				return inconsistent("direct jump at %#x reported as not taken", r.LastAddr)
			}
			if d.xlen == 32 {
				next &= 1<<32 - 1
			}
			if err := d.emitRange(s, r.Start, r.LastAddr, r.N, it, next, true); err != nil {
				return err
			}
			s.setPrev(last, r.LastAddr)
			s.pc = next
			return nil
		}
		next, it, err := d.inferNext(s, r, last, true)
		if err != nil {
			return err
		}
		if err := d.emitRange(s, r.Start, r.LastAddr, r.N, it, next, true); err != nil {
			return err
		}
		s.setPrev(last, r.LastAddr)
		s.pc = next
	}
}

func (s *srcState) setPrev(in *riscv.Inst, pc uint64) { s.prevIn, s.prevPC, s.prevOK = in, pc, true }

// isHistInst reports whether the instruction takes a HIST bit.
func (d *Decoder) isHistInst(in *riscv.Inst) bool {
	return in.Class == riscv.ClassBranch || d.cfg.AllJumps && in.Class == riscv.ClassJump
}

// inferNext returns where execution continues after the control-flow
// instruction ending run r when the trace did not report it: direct jumps,
// implicit returns, sequentially inferable jumps, not-taken branches, and
// ecall/ebreak handled without a trap. mid tells whether more instructions
// follow in the walk (an explicit jump cannot be passed).
func (d *Decoder) inferNext(s *srcState, r *image.Run, last *riscv.Inst, mid bool) (uint64, ingress.IType, error) {
	pc := r.LastAddr
	switch last.Class {
	case riscv.ClassBranch:
		return last.Next(pc), ingress.ITypeNotTaken, nil
	case riscv.ClassJump:
		if last.Link == riscv.LinkCall {
			s.push(last.Next(pc))
		}
		return d.mask(last.Target(pc)), ingress.ITypeOf(*last, true), nil
	case riscv.ClassECall, riscv.ClassEBreak, riscv.ClassLinear:
		return d.mask(last.Next(pc)), ingress.ITypeNone, nil
	case riscv.ClassIndirect, riscv.ClassPopRet:
		it := ingress.ITypeOf(*last, true)
		if t, ok := d.seqTarget(s, r, last); ok {
			if it.Pops() {
				s.pop()
			}
			if it.Pushes() {
				s.push(last.Next(pc))
			}
			return t, it, nil
		}
		if it.Pops() {
			t, ok := s.pop()
			if !ok {
				return 0, it, inconsistent("return at %#x with no call on the stack (trace and image disagree)", pc)
			}
			if it.Pushes() {
				s.push(last.Next(pc))
			}
			return t, it, nil
		}
		return 0, it, inconsistent("indirect jump at %#x passed without a message (trace and image disagree)", pc)
	case riscv.ClassTableJump:
		it := ingress.ITypeOf(*last, true)
		t, err := d.tableTarget(last)
		if err != nil {
			return 0, it, inconsistent("table jump at %#x: %v", pc, err)
		}
		if last.Link == riscv.LinkCall {
			s.push(last.Next(pc))
		}
		return t, it, nil
	case riscv.ClassTrapReturn:
		return 0, ingress.ITypeTrapReturn, inconsistent("trap return at %#x passed without a message", pc)
	}
	return 0, ingress.ITypeNone, inconsistent("illegal instruction %#x at %#x on the traced path", last.Raw, pc)
}

// tableTarget reads the target of a Zcmt table jump from the jump table
// in the image.
func (d *Decoder) tableTarget(in *riscv.Inst) (uint64, error) {
	if d.cfg.JVT == 0 {
		return 0, errors.New("the jump table base (jvt) is not known to the decoder (--jvt)")
	}
	size := uint64(d.xlen / 8)
	addr := d.cfg.JVT&^63 + uint64(in.Index)*size
	var buf [8]byte
	if d.img.Read(addr, buf[:size]) != int(size) {
		return 0, fmt.Errorf("jump table entry %d at %#x is not in the image", in.Index, addr)
	}
	t := uint64(buf[0]) | uint64(buf[1])<<8 | uint64(buf[2])<<16 | uint64(buf[3])<<24
	if size == 8 {
		t |= uint64(buf[4])<<32 | uint64(buf[5])<<40 | uint64(buf[6])<<48 | uint64(buf[7])<<56
	}
	return t &^ 1, nil
}

func (d *Decoder) mask(a uint64) uint64 {
	if d.xlen == 32 {
		return a & (1<<32 - 1)
	}
	return a
}

// seqTarget finds the target of an uninferable jump from the auipc/lui
// retired just before it.
func (d *Decoder) seqTarget(s *srcState, r *image.Run, jmp *riscv.Inst) (uint64, bool) {
	var prev riscv.Inst
	var prevPC uint64
	if r.N == 1 {
		if !s.prevOK || s.prevPC+uint64(s.prevIn.Len) != r.LastAddr {
			return 0, false
		}
		prev, prevPC = *s.prevIn, s.prevPC
	} else {
		// walk the run to find the instruction before the jump
		pc := r.Start
		for pc < r.LastAddr {
			in, ok := d.img.Inst(pc)
			if !ok || in.Len == 0 {
				return 0, false
			}
			prev, prevPC = in, pc
			pc += uint64(in.Len)
		}
	}
	return ingress.SeqTarget(prev, prevPC, *jmp, d.xlen)
}

// finish walks the rest of an I-CNT field: the instructions after the last
// HIST branch. kind says what the message tells about the last one.
func (d *Decoder) finish(s *srcState, icnt uint64, kind int) error {
	rem := s.icntAcc + int64(icnt) - s.used
	s.icntAcc, s.used = 0, 0
	if rem < 0 {
		return inconsistent("I-CNT %d is smaller than the %d halfwords its history covers", icnt, -rem+int64(icnt))
	}
	for rem > 0 {
		r, err := d.run(s.pc)
		if err != nil || int64(r.Halfwords) > rem {
			// The count ends inside this run (or the run cannot be formed):
			// walk instruction by instruction.
			return d.finishPartial(s, rem, kind)
		}
		rem -= int64(r.Halfwords)
		last := &r.Last
		if rem == 0 {
			return d.lastInst(s, r, last, kind)
		}
		next, it, err := d.inferNext(s, r, last, true)
		if err != nil {
			return err
		}
		if err := d.emitRange(s, r.Start, r.LastAddr, r.N, it, next, true); err != nil {
			return err
		}
		s.setPrev(last, r.LastAddr)
		s.pc = next
	}
	if kind == endTaken {
		return inconsistent("DirectBranch with I-CNT=0 after its history")
	}
	if kind == endIndirect {
		// I-CNT ends exactly after the previous walk: the jump was the
		// instruction that ended it (a HIST branch cannot be a jump).
		return inconsistent("indirect branch message with no instruction for its jump")
	}
	return nil
}

// finishPartial walks rem halfwords that end before the control-flow
// instruction of the run at the PC: the message ends on a linear
// instruction (trap, sync, stop).
func (d *Decoder) finishPartial(s *srcState, rem int64, kind int) error {
	start := s.pc
	pc := s.pc
	var n uint32
	var last *riscv.Inst
	var lastPC uint64
	for rem > 0 {
		in := d.img.InstPtr(pc)
		if in == nil {
			return inconsistent("address %#x is outside the program image", pc)
		}
		if in.Len == 0 {
			return inconsistent("reserved instruction encoding at %#x", pc)
		}
		hw := int64(in.Len / 2)
		if hw > rem {
			return inconsistent("I-CNT ends inside the %d-byte instruction at %#x", in.Len, pc)
		}
		if in.Class != riscv.ClassLinear && in.Class != riscv.ClassECall && in.Class != riscv.ClassEBreak &&
			in.Class != riscv.ClassIllegal && hw != rem {
			return inconsistent("control-flow instruction at %#x inside a straight run", pc)
		}
		rem -= hw
		n++
		last, lastPC = in, pc
		s.setPrev(in, pc)
		pc = d.mask(pc + uint64(in.Len))
	}
	if last.Class == riscv.ClassIllegal && kind != endTrap {
		return inconsistent("illegal instruction %#x at %#x on the traced path", last.Raw, lastPC)
	}
	if last.Class != riscv.ClassLinear && last.Class != riscv.ClassECall && last.Class != riscv.ClassEBreak &&
		last.Class != riscv.ClassIllegal {
		// cannot happen: a run ends at the first control-flow instruction
		return inconsistent("unexpected control flow at %#x", lastPC)
	}
	switch kind {
	case endTaken:
		return inconsistent("DirectBranch I-CNT ends at %#x, which is not a branch", lastPC)
	case endIndirect:
		// A custom instruction changing the flow is traced as an
		// indirect jump (N-Trace "Custom Instructions").
	}
	s.pc = pc
	return d.emitRange(s, start, lastPC, n, ingress.ITypeNone, pc, kind != endIndirect)
}

// lastInst applies the control-flow instruction that ends an I-CNT walk.
func (d *Decoder) lastInst(s *srcState, r *image.Run, last *riscv.Inst, kind int) error {
	pc := r.LastAddr
	switch kind {
	case endTaken:
		if last.Class != riscv.ClassBranch && !(d.cfg.AllJumps && last.Class == riscv.ClassJump) {
			return inconsistent("DirectBranch I-CNT ends at %#x, which is not a branch", pc)
		}
		next := d.mask(last.Target(pc))
		it := ingress.ITypeTaken
		if last.Class == riscv.ClassJump {
			it = ingress.ITypeOf(*last, true)
			if last.Link == riscv.LinkCall {
				s.push(last.Next(pc))
			}
		}
		if err := d.emitRange(s, r.Start, pc, r.N, it, next, true); err != nil {
			return err
		}
		s.setPrev(last, pc)
		s.pc = next
		return nil
	case endIndirect:
		it := ingress.ITypeOf(*last, true)
		switch last.Class {
		case riscv.ClassIndirect, riscv.ClassPopRet, riscv.ClassTrapReturn, riscv.ClassTableJump:
		default:
			if last.Class == riscv.ClassBranch || last.Class == riscv.ClassJump {
				return inconsistent("indirect branch message ends at %#x, a direct %s", pc, riscv.Disasm(last.Raw, pc, d.xlen))
			}
			// custom instruction traced as an indirect jump
		}
		if it.Pops() {
			s.pop()
		}
		if it.Pushes() {
			s.push(last.Next(pc))
		}
		s.setPrev(last, pc)
		// The target comes from the message: the caller sets s.pc.
		return d.emitRange(s, r.Start, pc, r.N, it, 0, false)
	}
	// endTrap, endSync, endStop: the last instruction's effect is inferred
	// when it can be; an uninferable one at a sync is resolved by F-ADDR.
	next, it, err := d.inferNext(s, r, last, false)
	if err != nil {
		if kind == endTrap {
			return err
		}
		// sync or stop: the next address comes from the message (or the
		// trace ends); report the range without a target
		if err := d.emitRange(s, r.Start, pc, r.N, ingress.ITypeOf(*last, false), 0, false); err != nil {
			return err
		}
		s.setPrev(last, pc)
		return nil
	}
	if err := d.emitRange(s, r.Start, pc, r.N, it, next, true); err != nil {
		return err
	}
	s.setPrev(last, pc)
	s.pc = next
	return nil
}
