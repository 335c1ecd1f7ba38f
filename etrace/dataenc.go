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
// (passed on to the encoder).
type DataEncoder struct {
	enc   *Encoder
	dc    *dataCodec
	cfg   *DataConfig
	st    dataState
	syncs uint64 // the writer's sync count the state was reset at
	held  []ingress.Access
	pkt   DataPacket
	stats DataStats
	buf   []byte
	done  bool // closed
}

// NewDataEncoder returns the data trace front of enc, whose configuration
// must have Data set.
func NewDataEncoder(enc *Encoder) (*DataEncoder, error) {
	d := enc.cfg.Data
	if d == nil {
		return nil, fmt.Errorf("etrace: data trace encoder on an encoder without a data configuration")
	}
	return &DataEncoder{enc: enc, dc: newDataCodec(d), cfg: d, buf: make([]byte, 0, 48)}, nil
}

// Stats returns the data packet counts.
func (e *DataEncoder) Stats() DataStats { return e.stats }

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
	if !a.DType.Valid() || a.DType.IsCSR() {
		return e.enc.fail(fmt.Errorf("etrace: data access at pc %#x: dtype %s not traced", a.IAddr, a.DType))
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
	if len(e.held) >= 1<<16 {
		return e.enc.fail(fmt.Errorf("etrace: %d data accesses without an ingress block", len(e.held)))
	}
	e.held = append(e.held, *a)
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
		a := &e.held[i]
		if b.IRetire == 0 || a.IAddr < lo || a.IAddr > hi {
			return e.enc.fail(fmt.Errorf("etrace: data access of the instruction at %#x comes before the ingress block %#x..%#x, which does not hold it", a.IAddr, lo, hi))
		}
		if w.syncs != e.syncs {
			e.st.reset()
			e.syncs = w.syncs
		}
		e.dc.encodeAccess(&e.st, a, !e.cfg.NoCompress, &e.pkt)
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
// dropped) are discarded.
func (e *DataEncoder) TraceOff() error {
	e.held = e.held[:0]
	return e.enc.TraceOff()
}

// Close ends the trace. Accesses still held belong to no block: an error.
func (e *DataEncoder) Close() error {
	if n := len(e.held); n > 0 {
		a := e.held[0]
		e.held = e.held[:0]
		e.enc.fail(fmt.Errorf("etrace: %d data accesses after the last ingress block (the first of the instruction at %#x)", n, a.IAddr))
	}
	e.done = true
	return e.enc.Close()
}
