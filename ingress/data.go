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
//
// Time is the cycle in which it is signalled, on the clock of
// Block.Time (not an interface signal: what places the response among
// the instructions; 0 if unknown).
type LoadResponse struct {
	LID  uint32 // lid: the lrid of the request answered
	Resp uint8  // lresp: LRespOkay or LRespError
	Data uint64 // ldata, zero-extended from the request's size
	Time uint64 // the cycle it is signalled in
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
//
// The split protocol's CSV (DataCSVWriter.SetSplit) has the columns lrid,
// lresp, lid, ldata and time too, and a line per request, per unified
// access (stores, failed store-conditionals, CSR accesses) and per
// response, in the order the interface signals them:
//
//   - a request (a load or an atomic) has lrid (decimal) and no lresp,
//     lid, ldata or time; data is empty for a load and holds the store
//     data for an atomic (sdata: the load data comes in the response);
//   - a unified access has lrid, lresp, lid, ldata and time empty;
//   - a response has iaddr, dtype, daddr, dsize, data and lrid empty,
//     lresp 2 (okay) or 3 (error), lid (decimal), ldata (hexadecimal,
//     empty with lresp 3) and time (hexadecimal, as the ingress CSV's
//     time column): the cycle it is signalled
//     in, on the clock of the ingress blocks' time (the ingress CSV's time
//     column), which is what says which instructions it comes between:
//     a DataMerger delivers it before the first block of that time or
//     later.

// dataCols are the columns of the data ingress CSV, in the order written
// (the split protocol's after the first five).
var dataCols = [...]struct {
	name string
	hex  bool
}{{"iaddr", true}, {"dtype", false}, {"daddr", true}, {"dsize", false}, {"data", true},
	{"lrid", false}, {"lresp", false}, {"lid", false}, {"ldata", true}, {"time", true}}

// numUnifiedCols is the number of columns of the unified protocol's CSV.
const numUnifiedCols = 5

// Column indexes in dataCols.
const (
	colIAddr = iota
	colDType
	colDAddr
	colDSize
	colData
	colLRID
	colLResp
	colLID
	colLData
	colTime
)

// DataCSVWriter writes accesses as a data ingress CSV. It implements
// DataSink, and SplitDataSink (after SetSplit).
type DataCSVWriter struct {
	w      *bufio.Writer
	buf    []byte
	header bool
	split  bool
	n      uint64
}

// SetSplit makes the writer write the split protocol's CSV (requests and
// responses); call it before the first access.
func (c *DataCSVWriter) SetSplit() { c.split = true }

// writeHeader writes the header line, once.
func (c *DataCSVWriter) writeHeader() {
	if c.header {
		return
	}
	c.header = true
	n := numUnifiedCols
	if c.split {
		n = len(dataCols)
	}
	for i, col := range dataCols[:n] {
		if i > 0 {
			c.w.WriteByte(',')
		}
		c.w.WriteString(col.name)
	}
	c.w.WriteByte('\n')
}

// Response writes the line of a split load response (SetSplit).
func (c *DataCSVWriter) Response(r *LoadResponse) error {
	c.writeHeader()
	if !c.split {
		return fmt.Errorf("ingress: load response (lid %d) to the unified protocol's data ingress CSV", r.LID)
	}
	if r.Resp != LRespOkay && r.Resp != LRespError {
		return fmt.Errorf("ingress: load response (lid %d): lresp %d", r.LID, r.Resp)
	}
	b := append(c.buf[:0], ",,,,,,"...)
	b = strconv.AppendUint(b, uint64(r.Resp), 10)
	b = append(b, ',')
	b = strconv.AppendUint(b, uint64(r.LID), 10)
	b = append(b, ',')
	if r.Resp == LRespOkay {
		b = append(b, "0x"...)
		b = strconv.AppendUint(b, r.Data, 16)
	}
	b = append(b, ",0x"...)
	b = strconv.AppendUint(b, r.Time, 16)
	b = append(b, '\n')
	c.buf = b
	_, err := c.w.Write(b)
	return err
}

// NewDataCSVWriter returns a writer of the data ingress CSV to w.
func NewDataCSVWriter(w io.Writer) *DataCSVWriter {
	return &DataCSVWriter{w: bufio.NewWriterSize(w, 64<<10)}
}

// Access writes one line.
func (c *DataCSVWriter) Access(a *Access) error {
	c.writeHeader()
	if !a.DType.Valid() || a.DSize > 3 {
		return fmt.Errorf("ingress: data access %d: invalid dtype %d or dsize %d", c.n, a.DType, a.DSize)
	}
	if a.Split && !c.split {
		return fmt.Errorf("ingress: data access %d: a split-protocol request to the unified protocol's data ingress CSV", c.n)
	}
	if a.Split && !a.DType.Reads() {
		return fmt.Errorf("ingress: data access %d: a split request of a %s (only loads and atomics are split)", c.n, a.DType)
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
	b = append(b, ',')
	if !a.Split || a.DType.IsAtomic() {
		b = append(b, "0x"...)
	}
	switch {
	case a.Split && a.DType.IsAtomic():
		// the store data; the load data comes in the response
		b = strconv.AppendUint(b, a.SData, 16)
	case a.Split:
		// a load request: no data
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
	if c.split {
		b = append(b, ',')
		if a.Split {
			b = strconv.AppendUint(b, uint64(a.LRID), 10)
		}
		b = append(b, ",,,,"...)
	}
	b = append(b, '\n')
	c.buf = b
	_, err := c.w.Write(b)
	return err
}

// Close flushes the output (an empty trace still gets its header).
func (c *DataCSVWriter) Close() error {
	c.writeHeader()
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
	sc    *bufio.Scanner
	name  string
	line  int
	idx   [len(dataCols)]int // field index of each column
	nf    int
	split bool // the split protocol's columns
	a     Access
	r     LoadResponse
	resp  bool // the line read last is a response (r)
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
			return nil, &LineError{File: name, Line: 1, Reason: fmt.Sprintf("unknown column %q (want iaddr, dtype, daddr, dsize, data, and for the split protocol lrid, lresp, lid, ldata, time)", h)}
		}
	}
	for j, c := range dataCols[:numUnifiedCols] {
		if s.idx[j] < 0 {
			return nil, &LineError{File: name, Line: 1, Reason: fmt.Sprintf("no %s column", c.name)}
		}
	}
	for j, c := range dataCols[numUnifiedCols:] {
		has := s.idx[numUnifiedCols+j] >= 0
		if j == 0 {
			s.split = has
		} else if has != s.split {
			return nil, &LineError{File: name, Line: 1, Reason: fmt.Sprintf("the split protocol's columns are lrid, lresp, lid, ldata and time together: %s is %s", c.name, map[bool]string{true: "there without lrid", false: "missing"}[has])}
		}
	}
	return s, nil
}

// Split reports whether the file has the split protocol's columns.
func (s *DataCSVSource) Split() bool { return s.split }

// Line returns the line number of the access returned last.
func (s *DataCSVSource) Line() int { return s.line }

// Next returns the next access, or io.EOF at the end of the file. The
// access is valid until the next call. A file of the split protocol is
// read with NextEvent.
func (s *DataCSVSource) Next() (*Access, error) {
	a, r, err := s.NextEvent()
	if err == nil && r != nil {
		return nil, &LineError{File: s.name, Line: s.line, Reason: "a load response: read with NextEvent"}
	}
	return a, err
}

// NextEvent returns the next access or (split protocol) load response,
// or io.EOF at the end of the file. What it returns is valid until the
// next call.
func (s *DataCSVSource) NextEvent() (*Access, *LoadResponse, error) {
	for s.sc.Scan() {
		s.line++
		t := strings.TrimSpace(s.sc.Text())
		if t == "" || t[0] == '#' {
			continue
		}
		if reason := s.parse(t); reason != "" {
			return nil, nil, &LineError{File: s.name, Line: s.line, Reason: reason}
		}
		if s.resp {
			return nil, &s.r, nil
		}
		return &s.a, nil, nil
	}
	if err := s.sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s:%d: %w", s.name, s.line+1, err)
	}
	return nil, nil, io.EOF
}

