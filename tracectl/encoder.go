package tracectl

import (
	"bytes"
	"fmt"
	"io"
	"reflect"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
)

// Settings is what the encoder's registers select: the trace format and
// the configuration of the N-Trace or E-Trace encoder behind the filter
// stage.
type Settings struct {
	Format int // trTeFormat: FormatNTrace or FormatETrace
	NTrace ntrace.Config
	ETrace etrace.Config
	Filter filter.Config
}

// featuresFor is the trTeInstFeatures bits each format implements (the
// others are tied to 0). trTeSrcID, trTeSrcBits and
// trTeInstImplicitReturnMode are handled separately.
var featuresFor = [2]uint32{
	FormatETrace: 1<<0 | 1<<1 | 1<<2 | 1<<3 | 1<<4 | 1<<5, // NoAddrDiff, NoTrapAddr, SequentialJump, ImplicitReturn, BranchPrediction, JumpTargetCache
	FormatNTrace: 1<<2 | 1<<3 | 1<<8 | 1<<9 | 1<<10,       // SequentialJump, ImplicitReturn, RepeatedHistory, AllJumps, ExtendAddrMSB
}

// featureBits is the trTeInstFeatures enable bits (0..5, 8..10).
const featureBits = 0x73F

// tracer is the filter stage followed by an encoder.
type tracer interface {
	ingress.Sink
	ingress.Gated
}

// produced reports the bytes an encoder has produced (written or still
// buffered).
type produced func() int64

// Encoder is the trace encoder component of one hart: its registers and
// the encoder they configure. Blocks of the hart's ingress port go to
// Block; the encoder's bytes go to out (a funnel input).
type Encoder struct {
	b    bank
	img  *image.Set
	xlen int
	out  *encOut

	run      tracer   // filter stage and encoder while trTeEnable is 1
	produced produced // bytes produced by the running encoder
	err      error    // why the last enable failed, or the encoder's error
	onEnable func(format int)
	impl     Impl     // implementation parameters (SetImpl)
	plain    bool     // run is the encoder alone: no filter stage
	passed   bool     // with plain: a block was traced since the last stop
	engine   any      // the encoder last started (for Warning and LossSummary)
	shared   *Funnel  // the funnel whose timestamp the Shared mode uses
	last     Settings // of the last encoder started
	haveLast bool
	started  []Settings // the distinct settings of the encoders started (StartedSettings)

	refused     int   // writes of trTeEnable = 1 that did not enable the encoder
	lastRefused error // why the last one did not

	// data trace (data.go)
	dheld    []dataEvent         // accesses and responses held for the next block
	reqRun   []bool              // by lrid: the split request was passed to run
	dataRun  bool                // run traces data
	deng     *etrace.DataEncoder // the data trace encoder of run
	dataDone etrace.DataStats    // of the data encoders stopped

	tsIdx  int    // index of trTsControl in the bank
	tsRaw  uint64 // core cycles counted by the timestamp unit
	tsLast uint64 // time of the last block seen
	tsSeen bool
	blk    ingress.Block // block with the timestamp unit's time

	// fast: every block goes straight to run (refresh), ticking the
	// funnel (if any) on the way. It is decided when the registers or
	// the running encoder change, not per block: active, enabled and
	// tracing, an encoder running, no timestamp unit of the encoder
	// counting or rewriting the block's time, and no trace lost
	// (out.discard) or data accesses held: those two change between
	// register writes, and clear fast when they do.
	fast bool
}

// encOut forwards the encoder's bytes to a funnel input, counting them and
// flagging lost bytes as an overflow. Once bytes are lost, the rest of the
// running encoder's output is discarded too (discard), until the
// component restarts the encoder after an in-band record of the loss.
type encOut struct {
	w       io.Writer
	sent    int64
	lost    bool // bytes lost since the status was last read
	discard bool
	fast    *bool // the encoder's fast, cleared when bytes are lost
}

func (o *encOut) Write(p []byte) (int, error) {
	o.sent += int64(len(p))
	if o.discard {
		return len(p), nil
	}
	n, err := o.w.Write(p)
	if err != nil || n < len(p) {
		o.lost, o.discard = true, true
		*o.fast = false
	}
	return len(p), nil
}

// FramesAsMade reports whether the writer the bytes go to takes each
// frame as it is made (etrace.FrameWriter: the frames of several
// encoders interleaved one by one).
func (o *encOut) FramesAsMade() bool {
	f, ok := o.w.(interface{ FramesAsMade() bool })
	return ok && f.FramesAsMade()
}

