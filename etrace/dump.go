package etrace

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/rvtrace/rvtrace/ingress"
)

// DumpStats summarises a dump.
type DumpStats struct {
	Packets  uint64
	Errors   uint64
	ByFormat [4]uint64
	Data     uint64 // data trace packets
}

// dataDumper lists data packets, with the access each decodes to.
type dataDumper struct {
	dc  *dataCodec
	st  dataState
	p   DataPacket
	a   ingress.Access
	bad bool // a packet failed: the state is unknown until the next sync
}

func (d *dataDumper) line(w *bufio.Writer, payload []byte) error {
	if err := d.dc.parse(payload, &d.p); err != nil {
		d.bad = true
		return err
	}
	p := &d.p
	if p.Format == DFmtCSR {
		return d.csrLine(w)
	}
	fmt.Fprintf(w, "data format=%d", p.Format)
	if p.Format == DFmtAtomic {
		fmt.Fprintf(w, " subtype=%d", p.Subtype)
	}
	if d.dc.isSplit(p.Format, p.Subtype) {
		return d.splitLine(w)
	}
	fmt.Fprintf(w, " size=%d diff=%d", p.Size, p.Diff)
	l := d.dc.layout(p.Format, p.Subtype)
	if l.operand {
		fmt.Fprintf(w, " op_len=%d operand=%#x", p.OpLen, p.Operand)
	}
	if l.dataLen {
		fmt.Fprintf(w, " data_len=%d", p.DataLen)
	}
	if l.dataLen || l.dataW {
		fmt.Fprintf(w, " data=%#x", p.Data)
	}
	if l.address {
		fmt.Fprintf(w, " address=%#x", p.Address)
	}
	if err := d.dc.decodeAccess(&d.st, p, &d.a); err != nil {
		d.bad = true
		return err
	}
	fmt.Fprintf(w, "  -> %s", d.a.DType)
	if l.address {
		fmt.Fprintf(w, " @%#x", d.a.DAddr)
	}
	if l.dataLen || l.dataW {
		if d.a.DType.IsAtomic() {
			fmt.Fprintf(w, " load=%#x store=%#x", d.a.Data, d.a.SData)
		} else {
			fmt.Fprintf(w, " =%#x", d.a.Data)
		}
	}
	w.WriteByte('\n')
	return nil
}

// csrLine lists the fields of a CSR packet, in the order of its layout,
// and the access it decodes to.
func (d *dataDumper) csrLine(w *bufio.Writer) error {
	p := &d.p
	fmt.Fprintf(w, "data format=%d subtype=%d", p.Format, p.Subtype)
	for _, f := range csrLayouts[d.dc.csrVariant(p.Address)] {
		switch f {
		case cfDiff:
			fmt.Fprintf(w, " diff=%d", p.Diff)
		case cfDataLen:
			fmt.Fprintf(w, " data_len=%d", p.DataLen)
		case cfData:
			fmt.Fprintf(w, " data=%#x", p.Data)
		case cfAddrMSBs:
			fmt.Fprintf(w, " addr_msbs=%#x", p.Address>>6)
		case cfOpLen:
			fmt.Fprintf(w, " op_len=%d", p.OpLen)
		case cfOperand:
			fmt.Fprintf(w, " operand=%#x", p.Operand)
		case cfAddrLSBs:
			fmt.Fprintf(w, " addr_lsbs=%#x", p.Address&63)
		}
	}
	if err := d.dc.decodeAccess(&d.st, p, &d.a); err != nil {
		d.bad = true
		return err
	}
	fmt.Fprintf(w, "  -> %s csr %#x", d.a.DType, d.a.DAddr)
	if d.dc.fields != DataAddrOnly {
		fmt.Fprintf(w, " read=%#x operand=%#x", d.a.SData, d.a.Data)
	}
	w.WriteByte('\n')
	return nil
}

