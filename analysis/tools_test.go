package analysis

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestLcovGenhtml runs lcov's genhtml on the lcov file of the calls
// program: it reads it without an error, and its summary (lines and
// functions hit and found) is rvtrace's own coverage summary; the HTML
// index lists calls.c.
func TestLcovGenhtml(t *testing.T) {
	genhtml, err := exec.LookPath("genhtml")
	if err != nil {
		t.Skip("genhtml not installed (Debian: apt-get install lcov; scripts/install-test-deps.sh installs it)")
	}
	p, _ := profileCalls(t)
	c := p.Coverage()
	dir := t.TempDir()
	info := filepath.Join(dir, "calls.info")
	f, err := os.Create(info)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteLcov(f, p, "calls"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// (the C library's sources are not on this machine: genhtml leaves
	// their annotated pages out)
	out, err := exec.Command(genhtml, "--ignore-errors", "source", "-q", "-o", filepath.Join(dir, "html"), info).CombinedOutput()
	if err != nil {
		t.Fatalf("genhtml: %v\n%s", err, out)
	}
	// genhtml -q prints no summary: count from its index page, whose
	// header has "Lines: hit total" and "Functions: hit total" cells.
	index, err := os.ReadFile(filepath.Join(dir, "html", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	cell := func(what string) (hit, total int) {
		re := regexp.MustCompile(`(?s)>` + what + `:</td>\s*<td class="headerCovTableEntry">(\d+)</td>\s*<td class="headerCovTableEntry">(\d+)</td>`)
		m := re.FindSubmatch(index)
		if m == nil {
			t.Fatalf("genhtml index has no %s cell", what)
		}
		hit, _ = strconv.Atoi(string(m[1]))
		total, _ = strconv.Atoi(string(m[2]))
		return
	}
	if hit, total := cell("Lines"); hit != c.LinesHit || total != c.LinesFound {
		t.Errorf("genhtml: %d of %d lines hit; rvtrace: %d of %d", hit, total, c.LinesHit, c.LinesFound)
	}
	// Functions: those with a source file (the lcov file's FN records).
	fnHit, fnFound := 0, 0
	for _, f := range c.Files {
		for _, fc := range f.Funcs {
			fnFound++
			if fc.Hit() {
				fnHit++
			}
		}
	}
	if hit, total := cell("Functions"); hit != fnHit || total != fnFound || total == 0 {
		t.Errorf("genhtml: %d of %d functions hit; rvtrace: %d of %d", hit, total, fnHit, fnFound)
	}
	if !bytes.Contains(index, []byte("calls.c")) && !bytes.Contains(index, []byte("analysis")) {
		t.Errorf("genhtml index does not list calls.c's directory")
	}
}

// flamegraphLine is the pattern flamegraph.pl reads a folded line with
// (stack, then the count after the last run of spaces).
var flamegraphLine = regexp.MustCompile(`^(.*)\s+?(\d+(?:\.\d*)?)$`)

// TestFoldedFlamegraphParse reads the folded stacks as flamegraph.pl
// does (its line pattern, frames split on ';') and checks what a flame
// graph would show: every line parses, the counts add up to the
// instructions, and each user function's width (the lines whose stack
// holds it, counted once per line) is its inclusive count in the
// profile.
func TestFoldedFlamegraphParse(t *testing.T) {
	p, pcs := profileCalls(t)
	var buf bytes.Buffer
	if err := WriteFolded(&buf, p, false); err != nil {
		t.Fatal(err)
	}
	width := map[string]uint64{}
	var total uint64
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		m := flamegraphLine.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("flamegraph.pl would skip %q", sc.Text())
		}
		n, _ := strconv.ParseUint(m[2], 10, 64)
		total += n
		seen := map[string]bool{}
		for _, fr := range strings.Split(m[1], ";") {
			if fr == "" {
				t.Fatalf("empty frame in %q", sc.Text())
			}
			if !seen[fr] {
				seen[fr] = true
				width[fr] += n
			}
		}
	}
	if total != uint64(len(pcs)) {
		t.Errorf("folded counts add up to %d, want %d instructions", total, len(pcs))
	}
	for _, u := range userFuncs {
		fn := p.FuncByName(u)
		if fn == nil {
			continue
		}
		if want := p.FuncStat(fn).Inclusive; width[u] != want {
			t.Errorf("%s: flame graph width %d, profile inclusive %d", u, width[u], want)
		}
	}
}