// NewEncoder returns the encoder component of a hart, held in reset
// (trTeActive = 0), writing to out. The image is needed by the E-Trace
// encoder and gives the XLEN.
func NewEncoder(img *image.Set, out io.Writer) *Encoder {
	xlen := 64
	if img != nil {
		xlen = img.XLEN()
	}
	e := &Encoder{b: newBank(encoderRegs), img: img, xlen: xlen, out: &encOut{w: out}, impl: DefaultImpl(xlen)}
	e.tsIdx = e.b.reg(TsControl)
	e.out.fast = &e.fast
	return e
}

// Err returns why the last write of trTeEnable = 1 did not enable the
// encoder, or the error the encoder stopped with.
func (e *Encoder) Err() error { return e.err }

// RefusedEnables returns how many writes of trTeEnable = 1 did not enable
// the encoder (trTeEnable read back 0: the registers select no
// configuration the encoder can run), and why the last one did not. A
// guest sees it by reading trTeEnable back; a host tool says it, since
// the trace then lacks what the encoder would have traced.
func (e *Encoder) RefusedEnables() (n int, last error) { return e.refused, e.lastRefused }

// Dump writes every register, as mapped at base.
func (e *Encoder) Dump(w io.Writer, base uint64) error { e.sync(); return e.b.dump(w, base) }

func (e *Encoder) active() bool  { return e.b.val[0]&1 != 0 }
func (e *Encoder) enabled() bool { return e.b.val[0]&2 != 0 }
func (e *Encoder) tracing() bool { return e.b.val[0]&4 != 0 }

// sync brings the status bits (trTeEmpty, trTeInstStallOrOverflow,
// timestamp counter) up to date.
func (e *Encoder) sync() {
	if !e.active() {
		return
	}
	empty := uint32(1)
	if e.run != nil && e.produced() != e.out.sent {
		empty = 0
	}
	e.b.setField(TeControl, "trTeEmpty", empty)
	if e.out.lost {
		e.out.lost = false
		e.b.setField(TeControl, "trTeInstStallOrOverflow", 1)
		if e.dataImpl() && e.b.field(TeDataControl, "trTeDataTracing") != 0 {
			e.b.setField(TeDataControl, "trTeDataStallOrOverflow", 1)
		}
	}
	c := e.tsCounter()
	e.b.setField(TsCounterLow, "trTsCounterLow", uint32(c))
	e.b.setField(TsCounterHigh, "trTsCounterHigh", uint32(c>>32))
}

// ReadReg returns the register at byte offset off. While the encoder is in
// reset (trTeActive = 0) every register but trTeControl reads 0.
func (e *Encoder) ReadReg(off uint32) uint32 {
	if off != TeControl && !e.active() {
		return 0
	}
	e.sync()
	return e.b.read(off)
}

// WriteReg writes the register at byte offset off. It returns the error of
// flushing the encoder when the write disables it.
func (e *Encoder) WriteReg(off, v uint32) error {
	defer e.refresh()
	if off != TeControl {
		if !e.active() {
			return nil
		}
		old, _, ok := e.b.write(off, v)
		if !ok {
			return nil
		}
		e.legalize(off, old)
		if off == TsControl && v&4 != 0 { // trTsReset
			e.tsRaw = 0
		}
		return nil
	}
	return e.writeControl(v)
}

// legalize applies the WARL rules that depend on other fields.
func (e *Encoder) legalize(off, old uint32) {
	e.legalizeData(off, old)
	switch {
	case off == TeInstFeatures:
		e.fixFeatures(old)
	case off == TeInstFilters:
		e.b.val[e.b.reg(off)] &= 1<<NumFilters - 1
	case off == TsControl && e.tsMode() == TsModeShared && e.shared == nil:
		// no funnel to share a timestamp with: keep the old mode
		e.b.setField(TsControl, "trTsMode", old>>4&7)
	}
}

// fixFeatures keeps the trTeInstFeatures bits the format implements, the
// implicit return modes it has (N-Trace: 1..3; E-Trace: 3, a stack of
// full addresses), and a trTeSrcID that fits in trTeSrcBits.
func (e *Encoder) fixFeatures(old uint32) {
	i := e.b.reg(TeInstFeatures)
	r := &e.b.regs[i]
	v := e.b.val[i]
	format := e.b.field(TeControl, "trTeFormat")
	v = v&^featureBits | v&featuresFor[format]
	mode := r.Field("trTeInstImplicitReturnMode")
	em := e.etraceReturnMode()
	if m := mode.get(v); format == FormatETrace && m != em || m == 0 {
		if om := mode.get(old); om != 0 && (format == FormatNTrace || om == em) {
			v = mode.set(v, om)
		} else if format == FormatETrace {
			v = mode.set(v, em)
		} else {
			v = mode.set(v, 3)
		}
	}
	id, nb := r.Field("trTeSrcID"), r.Field("trTeSrcBits")
	if uint64(id.get(v)) >= 1<<nb.get(v) {
		v = id.set(v, id.get(old))
		if uint64(id.get(v)) >= 1<<nb.get(v) {
			v = id.set(v, 0)
		}
	}
	e.b.val[i] = v
}

