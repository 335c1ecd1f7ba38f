package etrace

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/rvtrace/rvtrace/decode/parallel"
	"github.com/rvtrace/rvtrace/decode/parallel/paralleltest"
	"github.com/rvtrace/rvtrace/image"
)

// checkSplitBound cuts trace as DecodeJobs does with pieces of size bytes
// and fails when a piece holds more than parallel.HoldPieces pieces'
// worth of bytes and two frames (its last, and the primer of the next),
// when the split reads more than that and a scanner's buffer ahead of the
// piece it emits, or when the pieces do not tile the trace (overlapping
// by the primers only). It returns the pieces and the Cont pieces among
// them.
func checkSplitBound(t *testing.T, what string, img *image.Set, trace []byte, cfg Config, size int) (pieces, cont int) {
	t.Helper()
	d, err := NewDecoder(img, &pcSink{img: img}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := &paralleltest.Bound{T: t, What: what, R: &paralleltest.CountingReader{R: bytes.NewReader(trace)},
		Max: parallel.HoldPieces*size + 2*maxFrame, Ahead: scanBufSize}
	if _, _, err := d.split(b.R, size, b.Emit); err != nil {
		t.Fatalf("%s: split: %v", what, err)
	}
	b.End(len(trace))
	return b.Pieces, b.Cont
}

// A trace with a single sync packet (no periodic resynchronisation, or
// one that traps every few instructions keep putting off) is cut, for a
// parallel decode, into pieces that hold a bounded number of bytes
// (before, the split held it whole, and copied it, before the decode
// started); it decodes with 2 jobs exactly as serially, in the raw and
// the UTDD framing, intact and corrupted: bits flipped, a run of bytes
// longer than the bound that are framing errors (or, in UTDD, null
// packets), and the trace cut short in a frame.
func TestDecodeJobsBounded(t *testing.T) {
	img, pcs := loadT1(t)
	blocks := genBlocks(t, img, pcs, genOpts{trapEvery: 10})
	const size = 1024
	long := 5*size + 123 // (longer than a piece may be)
	raw := DefaultConfig()
	utdd := DefaultConfig()
	utdd.Encap = EncapUTDD
	utdd.ResyncPeriod = 64
	for _, c := range []struct {
		name          string
		cfg           Config
		garbage, null byte
	}{{"raw", raw, 0x00, 0}, {"utdd", utdd, 0xe1, 0x00}} {
		if err := c.cfg.Check(); err != nil {
			t.Fatal(err)
		}
		trace, _ := encode(t, c.cfg, nil, blocks)
		var frames []int
		syncs := 0
		sc := NewScanner(bytes.NewReader(trace), &c.cfg)
		for sc.Scan() {
			frames = append(frames, int(sc.Frame().Offset))
			if pl := sc.Frame().Payload; pl[0]&3 == FormatSync && pl[0]>>2&3 == SubStart {
				syncs++
			}
		}
		if syncs != 1 || len(trace) < 200<<10 {
			t.Fatalf("%s: %d bytes, %d sync packets: not the case", c.name, len(trace), syncs)
		}
		frameAt := func(frac float64) int { return frames[int(float64(len(frames))*frac)] }
		flip := func(at int, bit uint) []byte {
			out := slices.Clone(trace)
			out[at] ^= 1 << bit
			return out
		}
		cases := []struct {
			name  string
			trace []byte
			gap   bool
		}{
			{"intact", trace, false},
			{"bit flipped at 1/4", flip(frameAt(0.25)+1, 3), true},
			{"bit flipped at 1/2", flip(frameAt(0.5)+1, 5), true},
			{"header bit flipped at 3/4", flip(frameAt(0.75), 2), true},
			{"run of framing errors", slices.Insert(slices.Clone(trace), frameAt(0.4), bytes.Repeat([]byte{c.garbage}, long)...), true},
			{"cut in a frame", trace[:frameAt(0.66)+1], true},
		}
		if c.name == "utdd" {
			cases = append(cases, struct {
				name  string
				trace []byte
				gap   bool
			}{"run of null packets", slices.Insert(slices.Clone(trace), frameAt(0.6), bytes.Repeat([]byte{c.null}, long)...), false})
		}
		for _, k := range cases {
			what := fmt.Sprintf("%s, %s (%d bytes)", c.name, k.name, len(k.trace))
			pieces, cont := checkSplitBound(t, what, img, k.trace, c.cfg, size)
			if cont < len(k.trace)/(parallel.HoldPieces*size)-2 {
				t.Errorf("%s: %d pieces, %d cut without a sync: the single sync does not make the case", what, pieces,
					cont)
			}
			r := sameWithJobs(t, what, img, k.trace, c.cfg, 2, size, k.name == "bit flipped at 1/2")
			if (r.log.Gaps != 0) != k.gap {
				t.Errorf("%s: %d gaps", what, r.log.Gaps)
			}
		}
	}
}
