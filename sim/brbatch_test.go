package sim

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
)

// portRecord is one block as an ingress sink saw it, with what the
// machine showed while the sink took it.
type portRecord struct {
	hart      int
	b         ingress.Block
	blockRet  uint64 // Machine.BlockInstret
	instret   uint64 // the hart's Instret
	cycles    uint64 // the hart's Cycles
	pc        uint64 // the hart's PC
	inBatch   bool   // given to Blocks (BlockInstret then is the first block's only)
	batchHead bool   // the first block of a Blocks call
}

// portRecorder records the blocks of one hart into a shared list.
type portRecorder struct {
	m    *Machine
	hart int
	out  *[]portRecord
}

func (r *portRecorder) Block(b *ingress.Block) error {
	h := r.m.Hart(r.hart)
	*r.out = append(*r.out, portRecord{hart: r.hart, b: *b, blockRet: r.m.BlockInstret(r.hart), instret: h.Instret(), cycles: h.Cycles(), pc: h.PC()})
	return nil
}

func (r *portRecorder) Close() error { return nil }

// batchRecorder is a portRecorder that takes batches (BlockBatcher).
type batchRecorder struct {
	portRecorder
	calls int
}

func (r *batchRecorder) Blocks(bs []ingress.Block) error {
	r.calls++
	h := r.m.Hart(r.hart)
	for i := range bs {
		*r.out = append(*r.out, portRecord{hart: r.hart, b: bs[i], blockRet: r.m.BlockInstret(r.hart),
			instret: h.Instret(), cycles: h.Cycles(), pc: h.PC(), inBatch: true, batchHead: i == 0})
	}
	return nil
}

