package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
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
	traps []instMode // the EPC of each trap, with the privilege it was taken from
	priv  ingress.Priv
	ctx   uint64
	err   error
}

func (s *modeSink) Event(e *flow.Event) error {
	switch e.Kind {
	case flow.KindContext:
		s.priv, s.ctx = e.Priv, e.Context
	case flow.KindTrap:
		s.traps = append(s.traps, instMode{e.Addr, s.priv, s.ctx})
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
// privilege and context, and their traps: the EPC (the instruction the
// trap is at, which a block with no instruction states, else the one
// after the block's last: an ECALL or EBREAK that retired for an
// exception) with the privilege the trap was taken from. The EPC of a
// trap taken before the handler of the one before ran is unknown (^0).
func retiredModes(t testing.TB, img *image.Set, blocks []ingress.Block) (out, traps []instMode) {
	for i, b := range blocks {
		if b.IType.IsTrap() {
			epc := b.IAddr
			switch {
			case i > 0 && b.IRetire == 0 && blocks[i-1].IType.IsTrap():
				epc = ^uint64(0)
			case b.IRetire > 0:
				epc = b.NextAddr()
				if in, _ := img.Inst(b.LastAddr()); b.IType == ingress.ITypeException &&
					(in.Class == riscv.ClassECall || in.Class == riscv.ClassEBreak) {
					epc = b.LastAddr()
				}
			}
			traps = append(traps, instMode{epc, b.Priv, b.Context})
		}
		for a, end := b.IAddr, b.NextAddr(); a < end; {
			out = append(out, instMode{a, b.Priv, b.Context})
			in, ok := img.Inst(a)
			if !ok {
				t.Fatalf("no instruction at %#x", a)
			}
			a += uint64(in.Len)
		}
	}
	return out, traps
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
			want, wantTraps := retiredModes(t, img, blocks)
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
				if v == V026 {
					continue // 0.026 has no trap packet for a trap the handler's first instruction does not follow
				}
				if len(s.traps) != len(wantTraps) {
					t.Errorf("%s: %d traps decoded, %d taken", name, len(s.traps), len(wantTraps))
					continue
				}
				for i, w := range wantTraps {
					g := s.traps[i]
					if !in.ctx {
						g.ctx, w.ctx = 0, 0
					}
					if w.pc == ^uint64(0) {
						g.pc = w.pc
					}
					if g != w {
						t.Errorf("%s: trap %d decoded at %v, taken at %v", name, i, g, w)
						break
					}
				}
			}
		}
	}
}

// TestPrivilegeChangeOnReportedInstruction: in the 0.026 layout a sync
// packet can pin the decoder on the instruction the address packet before
// it reported (see the package documentation), which the decoder has
// sent already; the encoder changes the privilege with a sync packet
// alone, so such a sync packet stating another privilege is an
// inconsistency (a gap at that packet), not a privilege applied one
// instruction late.
func TestPrivilegeChangeOnReportedInstruction(t *testing.T) {
	// returns that go elsewhere than after their call: the 0.026 encoder
	// reports the instruction before the mispredicted one, then pins it
	img := retProg()
	truth := retPath(img, rand.New(rand.NewSource(1)), 3000)
	cfg := DefaultConfig()
	cfg.Version = V026
	cfg.Options.FullAddress = true
	cfg.Options.ImplicitReturn = true
	cfg.Params.ReturnStackSize = 2
	pkts := packetsOf(t, cfg, img, truth)
	k := 0
	for i := 1; i < len(pkts); i++ {
		if pkts[i-1].Format == FormatAddr && isSync(&pkts[i]) && pkts[i-1].Address == pkts[i].Address {
			k = i
			break
		}
	}
	if k == 0 {
		t.Fatal("no sync packet reporting the instruction the address packet before it reported")
	}
	data, _ := frame(t, cfg, pkts)
	if _, des := gapsOf(t, cfg, img, data); len(des) != 0 {
		t.Fatalf("clean: gaps %v", des)
	}
	bad := append([]Packet(nil), pkts...)
	bad[k].Privilege ^= 3
	data, offs := frame(t, cfg, bad)
	s, des := gapsOf(t, cfg, img, data)
	if len(des) == 0 || !errors.Is(des[0], decode.ErrInconsistent) || des[0].Offset != offs[k] || des[0].Index != int64(k) {
		t.Fatalf("gaps %v, want an inconsistency at byte %d, packet %d", des, offs[k], k)
	}
	t.Logf("%v", des[0])
	if v, _ := checkRule(truth, s); v != "" {
		t.Error(v)
	}
}
