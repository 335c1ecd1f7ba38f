package etrace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sim"
)

// algState returns a copy of e's algorithm state: e without its
// configuration, output, image and block cache.
func algState(e *Encoder) Encoder {
	x := *e
	x.cfg, x.codec, x.out, x.img, x.OnPacket, x.onPkt, x.blocks, x.noQuiet, x.noRuns = Config{}, nil, nil, nil, nil, Packet{}, blockCache{}, false, false
	if len(x.tail) == 0 {
		x.tail = nil
	}
	return x
}

// stateDiff returns the first field of the encoders' algorithm state
// (algState) that differs between a and b, or "".
func stateDiff(a, b *Encoder) string {
	x, y := algState(a), algState(b)
	if reflect.DeepEqual(x, y) {
		return ""
	}
	va, vb := reflect.ValueOf(x), reflect.ValueOf(y)
	for k := 0; k < va.NumField(); k++ {
		if s, t := fmt.Sprintf("%+v", va.Field(k)), fmt.Sprintf("%+v", vb.Field(k)); s != t {
			return fmt.Sprintf("%s %s, Block %s", va.Type().Field(k).Name, s, t)
		}
	}
	return "a difference fmt does not show"
}

// writeCounter counts the writes that reach it.
type writeCounter struct {
	w      bytes.Buffer
	writes int
}

func (c *writeCounter) Write(p []byte) (int, error) {
	c.writes++
	return c.w.Write(p)
}

// feedBranches gives bs to e as tracectl.Encoder.Blocks does, in batches
// of random sizes, with a notification (Notify) before a batch now and
// then and a TraceOff every ~50 batches; every other batch goes to
// Branches, the others to quietBlocks and Block as Branches gives them.
// ref gets the same blocks and calls one by one, through Block, and the
// state of the two is compared after each call; so are the writes that
// reached their writers (ew, rw): the same number during the blocks of
// the call, the last one (if any) during the last block taken (the
// caller looks at what the writes may have changed before the next
// block). It returns how many blocks quietBlocks took, of the batches it
// saw.
func feedBranches(e, ref *Encoder, ew, rw *writeCounter, bs []ingress.Block, r *rand.Rand) (quiet, seen int, err error) {
	pos := 0            // blocks given to ref
	before := rw.writes // ref's writes before block pos-1
	catchUp := func(upTo int, what string, writes int) error {
		from := rw.writes
		for ; pos < upTo; pos++ {
			before = rw.writes
			if err := ref.Block(&bs[pos]); err != nil {
				return fmt.Errorf("block %d, Block: %w", pos, err)
			}
		}
		if d := stateDiff(e, ref); d != "" {
			return fmt.Errorf("after block %d (%s): %s", upTo-1, what, d)
		}
		if writes != rw.writes-from || writes > 0 && before == rw.writes {
			return fmt.Errorf("after block %d (%s): %d writes; Block %d, %d of them in the last block",
				upTo-1, what, writes, rw.writes-from, rw.writes-before)
		}
		return nil
	}
	for start, batchNo := 0, 0; start < len(bs); batchNo++ {
		n := min(1+r.IntN(300), len(bs)-start)
		batch := bs[start : start+n]
		at := start
		start += n
		switch x := r.IntN(100); {
		case x < 2:
			if err := e.TraceOff(); err != nil {
				return quiet, seen, err
			}
			if err := ref.TraceOff(); err != nil {
				return quiet, seen, err
			}
		case x < 10:
			e.Notify()
			ref.Notify()
		}
		for len(batch) > 0 {
			var k int
			what := "Branches"
			w0 := ew.writes
			if batchNo%2 == 0 {
				if k, err = e.Branches(batch); err != nil {
					return quiet, seen, err
				}
				if k == 0 {
					return quiet, seen, fmt.Errorf("block %d: Branches took none of %d", at, len(batch))
				}
			} else {
				var stop bool
				k, stop = e.quietBlocks(batch)
				quiet += k
				seen += k
				what = "quietBlocks"
				if k < len(batch) && !stop && e.err == nil {
					if err := e.Block(&batch[k]); err != nil {
						return quiet, seen, err
					}
					k++
					seen++
				}
				if k == 0 {
					return quiet, seen, fmt.Errorf("block %d: quietBlocks and Block took none of %d (%v)", at, len(batch), e.err)
				}
			}
			batch = batch[k:]
			at += k
			if err := catchUp(at, what, ew.writes-w0); err != nil {
				return quiet, seen, err
			}
		}
	}
	return quiet, seen, nil
}

// branchStream is a block stream of TestBranchesMatchBlock: its image,
// and whether quietBlocks must take most of its blocks in the baseline
// mode.
type branchStream struct {
	name   string
	img    *image.Set
	blocks []ingress.Block
	most   bool
}

