package analysis

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/pprof/profile"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/ingress"
)

// userFuncs are the functions of examples/analysis/calls.c.
var userFuncs = []string{"main", "leaf", "fib", "add1", "dbl", "apply", "tail_target", "tailer",
	"thrower", "catcher", "is_even", "is_odd", "ping", "pong", "never_called"}

// fibDepths returns how many calls of fib happen at each recursion depth
// (1 = the call from main) for fib(n), as the C source defines fib.
func fibDepths(n int) []uint64 {
	var d []uint64
	var rec func(n, depth int)
	rec = func(n, depth int) {
		for len(d) < depth {
			d = append(d, 0)
		}
		d[depth-1]++
		if n < 2 {
			return
		}
		rec(n-1, depth+1)
		rec(n-2, depth+1)
	}
	rec(n, 1)
	return d
}

// expectedTree is the call tree below main that calls.c defines, as
// "path calls" with the physical-stack convention for tail calls (a tail
// call replaces the caller's frame, so the callee is a child of the
// caller's caller, entered once per tail call).
func expectedTree() map[string]uint64 {
	want := map[string]uint64{"main": 1}
	path := "main"
	for _, c := range fibDepths(10) { // FIB_N
		path += ";fib"
		want[path] = c
	}
	want["main;apply"] = 2
	want["main;apply;add1"] = 1
	want["main;apply;dbl"] = 1
	want["main;add1"] = 2 // table[0], table[2]
	want["main;dbl"] = 2  // table[1], table[3]
	want["main;tailer"] = 1
	want["main;tail_target"] = 1 // tailer's tail call
	want["main;tail_target;leaf"] = 1
	want["main;catcher"] = 1
	path = "main;catcher"
	for i := 0; i <= 3; i++ { // THROW_DEPTH+1 frames, unwound by longjmp
		path += ";thrower"
		want[path] = 1
	}
	// is_even(7) and is_odd tail-call each other: 4 entries each
	// (7,5,3,1 and 6,4,2,0), all replacing main's callee frame.
	want["main;is_even"] = 4
	want["main;is_odd"] = 4
	path = "main"
	for i := 7; i >= 0; i-- { // ping(7) -> pong(6) -> ... -> pong(0)
		if i%2 == 1 {
			path += ";ping"
		} else {
			path += ";pong"
		}
		want[path] = 1
	}
	return want
}

// findNodes returns the nodes of fn's name in the tree.
func findNodes(p *Profile, name string) []*Node {
	var out []*Node
	walkTree(p.Root(), func(n *Node, enter bool) {
		if enter && n.Func != nil && n.Func.Name == name {
			out = append(out, n)
		}
	})
	return out
}

func profileCalls(t testing.TB) (*Profile, []uint64) {
	img, pcs := loadProgram(t, "calls")
	p := New(img, Options{})
	feed(t, p, pcsToFlow(t, img, pcs))
	return p, pcs
}

func TestCallTreeKnownProgram(t *testing.T) {
	p, _ := profileCalls(t)
	mains := findNodes(p, "main")
	if len(mains) != 1 {
		t.Fatalf("main appears %d times in the call tree, want 1", len(mains))
	}
	user := map[string]bool{}
	for _, u := range userFuncs {
		user[u] = true
	}
	got := map[string]uint64{}
	var path []string
	walkTree(mains[0], func(n *Node, enter bool) {
		if !enter {
			path = path[:len(path)-1]
			return
		}
		path = append(path, n.Func.Name)
		ok := true
		for _, f := range path {
			ok = ok && user[f]
		}
		if ok {
			got[strings.Join(path, ";")] += n.Calls
		}
	})
	want := expectedTree()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d calls, want %d", k, got[k], v)
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected call path %s (%d calls)", k, v)
		}
	}
	// longjmp lands back in catcher: what catcher runs after it is
	// catcher's, not thrower's.
	th := findNodes(p, "thrower")
	for _, n := range th {
		if n.Self != 7 && n.Self != 10 {
			t.Errorf("thrower node at depth with self %d", n.Self)
		}
	}
}

