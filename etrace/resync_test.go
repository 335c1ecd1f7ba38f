package etrace

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sim"
)

// resyncPrograms have branch-free loops (towers' idle loop, the trap
// loop of test_discon_branch_exception), tight loops with branches (xrle,
// qsort) and deep call chains (dhrystone).
var resyncPrograms = []string{
	"towers.riscv", "xrle.riscv", "dhrystone.riscv", "qsort.riscv",
	"test_discon_branch_exception.riscv", "br_j_asm.riscv",
}

// TestResyncPeriods round-trips the simulator runs with resynchronisation
// periods from one packet up, in every mode, so that sync packets land
// everywhere: inside branch-free loops, inside loops with branches, on
// branches, after calls and returns.
func TestResyncPeriods(t *testing.T) {
	progs, periods, max := resyncPrograms, []int{1, 2, 3, 5, 11}, uint64(100_000)
	if testing.Short() {
		progs, periods, max = progs[:2], []int{1, 2, 3}, 50_000
	}
	for _, prog := range progs {
		for _, bm := range []sim.BlockMode{sim.Coalesced, sim.PerInstruction} {
			img, blocks := runSim(t, prog, bm, max)
			want := retired(t, img, blocks)
			tvec := trapVector(blocks)
			for _, v := range []Version{V2, V026} {
				for _, m := range modes {
					for _, period := range periods {
						cfg := DefaultConfig()
						cfg.Version = v
						m.set(&cfg)
						cfg.ResyncPeriod = period
						cfg.Params.TVec = tvec
						name := fmt.Sprintf("%s/%v/%s/%s/period-%d", prog, bm, v, m.name, period)
						roundTrip(t, name, cfg, img, img, blocks, want)
					}
				}
			}
		}
	}
}

// TestTraceEnds ends the trace after every block of the beginning and of
// the end of the simulator runs, in every mode: the last instruction is
// then anywhere, including inside a branch-free loop just after a sync.
func TestTraceEnds(t *testing.T) {
	progs, n := resyncPrograms, 100
	if testing.Short() {
		progs, n = progs[:2], 40
	}
	for _, prog := range progs {
		img, blocks := runSim(t, prog, sim.Coalesced, 30_000)
		for _, v := range []Version{V2, V026} {
			for _, m := range modes {
				cfg := DefaultConfig()
				cfg.Version = v
				m.set(&cfg)
				if cfg.ResyncPeriod == 0 {
					cfg.ResyncPeriod = 5
				}
				cfg.Params.TVec = trapVector(blocks)
				for k := 1; k <= len(blocks); k++ {
					if k > n && k < len(blocks)-n {
						k = len(blocks) - n
					}
					name := fmt.Sprintf("%s/%s/%s/%d-blocks", prog, v, m.name, k)
					if !roundTrip(t, name, cfg, img, img, blocks[:k], nil) {
						break
					}
				}
			}
		}
	}
}

// TestBranchFreeRevisits covers paths without branches that execute an
// instruction twice: two calls of a branch-free function (implicit return
// infers the first return) and an idle loop "j .", with a trap in the
// second call, resynchronisation at every period and the trace ending
// after every block.
func TestBranchFreeRevisits(t *testing.T) {
	img := image.NewSet()
	img.AddBytes("prog", 0x1000, []byte{
		0xef, 0x00, 0x00, 0x01, // 1000: jal ra, 1010
		0xef, 0x00, 0xc0, 0x00, // 1004: jal ra, 1010
		0x01, 0x00, // 1008: c.nop
		0x01, 0xa0, // 100a: c.j 100a
		0x01, 0x00, 0x01, 0x00, // 100c: c.nop; c.nop
		0x01, 0x00, 0x01, 0x00, // 1010: c.nop; c.nop
		0x82, 0x80, // 1014: ret
	})
	img.SetXLEN(64)
	m := ingress.PrivM
	blocks := []ingress.Block{
		{IAddr: 0x1000, IRetire: 2, ILastSize: 1, IType: ingress.ITypeDirectCall, Priv: m},
		{IAddr: 0x1010, IRetire: 3, IType: ingress.ITypeReturn, Priv: m},
		{IAddr: 0x1004, IRetire: 2, ILastSize: 1, IType: ingress.ITypeDirectCall, Priv: m},
		{IAddr: 0x1010, IRetire: 2, IType: ingress.ITypeInterrupt, Cause: 7, Priv: m},
		{IAddr: 0x1008, IRetire: 2, IType: ingress.ITypeDirectJump, Priv: m},
	}
	for i := 0; i < 9; i++ {
		blocks = append(blocks, ingress.Block{IAddr: 0x100a, IRetire: 1, IType: ingress.ITypeDirectJump, Priv: m})
	}
	for _, v := range []Version{V2, V026} {
		for _, md := range modes {
			for _, period := range []int{0, 1, 2, 3, 4, 5} {
				cfg := DefaultConfig()
				cfg.Version = v
				md.set(&cfg)
				cfg.ResyncPeriod = period
				cfg.Params.TVec = 0x1008
				for k := 1; k <= len(blocks); k++ {
					for _, withImg := range []*image.Set{img, nil} {
						name := fmt.Sprintf("%s/%s/period-%d/%d-blocks/image-%v", v, md.name, period, k, withImg != nil)
						data, _ := encode(t, cfg, withImg, blocks[:k])
						s := decodePCs(t, cfg, img, data)
						for _, e := range s.events {
							t.Errorf("%s: %v", name, &e)
						}
						comparePCs(t, name, s.pcs, retired(t, img, blocks[:k]))
					}
				}
			}
		}
	}
}

