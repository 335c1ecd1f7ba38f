package ntrace

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// Instruction encodings used by the worked examples of the specification.
const (
	cAdd    = 0x952e     // c.add a0,a1
	add     = 0x00b50533 // add a0,a0,a1
	cEbreak = 0x9002     // c.ebreak
	mret    = 0x30200073 // mret
	jalrRA  = 0x000080e7 // jalr ra,0(ra)  (an indirect call)
	ret     = 0x00008067 // ret
)

// bType encodes beq a0,a1,off.
func bType(off int32) uint32 {
	u := uint32(off)
	return (u>>12&1)<<31 | (u>>5&0x3f)<<25 | 11<<20 | 10<<15 | 0<<12 | (u>>1&0xf)<<8 | (u>>11&1)<<7 | 0x63
}

// exampleImage builds an image from address -> instruction pairs.
func exampleImage(code map[uint64]uint32) *image.Set {
	mem := make([]byte, 0x1000)
	for a, in := range code {
		if in&3 == 3 {
			binary.LittleEndian.PutUint32(mem[a:], in)
		} else {
			binary.LittleEndian.PutUint16(mem[a:], uint16(in))
		}
	}
	img := image.NewSet()
	img.AddBytes("example", 0, mem)
	img.SetXLEN(64)
	return img
}

// The code of chapter 8 ("Example of I-CNT Handling in BTM mode").
var icntExampleCode = map[uint64]uint32{
	0x100: cAdd, 0x102: bType(0x200 - 0x102), 0x106: add, 0x10A: bType(0x300 - 0x10A), 0x10E: cAdd,
	0x110: add, 0x114: cEbreak, 0x200: cAdd, 0x202: cEbreak, 0x300: add, 0x304: cEbreak,
}

// blocksOf builds single-instruction ingress blocks for retired PCs.
func blocksOf(img *image.Set, pcs ...uint64) []ingress.Block {
	var list strings.Builder
	for _, pc := range pcs {
		fmt.Fprintf(&list, "%#x\n", pc)
	}
	src := ingress.NewPCSource(strings.NewReader(list.String()), "example", img, ingress.PCOptions{PerInstruction: true})
	var out []ingress.Block
	for {
		b, err := src.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			panic(err)
		}
		out = append(out, *b)
	}
}

// encodeMessages encodes blocks and returns the messages as text.
func encodeMessages(t *testing.T, cfg Config, blocks []ingress.Block) ([]string, []byte) {
	t.Helper()
	var buf bytes.Buffer
	enc, err := NewEncoder(&buf, cfg)
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
	var out []string
	r := NewReader(bytes.NewReader(buf.Bytes()), cfg.Wire())
	var m Message
	for r.Next(&m) == nil {
		out = append(out, m.String())
	}
	return out, buf.Bytes()
}

func TestICNTExamples(t *testing.T) {
	img := exampleImage(icntExampleCode)
	runs := []struct {
		pcs      []uint64
		btm, htm []string
	}{
		{[]uint64{0x100, 0x102, 0x200},
			[]string{"DirectBranch I-CNT=0x3", "ProgTraceCorrelation EVCODE=0x0 CDF=0x0 I-CNT=0x1"},
			[]string{"ProgTraceCorrelation EVCODE=0x0 CDF=0x1 I-CNT=0x4 HIST=0x3"}},
		{[]uint64{0x100, 0x102, 0x106, 0x10A, 0x300},
			[]string{"DirectBranch I-CNT=0x7", "ProgTraceCorrelation EVCODE=0x0 CDF=0x0 I-CNT=0x2"},
			[]string{"ProgTraceCorrelation EVCODE=0x0 CDF=0x1 I-CNT=0x9 HIST=0x5"}},
		{[]uint64{0x100, 0x102, 0x106, 0x10A, 0x10E, 0x110},
			[]string{"ProgTraceCorrelation EVCODE=0x0 CDF=0x0 I-CNT=0xa"},
			[]string{"ProgTraceCorrelation EVCODE=0x0 CDF=0x1 I-CNT=0xa HIST=0x4"}},
	}
	sync := "ProgTraceSync SYNC=0x3 I-CNT=0x0 F-ADDR=0x80"
	for i, r := range runs {
		for _, mode := range []Mode{BTM, HTM} {
			want := append([]string{sync}, r.btm...)
			if mode == HTM {
				want = append([]string{sync}, r.htm...)
			}
			cfg := Config{Mode: mode, StartSync: SyncDebugExit, EndEVCode: EVCodeDebug}
			got, trace := encodeMessages(t, cfg, blocksOf(img, r.pcs...))
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("run %d %s:\n got %q\nwant %q", i+1, mode, got, want)
			}
			checkDecode(t, img, trace, cfg, r.pcs)
		}
	}
}

