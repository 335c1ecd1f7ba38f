package image

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/rvtrace/rvtrace/riscv"
)

// These tests compare the package with independent tools: GNU binutils for
// RISC-V (objdump, nm, readelf, addr2line, gcc from Debian's cross
// toolchain) on the N-Trace reference corpus, which sits in the shared
// folder beside the repository.

// corpusPath returns where the N-Trace reference corpus should be: in the
// shared folder beside the repository (../shared/corpus/ntrace-refcode from
// the repository root).
func corpusPath() string {
	dir, err := filepath.Abs(".")
	if err != nil {
		return ""
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return filepath.Join(dir, "..", "shared", "corpus", "ntrace-refcode")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
}

// corpusDir returns the N-Trace reference corpus, skipping the test when
// it is absent.
func corpusDir(t testing.TB) string {
	t.Helper()
	corpus := corpusPath()
	if _, err := os.Stat(filepath.Join(corpus, "t1", "test.elf")); corpus == "" || err != nil {
		t.Skipf("N-Trace reference corpus not found at %s (it lives in the shared folder beside the repository, ../shared/corpus from the repository root)", corpus)
	}
	return corpus
}

// corpusELFs returns the corpus ELF files: t1/test.elf first, then elf/*.
func corpusELFs(t testing.TB) []string {
	dir := corpusDir(t)
	files, _ := filepath.Glob(filepath.Join(dir, "elf", "*.riscv"))
	sort.Strings(files)
	if testing.Short() {
		files = []string{filepath.Join(dir, "elf", "coremark.riscv"), filepath.Join(dir, "elf", "embench-crc32.riscv")}
	}
	return append([]string{filepath.Join(dir, "t1", "test.elf")}, files...)
}

// binutil returns the path of a RISC-V cross binutils program, skipping
// the test when it is not installed.
func binutil(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath("riscv64-linux-gnu-" + name)
	if err != nil {
		t.Skipf("riscv64-linux-gnu-%s not installed (Debian package binutils-riscv64-linux-gnu / gcc-riscv64-linux-gnu): %v", name, err)
	}
	return p
}

func run(t testing.TB, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(name), strings.Join(args, " "), err, stderr.String())
	}
	return string(out)
}

// cachedDump caches objdump listings; several tests read the same files.
var (
	dumpMu    sync.Mutex
	dumpCache = map[string][]dumpInst{}
)

// dumpInst is one instruction of an objdump -d listing.
type dumpInst struct {
	addr     uint64
	raw      uint32
	len      uint8
	mnemonic string
	label    string // the "<label>:" heading it is listed under
}

// objdump lists the instructions of the executable sections of path.
func objdump(t testing.TB, path string) []dumpInst {
	t.Helper()
	dumpMu.Lock()
	defer dumpMu.Unlock()
	if d, ok := dumpCache[path]; ok {
		return d
	}
	out := run(t, binutil(t, "objdump"), "-d", "-w", path)
	var (
		insts []dumpInst
		label string
	)
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		// "0000000080000000 <_start>:"
		if i := strings.Index(line, " <"); i > 0 && strings.HasSuffix(line, ">:") {
			label = line[i+2 : len(line)-2]
			continue
		}
		// "   10632:\t1141                \tadd\tsp,sp,-16"
		f := strings.Split(line, "\t")
		if len(f) < 3 || !strings.HasSuffix(f[0], ":") {
			continue
		}
		addr, err1 := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(f[0], ":")), 16, 64)
		hexBytes := strings.ReplaceAll(strings.TrimSpace(f[1]), " ", "")
		raw, err2 := strconv.ParseUint(hexBytes, 16, 64)
		if err1 != nil || err2 != nil || len(hexBytes)%4 != 0 {
			t.Fatalf("%s: cannot parse objdump line %q", path, line)
		}
		mn := strings.Fields(f[2])[0]
		insts = append(insts, dumpInst{addr: addr, raw: uint32(raw), len: uint8(len(hexBytes) / 2), mnemonic: mn, label: label})
	}
	if len(insts) == 0 {
		t.Fatalf("%s: objdump listed no instructions", path)
	}
	dumpCache[path] = insts
	return insts
}

