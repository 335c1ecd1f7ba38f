package etrace

import (
	"fmt"

	"github.com/rvtrace/rvtrace/ingress"
)

// The split protocol's packets (see data.go for the decisions taken):
//
//	split load request  format 000/001, size, lrid, diff (1), address
//	split atomic        format 110, subtype, size, lrid, diff (1),
//	                    op_len, operand, address
//	split load data     format 100, size, lrid, resp (2), data
//
// With trTeDataNoAddr the requests drop diff and address; with
// trTeDataNoValue the atomic drops op_len and operand (and no load data
// packet is written).

// putSplit writes the fields of a split packet after size.
func (c *dataCodec) putSplit(p *DataPacket) {
	b := &c.bw
	b.put(uint64(p.LRID), c.lridw)
	if p.Format == DFmtSplitData {
		b.put(uint64(p.Resp), 2)
		if p.Resp != 0 {
			b.put(p.Data, c.dataWidth)
		}
		return
	}
	if c.fields != DataValueOnly {
		b.put(uint64(p.Diff), 1)
	}
	if p.Format == DFmtAtomic && c.fields != DataAddrOnly {
		b.put(uint64(p.OpLen), int(p.Size))
		b.put(p.Operand, 8*(int(p.OpLen)+1))
	}
	if c.fields != DataValueOnly {
		b.put(p.Address, c.daw)
	}
}

// getSplit reads the fields of a split packet after size.
func (c *dataCodec) getSplit(p *DataPacket) error {
	r := &c.dr
	p.LRID = uint32(r.get(c.lridw))
	if p.Format == DFmtSplitData {
		if c.fields == DataAddrOnly {
			return fmt.Errorf("split load data packet (format 100) in an address-only trace")
		}
		p.Resp = uint8(r.get(2))
		if p.Resp != 0 {
			p.Data = r.get(c.dataWidth)
		}
		return nil
	}
	if c.fields != DataValueOnly {
		p.Diff = uint8(r.get(1))
	}
	if p.Format == DFmtAtomic && c.fields != DataAddrOnly {
		p.OpLen = uint8(r.get(int(p.Size)))
		p.Operand = r.get(8 * (int(p.OpLen) + 1))
	}
	if c.fields != DataValueOnly {
		p.Address = r.get(c.daw)
	}
	return nil
}

// splitPre sets the state's valid flag of size z for a unified packet
// (store, failed sc) of a split trace: the address and the value it is
// compressed against must both be known, as far as the packet carries
// them.
func (c *dataCodec) splitPre(s *dataState, z uint8) {
	s.valid[z] = (c.fields == DataValueOnly || s.aval[z]) && (c.fields == DataAddrOnly || s.vval[z])
}

// splitPost records what a unified packet of a split trace made known.
func (c *dataCodec) splitPost(s *dataState, z uint8) {
	if s.valid[z] {
		s.aval[z], s.vval[z] = true, true
	}
}

// encodeRequest fills p, a split request packet, for the request a (a
// load or an atomic with Split set) and updates the state.
func (c *dataCodec) encodeRequest(s *dataState, a *ingress.Access, compress bool, p *DataPacket) {
	z := a.DSize & 3
	*p = DataPacket{Size: z, LRID: a.LRID}
	align := uint64(1)<<z - 1
	full := !compress || !s.aval[z]
	prevAddr := s.addr[z]
	atomic := a.DType.IsAtomic()
	if atomic && prevAddr&align != 0 {
		full = true // an atomic's address is encoded aligned
	}
	aligned := atomic || a.DAddr&align == 0 && (full || prevAddr&align == 0)
	switch {
	case atomic:
		p.Format, p.Subtype = DFmtAtomic, uint8(a.DType-ingress.DTypeAtomicSwp)
	case aligned:
		p.Format = DFmtLoadAligned
	default:
		p.Format = DFmtLoadUnaligned
	}
	if c.fields != DataValueOnly {
		daw := mask(c.daw)
		switch {
		case full && aligned:
			p.Address = a.DAddr & daw >> z
		case full:
			p.Address = a.DAddr & daw
		case aligned:
			p.Address = uint64(int64(a.DAddr-prevAddr)>>z) & daw
		default:
			p.Address = (a.DAddr - prevAddr) & daw
		}
		if !full {
			p.Diff = 1
		}
		s.addr[z], s.aval[z] = a.DAddr, true
	}
	if atomic && c.fields != DataAddrOnly {
		op := a.SData & sizeMask(z)
		p.OpLen = uint8(byteLen(op, z) - 1)
		p.Operand = op & mask(8*(int(p.OpLen)+1))
	}
}

