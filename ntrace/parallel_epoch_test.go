package ntrace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/rvtrace/rvtrace/decode/parallel/paralleltest"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

// timedT1 returns t1's image with its code loaded again at each of the
// instruction counts at (image.Set.AddTimedBytes, as a sideband loads
// code rewritten while the system ran): the same bytes when same, else
// with the word at patch changed each time.
func timedT1(t *testing.T, at []uint64, same bool, patch uint64) *image.Set {
	t.Helper()
	var edit func(k int, addr uint64, code []byte)
	if !same {
		edit = func(k int, addr uint64, code []byte) {
			if patch >= addr && patch+4 <= addr+uint64(len(code)) {
				// another instruction of the same length: addi a5, a5, k+1
				binary.LittleEndian.PutUint32(code[patch-addr:], uint32(k+1)<<20|15<<15|15<<7|0x13)
			}
		}
	}
	img, err := paralleltest.Timed(corpus.Path(t, "ntrace-refcode/t1/test.elf"), at, edit)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// lastCounter counts the range events by their last instruction.
type lastCounter map[uint64]int

func (c lastCounter) Event(e *flow.Event) error {
	if e.Kind == flow.KindRange {
		c[e.Last]++
	}
	return nil
}
func (c lastCounter) Close() error { return nil }

// busiestLast returns the last instruction of the range the flow of
// trace ends most often.
func busiestLast(t *testing.T, trace []byte, dc DecoderConfig) uint64 {
	c := lastCounter{}
	if err := mustDecoder(t, timedT1(t, nil, true, 0), c, dc).Decode(bytes.NewReader(trace)); err != nil {
		t.Fatal(err)
	}
	best := uint64(0)
	for a, k := range c {
		if k > c[best] || k == c[best] && a < best {
			best = a
		}
	}
	return best
}

// Images that change at instruction counts (a sideband's code rewritten
// while the system ran) decode with jobs to exactly what they decode to
// serially: every event, with the image (the view of the instruction
// count) it names, gaps, statistics. The pieces' decoders start from a
// guessed instruction count; made wrong on purpose (guessSkew), the
// pieces whose count range holds a change are decoded again in sequence,
// and only those: without that check their events would name the
// images of other counts.
func TestDecodeJobsTimedImages(t *testing.T) {
	cfg := withSync(Presets["best"], SyncMessages, 0)
	_, truth, trace := integrityTrace(t, cfg, 60000)
	n := uint64(len(truth))
	var at []uint64
	for k := uint64(1); k <= 6; k++ {
		at = append(at, k*n/7+k*k)
	}
	dc := DecoderConfigFrom(cfg)
	for _, same := range []bool{true, false} {
		// (the patched word: the last instruction of a range the flow runs)
		patch := uint64(0)
		if !same {
			patch = busiestLast(t, trace, dc)
		}
		img := timedT1(t, at, same, patch)
		if len(img.Epochs()) != len(at) {
			t.Fatalf("%d epochs, want %d", len(img.Epochs()), len(at))
		}
		what := fmt.Sprintf("same code %v", same)
		r := sameAsSerial(t, what, img, trace, dc, 200, false)
		if same && r.log.Gaps != 0 {
			t.Errorf("%s: %d gaps", what, r.log.Gaps)
		}
		if !same && r.log.Gaps == 0 {
			t.Errorf("%s: no gap: the patched code is not where the flow runs", what)
		}
		if r.pieces < 20 {
			t.Errorf("%s: %d pieces", what, r.pieces)
		}
		t.Logf("%s: %d pieces, %d decoded again", what, r.pieces, r.redone)
		// wrong guesses: a few hundred instructions off (a piece has
		// about 2,000), and far off
		for _, skew := range []uint64{300, 1 << 40} {
			guessSkew = skew
			r := sameAsSerial(t, fmt.Sprintf("%s, guesses %d too high", what, skew), img, trace, dc, 200, true)
			guessSkew = 0
			// the pieces whose counts hold an epoch, or whose skewed
			// range does, are decoded again; with the huge skew every
			// piece that starts before the last epoch
			// (with the patched code the decoder loses the flow and
			// counts fewer instructions: some epochs are never reached)
			min := 0
			if same {
				min = len(at)
			}
			if skew > n {
				// (those that start after the last epoch follow the
				// same images whatever their count: 1/7 of them)
				min = r.pieces * 5 / 7
			}
			if r.redone < min {
				t.Errorf("%s, skew %d: %d of %d pieces decoded again, want at least %d", what, skew, r.redone, r.pieces, min)
			}
			t.Logf("%s, skew %d: %d pieces, %d decoded again", what, skew, r.pieces, r.redone)
			if skew < n && r.redone > 3*len(at)+8 {
				t.Errorf("%s, skew %d: %d of %d pieces decoded again", what, skew, r.redone, r.pieces)
			}
		}
	}
}
