package tarmac

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// Kind is the kind of a Tarmac record.
type Kind uint8

// Record kinds.
const (
	// KindOther is a line that is kept but not interpreted: cache, TLB,
	// table-walk, bus and signal records, file headers and lines with an
	// unknown record tag. Text holds the line.
	KindOther Kind = iota
	// KindInst is an instruction record: IT (executed), IS (condition
	// failed) or ES (the "ES/LD/ST" style; CCFAIL in the disassembly marks
	// a failed condition).
	KindInst
	// KindFlow is a program-flow record: FD (direct branch), FI (indirect
	// branch) or BR (the branch record of the ES style, which only gives
	// the target).
	KindFlow
	// KindReg is a register write (R).
	KindReg
	// KindMem is a memory access: MR/MW<size>{X|T|L}, MU<size>_<op>
	// (atomic update), or the LD/ST records of the ES style.
	KindMem
	// KindEvent is an event record (E, or the "ES EXC" line of the ES
	// style): an exception, interrupt, reset or mode change.
	KindEvent
	numRecordKinds
)

var recordKindNames = [numRecordKinds]string{"other", "inst", "flow", "reg", "mem", "event"}

// String returns the lower-case name of the kind.
func (k Kind) String() string {
	if k < numRecordKinds {
		return recordKindNames[k]
	}
	return fmt.Sprintf("kind%d", uint8(k))
}

// Record is one line of a Tarmac trace. Fields that do not apply to the
// record's Kind are zero. Byte-slice fields (Disasm, Text, ValueText) point
// into the Reader's buffer and are only valid until the next call to
// [Reader.Next]; strings are interned and stay valid.
type Record struct {
	Kind Kind
	// Tag is the record tag as written: "IT", "IS", "ES", "FD", "FI", "BR",
	// "R", "MR4", "MW8X", "MU8_ADD", "LD", "ST", "E", "CACHE", ... (empty for
	// KindOther lines without one).
	Tag string
	// Line is the 1-based line number in the input.
	Line int
	// Time is the timestamp. Lines without one (the continuation lines of
	// the ES style) inherit the time of the line before; HasTime tells
	// whether the line had its own.
	Time    uint64
	HasTime bool
	// Scale is the unit of Time as written ("clk", "tic", "ns", ...; empty
	// when the trace has none).
	Scale string
	// CPU is the component that produced the record ("cpu0"); lines
	// without one inherit the CPU of the line before.
	CPU string

	// InstID is the instruction tick count of IT/IS/FD/FI records.
	InstID    uint64
	HasInstID bool
	// Addr is the (virtual) address: of the instruction (KindInst,
	// KindFlow FD/FI), of the access (KindMem) or the event's value
	// (KindEvent).
	Addr uint64
	// PAddr is the physical address written after a colon, when HasPAddr;
	// NS is set when it carried the _NS (non-secure) suffix.
	PAddr    uint64
	HasPAddr bool
	NS       bool
	// Opcode and OpcodeBytes (2 or 4, from the number of hex digits, or
	// 0 when not given) of an instruction.
	Opcode      uint32
	OpcodeBytes int
	// ISet is the instruction set letter: "A" (A32), "T" (T32), "X"
	// (T32EE), "O" (A64), or "RV32"/"RV64" in the RISC-V dialect.
	ISet string
	// Mode is the processor mode as written without a trailing colon
	// ("EL3h_s", "svc_s", "M").
	Mode string
	// Executed is false for instructions that failed their condition code
	// (IS, CCFAIL); true for every other instruction.
	Executed bool
	// Disasm is the disassembly of an instruction, without a CCFAIL
	// prefix.
	Disasm []byte

	// Target is the address execution continues at (KindFlow).
	Target uint64
	// Indirect marks an FI record.
	Indirect bool

	// Reg is the register name of an R record, as written.
	Reg string
	// Value is the register value (its low 64 bits when Wide), or the
	// data of a memory access (little-endian for LD/ST).
	Value uint64
	// Wide is set when a register value has more than 64 bits.
	Wide bool
	// ValueText is the value as written.
	ValueText []byte

	// Write marks stores (MW, ST, MU); Size is the access size in bytes;
	// Attr holds the attribute letters of MR/MW (X, T, L) or the atomic
	// operation of MU ("ADD", "CAS", ...).
	Write bool
	Size  int
	Attr  string

	// EventNum and EventDesc are the number and name of an event
	// ("CoreEvent_IRQ"); Value1 is the optional second value
	// (HasValue1); EventMode the new mode of a mode change event.
	EventNum  uint64
	EventDesc string
	Value1    uint64
	HasValue1 bool
	EventMode string

	// Text is the whole line (trimmed), for every kind.
	Text []byte
}

