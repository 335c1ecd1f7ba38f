package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLenientInputs: a malformed line of a text input stops every
// command reading it with FILE:LINE; --lenient skips it and reports the
// count and the first lines on stderr.
func TestLenientInputs(t *testing.T) {
	dir := t.TempDir()
	spike := filepath.Join(dir, "x.spike.csv")
	rows := "VALID,ADDRESS,INSN,PRIVILEGE,EXCEPTION,ECAUSE,TVAL,INTERRUPT\n" +
		"1,80000100,00000013,3,0,0,0,0\n" +
		"7,80000104,00000013,9,0,0,0,0\n" +
		"1,80000108,00000013,3,0,0,0,0\n"
	if err := os.WriteFile(spike, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "x.nex")
	for _, args := range [][]string{
		{"encode", "--spike-csv", spike, "-o", out},
		{"convert", "--spike-csv", spike, "--to-pcs", filepath.Join(dir, "x.pcs")},
	} {
		code, _, e := rv(t, args...)
		if code == 0 || !strings.Contains(e, spike+":3: VALID=7") {
			t.Errorf("%v: exit %d: %q", args, code, e)
		}
		code, _, e = rv(t, append(args, "--lenient")...)
		if code != 0 || !strings.Contains(e, "1 malformed lines skipped") || !strings.Contains(e, spike+":3: VALID=7") {
			t.Errorf("%v --lenient: exit %d: %q", args, code, e)
		}
	}
}
