package etrace

import (
	"bufio"
	"fmt"
	"io"
)

// DumpStats summarises a dump.
type DumpStats struct {
	Packets  uint64
	Errors   uint64
	ByFormat [4]uint64
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
		if err := c.Parse(fr.Payload, fr.Support, &p); err != nil {
			st.Errors++
			fmt.Fprintf(bw, "error: packet %d: %v\n", st.Packets, err)
			continue
		}
		st.Packets++
		st.ByFormat[p.Format&3]++
		if cfg.Encap == EncapUTDD && (cfg.SrcBits > 0 || cfg.TimestampBytes > 0) {
			fmt.Fprintf(bw, "src=%d ts=%d ", fr.SrcID, fr.Timestamp)
		}
		bw.WriteString(c.String(&p))
		bw.WriteByte('\n')
		if p.Format == FormatSync && p.Subformat == SubSupport && cfg.Version == V2 {
			c.Options = OptionsFromBits(p.IOptions)
		}
	}
	fmt.Fprintf(bw, "# %d packets (format 0: %d, 1: %d, 2: %d, 3: %d), %d errors, %d bytes\n",
		st.Packets, st.ByFormat[0], st.ByFormat[1], st.ByFormat[2], st.ByFormat[3], st.Errors, sc.Offset())
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
