package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/decode/parallel"
	"github.com/rvtrace/rvtrace/flow"
)

// Parallel decoding (parallel.Parallel): the framed trace is cut before
// format 3 subformat 0 sync packets into pieces of about PieceBytes,
// decoders start afresh on the pieces at once, and a piece's events are
// used only when the state its decoder had after the sync packet it
// starts with (its primer) equals the serial decoder's state there.
//
// A sync packet met while synchronised makes the serial decoder walk to
// the instruction it reports and reset what a sync resets (the branch
// outcomes but the reported branch's, the return stack, the branch
// predictor, the jump target cache); a decoder starting there starts
// from the same instruction with the same reset state. What survives a
// sync is compared: the position (the address, its run's instruction,
// the reported branch's outcome), the privilege, context and address
// space, the options read from support packets, the data trace state,
// the packet index. Two things differ by construction and are carried
// over when the piece is joined:
//   - the range: the serial decoder's open range runs on across the sync
//     (E-Trace closes ranges at discontinuities), the piece's starts at the
//     reported instruction; the piece's first range event gets the serial
//     range's start and instructions (parallel.Recorder.ExtendFirstRange);
//   - the counts: the piece counts instructions from a guessed base
//     (parallel.Piece.Base, the count of the serial decoder after the
//     sync, its open range included) and its tallies are shifted by the
//     difference; images that change at instruction counts are followed
//     as in package ntrace (parallel.EpochsAgree).
//
// Where no sync packet turns up within parallel.HoldPieces pieces' worth
// of bytes (sync off, or a resync period that traps keep putting off),
// the split cuts the trace at a frame's end with no sync
// (parallel.Piece.Cont), so that the bytes it holds stay bounded; the
// decoder of the pieces before goes on through such a piece.
//
// A piece with a gap is decoded again in sequence (its Suspect counts and
// the checks of a gap depend on the instructions before the piece), as is
// one whose start state differs: the decoder that decoded the pieces
// before goes on through it.
//
// A trace of several sources (a Demux) is split the same way, with a
// primer that runs to a sync packet of every source: multipar.go.

// PieceBytes is the trace size of a piece of a parallel decode (a
// variable for tests, which cut small traces into many pieces).
var PieceBytes = 16 << 10

// unset marks the counts of a piece's decoder that the piece did not set
// (gapAt, irAt, optSince, arrivedAt): they are the serial decoder's.
const unset = ^uint64(0)

// jobsState is what DecodeJobs keeps in the Decoder.
type jobsState struct {
	pieces, redone int
}

// SerialReason returns why DecodeJobs would decode the trace serially
// whatever the number of jobs, or "" when it can split it.
func (d *Decoder) SerialReason() string {
	switch {
	case d.Data != nil:
		return "data trace packets are joined with the instruction trace"
	case d.nextIdx > 0:
		return "the decoder has already decoded packets"
	}
	return ""
}

// DecodeJobs decodes r as Decode does, with the same events in the same
// order, gaps and warnings at the same offsets, the same statistics and
// the same error, decoding up to jobs pieces of the trace at once (see
// parallel.Parallel). With jobs <= 1, or when SerialReason is not "", it
// is Decode. Memory stays bounded by about 2*jobs pieces and their
// events.
func (d *Decoder) DecodeJobs(r io.Reader, jobs int) error {
	return d.decodeJobs(r, jobs, PieceBytes)
}

// run decodes a trace in pieces (parallel.Parallel) into sink with parts
// from fresh, cut by split, which returns the size of the trace and the
// read error that ended it. It returns the part that decoded the last
// piece (nil if none did), the size, the read error and the error of
// the decode, and keeps the counts of pieces (ParallelStats).
func (js *jobsState) run(jobs int, sink flow.Sink, fresh func() parallel.Part,
	split func(emit func(*parallel.Piece) error) (int64, error, error)) (last parallel.Part, total int64, readErr, err error) {
	_, obs := sink.(flow.MessageObserver)
	pp := &parallel.Parallel{Jobs: jobs, Sink: sink, Observe: obs, Fresh: fresh,
		Split: func(emit func(*parallel.Piece) error) error {
			var err error
			total, readErr, err = split(emit)
			return err
		}}
	last, err = pp.Run()
	js.pieces, js.redone = pp.Pieces, pp.Redone
	return last, total, readErr, err
}

