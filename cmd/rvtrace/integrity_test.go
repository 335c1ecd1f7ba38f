package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// integrityFiles writes the traces the integrity tests decode: the N-Trace
// reference trace clean, corrupted in six bytes, empty, as E-Trace, with
// a SRC field, and gzip-compressed.
type integrityFiles struct {
	dir, elf, truth, clean, bad, empty, etrace, src, gz string
}

func newIntegrityFiles(t *testing.T) *integrityFiles {
	t.Helper()
	f := &integrityFiles{
		dir:   t.TempDir(),
		elf:   corpus.Path(t, "ntrace-refcode/t1/test.elf"),
		truth: corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt"),
		clean: corpus.Path(t, "ntrace-refcode/t1/test-NEX.bin"),
	}
	data, err := os.ReadFile(f.clean)
	if err != nil {
		t.Fatal(err)
	}
	bad := bytes.Clone(data)
	for i := 1200; i < 1206; i++ {
		bad[i] ^= 0x5c
	}
	f.bad = filepath.Join(f.dir, "bad.nex")
	f.empty = filepath.Join(f.dir, "empty.nex")
	f.etrace = filepath.Join(f.dir, "t.te_inst_raw")
	f.src = filepath.Join(f.dir, "src.nex")
	f.gz = filepath.Join(f.dir, "t.nex.gz")
	os.WriteFile(f.bad, bad, 0o644)
	os.WriteFile(f.empty, nil, 0o644)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(data)
	zw.Close()
	os.WriteFile(f.gz, z.Bytes(), 0o644)
	if code, _, e := rv(t, "encode", "--protocol", "etrace", "--image", f.elf, "--pcs-in", f.truth, "-o", f.etrace); code != 0 {
		t.Fatalf("encode etrace: %s", e)
	}
	if code, _, e := rv(t, "encode", "--protocol", "ntrace", "--image", f.elf, "--pcs-in", f.truth, "--src-bits", "2", "--src-id", "1", "-o", f.src); code != 0 {
		t.Fatalf("encode with SRC: %s", e)
	}
	return f
}

var summaryRE = regexp.MustCompile(`(?m)^\S+: (\d+) instructions?, (\d+) gaps?, (\d+) suspect instructions?( withheld)?, (\d+) lost spans?`)

// Every decoding command exits 0 on a clean trace, 3 on a corrupted one
// (with the summary line and the first gap on stderr) and 1 on an empty
// file.
func TestExitCodes(t *testing.T) {
	f := newIntegrityFiles(t)
	html := filepath.Join(f.dir, "r.html")
	cmds := map[string][]string{
		"decode":  {"decode", "--image", f.elf},
		"profile": {"profile", "--image", f.elf},
		"report":  {"report", "--image", f.elf, "-o", html},
	}
	for name, args := range cmds {
		for _, c := range []struct {
			trace string
			code  int
		}{{f.clean, 0}, {f.bad, 3}, {f.empty, 1}} {
			code, _, e := rv(t, append(append([]string{}, args...), c.trace)...)
			if code != c.code {
				t.Errorf("%s %s: exit %d, want %d: %s", name, filepath.Base(c.trace), code, c.code, e)
				continue
			}
			m := summaryRE.FindStringSubmatch(e)
			switch c.code {
			case 0:
				if m == nil || m[1] != "164959" || m[2] != "0" || m[3] != "0" || m[5] != "0" {
					t.Errorf("%s clean: summary %q", name, e)
				}
			case 3:
				if m == nil || m[2] == "0" || !regexp.MustCompile(`(?m)^  gap at byte \d+ \(message \d+\): \S`).MatchString(e) {
					t.Errorf("%s corrupted: no summary with gaps and first gap in %q", name, e)
				}
			case 1:
				if !strings.Contains(e, "empty.nex") || !strings.Contains(e, "empty") {
					t.Errorf("%s empty: %q", name, e)
				}
			}
		}
	}
	// The Tarmac reader: a clean file, one with a malformed line (exit 1,
	// or 3 with --lenient, which skips it), an empty file.
	tm := filepath.Join(f.dir, "t.tarmac")
	if code, _, e := rv(t, "tarmac", "--image", f.elf, "--pcs-in", f.truth, "--write", tm); code != 0 {
		t.Fatalf("tarmac --write: %s", e)
	}
	data, _ := os.ReadFile(tm)
	lines := strings.SplitAfter(string(data), "\n")
	lines[100] = "0 clk cpu0 IT (zz) nothing\n"
	badTm := filepath.Join(f.dir, "bad.tarmac")
	os.WriteFile(badTm, []byte(strings.Join(lines, "")), 0o644)
	emptyTm := filepath.Join(f.dir, "empty.tarmac")
	os.WriteFile(emptyTm, nil, 0o644)
	for _, c := range []struct {
		args []string
		code int
	}{
		{[]string{tm}, 0}, {[]string{badTm}, 1}, {[]string{badTm, "--lenient"}, 3}, {[]string{emptyTm}, 1},
	} {
		code, _, e := rv(t, append([]string{"tarmac", "--image", f.elf}, c.args...)...)
		if code != c.code {
			t.Errorf("tarmac %v: exit %d, want %d: %s", c.args, code, c.code, e)
		}
		if c.code == 0 && !strings.Contains(e, "164959 instructions, 0 gaps") {
			t.Errorf("tarmac: summary %q", e)
		}
	}
}

