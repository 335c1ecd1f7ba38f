package sim

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
)

// peekSink records, for each block, what the Machine's methods for
// ingress-port tools say while it is reported.
type peekSink struct {
	m      *Machine
	blocks []ingress.Block
	starts []uint64        // BlockInstret
	gens   []uint64        // TranslationGen
	pages  map[uint64]bool // the physical pages the blocks started in
	bad    int             // blocks whose FetchFrame differs from PeekCode's address
}

func (s *peekSink) Block(b *ingress.Block) error {
	s.blocks = append(s.blocks, *b)
	s.starts = append(s.starts, s.m.BlockInstret(0))
	s.gens = append(s.gens, s.m.TranslationGen(0))
	if b.IRetire > 0 {
		var buf [2]byte
		pa, _, ok := s.m.PeekCode(0, b.IAddr, b.Priv, buf[:])
		fa, fok := s.m.FetchFrame(0, b.IAddr, b.Priv)
		if ok != fok || pa != fa {
			s.bad++
		}
		if ok {
			if s.pages == nil {
				s.pages = map[uint64]bool{}
			}
			s.pages[pa&^0xfff] = true
		}
	}
	return nil
}

func (s *peekSink) Close() error { return nil }

// TestBlockInstret runs the Sv39 program (M-mode building page tables,
// S-mode at a virtual alias) with the ingress port in per-instruction and
// coalesced modes: BlockInstret is the index of each block's first
// instruction in the retired sequence (per-instruction blocks give the
// sequence), FetchFrame agrees with PeekCode at every block, and the
// translation generation changes (satp writes, sfence.vma, walks) and
// stays the same between them.
func TestBlockInstret(t *testing.T) {
	run := func(mode BlockMode) *peekSink {
		m, err := New(Config{MaxInstret: 1e6, Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LoadELF(filepath.Join(vmDir, "sv39.elf")); err != nil {
			t.Fatal(err)
		}
		s := &peekSink{m: m}
		if err := m.SetIngress(0, s); err != nil {
			t.Fatal(err)
		}
		if res, err := m.Run(); err != nil || res.ExitCode != 0 {
			t.Fatalf("run: %v, exit %d", err, res.ExitCode)
		}
		return s
	}
	per := run(PerInstruction)
	var pcs []uint64
	for i, b := range per.blocks {
		if b.IRetire == 0 {
			continue
		}
		if per.starts[i] != uint64(len(pcs)) {
			t.Fatalf("per-instruction block %d at %#x: BlockInstret %d, want %d", i, b.IAddr, per.starts[i], len(pcs))
		}
		pcs = append(pcs, b.IAddr)
	}
	co := run(Coalesced)
	prev := uint64(0)
	changes := 0
	for i, b := range co.blocks {
		s := co.starts[i]
		if s < prev || b.IRetire > 0 && (s >= uint64(len(pcs)) || pcs[s] != b.IAddr) {
			t.Fatalf("coalesced block %d at %#x: BlockInstret %d (previous %d)", i, b.IAddr, s, prev)
		}
		prev = s
		if i > 0 && co.gens[i] != co.gens[i-1] {
			changes++
		}
	}
	if per.bad != 0 || co.bad != 0 {
		t.Errorf("FetchFrame differs from PeekCode at %d and %d blocks", per.bad, co.bad)
	}
	if changes < 3 || changes > len(co.blocks)/2 {
		t.Errorf("the translation generation changed at %d of %d blocks", changes, len(co.blocks))
	}
	t.Logf("%d instructions, %d coalesced blocks, %d generation changes", len(pcs), len(co.blocks), changes)
}

// TestCodeWriteHookHost: writes by the host or a device (WriteMem, as
// virtio DMA) into pages holding code that ran are reported to the
// code-write hook, once per page, with the first address written in it;
// writes into other pages are not.
func TestCodeWriteHookHost(t *testing.T) {
	m, err := New(Config{MaxInstret: 1e6})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(filepath.Join(vmDir, "sv39.elf")); err != nil {
		t.Fatal(err)
	}
	s := &peekSink{m: m}
	if err := m.SetIngress(0, s); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(); err != nil {
		t.Fatal(err)
	}
	code := s.pages
	var got, want []uint64
	m.SetCodeWriteHook(func(pa uint64) { got = append(got, pa) })
	const lo, hi = 0x80000010, 0x80004000
	m.WriteMem(lo, make([]byte, hi-lo))
	for p := uint64(0x80000000); p < hi; p += 0x1000 {
		if code[p] {
			want = append(want, max(p, lo))
		}
	}
	if len(want) == 0 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("hook called with %#x, want %#x", got, want)
	}
	got = nil
	m.WriteMem(0x80400000, []byte{1}) // no code there
	if len(got) != 0 {
		t.Errorf("a write into a data page: hook called with %#x", got)
	}
}
