package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// t1 returns the corpus t1 ELF, its reference trace and true PC list.
func t1(t *testing.T) (elf, nex string, pcs []uint64) {
	elf = corpus.Path(t, "ntrace-refcode/t1/test.elf")
	nex = corpus.Path(t, "ntrace-refcode/t1/test-NEX.bin")
	for _, l := range strings.Fields(normalized(t, corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt"))) {
		v, err := strconv.ParseUint(strings.TrimPrefix(l, "0x"), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		pcs = append(pcs, v)
	}
	return
}

// nmSyms returns name -> [addr, addr+size) of the sized symbols nm lists.
func nmSyms(t *testing.T, elf string) map[string][2]uint64 {
	tool, err := exec.LookPath("riscv64-linux-gnu-nm")
	if err != nil {
		t.Skip("riscv64-linux-gnu-nm not installed")
	}
	out, err := exec.Command(tool, "-S", "--defined-only", elf).Output()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][2]uint64{}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 {
			continue
		}
		a, _ := strconv.ParseUint(f[0], 16, 64)
		n, _ := strconv.ParseUint(f[1], 16, 64)
		m[f[3]] = [2]uint64{a, a + n}
	}
	return m
}

// readPCs reads a PC list written by --pcs (gap comment lines skipped).
func readPCs(t *testing.T, path string) []uint64 {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if l == "" || l[0] == '#' {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(l, "0x"), 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	return out
}

func samePCs(t *testing.T, what string, got, want []uint64) {
	t.Helper()
	if len(want) == 0 {
		t.Fatalf("%s: the expectation is empty: a test that cannot fail", what)
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d PCs, want %d", what, len(got), len(want))
		return
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("%s: PC %d is %#x, want %#x", what, i, got[i], want[i])
			return
		}
	}
}

// TestCLIScript lists the t1 reference trace: one line per instruction,
// the addresses of the true PC list, symbols as nm gives them and source
// lines as addr2line gives them.
func TestCLIScript(t *testing.T) {
	elf, nex, pcs := t1(t)
	out := filepath.Join(t.TempDir(), "t1.script")
	code, _, e := rv(t, "script", "--image", elf, nex, "-F", "idx,ip,sym,srcline", "-o", out)
	if code != 0 {
		t.Fatalf("script: exit %d: %s", code, e)
	}
	data, _ := os.ReadFile(out)
	var rows [][]string
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		if strings.HasPrefix(l, "#") || strings.HasPrefix(l, "STOP") {
			continue
		}
		rows = append(rows, strings.Fields(l))
	}
	if len(rows) != len(pcs) {
		t.Fatalf("%d instruction lines, want %d (test-PCONLY.txt)", len(rows), len(pcs))
	}
	for i, r := range rows {
		ip, err := strconv.ParseUint(r[1], 16, 64)
		if r[0] != strconv.Itoa(i) || err != nil || ip != pcs[i] {
			t.Fatalf("line %d: %q, want index %d ip %#x", i, r, i, pcs[i])
		}
	}
	// Symbols: the sized symbol of nm containing the address.
	syms := nmSyms(t, elf)
	type sized struct {
		name     string
		lo, hi   uint64
		isFuncOK bool
	}
	var list []sized
	for n, r := range syms {
		if r[1] > r[0] {
			list = append(list, sized{n, r[0], r[1], true})
		}
	}
	sort.Slice(list, func(i, j int) bool { return list[i].lo < list[j].lo })
	checked := 0
	for i := 0; i < len(pcs); i += 1009 {
		var want []string
		for _, s := range list {
			if pcs[i] >= s.lo && pcs[i] < s.hi {
				w := s.name
				if pcs[i] != s.lo {
					w += "+0x" + strconv.FormatUint(pcs[i]-s.lo, 16)
				}
				want = append(want, w)
			}
		}
		if len(want) == 0 {
			continue
		}
		checked++
		ok := false
		for _, w := range want {
			ok = ok || rows[i][2] == w
		}
		if !ok {
			t.Errorf("line %d (%#x): sym %s, nm gives %v", i, pcs[i], rows[i][2], want)
		}
	}
	if checked < 50 {
		t.Errorf("only %d addresses checked against nm", checked)
	}
	tool, err := exec.LookPath("riscv64-linux-gnu-addr2line")
	if err != nil {
		t.Skip("riscv64-linux-gnu-addr2line not installed")
	}
	args := []string{"-e", elf}
	var idx []int
	for i := 0; i < len(pcs); i += 4999 {
		idx = append(idx, i)
		args = append(args, "0x"+strconv.FormatUint(pcs[i], 16))
	}
	a2l, err := exec.Command(tool, args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	for k, l := range strings.Split(strings.TrimSpace(string(a2l)), "\n") {
		want, _, _ := strings.Cut(l, " ")
		if strings.HasPrefix(want, "??") {
			want = "?"
		}
		// The image joins a Windows compilation directory (this ELF
		// was built on Windows) with '\\', addr2line with '/'.
		if got := rows[idx[k]][3]; strings.ReplaceAll(got, "\\", "/") != strings.ReplaceAll(want, "\\", "/") {
			t.Errorf("line %d (%#x): srcline %s, addr2line gives %s", idx[k], pcs[idx[k]], got, want)
		}
	}
}

