package tarmac

import (
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/testprog"
	"github.com/rvtrace/rvtrace/riscv"
)

// loadCalls loads the calls test program and the PCs qemu ran.
func loadCalls(t testing.TB) (*image.Set, []uint64) {
	t.Helper()
	return testprog.Load(t, "calls")
}

// simBlocks makes the ingress blocks a simulator would report for the
// qemu run of calls.elf, with what a simulator adds: a timestamp per
// block (some retirement groups split at a change of time), a privilege
// and context change, an interrupt whose handler is leaf (entered in M
// mode, returning with its ret), and an exception on the first
// instruction of a block (IRetire 0).
func simBlocks(t testing.TB, img *image.Set, pcs []uint64) []ingress.Block {
	var out []ingress.Block
	var cur ingress.Block
	open := false
	time := uint64(1000)
	priv := ingress.PrivU
	ctx := uint64(0)
	leaf, _ := img.Lookup("leaf")
	var leafBlocks []ingress.Block // leaf's body as blocks, in M mode
	for a := leaf; ; {
		in, _ := img.Inst(a)
		b := ingress.Block{IAddr: a, IRetire: uint32(in.Len / 2), ILastSize: uint8(in.Len / 4), Priv: ingress.PrivM, Context: 9}
		if in.Class != riscv.ClassLinear {
			b.IType = ingress.ITypeReturn
		}
		if n := len(leafBlocks); n > 0 && leafBlocks[n-1].IType == ingress.ITypeNone {
			leafBlocks[n-1].IRetire += b.IRetire
			leafBlocks[n-1].ILastSize = b.ILastSize
			leafBlocks[n-1].IType = b.IType
		} else {
			leafBlocks = append(leafBlocks, b)
		}
		a += uint64(in.Len)
		if in.Class != riscv.ClassLinear {
			break
		}
	}
	nblk := 0
	didIntr, didExc := false, false
	flush := func(it ingress.IType) {
		cur.IType = it
		out = append(out, cur)
		open = false
		nblk++
		time += 3
		if nblk == 500 {
			priv, ctx = ingress.PrivS, 5
		}
	}
	for i, pc := range pcs {
		in, _ := img.Inst(pc)
		if !open {
			cur = ingress.Block{IAddr: pc, Time: time, Priv: priv, Context: ctx}
			open = true
		}
		cur.IRetire += uint32(in.Len / 2)
		cur.ILastSize = uint8(in.Len / 4)
		hasNext := i+1 < len(pcs)
		var next uint64
		if hasNext {
			next = pcs[i+1]
		}
		it := itypeOf(classifyRISCV(in.Raw, 64, riscv.ExtRV64Default), true, pc, int(in.Len), next, hasNext)
		switch {
		case it != ingress.ITypeNone:
			flush(it)
		case !hasNext || next != pc+uint64(in.Len):
			flush(ingress.ITypeNone)
		case i%37 == 0:
			// a retirement group ends here: the next starts at a later time
			flush(ingress.ITypeNone)
		}
		if !open && i >= 3000 && !didIntr && hasNext {
			didIntr = true
			// an interrupt after this block: leaf runs as the handler
			// and returns to where the program goes on
			out = append(out, ingress.Block{IAddr: next, IType: ingress.ITypeInterrupt, Cause: 7, Time: time, Priv: priv, Context: ctx})
			time += 3
			for _, lb := range leafBlocks {
				lb.Time = time
				time += 3
				out = append(out, lb)
			}
		}
		if !open && i >= 5000 && !didExc && hasNext {
			didExc = true
			// an illegal-instruction exception at next, handled by
			// leaf, which returns to next
			raw, _ := img.Inst(next)
			out = append(out, ingress.Block{IAddr: next, IType: ingress.ITypeException, Cause: 2, TVal: uint64(raw.Raw), Time: time, Priv: priv, Context: ctx})
			time += 3
			for _, lb := range leafBlocks {
				lb.Time = time
				time += 3
				out = append(out, lb)
			}
		}
	}
	return out
}

// readBlocks decodes Tarmac text back into blocks.
func readBlocks(t testing.TB, text []byte) []ingress.Block {
	t.Helper()
	d := NewDecoder(NewReader(bytes.NewReader(text), "roundtrip.tarmac"), Options{})
	var out []ingress.Block
	for {
		b, err := d.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *b)
	}
}

