package ingress

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/riscv"
)

// PCOptions controls how a list of retired PCs becomes ingress blocks.
type PCOptions struct {
	// PerInstruction makes one block per retired instruction, as a
	// single-retirement hart reports them; by default straight-line
	// instructions are merged into one block up to the next instruction
	// with a non-zero itype, as a multiple-retirement port may.
	PerInstruction bool
	// Priv is the privilege level reported for every block (a PC list
	// does not say) when HasPriv is set; the default is M.
	Priv    Priv
	HasPriv bool
	// ITypeWidth 3 reports itypes as a 3-bit port does; 0 or 4 the 4-bit
	// codes.
	ITypeWidth int
	// AllJumps reports direct jumps and calls as taken branches
	// (trTeInstEnAllJumps).
	AllJumps bool
	// Lenient skips malformed lines (counted: see Skipper) instead of
	// failing with a LineError on the first.
	Lenient bool
}

// ParsePC parses one PC as written in PC lists: hexadecimal with or
// without a 0x prefix, any case, surrounding blanks ignored.
func ParsePC(s string) (uint64, error) {
	s = strings.TrimSpace(s)
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		s = s[2:]
	}
	if s == "" {
		return 0, fmt.Errorf("empty PC")
	}
	return strconv.ParseUint(s, 16, 64)
}

// pcScanner reads PCs (the first comma-separated field of each line) from
// a text file, skipping blank lines and lines starting with '#'. A
// comment starting with "gap" (decoders write "# gap at byte N ..." into
// the PC lists they produce where the trace lost instructions) marks a
// discontinuity before the next PC: the PCs on its two sides are not
// consecutive instructions. So does a malformed line skipped in lenient
// mode.
type pcScanner struct {
	sc   *bufio.Scanner
	name string
	line int
	xlen int // PCs above 2^xlen are malformed (0: 64)
	gap  bool
	skipper
}

func newPCScanner(r io.Reader, name string, lenient bool) *pcScanner {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	return &pcScanner{sc: sc, name: name, skipper: skipper{lenient: lenient}}
}

// isGapComment reports whether a '#' line says the trace has a gap there.
func isGapComment(t string) bool {
	t = strings.TrimSpace(strings.TrimLeft(t, "#"))
	return len(t) >= 3 && strings.EqualFold(t[:3], "gap")
}

// next returns the next PC, the rest of its line after the first comma,
// and whether a gap comment came before it.
func (p *pcScanner) next() (pc uint64, rest string, gap bool, err error) {
	for p.sc.Scan() {
		p.line++
		t := p.sc.Text()
		if len(t) == 0 {
			continue
		}
		if t[0] == '#' {
			p.gap = p.gap || isGapComment(t)
			continue
		}
		f, rest := t, ""
		if i := strings.IndexByte(t, ','); i >= 0 {
			f, rest = t[:i], t[i+1:]
		}
		if strings.TrimSpace(f) == "" {
			if strings.TrimSpace(t) == "" {
				continue
			}
			if err := p.bad(p.name, p.line, "no PC before the first comma"); err != nil {
				return 0, "", false, err
			}
			p.gap = true // a skipped line lost an instruction
			continue
		}
		pc, err := ParsePC(f)
		reason := ""
		switch {
		case err != nil:
			reason = fmt.Sprintf("invalid PC %q", strings.TrimSpace(f))
		case pc&1 != 0:
			reason = fmt.Sprintf("PC %#x is odd: instructions are at even addresses", pc)
		case p.xlen == 32 && pc>>32 != 0:
			reason = fmt.Sprintf("PC %#x does not fit in 32 bits", pc)
		}
		if reason != "" {
			if err := p.bad(p.name, p.line, "%s", reason); err != nil {
				return 0, "", false, err
			}
			p.gap = true // a skipped line lost an instruction
			continue
		}
		gap, p.gap = p.gap, false
		return pc, rest, gap, nil
	}
	if err := p.sc.Err(); err != nil {
		return 0, "", false, fmt.Errorf("%s:%d: %w", p.name, p.line+1, err)
	}
	return 0, "", false, io.EOF
}

// row is one retired (or trapping) instruction of an instruction-level
// trace: a PC list line or a spike CSV row.
type row struct {
	pc      uint64
	in      riscv.Inst
	hasIn   bool   // in is valid (spike CSV carries the instruction bits)
	trap    IType  // ITypeException or ITypeInterrupt: this instruction did not retire
	cause   uint64 // for traps
	tval    uint64
	priv    Priv
	hasPriv bool
	gap     bool // a gap in the input comes before this row
}

