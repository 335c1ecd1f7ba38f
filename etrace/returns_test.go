package etrace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
	"github.com/rvtrace/rvtrace/sim"
)

// Returns that go elsewhere than after their call (setjmp/longjmp,
// unwinding through several frames, a modified return address): with a
// return stack the encoder reports them with irreport, or with a sync
// packet when the decoder could take an earlier correctly predicted
// return at the same depth for the reported one; with a call counter it
// resynchronises and warns. Every mode must round-trip exactly.

// irModes are the implicit return configurations (and the others of
// modes, which must not mind such programs either).
var irModes = append([]struct {
	name string
	set  func(c *Config)
}{
	{"return-stack-2", func(c *Config) { c.Options.ImplicitReturn = true; c.Params.ReturnStackSize = 2 }},
	{"return-stack-big", func(c *Config) { c.Options.ImplicitReturn = true; c.Params.ReturnStackSize = 8 }},
	{"return-counter-small", func(c *Config) { c.Options.ImplicitReturn = true; c.Params.CallCounterSize = 2 }},
	{"return-stack-predictor-cache", func(c *Config) {
		c.Options = Options{ImplicitReturn: true, BranchPrediction: true, JumpTargetCache: true}
	}},
}, modes...)

type linuxRun struct {
	img    *image.Set
	blocks []ingress.Block
	pcs    []uint64
	err    error
}

var (
	linuxMu    sync.Mutex
	linuxCache = map[string]*linuxRun{}
)

// runLinux runs a program of testdata/returns in Linux user mode and
// returns its image, ingress blocks and retired PCs (cached).
func runLinux(t testing.TB, name string, mode sim.BlockMode) (*image.Set, []ingress.Block, []uint64) {
	t.Helper()
	path := filepath.Join("testdata", "returns", name)
	key := fmt.Sprintf("%s/%v", name, mode)
	linuxMu.Lock()
	defer linuxMu.Unlock()
	r := linuxCache[key]
	if r == nil {
		r = &linuxRun{img: image.NewSet()}
		linuxCache[key] = r
		r.err = func() error {
			if err := r.img.AddELF(path); err != nil {
				return err
			}
			m, err := sim.New(sim.Config{Mode: mode, MaxInstret: 10_000_000})
			if err != nil {
				return err
			}
			if err := m.LoadLinuxELF(path, []string{path}, nil); err != nil {
				return err
			}
			rs := &recordSink{}
			if err := m.SetIngress(0, rs); err != nil {
				return err
			}
			m.SetPCHook(0, func(pc uint64) { r.pcs = append(r.pcs, pc) })
			res, err := m.Run()
			if err != nil {
				return err
			}
			if res.ExitCode != 0 {
				return fmt.Errorf("exit code %d", res.ExitCode)
			}
			r.blocks = rs.blocks
			return nil
		}()
	}
	if r.err != nil {
		t.Fatalf("%s: %v", path, r.err)
	}
	return r.img, r.blocks, r.pcs
}