// splitLine lists the fields of a split request or load data packet and
// what it decodes to.
func (d *dataDumper) splitLine(w *bufio.Writer) error {
	p := &d.p
	fmt.Fprintf(w, " size=%d lrid=%d", p.Size, p.LRID)
	if p.Format == DFmtSplitData {
		fmt.Fprintf(w, " resp=%d", p.Resp)
		if p.Resp != 0 {
			fmt.Fprintf(w, " data=%#x", p.Data)
		}
		v, ok, err := d.dc.decodeResponse(&d.st, p)
		if err != nil {
			d.bad = true
			return err
		}
		if ok {
			fmt.Fprintf(w, "  -> load data of lrid %d =%#x\n", p.LRID, v)
		} else {
			fmt.Fprintf(w, "  -> load error of lrid %d\n", p.LRID)
		}
		return nil
	}
	hasAddr := d.dc.fields != DataValueOnly
	if hasAddr {
		fmt.Fprintf(w, " diff=%d", p.Diff)
	}
	if p.Format == DFmtAtomic && d.dc.fields != DataAddrOnly {
		fmt.Fprintf(w, " op_len=%d operand=%#x", p.OpLen, p.Operand)
	}
	if hasAddr {
		fmt.Fprintf(w, " address=%#x", p.Address)
	}
	if err := d.dc.decodeRequest(&d.st, p, &d.a); err != nil {
		d.bad = true
		return err
	}
	fmt.Fprintf(w, "  -> %s request lrid %d", d.a.DType, d.a.LRID)
	if hasAddr {
		fmt.Fprintf(w, " @%#x", d.a.DAddr)
	}
	if p.Format == DFmtAtomic && d.dc.fields != DataAddrOnly {
		fmt.Fprintf(w, " store=%#x", d.a.SData)
	}
	w.WriteByte('\n')
	return nil
}

// DumpOptions configure DumpWith.
type DumpOptions struct {
	// Symbolize, when not nil, names the function an address is in
	// ("main+0x10", "" for none). Every packet whose own fields give an
	// instruction address then shows it, absolute and named, as
	// "[0x80000024 <_start+0x24>]" right after its address field (after
	// the packet for a trap whose handler comes from the trap vector):
	// the address of a sync packet, the EPC or handler of a trap, and a
	// full or differential address of a format 0, 1 or 2 packet, made
	// absolute as the decoder does, by adding it to the last address
	// reported by the same source. A differential address with no full
	// address before it (at the start, or after a framing or packet
	// error) shows "[base unknown]". A jump target cache index names
	// no address: the cache is filled by following the program, which a
	// dump does not do.
	Symbolize func(addr uint64) string
}

// Dump writes one line per packet of the framed byte stream read from r:
// its byte offset, payload bytes and every field it has. Framing and
// packet errors are listed in place and the dump goes on; the returned
// error is a read or write error.
func Dump(r io.Reader, w io.Writer, cfg *Config) (DumpStats, error) {
	return DumpWith(r, w, cfg, DumpOptions{})
}

// DumpWith is Dump with options.
func DumpWith(r io.Reader, w io.Writer, cfg *Config, opt DumpOptions) (DumpStats, error) {
	var st DumpStats
	bw := bufio.NewWriter(w)
	c := NewCodec(cfg)
	sc := NewScanner(r, cfg)
	var p Packet
	var addrs dumpAddrs
	dd := newDataDumpers(cfg.Data) // multidata.go
	for {
		if !sc.Scan() {
			if err := sc.Err(); err != nil {
				if _, ok := err.(*FramingError); !ok {
					bw.Flush()
					return st, err
				}
				st.Errors++
				addrs.lost()
				fmt.Fprintf(bw, "error: %v\n", err)
				if !sc.Done() {
					continue
				}
			}
			break
		}
		fr := sc.Frame()
		fmt.Fprintf(bw, "%8d: % x  ", fr.Offset, fr.Payload)
		if fr.Data {
			st.Data++
			if dd == nil {
				fmt.Fprintf(bw, "data packet (decode with --data-trace)\n")
				continue
			}
			bw.WriteString(dd.srcPrefix(fr))
			if err := dd.get(fr.SrcID).line(bw, fr.Payload); err != nil {
				st.Errors++
				fmt.Fprintf(bw, "error: data packet %d: %v\n", st.Data-1, err)
			}
			continue
		}
		if err := c.Parse(fr.Payload, fr.Support, &p); err != nil {
			st.Errors++
			addrs.lost()
			fmt.Fprintf(bw, "error: packet %d: %v\n", st.Packets, err)
			continue
		}
		st.Packets++
		st.ByFormat[p.Format&3]++
		if dd != nil && p.Format == FormatSync && (p.Subformat == SubStart || p.Subformat == SubTrap) {
			dd.sync(fr.SrcID)
		}
		if cfg.Encap == EncapUTDD && (cfg.SrcBits > 0 || cfg.TimestampBytes > 0) {
			fmt.Fprintf(bw, "src=%d ts=%d ", fr.SrcID, fr.Timestamp)
		}
		line := c.String(&p)
		if opt.Symbolize != nil {
			line = addrs.name(c, &p, fr.SrcID, line, opt.Symbolize)
		}
		bw.WriteString(line)
		bw.WriteByte('\n')
		if p.Format == FormatSync && p.Subformat == SubSupport && cfg.Version == V2 {
			c.Options = OptionsFromBits(p.IOptions)
			if dd != nil && p.DEnable != 0 {
				dd.announce(fr.SrcID, p.DOptions)
			}
		}
	}
	data := ""
	if st.Data > 0 {
		data = fmt.Sprintf(", %d data packets", st.Data)
	}
	fmt.Fprintf(bw, "# %d packets (format 0: %d, 1: %d, 2: %d, 3: %d)%s, %d errors, %d bytes\n",
		st.Packets, st.ByFormat[0], st.ByFormat[1], st.ByFormat[2], st.ByFormat[3], data, st.Errors, sc.Offset())
	return st, bw.Flush()
}

