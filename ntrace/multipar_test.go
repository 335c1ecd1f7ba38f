package ntrace

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode/parallel"
	"github.com/rvtrace/rvtrace/decode/parallel/paralleltest"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/sim"
)

// hartSink feeds a hart's ingress blocks to its encoder and writes the
// messages out after each block, so that the messages of the harts
// interleave in the trace as the harts ran (as a trace funnel merges
// them).
type hartSink struct{ enc *Encoder }

func (s *hartSink) Block(b *ingress.Block) error {
	if err := s.enc.Block(b); err != nil {
		return err
	}
	return s.enc.w.Flush()
}

func (s *hartSink) Close() error { return s.enc.Close() }

// multiHart is a run of a program on several harts, each traced by its
// own N-Trace encoder (SRC = hart) into one trace.
type multiHart struct {
	img   *image.Set
	trace []byte
	truth [][]uint64 // each hart's retired PCs (the simulator's PC hook)
}

// runMultiHart runs the corpus program name on harts harts (quantum
// instructions a turn), traced with cfg (SrcBits set).
func runMultiHart(t testing.TB, name string, harts, quantum int, cfg Config) *multiHart {
	t.Helper()
	return runHarts(t, name, sim.Config{Harts: harts, Quantum: quantum, MaxInstret: 20e6}, cfg, true)
}

// runHarts runs the corpus program name on the machine sc describes,
// traced with cfg, keeping each hart's PCs when truth is set; the run
// may end at sc.MaxInstret.
func runHarts(t testing.TB, name string, sc sim.Config, cfg Config, truth bool) *multiHart {
	t.Helper()
	path := corpus.Path(t, "ntrace-refcode/elf/"+name)
	r := &multiHart{img: image.NewSet(), truth: make([][]uint64, sc.Harts)}
	if err := r.img.AddELF(path); err != nil {
		t.Fatal(err)
	}
	cfg.XLEN = r.img.XLEN()
	m, err := sim.New(sc)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(path); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	encs := make([]*Encoder, sc.Harts)
	for h := range encs {
		c := cfg
		c.SrcID = uint32(h)
		if encs[h], err = NewEncoder(&out, c); err != nil {
			t.Fatal(err)
		}
		if err := m.SetIngress(h, &hartSink{encs[h]}); err != nil {
			t.Fatal(err)
		}
		if !truth {
			continue
		}
		if err := m.SetPCHook(h, func(pc uint64) { r.truth[h] = append(r.truth[h], pc) }); err != nil {
			t.Fatal(err)
		}
	}
	res, err := m.Run()
	if errors.Is(err, sim.ErrInstructionLimit) {
		err = nil
	}
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%s on %d harts: exit %d, %v", name, sc.Harts, res.ExitCode, err)
	}
	for h, e := range encs {
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if truth && len(r.truth[h]) == 0 {
			t.Fatalf("hart %d did not run", h)
		}
	}
	r.trace = out.Bytes()
	return r
}

// multiJobsConfigs are the encoder configurations of the presets that
// support several sources, each with periodic sync counting halfwords and
// counting messages, with a 2-bit SRC field.
func multiJobsConfigs() map[string]Config {
	out := map[string]Config{}
	for _, p := range []string{"best", "ref-htm-best", "btm", "htm"} {
		for _, s := range []struct {
			name      string
			mode, max int
		}{{"halfwords 2^7", SyncHalfwords, 3}, {"messages 2^4", SyncMessages, 0}} {
			c := withSync(Presets[p], s.mode, s.max)
			c.SrcBits = 2
			out[p+", sync "+s.name] = c
		}
	}
	return out
}

// pcsBySrc collects the PCs of each source.
type pcsBySrc struct {
	img  *image.Set
	pcs  map[uint32]*strings.Builder
	gaps int
}

func (s *pcsBySrc) Event(e *flow.Event) error {
	if e.Kind == flow.KindGap {
		s.gaps++
	}
	if e.Kind != flow.KindRange {
		return nil
	}
	b := s.pcs[e.Src]
	if b == nil {
		b = &strings.Builder{}
		s.pcs[e.Src] = b
	}
	pc := e.Start
	for i := uint64(0); i < e.N; i++ {
		fmt.Fprintf(b, "%#x\n", pc)
		in := s.img.InstPtr(pc)
		if in == nil || in.Len == 0 {
			return fmt.Errorf("no instruction at %#x", pc)
		}
		pc += uint64(in.Len)
	}
	return nil
}

