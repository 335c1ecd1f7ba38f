package analysis

import (
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// ScriptField is a column of a Script listing.
type ScriptField uint8

// Script fields, named as ScriptFieldNames gives them.
const (
	// FieldIdx is the index of the instruction in the flow, from 0 (as
	// flow.Select counts them when the flow is selected).
	FieldIdx ScriptField = iota
	// FieldTime is the last timestamp of the source before the
	// instruction ("-" before the first).
	FieldTime
	// FieldSrc is the trace source (hart) number.
	FieldSrc
	// FieldPriv is the privilege level (U, S, M, ...; "-" before the
	// first context event).
	FieldPriv
	// FieldCtx is the context (process ID) in hex ("-" before the first
	// context event).
	FieldCtx
	// FieldIP is the instruction address in hex, zero-padded to the
	// digits of the image's highest executable address (at least 8).
	FieldIP
	// FieldSym is the symbol and offset, as "main+0x1c".
	FieldSym
	// FieldSrcline is the source file and line, as the DWARF line table
	// gives them ("file.c:12").
	FieldSrcline
	// FieldInsn is the disassembly, with absolute branch targets.
	FieldInsn
	// FieldBranch is, on the last instruction of a range, how it left
	// the range (its end type, and the next address when known), and on
	// a conditional branch inside a range "not-taken".
	FieldBranch
	numScriptFields
)

// ScriptFieldNames are the names of the fields, as -F takes them.
var ScriptFieldNames = [numScriptFields]string{"idx", "time", "src", "priv", "ctx", "ip", "sym", "srcline", "insn", "branch"}

// DefaultScriptFields are the fields of a listing when none are chosen.
var DefaultScriptFields = []ScriptField{FieldIdx, FieldIP, FieldSym, FieldInsn, FieldBranch}

// String returns the field's name.
func (f ScriptField) String() string {
	if f < numScriptFields {
		return ScriptFieldNames[f]
	}
	return "field" + strconv.Itoa(int(f))
}

// ParseScriptFields parses a field list as perf script -F takes it: a
// comma-separated list of field names replaces the default set; a list
// whose entries all start with + or - adds fields to or removes them from
// the default set.
func ParseScriptFields(spec string) ([]ScriptField, error) {
	parts := strings.Split(spec, ",")
	rel := true
	for _, p := range parts {
		p = strings.TrimSpace(p)
		if p == "" || (p[0] != '+' && p[0] != '-') {
			rel = false
		}
	}
	var out []ScriptField
	if rel {
		out = append(out, DefaultScriptFields...)
	}
	for _, p := range parts {
		p = strings.TrimSpace(p)
		op := byte(0)
		if rel {
			op, p = p[0], p[1:]
		}
		f := ScriptField(numScriptFields)
		for i, n := range ScriptFieldNames {
			if n == p {
				f = ScriptField(i)
			}
		}
		if f == numScriptFields {
			return nil, fmt.Errorf("unknown field %q (fields: %s)", p, strings.Join(ScriptFieldNames[:], ","))
		}
		at := -1
		for i, g := range out {
			if g == f {
				at = i
			}
		}
		switch {
		case op == '-':
			if at >= 0 {
				out = append(out[:at], out[at+1:]...)
			}
		case at >= 0:
			if !rel {
				return nil, fmt.Errorf("field %q given twice", p)
			}
		default:
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no field left in %q", spec)
	}
	return out, nil
}

// ScriptOptions configure a Script listing.
type ScriptOptions struct {
	// Fields are the columns, in order (DefaultScriptFields when nil).
	Fields []ScriptField
	// Ranges writes one line per range instead of one per instruction:
	// the ip column becomes the first and last address and the number of
	// instructions, sym and srcline are those of the first instruction,
	// insn that of the last.
	Ranges bool
	// NoHeader leaves out the comment line naming the columns.
	NoHeader bool
}

// Script is a flow sink that writes one line per executed instruction
// (or per range), like perf script: column-aligned fields chosen by
// ScriptOptions, then a line for each trap ("TRAP"), gap ("GAP at byte N
// (message I): reason", see flow.DescribeGap), warning and stop. It
// streams: its memory is a fixed cache of formatted addresses, and a line
// does not allocate once the addresses it shows are in the cache.
type Script struct {
	img  *image.Set
	w    io.Writer
	buf  []byte // output not yet written to w
	c    io.Closer
	opt  ScriptOptions
	last ScriptField // the last column, which is not padded

	has    [numScriptFields]bool
	plan   []planItem
	groups int
	static bool // some field needs the per-address cache
	// fast: the line of an instruction that does not end its range (and
	// is not a conditional branch, when branch is shown) is the index
	// (when fastIdx) and the first static group, whose cache entry ends
	// with the newline (scriptEntry.fastEnd).
	fast    bool
	fastIdx bool
	ipW     int
	symW    int

	index uint64
	lines uint64
	// idxVal formatted by appendIdx: the first two and the last eight
	// characters of the column, little-endian.
	idxHi  uint16
	idxLo  uint64
	idxVal uint64
	idxOK  bool
	srcs   []scriptSrc
	cur    *scriptSrc

	cache     []scriptEntry
	lastCache []scriptEntry // --ranges: the last instructions
	hdr       bool
	err       error
}

type scriptSrc struct {
	src     uint32
	priv    ingress.Priv
	ctx     uint64
	known   bool
	time    uint64
	hasTime bool
}

// scriptEntry is the formatted fields of one address: buf holds sym,
// srcline and insn, ending at the offsets given.
type scriptEntry struct {
	pc                      uint64
	valid                   bool
	len                     uint8
	class                   riscv.Class
	symEnd, lineEnd, insEnd int32
	// grpEnd[g] is the end in buf of the rendering of static group g
	// (which starts where group g-1, or insn, ends), grpPend the padding
	// owed after it.
	grpEnd  [maxGroups]int32
	grpPend [maxGroups]uint8
	// fastEnd (Script.fast): group 0 is followed by a newline, ending
	// at fastEnd. From there to tailEnd, the line's group again with its
	// branch column (tailEnd 0: not rendered yet) for the last
	// instruction of a range ending as tailType at tailTarget (when
	// tailHas), or for a branch not taken (tailType ITypeNone).
	fastEnd    int32
	tailEnd    int32
	tailType   ingress.IType
	tailHas    bool
	tailTarget uint64
	buf        []byte
}

// maxGroups bounds the static groups: runs of consecutive fields that
// only depend on the address (ip, sym, srcline, insn), each rendered once
// per address with its padding, in one piece.
const maxGroups = 4

// planItem is a column of a line: a field, or a static group.
type planItem struct {
	f     ScriptField
	group int8 // -1: the field f; else the static group
	first int  // the group's fields are opt.Fields[first:end]
	end   int
}

func staticField(f ScriptField) bool {
	return f == FieldIP || f == FieldSym || f == FieldSrcline || f == FieldInsn
}

const (
	scriptCacheBits = 16
	idxW            = 10
	timeW           = 12
	srcW            = 3
	privW           = 4
	ctxW            = 10
	lineW           = 28
	insnW           = 30
	branchW         = 24
)

// NewScript returns a listing sink writing to w with img for instruction
// sizes, symbols, lines and disassembly.
func NewScript(w io.Writer, img *image.Set, opt ScriptOptions) *Script {
	if opt.Fields == nil {
		opt.Fields = DefaultScriptFields
	}
	s := &Script{img: img, w: w, buf: make([]byte, 0, 1<<20), opt: opt, cache: make([]scriptEntry, 1<<scriptCacheBits)}
	for _, f := range opt.Fields {
		s.has[f] = true
	}
	s.last = opt.Fields[len(opt.Fields)-1]
	s.static = s.has[FieldSym] || s.has[FieldSrcline] || s.has[FieldInsn]
	s.ipW = ipWidth(img)
	s.symW = 16
	for _, sym := range img.Symbols() {
		if sym.Kind == image.Func && len(sym.Name)+6 > s.symW {
			s.symW = len(sym.Name) + 6
		}
	}
	s.symW = min(s.symW, 40)
	fs := opt.Fields
	for i := 0; i < len(fs); {
		if opt.Ranges || !staticField(fs[i]) {
			s.plan = append(s.plan, planItem{f: fs[i], group: -1})
			i++
			continue
		}
		j := i
		for j < len(fs) && staticField(fs[j]) {
			j++
		}
		s.plan = append(s.plan, planItem{f: fs[j-1], group: int8(s.groups), first: i, end: j})
		s.groups++
		i = j
	}
	p := s.plan
	if len(p) > 0 && p[0].group < 0 && p[0].f == FieldIdx {
		s.fastIdx = true
		p = p[1:]
	}
	if len(p) > 1 && p[len(p)-1].f == FieldBranch {
		p = p[:len(p)-1]
	}
	s.fast = len(p) == 1 && p[0].group == 0
	return s
}

// ipWidth is the width of the ip column: the hex digits of the highest
// executable address of img, at least 8 (the width of an RV32 address),
// so that a program linked low does not pay for 64-bit addresses on every
// line. An address beyond it (none is in a decoded range) is written whole.
func ipWidth(img *image.Set) int {
	w := 8
	for _, seg := range img.Segments() {
		if seg.Exec && seg.MemSize > 0 {
			w = max(w, (bits.Len64(seg.Addr+seg.MemSize-1)+3)/4)
		}
	}
	return w
}

// SetCloser makes Close close c after flushing.
func (s *Script) SetCloser(c io.Closer) { s.c = c }

// SetIndex sets the index of the first instruction of the next range (a
// flow.Indexer: flow.Select calls it).
func (s *Script) SetIndex(i uint64) { s.index = i }

// Lines returns the number of instruction (or range) lines written.
func (s *Script) Lines() uint64 { return s.lines }

func (s *Script) state(src uint32) *scriptSrc {
	if s.cur != nil && s.cur.src == src {
		return s.cur
	}
	for i := range s.srcs {
		if s.srcs[i].src == src {
			s.cur = &s.srcs[i]
			return s.cur
		}
	}
	s.srcs = append(s.srcs, scriptSrc{src: src})
	s.cur = &s.srcs[len(s.srcs)-1]
	return s.cur
}

// header writes the comment line naming the columns.
func (s *Script) header() {
	s.hdr = true
	if s.opt.NoHeader {
		return
	}
	var b []byte
	for i, f := range s.opt.Fields {
		if i > 0 {
			b = append(b, ' ')
		}
		name := f.String()
		switch {
		case f == FieldIP && s.opt.Ranges:
			b = padRight(b, "start", s.ipW, false)
			b = append(b, ' ')
			b = padRight(b, "last", s.ipW, false)
			b = append(b, ' ')
			name = "n"
			b = padLeft(b, name, 6)
			continue
		case f == s.last:
			b = append(b, name...)
			continue
		}
		switch f {
		case FieldIdx:
			b = padLeft(b, name, idxW)
		case FieldTime:
			b = padLeft(b, name, timeW)
		case FieldSrc:
			b = padLeft(b, name, srcW)
		default:
			b = padRight(b, name, s.width(f), false)
		}
	}
	b = trimSpaces(b)
	if len(b) >= 2 && b[0] == ' ' && b[1] == ' ' {
		b[0] = '#'
	} else {
		b = append([]byte("# "), b...)
	}
	s.buf = append(s.buf, b...)
	s.buf = append(s.buf, '\n')
}

func (s *Script) width(f ScriptField) int {
	switch f {
	case FieldIdx:
		return idxW
	case FieldTime:
		return timeW
	case FieldSrc:
		return srcW
	case FieldPriv:
		return privW
	case FieldCtx:
		return ctxW
	case FieldIP:
		return s.ipW
	case FieldSym:
		return s.symW
	case FieldSrcline:
		return lineW
	case FieldInsn:
		return insnW
	}
	return branchW
}

func padLeft(b []byte, v string, w int) []byte {
	for i := len(v); i < w; i++ {
		b = append(b, ' ')
	}
	return append(b, v...)
}

func padRight(b []byte, v string, w int, last bool) []byte {
	b = append(b, v...)
	if !last {
		for i := len(v); i < w; i++ {
			b = append(b, ' ')
		}
	}
	return b
}

func trimSpaces(b []byte) []byte {
	for len(b) > 0 && b[len(b)-1] == ' ' {
		b = b[:len(b)-1]
	}
	return b
}

// entry returns the fields of pc cached in cache, formatting them on a miss. It
// returns nil when pc holds no instruction in the image.
func (s *Script) entry(cache []scriptEntry, pc uint64) *scriptEntry {
	// Two-way set associative, sets indexed by address so that
	// straight-line code fills consecutive sets: a miss moves the
	// entry of way 0 to way 1 and fills way 0 (with way 1's buffer).
	set := cache[(pc>>1)&(1<<(scriptCacheBits-1)-1)*2:]
	set = set[:2]
	if set[0].valid && set[0].pc == pc {
		return &set[0]
	}
	if set[1].valid && set[1].pc == pc {
		return &set[1]
	}
	set[0], set[1] = set[1], set[0]
	c := &set[0]
	in := s.img.InstPtr(pc)
	if in == nil || in.Len == 0 {
		return nil
	}
	c.pc, c.valid, c.len, c.class = pc, true, in.Len, in.Class
	b := c.buf[:0]
	if s.has[FieldSym] {
		if name, off, ok := s.img.Symbolize(pc); ok {
			b = append(b, name...)
			if off != 0 {
				b = append(b, "+0x"...)
				b = strconv.AppendUint(b, off, 16)
			}
		} else {
			b = append(b, '?')
		}
	}
	c.symEnd = int32(len(b))
	if s.has[FieldSrcline] {
		if file, line, ok := s.img.Line(pc); ok {
			b = append(b, file...)
			b = append(b, ':')
			b = strconv.AppendInt(b, int64(line), 10)
		} else {
			b = append(b, '?')
		}
	}
	c.lineEnd = int32(len(b))
	if s.has[FieldInsn] {
		raw := in.Raw
		if in.Len == 2 {
			raw &= 0xffff
		}
		b = append(b, riscv.Disasm(raw, pc, s.img.XLEN())...)
	}
	c.insEnd = int32(len(b))
	for _, it := range s.plan {
		if it.group < 0 {
			continue
		}
		pend := 0
		for k, f := range s.opt.Fields[it.first:it.end] {
			if k > 0 {
				b = append(b, spaces[:pend+1]...)
			}
			start := len(b)
			w := 0
			switch f {
			case FieldIP:
				b = appendHex(b, pc, s.ipW)
			case FieldSym:
				b = append(b, b[:c.symEnd]...)
				w = s.symW
			case FieldSrcline:
				b = append(b, b[c.symEnd:c.lineEnd]...)
				w = lineW
			case FieldInsn:
				b = append(b, b[c.lineEnd:c.insEnd]...)
				w = insnW
			}
			pend = max(0, w-(len(b)-start))
		}
		if it.f == s.last {
			pend = 0
		}
		c.grpEnd[it.group], c.grpPend[it.group] = int32(len(b)), uint8(pend)
	}
	if s.fast {
		// The only group ends the buffer.
		b = append(b, '\n')
		c.fastEnd = int32(len(b))
		c.tailEnd = 0
	}
	c.buf = b
	return c
}

// appendDec appends v in decimal, right-aligned in w columns.
func appendDec(b []byte, v uint64, w int) []byte {
	var t [20]byte
	i := len(t)
	for {
		i--
		t[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	if n := w - (len(t) - i); n > 0 {
		b = append(b, spaces[:n]...)
	}
	return append(b, t[i:]...)
}

const hexDigits = "0123456789abcdef"

// spaces pads columns (no column is wider).
const spaces = "                                                                "

// appendIdx appends the index column, right-aligned in idxW columns.
// The ten characters of the last index are kept as two words (the first
// two characters and the last eight, little-endian, so that the last
// digit is the top byte of idxLo): an index following the last one and
// not ending in 9 is counted up by adding to the top byte, and written as
// two stores.
func (s *Script) appendIdx(b []byte) []byte {
	if !s.idxOK || s.index != s.idxVal+1 || !s.nextIdx() {
		if !s.setIdx() {
			return appendDec(b, s.index, idxW)
		}
	}
	n := len(b)
	if cap(b)-n < idxW {
		b = append(b, spaces[:idxW]...)[:n]
	}
	b = b[:n+idxW]
	binary.LittleEndian.PutUint16(b[n:], s.idxHi)
	binary.LittleEndian.PutUint64(b[n+2:], s.idxLo)
	return b
}

// nextIdx counts idxLo up by one, carrying through its digits; it
// returns false when the carry would reach idxHi.
func (s *Script) nextIdx() bool {
	lo := s.idxLo
	for k := 56; k >= 0; k -= 8 {
		switch byte(lo >> k) {
		case '9':
			lo -= ('9' - '0') << k
			continue
		case ' ':
			lo += ('1' - ' ') << k
		default:
			lo += 1 << k
		}
		s.idxLo, s.idxVal = lo, s.idxVal+1
		return true
	}
	return false
}

// setIdx formats s.index into idxHi and idxLo; it returns false when the
// index is wider than the column.
func (s *Script) setIdx() bool {
	v := s.index
	if v >= 1e10 {
		s.idxOK = false
		return false
	}
	var d [idxW]byte
	copy(d[:], spaces)
	i := len(d)
	for {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			break
		}
	}
	s.idxVal, s.idxOK = s.index, true
	s.idxHi = binary.LittleEndian.Uint16(d[:2])
	s.idxLo = binary.LittleEndian.Uint64(d[2:])
	return true
}

// appendHex appends v in lower-case hex, zero-padded to w digits (at
// most 16).
func appendHex(b []byte, v uint64, w int) []byte {
	var t [16]byte
	i := len(t)
	for i > 0 && (v != 0 || len(t)-i < w) {
		i -= 2
		t[i], t[i+1] = hexDigits[v>>4&15], hexDigits[v&15]
		v >>= 8
	}
	if t[i] == '0' && len(t)-i > w && len(t)-i > 1 {
		i++
	}
	return append(b, t[i:]...)
}

// line appends the fields of one instruction (or range) line. Padding is
// written only before a field that has text, so that lines carry no
// trailing spaces.
func (s *Script) line(b []byte, st *scriptSrc, e *flow.Event, pc uint64, c *scriptEntry, lastInRange bool, lastC *scriptEntry) []byte {
	pend := 0
	for i, it := range s.plan {
		if i > 0 {
			pend++
		}
		f := it.f
		if it.group >= 0 {
			if c == nil {
				// No instruction there: the address alone.
				b = append(b, spaces[:min(pend, len(spaces))]...)
				pend = 0
				if s.has[FieldIP] {
					b = appendHex(b, pc, s.ipW)
				}
				continue
			}
			g := it.group
			from := c.insEnd
			if g > 0 {
				from = c.grpEnd[g-1]
			}
			for pend > len(spaces) {
				b = append(b, spaces...)
				pend -= len(spaces)
			}
			b = append(b, spaces[:pend]...)
			b = append(b, c.buf[from:c.grpEnd[g]]...)
			pend = int(c.grpPend[g])
			continue
		}
		var text []byte
		switch f {
		case FieldSym:
			if c != nil {
				text = c.buf[:c.symEnd]
			}
		case FieldSrcline:
			if c != nil {
				text = c.buf[c.symEnd:c.lineEnd]
			}
		case FieldInsn:
			if lastC != nil {
				text = lastC.buf[lastC.lineEnd:lastC.insEnd]
			}
		case FieldBranch:
			if !(lastInRange && e.End != ingress.ITypeNone) && (lastInRange || lastC == nil || lastC.class != riscv.ClassBranch) {
				pend += branchW
				continue
			}
		}
		for pend > len(spaces) {
			b = append(b, spaces...)
			pend -= len(spaces)
		}
		b = append(b, spaces[:pend]...)
		pend = 0
		start := len(b)
		w := 0
		switch f {
		case FieldIdx:
			b = s.appendIdx(b)
		case FieldTime:
			if st.hasTime {
				b = appendDec(b, st.time, timeW)
			} else {
				b = append(b, spaces[:timeW-1]...)
				b = append(b, '-')
			}
		case FieldSrc:
			b = appendDec(b, uint64(e.Src), srcW)
		case FieldPriv:
			if st.known {
				b = append(b, st.priv.String()...)
			} else {
				b = append(b, '-')
			}
			w = privW
		case FieldCtx:
			if st.known {
				b = append(b, "0x"...)
				b = appendHex(b, st.ctx, 1)
			} else {
				b = append(b, '-')
			}
			w = ctxW
		case FieldIP:
			b = appendHex(b, pc, s.ipW)
			if s.opt.Ranges {
				b = append(b, ' ')
				b = appendHex(b, e.Last, s.ipW)
				b = append(b, ' ')
				b = appendDec(b, e.N, 6)
			}
		case FieldSym:
			b = append(b, text...)
			w = s.symW
		case FieldSrcline:
			b = append(b, text...)
			w = lineW
		case FieldInsn:
			b = append(b, text...)
			w = insnW
		case FieldBranch:
			if lastInRange {
				b = append(b, e.End.String()...)
				if e.HasTarget {
					b = append(b, " 0x"...)
					b = appendHex(b, e.Target, 1)
				}
			} else {
				b = append(b, "not-taken"...)
			}
			w = branchW
		}
		if n := len(b) - start; n < w {
			pend = w - n
		}
	}
	return append(b, '\n')
}

// Event writes the lines of e.
func (s *Script) Event(e *flow.Event) error {
	if s.err != nil {
		return s.err
	}
	if !s.hdr {
		s.header()
	}
	st := s.state(e.Src)
	switch e.Kind {
	case flow.KindRange:
		return s.rangeLines(e, st)
	case flow.KindContext:
		st.priv, st.ctx, st.known = e.Priv, e.Context, true
	case flow.KindTime:
		st.time, st.hasTime = e.Time, true
	case flow.KindTrap:
		b := s.buf
		b = append(b, "TRAP "...)
		if e.Interrupt {
			b = append(b, "interrupt"...)
		} else {
			b = append(b, "exception"...)
		}
		if e.Src != 0 {
			b = append(b, " src "...)
			b = strconv.AppendUint(b, uint64(e.Src), 10)
		}
		if e.HasCause {
			b = append(b, " cause 0x"...)
			b = appendHex(b, e.Cause, 1)
			b = append(b, " tval 0x"...)
			b = appendHex(b, e.TVal, 1)
		}
		b = append(b, " at 0x"...)
		b = appendHex(b, e.Addr, 1)
		if e.HasTarget || e.Target != 0 {
			b = append(b, " handler 0x"...)
			b = appendHex(b, e.Target, 1)
		}
		s.buf = append(b, '\n')
		return s.room()
	case flow.KindGap:
		s.buf = append(s.buf, "GAP"...)
		s.buf = append(s.buf, strings.TrimPrefix(flow.DescribeGap(e), "gap")...)
		s.buf = append(s.buf, '\n')
		return s.room()
	case flow.KindWarn:
		s.buf = append(s.buf, "WARNING"...)
		s.buf = append(s.buf, strings.TrimPrefix(flow.DescribeGap(e), "warning")...)
		s.buf = append(s.buf, '\n')
		return s.room()
	case flow.KindStop:
		s.buf = append(s.buf, "STOP reason "...)
		s.buf = strconv.AppendUint(s.buf, uint64(e.Reason), 10)
		s.buf = append(s.buf, '\n')
		return s.room()
	}
	return nil
}

func (s *Script) rangeLines(e *flow.Event, st *scriptSrc) error {
	if s.opt.Ranges {
		var c, lc *scriptEntry
		if s.static {
			c = s.entry(s.cache, e.Start)
			if s.has[FieldInsn] {
				// The last instruction has its own cache, so that the
				// two entries never share a slot.
				if s.lastCache == nil {
					s.lastCache = make([]scriptEntry, 1<<scriptCacheBits)
				}
				lc = s.entry(s.lastCache, e.Last)
			}
		}
		s.buf = s.line(s.buf, st, e, e.Start, c, true, lc)
		s.index += e.N
		s.lines++
		return s.room()
	}
	pc := e.Start
	for i := uint64(0); i < e.N; i++ {
		last := i+1 == e.N
		c := s.entry(s.cache, pc)
		if s.fast && c != nil {
			b := s.buf
			if s.fastIdx {
				b = append(s.appendIdx(b), ' ')
			}
			switch {
			case !s.has[FieldBranch] || (last && e.End == ingress.ITypeNone) || (!last && c.class != riscv.ClassBranch):
				b = append(b, c.buf[c.insEnd:c.fastEnd]...)
			case last:
				b = append(b, s.tail(c, e.End, e.HasTarget, e.Target)...)
			default:
				b = append(b, s.tail(c, ingress.ITypeNone, false, 0)...)
			}
			s.buf = b
		} else {
			s.buf = s.line(s.buf, st, e, pc, c, last, c)
		}
		s.index++
		s.lines++
		if len(s.buf) > scriptFlushAt {
			if err := s.flush(); err != nil {
				return err
			}
		}
		if last {
			break
		}
		if c == nil {
			s.err = fmt.Errorf("script: address %#x in a decoded range is not in the image", pc)
			return s.err
		}
		pc += uint64(c.len)
	}
	return nil
}

// tail returns the fast line of c with its branch column: how its range
// ended (end, and target when has), or not-taken when end is
// ingress.ITypeNone. It is cached in c for the last end it was asked.
func (s *Script) tail(c *scriptEntry, end ingress.IType, has bool, target uint64) []byte {
	if c.tailEnd == 0 || c.tailType != end || c.tailHas != has || (has && c.tailTarget != target) {
		b := c.buf[:c.fastEnd]
		b = append(b, b[c.insEnd:c.grpEnd[0]]...)
		b = append(b, spaces[:c.grpPend[0]+1]...)
		if end == ingress.ITypeNone {
			b = append(b, "not-taken"...)
		} else {
			b = append(b, end.String()...)
			if has {
				b = append(b, " 0x"...)
				b = appendHex(b, target, 1)
			}
		}
		b = append(b, '\n')
		c.buf, c.tailEnd, c.tailType, c.tailHas, c.tailTarget = b, int32(len(b)), end, has, target
	}
	return c.buf[c.fastEnd:c.tailEnd]
}

// scriptFlushAt is the fill of the output buffer (1 MiB) past which it is
// written out; lines are appended to it without a bound check, so the
// margin bounds a line (a longer one only grows the buffer).
const scriptFlushAt = 1<<20 - 8192

// room writes the buffer out when it is nearly full.
func (s *Script) room() error {
	if len(s.buf) > scriptFlushAt {
		return s.flush()
	}
	return nil
}

// flush writes the buffer out.
func (s *Script) flush() error {
	if len(s.buf) == 0 || s.err != nil {
		return s.err
	}
	_, err := s.w.Write(s.buf)
	s.buf = s.buf[:0]
	if err != nil {
		s.err = err
	}
	return err
}

// Close flushes the output (and closes the closer set by SetCloser).
func (s *Script) Close() error {
	if !s.hdr {
		s.header()
	}
	err := s.flush()
	if s.c != nil {
		if cerr := s.c.Close(); err == nil {
			err = cerr
		}
	}
	if s.err != nil {
		return s.err
	}
	return err
}
