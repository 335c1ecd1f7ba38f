package etrace

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand"
	"slices"
	"testing"

	"github.com/rvtrace/rvtrace/decode/parallel/paralleltest"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
)

// jobsRun is everything a decode produced.
type jobsRun struct {
	log            *paralleltest.Log
	stats          Stats
	err            string
	pieces, redone int
}

// decodeJobsRun decodes trace with cfg serially, or with jobs pieces of
// size bytes at once.
func decodeJobsRun(t testing.TB, img *image.Set, trace []byte, cfg Config, jobs, size int, strict bool) jobsRun {
	t.Helper()
	l := &paralleltest.Log{}
	var sink flow.Sink = l
	if strict {
		sink = flow.Strict(l, img)
	}
	d, err := NewDecoder(img, sink, cfg)
	if err != nil {
		t.Fatal(err)
	}
	// A corrupted trace can describe billions of instructions (one of
	// TestDecodeJobsCorrupt's says 2.6 G, inside a gap); bounding the
	// walk of one packet keeps the comparison short, serially and in
	// pieces alike.
	d.MaxWalk = 1 << 16
	err = d.decodeJobs(bytes.NewReader(trace), jobs, size)
	if err := sink.Close(); err != nil {
		t.Fatal(err)
	}
	r := jobsRun{log: l, stats: *d.Stats(), err: fmt.Sprint(err)}
	r.pieces, r.redone = d.ParallelStats()
	return r
}

// sameAsSerial decodes trace serially and with 3 jobs on pieces of size
// bytes, and fails unless both give the same events, message
// observations, statistics and error. It returns the parallel run.
func sameAsSerial(t *testing.T, what string, img *image.Set, trace []byte, cfg Config, size int, strict bool) jobsRun {
	t.Helper()
	return sameWithJobs(t, what, img, trace, cfg, 3, size, strict)
}

// sameWithJobs is sameAsSerial with jobs pieces at once.
func sameWithJobs(t *testing.T, what string, img *image.Set, trace []byte, cfg Config, jobs, size int, strict bool) jobsRun {
	t.Helper()
	return sameRuns(t, what, decodeJobsRun(t, img, trace, cfg, 1, size, strict), decodeJobsRun(t, img, trace, cfg, jobs, size, strict))
}

// sameRuns fails unless the serial decode a and the decode b with jobs
// give the same events, message observations, statistics and error. It
// returns b.
func sameRuns(t *testing.T, what string, a, b jobsRun) jobsRun {
	t.Helper()
	if a.err != b.err {
		t.Errorf("%s: error %q serially, %q with jobs", what, a.err, b.err)
	}
	if fmt.Sprint(a.stats) != fmt.Sprint(b.stats) {
		t.Errorf("%s: stats differ:\nserial %+v\njobs   %+v", what, a.stats, b.stats)
	}
	if d := paralleltest.Diff(a.log, b.log); d != "" {
		t.Errorf("%s (%d pieces, %d redone): %s", what, b.pieces, b.redone, d)
	}
	return b
}

// jobsConfigs are encoder configurations with periodic resynchronisation:
// every optional mode, UTDD framing, the 0.026 layout.
func jobsConfigs() map[string]Config {
	out := map[string]Config{}
	add := func(name string, f func(c *Config)) {
		c := DefaultConfig()
		c.ResyncPeriod = 12
		f(&c)
		if err := c.Check(); err != nil {
			panic(err)
		}
		out[name] = c
	}
	add("delta", func(c *Config) {})
	add("full address", func(c *Config) { c.Options.FullAddress = true })
	add("implicit return", func(c *Config) { c.Options.ImplicitReturn = true })
	add("implicit return, call counter", func(c *Config) {
		c.Options.ImplicitReturn = true
		c.Params.CallCounterSize = 4
	})
	add("branch prediction", func(c *Config) { c.Options.BranchPrediction = true })
	add("jump target cache", func(c *Config) { c.Options.JumpTargetCache = true })
	add("all modes", func(c *Config) {
		c.Options = Options{ImplicitReturn: true, BranchPrediction: true, JumpTargetCache: true, SIJump: true,
			ImplicitException: true}
	})
	add("utdd", func(c *Config) {
		c.Encap = EncapUTDD
		c.Options.ImplicitReturn = true
	})
	add("0.026", func(c *Config) { c.Version = V026 })
	return out
}