// The PC list marks the gap with a comment line and is, up to it, the
// reference PC list's prefix; --no-gap-marks writes the same list without
// it; --strict withholds exactly the suspect instructions the summary
// counts; the flow listing, the JSON lines and the Tarmac output mark the
// gap too; the profile has the lost row.
func TestGapMarksInOutputs(t *testing.T) {
	f := newIntegrityFiles(t)
	marked := filepath.Join(f.dir, "m.pcs")
	plain := filepath.Join(f.dir, "p.pcs")
	strict := filepath.Join(f.dir, "s.pcs")
	lst := filepath.Join(f.dir, "flow.txt")
	jl := filepath.Join(f.dir, "flow.jsonl")
	tm := filepath.Join(f.dir, "out.tarmac")
	code, _, e := rv(t, "decode", "--image", f.elf, f.bad, "--pcs", marked, "--flow", lst, "--jsonl", jl, "--tarmac", tm)
	if code != 3 {
		t.Fatalf("decode: exit %d: %s", code, e)
	}
	if code, _, e = rv(t, "decode", "--image", f.elf, f.bad, "--pcs", plain, "--no-gap-marks"); code != 3 {
		t.Fatalf("decode --no-gap-marks: exit %d: %s", code, e)
	}
	code, _, e = rv(t, "decode", "--image", f.elf, f.bad, "--pcs", strict, "--no-gap-marks", "--strict")
	sum := summaryRE.FindStringSubmatch(e)
	if code != 3 || sum == nil || sum[4] == "" {
		t.Fatalf("decode --strict: exit %d: %s", code, e)
	}
	suspect, _ := strconv.Atoi(sum[3])
	m, _ := os.ReadFile(marked)
	p, _ := os.ReadFile(plain)
	s, _ := os.ReadFile(strict)
	mark := regexp.MustCompile(`(?m)^# gap at byte (\d+) \(message \d+\): .+\n`)
	loc := mark.FindIndex(m)
	if loc == nil {
		t.Fatalf("no gap comment line in the PC list")
	}
	if bytes.Contains(p, []byte("#")) || bytes.Contains(s, []byte("#")) {
		t.Errorf("--no-gap-marks list has a comment line")
	}
	if string(mark.ReplaceAll(m, nil)) != string(p) {
		t.Errorf("the lists differ by more than the gap line")
	}
	before := strings.SplitAfter(string(m[:loc[0]]), "\n")
	before = before[:len(before)-1]
	if suspect == 0 || suspect > len(before) {
		t.Fatalf("%d suspect instructions, %d before the gap", suspect, len(before))
	}
	good := strings.Join(before[:len(before)-suspect], "")
	if truth := normalized(t, f.truth); !strings.HasPrefix(truth, good) {
		t.Errorf("the PCs before the suspect ones are not those the program executed")
	}
	want := good + string(m[loc[1]:])
	if string(s) != want {
		t.Errorf("--strict list: %d bytes, want the list without the %d suspect instructions (%d bytes)", len(s), suspect, len(want))
	}
	for file, want := range map[string]string{lst: "GAP at byte", jl: `{"kind":"gap","error":`, tm: " TraceGap\n"} {
		data, _ := os.ReadFile(file)
		if !strings.Contains(string(data), want) {
			t.Errorf("%s has no %q", filepath.Base(file), want)
		}
	}
	code, out, _ := rv(t, "profile", "--image", f.elf, f.bad)
	if code != 3 || !regexp.MustCompile(`(?m)^lost +1 gap, `+sum[3]+` suspect instructions`).MatchString(out) {
		t.Errorf("profile: exit %d, no lost row in\n%s", code, out[:min(len(out), 600)])
	}
	code, out, _ = rv(t, "profile", "--image", f.elf, f.clean)
	if code != 0 || !strings.Contains(out, "lost          nothing") {
		t.Errorf("clean profile: exit %d, no lost row", code)
	}
}

