package ntrace

import (
	"bytes"
	"errors"
	"io"
	"slices"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/decode/parallel"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
)

// Parallel decoding (parallel.Parallel): the trace is cut before sync
// messages into pieces of about PieceBytes, decoders start afresh on
// the pieces at once, and a piece's events are used only when the state
// its decoder had after the sync it starts with (and the Ownership
// message right after it, its primer) equals the serial decoder's state
// there. A sync message resets what N-Trace resets at a sync (the
// addresses, I-CNT, HIST, the return stack and nesting counter, the
// periodic-sync counts, RepeatBranch's last message) but not what
// survives it: the privilege and context (until the Ownership message
// after the sync), the learned trace mode and B-TYPE style, the other
// sources of a multi-source trace, and the instructions held suspect
// when the sync is not a checkpoint (after an uninferable jump). These
// are compared (a piece's decoder starts with the mode and B-TYPE style
// learned by the pieces joined so far); the suspect count is carried into
// the piece's gaps (decode.OpenSuspect). A piece whose start state differs is decoded
// again, in sequence, by the decoder that decoded the pieces before it.
//
// Where no sync message turns up within parallel.HoldPieces pieces'
// worth of bytes (a single-sync capture), the split cuts the trace with
// no sync (parallel.Piece.Cont) at a message's end or inside a run of
// skipped bytes, so that the bytes it holds stay bounded; the decoder of
// the pieces before goes on through such a piece, its reader in the
// state the last one stopped in.
//
// Images that change at instruction counts (image.Set.Epochs: code
// rewritten while the traced system ran, from a sideband) make the
// address space a decoder follows depend on its instruction count, all
// sources together (the decoder looks it up afresh, image.Set.View, at
// every run it takes, at every Ownership message and source switch, and
// follows it until the next look-up). A piece's decoder starts counting
// from parallel.Piece.Base, a guess; when the pieces before are joined,
// the true count T before the piece is known. The speculation followed
// the view of count S+δ at each look-up δ instructions into the piece,
// the serial decoder the view of T+δ: the same view whenever no epoch e
// lies in (min(S,T)+δ, max(S,T)+δ]. Follows accepts the speculation only
// when the address space at the piece's start is the same object and no
// epoch lies in (min(S,T), max(S,T)+Δ], Δ being the instructions the
// piece decoded: every look-up then gave the serial decoder's view, so
// every run, event and image named in the events is the serial one. A
// guess that is exact (S = T) needs no such check. Otherwise the piece
// is decoded again in sequence.

// PieceBytes is the trace size of a piece of a parallel decode (a
// variable for tests, which cut small traces into many pieces). 16 KiB of
// N-Trace describe some hundreds of thousands of instructions, enough to
// amortise a piece's start, and their events (held in a compact form
// until the pieces before are joined) take a few megabytes.
var PieceBytes = 16 << 10

// SerialReason returns why DecodeJobs would decode the trace serially
// whatever the number of jobs, or "" when it can split it: an instruction
// limit, a decoder that has already decoded messages, or images that
// change at instruction counts in a trace of several sources
// (multipar.go).
func (d *Decoder) SerialReason() string {
	switch {
	case d.cfg.MaxInstructions > 0:
		return "an instruction limit is set"
	case d.index > 0:
		return "the decoder has already decoded messages"
	case d.cfg.Wire.SrcBits > 0 && len(d.w.Base.Epochs()) > 0:
		return "the images of a trace of several sources (SRC fields) change at instruction counts (a sideband)"
	}
	return ""
}

// DecodeJobs decodes r as Decode does, with the same events in the same
// order, gaps and warnings at the same offsets, the same statistics and
// the same error, decoding up to jobs pieces of the trace at once (see
// parallel.Parallel). With jobs <= 1, or when SerialReason is not "", it is
// Decode. Memory stays bounded by about 2*jobs pieces and their events.
func (d *Decoder) DecodeJobs(r io.Reader, jobs int) error {
	return d.decodeJobs(r, jobs, PieceBytes)
}

// ParallelStats returns the pieces of the last DecodeJobs and how many of
// them were decoded again in sequence (their speculative decode could not
// be used). The pieces cut where no sync turned up (parallel.Piece.Cont),
// decoded in sequence only, count among the pieces, not as decoded again.
func (d *Decoder) ParallelStats() (pieces, redone int) { return d.pieces, d.redone }

