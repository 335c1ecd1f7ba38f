package ingress

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/riscv"
)

// The ingress CSV is the E-Trace reference flow's encoder input: a header
// naming the columns (itype_0,cause,tval,priv,iaddr_0,context,ctype,
// iretire_0,ilastsize_0, optionally time and sijump_0, and _1, _2, ...
// for further retirement groups) and one line per cycle. itype, cause,
// priv, ctype, iretire, ilastsize and sijump are decimal; tval, iaddr,
// context and time hexadecimal (a 0x prefix is accepted everywhere).
//
// In the reference flow's single-retirement form iretire counts
// instructions (0 or 1). With CSVOptions.Halfwords it counts halfwords, as
// the multiple-retirement port defines it.

// CSVOptions controls the ingress CSV reader and writer.
type CSVOptions struct {
	// Halfwords: iretire counts halfwords (multiple-retirement form)
	// instead of instructions.
	Halfwords bool
	// Time and SIJump add the optional columns when writing.
	Time, SIJump bool
	// Lenient makes the reader skip malformed lines (counted: see
	// Skipper) instead of failing with a LineError on the first. The
	// blocks of a skipped line are lost (an ingress CSV line carries its
	// own addresses, so the blocks around it are still right).
	Lenient bool
}

// column kinds of the ingress CSV
type csvCol struct {
	name  string
	hex   bool
	group int // retirement group for _N columns, -1 for common columns
}

// CSVSource reads ingress blocks from an ingress CSV file.
type CSVSource struct {
	sc   *bufio.Scanner
	name string
	line int
	opt  CSVOptions
	cols []csvCol
	vals []uint64
	pend []Block // blocks of the current line not yet returned
	blk  Block
	nGrp int
	skipper
}

// NewCSVSource reads an ingress CSV from r (named name in errors). It
// reads the header immediately.
func NewCSVSource(r io.Reader, name string, opt CSVOptions) (*CSVSource, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	s := &CSVSource{sc: sc, name: name, opt: opt, skipper: skipper{lenient: opt.Lenient}}
	if !sc.Scan() {
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return nil, fmt.Errorf("%s: empty file: no header line", name)
	}
	s.line = 1
	seen := map[string]bool{}
	for _, h := range strings.Split(strings.TrimSpace(sc.Text()), ",") {
		h = strings.ToLower(strings.TrimSpace(h))
		base, grp := h, -1
		if i := strings.LastIndexByte(h, '_'); i > 0 {
			if n, err := strconv.Atoi(h[i+1:]); err == nil {
				base, grp = h[:i], n
			}
		}
		switch base {
		case "itype", "iaddr", "iretire", "ilastsize", "sijump":
			if grp < 0 {
				grp = 0
			}
		case "cause", "tval", "priv", "context", "ctype", "time":
			grp = -1
		default:
			// unknown columns (impdef, trigger, ...) are kept and ignored
		}
		if grp+1 > s.nGrp {
			s.nGrp = grp + 1
		}
		hex := base == "tval" || base == "iaddr" || base == "context" || base == "time"
		s.cols = append(s.cols, csvCol{name: base, hex: hex, group: grp})
		seen[base] = true
	}
	for _, need := range []string{"itype", "iaddr", "iretire", "ilastsize", "priv"} {
		if !seen[need] {
			return nil, fmt.Errorf("%s:1: header has no %s column (need itype_0,cause,tval,priv,iaddr_0,iretire_0,ilastsize_0)", name, need)
		}
	}
	s.vals = make([]uint64, len(s.cols))
	return s, nil
}

func parseNum(f string, hex bool) (uint64, error) {
	f = strings.TrimSpace(f)
	if f == "" {
		return 0, nil
	}
	if len(f) > 2 && f[0] == '0' && (f[1] == 'x' || f[1] == 'X') {
		return strconv.ParseUint(f[2:], 16, 64)
	}
	if hex {
		return strconv.ParseUint(f, 16, 64)
	}
	return strconv.ParseUint(f, 10, 64)
}