// ParallelStats returns the pieces of the last DecodeJobs and how many of
// them were decoded again in sequence (their speculative decode could not
// be used). The pieces cut where no sync turned up (parallel.Piece.Cont),
// decoded in sequence only, count among the pieces, not as decoded again.
func (d *Decoder) ParallelStats() (pieces, redone int) { return d.jobs.pieces, d.jobs.redone }

func (d *Decoder) decodeJobs(r io.Reader, jobs, size int) error {
	if jobs <= 1 || d.SerialReason() != "" {
		return d.Decode(r)
	}
	last, total, readErr, err := d.jobs.run(jobs, d.w.Sink, func() parallel.Part { return d.fresh() },
		func(emit func(*parallel.Piece) error) (int64, error, error) { return d.split(r, size, emit) })
	if last == nil {
		return err
	}
	fd := last.(*part).d
	fd.w.Sink = d.w.Sink
	fd.st.Bytes = uint64(total)
	if err == nil {
		switch {
		case readErr != nil:
			if err = fd.Flush(); err == nil {
				err = readErr
			}
		case total == 0:
			err = &decode.Error{Offset: 0, Index: 0, Err: decode.ErrEmpty}
		case !fd.sawSync:
			err = &decode.Error{Offset: 0, Index: 0, Err: fmt.Errorf("%w (format 3 subformat 0 or 1)", decode.ErrNoSync)}
		default:
			err = fd.Flush()
		}
	}
	d.st, d.tally = fd.st, fd.tally
	return err
}

// part is a decoder of pieces (parallel.Part).
type part struct {
	d      *Decoder
	parent *Decoder
	rec    *parallel.Recorder
	base   uint64 // the count after the primer
	off    int64  // the offset of its decoder's packet after the primer
	snap   snapshot
	snapSt Stats
}

// snapshot is what a piece's decoder holds after its primer, of what
// survives a sync.
type snapshot struct {
	synced, trapPending, pcNode, prevOK, enter, fail, irActive, depthChk bool
	storeTarget, pendOK, lastAddrPkt, prevF3, sawSync, viewChanged       bool
	dataKnown, dataOn, dataSkipped                                       bool
	phase, qn, fmLeft, depth                                             int
	pc, lastAddr, qbits, pbcLeft, context, rStart, rN                    uint64
	nextIdx                                                              int64
	opt, codecOpt                                                        Options
	img                                                                  any
	inst                                                                 uint64 // the class and length of the instruction at pc (when pcNode)
}

func (d *Decoder) snapshot() snapshot {
	s := snapshot{synced: d.synced, trapPending: d.trapPending, pcNode: d.pcNode != nil, prevOK: d.prevOK,
		enter: d.enter, fail: d.fail, irActive: d.irActive, depthChk: d.depthChk, storeTarget: d.storeTarget,
		pendOK: d.pendOK, lastAddrPkt: d.lastAddrPkt, prevF3: d.prevF3, sawSync: d.sawSync, viewChanged: d.w.Changed,
		dataKnown: d.dataKnown, dataOn: d.dataOn, dataSkipped: d.dataSkipped, phase: d.phase, qn: d.qn,
		fmLeft: d.fmLeft, depth: d.stack.Depth(), pc: d.pc, lastAddr: d.lastAddr, qbits: d.qbits, pbcLeft: d.pbcLeft,
		context: d.context, nextIdx: d.nextIdx, opt: d.opt, codecOpt: d.codec.Options, img: d.w.Img}
	if d.pcNode != nil {
		s.inst = uint64(d.pcNode.Inst.Class)<<8 | uint64(d.pcNode.Inst.Len)
	}
	s.context |= uint64(d.priv) << 62 // (contexts are narrower)
	return s
}

