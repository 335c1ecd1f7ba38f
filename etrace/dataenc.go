package etrace

import (
	"fmt"

	"github.com/rvtrace/rvtrace/ingress"
)

// DataStats counts what a DataEncoder wrote.
type DataStats struct {
	Accesses uint64 // data packets written
	Bytes    uint64 // their bytes, framing included
	Full     uint64 // packets with diff 00 (full address and data)
}

// DataEncoder adds data trace to an Encoder: it is the ingress.Sink and
// ingress.DataSink in front of it. Accesses are held until the block that
// retires their instruction comes; their packets are written, then the
// block goes to the instruction encoder. It implements ingress.Gated too
// (passed on to the encoder). With the split protocol it is an
// ingress.SplitDataSink: responses are held with the accesses and written
// in the order they came, each after its request. It takes each
// instruction executed once, all its accesses before its block: a data
// trace interface that retires a multi-access instruction once per access
// (sim.DataPort) is folded first by an ingress.Folder (see data.go).
type DataEncoder struct {
	enc   *Encoder
	dc    *dataCodec
	cfg   *DataConfig
	st    dataState
	syncs uint64 // the writer's sync count the state was reset at
	held  []heldData
	pkt   DataPacket
	stats DataStats
	buf   []byte
	done  bool // closed
	// split protocol, per lrid: a request in flight on the interface
	// (busy), what became of the last request (wstate) and its size
	busy   []bool
	wstate []uint8
	rsize  []uint8
	nbusy  int
}

// heldData is an access or (resp set) a load response held for the next
// block (with a.DSize the size of its request).
type heldData struct {
	a    ingress.Access
	r    ingress.LoadResponse
	resp bool
}

// States of an lrid in DataEncoder.wstate.
const (
	lridFree    = iota
	lridOut     // request written, its response not yet
	lridDropped // request dropped (tracing off): its response is dropped
)

// NewDataEncoder returns the data trace front of enc, whose configuration
// must have Data set.
func NewDataEncoder(enc *Encoder) (*DataEncoder, error) {
	d := enc.cfg.Data
	if d == nil {
		return nil, fmt.Errorf("etrace: data trace encoder on an encoder without a data configuration")
	}
	e := &DataEncoder{enc: enc, dc: newDataCodec(d), cfg: d, buf: make([]byte, 0, 48)}
	if d.Split {
		e.busy = make([]bool, 1<<d.LRIDWidth)
		e.wstate = make([]uint8, 1<<d.LRIDWidth)
		e.rsize = make([]uint8, 1<<d.LRIDWidth)
	}
	return e, nil
}

// Stats returns the data packet counts.
func (e *DataEncoder) Stats() DataStats { return e.stats }

// Config returns the data trace configuration (checked: defaults filled
// in).
func (e *DataEncoder) Config() DataConfig { return *e.cfg }

// Encoder returns the instruction trace encoder.
func (e *DataEncoder) Encoder() *Encoder { return e.enc }

