package ntrace

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/sim"
)

// twinSink feeds every block to two encoders of the same configuration:
// one with the production record planner and one with the reference
// planner (patterns_ref_test.go).
type twinSink struct {
	t           testing.TB
	fast, ref   *Encoder
	fastB, refB bytes.Buffer
	blocks      int
}

func newTwin(t testing.TB, cfg Config) *twinSink {
	t.Helper()
	tw := &twinSink{t: t}
	var err error
	if tw.fast, err = NewEncoder(&tw.fastB, cfg); err != nil {
		t.Fatal(err)
	}
	if tw.ref, err = NewEncoder(&tw.refB, cfg); err != nil {
		t.Fatal(err)
	}
	tw.ref.refPat = &refPlanner{}
	return tw
}

func (tw *twinSink) Block(b *ingress.Block) error {
	tw.blocks++
	c := *b // an encoder never changes a block, but make sure
	ef := tw.fast.Block(b)
	er := tw.ref.Block(&c)
	if (ef == nil) != (er == nil) {
		return fmt.Errorf("block %d: planner error %v, reference %v", tw.blocks, ef, er)
	}
	return ef
}

func (tw *twinSink) TraceOff() error {
	if err := tw.fast.TraceOff(); err != nil {
		return err
	}
	return tw.ref.TraceOff()
}

func (tw *twinSink) Close() error {
	if err := tw.fast.Close(); err != nil {
		return err
	}
	return tw.ref.Close()
}

// check fails the test when the two traces differ, naming the first
// differing byte.
func (tw *twinSink) check(name string) {
	tw.t.Helper()
	a, b := tw.fastB.Bytes(), tw.refB.Bytes()
	if bytes.Equal(a, b) {
		return
	}
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	tw.t.Errorf("%s: planner output (%d bytes) differs from the reference planner's (%d bytes) at byte %d",
		name, len(a), len(b), i)
}

// plannerConfigs are the configurations the planner is compared in: the
// best preset, and variants that change its decisions (a short HREPEAT
// caps runs, timestamps and a FIFO change when records are sent or
// dropped, Ownership messages and periodic syncs cut the history).
func plannerConfigs() map[string]Config {
	best := Presets["best"]
	cfgs := map[string]Config{"best": best}
	for _, b := range []int{1, 2, 3, 5, 7, 12} {
		c := best
		c.HRepeatBits = b
		cfgs[fmt.Sprintf("hrepeat%d", b)] = c
	}
	c := best
	c.Timestamps, c.Context = true, true
	cfgs["time-context"] = c
	c = best
	c.SyncMode, c.SyncMax = SyncMessages, 0
	cfgs["sync-messages"] = c
	c = best
	c.SyncMode, c.SyncMax = SyncHalfwords, 4
	cfgs["sync-halfwords"] = c
	c = best
	c.FIFOBytes, c.DrainBytes, c.DrainCycles = 2*MaxStandardMessage, 1, 40
	cfgs["fifo"] = c
	c = best
	c.HistBits, c.ICNTBits, c.ImplicitReturn = 16, 8, ReturnOff
	cfgs["narrow"] = c
	return cfgs
}

// genBlocks generates a block stream of about n branch outcomes that
// exercises the planner: random and biased outcomes, loops of every period
// up to 40 (beyond the 31 bits of a record) with and without noise, nested
// loops, long runs, and indirect jumps, traps, privilege changes and trace
// stops in between, which make the encoder take the history.
func genBlocks(r *rand.Rand, n int) []ingress.Block {
	var out []ingress.Block
	addr := uint64(0x80000000)
	tm := uint64(0)
	put := func(it ingress.IType, priv ingress.Priv) {
		tm += uint64(1 + r.IntN(4))
		ret := uint32(2 + 2*r.IntN(6))
		out = append(out, ingress.Block{IAddr: addr, IRetire: ret, IType: it, ILastSize: 1, Priv: priv, Time: tm})
		addr = 0x80000000 + uint64(r.IntN(1<<12))*4
	}
	priv := ingress.PrivM
	bit := func(b bool) {
		if b {
			put(ingress.ITypeTaken, priv)
		} else {
			put(ingress.ITypeNotTaken, priv)
		}
	}
	pattern := func(p int) []bool {
		pat := make([]bool, p)
		for i := range pat {
			pat[i] = r.IntN(2) == 0
		}
		return pat
	}
	bits := 0
	for bits < n {
		switch r.IntN(12) {
		case 0, 1: // random outcomes, sometimes biased
			k, bias := 1+r.IntN(300), r.IntN(10)
			for j := 0; j < k; j++ {
				bit(r.IntN(10) >= bias)
			}
			bits += k
		case 2, 3, 4: // a loop of period 1..40, sometimes noisy
			pat := pattern(1 + r.IntN(40))
			reps := 1 + r.IntN(200)
			if r.IntN(8) == 0 {
				reps += r.IntN(3000)
			}
			noise := 0
			if r.IntN(3) == 0 {
				noise = 1 + r.IntN(500)
			}
			for j := 0; j < reps; j++ {
				for _, b := range pat {
					if noise > 0 && r.IntN(noise) == 0 {
						b = !b
					}
					bit(b)
				}
			}
			bits += reps * len(pat)
		case 5: // nested loops: an inner pattern, then an outer exit bit
			inner, outer := pattern(1+r.IntN(8)), 1+r.IntN(60)
			k := 1 + r.IntN(9)
			for o := 0; o < outer; o++ {
				for j := 0; j < k; j++ {
					for _, b := range inner {
						bit(b)
					}
				}
				bit(o%3 == 0)
			}
			bits += outer * (k*len(inner) + 1)
		case 6: // a long run of one outcome
			k, b := 1+r.IntN(5000), r.IntN(2) == 0
			for j := 0; j < k; j++ {
				bit(b)
			}
			bits += k
		case 7: // an indirect jump: the next block completes its message
			put(ingress.ITypeIndirectJump, priv)
		case 8: // a call and a return (predicted or not)
			put(ingress.ITypeDirectCall, priv)
			put(ingress.ITypeReturn, priv)
		case 9: // a trap, sometimes a privilege change
			put(ingress.ITypeException, priv)
			if r.IntN(2) == 0 {
				priv = ingress.PrivS
			} else {
				priv = ingress.PrivM
			}
		case 10: // straight-line code
			put(ingress.ITypeNone, priv)
		case 11: // a stop marker (see runGenerated)
			out = append(out, ingress.Block{})
		}
	}
	return out
}