// Next returns the next block.
func (s *CSVSource) Next() (*Block, error) {
	for len(s.pend) == 0 {
		if !s.sc.Scan() {
			if err := s.sc.Err(); err != nil {
				return nil, fmt.Errorf("%s: %w", s.name, err)
			}
			return nil, io.EOF
		}
		s.line++
		t := strings.TrimSpace(s.sc.Text())
		if t == "" || t[0] == '#' {
			continue
		}
		if reason := s.parseLine(t); reason != "" {
			if err := s.bad(s.name, s.line, "%s", reason); err != nil {
				return nil, err
			}
			s.pend = s.pend[:0]
			continue
		}
	}
	s.blk = s.pend[0]
	s.pend = s.pend[1:]
	return &s.blk, nil
}

// parseLine parses one data line into s.pend, or says why it is
// malformed.
func (s *CSVSource) parseLine(t string) string {
	fields := strings.Split(t, ",")
	if len(fields) != len(s.cols) {
		return fmt.Sprintf("%d fields, header has %d", len(fields), len(s.cols))
	}
	for i, f := range fields {
		v, err := parseNum(f, s.cols[i].hex)
		if err != nil {
			return fmt.Sprintf("column %s: invalid number %q", s.cols[i].name, f)
		}
		s.vals[i] = v
	}
	return s.makeBlocks()
}

// makeBlocks turns the values of a line into blocks, checking each
// against its range in the E-Trace ingress port definition.
func (s *CSVSource) makeBlocks() string {
	var common Block
	groups := make([]Block, s.nGrp)
	for i, c := range s.cols {
		v := s.vals[i]
		var b *Block
		if c.group >= 0 {
			b = &groups[c.group]
		} else {
			b = &common
		}
		switch c.name {
		case "itype":
			if v > uint64(ITypeMax) || IType(v) == ITypeReserved7 {
				return fmt.Sprintf("itype %d out of range (0..15, 7 reserved)", v)
			}
			b.IType = IType(v)
		case "cause":
			b.Cause = v
		case "tval":
			b.TVal = v
		case "priv":
			if v > 6 || v == 2 {
				return fmt.Sprintf("priv %d out of range (0 U, 1 S, 3 M, 4 D, 5 VU, 6 VS)", v)
			}
			b.Priv = Priv(v)
		case "iaddr":
			if v&1 != 0 {
				return fmt.Sprintf("iaddr %#x is odd: instructions are at even addresses", v)
			}
			b.IAddr = v
		case "context":
			b.Context = v
		case "ctype":
			if v > 3 {
				return fmt.Sprintf("ctype %d out of range (0..3)", v)
			}
			b.CType = CType(v)
		case "iretire":
			if v > 1<<20 {
				return fmt.Sprintf("iretire %d out of range", v)
			}
			b.IRetire = uint32(v)
		case "ilastsize":
			if v > 2 {
				return fmt.Sprintf("ilastsize %d out of range (0..2)", v)
			}
			b.ILastSize = uint8(v)
		case "sijump":
			if v > 1 {
				return fmt.Sprintf("sijump %d out of range (0 or 1)", v)
			}
			b.SIJump = v != 0
		case "time":
			b.Time = v
		}
	}
	s.pend = s.pend[:0]
	for _, g := range groups {
		if g.IRetire == 0 && !g.IType.IsTrap() {
			continue
		}
		if !s.opt.Halfwords {
			if g.IRetire > 1 {
				return fmt.Sprintf("iretire %d: more than one instruction needs the halfword form (--iretire-halfwords)", g.IRetire)
			}
			g.IRetire *= 1 << g.ILastSize
		}
		g.Cause, g.TVal, g.Priv, g.Context, g.CType, g.Time = common.Cause, common.TVal, common.Priv, common.Context, common.CType, common.Time
		s.pend = append(s.pend, g)
	}
	return ""
}

// CSVWriter writes ingress blocks as an ingress CSV. It is an ingress Sink.
type CSVWriter struct {
	w   *bufio.Writer
	c   io.Closer
	opt CSVOptions
	buf []byte
	hdr bool
}

// NewCSVWriter returns an ingress CSV writer on w.
func NewCSVWriter(w io.Writer, opt CSVOptions) *CSVWriter {
	c := &CSVWriter{w: bufio.NewWriter(w), opt: opt}
	if cl, ok := w.(io.Closer); ok {
		c.c = cl
	}
	return c
}