// rowReader produces rows; io.EOF at the end.
type rowReader interface {
	next(r *row) error
	where() string // file:line of the last row, for errors
	skips() *skipper
}

func (p *pcScanner) where() string   { return fmt.Sprintf("%s:%d", p.name, p.line) }
func (p *pcScanner) skips() *skipper { return &p.skipper }

func (p *pcScanner) nextRow(r *row) error {
	pc, _, gap, err := p.next()
	if err != nil {
		return err
	}
	*r = row{pc: pc, gap: gap}
	return nil
}

type pcRows struct{ *pcScanner }

func (p pcRows) next(r *row) error { return p.nextRow(r) }

// PCSource turns an instruction-level trace (a list of retired PCs, or a
// spike CSV) plus the program image into ingress blocks. The image (or the
// instruction bits in the file) tells each instruction's size and type;
// consecutive PCs tell whether branches were taken. Wherever the next PC
// is not one the instruction can lead to (a trap, an ecall handled
// elsewhere, code that changed) the discontinuity is reported as an
// exception, never lost: a block whose last instruction is linear ends with
// itype 1; after a branch or direct jump, a block with no instruction
// retired and itype 1 at the address that should have come next.
type PCSource struct {
	rows   rowReader
	img    *image.Set
	opt    PCOptions
	xlen   int
	cur    row  // next row to handle
	have   bool // cur is valid
	done   bool
	blk    Block
	queue  Block // a second block to return after blk (trap after a jump)
	queued bool
	prev   riscv.Inst // previous instruction retired (for sijump)
	prevPC uint64
	prevOK bool

	instructions    uint64
	discontinuities uint64
	gaps            uint64
}

// NewPCSource reads PCs from r (named name in errors) with the image img.
// A malformed line is a LineError (skipped and counted with
// opt.Lenient); a gap comment is reported as a discontinuity.
func NewPCSource(r io.Reader, name string, img *image.Set, opt PCOptions) *PCSource {
	sc := newPCScanner(r, name, opt.Lenient)
	if img != nil {
		sc.xlen = img.XLEN()
	}
	return newRowSource(pcRows{sc}, img, opt)
}

// Skipped returns the number of malformed lines skipped (opt.Lenient).
func (s *PCSource) Skipped() uint64 { return s.rows.skips().Skipped() }

// FirstSkipped returns the first malformed lines skipped.
func (s *PCSource) FirstSkipped() []*LineError { return s.rows.skips().FirstSkipped() }

// Gaps returns how many gap comments of the input were reported as
// discontinuities (they are counted in Discontinuities too).
func (s *PCSource) Gaps() uint64 { return s.gaps }

func newRowSource(rows rowReader, img *image.Set, opt PCOptions) *PCSource {
	if !opt.HasPriv {
		opt.Priv = PrivM
	}
	xlen := 64
	if img != nil {
		xlen = img.XLEN()
	}
	return &PCSource{rows: rows, img: img, opt: opt, xlen: xlen}
}

// Instructions returns the number of instructions retired so far.
func (s *PCSource) Instructions() uint64 { return s.instructions }

// Discontinuities returns how many unexplained PC changes were reported as
// exceptions.
func (s *PCSource) Discontinuities() uint64 { return s.discontinuities }

func (s *PCSource) privOf(r *row) Priv {
	if r.hasPriv {
		return r.priv
	}
	return s.opt.Priv
}

