package ntrace

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/rvtrace/rvtrace/decode/parallel"
	"github.com/rvtrace/rvtrace/decode/parallel/paralleltest"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
)

// checkSplitBound cuts trace as DecodeJobs does with pieces of size bytes
// and fails when a piece holds more than parallel.HoldPieces pieces'
// worth of bytes and three messages (its last, and the primer of the
// next), when the split reads more than that and a reader's buffer ahead
// of the piece it emits, or when the pieces do not tile the trace
// (overlapping by the primers only). It returns the pieces and the Cont
// pieces among them.
func checkSplitBound(t *testing.T, what string, img *image.Set, trace []byte, dc DecoderConfig, size int) (pieces, cont int) {
	t.Helper()
	d := mustDecoder(t, img, &paralleltest.Log{}, dc)
	b := &paralleltest.Bound{T: t, What: what, R: &paralleltest.CountingReader{R: bytes.NewReader(trace)},
		Max: parallel.HoldPieces*size + 3*MaxMessageBytes, Ahead: 32 << 10}
	if _, err := d.splitter()(b.R, size, b.Emit); err != nil {
		t.Fatalf("%s: split: %v", what, err)
	}
	b.End(len(trace))
	return b.Pieces, b.Cont
}

// A trace with a single sync message (the btm and best presets: no
// periodic sync) is cut, for a parallel decode, into pieces that hold a
// bounded number of bytes (before, the split held it whole, and copied
// it, before the decode started); it decodes with 2 jobs exactly as
// serially, intact and corrupted: bits flipped, runs of idle bytes
// (decoded with NoIdle: gaps that count them) and of bytes skipped after
// a malformed message, longer than the bound, in the middle and right
// after the sync, and the trace cut short in a message.
func TestDecodeJobsBounded(t *testing.T) {
	for _, preset := range []string{"btm", "best"} {
		cfg := Presets[preset]
		img, _, trace := integrityTrace(t, cfg, 1000000)
		dc := DecoderConfigFrom(cfg)
		if !dc.NoIdle {
			t.Fatal("the decoder does not count idle bytes")
		}
		const size = 1024
		offs := messageOffsets(trace, cfg.Wire())
		msgAt := func(frac float64) int { return int(offs[int(float64(len(offs))*frac)]) }
		insert := func(at int, run []byte) []byte {
			return append(append(append([]byte(nil), trace[:at]...), run...), trace[at:]...)
		}
		flip := func(at int, bit uint) []byte {
			out := append([]byte(nil), trace...)
			out[at] ^= 1 << bit
			return out
		}
		long := 5*size + 123 // (longer than a piece may be)
		cases := []struct {
			name  string
			trace []byte
		}{
			{"intact", trace},
			{"bit flipped at 1/4", flip(msgAt(0.25)+1, 3)},
			{"bit flipped at 1/2", flip(msgAt(0.5), 0)},
			{"bit flipped at 3/4", flip(msgAt(0.75)+2, 6)},
			{"idle run in the middle", insert(msgAt(0.5), bytes.Repeat([]byte{idleByte}, long))},
			{"idle run after the sync", insert(int(offs[1]), bytes.Repeat([]byte{idleByte}, long))},
			{"idle run inside a message", insert(msgAt(0.3)+1, bytes.Repeat([]byte{idleByte}, long))},
			{"reserved MSEO run", insert(msgAt(0.6), bytes.Repeat([]byte{0x02}, long))},
			{"overlong message", insert(msgAt(0.4), bytes.Repeat([]byte{0x00}, long))},
			{"cut in a message", trace[:msgAt(0.66)+1]},
		}
		if preset == "best" {
			cases = cases[:3]
		}
		for _, c := range cases {
			what := fmt.Sprintf("%s, %s (%d bytes)", preset, c.name, len(c.trace))
			pieces, cont := checkSplitBound(t, what, img, c.trace, dc, size)
			if cont < len(c.trace)/(parallel.HoldPieces*size)-2 {
				t.Errorf("%s: %d pieces, %d cut without a sync: the single sync does not make the case", what, pieces,
					cont)
			}
			r := sameWithJobs(t, what, img, c.trace, dc, 2, size, c.name == "bit flipped at 1/2")
			if c.name == "intact" && r.log.Gaps != 0 {
				t.Errorf("%s: %d gaps", what, r.log.Gaps)
			}
			if c.name != "intact" && r.log.Gaps == 0 {
				t.Errorf("%s: no gap: the corruption was not seen", what)
			}
		}
	}
}

// A run of idle bytes longer than the bound between a sync message that
// starts a piece and the Ownership message after it (a periodic-sync
// trace with the context on): the split, looking for the Ownership
// message of the primer, stops in the run and cuts it as any other, and
// the decode with 2 jobs is the serial one.
func TestDecodeJobsBoundedAfterSync(t *testing.T) {
	cfg := periodicConfigs[6]
	if !cfg.Context {
		t.Fatal("the configuration has no Ownership messages")
	}
	img, _, trace := integrityTrace(t, cfg, 30000)
	const size = 1024
	var syncs []int64
	r := NewReader(bytes.NewReader(trace), cfg.Wire())
	var m Message
	for r.Next(&m) == nil {
		if m.TCode.IsSync() {
			syncs = append(syncs, m.Offset+int64(m.Size))
		}
	}
	if len(syncs) < 10 {
		t.Fatalf("%d sync messages", len(syncs))
	}
	// (after two in a row: the first run's cut leaves the second sync
	// more than size bytes into its piece, which it then starts)
	k := len(syncs) / 2
	run := bytes.Repeat([]byte{idleByte}, 5*size+123)
	bad := append([]byte(nil), trace[:syncs[k]]...)
	bad = append(append(bad, run...), trace[syncs[k]:syncs[k+1]]...)
	bad = append(append(bad, run...), trace[syncs[k+1]:]...)
	dc := DecoderConfigFrom(cfg)
	_, cont := checkSplitBound(t, "idle runs after two syncs", img, bad, dc, size)
	if cont < 2 {
		t.Errorf("%d pieces cut without a sync: the runs were not cut", cont)
	}
	jr := sameWithJobs(t, "idle runs after two syncs", img, bad, dc, 2, size, false)
	if jr.log.Gaps < 2 {
		t.Errorf("%d gaps: the idle runs were not seen", jr.log.Gaps)
	}
}

// BenchmarkDecodeJobsSingleSync measures DecodeJobs with 1 job (Decode)
// and 2 on a trace of 4 million instructions with a single sync message
// (the best preset), to a counting sink (rvtrace decode's summary): its
// B/op is the memory the parallel decode takes on such a trace, once held
// whole by the split; run it with GOMAXPROCS=2.
func BenchmarkDecodeJobsSingleSync(b *testing.B) {
	img, err := integrityImage()
	if err != nil {
		b.Skip(err)
	}
	cfg := Presets["best"]
	cfg.XLEN = img.XLEN()
	trace, err := encodePCs(img, synthFlow(img, 1, 4_000_000, true), cfg)
	if err != nil {
		b.Fatal(err)
	}
	for _, jobs := range []int{1, 2} {
		b.Run(fmt.Sprintf("jobs=%d", jobs), func(b *testing.B) {
			b.SetBytes(int64(len(trace)))
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				d := mustDecoder(b, img, &flow.Counter{}, DecoderConfigFrom(cfg))
				if err := d.DecodeJobs(bytes.NewReader(trace), jobs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
