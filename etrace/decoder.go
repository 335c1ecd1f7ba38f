package etrace

import (
	"errors"
	"fmt"
	"io"
	"sort"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/decode/walk"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// Decoder turns E-Trace packets and the program image into the executed
// instruction flow. It implements the decoder algorithm of the
// specification, extended to the optional modes (see the package
// documentation). Create one with NewDecoder and feed it a byte stream
// with Decode, or packets with Packet.
type Decoder struct {
	cfg   Config
	codec *Codec
	// w follows the address space of the context (w.Img: a view of
	// w.Base) with its blocks, and builds the range and gap events
	w     walk.Walker
	opt   Options
	v026  bool
	lsb   uint
	amask uint64

	// MaxSteps bounds the runs followed for one packet without consuming
	// a branch outcome (a corrupt trace could otherwise loop forever).
	MaxSteps int
	// MaxWalk, if not zero, bounds the runs followed for one packet in
	// total (branch counts of the predictor can legitimately make a walk
	// billions of branches long; fuzzing bounds it).
	MaxWalk int
	// Data, if not nil, receives the data trace packets Decode reads and
	// sees every te_inst packet before the decoder (a DataJoiner).
	Data        DataHandler
	dataSkipped bool // a warning said the data packets are skipped
	// dataOn: the last support packet (dataKnown: there was one) says
	// data trace is enabled (denable)
	dataOn, dataKnown bool

	// nestNext: the last packet of this decoder was a trap packet with
	// thaddr=0 (byte nestOff; nestInt, nestFrom: its interrupt bit and
	// the privilege it states), so a trap packet after it reports a trap
	// taken before that trap's handler ran (nestedEPC); nested: the
	// packet being processed is such a packet's next one. (Not packet
	// indexes: in a Demux they count every source's frames.)
	nestNext, nested bool
	nestOff          int64
	nestInt          bool
	nestFrom         ingress.Priv

	synced      bool
	trapPending bool // a trap was reported with thaddr=0
	pc          uint64
	pcNode      *decode.Block // run whose last instruction is pc; nil when pc is inside a run
	prev        uint64
	prevOK      bool
	priv        ingress.Priv
	context     uint64
	lastAddr    uint64
	// enter: the sync packet being followed states a privilege or context
	// (enterPriv, enterCtx) other than the current one; the walk applies
	// it from the instruction the packet reports on (enterAt)
	enter     bool
	enterPriv ingress.Priv
	enterCtx  uint64

	qbits uint64 // branch outcomes to apply, oldest in bit 0 (1 = not taken)
	qn    int
	// a 31-branch map being followed with the branch predictor on: fmSkip
	// outcomes before it, fmLeft of its own left, fmOK while all were
	// predicted correctly
	fmSkip, fmLeft int
	fmOK           bool
	pbcLeft        uint64
	fail           bool // the branch after the predicted ones failed
	stack          decode.ReturnStack
	pred           predictor
	jtc            jumpCache

	pkt Packet // the packet being read
	// malformed: the last frame's packet could not be read (its length
	// byte may be the damaged part: a Demux then tells every source)
	malformed bool

	// the address packet waiting for the next packet
	pend    Packet
	pendOK  bool
	pendOff int64
	pendIdx int64
	// the packet being followed
	irActive    bool // R1 with irreport: the return at depth irDepth is not implicit
	irDepth     int
	depthChk    bool // R2/R3 with irreport: stop at depth irDepth
	storeTarget bool // the target reported is stored in the jump target cache

	lastAddrPkt bool // the previous packet was a format 0/1/2 address packet
	prevF3      bool // the previous te_inst packet was format 3 subformat 0 or 1, or reported an address
	hadPend     bool // an address packet was pending when this packet came
	pendAfter   bool // ... when the pending packet arrived
	zeroOK      bool // the walk may stop without moving (0.026 double reports)
	rStart      uint64
	rN          uint64
	off         int64
	ev          flow.Event

	st        Stats
	idx       int64        // index of the packet being processed
	nextIdx   int64        // index of the next packet
	tally     decode.Tally // instructions sent in ranges, and known good
	gapAt     uint64       // emitted at the last gap
	irAt      uint64       // emitted (and walked) when a return was last inferred
	arrivedAt uint64       // emitted when the walk arrived at the address stated
	// arrivedOK: the walk stopped at the address stated (not at the
	// target of an uninferable discontinuity)
	arrivedOK bool
	optSince  uint64 // emitted when the options were last read
	chkAddr   bool   // the walk's target address is a checkpoint (a full address)
	phase     int    // where the trace stands (phasePre, ...)
	sawSync   bool   // a format 3 subformat 0 or 1 packet was seen
	// the first packet skipped before the first sync, reported as a gap
	// when that sync comes
	preErr      error
	preOff      int64
	preIdx      int64
	preWhat     string
	preReported bool

	jobs jobsState // DecodeJobs (parallel.go)

	foreign map[uint32]bool // source IDs of frames of no configured source (the first 64)
}

// phases of a trace, as the decoder sees it
const (
	phasePre     = iota // before the first sync packet
	phaseSynced         // following the program
	phaseGap            // after a gap, waiting for a sync packet
	phaseStopped        // after a support packet that ended tracing
)

// NewDecoder returns a decoder for traces written with cfg, following the
// program in img, sending the flow to sink.
func NewDecoder(img *image.Set, sink flow.Sink, cfg Config) (*Decoder, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	d := &Decoder{cfg: cfg, codec: NewCodec(&cfg), opt: cfg.Options,
		v026: cfg.Version == V026, MaxSteps: 1 << 20}
	d.w.Init(img, sink)
	p := &d.cfg.Params
	d.lsb = uint(p.IAddressLSB)
	d.amask = p.addrMask()
	d.stack = decode.NewReturnStack(p.stackMax())
	d.pred = newPredictor(p)
	d.jtc = newJumpCache(p)
	return d, nil
}

// Stats returns counts of what was decoded so far: Packets (te_inst and
// support packets read, malformed ones included), Bytes, ByFormat, Sync,
// Instructions (sent in ranges) and Gaps.
func (d *Decoder) Stats() *Stats {
	d.st.Instructions = d.tally.Emitted()
	return &d.st
}

// ForeignSources returns, in increasing order, the source IDs of the
// UTDD frames the decoder met that belong to no source it was configured
// with (Config.SrcID, and DataConfig.SrcID with data trace): each such
// frame was a gap (decode.ErrUnknownSource). A tool can tell its user
// what the IDs suggest, such as a trace of several harts (decode it with
// a Demux) or data packets of several harts (DataConfig.Harts). At most
// the first 64 distinct IDs are kept.
func (d *Decoder) ForeignSources() []uint32 {
	ids := make([]uint32, 0, len(d.foreign))
	for id := range d.foreign {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// Decode decodes the framed byte stream read from r, holding only a small
// buffer of it at a time. Malformed packets and inconsistencies between
// the trace and the program are reported to the sink as gaps (flow
// KindGap events whose Err is a *decode.Error) and decoding goes on from
// the next sync packet. A trace that does not start with a sync packet or
// does not end with the support packet that ends tracing is reported as
// a gap, unless cfg.Decode.AllowTruncated. Decode returns an error only
// when reading fails, the sink returns one, or the trace is empty or has
// no sync packet at all (a *decode.Error wrapping decode.ErrEmpty or
// decode.ErrNoSync). The sink is not closed.
func (d *Decoder) Decode(r io.Reader) error {
	sc := NewScanner(r, &d.cfg)
	obs, _ := d.w.Sink.(flow.MessageObserver) // counts trace bytes by packet type
	for {
		if !sc.Scan() {
			err := sc.Err()
			if err == nil {
				break
			}
			fe, ok := err.(*FramingError)
			if !ok {
				// a read error: end the trace here
				if ferr := d.Flush(); ferr != nil {
					return ferr
				}
				return err
			}
			if gerr := d.framingError(fe); gerr != nil {
				return gerr
			}
			if sc.Done() {
				break
			}
			continue
		}
		if err := d.frame(sc.Frame(), sc.Offset(), obs); err != nil {
			return err
		}
	}
	d.st.Bytes = uint64(sc.Offset())
	if sc.Offset() == 0 {
		return &decode.Error{Offset: 0, Index: 0, Err: decode.ErrEmpty}
	}
	if !d.sawSync {
		return &decode.Error{Offset: 0, Index: 0, Err: fmt.Errorf("%w (format 3 subformat 0 or 1)", decode.ErrNoSync)}
	}
	return d.Flush()
}

// count counts a packet (or a frame that could not be read) and gives it
// the next index.
func (d *Decoder) count() {
	d.idx = d.nextIdx
	d.nextIdx++
	d.st.Packets++
	d.nested, d.nestNext = d.nestNext, false
}

// framingError handles a frame the scanner could not read.
func (d *Decoder) framingError(fe *FramingError) error {
	d.count()
	return d.fault(fmt.Errorf("%w: %s", decode.ErrMalformed, fe.Msg), fe.Offset, "frame")
}

// frame processes the frame fr, which ends at byte end; obs, if not nil,
// sees its packet. The error returned is a sink's (or the data handler's).
func (d *Decoder) frame(fr *Frame, end int64, obs flow.MessageObserver) error {
	p := &d.pkt
	d.malformed = false
	if fr.Data {
		if d.Data != nil {
			return d.Data.DataFrame(fr)
		}
		if d.dataKnown && !d.dataOn {
			// Data trace is off: the frame is a damaged one.
			d.count()
			return d.fault(fmt.Errorf("%w: a data trace packet (message type 3) while the support packet says data trace is off (denable=0)",
				decode.ErrInconsistent), fr.Offset, "data packet")
		}
		return d.skipData(fr)
	}
	if d.cfg.Encap == EncapUTDD && d.cfg.SrcBits > 0 && fr.SrcID != d.cfg.SrcID {
		// A frame of another source (a Demux gives each source its
		// own decoder): a damaged source ID, or a header byte lost
		// before it. (With data trace, the data source's frames are
		// Data and went above.)
		d.count()
		if d.foreign == nil {
			d.foreign = map[uint32]bool{}
		}
		if len(d.foreign) < 64 {
			d.foreign[fr.SrcID] = true
		}
		return d.fault(fmt.Errorf("%w: a frame of source %d; the decoder follows source %d (several sources: decode with a Demux)",
			decode.ErrUnknownSource, fr.SrcID, d.cfg.SrcID), fr.Offset, "frame")
	}
	if err := d.codec.Parse(fr.Payload, fr.Support, p); err != nil {
		if !isSentinel(err) {
			err = fmt.Errorf("%w: %w", decode.ErrMalformed, err)
		}
		d.count()
		d.malformed = true
		return d.fault(err, fr.Offset, "packet")
	}
	if n := len(fr.Payload); overlong(fr.Payload) {
		// The encoder drops every byte that sign extension restores.
		d.count()
		d.malformed = true
		return d.fault(fmt.Errorf("%w: %s payload of %d bytes not fully sign-compressed", decode.ErrMalformed, d.codec.FormatName(p), n),
			fr.Offset, d.codec.FormatName(p))
	}
	if obs != nil {
		obs.Message(d.codec.FormatName(p), fr.Offset, int(end-fr.Offset)*8)
	}
	if d.Data != nil {
		if err := d.Data.InstPacket(p, fr.Offset); err != nil {
			return err
		}
	}
	return d.Packet(p, fr.Offset)
}

// skipData reports, once, that the trace has data trace packets the
// decoder was not asked to join.
func (d *Decoder) skipData(fr *Frame) error {
	if d.dataSkipped {
		return nil
	}
	d.dataSkipped = true
	if err := d.w.Warn(0, d.priv, &decode.Error{Offset: fr.Offset, Index: -1, What: "data packet",
		Err: fmt.Errorf("%w: the trace has data trace packets (message type 3); they are skipped: decode with --data-trace to join them", decode.ErrSkipped)}); err != nil {
		return errSink{err}
	}
	return nil
}

// fault handles a packet that could not be read or followed (cause) at
// byte off: a gap while following the program, else it is remembered or
// dropped as the phase says.
func (d *Decoder) fault(cause error, off int64, what string) error {
	switch d.phase {
	case phasePre:
		if d.preErr == nil && !d.cfg.Decode.AllowTruncated {
			d.preErr, d.preOff, d.preIdx, d.preWhat = cause, off, d.idx, what
		}
		return nil
	case phaseGap:
		return nil // already in a gap
	}
	return d.gap(&decode.Error{Offset: off, Index: d.idx, What: what, Err: cause})
}

// reportPre reports the packets skipped before the first sync packet.
func (d *Decoder) reportPre() error {
	if d.preErr == nil || d.preReported {
		return nil
	}
	d.preReported = true
	return d.gap(&decode.Error{Offset: d.preOff, Index: d.preIdx, What: d.preWhat, Err: d.preErr})
}

// Flush ends the trace: the open range is sent. A
// trace that stops while the decoder follows the program (no support
// packet ended it) is reported as truncated unless the configuration
// allows it.
func (d *Decoder) Flush() error {
	// A pending address packet is not followed: what it reports (the
	// target of an uninferable discontinuity or the last instruction)
	// depends on the packet after it, which is missing. Its instructions
	// are lost with the end of the trace.
	d.pendOK = false
	if err := d.reportPre(); err != nil {
		return err
	}
	if d.phase == phaseSynced && !d.cfg.Decode.AllowTruncated {
		return d.gap(&decode.Error{Offset: d.st.bytesOr(d.off), Index: d.nextIdx, What: "end of trace",
			Err:      fmt.Errorf("%w: no support packet ending tracing", decode.ErrTruncated),
			Expected: "a support packet with qual_status ended_rep or ended_ntr"})
	}
	return d.closeRange(ingress.ITypeNone, 0, false)
}

func (s *Stats) bytesOr(off int64) int64 {
	if s.Bytes > 0 {
		return int64(s.Bytes)
	}
	return off
}

// gap reports e (with the instructions sent since the last point known
// good as suspect) and drops synchronisation.
func (d *Decoder) gap(e *decode.Error) error {
	d.st.Gaps++
	if err := d.closeRange(ingress.ITypeNone, 0, false); err != nil {
		return unwrapSink(err)
	}
	d.phase, d.pendOK, d.trapPending = phaseGap, false, false
	d.synced = false
	if d.opt.ImplicitReturn && d.cfg.Params.CallCounterSize > 0 && d.irAt > d.tally.Mark() &&
		(errors.Is(e.Err, decode.ErrInconsistent) || errors.Is(e.Err, decode.ErrCheckpoint)) {
		// The specification's call counter cannot trace a return that
		// goes elsewhere than after its call; the decoder then follows
		// the call site until the trace disagrees (rvtrace's encoder
		// resynchronises before such returns instead).
		e.Err = fmt.Errorf("%w (call counter mode: a return inferred since the last checkpoint may have gone elsewhere than after its call, "+
			"as with longjmp, which a call counter cannot trace; a return stack can)", e.Err)
	}
	d.gapAt = d.tally.Emitted()
	d.nestNext = false // the trace may have lost packets here
	return d.w.Gap(0, d.priv, e, d.tally.Suspect(), 0, &d.tally)
}

// packetGap reports err, found processing packet p at byte off, as a gap.
func (d *Decoder) packetGap(err error, p *Packet, off, idx int64) error {
	var de *decode.Error
	if !errors.As(err, &de) {
		if !isSentinel(err) {
			err = fmt.Errorf("%w: %w", decode.ErrInconsistent, err)
		}
		de = &decode.Error{Offset: off, Index: idx, What: d.codec.FormatName(p), Err: err}
	}
	return d.gap(de)
}

// isSentinel reports whether err wraps one of the decode package's causes.
func isSentinel(err error) bool {
	for _, s := range [...]error{decode.ErrCheckpoint, decode.ErrInconsistent, decode.ErrOutsideImage,
		decode.ErrMalformed, decode.ErrSkipped, decode.ErrOverflow, decode.ErrTruncated} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// errSink marks errors returned by the sink, which stop decoding.
type errSink struct{ error }

func (e errSink) Unwrap() error { return e.error }

func unwrapSink(err error) error {
	var se errSink
	if errors.As(err, &se) {
		return se.error
	}
	return err
}

// Packet processes one packet found at byte offset off. Inconsistencies
// are reported as gaps; the returned error is a sink error.
func (d *Decoder) Packet(p *Packet, off int64) error {
	d.count()
	if p.Format == FormatSync && p.Subformat != SubSupport {
		d.st.Sync[p.Subformat&3]++
	}
	if p.Format != FormatSync || p.Subformat != SubSupport {
		d.st.ByFormat[p.Format&3]++
	}
	d.hadPend = d.pendOK
	err := d.packet(p, off)
	d.lastAddrPkt = d.hasAddress(p)
	if p.Format != FormatSync || p.Subformat != SubSupport {
		d.prevF3 = isF3(p) || d.lastAddrPkt
	}
	if err == nil {
		return nil
	}
	var se errSink
	if errors.As(err, &se) {
		return se.error
	}
	return d.packetGap(err, p, off, d.idx)
}

func (d *Decoder) emit(e *flow.Event) error {
	if err := d.w.Sink.Event(e); err != nil {
		return errSink{err}
	}
	return nil
}

// isF3 reports whether p is a sync packet (format 3 subformat 0 or 1).
func isF3(p *Packet) bool {
	return p.Format == FormatSync && (p.Subformat == SubStart || p.Subformat == SubTrap)
}

func (d *Decoder) packet(p *Packet, off int64) error {
	d.off = off
	d.zeroOK = d.lastAddrPkt
	if p.Branches > 0 && p.Branches < 31 && p.BranchMap>>p.Branches != 0 {
		// the encoder leaves the bits past the branches reported at 0
		return fmt.Errorf("%w: branch map %#x has bits set beyond its %d branches", decode.ErrMalformed, p.BranchMap, p.Branches)
	}
	if p.Format == FormatSync && p.Subformat != SubSupport && !privValid(p.Privilege) {
		return fmt.Errorf("%w: privilege %d is reserved (E-Trace table \"Privilege level (priv) encoding\")", decode.ErrMalformed, p.Privilege)
	}
	if p.Format == FormatSync && p.Subformat == SubSupport {
		return d.support(p, off)
	}
	if !d.synced {
		if !isF3(p) {
			// wait for a sync packet
			if d.phase == phaseStopped {
				return fmt.Errorf("%w: %s packet after tracing ended, before a sync packet", decode.ErrSkipped, d.codec.FormatName(p))
			}
			return d.fault(fmt.Errorf("%w: %s packet before the first sync packet", decode.ErrTruncated, d.codec.FormatName(p)), off, d.codec.FormatName(p))
		}
		if err := d.reportPre(); err != nil {
			return errSink{err}
		}
		return d.start(p, off)
	}
	if d.pendOK {
		kind := rTarget
		if isF3(p) && !d.pend.Updiscon {
			kind = rLast
		}
		err := d.followPend(kind)
		d.zeroOK = true // the pending packet was an address packet
		if err != nil {
			return err
		}
	}
	if d.trapPending && !isF3(p) {
		// after a trap reported with thaddr=0 the encoder reports the
		// handler (or another trap) with a format 3 packet
		return fmt.Errorf("%w: %s packet after a trap packet with thaddr=0", decode.ErrInconsistent, d.codec.FormatName(p))
	}
	switch {
	case p.Format == FormatSync:
		switch p.Subformat {
		case SubStart:
			return d.sync(p, false)
		case SubTrap:
			return d.trapPacket(p)
		case SubContext:
			if ingress.Priv(p.Privilege) != d.priv {
				// The encoder reports a privilege change with a sync
				// packet at the first instruction in the new privilege;
				// a context packet restates the current one.
				return fmt.Errorf("%w: a context packet states privilege %d; the flow is at privilege %d, and changes it only with a sync packet",
					decode.ErrInconsistent, p.Privilege, d.priv)
			}
			return d.contextEvent(ingress.Priv(p.Privilege), p.Context, true)
		}
	case d.hasAddress(p):
		if d.v026 || !p.Updiscon && !p.Notify && !(p.Format == FormatExt && p.Subformat == SubJumpCache) {
			d.pend, d.pendOK, d.pendOff, d.pendIdx, d.pendAfter = *p, true, off, d.idx, d.lastAddrPkt
			return nil
		}
		kind := rTarget
		if p.Notify {
			kind = rNotify
		}
		return d.follow(p, kind, off)
	case p.Format == FormatBranch || d.v026 && p.Format == FormatExt:
		// full branch map, no address
		if err := d.addOutcomes(p.BranchMap, 31); err != nil {
			return err
		}
		return d.walk(modeLastBranch, 0)
	case p.Format == FormatExt && p.Subformat == SubBranchCount:
		if d.pred.t == nil {
			return fmt.Errorf("branch count without a branch predictor")
		}
		d.pbcLeft += uint64(p.BranchCount) + 31
		d.fail = true
		return d.walk(modeFail, 0)
	}
	return fmt.Errorf("%w: unexpected %s packet", decode.ErrSkipped, d.codec.FormatName(p))
}

// followPend follows the pending address packet as kind says; an
// inconsistency is reported at that packet.
func (d *Decoder) followPend(kind int) error {
	d.pendOK = false
	d.zeroOK = d.pendAfter
	err := d.follow(&d.pend, kind, d.pendOff)
	if err == nil {
		return nil
	}
	var se errSink
	if errors.As(err, &se) {
		return err
	}
	if !isSentinel(err) {
		err = fmt.Errorf("%w: %w", decode.ErrInconsistent, err)
	}
	return &decode.Error{Offset: d.pendOff, Index: d.pendIdx, What: d.codec.FormatName(&d.pend), Err: err}
}

// hasAddress reports whether p is a format 0/1/2 packet that reports an
// instruction.
func (d *Decoder) hasAddress(p *Packet) bool {
	switch p.Format {
	case FormatAddr:
		return true
	case FormatBranch:
		return p.Branches != 0
	case FormatExt:
		if d.v026 {
			return p.Branches != 0
		}
		return p.Subformat == SubJumpCache || p.BranchFmt != BranchFmtNoAddr
	}
	return false
}

func (d *Decoder) support(p *Packet, off int64) error {
	d.dataKnown, d.dataOn = true, p.DEnable != 0
	if !d.v026 {
		o := OptionsFromBits(p.IOptions)
		if d.synced && o != d.opt {
			// The encoder's options hold for the whole trace: the
			// instructions decoded since they were read are suspect.
			if since := max(d.optSince, d.gapAt); since < d.tally.Mark() {
				d.tally.GoodAt(since)
			}
			return fmt.Errorf("%w: ioptions %#x while tracing with %#x", decode.ErrInconsistent, p.IOptions, d.opt.Bits())
		}
		d.opt = o
		d.codec.Options = o
		if !d.synced {
			d.optSince = d.tally.Emitted() + d.rN
		}
	}
	if p.QualStatus == QualNoChange {
		return nil
	}
	if d.synced && d.pendOK {
		kind := rLast
		if p.QualStatus == QualEndedNtr || p.QualStatus == QualTraceLost {
			kind = rTarget
		}
		if err := d.followPend(kind); err != nil {
			return err
		}
	}
	if d.synced && !d.trapPending {
		if err := d.reported("the end of tracing"); err != nil {
			return err
		}
		if err := d.leftover("the end of tracing"); err != nil {
			return err
		}
	}
	if err := d.closeRange(ingress.ITypeNone, 0, false); err != nil {
		return err
	}
	wasSynced := d.synced
	d.synced, d.trapPending = false, false
	if p.QualStatus == QualTraceLost {
		if err := d.gap(&decode.Error{Offset: off, Index: d.idx, What: d.codec.FormatName(p),
			Err: fmt.Errorf("%w: support packet with qual_status trace_lost", decode.ErrOverflow)}); err != nil {
			return errSink{err}
		}
		return nil
	}
	if !wasSynced {
		if d.phase == phaseGap {
			d.phase = phaseStopped
		}
		return nil
	}
	d.phase = phaseStopped
	d.ev = flow.Event{Kind: flow.KindStop, Reason: uint32(p.QualStatus), Priv: d.priv, Offset: off}
	return d.emit(&d.ev)
}

// decodeAddr returns the instruction address a format 0/1/2 packet reports.
func (d *Decoder) decodeAddr(p *Packet) (uint64, error) {
	if p.Format == FormatExt && !d.v026 && p.Subformat == SubJumpCache {
		if d.jtc.a == nil {
			return 0, fmt.Errorf("jump target cache index without a cache")
		}
		i := p.Index & uint32(d.jtc.mask)
		if !d.jtc.valid[i] {
			return 0, fmt.Errorf("jump target cache entry %d is empty", i)
		}
		return d.jtc.a[i], nil
	}
	full := d.opt.FullAddress
	if d.v026 {
		full = p.Format == FormatExt || p.Format == FormatAddr && d.opt.FullAddress
	}
	d.chkAddr = full
	var a uint64
	if full {
		a = p.Address << d.lsb
	} else {
		n := d.cfg.Params.addrBits()
		v := p.Address
		if n < 64 && v>>(uint(n)-1)&1 != 0 {
			v |= ^mask(n)
		}
		a = d.lastAddr + v<<d.lsb
	}
	a &= d.amask
	d.lastAddr = a
	return a, nil
}

// start begins decoding at a sync packet.
func (d *Decoder) start(p *Packet, off int64) error {
	if p.Subformat == SubTrap && p.Thaddr == 0 && !d.v026 {
		// A trap before anything was traced, taken from the privilege
		// the packet states: the next sync starts.
		if err := d.contextEvent(ingress.Priv(p.Privilege), p.Context, true); err != nil {
			return err
		}
		d.noteTrap(p)
		return d.trapEvent(p, p.Address<<d.lsb&d.amask, 0, false)
	}
	d.sawSync = true
	d.resetState()
	a, err := d.syncAddr(p)
	if err != nil {
		return err
	}
	if err := d.closeRange(ingress.ITypeNone, 0, false); err != nil {
		return err
	}
	if p.Subformat == SubTrap {
		// the trap's EPC is before the trace, unless the trace starts
		// with a trap reported with thaddr=0 that it was taken at
		var epc uint64
		nested := d.nested
		if nested {
			epc = d.nestedEPC(p, a)
		}
		if err := d.trapEvent(p, epc, a, true); err != nil {
			return err
		}
		if nested && epc == 0 {
			if err := d.nestedWarn(p); err != nil {
				return err
			}
		}
	}
	d.ev = flow.Event{Kind: flow.KindSync, Addr: a, Reason: uint32(p.Subformat), Priv: ingress.Priv(p.Privilege), Offset: off}
	if err := d.emit(&d.ev); err != nil {
		return err
	}
	d.synced, d.phase = true, phaseSynced
	if err := d.contextEvent(ingress.Priv(p.Privilege), p.Context, true); err != nil {
		return err
	}
	// The instructions before are not suspect, but the sync packet's own
	// instruction is until a later checkpoint verifies it (the packet
	// may be corrupt).
	d.tally.Good()
	return d.jumpTo(a, p.Branch)
}

// syncAddr returns the address of a format 3 subformat 0/1 packet.
func (d *Decoder) syncAddr(p *Packet) (uint64, error) {
	if p.Subformat == SubTrap && !d.v026 && d.opt.ImplicitException && p.Thaddr == 1 {
		h, ok := d.cfg.Params.handler(p.Ecause, p.Interrupt != 0)
		if !ok {
			return 0, fmt.Errorf("implicit exception mode without a trap vector (rvtrace_tvec)")
		}
		return h, nil
	}
	a := p.Address << d.lsb & d.amask
	d.lastAddr = a
	return a, nil
}

// resetState resets what a sync packet resets.
func (d *Decoder) resetState() {
	d.qbits, d.qn, d.pbcLeft, d.fail = 0, 0, 0, false
	d.fmLeft = 0
	d.stack.Reset()
	if d.pred.t != nil {
		d.pred.reset()
	}
	if d.jtc.a != nil {
		d.jtc.reset()
	}
	d.trapPending = false
}

// jumpTo places the decoder on a, the first instruction of a new range,
// with the branch bit of a sync packet.
func (d *Decoder) jumpTo(a uint64, branch uint8) error {
	nd, err := d.block(a)
	if err != nil {
		return err
	}
	if err := branchBit(nd, a, branch); err != nil {
		return err
	}
	d.pc = a
	d.pcNode = nil
	if nd.N == 1 {
		d.pcNode = nd
	}
	d.prevOK = false
	d.rStart, d.rN = a, 1
	d.qbits, d.qn = 0, 0
	if nd.N == 1 && nd.Inst.Class == riscv.ClassBranch {
		d.qbits, d.qn = uint64(branch&1), 1
	}
	return nil
}

// branchBit checks the branch field of a format 3 packet reporting the
// instruction at a, whose run is nd: 0 (taken) only on a branch.
func branchBit(nd *decode.Block, a uint64, branch uint8) error {
	if branch&1 == 0 && !(nd.N == 1 && nd.Inst.Class == riscv.ClassBranch) {
		return fmt.Errorf("%w: a sync packet says the instruction at %#x is a taken branch; it is not a branch", decode.ErrInconsistent, a)
	}
	return nil
}

// sync handles format 3 subformat 0 while synchronised: follow to the
// reported instruction, then reset.
func (d *Decoder) sync(p *Packet, _ bool) error {
	a, err := d.syncAddr(p)
	if err != nil {
		return err
	}
	if d.trapPending {
		if err := d.closeRange(ingress.ITypeNone, 0, false); err != nil {
			return err
		}
		d.resetState()
		if err := d.contextEvent(ingress.Priv(p.Privilege), p.Context, false); err != nil {
			return err
		}
		return d.jumpTo(a, p.Branch)
	}
	// The packet states the privilege and context of the instruction it
	// reports (the target of an mret or sret, or the instruction after a
	// precise context change): the walk switches to them on that
	// instruction, the ones before it ran in the old ones.
	priv, ctx := ingress.Priv(p.Privilege), p.Context
	if d.cfg.Params.NoContext {
		ctx = d.context
	}
	d.enter, d.enterPriv, d.enterCtx = priv != d.priv || ctx != d.context, priv, ctx
	// The reported instruction's own branch outcome follows the others.
	if nd, err := d.blockIn(ctx, a); err == nil && nd.N == 1 && nd.Inst.Class == riscv.ClassBranch {
		if err := d.addOutcomes(uint32(p.Branch&1), 1); err != nil {
			d.enter = false
			return err
		}
	} else if err == nil {
		if err := branchBit(nd, a, p.Branch); err != nil {
			d.enter = false
			return err
		}
	}
	d.depthChk = false
	d.arrivedOK = false
	err = d.walk(modeSync, a)
	late := d.enter // the walk stopped without moving (0.026 double report)
	d.enter = false
	if err != nil {
		return d.checkpointErr(decode.ErrCheckpoint, a, err)
	}
	if d.arrivedOK {
		d.tally.GoodAt(d.arrivedAt)
	}
	// reset, keeping the reported branch's outcome
	qb, qn := d.qbits, d.qn
	d.resetState()
	d.qbits, d.qn = qb, qn
	d.prevOK = false
	if late {
		return d.contextEvent(priv, ctx, false)
	}
	return nil
}

// trapPacket handles format 3 subformat 1 while synchronised.
func (d *Decoder) trapPacket(p *Packet) error {
	if !d.trapPending {
		if err := d.reported("a trap"); err != nil {
			return err
		}
	}
	if p.Thaddr == 0 && !d.v026 {
		if p.Branch&1 == 0 && !d.opt.ImplicitException {
			// (implicit exception mode turns a thaddr=1 packet into
			// one with thaddr=0 when the vector does not give the handler)
			return fmt.Errorf("%w: a trap packet with thaddr=0 and branch=0", decode.ErrInconsistent)
		}
		if err := d.leftover("trap"); err != nil {
			return err
		}
		addr := p.Address << d.lsb & d.amask
		epc := addr
		end := ingress.ITypeNone
		if !d.trapPending {
			if err := d.checkEPC(p, addr); err != nil {
				return err
			}
			// The address is the EPC of a trap at the target of an
			// uninferable discontinuity; for other traps the
			// specification leaves it undefined (rvtrace's encoder, in
			// implicit exception mode without the handler's vector,
			// states the instruction before the trap), and the EPC is
			// inferred as for thaddr=1.
			if in := d.w.Img.InstPtr(d.pc); in != nil && !decode.Uninferable(in.Class) {
				epc = d.epc(p)
			} else if in != nil {
				// the range ends at that discontinuity (an mret, a
				// jalr...), which retired: its range ends as it
				// does, with the itype of a taken jump
				end = itypeOf(in, true)
			}
		}
		d.lastAddr = addr
		if err := d.closeRange(end, 0, false); err != nil {
			return err
		}
		// The packet states the privilege (and context) the trap was
		// taken from: the one a trap return returned to when the trap is
		// at its target.
		if err := d.contextEvent(ingress.Priv(p.Privilege), p.Context, false); err != nil {
			return err
		}
		d.trapPending = true
		d.noteTrap(p)
		return d.trapEvent(p, epc, 0, false)
	}
	if err := d.leftover("trap"); err != nil {
		return err
	}
	a, err := d.syncAddr(p)
	if err != nil {
		return err
	}
	nested := d.trapPending && d.nested
	epc := d.epc(p)
	if nested {
		epc = d.nestedEPC(p, a)
	}
	if err := d.closeRange(ingress.ITypeNone, 0, false); err != nil {
		return err
	}
	if err := d.trapEvent(p, epc, a, true); err != nil {
		return err
	}
	if nested && epc == 0 {
		if err := d.nestedWarn(p); err != nil {
			return err
		}
	}
	d.resetState()
	if err := d.contextEvent(ingress.Priv(p.Privilege), p.Context, false); err != nil {
		return err
	}
	return d.jumpTo(a, p.Branch)
}

// checkEPC checks a trap packet with thaddr=0 that follows the report of
// the instruction before the trap (the decoder stands on it): the trap
// happened at the privilege level of that instruction, and its EPC (the
// packet's address) is that instruction (an ECALL, an EBREAK or an
// instruction that trapped as it retired) or one that can follow it: the
// next one, a branch's or direct jump's target, or anything after an
// uninferable jump (whose target the packet reports instead).
func (d *Decoder) checkEPC(p *Packet, epc uint64) error {
	in := d.w.Img.InstPtr(d.pc)
	// The packet states the privilege of the trapping instruction: that
	// of the instruction before it, unless that one was a trap return
	// (mret, sret: the exception is at its target, in the privilege it
	// returned to).
	if ingress.Priv(p.Privilege) != d.priv && (in == nil || in.Class != riscv.ClassTrapReturn) {
		return fmt.Errorf("%w: a trap packet with thaddr=0 at privilege %d; the instruction before it (%#x) ran at %d",
			decode.ErrInconsistent, p.Privilege, d.pc, d.priv)
	}
	if in == nil || epc == d.pc || epc == in.Next(d.pc) {
		return nil
	}
	switch c := in.Class; {
	case c == riscv.ClassBranch || c == riscv.ClassJump:
		if epc == in.Target(d.pc) {
			return nil
		}
	case decode.Uninferable(c):
		return nil
	}
	return fmt.Errorf("%w: a trap packet with thaddr=0 states EPC %#x; the instruction before the trap (%#x, %s) cannot lead there",
		decode.ErrCheckpoint, epc, d.pc, in.Op)
}

// epc infers the address of the trapping instruction from the decoder's
// position (the specification's exception_address).
func (d *Decoder) epc(p *Packet) uint64 {
	if d.trapPending {
		return 0
	}
	in, ok := d.w.Img.Inst(d.pc)
	if !ok {
		return 0
	}
	if p.Interrupt == 0 && (in.Class == riscv.ClassECall || in.Class == riscv.ClassEBreak) {
		return d.pc
	}
	switch in.Class {
	case riscv.ClassBranch:
		if d.qn > 0 && d.qbits&1 == 0 {
			return in.Target(d.pc)
		}
	case riscv.ClassJump:
		return in.Target(d.pc)
	case riscv.ClassIndirect:
		// the target of a jump the optional modes infer (the encoder
		// reports any other with thaddr=0 and the EPC)
		if d.opt.SIJump {
			if t, ok := d.sijumpTarget(&in); ok {
				return t
			}
		}
		if in.Link == riscv.LinkReturn && d.opt.ImplicitReturn {
			if t, ok := d.stack.Top(); ok {
				return t
			}
		}
	}
	return in.Next(d.pc)
}

func (d *Decoder) trapEvent(p *Packet, epc, handler uint64, hasTarget bool) error {
	d.ev = flow.Event{Kind: flow.KindTrap, Interrupt: p.Interrupt != 0, HasCause: true,
		Cause: p.Ecause, TVal: p.Tval, Addr: epc, Target: handler, HasTarget: hasTarget,
		Priv: d.priv, Offset: d.off}
	return d.emit(&d.ev)
}

// nextEpoch follows the memory that holds from the instruction count
// reached on (code overwritten while the traced system ran:
// image.Set.AddTimedBytes).
func (d *Decoder) nextEpoch() {
	d.w.Advance(d.tally.Emitted() + d.rN)
	d.useContext(d.context)
}

// useContext follows the images valid in context ctx (at the current
// instruction count), each address space with its own runs.
func (d *Decoder) useContext(ctx uint64) { d.w.View(ctx, d.tally.Emitted()+d.rN) }

// blockIn returns the run at a in the address space of context ctx.
func (d *Decoder) blockIn(ctx uint64, a uint64) (*decode.Block, error) {
	if ctx == d.context || !d.w.Base.HasContexts() {
		return d.block(a)
	}
	return d.w.BlocksOf(d.w.Base.View(ctx, d.tally.Emitted()+d.rN)).At(a)
}

// enterAt applies the privilege and context of the sync packet being
// followed (d.enter) from the instruction at a, which the walk reaches
// now: the open range, up to the instruction before a (d.pc), is sent in
// the old ones, ending as end says with a as its target; the range at a
// starts in the new ones, in their address space.
func (d *Decoder) enterAt(a uint64, end ingress.IType) error {
	d.enter = false
	if err := d.closeRange(end, a, true); err != nil {
		return err
	}
	if err := d.contextEvent(d.enterPriv, d.enterCtx, false); err != nil {
		return err
	}
	d.rStart = a
	return nil
}

// block returns the run at a in the address space followed now.
func (d *Decoder) block(a uint64) (*decode.Block, error) {
	if d.w.Due(d.tally.Emitted() + d.rN) {
		d.nextEpoch()
	}
	return d.w.Block(a)
}

// followBlock returns the run at next, a successor of nd (by nd's links while
// the address space is unchanged).
func (d *Decoder) followBlock(nd *decode.Block, next uint64) (*decode.Block, error) {
	if d.w.Due(d.tally.Emitted() + d.rN) {
		d.nextEpoch()
	}
	return d.w.Follow(nd, next)
}

// contextEvent reports the privilege and context when they change.
func (d *Decoder) contextEvent(priv ingress.Priv, ctx uint64, force bool) error {
	if d.cfg.Params.NoContext {
		ctx = d.context
	}
	if !force && priv == d.priv && ctx == d.context {
		return nil
	}
	if err := d.closeRange(ingress.ITypeNone, 0, false); err != nil {
		return err
	}
	d.priv, d.context = priv, ctx
	if d.w.Base.HasContexts() {
		d.useContext(ctx)
	}
	d.ev = flow.Event{Kind: flow.KindContext, Priv: priv, Context: ctx, Offset: d.off}
	return d.emit(&d.ev)
}

// checkpointErr reports that the walk towards address a, stated by a
// packet, failed with err: cause is decode.ErrCheckpoint when a is a full
// address. Sink errors pass through.
func (d *Decoder) checkpointErr(cause error, a uint64, err error) error {
	var se errSink
	if errors.As(err, &se) {
		return err
	}
	return fmt.Errorf("%w: the packet states %#x, the decoder reached %#x: %w", cause, a, d.pc, err)
}

// reported checks that the instruction before a trap or the end of
// tracing was reported, as the encoder always does: by an address packet
// (pending when this packet came) or by a sync packet.
func (d *Decoder) reported(what string) error {
	if d.hadPend || d.prevF3 {
		return nil
	}
	return fmt.Errorf("%w: %s with no packet reporting the instruction before it", decode.ErrInconsistent, what)
}

// leftover reports branch outcomes left unused at a point where the
// encoder has reported them all (a trap, the end of tracing).
func (d *Decoder) leftover(where string) error {
	want := uint64(0)
	if d.pcNode != nil && d.pcNode.Inst.Class == riscv.ClassBranch {
		want = 1
	}
	if n := d.remaining(); n > want {
		return fmt.Errorf("%w: %d branch outcomes left over at %s (at %#x)", decode.ErrInconsistent, n-want, where, d.pc)
	}
	return nil
}

// fullMapCheck follows the outcomes of a 31-branch map with the branch
// predictor on: the encoder sends a branch count instead when all 31 are
// predicted correctly, so such a map is an inconsistency.
func (d *Decoder) fullMapCheck(pc uint64, taken bool) error {
	correct := d.pred.predict(pc) == taken
	if d.opt.BranchPrediction {
		d.pred.update(pc, taken)
	}
	if d.fmSkip > 0 {
		d.fmSkip--
		return nil
	}
	if !correct {
		d.fmOK = false
	}
	if d.fmLeft--; d.fmLeft == 0 && d.fmOK {
		return fmt.Errorf("%w: a branch map of 31 branches all predicted correctly (the encoder sends a branch count)", decode.ErrInconsistent)
	}
	return nil
}

// addOutcomes appends n branch outcomes (bit 0 oldest, 1 = not taken).
func (d *Decoder) addOutcomes(bits uint32, n int) error {
	if d.qn+n > 63 {
		return fmt.Errorf("too many unprocessed branches (%d)", d.qn+n)
	}
	if n == 31 && d.opt.BranchPrediction && d.pred.t != nil && !d.v026 {
		d.fmSkip, d.fmLeft, d.fmOK = d.qn, 31, true
	}
	d.qbits |= uint64(bits) & mask(n) << uint(d.qn)
	d.qn += n
	return nil
}

// follow processes an address packet as reporting the target of an
// uninferable discontinuity (rTarget), the last instruction before a sync
// (rLast) or a notification (rNotify).
func (d *Decoder) follow(p *Packet, kind int, off int64) error {
	d.off = off
	// branch information first
	switch {
	case p.Format == FormatBranch || d.v026 && p.Format == FormatExt:
		if err := d.addOutcomes(p.BranchMap, int(p.Branches)); err != nil {
			return err
		}
	case p.Format == FormatExt && p.Subformat == SubJumpCache:
		if err := d.addOutcomes(p.BranchMap, int(p.Branches)); err != nil {
			return err
		}
	case p.Format == FormatExt:
		if d.pred.t == nil {
			return fmt.Errorf("branch count without a branch predictor")
		}
		d.pbcLeft += uint64(p.BranchCount) + 31
		d.fail = p.BranchFmt == BranchFmtAddrFail
	}
	a, err := d.decodeAddr(p)
	if err != nil {
		return err
	}
	d.irActive, d.depthChk = false, false
	if p.Irreport && !d.v026 {
		if kind == rTarget {
			d.irActive, d.irDepth = true, int(p.Irdepth)
		} else {
			d.depthChk, d.irDepth = true, int(p.Irdepth)
		}
	}
	mode := modeTarget
	if kind != rTarget {
		mode = modeLast
	}
	idx := p.Format == FormatExt && !d.v026 && p.Subformat == SubJumpCache
	d.storeTarget = kind == rTarget && !idx && d.opt.JumpTargetCache && d.jtc.a != nil
	d.arrivedOK = false
	err = d.walk(mode, a)
	d.irActive, d.depthChk, d.storeTarget = false, false, false
	if err == nil && p.Branches == 31 && d.remaining() != 1 {
		// The encoder sends a full map on the 31st branch, unless that
		// branch is the instruction the packet reports.
		err = fmt.Errorf("the 31st branch of the map is not the reported instruction %#x", a)
	}
	if err == nil && d.arrivedOK {
		d.tally.GoodAt(d.arrivedAt)
	}
	if err != nil {
		if mode == modeLast {
			cause := decode.ErrInconsistent
			if d.chkAddr {
				cause = decode.ErrCheckpoint
			}
			return d.checkpointErr(cause, a, err)
		}
		return err
	}
	if kind == rNotify && p.Notify {
		if err := d.closeRange(ingress.ITypeNone, 0, false); err != nil {
			return err
		}
		d.ev = flow.Event{Kind: flow.KindNotify, Addr: a, Priv: d.priv, Offset: off}
		return d.emit(&d.ev)
	}
	return nil
}

// walk modes
const (
	modeTarget     = iota // stop on leaving an uninferable jump: its target is the address
	modeLast              // stop on reaching the address with no branch outcome left but its own
	modeSync              // like modeLast, for a sync packet
	modeLastBranch        // stop on the branch that takes the last outcome
	modeFail              // stop on the branch after the predicted ones
)

// remaining is the number of branch outcomes not yet applied.
func (d *Decoder) remaining() uint64 {
	n := uint64(d.qn) + d.pbcLeft
	if d.fail {
		n++
	}
	return n
}

// arrived reports whether the walk in mode may stop at instruction a,
// whose run is nd.
func (d *Decoder) arrived(a uint64, isBranch bool) bool {
	want := uint64(0)
	if isBranch {
		want = 1
	}
	if d.remaining() != want {
		return false
	}
	return !d.depthChk || d.stack.Depth() == d.irDepth
}

// outcome returns whether the branch at pc is taken.
func (d *Decoder) outcome(pc uint64) (bool, error) {
	var taken bool
	switch {
	case d.qn > 0:
		taken = d.qbits&1 == 0
		d.qbits >>= 1
		d.qn--
		if d.fmLeft > 0 {
			return taken, d.fullMapCheck(pc, taken)
		}
	case d.pbcLeft > 0:
		taken = d.pred.predict(pc)
		d.pbcLeft--
	case d.fail:
		taken = !d.pred.predict(pc)
		d.fail = false
	default:
		return false, fmt.Errorf("no branch outcome for the branch at %#x", pc)
	}
	if d.opt.BranchPrediction && d.pred.t != nil {
		d.pred.update(pc, taken)
	}
	return taken, nil
}

// settle turns a predicted outcome left for the branch the walk stopped on
// into a queued one, so that later branch maps follow it.
func (d *Decoder) settle() {
	if d.qn != 0 || d.pcNode == nil || d.pcNode.Inst.Class != riscv.ClassBranch {
		return
	}
	switch {
	case d.pbcLeft == 1 && !d.fail:
		d.pbcLeft = 0
		if !d.pred.predict(d.pc) {
			d.qbits = 1
		}
		d.qn = 1
	case d.pbcLeft == 0 && d.fail:
		d.fail = false
		if d.pred.predict(d.pc) {
			d.qbits = 1 // predicted taken, failed: not taken
		}
		d.qn = 1
	}
}