// A trace with periodic sync decodes with jobs to exactly what it decodes
// to serially, and most of its pieces are decoded in parallel (not again
// in sequence).
func TestDecodeJobsPeriodic(t *testing.T) {
	img, pcs := loadT1(t)
	blocks := genBlocks(t, img, pcs, genOpts{})
	for name, cfg := range jobsConfigs() {
		trace, _ := encode(t, cfg, nil, blocks)
		what := fmt.Sprintf("%s (%d bytes)", name, len(trace))
		r := sameAsSerial(t, what, img, trace, cfg, 100, false)
		t.Logf("%s: %d pieces, %d decoded again", what, r.pieces, r.redone)
		if r.pieces < 15 || r.redone > 2 {
			t.Errorf("%s: %d pieces, %d decoded again in sequence: the pieces are not decoded in parallel", what,
				r.pieces, r.redone)
		}
		if r.log.Gaps != 0 {
			t.Errorf("%s: %d gaps in an intact trace", what, r.log.Gaps)
		}
	}
}

// Corrupt traces (bits flipped, bytes inserted, deleted, the trace cut
// short) decode with jobs to exactly what they decode to serially, with
// --strict too.
func TestDecodeJobsCorrupt(t *testing.T) {
	img, pcs := loadT1(t)
	blocks := genBlocks(t, img, pcs, genOpts{})
	rng := rand.New(rand.NewSource(10))
	pieces, redone := 0, 0
	// (in a fixed order: the corruptions drawn for each configuration
	// must be the same from run to run)
	cfgs := jobsConfigs()
	for _, name := range slices.Sorted(maps.Keys(cfgs)) {
		cfg := cfgs[name]
		trace, _ := encode(t, cfg, nil, blocks)
		for k := 0; k < 12; k++ {
			ops := make([]byte, 4)
			rng.Read(ops)
			bad := corrupt(trace, ops)
			for _, strict := range []bool{false, true} {
				r := sameAsSerial(t, fmt.Sprintf("%s, corruption %x, strict %v", name, ops, strict), img, bad, cfg, 150, strict)
				pieces, redone = pieces+r.pieces, redone+r.redone
			}
		}
	}
	t.Logf("%d pieces, %d decoded again in sequence", pieces, redone)
	if redone == 0 || redone*2 > pieces {
		t.Errorf("%d pieces, %d decoded again: the test does not exercise both paths", pieces, redone)
	}
}

// The empty trace, a trace without sync, one sync only and a
// circular-buffer capture give with jobs what they give serially.
func TestDecodeJobsEdges(t *testing.T) {
	img, pcs := loadT1(t)
	blocks := genBlocks(t, img, pcs, genOpts{})
	cfg := DefaultConfig()
	one, _ := encode(t, cfg, nil, blocks)
	cfg.ResyncPeriod = 12
	trace, _ := encode(t, cfg, nil, blocks)
	sameAsSerial(t, "empty", img, nil, cfg, 100, false)
	sameAsSerial(t, "one sync", img, one, cfg, 100, false)
	sameAsSerial(t, "no sync", img, trace[len(trace)-40:], cfg, 10, false)
	// cut right after a sync packet: the last piece holds only its
	// primer, and the end of the trace is reported where the serial
	// decoder stands (after following the address packet before the
	// sync, when there is one)
	for name, c := range jobsConfigs() {
		tr, _ := encode(t, c, nil, blocks)
		var ends []int64
		sc := NewScanner(bytes.NewReader(tr), &c)
		for sc.Scan() {
			if pl := sc.Frame().Payload; !sc.Frame().Support && pl[0]&3 == FormatSync && pl[0]>>2&3 == SubStart {
				ends = append(ends, sc.Offset())
			}
		}
		for _, end := range ends[len(ends)-4:] {
			sameAsSerial(t, fmt.Sprintf("%s, cut after the sync packet ending at byte %d", name, end), img, tr[:end], c, 30,
				false)
		}
	}
	// (the case that found it: with traps, privilege and context changes)
	c := jobsConfigs()["implicit return"]
	c.Params.NoContext = false
	tr, _ := encode(t, c, nil, genBlocks(t, img, pcs, genOpts{trapEvery: 700, privEvery: 90, ctxEvery: 130}))
	sameAsSerial(t, "cut after a sync packet, with traps", img, corrupt(tr, []byte{0xb9, 0x6c, 0x4d, 0x3b}), c, 40, false)
	trunc := cfg
	trunc.Decode.AllowTruncated = true
	for _, cut := range []int{1, 17, len(trace) / 3} {
		r := sameAsSerial(t, fmt.Sprintf("circular buffer from byte %d", cut), img, trace[cut:len(trace)-cut], trunc, 150,
			true)
		if r.pieces < 5 {
			t.Errorf("circular buffer from byte %d: %d pieces", cut, r.pieces)
		}
	}
}

