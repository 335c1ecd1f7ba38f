package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// recordRows parses the table of 'rvtrace tarmac --records': tag and kind
// to records.
func recordRows(t *testing.T, out string) map[string]int {
	t.Helper()
	rows := map[string]int{}
	for i, l := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(l)
		if i == 0 {
			if strings.Join(f, " ") != "tag kind records" {
				t.Fatalf("header %q", l)
			}
			continue
		}
		n, err := strconv.Atoi(f[2])
		if len(f) != 3 || err != nil {
			t.Fatalf("row %q", l)
		}
		rows[f[0]+" "+f[1]] += n
	}
	return rows
}

func grepLines(t *testing.T, path, pat string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(regexp.MustCompile(`(?m)`+pat).FindAll(b, -1))
}

// TestCLITarmacRecords checks that --records reports each record under its
// own kind: the ES tag holds instructions and "ES EXC" events, counted
// apart, as grep counts them.
func TestCLITarmacRecords(t *testing.T) {
	path := corpus.Path(t, "tarmac/calculator-aarch32-es-ld-st-style.tarmac")
	code, out, errOut := rv(t, "tarmac", "--records", path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	rows := recordRows(t, out)
	want := map[string]int{
		"ES inst":      grepLines(t, path, `^ +\d+ tic +ES +\([0-9a-f]+:[0-9a-f]+\) `),
		"ES event":     grepLines(t, path, `^ +\d+ tic +ES +EXC `),
		"LD mem":       grepLines(t, path, `^ +LD [0-9a-f]+ `),
		"ST mem":       grepLines(t, path, `^ +ST [0-9a-f]+ `),
		"R reg":        grepLines(t, path, `^ +R [A-Za-z]`),
		"BR flow":      grepLines(t, path, `^ +BR \(`),
		"Tarmac other": grepLines(t, path, `^Tarmac Text`),
	}
	if len(rows) != len(want) {
		t.Errorf("rows %v, want %v", rows, want)
	}
	for k, n := range want {
		if n == 0 || rows[k] != n {
			t.Errorf("%s: %d records, grep counts %d", k, rows[k], n)
		}
	}
	// An aborted access is a memory record.
	crash := corpus.Path(t, "tarmac/truncate/crash32.tarmac")
	_, out, _ = rv(t, "tarmac", "--records", crash)
	if n := grepLines(t, crash, ` MR4 `); n == 0 || recordRows(t, out)["MR4 mem"] != n {
		t.Errorf("crash32 MR4 records: %v, grep counts %d", recordRows(t, out), n)
	}
}

// TestCLITarmacLenient puts a garbage line into a real trace: without
// --lenient the command fails naming FILE:LINE; with it, it goes on,
// reports the count and the lines on stderr and exits with 3 (lines were
// skipped), for both the decode and --records.
func TestCLITarmacLenient(t *testing.T) {
	src, err := os.ReadFile(corpus.Path(t, "tarmac/calltest64.tarmac"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(src), "\n")
	bad := strings.Join(lines[:199], "") + "garbage here\n" + strings.Join(lines[199:], "") + "R X0 zz\n"
	dir := t.TempDir()
	path := filepath.Join(dir, "bad.tarmac")
	if err := os.WriteFile(path, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	lastLine := len(lines) + 1
	if lines[len(lines)-1] != "" {
		lastLine++
	}
	for _, extra := range [][]string{nil, {"--records"}} {
		args := append([]string{"tarmac"}, extra...)
		code, _, errOut := rv(t, append(args, path)...)
		if code == 0 || !strings.Contains(errOut, path+":200: ") {
			t.Errorf("%v strict: exit %d, stderr %q", extra, code, errOut)
		}
		code, _, errOut = rv(t, append(args, "--lenient", path)...)
		if code != 3 || !strings.Contains(errOut, "2 malformed lines skipped") ||
			!strings.Contains(errOut, path+":200: ") || !strings.Contains(errOut, path+":"+strconv.Itoa(lastLine)+": ") {
			t.Errorf("%v lenient: exit %d, stderr %q", extra, code, errOut)
		}
	}
}

// TestCLITarmacTimestamps decodes an N-Trace trace encoded with
// timestamps to Tarmac: every record carries the time of the last
// timestamp decoded before it (none is left at 0), so the times of the
// records, in order, are exactly the decoded timestamps (--jsonl time
// events) that records follow, and they increase; and every timestamp is a time of the simulator's
// clock at which a block was retired (the --ingress CSV of the same run).
func TestCLITarmacTimestamps(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	nex, csv := filepath.Join(dir, "t.nex"), filepath.Join(dir, "t.csv")
	if code, _, e := rv(t, "run", "--trace", "ntrace", "--timestamps", "-o", nex, "--ingress", csv, elf); code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	tm, js := filepath.Join(dir, "t.tarmac"), filepath.Join(dir, "t.jsonl")
	if code, _, e := rv(t, "decode", "--image", elf, nex, "--tarmac", tm, "--jsonl", js); code != 0 {
		t.Fatalf("decode: exit %d: %s", code, e)
	}
	// the simulator's block times
	data, err := os.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	rows := strings.Split(strings.TrimSpace(string(data)), "\n")
	col := -1
	for i, h := range strings.Split(rows[0], ",") {
		if h == "time" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("no time column in %q", rows[0])
	}
	simTimes := map[uint64]bool{}
	for _, r := range rows[1:] {
		v, err := strconv.ParseUint(strings.Split(r, ",")[col], 16, 64) // hex, as the CSV writes every number
		if err != nil {
			t.Fatalf("ingress row %q: %v", r, err)
		}
		simTimes[v] = true
	}
	// the decoded timestamps
	data, err = os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	// A timestamp counts when a record follows it (an instruction, a trap
	// or a gap) before the next one: the last one, at the end of the
	// trace, has none.
	var decoded []uint64
	pending, hasPending := uint64(0), false
	timeRe := regexp.MustCompile(`^\{"kind":"time","time":(\d+),`)
	for _, l := range strings.Split(string(data), "\n") {
		if m := timeRe.FindStringSubmatch(l); m != nil {
			v, _ := strconv.ParseUint(m[1], 10, 64)
			if !simTimes[v] {
				t.Errorf("decoded timestamp %d is no block time of the run", v)
			}
			pending, hasPending = v, true
		} else if hasPending && (strings.HasPrefix(l, `{"kind":"range"`) || strings.HasPrefix(l, `{"kind":"trap"`) ||
			strings.HasPrefix(l, `{"kind":"gap"`)) {
			decoded = append(decoded, pending)
			hasPending = false
		}
	}
	if len(decoded) < 10 {
		t.Fatalf("%d timestamps decoded, want many", len(decoded))
	}
	// the Tarmac times
	data, err = os.ReadFile(tm)
	if err != nil {
		t.Fatal(err)
	}
	var times []uint64
	lines := 0
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		if len(f) < 3 || f[1] != "clk" {
			t.Fatalf("Tarmac line %q: no time", l)
		}
		v, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil || v == 0 {
			t.Fatalf("Tarmac line %q: time %q", l, f[0])
		}
		lines++
		if len(times) == 0 || times[len(times)-1] != v {
			if len(times) > 0 && v < times[len(times)-1] {
				t.Fatalf("Tarmac line %q: time goes back from %d", l, times[len(times)-1])
			}
			times = append(times, v)
		}
	}
	if len(times) != len(decoded) {
		t.Fatalf("Tarmac has %d distinct times over %d lines, the trace %d timestamps", len(times), lines, len(decoded))
	}
	for i := range times {
		if times[i] != decoded[i] {
			t.Fatalf("Tarmac time #%d is %d, decoded timestamp %d", i, times[i], decoded[i])
		}
	}
}

// TestCLITarmacPrivilege decodes N-Trace traces of the M-mode demo to
// Tarmac: without Ownership messages (no --context) the trace never
// states the privilege, so every instruction record's mode is "-"
// (unknown), never a guessed U; with them, it is M, the simulator's
// privilege (the --tarmac-full of the run says M for every instruction).
// The "-" file reads back as a flow without privilege, and converting it
// to ingress blocks is refused with the line.
func TestCLITarmacPrivilege(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	full := filepath.Join(dir, "full.tarmac")
	modes := func(path string) map[string]int {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]int{}
		for _, l := range strings.Split(string(data), "\n") {
			f := strings.Fields(l)
			if len(f) > 9 && f[3] == "IT" {
				m[f[8]]++
			}
		}
		return m
	}
	for _, c := range []struct {
		extra []string
		want  string
	}{{nil, "-"}, {[]string{"--context"}, "M"}} {
		nex, tm := filepath.Join(dir, "t.nex"), filepath.Join(dir, "t.tarmac")
		args := append([]string{"run", "-q", "--trace", "ntrace", "-o", nex, "--tarmac-full", full}, c.extra...)
		if code, _, e := rv(t, append(args, elf)...); code != 0 {
			t.Fatalf("run %v: exit %d: %s", c.extra, code, e)
		}
		if m := modes(full); len(m) != 1 || m["M"] == 0 {
			t.Fatalf("simulator's modes %v, want M only", m)
		}
		if code, _, e := rv(t, "decode", "--image", elf, nex, "--tarmac", tm); code != 0 {
			t.Fatalf("decode: exit %d: %s", code, e)
		}
		if m := modes(tm); len(m) != 1 || m[c.want] != modes(full)["M"] {
			t.Errorf("%v: decoded modes %v, want %d records of %s", c.extra, m, modes(full)["M"], c.want)
		}
		if c.want != "-" {
			continue
		}
		// read back: a flow without privilege (--priv selects nothing
		// of unknown privilege), and no ingress blocks
		code, _, e := rv(t, "tarmac", "--image", elf, tm, "--priv", "M")
		if code != 0 || !strings.Contains(e, "unknown privilege") && !strings.Contains(e, "0 instructions") {
			t.Errorf("tarmac --priv M of a '-' file: exit %d, %q", code, e)
		}
		code, _, e = rv(t, "tarmac", "--image", elf, tm, "--blocks", filepath.Join(dir, "b.csv"))
		if code == 0 || !strings.Contains(e, "privilege unknown") || !strings.Contains(e, "line ") {
			t.Errorf("tarmac --blocks of a '-' file: exit %d, %q", code, e)
		}
	}
}