// checkDecode decodes trace and compares the PCs.
func checkDecode(t *testing.T, img *image.Set, trace []byte, cfg Config, want []uint64) *pcCollector {
	t.Helper()
	col := &pcCollector{img: img}
	if err := mustDecoder(t, img, col, DecoderConfigFrom(cfg)).Decode(bytes.NewReader(trace)); err != nil {
		t.Fatal(err)
	}
	if col.err != nil || fmt.Sprint(col.pcs) != fmt.Sprint(want) {
		t.Errorf("decoded %x (%v), want %x", col.pcs, col.err, want)
	}
	return col
}

// "Examples of I-CNT Field Full Generation": a 4-bit I-CNT counter whose
// top bit is the overflow flag.
func TestICNTFullExample(t *testing.T) {
	code := map[uint64]uint32{0x100: cAdd, 0x102: bType(0x200 - 0x102), 0x106: add, 0x10A: add, 0x10E: add,
		0x112: add, 0x116: add, 0x11A: cAdd, 0x11C: cEbreak}
	img := exampleImage(code)
	pcs := []uint64{0x100, 0x102, 0x106, 0x10A, 0x10E, 0x112, 0x116, 0x11A}
	sync := "ProgTraceSync SYNC=0x3 I-CNT=0x0 F-ADDR=0x80"
	cfg := Config{Mode: HTM, ICNTBits: 4, StartSync: SyncDebugExit}
	got, trace := encodeMessages(t, cfg, blocksOf(img, pcs...))
	want := []string{sync, "ResourceFull RCODE=0x0 RDATA=0x9", "ProgTraceCorrelation EVCODE=0x0 CDF=0x1 I-CNT=0x5 HIST=0x2"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("ResourceFull:\n got %q\nwant %q", got, want)
	}
	checkDecode(t, img, trace, cfg, pcs)

	cfg = Config{Mode: BTM, ICNTBits: 4, ICNTFullSync: true, StartSync: SyncDebugExit}
	got, trace = encodeMessages(t, cfg, blocksOf(img, pcs...))
	want = []string{sync, "ProgTraceSync SYNC=0x4 I-CNT=0x9 F-ADDR=0x89", "ProgTraceCorrelation EVCODE=0x0 CDF=0x0 I-CNT=0x5"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("SYNC=4:\n got %q\nwant %q", got, want)
	}
	checkDecode(t, img, trace, cfg, pcs)
}

// The HIST examples of "HIST Field Generation".
func TestHistExamples(t *testing.T) {
	cases := map[string]uint64{"01": 0x5, "111": 0xF, "0000": 0x10, "": 0x1}
	for bits, want := range cases {
		e := &Encoder{cfg: Config{Mode: HTM}, hist: 1}
		for _, c := range bits {
			e.branch(c == '1', &ingress.Block{})
		}
		if e.hist != want || histBits(want) != map[bool]string{true: "empty", false: bits}[bits == ""] {
			t.Errorf("%q: HIST=%#x, want %#x (%s)", bits, e.hist, want, histBits(want))
		}
	}
}