// branchStreams returns the streams of TestBranchesMatchBlock: the
// simulator's blocks of coremark and of programs with traps, interrupts,
// trap returns and privilege changes (coalesced, and one per instruction
// for one of them; coremark and qsort also without an image, as a live
// run encodes them), the same with 3-bit itypes (which the image refines)
// and merged across not-taken branches (blocks with branches inside,
// which the block cache does not hold), and generated streams with
// privilege and context changes.
func branchStreams(t *testing.T) []branchStream {
	var out []branchStream
	progs := []string{"coremark.riscv", "qsort.riscv", "towers.riscv", "br_j_asm.riscv",
		"test_discon_branch_exception.riscv", "pmp.riscv", "dhrystone.riscv"}
	if testing.Short() {
		progs = []string{"coremark.riscv", "qsort.riscv", "test_discon_branch_exception.riscv", "pmp.riscv"}
	}
	for k, prog := range progs {
		img, blocks := runSim(t, prog, sim.Coalesced, 600_000)
		out = append(out, branchStream{prog, img, blocks, prog == "coremark.riscv" || prog == "qsort.riscv"})
		if k < 2 {
			// as rvtrace run gives them: the port alone, no image
			out = append(out, branchStream{prog + "/no-image", nil, blocks, true})
		}
		threeBit := append([]ingress.Block(nil), blocks...)
		for i := range threeBit {
			threeBit[i].IType = threeBit[i].IType.To3Bit()
		}
		out = append(out, branchStream{prog + "/3-bit", img, threeBit, false})
		if k < 2 {
			out = append(out, branchStream{prog + "/merged", img, mergeNotTaken(blocks), false})
		}
		if k == 2 {
			img, blocks := runSim(t, prog, sim.PerInstruction, 100_000)
			out = append(out, branchStream{prog + "/per-instruction", img, blocks, false})
		}
	}
	img, pcs := loadT1(t)
	for _, in := range inputs {
		out = append(out, branchStream{"t1/" + in.name, img, genBlocks(t, img, pcs, in.o), false})
	}
	return out
}

// TestBranchesMatchBlock encodes block streams (branchStreams) with
// Branches and quietBlocks taking runs of them, as the simulator's
// batches reach the encoder through tracectl (the blocks Branches does
// not take going to Block, which takes the quiet ones one at a time
// through quietBlocks), and with every block given to Block's general
// path (noRuns), in every mode and both layouts, and requires the same state
// after every call (the branch map and count, the return stack, the
// predictor, the tail, the step waiting in the pipeline, the counts...),
// the same bytes and statistics at the end; and that quietBlocks takes
// most blocks of coremark and qsort in the modes it serves.
func TestBranchesMatchBlock(t *testing.T) {
	streams := branchStreams(t)
	served := 0
	for _, s := range streams {
		for _, v := range []Version{V2, V026} {
			for mi, m := range modes {
				if testing.Short() && s.name != "coremark.riscv" && mi%3 != int(len(s.name))%3 {
					continue
				}
				cfg := DefaultConfig()
				cfg.Version = v
				m.set(&cfg)
				if m.name == "implicit-exception" || m.name == "all" {
					cfg.Params.TVec = trapVector(s.blocks)
				}
				name := fmt.Sprintf("%s/%s/%s", s.name, v, m.name)
				var got, want writeCounter
				e, err := NewEncoder(&got, cfg, s.img)
				if err != nil {
					t.Fatal(err)
				}
				ref, err := NewEncoder(&want, cfg, s.img)
				if err != nil {
					t.Fatal(err)
				}
				ref.noRuns = true
				quiet, seen, err := feedBranches(e, ref, &got, &want, s.blocks, rand.New(rand.NewPCG(uint64(len(name)), 5)))
				if err != nil {
					t.Errorf("%s: %v", name, err)
					continue
				}
				if err := e.Close(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if err := ref.Close(); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !bytes.Equal(got.w.Bytes(), want.w.Bytes()) {
					t.Errorf("%s: %d bytes through Branches, %d through Block; they differ", name, got.w.Len(), want.w.Len())
				}
				if *e.Stats() != *ref.Stats() {
					t.Errorf("%s: stats %+v through Branches, %+v through Block", name, e.Stats(), ref.Stats())
				}
				if s.most && (m.name == "baseline" || m.name == "predictor" || m.name == "return-stack") {
					t.Logf("%s: quietBlocks took %d of %d blocks", name, quiet, seen)
					if quiet < seen*3/4 {
						t.Errorf("%s: quietBlocks took %d of %d blocks", name, quiet, seen)
					}
					served++
				}
			}
		}
	}
	if served < 4 {
		t.Fatalf("quietBlocks served %d streams and modes", served)
	}
}
