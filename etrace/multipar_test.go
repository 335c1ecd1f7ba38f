package etrace

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"

	"github.com/rvtrace/rvtrace/decode/parallel"
	"github.com/rvtrace/rvtrace/decode/parallel/paralleltest"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
)

// demuxJobsRun decodes trace of several sources with cfg serially, or
// with jobs pieces of size bytes at once.
func demuxJobsRun(t testing.TB, img *image.Set, trace []byte, cfg Config, jobs, size int, strict bool) jobsRun {
	t.Helper()
	l := &paralleltest.Log{}
	var sink flow.Sink = l
	if strict {
		sink = flow.Strict(l, img)
	}
	m, err := NewDemux(img, sink, cfg)
	if err != nil {
		t.Fatal(err)
	}
	m.MaxWalk = 1 << 16 // (as decodeJobsRun)
	err = m.decodeJobs(bytes.NewReader(trace), jobs, size)
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	r := jobsRun{log: l, err: fmt.Sprint(err)}
	r.stats = *m.Stats()
	for _, id := range m.Sources() {
		r.err += fmt.Sprintf("; source %d: %+v", id, *m.Source(id).Stats())
	}
	r.err += fmt.Sprintf("; sources %v, foreign %v", m.Sources(), m.ForeignSources())
	r.pieces, r.redone = m.ParallelStats()
	return r
}

// demuxSameWithJobs decodes trace serially and with jobs pieces of size
// bytes at once, and fails unless both give the same events, message
// observations, statistics (each source's) and error. It returns the
// parallel run.
func demuxSameWithJobs(t *testing.T, what string, img *image.Set, trace []byte, cfg Config, jobs, size int, strict bool) jobsRun {
	t.Helper()
	return sameRuns(t, what, demuxJobsRun(t, img, trace, cfg, 1, size, strict), demuxJobsRun(t, img, trace, cfg, jobs, size, strict))
}

// multiJobsConfigs are jobsConfigs with the UTDD framing and a source ID
// field for harts harts.
func multiJobsConfigs(harts int) map[string]Config {
	out := map[string]Config{}
	for name, c := range jobsConfigs() {
		if c.Version == V026 && harts > 2 {
			continue
		}
		c.Encap, c.SrcBits = EncapUTDD, 2
		if err := c.Check(); err != nil {
			continue
		}
		out[name] = c
	}
	return out
}

