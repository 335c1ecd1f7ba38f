package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestETraceTwoHarts: run --harts 2 --trace etrace frames the trace in
// the UTDD encapsulation with one source ID per hart (the raw framing,
// which has none, is refused), and decode --protocol etrace separates the
// harts: on the two-hart S-mode kernel of TestSidebandTwoHarts (hart 0
// runs routine A, hart 1 routine C, at the same virtual address in two
// contexts), all sources together give the simulator's PCs, and each
// source (--src N, with the sideband or with the images placed by hand)
// gives the same PCs as the N-Trace trace of the same run decoded for
// that source, and its own routine three times.
func TestETraceTwoHarts(t *testing.T) {
	img, fa, fc := twoHartKernel(t)
	dir := t.TempDir()
	etr, side, pcs := filepath.Join(dir, "t.etr"), filepath.Join(dir, "t.side"), filepath.Join(dir, "run.pcs")
	runArgs := []string{"run", "--machine", "virt", "--kernel", img, "--harts", "2", "--max-instret", "1000000",
		"--sideband", side, "--image", img}
	code, _, errb := rv(t, append(runArgs, "--trace", "etrace", "-o", etr, "--pcs", pcs)...)
	if code != 0 || !strings.Contains(errb, "decode with --encap utdd --context --src-bits 1 --src N") {
		t.Fatalf("run: exit %d: %s", code, errb)
	}
	nex := filepath.Join(dir, "t.nex")
	if code, _, errb := rv(t, append(runArgs, "--trace", "ntrace", "-o", nex, "--sideband", filepath.Join(dir, "n.side"))...); code != 0 {
		t.Fatalf("run ntrace: exit %d: %s", code, errb)
	}
	dec := []string{"decode", "--protocol", "etrace", "--encap", "utdd", "--context", "--src-bits", "1"}
	all := filepath.Join(dir, "all.pcs")
	if code, _, errb := rv(t, append(dec, "--sideband-in", side, etr, "--pcs", all)...); code != 0 || !strings.Contains(errb, " 0 gaps") {
		t.Fatalf("decode: exit %d: %s", code, errb)
	}
	got, want := readPCLines(t, all), readPCLines(t, pcs)
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("decoded %d PCs, the simulator ran %d (or other ones)", len(got), len(want))
	}
	routine := map[int]string{0: "0x40000000\n0x40000004\n0x40000008\n", 1: "0x40000000\n0x40000008\n0x4000000c\n"}
	for src := 0; src < 2; src++ {
		a, b, n := filepath.Join(dir, fmt.Sprintf("sb%d.pcs", src)), filepath.Join(dir, fmt.Sprintf("hand%d.pcs", src)), filepath.Join(dir, fmt.Sprintf("n%d.pcs", src))
		s := []string{"--src", fmt.Sprint(src)}
		code1, _, e1 := rv(t, append(append(dec, s...), "--sideband-in", side, etr, "--pcs", a)...)
		code2, _, e2 := rv(t, append(append(dec, s...), "--image", img+"@0x80200000", "--image", "ctx=1:"+fa+"@0x40000000",
			"--image", "ctx=2:"+fc+"@0x40000000", etr, "--pcs", b)...)
		code3, _, e3 := rv(t, "decode", "--protocol", "ntrace", "--src-bits", "1", "--src", fmt.Sprint(src), "--sideband-in", side, nex, "--pcs", n)
		ga, _ := os.ReadFile(a)
		gb, _ := os.ReadFile(b)
		gn, _ := os.ReadFile(n)
		if code1 != 0 || code2 != 0 || code3 != 0 || !bytes.Equal(ga, gb) || !bytes.Equal(ga, gn) || len(ga) == 0 {
			t.Errorf("source %d: E-Trace with the sideband: exit %d, %d bytes; by hand: exit %d, %d bytes; N-Trace: exit %d, %d bytes\n%s\n%s\n%s",
				src, code1, len(ga), code2, len(gb), code3, len(gn), e1, e2, e3)
		}
		if n := strings.Count(string(ga), routine[src]); n != 3 || strings.Contains(string(ga), routine[1-src]) {
			t.Errorf("source %d ran its routine %d times, want 3, and not the other hart's", src, n)
		}
	}
	// the raw framing cannot tell the harts apart
	code, _, errb = rv(t, append(runArgs, "--trace", "etrace", "--encap", "raw", "-o", filepath.Join(dir, "raw.etr"))...)
	if code == 0 || !strings.Contains(errb, "--encap raw has no source ID") {
		t.Errorf("run --encap raw --harts 2: exit %d: %s", code, errb)
	}
	// nor has the te_inst CSV
	code, _, errb = rv(t, append(runArgs, "--trace", "etrace", "--te-inst-csv", filepath.Join(dir, "t.csv"), "-o", filepath.Join(dir, "csv.etr"))...)
	if code == 0 || !strings.Contains(errb, "--te-inst-csv writes the packets of one hart") {
		t.Errorf("run --te-inst-csv --harts 2: exit %d: %s", code, errb)
	}
}