// What is given is sniffed: an E-Trace file given as N-Trace and the
// reverse are refused with the protocol they look like, a trace with a SRC
// field with another --src-bits with the width, a trace of another program
// with its address; auto picks the protocol of each; a gzip file is
// decompressed; without --src-bits, the width of a SRC field is detected
// (framing.go) and said on stderr.
func TestSniffing(t *testing.T) {
	f := newIntegrityFiles(t)
	other := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--protocol", "ntrace", "--image", f.elf, f.etrace}, "looks like E-Trace; use --protocol etrace"},
		{[]string{"--protocol", "etrace", "--image", f.elf, f.clean}, "looks like N-Trace; use --protocol ntrace"},
		// (--src-bits given: no framing detection)
		{[]string{"--src-bits", "1", "--image", f.elf, f.src}, "messages carry a SRC field: --src-bits 2"},
		{[]string{"--protocol", "ntrace", "--src-bits", "0", "--image", f.elf, f.src}, "messages carry a SRC field: --src-bits 2"},
		{[]string{"--image", other, f.clean}, "no sync address of the trace is in the program image"},
	} {
		code, _, e := rv(t, append([]string{"decode"}, c.args...)...)
		if code != 1 || !strings.Contains(e, c.want) {
			t.Errorf("decode %v: exit %d, %q; want exit 1 and %q", c.args, code, e, c.want)
		}
	}
	want := normalized(t, f.truth)
	for _, c := range [][]string{
		{f.etrace}, {f.clean}, {f.gz}, {f.src, "--src-bits", "2"}, {f.src}, {f.src, "--protocol", "ntrace"},
	} {
		out := filepath.Join(f.dir, "auto.pcs")
		code, _, e := rv(t, append([]string{"decode", "--image", f.elf, "--pcs", out}, c...)...)
		if code != 0 {
			t.Errorf("decode %v: exit %d: %s", c, code, e)
			continue
		}
		// without --src-bits, the SRC field is detected and said
		detect := c[0] == f.src && !slices.Contains(c, "--src-bits")
		if line := "framing detected: N-Trace, SRC field of 2 bits (pass --protocol ntrace --src-bits 2 to fix)"; strings.Contains(e, line) != detect {
			t.Errorf("decode %v: %q on stderr is %v: %s", c, line, !detect, e)
		}
		if normalized(t, out) != want {
			t.Errorf("decode %v: PCs differ from the executed ones", c)
		}
	}
	code, out, e := rv(t, "profile", "--image", f.elf, f.etrace)
	if code != 0 || !strings.Contains(out, "164959") {
		t.Errorf("profile of the E-Trace file with auto: exit %d, %s", code, e)
	}
	_, nt, _ := rv(t, "dump", "--protocol", "ntrace", f.etrace)
	code, et, _ := rv(t, "dump", f.etrace)
	_, et2, _ := rv(t, "dump", "--protocol", "etrace", f.etrace)
	if code != 0 || et != et2 || et == nt {
		t.Errorf("dump with auto does not dump the E-Trace file as E-Trace")
	}
}

// On a trace with periodic sync, a corruption makes the decoder count as
// suspect only what it emitted since the last sync: what it emitted
// before that is the program's own start, what it emits after the gap (if
// a later sync resumes it) is a run of the program's PCs, and --strict
// withholds exactly the suspect ones.
func TestSuspectSinceLastSync(t *testing.T) {
	f := newIntegrityFiles(t)
	nex := filepath.Join(f.dir, "sync.nex")
	if code, _, e := rv(t, "encode", "--protocol", "ntrace", "--image", f.elf, "--pcs-in", f.truth,
		"--preset", "ref-htm-best", "--sync-mode", "1", "--sync-max", "4", "-o", nex); code != 0 {
		t.Fatalf("encode: %s", e)
	}
	data, _ := os.ReadFile(nex)
	if len(data) < 2400 {
		t.Fatalf("trace of %d bytes", len(data))
	}
	for i := 2300; i < 2306; i++ {
		data[i] ^= 0x5c
	}
	bad := filepath.Join(f.dir, "syncbad.nex")
	os.WriteFile(bad, data, 0o644)
	marked := filepath.Join(f.dir, "m.pcs")
	strict := filepath.Join(f.dir, "s.pcs")
	code, _, e := rv(t, "decode", "--image", f.elf, bad, "--pcs", marked)
	sum := summaryRE.FindStringSubmatch(e)
	if code != 3 || sum == nil {
		t.Fatalf("decode: exit %d: %s", code, e)
	}
	suspect, _ := strconv.Atoi(sum[3])
	if code, _, e = rv(t, "decode", "--image", f.elf, bad, "--pcs", strict, "--no-gap-marks", "--strict"); code != 3 {
		t.Fatalf("decode --strict: exit %d: %s", code, e)
	}
	m, _ := os.ReadFile(marked)
	loc := regexp.MustCompile(`(?m)^# gap at byte \d+ .+\n`).FindIndex(m)
	if loc == nil {
		t.Fatal("no gap line")
	}
	before := strings.SplitAfter(string(m[:loc[0]]), "\n")
	before = before[:len(before)-1]
	if suspect == 0 || suspect >= len(before) {
		t.Fatalf("%d suspect of the %d instructions before the gap: the last sync should bound them", suspect, len(before))
	}
	good := strings.Join(before[:len(before)-suspect], "")
	truth := normalized(t, f.truth)
	if !strings.HasPrefix(truth, good) {
		t.Errorf("the %d instructions before the suspect ones are not the program's start", len(before)-suspect)
	}
	if after := string(m[loc[1]:]); after != "" && !strings.Contains(truth, after) {
		t.Errorf("the %d bytes of PCs after the gap are not a run of the program's", len(after))
	}
	if s, _ := os.ReadFile(strict); string(s) != good+string(m[loc[1]:]) {
		t.Errorf("--strict list is not the list without its %d suspect instructions", suspect)
	}
}