// SyntaxError reports a malformed line of a Tarmac file.
type SyntaxError struct {
	File string // name of the input, as given to NewReader
	Line int    // 1-based line number
	Msg  string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// maxLine bounds the length of a Tarmac line; longer lines are an error
// rather than unbounded memory.
const maxLine = 1 << 20

// Reader reads the records of a Tarmac trace, line by line, in any of the
// dialects described in the package documentation. It keeps one line in
// memory at a time.
type Reader struct {
	name    string
	br      *bufio.Reader
	line    int
	buf     []byte
	rec     Record
	time    uint64
	cpu     string
	intern  map[string]string
	recent  [16]string // a cache in front of intern
	fields  [maxFields]field
	nfields int
	err     error
}

// field is a token of the current line: line[start:end].
type field struct{ start, end int }

const maxFields = 48

// NewReader returns a Reader of the Tarmac trace in r; name is used in
// error messages (usually the file name).
func NewReader(r io.Reader, name string) *Reader {
	return &Reader{name: name, br: bufio.NewReaderSize(r, 64<<10), intern: map[string]string{}}
}

// Name returns the name the Reader was created with.
func (r *Reader) Name() string { return r.name }

// Line returns the number of the line read last.
func (r *Reader) Line() int { return r.line }

// Next returns the next record, or io.EOF at the end of the input. Blank
// lines are skipped. A malformed record is reported as a *SyntaxError
// naming the file and line; reading can go on after it with the next
// line. The record is reused by the next call.
func (r *Reader) Next() (*Record, error) {
	for {
		if r.err != nil {
			return nil, r.err
		}
		line, err := r.readLine()
		if err != nil {
			r.err = err
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if err := r.parse(line); err != nil {
			return nil, err
		}
		return &r.rec, nil
	}
}

// readLine returns the next line without its end-of-line bytes.
func (r *Reader) readLine() ([]byte, error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(chunk) > maxLine {
			r.line++
			return nil, &SyntaxError{r.name, r.line, fmt.Sprintf("line longer than %d bytes", maxLine)}
		}
		if err == bufio.ErrBufferFull {
			r.buf = append(r.buf, chunk...)
			continue
		}
		if err == io.EOF && len(chunk) == 0 && len(r.buf) == 0 {
			return nil, io.EOF
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("%s: %w", r.name, err)
		}
		r.line++
		if len(r.buf) == 0 {
			return chunk, nil
		}
		r.buf = append(r.buf, chunk...)
		return r.buf, nil
	}
}

func (r *Reader) str(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	slot := &r.recent[(len(b)*7+int(b[0])+int(b[len(b)-1]))&15]
	if *slot == string(b) {
		return *slot
	}
	if s, ok := r.intern[string(b)]; ok {
		*slot = s
		return s
	}
	s := string(b)
	if len(r.intern) < 4096 {
		r.intern[s] = s
	}
	*slot = s
	return s
}

func (r *Reader) errorf(format string, args ...any) error {
	return &SyntaxError{r.name, r.line, fmt.Sprintf(format, args...)}
}

// tokenize splits line into whitespace-separated fields.
func (r *Reader) tokenize(line []byte) {
	n := 0
	i := 0
	for i < len(line) && n < maxFields {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i == len(line) {
			break
		}
		j := i
		for j < len(line) && !isSpace(line[j]) {
			j++
		}
		r.fields[n] = field{i, j}
		n++
		i = j
	}
	r.nfields = n
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v'
}

// units are the timestamp units the reader recognises after a time.
var units = map[string]bool{
	"clk": true, "tic": true, "tics": true, "ticks": true, "cyc": true, "cycle": true, "cycles": true,
	"fs": true, "ps": true, "ns": true, "us": true, "ms": true, "s": true, "cs": true,
}

// tagKind classifies a record tag; ok is false for words that are not tags.
func tagKind(t []byte) (Kind, bool) {
	switch string(t) {
	case "IT", "IS", "ES":
		return KindInst, true
	case "FD", "FI", "BR":
		return KindFlow, true
	case "R":
		return KindReg, true
	case "E":
		return KindEvent, true
	case "LD", "ST":
		return KindMem, true
	case "CACHE", "TTW", "TTU", "TLB", "WALKCACHE", "SIGNAL", "SIGNAL:":
		return KindOther, true
	}
	if len(t) >= 3 && t[0] == 'M' && (t[1] == 'R' || t[1] == 'W' || t[1] == 'U') && isDigit(t[2]) {
		return KindMem, true
	}
	if len(t) >= 4 && t[0] == 'B' && (t[1] == 'R' || t[1] == 'W') && isDigit(t[2]) {
		return KindOther, true // memory bus trace
	}
	return KindOther, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func allDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if !isDigit(c) {
			return false
		}
	}
	return true
}