func load(t testing.TB, path string) *Set {
	t.Helper()
	s := NewSet()
	if err := s.AddELF(path); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCorpusSegments compares Segments and memory contents with readelf -l
// and the file bytes.
func TestCorpusSegments(t *testing.T) {
	readelf := binutil(t, "readelf")
	for _, path := range corpusELFs(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s := load(t, path)
			file, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var want []Segment
			for _, line := range strings.Split(run(t, readelf, "-lW", path), "\n") {
				f := strings.Fields(line)
				if len(f) < 8 || f[0] != "LOAD" {
					continue
				}
				num := func(s string) uint64 {
					v, err := strconv.ParseUint(strings.TrimPrefix(s, "0x"), 16, 64)
					if err != nil {
						t.Fatalf("readelf line %q: %v", line, err)
					}
					return v
				}
				flags := strings.Join(f[6:len(f)-1], "")
				sg := Segment{Image: path, Addr: num(f[2]), FileSize: num(f[4]), MemSize: num(f[5]),
					Read: strings.Contains(flags, "R"), Write: strings.Contains(flags, "W"), Exec: strings.Contains(flags, "E")}
				if sg.MemSize == 0 {
					continue // empty segments map nothing
				}
				want = append(want, sg)
				// The file bytes, then zeros.
				off := num(f[1])
				got := make([]byte, sg.MemSize)
				if n := s.Read(sg.Addr, got); n != len(got) {
					t.Errorf("Read(%#x, %d) = %d", sg.Addr, len(got), n)
				}
				if !bytes.Equal(got[:sg.FileSize], file[off:off+sg.FileSize]) || !bytes.Equal(got[sg.FileSize:], make([]byte, sg.MemSize-sg.FileSize)) {
					t.Errorf("segment at %#x: contents differ from the file", sg.Addr)
				}
			}
			got := s.Segments()
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("Segments() = %+v\nreadelf -l: %+v", got, want)
			}
			wantX := 64
			if strings.Contains(run(t, readelf, "-h", path), "ELF32") {
				wantX = 32
			}
			if s.XLEN() != wantX {
				t.Errorf("XLEN() = %d, want %d", s.XLEN(), wantX)
			}
		})
	}
}

// TestCorpusSymbols compares Symbols with nm (names, values, sizes) and
// readelf -s (kinds, binding, absolute), and Lookup with both.
func TestCorpusSymbols(t *testing.T) {
	nm := binutil(t, "nm")
	readelf := binutil(t, "readelf")
	paths := corpusELFs(t)
	if p := compileC(t); p != "" {
		paths = append(paths, p)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s := load(t, path)
			got := map[string]bool{}
			for _, sy := range s.Symbols() {
				got[fmt.Sprintf("%s %x %x", sy.Name, sy.Addr, sy.Size)] = true
			}
			want := map[string]bool{}
			for _, line := range strings.Split(run(t, nm, "-S", "--defined-only", path), "\n") {
				f := strings.Fields(line)
				var name, addr, size string
				switch len(f) {
				case 3:
					addr, name, size = f[0], f[2], "0"
				case 4:
					addr, size, name = f[0], f[1], f[3]
				default:
					continue
				}
				if isMappingSymbol(name) {
					continue
				}
				a, _ := strconv.ParseUint(addr, 16, 64)
				z, _ := strconv.ParseUint(size, 16, 64)
				want[fmt.Sprintf("%s %x %x", name, a, z)] = true
			}
			for k := range want {
				if !got[k] {
					t.Errorf("nm has %q, Symbols() does not", k)
				}
			}
			for k := range got {
				if !want[k] {
					t.Errorf("Symbols() has %q, nm does not", k)
				}
			}

			// Kinds from readelf -s.
			kinds := map[string]string{}
			for _, line := range strings.Split(run(t, readelf, "-sW", path), "\n") {
				f := strings.Fields(line)
				if len(f) != 8 || !strings.HasSuffix(f[0], ":") || f[6] == "UND" || f[3] == "SECTION" || f[3] == "FILE" {
					continue
				}
				v, _ := strconv.ParseUint(f[1], 16, 64)
				kind := "other"
				switch f[3] {
				case "FUNC", "IFUNC":
					kind = "func"
				case "OBJECT", "TLS", "COMMON":
					kind = "object"
				}
				global := f[4] != "LOCAL"
				kinds[fmt.Sprintf("%s %x", f[7], v)] = fmt.Sprintf("%s global=%v abs=%v", kind, global, f[6] == "ABS")
			}
			for _, sy := range s.Symbols() {
				k := fmt.Sprintf("%s %x", sy.Name, sy.Addr)
				if w, g := kinds[k], fmt.Sprintf("%s global=%v abs=%v", sy.Kind, sy.Global, sy.Abs); w != g {
					t.Errorf("%s: %s, readelf -s: %s", k, g, w)
				}
			}
			// Every global name is found at its address.
			for _, sy := range s.Symbols() {
				if !sy.Global {
					continue
				}
				if a, ok := s.Lookup(sy.Name); !ok || a != sy.Addr {
					t.Errorf("Lookup(%s) = %#x, %v; want %#x", sy.Name, a, ok, sy.Addr)
				}
			}
		})
	}
}

