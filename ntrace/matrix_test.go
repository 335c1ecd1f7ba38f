package ntrace

import (
	"bytes"
	"fmt"
	"io"
	"math/rand"
	"sort"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/riscv"
)

// synthFlow generates a random but valid execution of the program in img:
// branches go either way, calls and returns follow a real call stack
// (with occasional non-standard returns), indirect jumps go to function
// entries, sequentially inferable jumps go where their auipc/lui says, and
// traps (exceptions and asynchronous jumps to handlers) happen at random.
// It returns the retired PCs.
func synthFlow(img *image.Set, seed int64, n int, wellBehaved bool) []uint64 {
	rng := rand.New(rand.NewSource(seed))
	var funcs []uint64
	for _, s := range img.Symbols() {
		if s.Kind == image.Func && s.Size > 0 {
			if in, ok := img.Inst(s.Addr); ok && in.Class != riscv.ClassIllegal {
				funcs = append(funcs, s.Addr)
			}
		}
	}
	sort.Slice(funcs, func(i, j int) bool { return funcs[i] < funcs[j] })
	xlen := img.XLEN()
	pc := img.Entry()
	if main, ok := img.Lookup("main"); ok {
		pc = main
	}
	var stack []uint64
	var prev riscv.Inst
	var prevPC uint64
	havePrev := false
	out := make([]uint64, 0, n)
	randomFunc := func() uint64 { return funcs[rng.Intn(len(funcs))] }
	for len(out) < n {
		in, ok := img.Inst(pc)
		if !ok || in.Class == riscv.ClassIllegal || in.Len == 0 {
			pc = randomFunc() // a trap took us somewhere else
			havePrev = false
			continue
		}
		out = append(out, pc)
		next := pc + uint64(in.Len)
		switch in.Class {
		case riscv.ClassBranch:
			back := in.Imm < 0
			if back && rng.Intn(10) < 8 || !back && rng.Intn(10) < 3 {
				next = in.Target(pc)
			}
		case riscv.ClassJump:
			next = in.Target(pc)
			if in.Link == riscv.LinkCall {
				stack = append(stack, pc+uint64(in.Len))
			}
		case riscv.ClassIndirect, riscv.ClassPopRet:
			if t, ok := func() (uint64, bool) {
				if !havePrev || prevPC+uint64(prev.Len) != pc {
					return 0, false
				}
				return ingress.SeqTarget(prev, prevPC, in, xlen)
			}(); ok && img.Contains(t) {
				next = t
			} else if in.Link == riscv.LinkReturn || in.Link == riscv.LinkCoSwap {
				if len(stack) > 0 && (wellBehaved || rng.Intn(20) != 0) {
					next = stack[len(stack)-1]
					stack = stack[:len(stack)-1]
				} else {
					next = randomFunc()
				}
			} else {
				next = randomFunc()
			}
			if in.Link == riscv.LinkCall || in.Link == riscv.LinkCoSwap {
				stack = append(stack, pc+uint64(in.Len))
			}
		case riscv.ClassTrapReturn, riscv.ClassECall, riscv.ClassEBreak:
			next = randomFunc()
		}
		if len(stack) > 64 {
			stack = stack[1:]
		}
		if rng.Intn(700) == 0 && !(wellBehaved && (in.Class == riscv.ClassIndirect || in.Class == riscv.ClassPopRet)) {
			// An asynchronous trap. (In a PC list, one right after a
			// return looks like a return elsewhere than to the caller.)
			next = randomFunc()
		}
		if xlen == 32 {
			next &= 1<<32 - 1
		}
		prev, prevPC, havePrev = in, pc, true
		pc = next
	}
	return out
}

// synthBlocks turns a PC list into ingress blocks, then makes some traps
// interrupts, changes privilege around traps and adds time.
func synthBlocks(t testing.TB, img *image.Set, pcs []uint64, per bool, seed int64) []ingress.Block {
	var buf bytes.Buffer
	for _, pc := range pcs {
		fmt.Fprintf(&buf, "%#x\n", pc)
	}
	src := ingress.NewPCSource(&buf, "synth", img, ingress.PCOptions{PerInstruction: per})
	rng := rand.New(rand.NewSource(seed))
	var out []ingress.Block
	priv := ingress.PrivU
	var time uint64
	for {
		b, err := src.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		blk := *b
		time += uint64(blk.IRetire) + uint64(rng.Intn(3))
		blk.Time = time
		blk.Priv = priv
		if blk.IType.IsTrap() {
			if rng.Intn(2) == 0 {
				blk.IType = ingress.ITypeInterrupt
			}
			blk.Cause = uint64(rng.Intn(16))
			priv = ingress.PrivM
		} else if blk.IType == ingress.ITypeTrapReturn || rng.Intn(300) == 0 {
			priv = ingress.Priv([]ingress.Priv{ingress.PrivU, ingress.PrivS, ingress.PrivM}[rng.Intn(3)])
		}
		if rng.Intn(500) == 0 {
			blk.Context = uint64(rng.Intn(1 << 12))
			blk.CType = ingress.CTypePrecise
		} else if len(out) > 0 {
			blk.Context = out[len(out)-1].Context
		}
		out = append(out, blk)
	}
}