// parse fills r.rec from line.
func (r *Reader) parse(line []byte) error {
	rec := &r.rec
	*rec = Record{Line: r.line, Text: line, Time: r.time, CPU: r.cpu, Executed: true}
	r.tokenize(line)
	f := r.fields[:r.nfields]
	tok := func(i int) []byte { return line[f[i].start:f[i].end] }
	i := 0
	if allDigits(tok(0)) {
		t, ok := parseDec(tok(0))
		if !ok {
			return r.errorf("timestamp %q out of range", tok(0))
		}
		rec.Time, rec.HasTime = t, true
		r.time = t
		i++
		if i < len(f) && units[string(tok(i))] {
			rec.Scale = r.str(tok(i))
			i++
		}
	}
	if i >= len(f) {
		return nil // a lone timestamp: kept as KindOther
	}
	kind, isTag := tagKind(tok(i))
	if !isTag && i+1 < len(f) {
		if k2, ok := tagKind(tok(i + 1)); ok {
			rec.CPU = r.str(tok(i))
			r.cpu = rec.CPU
			i++
			kind, isTag = k2, true
		}
	}
	if !isTag {
		return nil // header or unknown record: KindOther
	}
	rec.Tag = r.str(tok(i))
	rec.Kind = kind
	args := f[i+1:]
	var err error
	switch kind {
	case KindInst:
		err = r.parseInst(line, args)
	case KindFlow:
		err = r.parseFlow(line, args)
	case KindReg:
		err = r.parseReg(line, args)
	case KindMem:
		err = r.parseMem(line, args)
	case KindEvent:
		err = r.parseEvent(line, args)
	}
	if err != nil {
		rec.Kind = KindOther
	}
	return err
}

