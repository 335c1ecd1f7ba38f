package etrace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// nestProg is a program for nested traps: main at 0x1000 (nop, ecall,
// nop, j .), an M handler at 0x2000 (nop, mret) and S handlers at 0x3000
// (nop, sret) and 0x4000 (ebreak, sret), every instruction 4 bytes.
func nestProg() *image.Set {
	words := func(ws ...uint32) []byte {
		b := make([]byte, 4*len(ws))
		for i, w := range ws {
			binary.LittleEndian.PutUint32(b[4*i:], w)
		}
		return b
	}
	const nop, ecall, ebreak, mret, sret, jself = 0x00000013, 0x00000073, 0x00100073, 0x30200073, 0x10200073, 0x0000006f
	img := image.NewSet()
	img.AddBytes("main", 0x1000, words(nop, ecall, nop, jself))
	img.AddBytes("mhandler", 0x2000, words(nop, mret))
	img.AddBytes("shandler", 0x3000, words(nop, sret))
	img.AddBytes("bhandler", 0x4000, words(ebreak, sret))
	img.SetXLEN(64)
	return img
}

// trapSink collects a decoded flow's PCs, traps, warnings and gaps.
type trapSink struct {
	pcSink
	traps []flow.Event
	warns []flow.Event
	gaps  []flow.Event
}

func (s *trapSink) Event(e *flow.Event) error {
	switch e.Kind {
	case flow.KindTrap:
		s.traps = append(s.traps, *e)
	case flow.KindWarn:
		s.warns = append(s.warns, *e)
	case flow.KindGap:
		s.gaps = append(s.gaps, *e)
	}
	return s.pcSink.Event(e)
}

