package image

import (
	"fmt"
	"sync/atomic"

	"github.com/rvtrace/rvtrace/riscv"
)

const (
	pageShift     = 12
	pageBytes     = 1 << pageShift // bytes of memory per instruction page
	pageHalfwords = pageBytes / 2
)

// instPage caches the decoding of every halfword of pageBytes of memory.
// It is built completely before it is published, so readers need no lock.
type instPage struct {
	inst [pageHalfwords]riscv.Inst
	ok   [pageHalfwords / 64]uint64 // bit set: inst is valid (fully mapped)
	runs atomic.Pointer[runTable]   // built on the first Run in the page
}

type runTable [pageHalfwords]atomic.Pointer[runEntry]

// page returns the cached instruction page holding addr and the index of
// addr in it, building the page when needed. It returns nil when addr is
// odd, not mapped, or in the zero-filled part of a segment (which has no
// page; see InstPtr).
func (s *Set) page(addr uint64) (*instPage, uint) {
	if addr&1 != 0 {
		return nil, 0
	}
	i := s.locate(addr)
	if i < 0 {
		return nil, 0
	}
	sp := &s.spans[i]
	off := addr - sp.start
	if off >= uint64(len(sp.data)) {
		return nil, 0
	}
	pi := off >> pageShift
	pg := sp.pages[pi].Load()
	if pg == nil {
		pg = s.buildPage(sp, int(pi))
	}
	return pg, uint(off&(pageBytes-1)) >> 1
}

// buildPage decodes page pi of sp and publishes it.
func (s *Set) buildPage(sp *span, pi int) *instPage {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pg := sp.pages[pi].Load(); pg != nil {
		return pg
	}
	pg := new(instPage)
	start := pi << pageShift
	end := min(start+pageBytes, len(sp.data))
	for off := start; off < end; off += 2 {
		var buf [8]byte
		n := copy(buf[:], sp.data[off:])
		if n < len(buf) {
			n = s.Read(sp.start+uint64(off), buf[:])
		}
		h := (off - start) >> 1
		if in, ok := s.decode(buf[:n]); ok {
			pg.inst[h] = in
			pg.ok[h>>6] |= 1 << (h & 63)
		}
	}
	sp.pages[pi].Store(pg)
	return pg
}

// decode decodes the instruction at the start of b, which holds the bytes
// mapped there (up to 8). ok is false when the instruction's length runs
// past b.
func (s *Set) decode(b []byte) (riscv.Inst, bool) {
	if len(b) < 2 {
		return riscv.Inst{}, false
	}
	lo := uint16(b[0]) | uint16(b[1])<<8
	n := riscv.Length(lo)
	switch {
	case n == 2 || n == 0: // 0: reserved long encoding, decoded as illegal
		return riscv.DecodeExt(uint32(lo), s.xlen, s.ext), true
	case len(b) < n:
		return riscv.Inst{}, false
	}
	raw := uint32(lo) | uint32(b[2])<<16 | uint32(b[3])<<24
	return riscv.DecodeExt(raw, s.xlen, s.ext), true
}

// Inst returns the decoded instruction at addr (riscv.Decode of the bits
// there, with [Set.XLEN]). ok is false when addr is odd or not mapped, or
// when the instruction there runs into unmapped memory.
//
// Any mapped memory can be decoded, not just executable segments; zero
// filled memory decodes as the (illegal) all-zero instruction. Lookups are
// an index into a cached page after the first lookup in the page, and do
// not allocate. [Set.InstPtr] is faster still: it does not copy the
// instruction.
func (s *Set) Inst(addr uint64) (riscv.Inst, bool) {
	if p := s.InstPtr(addr); p != nil {
		return *p, true
	}
	return riscv.Inst{}, false
}

// InstPtr is [Set.Inst] returning a pointer to the cached decoding, or nil
// where Inst's ok is false. The instruction is shared by all callers and
// must not be modified. It saves copying the 24-byte riscv.Inst, which
// costs more than the lookup itself.
func (s *Set) InstPtr(addr uint64) *riscv.Inst {
	if pg, h := s.page(addr); pg != nil {
		if pg.ok[h>>6]&(1<<(h&63)) != 0 {
			return &pg.inst[h]
		}
		return nil
	}
	// No page: odd, unmapped, or zero filled; there the two bytes at addr
	// (when mapped) are zero.
	var buf [2]byte
	if addr&1 == 0 && s.Read(addr, buf[:]) == 2 {
		return &s.zero
	}
	return nil
}

// Run is a straight-line run of instructions: from Start up to and
// including the first instruction whose class is not riscv.ClassLinear,
// the control-flow instruction ending the run (a branch, jump, call,
// return, trap return, ECALL or EBREAK).
type Run struct {
	Start     uint64     // address of the first instruction
	N         uint32     // instructions in the run, including the last
	Halfwords uint32     // total size in 16-bit units, including the last
	LastAddr  uint64     // address of the ending control-flow instruction
	Last      riscv.Inst // the ending instruction
}