func (s *pcsBySrc) Close() error { return nil }

// comparePCs fails unless got holds exactly the PCs of want.
func comparePCs(t *testing.T, what, got string, want []uint64) {
	t.Helper()
	var b strings.Builder
	for _, pc := range want {
		fmt.Fprintf(&b, "%#x\n", pc)
	}
	if got != b.String() {
		g, w := strings.Split(got, "\n"), strings.Split(b.String(), "\n")
		i := 0
		for i < len(g) && i < len(w) && g[i] == w[i] {
			i++
		}
		t.Errorf("%s: %d PCs decoded, the hart retired %d; they differ from PC %d", what, len(g)-1, len(w)-1, i)
	}
}

// A trace of 2 to 4 harts (mt-matmul and mt-vvadd on the simulator, each
// hart traced by its own encoder, the messages interleaved as the harts
// ran) with every preset that supports several sources and periodic sync
// decodes with 2, 3 and 8 jobs to exactly what it decodes to serially:
// every event of every source in the same order, the statistics, the
// error; each source's PCs are those its hart retired; and most pieces
// are decoded in parallel (not again in sequence).
func TestDecodeJobsHarts(t *testing.T) {
	cfgs := multiJobsConfigs()
	for _, run := range []struct {
		name           string
		harts, quantum int
	}{{"mt-matmul.riscv", 2, 500}, {"mt-vvadd.riscv", 3, 300}, {"mt-matmul.riscv", 4, 150}} {
		for _, name := range slices.Sorted(maps.Keys(cfgs)) {
			if testing.Short() && run.harts != 3 && !strings.HasPrefix(name, "best") {
				continue
			}
			cfg := cfgs[name]
			r := runMultiHart(t, run.name, run.harts, run.quantum, cfg)
			dc := DecoderConfigFrom(cfg)
			// (pieces of a thirtieth of the trace: a few turns of each
			// hart)
			size := max(len(r.trace)/30, 64)
			what := fmt.Sprintf("%s on %d harts, %s (%d bytes, pieces of %d)", run.name, run.harts, name, len(r.trace), size)
			for _, jobs := range []int{2, 3, 8} {
				p := sameWithJobs(t, fmt.Sprintf("%s, %d jobs", what, jobs), r.img, r.trace, dc, jobs, size, false)
				if p.log.Gaps != 0 {
					t.Errorf("%s: %d gaps in an intact trace", what, p.log.Gaps)
				}
				if jobs == 3 {
					t.Logf("%s: %d pieces, %d decoded again", what, p.pieces, p.redone)
				}
				// (the best preset counting messages makes a trace of
				// some hundred bytes, cut in a few pieces only, in which
				// a hart may be silent for longer than the split waits
				// for it)
				if len(r.trace) >= 30*64 && (p.pieces < 10 || p.redone*5 > p.pieces) {
					t.Errorf("%s, %d jobs: %d pieces, %d decoded again in sequence: the pieces are not decoded in parallel",
						what, jobs, p.pieces, p.redone)
				}
			}
			// the independent truth: each hart's retired PCs
			s := &pcsBySrc{img: r.img, pcs: map[uint32]*strings.Builder{}}
			d := mustDecoder(t, r.img, s, dc)
			if err := d.decodeJobs(bytes.NewReader(r.trace), 3, size); err != nil || s.gaps > 0 {
				t.Fatalf("%s: %v, %d gaps", what, err, s.gaps)
			}
			for h := 0; h < run.harts; h++ {
				got := ""
				if b := s.pcs[uint32(h)]; b != nil {
					got = b.String()
				}
				comparePCs(t, fmt.Sprintf("%s source %d", what, h), got, r.truth[h])
			}
		}
	}
}

