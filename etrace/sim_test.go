package etrace

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sim"
)

// recordSink keeps a copy of every block.
type recordSink struct{ blocks []ingress.Block }

func (r *recordSink) Block(b *ingress.Block) error { r.blocks = append(r.blocks, *b); return nil }
func (r *recordSink) Close() error                 { return nil }

type simRun struct {
	img    *image.Set
	blocks []ingress.Block
	err    error
}

var (
	simMu    sync.Mutex
	simCache = map[string]*simRun{}
)

// runSim runs a corpus program on the simulator and returns its image and
// ingress blocks (cached), or skips the test without the corpus.
func runSim(t testing.TB, name string, mode sim.BlockMode, max uint64) (*image.Set, []ingress.Block) {
	t.Helper()
	path := filepath.Join(corpus, "elf", name)
	if _, err := os.Stat(path); err != nil {
		t.Skipf("corpus not present (%v)", err)
	}
	key := fmt.Sprintf("%s/%v/%d", name, mode, max)
	simMu.Lock()
	defer simMu.Unlock()
	r := simCache[key]
	if r == nil {
		r = &simRun{}
		simCache[key] = r
		r.img = image.NewSet()
		if r.err = r.img.AddELF(path); r.err == nil {
			var m *sim.Machine
			if m, r.err = sim.New(sim.Config{Mode: mode, MaxInstret: max}); r.err == nil {
				if r.err = m.LoadELF(path); r.err == nil {
					rs := &recordSink{}
					if r.err = m.SetIngress(0, rs); r.err == nil {
						_, r.err = m.Run()
						if r.err != nil && strings.Contains(r.err.Error(), "instruction limit") {
							r.err = nil
						}
						r.blocks = rs.blocks
					}
				}
			}
		}
	}
	if r.err != nil {
		t.Fatalf("%s: %v", name, r.err)
	}
	return r.img, r.blocks
}

// simPrograms are run through every mode; the first three take traps.
var simPrograms = []string{
	"br_j_asm.riscv", "test_discon_branch_exception.riscv", "pmp.riscv",
	"median.riscv", "towers.riscv", "qsort.riscv", "multiply.riscv",
	"embench-crc32.riscv", "xrle.riscv", "dhrystone.riscv",
}

// TestRoundTripSimulator encodes the simulator's ingress blocks (with
// traps, interrupts and trap returns) in every mode, both layouts and
// both block modes, and checks the decoded PC sequence.
func TestRoundTripSimulator(t *testing.T) {
	progs := simPrograms
	if testing.Short() {
		progs = progs[:4]
	}
	for _, prog := range progs {
		for _, bm := range []sim.BlockMode{sim.Coalesced, sim.PerInstruction} {
			img, blocks := runSim(t, prog, bm, 3_000_000)
			want := retired(t, img, blocks)
			for _, v := range []Version{V2, V026} {
				for _, m := range modes {
					cfg := DefaultConfig()
					cfg.Version = v
					m.set(&cfg)
					if m.name == "implicit-exception" || m.name == "all" {
						cfg.Params.TVec = trapVector(blocks)
					}
					name := fmt.Sprintf("%s/%v/%s/%s", prog, bm, v, m.name)
					data, _ := encode(t, cfg, img, blocks)
					s := decodePCs(t, cfg, img, data)
					if s.err != nil {
						t.Errorf("%s: %v", name, s.err)
					}
					for _, e := range s.events {
						t.Errorf("%s: %v", name, &e)
						break
					}
					comparePCs(t, name, s.pcs, want)
				}
			}
		}
	}
}

// trapVector returns the most common trap handler address in blocks.
func trapVector(blocks []ingress.Block) uint64 {
	n := map[uint64]int{}
	for i := 0; i+1 < len(blocks); i++ {
		if blocks[i].IType.IsTrap() {
			n[blocks[i+1].IAddr]++
		}
	}
	var best uint64
	for a, c := range n {
		if c > n[best] {
			best = a
		}
	}
	return best
}

// TestSimulatorFlowTraps checks the trap events decoded from br_j_asm.
func TestSimulatorFlowTraps(t *testing.T) {
	img, blocks := runSim(t, "br_j_asm.riscv", sim.Coalesced, 3_000_000)
	cfg := DefaultConfig()
	data, _ := encode(t, cfg, img, blocks)
	s := &pcSink{img: img, keep: true}
	d, _ := NewDecoder(img, s, cfg)
	if err := d.Decode(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	var traps []flow.Event
	for _, e := range s.events {
		if e.Kind == flow.KindTrap {
			traps = append(traps, e)
		}
	}
	var want int
	for _, b := range blocks {
		if b.IType.IsTrap() {
			want++
		}
	}
	if len(traps) != want {
		t.Fatalf("%d trap events, want %d", len(traps), want)
	}
	for _, e := range traps {
		if !e.Interrupt && e.Cause == 2 && e.Addr != 0x80000222 {
			t.Errorf("illegal instruction trap EPC %#x, want 0x80000222", e.Addr)
		}
	}
}