// TestCLIScriptRanges checks --ranges: the ranges, expanded through their
// counts, cover the PC list.
func TestCLIScriptRanges(t *testing.T) {
	elf, nex, pcs := t1(t)
	code, out, e := rv(t, "script", "--image", elf, nex, "--ranges", "-F", "idx,ip", "--no-header")
	if code != 0 {
		t.Fatalf("script: exit %d: %s", code, e)
	}
	var idx uint64
	lines := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(l, "STOP") {
			continue
		}
		f := strings.Fields(l)
		start, _ := strconv.ParseUint(f[1], 16, 64)
		last, _ := strconv.ParseUint(f[2], 16, 64)
		n, _ := strconv.ParseUint(f[3], 10, 64)
		if f[0] != strconv.FormatUint(idx, 10) || idx+n > uint64(len(pcs)) || pcs[idx] != start || pcs[idx+n-1] != last {
			t.Fatalf("range line %q does not match the PC list at index %d", l, idx)
		}
		idx += n
		lines++
	}
	if idx != uint64(len(pcs)) || lines < 1000 {
		t.Errorf("ranges cover %d instructions in %d lines, want %d", idx, lines, len(pcs))
	}
}

// TestCLISelectors checks each selector against the PC list filtered in
// the test.
func TestCLISelectors(t *testing.T) {
	elf, nex, pcs := t1(t)
	syms := nmSyms(t, elf)
	dir := t.TempDir()
	decode := func(args ...string) []uint64 {
		t.Helper()
		out := filepath.Join(dir, "sel.pcs")
		code, _, e := rv(t, append([]string{"decode", "--image", elf, nex, "--pcs", out}, args...)...)
		if code != 0 {
			t.Fatalf("decode %v: exit %d: %s", args, code, e)
		}
		if !strings.Contains(e, "selected") && !strings.Contains(e, "sampled") {
			t.Errorf("decode %v: no selection line on stderr: %s", args, e)
		}
		return readPCs(t, out)
	}
	filter := func(keep func(i int, pc uint64) bool) []uint64 {
		var out []uint64
		for i, pc := range pcs {
			if keep(i, pc) {
				out = append(out, pc)
			}
		}
		return out
	}
	// The function of the instruction in the middle of the run.
	var fnName string
	for n, r := range syms {
		if mid := pcs[len(pcs)/2]; mid >= r[0] && mid < r[1] {
			fnName = n
		}
	}
	fn := syms[fnName]
	lo, hi := fn[0]+4, fn[1]-6 // cuts ranges inside the function
	samePCs(t, "--range", decode("--range", strconv.FormatUint(lo, 16)+"-"+strconv.FormatUint(hi, 16)),
		filter(func(_ int, pc uint64) bool { return pc >= lo && pc < hi }))
	samePCs(t, "--symbol", decode("--symbol", fnName),
		filter(func(_ int, pc uint64) bool { return pc >= fn[0] && pc < fn[1] }))
	samePCs(t, "--from/--to index", decode("--from", "1234", "--to", "56789"),
		filter(func(i int, _ uint64) bool { return i >= 1234 && i < 56789 }))
	// Two functions by the index of their first execution.
	firstAt := map[uint64]int{}
	for i, pc := range pcs {
		if _, ok := firstAt[pc]; !ok {
			firstAt[pc] = i
		}
	}
	type entry struct {
		name string
		i    int
	}
	var entries []entry
	for n, r := range syms {
		if i, ok := firstAt[r[0]]; ok && r[1] > r[0] {
			entries = append(entries, entry{n, i})
		}
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].i < entries[j].i })
	if len(entries) < 3 {
		t.Fatalf("only %d functions executed", len(entries))
	}
	from, to := entries[1], entries[len(entries)-1]
	samePCs(t, "--from/--to symbol", decode("--from", from.name, "--to", "0x"+strconv.FormatUint(syms[to.name][0], 16)),
		filter(func(i int, _ uint64) bool { return i >= from.i && i < to.i }))
	samePCs(t, "--sample", decode("--sample", "1000"),
		filter(func(i int, _ uint64) bool { return (i+1)%1000 == 0 }))
	samePCs(t, "--sample with --symbol", decode("--sample", "7", "--symbol", fnName),
		func() []uint64 {
			var out []uint64
			n := 0
			for _, pc := range pcs {
				if pc >= fn[0] && pc < fn[1] {
					n++
					if n%7 == 0 {
						out = append(out, pc)
					}
				}
			}
			return out
		}())
	// The reference trace has no context message: --priv keeps nothing
	// and says why.
	code, _, e := rv(t, "decode", "--image", elf, nex, "--priv", "M")
	if code != 0 || !strings.Contains(e, "privilege and context are unknown") {
		t.Errorf("--priv on a trace without context: exit %d, %s", code, e)
	}
	// Bad selectors are refused.
	for _, bad := range [][]string{{"--range", "10-5"}, {"--symbol", "nosuch"}, {"--from", "nosuch"}, {"--priv", "X"}} {
		if code, _, _ := rv(t, append([]string{"decode", "--image", elf, nex}, bad...)...); code == 0 {
			t.Errorf("%v accepted", bad)
		}
	}
}