// cfMnemonics are objdump's names of the instructions that end a run, with
// the class riscv.Decode should give them (anyNonLinear when several are
// right).
var cfMnemonics = map[string]riscv.Class{
	"j": riscv.ClassJump, "jal": riscv.ClassJump,
	"jr": anyNonLinear, "jalr": anyNonLinear, "ret": anyNonLinear,
	"beq": riscv.ClassBranch, "bne": riscv.ClassBranch, "blt": riscv.ClassBranch, "bge": riscv.ClassBranch,
	"bltu": riscv.ClassBranch, "bgeu": riscv.ClassBranch, "beqz": riscv.ClassBranch, "bnez": riscv.ClassBranch,
	"blez": riscv.ClassBranch, "bgez": riscv.ClassBranch, "bltz": riscv.ClassBranch, "bgtz": riscv.ClassBranch,
	"bgt": riscv.ClassBranch, "ble": riscv.ClassBranch, "bgtu": riscv.ClassBranch, "bleu": riscv.ClassBranch,
	"ecall": riscv.ClassECall, "ebreak": riscv.ClassEBreak,
	"mret": riscv.ClassTrapReturn, "sret": riscv.ClassTrapReturn, "uret": riscv.ClassTrapReturn, "dret": riscv.ClassTrapReturn,
}

const anyNonLinear = riscv.Class(255)

// TestCorpusInst checks Inst (length, bits, control-flow or not) at every
// address objdump -d lists, and Run from every one of them against the
// runs objdump's listing implies.
func TestCorpusInst(t *testing.T) {
	paths := corpusELFs(t)
	if p := compileC(t); p != "" {
		paths = append(paths, p)
	}
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s := load(t, path)
			insts := objdump(t, path)
			errs := 0
			fail := func(format string, args ...any) {
				t.Helper()
				if errs++; errs <= 20 {
					t.Errorf(format, args...)
				}
			}
			for _, d := range insts {
				in, ok := s.Inst(d.addr)
				if !ok || in.Len != d.len || in.Raw != d.raw {
					fail("%#x: Inst = raw %#x len %d ok %v; objdump: %#x len %d (%s)", d.addr, in.Raw, in.Len, ok, d.raw, d.len, d.mnemonic)
					continue
				}
				if d.mnemonic == "unimp" {
					continue
				}
				class, cf := cfMnemonics[d.mnemonic]
				switch {
				case cf && in.Class == riscv.ClassLinear:
					fail("%#x: %s decoded as linear", d.addr, d.mnemonic)
				case cf && class != anyNonLinear && in.Class != class:
					fail("%#x: %s decoded as class %d, want %d", d.addr, d.mnemonic, in.Class, class)
				case !cf && in.Class != riscv.ClassLinear:
					fail("%#x: %s decoded as class %d, want linear", d.addr, d.mnemonic, in.Class)
				}
			}

			// Walk backwards: the run from each instruction ends where the
			// run from the next one does, unless it is itself control flow.
			type want struct {
				n, hw uint32
				last  int // index in insts
			}
			runs := make([]want, len(insts))
			checked := 0
			for i := len(insts) - 1; i >= 0; i-- {
				d := insts[i]
				_, cf := cfMnemonics[d.mnemonic]
				switch {
				case d.mnemonic == "unimp":
					runs[i] = want{last: -1} // unknown
				case cf:
					runs[i] = want{1, uint32(d.len / 2), i}
				case i+1 < len(insts) && insts[i+1].addr == d.addr+uint64(d.len) && runs[i+1].last >= 0:
					runs[i] = want{runs[i+1].n + 1, runs[i+1].hw + uint32(d.len/2), runs[i+1].last}
				default:
					runs[i] = want{last: -1} // runs out of the listing
				}
			}
			for i, d := range insts {
				w := runs[i]
				if w.last < 0 {
					continue
				}
				r, err := s.Run(d.addr)
				if err != nil {
					fail("Run(%#x): %v; want %d instructions to %#x", d.addr, err, w.n, insts[w.last].addr)
					continue
				}
				if r.Start != d.addr || r.N != w.n || r.Halfwords != w.hw || r.LastAddr != insts[w.last].addr || r.Last.Raw != insts[w.last].raw {
					fail("Run(%#x) = %+v; want %d instructions, %d halfwords, to %#x", d.addr, r, w.n, w.hw, insts[w.last].addr)
				}
				checked++
			}
			if checked < len(insts)*9/10 {
				t.Errorf("only %d of %d runs checked", checked, len(insts))
			}
			t.Logf("%d instructions, %d runs checked", len(insts), checked)
		})
	}
}