// fresh returns a decoder of pieces with d's configuration.
func (d *Decoder) fresh() *part {
	nd, err := NewDecoder(d.w.Base, d.w.Sink, d.cfg)
	if err != nil {
		panic("etrace: a valid configuration became invalid: " + err.Error())
	}
	nd.MaxSteps, nd.MaxWalk = d.MaxSteps, d.MaxWalk
	return &part{d: nd, parent: d}
}

// Reuse makes pt a fresh part keeping its decoder's runs (parallel.Reuser).
func (pt *part) Reuse() bool {
	np := pt.parent.fresh()
	np.d.w.Share(&pt.d.w)
	*pt = *np
	return true
}

// seed starts d with what the split learned before a piece (it survives
// syncs; parallel.Piece.Seed): the options of the last support packet
// (bits 0-31), bit 32 set when there was one, bit 33 data trace known,
// bit 34 on, bit 35 data packets skipped (warned).
func (d *Decoder) seed(h uint64) {
	if h&(1<<32) != 0 && !d.v026 {
		d.opt = OptionsFromBits(h & 0xffffffff)
		d.codec.Options = d.opt
	}
	d.dataKnown, d.dataOn, d.dataSkipped = h&(1<<33) != 0, h&(1<<34) != 0, h&(1<<35) != 0
}

// guessSkew is added to the count a piece's decoder starts from (tests
// make the guess wrong with it).
var guessSkew uint64

// errNoStart: a piece's primer did not leave its decoder on the sync
// packet's instruction; the piece is decoded in sequence.
var errNoStart = errors.New("etrace: the primer of a piece did not synchronise")

// frames decodes the frames of data, which starts at byte offset off, as
// Decode does (without its end-of-trace checks).
func (d *Decoder) frames(data []byte, off int64, obs flow.MessageObserver) error {
	sc := NewScanner(bytes.NewReader(data), &d.cfg)
	sc.base = off
	for {
		if !sc.Scan() {
			err := sc.Err()
			if err == nil {
				return nil
			}
			fe, ok := err.(*FramingError)
			if !ok {
				return err
			}
			if gerr := d.framingError(fe); gerr != nil {
				return gerr
			}
			if sc.Done() {
				return nil
			}
			continue
		}
		if err := d.frame(sc.Frame(), sc.Offset(), obs); err != nil {
			return err
		}
	}
}

// Speculate decodes p afresh into sink, a *parallel.Recorder.
func (pt *part) Speculate(p *parallel.Piece, sink flow.Sink) error {
	d := pt.d
	rec := sink.(*parallel.Recorder)
	pt.rec = rec
	d.w.Sink = rec
	var obs flow.MessageObserver
	if _, ok := pt.parent.w.Sink.(flow.MessageObserver); ok {
		obs = rec
	}
	d.nextIdx = p.Index
	d.seed(p.Seed)
	if p.Prime == 0 {
		// the first piece: as Decode
		pt.base = 0
		return d.frames(p.Data, p.Offset, obs)
	}
	// the count before the sync packet's instruction (a guess; Follows
	// checks it), and the address space there
	pt.base = p.Base
	if p.Seq > 0 {
		pt.base += guessSkew
	}
	pt.base = max(pt.base, 1) // (the sync's instruction counts)
	d.tally.Emit(pt.base - 1)
	if len(d.w.Base.Epochs()) > 0 {
		d.nextEpoch()
	}
	rec.Drop = true
	if err := d.frames(p.Data[:p.Prime], p.Offset, obs); err != nil {
		return err
	}
	rec.Drop = false
	if !d.synced || d.phase != phaseSynced || d.rN != 1 || d.rStart != d.pc || d.tally.Emitted()+d.rN != pt.base {
		return errNoStart
	}
	pt.snap, pt.snapSt, pt.off = d.snapshot(), d.st, d.off
	d.tally.Open()
	d.gapAt, d.irAt, d.optSince, d.arrivedAt = unset, unset, unset, unset
	return d.frames(p.Data[p.Prime:], p.Offset+int64(p.Prime), obs)
}