// Access holds one access until its block comes.
func (e *DataEncoder) Access(a *ingress.Access) error {
	if e.enc.err != nil {
		return e.enc.err
	}
	if e.done {
		return fmt.Errorf("etrace: data access of the instruction at %#x after the end of the trace", a.IAddr)
	}
	if !a.DType.Valid() {
		return e.enc.fail(fmt.Errorf("etrace: data access at pc %#x: dtype %s not traced", a.IAddr, a.DType))
	}
	if a.DType.IsCSR() {
		if err := e.dc.checkCSRAccess(a); err != nil {
			return e.enc.fail(fmt.Errorf("etrace: data access at pc %#x: %w", a.IAddr, err))
		}
		if len(e.held) >= 1<<16 {
			return e.enc.fail(fmt.Errorf("etrace: %d data accesses without an ingress block", len(e.held)))
		}
		e.held = append(e.held, heldData{a: *a})
		return nil
	}
	if 8<<a.DSize > e.cfg.DataWidth {
		return e.enc.fail(fmt.Errorf("etrace: data access at pc %#x: %d bytes wider than data_width_p %d", a.IAddr, a.Bytes(), e.cfg.DataWidth))
	}
	if (a.DType.IsAtomic() || a.DType == ingress.DTypeSCFail) && a.DAddr&(uint64(a.Bytes())-1) != 0 {
		return e.enc.fail(fmt.Errorf("etrace: atomic at pc %#x: address %#x not aligned to its size", a.IAddr, a.DAddr))
	}
	if a.DAddr&^mask(e.cfg.DAddressWidth) != 0 {
		return e.enc.fail(fmt.Errorf("etrace: data access at pc %#x: address %#x wider than daddress_width_p %d", a.IAddr, a.DAddr, e.cfg.DAddressWidth))
	}
	split := a.DType == ingress.DTypeLoad || a.DType.IsAtomic()
	switch {
	case e.cfg.Split && split != a.Split:
		return e.enc.fail(fmt.Errorf("etrace: data access at pc %#x: a %s that is %s on the split protocol's interface", a.IAddr, a.DType, map[bool]string{true: "a split request", false: "not a split request"}[a.Split]))
	case !e.cfg.Split && a.Split:
		return e.enc.fail(fmt.Errorf("etrace: data access at pc %#x: a split-protocol request while tracing the unified protocol", a.IAddr))
	case a.Split:
		if a.LRID >= uint32(len(e.busy)) || e.busy[a.LRID] {
			return e.enc.fail(fmt.Errorf("etrace: split request at pc %#x: lrid %d out of range or still in flight", a.IAddr, a.LRID))
		}
		e.busy[a.LRID], e.rsize[a.LRID] = true, a.DSize
		e.nbusy++
	}
	if len(e.held) >= 1<<16 {
		return e.enc.fail(fmt.Errorf("etrace: %d data accesses without an ingress block", len(e.held)))
	}
	e.held = append(e.held, heldData{a: *a})
	return nil
}

// Response holds the response of a split request until the next block
// (or the end of the trace).
func (e *DataEncoder) Response(r *ingress.LoadResponse) error {
	if e.enc.err != nil {
		return e.enc.err
	}
	if !e.cfg.Split {
		return e.enc.fail(fmt.Errorf("etrace: load response (lid %d) while tracing the unified protocol", r.LID))
	}
	if r.Resp != ingress.LRespOkay && r.Resp != ingress.LRespError {
		return e.enc.fail(fmt.Errorf("etrace: load response lid %d: lresp %d", r.LID, r.Resp))
	}
	if r.LID >= uint32(len(e.busy)) || !e.busy[r.LID] {
		return e.enc.fail(fmt.Errorf("etrace: load response lid %d with no request in flight", r.LID))
	}
	e.busy[r.LID] = false
	e.nbusy--
	if e.wstate[r.LID] == lridDropped {
		e.wstate[r.LID] = lridFree
		return nil
	}
	if len(e.held) >= 1<<16 {
		return e.enc.fail(fmt.Errorf("etrace: %d data accesses without an ingress block", len(e.held)))
	}
	// (the size of its request: the lrid may be reused before the
	// response is written)
	e.held = append(e.held, heldData{r: *r, resp: true, a: ingress.Access{DSize: e.rsize[r.LID]}})
	return nil
}

// Block writes the packets of the accesses held, which must belong to b's
// instructions, then encodes b.
func (e *DataEncoder) Block(b *ingress.Block) error {
	if len(e.held) > 0 {
		if err := e.flushHeld(b); err != nil {
			return err
		}
	}
	return e.enc.Block(b)
}

func (e *DataEncoder) flushHeld(b *ingress.Block) error {
	lo, hi := b.IAddr, b.LastAddr()
	w := e.enc.out
	if !e.enc.supportSent {
		// the support packet that starts the trace comes first, so a
		// decoder knows that no data packet before it is of this trace
		e.enc.begin()
	}
	for i := range e.held {
		h := &e.held[i]
		if h.resp {
			if err := e.writeResponse(&h.r, h.a.DSize, b.Time); err != nil {
				return err
			}
			continue
		}
		a := &h.a
		if b.IRetire == 0 || a.IAddr < lo || a.IAddr > hi {
			return e.enc.fail(fmt.Errorf("etrace: data access of the instruction at %#x comes before the ingress block %#x..%#x, which does not hold it", a.IAddr, lo, hi))
		}
		if w.syncs != e.syncs {
			e.st.reset()
			e.syncs = w.syncs
		}
		if a.Split {
			e.dc.encodeRequest(&e.st, a, !e.cfg.NoCompress, &e.pkt)
			e.wstate[a.LRID] = lridOut
		} else {
			e.dc.encodeAccess(&e.st, a, !e.cfg.NoCompress, &e.pkt)
		}
		if e.pkt.Diff == 0 {
			e.stats.Full++
		}
		if err := e.write(&e.pkt, b.Time); err != nil {
			return err
		}
	}
	e.held = e.held[:0]
	return nil
}

