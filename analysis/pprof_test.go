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

	"github.com/google/pprof/profile"

	"github.com/rvtrace/rvtrace/flow"
)

// inlinePprof profiles examples/analysis/inline.elf (gcc -O2: inlined
// helpers, qsort) and writes its pprof to a temporary file.
func inlinePprof(t *testing.T) (*Profile, string, *profile.Profile) {
	t.Helper()
	img, pcs := loadProgram(t, "inline")
	p := New(img, Options{})
	feed(t, p, pcsToFlow(t, img, pcs))
	var buf bytes.Buffer
	if err := WritePprof(&buf, p); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), "inline.pb.gz")
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	pp, err := profile.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	return p, f, pp
}

// goPprof runs "go tool pprof ARGS" in examples/analysis (where the
// sources are, as the ELF's DWARF names them relative to it).
func goPprof(t *testing.T, args ...string) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH: skipping go tool pprof")
	}
	cmd := exec.Command(gobin, append([]string{"tool", "pprof"}, args...)...)
	cmd.Dir = examples
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// pprofRow matches a row of -list or -disasm: flat, cum, then the line
// number or address and a colon.
var pprofRow = regexp.MustCompile(`^\s*(\d+|\.)\s+(\d+|\.)\s+([0-9a-f]+):`)

// TestPprofListLines: "go tool pprof -list" shows, for every source line
// of the program, the instructions rvtrace's own line profile (LineStats)
// counts there, inlined functions' lines included; the profile's
// locations carry the inlined frames, and its mapping names the ELF file
// with its build ID.
func TestPprofListLines(t *testing.T) {
	p, f, pp := inlinePprof(t)
	want := map[int]uint64{}
	for _, l := range p.LineStats() {
		if filepath.Base(l.File) == "inline.c" && l.Insts > 0 {
			want[l.Line] += l.Insts
		}
	}
	out := goPprof(t, "-list", ".", f)
	got := map[int]uint64{}
	inSrc := false
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "ROUTINE ") {
			inSrc = strings.HasSuffix(l, "inline.c")
			continue
		}
		m := pprofRow.FindStringSubmatch(l)
		if !inSrc || m == nil || m[1] == "." {
			continue
		}
		n, _ := strconv.Atoi(m[3])
		v, _ := strconv.ParseUint(m[1], 10, 64)
		got[n] += v
	}
	if len(want) < 10 {
		t.Fatalf("line profile has %d lines of inline.c", len(want))
	}
	for line, w := range want {
		if got[line] != w {
			t.Errorf("inline.c:%d: pprof -list flat %d, line profile %d", line, got[line], w)
		}
	}
	for line, g := range got {
		if want[line] == 0 {
			t.Errorf("inline.c:%d: pprof -list flat %d, line profile none", line, g)
		}
	}
	// square is inlined into sum_squares, inlined into checksum: pprof
	// lists it as a routine of its own.
	if !strings.Contains(out, "ROUTINE ======================== square in") {
		t.Errorf("pprof -list shows no routine for the inlined square:\n%s", out)
	}
	deep := 0
	for _, l := range pp.Location {
		if len(l.Line) == 3 && l.Line[0].Function.Name == "square" && l.Line[2].Function.Name == "checksum" {
			deep++
		}
	}
	if deep == 0 {
		t.Error("no location with the frames square, sum_squares, checksum")
	}
	// The mapping: the ELF file and its build ID.
	files := p.Image().Files()
	abs, _ := filepath.Abs(files[0].Path)
	if len(pp.Mapping) != 1 || pp.Mapping[0].File != abs || pp.Mapping[0].BuildID != files[0].BuildID || files[0].BuildID == "" {
		t.Errorf("mappings %+v, want %s with build ID %s", pp.Mapping, abs, files[0].BuildID)
	}
}

// TestPprofDisasm: "go tool pprof -disasm" (which disassembles the ELF
// file the mapping names with Go's own disassembler) shows, per
// instruction, the executions rvtrace counts at that address (AddrStats).
func TestPprofDisasm(t *testing.T) {
	p, f, _ := inlinePprof(t)
	checkDisasm(t, p, func(re string) string { return goPprof(t, "-disasm", re, f) })
}