// runGenerated encodes blocks with both planners; an empty block stands
// for TraceOff.
func runGenerated(t *testing.T, name string, cfg Config, blocks []ingress.Block) {
	tw := newTwin(t, cfg)
	for i := range blocks {
		var err error
		if blocks[i].IAddr == 0 {
			err = tw.TraceOff()
		} else {
			err = tw.Block(&blocks[i])
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	tw.check(name)
}

// TestPlannerMatchesReferenceGenerated compares the production record
// planner's output bytes with the reference planner's over generated
// block streams, in every planner configuration.
func TestPlannerMatchesReferenceGenerated(t *testing.T) {
	streams := 40
	if testing.Short() {
		streams = 8
	}
	cfgs := plannerConfigs()
	for seed := 0; seed < streams; seed++ {
		r := rand.New(rand.NewPCG(uint64(seed), 11))
		n := 2000 + r.IntN(40000)
		blocks := genBlocks(r, n)
		for name, cfg := range cfgs {
			runGenerated(t, fmt.Sprintf("seed %d, %s", seed, name), cfg, blocks)
		}
	}
}

// TestPlannerMatchesReferenceT1 compares the two planners on the t1
// workload (the reference code's PC list).
func TestPlannerMatchesReferenceT1(t *testing.T) {
	img, pcs := loadT1(t)
	for name, cfg := range plannerConfigs() {
		tw := newTwin(t, cfg)
		src := ingress.NewPCSource(bytes.NewReader(pcs), "t1", img, ingress.PCOptions{})
		for {
			b, err := src.Next()
			if err != nil {
				if err.Error() == "EOF" {
					break
				}
				t.Fatal(err)
			}
			if err := tw.Block(b); err != nil {
				t.Fatal(err)
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		tw.check("t1, " + name)
	}
}

// TestPlannerMatchesReferenceCorpus compares the two planners on the
// simulator's ingress blocks of every corpus program (bounded to 3 M
// instructions each; coremark whole unless -short), live as `rvtrace run
// --trace ntrace --preset best` encodes them.
func TestPlannerMatchesReferenceCorpus(t *testing.T) {
	dir := corpus.Path(t, "ntrace-refcode/elf")
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfgs := []string{"best", "hrepeat3", "time-context"}
	for _, ent := range ents {
		name := ent.Name()
		if !strings.HasSuffix(name, ".riscv") || name == "pk.riscv" {
			continue // pk needs a payload
		}
		limit := uint64(3_000_000)
		if name == "coremark.riscv" && !testing.Short() {
			limit = 0
		}
		for _, cname := range cfgs {
			tw := newTwin(t, plannerConfigs()[cname])
			m, err := sim.New(sim.Config{MaxInstret: limit})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, name)
			if err := m.LoadELF(path); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := m.SetIngress(0, tw); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Run(); err != nil && !errors.Is(err, sim.ErrInstructionLimit) {
				t.Fatalf("%s: %v", name, err)
			}
			tw.check(name + ", " + cname)
			if testing.Short() {
				break
			}
		}
	}
}

// TestPlannerTables checks the planner's derived tables against the facts
// they encode: the sliced thresholds, the multiples skipped, the
// reciprocals (exact division for every value a buffer can produce), the
// HREPEAT sizes and the packed steps.
func TestPlannerTables(t *testing.T) {
	thr := [5]uint32{patThr0, patThr1, patThr2, patThr3, patThr4}
	for l := 1; l <= patMaxBits; l++ {
		got := 0
		for k := range thr {
			got |= int(thr[k]>>uint(l)&1) << uint(k)
		}
		if want := max(l, patMinRun-l); got != want {
			t.Errorf("sliced threshold of length %d is %d, want %d", l, got, want)
		}
		longest := patMaxBits / l * l
		for m := 1; m <= patMaxBits; m++ {
			skip := patSkip[l]>>uint(m)&1 != 0
			if want := m%l == 0 && m != l && m != longest; skip != want {
				t.Errorf("length %d, multiple %d: skipped %v, want %v", l, m, skip, want)
			}
		}
		for x := uint64(0); x < 1<<16; x++ {
			if q := x * patRecip[l] >> patRecipShift; q != x/uint64(l) {
				t.Fatalf("%d/%d by reciprocal is %d", x, l, q)
			}
		}
	}
	for r := uint64(0); r < 1<<18; r++ {
		want := int32(3)
		switch {
		case r < 1<<6:
			want = 1
		case r < 1<<12:
			want = 2
		}
		if got := repeatBytes(r); got != want {
			t.Fatalf("repeatBytes(%d) = %d, want %d", r, got, want)
		}
		if st := mkStep(int(r%32), r); st.len() != int(r%32) || st.reps() != r {
			t.Fatalf("step (%d, %d) unpacks as (%d, %d)", r%32, r, st.len(), st.reps())
		}
	}
	if got := repeatBytes(1<<18 - 1); got != 3 || repeatBytes(1<<63) != 3 {
		t.Errorf("repeatBytes of 18 bits and more: %d", got)
	}
}

// TestBitBufWords checks the word-wise record and drop of the outcome
// buffer against bit-by-bit reference versions, at every alignment.
func TestBitBufWords(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := 0; round < 200; round++ {
		var b refBitBuf
		var c bitBuf
		for k := r.IntN(patWindow); k > 0; k-- {
			bit := uint64(r.IntN(2))
			b.push(bit)
			c.push(bit)
		}
		d := r.IntN(c.n + 1)
		b.drop(d)
		c.drop(d)
		for k := r.IntN(patWindow); k > 0; k-- {
			bit := uint64(r.IntN(2))
			b.push(bit)
			c.push(bit)
		}
		if b.n != c.n || b.head != c.head || b.w != c.w {
			t.Fatalf("round %d: buffers differ after drop(%d)", round, d)
		}
		for i := 0; i+patMaxBits <= c.n; i += 1 + r.IntN(8) {
			n := r.IntN(patMaxBits + 1)
			if got, want := c.record(i, n), b.record(i, n); got != want {
				t.Fatalf("round %d: record(%d, %d) = %#x, want %#x", round, i, n, got, want)
			}
		}
	}
}

// TestPlanMemoMatchesReference encodes a branch outcome sequence that
// comes back (a loop of irregular branches, entered at varying offsets,
// with repeats of several periods between) so that full windows are
// found in the plan memo, and compares the output bytes with the
// reference planner's, which plans every window. The memo must be used
// (hits counted) and must be bounded (every set holds two windows).
func TestPlanMemoMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 3))
	body := make([]bool, 5000) // one iteration: random outcomes and short loops
	for j := 0; j < len(body); {
		if r.IntN(3) == 0 {
			p, k := 1+r.IntN(9), 8+r.IntN(60)
			pat := r.Uint32()
			for q := 0; q < k && j < len(body); q++ {
				body[j] = pat>>(q%p)&1 != 0
				j++
			}
			continue
		}
		body[j] = r.IntN(2) == 0
		j++
	}
	for name, cfg := range plannerConfigs() {
		tw := newTwin(t, cfg)
		addr := uint64(0x1000)
		put := func(it ingress.IType) {
			b := ingress.Block{IAddr: addr, IRetire: 4, IType: it, ILastSize: 1, Priv: ingress.PrivM}
			if err := tw.Block(&b); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			addr += 8
		}
		for iter := 0; iter < 60; iter++ {
			if iter == 40 && name == "best" {
				// Enough other windows to evict every remembered one;
				// then the loop again.
				for j := 0; j < 2*memoSets*2*patWindow; j++ {
					put(ingress.ITypeNotTaken + ingress.IType(r.IntN(2)))
				}
			}
			for _, taken := range body[r.IntN(3):] {
				if taken {
					put(ingress.ITypeTaken)
				} else {
					put(ingress.ITypeNotTaken)
				}
			}
			if iter%13 == 12 {
				put(ingress.ITypeIndirectJump) // a flow message: final plans
			}
		}
		if err := tw.Close(); err != nil {
			t.Fatal(err)
		}
		tw.check("memo, " + name)
		m := tw.fast.pat.memo
		if cfg.SyncMode != SyncOff {
			continue // syncs empty the buffer before it fills
		}
		if m == nil || m.hits == 0 {
			t.Errorf("%s: no window was found in the plan memo", name)
			continue
		}
		ways := 0
		for i := range m.sets {
			for w := range m.sets[i] {
				if m.sets[i][w].valid {
					ways++
				}
			}
		}
		t.Logf("%s: %d windows from the memo, %d remembered", name, m.hits, ways)
	}
}
