package etrace

import (
	"bufio"
	"fmt"
	"io"

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
	fmt.Fprintf(w, "data format=%d", p.Format)
	if p.Format == DFmtAtomic {
		fmt.Fprintf(w, " subtype=%d", p.Subtype)
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

// Dump writes one line per packet of the framed byte stream read from r:
// its byte offset, payload bytes and every field it has. Framing and
// packet errors are listed in place and the dump goes on; the returned
// error is a read or write error.
func Dump(r io.Reader, w io.Writer, cfg *Config) (DumpStats, error) {
	var st DumpStats
	bw := bufio.NewWriter(w)
	c := NewCodec(cfg)
	sc := NewScanner(r, cfg)
	var p Packet
	var dd *dataDumper
	if cfg.Data != nil {
		dd = &dataDumper{dc: newDataCodec(cfg.Data)}
	}
	for {
		if !sc.Scan() {
			if err := sc.Err(); err != nil {
				if _, ok := err.(*FramingError); !ok {
					bw.Flush()
					return st, err
				}
				st.Errors++
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
			if err := dd.line(bw, fr.Payload); err != nil {
				st.Errors++
				fmt.Fprintf(bw, "error: data packet %d: %v\n", st.Data-1, err)
			}
			continue
		}
		if err := c.Parse(fr.Payload, fr.Support, &p); err != nil {
			st.Errors++
			fmt.Fprintf(bw, "error: packet %d: %v\n", st.Packets, err)
			continue
		}
		st.Packets++
		st.ByFormat[p.Format&3]++
		if dd != nil && p.Format == FormatSync && (p.Subformat == SubStart || p.Subformat == SubTrap) {
			dd.st.reset()
		}
		if cfg.Encap == EncapUTDD && (cfg.SrcBits > 0 || cfg.TimestampBytes > 0) {
			fmt.Fprintf(bw, "src=%d ts=%d ", fr.SrcID, fr.Timestamp)
		}
		bw.WriteString(c.String(&p))
		bw.WriteByte('\n')
		if p.Format == FormatSync && p.Subformat == SubSupport && cfg.Version == V2 {
			c.Options = OptionsFromBits(p.IOptions)
		}
	}
	fmt.Fprintf(bw, "# %d packets (format 0: %d, 1: %d, 2: %d, 3: %d), %d data packets, %d errors, %d bytes\n",
		st.Packets, st.ByFormat[0], st.ByFormat[1], st.ByFormat[2], st.ByFormat[3], st.Data, st.Errors, sc.Offset())
	return st, bw.Flush()
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