// elfFuncRanges reads the function symbols of the ELF independently of
// package image.
func elfFuncRanges(t testing.TB, path string) map[string][2]uint64 {
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][2]uint64{}
	for _, s := range syms {
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Size > 0 {
			out[s.Name] = [2]uint64{s.Value, s.Value + s.Size}
		}
	}
	return out
}

func TestFlatProfileMatchesQemu(t *testing.T) {
	p, pcs := profileCalls(t)
	if p.Instructions() != uint64(len(pcs)) {
		t.Fatalf("instructions %d, qemu executed %d", p.Instructions(), len(pcs))
	}
	// Self counts per function equal the PCs qemu executed in the
	// function's symbol range.
	ranges := elfFuncRanges(t, filepath.Join(examples, "calls.elf"))
	var sum uint64
	for _, fs := range p.FuncStats() {
		sum += fs.Self
		r, ok := ranges[fs.Func.Name]
		if !ok {
			continue
		}
		var n uint64
		for _, pc := range pcs {
			if pc >= r[0] && pc < r[1] {
				n++
			}
		}
		if n != fs.Self {
			t.Errorf("%s: self %d, qemu executed %d instructions in it", fs.Func.Name, fs.Self, n)
		}
	}
	if sum != uint64(len(pcs)) {
		t.Errorf("flat profile adds up to %d, want %d", sum, len(pcs))
	}
	// The call tree's self counts add up too.
	var tree uint64
	walkTree(p.Root(), func(n *Node, enter bool) {
		if enter {
			tree += n.Self
		}
	})
	if tree != uint64(len(pcs)) || p.Root().Inclusive != uint64(len(pcs)) {
		t.Errorf("call tree self sum %d, root inclusive %d, want %d", tree, p.Root().Inclusive, len(pcs))
	}
	// main's inclusive count is the number of instructions from its
	// entry to its return, as qemu ran them.
	mainRange := ranges["main"]
	i0 := slices.Index(pcs, mainRange[0])
	in, _ := p.Image().Inst(pcs[i0-1])
	ret := pcs[i0-1] + uint64(in.Len)
	i1 := i0 + slices.Index(pcs[i0:], ret)
	if fs := p.FuncStat(p.FuncByName("main")); fs.Inclusive != uint64(i1-i0) {
		t.Errorf("main inclusive %d, qemu ran %d instructions in main's activation", fs.Inclusive, i1-i0)
	}
	// Per line: the lines of fib add up to fib's self count.
	var fibLines uint64
	for _, l := range p.LineStats() {
		if l.Func.Name == "fib" {
			fibLines += l.Insts
		}
	}
	if fs := p.FuncStat(p.FuncByName("fib")); fibLines != fs.Self || fs.Calls != 177 {
		t.Errorf("fib: lines add up to %d, self %d, calls %d (want 177)", fibLines, fs.Self, fs.Calls)
	}
}

func TestFoldedMatchesCount(t *testing.T) {
	p, pcs := profileCalls(t)
	var buf bytes.Buffer
	if err := WriteFolded(&buf, p, false); err != nil {
		t.Fatal(err)
	}
	var sum uint64
	seen := map[string]bool{}
	sc := bufio.NewScanner(&buf)
	for sc.Scan() {
		line := sc.Text()
		k := strings.LastIndexByte(line, ' ')
		n, err := strconv.ParseUint(line[k+1:], 10, 64)
		if err != nil || k < 0 {
			t.Fatalf("bad folded line %q", line)
		}
		if seen[line[:k]] {
			t.Errorf("stack %q twice", line[:k])
		}
		seen[line[:k]] = true
		sum += n
	}
	if sum != uint64(len(pcs)) {
		t.Errorf("folded stacks add up to %d, want %d", sum, len(pcs))
	}
	if !seen["_start;__libc_start_main;__libc_start_call_main;main;catcher;thrower;thrower;thrower;thrower"] {
		t.Errorf("folded output lacks the thrower stack:\n%s", buf.String())
	}
}