// parseResponse reads the fields of a response line (f, a line of the
// split protocol's CSV whose lresp is not empty) into s.r.
func (s *DataCSVSource) parseResponse(f []string) string {
	for j := range colLRID + 1 {
		if x := strings.TrimSpace(f[s.idx[j]]); x != "" {
			return fmt.Sprintf("a load response (lresp given) with %s %q: a response has no %s", dataCols[j].name, x, dataCols[j].name)
		}
	}
	var v [len(dataCols)]uint64
	for _, j := range []int{colLResp, colLID, colLData, colTime} {
		x := strings.TrimSpace(f[s.idx[j]])
		if x == "" {
			if j == colLData {
				continue
			}
			return fmt.Sprintf("a load response with no %s", dataCols[j].name)
		}
		n, err := parseNum(x, dataCols[j].hex)
		if err != nil {
			return fmt.Sprintf("%s: %v", dataCols[j].name, err)
		}
		v[j] = n
	}
	s.r = LoadResponse{Resp: uint8(v[colLResp]), LID: uint32(v[colLID]), Data: v[colLData], Time: v[colTime]}
	hasData := strings.TrimSpace(f[s.idx[colLData]]) != ""
	switch {
	case v[colLResp] != LRespOkay && v[colLResp] != LRespError:
		return fmt.Sprintf("lresp %d: want 2 (okay) or 3 (error)", v[colLResp])
	case v[colLID] > 0xffff:
		return fmt.Sprintf("lid %d wider than lrid_width_p's 16 bits", v[colLID])
	case hasData != (v[colLResp] == LRespOkay):
		return fmt.Sprintf("lresp %d with ldata %q: ldata is given exactly when lresp is 2", v[colLResp], strings.TrimSpace(f[s.idx[colLData]]))
	}
	return ""
}

