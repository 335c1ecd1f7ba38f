package ingress

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// DType is the data access type of the data trace interface (E-Trace 2.0
// table "Data access type (dtype) encoding").
type DType uint8

// dtype codes.
const (
	DTypeLoad      DType = 0  // load
	DTypeStore     DType = 1  // store
	DTypeCSRRW     DType = 4  // CSR read-write
	DTypeCSRRS     DType = 5  // CSR read-set
	DTypeCSRRC     DType = 6  // CSR read-clear
	DTypeAtomicSwp DType = 8  // atomic swap
	DTypeAtomicAdd DType = 9  // atomic add
	DTypeAtomicAnd DType = 10 // atomic AND
	DTypeAtomicOr  DType = 11 // atomic OR
	DTypeAtomicXor DType = 12 // atomic XOR
	DTypeAtomicMax DType = 13 // atomic max
	DTypeAtomicMin DType = 14 // atomic min
	DTypeSCFail    DType = 15 // conditional store failure
	numDTypes            = 16
)

// dtypeInfo is what the encoders need to know of each dtype.
type dtypeInfo struct {
	name   string
	valid  bool
	atomic bool // both load and store data (atomic swap..min)
}

var dtypeTable = [numDTypes]dtypeInfo{
	DTypeLoad:      {"load", true, false},
	DTypeStore:     {"store", true, false},
	2:              {"reserved2", false, false},
	3:              {"reserved3", false, false},
	DTypeCSRRW:     {"csr-rw", true, false},
	DTypeCSRRS:     {"csr-rs", true, false},
	DTypeCSRRC:     {"csr-rc", true, false},
	7:              {"reserved7", false, false},
	DTypeAtomicSwp: {"amo-swap", true, true},
	DTypeAtomicAdd: {"amo-add", true, true},
	DTypeAtomicAnd: {"amo-and", true, true},
	DTypeAtomicOr:  {"amo-or", true, true},
	DTypeAtomicXor: {"amo-xor", true, true},
	DTypeAtomicMax: {"amo-max", true, true},
	DTypeAtomicMin: {"amo-min", true, true},
	DTypeSCFail:    {"sc-fail", true, false},
}

// String returns the short name of the dtype ("load", "amo-add", ...).
func (t DType) String() string {
	if t < numDTypes {
		return dtypeTable[t].name
	}
	return fmt.Sprintf("dtype%d", uint8(t))
}

// Valid reports whether t is a defined (not reserved) dtype.
func (t DType) Valid() bool { return t < numDTypes && dtypeTable[t].valid }

// IsAtomic reports whether t is an atomic memory operation (swap..min):
// an access with both load data and store data.
func (t DType) IsAtomic() bool { return t < numDTypes && dtypeTable[t].atomic }

// IsCSR reports whether t is a CSR access.
func (t DType) IsCSR() bool { return t >= DTypeCSRRW && t <= DTypeCSRRC }

// Reads reports whether the access reads memory (loads and atomics).
func (t DType) Reads() bool { return t == DTypeLoad || t.IsAtomic() }

// Writes reports whether the access writes memory (stores and atomics;
// not a failed store-conditional).
func (t DType) Writes() bool { return t == DTypeStore || t.IsAtomic() }

// Access is one data access on the unified data trace interface (E-Trace
// 2.0 "Data Trace Interface"): the signals dtype, daddr, dsize and data of
// one group while dretire is high, and the address of the instruction that
// made it (iaddr, of which the interface carries iaddr_lsbs).
//
// Data is the data signal: the value loaded (loads) or stored (stores),
// 2^DSize bytes, zero-extended. An atomic carries both values; the
// interface puts the store data in the low half of data and the load data
// in the high half: here Data is the load data and SData the store data.
// A failed store-conditional (DTypeSCFail) has no data.
//
// A CSR access (dtype 4..6, CSR data trace) is one retired Zicsr
// instruction: DAddr is the CSR number (0..0xfff), DSize log2 of the
// CSR's width in bytes (2 for 32-bit CSRs, 3 for 64-bit), SData the
// value read from the CSR (its value before the instruction, what rd
// receives; the data field of the CSR packet) and Data the operand, rs1's
// value or the zero-extended uimm before the operator is applied. The
// specification's interface has "store data and an operand" for a CSR;
// this one carries the value read in the store data's place (the low
// half), the operand in the high half (etrace's package doc says why).
//
// On the split protocol's interface (Split set) a load or an atomic is
// the request phase only: LRID is its lrid, and its load data (Data)
// comes later in the LoadResponse whose LID is LRID; Data is then 0
// here. Stores and failed store-conditionals are never split.
type Access struct {
	IAddr uint64 // address of the instruction that made the access
	DAddr uint64 // daddr: the byte address accessed
	Data  uint64 // data: load data, store data of a store, operand of a CSR access
	SData uint64 // store data of an atomic, value read of a CSR access
	LRID  uint32 // lrid of a split request
	DType DType  // dtype
	DSize uint8  // dsize: the access is 2^DSize bytes
	Split bool   // a split request: the load data comes in a LoadResponse
}