func compareBlocks(t *testing.T, got, want []ingress.Block) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%d blocks read back, want %d", len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if got[i] != want[i] {
			t.Fatalf("block %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// TestTarmacRoundTripBlocks writes simulator blocks as Tarmac (the Writer as an
// ingress.Sink) and reads them back: the same blocks.
func TestTarmacRoundTripBlocks(t *testing.T) {
	img, pcs := loadCalls(t)
	blocks := simBlocks(t, img, pcs)
	// Without disassembly, instruction records end with the colon.
	var nd bytes.Buffer
	w := NewWriter(&nd, img, WriterOptions{NoDisasm: true})
	for i := range blocks {
		if err := w.Block(&blocks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	compareBlocks(t, readBlocks(t, nd.Bytes()), blocks)
	var buf bytes.Buffer
	w = NewWriter(&buf, img, WriterOptions{})
	for i := range blocks {
		if err := w.Block(&blocks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	compareBlocks(t, readBlocks(t, buf.Bytes()), blocks)
	if !bytes.Contains(buf.Bytes(), []byte(" E ")) || !bytes.Contains(buf.Bytes(), []byte("Interrupt_MachineTimer")) ||
		!bytes.Contains(buf.Bytes(), []byte("Exception_IllegalInstruction")) || !bytes.Contains(buf.Bytes(), []byte(" R scontext 0000000000000005")) {
		t.Error("output lacks event or context records")
	}
}

// TestTarmacRoundTripTracer drives the Writer as a simulator would (its
// sim.Observer methods: an Inst per instruction, register writes and memory accesses after it,
// Trap before the handler) and reads the blocks back.
func TestTarmacRoundTripTracer(t *testing.T) {
	img, pcs := loadCalls(t)
	blocks := simBlocks(t, img, pcs)
	var buf bytes.Buffer
	w := NewWriter(&buf, img, WriterOptions{})
	tr := w
	ctx := uint64(0)
	for _, b := range blocks {
		if b.Context != ctx {
			ctx = b.Context
			// a csrw to the context register, as the simulator reports it
			csr := uint16(0x5a8) // scontext
			if b.Priv == ingress.PrivM {
				csr = 0x7a8
			}
			if err := tr.CSR(0, csr, ctx); err != nil {
				t.Fatal(err)
			}
		}
		for a := b.IAddr; a < b.NextAddr(); {
			in, _ := img.Inst(a)
			if err := tr.Inst(0, b.Time, a, in.Raw, b.Priv); err != nil {
				t.Fatal(err)
			}
			if in.Rd != 0 {
				tr.IntReg(0, int(in.Rd), a^0x5555)
			}
			if s := in.Op.String(); s == "sd" || s == "c.sdsp" {
				tr.Mem(0, true, 0x7fff0000, 8, a)
			}
			a += uint64(in.Len)
		}
		if b.IType.IsTrap() {
			epc := b.NextAddr()
			if b.IRetire == 0 {
				epc = b.IAddr
			}
			if err := tr.Trap(0, b.Time, b.Priv, b.IType == ingress.ITypeInterrupt, b.Cause, epc, b.TVal); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// The Writer writes the trap with the privilege it trapped from;
	// the blocks of this test trap from the privilege of the block.
	compareBlocks(t, readBlocks(t, buf.Bytes()), blocks)
	for _, want := range []string{" R a0 ", " MW8 000000007fff0000 ", " FD (", " FI ("} {
		if !bytes.Contains(buf.Bytes(), []byte(want)) {
			t.Errorf("output lacks %q", want)
		}
	}
}

// TestTarmacFlowWriter writes a decoded flow (ranges, a time, a trap) and reads
// it back as the same flow.
func TestTarmacFlowWriter(t *testing.T) {
	img, pcs := loadCalls(t)
	blocks := simBlocks(t, img, pcs)
	// Flow from the blocks, via Tarmac once (the reference), then the
	// flow written again by the Writer as a flow.Sink and read back.
	var buf bytes.Buffer
	w := NewWriter(&buf, img, WriterOptions{})
	for i := range blocks {
		w.Block(&blocks[i])
	}
	w.Close()
	var ref collect
	if err := NewDecoder(NewReader(bytes.NewReader(buf.Bytes()), "a"), Options{}).Flow(&ref); err != nil {
		t.Fatal(err)
	}
	var buf2 bytes.Buffer
	w2 := NewWriter(&buf2, img, WriterOptions{})
	for i := range ref.evs {
		if err := w2.Event(&ref.evs[i]); err != nil {
			t.Fatal(err)
		}
	}
	w2.Close()
	var again collect
	if err := NewDecoder(NewReader(bytes.NewReader(buf2.Bytes()), "b"), Options{}).Flow(&again); err != nil {
		t.Fatal(err)
	}
	if len(ref.evs) != len(again.evs) {
		t.Fatalf("%d events, then %d", len(ref.evs), len(again.evs))
	}
	var insts uint64
	for i := range ref.evs {
		if ref.evs[i].String() != again.evs[i].String() {
			t.Fatalf("event %d: %s, then %s", i, ref.evs[i].String(), again.evs[i].String())
		}
		if ref.evs[i].Kind == flow.KindRange {
			insts += ref.evs[i].N
		}
	}
	if insts != uint64(len(pcs))+2*4 {
		t.Errorf("%d instructions, want %d", insts, len(pcs)+8)
	}
}

// TestTarmacRoundTripSimulator takes the ingress blocks rvtrace's simulator
// reported for calls.elf ("rvtrace run --linux --ingress", stored in
// testdata/calls-sim.ingress.csv.gz), writes them as Tarmac and reads
// them back: the same blocks, field for field.
func TestTarmacRoundTripSimulator(t *testing.T) {
	img, _ := loadCalls(t)
	f, err := os.Open("testdata/calls-sim.ingress.csv.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	src, err := ingress.NewCSVSource(zr, "calls-sim.ingress.csv", ingress.CSVOptions{Halfwords: true})
	if err != nil {
		t.Fatal(err)
	}
	var blocks []ingress.Block
	for {
		b, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, *b)
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, img, WriterOptions{})
	for i := range blocks {
		if err := w.Block(&blocks[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if len(blocks) < 1000 {
		t.Fatalf("only %d blocks in the fixture", len(blocks))
	}
	compareBlocks(t, readBlocks(t, buf.Bytes()), blocks)
}
