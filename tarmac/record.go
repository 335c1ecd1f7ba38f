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
	// table-walk, bus, signal, CADI and exception-reason records,
	// coprocessor transfers, the "Tarmac Text" header and comments (lines
	// starting with '#'). Text holds the line.
	KindOther Kind = iota
	// KindInst is an instruction record: IT (executed; IF is read as IT),
	// IS (condition failed) or ES (the "ES/LD/ST" style; CCFAIL in the
	// disassembly marks a failed condition, an opcode of dashes a failed
	// fetch).
	KindInst
	// KindFlow is a program-flow record: FD (direct branch), FI (indirect
	// branch) or BR (the branch record of the ES style, which only gives
	// the target).
	KindFlow
	// KindReg is a register write (R).
	KindReg
	// KindMem is a memory access: MR/MW<size>{X|T|L}, MU<size>_<op>
	// (atomic update), the RTL forms (MSW4___D, MNR4O__I, R08, W04),
	// an access that aborted (MR4 <addr> (ABORTED)), or the LD/ST records
	// of the ES style and their continuation lines.
	KindMem
	// KindEvent is an event record (E, or the "ES EXC", "ES Reset" and
	// "EXC" lines of the ES style): an exception, interrupt, reset or
	// mode change, or a named event without an address ("E
	// DebugEvent_HaltingDebugState 00000000").
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
	// Tag is the record tag as written, without a trailing colon: "IT",
	// "IS", "ES", "FD", "FI", "BR", "R", "MR4", "MW8X", "MU8_ADD", "LD",
	// "ST", "E", "EXC", "CACHE", "SIGNAL", "CADI", ...; "Tarmac" for the
	// "Tarmac Text Rev 3t" header, "#" for a comment. The continuation
	// lines of LD/ST records carry the tag of the record they continue.
	Tag string
	// Line is the 1-based line number in the input.
	Line int
	// Time is the timestamp. Lines without one (the continuation lines of
	// the ES style) inherit the time of the line before; HasTime tells
	// whether the line had its own.
	Time    uint64
	HasTime bool
	// Scale is the unit of Time as written ("clk", "tic", "ns", ...; empty
	// when the trace has none); lines without one inherit the unit of the
	// line before. A time with a fraction is given exactly in a smaller
	// unit: "10.356000us" is Time 10356000, Scale "ps".
	Scale string
	// CPU is the component that produced the record ("cpu0"); lines
	// without one inherit the CPU of the line before.
	CPU string

	// InstID is the instruction tick count of IT/IS/FD/FI records.
	InstID    uint64
	HasInstID bool
	// Addr is the (virtual) address: of the instruction (KindInst,
	// KindFlow FD/FI), of the access (KindMem) or the event's value
	// (KindEvent), when HasAddr (an E record naming a debug event, or an
	// "ES EXC" line, has none).
	Addr    uint64
	HasAddr bool
	// PAddr is the physical address written after a colon, when HasPAddr;
	// NS is set when it carried the _NS (non-secure) suffix, S when it
	// carried _S (secure).
	PAddr    uint64
	HasPAddr bool
	NS       bool
	S        bool
	// Opcode and OpcodeBytes (2 or 4, from the number of hex digits, or
	// 0 when not given) of an instruction.
	Opcode      uint32
	OpcodeBytes int
	// ISet is the instruction set letter: "A" (A32), "T" (T32; "T16" and
	// "T32" of RTL traces read as "T"), "X" (T32EE), "O" (A64), or
	// "RV32"/"RV64" in the RISC-V dialect. Instruction records of RTL
	// traces of M-profile cores name no instruction set (the
	// implicit-Thumb form "IT 00000350 490d LDR r1,[pc,#52]"): they read
	// as "T", with ImplicitISet set, since those cores only run Thumb.
	ISet         string
	ImplicitISet bool
	// Mode is the processor mode as written without a trailing colon
	// ("EL3h_s", "svc_s", "M").
	Mode string
	// Executed is false for instructions that failed their condition code
	// (IS, CCFAIL) or their fetch (FetchFailed); true for every other
	// instruction.
	Executed bool
	// FetchFailed marks an ES record whose opcode is a row of dashes: the
	// fetch failed and the instruction did not execute.
	FetchFailed bool
	// Disasm is the disassembly of an instruction, without a CCFAIL
	// prefix.
	Disasm []byte

	// Target is the address execution continues at (KindFlow).
	Target uint64
	// Indirect marks an FI record.
	Indirect bool

	// Reg is the register name of an R record, as written, without a
	// bank or bit range. Bank is the banking qualifier written in
	// parentheses before or after the value ("USR" of "R R1 (USR)",
	// "AARCH32" of "R SCTLR (AARCH32)", "MSP" of "R r13 20001fff
	// (MSP)"). HasBits tells that the record writes bits BitHi..BitLo of
	// the register only ("R V0<127:64>").
	Reg     string
	Bank    string
	HasBits bool
	BitHi   int
	BitLo   int
	// SysOp is set for the R records Fast Models writes for system
	// operations ("R DC CISW 00000000:00000000", also IC, TLBI, AT): Reg
	// is the instruction ("DC"), SysOp the operation ("CISW") and Value
	// its operand.
	SysOp string
	// Value is the register value (its low 64 bits when Wide), or the
	// data of a memory access (little-endian for LD/ST).
	Value uint64
	// Unknown has a bit set for each bit of Value that the trace gives
	// as unknown: the "-" digits of vector lanes not written ("R Q0
	// -------- -------- 3ff6a09e 667f3bcd"), the "x" digits of a
	// register or memory value, the "##" bytes of LD/ST records. Those
	// bits read as 0 in Value.
	Unknown uint64
	// Wide is set when a register value has more than 64 bits.
	Wide bool
	// ValueText is the value as written.
	ValueText []byte
	// Aborted marks a memory access that aborted ("MR4 dfdfdfcf
	// (ABORTED)"): it has an address but no data.
	Aborted bool

	// Write marks stores (MW, ST, MU); Size is the access size in bytes;
	// Attr holds the attribute letters of MR/MW (X, T, L) or the atomic
	// operation of MU ("ADD", "CAS", ...).
	Write bool
	Size  int
	Attr  string

	// EventNum and EventDesc are the number and name of an event
	// ("CoreEvent_IRQ"); Value1 is the optional second value
	// (HasValue1); EventMode the new mode of a mode change event. A
	// named event without an address ("E DebugEvent_HaltingDebugState
	// 00000000", "E HRESETn 0") has its name in EventDesc and the rest
	// of its line in EventText.
	EventNum  uint64
	EventDesc string
	Value1    uint64
	HasValue1 bool
	EventMode string
	EventText []byte

	// Text is the whole line (trimmed), for every kind.
	Text []byte
}

// SyntaxError reports a malformed line of a Tarmac file.
type SyntaxError struct {
	File string // name of the input, as given to NewReader
	Line int    // 1-based line number
	Msg  string
}

// Error returns "file:line: reason".
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
	name  string
	br    *bufio.Reader
	line  int
	buf   []byte
	rec   Record
	time  uint64
	cpu   string
	scale string
	// contTag and contCol describe the LD/ST record before the current
	// line, which the next line may continue: its tag and the column of
	// its address.
	contTag string
	contCol int
	intern  map[string]string
	recent  [16]string // a cache in front of intern
	fields  [maxFields]field
	nfields int
	err     error
}

// field is a token of the current line: line[start:end].
type field struct{ start, end int }

const maxFields = 256

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
// lines are skipped. A malformed line, or one that is no Tarmac record
// (an unknown record tag), is reported as a *SyntaxError naming the file
// and line; reading can go on after it with the next line. The record is
// reused by the next call.
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
		indent := 0
		for indent < len(line) && isSpace(line[indent]) {
			indent++
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		if err := r.parse(line, indent); err != nil {
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