// encodeResponse fills p, a split load data packet, for response r to a
// request of size z and updates the state.
func (c *dataCodec) encodeResponse(s *dataState, r *ingress.LoadResponse, z uint8, compress bool, p *DataPacket) {
	*p = DataPacket{Format: DFmtSplitData, Size: z, LRID: r.LID}
	if r.Resp != ingress.LRespOkay {
		return // resp 00: error, no data
	}
	m := sizeMask(z)
	val := r.Data & m
	p.Resp = 2
	if compress && s.vval[z] {
		best, bl := val, byteLen(val, z)
		if x := (val ^ s.val[z]) & m; byteLen(x, z) < bl {
			best, bl, p.Resp = x, byteLen(x, z), 1
		}
		if d := (val - s.val[z]) & m; byteLen(d, z) < bl {
			best, p.Resp = d, 3
		}
		p.Data = sext(best, 8<<z) & mask(c.dataWidth)
	} else {
		p.Data = sext(val, 8<<z) & mask(c.dataWidth)
	}
	s.val[z], s.vval[z] = val, true
}

// decodeRequest rebuilds request a (Split set, Data 0) from split packet p
// and updates the state.
func (c *dataCodec) decodeRequest(s *dataState, p *DataPacket, a *ingress.Access) error {
	z := p.Size
	*a = ingress.Access{DSize: z, LRID: p.LRID, Split: true, DType: ingress.DTypeLoad}
	if p.Format == DFmtAtomic {
		a.DType = ingress.DTypeAtomicSwp + ingress.DType(p.Subtype)
	}
	if c.fields != DataValueOnly {
		aligned := p.Format != DFmtLoadUnaligned
		v := p.Address
		if p.Diff == 0 {
			if aligned {
				v <<= z
			}
		} else {
			if !s.aval[z] {
				return fmt.Errorf("differential address with no earlier access of size %d since the last synchronisation", 1<<z)
			}
			d := sext(v, c.daw)
			if aligned {
				d <<= z
			}
			v = s.addr[z] + d
		}
		a.DAddr = v & mask(c.daw)
		s.addr[z], s.aval[z] = a.DAddr, true
	}
	if p.Format == DFmtAtomic && c.fields != DataAddrOnly {
		m := sizeMask(z)
		op := sext(p.Operand, 8*(int(p.OpLen)+1)) & m
		if byteLen(op, z) != int(p.OpLen)+1 {
			return fmt.Errorf("op_len %d where %d bytes restore the operand", p.OpLen, byteLen(op, z))
		}
		a.SData = op
	}
	return nil
}

// decodeResponse returns the load data of split load data packet p (ok
// false for an error response) and updates the state.
func (c *dataCodec) decodeResponse(s *dataState, p *DataPacket) (v uint64, ok bool, err error) {
	z := p.Size
	if p.Resp == 0 {
		return 0, false, nil
	}
	m := sizeMask(z)
	raw := p.Data & m
	if sext(raw, 8<<z)&mask(c.dataWidth) != p.Data {
		return 0, false, fmt.Errorf("data field %#x is not a %d-byte value sign-extended", p.Data, 1<<z)
	}
	if p.Resp != 2 && !s.vval[z] {
		return 0, false, fmt.Errorf("compressed load data (resp %d) with no earlier value of size %d since the last synchronisation", p.Resp, 1<<z)
	}
	switch p.Resp {
	case 1:
		raw = (raw ^ s.val[z]) & m
	case 3:
		raw = (raw + s.val[z]) & m
	}
	s.val[z], s.vval[z] = raw, true
	return raw, true, nil
}