// TestCorpusSymbolize checks that every instruction objdump lists under a
// function heading symbolizes to that function (or an alias at the same
// address), and that FormatAddr matches objdump's headings.
func TestCorpusSymbolize(t *testing.T) {
	for _, path := range corpusELFs(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			s := load(t, path)
			insts := objdump(t, path)
			sizes := map[string]uint64{}
			for _, sy := range s.Symbols() {
				sizes[sy.Name] = sy.Size
			}
			errs := 0
			for _, d := range insts {
				want, ok := s.Lookup(d.label)
				if !ok {
					t.Fatalf("objdump heading %q is not a symbol", d.label)
				}
				name, off, ok := s.Symbolize(d.addr)
				if !ok || d.addr-off != want {
					// An unsized label heading objdump uses inside a sized
					// function is not what Symbolize reports.
					if ok && sizes[name] > 0 && sizes[d.label] == 0 {
						continue
					}
					if errs++; errs <= 20 {
						t.Errorf("Symbolize(%#x) = %s+%#x, %v; objdump lists it under <%s> at %#x", d.addr, name, off, ok, d.label, want)
					}
				}
				if d.addr == want && ok {
					if got := s.FormatAddr(d.addr); got != fmt.Sprintf("%#x <%s>", d.addr, name) {
						t.Errorf("FormatAddr(%#x) = %q", d.addr, got)
					}
				}
			}
		})
	}
}

// compiled holds the programs compileC built, by flags.
var (
	compileMu sync.Mutex
	compiled  = map[string]string{}
	tempDirs  []string
)

const testC = `#include <stdio.h>
#include <stdlib.h>

static int sq(int x) { return x * x; }

struct node { struct node *next; int v; };

static int sum(struct node *n) {
	int s = 0;
	for (; n; n = n->next)
		s += n->v;
	return s;
}

int unused(int i) { return i * 3 + 1; }

int table(int i) {
	switch (i) {
	case 0: return 3;
	case 1: return sq(i + 4);
	case 2: return 17;
	case 3: return i * 9;
	case 4: return 1;
	default: return -1;
	}
}

int main(int argc, char **argv) {
	int s = 0;
	struct node *head = 0;
	for (int i = 0; i < argc * 10; i++) {
		struct node *n = malloc(sizeof *n);
		n->next = head;
		n->v = sq(i) + table(i % 7);
		head = n;
	}
	s = sum(head);
	printf("%d %s\n", s, argv[0]);
	return s & 1;
}
`

