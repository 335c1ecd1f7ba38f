package etrace

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// instMode is an instruction with the privilege and context it ran in.
type instMode struct {
	pc   uint64
	priv ingress.Priv
	ctx  uint64
}

func (m instMode) String() string { return fmt.Sprintf("%#x %s ctx %#x", m.pc, m.priv, m.ctx) }

// modeSink collects the decoded instructions with the privilege and
// context the flow's context events give them (as the Tarmac writer and
// the per-privilege views take them), and checks that each range's Priv
// agrees.
type modeSink struct {
	img   *image.Set
	insts []instMode
	priv  ingress.Priv
	ctx   uint64
	err   error
}

func (s *modeSink) Event(e *flow.Event) error {
	switch e.Kind {
	case flow.KindContext:
		s.priv, s.ctx = e.Priv, e.Context
	case flow.KindGap:
		if s.err == nil {
			s.err = fmt.Errorf("gap: %v", e)
		}
	case flow.KindRange:
		if e.Priv != s.priv && s.err == nil {
			s.err = fmt.Errorf("range %v has privilege %s, the last context event %s", e, e.Priv, s.priv)
		}
		a := e.Start
		for n := uint64(0); n < e.N; n++ {
			s.insts = append(s.insts, instMode{a, s.priv, s.ctx})
			in, ok := e.ImageOr(s.img).Inst(a)
			if !ok {
				s.err = fmt.Errorf("range %v: no instruction at %#x", e, a)
				return nil
			}
			a = in.Next(a)
		}
	}
	return nil
}

func (s *modeSink) Close() error { return nil }

// retiredModes returns the instructions the blocks retire with their
// privilege and context.
func retiredModes(t testing.TB, img *image.Set, blocks []ingress.Block) []instMode {
	var out []instMode
	for _, b := range blocks {
		for a, end := b.IAddr, b.NextAddr(); a < end; {
			out = append(out, instMode{a, b.Priv, b.Context})
			in, ok := img.Inst(a)
			if !ok {
				t.Fatalf("no instruction at %#x", a)
			}
			a += uint64(in.Len)
		}
	}
	return out
}

// TestPrivilegeFromReportedInstruction checks that a privilege or precise
// context change, which the encoder reports with a sync packet on the
// first instruction that has it, applies from exactly that instruction in
// the decoded flow: every instruction has the privilege (and context) it
// ran in, in every mode and both packet layouts, whether the walk reaches
// the reported instruction as the target of an uninferable jump, of a
// taken branch or direct jump, or in sequence. (The decoder used to send
// the reported instruction, and with it the rest of its run up to the
// sync, before the context event.)
func TestPrivilegeFromReportedInstruction(t *testing.T) {
	img, pcs := loadT1(t)
	n := 40000
	if testing.Short() {
		n = 8000
	}
	pcs = pcs[:n]
	ins := []struct {
		name string
		o    genOpts
		ctx  bool // contexts are precise: compare them too
	}{
		{"priv", genOpts{privEvery: 7}, false},
		{"priv-single", genOpts{privEvery: 5, single: true}, false},
		{"priv-context", genOpts{privEvery: 11, ctxEvery: 4}, true},
		{"priv-traps", genOpts{privEvery: 9, trapEvery: 43}, false},
		{"priv-context-imprecise", genOpts{privEvery: 6, ctxEvery: 5, imprecise: true}, false},
	}
	for _, v := range []Version{V2, V026} {
		for _, in := range ins {
			blocks := genBlocks(t, img, pcs, in.o)
			want := retiredModes(t, img, blocks)
			for _, m := range modes {
				name := v.String() + "/" + in.name + "/" + m.name
				cfg := DefaultConfig()
				cfg.Version = v
				cfg.Params.IAddressWidth = 32
				cfg.Params.NoContext = false
				m.set(&cfg)
				data, _ := encode(t, cfg, nil, blocks)
				s := &modeSink{img: img}
				d, err := NewDecoder(img, s, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := d.Decode(bytes.NewReader(data)); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if s.err != nil {
					t.Errorf("%s: %v", name, s.err)
					continue
				}
				if len(s.insts) != len(want) {
					t.Errorf("%s: %d instructions decoded, %d retired", name, len(s.insts), len(want))
					continue
				}
				for i, w := range want {
					g := s.insts[i]
					if !in.ctx {
						g.ctx, w.ctx = 0, 0
					}
					if g != w {
						t.Errorf("%s: instruction %d decoded as %v, ran as %v", name, i, g, w)
						break
					}
				}
			}
		}
	}
}
