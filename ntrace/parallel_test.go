package ntrace

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode/parallel/paralleltest"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

// jobsRun decodes trace with cfg serially, or with jobs pieces of size
// bytes at once, and returns everything the decode produced.
type jobsRun struct {
	log            *paralleltest.Log
	stats          Stats
	err            string
	pieces, redone int
}

func decodeJobsRun(t testing.TB, img *image.Set, trace []byte, cfg DecoderConfig, jobs, size int, strict bool) jobsRun {
	t.Helper()
	l := &paralleltest.Log{}
	var sink flow.Sink = l
	if strict {
		sink = flow.Strict(l, img)
	}
	d := mustDecoder(t, img, sink, cfg)
	err := d.decodeJobs(bytes.NewReader(trace), jobs, size)
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
func sameAsSerial(t *testing.T, what string, img *image.Set, trace []byte, cfg DecoderConfig, size int, strict bool) jobsRun {
	t.Helper()
	return sameWithJobs(t, what, img, trace, cfg, 3, size, strict)
}

// sameWithJobs is sameAsSerial with jobs pieces at once.
func sameWithJobs(t *testing.T, what string, img *image.Set, trace []byte, cfg DecoderConfig, jobs, size int, strict bool) jobsRun {
	t.Helper()
	a := decodeJobsRun(t, img, trace, cfg, 1, size, strict)
	b := decodeJobsRun(t, img, trace, cfg, jobs, size, strict)
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

// periodicConfigs are encoder configurations with periodic sync, both
// modes, every implicit-return mode and the context (Ownership) on.
var periodicConfigs = []Config{
	withSync(Presets["best"], SyncHalfwords, 4),
	withSync(Presets["best"], SyncMessages, 0),
	withSync(Presets["ref-htm-best"], SyncMessages, 0),
	withSync(Config{Mode: BTM, RepeatBranch: true}, SyncHalfwords, 2),
	withSync(Config{Mode: HTM, ImplicitReturn: ReturnCount, StackDepth: 3}, SyncMessages, 1),
	withSync(Config{Mode: BTM, ImplicitReturn: ReturnFull, ICNTBits: 10}, SyncMessages, 0),
	withSync(Config{Mode: HTM, ImplicitReturn: ReturnFull, SequentialJump: true, Context: true, Timestamps: true},
		SyncHalfwords, 3),
}

// A trace with periodic sync decodes with jobs to exactly what it decodes
// to serially, and most of its pieces are decoded in parallel (not again
// in sequence), with the encoder's configuration known or learned.
func TestDecodeJobsPeriodic(t *testing.T) {
	for i, cfg := range periodicConfigs {
		img, _, trace := integrityTrace(t, cfg, 60000)
		for _, dc := range []DecoderConfig{DecoderConfigFrom(cfg), {Wire: cfg.Wire(), AllJumps: cfg.AllJumps}} {
			what := fmt.Sprintf("config %d (%d bytes)", i, len(trace))
			r := sameAsSerial(t, what, img, trace, dc, 200, false)
			// (the first pieces are decoded before the trace mode and
			// B-TYPE style are learned: their start states may differ)
			if r.pieces < 20 || r.redone > 2*3+1 {
				t.Errorf("%s: %d pieces, %d decoded again in sequence: the pieces are not decoded in parallel", what,
					r.pieces, r.redone)
			}
			if r.log.Gaps != 0 {
				t.Errorf("%s: %d gaps in an intact trace", what, r.log.Gaps)
			}
		}
	}
}

// Corrupt traces (bits flipped, bytes inserted, deleted or overwritten,
// the trace cut short), sync messages at piece boundaries among the
// corrupted ones, decode with jobs to exactly what they decode to
// serially, with --strict too: the suspect instructions of a gap count
// those of the pieces before.
func TestDecodeJobsCorrupt(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	suspectSeen := false
	pieces, redone := 0, 0
	for i, cfg := range periodicConfigs {
		img, _, trace := integrityTrace(t, cfg, 8000)
		dc := DecoderConfigFrom(cfg)
		var syncs []int64
		r := NewReader(bytes.NewReader(trace), cfg.Wire())
		var m Message
		for r.Next(&m) == nil {
			if m.TCode.IsSync() {
				syncs = append(syncs, m.Offset)
			}
		}
		for k := 0; k < 24; k++ {
			ops := make([]byte, 4)
			rng.Read(ops)
			if k%2 == 0 && len(syncs) > 2 {
				// a byte of a sync message (its F-ADDR, often)
				pos := int(syncs[1+rng.Intn(len(syncs)-1)]) + 1 + rng.Intn(3)
				ops[1], ops[2] = byte(pos), byte(pos>>8)
				if ops[0]%5 == 1 {
					ops[0] = 0
				}
			}
			bad, desc := corrupt(trace, ops)
			for _, strict := range []bool{false, true} {
				r := sameAsSerial(t, fmt.Sprintf("config %d, %s, strict %v", i, desc, strict), img, bad, dc, 120, strict)
				suspectSeen = suspectSeen || r.log.Suspect > 0
				pieces, redone = pieces+r.pieces, redone+r.redone
			}
		}
	}
	if !suspectSeen {
		t.Error("no gap with suspect instructions: the test does not check them")
	}
	// (a piece whose start a corruption changed is decoded again)
	t.Logf("%d pieces, %d decoded again in sequence", pieces, redone)
	if redone == 0 || redone*2 > pieces {
		t.Errorf("%d pieces, %d decoded again: the test does not exercise both paths", pieces, redone)
	}
}

// A two-source trace (two encoders' messages interleaved) decodes with
// jobs as it does serially.
func TestDecodeJobsMultiSource(t *testing.T) {
	cfg := withSync(Presets["best"], SyncMessages, 0)
	cfg.SrcBits = 2
	img, _, a := integrityTrace(t, cfg, 5000)
	cfg.SrcID = 2
	_, _, b := integrityTrace(t, cfg, 7000)
	var mixed []byte
	split := func(tr []byte) [][]byte {
		var out [][]byte
		offs := messageOffsets(tr, cfg.Wire())
		for i, o := range offs {
			end := int64(len(tr))
			if i+1 < len(offs) {
				end = offs[i+1]
			}
			out = append(out, tr[o:end])
		}
		return out
	}
	ma, mb := split(a), split(b)
	for len(ma) > 0 || len(mb) > 0 {
		for i := 0; i < 3 && len(ma) > 0; i++ {
			mixed, ma = append(mixed, ma[0]...), ma[1:]
		}
		for i := 0; i < 2 && len(mb) > 0; i++ {
			mixed, mb = append(mixed, mb[0]...), mb[1:]
		}
	}
	dc := DecoderConfig{Wire: cfg.Wire()}
	r := sameAsSerial(t, "two sources", img, mixed, dc, 150, false)
	if r.log.Gaps != 0 {
		t.Errorf("%d gaps in an intact two-source trace", r.log.Gaps)
	}
	bad, _ := corrupt(mixed, []byte{0, 0x30, 0x02, 3})
	sameAsSerial(t, "two sources, corrupt", img, bad, dc, 150, true)
}

// The empty trace, a trace without sync and the reference code's t1 trace
// (one sync) give with jobs what they give serially.
func TestDecodeJobsEdges(t *testing.T) {
	img, _, trace := integrityTrace(t, Presets["best"], 3000)
	dc := DecoderConfigFrom(Presets["best"])
	sameAsSerial(t, "empty", img, nil, dc, 100, false)
	sameAsSerial(t, "no sync", img, trace[len(trace)/2:], dc, 100, false)
	sameAsSerial(t, "single sync", img, trace, dc, 100, false)
	sameAsSerial(t, "idles", img, append(bytes.Repeat([]byte{0xff}, 300), trace...), dc, 100, false)
	// a circular-buffer capture: it starts anywhere and stops anywhere
	cfg := withSync(Presets["best"], SyncHalfwords, 4)
	img, _, trace = integrityTrace(t, cfg, 20000)
	dc = DecoderConfigFrom(cfg)
	dc.Decode.AllowTruncated = true
	for _, cut := range []int{1, 17, len(trace) / 3} {
		r := sameAsSerial(t, fmt.Sprintf("circular buffer from byte %d", cut), img, trace[cut:len(trace)-cut], dc, 150,
			true)
		if r.pieces < 5 {
			t.Errorf("circular buffer from byte %d: %d pieces", cut, r.pieces)
		}
	}
}

// The corpus: the reference encoder's t1 trace, and t1 encoded with the
// reference presets and best with a periodic sync, decode with jobs as
// serially, and to the corpus's own PC list.
func TestDecodeJobsCorpus(t *testing.T) {
	img, pcs := loadT1(t)
	nex, err := os.ReadFile(corpus.Path(t, "ntrace-refcode/t1/test-NEX.bin"))
	if err != nil {
		t.Fatal(err)
	}
	sameAsSerial(t, "test-NEX.bin", img, nex, DecoderConfig{}, 64, false)
	want := normalizePCs(t, pcs)
	for _, preset := range []string{"ref-btm", "ref-htm", "ref-htm-best", "best"} {
		cfg := withSync(Presets[preset], SyncHalfwords, 6)
		trace, _ := encodeFromPCs(t, img, pcs, cfg, ingress.PCOptions{})
		r := sameAsSerial(t, preset, img, trace, DecoderConfigFrom(cfg), 256, false)
		if r.pieces < 10 || r.redone > 7 {
			t.Errorf("%s: %d pieces, %d decoded again in sequence", preset, r.pieces, r.redone)
		}
		var out bytes.Buffer
		pw := flow.NewPCWriter(&out, img)
		d := mustDecoder(t, img, flow.Multi(pw, gapFail{t}), DecoderConfigFrom(cfg))
		if err := d.decodeJobs(bytes.NewReader(trace), 2, 256); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("%s: the PC list decoded with 2 jobs differs from test-PCONLY.txt at line %d", preset,
				firstDiff(out.Bytes(), want))
		}
	}
}

// With sinks that only tally ranges (the summary of rvtrace decode), the
// pieces pass their ranges as tallies, and the tallies come out as
// serially.
func TestDecodeJobsTally(t *testing.T) {
	for i, cfg := range periodicConfigs[:3] {
		img, _, trace := integrityTrace(t, cfg, 30000)
		bad, _ := corrupt(trace, []byte{0, byte(len(trace) / 3), byte(len(trace) / 3 >> 8), 2})
		for _, tr := range [][]byte{trace, bad} {
			var res [2]string
			for k, jobs := range []int{1, 3} {
				var cnt flow.Counter
				var integ flow.Integrity
				d := mustDecoder(t, img, flow.Multi(&integ, &cnt), DecoderConfigFrom(cfg))
				err := d.decodeJobs(bytes.NewReader(tr), jobs, 150)
				res[k] = fmt.Sprintf("%v %+v %s %v %+v", err, cnt, integ.Summary(false), integ.Details(), *d.Stats())
			}
			if res[0] != res[1] {
				t.Errorf("config %d: serially\n%s\nwith jobs\n%s", i, res[0], res[1])
			}
		}
	}
}

// A trace that ends right after its last sync (ProgTraceCorrelation with
// I-CNT=0) and then holds a malformed byte: the serial decoder knows that
// the source ended with no instruction suspect (the sync was a
// checkpoint) and reports the byte as a gap of no source; the decoder of
// the piece starting at that sync cannot know it (the point known good
// lies before its piece) and reports a gap of the source. Follows must
// refuse that piece (Decoder.openDep), which is then decoded in sequence
// to the serial output.
func TestDecodeJobsEndAfterSync(t *testing.T) {
	cfg := withSync(Presets["best"], SyncMessages, 0)
	// (a source ID other than 0: the gap of the source differs from a gap
	// of no source)
	cfg.SrcBits, cfg.SrcID = 2, 2
	img, _, trace := integrityTrace(t, cfg, 5000)
	w := cfg.Wire()
	// the last sync message, and the end of the Ownership message after it
	last, end := int64(-1), int64(0)
	r := NewReader(bytes.NewReader(trace), w)
	var m Message
	for r.Next(&m) == nil {
		switch {
		case m.TCode.IsSync():
			last, end = m.Offset, m.Offset+int64(m.Size)
		case m.TCode == TCodeOwnership && m.Offset == end:
			end += int64(m.Size)
		}
	}
	if last <= 0 {
		t.Fatal("no sync message after the first")
	}
	var c Message
	c.Reset(TCodeProgTraceCorrelation)
	c.Set(FieldSRC, 2).Set(FieldEVCODE, uint64(cfg.EndEVCode)).Set(FieldCDF, 1).Set(FieldICNT, 0).Set(FieldHIST, 1)
	bad, err := AppendMessage(append([]byte(nil), trace[:end]...), &c, &w)
	if err != nil {
		t.Fatal(err)
	}
	bad = append(bad, 0x07) // (MSEO=11: ends a message that never started)
	jr := sameAsSerial(t, "a malformed byte after the end", img, bad, DecoderConfigFrom(cfg), int(last), false)
	if jr.pieces != 2 || jr.redone != 1 || jr.log.Gaps != 1 {
		t.Errorf("%d pieces, %d decoded again, %d gaps; want 2, 1 (the last), 1", jr.pieces, jr.redone, jr.log.Gaps)
	}
	if n := len(jr.log.Lines); n == 0 || !strings.HasPrefix(jr.log.Lines[n-1], "{Kind:gap ") ||
		!strings.Contains(jr.log.Lines[n-1], " Src:0 ") {
		t.Error("the output does not end with a gap of no source: the case is not the one described")
	}
}
