package etrace

import (
	"bytes"
	"testing"

	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sim"
)

// gateRecorder records the blocks a filter passes and its stops.
type gateRecorder struct {
	blocks []ingress.Block
	stops  int
	notify int
}

func (g *gateRecorder) Block(b *ingress.Block) error { g.blocks = append(g.blocks, *b); return nil }
func (g *gateRecorder) Close() error                 { return nil }
func (g *gateRecorder) TraceOff() error              { g.stops++; return nil }
func (g *gateRecorder) Notify() error                { g.notify++; return nil }

// filtered runs blocks through the filter spec into an encoder, decodes
// the result and checks that the flow is exactly the passed blocks, with
// one stop event per qualified stretch.
func filtered(t *testing.T, name string, img *image.Set, blocks []ingress.Block, cfg Config, fc *filter.Config) {
	t.Helper()
	var rec gateRecorder
	f := filter.New(fc, &rec)
	for i := range blocks {
		f.Block(&blocks[i])
	}
	f.TraceOff()
	if len(rec.blocks) == 0 || len(rec.blocks) == len(blocks) {
		t.Fatalf("%s: filter passed %d of %d blocks", name, len(rec.blocks), len(blocks))
	}
	want := retired(t, img, rec.blocks)

	var buf bytes.Buffer
	e, err := NewEncoder(&buf, cfg, img)
	if err != nil {
		t.Fatal(err)
	}
	f = filter.New(fc, e)
	for i := range blocks {
		if err := f.Block(&blocks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	s := &pcSink{img: img, keep: true}
	d, _ := NewDecoder(img, s, cfg)
	if err := d.Decode(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	var c flow.Counter
	for i := range s.events {
		c.Event(&s.events[i])
	}
	if c.Gaps != 0 {
		t.Errorf("%s: %d gaps", name, c.Gaps)
	}
	if int(c.Events[flow.KindStop]) != rec.stops || int(c.Events[flow.KindSync]) != rec.stops {
		t.Errorf("%s: %d stops and %d syncs decoded, want %d", name, c.Events[flow.KindStop], c.Events[flow.KindSync], rec.stops)
	}
	if rec.notify > 0 && c.Events[flow.KindNotify] == 0 && cfg.Version == V2 {
		t.Errorf("%s: no notify events for %d notifications", name, rec.notify)
	}
	comparePCs(t, name, s.pcs, want)
}

// TestFilterUseCases checks each use case of the 0.026 filtering chapter
// on t1 and on the simulator, with both layouts.
func TestFilterUseCases(t *testing.T) {
	img, pcs := loadT1(t)
	pcs = pcs[:40000]
	plain := genBlocks(t, img, pcs, genOpts{})
	priv := genBlocks(t, img, pcs, genOpts{privEvery: 30})
	ctx := genBlocks(t, img, pcs, genOpts{ctxEvery: 25})
	mk := func(specs []string, trig string) *filter.Config {
		var c filter.Config
		for _, s := range specs {
			if err := c.Parse(s); err != nil {
				t.Fatal(err)
			}
		}
		if trig != "" {
			if err := c.ParseTrigger(trig); err != nil {
				t.Fatal(err)
			}
		}
		return &c
	}
	cases := []struct {
		name   string
		blocks []ingress.Block
		fc     *filter.Config
	}{
		{"address-range", plain, mk([]string{"addr=0x200101d0-0x20010250"}, "")},
		{"from-to", plain, mk([]string{"from=0x20010188,to=0x200101b0"}, "")},
		{"privilege", priv, mk([]string{"priv=U"}, "")},
		{"context", ctx, mk([]string{"context=3-9"}, "")},
		{"context-or-priv", ctx, mk([]string{"context=1", "context=7;addr=0x20010000-0x20010300"}, "")},
		{"triggers", plain, mk(nil, "on=0x20010188,off=0x200101ac,notify=0x20010230")},
	}
	for _, v := range []Version{V2, V026} {
		for _, tc := range cases {
			cfg := DefaultConfig()
			cfg.Version = v
			cfg.Params.NoContext = false
			filtered(t, v.String()+"/"+tc.name, img, tc.blocks, cfg, tc.fc)
			cfg.Options = Options{SIJump: true, ImplicitReturn: true, BranchPrediction: true, JumpTargetCache: true}
			filtered(t, v.String()+"/"+tc.name+"/all", img, tc.blocks, cfg, tc.fc)
		}
	}
}

// TestFilterInterruptHandler traces only the trap handlers of br_j_asm.
func TestFilterInterruptHandler(t *testing.T) {
	img, blocks := runSim(t, "br_j_asm.riscv", sim.Coalesced, 3_000_000)
	for _, spec := range []string{"interrupt", "exception", "ecause=2"} {
		var fc filter.Config
		if err := fc.Parse(spec); err != nil {
			t.Fatal(err)
		}
		for _, v := range []Version{V2, V026} {
			cfg := DefaultConfig()
			cfg.Version = v
			filtered(t, v.String()+"/"+spec, img, blocks, cfg, &fc)
		}
	}
}
