package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/etrace"
)

// TestCLIIngressHarts: run --harts 2 --ingress and --data-ingress write
// one file per hart ({hart} in the name), with and without a live trace
// and through the trace system, and say which; each hart's pair of files
// encodes (rvtrace encode --protocol etrace --data-trace --ingress-in
// --data-ingress-in) to a trace that decodes to exactly that hart's PCs
// (run --pcs with {hart}) and MR/MW records (cpuK of the simulator's full
// Tarmac). A name without {hart} is refused for several harts: no hart's
// records are dropped.
func TestCLIIngressHarts(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "mt-shared", "mt-shared.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, opt := range []string{"--ingress", "--data-ingress"} {
		code, _, e := rv(t, "run", "--harts", "2", "--max-instret", "2000000", opt, p("one.csv"), elf)
		if code == 0 || !strings.Contains(e, opt+" "+p("one.csv")) || !strings.Contains(e, "{hart}") {
			t.Errorf("run --harts 2 %s one.csv: exit %d: %s", opt, code, e)
		}
		if _, err := os.Stat(p("one.csv")); err == nil {
			t.Errorf("run --harts 2 %s one.csv: refused, but the file was written", opt)
		}
	}
	for _, mode := range [][]string{
		nil,
		{"--trace", "etrace", "--data-trace", "-o", p("mt.te")},
		{"--trace", "etrace", "--data-trace", "--trace-capture", p("cap.te")},
	} {
		run := append([]string{"run", "--harts", "2", "--max-instret", "2000000", "--ingress", p("i{hart}.csv"), "--data-ingress", p("d{hart}.csv"),
			"--tarmac-full", p("sim.tarmac"), "--pcs", p("run{hart}.pcs")}, mode...)
		code, _, e := rv(t, append(run, elf)...)
		if code != 0 {
			t.Fatalf("%v: run: exit %d: %s", mode, code, e)
		}
		for _, w := range []string{
			fmt.Sprintf("ingress CSV of each hart: %s (hart 0), %s (hart 1)", p("i0.csv"), p("i1.csv")),
			fmt.Sprintf("data ingress CSV of each hart: %s (hart 0), %s (hart 1)", p("d0.csv"), p("d1.csv")),
		} {
			if !strings.Contains(e, w) {
				t.Errorf("%v: run does not say %q: %s", mode, w, e)
			}
		}
		for h := 0; h < 2; h++ {
			tr := p(fmt.Sprintf("h%d.te", h))
			code, _, e := rv(t, "encode", "--protocol", "etrace", "--data-trace", "--image", elf,
				"--ingress-in", p(fmt.Sprintf("i%d.csv", h)), "--data-ingress-in", p(fmt.Sprintf("d%d.csv", h)), "-o", tr)
			if code != 0 {
				t.Fatalf("%v: encode hart %d: exit %d: %s", mode, h, code, e)
			}
			out := p("dec.tarmac")
			if code, _, e := rv(t, "decode", "--protocol", "etrace", "--data-trace", "--image", elf, tr, "--pcs", p("dec.pcs"), "--tarmac", out); code != 0 {
				t.Fatalf("%v: decode hart %d: exit %d: %s", mode, h, code, e)
			}
			runPCs, _ := os.ReadFile(p(fmt.Sprintf("run%d.pcs", h)))
			decPCs, _ := os.ReadFile(p("dec.pcs"))
			if len(runPCs) < 10000 || !bytes.Equal(runPCs, decPCs) {
				t.Errorf("%v: hart %d: the PCs of its ingress CSV (%d bytes) are not the run's (%d bytes)", mode, h, len(decPCs), len(runPCs))
			}
			want, got := hartMemRecords(t, p("sim.tarmac"), h), memRecords(t, out)
			if len(want) < 250 || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("%v: hart %d: its data ingress CSV gives %d MR/MW records, the simulator wrote %d, or they differ", mode, h, len(got), len(want))
			}
		}
	}
}

// sourceFrames returns the bytes of the UTDD frames of source IDs ids
// (in stream order) in the trace file path, framed with srcBits bits of
// source ID.
func sourceFrames(t *testing.T, path string, srcBits int, ids ...uint32) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := etrace.DefaultConfig()
	cfg.Encap, cfg.SrcBits = etrace.EncapUTDD, srcBits
	sc := etrace.NewScanner(bytes.NewReader(b), &cfg)
	var out []byte
	for sc.Scan() {
		fr := sc.Frame()
		for _, id := range ids {
			if fr.SrcID == id {
				out = append(out, b[fr.Offset:sc.Offset()]...)
			}
		}
	}
	if sc.Err() != nil {
		t.Fatalf("%s: %v", path, sc.Err())
	}
	return out
}

// TestCLIIngressHartsBytes: the ingress and data ingress CSV of each hart
// of run --harts 2 --trace etrace --data-trace encode, with that hart's
// source IDs (instruction h, data 2+h, --src-bits 2), to exactly the
// frames of those source IDs in the run's trace.
func TestCLIIngressHartsBytes(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "mt-shared", "mt-shared.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	code, _, e := rv(t, "run", "--harts", "2", "--max-instret", "2000000", "--trace", "etrace", "--data-trace", "-o", p("mt.te"),
		"--ingress", p("i{hart}.csv"), "--data-ingress", p("d{hart}.csv"), elf)
	if code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	for h := 0; h < 2; h++ {
		tr := p(fmt.Sprintf("h%d.te", h))
		code, _, e := rv(t, "encode", "--protocol", "etrace", "--encap", "utdd", "--src-bits", "2", "--src-id", fmt.Sprint(h),
			"--data-trace", "--data-src-id", fmt.Sprint(2+h), "--image", elf,
			"--ingress-in", p(fmt.Sprintf("i%d.csv", h)), "--data-ingress-in", p(fmt.Sprintf("d%d.csv", h)), "-o", tr)
		if code != 0 {
			t.Fatalf("encode hart %d: exit %d: %s", h, code, e)
		}
		want := sourceFrames(t, p("mt.te"), 2, uint32(h), uint32(2+h))
		got, err := os.ReadFile(tr)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 1000 || !bytes.Equal(got, want) {
			t.Errorf("hart %d: its CSV files encode to %d bytes, not the %d bytes of its frames in the run's trace", h, len(got), len(want))
		}
	}
}
