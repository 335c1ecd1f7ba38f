package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// rv runs the command line and returns the exit code and output.
func rv(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := mainWith(args, &out, &errb)
	return code, out.String(), errb.String()
}

func normalized(t *testing.T, path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ToLower(strings.ReplaceAll(string(data), "\r", ""))
	return strings.TrimRight(s, "\n") + "\n"
}

func TestCLIRoundTripPresets(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/t1/test.elf")
	pcs := corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt")
	want := normalized(t, pcs)
	dir := t.TempDir()
	for _, preset := range []string{"ref-btm", "ref-htm", "ref-htm-rpt", "ref-htm-cs8", "ref-htm-best", "best"} {
		nex := filepath.Join(dir, preset+".nex")
		out := filepath.Join(dir, preset+".pcs")
		if code, _, e := rv(t, "encode", "--protocol", "ntrace", "--image", elf, "--pcs-in", pcs, "--preset", preset, "-o", nex); code != 0 {
			t.Fatalf("encode %s: exit %d: %s", preset, code, e)
		}
		if code, _, e := rv(t, "decode", "--protocol", "ntrace", "--image", elf, nex, "--preset", preset, "--pcs", out); code != 0 {
			t.Fatalf("decode %s: exit %d: %s", preset, code, e)
		}
		if got := normalized(t, out); got != want {
			t.Errorf("%s: decoded PC list differs from test-PCONLY.txt", preset)
		}
	}
	// The reference's own trace decodes too, and dumps like its dump.
	out := filepath.Join(dir, "ref.pcs")
	if code, _, e := rv(t, "decode", "--image", elf, corpus.Path(t, "ntrace-refcode/t1/test-NEX.bin"), "--pcs", out); code != 0 {
		t.Fatalf("decode reference: %s", e)
	}
	if normalized(t, out) != want {
		t.Errorf("reference trace decodes differently")
	}
	code, dump, _ := rv(t, "dump", "--bytes", corpus.Path(t, "ntrace-refcode/t1/test-NEX.bin"))
	if code != 0 || strings.TrimRight(dump, "\n") != strings.TrimRight(normalizedDump(t), "\n") {
		t.Errorf("dump --bytes differs from the reference dump")
	}
}