// The "Corner Cases and Sequences" table, each decoded back exactly with
// its traps.
func TestCornerCases(t *testing.T) {
	code := map[uint64]uint32{0x100: cAdd, 0x102: add, 0x106: ret, 0x10A: add, 0x10E: ret,
		0x400: add, 0x404: mret, 0x500: add, 0x504: ret, 0x508: jalrRA}
	img := exampleImage(code)
	b := func(addr uint64, halfwords uint32, it ingress.IType) ingress.Block {
		return ingress.Block{IAddr: addr, IRetire: halfwords, ILastSize: 1, IType: it, Priv: ingress.PrivM}
	}
	cases := []struct {
		name   string
		blocks []ingress.Block
		pcs    []uint64
		traps  int
	}{
		{"back-to-back returns", []ingress.Block{b(0x508, 2, ingress.ITypeIndirectCall), b(0x10A, 2, ingress.ITypeNone),
			b(0x10E, 2, ingress.ITypeReturn), b(0x504, 2, ingress.ITypeReturn), b(0x400, 2, ingress.ITypeNone)},
			[]uint64{0x508, 0x10A, 0x10E, 0x504, 0x400}, 0},
		{"back-to-back exceptions", []ingress.Block{b(0x100, 3, ingress.ITypeException), {IAddr: 0x400, IType: ingress.ITypeException},
			b(0x500, 2, ingress.ITypeNone)}, []uint64{0x100, 0x102, 0x500}, 2},
		{"exception at interrupt destination", []ingress.Block{b(0x100, 1, ingress.ITypeInterrupt),
			{IAddr: 0x400, IType: ingress.ITypeException}, b(0x500, 2, ingress.ITypeNone)}, []uint64{0x100, 0x500}, 2},
		{"pending interrupt at start", []ingress.Block{{IAddr: 0x100, IType: ingress.ITypeInterrupt}, b(0x400, 2, ingress.ITypeNone)},
			[]uint64{0x400}, 1},
		{"exception at first instruction", []ingress.Block{{IAddr: 0x100, IType: ingress.ITypeException}, b(0x400, 4, ingress.ITypeTrapReturn),
			b(0x102, 2, ingress.ITypeNone)}, []uint64{0x400, 0x404, 0x102}, 1},
		{"exception after trap return", []ingress.Block{b(0x400, 4, ingress.ITypeTrapReturn), {IAddr: 0x10A, IType: ingress.ITypeException},
			b(0x500, 2, ingress.ITypeNone)}, []uint64{0x400, 0x404, 0x500}, 1},
	}
	for _, c := range cases {
		for _, cfg := range []Config{{Mode: BTM}, {Mode: HTM, ImplicitReturn: ReturnFull}, {Mode: HTM, Context: true, Timestamps: true, TrapBType1: true}} {
			_, trace := encodeMessages(t, cfg, append([]ingress.Block(nil), c.blocks...))
			col := checkDecode(t, img, trace, cfg, c.pcs)
			if col.traps != c.traps {
				t.Errorf("%s %+v: %d traps, want %d", c.name, cfg, col.traps, c.traps)
			}
		}
	}
}

// Tracing stopped and restarted by a filter: ProgTraceCorrelation EVCODE=4,
// then SYNC=5; the decoder reports the stop and resumes.
func TestTraceOffOn(t *testing.T) {
	img := exampleImage(icntExampleCode)
	blocks := blocksOf(img, 0x100, 0x102, 0x106, 0x10A, 0x10E, 0x110)
	var buf bytes.Buffer
	enc, _ := NewEncoder(&buf, Config{Mode: HTM})
	enc.TraceOff() // trace starts disabled
	enc.Block(&blocks[0])
	enc.Block(&blocks[1])
	enc.TraceOff()
	enc.Block(&blocks[4]) // 0x10E: tracing on again
	enc.Block(&blocks[5])
	enc.Close()
	var msgs []string
	r := NewReader(bytes.NewReader(buf.Bytes()), WireConfig{})
	var m Message
	for r.Next(&m) == nil {
		msgs = append(msgs, m.String())
	}
	want := []string{
		"ProgTraceCorrelation EVCODE=0x4 CDF=0x1 I-CNT=0x0 HIST=0x1",
		"ProgTraceSync SYNC=0x5 I-CNT=0x0 F-ADDR=0x80",
		"ProgTraceCorrelation EVCODE=0x4 CDF=0x1 I-CNT=0x3 HIST=0x2",
		"ProgTraceSync SYNC=0x5 I-CNT=0x0 F-ADDR=0x87",
		"ProgTraceCorrelation EVCODE=0x0 CDF=0x1 I-CNT=0x3 HIST=0x1",
	}
	if strings.Join(msgs, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(msgs, "\n"), strings.Join(want, "\n"))
	}
	col := checkDecode(t, img, buf.Bytes(), Config{Mode: HTM}, []uint64{0x100, 0x102, 0x10E, 0x110})
	if col.stops != 2 { // the first correlation comes before any sync
		t.Errorf("%d stops reported, want 2", col.stops)
	}
}