func (d *Decoder) decodeJobs(r io.Reader, jobs, size int) error {
	if jobs <= 1 || d.SerialReason() != "" {
		return d.Decode(r)
	}
	var total int64
	pp := &parallel.Parallel{Jobs: jobs, Sink: d.w.Sink, Observe: d.obs != nil,
		Fresh: func() parallel.Part { return d.fresh() },
		Split: func(emit func(*parallel.Piece) error) error {
			n, err := d.splitter()(r, size, emit)
			total = n
			return err
		}}
	last, err := pp.Run()
	d.pieces, d.redone = pp.Pieces, pp.Redone
	if last != nil {
		fd := last.(*part).d
		if err == nil {
			fd.w.Sink, fd.obs = d.w.Sink, d.obs
			err = fd.end(total)
		}
		d.st = fd.st
	}
	return err
}

// part is a decoder of pieces (parallel.Part).
type part struct {
	d      *Decoder
	parent *Decoder
	// the state after the primer
	snapN       int
	snapSrc     srcState
	snapSt      Stats
	snapImg     *image.Set
	snapAny     bool
	snapOutside uint64
	multi       *multiSnap // a piece of a trace of several sources (multipar.go)
}

// fresh returns a decoder of pieces with d's configuration.
func (d *Decoder) fresh() *part {
	nd, err := NewDecoder(d.w.Base, d.w.Sink, d.cfg)
	if err != nil {
		panic("ntrace: a valid configuration became invalid: " + err.Error())
	}
	nd.obs = nil
	return &part{d: nd, parent: d}
}

// Reuse makes pt a fresh part keeping its decoder's straight-line runs
// (parallel.Reuser).
func (pt *part) Reuse() bool {
	np := pt.parent.fresh()
	np.d.w.Share(&pt.d.w)
	*pt = *np
	return true
}

// publish records the trace mode and B-TYPE style learned by the
// decoder that decoded the trace up to here: decoders started afresh on
// later pieces start with them (they survive syncs, and a piece's start
// state must equal the serial decoder's).
func (pt *part) publish() {
	if d := pt.d; len(d.order) == 1 {
		pt.parent.hint.Store(uint64(d.order[0].mode)&0xff | uint64(d.order[0].btype)<<8)
	}
	if pt.parent.cfg.Wire.SrcBits > 0 {
		pt.parent.hints.publish(pt.d.order)
	}
}

// reader returns a reader of data, which starts at byte offset.
func (d *Decoder) reader(data []byte, offset int64) *Reader {
	rd := NewReader(bytes.NewReader(data), d.cfg.Wire)
	rd.base = offset
	return rd
}

// Speculate decodes p afresh into sink, a *parallel.Recorder.
func (pt *part) Speculate(p *parallel.Piece, sink flow.Sink) error {
	d := pt.d
	rec := sink.(*parallel.Recorder)
	d.w.Sink = rec
	if pt.parent.obs != nil {
		d.obs = rec
	}
	d.index = p.Index
	// the count the piece starts from (a guess; Follows checks it), and
	// the address space there
	base := p.Base
	if p.Seq > 0 {
		base += guessSkew
	}
	d.st.Instructions = base
	if len(d.w.Base.Epochs()) > 0 {
		d.nextEpoch()
	}
	h := pt.parent.hint.Load()
	d.seedMode, d.seedBType = Mode(h&0xff), int(h>>8)
	rd := d.reader(p.Data, p.Offset)
	if p.Prime == 0 {
		// the first piece: as Decode (its decoder is the serial one)
		err := d.loop(rd, -1)
		d.st.Idles += rd.Idles()
		pt.publish()
		return err
	}
	if d.cfg.Wire.SrcBits > 0 {
		return pt.speculateMulti(p, rec, rd)
	}
	rec.Drop = true
	if err := d.loop(rd, p.Offset+int64(p.Prime)); err != nil {
		return err
	}
	rec.Drop = false
	if d.st.Instructions != base {
		// (a primer is a sync and an Ownership message: a decoder
		// starting on them decodes no instruction)
		return errPrimerInstructions
	}
	d.seedMode, d.seedBType = 0, 0 // (a source first seen after the primer starts as serially)
	pt.snapN = len(d.order)
	if pt.snapN == 1 {
		pt.snapSrc = *d.order[0]
	}
	pt.snapSt, pt.snapImg, pt.snapAny, pt.snapOutside = d.st, d.w.Img, d.anySync, d.outsideSyncs
	for _, s := range d.order {
		s.tally.Open()
	}
	d.revDep, d.openDep = false, false
	err := d.loop(rd, -1)
	d.st.Idles += rd.Idles()
	return err
}

