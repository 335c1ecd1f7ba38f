package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// instMemRecords returns the MR/MW records of a Tarmac file, each with
// the address of the instruction record before it, without times.
func instMemRecords(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	it := regexp.MustCompile(` IT \(\d+\) ([0-9a-f]+) `)
	mem := regexp.MustCompile(`\b(M[RW]\d+ .*)$`)
	var out []string
	pc := ""
	for _, l := range strings.Split(string(b), "\n") {
		if m := it.FindStringSubmatch(l); m != nil {
			pc = m[1]
		} else if m := mem.FindStringSubmatch(l); m != nil {
			out = append(out, pc+" "+m[1])
		}
	}
	return out
}

// TestCLIZcmp runs the Zcmp/Zcmt program (examples/sim-tests/zcmp, RV32
// and RV64): its N-Trace and E-Trace decode to the PCs the simulator
// retired (the jump table found by its __jvt_base$ symbol), and with
// E-Trace data trace (unified and split protocols) the decoded MR/MW
// records, one per register a push or pop moves, are the simulator's,
// tied to the same instructions; encoding again from the run's ingress
// and data ingress CSV files gives the same trace.
func TestCLIZcmp(t *testing.T) {
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, xlen := range []int{32, 64} {
		elf := filepath.Join("..", "..", "examples", "sim-tests", "zcmp", fmt.Sprintf("zcmp%d.elf", xlen))
		for _, proto := range []string{"ntrace", "etrace"} {
			tr, pcs := p(fmt.Sprintf("%d.%s", xlen, proto)), p(fmt.Sprintf("%d.%s.pcs", xlen, proto))
			if code, _, e := rv(t, "run", "--max-instret", "100000", "--trace", proto, "-o", tr, "--pcs", pcs+".run", elf); code != 0 {
				t.Fatalf("RV%d %s: run: exit %d: %s", xlen, proto, code, e)
			}
			if code, _, e := rv(t, "decode", "--protocol", proto, "--image", elf, tr, "--pcs", pcs); code != 0 {
				t.Fatalf("RV%d %s: decode: exit %d: %s", xlen, proto, code, e)
			}
			a, _ := os.ReadFile(pcs + ".run")
			b, _ := os.ReadFile(pcs)
			if len(a) == 0 || !bytes.Equal(a, b) {
				t.Errorf("RV%d %s: the decoded PCs (%d bytes) are not the %d bytes the simulator retired", xlen, proto, len(b), len(a))
			}
		}
		for _, dp := range []string{"unified", "split"} {
			n := func(s string) string { return p(fmt.Sprintf("%d.%s.%s", xlen, dp, s)) }
			run := []string{"run", "--max-instret", "100000", "--trace", "etrace", "--data-trace", "--data-protocol", dp,
				"-o", n("te"), "--tarmac-full", n("sim.tarmac"), elf}
			if dp == "unified" {
				run = append(run[:len(run)-1], "--ingress", n("csv"), "--data-ingress", n("dcsv"), elf)
			}
			if code, _, e := rv(t, run...); code != 0 {
				t.Fatalf("RV%d %s: run: exit %d: %s", xlen, dp, code, e)
			}
			if dp == "unified" {
				// the same trace from the ingress CSV files: the data CSV's
				// accesses with one instruction address go with one
				// retirement, as many as the push or pop makes
				if code, _, e := rv(t, "encode", "--protocol", "etrace", "--data-trace", "--image", elf,
					"--ingress-in", n("csv"), "--data-ingress-in", n("dcsv"), "-o", n("2.te")); code != 0 {
					t.Fatalf("RV%d: encode: exit %d: %s", xlen, code, e)
				}
				a, _ := os.ReadFile(n("te"))
				b, _ := os.ReadFile(n("2.te"))
				if len(a) == 0 || !bytes.Equal(a, b) {
					t.Errorf("RV%d: the trace encoded from the ingress CSV files differs from the run's", xlen)
				}
			}
			if code, _, e := rv(t, "decode", "--protocol", "etrace", "--data-trace", "--data-protocol", dp, "--image", elf, n("te"),
				"--tarmac", n("dec.tarmac")); code != 0 || e != "" && strings.Contains(e, "warning") {
				t.Fatalf("RV%d %s: decode: exit %d: %s", xlen, dp, code, e)
			}
			want, got := instMemRecords(t, n("sim.tarmac")), instMemRecords(t, n("dec.tarmac"))
			if len(want) < 100 || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("RV%d %s: %d MR/MW records decoded, the simulator wrote %d, or they differ", xlen, dp, len(got), len(want))
			}
		}
	}
}