// Corrupt traces of several harts (bits flipped, bytes inserted, deleted,
// replaced, the trace cut short) decode with jobs to exactly what they
// decode to serially, with flow.Strict too, the pieces around the damage
// decoded again in sequence.
func TestDecodeJobsHartsCorrupt(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	cfgs := multiJobsConfigs()
	pieces, redone := 0, 0
	for _, harts := range []int{2, 3} {
		for _, name := range slices.Sorted(maps.Keys(cfgs)) {
			if testing.Short() && !strings.HasPrefix(name, "best") && !strings.HasPrefix(name, "btm") {
				continue
			}
			cfg := cfgs[name]
			r := runMultiHart(t, "mt-matmul.riscv", harts, 400, cfg)
			dc := DecoderConfigFrom(cfg)
			for k := 0; k < 6; k++ {
				ops := make([]byte, 4)
				rng.Read(ops)
				// (anywhere in the trace, which may be longer than the
				// 64 KiB corrupt reaches)
				pos := rng.Intn(len(r.trace))
				ops[1], ops[2] = byte(pos), byte(pos>>8)
				bad, desc := corrupt(r.trace[pos&^0xffff:], ops)
				bad = append(append([]byte(nil), r.trace[:pos&^0xffff]...), bad...)
				for _, strict := range []bool{false, true} {
					p := sameWithJobs(t, fmt.Sprintf("%d harts, %s, %s, strict %v", harts, name, desc, strict),
						r.img, bad, dc, 3, 200, strict)
					pieces, redone = pieces+p.pieces, redone+p.redone
				}
			}
		}
	}
	t.Logf("%d pieces, %d decoded again in sequence", pieces, redone)
	if redone == 0 || redone*2 > pieces {
		t.Errorf("%d pieces, %d decoded again: the test does not exercise both paths", pieces, redone)
	}
}

// The split of a trace of several harts holds a bounded number of bytes
// (parallel.HoldPieces pieces' worth and three messages) and its pieces
// tile the trace, with periodic sync and with one sync message per hart
// (cut without a sync: parallel.Piece.Cont), intact and with a run of
// idle bytes longer than the bound (a gap: the encoder sends none); each
// decodes with 2 jobs as serially.
func TestDecodeJobsHartsBounded(t *testing.T) {
	for _, periodic := range []bool{true, false} {
		cfg := multiJobsConfigs()["htm, sync halfwords 2^7"]
		if !periodic {
			cfg.SyncMode = SyncOff
		}
		r := runMultiHart(t, "mt-vvadd.riscv", 3, 300, cfg)
		size := len(r.trace) / 40
		offs := messageOffsets(r.trace, cfg.Wire())
		idle := slices.Insert(slices.Clone(r.trace), int(offs[len(offs)/2]), bytes.Repeat([]byte{idleByte}, 5*size+7)...)
		dc := DecoderConfigFrom(cfg)
		for k, tr := range [][]byte{r.trace, idle} {
			what := fmt.Sprintf("periodic sync %v, trace %d (%d bytes, pieces of %d)", periodic, k, len(tr), size)
			pieces, cont := checkSplitBound(t, what, r.img, tr, dc, size)
			if !periodic && cont < len(tr)/(parallel.HoldPieces*size)-2 || periodic && pieces-cont < 10 {
				t.Errorf("%s: %d pieces, %d cut without a sync", what, pieces, cont)
			}
			jr := sameWithJobs(t, what, r.img, tr, dc, 2, size, false)
			if gaps := jr.log.Gaps; k == 0 && gaps != 0 || k == 1 && gaps == 0 {
				t.Errorf("%s: %d gaps", what, gaps)
			}
		}
	}
}

// A trace of several harts decoded with images that change at
// instruction counts (paralleltest.Timed: the program's code reloaded at
// several counts) is decoded serially by DecodeJobs, which says why
// (SerialReason), with the serial result.
func TestDecodeJobsHartsEpochs(t *testing.T) {
	cfg := multiJobsConfigs()["best, sync halfwords 2^7"]
	r := runMultiHart(t, "mt-matmul.riscv", 2, 500, cfg)
	img, err := paralleltest.Timed(corpus.Path(t, "ntrace-refcode/elf/mt-matmul.riscv"), []uint64{1000, 30000}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dc := DecoderConfigFrom(cfg)
	d := mustDecoder(t, img, &paralleltest.Log{}, dc)
	if why := d.SerialReason(); !strings.Contains(why, "change at instruction counts") {
		t.Errorf("SerialReason %q", why)
	}
	p := sameWithJobs(t, "epochs", img, r.trace, dc, 3, len(r.trace)/30, false)
	if p.pieces != 0 || p.log.Gaps != 0 {
		t.Errorf("%d pieces, %d gaps: not a serial decode of an intact trace", p.pieces, p.log.Gaps)
	}
	// the same trace with the plain image splits
	d = mustDecoder(t, r.img, &paralleltest.Log{}, dc)
	if why := d.SerialReason(); why != "" {
		t.Errorf("SerialReason %q without epochs", why)
	}
}
