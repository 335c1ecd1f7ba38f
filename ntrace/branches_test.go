package ntrace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/sim"
)

// blockList records a hart's ingress blocks.
type blockList struct{ out []ingress.Block }

func (l *blockList) Block(b *ingress.Block) error { l.out = append(l.out, *b); return nil }
func (l *blockList) Close() error                 { return nil }

// simBlocks runs the corpus program name for at most limit instructions
// and returns its ingress blocks (coalesced, as rvtrace run gives them).
func simBlocks(t *testing.T, name string, limit uint64) []ingress.Block {
	t.Helper()
	elf := corpus.Path(t, "ntrace-refcode/elf/"+name+".riscv")
	m, err := sim.New(sim.Config{MaxInstret: limit})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(elf); err != nil {
		t.Fatal(err)
	}
	var l blockList
	if err := m.SetIngress(0, &l); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Run(); err != nil && limit == 0 {
		t.Fatal(err)
	}
	return l.out
}

// branchesConfigs are the configs of TestFastBranchMatchesBlock, and
// those with direct calls and jumps taken as branches (AllJumps), 3-bit
// itypes and implicit return counted.
func branchesConfigs() map[string]Config {
	cfgs := map[string]Config{}
	for name, c := range Presets {
		cfgs[name] = c
	}
	for name, c := range plannerConfigs() {
		cfgs["planner-"+name] = c
	}
	for _, hb := range []int{2, 3, 5, 8} {
		for _, eager := range []bool{false, true} {
			cfgs[fmt.Sprintf("hist%d-eager=%v", hb, eager)] = Config{Mode: HTM, HistBits: hb, ICNTBits: 6, EagerHistFull: eager, Timestamps: true}
		}
	}
	c := Presets["ref-htm-rpt"]
	c.RepeatBranch, c.ICNTBits = true, 8
	cfgs["repeat-branch"] = c
	cfgs["fifo"] = Config{Mode: HTM, HistBits: 6, Timestamps: true, FIFOBytes: 2 * MaxStandardMessage, DrainBytes: 1, DrainCycles: 30}
	c = Presets["best"]
	c.AllJumps = true
	cfgs["best-all-jumps"] = c
	c = Presets["best"]
	c.ITypeWidth, c.ICNTBits, c.ImplicitReturn = 3, 7, ReturnOff
	cfgs["best-itype3-icnt7"] = c
	c = Presets["ref-htm-best"]
	c.ImplicitReturn, c.StackDepth = ReturnCount, 2
	cfgs["ref-htm-best-count"] = c
	return cfgs
}

// feedBatched gives bs to e as tracectl.Encoder.Blocks does: runs to
// Branches, the other blocks to Block, in batches of random sizes (a
// block with address 0 is a TraceOff, as in genBlocks), and gives ref
// the same blocks one by one after each call, comparing the state they
// leave. It returns how many blocks Branches took.
func feedBatched(e, ref *Encoder, bs []ingress.Block, r *rand.Rand) (int, error) {
	taken := 0
	in := append([]ingress.Block(nil), bs...)
	pos := 0 // blocks given to ref
	catchUp := func(upTo int) error {
		for ; pos < upTo; pos++ {
			c := bs[pos]
			var err error
			if c.IAddr == 0 {
				err = ref.TraceOff()
			} else {
				err = ref.Block(&c)
			}
			if err != nil {
				return fmt.Errorf("block %d, general path: %w", pos, err)
			}
		}
		if e.sawTime != ref.sawTime || e.curTime != ref.curTime || e.icnt != ref.icnt || e.sinceMsg != ref.sinceMsg ||
			e.priv != ref.priv || e.context != ref.context || e.histLen != ref.histLen || e.pat.buf.n != ref.pat.buf.n {
			return fmt.Errorf("after block %d: time seen %v, now %d, I-CNT %d, since the last message %d, priv %d, context %d, history %d/%d; general path %v, %d, %d, %d, %d, %d, %d/%d",
				upTo-1, e.sawTime, e.curTime, e.icnt, e.sinceMsg, e.priv, e.context, e.histLen, e.pat.buf.n,
				ref.sawTime, ref.curTime, ref.icnt, ref.sinceMsg, ref.priv, ref.context, ref.histLen, ref.pat.buf.n)
		}
		return nil
	}
	for start := 0; start < len(in); {
		n := min(1+r.IntN(200), len(in)-start)
		batch := in[start : start+n]
		at := start
		start += n
		for len(batch) > 0 {
			k := 1
			if batch[0].IAddr == 0 {
				if err := e.TraceOff(); err != nil {
					return taken, err
				}
			} else {
				end := 1
				for end < len(batch) && batch[end].IAddr != 0 {
					end++
				}
				var err error
				k, err = e.Branches(batch[:end])
				taken += k
				if err != nil {
					return taken, err
				}
				if k == 0 {
					if err := e.Block(&batch[0]); err != nil {
						return taken, err
					}
					k = 1
				}
			}
			batch = batch[k:]
			at += k
			if err := catchUp(at); err != nil {
				return taken, err
			}
		}
	}
	return taken, nil
}