// TestNestedTrapEPC checks the EPC of a trap taken before the handler of
// the trap before it ran (at that handler's first instruction): the
// decoder reports it where the trace determines it (an instruction fetch
// fault's or an EBREAK's trap value; two exceptions taken to the same
// privilege, which share their handler) and warns, with the EPC unknown
// (0), where it does not (an interrupt, whose handler may be vectored; a
// trap to M taken from U, whose first trap may have gone to S; a
// breakpoint trigger, whose trap value may be a data address). The
// instruction flow is exact in every case.
func TestNestedTrapEPC(t *testing.T) {
	img := nestProg()
	const M, S, U = ingress.PrivM, ingress.PrivS, ingress.PrivU
	// ecall at 0x1004 from priv (cause 8 + priv) to the handler at h
	ecallTo := func(priv ingress.Priv) ingress.Block {
		return ingress.Block{IAddr: 0x1000, IRetire: 4, ILastSize: 1, IType: ingress.ITypeException, Cause: 8 + uint64(priv), Priv: priv}
	}
	// a trap at h before anything there retired
	at := func(h uint64, it ingress.IType, cause, tval uint64, priv ingress.Priv) ingress.Block {
		return ingress.Block{IAddr: h, IType: it, Cause: cause, TVal: tval, Priv: priv}
	}
	// the handler at h runs (nop, xret) in priv and returns to 0x1008
	// in back, where the trace ends
	handler := func(h uint64, priv, back ingress.Priv) []ingress.Block {
		return []ingress.Block{
			{IAddr: h, IRetire: 4, ILastSize: 1, IType: ingress.ITypeTrapReturn, Priv: priv},
			{IAddr: 0x1008, IRetire: 2, ILastSize: 1, Priv: back},
		}
	}
	exc, irq := ingress.ITypeException, ingress.ITypeInterrupt
	for _, tc := range []struct {
		name   string
		blocks []ingress.Block
		epcs   []uint64 // the EPC of each trap; 0: the decoder must warn
	}{
		{"page-fault-M", append([]ingress.Block{ecallTo(M), at(0x2000, exc, 12, 0x2000, M)}, handler(0x2000, M, M)...),
			[]uint64{0x1004, 0x2000}},
		{"illegal-S-same-priv", append([]ingress.Block{
			{IAddr: 0x1000, IRetire: 2, ILastSize: 1, IType: exc, Cause: 2, TVal: 0x13, Priv: S},
			at(0x3000, exc, 2, 0xdeadbeef, S)}, handler(0x3000, S, S)...),
			[]uint64{0x1004, 0x3000}},
		{"access-fault-U-to-S-to-M-tval", append([]ingress.Block{ecallTo(U), at(0x3000, exc, 1, 0x3000, S)}, handler(0x2000, M, U)...),
			[]uint64{0x1004, 0x3000}},
		{"access-fault-U-to-S-to-M-no-tval", append([]ingress.Block{ecallTo(U), at(0x3000, exc, 1, 0, S)}, handler(0x2000, M, U)...),
			[]uint64{0x1004, 0}},
		{"ecall-U-to-M-then-M", append([]ingress.Block{ecallTo(U), at(0x2000, exc, 2, 0x73, M)}, handler(0x2000, M, U)...),
			[]uint64{0x1004, 0}},
		{"interrupt-at-handler", append([]ingress.Block{ecallTo(M), at(0x2000, irq, 7, 0, M)}, handler(0x2000, M, M)...),
			[]uint64{0x1004, 0}},
		{"exception-after-interrupt", append([]ingress.Block{
			{IAddr: 0x1000, IRetire: 2, ILastSize: 1, IType: irq, Cause: 11, Priv: M},
			at(0x2000, exc, 2, 0x13, M)}, handler(0x2000, M, M)...),
			[]uint64{0x1004, 0}},
		{"ebreak-S-to-M", append([]ingress.Block{ecallTo(S), at(0x4000, exc, 3, 0x4000, S)}, handler(0x2000, M, S)...),
			[]uint64{0x1004, 0x4000}},
		// A breakpoint trigger: on an instruction fetch its tval is the
		// instruction's address, on a load or store the data's, which
		// the trace cannot tell apart.
		{"fetch-trigger-S-to-M", append([]ingress.Block{ecallTo(S), at(0x3000, exc, 3, 0x3000, S)}, handler(0x2000, M, S)...),
			[]uint64{0x1004, 0}},
		{"data-trigger-S-to-M", append([]ingress.Block{ecallTo(S), at(0x3000, exc, 3, 0x5000, S)}, handler(0x2000, M, S)...),
			[]uint64{0x1004, 0}},
		{"three-deep", append([]ingress.Block{ecallTo(M), at(0x2000, exc, 12, 0x2000, M), at(0x2000, exc, 12, 0x2000, M)}, handler(0x2000, M, M)...),
			[]uint64{0x1004, 0x2000, 0x2000}},
		{"three-deep-interrupt-last", append([]ingress.Block{ecallTo(M), at(0x2000, exc, 12, 0x2000, M), at(0x2000, irq, 3, 0, M)}, handler(0x2000, M, M)...),
			[]uint64{0x1004, 0x2000, 0}},
	} {
		for _, m := range []struct {
			name string
			set  func(*Config)
		}{
			{"default", func(*Config) {}},
			{"implicit-exception", func(c *Config) {
				c.Options.ImplicitException = true
				c.Params.TVec = 0x2000
			}},
		} {
			name := tc.name + "/" + m.name
			cfg := DefaultConfig()
			m.set(&cfg)
			data, _ := encode(t, cfg, nil, tc.blocks)
			s := &trapSink{pcSink: pcSink{img: img}}
			d, err := NewDecoder(img, s, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := d.Decode(bytes.NewReader(data)); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if len(s.gaps) > 0 {
				t.Errorf("%s: gaps %v", name, s.gaps)
				continue
			}
			if !comparePCs(t, name, s.pcs, retired(t, img, tc.blocks)) {
				continue
			}
			if len(s.traps) != len(tc.epcs) {
				t.Errorf("%s: %d traps decoded, want %d", name, len(s.traps), len(tc.epcs))
				continue
			}
			unknown := 0
			for i, w := range tc.epcs {
				if g := s.traps[i].Addr; g != w {
					t.Errorf("%s: trap %d (cause %d) at %#x, want %#x", name, i, s.traps[i].Cause, g, w)
				}
				if w == 0 {
					unknown++
				}
			}
			if len(s.warns) != unknown {
				t.Errorf("%s: %d warnings %v, want %d", name, len(s.warns), s.warns, unknown)
			}
			for _, w := range s.warns {
				t.Logf("%s: %v", name, fmt.Sprint(w.Err))
			}
		}
	}
}