// TestPprofDisasmObjdump: the standalone pprof (github.com/google/pprof)
// runs objdump for -disasm; with binutils' riscv64-linux-gnu-objdump and
// -nm as "objdump" and "nm" in the directory given to -tools (the
// command the WritePprof documentation gives), it shows the same counts.
func TestPprofDisasmObjdump(t *testing.T) {
	bin, err := exec.LookPath("pprof")
	if err != nil {
		if gp, err2 := exec.Command("go", "env", "GOPATH").Output(); err2 == nil {
			bin, err = exec.LookPath(filepath.Join(strings.TrimSpace(string(gp)), "bin", "pprof"))
		}
	}
	if err != nil {
		t.Skip("standalone pprof not found (go install github.com/google/pprof@latest)")
	}
	tools := t.TempDir()
	for _, tool := range []string{"objdump", "nm"} {
		path, err := exec.LookPath("riscv64-linux-gnu-" + tool)
		if err != nil {
			t.Skipf("riscv64-linux-gnu-%s not found (Debian: binutils-riscv64-linux-gnu)", tool)
		}
		if err := os.Symlink(path, filepath.Join(tools, tool)); err != nil {
			t.Fatal(err)
		}
	}
	p, f, _ := inlinePprof(t)
	checkDisasm(t, p, func(re string) string {
		cmd := exec.Command(bin, "-tools", tools, "-disasm", re, f)
		cmd.Dir = examples
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("pprof -disasm: %v\n%s", err, out)
		}
		if !strings.Contains(string(out), "blez\ta1,") {
			t.Errorf("pprof -disasm did not use binutils' objdump:\n%s", out)
		}
		return string(out)
	})
}

func checkDisasm(t *testing.T, p *Profile, disasm func(re string) string) {
	want := map[uint64]uint64{}
	// pprof matches the regexp against the ELF's symbols, unanchored.
	const re = "checksum|cmp|main"
	funcs := regexp.MustCompile(re)
	for _, a := range p.AddrStats() {
		if funcs.MatchString(p.Lookup(a.Addr).Name) {
			want[a.Addr] = a.Insts
		}
	}
	out := disasm(re)
	got := map[uint64]uint64{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		m := pprofRow.FindStringSubmatch(sc.Text())
		if m == nil || m[1] == "." {
			continue
		}
		addr, _ := strconv.ParseUint(m[3], 16, 64)
		v, _ := strconv.ParseUint(m[1], 10, 64)
		// An address under two symbols (aliases) is listed twice.
		if g, ok := got[addr]; ok && g != v {
			t.Errorf("%#x: pprof -disasm lists %d and %d", addr, g, v)
		}
		got[addr] = v
	}
	if len(want) < 50 {
		t.Fatalf("only %d addresses executed in checksum, cmp and main", len(want))
	}
	for a, w := range want {
		if got[a] != w {
			t.Errorf("%#x: pprof -disasm flat %d, rvtrace %d", a, got[a], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("pprof -disasm shows %d executed addresses, rvtrace %d", len(got), len(want))
	}
}

// TestPprofCycles: with timestamps, the cycles sample type adds up to the
// profile's cycles and the instructions to its instructions, per function
// as in the flat profile.
func TestPprofCycles(t *testing.T) {
	img, pcs := loadProgram(t, "calls")
	raw := pcsToFlow(t, img, pcs)
	var evs []flow.Event
	tm := uint64(1000)
	for i, e := range raw {
		if i%5 == 0 {
			tm += 3 + uint64(i%7)
			evs = append(evs, flow.Event{Kind: flow.KindTime, Time: tm, Offset: -1})
		}
		evs = append(evs, e)
	}
	p := New(img, Options{})
	feed(t, p, evs)
	pp := PprofProfile(p)
	if len(pp.SampleType) != 2 || pp.SampleType[1].Type != "cycles" {
		t.Fatalf("sample types %v", pp.SampleType)
	}
	var insts, cycles int64
	flat := map[string][2]int64{}
	for _, s := range pp.Sample {
		insts += s.Value[0]
		cycles += s.Value[1]
		ln := s.Location[0].Line
		fn := ln[len(ln)-1].Function.Name
		v := flat[fn]
		flat[fn] = [2]int64{v[0] + s.Value[0], v[1] + s.Value[1]}
	}
	if insts != int64(p.Instructions()) || cycles != int64(p.Cycles()) || cycles == 0 {
		t.Errorf("pprof: %d instructions, %d cycles; profile %d, %d", insts, cycles, p.Instructions(), p.Cycles())
	}
	for _, fs := range p.FuncStats() {
		if v := flat[fs.Func.Name]; v[0] != int64(fs.Self) {
			t.Errorf("%s: pprof flat %d instructions, profile %d", fs.Func.Name, v[0], fs.Self)
		}
	}
}