// End returns the address just past the run, where execution continues
// when the last instruction does not transfer control (a not-taken branch).
func (r *Run) End() uint64 { return r.LastAddr + uint64(r.Last.Len) }

// Contains reports whether addr is the address of one of the run's
// instruction bytes.
func (r *Run) Contains(addr uint64) bool {
	return addr >= r.Start && addr-r.Start < 2*uint64(r.Halfwords)
}

// MaxRun is the longest run, in instructions, that [Set.Run] follows before
// giving up with an error.
const MaxRun = 1 << 20

// Error is the error [Set.Run] returns when the walk from Start cannot
// reach a control-flow instruction.
type Error struct {
	Start   uint64 // where the run started
	Addr    uint64 // where the walk stopped
	Reason  string // "unmapped", "misaligned", "illegal instruction 0x...", or that the run is too long
	tooLong bool
}

// Error formats the error as "image: run from START: REASON at ADDR".
func (e *Error) Error() string {
	if e.Start == e.Addr {
		return fmt.Sprintf("image: run at %#x: %s", e.Addr, e.Reason)
	}
	return fmt.Sprintf("image: run from %#x: %s at %#x", e.Start, e.Reason, e.Addr)
}

// runEntry is a cached result of Set.Run.
type runEntry struct {
	run Run
	err *Error
}

func (e *runEntry) result() (*Run, error) {
	if e.err != nil {
		return nil, e.err
	}
	return &e.run, nil
}

// Run returns the straight-line run starting at addr (see [Run]). The
// error is an [*Error] when the walk reaches unmapped memory, an illegal
// instruction, or more than [MaxRun] instructions before a control-flow
// instruction.
//
// Results are cached per start address: repeated calls return the same
// *Run, which must not be modified, without allocating.
func (s *Set) Run(addr uint64) (*Run, error) {
	pg, h := s.page(addr)
	if pg == nil {
		return s.walk(addr).result()
	}
	rt := pg.runs.Load()
	if rt != nil {
		if e := rt[h].Load(); e != nil {
			return e.result()
		}
	} else {
		rt = new(runTable)
		if !pg.runs.CompareAndSwap(nil, rt) {
			rt = pg.runs.Load()
		}
	}
	e := s.walk(addr)
	if !rt[h].CompareAndSwap(nil, e) {
		e = rt[h].Load()
	}
	return e.result()
}

// cachedRun returns the cached run starting at addr, or nil.
func cachedRun(pg *instPage, h uint) *runEntry {
	if rt := pg.runs.Load(); rt != nil {
		return rt[h].Load()
	}
	return nil
}

// walk follows the instructions from start to the end of the run. Runs
// already cached at addresses on the way are used to cut the walk short.
func (s *Set) walk(start uint64) *runEntry {
	fail := func(addr uint64, reason string) *runEntry {
		return &runEntry{err: &Error{Start: start, Addr: addr, Reason: reason}}
	}
	if start&1 != 0 {
		return fail(start, "misaligned")
	}
	var (
		a        = start
		n, hw    uint32
		useCache = true
	)
	for {
		pg, h := s.page(a)
		var in *riscv.Inst
		if pg != nil {
			if n > 0 && useCache {
				if e := cachedRun(pg, h); e != nil {
					switch {
					case e.err != nil && !e.err.tooLong:
						return fail(e.err.Addr, e.err.Reason)
					case e.err == nil && uint64(n)+uint64(e.run.N) <= MaxRun:
						return &runEntry{run: Run{
							Start: start, N: n + e.run.N, Halfwords: hw + e.run.Halfwords,
							LastAddr: e.run.LastAddr, Last: e.run.Last,
						}}
					}
					// Too long: walk on without the cache, so that the
					// error names the same address however it was found.
					useCache = false
				}
			}
			if pg.ok[h>>6]&(1<<(h&63)) != 0 {
				in = &pg.inst[h]
			}
		} else {
			in = s.InstPtr(a)
		}
		switch {
		case in == nil:
			return fail(a, "unmapped")
		case in.Class == riscv.ClassIllegal:
			return fail(a, fmt.Sprintf("illegal instruction %s", rawHex(*in)))
		case n == MaxRun:
			e := fail(a, fmt.Sprintf("no control-flow instruction in %d instructions", MaxRun))
			e.err.tooLong = true
			return e
		}
		n++
		hw += uint32(in.Len) / 2
		if in.Class != riscv.ClassLinear {
			return &runEntry{run: Run{Start: start, N: n, Halfwords: hw, LastAddr: a, Last: *in}}
		}
		if in.Len == 0 || a+uint64(in.Len) < a {
			return fail(a, "unmapped")
		}
		a += uint64(in.Len)
	}
}

// rawHex formats an instruction's bits as objdump does: 4 hex digits for a
// 16-bit instruction (or the first parcel of a reserved long encoding), 8
// for longer ones.
func rawHex(in riscv.Inst) string {
	if in.Len <= 2 {
		return fmt.Sprintf("0x%04x", in.Raw&0xffff)
	}
	return fmt.Sprintf("0x%08x", in.Raw)
}