// timedT1 returns t1's image with its code loaded again, unchanged, at
// each of the instruction counts at (image.Set.AddTimedBytes, as a
// sideband loads code rewritten while the system ran): the events of a
// decode name the image of each count.
func timedT1(t *testing.T, at []uint64) *image.Set {
	t.Helper()
	img, err := paralleltest.Timed(corpus+"/t1/test.elf", at, nil)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// The pieces' decoders count from a guessed instruction count: wrong
// guesses (guessSkew) give the serial result, the counts shifted when a
// piece is joined, and with images that change at instruction counts the
// pieces whose count range holds a change are decoded again in sequence.
func TestDecodeJobsGuessedCounts(t *testing.T) {
	img, pcs := loadT1(t)
	blocks := genBlocks(t, img, pcs, genOpts{})
	n := uint64(len(pcs))
	var at []uint64
	for k := uint64(1); k <= 6; k++ {
		at = append(at, k*n/7+k*k)
	}
	timed := timedT1(t, at)
	cfgs := jobsConfigs()
	for _, name := range []string{"delta", "implicit return", "all modes"} {
		cfg := cfgs[name]
		trace, _ := encode(t, cfg, nil, blocks)
		bad := corrupt(trace, []byte{0, byte(len(trace) / 2 >> 8), byte(len(trace) / 2), 3})
		for _, skew := range []uint64{0, 300, 1 << 40} {
			guessSkew = skew
			what := fmt.Sprintf("%s, guesses %d too high", name, skew)
			r := sameAsSerial(t, what, img, trace, cfg, 100, false)
			if r.redone > 2 {
				t.Errorf("%s: %d of %d pieces decoded again (no epochs)", what, r.redone, r.pieces)
			}
			sameAsSerial(t, what+", corrupt", img, bad, cfg, 100, true)
			r = sameAsSerial(t, what+", timed images", timed, trace, cfg, 100, false)
			t.Logf("%s, timed images: %d pieces, %d decoded again", what, r.pieces, r.redone)
			if skew > 0 && r.redone < len(at) {
				t.Errorf("%s, timed images: %d of %d pieces decoded again, want at least %d", what, r.redone, r.pieces, len(at))
			}
			guessSkew = 0
		}
	}
}

// With sinks that only tally ranges (the summary of rvtrace decode, which
// decodes with one job per CPU by default), the pieces pass their ranges
// as tallies, the serial range open at a piece's sync extends the piece's
// first tally (parallel.Recorder.ExtendFirstRange), and the counts, the
// integrity summary and the statistics come out as serially.
func TestDecodeJobsTally(t *testing.T) {
	img, pcs := loadT1(t)
	cfgs := jobsConfigs()
	for _, o := range []genOpts{{}, {trapEvery: 5000}} {
		blocks := genBlocks(t, img, pcs, o)
		for _, name := range slices.Sorted(maps.Keys(cfgs)) {
			cfg := cfgs[name]
			trace, _ := encode(t, cfg, nil, blocks)
			bad := corrupt(trace, []byte{0, byte(len(trace) / 3 >> 8), byte(len(trace) / 3), 3})
			for k, tr := range [][]byte{trace, bad} {
				var res [2]string
				pieces := 0
				for i, jobs := range []int{1, 3} {
					var cnt flow.Counter
					var integ flow.Integrity
					d, err := NewDecoder(img, flow.Multi(&integ, &cnt), cfg)
					if err != nil {
						t.Fatal(err)
					}
					d.MaxWalk = 1 << 16
					err = d.decodeJobs(bytes.NewReader(tr), jobs, 100)
					res[i] = fmt.Sprintf("%v %+v %s %v %+v", err, cnt, integ.Summary(false), integ.Details(), *d.Stats())
					pieces, _ = d.ParallelStats()
				}
				what := fmt.Sprintf("%s, traps every %d, trace %d", name, o.trapEvery, k)
				if res[0] != res[1] {
					t.Errorf("%s: serially\n%s\nwith jobs\n%s", what, res[0], res[1])
				}
				if pieces < 5 {
					t.Errorf("%s: %d pieces", what, pieces)
				}
			}
		}
	}
}