// A trace of 2 to 4 harts (mt-matmul and mt-vvadd on the simulator, each
// hart traced by its own encoder into one funnel, every optional mode)
// decodes with 2, 3 and 8 jobs to exactly what it decodes to serially:
// every event of every source in the same order, the statistics of each
// source, and each source's PCs are those its hart retired; most pieces
// are decoded in parallel (not again in sequence).
func TestDemuxJobs(t *testing.T) {
	for _, run := range []struct {
		name           string
		harts, quantum int
		cfgs           []string // (all when nil)
	}{{"mt-matmul.riscv", 2, 500, nil}, {"mt-vvadd.riscv", 3, 300, nil},
		{"mt-matmul.riscv", 4, 150, []string{"delta", "all modes", "implicit return, call counter", "0.026"}}} {
		cfgs := multiJobsConfigs(run.harts)
		names := run.cfgs
		if names == nil {
			names = slices.Sorted(maps.Keys(cfgs))
		}
		if testing.Short() {
			// (a simulator run per configuration: the modes that
			// differ most)
			names = []string{"delta", "all modes", "0.026"}
		}
		for _, name := range names {
			cfg, ok := cfgs[name]
			if !ok {
				continue
			}
			r := runMultiHart(t, run.name, run.harts, run.quantum, cfg)
			trace := r.log.all.Bytes()
			// (pieces of a thirtieth of the trace: a few frames of
			// each hart)
			size := max(len(trace)/30, 32)
			what := fmt.Sprintf("%s on %d harts, %s (%d bytes, pieces of %d)", run.name, run.harts, name, len(trace), size)
			for _, jobs := range []int{2, 3, 8} {
				p := demuxSameWithJobs(t, fmt.Sprintf("%s, %d jobs", what, jobs), r.img, trace, cfg, jobs, size, false)
				if jobs == 3 {
					t.Logf("%s: %d pieces, %d decoded again", what, p.pieces, p.redone)
				}
				if p.pieces < 10 || p.redone*5 > p.pieces {
					t.Errorf("%s, %d jobs: %d pieces, %d decoded again in sequence: the pieces are not decoded in parallel",
						what, jobs, p.pieces, p.redone)
				}
			}
			// the independent truth: each hart's retired PCs
			s := &srcSinks{img: r.img, srcs: map[uint32]*intSink{}}
			m, err := NewDemux(r.img, s, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := m.decodeJobs(bytes.NewReader(trace), 3, size); err != nil || len(s.gaps) > 0 {
				t.Fatalf("%s: %v, gaps %v", what, err, s.gaps)
			}
			for h := 0; h < run.harts; h++ {
				comparePCs(t, fmt.Sprintf("%s source %d", what, h), s.srcs[uint32(h)].pcs, r.truth[h])
			}
		}
	}
}

// Corrupt traces of several harts (bits flipped, bytes inserted, deleted,
// the trace cut short) decode with jobs to exactly what they decode to
// serially, with --strict too, the pieces around the damage decoded again
// in sequence.
func TestDemuxJobsCorrupt(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	pieces, redone := 0, 0
	for _, harts := range []int{2, 3} {
		cfgs := multiJobsConfigs(harts)
		for _, name := range slices.Sorted(maps.Keys(cfgs)) {
			cfg := cfgs[name]
			r := runMultiHart(t, "mt-matmul.riscv", harts, 400, cfg)
			trace := r.log.all.Bytes()
			for k := 0; k < 6; k++ {
				ops := make([]byte, 4)
				rng.Read(ops)
				bad := corrupt(trace, ops)
				for _, strict := range []bool{false, true} {
					p := demuxSameWithJobs(t, fmt.Sprintf("%d harts, %s, corruption %x, strict %v", harts, name, ops, strict),
						r.img, bad, cfg, 3, 200, strict)
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

// With sinks that only tally ranges (the summary of rvtrace decode), the
// counts, the integrity summary and the statistics of a trace of several
// harts come out with jobs as serially, intact and corrupt.
func TestDemuxJobsTally(t *testing.T) {
	cfgs := multiJobsConfigs(3)
	for _, name := range slices.Sorted(maps.Keys(cfgs)) {
		cfg := cfgs[name]
		r := runMultiHart(t, "mt-vvadd.riscv", 3, 300, cfg)
		trace := r.log.all.Bytes()
		bad := corrupt(trace, []byte{0, byte(len(trace) / 3 >> 8), byte(len(trace) / 3), 3})
		for k, tr := range [][]byte{trace, bad} {
			var res [2]string
			pieces := 0
			for i, jobs := range []int{1, 3} {
				var cnt flow.Counter
				var integ flow.Integrity
				m, err := NewDemux(r.img, flow.Multi(&integ, &cnt), cfg)
				if err != nil {
					t.Fatal(err)
				}
				m.MaxWalk = 1 << 16
				err = m.decodeJobs(bytes.NewReader(tr), jobs, 150)
				res[i] = fmt.Sprintf("%v %+v %s %v %+v", err, cnt, integ.Summary(false), integ.Details(), *m.Stats())
				pieces, _ = m.ParallelStats()
			}
			what := fmt.Sprintf("%s, trace %d", name, k)
			if res[0] != res[1] {
				t.Errorf("%s: serially\n%s\nwith jobs\n%s", what, res[0], res[1])
			}
			if pieces < 5 {
				t.Errorf("%s: %d pieces", what, pieces)
			}
		}
	}
}

// A trace of several harts cut anywhere (after a sync packet of any
// source: a piece then holds only its primer; inside a frame), a
// circular-buffer capture of one, the empty trace and one whose sources
// outnumber Demux.MaxSources give with jobs what they give serially.
func TestDemuxJobsEdges(t *testing.T) {
	cfg := multiJobsConfigs(3)["implicit return"]
	r := runMultiHart(t, "mt-vvadd.riscv", 3, 300, cfg)
	trace := r.log.all.Bytes()
	size := len(trace) / 30
	demuxSameWithJobs(t, "empty", r.img, nil, cfg, 3, size, false)
	var ends []int
	sc := NewScanner(bytes.NewReader(trace), &cfg)
	for sc.Scan() {
		if pl := sc.Frame().Payload; !sc.Frame().Support && pl[0]&3 == FormatSync && pl[0]>>2&3 == SubStart {
			ends = append(ends, int(sc.Offset()))
		}
	}
	rng := rand.New(rand.NewSource(12))
	for k := 0; k < 12; k++ {
		end := ends[len(ends)/2+rng.Intn(len(ends)/2)]
		if k%3 == 2 {
			end -= 1 + rng.Intn(3) // inside a frame
		}
		demuxSameWithJobs(t, fmt.Sprintf("cut at byte %d", end), r.img, trace[:end], cfg, 3, size, false)
	}
	trunc := cfg
	trunc.Decode.AllowTruncated = true
	for _, cut := range []int{1, 17, len(trace) / 3} {
		p := demuxSameWithJobs(t, fmt.Sprintf("circular buffer from byte %d", cut), r.img, trace[cut:len(trace)-cut], trunc,
			3, size, true)
		if p.pieces < 5 {
			t.Errorf("circular buffer from byte %d: %d pieces", cut, p.pieces)
		}
	}
	// one source too many: serially from the first refused frame on
	for _, max := range []int{1, 2} {
		var res [2]string
		for i, jobs := range []int{1, 3} {
			l := &paralleltest.Log{}
			m, err := NewDemux(r.img, l, cfg)
			if err != nil {
				t.Fatal(err)
			}
			m.MaxSources = max
			err = m.decodeJobs(bytes.NewReader(trace), jobs, size)
			res[i] = fmt.Sprintf("%v %+v %v %q", err, *m.Stats(), m.ForeignSources(), l.Lines)
		}
		if res[0] != res[1] {
			t.Errorf("MaxSources %d: serially\n%s\nwith jobs\n%s", max, res[0], res[1])
		}
	}
}

// The split of a trace of several harts holds a bounded number of bytes
// (parallel.HoldPieces pieces' worth and two frames) and its pieces tile
// the trace, with periodic resynchronisation and with one sync packet per
// hart (cut without a sync: parallel.Piece.Cont), intact and with a run of
// UTDD null packets longer than the bound; each decodes with 2 jobs as
// serially.
func TestDemuxJobsBounded(t *testing.T) {
	for _, resync := range []int{12, 0} {
		cfg := multiJobsConfigs(3)["implicit return"]
		cfg.ResyncPeriod = resync
		r := runMultiHart(t, "mt-vvadd.riscv", 3, 300, cfg)
		trace := r.log.all.Bytes()
		size := len(trace) / 40
		offs := frameOffsets(t, cfg, trace)
		null := slices.Insert(slices.Clone(trace), int(offs[len(offs)/2]), make([]byte, 5*size+7)...)
		for k, tr := range [][]byte{trace, null} {
			what := fmt.Sprintf("resync %d, trace %d (%d bytes, pieces of %d)", resync, k, len(tr), size)
			m, err := NewDemux(r.img, &paralleltest.Log{}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			b := &paralleltest.Bound{T: t, What: what, R: &paralleltest.CountingReader{R: bytes.NewReader(tr)},
				Max: parallel.HoldPieces*size + 2*maxFrame, Ahead: scanBufSize}
			if _, _, err := m.split(b.R, size, b.Emit); err != nil {
				t.Fatalf("%s: split: %v", what, err)
			}
			b.End(len(tr))
			if resync == 0 && b.Cont < len(tr)/(parallel.HoldPieces*size)-2 || resync > 0 && b.Pieces-b.Cont < 10 {
				t.Errorf("%s: %d pieces, %d cut without a sync", what, b.Pieces, b.Cont)
			}
			demuxSameWithJobs(t, what, r.img, tr, cfg, 2, size, false)
		}
	}
}