// compileC compiles testC with -g -O1 -static and the extra flags,
// returning "" when the cross compiler is missing.
func compileC(t testing.TB, flags ...string) string {
	t.Helper()
	if _, err := exec.LookPath("riscv64-linux-gnu-gcc"); err != nil {
		return ""
	}
	compileMu.Lock()
	defer compileMu.Unlock()
	key := strings.Join(flags, " ")
	if p, ok := compiled[key]; ok {
		return p
	}
	dir, err := os.MkdirTemp("", "image-test-")
	if err != nil {
		t.Fatal(err)
	}
	tempDirs = append(tempDirs, dir)
	src := filepath.Join(dir, "prog.c")
	out := filepath.Join(dir, "prog.elf")
	if err := os.WriteFile(src, []byte(testC), 0o644); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"-g", "-O1", "-static", "-o", out, src}, flags...)
	if b, err := exec.Command("riscv64-linux-gnu-gcc", args...).CombinedOutput(); err != nil {
		t.Fatalf("riscv64-linux-gnu-gcc %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	compiled[key] = out
	return out
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range tempDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// TestLines compares Line with addr2line at every instruction of a small C
// program compiled with -g -O1 -static (the C library in it has no line
// information), also with sections garbage-collected, which leaves the
// line tables of discarded functions at address 0.
func TestLines(t *testing.T) {
	binutil(t, "addr2line")
	if compileC(t) == "" {
		t.Skip("riscv64-linux-gnu-gcc not installed")
	}
	for name, flags := range map[string][]string{
		"plain": nil,
		"gc":    {"-ffunction-sections", "-Wl,--gc-sections"},
	} {
		t.Run(name, func(t *testing.T) { testLines(t, compileC(t, flags...)) })
	}
}

func testLines(t *testing.T, path string) {
	addr2line := binutil(t, "addr2line")
	s := load(t, path)
	insts := objdump(t, path)
	var in strings.Builder
	for _, d := range insts {
		fmt.Fprintf(&in, "%x\n", d.addr)
	}
	cmd := exec.Command(addr2line, "-e", path)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(insts) {
		t.Fatalf("addr2line gave %d lines for %d addresses", len(lines), len(insts))
	}
	matched, errs := 0, 0
	for i, d := range insts {
		l := lines[i]
		if j := strings.Index(l, " (discriminator"); j >= 0 {
			l = l[:j]
		}
		c := strings.LastIndex(l, ":")
		wantFile, wantLine := l[:c], l[c+1:]
		file, line, ok := s.Line(d.addr)
		var got string
		if ok {
			got = fmt.Sprintf("%s:%d", filepath.Base(file), line)
		}
		var want string
		if n, err := strconv.Atoi(wantLine); err == nil && wantFile != "??" {
			want = fmt.Sprintf("%s:%d", filepath.Base(wantFile), n)
			matched++
		}
		if got != want {
			if errs++; errs <= 20 {
				t.Errorf("Line(%#x) = %q; addr2line: %q", d.addr, got, lines[i])
			}
		}
		if ok && filepath.Base(file) == "prog.c" && file != filepath.Join(filepath.Dir(path), "prog.c") {
			t.Errorf("Line(%#x) file = %q, want the full path", d.addr, file)
		}
	}
	if matched < 50 {
		t.Errorf("only %d addresses with line information", matched)
	}
	t.Logf("%d instructions, %d with line information", len(insts), matched)
	// The lines of main, by name.
	addr, ok := s.Lookup("main")
	if !ok {
		t.Fatal("no main")
	}
	mainLine := 1 + strings.Count(testC[:strings.Index(testC, "int main(")], "\n")
	if f, l, ok := s.Line(addr); !ok || filepath.Base(f) != "prog.c" || l != mainLine {
		t.Errorf("Line(main) = %s:%d %v, want prog.c:%d", f, l, ok, mainLine)
	}
}

// TestRawImage loads the text segment of a corpus program as a raw binary
// and checks it decodes like the ELF.
func TestRawImage(t *testing.T) {
	path := filepath.Join(corpusDir(t), "t1", "test.elf")
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text := f.Section(".text")
	data, err := text.Data()
	if err != nil {
		t.Fatal(err)
	}
	raw := filepath.Join(t.TempDir(), "text.bin")
	must(t, os.WriteFile(raw, data, 0o644))
	r := NewSet()
	must(t, r.AddRaw(raw, text.Addr))
	r.SetXLEN(32)
	e := load(t, path)
	for a := text.Addr; a < text.Addr+text.Size; a += 2 {
		i1, ok1 := r.Inst(a)
		i2, ok2 := e.Inst(a)
		if ok1 != ok2 && a+4 <= text.Addr+text.Size || ok1 && ok2 && i1 != i2 {
			t.Fatalf("%#x: raw %+v %v, ELF %+v %v", a, i1, ok1, i2, ok2)
		}
	}
}