// parseInst parses "IT (id) addr opcode iset mode : disasm" and the ES
// forms "ES (addr:opcode) iset mode: disasm" and "ES EXC [n] name".
func (r *Reader) parseInst(line []byte, args []field) error {
	rec := &r.rec
	tok := func(i int) []byte { return line[args[i].start:args[i].end] }
	if rec.Tag == "IS" {
		rec.Executed = false
	}
	if rec.Tag == "ES" && len(args) > 0 && string(tok(0)) == "EXC" {
		// "ES EXC [0x00] Reset" or "ES EXC Reset": an event.
		rec.Kind = KindEvent
		j := 1
		if j < len(args) && len(tok(j)) > 2 && tok(j)[0] == '[' && tok(j)[len(tok(j))-1] == ']' {
			v, ok := parseHex(trimHexPrefix(tok(j)[1 : len(tok(j))-1]))
			if !ok {
				return r.errorf("bad event number %q", tok(j))
			}
			rec.EventNum = v
			j++
		}
		if j < len(args) {
			rec.EventDesc = r.str(line[args[j].start:args[len(args)-1].end])
		}
		return nil
	}
	if len(args) < 3 {
		return r.errorf("%s record needs an address, opcode and instruction set", rec.Tag)
	}
	j := 0
	a := tok(0)
	if len(a) < 2 || a[0] != '(' || a[len(a)-1] != ')' {
		return r.errorf("%s record: expected (inst_id) or (addr:opcode), found %q", rec.Tag, a)
	}
	a = a[1 : len(a)-1]
	j++
	if k := bytes.IndexByte(a, ':'); k >= 0 {
		// ES style: (addr:opcode)
		if err := r.setAddr(a[:k]); err != nil {
			return err
		}
		if err := r.setOpcode(a[k+1:]); err != nil {
			return err
		}
	} else {
		id, ok := parseDec(a)
		if !ok {
			return r.errorf("%s record: bad instruction id %q", rec.Tag, a)
		}
		rec.InstID, rec.HasInstID = id, true
		if len(args) < 4 {
			return r.errorf("%s record needs an address, opcode and instruction set", rec.Tag)
		}
		if err := r.setAddr(tok(j)); err != nil {
			return err
		}
		j++
		if err := r.setOpcode(tok(j)); err != nil {
			return err
		}
		j++
	}
	rec.ISet = r.str(tok(j))
	j++
	end := args[j-1].end
	if j < len(args) {
		m := tok(j)
		if string(m) != ":" {
			m = bytes.TrimSuffix(m, []byte(":"))
			rec.Mode = r.str(m)
			end = args[j].end
		}
	}
	d := bytes.TrimSpace(line[end:])
	d = bytes.TrimPrefix(d, []byte(":"))
	d = bytes.TrimSpace(d)
	if bytes.HasPrefix(d, []byte("CCFAIL")) && (len(d) == 6 || isSpace(d[6])) {
		rec.Executed = false
		d = bytes.TrimSpace(d[6:])
	}
	rec.Disasm = d
	return nil
}

// parseFlow parses "FD (id) addr target iset", "FI ..." and "BR (target) iset".
func (r *Reader) parseFlow(line []byte, args []field) error {
	rec := &r.rec
	tok := func(i int) []byte { return line[args[i].start:args[i].end] }
	rec.Indirect = rec.Tag == "FI"
	if rec.Tag == "BR" {
		if len(args) < 1 {
			return r.errorf("BR record needs a target address")
		}
		a := bytes.TrimSuffix(bytes.TrimPrefix(tok(0), []byte("(")), []byte(")"))
		t, _, _, _, ok := parseAddr(a)
		if !ok {
			return r.errorf("BR record: bad target address %q", tok(0))
		}
		rec.Target = t
		if len(args) > 1 {
			rec.ISet = r.str(tok(1))
		}
		return nil
	}
	if len(args) < 3 {
		return r.errorf("%s record needs (inst_id), an address and a target", rec.Tag)
	}
	a := tok(0)
	if len(a) < 2 || a[0] != '(' || a[len(a)-1] != ')' {
		return r.errorf("%s record: expected (inst_id), found %q", rec.Tag, a)
	}
	id, ok := parseDec(a[1 : len(a)-1])
	if !ok {
		return r.errorf("%s record: bad instruction id %q", rec.Tag, a)
	}
	rec.InstID, rec.HasInstID = id, true
	if err := r.setAddr(tok(1)); err != nil {
		return err
	}
	t, _, _, _, ok := parseAddr(tok(2))
	if !ok {
		return r.errorf("%s record: bad target address %q", rec.Tag, tok(2))
	}
	rec.Target = t
	if len(args) > 3 {
		rec.ISet = r.str(tok(3))
	}
	return nil
}

// parseReg parses "R name value".
func (r *Reader) parseReg(line []byte, args []field) error {
	rec := &r.rec
	if len(args) < 2 {
		return r.errorf("R record needs a register and a value")
	}
	rec.Reg = r.str(line[args[0].start:args[0].end])
	v := line[args[1].start:args[len(args)-1].end]
	// Values may be split by spaces, colons or underscores (wide
	// registers, "00000000:00000000").
	val, digits, ok := parseHexValue(v)
	if !ok {
		return r.errorf("R record: bad value %q for %s", v, rec.Reg)
	}
	rec.Value, rec.Wide, rec.ValueText = val, digits > 16, v
	return nil
}