// TestCLIProfileSelected checks that profile takes the selectors and says
// it was sampled.
func TestCLIProfileSelected(t *testing.T) {
	elf, nex, pcs := t1(t)
	code, out, e := rv(t, "profile", "--image", elf, nex, "--sample", "100")
	if code != 0 {
		t.Fatalf("profile: exit %d: %s", code, e)
	}
	want := "instructions  " + strconv.Itoa(len(pcs)/100) + "\n"
	if strings.Contains(out, "bits per instruction") {
		t.Errorf("a sampled profile shows a trace cost per instruction:\n%s", out)
	}
	if !strings.Contains(out, "sampled:") || !strings.Contains(out, want) {
		t.Errorf("sampled profile header:\n%s\nwant a sampled line and %q", out[:min(len(out), 400)], want)
	}
	code, out, e = rv(t, "profile", "--image", elf, nex, "--from", "1000", "--src", "0")
	if code != 0 {
		t.Fatalf("profile: exit %d: %s", code, e)
	}
	if !strings.Contains(out, "selection     selected") {
		t.Errorf("profile of a selection does not say so:\n%s", out[:min(len(out), 400)])
	}
}

// TestCLIJSONLinesSymbols checks the idx, sym and srcline members of the
// JSON-lines ranges against the PC list and nm.
func TestCLIJSONLinesSymbols(t *testing.T) {
	elf, nex, pcs := t1(t)
	syms := nmSyms(t, elf)
	code, out, e := rv(t, "decode", "--image", elf, nex, "--jsonl", "-")
	if code != 0 {
		t.Fatalf("decode: exit %d: %s", code, e)
	}
	var idx uint64
	checked := 0
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		var r struct {
			Kind, Start, Sym, Srcline string
			N, Idx                    uint64
		}
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		if r.Kind != "range" {
			continue
		}
		start, _ := strconv.ParseUint(strings.TrimPrefix(r.Start, "0x"), 16, 64)
		if r.Idx != idx || pcs[idx] != start || r.Srcline == "" {
			t.Fatalf("%s: want idx %d at %#x, with a srcline", l, idx, pcs[idx])
		}
		idx += r.N
		for n, s := range syms {
			if start >= s[0] && start < s[1] && s[1]-s[0] > 2 {
				want := n
				if start != s[0] {
					want += "+0x" + strconv.FormatUint(start-s[0], 16)
				}
				if r.Sym != want {
					t.Errorf("%s: sym %s, nm gives %s", l, r.Sym, want)
				}
				checked++
			}
		}
	}
	if idx != uint64(len(pcs)) || checked < 1000 {
		t.Errorf("%d instructions in ranges (want %d), %d symbols checked", idx, len(pcs), checked)
	}
}

