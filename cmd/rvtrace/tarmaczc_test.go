package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
)

// controlEnds returns, for each block of an ingress CSV file whose last
// instruction transfers control (itype other than 0), its last address
// and itype.
func controlEnds(t *testing.T, path string, halfwords bool) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	src, err := ingress.NewCSVSource(f, path, ingress.CSVOptions{Halfwords: halfwords})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for {
		b, err := src.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if b.IType != ingress.ITypeNone {
			out = append(out, fmt.Sprintf("%#x %v", b.LastAddr(), b.IType))
		}
	}
}

// TestTarmacZcmpBlocks: the ingress blocks rebuilt from the Tarmac trace
// of the Zcmp/Zcmt program (RV32 and RV64) end where, and with the itype,
// the simulator's own ingress port ended them: a cm.popret is a return
// and a cm.jt a jump, with the program's ELF file (whose Tag_RISCV_arch
// names Zcmp and Zcmt) and without it (the records' disassembly names
// them). On RV64, whose default is Zcd, the Tarmac reader used to
// classify cm.popret and cm.popretz as uninferable jumps.
func TestTarmacZcmpBlocks(t *testing.T) {
	dir := t.TempDir()
	for _, xlen := range []int{32, 64} {
		elf := filepath.Join("..", "..", "examples", "sim-tests", "zcmp", fmt.Sprintf("zcmp%d.elf", xlen))
		p := func(n string) string { return filepath.Join(dir, fmt.Sprintf("%d.%s", xlen, n)) }
		if code, _, e := rv(t, "run", "-q", "--max-instret", "100000", "--tarmac", p("tarmac"), "--ingress", p("live.csv"), elf); code != 0 {
			t.Fatalf("RV%d: run: exit %d: %s", xlen, code, e)
		}
		want := controlEnds(t, p("live.csv"), false)
		returns := 0
		for _, w := range want {
			if strings.HasSuffix(w, fmt.Sprint(ingress.ITypeReturn)) {
				returns++
			}
		}
		if returns < 2 {
			t.Fatalf("RV%d: %d returns in the simulator's blocks", xlen, returns)
		}
		for _, withELF := range []bool{true, false} {
			args := []string{"tarmac", p("tarmac"), "--blocks", p("tarmac.csv")}
			if withELF {
				args = append(args, "--image", elf)
			}
			if code, _, e := rv(t, args...); code != 0 {
				t.Fatalf("RV%d: tarmac: exit %d: %s", xlen, code, e)
			}
			got := controlEnds(t, p("tarmac.csv"), true)
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("RV%d, image %v: the Tarmac trace's blocks end\n%v\nthe simulator's\n%v", xlen, withELF, got, want)
			}
		}
	}
}