// TestResyncPeriodsT1 resynchronises t1's execution, in every input style
// (traps, privilege and context changes, single retirement), at short
// periods.
func TestResyncPeriodsT1(t *testing.T) {
	img, pcs := loadT1(t)
	pcs = pcs[:10000]
	for _, in := range inputs {
		blocks := genBlocks(t, img, pcs, in.o)
		want := retired(t, img, blocks)
		for _, v := range []Version{V2, V026} {
			for _, m := range modes {
				for _, period := range []int{1, 2, 3, 8} {
					cfg := DefaultConfig()
					cfg.Version = v
					cfg.Params.IAddressWidth = 32
					cfg.Params.NoContext = false
					m.set(&cfg)
					cfg.ResyncPeriod = period
					name := fmt.Sprintf("%s/%s/%s/period-%d", v, in.name, m.name, period)
					roundTrip(t, name, cfg, nil, img, blocks, want)
				}
			}
		}
	}
}

// TestIdleLoop checks the encoding of an idle loop "j ." (an instruction
// that is its own successor, with no branch and no uninferable jump):
// every iteration must be reported for the decoder to count them, and
// the encoder pins each with a sync packet (a resynchronisation, which the
// specification allows at any instruction) rather than with a format 2
// packet marked as a notification, which would claim a trigger[2]
// request. The loop ends with an interrupt, with the end of tracing and
// with a notification the hart requested (Gated.Notify), the one case
// that sets notify.
func TestIdleLoop(t *testing.T) {
	img := image.NewSet()
	img.AddBytes("idle", 0x80000000, []byte{
		0x01, 0x00, // 80000000: c.nop
		0x01, 0xa0, // 80000002: c.j 80000002
		0x01, 0x00, // 80000004: c.nop (handler)
		0xfd, 0xbf, // 80000006: c.j 80000004
	})
	img.SetXLEN(64)
	const iters = 1000
	m := ingress.PrivM
	blocks := []ingress.Block{{IAddr: 0x80000000, IRetire: 2, IType: ingress.ITypeDirectJump, Priv: m}}
	for i := 1; i < iters; i++ {
		blocks = append(blocks, ingress.Block{IAddr: 0x80000002, IRetire: 1, IType: ingress.ITypeDirectJump, Priv: m})
	}
	trap := append(append([]ingress.Block{}, blocks...),
		ingress.Block{IAddr: 0x80000002, IType: ingress.ITypeInterrupt, Cause: 7, Priv: m},
		ingress.Block{IAddr: 0x80000004, IRetire: 2, IType: ingress.ITypeDirectJump, Priv: m},
		ingress.Block{IAddr: 0x80000004, IRetire: 1, Priv: m})
	for _, tc := range []struct {
		name   string
		blocks []ingress.Block
		notify int // Gated.Notify before this block (0: none)
	}{
		{"end", blocks, 0},
		{"interrupt", trap, 0},
		{"notify", blocks, 500},
	} {
		for _, v := range []Version{V2, V026} {
			for _, md := range modes {
				cfg := DefaultConfig()
				cfg.Version = v
				md.set(&cfg)
				name := fmt.Sprintf("%s/%s/%s", tc.name, v, md.name)
				var buf bytes.Buffer
				e, _ := NewEncoder(&buf, cfg, img)
				notified := 0
				e.OnPacket = func(p *Packet) {
					if p.Notify {
						notified++
					}
				}
				for i := range tc.blocks {
					if tc.notify > 0 && i == tc.notify {
						e.Notify()
					}
					if err := e.Block(&tc.blocks[i]); err != nil {
						t.Fatal(err)
					}
				}
				if err := e.Close(); err != nil {
					t.Fatal(err)
				}
				want := 0
				if tc.notify > 0 && v == V2 {
					want = 1
				}
				if notified != want {
					t.Errorf("%s: %d packets with notify set, want %d", name, notified, want)
				}
				s := decodePCs(t, cfg, img, buf.Bytes())
				for _, ev := range s.events {
					t.Errorf("%s: %v", name, &ev)
				}
				comparePCs(t, name, s.pcs, retired(t, img, tc.blocks))
				st := e.Stats()
				if v == V2 && md.name == "baseline" {
					t.Logf("%s: %d bytes, %d packets for %d iterations", name, st.Bytes, st.Packets, iters)
				}
				if per := float64(st.Bytes) / iters; per > 6.1 {
					t.Errorf("%s: %.2f bytes per iteration", name, per)
				}
			}
		}
	}
}
