package ntrace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strings"
)

// DumpOptions controls Dump.
type DumpOptions struct {
	Wire WireConfig
	// Bytes prints one line per byte (hex, MDO and MSEO bits) with each
	// field's name, width and value on the byte where it ends, like the
	// N-Trace reference code's dump.
	Bytes bool
}

// Dump writes a readable listing of the messages read from r to w: one
// line per message with every field, address fields also as the full
// address they encode, and a line for every malformed message. It returns
// statistics of what it read.
func Dump(r io.Reader, w io.Writer, opt DumpOptions) (*Stats, error) {
	rd := NewReader(r, opt.Wire)
	rd.keep = opt.Bytes
	bw := bufio.NewWriterSize(w, 256<<10)
	st := &Stats{}
	var m Message
	refs := map[uint64]uint64{} // last full address per SRC
	var line []byte
	idx := 0
	for {
		err := rd.Next(&m)
		if err == io.EOF {
			break
		}
		var fe *FormatError
		if errors.As(err, &fe) {
			st.Errors++
			fmt.Fprintf(bw, "@%d ERROR: %s\n", fe.Offset, fe.Msg)
			if opt.Bytes {
				bw.WriteString("\n")
			}
			continue
		}
		if err != nil {
			bw.Flush()
			return st, err
		}
		st.count(&m)
		if opt.Bytes {
			dumpBytes(bw, rd.raw, idx, &opt.Wire)
		} else {
			line = appendMessageLine(line[:0], &m, idx, refs, opt.Wire.XLEN)
			bw.Write(line)
		}
		idx++
	}
	st.Idles = rd.Idles()
	return st, bw.Flush()
}

// appendMessageLine formats one message for the dump.
func appendMessageLine(b []byte, m *Message, idx int, refs map[uint64]uint64, xlen int) []byte {
	b = fmt.Appendf(b, "%8d  #%-6d %-23s", m.Offset, idx, m.TCode.String())
	src := m.Get(FieldSRC)
	for f := Field(0); f < NumFields; f++ {
		if !m.Present(f) {
			continue
		}
		v := m.V[f]
		switch f {
		case FieldFADDR:
			a := v << 1
			if xlen == 32 {
				a &= 1<<32 - 1
			}
			refs[src] = a
			b = fmt.Appendf(b, " F-ADDR=%#x [%#x]", v, a)
		case FieldUADDR:
			a := refs[src] ^ v<<1
			if xlen == 32 {
				a &= 1<<32 - 1
			}
			refs[src] = a
			b = fmt.Appendf(b, " U-ADDR=%#x [%#x]", v, a)
		case FieldHIST:
			b = fmt.Appendf(b, " HIST=%#x [%s]", v, histBits(v))
		case FieldRDATA:
			if rc := m.Get(FieldRCODE); rc == RCodeHist || rc == RCodeHistRepeat {
				b = fmt.Appendf(b, " RDATA=%#x [%s]", v, histBits(v))
			} else {
				b = fmt.Appendf(b, " RDATA=%d", v)
			}
		case FieldSYNC:
			b = fmt.Appendf(b, " SYNC=%d", v)
			if n, ok := syncNames[v]; ok {
				b = fmt.Appendf(b, " (%s)", n)
			}
		case FieldEVCODE:
			b = fmt.Appendf(b, " EVCODE=%d", v)
			if n, ok := evcodeNames[v]; ok {
				b = fmt.Appendf(b, " (%s)", n)
			}
		case FieldBTYPE:
			b = fmt.Appendf(b, " B-TYPE=%d (%s)", v, btypeNames[v&3])
		case FieldPROCESS:
			format, p, ctx := ParseProcess(v)
			b = fmt.Appendf(b, " PROCESS=%#x [format=%d priv=%s", v, format, p)
			if format >= 2 {
				b = fmt.Appendf(b, " context=%#x", ctx)
			}
			b = append(b, ']')
		case FieldICNT, FieldHREPEAT, FieldBCNT, FieldTSTAMP, FieldRCODE, FieldCDF, FieldETYPE, FieldSRC:
			b = fmt.Appendf(b, " %s=%d", f, v)
		default:
			b = fmt.Appendf(b, " %s=%#x", f, v)
		}
	}
	if m.Raw != nil {
		b = fmt.Appendf(b, " payload=% x", m.Raw)
	}
	return append(b, '\n')
}

var btypeNames = [4]string{"indirect", "trap", "exception", "interrupt"}

// histBits renders a HIST value's history bits, oldest first (the stop
// bit is not shown): 1 for taken, 0 for not taken.
func histBits(h uint64) string {
	if h == 0 {
		return "no stop bit"
	}
	n := 63 - bits.LeadingZeros64(h)
	if n == 0 {
		return "empty"
	}
	var sb strings.Builder
	for i := n - 1; i >= 0; i-- {
		sb.WriteByte('0' + byte(h>>uint(i)&1))
	}
	return sb.String()
}

// refNames are the field names of the reference code's byte dump.
var refNames = [NumFields + 1]string{
	FieldSRC: "SRC", FieldSYNC: "SYNC", FieldBTYPE: "BTYPE", FieldETYPE: "ETYPE", FieldRCODE: "RCODE",
	FieldEVCODE: "EVCODE", FieldCDF: "CDF", FieldPROCESS: "PROCESS", FieldECODE: "ECODE", FieldRDATA: "RDATA",
	FieldHREPEAT: "HREPEAT", FieldBCNT: "BCNT", FieldICNT: "ICNT", FieldFADDR: "FADDR", FieldUADDR: "UADDR",
	FieldHIST: "HIST", FieldTSTAMP: "TSTAMP", fieldTCODE: "TCODE",
}

// dumpBytes prints one message byte by byte.
func dumpBytes(w *bufio.Writer, raw []byte, idx int, cfg *WireConfig) {
	notes := make([]string, len(raw))
	var m Message
	buf := append([]byte(nil), raw...)
	_ = parseMessage(buf, &m, cfg, func(f Field, width uint, end int) {
		if end < 0 || end >= len(notes) {
			return
		}
		var v uint64
		if f == fieldTCODE {
			v = uint64(m.TCode)
		} else {
			v = m.V[f]
		}
		var s string
		if f == fieldTCODE {
			s = fmt.Sprintf("TCODE[6]=%d (MSG #%d) - %s", v, idx, m.TCode)
		} else {
			s = fmt.Sprintf("%s[%d]=0x%X", refNames[f], width, v)
		}
		if notes[end] != "" {
			notes[end] += " "
		}
		notes[end] += s
	})
	for i, b := range raw {
		fmt.Fprintf(w, "0x%02X %06b_%02b:", b, b>>2, b&3)
		if notes[i] != "" {
			w.WriteString(" " + notes[i])
		}
		w.WriteString("\n")
	}
	w.WriteString("\n")
}