// parseMem parses "MR4 addr data", "MW8X addr data", "MU8_ADD addr data"
// and the ES style "LD base w3 w2 w1 w0 S:paddr attrs".
func (r *Reader) parseMem(line []byte, args []field) error {
	rec := &r.rec
	tok := func(i int) []byte { return line[args[i].start:args[i].end] }
	if rec.Tag == "LD" || rec.Tag == "ST" {
		return r.parseLdSt(line, args)
	}
	t := []byte(rec.Tag)
	rec.Write = t[1] != 'R'
	k := 2
	for k < len(t) && isDigit(t[k]) {
		k++
	}
	size, ok := parseDec(t[2:k])
	if !ok || size == 0 || size > 1<<16 {
		return r.errorf("bad access size in %q", t)
	}
	rec.Size = int(size)
	attr := t[k:]
	if t[1] == 'U' {
		attr = bytes.TrimPrefix(attr, []byte("_"))
	}
	rec.Attr = r.str(attr)
	if len(args) < 2 {
		return r.errorf("%s record needs an address and data", rec.Tag)
	}
	if err := r.setAddr(tok(0)); err != nil {
		return err
	}
	v := line[args[1].start:args[len(args)-1].end]
	val, _, ok := parseHexValue(v)
	if !ok {
		return r.errorf("%s record: bad data %q", rec.Tag, v)
	}
	rec.Value, rec.ValueText = val, v
	return nil
}

// parseLdSt parses the LD/ST records of the ES style: a base address and
// 32-bit groups of a window of memory, highest address first, with dots
// for the bytes not accessed.
func (r *Reader) parseLdSt(line []byte, args []field) error {
	rec := &r.rec
	rec.Write = rec.Tag == "ST"
	if len(args) < 2 {
		return r.errorf("%s record needs an address and data", rec.Tag)
	}
	base, _, _, _, ok := parseAddr(line[args[0].start:args[0].end])
	if !ok {
		return r.errorf("%s record: bad address %q", rec.Tag, line[args[0].start:args[0].end])
	}
	var groups [][]byte
	for _, a := range args[1:] {
		g := line[a.start:a.end]
		if len(g) != 8 || !isDataGroup(g) {
			break
		}
		groups = append(groups, g)
	}
	if len(groups) == 0 {
		return r.errorf("%s record: no data", rec.Tag)
	}
	n := len(groups) * 4
	lo, hi := -1, -1
	var val uint64
	for gi, g := range groups {
		for bi := 0; bi < 4; bi++ {
			off := n - 1 - (gi*4 + bi) // byte offset from base
			c := g[bi*2 : bi*2+2]
			if c[0] == '.' && c[1] == '.' {
				continue
			}
			if _, ok := parseHex(c); !ok {
				return r.errorf("%s record: bad data %q", rec.Tag, g)
			}
			if lo < 0 || off < lo {
				lo = off
			}
			if off > hi {
				hi = off
			}
		}
	}
	if lo < 0 {
		return r.errorf("%s record: no byte accessed", rec.Tag)
	}
	for off := hi; off >= lo; off-- {
		gi, bi := (n-1-off)/4, (n-1-off)%4
		c := groups[gi][bi*2 : bi*2+2]
		b, _ := parseHex(c) // dots inside the range read as 0
		if off-lo < 8 {
			val |= b << (8 * uint(off-lo))
		}
	}
	rec.Addr = base + uint64(lo)
	rec.Size = hi - lo + 1
	rec.Value = val
	rec.ValueText = line[args[1].start:args[len(groups)].end]
	return nil
}

func isDataGroup(g []byte) bool {
	for _, c := range g {
		if c != '.' && hexVal(c) < 0 {
			return false
		}
	}
	return true
}