// Load response codes (the lresp signal of the split protocol).
const (
	LRespOkay  = 2 // load successful, ldata valid
	LRespError = 3 // load failed, ldata not valid
)

// LoadResponse is the response phase of a split load or atomic (E-Trace
// 2.0 "Data Trace Interface", signals lresp, lid and ldata): the data of
// the request whose lrid is LID.
type LoadResponse struct {
	LID  uint32 // lid: the lrid of the request answered
	Resp uint8  // lresp: LRespOkay or LRespError
	Data uint64 // ldata, zero-extended from the request's size
}

// SplitDataSink consumes the split protocol's interface: requests (as
// accesses, Split set for loads and atomics) and their responses, each
// response after its request, in any order among themselves.
type SplitDataSink interface {
	DataSink
	Response(r *LoadResponse) error
}

// Bytes returns the size of the access in bytes.
func (a *Access) Bytes() int { return 1 << a.DSize }

// String renders the access on one line.
func (a *Access) String() string {
	switch {
	case a.DType.IsAtomic():
		return fmt.Sprintf("%s %d@%#x load=%#x store=%#x (pc %#x)", a.DType, a.Bytes(), a.DAddr, a.Data, a.SData, a.IAddr)
	case a.DType == DTypeSCFail:
		return fmt.Sprintf("%s %d@%#x (pc %#x)", a.DType, a.Bytes(), a.DAddr, a.IAddr)
	case a.DType.IsCSR():
		return fmt.Sprintf("%s csr %#x read=%#x operand=%#x (pc %#x)", a.DType, a.DAddr, a.SData, a.Data, a.IAddr)
	}
	return fmt.Sprintf("%s %d@%#x =%#x (pc %#x)", a.DType, a.Bytes(), a.DAddr, a.Data, a.IAddr)
}

// DataSink consumes data accesses: a data trace encoder or a file writer.
// The access is only valid during the call. A producer delivers the
// accesses of an instruction before the ingress block that retires the
// instruction (see DataMerger).
type DataSink interface {
	Access(a *Access) error
}

// The data ingress CSV has one line per access and the columns iaddr,
// dtype, daddr, dsize and data (the data trace interface signals, with
// iaddr the full instruction address), in any order after a header line
// naming them. dtype and dsize are decimal, iaddr, daddr and data
// hexadecimal (a 0x prefix is accepted). For an atomic, data holds the
// store data in its low 2^dsize bytes and the load data in the bytes above
// (as the interface's data signal does), and for a CSR access the value
// read from the CSR in its low 2^dsize bytes and the operand above; a failed
// store-conditional has data 0.

// dataCols are the columns of the data ingress CSV, in the order written.
var dataCols = [...]struct {
	name string
	hex  bool
}{{"iaddr", true}, {"dtype", false}, {"daddr", true}, {"dsize", false}, {"data", true}}

// DataCSVWriter writes accesses as a data ingress CSV. It implements
// DataSink.
type DataCSVWriter struct {
	w      *bufio.Writer
	buf    []byte
	header bool
	n      uint64
}

// NewDataCSVWriter returns a writer of the data ingress CSV to w.
func NewDataCSVWriter(w io.Writer) *DataCSVWriter {
	return &DataCSVWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// Access writes one line.
func (c *DataCSVWriter) Access(a *Access) error {
	if !c.header {
		c.header = true
		for i, col := range dataCols {
			if i > 0 {
				c.w.WriteByte(',')
			}
			c.w.WriteString(col.name)
		}
		c.w.WriteByte('\n')
	}
	if !a.DType.Valid() || a.DSize > 3 {
		return fmt.Errorf("ingress: data access %d: invalid dtype %d or dsize %d", c.n, a.DType, a.DSize)
	}
	if a.Split {
		return fmt.Errorf("ingress: data access %d: a split-protocol request; the data ingress CSV holds the unified protocol only", c.n)
	}
	c.n++
	b := c.buf[:0]
	b = append(b, "0x"...)
	b = strconv.AppendUint(b, a.IAddr, 16)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(a.DType), 10)
	b = append(b, ",0x"...)
	b = strconv.AppendUint(b, a.DAddr, 16)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(a.DSize), 10)
	b = append(b, ",0x"...)
	switch {
	case a.DType.IsAtomic() || a.DType.IsCSR():
		// load data (CSR: operand) above the store data (CSR: value
		// read), each 2^dsize bytes
		digits := 2 << a.DSize
		b = strconv.AppendUint(b, a.Data, 16)
		s := strconv.FormatUint(a.SData&sizeMask(a.DSize), 16)
		for i := len(s); i < digits; i++ {
			b = append(b, '0')
		}
		b = append(b, s...)
	case a.DType == DTypeSCFail:
		b = append(b, '0')
	default:
		b = strconv.AppendUint(b, a.Data, 16)
	}
	b = append(b, '\n')
	c.buf = b
	_, err := c.w.Write(b)
	return err
}