// etraceReturnMode is the trTeInstImplicitReturnMode of the E-Trace
// encoder: 1 (counting) when its parameters give it a call counter and no
// return stack, else 3 (a return stack of full addresses).
func (e *Encoder) etraceReturnMode() uint32 {
	if p := &e.impl.ETrace.Params; p.CallCounterSize > 0 && p.ReturnStackSize == 0 {
		return 1
	}
	return 3
}

func (e *Encoder) writeControl(v uint32) error {
	wasActive, wasEnabled, wasTracing := e.active(), e.enabled(), e.tracing()
	if v&1 == 0 {
		// reset: flush first, then hold every register at its reset value
		var err error
		if wasEnabled {
			err = e.disable()
		}
		e.b.reset()
		e.tsRaw, e.tsSeen = 0, false
		return err
	}
	if !wasActive {
		// release from reset: every field takes its reset value
		e.b.reset()
		e.b.val[0] |= 1
		e.fixData()
		return nil
	}
	old, _, _ := e.b.write(TeControl, v)
	// fields whose legal values depend on the format
	if f := e.b.field(TeControl, "trTeFormat"); f == FormatETrace {
		if m := e.b.field(TeControl, "trTeInstSyncMode"); m > 1 {
			// E-Trace counts packets only: keep the old mode if it is
			// legal, else counting packets
			if om := old >> 16 & 3; om <= 1 {
				m = om
			} else {
				m = 1
			}
			e.b.setField(TeControl, "trTeInstSyncMode", m)
		}
	}
	if (old>>24)&7 != e.b.field(TeControl, "trTeFormat") {
		e.fixFeatures(e.b.read(TeInstFeatures))
		e.b.setField(TeImpl, "trTeProtocolMajor", protocolMajor(e.b.field(TeControl, "trTeFormat")))
		e.fixData()
	}
	enable, tracing := e.enabled(), e.tracing()
	switch {
	case wasEnabled && !enable:
		return e.disable()
	case !wasEnabled && enable:
		e.b.setField(TeControl, "trTeInstStallOrOverflow", 0)
		e.b.setField(TeDataControl, "trTeDataStallOrOverflow", 0)
		e.b.setField(TeDataControl, "trTeDataDrop", 0)
		e.out.lost = false
		if err := e.enable(); err != nil {
			e.err = err
			e.refused, e.lastRefused = e.refused+1, err
			e.b.setField(TeControl, "trTeEnable", 0)
		}
	case wasEnabled && wasTracing && !tracing:
		return e.traceOff()
	}
	return nil
}

// protocolMajor is the protocol version reported for a format: N-Trace
// 1.0, E-Trace 2.0.
func protocolMajor(format uint32) uint32 {
	if format == FormatETrace {
		return 2
	}
	return 1
}

func (e *Encoder) traceOff() error {
	if e.run == nil {
		return nil
	}
	if e.plain {
		if !e.passed {
			return nil
		}
		e.passed = false
	}
	if err := e.run.TraceOff(); err != nil {
		e.err = err
		return err
	}
	return nil
}

// enable starts an encoder configured from the registers.
func (e *Encoder) enable() error {
	e.out.discard = false
	return e.start(false)
}

// start starts an encoder configured from the registers; after lost trace
// (restart) an N-Trace encoder begins with SYNC=7.
func (e *Encoder) start(restart bool) error {
	s, err := e.Settings()
	if err != nil {
		return err
	}
	e.err = nil
	e.last, e.haveLast = s, true
	e.noteStarted(s)
	if restart {
		s.NTrace.StartSync = ntrace.SyncFIFORestart
	}
	if s.Format == FormatNTrace {
		enc, err := ntrace.NewEncoder(e.out, s.NTrace)
		if err != nil {
			return err
		}
		e.run = e.filterStage(&s.Filter, enc)
		e.engine = enc
		e.produced = func() int64 { return enc.Stats().Bytes }
	} else {
		if e.img == nil {
			return fmt.Errorf("the E-Trace encoder needs the program image")
		}
		img := e.img
		if len(img.Segments()) == 0 {
			img = nil // an image without code: the encoder needs none (as package protocol's)
		}
		enc, err := etrace.NewEncoder(e.out, s.ETrace, img)
		if err != nil {
			return err
		}
		enc.OnPacket = e.impl.OnPacket
		var t tracer = enc
		if s.ETrace.Data != nil {
			de, err := etrace.NewDataEncoder(enc)
			if err != nil {
				return err
			}
			t, e.deng, e.dataRun = de, de, true
			if c := de.Config(); c.Split && len(e.reqRun) != 1<<c.LRIDWidth {
				e.reqRun = make([]bool, 1<<c.LRIDWidth)
			}
		}
		e.run = e.filterStage(&s.Filter, t)
		e.engine = enc
		e.produced = func() int64 { return int64(enc.Stats().Bytes) }
	}
	e.out.sent = 0
	if e.onEnable != nil {
		e.onEnable(s.Format)
	}
	return nil
}