// TestCLISelectPrivContext encodes a trace whose privilege and context
// change (rows of the ingress CSV rewritten to S mode, context 5) and
// checks --priv and --ctx against the rows, and the TRAP lines of script.
func TestCLISelectPrivContext(t *testing.T) {
	elf, _, pcs := t1(t)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.pcs")
	var lines []string
	for _, pc := range pcs[:3000] {
		lines = append(lines, "0x"+strconv.FormatUint(pc, 16))
	}
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	csv := filepath.Join(dir, "in.csv")
	if code, _, e := rv(t, "convert", "--image", elf, "--pcs-in", in, "--per-instruction", "--to-ingress", csv); code != 0 {
		t.Fatalf("convert: %s", e)
	}
	data, _ := os.ReadFile(csv)
	rows := strings.Split(strings.TrimSpace(string(data)), "\n")
	if !strings.HasPrefix(rows[0], "itype_0,cause,tval,priv,iaddr_0,context,") || len(rows) != 3001 {
		t.Fatalf("unexpected ingress CSV: %q, %d rows", rows[0], len(rows))
	}
	// Privilege changes where a trap is taken (as on a real hart): the
	// instruction before each change (a linear one, so that the trap only
	// adds an exception) ends with an exception, and instructions lo..hi-1
	// run in S mode, context 5. Row i+1 is instruction i.
	linearFrom := func(i int) int {
		for ; strings.Split(rows[i+1], ",")[0] != "0"; i++ {
		}
		return i
	}
	lo := linearFrom(999) + 1
	hi := linearFrom(1699) + 1
	inS := func(i int) bool { return i >= lo && i < hi }
	for i := range 3000 {
		f := strings.Split(rows[i+1], ",")
		if f[0] == "1" || f[0] == "2" {
			t.Fatalf("row %d is a trap: %s", i+1, rows[i+1])
		}
		if inS(i) {
			f[3], f[5] = "1", "5"
		}
		if i == lo-1 || i == hi-1 {
			f[0] = "1" // exception after this instruction
		}
		rows[i+1] = strings.Join(f, ",")
	}
	os.WriteFile(csv, []byte(strings.Join(rows, "\n")+"\n"), 0o644)
	nex := filepath.Join(dir, "t.nex")
	if code, _, e := rv(t, "encode", "--ingress-in", csv, "--context", "-o", nex); code != 0 {
		t.Fatalf("encode: %s", e)
	}
	out := filepath.Join(dir, "out.pcs")
	decode := func(args ...string) []uint64 {
		t.Helper()
		code, _, e := rv(t, append([]string{"decode", "--image", elf, nex, "--pcs", out}, args...)...)
		if code != 0 {
			t.Fatalf("decode %v: exit %d: %s", args, code, e)
		}
		return readPCs(t, out)
	}
	var wantS, wantM []uint64
	for i, pc := range pcs[:3000] {
		if inS(i) {
			wantS = append(wantS, pc)
		} else {
			wantM = append(wantM, pc)
		}
	}
	samePCs(t, "--priv S", decode("--priv", "S"), wantS)
	samePCs(t, "--ctx 5", decode("--ctx", "5"), wantS)
	samePCs(t, "--priv M", decode("--priv", "M"), wantM)
	samePCs(t, "--priv U,M --ctx 0", decode("--priv", "U,M", "--ctx", "0"), wantM)
	// The listing's priv and ctx columns.
	code, list, e := rv(t, "script", "--image", elf, nex, "-F", "idx,priv,ctx", "--no-header")
	if code != 0 {
		t.Fatalf("script: exit %d: %s", code, e)
	}
	n := 0
	for _, l := range strings.Split(strings.TrimSpace(list), "\n") {
		f := strings.Fields(l)
		i, err := strconv.Atoi(f[0])
		if err != nil { // TRAP, STOP
			continue
		}
		want := "M 0x0"
		if inS(i) {
			want = "S 0x5"
		}
		if f[1]+" "+f[2] != want {
			t.Fatalf("line %q: want %s", l, want)
		}
		n++
	}
	if n != 3000 || strings.Count(list, "TRAP exception") != 2 {
		t.Errorf("%d instruction lines and %d TRAP lines, want 3000 and 2", n, strings.Count(list, "TRAP exception"))
	}
}

// scriptIPs reads the ip column (the second) of a default listing.
func scriptIPs(t *testing.T, path string) []uint64 {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		f := strings.Fields(l)
		if _, err := strconv.Atoi(f[0]); err != nil {
			continue // header, TRAP, STOP
		}
		v, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		out = append(out, v)
	}
	return out
}

// TestCLIScriptOutputAndTarmac checks decode --script and the selectors
// of the tarmac command.
func TestCLIScriptOutputAndTarmac(t *testing.T) {
	elf, nex, pcs := t1(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "out.script")
	if code, _, e := rv(t, "decode", "--image", elf, nex, "--script", out, "--from", "500", "--to", "2500"); code != 0 {
		t.Fatalf("decode --script: exit %d: %s", code, e)
	}
	samePCs(t, "decode --script --from --to", scriptIPs(t, out), pcs[500:2500])

	in := filepath.Join(dir, "in.pcs")
	var lines []string
	for _, pc := range pcs[:20000] {
		lines = append(lines, "0x"+strconv.FormatUint(pc, 16))
	}
	os.WriteFile(in, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	tm := filepath.Join(dir, "t.tarmac")
	if code, _, e := rv(t, "tarmac", "--image", elf, "--pcs-in", in, "--write", tm); code != 0 {
		t.Fatalf("tarmac --write: %s", e)
	}
	if code, _, e := rv(t, "tarmac", "--image", elf, tm, "--script", out, "--sample", "13", "--from", "7"); code != 0 {
		t.Fatalf("tarmac --script: exit %d: %s", code, e)
	}
	var want []uint64
	for i := 7; i < 20000; i++ {
		if (i-7+1)%13 == 0 {
			want = append(want, pcs[i])
		}
	}
	samePCs(t, "tarmac --sample --from", scriptIPs(t, out), want)
}