func normalizedDump(t *testing.T) string {
	data, err := os.ReadFile(corpus.Path(t, "ntrace-refcode/t1/test-DUMP.txt"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.ReplaceAll(string(data), "\r", "")
}

// Traps and interrupts round-trip from an ingress CSV: a PC list with
// discontinuities becomes an ingress CSV with exceptions; some become
// interrupts; encoding and decoding gives the PCs back.
func TestCLIIngressCSVWithTraps(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/t1/test.elf")
	lines := strings.Split(strings.TrimSpace(normalized(t, corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt"))), "\n")
	var spliced []string
	for _, r := range [][2]int{{0, 3000}, {9000, 12000}, {500, 2500}, {40000, 47000}, {100, 200}} {
		spliced = append(spliced, lines[r[0]:r[1]]...)
	}
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pcs")
	os.WriteFile(in, []byte(strings.Join(spliced, "\n")+"\n"), 0o644)
	csv := filepath.Join(dir, "in.csv")
	if code, _, e := rv(t, "convert", "--image", elf, "--pcs-in", in, "--per-instruction", "--to-ingress", csv); code != 0 {
		t.Fatalf("convert: %s", e)
	}
	data, _ := os.ReadFile(csv)
	rows := strings.Split(string(data), "\n")
	traps := 0
	for i, r := range rows {
		if strings.HasPrefix(r, "1,") {
			traps++
			if traps%2 == 0 {
				rows[i] = "2" + r[1:] // an interrupt instead
			}
		}
	}
	if traps != 4 {
		t.Fatalf("%d traps in the ingress CSV, want 4", traps)
	}
	os.WriteFile(csv, []byte(strings.Join(rows, "\n")), 0o644)
	for _, preset := range []string{"ref-btm", "best"} {
		nex := filepath.Join(dir, "t.nex")
		out := filepath.Join(dir, "out.pcs")
		if code, _, e := rv(t, "encode", "--ingress-in", csv, "--preset", preset, "--context", "-o", nex); code != 0 {
			t.Fatalf("encode: %s", e)
		}
		code, _, e := rv(t, "decode", "--image", elf, nex, "--preset", preset, "--pcs", out, "--flow", filepath.Join(dir, "flow.txt"))
		if code != 0 {
			t.Fatalf("decode: %s", e)
		}
		if !strings.Contains(e, "4 traps") {
			t.Errorf("%s: summary %q does not report 4 traps", preset, e)
		}
		if got := normalized(t, out); got != strings.Join(spliced, "\n")+"\n" {
			t.Errorf("%s: decoded PCs differ from the input", preset)
		}
		flow, _ := os.ReadFile(filepath.Join(dir, "flow.txt"))
		if strings.Count(string(flow), "interrupt at") != 2 || strings.Count(string(flow), "exception at") != 2 {
			t.Errorf("%s: flow listing does not show 2 exceptions and 2 interrupts", preset)
		}
	}
}

// Bad input gives a clear error naming the file and the line, and a
// non-zero exit.
func TestCLIErrors(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/t1/test.elf")
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.pcs")
	os.WriteFile(bad, []byte("0x20010522\nzzz\n"), 0o644)
	code, _, e := rv(t, "encode", "--image", elf, "--pcs-in", bad, "-o", filepath.Join(dir, "x.nex"))
	if code == 0 || !strings.Contains(e, "bad.pcs:2") {
		t.Errorf("bad PC list: exit %d, %q", code, e)
	}
	os.WriteFile(bad, []byte("0x10\n"), 0o644)
	code, _, e = rv(t, "encode", "--image", elf, "--pcs-in", bad, "-o", filepath.Join(dir, "x.nex"))
	if code == 0 || !strings.Contains(e, "bad.pcs:1") || !strings.Contains(e, "0x10") {
		t.Errorf("PC outside the image: exit %d, %q", code, e)
	}
	junk := filepath.Join(dir, "junk.nex")
	os.WriteFile(junk, bytes.Repeat([]byte{0}, 100), 0o644)
	code, _, e = rv(t, "decode", "--image", elf, junk, "--pcs", filepath.Join(dir, "o.pcs"))
	// Gaps (exit 3), or no sync at all (exit 1): never a clean exit.
	if code == 0 || !strings.Contains(e, "gap") && !strings.Contains(e, "no sync") {
		t.Errorf("junk trace: exit %d, %q", code, e)
	}
	code, out, _ := rv(t, "dump", junk)
	if code != 0 || !strings.Contains(out, "ERROR") || !strings.Contains(out, "@0") {
		t.Errorf("dump of junk: exit %d, %q", code, out)
	}
	if code, _, _ := rv(t, "encode", "--preset", "nope", "--pcs-in", bad, "-o", "x"); code == 0 {
		t.Errorf("unknown preset accepted")
	}
	if code, _, _ := rv(t, "frobnicate"); code != 2 {
		t.Errorf("unknown command: exit %d", code)
	}
}

// The bundled example traced live decodes to exactly what ran, for every
// preset; the analysis commands read the trace.
func TestCLIRunTraceDecode(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	for _, preset := range []string{"ref-btm", "ref-htm-best", "best"} {
		nex := filepath.Join(dir, preset+".nex")
		ran := filepath.Join(dir, "ran.pcs")
		code, out, e := rv(t, "run", "--trace", "ntrace", "--preset", preset, "-o", nex, "--pcs", ran, elf)
		if code != 0 || !strings.Contains(out, "demo: sorted=1 fib(18)=2584") || !strings.Contains(e, "bits/instruction") {
			t.Fatalf("run %s: exit %d, stdout %q, stderr %q", preset, code, out, e)
		}
		dec := filepath.Join(dir, "dec.pcs")
		if code, _, e := rv(t, "decode", "--image", elf, "--preset", preset, nex, "--pcs", dec); code != 0 {
			t.Fatalf("decode %s: %s", preset, e)
		}
		if normalized(t, ran) != normalized(t, dec) {
			t.Errorf("%s: decoded PCs differ from the executed ones", preset)
		}
	}
	nex := filepath.Join(dir, "best.nex")
	code, out, e := rv(t, "profile", "--image", elf, "--preset", "best", nex)
	if code != 0 || !strings.Contains(out, "fib") || !strings.Contains(out, "395024") {
		t.Errorf("profile: exit %d, %q %q", code, out, e)
	}
	html := filepath.Join(dir, "r.html")
	if code, _, e := rv(t, "report", "--image", elf, "--preset", "best", nex, "-o", html); code != 0 {
		t.Errorf("report: %s", e)
	} else if data, _ := os.ReadFile(html); !bytes.Contains(data, []byte("<svg")) && !bytes.Contains(data, []byte("<html")) {
		t.Errorf("report is not HTML")
	}
}

// A guest that never ends is stopped with a clear message naming the PC
// and a non-zero exit.
func TestCLIRunLimit(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	code, _, e := rv(t, "run", "--max-instret", "1000", elf)
	if code == 0 || !strings.Contains(e, "pc 0x") || !strings.Contains(e, "limit") {
		t.Errorf("exit %d, %q", code, e)
	}
	code, _, e = rv(t, "run", filepath.Join(t.TempDir(), "missing.elf"))
	if code == 0 || !strings.Contains(e, "missing.elf") {
		t.Errorf("missing program: exit %d, %q", code, e)
	}
}