func (s *DataCSVSource) parse(t string) string {
	f := strings.Split(t, ",")
	if len(f) != s.nf {
		return fmt.Sprintf("%d fields, the header has %d", len(f), s.nf)
	}
	s.resp = false
	req := false // a split request
	if s.split {
		if strings.TrimSpace(f[s.idx[colLResp]]) != "" {
			s.resp = true
			return s.parseResponse(f)
		}
		for _, j := range []int{colLID, colLData, colTime} {
			if x := strings.TrimSpace(f[s.idx[j]]); x != "" {
				return fmt.Sprintf("%s %q on an access line (only a load response, with lresp, has %s)", dataCols[j].name, x, dataCols[j].name)
			}
		}
		req = strings.TrimSpace(f[s.idx[colLRID]]) != ""
	}
	var v [len(dataCols)]uint64
	var big string // the data field, parsed below
	for j, c := range dataCols[:numUnifiedCols] {
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
	if req {
		return s.parseRequest(v, f, big)
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

// parseRequest reads a split request line (lrid given): v holds the
// unified columns but data (big).
func (s *DataCSVSource) parseRequest(v [len(dataCols)]uint64, f []string, big string) string {
	lrid, err := parseNum(strings.TrimSpace(f[s.idx[colLRID]]), false)
	if err != nil {
		return fmt.Sprintf("lrid: %v", err)
	}
	a := &s.a
	*a = Access{IAddr: v[colIAddr], DAddr: v[colDAddr], Split: true}
	switch {
	case v[colDType] >= numDTypes || !DType(v[colDType]).Reads():
		return fmt.Sprintf("a split request (lrid given) of dtype %d: only loads (0) and atomics (8..14) are split", v[colDType])
	case v[colDSize] > 3:
		return fmt.Sprintf("dsize %d out of range 0..3", v[colDSize])
	case lrid > 0xffff:
		return fmt.Sprintf("lrid %d wider than lrid_width_p's 16 bits", lrid)
	}
	a.DType, a.DSize, a.LRID = DType(v[colDType]), uint8(v[colDSize]), uint32(lrid)
	if a.DType == DTypeLoad {
		if big != "" {
			return fmt.Sprintf("a split load request with data %q: its data comes in the response (ldata)", big)
		}
		return ""
	}
	// an atomic: the store data
	d, err := parseNum(big, true)
	if err != nil {
		return fmt.Sprintf("data (the store data of a split atomic request): %v", err)
	}
	if d&^sizeMask(a.DSize) != 0 {
		return fmt.Sprintf("data %#x wider than the access (%d bytes)", d, a.Bytes())
	}
	a.SData = d
	if a.DAddr&(uint64(a.Bytes())-1) != 0 {
		return fmt.Sprintf("atomic at %#x not aligned to its size", a.DAddr)
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
//
// A multi-access instruction (PerInst more than 1) retires once per access
// on the interface E-Trace specifies for data trace (see Folder): its
// first retirement ends a block with itype 0, and the next ones begin the
// blocks that follow. Such a block takes one access of it. Files made by
// a port that retires it once (rvtrace before it followed the rule) have
// all its accesses before its one block: a block ending with itype 0 at
// it still takes one, and when the next block does not begin with it the
// others are delivered before that block (late, but still before any
// block after the instruction's: a Folder in front of the encoder
// gathers them).
//
// A split protocol CSV's load responses (Next must then be a
// SplitDataSink) are delivered in their place among the accesses, each
// before the first block whose time is its time or later (the blocks'
// times must then be given and never decrease: an ingress CSV with its
// time column);
// those after the last block at Close.
type DataMerger struct {
	// PerInst, if not nil, returns how many accesses one execution of
	// the instruction at iaddr makes (a Zcmp push or pop: one per
	// register of its list); nil, or less than 1, means one.
	PerInst func(iaddr uint64) int

	next interface {
		Sink
		DataSink
	}
	src      *DataCSVSource
	a        *Access       // the next access, not yet delivered
	r        *LoadResponse // or the next response
	eof      bool
	count    uint64
	lastTime uint64 // time of the block before (split protocol)
	blocks   uint64
	// owed: the block before ended with itype 0 at owedAt, a
	// multi-access instruction, and took one of its accesses
	owed   bool
	owedAt uint64
	owedN  int // accesses it has left at most
	// the time of that block (split protocol: the responses among
	// them)
	owedTime uint64
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
	if m.a != nil || m.r != nil || m.eof {
		return nil
	}
	a, r, err := m.src.NextEvent()
	if err == io.EOF {
		m.eof = true
		return nil
	}
	if err != nil {
		return err
	}
	m.a, m.r = a, r
	return nil
}

// response delivers the response peeked.
func (m *DataMerger) response() error {
	s, ok := m.next.(SplitDataSink)
	if !ok {
		return &LineError{File: m.src.name, Line: m.src.line, Reason: "a load response (split protocol) for an encoder of the unified protocol"}
	}
	r := m.r
	m.r = nil
	if err := s.Response(r); err != nil {
		return fmt.Errorf("%s:%d: %w", m.src.name, m.src.line, err)
	}
	return nil
}

// Block delivers the accesses of b, then b.
func (m *DataMerger) Block(b *Block) error {
	if m.src.split {
		if m.blocks > 0 && (b.Time < m.lastTime || b.Time == 0) {
			return fmt.Errorf("%s: ingress block %d has time %d, the block before %d: the split protocol's load responses are placed by the blocks' time, which must increase (the ingress CSV's time column)",
				m.src.name, m.blocks, b.Time, m.lastTime)
		}
		m.lastTime = b.Time
	}
	m.blocks++
	repeat := m.owed && b.IRetire > 0 && b.IAddr == m.owedAt
	left := m.owedN // (repeat: the accesses the instruction has left)
	if m.owed && !repeat {
		// the other accesses of a multi-access instruction retired once
		if err := m.owedAccesses(); err != nil {
			return err
		}
	}
	m.owed = false
	if b.IRetire > 0 || m.src.split {
		lo, hi := b.IAddr, b.LastAddr()
		first := true
		var last uint64
		n, max := 0, 1 // accesses taken for the instruction at last, and how many it makes
		for {
			if err := m.peek(); err != nil {
				return err
			}
			if m.r != nil {
				if m.r.Time > b.Time {
					break
				}
				if err := m.response(); err != nil {
					return err
				}
				continue
			}
			if m.a == nil || b.IRetire == 0 || m.a.IAddr < lo || m.a.IAddr > hi ||
				!first && (m.a.IAddr < last || m.a.IAddr == last && n >= max) {
				break
			}
			if first || m.a.IAddr != last {
				n, max = 0, 1
				if m.PerInst != nil {
					max = m.PerInst(m.a.IAddr)
				}
				switch {
				case max <= 1:
				case repeat && m.a.IAddr == lo:
					// a repeated retirement: one access; the next
					// retirement, if it has accesses left, begins
					// the next block
					max = 1
					if left--; left > 0 && m.a.IAddr == hi && b.IType == ITypeNone {
						m.owed, m.owedAt, m.owedN, m.owedTime = true, hi, left, b.Time
					}
				case m.a.IAddr == hi && b.IType == ITypeNone:
					// its first retirement of several, or its only one
					// (the others are delivered before the next block)
					m.owed, m.owedAt, m.owedN, m.owedTime = true, hi, max-1, b.Time
					max = 1
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

// owedAccesses delivers the accesses left of the instruction the block
// before ended with (owedAt), up to how many it has left.
func (m *DataMerger) owedAccesses() error {
	for m.owedN > 0 {
		if err := m.peek(); err != nil {
			return err
		}
		if m.r != nil && m.r.Time <= m.owedTime {
			// a response among them (split protocol)
			if err := m.response(); err != nil {
				return err
			}
			continue
		}
		if m.a == nil || m.a.IAddr != m.owedAt {
			return nil
		}
		m.owedN--
		if err := m.next.Access(m.a); err != nil {
			return fmt.Errorf("%s:%d: %w", m.src.name, m.src.line, err)
		}
		m.count++
		m.a = nil
	}
	return nil
}

// Close delivers the responses after the last block, checks that every
// access was delivered and closes the next sink.
func (m *DataMerger) Close() error {
	if m.owed {
		if err := m.owedAccesses(); err != nil {
			return err
		}
	}
	for {
		if err := m.peek(); err != nil {
			return err
		}
		if m.r == nil {
			break
		}
		if err := m.response(); err != nil {
			return err
		}
	}
	if m.a != nil {
		return &LineError{File: m.src.name, Line: m.src.line,
			Reason: fmt.Sprintf("access of the instruction at %#x belongs to no block of the instruction trace (the accesses must be in retirement order)", m.a.IAddr)}
	}
	return m.next.Close()
}