// Continue decodes p after its primer into sink from the state reached.
func (pt *part) Continue(p *parallel.Piece, sink flow.Sink) error {
	d := pt.d
	d.w.Sink, d.obs = sink, pt.parent.obs
	rd := d.reader(p.Data[p.Prime:], p.Offset+int64(p.Prime))
	if p.Cont {
		// the bytes go on from where the last piece's stopped, maybe
		// inside a run of skipped bytes
		rd.resync, rd.before = d.tailResync, d.tailIdles
	}
	err := d.loop(rd, -1)
	d.st.Idles += rd.Idles()
	pt.publish()
	return err
}

// Follows compares prev's state with the state pt started from after its
// primer, and takes over prev's counts when they are the same.
func (pt *part) Follows(prevPart parallel.Part) (func(uint32) uint64, bool, bool) {
	a, b := prevPart.(*part).d, pt.d
	if b.cfg.Wire.SrcBits > 0 {
		return pt.followsMulti(a)
	}
	if len(a.order) != 1 || pt.snapN != 1 {
		// several sources: a piece starts with the one of its sync only
		return nil, false, len(a.order) > 1
	}
	sa := a.order[0]
	if !sameState(sa, &pt.snapSrc) || a.one != sa || a.w.Img != pt.snapImg || a.anySync != pt.snapAny ||
		sa.tally.IsOpen() {
		return nil, false, false
	}
	if !parallel.EpochsAgree(a.w.Base.Epochs(), a.st.Instructions, pt.snapSt.Instructions, b.st.Instructions-pt.snapSt.Instructions) {
		return nil, false, false
	}
	carry := sa.tally.Suspect()
	if !sa.synced {
		carry = 0
	}
	if b.openDep && carry == 0 || b.revDep && a.w.LastRange().N != 0 {
		return nil, false, false
	}
	// Take over prev's counts.
	s := b.srcs[uint64(sa.id)]
	s.tally = s.tally.After(sa.tally)
	pt.takeCounts(a)
	id := sa.id
	return func(src uint32) uint64 {
		if src == id {
			return carry
		}
		return 0
	}, true, false
}

// takeCounts makes pt's decoder, which followed a (Follows), hold a's
// counts and what a learned of the trace followed by its own, and
// publishes what it learned.
func (pt *part) takeCounts(a *Decoder) {
	b := pt.d
	b.st.addSince(&a.st, &pt.snapSt)
	if a.outsideSyncs > 0 {
		b.firstOutside = a.firstOutside
	}
	b.outsideSyncs += a.outsideSyncs - pt.snapOutside
	b.cutMsg = b.cutMsg || a.cutMsg
	pt.publish()
}

// guessSkew is added to the count a piece's decoder starts from (tests
// make the guess wrong with it).
var guessSkew uint64

// errPrimerInstructions: a piece's primer decoded instructions; it is
// decoded in sequence.
var errPrimerInstructions = errors.New("ntrace: the primer of a piece decoded instructions")

// Instructions returns the instructions the part's decoder counted
// (parallel.Counter).
func (pt *part) Instructions() uint64 { return pt.d.st.Instructions }

// sameState reports whether a source in state a decodes what follows as
// one in state b does: everything a sync does not reset is equal, and
// what it resets too, in case the sync failed (or, in a trace of several
// sources, the source decoded messages after its sync before the end of
// the primer: multipar.go). The tally is not compared (Follows carries
// it), nor what is written before it is read (prevMsg, dueRanges: the
// caller's).
func sameState(a, b *srcState) bool {
	if a.id != b.id || a.context != b.context || a.synced != b.synced || a.seen != b.seen ||
		a.ended != b.ended || a.lost != b.lost || a.mode != b.mode || a.btype != b.btype || a.ts != b.ts ||
		a.ctx != b.ctx || a.lastMsg != b.lastMsg || a.lastBT != b.lastBT || a.hwSync != b.hwSync ||
		a.msgSync != b.msgSync || a.fillSync != b.fillSync || a.dueExact != b.dueExact || a.pc != b.pc || a.addr != b.addr || a.icntAcc != b.icntAcc || a.used != b.used ||
		a.calls != b.calls || a.callsMax != b.callsMax || a.haveBr != b.haveBr || a.priv != b.priv ||
		a.prevOK != b.prevOK || a.ovPending || b.ovPending {
		return false
	}
	if !a.stack.Equal(&b.stack) || a.dueHist != b.dueHist || a.dueFull != b.dueFull || a.fullLast != b.fullLast ||
		a.chain != b.chain || a.chainLast != b.chainLast || a.histRec != b.histRec || a.histBound != b.histBound ||
		a.histFloor != b.histFloor || a.lastFull != b.lastFull || !slices.Equal(a.rfPts[a.rfHead:], b.rfPts[b.rfHead:]) {
		return false
	}
	// (read only after a RepeatBranch, after a ResourceFull RCODE=0 since
	// the last I-CNT field, and with points still to walk)
	if a.lastMsg == TCodeRepeatBranch && a.lastBCnt != b.lastBCnt || a.icntAcc != 0 && a.rfBase != b.rfBase ||
		a.rfHead < len(a.rfPts) && a.rfPos != b.rfPos {
		return false
	}
	if a.haveBr && !a.last.same(&b.last) {
		return false
	}
	if a.ts && (a.time != b.time || a.hasTime != b.hasTime) {
		return false
	}
	// (the instruction, not where each decoder keeps it)
	if a.prevOK && ((a.prevIn == nil) != (b.prevIn == nil) || a.prevIn != nil && *a.prevIn != *b.prevIn ||
		a.prevPC != b.prevPC) {
		return false
	}
	return true
}

