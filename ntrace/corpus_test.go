package ntrace

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

// loadT1 returns the t1 image and its PC list.
func loadT1(t testing.TB) (*image.Set, []byte) {
	elf := corpus.Path(t, "ntrace-refcode/t1/test.elf")
	pcs := corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt")
	img := image.NewSet()
	if err := img.AddELF(elf); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(pcs)
	if err != nil {
		t.Fatal(err)
	}
	return img, data
}

// decodeToPCs decodes trace bytes into a PC list (and the flow counter).
func decodeToPCs(t testing.TB, img *image.Set, trace []byte, cfg DecoderConfig) ([]byte, *flow.Counter) {
	var out bytes.Buffer
	pw := flow.NewPCWriter(&out, img)
	cnt := &flow.Counter{}
	d := mustDecoder(t, img, flow.Multi(pw, cnt, gapFail{t}), cfg)
	if err := d.Decode(bytes.NewReader(trace)); err != nil {
		t.Fatal(err)
	}
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), cnt
}

// gapFail fails the test on any gap in the flow.
type gapFail struct{ t testing.TB }

func (g gapFail) Event(e *flow.Event) error {
	if e.Kind == flow.KindGap {
		g.t.Errorf("gap: %v", e.Err)
	}
	return nil
}
func (g gapFail) Close() error { return nil }

// normalizePCs rewrites a PC list in the canonical form (0x, lower case).
func normalizePCs(t testing.TB, data []byte) []byte {
	var out bytes.Buffer
	w := ingress.NewPCWriter(&out)
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		pc, err := ingress.ParsePC(string(line))
		if err != nil {
			t.Fatal(err)
		}
		w.Write(pc)
	}
	w.Flush()
	return out.Bytes()
}

func firstDiff(a, b []byte) int {
	la, lb := bytes.Split(a, []byte{'\n'}), bytes.Split(b, []byte{'\n'})
	for i := range la {
		if i >= len(lb) || !bytes.Equal(la[i], lb[i]) {
			return i + 1
		}
	}
	return len(la) + 1
}

// The reference encoder's t1 trace decodes to exactly the reference PC
// list: with the decoder of unknown origin, and with every check of
// rvtrace's own encoder configured as the preset that reproduces the
// reference's configuration (ref-htm-best, DecoderConfigFrom): those
// checks (OwnEncoder, the counter and sync bounds) must not make a gap of
// the reference's trace.
func TestDecodeReferenceNEX(t *testing.T) {
	img, pcs := loadT1(t)
	nex, err := os.ReadFile(corpus.Path(t, "ntrace-refcode/t1/test-NEX.bin"))
	if err != nil {
		t.Fatal(err)
	}
	own := Presets["ref-htm-best"]
	own.XLEN = img.XLEN()
	for name, cfg := range map[string]DecoderConfig{"any": {}, "ref-htm-best": DecoderConfigFrom(own)} {
		got, cnt := decodeToPCs(t, img, nex, cfg)
		want := normalizePCs(t, pcs)
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: decoded PC list differs from test-PCONLY.txt at line %d (%d vs %d instructions)",
				name, firstDiff(got, want), cnt.Instructions, bytes.Count(want, []byte{'\n'}))
		}
		if cnt.Instructions != 164959 {
			t.Errorf("%s: decoded %d instructions, want 164959", name, cnt.Instructions)
		}
	}
}

// encodeBlocks encodes blocks from a PC list with cfg.
func encodeFromPCs(t testing.TB, img *image.Set, pcs []byte, cfg Config, opt ingress.PCOptions) ([]byte, *Stats) {
	var out bytes.Buffer
	enc, err := NewEncoder(&out, cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := ingress.NewPCSource(bytes.NewReader(pcs), "pcs", img, opt)
	for {
		b, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.Block(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	st := enc.Stats()
	st.Instructions = src.Instructions()
	return out.Bytes(), st
}

// The five reference configurations give sizes within 3% of the
// reference encoder's on t1, and best is smaller than the reference's best.
func TestReferencePresetSizes(t *testing.T) {
	img, pcs := loadT1(t)
	want := normalizePCs(t, pcs)
	ref := map[string]int{"ref-btm": 12978, "ref-htm": 3393, "ref-htm-rpt": 2628, "ref-htm-cs8": 3374, "ref-htm-best": 2604}
	for _, name := range []string{"ref-btm", "ref-htm", "ref-htm-rpt", "ref-htm-cs8", "ref-htm-best", "best"} {
		cfg := Presets[name]
		trace, st := encodeFromPCs(t, img, pcs, cfg, ingress.PCOptions{})
		got, _ := decodeToPCs(t, img, trace, DecoderConfigFrom(cfg))
		if !bytes.Equal(got, want) {
			t.Errorf("%s: round trip differs at line %d", name, firstDiff(got, want))
		}
		n := len(trace)
		if r, ok := ref[name]; ok {
			if d := float64(n-r) / float64(r); d > 0.03 || d < -0.03 {
				t.Errorf("%s: %d bytes, reference %d (%.1f%%)", name, n, r, 100*d)
			}
		} else if n >= 2604 {
			t.Errorf("%s: %d bytes, not smaller than the reference's best 2604", name, n)
		}
		t.Logf("%-13s %6d bytes %5d messages %.3f bits/instr", name, n, st.Messages, st.BitsPerInstruction())
	}
}