// Several sources in one stream, told apart by SRC.
func TestMultipleSources(t *testing.T) {
	img := exampleImage(icntExampleCode)
	runs := [][]uint64{{0x100, 0x102, 0x200}, {0x100, 0x102, 0x106, 0x10A, 0x300}, {0x100, 0x102, 0x106, 0x10A, 0x10E, 0x110}}
	var msgs [][]byte
	for i, pcs := range runs {
		cfg := Config{Mode: BTM, SrcBits: 4, SrcID: uint32(i + 1), Timestamps: true}
		_, trace := encodeMessages(t, cfg, blocksOf(img, pcs...))
		r := NewReader(bytes.NewReader(trace), cfg.Wire())
		var m Message
		for j := 0; r.Next(&m) == nil; j++ {
			for len(msgs) <= j*3+i {
				msgs = append(msgs, nil)
			}
			msgs[j*3+i] = append([]byte(nil), trace[m.Offset:m.Offset+int64(m.Size)]...)
		}
	}
	stream := bytes.Join(msgs, nil) // interleaved message by message
	per := map[uint32]*pcCollector{}
	sink := sinkFunc(func(e *flow.Event) {
		if per[e.Src] == nil {
			per[e.Src] = &pcCollector{img: img}
		}
		per[e.Src].Event(e)
	})
	if err := mustDecoder(t, img, sink, DecoderConfig{Wire: WireConfig{SrcBits: 4}}).Decode(bytes.NewReader(stream)); err != nil {
		t.Fatal(err)
	}
	for i, pcs := range runs {
		c := per[uint32(i+1)]
		if c == nil || c.err != nil || fmt.Sprint(c.pcs) != fmt.Sprint(pcs) {
			t.Errorf("source %d: %v", i+1, c)
		}
	}
}

type sinkFunc func(e *flow.Event)

func (f sinkFunc) Event(e *flow.Event) error { f(e); return nil }
func (f sinkFunc) Close() error              { return nil }