// same reports whether RepeatBranch repeats the same message after b as
// after o (the fields a message without a B-TYPE, U-ADDR and HIST does
// not set are left from the one before).
func (b *lastBranch) same(o *lastBranch) bool {
	if b.tcode != o.tcode || b.has != o.has || b.icnt != o.icnt || b.offset != o.offset {
		return false
	}
	return b.has&^(1<<FieldICNT) == 0 || b.btype == o.btype && b.uaddr == o.uaddr && b.hist == o.hist
}

// suspect returns the instructions of s held suspect, with
// decode.OpenSuspect set when the point known good lies before the
// piece this decoder started on.
func (d *Decoder) suspect(s *srcState) uint64 {
	n := s.tally.Suspect()
	if s.tally.IsOpen() {
		n |= decode.OpenSuspect
	}
	return n
}

// anySuspect reports whether s holds some instructions suspect; when that
// depends on instructions before the piece this decoder started on, it
// answers yes and records the dependency (Follows checks it).
func (d *Decoder) anySuspect(s *srcState) bool {
	if s.tally.Suspect() > 0 {
		return true
	}
	if s.tally.IsOpen() {
		d.openDep = true
		return true
	}
	return false
}

// addSince sets s to prev plus what s counted since snap.
func (s *Stats) addSince(prev, snap *Stats) {
	s.Bytes += prev.Bytes - snap.Bytes
	s.Messages += prev.Messages - snap.Messages
	s.Idles += prev.Idles - snap.Idles
	s.Errors += prev.Errors - snap.Errors
	for i := range s.ByTCode {
		s.ByTCode[i] += prev.ByTCode[i] - snap.ByTCode[i]
		s.BytesByTCode[i] += prev.BytesByTCode[i] - snap.BytesByTCode[i]
	}
	s.Instructions += prev.Instructions - snap.Instructions
	s.Halfwords += prev.Halfwords - snap.Halfwords
	s.Blocks += prev.Blocks - snap.Blocks
	s.Gaps += prev.Gaps - snap.Gaps
	s.Warnings += prev.Warnings - snap.Warnings
	s.OverlongICNT += prev.OverlongICNT - snap.OverlongICNT
	s.Checkpoints += prev.Checkpoints - snap.Checkpoints
	s.Overflows += prev.Overflows - snap.Overflows
	s.Dropped += prev.Dropped - snap.Dropped
	s.LostHalfwords += prev.LostHalfwords - snap.LostHalfwords
}

// splitter returns the split of d's traces: split, or for a trace of
// several sources (messages with a SRC field) splitMulti.
func (d *Decoder) splitter() func(io.Reader, int, func(*parallel.Piece) error) (int64, error) {
	if d.cfg.Wire.SrcBits > 0 {
		return d.splitMulti
	}
	return d.split
}

