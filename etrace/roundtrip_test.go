package etrace

import (
	"bytes"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
)

// modes are the mode combinations every round trip is run in.
var modes = []struct {
	name string
	set  func(c *Config)
}{
	{"baseline", func(c *Config) {}},
	{"full-address", func(c *Config) { c.Options.FullAddress = true }},
	{"implicit-exception", func(c *Config) { c.Options.ImplicitException = true }},
	{"sijump", func(c *Config) { c.Options.SIJump = true }},
	{"return-counter", func(c *Config) { c.Options.ImplicitReturn = true; c.Params.CallCounterSize = 4 }},
	{"return-stack", func(c *Config) { c.Options.ImplicitReturn = true; c.Params.ReturnStackSize = 3 }},
	{"return-stack-small", func(c *Config) { c.Options.ImplicitReturn = true; c.Params.ReturnStackSize = 1 }},
	{"predictor", func(c *Config) { c.Options.BranchPrediction = true }},
	{"jump-cache", func(c *Config) { c.Options.JumpTargetCache = true }},
	{"resync", func(c *Config) { c.ResyncPeriod = 7 }},
	{"all", func(c *Config) {
		c.Options = Options{ImplicitException: true, SIJump: true, ImplicitReturn: true, BranchPrediction: true, JumpTargetCache: true}
		c.ResyncPeriod = 50
	}},
	{"all-full", func(c *Config) {
		c.Options = Options{FullAddress: true, ImplicitException: true, SIJump: true, ImplicitReturn: true, BranchPrediction: true, JumpTargetCache: true}
		c.Params.CallCounterSize = 2
	}},
}

var inputs = []struct {
	name string
	o    genOpts
}{
	{"blocks", genOpts{}},
	{"single", genOpts{single: true}},
	{"traps", genOpts{trapEvery: 97}},
	{"traps-single", genOpts{single: true, trapEvery: 31}},
	{"priv", genOpts{privEvery: 50}},
	{"context", genOpts{ctxEvery: 40}},
	{"context-imprecise", genOpts{ctxEvery: 40, imprecise: true}},
}

// TestRoundTripT1 encodes the t1 program's execution in every mode and
// input style, decodes it and compares the PC sequence.
func TestRoundTripT1(t *testing.T) {
	img, pcs := loadT1(t)
	if testing.Short() {
		pcs = pcs[:20000]
	}
	for _, v := range []Version{V2, V026} {
		for _, in := range inputs {
			blocks := genBlocks(t, img, pcs, in.o)
			want := retired(t, img, blocks)
			for _, m := range modes {
				cfg := DefaultConfig()
				cfg.Version = v
				cfg.Params.IAddressWidth = 32
				if in.name == "context" || in.name == "context-imprecise" {
					cfg.Params.NoContext = false
				}
				m.set(&cfg)
				name := v.String() + "/" + in.name + "/" + m.name
				data, st := encode(t, cfg, nil, blocks)
				s := decodePCs(t, cfg, img, data)
				if s.err != nil {
					t.Errorf("%s: %v", name, s.err)
				}
				for _, e := range s.events {
					t.Errorf("%s: %v", name, &e)
					break
				}
				if comparePCs(t, name, s.pcs, want) && in.name == "blocks" {
					t.Logf("%s: %d bytes, %.3f bits/instr", name, st.Bytes, float64(st.Bytes*8)/float64(len(want)))
				}
			}
		}
	}
}

// TestImplicitException checks that traps to the trap vector are sent
// without their handler address.
func TestImplicitException(t *testing.T) {
	img, pcs := loadT1(t)
	pcs = pcs[:30000]
	// Interrupt before each entry to the function at the most common call
	// target: the handler is that address, which is the trap vector.
	count := map[uint64]int{}
	for i := 1; i < len(pcs); i++ {
		if in, _ := img.Inst(pcs[i-1]); in.Link == 1 /* call */ {
			count[pcs[i]]++
		}
	}
	var h uint64
	for a, n := range count {
		if n > count[h] {
			h = a
		}
	}
	blocks := genBlocks(t, img, pcs, genOpts{trapAt: h})
	want := retired(t, img, blocks)
	for _, v := range []Version{V2, V026} {
		var sizes [2]uint64
		for i, on := range []bool{false, true} {
			cfg := DefaultConfig()
			cfg.Version = v
			cfg.Options.ImplicitException = on
			cfg.Params.TVec = h
			data, st := encode(t, cfg, nil, blocks)
			sizes[i] = st.Bytes
			s := decodePCs(t, cfg, img, data)
			for _, e := range s.events {
				t.Errorf("%v", &e)
			}
			comparePCs(t, v.String(), s.pcs, want)
		}
		if v == V2 && sizes[1] >= sizes[0] {
			t.Errorf("implicit exception did not save bytes: %d vs %d", sizes[1], sizes[0])
		}
	}
}

// TestFlowEvents checks the events around traps and syncs.
func TestFlowEvents(t *testing.T) {
	img, pcs := loadT1(t)
	blocks := genBlocks(t, img, pcs[:2000], genOpts{trapEvery: 300})
	cfg := DefaultConfig()
	data, _ := encode(t, cfg, nil, blocks)
	s := &pcSink{img: img, keep: true}
	d, _ := NewDecoder(img, s, cfg)
	if err := d.Decode(bytes.NewReader(data)); err != nil {
		t.Fatal(err)
	}
	var c flow.Counter
	for i := range s.events {
		c.Event(&s.events[i])
	}
	if c.Events[flow.KindSync] != 1 || c.Events[flow.KindStop] != 1 || c.Traps == 0 || c.Gaps != 0 {
		t.Errorf("events: %+v", c.Events)
	}
}
