package etrace

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

const corpus = "../../shared/corpus/ntrace-refcode"

var (
	t1Once sync.Once
	t1Img  *image.Set
	t1PCs  []uint64
	t1Err  error
)

// loadT1 returns the t1 program and its retired PCs, or skips the test.
func loadT1(t testing.TB) (*image.Set, []uint64) {
	t.Helper()
	t1Once.Do(func() {
		if _, err := os.Stat(corpus + "/t1/test.elf"); err != nil {
			t1Err = err
			return
		}
		t1Img = image.NewSet()
		if t1Err = t1Img.AddELF(corpus + "/t1/test.elf"); t1Err != nil {
			return
		}
		t1PCs, t1Err = readPCs(corpus + "/t1/test-PCONLY.txt")
	})
	if os.IsNotExist(t1Err) {
		t.Skipf("corpus not present (%v)", t1Err)
	}
	if t1Err != nil {
		t.Fatal(t1Err)
	}
	return t1Img, t1PCs
}

func readPCs(path string) ([]uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var pcs []uint64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		s := strings.TrimSpace(sc.Text())
		if s == "" {
			continue
		}
		if i := strings.IndexByte(s, ','); i >= 0 {
			s = s[:i]
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(strings.ToLower(s), "0x"), 16, 64)
		if err != nil {
			return nil, err
		}
		pcs = append(pcs, v)
	}
	return pcs, sc.Err()
}

// genOpts controls how blocks are made from a PC list.
type genOpts struct {
	single    bool   // one instruction per block (single retirement)
	trapEvery int    // insert a trap after every n-th instruction (handler: the next PC)
	trapAt    uint64 // insert an interrupt before each execution of this address
	privEvery int    // change privilege every n blocks
	ctxEvery  int    // precise context change every n blocks
	imprecise bool   // ... reported imprecisely instead
	threeBit  bool   // report 3-bit itypes
	// traps are zero-retirement trap blocks to insert: traps[k] comes
	// after the first traps[k].at instructions (a decoded flow's traps)
	traps []flowTrap
}

// flowTrap is a trap of a decoded flow, after its first at instructions.
type flowTrap struct {
	at  int
	blk ingress.Block
}

// itypeFor returns the 4-bit itype of in at pc followed by next.
func itypeFor(in riscv.Inst, pc, next uint64) ingress.IType {
	taken := next != in.Next(pc)
	if in.Class == riscv.ClassBranch {
		if taken {
			return ingress.ITypeTaken
		}
		return ingress.ITypeNotTaken
	}
	return itypeOf(&in, taken)
}

// genBlocks derives ingress blocks from consecutive PCs and the program.
func genBlocks(t testing.TB, img *image.Set, pcs []uint64, o genOpts) []ingress.Block {
	t.Helper()
	var out []ingress.Block
	var cur ingress.Block
	open := false
	priv := ingress.PrivM
	var ctx uint64
	nblk := 0
	trapN := 0
	emit := func() {
		out = append(out, cur)
		open = false
		nblk++
	}
	ti := 0
	addTraps := func(at int) {
		for ; ti < len(o.traps) && o.traps[ti].at == at; ti++ {
			tb := o.traps[ti].blk
			tb.Priv, tb.Context = priv, ctx
			out = append(out, tb)
		}
	}
	addTraps(0)
	for i, pc := range pcs {
		in, ok := img.Inst(pc)
		if !ok {
			t.Fatalf("no instruction at %#x", pc)
		}
		if o.trapAt != 0 && pc == o.trapAt && i > 0 && !open {
			out = append(out, ingress.Block{IAddr: pc, IType: ingress.ITypeInterrupt, Cause: 11, Priv: priv, Context: ctx})
		}
		if !open {
			cur = ingress.Block{IAddr: pc, Priv: priv, Context: ctx}
			if o.privEvery > 0 && nblk > 0 && nblk%o.privEvery == 0 {
				priv ^= ingress.PrivM ^ ingress.PrivU
				cur.Priv = priv
			}
			if o.ctxEvery > 0 && nblk > 0 && nblk%o.ctxEvery == 0 {
				ctx++
				cur.Context = ctx
				cur.CType = ingress.CTypePrecise
				if o.imprecise {
					cur.CType = ingress.CTypeImprecise
				}
			}
			open = true
		}
		cur.IRetire += uint32(in.Len) / 2
		cur.ILastSize = 0
		if in.Len == 4 {
			cur.ILastSize = 1
		}
		next := in.Next(pc)
		last := i == len(pcs)-1
		if !last {
			next = pcs[i+1]
		}
		flowTrap := ti < len(o.traps) && o.traps[ti].at == i+1
		if flowTrap {
			// the trap's EPC follows the instruction (unless it is
			// the instruction itself)
			next = in.Next(pc)
			if epc := o.traps[ti].blk.IAddr; epc != pc {
				next = epc
			}
		}
		it := itypeFor(in, pc, next)
		if !last && !flowTrap && next != in.Next(pc) && in.Class == riscv.ClassLinear {
			it = ingress.ITypeInterrupt // an unexplained discontinuity: a trap
			cur.Cause = 7
		}
		if in.Class == riscv.ClassIndirect && i > 0 {
			if p, ok := img.Inst(pcs[i-1]); ok && pcs[i-1]+uint64(p.Len) == pc && p.Rd == in.Rs1 && in.Rs1 != 0 {
				switch p.Op.String() {
				case "lui", "auipc", "c.lui":
					cur.SIJump = true
				}
			}
		}
		if o.threeBit {
			it = it.To3Bit()
		}
		cur.IType = it
		trap := o.trapEvery > 0 && i%o.trapEvery == o.trapEvery-1 && !last
		if it != ingress.ITypeNone || in.Class != riscv.ClassLinear || o.single || last || trap || flowTrap {
			if o.threeBit && in.Class == riscv.ClassJump {
				// inferable jumps end their block also on a 3-bit port
			}
			emit()
			if flowTrap {
				addTraps(i + 1)
			}
			if trap {
				trapN++
				tb := ingress.Block{IAddr: next, Priv: priv, Context: ctx, Cause: uint64(trapN % 13), TVal: uint64(i)}
				tb.IType = ingress.ITypeInterrupt
				if trapN%2 == 0 {
					tb.IType = ingress.ITypeException
				}
				out = append(out, tb)
				if trapN%5 == 0 { // a second trap before the handler runs
					tb.IType = ingress.ITypeInterrupt
					out = append(out, tb)
				}
			}
		}
	}
	return out
}