// Close flushes the output (an empty trace still gets its header).
func (c *DataCSVWriter) Close() error {
	if !c.header {
		c.header = true
		for i, col := range dataCols {
			if i > 0 {
				c.w.WriteByte(',')
			}
			c.w.WriteString(col.name)
		}
		c.w.WriteByte('\n')
	}
	return c.w.Flush()
}

// sizeMask masks a value to 2^dsize bytes.
func sizeMask(dsize uint8) uint64 {
	if dsize >= 3 {
		return ^uint64(0)
	}
	return 1<<(8<<dsize) - 1
}

// DataCSVSource reads accesses from a data ingress CSV. Parsing is strict:
// a malformed line is a *LineError naming the file and line.
type DataCSVSource struct {
	sc   *bufio.Scanner
	name string
	line int
	idx  [len(dataCols)]int // field index of each column
	nf   int
	a    Access
}

// NewDataCSVSource reads a data ingress CSV from r (named name in errors);
// it reads the header immediately.
func NewDataCSVSource(r io.Reader, name string) (*DataCSVSource, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	s := &DataCSVSource{sc: sc, name: name}
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return nil, fmt.Errorf("%s: empty file: no header line", name)
	}
	s.line = 1
	for i := range s.idx {
		s.idx[i] = -1
	}
	fields := strings.Split(strings.TrimSpace(sc.Text()), ",")
	s.nf = len(fields)
	for i, h := range fields {
		h = strings.ToLower(strings.TrimSpace(h))
		found := false
		for j, c := range dataCols {
			if h == c.name {
				if s.idx[j] >= 0 {
					return nil, &LineError{File: name, Line: 1, Reason: fmt.Sprintf("column %q twice", h)}
				}
				s.idx[j], found = i, true
			}
		}
		if !found {
			return nil, &LineError{File: name, Line: 1, Reason: fmt.Sprintf("unknown column %q (want iaddr, dtype, daddr, dsize, data)", h)}
		}
	}
	for j, c := range dataCols {
		if s.idx[j] < 0 {
			return nil, &LineError{File: name, Line: 1, Reason: fmt.Sprintf("no %s column", c.name)}
		}
	}
	return s, nil
}

// Line returns the line number of the access returned last.
func (s *DataCSVSource) Line() int { return s.line }

// Next returns the next access, or io.EOF at the end of the file. The
// access is valid until the next call.
func (s *DataCSVSource) Next() (*Access, error) {
	for s.sc.Scan() {
		s.line++
		t := strings.TrimSpace(s.sc.Text())
		if t == "" || t[0] == '#' {
			continue
		}
		if reason := s.parse(t); reason != "" {
			return nil, &LineError{File: s.name, Line: s.line, Reason: reason}
		}
		return &s.a, nil
	}
	if err := s.sc.Err(); err != nil {
		return nil, fmt.Errorf("%s:%d: %w", s.name, s.line+1, err)
	}
	return nil, io.EOF
}