// dumpAddrs follows the last reported address of each source, as the
// decoder does, to make the address fields of a dump absolute.
type dumpAddrs struct {
	last map[uint32]uint64 // by source; absent: no full address yet
}

// lost forgets every address: after a lost packet, a differential
// address has no known base.
func (a *dumpAddrs) lost() { clear(a.last) }

// addr returns the instruction address p's fields give, and whether they
// give one (has) and it is known (ok).
func (a *dumpAddrs) addr(c *Codec, p *Packet, src uint32) (v uint64, has, ok bool) {
	pr := &c.Params
	lsb, amask := uint(pr.IAddressLSB), pr.addrMask()
	v026 := c.Version == V026
	present := c.present(p)[fAddress]
	if a.last == nil {
		a.last = map[uint32]uint64{}
	}
	switch p.Format {
	case FormatSync:
		if p.Subformat != SubStart && p.Subformat != SubTrap {
			return 0, false, false
		}
		if !present {
			// Implicit exception mode: the handler from the vector.
			v, ok = pr.handler(p.Ecause, p.Interrupt != 0)
			return v, true, ok
		}
		v = p.Address << lsb & amask
		a.last[src] = v
		return v, true, true
	case FormatExt:
		if !v026 && p.Subformat == SubJumpCache {
			return 0, false, false
		}
	}
	if !present {
		return 0, false, false
	}
	full := c.Options.FullAddress
	if v026 {
		full = p.Format == FormatExt || p.Format == FormatAddr && c.Options.FullAddress
	}
	if full {
		v = p.Address << lsb
	} else {
		base, known := a.last[src]
		if !known {
			return 0, true, false
		}
		d := p.Address
		if n := pr.addrBits(); n < 64 && d>>(uint(n)-1)&1 != 0 {
			d |= ^mask(n)
		}
		v = base + d<<lsb
	}
	v &= amask
	a.last[src] = v
	return v, true, true
}

// name inserts into the listing line of p the absolute address its fields
// give, named by sym (see DumpOptions.Symbolize).
func (a *dumpAddrs) name(c *Codec, p *Packet, src uint32, line string, sym func(uint64) string) string {
	v, has, ok := a.addr(c, p, src)
	if !has {
		return line
	}
	note := " [base unknown]"
	if ok {
		note = fmt.Sprintf(" [%#x]", v)
		if n := sym(v); n != "" {
			note = fmt.Sprintf(" [%#x <%s>]", v, n)
		}
	}
	i := strings.Index(line, " address=")
	if i < 0 {
		return line + " handler" + note
	}
	i += len(" address=")
	if j := strings.IndexByte(line[i:], ' '); j >= 0 {
		i += j
	} else {
		i = len(line)
	}
	return line[:i] + note + line[i:]
}

// ToCSV converts the framed byte stream read from r to the reference
// flow's te_inst CSV. It stops at the first framing or packet error.
func ToCSV(r io.Reader, cfg *Config, w io.Writer) error {
	cw := NewCSVWriter(w, cfg)
	c := NewCodec(cfg)
	sc := NewScanner(r, cfg)
	var p Packet
	for sc.Scan() {
		fr := sc.Frame()
		if fr.Data {
			return fmt.Errorf("byte %d: a data trace packet: the te_inst CSV has no data trace", fr.Offset)
		}
		if err := c.Parse(fr.Payload, fr.Support, &p); err != nil {
			return fmt.Errorf("byte %d: %w", fr.Offset, err)
		}
		if p.Format == FormatSync && p.Subformat == SubSupport && cfg.Version == V2 {
			c.Options = OptionsFromBits(p.IOptions)
		}
		if err := cw.Write(&p); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return cw.Flush()
}

// DecodeCSV decodes packets read from a te_inst CSV file.
func (d *Decoder) DecodeCSV(r io.Reader) error {
	err := ReadCSV(r, &d.cfg, func(p *Packet, line int) error {
		return d.Packet(p, int64(line))
	})
	if err != nil {
		return err
	}
	return d.Flush()
}