// roundTrip encodes blocks with cfg, decodes them and compares the PCs.
func roundTrip(t *testing.T, img *image.Set, blocks []ingress.Block, want []uint64, cfg Config) (int, *flow.Counter) {
	t.Helper()
	var trace bytes.Buffer
	if cfg.XLEN == 0 {
		cfg.XLEN = img.XLEN()
	}
	enc, err := NewEncoder(&trace, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range blocks {
		if err := enc.Block(&blocks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	col := &pcCollector{img: img}
	cnt := &flow.Counter{}
	d := mustDecoder(t, img, flow.Multi(col, cnt), DecoderConfigFrom(cfg))
	if err := d.Decode(bytes.NewReader(trace.Bytes())); err != nil {
		t.Fatal(err)
	}
	got := col.pcs
	if col.err != nil {
		for i := range got {
			if i >= len(want) || got[i] != want[i] {
				t.Fatalf("%+v: %v; first wrong PC %d: got %#x want %#x (previous %#x)", cfg, col.err, i, got[i], want[i], want[max(i-1, 0)])
			}
		}
		t.Fatalf("%+v: %v", cfg, col.err)
	}
	for i := range want {
		if i >= len(got) || got[i] != want[i] {
			g := "end"
			if i < len(got) {
				g = fmt.Sprintf("%#x", got[i])
			}
			t.Fatalf("%+v: PC %d: got %s, want %#x (decoded %d of %d)", cfg, i, g, want[i], len(got), len(want))
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%+v: decoded %d PCs, want %d", cfg, len(got), len(want))
	}
	// Every trap but one still pending at the end is reported, as an
	// interrupt exactly when it was one (unless B-TYPE=1 hides it).
	var traps, irqs uint64
	for i, b := range blocks {
		if b.IType.IsTrap() && i+1 < len(blocks) {
			traps++
			if b.IType == ingress.ITypeInterrupt {
				irqs++
			}
		}
	}
	if cnt.Traps != traps || !cfg.TrapBType1 && col.irqs != irqs {
		t.Fatalf("%+v: decoded %d traps (%d interrupts), want %d (%d)", cfg, cnt.Traps, col.irqs, traps, irqs)
	}
	if cfg.Timestamps && (col.times == 0 || col.lastTime > blocks[len(blocks)-1].Time || col.timeBack) {
		t.Fatalf("%+v: timestamps: %d, last %d (trace ends at %d), went back: %v", cfg, col.times, col.lastTime,
			blocks[len(blocks)-1].Time, col.timeBack)
	}
	return trace.Len(), cnt
}

// pcCollector expands ranges into PCs and fails on gaps.
type pcCollector struct {
	img      *image.Set
	pcs      []uint64
	err      error
	irqs     uint64
	times    int
	lastTime uint64
	timeBack bool
	traps    int
	stops    int
}

func (c *pcCollector) Event(e *flow.Event) error {
	switch e.Kind {
	case flow.KindGap:
		if c.err == nil {
			c.err = fmt.Errorf("gap after %d PCs: %v", len(c.pcs), e.Err)
		}
	case flow.KindTrap:
		c.traps++
		if e.Interrupt {
			c.irqs++
		}
	case flow.KindStop:
		c.stops++
	case flow.KindTime:
		if e.Time < c.lastTime {
			c.timeBack = true
		}
		c.times++
		c.lastTime = e.Time
	case flow.KindRange:
		pc := e.Start
		for i := uint64(0); i < e.N; i++ {
			c.pcs = append(c.pcs, pc)
			in, _ := c.img.Inst(pc)
			pc += uint64(in.Len)
		}
	}
	return nil
}
func (c *pcCollector) Close() error { return nil }

// matrix is the set of configurations every input must round-trip in.
func matrix() map[string]Config {
	m := map[string]Config{}
	for name, p := range Presets {
		m[name] = p
	}
	add := func(name string, c Config) { m[name] = c }
	add("btm-src-ts", Config{Mode: BTM, SrcBits: 5, SrcID: 17, Timestamps: true, Context: true})
	add("htm-src-ts-ctx", Config{Mode: HTM, SrcBits: 12, SrcID: 4095, Timestamps: true, Context: true})
	add("htm-small-icnt", Config{Mode: HTM, ICNTBits: 4})
	add("btm-small-icnt", Config{Mode: BTM, ICNTBits: 3})
	add("btm-icnt-sync", Config{Mode: BTM, ICNTBits: 5, ICNTFullSync: true})
	add("htm-hist2", Config{Mode: HTM, HistBits: 2})
	add("htm-hist5-rpt", Config{Mode: HTM, HistBits: 5, RepeatedHistory: true, HRepeatBits: 2})
	add("htm-patterns-small", Config{Mode: HTM, RepeatedHistory: true, HistPatterns: true, HRepeatBits: 3})
	add("sync-msgs", Config{Mode: HTM, SyncMode: SyncMessages, SyncMax: 0, ImplicitReturn: ReturnFull})
	// BTM counting messages: a sync is due at the next block once the
	// count runs out (the decoder checks where each one comes)
	add("btm-sync-msgs", Config{Mode: BTM, SyncMode: SyncMessages, SyncMax: 0, ImplicitReturn: ReturnFull,
		RepeatBranch: true, ICNTBits: 10})
	add("btm-sync-msgs-ctx", Config{Mode: BTM, SyncMode: SyncMessages, SyncMax: 1, Context: true})
	add("sync-halfwords", Config{Mode: BTM, SyncMode: SyncHalfwords, SyncMax: 2, RepeatBranch: true})
	add("sync-cycles", Config{Mode: HTM, SyncMode: SyncCycles, SyncMax: 3, Timestamps: true, ImplicitReturn: ReturnFull, StackDepth: 4})
	add("ir-count", Config{Mode: HTM, ImplicitReturn: ReturnCount, StackDepth: 3})
	add("ir-partial", Config{Mode: HTM, ImplicitReturn: ReturnPartial, PartialBits: 20, StackDepth: 2})
	add("ir-full-1", Config{Mode: BTM, ImplicitReturn: ReturnFull, StackDepth: 1})
	add("seq-jump", Config{Mode: HTM, SequentialJump: true, ImplicitReturn: ReturnFull})
	add("all-jumps-htm", Config{Mode: HTM, AllJumps: true})
	add("all-jumps-btm", Config{Mode: BTM, AllJumps: true, RepeatBranch: true})
	add("extend-msb", Config{Mode: HTM, ExtendAddrMSB: true, IndirectNoHist: true})
	add("btype1", Config{Mode: BTM, TrapBType1: true, RepeatBranch: true, RepeatedHistory: true})
	add("itype3", Config{Mode: HTM, ITypeWidth: 3})
	add("everything", Config{Mode: HTM, SrcBits: 3, SrcID: 5, ICNTBits: 10, HistBits: 20, RepeatedHistory: true,
		HistPatterns: true, RepeatBranch: true, ImplicitReturn: ReturnFull, StackDepth: 32, SequentialJump: true,
		ExtendAddrMSB: true, IndirectNoHist: true, Timestamps: true, Context: true, SyncMode: SyncMessages, SyncMax: 1})
	return m
}

// Every configuration round-trips random executions, with traps, of an
// RV32IMC and an RV64GC program, in per-instruction and merged blocks.
func TestRoundTripMatrix(t *testing.T) {
	inputs := []string{"ntrace-refcode/t1/test.elf", "ntrace-refcode/elf/coremark.riscv"}
	names := make([]string, 0)
	for n := range matrix() {
		names = append(names, n)
	}
	sort.Strings(names)
	for ii, in := range inputs {
		img := image.NewSet()
		if err := img.AddELF(corpus.Path(t, in)); err != nil {
			t.Fatal(err)
		}
		for _, per := range []bool{false, true} {
			for _, name := range names {
				cfg := matrix()[name]
				// The counting implicit-return mode cannot trace programs
				// that return elsewhere than to their caller.
				pcs := synthFlow(img, int64(ii+1), 60000, cfg.ImplicitReturn == ReturnCount)
				blocks := synthBlocks(t, img, pcs, per, int64(ii))
				t.Run(fmt.Sprintf("%s/per=%v/%s", in[len(in)-12:], per, name), func(t *testing.T) {
					if cfg.AllJumps {
						bl := append([]ingress.Block(nil), blocks...)
						for i := range bl {
							if it := bl[i].IType; it == ingress.ITypeDirectJump || it == ingress.ITypeOtherDirect {
								bl[i].IType = ingress.ITypeTaken
							}
						}
						roundTrip(t, img, bl, pcs, cfg)
						return
					}
					roundTrip(t, img, blocks, pcs, cfg)
				})
			}
		}
	}
}

// mustDecoder returns a decoder or fails the test.
func mustDecoder(t testing.TB, img *image.Set, sink flow.Sink, cfg DecoderConfig) *Decoder {
	t.Helper()
	d, err := NewDecoder(img, sink, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