// Continue decodes p after its primer into sink from the state reached.
func (pt *part) Continue(p *parallel.Piece, sink flow.Sink) error {
	d := pt.d
	d.w.Sink = sink
	obs, _ := sink.(flow.MessageObserver)
	return d.frames(p.Data[p.Prime:], p.Offset+int64(p.Prime), obs)
}

// Instructions returns the instructions the part's decoder counted, its
// open range included (parallel.Counter).
func (pt *part) Instructions() uint64 { return pt.d.tally.Emitted() + pt.d.rN }

// Follows compares prev's state with the state pt started from after its
// primer, and takes over prev's counts when they are the same.
func (pt *part) Follows(prevPart parallel.Part) (func(uint32) uint64, bool, bool) {
	a, b := prevPart.(*part).d, pt.d
	s := pt.snap
	as := a.snapshot()
	// what the serial decoder's open range holds differs: the piece's
	// starts at the instruction the sync reports
	as.rStart, as.rN = s.rStart, s.rN
	// data packets skipped: the serial decoder warned before, the
	// piece's did not (and must not have in the piece)
	if as.dataSkipped && !s.dataSkipped && !b.dataSkipped {
		as.dataSkipped = false
	}
	if as != s || a.rN == 0 || b.st.Gaps != pt.snapSt.Gaps {
		return nil, false, false
	}
	t := a.tally.Emitted() + a.rN
	if !parallel.EpochsAgree(a.w.Base.Epochs(), t, pt.base, b.tally.Emitted()+b.rN-pt.base) {
		return nil, false, false
	}
	// the first range: the serial one, continued
	closed := b.tally.Emitted() != pt.base-1
	if closed && !pt.rec.ExtendFirstRange(a.rStart, a.rN-1) {
		return nil, false, false
	}
	// Take over prev's counts.
	shift := func(v uint64) uint64 { return v + t - pt.base }
	emitted := a.tally.Emitted()
	if closed {
		emitted = shift(b.tally.Emitted())
	} else {
		b.rStart, b.rN = a.rStart, b.rN+a.rN-1
	}
	// (no packet after the primer: the offset the serial decoder reports
	// the end of the trace at is that of the address packet it followed
	// before the sync, when there was one)
	b.takeCounts(a, shift, emitted, pt.off, &pt.snapSt)
	return nil, true, false
}

// takeCounts makes b, a piece's decoder at the end of its primer, hold
// the counts of the serial decoder a followed by its own: emitted is the
// instructions emitted (the caller decides whether b's first range is the
// serial one continued), shift maps b's other counts to the serial ones,
// and off and snap are b's offset and statistics at the end of its
// primer (b's offset is a's when no packet came after it). Both the
// single-source split (Follows) and each source of a multi-source piece
// (srcStart.takeOver) end with it.
func (b *Decoder) takeCounts(a *Decoder, shift func(uint64) uint64, emitted uint64, off int64, snap *Stats) {
	var tl decode.Tally
	tl.Emit(emitted)
	if b.tally.IsOpen() {
		tl.GoodAt(a.tally.Mark())
	} else {
		tl.GoodAt(shift(b.tally.Mark()))
	}
	b.tally = tl
	for _, f := range []struct{ piece, serial *uint64 }{{&b.gapAt, &a.gapAt}, {&b.irAt, &a.irAt},
		{&b.optSince, &a.optSince}, {&b.arrivedAt, &a.arrivedAt}} {
		if *f.piece == unset {
			*f.piece = *f.serial
		} else {
			*f.piece = shift(*f.piece)
		}
	}
	if b.off == off {
		b.off = a.off
	}
	b.dataSkipped = b.dataSkipped || a.dataSkipped
	b.preErr, b.preOff, b.preIdx, b.preWhat, b.preReported = a.preErr, a.preOff, a.preIdx, a.preWhat, a.preReported
	b.st.addSince(&a.st, snap)
}