// runPort runs c with every hart's ingress port recorded: batch selects
// the BlockBatcher recorder, noBatch forces the interpreter loop to leave
// at every jump and branch (the code before Hart.brBatch).
func runPort(t *testing.T, c pcCase, batch, noBatch bool) ([]portRecord, Result, int, error) {
	t.Helper()
	m, err := New(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.noBrBatch = noBatch
	c.load(t, m)
	var out []portRecord
	var brs []*batchRecorder
	for h := 0; h < m.NumHarts(); h++ {
		var s ingress.Sink = &portRecorder{m, h, &out}
		if batch {
			br := &batchRecorder{portRecorder: portRecorder{m, h, &out}}
			brs = append(brs, br)
			s = br
		}
		if err := m.SetIngress(h, s); err != nil {
			t.Fatal(err)
		}
	}
	res, err := m.Run()
	calls := 0
	for _, br := range brs {
		calls += br.calls
	}
	return out, res, calls, err
}

// TestBranchBatchMatchesLoop: the interpreter loop that records the
// ingress port's jumps and branches and reports them when it leaves
// (Hart.brBatch, drain) gives the sink the blocks the loop that leaves at
// each gives, in the same order across harts, on programs that take every
// path of the interpreter (pcCases); a sink taking them one by one sees
// the hart's instret and cycle counts, pc and BlockInstret of each block,
// and a BlockBatcher takes them in batches (BlockInstret the first
// block's, the hart's counts and pc those at the last).
func TestBranchBatchMatchesLoop(t *testing.T) {
	for _, c := range pcCases(t) {
		t.Run(c.name, func(t *testing.T) {
			want, wres, _, werr := runPort(t, c, false, true)
			if len(want) == 0 {
				t.Fatalf("no block (run: %v)", werr)
			}
			for _, batch := range []bool{false, true} {
				got, res, calls, err := runPort(t, c, batch, false)
				if fmt.Sprint(err) != fmt.Sprint(werr) || res.Instret != wres.Instret || res.ExitCode != wres.ExitCode ||
					fmt.Sprint(res.Harts) != fmt.Sprint(wres.Harts) {
					t.Fatalf("batch sink %v: run %d instructions, exit %d, %v, harts %+v; loop leaving at each: %d, %d, %v, %+v",
						batch, res.Instret, res.ExitCode, err, res.Harts, wres.Instret, wres.ExitCode, werr, wres.Harts)
				}
				if len(got) != len(want) {
					t.Fatalf("batch sink %v: %d blocks, want %d", batch, len(got), len(want))
				}
				inBatch := 0
				for i := range got {
					g, w := got[i], want[i]
					if g.hart != w.hart || g.b != w.b {
						t.Fatalf("batch sink %v: block %d: hart %d %+v, want hart %d %+v", batch, i, g.hart, g.b, w.hart, w.b)
					}
					switch {
					case !g.inBatch:
						if g.blockRet != w.blockRet || g.instret != w.instret || g.cycles != w.cycles || g.pc != w.pc {
							t.Fatalf("batch sink %v: block %d: BlockInstret %d, instret %d, cycles %d, pc %#x; want %d, %d, %d, %#x",
								batch, i, g.blockRet, g.instret, g.cycles, g.pc, w.blockRet, w.instret, w.cycles, w.pc)
						}
					default:
						inBatch++
						if g.batchHead && g.blockRet != w.blockRet {
							t.Fatalf("block %d, first of a batch: BlockInstret %d, want %d", i, g.blockRet, w.blockRet)
						}
						// the hart's counts are those after the batch's last block
						j := i
						for j+1 < len(got) && got[j+1].inBatch && !got[j+1].batchHead {
							j++
						}
						if g.instret != want[j].instret || g.cycles != want[j].cycles || g.pc != want[j].pc {
							t.Fatalf("block %d in a batch: instret %d, cycles %d, pc %#x; want those at its last block %d, %d, %#x",
								i, g.instret, g.cycles, g.pc, want[j].instret, want[j].cycles, want[j].pc)
						}
					}
				}
				if batch && (calls == 0 || inBatch < len(got)/2) && res.Instret > 100000 {
					t.Fatalf("%d Blocks calls took %d of %d blocks", calls, inBatch, len(got))
				}
				t.Logf("batch sink %v: %d blocks, %d in %d batches", batch, len(got), inBatch, calls)
			}
		})
	}
}

// failSink fails its n-th block (counting from 1), one by one or in a
// batch, and counts the blocks it was given after that.
type failSink struct {
	n, seen, after int
}

var errSinkFull = errors.New("sink full")

func (f *failSink) Block(b *ingress.Block) error {
	f.seen++
	if f.seen > f.n {
		f.after++
	}
	if f.seen == f.n {
		return errSinkFull
	}
	return nil
}

func (f *failSink) Close() error { return nil }

type failBatchSink struct{ failSink }

func (f *failBatchSink) Blocks(bs []ingress.Block) error {
	for i := range bs {
		if err := f.Block(&bs[i]); err != nil {
			return err
		}
	}
	return nil
}

// TestBranchBatchSinkError: a sink that fails in the middle of the
// recorded branches (one by one or in a batch) stops the run with its
// error, is given no block after it, and the hart stops before the
// loop's next exit (at most a ring of branches later).
func TestBranchBatchSinkError(t *testing.T) {
	if _, err := os.Stat(corpusDir); err != nil {
		t.Skip("corpus absent")
	}
	c := pcCase{"coremark", Config{MaxInstret: 2_000_000}, func(t *testing.T, m *Machine) {
		if err := m.LoadELF(filepath.Join(corpusDir, "elf", "coremark.riscv")); err != nil {
			t.Fatal(err)
		}
	}}
	ref, _, _, _ := runPort(t, c, false, false) // (to the instruction limit)
	for _, batch := range []bool{false, true} {
		for _, n := range []int{1, 2, 100, 1000, 12345} {
			m, err := New(Config{MaxInstret: 2_000_000})
			if err != nil {
				t.Fatal(err)
			}
			if err := m.LoadELF(filepath.Join(corpusDir, "elf", "coremark.riscv")); err != nil {
				t.Fatal(err)
			}
			var f *failSink
			var s ingress.Sink
			if batch {
				fb := &failBatchSink{failSink{n: n}}
				f, s = &fb.failSink, fb
			} else {
				f = &failSink{n: n}
				s = f
			}
			if err := m.SetIngress(0, s); err != nil {
				t.Fatal(err)
			}
			res, err := m.Run()
			if !errors.Is(err, errSinkFull) {
				t.Fatalf("batch %v, failing at block %d: run error %v", batch, n, err)
			}
			if f.after != 0 || f.seen != n {
				t.Fatalf("batch %v, failing at block %d: %d blocks given, %d after the failure", batch, n, f.seen, f.after)
			}
			if lim := ref[n-1+brRing].instret; res.Instret > lim {
				t.Fatalf("batch %v, failing at block %d (instret %d): the run went on to %d instructions, more than %d",
					batch, n, ref[n-1].instret, res.Instret, lim)
			}
		}
	}
}
