package ingress

import (
	"bytes"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

func collect(t *testing.T, s Source) []Block {
	t.Helper()
	var out []Block
	for {
		b, err := s.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, *b)
	}
}

// The blocks derived from t1's PC list and the ELF agree exactly with the
// blocks derived from the reference code's own PCSEQ classification.
func TestPCListMatchesReferencePCSEQ(t *testing.T) {
	img := image.NewSet()
	if err := img.AddELF(corpus.Path(t, "ntrace-refcode/t1/test.elf")); err != nil {
		t.Fatal(err)
	}
	pcs, err := os.Open(corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer pcs.Close()
	seq, err := os.Open(corpus.Path(t, "ntrace-refcode/t1/test-PCSEQ.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer seq.Close()
	for _, per := range []bool{false, true} {
		pcs.Seek(0, 0)
		seq.Seek(0, 0)
		a := NewPCSource(pcs, "pconly", img, PCOptions{PerInstruction: per})
		b := NewPCSeqSource(seq, "pcseq", PCOptions{PerInstruction: per})
		ba, bb := collect(t, a), collect(t, b)
		if len(ba) != len(bb) {
			t.Fatalf("per-instruction=%v: %d blocks from the PC list, %d from PCSEQ", per, len(ba), len(bb))
		}
		for i := range ba {
			if ba[i] != bb[i] {
				t.Fatalf("block %d: %+v from the PC list, %+v from PCSEQ", i, ba[i], bb[i])
			}
		}
		if a.Instructions() != 164959 || a.Discontinuities() != 0 {
			t.Errorf("%d instructions, %d discontinuities", a.Instructions(), a.Discontinuities())
		}
	}
}

// Discontinuities in a PC list are reported as exceptions, never lost.
func TestPCListDiscontinuities(t *testing.T) {
	img := image.NewSet()
	// 0x1000: addi a0,a0,1 ; 0x1004: beq a0,a1,+8 ; 0x1008: jal x1,+0x10 ; 0x100c: nop
	code := []byte{
		0x13, 0x05, 0x15, 0x00, // addi a0,a0,1
		0x63, 0x04, 0xb5, 0x00, // beq a0,a1,0x100c
		0xef, 0x00, 0x00, 0x01, // jal ra,0x1018
		0x13, 0x00, 0x00, 0x00, // nop
	}
	img.AddBytes("code", 0x1000, append(code, make([]byte, 64)...))
	list := "0x1000\n0x2000\n0x1004\n0x1008\n0x3000\n"
	want := []Block{
		{IAddr: 0x1000, IRetire: 2, ILastSize: 1, IType: ITypeException, Priv: PrivM}, // addi then jump to 0x2000
		{IAddr: 0x2000, IRetire: 2, ILastSize: 1, IType: ITypeException, Priv: PrivM}, // nop, then back to 0x1004
		{IAddr: 0x1004, IRetire: 2, ILastSize: 1, IType: ITypeNotTaken, Priv: PrivM},
		{IAddr: 0x1008, IRetire: 2, ILastSize: 1, IType: ITypeDirectCall, Priv: PrivM},
		{IAddr: 0x1018, IType: ITypeException, Priv: PrivM}, // the call's target trapped
		{IAddr: 0x3000, IRetire: 2, ILastSize: 1, IType: ITypeNone, Priv: PrivM},
	}
	img.AddBytes("more", 0x2000, []byte{0x13, 0, 0, 0})
	img.AddBytes("more2", 0x3000, []byte{0x13, 0, 0, 0})
	s := NewPCSource(strings.NewReader(list), "list", img, PCOptions{})
	got := collect(t, s)
	if len(got) != len(want) {
		t.Fatalf("got %d blocks %+v", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if s.Discontinuities() != 3 {
		t.Errorf("%d discontinuities, want 3", s.Discontinuities())
	}
}

func TestCSVRoundTrip(t *testing.T) {
	blocks := []Block{
		{IAddr: 0x80000000, IRetire: 2, ILastSize: 1, IType: ITypeNone, Priv: PrivM, Time: 5},
		{IAddr: 0x80000004, IRetire: 1, ILastSize: 0, IType: ITypeTaken, Priv: PrivM, Time: 6},
		{IAddr: 0x80000100, IRetire: 0, IType: ITypeException, Cause: 2, TVal: 0xdead, Priv: PrivM, Time: 9},
		{IAddr: 0x80000200, IRetire: 2, ILastSize: 1, IType: ITypeIndirectCall, Priv: PrivS, Context: 0x1d, CType: CTypePrecise, SIJump: true, Time: 12},
	}
	var buf bytes.Buffer
	w := NewCSVWriter(&buf, CSVOptions{Time: true, SIJump: true})
	for i := range blocks {
		if err := w.Block(&blocks[i]); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if !strings.HasPrefix(buf.String(), "itype_0,cause,tval,priv,iaddr_0,context,ctype,iretire_0,ilastsize_0,time,sijump_0\n") {
		t.Fatalf("header: %q", buf.String())
	}
	s, err := NewCSVSource(&buf, "x.csv", CSVOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, s)
	if len(got) != len(blocks) {
		t.Fatalf("%d blocks back", len(got))
	}
	for i := range got {
		if got[i] != blocks[i] {
			t.Errorf("block %d: %+v, want %+v", i, got[i], blocks[i])
		}
	}
	// Errors name the file and line.
	_, err = NewCSVSource(strings.NewReader("itype_0,iaddr_0\n"), "bad.csv", CSVOptions{})
	if err == nil || !strings.Contains(err.Error(), "bad.csv:1") {
		t.Errorf("missing columns: %v", err)
	}
	s, _ = NewCSVSource(strings.NewReader("itype_0,cause,tval,priv,iaddr_0,iretire_0,ilastsize_0\n0,0,0,3,zz,1,1\n"), "bad.csv", CSVOptions{})
	if _, err := s.Next(); err == nil || !strings.Contains(err.Error(), "bad.csv:2") {
		t.Errorf("bad number: %v", err)
	}
}

// The spike CSV of the E-Trace reference flow: an exception row is an
// instruction that trapped without retiring.
func TestSpikeCSV(t *testing.T) {
	in := `VALID,ADDRESS,INSN,PRIVILEGE,EXCEPTION,ECAUSE,TVAL,INTERRUPT
1,8000005a,c789,3,0,0,0,0
1,8000005c,3a079073,3,1,2,0,0
1,80000038,716d,3,0,2,0,0
1,8000003a,34202573,3,0,2,0,0
`
	s, err := NewSpikeSource(strings.NewReader(in), "spike.csv", nil, PCOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := collect(t, s)
	want := []Block{
		{IAddr: 0x8000005a, IRetire: 1, ILastSize: 0, IType: ITypeNotTaken, Priv: PrivM},
		{IAddr: 0x8000005c, IType: ITypeException, Cause: 2, Priv: PrivM},
		{IAddr: 0x80000038, IRetire: 3, ILastSize: 1, IType: ITypeNone, Priv: PrivM},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}