// writeResponse writes the load data packet of a response whose request
// was written (none with trTeDataNoValue).
func (e *DataEncoder) writeResponse(r *ingress.LoadResponse, size uint8, ts uint64) error {
	if e.wstate[r.LID] != lridOut {
		// its request was dropped
		e.wstate[r.LID] = lridFree
		return nil
	}
	e.wstate[r.LID] = lridFree
	if e.cfg.Fields == DataAddrOnly {
		return nil
	}
	if w := e.enc.out; w.syncs != e.syncs {
		e.st.reset()
		e.syncs = w.syncs
	}
	e.dc.encodeResponse(&e.st, r, size, !e.cfg.NoCompress, &e.pkt)
	if e.pkt.Resp == 2 {
		e.stats.Full++
	}
	return e.write(&e.pkt, ts)
}

// write frames and writes one data packet.
func (e *DataEncoder) write(p *DataPacket, ts uint64) error {
	w := e.enc.out
	if w.err != nil {
		return e.enc.fail(w.err)
	}
	pl := e.dc.append(e.buf[:0], p)
	if len(pl) > maxPayload {
		return e.enc.fail(fmt.Errorf("etrace: data packet of %d bytes", len(pl)))
	}
	n0 := len(w.buf)
	c := &w.cfg
	switch c.Encap {
	case EncapUTDD:
		extra := c.srcBytes()
		hdr := byte(len(pl) + extra)
		if c.TimestampBytes > 0 {
			hdr |= 0x80
		}
		w.buf = append(w.buf, hdr)
		v := uint64(c.Data.SrcID) & mask(c.SrcBits)
		if c.TypeField {
			v |= msgData << uint(c.SrcBits) // data trace
		}
		for i := 0; i < extra; i++ {
			w.buf = append(w.buf, byte(v>>(8*uint(i))))
		}
		for i := 0; i < c.TimestampBytes; i++ {
			w.buf = append(w.buf, byte(ts>>(8*uint(i))))
		}
	default:
		w.buf = append(w.buf, byte(len(pl))|msgData<<5)
	}
	w.buf = append(w.buf, pl...)
	e.stats.Accesses++
	e.stats.Bytes += uint64(len(w.buf) - n0)
	if len(w.buf) >= 4096-64 || w.perPacket {
		return e.enc.fail(w.Flush())
	}
	return nil
}

// Notify implements ingress.Gated.
func (e *DataEncoder) Notify() error { return e.enc.Notify() }

// TraceOff implements ingress.Gated. Accesses held (of blocks a filter
// dropped) are discarded, and so are the responses to the requests among
// them; responses to requests already written stay held.
func (e *DataEncoder) TraceOff() error {
	e.dropHeld()
	return e.enc.TraceOff()
}

// dropHeld discards the accesses held, keeping the responses to requests
// written.
func (e *DataEncoder) dropHeld() {
	k := 0
	for _, h := range e.held {
		switch {
		case !h.resp:
			if h.a.Split {
				e.wstate[h.a.LRID] = lridDropped
			}
		case e.wstate[h.r.LID] == lridDropped:
			e.wstate[h.r.LID] = lridFree
		default:
			e.held[k] = h
			k++
		}
	}
	e.held = e.held[:k]
}

// Close ends the trace: responses held are written. Accesses still held
// belong to no block, and a request written that got no response has no
// data: both are errors.
func (e *DataEncoder) Close() error {
	var err error
	for i, h := range e.held {
		if !h.resp {
			err = fmt.Errorf("etrace: %d data accesses after the last ingress block (the first of the instruction at %#x)", len(e.held)-i, h.a.IAddr)
			break
		}
		if e.enc.err == nil {
			e.writeResponse(&e.held[i].r, h.a.DSize, 0)
		}
	}
	e.held = e.held[:0]
	if err == nil && e.nbusy > 0 {
		err = fmt.Errorf("etrace: %d split load requests without a response at the end of the trace", e.nbusy)
	}
	if err != nil {
		e.enc.fail(err)
	}
	e.done = true
	return e.enc.Close()
}
