package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestETraceCounterWarning: a program whose returns go elsewhere than
// after their call (etrace/testdata/returns/returns.elf) traced with the
// call counter variant of implicit return gets a warning from run and
// encode, even with -q, and still decodes exactly; with a return stack
// there is no warning.
func TestETraceCounterWarning(t *testing.T) {
	elf := filepath.Join("..", "..", "etrace", "testdata", "returns", "returns.elf")
	dir := t.TempDir()
	te, pcs, csv := filepath.Join(dir, "r.te"), filepath.Join(dir, "r.pcs"), filepath.Join(dir, "r.csv")
	const warn = "12 returns went elsewhere than after their call"
	for _, mode := range []string{"counter", "stack"} {
		code, _, e := rv(t, "run", "-q", "--trace", "etrace", "--implicit-return", mode, "-o", te, "--pcs", pcs, "--ingress", csv, elf)
		if code != 0 || strings.Contains(e, warn) != (mode == "counter") {
			t.Errorf("run --implicit-return %s: exit %d, stderr %q", mode, code, e)
		}
		dec := filepath.Join(dir, "dec.pcs")
		if code, _, e := rv(t, "decode", "--protocol", "etrace", "--implicit-return", mode, "--image", elf, te, "--pcs", dec); code != 0 {
			t.Fatalf("decode: exit %d, stderr %q", code, e)
		}
		a, _ := os.ReadFile(pcs)
		b, _ := os.ReadFile(dec)
		if len(a) == 0 || string(a) != string(b) {
			t.Errorf("%s: decoded PCs differ from the executed ones", mode)
		}
		code, _, e = rv(t, "encode", "-q", "--protocol", "etrace", "--image", elf, "--ingress-in", csv, "--implicit-return", mode, "-o", te)
		if code != 0 || strings.Contains(e, warn) != (mode == "counter") {
			t.Errorf("encode --implicit-return %s: exit %d, stderr %q", mode, code, e)
		}
	}
}