// encodeCount encodes blocks and counts the packets reporting a
// mispredicted return with irreport (format 0/1/2 packets that report
// the target of an uninferable discontinuity: not notify, followed by a
// packet that is not format 3, or with updiscon).
func encodeCount(t testing.TB, cfg Config, img *image.Set, blocks []ingress.Block) ([]byte, *Stats, int) {
	t.Helper()
	var buf bytes.Buffer
	e, err := NewEncoder(&buf, cfg, img)
	if err != nil {
		t.Fatal(err)
	}
	irTarget := 0
	var prev Packet
	havePrev := false
	e.OnPacket = func(p *Packet) {
		f3 := p.Format == FormatSync && p.Subformat != SubContext
		if havePrev && prev.Irreport && (!f3 || prev.Updiscon) {
			irTarget++
		}
		prev, havePrev = *p, p.Format != FormatSync && !p.Notify
	}
	for i := range blocks {
		if err := e.Block(&blocks[i]); err != nil {
			t.Fatalf("block %d: %v", i, err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), e.Stats(), irTarget
}

// TestReturnsPrograms round-trips the hand-written returns.S (setjmp and
// longjmp at the same depth, a longjmp out of a recursion deeper than the
// return stack, a return to ra+4, unwinding through three frames) and the
// C program longjmp.c (glibc's setjmp/longjmp) in every mode, both
// layouts and both block modes, with resynchronisation periods, and
// checks what the encoder says about the returns.
func TestReturnsPrograms(t *testing.T) {
	for _, prog := range []string{"returns.elf", "longjmp.elf"} {
		for _, bm := range []sim.BlockMode{sim.Coalesced, sim.PerInstruction} {
			img, blocks, pcs := runLinux(t, prog, bm)
			want := retired(t, img, blocks)
			if !comparePCs(t, prog+": blocks against the simulator's PCs", want, pcs) {
				continue
			}
			for _, v := range []Version{V2, V026} {
				for _, m := range irModes {
					for _, period := range []int{0, 1, 2, 3, 7} {
						cfg := DefaultConfig()
						cfg.Version = v
						m.set(&cfg)
						if period > 0 {
							cfg.ResyncPeriod = period
						}
						name := fmt.Sprintf("%s/%v/%s/%s/period-%d", prog, bm, v, m.name, cfg.ResyncPeriod)
						for _, encImg := range []*image.Set{img, nil} {
							data, st, irTarget := encodeCount(t, cfg, encImg, blocks)
							s := decodePCs(t, cfg, img, data)
							if s.err != nil {
								t.Errorf("%s: %v", name, s.err)
							}
							for _, e := range s.events {
								t.Errorf("%s: %v", name, &e)
								break
							}
							if !comparePCs(t, name, s.pcs, want) {
								break
							}
							if encImg == nil || v != V2 || !cfg.Options.ImplicitReturn || cfg.ResyncPeriod != 0 {
								continue
							}
							e, _ := NewEncoder(&bytes.Buffer{}, cfg, img)
							e.st = *st
							counter := e.cfg.Params.ReturnStackSize == 0
							switch {
							case counter && (st.RetMisses == 0 || e.Warning() == "" || irTarget != 0):
								t.Errorf("%s: call counter: %d returns counted, %d reported with irreport, warning %q",
									name, st.RetMisses, irTarget, e.Warning())
							case !counter && (st.RetMisses != 0 || e.Warning() != ""):
								t.Errorf("%s: return stack: %d returns counted as call counter misses", name, st.RetMisses)
							case !counter && (st.Anchors == 0 || prog == "returns.elf" && irTarget == 0):
								// returns.elf uses both ways of reporting a
								// mispredicted return
								t.Errorf("%s: return stack: %d returns reported with irreport, %d sync packets before one",
									name, irTarget, st.Anchors)
							}
						}
					}
				}
			}
		}
	}
}

// retProg is a synthetic program for random paths: nFuncs functions of
// the same shape, whose calls, branches and returns the path generator
// drives.
//
//	+0  beq  a0, a1, +24   skip both calls
//	+4  jal  ra, f(i+1)
//	+8  beq  a0, a1, +12   skip the second call
//	+12 jalr ra, 0(a5)     an indirect call, to any function
//	+16 c.nop
//	+18 c.nop
//	+20 c.nop
//	+22 c.nop
//	+24 lui  t0, 0         (sequentially inferable jump source)
//	+28 c.jr ra            ret
//	+30 c.nop              padding
const (
	retBase   = 0x10000
	retSize   = 32
	retFuncs  = 16
	retReturn = 28
)

func retProg() *image.Set {
	var b []byte
	put32 := func(v uint32) { b = binary.LittleEndian.AppendUint32(b, v) }
	put16 := func(v uint16) { b = binary.LittleEndian.AppendUint16(b, v) }
	jal := func(rd uint32, off int32) uint32 {
		u := uint32(off)
		return (u>>20&1)<<31 | (u>>1&0x3ff)<<21 | (u>>11&1)<<20 | (u>>12&0xff)<<12 | rd<<7 | 0x6f
	}
	beq := func(rs1, rs2 uint32, off int32) uint32 {
		u := uint32(off)
		return (u>>12&1)<<31 | (u>>5&0x3f)<<25 | rs2<<20 | rs1<<15 | (u>>1&0xf)<<8 | (u>>11&1)<<7 | 0x63
	}
	for i := 0; i < retFuncs; i++ {
		put32(beq(10, 11, 24))
		next := ((i+1)%retFuncs - i) * retSize
		put32(jal(1, int32(next-4)))
		put32(beq(10, 11, 12))
		put32(0x000780e7) // jalr ra, 0(a5)
		put16(0x0001)
		put16(0x0001)
		put16(0x0001)
		put16(0x0001)
		put32(0x000002b7) // lui t0, 0
		put16(0x8082)     // c.jr ra
		put16(0x0001)
	}
	img := image.NewSet()
	img.AddBytes("returns", retBase, b)
	img.SetXLEN(64)
	return img
}

// retPath returns a random execution of retProg of about n instructions:
// returns mostly go back after their call, and sometimes to an outer
// frame (longjmp, unwinding), 4 bytes further (a modified return
// address) or to a setjmp point saved earlier.
func retPath(img *image.Set, rng *rand.Rand, n int) []uint64 {
	var pcs, stack, saved []uint64
	pc := uint64(retBase)
	for len(pcs) < n || len(stack) > 0 && len(pcs) < 2*n {
		pcs = append(pcs, pc)
		in, _ := img.Inst(pc)
		next := in.Next(pc)
		switch in.Class {
		case riscv.ClassBranch:
			// deeper calls become rarer
			if rng.Intn(8) < len(stack) || rng.Intn(3) == 0 {
				next = in.Target(pc)
			}
		case riscv.ClassJump:
			next = in.Target(pc)
		}
		if in.Link == riscv.LinkCall {
			stack = append(stack, pc+uint64(in.Len))
			if rng.Intn(6) == 0 {
				saved = append(saved, pc+uint64(in.Len)) // setjmp
			}
			if in.Class != riscv.ClassJump {
				next = retBase + uint64(rng.Intn(retFuncs))*retSize
			}
		}
		if in.Link == riscv.LinkReturn {
			switch r := rng.Intn(20); {
			case len(stack) == 0:
				// the outermost function returns to a random one
				next = retBase + uint64(rng.Intn(retFuncs))*retSize
			case r == 0 && len(stack) > 1:
				// unwind k frames
				k := 1 + rng.Intn(len(stack)-1)
				stack = stack[:len(stack)-k]
				next = stack[len(stack)-1]
				stack = stack[:len(stack)-1]
			case r == 1 && stack[len(stack)-1]%retSize < 16:
				// a modified return address: after the next instruction
				a := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				x, _ := img.Inst(a)
				next = a + uint64(x.Len)
			case r == 2 && len(saved) > 0:
				// longjmp to a setjmp point
				next = saved[rng.Intn(len(saved))]
				for len(stack) > 0 && rng.Intn(2) == 0 {
					stack = stack[:len(stack)-1]
				}
			default:
				next = stack[len(stack)-1]
				stack = stack[:len(stack)-1]
			}
		}
		pc = next
	}
	return pcs
}

// returnPathsCheck round-trips one random path in every mode and input
// style.
func returnPathsCheck(t *testing.T, seed int64, n int) {
	img := retProg()
	pcs := retPath(img, rand.New(rand.NewSource(seed)), n)
	for _, in := range inputs {
		blocks := genBlocks(t, img, pcs, in.o)
		want := retired(t, img, blocks)
		for _, v := range []Version{V2, V026} {
			for _, m := range irModes {
				cfg := DefaultConfig()
				cfg.Version = v
				cfg.Params.IAddressWidth = 32
				if in.name == "context" || in.name == "context-imprecise" {
					cfg.Params.NoContext = false
				}
				m.set(&cfg)
				name := fmt.Sprintf("seed %d/%s/%s/%s", seed, in.name, v, m.name)
				if !roundTrip(t, name, cfg, nil, img, blocks, want) {
					return
				}
			}
		}
	}
}

// TestReturnPaths round-trips random executions of a program whose
// returns go back to their call site or elsewhere.
func TestReturnPaths(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 8
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		returnPathsCheck(t, seed, 3000)
	}
}

// FuzzReturnPaths is TestReturnPaths with the seed and length from the
// fuzzer.
func FuzzReturnPaths(f *testing.F) {
	f.Add(int64(1), uint16(500))
	f.Add(int64(7), uint16(4000))
	f.Fuzz(func(t *testing.T, seed int64, n uint16) {
		returnPathsCheck(t, seed, 50+int(n)%5000)
	})
}

// TestMinimalCallCounter decodes what the specification's minimal call
// counter encoder sends for programs whose returns go elsewhere than after
// their call: it cannot check return addresses, so it treats such a
// return as inferable and the decoder follows the call site. The decoder
// must keep the integrity rule (the wrong instructions are among the
// suspect ones of a gap) and say in the gap what may have happened.
func TestMinimalCallCounter(t *testing.T) {
	for _, prog := range []string{"returns.elf", "longjmp.elf"} {
		img, blocks, pcs := runLinux(t, prog, sim.Coalesced)
		cfg := DefaultConfig()
		cfg.Options.ImplicitReturn = true
		cfg.Params.CallCounterSize = 4
		var buf bytes.Buffer
		e, err := NewEncoder(&buf, cfg, img)
		if err != nil {
			t.Fatal(err)
		}
		e.blind = true
		for i := range blocks {
			if err := e.Block(&blocks[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if e.Warning() != "" {
			t.Errorf("%s: a minimal counter cannot know: warning %q", prog, e.Warning())
		}
		s, err := decodeInto(t, cfg, img, buf.Bytes(), false)
		if err != nil || s.err != nil {
			t.Fatalf("%s: %v %v", prog, err, s.err)
		}
		if v, _ := checkRule(pcs, s); v != "" {
			t.Errorf("%s: %s", prog, v)
		}
		if len(s.gaps) == 0 {
			t.Errorf("%s: no gap", prog)
		}
		for _, g := range s.gaps {
			if !strings.Contains(g.err.Error(), "call counter mode: a return inferred since the last checkpoint may have gone elsewhere") {
				t.Errorf("%s: gap %v does not name the call counter", prog, g.err)
			}
		}
	}
}
