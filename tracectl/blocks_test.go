package tracectl

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
)

// windowWriter fails the writes numbered from failFrom to failTo (the
// first is 0), as a sink that cannot take them: two encoders writing the
// same messages lose the same ones.
type windowWriter struct {
	w                        io.Writer
	writes, failFrom, failTo int
}

func (l *windowWriter) Write(p []byte) (int, error) {
	i := l.writes
	l.writes++
	if i >= l.failFrom && i < l.failTo {
		return 0, io.ErrShortWrite
	}
	return l.w.Write(p)
}

// TestBlocksMatchBlock drives two encoder components with the same blocks
// (t1's, 150 times, with times), one through Blocks in batches of random
// sizes, as the simulator hands them over (runs of branches go to the
// N-Trace encoder's Branches), the other block by block, with the same
// register writes and triggers between batches and trace lost in the
// middle (writes failing), and requires the same bytes and registers; in
// N-Trace configurations with and without the record planner and with
// narrow counters, and E-Trace (etrace.Encoder.Branches: the blocks
// that send no packet in runs, a packet that reaches the writer ending
// a call).
func TestBlocksMatchBlock(t *testing.T) {
	img, _, _ := loadT1(t)
	blks := loadBlocks(t)
	best := ntrace.Presets["best"]
	best.XLEN = 64
	narrow := ntrace.Config{Mode: ntrace.HTM, HistBits: 5, ICNTBits: 7, RepeatedHistory: true, Timestamps: true, XLEN: 64}
	htm := ntrace.Presets["ref-htm-best"]
	htm.XLEN = 64
	settings := map[string]Settings{
		"best":         {Format: FormatNTrace, NTrace: best},
		"narrow":       {Format: FormatNTrace, NTrace: narrow},
		"ref-htm-best": {Format: FormatNTrace, NTrace: htm},
		"etrace":       {Format: FormatETrace, ETrace: etrace.DefaultConfig()},
	}
	for name, set := range settings {
		t.Run(name, func(t *testing.T) {
			var outA, outB bytes.Buffer
			n := len(blks)
			wa := &windowWriter{w: &outA, failFrom: 1, failTo: 2}
			wb := &windowWriter{w: &outB, failFrom: 1, failTo: 2}
			a, ref := NewEncoder(img, wa), NewEncoder(img, wb)
			for _, e := range []*Encoder{a, ref} {
				if err := e.Configure(set); err != nil {
					t.Fatal(err)
				}
				if err := e.setFields(TeControl, fv{"trTeInstTrigEnable", 1}); err != nil {
					t.Fatal(err)
				}
			}
			var all []ingress.Block
			for i := 0; i < 150*n; i++ {
				b := blks[i%n]
				b.Time = uint64(i) * 7
				all = append(all, b)
			}
			r := rand.New(rand.NewPCG(5, 6))
			batches := 0
			for at := 0; at < len(all); {
				k := min(1+r.IntN(300), len(all)-at)
				// between batches, now and then: trace off and on, a
				// notification
				if batches%17 == 5 {
					for _, e := range []*Encoder{a, ref} {
						if err := e.DebugTrigger(3 - batches%2); err != nil {
							t.Fatal(err)
						}
					}
				}
				if batches%23 == 7 {
					for _, e := range []*Encoder{a, ref} {
						if err := e.DebugTrigger(4); err != nil {
							t.Fatal(err)
						}
					}
				}
				if err := a.Blocks(all[at : at+k]); err != nil {
					t.Fatalf("batch at %d: %v", at, err)
				}
				for i := at; i < at+k; i++ {
					b := all[i]
					if err := ref.Block(&b); err != nil {
						t.Fatalf("block %d: %v", i, err)
					}
				}
				if a.tsLast != ref.tsLast || a.tsSeen != ref.tsSeen || a.passed != ref.passed || a.fast != ref.fast {
					t.Fatalf("after block %d: last time %d/%v, passed %v, fast %v; block by block %d/%v, %v, %v",
						at+k-1, a.tsLast, a.tsSeen, a.passed, a.fast, ref.tsLast, ref.tsSeen, ref.passed, ref.fast)
				}
				at += k
				batches++
			}
			if wa.writes <= wa.failTo {
				t.Fatalf("%d writes: the loss (writes %d-%d) did not happen", wa.writes, wa.failFrom, wa.failTo)
			}
			for _, e := range []*Encoder{a, ref} {
				if err := e.Close(); err != nil && !errors.Is(err, io.ErrShortWrite) {
					t.Fatal(err)
				}
			}
			if !bytes.Equal(outA.Bytes(), outB.Bytes()) {
				i := 0
				for i < outA.Len() && i < outB.Len() && outA.Bytes()[i] == outB.Bytes()[i] {
					i++
				}
				t.Fatalf("bytes differ at offset %d (%d and %d bytes)", i, outA.Len(), outB.Len())
			}
			for off := uint32(0); off < 0x1000; off += 4 {
				if x, y := a.ReadReg(off), ref.ReadReg(off); x != y {
					t.Errorf("register %#x: %#x, block by block %#x", off, x, y)
				}
			}
			t.Logf("%d blocks in %d batches, %d bytes, %d writes", len(all), batches, outA.Len(), wa.writes)
		})
	}
}
