package etrace

import (
	"bufio"
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// csvColumns are the 26 columns of the reference flow's te_inst CSV files
// (.te_inst), in its order.
var csvColumns = [...]field{
	fFormat, fSubformat, fAddress, fBranch, fBranches, fBranchMap, fBranchCount,
	fBranchFmt, fContext, fEcause, fIEnable, fEncoderMode, fInterrupt, fIrreport,
	fIrdepth, fNotify, fIOptions, fPrivilege, fQualStatus, fTime, fThaddr, fTval,
	fUpdiscon, fDEnable, fDLoss, fDOptions,
}

// csvNone marks a field a packet does not have.
const csvNone = "_"

// CSVWriter writes packets as the reference flow's te_inst CSV: a header
// line with the 26 field names, then one line per packet with the wire
// values of its fields (address and tval in hex without a prefix, the
// others in decimal, status bits as raw bits) and "_" for the fields it
// does not have. Files written so can be compared field by field with the
// reference encoder's output.
type CSVWriter struct {
	w      *bufio.Writer
	c      *Codec
	header bool
	line   []byte
}

// NewCSVWriter returns a CSV writer for packets of cfg.
func NewCSVWriter(w io.Writer, cfg *Config) *CSVWriter {
	return &CSVWriter{w: bufio.NewWriter(w), c: NewCodec(cfg), line: make([]byte, 0, 256)}
}

// Write writes one packet. The values are numbers and "_", which CSV
// needs not quote, so lines are formatted here without allocating.
func (cw *CSVWriter) Write(p *Packet) error {
	if !cw.header {
		for i, f := range csvColumns {
			if i > 0 {
				cw.w.WriteByte(',')
			}
			cw.w.WriteString(fieldNames[f])
		}
		cw.w.WriteByte('\n')
		cw.header = true
	}
	if p.Format == FormatSync && p.Subformat == SubSupport {
		cw.c.Options = OptionsFromBits(p.IOptions)
	}
	raw, err := cw.c.rawFields(p)
	if err != nil {
		return err
	}
	have := cw.c.present(p)
	if p.Format == FormatSync && p.Subformat == SubSupport {
		have[fDEnable], have[fDLoss], have[fDOptions] = true, true, true
	}
	b := cw.line[:0]
	for i, f := range csvColumns {
		if i > 0 {
			b = append(b, ',')
		}
		switch {
		case !have[f]:
			b = append(b, csvNone...)
		case f == fAddress || f == fTval:
			b = strconv.AppendUint(b, raw[f], 16)
		default:
			b = strconv.AppendUint(b, raw[f], 10)
		}
	}
	b = append(b, '\n')
	cw.line = b
	_, err = cw.w.Write(b)
	return err
}

// Flush writes buffered lines.
func (cw *CSVWriter) Flush() error {
	return cw.w.Flush()
}

// ReadCSV reads a te_inst CSV file and calls fn for each packet with its
// line number. Columns may come in any order; missing columns and "_" mean
// absent fields. Support packets update the options used to read later
// packets.
func ReadCSV(r io.Reader, cfg *Config, fn func(p *Packet, line int) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	cr.ReuseRecord = true
	c := NewCodec(cfg)
	header, err := cr.Read()
	if err != nil {
		return fmt.Errorf("te_inst CSV: header: %w", err)
	}
	col := map[field]int{}
	for i, h := range header {
		h = strings.TrimSpace(strings.ToLower(h))
		for f := field(0); f < numFields; f++ {
			if fieldNames[f] == h {
				col[f] = i
			}
		}
	}
	if _, ok := col[fFormat]; !ok {
		return fmt.Errorf("te_inst CSV: no format column")
	}
	line := 1
	var p Packet
	for {
		rec, err := cr.Read()
		line++
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("te_inst CSV line %d: %w", line, err)
		}
		var raw [numFields]uint64
		var have [numFields]bool
		for f, i := range col {
			if i >= len(rec) {
				continue
			}
			s := strings.TrimSpace(rec[i])
			if s == "" || s == csvNone {
				continue
			}
			base := 10
			if f == fAddress || f == fTval {
				base = 16
				s = strings.TrimPrefix(strings.ToLower(s), "0x")
			}
			v, err := strconv.ParseUint(s, base, 64)
			if err != nil {
				return fmt.Errorf("te_inst CSV line %d: %s: %v", line, fieldNames[f], err)
			}
			raw[f], have[f] = v, true
		}
		if err := c.fromRaw(&p, &raw); err != nil {
			return fmt.Errorf("te_inst CSV line %d: %w", line, err)
		}
		if p.Format == FormatSync && p.Subformat == SubSupport && cfg.Version == V2 {
			c.Options = OptionsFromBits(p.IOptions)
		}
		if err := fn(&p, line); err != nil {
			return err
		}
	}
}

// fromRaw builds a packet from raw field values by writing them to a bit
// buffer and reading it back, so that status bits are interpreted exactly
// as on the wire.
func (c *Codec) fromRaw(p *Packet, raw *[numFields]uint64) error {
	*p = Packet{}
	if raw[fFormat] > 3 || raw[fSubformat] > 3 {
		return fmt.Errorf("bad format %d/%d", raw[fFormat], raw[fSubformat])
	}
	for _, f := range []field{fFormat, fSubformat, fBranches, fBranchFmt, fThaddr, fInterrupt} {
		p.set(f, raw[f])
	}
	if p.Format == FormatExt && c.Version == V2 && c.Params.f0sBits() == 0 {
		p.Subformat = c.f0Implied()
	}
	if err := c.marshal(p, raw); err != nil {
		return err
	}
	r := &c.r
	r.w, r.n, r.sign = c.w.w, c.w.n, c.w.last()
	q := Packet{Format: p.Format, Subformat: p.Subformat}
	if err := c.unmarshal(&q, c.layout(p), nil); err != nil {
		return err
	}
	*p = q
	return c.check(p)
}
