package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
	"github.com/rvtrace/rvtrace/ntrace"
)

// decodeOutputs runs decode with args and --jobs jobs, writing every kind
// of output, and returns the exit code, stderr and the outputs' contents.
func decodeOutputs(t *testing.T, dir string, jobs string, args ...string) (int, string, map[string]string) {
	t.Helper()
	outs := map[string]string{}
	var a []string
	for _, o := range []string{"pcs", "jsonl", "flow", "tarmac"} {
		f := filepath.Join(dir, jobs+"."+o)
		a = append(a, "--"+o, f)
		outs[o] = f
	}
	code, _, e := rv(t, append(append([]string{"decode", "--jobs", jobs}, args...), a...)...)
	for o, f := range outs {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		outs[o] = string(data)
	}
	return code, e, outs
}

// decode --jobs N gives exactly what a serial decode gives, with every
// output, the summary and the exit status, on an intact trace with
// periodic sync and on corrupt ones (with --strict too).
func TestDecodeJobsCLI(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/t1/test.elf")
	pcs := corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt")
	dir := t.TempDir()
	trace := filepath.Join(dir, "t1.nex")
	if code, _, e := rv(t, "encode", "--protocol", "ntrace", "--preset", "best", "--sync-mode", "3", "--sync-max", "4",
		"--image", elf, "--pcs-in", pcs, "-o", trace); code != 0 {
		t.Fatalf("encode: exit %d: %s", code, e)
	}
	old := ntrace.PieceBytes
	ntrace.PieceBytes = 256
	defer func() { ntrace.PieceBytes = old }()
	data, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "bad.nex")
	corrupt := append([]byte(nil), data...)
	for _, at := range []int{len(data) / 5, len(data) / 2, 3 * len(data) / 4} {
		corrupt[at] ^= 0x10
	}
	if err := os.WriteFile(bad, corrupt[:len(corrupt)-7], 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, file string
		strict     bool
		code       int
	}{{"intact", trace, false, 0}, {"corrupt", bad, false, 3}, {"corrupt strict", bad, true, 3}} {
		args := []string{"--protocol", "ntrace", "--preset", "best", "--image", elf, c.file}
		if c.strict {
			args = append(args, "--strict")
		}
		code1, e1, o1 := decodeOutputs(t, dir, "1", args...)
		code3, e3, o3 := decodeOutputs(t, dir, "3", args...)
		if code1 != c.code || code3 != code1 {
			t.Errorf("%s: exit %d serially, %d with --jobs 3, want %d: %s", c.name, code1, code3, c.code, e3)
		}
		if e1 != e3 {
			t.Errorf("%s: stderr differs:\nserial %s\njobs 3 %s", c.name, e1, e3)
		}
		for k, v := range o1 {
			if o3[k] != v {
				t.Errorf("%s: --%s output differs with --jobs 3 (%d and %d bytes)", c.name, k, len(v), len(o3[k]))
			}
			if len(v) == 0 {
				t.Errorf("%s: --%s output empty", c.name, k)
			}
		}
		if c.code == 3 && !strings.Contains(o1["pcs"], "# gap at byte") {
			t.Errorf("%s: no gap marked in the PC list", c.name)
		}
	}
	if code, _, e := rv(t, "decode", "--jobs", "-1", "--image", elf, trace); code != 2 {
		t.Errorf("--jobs -1: exit %d, want 2: %s", code, e)
	}
}

// An E-Trace decode with --jobs above 1 says that it decodes serially.
func TestDecodeJobsETraceSerial(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/t1/test.elf")
	pcs := corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt")
	dir := t.TempDir()
	trace := filepath.Join(dir, "t1.te")
	if code, _, e := rv(t, "encode", "--protocol", "etrace", "--image", elf, "--pcs-in", pcs, "-o", trace); code != 0 {
		t.Fatalf("encode: exit %d: %s", code, e)
	}
	args := []string{"--protocol", "etrace", "--image", elf, trace}
	code1, e1, o1 := decodeOutputs(t, dir, "1", args...)
	code2, e2, o2 := decodeOutputs(t, dir, "2", args...)
	if code1 != 0 || code2 != 0 || o1["pcs"] != o2["pcs"] {
		t.Fatalf("exit %d and %d, PC lists equal %v", code1, code2, o1["pcs"] == o2["pcs"])
	}
	if want := "decoding serially (--jobs 2): only N-Trace traces are split"; !strings.Contains(e2, want) ||
		strings.Contains(e1, want) {
		t.Errorf("stderr with --jobs 2: %q, want %q (and not with --jobs 1)", e2, want)
	}
}