// parseEvent parses "E value {mode} {value1} number desc".
func (r *Reader) parseEvent(line []byte, args []field) error {
	rec := &r.rec
	tok := func(i int) []byte { return line[args[i].start:args[i].end] }
	if len(args) < 2 {
		return r.errorf("E record needs a value and an event number")
	}
	if err := r.setAddr(tok(0)); err != nil {
		return err
	}
	last := len(args) - 1
	if _, ok := parseHex(tok(last)); !ok || last == 1 {
		// The usual case: the last word is the description.
		if last >= 2 {
			if v, ok := parseHex(tok(last - 1)); ok {
				rec.EventNum = v
				rec.EventDesc = r.str(tok(last))
				last -= 2
			} else {
				return r.errorf("E record: bad event number %q", tok(last-1))
			}
		} else {
			v, ok := parseHex(tok(last))
			if !ok {
				rec.EventDesc = r.str(tok(last))
			} else {
				rec.EventNum = v
			}
			last--
		}
	} else {
		// No description: the last word is the number.
		v, _ := parseHex(tok(last))
		rec.EventNum = v
		last--
	}
	// Between the value and the number: {mode} {value1}.
	switch mid := args[1 : last+1]; len(mid) {
	case 0:
	case 1:
		if v, _, ok := parseHexValue(line[mid[0].start:mid[0].end]); ok {
			rec.Value1, rec.HasValue1 = v, true
		} else {
			rec.EventMode = r.str(line[mid[0].start:mid[0].end])
		}
	default:
		rec.EventMode = r.str(line[mid[0].start:mid[0].end])
		v, _, ok := parseHexValue(line[mid[1].start:mid[1].end])
		if !ok {
			return r.errorf("E record: bad value %q", line[mid[1].start:mid[1].end])
		}
		rec.Value1, rec.HasValue1 = v, true
	}
	return nil
}

// setAddr parses an address "vaddr{:paddr{_NS}}" into rec.Addr/PAddr.
func (r *Reader) setAddr(b []byte) error {
	v, p, hasP, ns, ok := parseAddr(b)
	if !ok {
		return r.errorf("%s record: bad address %q", r.rec.Tag, b)
	}
	r.rec.Addr, r.rec.PAddr, r.rec.HasPAddr, r.rec.NS = v, p, hasP, ns
	return nil
}

// setOpcode parses a 4- or 8-digit hex opcode.
func (r *Reader) setOpcode(b []byte) error {
	v, ok := parseHex(trimHexPrefix(b))
	if !ok || len(b) > 10 || v > 0xffffffff {
		return r.errorf("%s record: bad opcode %q", r.rec.Tag, b)
	}
	r.rec.Opcode = uint32(v)
	r.rec.OpcodeBytes = 4
	if len(trimHexPrefix(b)) <= 4 {
		r.rec.OpcodeBytes = 2
	}
	return nil
}

// parseAddr parses "vaddr{:paddr}{_NS}" (hex, optional 0x prefixes).
func parseAddr(b []byte) (v, p uint64, hasP, ns bool, ok bool) {
	if bytes.HasSuffix(b, []byte("_NS")) {
		ns = true
		b = b[:len(b)-3]
	}
	if k := bytes.IndexByte(b, ':'); k >= 0 {
		p, ok = parseHex(trimHexPrefix(b[k+1:]))
		if !ok {
			return 0, 0, false, false, false
		}
		hasP = true
		b = b[:k]
	}
	v, ok = parseHex(trimHexPrefix(b))
	return v, p, hasP, ns, ok
}

func trimHexPrefix(b []byte) []byte {
	if len(b) > 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X') {
		return b[2:]
	}
	return b
}

func hexVal(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'a' && c <= 'f':
		return int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// parseHex parses 1 to 16 hex digits.
func parseHex(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 16 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		d := hexVal(c)
		if d < 0 {
			return 0, false
		}
		v = v<<4 | uint64(d)
	}
	return v, true
}

// parseHexValue parses a hex value that may be split by '_', ':' or
// spaces and may be wider than 64 bits; it returns the low 64 bits and the
// number of digits.
func parseHexValue(b []byte) (v uint64, digits int, ok bool) {
	b = trimHexPrefix(b)
	for _, c := range b {
		if c == '_' || c == ':' || isSpace(c) {
			continue
		}
		d := hexVal(c)
		if d < 0 {
			return 0, 0, false
		}
		v = v<<4 | uint64(d)
		digits++
	}
	return v, digits, digits > 0
}

// parseDec parses a decimal number that fits in 64 bits.
func parseDec(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, c := range b {
		if !isDigit(c) {
			return 0, false
		}
		d := uint64(c - '0')
		if v > (^uint64(0)-d)/10 {
			return 0, false
		}
		v = v*10 + d
	}
	return v, true
}