// split reads the trace and cuts it into pieces of about size bytes,
// each starting with a sync message that parses (and, as its primer,
// with the Ownership message of the same source right after it), found
// with the framing a serial decode reads; and, where no such sync turns
// up within parallel.HoldPieces*size bytes, at the end of a message or
// inside a run of skipped bytes (idle, or after a malformed message),
// with no sync (a parallel.Piece.Cont piece, which the decoder of the
// pieces before goes on through, its reader in the same state: tailResync,
// tailIdles). It returns the size of the trace.
func (d *Decoder) split(r io.Reader, size int, emit func(*parallel.Piece) error) (int64, error) {
	sr := d.newSplitReader(r, size, emit)
	var m Message
	var readErr error
	for {
		if err := sr.force(); err != nil {
			return 0, err
		}
		i, err := sr.next(&m)
		if err == io.EOF {
			break
		}
		if err != nil {
			if readErr = sr.readErr(err); readErr != nil {
				break
			}
			continue
		}
		if !m.TCode.IsSync() || !sr.c.AtSync(m.Offset) || !sr.parse() {
			continue
		}
		at, end, src := m.Offset, m.Offset+int64(m.Size), sr.full.Get(FieldSRC)
		// the Ownership message after it (the reader pausing in a
		// long run of idle bytes after the sync: none, the primer is
		// the sync alone, and the run is cut as any other)
		_, err = sr.next(&m)
		if readErr = sr.readErr(err); readErr != nil {
			break
		}
		if err == nil && m.TCode == TCodeOwnership && m.Offset == end && sr.parse() && sr.full.Get(FieldSRC) == src {
			end += int64(m.Size)
		}
		if err := sr.c.Sync(at, i, end, 0); err != nil {
			return 0, err
		}
		sr.rd.pause = sr.c.Limit()
	}
	return sr.end(readErr)
}

// splitReader reads a trace for a split (split, splitMulti) with the
// framing a serial decode reads, keeping each message's bytes, through
// the Cutter c, and stops in a run of skipped bytes where c may cut it.
type splitReader struct {
	rd   *Reader
	c    *parallel.Cutter
	cfg  *WireConfig
	idx  int64   // the messages and malformed byte runs read (Decoder.index)
	full Message // the message parse parsed
	raw  [MaxMessageBytes]byte
}

// newSplitReader returns a splitReader of r cutting pieces of about size
// bytes for emit.
func (d *Decoder) newSplitReader(r io.Reader, size int, emit func(*parallel.Piece) error) *splitReader {
	t := &parallel.Tee{R: r}
	sr := &splitReader{c: &parallel.Cutter{Tee: t, Size: size, Max: parallel.HoldPieces * size, Emit: emit},
		rd: NewReader(t, d.cfg.Wire), cfg: &d.cfg.Wire}
	sr.rd.frame, sr.rd.keep = true, true
	sr.rd.pause = sr.c.Limit()
	return sr
}

// force cuts the trace where no sync turned up (parallel.Cutter.Force),
// at the reader's offset, when it is due there.
func (sr *splitReader) force() error {
	if off := sr.rd.Offset(); sr.c.Due(off) {
		if err := sr.c.Force(off, sr.idx); err != nil {
			return err
		}
		sr.rd.pause = sr.c.Limit()
	}
	return nil
}

// next reads the next message into m (its framing and TCODE) and returns
// its index; else io.EOF at the end, errPaused where the reader stopped
// in a run of skipped bytes (it then stops again where the split may cut,
// or a byte further), a *FormatError for a malformed message, or the read
// error.
func (sr *splitReader) next(m *Message) (int64, error) {
	err := sr.rd.Next(m)
	switch {
	case err == nil:
		sr.idx++
		return sr.idx - 1, nil
	case err == errPaused:
		sr.rd.pause = sr.c.Limit()
		if !sr.c.Due(sr.rd.Offset()) {
			// (the piece's primer ends later: skip one more byte)
			sr.rd.pause = sr.rd.Offset() + 1
		}
	case formatError(err):
		sr.idx++
	}
	return -1, err
}

// formatError reports whether err is a *FormatError (a malformed
// message).
func formatError(err error) bool {
	var fe *FormatError
	return errors.As(err, &fe)
}

// readErr returns err, an error of next, when it ends the trace: neither
// the end, nor a pause, nor a malformed message.
func (sr *splitReader) readErr(err error) error {
	if err == nil || err == io.EOF || err == errPaused || formatError(err) {
		return nil
	}
	return err
}

// parse parses the message just read into sr.full.
func (sr *splitReader) parse() bool {
	n := copy(sr.raw[:], sr.rd.raw)
	return parseMessage(sr.raw[:n], &sr.full, sr.cfg, nil) == nil
}

// end emits the last piece and returns the size of the trace and
// readErr.
func (sr *splitReader) end(readErr error) (int64, error) {
	total := sr.c.Tee.End()
	if err := sr.c.End(); err != nil {
		return 0, err
	}
	return total, readErr
}
