package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIIngressSpinLoop: an ingress CSV of a 3-bit itype port reports
// the spin loop "j ." at the end of the cboz program (0x800000b4) with
// itype 0, each execution a block beginning where the one before ended:
// the shape of a multi-access instruction's retirements, which an ingress
// CSV read is folded of. With the image, which says the jump makes no
// access, every execution is read: the PC list has the sw before and the
// jump's five executions (the last interrupted).
func TestCLIIngressSpinLoop(t *testing.T) {
	dir := t.TempDir()
	elf := filepath.Join("..", "..", "examples", "sim-tests", "zcmp", "cboz64.elf")
	csv := filepath.Join(dir, "spin.csv")
	if err := os.WriteFile(csv, []byte("itype,iaddr,iretire,ilastsize,priv\n0,800000b0,4,1,3\n"+
		"0,800000b4,2,1,3\n0,800000b4,2,1,3\n0,800000b4,2,1,3\n2,800000b4,2,1,3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "spin.pcs")
	if code, _, e := rv(t, "convert", "--iretire-halfwords", "--image", elf, "--ingress-in", csv, "--format", "pcs", "-o", out); code != 0 {
		t.Fatalf("convert: exit %d: %s", code, e)
	}
	b, _ := os.ReadFile(out)
	want := "0x800000b0 0x800000b4 0x800000b4 0x800000b4 0x800000b4 0x800000b4"
	if got := strings.Join(strings.Fields(string(b)), " "); got != want {
		t.Errorf("PCs %s, want %s", got, want)
	}
}