// Block writes one line.
func (c *CSVWriter) Block(b *Block) error {
	if !c.hdr {
		c.hdr = true
		h := "itype_0,cause,tval,priv,iaddr_0,context,ctype,iretire_0,ilastsize_0"
		if c.opt.Time {
			h += ",time"
		}
		if c.opt.SIJump {
			h += ",sijump_0"
		}
		if _, err := c.w.WriteString(h + "\n"); err != nil {
			return err
		}
	}
	retire := uint64(b.IRetire)
	if !c.opt.Halfwords && retire != 0 {
		if retire != 1<<b.ILastSize {
			return fmt.Errorf("ingress CSV: block at %#x retires %d halfwords: more than one instruction needs the halfword form", b.IAddr, b.IRetire)
		}
		retire = 1
	}
	x := c.buf[:0]
	x = strconv.AppendUint(x, uint64(b.IType), 10)
	x = append(x, ',')
	x = strconv.AppendUint(x, b.Cause, 10)
	x = append(x, ',')
	x = strconv.AppendUint(x, b.TVal, 16)
	x = append(x, ',')
	x = strconv.AppendUint(x, uint64(b.Priv), 10)
	x = append(x, ',')
	x = strconv.AppendUint(x, b.IAddr, 16)
	x = append(x, ',')
	x = strconv.AppendUint(x, b.Context, 16)
	x = append(x, ',')
	x = strconv.AppendUint(x, uint64(b.CType), 10)
	x = append(x, ',')
	x = strconv.AppendUint(x, retire, 10)
	x = append(x, ',')
	x = strconv.AppendUint(x, uint64(b.ILastSize), 10)
	if c.opt.Time {
		x = append(x, ',')
		x = strconv.AppendUint(x, b.Time, 16)
	}
	if c.opt.SIJump {
		x = append(x, ',')
		if b.SIJump {
			x = append(x, '1')
		} else {
			x = append(x, '0')
		}
	}
	x = append(x, '\n')
	c.buf = x
	_, err := c.w.Write(x)
	return err
}

