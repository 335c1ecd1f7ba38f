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

// srcTraps collects the trap EPCs, warnings and gaps of each source of a
// Demux.
type srcTraps struct {
	epcs  map[uint32][]uint64
	warns map[uint32]int
	gaps  int
}

func (s *srcTraps) Event(e *flow.Event) error {
	switch e.Kind {
	case flow.KindTrap:
		s.epcs[e.Src] = append(s.epcs[e.Src], e.Addr)
	case flow.KindWarn:
		s.warns[e.Src]++
	case flow.KindGap:
		s.gaps++
	}
	return nil
}

func (s *srcTraps) Close() error { return nil }

// TestNestedTrapEPCDemux: in a stream of two sources, the frames of one
// come between the two trap packets of a nested trap of the other; the
// decoder of each source still sees its trap packets one after the other
// (the stream's frame indexes count both sources' frames).
func TestNestedTrapEPCDemux(t *testing.T) {
	img := nestProg()
	const M = ingress.PrivM
	// source 0: an ecall at 0x1004, an instruction page fault at the
	// handler 0x2000 before it ran; source 1: an illegal instruction at
	// 0x1004 and another at the handler 0x2000 (the same handler)
	blocks := [][]ingress.Block{{
		{IAddr: 0x1000, IRetire: 4, ILastSize: 1, IType: ingress.ITypeException, Cause: 11, Priv: M},
		{IAddr: 0x2000, IType: ingress.ITypeException, Cause: 12, TVal: 0x2000, Priv: M},
		{IAddr: 0x2000, IRetire: 4, ILastSize: 1, IType: ingress.ITypeTrapReturn, Priv: M},
		{IAddr: 0x1008, IRetire: 2, ILastSize: 1, Priv: M},
	}, {
		{IAddr: 0x1000, IRetire: 2, ILastSize: 1, IType: ingress.ITypeException, Cause: 2, TVal: 0x13, Priv: M},
		{IAddr: 0x2000, IType: ingress.ITypeException, Cause: 2, TVal: 0x13, Priv: M},
		{IAddr: 0x2000, IRetire: 4, ILastSize: 1, IType: ingress.ITypeTrapReturn, Priv: M},
		{IAddr: 0x1008, IRetire: 2, ILastSize: 1, Priv: M},
	}}
	want := []uint64{0x1004, 0x2000}
	cfg := DefaultConfig()
	cfg.Encap, cfg.SrcBits = EncapUTDD, 1
	// each source's frames, then the two woven one by one
	var frames [2][][]byte
	for src := range blocks {
		c := cfg
		c.SrcID = uint32(src)
		data, _ := encode(t, c, nil, blocks[src])
		offs := append(frameOffsets(t, c, data), int64(len(data)))
		for i := 0; i+1 < len(offs); i++ {
			frames[src] = append(frames[src], data[offs[i]:offs[i+1]])
		}
	}
	var stream []byte
	for i := 0; i < max(len(frames[0]), len(frames[1])); i++ {
		for src := range frames {
			if i < len(frames[src]) {
				stream = append(stream, frames[src][i]...)
			}
		}
	}
	s := &srcTraps{epcs: map[uint32][]uint64{}, warns: map[uint32]int{}}
	m, err := NewDemux(img, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Decode(bytes.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	if s.gaps > 0 {
		t.Fatalf("%d gaps", s.gaps)
	}
	for src := uint32(0); src < 2; src++ {
		if g := s.epcs[src]; len(g) != len(want) || g[0] != want[0] || g[1] != want[1] || s.warns[src] != 0 {
			t.Errorf("source %d: trap EPCs %#x, %d warnings; want %#x and none", src, g, s.warns[src], want)
		}
	}
}
