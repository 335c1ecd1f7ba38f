package riscv

//go:generate sh testdata/gen.sh

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fixture is one saved objdump run: testdata/NAME.{gnu,llvm}.dump, made by
// testdata/gen.sh from testdata/NAME.s.
type fixture struct {
	name   string // NAME
	oracle oracle
	xlen   int
	isa    string // -march, or the ISA string equivalent to -mattr
	mattr  string // LLVM only
	lines  []dumpLine
}

func loadFixtures(t *testing.T) []fixture {
	t.Helper()
	paths, err := filepath.Glob("testdata/*.dump")
	if err != nil || len(paths) == 0 {
		t.Fatalf("no fixtures in testdata: %v", err)
	}
	var fs []fixture
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		base := strings.TrimSuffix(filepath.Base(p), ".dump")
		f := fixture{name: strings.TrimSuffix(strings.TrimSuffix(base, ".gnu"), ".llvm")}
		for _, line := range strings.Split(string(data), "\n") {
			k, v, ok := strings.Cut(strings.TrimPrefix(line, "# "), ": ")
			if !strings.HasPrefix(line, "# ") || !ok {
				continue
			}
			switch k {
			case "oracle":
				if v == "llvm" {
					f.oracle = llvm
				}
			case "xlen":
				f.xlen, _ = strconv.Atoi(v)
			case "isa":
				f.isa = v
			case "mattr":
				f.mattr = v
			}
		}
		if f.lines, err = parseDump(string(data)); err != nil || len(f.lines) == 0 {
			t.Fatalf("%s: %d instructions, %v", p, len(f.lines), err)
		}
		fs = append(fs, f)
	}
	return fs
}

// TestFixtures compares Decode and Disasm with the saved output of objdump
// and llvm-objdump for hand-written assembly covering every instruction;
// it needs no tools.
func TestFixtures(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			xlen, ext, err := ParseArch(f.isa)
			if err != nil || xlen != f.xlen {
				t.Fatalf("ParseArch(%q) = %d, %v, %v", f.isa, xlen, ext, err)
			}
			m := &mismatches{t: t, what: f.name}
			for _, l := range f.lines {
				compareLine(m, f.oracle, l, xlen, ext)
			}
			m.done(len(f.lines))
		})
	}
}

// TestFixturesFresh checks that the fixtures are what the installed tools
// print for their sources, that is, that testdata/gen.sh reproduces them.
func TestFixturesFresh(t *testing.T) {
	for _, f := range loadFixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			arch := f.isa
			if f.oracle == gnu {
				needGNU(t)
			} else {
				needLLVM(t)
				arch = f.mattr
			}
			// .include is resolved relative to the source, which
			// disassemble copies: inline it.
			src, err := os.ReadFile(filepath.Join("testdata", f.name+".s"))
			if err != nil {
				t.Fatal(err)
			}
			text := string(src)
			for _, name := range []string{"base.inc", "ext.inc", "ext-llvm.inc"} {
				dir := `.include "` + name + `"`
				if !strings.Contains(text, dir) {
					continue
				}
				inc, err := os.ReadFile(filepath.Join("testdata", name))
				if err != nil {
					t.Fatal(err)
				}
				text = strings.Replace(text, dir, string(inc), 1)
			}
			lines, err := parseDump(disassemble(t, f.oracle, text, f.xlen, arch, sweepVMA))
			if err != nil {
				t.Fatal(err)
			}
			if len(lines) != len(f.lines) {
				t.Fatalf("%s prints %d instructions, the fixture has %d: run testdata/gen.sh", f.oracle, len(lines), len(f.lines))
			}
			for i, l := range lines {
				if old := f.lines[i]; l.addr != old.addr || l.raw != old.raw || l.text() != old.text() {
					t.Errorf("%#x: %s prints %#x %q, the fixture has %#x %q: run testdata/gen.sh", l.addr, f.oracle, l.raw, l.text(), old.raw, old.text())
				}
			}
		})
	}
}
