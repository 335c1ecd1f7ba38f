package ingress

import (
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/image"
)

// drain reads every block of s and returns them with the error that
// ended the reading (nil at io.EOF).
func drain(s Source) ([]Block, error) {
	var out []Block
	for {
		b, err := s.Next()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, *b)
	}
}

// wantLineError checks that err is a LineError at file:line whose reason
// holds want.
func wantLineError(t *testing.T, err error, file string, line int, want string) {
	t.Helper()
	var le *LineError
	if !errors.As(err, &le) || le.File != file || le.Line != line || !strings.Contains(le.Reason, want) {
		t.Errorf("got %v, want %s:%d: ...%s...", err, file, line, want)
	}
}

const spikeHeader = "VALID,ADDRESS,INSN,PRIVILEGE,EXCEPTION,ECAUSE,TVAL,INTERRUPT\n"
const spikeGood = "1,8000005a,c789,3,0,0,0,0\n"

// TestSpikeCSVFieldRanges: every field of a spike CSV row is checked
// against its definition; a bad one is FILE:LINE: reason, and --lenient
// skips and counts it.
func TestSpikeCSVFieldRanges(t *testing.T) {
	for _, tc := range []struct {
		row, want string
		xlen      int
	}{
		{"7,8000005a,c789,3,0,0,0,0", "VALID=7", 64},
		{"1,8000005a,c789,9,0,0,0,0", "PRIVILEGE=9", 64},
		{"1,8000005a,c789,2,0,0,0,0", "PRIVILEGE=2", 64},
		{"1,8000005a,c789,3,2,0,0,0", "EXCEPTION=2", 64},
		{"1,8000005a,c789,3,0,0,0,5", "INTERRUPT=5", 64},
		{"1,8000005a,c789,3,1,2,0,1", "both set", 64},
		{"1,8000005b,c789,3,0,0,0,0", "odd", 64},
		{"1,8000005a,1c789,3,0,0,0,0", "compressed", 64},
		{"1,8000005a,100000013,3,0,0,0,0", "wider than 32 bits", 64},
		{"1,18000005a,c789,3,0,0,0,0", "does not fit in 32 bits", 32},
		{"1,8000005a,c789,3,1,80000000,0,0", "ECAUSE=80000000", 32},
		{"1,8000005a,c789,3,1,2,100000000,0", "TVAL=100000000", 32},
		{"1,8000005a,c789", "missing PRIVILEGE", 64},
		{"1,8000005a,zz,3,0,0,0,0", "column INSN: invalid number", 64},
	} {
		var img *image.Set
		if tc.xlen == 32 {
			img = image.NewSet()
			img.SetXLEN(32)
		}
		in := spikeHeader + spikeGood + tc.row + "\n" + spikeGood
		s, err := NewSpikeSource(strings.NewReader(in), "x.csv", img, PCOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = drain(s)
		wantLineError(t, err, "x.csv", 3, tc.want)
		// lenient: the row is skipped and counted, the others read
		s, _ = NewSpikeSource(strings.NewReader(in), "x.csv", img, PCOptions{Lenient: true})
		blocks, err := drain(s)
		if err != nil || s.Skipped() != 1 || len(s.FirstSkipped()) != 1 || s.FirstSkipped()[0].Line != 3 || s.Instructions() != 2 {
			t.Errorf("%s lenient: %v, %d skipped, %d instructions, blocks %+v", tc.row, err, s.Skipped(), s.Instructions(), blocks)
		}
	}
	// The valid values all pass: U, S, M, D, VU, VS; VALID=0 rows are
	// ignored whatever they hold.
	in := spikeHeader + "1,8000005a,13,0,0,0,0,0\n1,8000005e,13,1,0,0,0,0\n1,80000062,13,6,0,0,0,0\n0,ffffffffffffffff,ffffffffff,9,9,9,9,9\n"
	s, _ := NewSpikeSource(strings.NewReader(in), "ok.csv", nil, PCOptions{})
	if _, err := drain(s); err != nil || s.Instructions() != 3 {
		t.Errorf("valid rows: %v, %d instructions", err, s.Instructions())
	}
}

const csvHeader = "itype_0,cause,tval,priv,iaddr_0,context,ctype,iretire_0,ilastsize_0,sijump_0\n"
const csvGood = "0,0,0,3,80000000,0,0,1,1,0\n"

// TestIngressCSVFieldRanges: the ingress CSV reader checks each column
// against the E-Trace ingress port tables.
func TestIngressCSVFieldRanges(t *testing.T) {
	for _, tc := range []struct{ row, want string }{
		{"0,0,0,2,80000000,0,0,1,1,0", "priv 2"},
		{"0,0,0,7,80000000,0,0,1,1,0", "priv 7"},
		{"7,0,0,3,80000000,0,0,1,1,0", "itype 7"},
		{"16,0,0,3,80000000,0,0,1,1,0", "itype 16"},
		{"0,0,0,3,80000000,0,4,1,1,0", "ctype 4"},
		{"0,0,0,3,80000000,0,0,1,3,0", "ilastsize 3"},
		{"0,0,0,3,80000000,0,0,1,1,2", "sijump 2"},
		{"0,0,0,3,80000001,0,0,1,1,0", "odd"},
		{"0,0,0,3,80000000,0,0,2,1,0", "halfword form"},
		{"0,0,0,3,80000000,0,0,1,1", "9 fields, header has 10"},
		{"0,0,0,3,8000000g,0,0,1,1,0", "column iaddr: invalid number"},
	} {
		in := csvHeader + csvGood + "# a comment\n" + tc.row + "\n" + csvGood
		s, err := NewCSVSource(strings.NewReader(in), "in.csv", CSVOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = drain(s)
		wantLineError(t, err, "in.csv", 4, tc.want)
		s, _ = NewCSVSource(strings.NewReader(in), "in.csv", CSVOptions{Lenient: true})
		blocks, err := drain(s)
		if err != nil || s.Skipped() != 1 || len(blocks) != 2 {
			t.Errorf("%s lenient: %v, %d skipped, %d blocks", tc.row, err, s.Skipped(), len(blocks))
		}
	}
}

// linearImage is 16 addi instructions at 0x1000, a beq at 0x1040 and a
// jalr at 0x1044, then more addi.
func linearImage() *image.Set {
	img := image.NewSet()
	var code []byte
	for i := 0; i < 16; i++ {
		code = append(code, 0x13, 0x05, 0x15, 0x00) // addi a0,a0,1
	}
	code = append(code, 0x63, 0x04, 0xb5, 0x00) // beq a0,a1,+8
	code = append(code, 0x67, 0x80, 0x00, 0x00) // jalr x0,0(ra)
	for i := 0; i < 16; i++ {
		code = append(code, 0x13, 0x05, 0x15, 0x00)
	}
	img.AddBytes("code", 0x1000, code)
	return img
}

// TestPCListGapComment: a "# gap ..." comment that a decoder wrote into a
// PC list is a discontinuity even where the PCs on its two sides look
// consecutive; other comments are skipped; malformed PCs are FILE:LINE
// errors (or skipped and counted with Lenient).
func TestPCListGapComment(t *testing.T) {
	img := linearImage()
	read := func(list string) ([]Block, *PCSource) {
		t.Helper()
		s := NewPCSource(strings.NewReader(list), "dec.pcs", img, PCOptions{})
		blocks, err := drain(s)
		if err != nil {
			t.Fatal(err)
		}
		return blocks, s
	}
	// Without the comment: one straight block.
	plain, _ := read("0x1000\n0x1004\n# a remark\n0x1008\n0x100c\n")
	if len(plain) != 1 || plain[0].IRetire != 8 || plain[0].IType != ITypeNone {
		t.Fatalf("no gap: %+v", plain)
	}
	// With it: an exception after 0x1004, the next PC starts anew.
	got, s := read("0x1000\n0x1004\n# gap at byte 12: truncated message\n0x1008\n0x100c\n")
	want := []Block{
		{IAddr: 0x1000, IRetire: 4, ILastSize: 1, IType: ITypeException, Priv: PrivM},
		{IAddr: 0x1008, IRetire: 4, ILastSize: 1, IType: ITypeNone, Priv: PrivM},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("gap after linear code: %+v", got)
	}
	if s.Gaps() != 1 || s.Discontinuities() != 1 {
		t.Errorf("%d gaps, %d discontinuities", s.Gaps(), s.Discontinuities())
	}
	// After a branch that seems not taken, and after an indirect jump
	// whose next PC seems its target: the branch or jump retires, then
	// an exception.
	got, _ = read("0x103c\n0x1040\n# gap at byte 99\n0x1044\n# gap at byte 120\n0x1048\n")
	want = []Block{
		{IAddr: 0x103c, IRetire: 4, ILastSize: 1, IType: ITypeNotTaken, Priv: PrivM},
		{IAddr: 0x1044, IType: ITypeException, Priv: PrivM},
		{IAddr: 0x1044, IRetire: 2, ILastSize: 1, IType: ITypeReturn, Priv: PrivM},
		{IAddr: 0x1048, IType: ITypeException, Priv: PrivM},
		{IAddr: 0x1048, IRetire: 2, ILastSize: 1, IType: ITypeNone, Priv: PrivM},
	}
	if len(got) != len(want) {
		t.Fatalf("gaps after control transfers: %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("block %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// Malformed lines.
	for _, tc := range []struct{ list, want string }{
		{"0x1000\n0xzz\n", "invalid PC"},
		{"0x1000\n0x1003\n", "odd"},
		{"0x1000\n,0x1004\n", "no PC"},
	} {
		s := NewPCSource(strings.NewReader(tc.list), "bad.pcs", img, PCOptions{})
		_, err := drain(s)
		wantLineError(t, err, "bad.pcs", 2, tc.want)
		s = NewPCSource(strings.NewReader(tc.list), "bad.pcs", img, PCOptions{Lenient: true})
		if _, err := drain(s); err != nil || s.Skipped() != 1 {
			t.Errorf("%q lenient: %v, %d skipped", tc.list, err, s.Skipped())
		}
	}
}

// TestPCSeqGapAndTags: PCSEQ lines with a bad tag are FILE:LINE errors
// (skipped with Lenient); a gap comment ends the block with an
// exception.
func TestPCSeqGapAndTags(t *testing.T) {
	in := "0x1000,L4\n0x1004,L4\n# gap at byte 7\n0x1008,L4\n"
	s := NewPCSeqSource(strings.NewReader(in), "x.pcseq", PCOptions{})
	got, err := drain(s)
	if err != nil || len(got) != 2 || got[0].IType != ITypeException || got[0].IRetire != 4 || got[1].IAddr != 0x1008 {
		t.Errorf("gap: %v %+v", err, got)
	}
	in = "0x1000,L4\n0x1004,X4\n0x1008,L4\n"
	_, err = drain(NewPCSeqSource(strings.NewReader(in), "x.pcseq", PCOptions{}))
	wantLineError(t, err, "x.pcseq", 2, "invalid type tag")
	// lenient: the skipped line is a gap, not glued over
	s = NewPCSeqSource(strings.NewReader(in), "x.pcseq", PCOptions{Lenient: true})
	got, err = drain(s)
	if err != nil || s.Skipped() != 1 || len(got) != 2 || got[0].IType != ITypeException {
		t.Errorf("lenient: %v, %d skipped, %+v", err, s.Skipped(), got)
	}
}

// FuzzTextReaders: whatever the bytes, the text readers end with io.EOF
// or an error naming the file (a LineError, or the image lookup error
// with FILE:LINE), never a panic; in lenient mode every malformed line is
// counted and the reading goes on.
func FuzzTextReaders(f *testing.F) {
	f.Add([]byte(spikeHeader + spikeGood + "7,8000005a,c789,9,0,0,0,0\n"))
	f.Add([]byte(csvHeader + csvGood + "0,0,0,2,80000001,0,0,1,1,0\n"))
	f.Add([]byte("0x1000\n# gap at byte 3\n0x1004\nzz\n0x1041\n"))
	f.Add([]byte("0x1000,L4\n0x1004,B4\n# gap\n0x2000,X9\n"))
	img := linearImage()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, lenient := range []bool{false, true} {
			opt := PCOptions{Lenient: lenient}
			var srcs []Source
			srcs = append(srcs, NewPCSource(strings.NewReader(string(data)), "f", img, opt),
				NewPCSeqSource(strings.NewReader(string(data)), "f", opt))
			if s, err := NewSpikeSource(strings.NewReader(string(data)), "f", img, opt); err == nil {
				srcs = append(srcs, s)
			}
			if s, err := NewCSVSource(strings.NewReader(string(data)), "f", CSVOptions{Lenient: lenient, Halfwords: true}); err == nil {
				srcs = append(srcs, s)
			}
			for _, s := range srcs {
				for i := 0; i < 1e5; i++ {
					_, err := s.Next()
					if err == io.EOF {
						break
					}
					if err != nil {
						if !strings.HasPrefix(err.Error(), "f:") {
							t.Fatalf("error without FILE:LINE: %v", err)
						}
						var le *LineError
						if lenient && errors.As(err, &le) {
							t.Fatalf("lenient reader stopped on a malformed line: %v", err)
						}
						break
					}
				}
			}
		}
	})
}