// addSince sets s to prev plus what s counted since snap.
func (s *Stats) addSince(prev, snap *Stats) {
	s.Packets += prev.Packets - snap.Packets
	for i := range s.ByFormat {
		s.ByFormat[i] += prev.ByFormat[i] - snap.ByFormat[i]
		s.Sync[i] += prev.Sync[i] - snap.Sync[i]
	}
	s.Gaps += prev.Gaps - snap.Gaps
}

// nextFrame moves a split loop's scanner sc on to its next frame: it
// cuts the trace where c is due (idx packets read so far), skips the
// frames the framing layer rejects (each counted in *idx, as the serial
// decoder counts them: Demux.lost) and returns false at the end of the
// trace, with readErr the read error that ended it, if any; err is the
// Cutter's failure. (Due holds at the scanner's pause, Limit: the loop
// cuts there.)
func nextFrame(sc *Scanner, c *parallel.Cutter, idx *int64) (ok bool, readErr, err error) {
	for {
		if off := sc.Offset(); c.Due(off) {
			if err := c.Force(off, *idx); err != nil {
				return false, nil, err
			}
			sc.pause = c.Limit()
		}
		if sc.Scan() {
			return true, nil, nil
		}
		err := sc.Err()
		switch {
		case err == nil:
			return false, nil, nil
		case err == errPaused:
			continue
		}
		if _, ok := err.(*FramingError); !ok {
			return false, err, nil
		}
		*idx++
		if sc.Done() {
			return false, nil, nil
		}
	}
}

// split reads the trace and cuts it into pieces of about size bytes,
// each starting with a format 3 subformat 0 packet that parses (its
// primer), found with the framing a serial decode reads; and, where no
// such packet turns up within parallel.HoldPieces*size bytes, at the end
// of a frame (or inside a run of UTDD null packets) with no sync (a
// parallel.Piece.Cont piece, which the decoder of the pieces before goes
// on through: a frame's framing does not depend on the frames before it).
// It returns the size of the trace and the read error that ended it, if
// any.
func (d *Decoder) split(r io.Reader, size int, emit func(*parallel.Piece) error) (int64, error, error) {
	t := &parallel.Tee{R: r}
	c := &parallel.Cutter{Tee: t, Size: size, Max: parallel.HoldPieces * size, Emit: emit}
	sc := NewScanner(t, &d.cfg)
	sc.pause = c.Limit()
	codec := NewCodec(&d.cfg)
	var p Packet
	dataKnown, dataOn, skipped, support := false, false, false, false
	var idx int64
	var readErr error
	for {
		ok, rerr, err := nextFrame(sc, c, &idx)
		if err != nil {
			return 0, nil, err
		}
		if !ok {
			readErr = rerr
			break
		}
		fr := sc.Frame()
		if fr.Data {
			if dataKnown && !dataOn {
				idx++
			} else {
				skipped = true
			}
			continue
		}
		i := idx
		idx++
		pl := fr.Payload
		if overlong(pl) {
			continue // (malformed)
		}
		isSupport := fr.Support || !d.v026 && pl[0]&3 == FormatSync && pl[0]>>2&3 == SubSupport
		sync := !fr.Support && pl[0]&3 == FormatSync && pl[0]>>2&3 == SubStart
		if !isSupport && !(sync && c.AtSync(fr.Offset)) {
			continue
		}
		if codec.Parse(pl, fr.Support, &p) != nil {
			continue
		}
		if isSupport {
			support = true
			dataKnown, dataOn = true, p.DEnable != 0
			if !d.v026 {
				codec.Options = OptionsFromBits(p.IOptions)
			}
			continue
		}
		seed := uint64(codec.Options.Bits())
		for k, b := range []bool{support, dataKnown, dataOn, skipped} {
			if b {
				seed |= 1 << (32 + k)
			}
		}
		if err := c.Sync(fr.Offset, i, sc.Offset(), seed); err != nil {
			return 0, nil, err
		}
		sc.pause = c.Limit()
	}
	total := sc.Offset()
	if err := c.End(); err != nil {
		return 0, nil, err
	}
	return total, readErr, nil
}
