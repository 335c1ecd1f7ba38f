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