// filterStage returns the filter stage in front of enc, or enc itself
// when c filters nothing: the encoder then passes a stop (TraceOff) on
// only when a block was passed since the last one (plain, passed), as
// filter.Sink does, without evaluating comparators and filters per block.
func (e *Encoder) filterStage(c *filter.Config, enc tracer) tracer {
	e.plain, e.passed = c.Empty(), false
	if e.plain {
		return enc
	}
	return filter.New(c, enc)
}

// restartAfterLoss handles trace lost on the way to the sink: the
// encoder whose bytes were lost is dropped, a record of the loss is sent
// (N-Trace: an Error message with ETYPE FIFO overrun; E-Trace: a support
// packet with qual_status trace_lost), and a new encoder starts (N-Trace:
// with SYNC=7, the restart after an overflow), so that a decoder reports
// the loss instead of decoding across it. It reports whether tracing
// resumed; while the record itself cannot be sent, trace stays lost.
func (e *Encoder) restartAfterLoss() bool {
	if e.run != nil {
		e.run.Close() // output discarded
		e.run = nil
		e.endData()
	}
	s, err := e.Settings()
	if err != nil {
		e.err = err
		return false
	}
	var rec []byte
	if s.Format == FormatNTrace {
		var m ntrace.Message
		m.Reset(ntrace.TCodeError)
		m.Set(ntrace.FieldETYPE, ntrace.ETypeFIFOOverrun).Set(ntrace.FieldECODE, 1<<2) // program trace lost
		if s.NTrace.SrcBits > 0 {
			m.Set(ntrace.FieldSRC, uint64(s.NTrace.SrcID))
		}
		w := s.NTrace.Wire()
		if rec, err = ntrace.AppendMessage(nil, &m, &w); err != nil {
			e.err = err
			return false
		}
	} else {
		var buf bytes.Buffer
		w := etrace.NewWriter(&buf, &s.ETrace)
		p := etrace.Packet{Format: etrace.FormatSync, Subformat: etrace.SubSupport, IEnable: 1,
			QualStatus: etrace.QualTraceLost, IOptions: s.ETrace.Options.Bits()}
		if d := s.ETrace.Data; d != nil {
			// as the encoder's own support packets
			p.DEnable, p.DOptions = 1, d.DOptions()
		}
		if err := w.Write(&p, 0); err != nil {
			e.err = err
			return false
		}
		if err := w.Flush(); err != nil {
			e.err = err
			return false
		}
		rec = buf.Bytes()
	}
	if n, err := e.out.w.Write(rec); err != nil || n < len(rec) {
		e.out.lost = true
		return false
	}
	e.out.discard = false
	if err := e.start(true); err != nil {
		e.err = err
		e.b.setField(TeControl, "trTeEnable", 0)
		return false
	}
	return true
}

// IdleByte returns the byte a sink pads the trace of a format with:
// N-Trace's idle byte 0xFF, or the null packet 0x00 of the E-Trace
// encapsulation.
func IdleByte(format int) byte {
	if format == FormatETrace {
		return 0x00
	}
	return 0xFF
}

// disable flushes the encoder (trTeEnable 1 -> 0).
func (e *Encoder) disable() error {
	if e.run == nil {
		return nil
	}
	err := e.passData(false)
	if cerr := e.run.Close(); err == nil {
		err = cerr
	}
	e.run = nil
	e.endData()
	if err != nil && e.err == nil {
		e.err = err
	}
	e.sync()
	return err
}

// Block takes one block of the hart's ingress port. It is traced when the
// encoder is active and enabled and trTeInstTracing is 1.
func (e *Encoder) Block(b *ingress.Block) error {
	if e.fast {
		// what block below does in this state, in short (tsTick when
		// the encoder's unit does not count)
		if e.shared != nil {
			e.shared.tick(b.Time)
		}
		e.tsLast, e.tsSeen = b.Time, true
		e.passed = true
		if err := e.run.Block(b); err != nil {
			e.err = err
			return err
		}
		return nil
	}
	if len(e.dheld) > 0 {
		defer e.refresh() // the accesses held go (or are dropped) now
	}
	return e.block(b)
}