// A FIFO too small for the trace loses messages: the encoder sends an
// Error message and restarts with SYNC=7; the decoder reports the gap and
// every instruction it decodes is right.
func TestFIFOOverflow(t *testing.T) {
	img, pcsText := loadT1(t)
	var all []uint64
	for _, l := range strings.Fields(string(pcsText)) {
		pc, _ := ingress.ParsePC(l)
		all = append(all, pc)
	}
	blocks := synthBlocks(t, img, all[:40000], false, 3)
	cfg := Config{Mode: BTM, FIFOBytes: 100, DrainBytes: 1, DrainCycles: 40, Timestamps: true}
	var buf bytes.Buffer
	enc, err := NewEncoder(&buf, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := range blocks {
		enc.Block(&blocks[i])
	}
	enc.Close()
	if enc.Lost() == 0 || enc.Stats().ByTCode[TCodeError] == 0 || enc.Stats().Syncs[SyncFIFORestart] == 0 {
		t.Fatalf("no overflow: lost %d, errors %d", enc.Lost(), enc.Stats().ByTCode[TCodeError])
	}
	// Decode: the flow is pieces of the truth, in order, separated by gaps.
	var pieces [][]uint64
	cur := &pcCollector{img: img}
	var gaps int
	sink := sinkFunc(func(e *flow.Event) {
		switch e.Kind {
		case flow.KindGap:
			gaps++
			pieces = append(pieces, cur.pcs)
			cur = &pcCollector{img: img}
		case flow.KindRange:
			cur.Event(e)
		}
	})
	if err := mustDecoder(t, img, sink, DecoderConfigFrom(cfg)).Decode(bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	pieces = append(pieces, cur.pcs)
	if gaps != int(enc.Stats().ByTCode[TCodeError]) {
		t.Errorf("%d gaps for %d Error messages", gaps, enc.Stats().ByTCode[TCodeError])
	}
	pos, decoded := 0, 0
	for _, p := range pieces {
		if len(p) == 0 {
			continue
		}
		// find p[0] at or after pos, then the piece must match exactly
		start := -1
		for i := pos; i < len(all); i++ {
			if all[i] == p[0] && i+len(p) <= len(all) && fmt.Sprint(all[i:i+len(p)]) == fmt.Sprint(p) {
				start = i
				break
			}
		}
		if start < 0 {
			t.Fatalf("decoded piece of %d PCs from %#x is not in the executed sequence after %d", len(p), p[0], pos)
		}
		pos = start + len(p)
		decoded += len(p)
	}
	if decoded == 0 || decoded >= 40000 {
		t.Errorf("decoded %d of 40000 instructions", decoded)
	}
	t.Logf("%d messages lost, %d gaps, %d of 40000 instructions decoded", enc.Lost(), gaps, decoded)
}

// Sequential jump optimization: an auipc/lui followed by a jalr through
// the register it loaded is inferable; with trTeInstEnSequentialJump no
// message reports it, and the decoder computes the target.
func TestSequentialJump(t *testing.T) {
	const (
		auipcT1 = 0x00000317 // auipc t1,0x0      (t1 = 0x100)
		jalrT1  = 0x10030067 // jr 0x100(t1)      (-> 0x200)
		luiT2   = 0x000003b7 // lui t2,0x0        (t2 = 0)
		jalrT2  = 0x30038067 // jr 0x300(t2)      (-> 0x300)
	)
	img := exampleImage(map[uint64]uint32{0x100: auipcT1, 0x104: jalrT1, 0x200: luiT2, 0x204: jalrT2,
		0x300: add, 0x304: cEbreak})
	pcs := []uint64{0x100, 0x104, 0x200, 0x204, 0x300}
	for _, per := range []bool{true, false} {
		var blocks []ingress.Block
		if per {
			blocks = blocksOf(img, pcs...)
		} else {
			blocks = []ingress.Block{
				{IAddr: 0x100, IRetire: 4, ILastSize: 1, IType: ingress.ITypeIndirectJump, SIJump: true},
				{IAddr: 0x200, IRetire: 4, ILastSize: 1, IType: ingress.ITypeIndirectJump, SIJump: true},
				{IAddr: 0x300, IRetire: 2, ILastSize: 1},
			}
		}
		if !blocks[1].SIJump && per {
			t.Fatalf("the PC-list reader did not mark the jump as sequentially inferable: %+v", blocks)
		}
		cfg := Config{Mode: HTM, SequentialJump: true}
		msgs, trace := encodeMessages(t, cfg, blocks)
		if len(msgs) != 2 {
			t.Errorf("per=%v: messages %q, want only the sync and the final correlation", per, msgs)
		}
		checkDecode(t, img, trace, cfg, pcs)
		// Without the optimization both jumps are reported.
		msgs, trace = encodeMessages(t, Config{Mode: HTM}, blocks)
		if len(msgs) != 4 {
			t.Errorf("per=%v without sequential jumps: %q", per, msgs)
		}
		checkDecode(t, img, trace, Config{Mode: HTM}, pcs)
	}
}

// A trace cut at an arbitrary byte (a circular buffer that wrapped)
// decodes from its first sync message on: what it decodes is exactly the
// end of the executed flow.
func TestDecodeFromMiddle(t *testing.T) {
	img, pcsText := loadT1(t)
	var all []uint64
	for _, l := range strings.Fields(string(pcsText)) {
		pc, _ := ingress.ParsePC(l)
		all = append(all, pc)
	}
	for _, cfg := range []Config{{Mode: BTM, SyncMode: SyncMessages, SyncMax: 2}, {Mode: HTM, SyncMode: SyncHalfwords, SyncMax: 8, ImplicitReturn: ReturnFull}} {
		trace, _ := encodeFromPCs(t, img, pcsText, cfg, ingress.PCOptions{})
		for _, cut := range []int{1, 777, len(trace) / 3, len(trace) / 2} {
			col := &pcCollector{img: img}
			var syncs int
			sink := flow.Multi(col, sinkFunc(func(e *flow.Event) {
				if e.Kind == flow.KindSync {
					syncs++
				}
			}))
			dc := DecoderConfigFrom(cfg)
			dc.Decode.AllowTruncated = true
			if err := mustDecoder(t, img, sink, dc).Decode(bytes.NewReader(trace[cut:])); err != nil {
				t.Fatal(err)
			}
			got := col.pcs
			if syncs == 0 || len(got) == 0 || len(got) >= len(all) {
				t.Fatalf("cut at %d: %d syncs, %d PCs", cut, syncs, len(got))
			}
			tail := all[len(all)-len(got):]
			if fmt.Sprint(tail) != fmt.Sprint(got) {
				t.Errorf("%v cut at %d: the %d decoded PCs are not the end of the flow", cfg.Mode, cut, len(got))
			}
		}
	}
}

// Zcmt table jumps are inferable for N-Trace: with the jump table base
// the decoder reads their targets from the image.
func TestTableJumps(t *testing.T) {
	mem := make([]byte, 0x1000)
	put16 := func(a uint64, v uint16) { binary.LittleEndian.PutUint16(mem[a:], v) }
	put16(0x100, 0xA002)                                // cm.jt 0     -> table[0]
	put16(0x200, 0xA082)                                // cm.jalt 32  -> call table[32]
	put16(0x202, cEbreak)                               // stop
	put16(0x300, 0x8082)                                // ret
	binary.LittleEndian.PutUint32(mem[0x400:], 0x200)   // table[0]
	binary.LittleEndian.PutUint32(mem[0x480:], 0x300|1) // table[32] (bit 0 ignored)
	img := image.NewSet()
	img.AddBytes("zcmt", 0, mem)
	img.SetXLEN(32)
	if in, _ := img.Inst(0x200); in.Index != 32 || in.Link != riscv.LinkCall {
		t.Fatalf("cm.jalt 32 decodes as %+v", in)
	}
	pcs := []uint64{0x100, 0x200, 0x300}
	for _, cfg := range []Config{{Mode: HTM, XLEN: 32}, {Mode: HTM, XLEN: 32, ImplicitReturn: ReturnFull}, {Mode: BTM, XLEN: 32}} {
		msgs, trace := encodeMessages(t, cfg, blocksOf(img, pcs...))
		dc := DecoderConfigFrom(cfg)
		dc.JVT = 0x400
		col := &pcCollector{img: img}
		if err := mustDecoder(t, img, col, dc).Decode(bytes.NewReader(trace)); err != nil {
			t.Fatal(err)
		}
		if col.err != nil || fmt.Sprint(col.pcs) != fmt.Sprint(pcs) {
			t.Errorf("%+v: decoded %x (%v) from %q", cfg, col.pcs, col.err, msgs)
		}
		// Without the table base the decoder says what it needs.
		col = &pcCollector{img: img}
		mustDecoder(t, img, col, DecoderConfigFrom(cfg)).Decode(bytes.NewReader(trace))
		if col.err == nil || !strings.Contains(col.err.Error(), "jvt") {
			t.Errorf("%+v: no gap naming the missing jump table: %v", cfg, col.err)
		}
	}
}
