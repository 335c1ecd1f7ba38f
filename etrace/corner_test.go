package etrace

import (
	"bytes"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// looplabel builds the specification's updiscon example: looplabel-2: nop,
// looplabel: nop, +2: nop, +4: c.jr a0 (back to looplabel).
func looplabel() *image.Set {
	img := image.NewSet()
	img.AddBytes("loop", 0x1000, []byte{0x01, 0x00, 0x01, 0x00, 0x01, 0x00, 0x02, 0x85})
	img.SetXLEN(64)
	return img
}

// TestUpdisconLooplabel checks the scenarios of the specification's
// section on the updiscon bit: a trap after looplabel in the first and in
// the second loop iteration, and the end of tracing at either.
func TestUpdisconLooplabel(t *testing.T) {
	img := looplabel()
	first := []ingress.Block{
		{IAddr: 0x1000, IRetire: 2, IType: ingress.ITypeInterrupt, Cause: 7, Priv: ingress.PrivM}, // 1000 1002, trap
		{IAddr: 0x1004, IRetire: 2, IType: ingress.ITypeIndirectJump, Priv: ingress.PrivM},        // handler: 1004 1006
		{IAddr: 0x1002, IRetire: 1, Priv: ingress.PrivM},
	}
	second := []ingress.Block{
		{IAddr: 0x1000, IRetire: 4, IType: ingress.ITypeIndirectJump, Priv: ingress.PrivM}, // 1000..1006
		{IAddr: 0x1002, IRetire: 1, IType: ingress.ITypeInterrupt, Cause: 7, Priv: ingress.PrivM},
		{IAddr: 0x1004, IRetire: 2, IType: ingress.ITypeIndirectJump, Priv: ingress.PrivM},
		{IAddr: 0x1002, IRetire: 1, Priv: ingress.PrivM},
	}
	endSecond := second[:1:1]
	endSecond = append(endSecond, ingress.Block{IAddr: 0x1002, IRetire: 1, Priv: ingress.PrivM})
	for _, v := range []Version{V2, V026} {
		for _, tc := range []struct {
			name     string
			blocks   []ingress.Block
			updiscon bool
		}{
			{"trap-first-iteration", first, false},
			{"trap-second-iteration", second, true},
			{"end-second-iteration", endSecond, false},
		} {
			cfg := DefaultConfig()
			cfg.Version = v
			var buf bytes.Buffer
			e, _ := NewEncoder(&buf, cfg, img)
			var pk []Packet
			e.OnPacket = func(p *Packet) { pk = append(pk, *p) }
			for i := range tc.blocks {
				e.Block(&tc.blocks[i])
			}
			e.Close()
			flagged := false
			for _, p := range pk {
				flagged = flagged || p.Updiscon
			}
			if v == V2 && flagged != tc.updiscon {
				t.Errorf("%s: updiscon set %v, want %v", tc.name, flagged, tc.updiscon)
			}
			s := decodePCs(t, cfg, img, buf.Bytes())
			for _, ev := range s.events {
				t.Errorf("%s %s: %v", v, tc.name, &ev)
			}
			comparePCs(t, v.String()+"/"+tc.name, s.pcs, retired(t, img, tc.blocks))
		}
	}
}

// TestCSVRoundTrip converts traces to the reference CSV and decodes the
// CSV.
func TestCSVRoundTrip(t *testing.T) {
	img, pcs := loadT1(t)
	blocks := genBlocks(t, img, pcs[:20000], genOpts{trapEvery: 101, ctxEvery: 33})
	want := retired(t, img, blocks)
	for _, v := range []Version{V2, V026} {
		for _, m := range modes {
			cfg := DefaultConfig()
			cfg.Version = v
			cfg.Params.NoContext = false
			m.set(&cfg)
			data, _ := encode(t, cfg, nil, blocks)
			var csv bytes.Buffer
			if err := ToCSV(bytes.NewReader(data), &cfg, &csv); err != nil {
				t.Fatal(err)
			}
			s := &pcSink{img: img}
			d, _ := NewDecoder(img, s, cfg)
			if err := d.DecodeCSV(&csv); err != nil {
				t.Fatal(err)
			}
			for _, ev := range s.events {
				t.Errorf("%s/%s: %v", v, m.name, &ev)
				break
			}
			comparePCs(t, v.String()+"/"+m.name, s.pcs, want)
		}
	}
}