// branchRunner is an encoder that takes runs of conditional branch
// blocks at once (ntrace.Encoder.Branches, etrace.Encoder.Branches).
type branchRunner interface {
	Branches(bs []ingress.Block) (int, error)
}

// Blocks takes bs as Block would one by one (sim.BlockBatcher). On the
// fast path, without a funnel link, runs of conditional branches go to an
// encoder's Branches, with the bookkeeping Block does for each (the last
// time seen, a block passed); after each run the state is looked at
// again, as Block does before every block.
func (e *Encoder) Blocks(bs []ingress.Block) error {
	br, _ := e.run.(branchRunner)
	if br == nil {
		// (the encoder changes only with the registers, or when it
		// restarts after lost trace: with the same protocol)
		for i := range bs {
			b := &bs[i]
			if e.fast && e.shared == nil {
				// Block's fast path
				e.tsLast, e.tsSeen = b.Time, true
				e.passed = true
				if err := e.run.Block(b); err != nil {
					e.err = err
					return err
				}
				continue
			}
			if err := e.Block(b); err != nil {
				return err
			}
		}
		return nil
	}
	for len(bs) > 0 {
		if e.fast && e.shared == nil {
			k, err := br.Branches(bs)
			if k > 0 {
				e.tsLast, e.tsSeen = bs[k-1].Time, true
				e.passed = true
				bs = bs[k:]
			}
			if err != nil {
				e.err = err
				return err
			}
			if k > 0 {
				continue
			}
		}
		if err := e.Block(&bs[0]); err != nil {
			return err
		}
		bs = bs[1:]
		if br, _ = e.run.(branchRunner); br == nil {
			return e.Blocks(bs)
		}
	}
	return nil
}

// refresh decides whether Block takes its fast path (fast); it is called
// after every change of the registers, of the running encoder or of the
// funnel link.
func (e *Encoder) refresh() {
	ts := e.b.val[e.tsIdx]
	m := ts >> 4 & 7
	e.fast = e.b.val[0]&7 == 7 && e.run != nil &&
		ts&3 != 3 && m != TsModeInternalCore && m != TsModeShared &&
		!e.out.discard && len(e.dheld) == 0
}

// block is Block in every state: the timestamp unit, data accesses held,
// restart after lost trace.
func (e *Encoder) block(b *ingress.Block) error {
	ctl := e.b.val[0]
	if ctl&1 == 0 { // trTeActive
		return nil
	}
	if len(e.dheld) > 0 && ctl&6 != 6 {
		if err := e.passData(false); err != nil {
			return err
		}
	}
	if e.shared != nil || e.b.val[e.tsIdx]&3 == 3 {
		e.tsTick(b.Time)
	} else {
		e.tsLast, e.tsSeen = b.Time, true // (tsTick when nothing counts)
	}
	if ctl&6 != 6 { // trTeEnable, trTeInstTracing
		return nil
	}
	if e.out.discard {
		ok := e.restartAfterLoss()
		e.refresh()
		if !ok {
			if len(e.dheld) > 0 {
				e.dheld = e.dheld[:0] // trace still lost; no encoder has their requests
			}
			return nil // still lost
		}
	}
	if e.run == nil {
		e.dheld = e.dheld[:0]
		return nil
	}
	if len(e.dheld) > 0 {
		if err := e.passData(true); err != nil {
			return err
		}
	}
	if m := e.tsMode(); m == TsModeInternalCore || m == TsModeShared {
		e.blk = *b
		e.blk.Time = e.tsCounter()
		b = &e.blk
	}
	e.passed = true
	if err := e.run.Block(b); err != nil {
		e.err = err
		return err
	}
	return nil
}

// Close flushes the encoder if it is enabled, as disabling it would,
// without changing the registers.
func (e *Encoder) Close() error {
	defer e.refresh()
	if e.run == nil {
		return nil
	}
	err := e.passData(false)
	if cerr := e.run.Close(); err == nil {
		err = cerr
	}
	e.run = nil
	e.endData()
	return err
}

// ExtTrigger fires external trigger input n. Input 0 is the only one: its
// action (trTeTrigExtInAction0) turns instruction tracing on (2) or off
// (3) when trTeInstTrigEnable is 1, or asks for the current PC (4).
func (e *Encoder) ExtTrigger(n int) error {
	if n != 0 || !e.active() {
		return nil
	}
	return e.trigger(e.b.field(TeTrigExtInCtrl, "trTeTrigExtInAction0"))
}