// pcSink collects the decoded flow as a PC list.
type pcSink struct {
	img    *image.Set
	pcs    []uint64
	events []flow.Event
	keep   bool
	err    error
}

func (s *pcSink) Event(e *flow.Event) error {
	if s.keep || e.Kind == flow.KindGap {
		ev := *e
		s.events = append(s.events, ev)
	}
	if e.Kind != flow.KindRange {
		return nil
	}
	a := e.Start
	for n := uint64(0); n < e.N; n++ {
		s.pcs = append(s.pcs, a)
		in, ok := s.img.Inst(a)
		if !ok {
			s.err = fmt.Errorf("range %v: no instruction at %#x", e, a)
			return nil
		}
		if n == e.N-1 && a != e.Last && s.err == nil {
			s.err = fmt.Errorf("range %v ends at %#x", e, a)
		}
		a = in.Next(a)
	}
	return nil
}

func (s *pcSink) Close() error { return nil }

// encode runs blocks through an encoder (with optional gating calls from
// gate) and returns the bytes.
func encode(t testing.TB, cfg Config, img *image.Set, blocks []ingress.Block) ([]byte, *Stats) {
	t.Helper()
	var buf bytes.Buffer
	e, err := NewEncoder(&buf, cfg, img)
	if err != nil {
		t.Fatal(err)
	}
	for i := range blocks {
		if err := e.Block(&blocks[i]); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), e.Stats()
}

// decodePCs decodes data and returns the PCs.
func decodePCs(t testing.TB, cfg Config, img *image.Set, data []byte) *pcSink {
	t.Helper()
	s := &pcSink{img: img}
	d, err := NewDecoder(img, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Decode(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	return s
}

// retired returns the PCs of the instructions the blocks retire.
func retired(t testing.TB, img *image.Set, blocks []ingress.Block) []uint64 {
	var pcs []uint64
	for _, b := range blocks {
		a := b.IAddr
		end := b.NextAddr()
		for a < end {
			pcs = append(pcs, a)
			in, ok := img.Inst(a)
			if !ok {
				t.Fatalf("no instruction at %#x", a)
			}
			a += uint64(in.Len)
		}
	}
	return pcs
}

// comparePCs reports the first difference between two PC lists.
func comparePCs(t testing.TB, name string, got, want []uint64) bool {
	t.Helper()
	n := len(got)
	if len(want) < n {
		n = len(want)
	}
	for i := 0; i < n; i++ {
		if got[i] != want[i] {
			lo := i - 3
			if lo < 0 {
				lo = 0
			}
			t.Errorf("%s: PC %d is %#x, want %#x (got %x, want %x)", name, i, got[i], want[i], got[lo:min(i+4, len(got))], want[lo:min(i+4, len(want))])
			return false
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d PCs, want %d", name, len(got), len(want))
		return false
	}
	return true
}

// roundTrip encodes blocks with cfg (and encImg, which may be nil),
// decodes them with img and compares the PCs with want (computed from the
// blocks when nil).
func roundTrip(t testing.TB, name string, cfg Config, encImg, img *image.Set, blocks []ingress.Block, want []uint64) bool {
	t.Helper()
	if want == nil {
		want = retired(t, img, blocks)
	}
	data, _ := encode(t, cfg, encImg, blocks)
	s := decodePCs(t, cfg, img, data)
	if s.err != nil {
		t.Errorf("%s: %v", name, s.err)
		return false
	}
	for _, e := range s.events {
		t.Errorf("%s: %v", name, &e)
		return false
	}
	return comparePCs(t, name, s.pcs, want)
}
