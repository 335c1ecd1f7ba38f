package analysis

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// nmFuncs returns the sized function symbols of an ELF as nm lists them,
// sorted by address.
func nmFuncs(t testing.TB, elf string) []image.Symbol {
	t.Helper()
	tool, err := exec.LookPath("riscv64-linux-gnu-nm")
	if err != nil {
		t.Skip("riscv64-linux-gnu-nm not installed")
	}
	out, err := exec.Command(tool, "-S", "--defined-only", elf).Output()
	if err != nil {
		t.Fatal(err)
	}
	var syms []image.Symbol
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 || !strings.Contains("TtWi", f[2]) {
			continue
		}
		a, _ := strconv.ParseUint(f[0], 16, 64)
		n, _ := strconv.ParseUint(f[1], 16, 64)
		syms = append(syms, image.Symbol{Name: f[3], Addr: a, Size: n})
	}
	sort.Slice(syms, func(i, j int) bool { return syms[i].Addr < syms[j].Addr })
	return syms
}

// scriptLines runs evs through a Script and returns its lines, header
// first.
func scriptLines(t testing.TB, img *image.Set, evs []flow.Event, opt ScriptOptions) []string {
	t.Helper()
	var buf bytes.Buffer
	feed(t, NewScript(&buf, img, opt), evs)
	return strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
}

// TestScriptCalls lists the calls program's flow (qemu's PCs made into
// ranges) and checks every line against the PCs, and the symbols and
// source lines of sampled addresses against nm and addr2line.
func TestScriptCalls(t *testing.T) {
	img, pcs := loadProgram(t, "calls")
	evs := pcsToFlow(t, img, pcs)
	fields, err := ParseScriptFields("idx,ip,sym,srcline,insn,branch")
	if err != nil {
		t.Fatal(err)
	}
	lines := scriptLines(t, img, evs, ScriptOptions{Fields: fields})
	if !strings.HasPrefix(lines[0], "#") || !strings.Contains(lines[0], "srcline") {
		t.Fatalf("header %q", lines[0])
	}
	lines = lines[1:]
	if len(lines) != len(pcs) {
		t.Fatalf("%d lines, want one per instruction: %d", len(lines), len(pcs))
	}
	type row struct{ sym, line string }
	rows := make([]row, len(lines))
	for i, l := range lines {
		f := strings.Fields(l)
		if idx, err := strconv.Atoi(f[0]); err != nil || idx != i {
			t.Fatalf("line %d: index %q", i, f[0])
		}
		pc, err := strconv.ParseUint(f[1], 16, 64)
		if err != nil || pc != pcs[i] {
			t.Fatalf("line %d: ip %q, want %#x", i, f[1], pcs[i])
		}
		rows[i] = row{f[2], f[3]}
	}
	// Symbols against nm.
	syms := nmFuncs(t, filepath.Join(examples, "calls.elf"))
	checked := 0
	for i := 0; i < len(pcs); i += 37 {
		pc := pcs[i]
		j := sort.Search(len(syms), func(k int) bool { return syms[k].Addr > pc }) - 1
		if j < 0 || pc >= syms[j].Addr+syms[j].Size {
			continue
		}
		// Any alias at the function's address (nm lists brk and __brk).
		var want []string
		for k := j; k >= 0 && syms[k].Addr == syms[j].Addr; k-- {
			w := syms[k].Name
			if off := pc - syms[k].Addr; off != 0 {
				w += "+0x" + strconv.FormatUint(off, 16)
			}
			want = append(want, w)
		}
		found := false
		for _, w := range want {
			found = found || rows[i].sym == w
		}
		if !found {
			t.Errorf("line %d (%#x): sym %q, nm says %q", i, pc, rows[i].sym, want)
		}
		checked++
	}
	if checked < 100 {
		t.Fatalf("only %d addresses checked against nm", checked)
	}
	// Source lines against addr2line.
	// LLVM's addr2line (llvm-19, which scripts/install-test-deps.sh
	// installs): binutils 2.40's joins a relative DW_AT_comp_dir to DWARF
	// 5's directory 0, which is that same directory, and prints it twice
	// (examples/analysis/examples/analysis/calls.c).
	tool, err := exec.LookPath("llvm-addr2line-19")
	if err != nil {
		if tool, err = exec.LookPath("llvm-addr2line"); err != nil {
			t.Skip("llvm-addr2line (Debian: llvm-19) not installed")
		}
	}
	var idx []int
	args := []string{"-e", filepath.Join(examples, "calls.elf")}
	for i := 0; i < len(pcs); i += 997 {
		idx = append(idx, i)
		args = append(args, "0x"+strconv.FormatUint(pcs[i], 16))
	}
	out, err := exec.Command(tool, args...).Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != len(idx) {
		t.Fatalf("addr2line gave %d lines for %d addresses", len(got), len(idx))
	}
	for k, i := range idx {
		want, _, _ := strings.Cut(got[k], " ")
		if strings.HasPrefix(want, "??") {
			want = "?"
		}
		if rows[i].line != want {
			t.Errorf("line %d (%#x): srcline %q, addr2line says %q", i, pcs[i], rows[i].line, want)
		}
	}
}