// TestBranchesMatchBlock encodes block streams (generated ones, and the
// simulator's blocks of coremark and qsort) with Branches taking runs of
// them, as the simulator's batches reach it through tracectl, and with
// every block given to Block's general path (fastBranch off), and
// requires the same bytes: Branches repeats Block's work for quiet
// branches, jumps and calls and must not drift from it. Branches must
// take most blocks of the programs in the configs it serves.
func TestBranchesMatchBlock(t *testing.T) {
	streams := map[string][]ingress.Block{
		"generated": genBlocks(rand.New(rand.NewPCG(7, 9)), 30000),
		"coremark":  simBlocks(t, "coremark", 3_000_000),
		"qsort":     simBlocks(t, "qsort", 0),
	}
	// without time for a while (the FIFO model's sawTime)
	nt := genBlocks(rand.New(rand.NewPCG(8, 9)), 30000)
	for i := range nt[:len(nt)/2] {
		nt[i].Time = 0
	}
	streams["generated-untimed"] = nt
	cfgs := branchesConfigs()
	names := make([]string, 0, len(cfgs))
	for name := range cfgs {
		names = append(names, name)
	}
	sort.Strings(names)
	served := 0
	for _, name := range names {
		cfg := cfgs[name]
		for _, sname := range []string{"generated", "generated-untimed", "coremark", "qsort"} {
			blocks := streams[sname]
			var on, off bytes.Buffer
			a, err := NewEncoder(&on, cfg)
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			b, err := NewEncoder(&off, cfg)
			if err != nil {
				t.Fatal(err)
			}
			b.fastBr = false
			taken, err := feedBatched(a, b, blocks, rand.New(rand.NewPCG(3, uint64(len(name)))))
			if err != nil {
				t.Fatalf("%s, %s: %v", name, sname, err)
			}
			if err := a.Close(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := b.Close(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			x, y := on.Bytes(), off.Bytes()
			if !bytes.Equal(x, y) {
				i := 0
				for i < len(x) && i < len(y) && x[i] == y[i] {
					i++
				}
				t.Errorf("%s, %s: batched output (%d bytes) differs from the general path's (%d bytes) at byte %d",
					name, sname, len(x), len(y), i)
			}
			if fmt.Sprint(a.st) != fmt.Sprint(b.st) {
				t.Errorf("%s, %s: stats %+v, general path %+v", name, sname, a.st, b.st)
			}
			if a.fastBr && sname == "coremark" && !cfg.Timestamps && cfg.FIFOBytes == 0 {
				if taken < len(blocks)*3/4 {
					t.Errorf("%s, %s: Branches took %d of %d blocks", name, sname, taken, len(blocks))
				}
				served++
			}
		}
	}
	if served < 10 {
		t.Fatalf("Branches served %d configs", served)
	}
}