func TestPprofMatchesCount(t *testing.T) {
	p, pcs := profileCalls(t)
	var buf bytes.Buffer
	if err := WritePprof(&buf, p); err != nil {
		t.Fatal(err)
	}
	pp, err := profile.Parse(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, s := range pp.Sample {
		sum += s.Value[0]
	}
	if sum != int64(len(pcs)) {
		t.Errorf("pprof samples add up to %d, want %d", sum, len(pcs))
	}
	// go tool pprof opens it, and its top function is fib.
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not on PATH: skipping go tool pprof")
	}
	f := filepath.Join(t.TempDir(), "calls.pb.gz")
	if err := os.WriteFile(f, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(gobin, "tool", "pprof", "-top", f).CombinedOutput()
	if err != nil {
		t.Fatalf("go tool pprof -top: %v\n%s", err, out)
	}
	var first string
	sc := bufio.NewScanner(bytes.NewReader(out))
	inTable := false
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && fields[0] == "flat" {
			inTable = true
			continue
		}
		if inTable && len(fields) >= 6 {
			first = fields[5]
			break
		}
	}
	if first != "fib" {
		t.Errorf("go tool pprof -top: top function %q, want fib\n%s", first, out)
	}
	if !strings.Contains(string(out), fmt.Sprintf("of %d total", len(pcs))) {
		t.Errorf("go tool pprof -top does not report %d total:\n%s", len(pcs), out)
	}
}

func TestCoverageKnownProgram(t *testing.T) {
	p, _ := profileCalls(t)
	c := p.Coverage()
	hit := map[string]bool{}
	for _, f := range c.Funcs {
		hit[f.Func.Name] = f.Hit()
	}
	for _, u := range userFuncs {
		if want := u != "never_called"; hit[u] != want {
			t.Errorf("coverage of %s: hit %v, want %v", u, hit[u], want)
		}
	}
	var buf bytes.Buffer
	if err := WriteLcov(&buf, p, "calls"); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"FNDA:0,never_called", "FNDA:177,fib", "FNDA:1,main", "end_of_record"} {
		if !strings.Contains(out, want) {
			t.Errorf("lcov output lacks %q", want)
		}
	}
	// never_called's body line is found but not hit; fib's lines are hit.
	var callsC *FileCov
	for _, f := range c.Files {
		if strings.HasSuffix(f.File, "calls.c") {
			callsC = f
		}
	}
	if callsC == nil {
		t.Fatal("no coverage for calls.c")
	}
	lineHits := map[int]uint64{}
	for _, l := range callsC.Lines {
		lineHits[l.Line] = l.Hits
	}
	src, _ := os.ReadFile(filepath.Join(examples, "calls.c"))
	for i, l := range strings.Split(string(src), "\n") {
		if strings.Contains(l, "int never_called(int x)") {
			if h, ok := lineHits[i+1]; !ok || h != 0 {
				t.Errorf("never_called line %d: hits %d (found %v), want found and 0", i+1, h, ok)
			}
		}
	}
}