// TestScriptRanges checks --ranges: one line per range with its first
// and last address and count.
func TestScriptRanges(t *testing.T) {
	img, pcs := loadProgram(t, "calls")
	evs := pcsToFlow(t, img, pcs)
	lines := scriptLines(t, img, evs, ScriptOptions{Ranges: true, NoHeader: true})
	if len(lines) != len(evs) {
		t.Fatalf("%d lines for %d ranges", len(lines), len(evs))
	}
	var idx uint64
	for i, l := range lines {
		f := strings.Fields(l)
		start, _ := strconv.ParseUint(f[1], 16, 64)
		last, _ := strconv.ParseUint(f[2], 16, 64)
		n, _ := strconv.ParseUint(f[3], 10, 64)
		if f[0] != strconv.FormatUint(idx, 10) || start != evs[i].Start || last != evs[i].Last || n != evs[i].N {
			t.Fatalf("line %d: %q, want range %v at index %d", i, l, evs[i].String(), idx)
		}
		idx += n
	}
}

// TestScriptEvents checks the trap, gap and time lines and columns.
func TestScriptEvents(t *testing.T) {
	img, pcs := loadProgram(t, "calls")
	evs := pcsToFlow(t, img, pcs)[:3]
	all := []flow.Event{
		{Kind: flow.KindContext, Priv: 3, Context: 0x42, Offset: -1},
		{Kind: flow.KindTime, Time: 1234, Offset: -1},
		evs[0],
		{Kind: flow.KindTrap, HasCause: true, Cause: 2, TVal: 0x13, Addr: evs[1].Start, Target: 0x100, HasTarget: true, Offset: -1},
		{Kind: flow.KindGap, Offset: 77, Index: 5, Err: os.ErrClosed},
		evs[1],
	}
	fields, _ := ParseScriptFields("idx,time,priv,ctx,ip")
	lines := scriptLines(t, img, all, ScriptOptions{Fields: fields})
	want := []string{"TRAP exception cause 0x2 tval 0x13 at 0x" + strconv.FormatUint(evs[1].Start, 16) + " handler 0x100",
		"GAP at byte 77 (message 5): file already closed"}
	var got []string
	for _, l := range lines {
		if strings.HasPrefix(l, "TRAP") || strings.HasPrefix(l, "GAP") {
			got = append(got, l)
		} else if !strings.HasPrefix(l, "#") {
			f := strings.Fields(l)
			if f[1] != "1234" || f[2] != "M" || f[3] != "0x42" {
				t.Errorf("line %q: want time 1234, priv M, ctx 0x42", l)
			}
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("event lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := len(lines) - 1 - 2; uint64(n) != evs[0].N+evs[1].N {
		t.Errorf("%d instruction lines, want %d", n, evs[0].N+evs[1].N)
	}
}

// TestScriptFastPath checks that the lines written by the fast path (an
// index and one group of address fields) are those of the general one,
// for field sets that take it and sets that do not, on the calls flow
// with a range cut short (no end type) and indexes that carry across
// every digit and past the column's width.
func TestScriptFastPath(t *testing.T) {
	img, pcs := loadProgram(t, "calls")
	evs := pcsToFlow(t, img, pcs)
	cut := evs[10]
	cut.End, cut.HasTarget = 0, false
	evs = append(evs[:11:11], append([]flow.Event{cut}, evs[11:]...)...)
	// Ranges through not-taken branches, as a decoder gives them from
	// a history of branches.
	var merged []flow.Event
	for _, e := range evs {
		if k := len(merged) - 1; k >= 0 && merged[k].End == ingress.ITypeNotTaken {
			merged[k].N += e.N
			merged[k].Last, merged[k].End, merged[k].Target, merged[k].HasTarget = e.Last, e.End, e.Target, e.HasTarget
			continue
		}
		merged = append(merged, e)
	}
	if len(merged) == len(evs) {
		t.Fatal("no not-taken branch in the flow")
	}
	for _, evs := range [][]flow.Event{evs, merged} {
		testScriptFastPath(t, img, evs)
	}
}

func testScriptFastPath(t *testing.T, img *image.Set, evs []flow.Event) {
	for _, spec := range []string{"", "ip,sym,insn", "idx,sym", "idx,ip,sym,insn", "ip,insn,branch", "idx,srcline,sym,branch", "idx,ip,time,sym,branch"} {
		var fields []ScriptField
		if spec != "" {
			var err error
			if fields, err = ParseScriptFields(spec); err != nil {
				t.Fatal(err)
			}
		}
		for _, first := range []uint64{0, 99_999_990, 9_999_999_990} {
			var fast, slow bytes.Buffer
			sf := NewScript(&fast, img, ScriptOptions{Fields: fields})
			ss := NewScript(&slow, img, ScriptOptions{Fields: fields})
			ss.fast = false
			if want := !strings.Contains(spec, "time"); sf.fast != want {
				t.Fatalf("-F %q: fast path %v, want %v", spec, sf.fast, want)
			}
			sf.SetIndex(first)
			ss.SetIndex(first)
			feed(t, sf, evs)
			feed(t, ss, evs)
			if !bytes.Equal(fast.Bytes(), slow.Bytes()) {
				fl := strings.Split(fast.String(), "\n")
				sl := strings.Split(slow.String(), "\n")
				for i := range min(len(fl), len(sl)) {
					if fl[i] != sl[i] {
						t.Fatalf("-F %q from %d: line %d\nfast %q\nslow %q", spec, first, i, fl[i], sl[i])
					}
				}
				t.Fatalf("-F %q from %d: %d lines, want %d", spec, first, len(fl), len(sl))
			}
			// The index column counts on from first.
			if fields == nil || fields[0] == FieldIdx {
				lines := strings.Split(strings.TrimSpace(fast.String()), "\n")[1:]
				for i, l := range lines {
					f := strings.Fields(l)
					if want := strconv.FormatUint(first+uint64(i), 10); f[0] != want {
						t.Fatalf("-F %q: line %d index %q, want %s", spec, i, f[0], want)
					}
				}
			}
		}
	}
}

func TestParseScriptFields(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"ip,sym", "ip,sym"},
		{"+srcline", "idx,ip,sym,insn,branch,srcline"},
		{"-idx,-branch,+time", "ip,sym,insn,time"},
	} {
		fs, err := ParseScriptFields(c.in)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, f := range fs {
			names = append(names, f.String())
		}
		if got := strings.Join(names, ","); got != c.want {
			t.Errorf("%q: %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"ip,nosuch", "ip,ip", "-idx,-ip,-sym,-insn,-branch"} {
		if _, err := ParseScriptFields(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// BenchmarkScript measures the listing's lines per second written to a
// file (in $RVTRACE_BENCH_DIR, else the test's temporary directory: put
// it on tmpfs, /dev/shm, to measure the listing rather than the disk),
// with the default fields (idx, ip, sym, insn, branch) on the calls
// program's flow. Run with
//
//	GOMAXPROCS=1 go test -run XXX -bench Script ./analysis
//
// and read the lines/s metric (MB/s is the output rate).
func BenchmarkScript(b *testing.B) {
	benchScript(b, ScriptOptions{}, true)
}

// BenchmarkScriptAll is BenchmarkScript with every field.
func BenchmarkScriptAll(b *testing.B) {
	fs, _ := ParseScriptFields("idx,time,src,priv,ctx,ip,sym,srcline,insn,branch")
	benchScript(b, ScriptOptions{Fields: fs}, true)
}

// BenchmarkScriptDiscard is BenchmarkScript writing to io.Discard: the
// cost of the listing alone.
func BenchmarkScriptDiscard(b *testing.B) {
	benchScript(b, ScriptOptions{}, false)
}

// BenchmarkScriptRanges is BenchmarkScriptDiscard with one line per range;
// lines/s counts instructions listed.
func BenchmarkScriptRanges(b *testing.B) {
	benchScript(b, ScriptOptions{Ranges: true}, false)
}

// countingWriter counts what it is given.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return c.w.Write(p)
}

func benchScript(b *testing.B, opt ScriptOptions, toFile bool) {
	img, pcs := loadProgram(b, "calls")
	evs := pcsToFlow(b, img, pcs)
	var out io.WriteSeeker = discardSeeker{}
	if toFile {
		dir := os.Getenv("RVTRACE_BENCH_DIR")
		if dir == "" {
			dir = b.TempDir()
		}
		f, err := os.CreateTemp(dir, "script-*.txt")
		if err != nil {
			b.Fatal(err)
		}
		defer os.Remove(f.Name())
		defer f.Close()
		out = f
	}
	f := out
	cw := &countingWriter{w: out}
	s := NewScript(cw, img, opt)
	b.ReportAllocs()
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if i%8 == 0 {
			// keep the file small: rewrite it from the start
			s.flush()
			f.Seek(0, 0)
		}
		for j := range evs {
			if err := s.Event(&evs[j]); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.flush(); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(len(pcs))*float64(b.N)/b.Elapsed().Seconds(), "lines/s")
	// On a shared machine the wall clock counts other processes' time
	// too: lines per second of this process's CPU time.
	b.ReportMetric(float64(len(pcs))*float64(b.N)/cpu.Seconds(), "lines/cpu-s")
	b.ReportMetric(float64(cw.n)/1e6/b.Elapsed().Seconds(), "MB/s")
}

// cpuTime returns the user and system CPU time of the process.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

type discardSeeker struct{}

func (discardSeeker) Write(p []byte) (int, error)    { return len(p), nil }
func (discardSeeker) Seek(int64, int) (int64, error) { return 0, nil }