// DebugTrigger performs the trace action of a debug module trigger (the
// action field of mcontrol: 2 trace-on, 3 trace-off, 4 trace-notify).
func (e *Encoder) DebugTrigger(action int) error {
	if !e.active() || action < 2 || action > 4 {
		return nil
	}
	return e.trigger(uint32(action))
}

func (e *Encoder) trigger(action uint32) error {
	defer e.refresh()
	trig := e.b.field(TeControl, "trTeInstTrigEnable") == 1
	switch action {
	case 2:
		if trig {
			e.b.setField(TeControl, "trTeInstTracing", 1)
		}
	case 3:
		if trig && e.tracing() {
			e.b.setField(TeControl, "trTeInstTracing", 0)
			if e.enabled() {
				return e.traceOff()
			}
		}
	case 4:
		if e.run != nil && e.tracing() {
			return e.run.Notify()
		}
	}
	return nil
}

// tsTick advances the timestamp unit to time t (Internal Core: the hart's
// clock).
func (e *Encoder) tsTick(t uint64) {
	if e.shared != nil {
		e.shared.tick(t)
	}
	if ts := e.b.val[e.tsIdx]; ts&3 == 3 { // trTsActive, trTsCount
		switch ts >> 4 & 7 { // trTsMode
		case TsModeInternalCore:
			if e.tsSeen && t > e.tsLast {
				e.tsRaw += t - e.tsLast
			}
		case TsModeExternal:
			e.tsRaw = t // the time input, as the block carries it
		}
	}
	e.tsLast, e.tsSeen = t, true
}

// tsCounter is the timestamp counter after the prescaler (External: the
// time input last seen, which has no prescaler).
func (e *Encoder) tsCounter() uint64 {
	switch e.tsMode() {
	case TsModeShared:
		return e.shared.tsCounter()
	case TsModeExternal:
		return e.tsRaw
	}
	return e.tsRaw >> (2 * (e.b.val[e.tsIdx] >> 8 & 3)) // trTsPrescale
}

// tsMode is trTsMode (read on every block: no table look-up).
func (e *Encoder) tsMode() uint32 { return e.b.val[e.tsIdx] >> 4 & 7 }

// LastSettings returns the configuration of the encoder last started
// (by trTeEnable), which stays what a decoder of its trace needs after
// the registers are changed or reset; ok is false if none was started.
func (e *Encoder) LastSettings() (s Settings, ok bool) { return e.last, e.haveLast }

// maxStartedSettings bounds the distinct configurations an Encoder
// remembers for StartedSettings: a guest reprogramming it at every enable
// must not grow memory without bound.
const maxStartedSettings = 16

// noteStarted remembers s among the distinct settings started.
func (e *Encoder) noteStarted(s Settings) {
	for i := range e.started {
		if reflect.DeepEqual(e.started[i], s) {
			return
		}
	}
	if len(e.started) < maxStartedSettings {
		e.started = append(e.started, s)
	}
}

// StartedSettings returns the distinct configurations the encoder was
// started with (by trTeEnable), in the order they were first used; at
// most 16 are kept. A trace of an encoder started with configurations
// that decode differently needs a decoder configured for each part (a
// decoder of one configuration shows the other parts as gaps).
func (e *Encoder) StartedSettings() []Settings { return e.started }