// Close flushes the output.
func (c *CSVWriter) Close() error {
	err := c.w.Flush()
	if c.c != nil {
		if cerr := c.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

// ---------------------------------------------------------------- spike CSV

// spikeRows reads the E-Trace reference flow's spike CSV
// (VALID,ADDRESS,INSN,PRIVILEGE,EXCEPTION,ECAUSE,TVAL,INTERRUPT; hex).
// A row with EXCEPTION or INTERRUPT set is an instruction that trapped
// without retiring; the next row is the handler.
type spikeRows struct {
	sc   *bufio.Scanner
	name string
	line int
	idx  [8]int
	xlen int
	gap  bool // a row was skipped since the last one returned
	skipper
}

func (p *spikeRows) where() string   { return fmt.Sprintf("%s:%d", p.name, p.line) }
func (p *spikeRows) skips() *skipper { return &p.skipper }

var spikeColumns = [8]string{"valid", "address", "insn", "privilege", "exception", "ecause", "tval", "interrupt"}

// NewSpikeSource reads a spike CSV from r. img, when not nil, sets XLEN
// and is used for instructions whose bits the file does not give.
func NewSpikeSource(r io.Reader, name string, img *image.Set, opt PCOptions) (*PCSource, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	p := &spikeRows{sc: sc, name: name, xlen: 64, skipper: skipper{lenient: opt.Lenient}}
	if img != nil {
		p.xlen = img.XLEN()
	}
	if !sc.Scan() {
		return nil, fmt.Errorf("%s: empty file: no header line", name)
	}
	p.line = 1
	for i := range p.idx {
		p.idx[i] = -1
	}
	for i, h := range strings.Split(strings.TrimSpace(sc.Text()), ",") {
		for k, want := range spikeColumns {
			if strings.EqualFold(strings.TrimSpace(h), want) {
				p.idx[k] = i
			}
		}
	}
	for k, i := range p.idx {
		if i < 0 {
			return nil, fmt.Errorf("%s:1: header has no %s column", name, strings.ToUpper(spikeColumns[k]))
		}
	}
	return newRowSource(p, img, opt), nil
}

// checkSpike checks the fields of a spike CSV row against their
// definitions and returns why they are wrong, or "".
func (p *spikeRows) checkSpike(v *[8]uint64) string {
	addrMax := ^uint64(0)
	if p.xlen == 32 {
		addrMax = 1<<32 - 1
	}
	switch {
	case v[0] > 1:
		return fmt.Sprintf("VALID=%x: want 0 or 1", v[0])
	case v[0] == 0:
		return "" // not a retirement: the other fields do not matter
	case v[1] > addrMax:
		return fmt.Sprintf("ADDRESS=%x does not fit in %d bits", v[1], p.xlen)
	case v[1]&1 != 0:
		return fmt.Sprintf("ADDRESS=%x is odd: instructions are at even addresses", v[1])
	case v[2]>>32 != 0:
		return fmt.Sprintf("INSN=%x is wider than 32 bits", v[2])
	case v[2]&3 != 3 && v[2]>>16 != 0:
		return fmt.Sprintf("INSN=%x: a compressed instruction (low bits not 11) has 16 bits", v[2])
	case v[3] > 6 || v[3] == 2:
		return fmt.Sprintf("PRIVILEGE=%x: want 0 (U), 1 (S), 3 (M), 4 (D), 5 (VU) or 6 (VS)", v[3])
	case v[4] > 1:
		return fmt.Sprintf("EXCEPTION=%x: want 0 or 1", v[4])
	case v[7] > 1:
		return fmt.Sprintf("INTERRUPT=%x: want 0 or 1", v[7])
	case v[4] == 1 && v[7] == 1:
		return "EXCEPTION and INTERRUPT both set"
	case v[5]>>(p.xlen-1) != 0:
		return fmt.Sprintf("ECAUSE=%x does not fit in %d bits (mcause without its interrupt bit)", v[5], p.xlen-1)
	case v[6] > addrMax:
		return fmt.Sprintf("TVAL=%x does not fit in %d bits", v[6], p.xlen)
	}
	return ""
}

func (p *spikeRows) next(r *row) error {
	for p.sc.Scan() {
		p.line++
		t := strings.TrimSpace(p.sc.Text())
		if t == "" {
			continue
		}
		f := strings.Split(t, ",")
		var v [8]uint64
		reason := ""
		for k, i := range p.idx {
			if i >= len(f) {
				reason = fmt.Sprintf("missing %s (%d fields)", strings.ToUpper(spikeColumns[k]), len(f))
				break
			}
			x, err := parseNum(f[i], true)
			if err != nil {
				reason = fmt.Sprintf("column %s: invalid number %q", strings.ToUpper(spikeColumns[k]), f[i])
				break
			}
			v[k] = x
		}
		if reason == "" {
			reason = p.checkSpike(&v)
		}
		if reason != "" {
			if err := p.bad(p.name, p.line, "%s", reason); err != nil {
				return err
			}
			p.gap = true // a skipped row lost an instruction
			continue
		}
		if v[0] == 0 {
			continue // not a valid retirement
		}
		*r = row{pc: v[1], priv: Priv(v[3]), hasPriv: true, gap: p.gap}
		p.gap = false
		if v[2] != 0 || v[4] == 0 && v[7] == 0 {
			r.in, r.hasIn = riscv.Decode(uint32(v[2]), p.xlen), true
			if r.in.Class == riscv.ClassIllegal && v[4] == 0 && v[7] == 0 {
				r.hasIn = false // let the image decide (custom instruction?)
			}
		}
		switch {
		case v[7] != 0:
			r.trap, r.cause = ITypeInterrupt, v[5]
		case v[4] != 0:
			r.trap, r.cause, r.tval = ITypeException, v[5], v[6]
		}
		return nil
	}
	if err := p.sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", p.name, p.line+1, err)
	}
	return io.EOF
}

// ---------------------------------------------------------------- PCSEQ

// pcseqITypes maps the N-Trace reference code's PCSEQ tags to itypes: L
// linear, B/BN taken/not-taken branch, J/JI direct/indirect jump, C/CI
// direct/indirect call, R return.
var pcseqITypes = map[string]IType{
	"L": ITypeNone, "B": ITypeTaken, "BN": ITypeNotTaken, "J": ITypeDirectJump, "JI": ITypeIndirectJump,
	"C": ITypeDirectCall, "CI": ITypeIndirectCall, "R": ITypeReturn,
}

// PCSeqSource reads the N-Trace reference code's PCSEQ file ("0x...,TAGn"
// per retired instruction, n the size in bytes); it needs no image since
// the tags carry each instruction's type and size.
type PCSeqSource struct {
	sc     *pcScanner
	opt    PCOptions
	blk    Block
	cur    uint64
	curIT  IType
	curSz  int
	have   bool
	done   bool
	gap    bool // a gap comment comes before cur
	n      uint64
	queue  Block // exception block after a gap
	queued bool
}

// NewPCSeqSource reads a PCSEQ file from r. A malformed line is a
// LineError (skipped and counted with opt.Lenient); a gap comment, or a
// skipped line, ends the block before it with an exception, so the PCs on
// its two sides are not taken as consecutive.
func NewPCSeqSource(r io.Reader, name string, opt PCOptions) *PCSeqSource {
	if !opt.HasPriv {
		opt.Priv = PrivM
	}
	return &PCSeqSource{sc: newPCScanner(r, name, opt.Lenient), opt: opt}
}

// Instructions returns the number of instructions read so far.
func (s *PCSeqSource) Instructions() uint64 { return s.n }

// Skipped returns the number of malformed lines skipped (opt.Lenient).
func (s *PCSeqSource) Skipped() uint64 { return s.sc.Skipped() }

// FirstSkipped returns the first malformed lines skipped.
func (s *PCSeqSource) FirstSkipped() []*LineError { return s.sc.FirstSkipped() }

func (s *PCSeqSource) read() error {
	for {
		pc, tag, gap, err := s.sc.next()
		if err == io.EOF {
			s.done, s.have = true, false
			return nil
		}
		if err != nil {
			return err
		}
		tag = strings.TrimSpace(tag)
		sz, it, ok := 0, ITypeNone, len(tag) >= 2
		if ok {
			var err error
			sz, err = strconv.Atoi(tag[len(tag)-1:])
			it, ok = pcseqITypes[strings.ToUpper(tag[:len(tag)-1])]
			ok = ok && err == nil && (sz == 2 || sz == 4)
		}
		if !ok {
			if err := s.sc.bad(s.sc.name, s.sc.line, "invalid type tag %q (want L, B, BN, J, JI, C, CI or R and size 2 or 4)", tag); err != nil {
				return err
			}
			s.sc.gap = true // the skipped line lost an instruction
			continue
		}
		s.cur, s.curIT, s.curSz, s.have, s.gap = pc, it, sz, true, gap
		return nil
	}
}

// Next returns the next block.
func (s *PCSeqSource) Next() (*Block, error) {
	if s.queued {
		s.queued = false
		s.blk = s.queue
		return &s.blk, nil
	}
	if !s.have && !s.done {
		if err := s.read(); err != nil {
			return nil, err
		}
	}
	if s.done {
		return nil, io.EOF
	}
	b := &s.blk
	*b = Block{IAddr: s.cur, Priv: s.opt.Priv}
	for {
		s.n++
		it, sz, pc := s.curIT, s.curSz, s.cur
		b.IRetire += uint32(sz / 2)
		b.ILastSize = lastSize(uint8(sz))
		if err := s.read(); err != nil {
			return nil, err
		}
		if !s.done && s.gap {
			// The input lost instructions here: report an exception
			// after this one (at the next address, the PCSEQ carries no
			// branch targets), the next PC as its handler.
			s.gap = false
			if s.opt.ITypeWidth == 3 {
				it = it.To3Bit()
			}
			if it == ITypeNone {
				b.IType = ITypeException
				return b, nil
			}
			b.IType = it
			expect := s.cur
			if it == ITypeNotTaken {
				expect = pc + uint64(sz)
			}
			s.queue = Block{IAddr: expect, IType: ITypeException, Priv: b.Priv}
			s.queued = true
			return b, nil
		}
		if !s.done && it == ITypeNone && s.cur != pc+uint64(sz) {
			return nil, fmt.Errorf("%s: linear instruction at %#x followed by %#x", s.sc.where(), pc, s.cur)
		}
		if it != ITypeNone || s.opt.PerInstruction || s.done {
			if s.opt.ITypeWidth == 3 {
				it = it.To3Bit()
			}
			b.IType = it
			return b, nil
		}
	}
}
