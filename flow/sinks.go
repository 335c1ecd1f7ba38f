package flow

import (
	"bufio"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// PCWriter is a sink that writes the address of every executed
// instruction, one per line, as 0x followed by lower-case hex (the PC list
// format). It walks each range through the image to find instruction
// sizes. Events from sources other than Src are ignored when OnlySrc is
// set.
//
// Where the flow has a gap, the list has a comment line "# gap at byte N
// (message I): reason" (see DescribeGap), so that a list with lost trace
// never reads as a complete one; the PC-list readers of package ingress
// skip lines starting with '#'. NoGapMarks leaves them out.
type PCWriter struct {
	img     *image.Set
	w       *bufio.Writer
	c       io.Closer
	OnlySrc bool
	Src     uint32
	// NoGapMarks leaves the gap comment lines out (a plain list).
	NoGapMarks bool
	n          uint64
	gaps       uint64
}

// NewPCWriter returns a PC list sink writing to w with img for instruction
// sizes. If w is an io.Closer, Close closes it.
func NewPCWriter(w io.Writer, img *image.Set) *PCWriter {
	p := &PCWriter{img: img, w: bufio.NewWriterSize(w, 1<<20)}
	if c, ok := w.(io.Closer); ok {
		p.c = c
	}
	return p
}

// Count returns the number of PCs written.
func (p *PCWriter) Count() uint64 { return p.n }

// Gaps returns the number of gaps met (marked unless NoGapMarks).
func (p *PCWriter) Gaps() uint64 { return p.gaps }

const hexDigits = "0123456789abcdef"

// hexPairs[b] is the two lower-case hex digits of byte b.
var hexPairs = func() (t [256][2]byte) {
	for b := range t {
		t[b] = [2]byte{hexDigits[b>>4], hexDigits[b&15]}
	}
	return
}()

// Event writes the PCs of a range, or the comment line of a gap.
func (p *PCWriter) Event(e *Event) error {
	if p.OnlySrc && e.Src != p.Src {
		return nil
	}
	if e.Kind == KindGap {
		p.gaps++
		if p.NoGapMarks {
			return nil
		}
		p.w.WriteString("# ")
		p.w.WriteString(DescribeGap(e))
		return p.w.WriteByte('\n')
	}
	if e.Kind != KindRange {
		return nil
	}
	pc := e.Start
	img := e.ImageOr(p.img)
	for i := uint64(0); i < e.N; i++ {
		if p.w.Available() < 20 {
			if err := p.w.Flush(); err != nil {
				return err
			}
		}
		buf := p.w.AvailableBuffer()[:20]
		// "0x" + the hex digits without leading zeros + "\n", written
		// two digits at a time.
		nd := (bits.Len64(pc) + 3) / 4
		if nd == 0 {
			nd = 1
		}
		end := 2 + nd
		buf[0], buf[1], buf[end] = '0', 'x', '\n'
		v := pc
		k := end
		for ; k-2 >= 2; k -= 2 {
			d := hexPairs[v&0xff]
			buf[k-2], buf[k-1] = d[0], d[1]
			v >>= 8
		}
		if k > 2 {
			buf[2] = hexDigits[v&15]
		}
		p.w.Write(buf[:end+1])
		if i+1 == e.N {
			break
		}
		in := img.InstPtr(pc)
		if in == nil || in.Len == 0 {
			return fmt.Errorf("PC list: address %#x in a decoded range is not in the image", pc)
		}
		pc += uint64(in.Len)
	}
	p.n += e.N
	return nil
}

// Close flushes the output.
func (p *PCWriter) Close() error {
	err := p.w.Flush()
	if p.c != nil {
		if cerr := p.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// Listing is a sink that writes one readable line per event, with symbol
// names for addresses when the image has them.
type Listing struct {
	img *image.Set
	w   *bufio.Writer
	c   io.Closer
	// Instructions lists every instruction of a range with its
	// disassembly instead of one line per range.
	Instructions bool
}

// NewListing returns a listing sink on w.
func NewListing(w io.Writer, img *image.Set) *Listing {
	l := &Listing{img: img, w: bufio.NewWriter(w)}
	if c, ok := w.(io.Closer); ok {
		l.c = c
	}
	return l
}

func (l *Listing) addr(a uint64) string {
	if l.img == nil {
		return fmt.Sprintf("%#x", a)
	}
	return l.img.FormatAddr(a)
}

// Event writes one line (or one per instruction).
func (l *Listing) Event(e *Event) error {
	var err error
	src := ""
	if e.Src != 0 {
		src = fmt.Sprintf("[%d] ", e.Src)
	}
	switch e.Kind {
	case KindRange:
		if l.Instructions && l.img != nil {
			pc := e.Start
			for i := uint64(0); i < e.N; i++ {
				in, ok := e.ImageOr(l.img).Inst(pc)
				if !ok {
					break
				}
				_, err = fmt.Fprintf(l.w, "%s  %s  %s\n", src, l.addr(pc), in.String())
				if err != nil {
					return err
				}
				pc += uint64(in.Len)
			}
			return nil
		}
		next := ""
		if e.HasTarget {
			next = " -> " + l.addr(e.Target)
		}
		_, err = fmt.Fprintf(l.w, "%srange %s .. %s  %d instr  %s%s\n", src, l.addr(e.Start), l.addr(e.Last), e.N, e.End, next)
	case KindTrap:
		what := "exception"
		if e.Interrupt {
			what = "interrupt"
		}
		cause := ""
		if e.HasCause {
			cause = fmt.Sprintf(" cause=%#x tval=%#x", e.Cause, e.TVal)
		}
		_, err = fmt.Fprintf(l.w, "%s%s at %s -> handler %s%s\n", src, what, l.addr(e.Addr), l.addr(e.Target), cause)
	case KindSync:
		_, err = fmt.Fprintf(l.w, "%ssync at %s (reason %d, byte %d)\n", src, l.addr(e.Addr), e.Reason, e.Offset)
	case KindContext:
		_, err = fmt.Fprintf(l.w, "%scontext priv=%s context=%#x\n", src, e.Priv, e.Context)
	case KindTime:
		_, err = fmt.Fprintf(l.w, "%stime %d\n", src, e.Time)
	case KindGap:
		_, err = fmt.Fprintf(l.w, "%sGAP%s\n", src, strings.TrimPrefix(DescribeGap(e), "gap"))
	case KindWarn:
		_, err = fmt.Fprintf(l.w, "%sWARNING%s\n", src, strings.TrimPrefix(DescribeGap(e), "warning"))
	case KindStop:
		_, err = fmt.Fprintf(l.w, "%sstop (reason %d)\n", src, e.Reason)
	case KindNotify:
		_, err = fmt.Fprintf(l.w, "%snotify at %s\n", src, l.addr(e.Addr))
	case KindData:
		_, err = fmt.Fprintf(l.w, "%s    %s\n", src, e.String())
	}
	return err
}

// Close flushes the output.
func (l *Listing) Close() error {
	err := l.w.Flush()
	if l.c != nil {
		if cerr := l.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// JSONLines is a sink that writes one JSON object per event.
//
// With an image (SetImage), range objects also carry "idx", the index of
// their first instruction in the flow (from 0; as Select counts them when
// the flow is selected: JSONLines is an Indexer), "sym" and "srcline", the
// symbol+offset and DWARF file:line of their first instruction, and
// "last_sym"; trap objects carry the "sym" of their address.
type JSONLines struct {
	w     *bufio.Writer
	c     io.Closer
	buf   []byte
	img   *image.Set
	index uint64
}

// SetImage makes range and trap objects carry symbols and source lines
// from img.
func (j *JSONLines) SetImage(img *image.Set) { j.img = img }

// SetIndex sets the index of the first instruction of the next range.
func (j *JSONLines) SetIndex(i uint64) { j.index = i }

// appendSym appends the "key":"sym+0xoff" member for a ("?" when no
// symbol contains it).
func (j *JSONLines) appendSym(b []byte, key string, a uint64) []byte {
	b = append(b, `,"`...)
	b = append(b, key...)
	b = append(b, `":`...)
	name, off, ok := j.img.Symbolize(a)
	if !ok {
		return append(b, `"?"`...)
	}
	b = strconv.AppendQuote(b, name)
	if off == 0 {
		return b
	}
	b = append(b[:len(b)-1], "+0x"...)
	b = strconv.AppendUint(b, off, 16)
	return append(b, '"')
}

// NewJSONLines returns a JSON-lines sink on w.
func NewJSONLines(w io.Writer) *JSONLines {
	j := &JSONLines{w: bufio.NewWriter(w)}
	if c, ok := w.(io.Closer); ok {
		j.c = c
	}
	return j
}

// Event writes e as one JSON object, with only the fields its kind uses.
// Addresses are hex strings.
func (j *JSONLines) Event(e *Event) error {
	b := j.buf[:0]
	b = append(b, `{"kind":"`...)
	b = append(b, e.Kind.String()...)
	b = append(b, '"')
	num := func(k string, v uint64) {
		b = append(b, `,"`...)
		b = append(b, k...)
		b = append(b, `":`...)
		b = strconv.AppendUint(b, v, 10)
	}
	hex := func(k string, v uint64) {
		b = append(b, `,"`...)
		b = append(b, k...)
		b = append(b, `":"0x`...)
		b = strconv.AppendUint(b, v, 16)
		b = append(b, '"')
	}
	if e.Src != 0 {
		num("src", uint64(e.Src))
	}
	switch e.Kind {
	case KindRange:
		hex("start", e.Start)
		hex("last", e.Last)
		num("n", e.N)
		b = append(b, `,"end":"`...)
		b = append(b, e.End.String()...)
		b = append(b, '"')
		if e.HasTarget {
			hex("next", e.Target)
		}
		if j.img != nil {
			num("idx", j.index)
			j.index += e.N
			b = j.appendSym(b, "sym", e.Start)
			b = append(b, `,"srcline":`...)
			if file, line, ok := j.img.Line(e.Start); ok {
				b = strconv.AppendQuote(b, file)
				b = append(b[:len(b)-1], ':')
				b = strconv.AppendInt(b, int64(line), 10)
				b = append(b, '"')
			} else {
				b = append(b, `"?"`...)
			}
			b = j.appendSym(b, "last_sym", e.Last)
		}
	case KindTrap:
		hex("addr", e.Addr)
		hex("handler", e.Target)
		b = append(b, `,"interrupt":`...)
		b = strconv.AppendBool(b, e.Interrupt)
		if e.HasCause {
			hex("cause", e.Cause)
			hex("tval", e.TVal)
		}
		if j.img != nil {
			b = j.appendSym(b, "sym", e.Addr)
		}
	case KindSync, KindNotify:
		hex("addr", e.Addr)
		num("reason", uint64(e.Reason))
	case KindContext:
		b = append(b, `,"priv":"`...)
		b = append(b, e.Priv.String()...)
		b = append(b, '"')
		hex("context", e.Context)
	case KindTime:
		num("time", e.Time)
	case KindGap, KindWarn:
		b = append(b, `,"error":`...)
		b = strconv.AppendQuote(b, fmt.Sprint(e.Err))
		if e.Index >= 0 {
			num("index", uint64(e.Index))
		}
		if e.Suspect > 0 {
			num("suspect", e.Suspect)
		}
	case KindStop:
		num("reason", uint64(e.Reason))
	case KindData:
		a := &e.Access
		hex("pc", e.Addr)
		b = append(b, `,"dtype":"`...)
		b = append(b, a.DType.String()...)
		b = append(b, '"')
		num("size", uint64(a.Bytes()))
		if e.AccessHas&AccessAddr != 0 {
			if a.DType.IsCSR() {
				hex("csr", a.DAddr)
			} else {
				hex("addr", a.DAddr)
			}
		}
		if e.AccessHas&AccessData != 0 && a.DType != ingress.DTypeSCFail {
			if a.DType.IsCSR() {
				hex("value", a.SData)
				hex("operand", a.Data)
			} else if a.DType.IsAtomic() {
				hex("load", a.Data)
				hex("store", a.SData)
			} else {
				hex("value", a.Data)
			}
		}
	}
	if e.Offset >= 0 && e.Kind != KindRange {
		num("offset", uint64(e.Offset))
	}
	b = append(b, "}\n"...)
	j.buf = b
	_, err := j.w.Write(b)
	return err
}

// Close flushes the output.
func (j *JSONLines) Close() error {
	err := j.w.Flush()
	if j.c != nil {
		if cerr := j.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