func (s *DataCSVSource) parse(t string) string {
	f := strings.Split(t, ",")
	if len(f) != s.nf {
		return fmt.Sprintf("%d fields, the header has %d", len(f), s.nf)
	}
	var v [len(dataCols)]uint64
	var big string // the data field, parsed below
	for j, c := range dataCols {
		x := strings.TrimSpace(f[s.idx[j]])
		if c.name == "data" {
			big = x
			continue
		}
		n, err := parseNum(x, c.hex)
		if err != nil {
			return fmt.Sprintf("%s: %v", c.name, err)
		}
		v[j] = n
	}
	a := &s.a
	*a = Access{IAddr: v[0], DAddr: v[2]}
	if v[1] >= numDTypes || !DType(v[1]).Valid() {
		return fmt.Sprintf("dtype %d is reserved or out of range", v[1])
	}
	a.DType = DType(v[1])
	if v[3] > 3 {
		return fmt.Sprintf("dsize %d out of range 0..3", v[3])
	}
	a.DSize = uint8(v[3])
	h := strings.TrimPrefix(strings.TrimPrefix(big, "0x"), "0X")
	if h == "" {
		return "data: empty"
	}
	digits := 2 << a.DSize
	lo, hi := h, ""
	if (a.DType.IsAtomic() || a.DType.IsCSR()) && len(h) > digits {
		lo, hi = h[len(h)-digits:], h[:len(h)-digits]
	}
	if len(lo) > 16 {
		return fmt.Sprintf("data %q wider than the access", big)
	}
	d, err := strconv.ParseUint(lo, 16, 64)
	if err != nil {
		return fmt.Sprintf("data: bad hex %q", big)
	}
	var up uint64
	if hi != "" {
		if len(hi) > 16 {
			return fmt.Sprintf("data %q wider than the access", big)
		}
		if up, err = strconv.ParseUint(hi, 16, 64); err != nil {
			return fmt.Sprintf("data: bad hex %q", big)
		}
	}
	m := sizeMask(a.DSize)
	switch {
	case a.DType.IsAtomic() || a.DType.IsCSR():
		if up&^m != 0 || d&^m != 0 {
			return fmt.Sprintf("data %q wider than twice the access size", big)
		}
		a.Data, a.SData = up, d
	case a.DType == DTypeSCFail:
		if d != 0 {
			return "a failed store-conditional has no data (want 0)"
		}
	default:
		if d&^m != 0 {
			return fmt.Sprintf("data %#x wider than the access (%d bytes)", d, a.Bytes())
		}
		a.Data = d
	}
	if a.DSize > 0 && a.DType.IsAtomic() && a.DAddr&(uint64(a.Bytes())-1) != 0 {
		return fmt.Sprintf("atomic at %#x not aligned to its size", a.DAddr)
	}
	if a.DType.IsCSR() && (a.DAddr > 0xfff || a.DSize < 2) {
		return fmt.Sprintf("CSR access to %#x of %d bytes: the CSR number is 0..0xfff and CSRs are 4 or 8 bytes", a.DAddr, a.Bytes())
	}
	return ""
}

// DataMerger feeds an encoder that takes both ingress blocks and data
// accesses (Next is both an ingress.Sink and a DataSink) from a block
// stream and a data ingress CSV read side by side: before each block it
// delivers the accesses that belong to the block's instructions. The data
// CSV does not say which retirement an access belongs to, only the
// instruction address, so an access belongs to a block when its iaddr is
// one of the block's instructions and later than the iaddr of the access
// before it in the same block (a block executes each of its instructions
// once), or the same as long as the instruction makes more accesses
// (PerInst). An access left over, that precedes the block it should go
// with, is an error naming its line.
type DataMerger struct {
	// PerInst, if not nil, returns how many accesses one execution of
	// the instruction at iaddr makes (a Zcmp push or pop: one per
	// register of its list); nil, or less than 1, means one.
	PerInst func(iaddr uint64) int

	next interface {
		Sink
		DataSink
	}
	src   *DataCSVSource
	a     *Access // the next access, not yet delivered
	eof   bool
	count uint64
}

// NewDataMerger returns a merger feeding next from the data CSV src.
func NewDataMerger(next interface {
	Sink
	DataSink
}, src *DataCSVSource) *DataMerger {
	return &DataMerger{next: next, src: src}
}

// Accesses returns the number of accesses delivered.
func (m *DataMerger) Accesses() uint64 { return m.count }

func (m *DataMerger) peek() error {
	if m.a != nil || m.eof {
		return nil
	}
	a, err := m.src.Next()
	if err == io.EOF {
		m.eof = true
		return nil
	}
	if err != nil {
		return err
	}
	m.a = a
	return nil
}

// Block delivers the accesses of b, then b.
func (m *DataMerger) Block(b *Block) error {
	if b.IRetire > 0 {
		lo, hi := b.IAddr, b.LastAddr()
		first := true
		var last uint64
		n, max := 0, 1 // accesses taken for the instruction at last, and how many it makes
		for {
			if err := m.peek(); err != nil {
				return err
			}
			if m.a == nil || m.a.IAddr < lo || m.a.IAddr > hi ||
				!first && (m.a.IAddr < last || m.a.IAddr == last && n >= max) {
				break
			}
			if first || m.a.IAddr != last {
				n, max = 0, 1
				if m.PerInst != nil {
					max = m.PerInst(m.a.IAddr)
				}
			}
			n++
			first, last = false, m.a.IAddr
			if err := m.next.Access(m.a); err != nil {
				return fmt.Errorf("%s:%d: %w", m.src.name, m.src.line, err)
			}
			m.count++
			m.a = nil
		}
	}
	return m.next.Block(b)
}

// Close checks that every access was delivered and closes the next sink.
func (m *DataMerger) Close() error {
	if err := m.peek(); err != nil {
		return err
	}
	if m.a != nil {
		return &LineError{File: m.src.name, Line: m.src.line,
			Reason: fmt.Sprintf("access of the instruction at %#x belongs to no block of the instruction trace (the accesses must be in retirement order)", m.a.IAddr)}
	}
	return m.next.Close()
}