// Settings returns the encoder configuration the registers select.
func (e *Encoder) Settings() (Settings, error) {
	f := func(off uint32, name string) uint32 { return e.b.field(off, name) }
	on := func(off uint32, name string) bool { return f(off, name) != 0 }
	s := Settings{Format: int(f(TeControl, "trTeFormat"))}
	srcBits := int(f(TeInstFeatures, "trTeSrcBits"))
	if on(TeControl, "trTeInhibitSrc") {
		srcBits = 0
	}
	srcID := f(TeInstFeatures, "trTeSrcID")
	ts := on(TsControl, "trTsActive") && on(TsControl, "trTsEnable") && f(TsControl, "trTsMode") != TsModeNone
	if f(TsControl, "trTsMode") == TsModeShared && !e.shared.sharing() {
		return Settings{}, fmt.Errorf("trTsMode is Shared but the funnel's timestamp unit is not running (trTsActive, trTsMode = Internal System)")
	}
	syncMode, syncMax := int(f(TeControl, "trTeInstSyncMode")), int(f(TeControl, "trTeInstSyncMax"))
	ir := 0
	if on(TeInstFeatures, "trTeInstEnImplicitReturn") {
		ir = int(f(TeInstFeatures, "trTeInstImplicitReturnMode"))
	}
	switch s.Format {
	case FormatNTrace:
		c := e.impl.NTrace // the implementation parameters
		c.Mode = ntrace.Mode(f(TeControl, "trTeInstMode"))
		c.SrcBits, c.SrcID = srcBits, srcID
		c.RepeatedHistory = on(TeInstFeatures, "trTeInstEnRepeatedHistory")
		c.ImplicitReturn = ir
		c.SequentialJump = on(TeInstFeatures, "trTeInstEnSequentialJump")
		c.ExtendAddrMSB = on(TeInstFeatures, "trTeInstExtendAddrMSB")
		c.AllJumps = on(TeInstFeatures, "trTeInstEnAllJumps")
		c.Timestamps = ts
		c.Context = on(TeControl, "trTeContext")
		c.SyncMode, c.SyncMax = syncMode, syncMax
		c.XLEN = e.xlen
		s.NTrace = c
		if err := s.NTrace.Validate(); err != nil {
			return s, err
		}
	case FormatETrace:
		c := e.impl.ETrace // the implementation parameters
		c.Params.NoContext = !on(TeControl, "trTeContext")
		c.Params.NoTime = !ts
		c.Options = etrace.Options{
			FullAddress:       on(TeInstFeatures, "trTeInstNoAddrDiff"),
			ImplicitException: on(TeInstFeatures, "trTeInstNoTrapAddr"),
			SIJump:            on(TeInstFeatures, "trTeInstEnSequentialJump"),
			ImplicitReturn:    ir != 0,
			BranchPrediction:  on(TeInstFeatures, "trTeInstEnBranchPrediction"),
			JumpTargetCache:   on(TeInstFeatures, "trTeInstEnJumpTargetCache"),
		}
		c.SrcBits, c.SrcID = srcBits, srcID
		c.ResyncPeriod = 0
		if syncMode == 1 {
			c.ResyncPeriod = 1 << (syncMax + 4)
		}
		c.Data = e.dataConfig()
		if d := c.Data; d != nil && d.Harts > 1 && srcBits > 0 && srcID >= uint32(d.Harts) {
			n := d.Harts
			return s, fmt.Errorf("trTeSrcID %d with data trace of %d harts: hart h's data packets carry source ID %d + its trTeSrcID, and a decoder of the %d harts (--data-harts %d) takes source IDs %d to %d as data packets: an encoder's trTeSrcID must be below %d",
				srcID, n, n, n, n, n, 2*n-1, n)
		}
		if err := c.Check(); err != nil {
			return s, err
		}
		s.ETrace = c
	default:
		return s, fmt.Errorf("trTeFormat %d is not implemented", s.Format)
	}
	var err error
	if s.Filter, err = e.filterConfig(s.Format == FormatETrace && s.ETrace.Data != nil); err != nil {
		return s, err
	}
	if s.Filter.HasData() {
		// what a decoder of the trace needs to know
		s.ETrace.Data.Filter = &filter.Config{DataComparators: s.Filter.DataComparators, DataFilters: s.Filter.DataFilters}
	}
	if on(TeControl, "trTeInstTrigEnable") {
		t := &e.impl.Triggers
		s.Filter.TraceOn, s.Filter.TraceOff, s.Filter.Notify = t.TraceOn, t.TraceOff, t.Notify
	}
	return s, nil
}