// Next returns the next block, or io.EOF after the last.
func (s *PCSource) Next() (*Block, error) {
	if s.queued {
		s.queued = false
		s.blk = s.queue
		return &s.blk, nil
	}
	if s.done {
		return nil, io.EOF
	}
	if !s.have {
		err := s.rows.next(&s.cur)
		if err == io.EOF {
			s.done = true
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
		s.have = true
	}
	b := &s.blk
	*b = Block{IAddr: s.cur.pc, Priv: s.privOf(&s.cur)}
	for {
		cur := s.cur
		pc := cur.pc
		if cur.trap != ITypeNone {
			// This instruction trapped without retiring.
			if err := s.advance(); err != nil {
				return nil, err
			}
			s.prevOK = false
			if b.IRetire == 0 {
				*b = Block{IAddr: pc, Priv: s.privOf(&cur)}
			}
			b.IType, b.Cause, b.TVal = cur.trap, cur.cause, cur.tval
			return b, nil
		}
		in := cur.in
		if !cur.hasIn {
			var ok bool
			if s.img != nil {
				in, ok = s.img.Inst(pc)
			}
			if !ok {
				return nil, fmt.Errorf("%s: PC %#x is not in the program image", s.rows.where(), pc)
			}
		}
		if in.Len == 0 || in.Len > 8 {
			return nil, fmt.Errorf("%s: PC %#x: instruction %#x has a reserved length", s.rows.where(), pc, in.Raw)
		}
		s.instructions++
		b.IRetire += uint32(in.Len) / 2
		b.ILastSize = lastSize(in.Len)
		if err := s.advance(); err != nil {
			return nil, err
		}
		end := s.done
		next := &s.cur
		sij := false
		if s.prevOK && s.prevPC+uint64(s.prev.Len) == pc {
			_, sij = SeqTarget(s.prev, s.prevPC, in, s.xlen)
		}
		s.prev, s.prevPC, s.prevOK = in, pc, true
		fall := pc + uint64(in.Len)
		if s.xlen == 32 {
			fall &= 1<<32 - 1
		}
		it, disc := s.classify(in, pc, fall, next.pc, end)
		if disc && next.trap != ITypeNone && next.pc == fall {
			disc = false // the next instruction traps where expected
		}
		if !end && next.gap {
			// The input lost instructions here: whatever the next PC,
			// it does not follow this instruction.
			disc = true
			s.gaps++
			next.gap = false
		}
		if disc {
			s.discontinuities++
			s.prevOK = false
			if it == ITypeNone {
				b.IType = ITypeException
				return b, nil
			}
			// The jump retired; the instruction it led to trapped.
			b.IType = s.fold(it)
			b.SIJump = sij && it.Uninferable()
			expect := fall
			switch {
			case it == ITypeNotTaken:
			case it.Uninferable():
				expect = next.pc // an indirect jump's target is not known
			default:
				expect = in.Target(pc)
			}
			s.queue = Block{IAddr: expect, IType: ITypeException, Priv: b.Priv}
			s.queued = true
			return b, nil
		}
		if it != ITypeNone || s.opt.PerInstruction || end || next.trap != ITypeNone ||
			s.privOf(next) != b.Priv {
			b.IType = s.fold(it)
			b.SIJump = sij && it.Uninferable()
			return b, nil
		}
	}
}

// advance reads the next row into s.cur (or marks the end).
func (s *PCSource) advance() error {
	err := s.rows.next(&s.cur)
	if err == io.EOF {
		s.done, s.have = true, false
		return nil
	}
	return err
}

func (s *PCSource) fold(it IType) IType {
	if s.opt.AllJumps && (it == ITypeDirectJump || it == ITypeOtherDirect) {
		it = ITypeTaken
	}
	if s.opt.ITypeWidth == 3 {
		return it.To3Bit()
	}
	return it
}

// classify returns the itype of the instruction at pc followed by next,
// and whether next is a discontinuity the instruction cannot explain.
func (s *PCSource) classify(in riscv.Inst, pc, fall, next uint64, end bool) (IType, bool) {
	if !end && s.xlen == 32 {
		next &= 1<<32 - 1
	}
	switch in.Class {
	case riscv.ClassBranch:
		if end {
			return ITypeNotTaken, false
		}
		switch next {
		case in.Target(pc):
			return ITypeTaken, false
		case fall:
			return ITypeNotTaken, false
		}
		return ITypeNotTaken, true
	case riscv.ClassJump:
		it := ITypeOf(in, true)
		if s.opt.AllJumps && it == ITypeDirectCall {
			// a call stays a call: it pushes; the encoder reports it as taken
			it = ITypeDirectCall
		}
		if end || next == in.Target(pc) {
			return it, false
		}
		return it, true
	case riscv.ClassTableJump, riscv.ClassIndirect, riscv.ClassPopRet, riscv.ClassTrapReturn:
		return ITypeOf(in, true), false
	}
	// Linear, ecall, ebreak, unknown: fall through or trap.
	if end || next == fall {
		return ITypeNone, false
	}
	return ITypeNone, true
}

func lastSize(n uint8) uint8 {
	switch n {
	case 2:
		return 0
	case 4:
		return 1
	case 8:
		return 2
	}
	return 1 // 6-byte instructions do not fit the power-of-two encoding
}

// PCWriter writes one PC per line as 0x followed by lower-case hex. It
// formats each line in place in its own 256 KiB buffer, eight digits at
// a time (`rvtrace run --pcs` gives it the simulator's batches of
// retired PCs: WritePCs). The first error of the underlying writer is
// returned by every later Write and WritePCs and by Flush.
type PCWriter struct {
	w   io.Writer
	buf []byte
	n   int   // bytes buffered
	err error // first write error
}

// maxPCLine is the longest PC line: "0x", 16 digits and a newline.
const maxPCLine = 19

// NewPCWriter returns a PC list writer on w.
func NewPCWriter(w io.Writer) *PCWriter {
	return &PCWriter{w: w, buf: make([]byte, 256<<10)}
}

// hex8 returns the 8 lower-case hex digits of x as ASCII bytes, the most
// significant digit in the low byte (the order of a little-endian store).
func hex8(x uint32) uint64 {
	v := uint64(x)
	// spread the nibbles one a byte, the least significant in byte 0
	v = (v | v<<16) & 0x0000ffff0000ffff
	v = (v | v<<8) & 0x00ff00ff00ff00ff
	v = (v | v<<4) & 0x0f0f0f0f0f0f0f0f
	v = bits.ReverseBytes64(v)
	// '0'+d, and 'a'-'0'-10 = 39 more for the digits above 9
	above9 := (v + 0x0606060606060606) >> 4 & 0x0101010101010101
	return v + 0x3030303030303030 + above9*39
}

// put formats one PC line at p.buf[p.n:], which has room for maxPCLine
// bytes. The line is written with whole 8-byte stores of its digits
// (hex8), the leading zeros shifted out, and the newline after them.
func (p *PCWriter) put(pc uint64) {
	b := p.buf[p.n : p.n+maxPCLine]
	n := max((bits.Len64(pc)+3)/4, 1) // digits
	b[0], b[1] = '0', 'x'
	lo := hex8(uint32(pc))
	if n <= 8 {
		binary.LittleEndian.PutUint64(b[2:], lo>>(8*(8-n)))
	} else {
		binary.LittleEndian.PutUint64(b[2:], hex8(uint32(pc>>32))>>(8*(16-n)))
		binary.LittleEndian.PutUint64(b[n-6:], lo)
	}
	b[2+n] = '\n'
	p.n += n + 3
}

// Write writes one PC line.
func (p *PCWriter) Write(pc uint64) error {
	if p.err != nil {
		return p.err
	}
	if len(p.buf)-p.n < maxPCLine {
		if err := p.Flush(); err != nil {
			return err
		}
	}
	p.put(pc)
	return nil
}

// WritePCs writes a line for each PC of pcs, like Write.
func (p *PCWriter) WritePCs(pcs []uint64) error {
	for len(pcs) > 0 {
		if p.err != nil {
			return p.err
		}
		room := (len(p.buf) - p.n) / maxPCLine
		if room == 0 {
			if err := p.Flush(); err != nil {
				return err
			}
			continue
		}
		k := min(room, len(pcs))
		for _, pc := range pcs[:k] {
			p.put(pc)
		}
		pcs = pcs[k:]
	}
	return p.err
}

// Flush writes what is buffered.
func (p *PCWriter) Flush() error {
	if p.err != nil {
		return p.err
	}
	if p.n > 0 {
		m, err := p.w.Write(p.buf[:p.n])
		if err == nil && m < p.n {
			err = io.ErrShortWrite
		}
		p.n = 0
		p.err = err
	}
	return p.err
}

// PCListSink writes the PCs of the instructions in ingress blocks, one
// per line; it walks multi-instruction blocks through the image.
type PCListSink struct {
	w   *PCWriter
	img *image.Set
	c   io.Closer
}

// NewPCListSink returns an ingress sink writing a PC list to w. img may
// be nil when every block holds a single instruction.
func NewPCListSink(w io.Writer, img *image.Set) *PCListSink {
	s := &PCListSink{w: NewPCWriter(w), img: img}
	if c, ok := w.(io.Closer); ok {
		s.c = c
	}
	return s
}

// Block writes the block's PCs.
func (s *PCListSink) Block(b *Block) error {
	if b.IRetire == 0 {
		return nil
	}
	last := b.LastAddr()
	pc := b.IAddr
	for {
		if err := s.w.Write(pc); err != nil {
			return err
		}
		if pc >= last {
			return nil
		}
		if s.img == nil {
			return fmt.Errorf("PC list: block at %#x holds several instructions; the image is needed to list them", b.IAddr)
		}
		in, ok := s.img.Inst(pc)
		if !ok || in.Len == 0 {
			return fmt.Errorf("PC list: address %#x is not in the program image", pc)
		}
		pc += uint64(in.Len)
	}
}

// Close flushes the output.
func (s *PCListSink) Close() error {
	err := s.w.Flush()
	if s.c != nil {
		if cerr := s.c.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