// TestTrapsAndTailCallsSynthetic drives the stack with a hand-made flow
// over calls.elf's functions: an interrupt in main whose handler (leaf)
// returns with a trap return, a tail call and a gap.
func TestTrapsAndTailCallsSynthetic(t *testing.T) {
	img, _ := loadProgram(t, "calls")
	p := New(img, Options{})
	sym := func(name string) uint64 {
		a, ok := img.Lookup(name)
		if !ok {
			t.Fatalf("no symbol %s", name)
		}
		return a
	}
	mainA, leafA, fibA, dblA := sym("main"), sym("leaf"), sym("fib"), sym("dbl")
	evs := []flow.Event{
		{Kind: flow.KindRange, Start: mainA, Last: mainA + 6, N: 4, End: ingress.ITypeNone},
		{Kind: flow.KindTrap, Interrupt: true, Addr: mainA + 8, Target: leafA, HasTarget: true},
		{Kind: flow.KindRange, Start: leafA, Last: leafA + 4, N: 2, End: ingress.ITypeNone},
		{Kind: flow.KindRange, Start: leafA + 6, Last: leafA + 6, N: 1, End: ingress.ITypeTrapReturn},
		{Kind: flow.KindRange, Start: mainA + 8, Last: mainA + 10, N: 2, End: ingress.ITypeDirectCall},
		{Kind: flow.KindRange, Start: fibA, Last: fibA + 2, N: 2, End: ingress.ITypeDirectJump},
		{Kind: flow.KindRange, Start: dblA, Last: dblA, N: 1, End: ingress.ITypeReturn},
		{Kind: flow.KindRange, Start: mainA + 14, Last: mainA + 14, N: 1, End: ingress.ITypeNone},
		{Kind: flow.KindGap, Err: fmt.Errorf("lost")},
		{Kind: flow.KindRange, Start: fibA, Last: fibA, N: 1, End: ingress.ITypeNone},
	}
	for i := range evs {
		evs[i].Offset = -1
	}
	feed(t, p, evs)
	var b strings.Builder
	WriteTree(&b, p, 0)
	got := b.String()
	for _, want := range []string{
		"  13           7        1  main\n",
		"   3           3        1    leaf [trap]\n",
		"   2           2        1    fib\n",
		"   1           1        1    dbl\n",
		"   1           1        1  fib\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("tree lacks %q:\n%s", want, got)
		}
	}
	if p.Instructions() != 14 || p.Root().Inclusive != 14 {
		t.Errorf("instructions %d, root inclusive %d, want 14", p.Instructions(), p.Root().Inclusive)
	}
}

// TestCycles checks that time between timestamps is shared among the
// instructions executed in between.
func TestCycles(t *testing.T) {
	img, _ := loadProgram(t, "calls")
	fibA, _ := img.Lookup("fib")
	leafA, _ := img.Lookup("leaf")
	p := New(img, Options{})
	evs := []flow.Event{
		{Kind: flow.KindTime, Time: 100},
		{Kind: flow.KindRange, Start: fibA, Last: fibA + 6, N: 4, End: ingress.ITypeDirectCall},
		{Kind: flow.KindRange, Start: leafA, Last: leafA, N: 1, End: ingress.ITypeNone},
		{Kind: flow.KindTime, Time: 150},
		{Kind: flow.KindRange, Start: leafA + 2, Last: leafA + 2, N: 1, End: ingress.ITypeNone},
		{Kind: flow.KindTime, Time: 160},
	}
	feed(t, p, evs)
	if p.Cycles() != 60 {
		t.Errorf("cycles %d, want 60", p.Cycles())
	}
	fib := p.FuncStat(p.FuncByName("fib"))
	leaf := p.FuncStat(p.FuncByName("leaf"))
	if fib.SelfCycles != 40 || leaf.SelfCycles != 20 || fib.InclCycles != 60 {
		t.Errorf("fib self %d incl %d, leaf self %d cycles; want 40, 60, 20", fib.SelfCycles, fib.InclCycles, leaf.SelfCycles)
	}
}

// TestBoundedMemory replays the calls program's flow many times: the
// profile's memory must not grow with the length of the flow.
func TestBoundedMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	img, pcs := loadProgram(t, "calls")
	evs := pcsToFlow(t, img, pcs)
	p := New(img, Options{})
	run := func(n int) {
		for i := 0; i < n; i++ {
			for j := range evs {
				p.Event(&evs[j])
			}
		}
	}
	var m0, m1 runtime.MemStats
	run(3)
	runtime.GC()
	runtime.ReadMemStats(&m0)
	run(300) // 2.6 million instructions
	runtime.GC()
	runtime.ReadMemStats(&m1)
	if grow := int64(m1.HeapAlloc) - int64(m0.HeapAlloc); grow > 1<<20 {
		t.Errorf("heap grew by %d bytes over 300 replays", grow)
	}
	if p.Instructions() != 303*uint64(len(pcs)) {
		t.Errorf("instructions %d", p.Instructions())
	}
}