// filterConfig builds the filter stage from trTeInstFilters,
// trTeDataFilters (when data is traced) and the filter and comparator
// registers. Filters not selected, or not enabled, do not qualify
// anything; when no filter is selected every instruction (every access
// of a traced instruction) is traced. A selected filter that asks for
// what the filter stage does not evaluate is an error.
func (e *Encoder) filterConfig(data bool) (filter.Config, error) {
	var c filter.Config
	sel := e.b.field(TeInstFilters, "trTeInstFilters")
	notify := false
	comps := make([]filter.Comparator, NumComparators)
	for j := range comps {
		base := uint32(TeCompBase + FilterStride*j)
		ctl := e.b.read(base + CompControl)
		notify = notify || ctl&(3<<14) != 0
		comps[j] = filter.Comparator{
			PInput:  filter.Input(ctl & 3),
			SInput:  filter.Input(ctl >> 2 & 3),
			PFunc:   filter.Func(ctl >> 4 & 7),
			SFunc:   filter.Func(ctl >> 8 & 7),
			Mode:    filter.MatchMode(ctl >> 12 & 3),
			PNotify: ctl&(1<<14) != 0,
			SNotify: ctl&(1<<15) != 0,
			PMatch:  uint64(e.b.read(base+CompPMatchHigh))<<32 | uint64(e.b.read(base+CompPMatchLow)),
			SMatch:  uint64(e.b.read(base+CompSMatchHigh))<<32 | uint64(e.b.read(base+CompSMatchLow)),
		}
	}
	used := false
	for i := 0; i < NumFilters; i++ {
		base := uint32(TeFilterBase + FilterStride*i)
		ctl := e.b.read(base + FilterControl)
		if sel&(1<<i) == 0 || ctl&1 == 0 {
			continue
		}
		used = true
		if ctl&filterMatchDtype != 0 {
			return c, fmt.Errorf("trTeFilter%dControl: filter %d qualifies instruction trace (trTeInstFilters) and matches the dtype of data accesses, which instructions do not have", i, i)
		}
		inst := e.b.read(base + FilterMatchInst)
		fl := filter.Filter{
			MatchPrivilege: ctl&(1<<1) != 0,
			Privileges:     uint8(inst),
			MatchEcause:    ctl&(1<<2) != 0,
			Ecauses:        uint64(e.b.read(base+FilterEcauseHigh))<<32 | uint64(e.b.read(base+FilterEcauseLow)),
			MatchInterrupt: ctl&(1<<3) != 0,
			Interrupt:      inst&(1<<8) != 0,
			MatchImpdef:    ctl&(1<<16) != 0,
			ImpdefValue:    uint64(e.b.read(base + FilterImpdefValue)),
			ImpdefMask:     uint64(e.b.read(base + FilterImpdefMask)),
		}
		for _, sh := range []uint{4, 8, 12} {
			if ctl&(1<<sh) != 0 {
				j := int(ctl >> (sh + 1) & 7)
				if usesInput(&comps[j], filter.InDAddr) {
					return c, fmt.Errorf("trTeFilter%dControl: filter %d qualifies instruction trace (trTeInstFilters) with comparator %d, which compares the data address (daddr)", i, i, j)
				}
				fl.Comp = append(fl.Comp, j)
			}
		}
		c.Filters = append(c.Filters, fl)
	}
	if sel != 0 && !used {
		// Filters are selected but none is enabled: nothing qualifies.
		c.Filters = append(c.Filters, filter.Filter{MatchPrivilege: true, Privileges: 0})
	}
	if len(c.Filters) > 0 || notify {
		c.Comparators = comps
	}
	if !data {
		return c, nil
	}
	dsel := e.b.field(TeDataFilters, "trTeDataFilters")
	used = false
	for i := 0; i < NumFilters; i++ {
		base := uint32(TeFilterBase + FilterStride*i)
		ctl := e.b.read(base + FilterControl)
		if dsel&(1<<i) == 0 || ctl&1 == 0 {
			continue
		}
		used = true
		for _, x := range []struct {
			bit  uint32
			what string
		}{{1 << 2, "an exception cause"}, {1 << 3, "an interrupt or exception"}, {1 << 16, "impdef"}} {
			if ctl&x.bit != 0 {
				return c, fmt.Errorf("trTeFilter%dControl: filter %d qualifies data trace (trTeDataFilters) and matches %s, which the data filter stage does not evaluate for accesses", i, i, x.what)
			}
		}
		fl := filter.Filter{
			MatchPrivilege: ctl&(1<<1) != 0,
			Privileges:     uint8(e.b.read(base + FilterMatchInst)),
			MatchKind:      ctl&filterMatchDtype != 0,
			Kinds:          kindsOf(e.b.read(base + FilterMatchData)),
		}
		for _, sh := range []uint{4, 8, 12} {
			if ctl&(1<<sh) == 0 {
				continue
			}
			j := int(ctl >> (sh + 1) & 7)
			k := &comps[j]
			if usesInput(k, filter.InContext) || usesInput(k, filter.InTval) {
				return c, fmt.Errorf("trTeFilter%dControl: filter %d qualifies data trace (trTeDataFilters) with comparator %d, which compares the context or tval: a data filter compares iaddr or daddr", i, i, j)
			}
			if k.Mode == filter.MatchLatch {
				return c, fmt.Errorf("trTeFilter%dControl: filter %d qualifies data trace (trTeDataFilters) with comparator %d in match mode 3, which the data filter stage does not evaluate for accesses", i, i, j)
			}
			fl.Comp = append(fl.Comp, j)
		}
		c.DataFilters = append(c.DataFilters, fl)
	}
	if dsel != 0 && !used {
		// Filters are selected but none is enabled: no access qualifies.
		c.DataFilters = append(c.DataFilters, filter.Filter{MatchPrivilege: true, Privileges: 0})
	}
	if len(c.DataFilters) > 0 {
		c.DataComparators = comps
	}
	return c, nil
}
