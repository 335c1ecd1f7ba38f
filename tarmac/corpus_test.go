package tarmac

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

// corpusTraces are the Tarmac traces of real tools in the shared corpus
// (corpus/tarmac/README.md).
var corpusTraces = []string{
	"calculator-aarch32-fastmodel.tarmac",
	"calculator-aarch64-fastmodel.tarmac",
	"calculator-aarch32-es-ld-st-style.tarmac",
	"calculator-aarch64-es-ld-st-style.tarmac",
	"calculator-aarch64-gem5.tarmac",
	"quicksort.tarmac",
	"calltest32.tarmac",
	"calltest64.tarmac",
	"indextest.tarmac",
	"truncate/crash32.tarmac",
	"truncate/crash32m.tarmac",
	"truncate/crash64.tarmac",
	"truncate/loop.tarmac",
	"truncate/nontruncate.tarmac",
}

// grepKinds are grep patterns, one per record kind, written from the
// files as a person reads them (not from the parser): each line of the
// corpus traces matches exactly one of them, so the number of lines each
// matches is the number of records of that kind.
var grepKinds = []struct {
	kind Kind
	re   *regexp.Regexp
}{
	{KindInst, regexp.MustCompile(` I[TS] \(\d+\) | ES +\([0-9a-f]+:[0-9a-f-]+\) `)},
	{KindFlow, regexp.MustCompile(`^ +BR \([0-9a-f]+\) [AO]$| F[DI] \(\d+\) `)},
	{KindReg, regexp.MustCompile(` R [A-Za-z][A-Za-z0-9_]* [0-9a-fA-F]`)},
	{KindMem, regexp.MustCompile(` M[RW]\d+ [0-9a-f]| (LD|ST) +[0-9a-f]+ +[0-9a-f.]{8} `)},
	{KindEvent, regexp.MustCompile(`( E [0-9a-f]+(:[0-9a-f]+)? .*Core| ES +EXC )`)},
	{KindOther, regexp.MustCompile(`^Tarmac Text Rev | SIGNAL: | CADI E simulation_stopped$| CACHE | INFO_EXCEPTION_REASON: `)},
}

// grepCount counts the lines of a file that each pattern of grepKinds
// matches; every non-blank line must match exactly one.
func grepCount(t *testing.T, path string) (counts [numRecordKinds]int, lines int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		lines++
		matched := 0
		for _, g := range grepKinds {
			if g.re.MatchString(line) {
				counts[g.kind]++
				matched++
			}
		}
		if matched != 1 {
			t.Fatalf("%s:%d matches %d grep patterns: %s", path, n, matched, line)
		}
	}
	return counts, lines
}

// TestTarmacCorpusStrictCounts reads every Tarmac trace of the corpus strictly
// and checks the number of records of each kind against grep counts.
func TestTarmacCorpusStrictCounts(t *testing.T) {
	for _, name := range corpusTraces {
		t.Run(name, func(t *testing.T) {
			path := corpus.Path(t, filepath.Join("tarmac", name))
			want, lines := grepCount(t, path)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			r := NewReader(f, name)
			var got [numRecordKinds]int
			n := 0
			for {
				rec, err := r.Next()
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("strict read: %v", err)
				}
				got[rec.Kind]++
				n++
			}
			if n != lines || got != want {
				t.Errorf("%d records %v, grep counts %d lines %v (kinds %v)", n, got, lines, want, recordKindNames)
			}
		})
	}
}

// TestTarmacCorpusCounts pins the grep counts of a few files for the forms
// issue 12 names, so that a change of the grep patterns cannot hide a
// record form: (ABORTED) accesses, CADI end lines, the ES style.
func TestTarmacCorpusCounts(t *testing.T) {
	countLines := func(path, pat string) int {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return len(regexp.MustCompile(`(?m)`+pat).FindAll(b, -1))
	}
	dir := corpus.Path(t, "tarmac")
	for _, c := range []struct{ file, pat string }{
		{"truncate/crash32.tarmac", ` MR4 [0-9a-f]+ \(ABORTED\)$`},
		{"truncate/crash64.tarmac", ` MR8 [0-9a-f]+ \(ABORTED\)$`},
		{"calculator-aarch64-fastmodel.tarmac", ` CADI E simulation_stopped$`},
	} {
		path := filepath.Join(dir, c.file)
		want := countLines(path, c.pat)
		if want == 0 {
			t.Fatalf("%s: no line matches %s", c.file, c.pat)
		}
		recs := readAll(t, path)
		got := 0
		for _, r := range recs {
			if (r.Aborted && r.Kind == KindMem) || (r.Tag == "CADI" && r.Kind == KindOther) {
				got++
			}
		}
		if got != want {
			t.Errorf("%s: %d records of the form %s, grep says %d", c.file, got, c.pat, want)
		}
	}
}

// ttuEvent is one event of tarmac-trace-utilities' parse of a line (the
// .ref files beside parsertest*.txt).
type ttuEvent struct {
	typ    string
	fields map[string]string
}

type ttuLine struct {
	line    string
	events  []ttuEvent
	warning string
}

var ttuField = regexp.MustCompile(`(\w+)=("[^"]*"|\S+)`)

func readTTURef(t *testing.T, path string) []ttuLine {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []ttuLine
	for _, l := range strings.Split(string(b), "\n") {
		switch {
		case strings.HasPrefix(l, "--- Tarmac line: "):
			out = append(out, ttuLine{line: strings.TrimPrefix(l, "--- Tarmac line: ")})
		case strings.HasPrefix(l, "* "):
			f := strings.SplitN(l[2:], " ", 2)
			ev := ttuEvent{typ: f[0], fields: map[string]string{}}
			if len(f) > 1 {
				for _, m := range ttuField.FindAllStringSubmatch(f[1], -1) {
					ev.fields[m[1]] = strings.Trim(m[2], `"`)
				}
			}
			out[len(out)-1].events = append(out[len(out)-1].events, ev)
		case strings.HasPrefix(l, "Parse warning: "):
			out[len(out)-1].warning = l
		}
	}
	return out
}

func hexField(t *testing.T, s string) uint64 {
	t.Helper()
	v, err := strconv.ParseUint(s, 16, 64)
	if err != nil {
		t.Fatalf("bad hex %q", s)
	}
	return v
}

// TestTarmacTTUParserReference reads the parser test files of
// tarmac-trace-utilities (one line per grammar corner) and checks each
// record against that tool's own parse of the line (its .ref file): kind,
// time, instruction address, set, width, opcode, effect and disassembly;
// memory direction, address, size and data; register value and offset.
func TestTarmacTTUParserReference(t *testing.T) {
	for _, name := range []string{"parsertest.txt", "parsertest-implicit-thumb.txt"} {
		t.Run(name, func(t *testing.T) {
			path := corpus.Path(t, filepath.Join("tarmac", name))
			ref := readTTURef(t, strings.TrimSuffix(path, ".txt")+".ref")
			var recs []Record
			for _, r := range readAll(t, path) {
				if r.Tag != "#" {
					recs = append(recs, r)
				}
			}
			if len(recs) != len(ref) {
				t.Fatalf("%d records, the reference has %d lines", len(recs), len(ref))
			}
			for i, want := range ref {
				checkTTULine(t, &recs[i], want)
			}
		})
	}
}

func checkTTULine(t *testing.T, r *Record, want ttuLine) {
	t.Helper()
	if strings.TrimSpace(want.line) != string(r.Text) {
		t.Fatalf("line %d is %q, the reference has %q", r.Line, r.Text, want.line)
	}
	fail := func(format string, args ...any) {
		t.Helper()
		t.Errorf("line %d %q: %s", r.Line, r.Text, fmt.Sprintf(format, args...))
	}
	if want.warning != "" {
		if r.Kind != KindReg || r.SysOp == "" {
			fail("want a system operation (%s), got %v", want.warning, r.Kind)
		}
		return
	}
	if len(want.events) == 0 {
		// Lines TTU reads but turns into no event: the header, registers
		// it does not track, coprocessor transfers.
		switch {
		case r.Tag == "Tarmac" || strings.HasPrefix(r.Tag, "MC"):
			if r.Kind != KindOther {
				fail("kind %v, want other", r.Kind)
			}
		case r.Tag == "R":
			if r.Kind != KindReg {
				fail("kind %v, want reg", r.Kind)
			}
		default:
			fail("no reference event for tag %q", r.Tag)
		}
		return
	}
	ev := want.events[0]
	if tm, ok := ev.fields["time"]; ok && tm != strconv.FormatUint(r.Time, 10) {
		fail("time %d, want %s", r.Time, tm)
	}
	switch ev.typ {
	case "InstructionEvent":
		if r.Kind != KindInst {
			fail("kind %v, want inst", r.Kind)
			return
		}
		iset := map[string]string{"ARM": "A", "Thumb": "T", "A64": "O"}[ev.fields["iset"]]
		effect := "executed"
		if r.FetchFailed {
			effect = "fetchfail"
		} else if !r.Executed {
			effect = "ccfail"
		}
		width := strconv.Itoa(r.OpcodeBytes * 8)
		if r.Addr != hexField(t, ev.fields["pc"]) || r.ISet != iset || width != ev.fields["width"] ||
			uint64(r.Opcode) != hexField(t, ev.fields["instruction"]) || effect != ev.fields["effect"] ||
			string(r.Disasm) != strings.TrimSpace(ev.fields["disassembly"]) {
			fail("got pc=%x iset=%s width=%s instruction=%x effect=%s disassembly=%q, want %v",
				r.Addr, r.ISet, width, r.Opcode, effect, r.Disasm, ev.fields)
		}
	case "MemoryEvent":
		if r.Kind != KindMem {
			fail("kind %v, want mem", r.Kind)
			return
		}
		lo, hi := ^uint64(0), uint64(0)
		for _, e := range want.events {
			a := hexField(t, e.fields["addr"])
			sz, _ := strconv.ParseUint(e.fields["size"], 10, 64)
			lo, hi = min(lo, a), max(hi, a+sz)
			if (e.fields["read"] == "true") == r.Write {
				fail("write=%v, want read=%s", r.Write, e.fields["read"])
			}
			if a == r.Addr && e.fields["known"] == "true" {
				mask := ^uint64(0)
				if sz < 8 {
					mask = 1<<(8*sz) - 1
				}
				if r.Value&mask != hexField(t, e.fields["contents"])&mask || r.Unknown&mask != 0 {
					fail("value %x (unknown %x), want %s", r.Value, r.Unknown, e.fields["contents"])
				}
			}
			if e.fields["known"] == "false" && a == r.Addr && r.Unknown == 0 {
				fail("value %x given as known, TTU reads it as unknown", r.Value)
			}
		}
		if r.Addr != lo || r.Addr+uint64(r.Size) != hi {
			fail("access %x+%d, want %x..%x", r.Addr, r.Size, lo, hi)
		}
	case "RegisterEvent":
		if r.Kind != KindReg {
			fail("kind %v, want reg", r.Kind)
			return
		}
		if !strings.EqualFold(ev.fields["reg"], r.Reg) && !regAlias(r.Reg, ev.fields["reg"]) {
			fail("register %q, want %s", r.Reg, ev.fields["reg"])
		}
		bs := strings.Split(ev.fields["bytes"], ":")
		off, _ := strconv.Atoi(ev.fields["offset"])
		if r.HasBits {
			off -= r.BitLo / 8
		}
		if len(bs) > 8 {
			bs = bs[len(bs)-8:]
		}
		wantV := hexField(t, strings.Join(bs, ""))
		got := r.Value >> (8 * uint(off))
		if n := len(bs); n < 8 {
			got &= 1<<(8*n) - 1
		}
		if len(want.events) == 1 && got != wantV && off < 8 {
			fail("value %x (offset %d), want %x", r.Value, off, wantV)
		}
		digits := strings.NewReplacer("_", "", ":", "", " ", "").Replace(string(r.ValueText))
		if len(digits) > 16 {
			digits = digits[len(digits)-16:]
		}
		if strings.ContainsAny(digits, "-xX") != (r.Unknown != 0) {
			fail("unknown bits %x for %q", r.Unknown, r.ValueText)
		}
	case "ExceptionEvent":
		if r.Kind != KindEvent {
			fail("kind %v, want event", r.Kind)
		}
	case "TextOnlyEvent":
		switch typ := ev.fields["type"]; typ {
		case "CADI":
			if r.Kind != KindOther || r.Tag != "CADI" {
				fail("kind %v tag %q, want other CADI", r.Kind, r.Tag)
			}
		case "ABORTED":
			if r.Kind != KindMem || !r.Aborted {
				fail("kind %v aborted %v, want an aborted access", r.Kind, r.Aborted)
			}
		case "E":
			if r.Kind != KindEvent || r.HasAddr || r.EventDesc == "" {
				fail("kind %v, want a named event", r.Kind)
			}
		case "BR":
			if r.Kind != KindFlow || r.Tag != "BR" {
				fail("kind %v, want flow BR", r.Kind)
			}
		default:
			// TTU leaves the instruction-fetch accesses of Cortex-M4 RTL
			// (MNR4O__I) as text; rvtrace keeps them as memory accesses.
			if r.Kind != KindMem || r.Tag != typ {
				fail("kind %v tag %q, want the memory access %s", r.Kind, r.Tag, typ)
			}
		}
	default:
		fail("unknown reference event %s", ev.typ)
	}
}

// regAlias accepts the names TTU normalises registers to.
func regAlias(reg, ttu string) bool {
	l := strings.ToLower(reg)
	switch ttu {
	case "psr":
		return isStatusReg(l)
	case "r13":
		return l == "sp" || strings.HasPrefix(l, "msp") || strings.HasPrefix(l, "r13")
	case "xsp":
		return l == "sp" || strings.HasPrefix(l, "sp_")
	case "x15":
		return l == "e15"
	}
	return strings.HasPrefix(l, ttu+"_")
}

// TestTarmacGarbageLine puts a line that is no Tarmac record into a real
// trace: the strict reader and decoder stop with a *SyntaxError naming the
// file and line; the lenient decoder skips and counts it and decodes the
// same flow as the clean file.
func TestTarmacGarbageLine(t *testing.T) {
	path := corpus.Path(t, "tarmac/calculator-aarch64-fastmodel.tarmac")
	clean, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(clean, []byte("\n"))
	const at = 500 // 1-based line number of the garbage line
	var dirty []byte
	for i, l := range lines {
		if i == at-1 {
			dirty = append(dirty, "this is not a tarmac line\n"...)
		}
		dirty = append(dirty, l...)
	}
	r := NewReader(bytes.NewReader(dirty), "dirty.tarmac")
	var se *SyntaxError
	for {
		_, err := r.Next()
		if err == io.EOF {
			t.Fatal("no error for the garbage line")
		}
		if err != nil {
			if !errors.As(err, &se) || se.File != "dirty.tarmac" || se.Line != at ||
				!strings.HasPrefix(err.Error(), fmt.Sprintf("dirty.tarmac:%d: ", at)) {
				t.Fatalf("error %v, want a *SyntaxError at dirty.tarmac:%d", err, at)
			}
			break
		}
	}
	d := NewDecoder(NewReader(bytes.NewReader(dirty), "dirty.tarmac"), Options{})
	if err := d.Flow(&collect{}); !errors.As(err, &se) || se.Line != at {
		t.Errorf("strict decoder: %v", err)
	}
	var want, got collect
	if err := NewDecoder(NewReader(bytes.NewReader(clean), "clean"), Options{}).Flow(&want); err != nil {
		t.Fatal(err)
	}
	d = NewDecoder(NewReader(bytes.NewReader(dirty), "dirty.tarmac"), Options{Lenient: true})
	if err := d.Flow(&got); err != nil {
		t.Fatal(err)
	}
	if d.Skipped() != 1 || len(d.Errors()) != 1 || !errors.As(d.Errors()[0], &se) || se.Line != at {
		t.Errorf("lenient: skipped %d, errors %v", d.Skipped(), d.Errors())
	}
	if flowSummary(got.evs) != flowSummary(want.evs) || len(want.evs) == 0 {
		t.Errorf("lenient flow differs from the clean file's")
	}
}

// TestTarmacCorpusFlow decodes every corpus trace strictly into the flow and
// checks that the instructions counted are the IT/IS records and ES
// instruction records of the file, and the traps its exception events
// (E records of core events other than resets and mode changes, ES EXC
// lines other than resets), as grep counts them.
func TestTarmacCorpusFlow(t *testing.T) {
	insts := regexp.MustCompile(`(?m) I[TS] \(\d+\) | ES +\([0-9a-f]+:[0-9a-f]+\) `)
	events := regexp.MustCompile(`(?m) E [0-9a-f]+ .*CoreEvent_\w+$| ES +EXC .*$`)
	notTraps := regexp.MustCompile(`(?i)ModeChange|Reset`)
	for _, name := range corpusTraces {
		t.Run(name, func(t *testing.T) {
			path := corpus.Path(t, filepath.Join("tarmac", name))
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			want := uint64(len(insts.FindAll(b, -1)))
			var c flow.Counter
			if err := NewDecoder(NewReader(bytes.NewReader(b), name), Options{}).Flow(&c); err != nil {
				t.Fatal(err)
			}
			if c.Instructions != want {
				t.Errorf("%d instructions in the flow, grep counts %d", c.Instructions, want)
			}
			var traps uint64
			for _, e := range events.FindAll(b, -1) {
				if !notTraps.Match(e) {
					traps++
				}
			}
			if c.Traps != traps {
				t.Errorf("%d traps in the flow, grep counts %d", c.Traps, traps)
			}
		})
	}
}

// TestTarmacSniff checks the format sniffing on the corpus traces (Arm
// Tarmac), on RISC-V Tarmac and on files that are not Tarmac.
func TestTarmacSniff(t *testing.T) {
	for _, name := range corpusTraces {
		b, err := os.ReadFile(corpus.Path(t, filepath.Join("tarmac", name)))
		if err != nil {
			t.Fatal(err)
		}
		if got := Sniff(bytes.NewReader(b)); !got.Tarmac || !got.Arm {
			t.Errorf("%s: %+v, want Arm Tarmac", name, got)
		}
	}
	riscv := "1 clk cpu0 IT (1) 0000000080000000 00000013 RV64 M : nop\n1 clk cpu0 R a0 0000000000000001\n"
	if got := Sniff(strings.NewReader(riscv)); !got.Tarmac || got.Arm {
		t.Errorf("RISC-V Tarmac: %+v", got)
	}
	for _, name := range []string{"LICENSE.txt", "README.md"} {
		b, err := os.ReadFile(corpus.Path(t, filepath.Join("tarmac", name)))
		if err != nil {
			t.Fatal(err)
		}
		if got := Sniff(bytes.NewReader(b)); got.Tarmac {
			t.Errorf("%s sniffed as Tarmac: %+v", name, got)
		}
	}
	bin := []byte{0x12, 0x00, 0xff, 0x80, '\n', 0x01, 0x02}
	if got := Sniff(bytes.NewReader(bin)); got.Tarmac {
		t.Errorf("binary sniffed as Tarmac: %+v", got)
	}
}

// TestTarmacCountRecords checks CountRecords' census against grep counts of
// the ES-style trace, where the ES tag has two kinds, and its lenient
// mode.
func TestTarmacCountRecords(t *testing.T) {
	path := corpus.Path(t, "tarmac/calculator-aarch64-es-ld-st-style.tarmac")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	grep := func(pat string) int { return len(regexp.MustCompile(`(?m)`+pat).FindAll(b, -1)) }
	c, err := CountRecords(NewReader(bytes.NewReader(b), path), false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, tc := range c.Counts {
		got[tc.Tag+" "+tc.Kind.String()] = tc.Records
	}
	want := map[string]int{
		"ES inst":      grep(` ES +\([0-9a-f]+:[0-9a-f]+\) `),
		"ES event":     grep(` ES +EXC `),
		"R reg":        grep(`^ +R `),
		"LD mem":       grep(`^ +LD `),
		"ST mem":       grep(`^ +ST `),
		"BR flow":      grep(`^ +BR `),
		"Tarmac other": grep(`^Tarmac Text`),
	}
	if fmt.Sprint(got) != fmt.Sprint(want) || c.Records != grep(`(?m)^.*\S.*$`) {
		t.Errorf("census %v (%d records), want %v", got, c.Records, want)
	}
	bad := append([]byte("nonsense\n"), b...)
	if _, err := CountRecords(NewReader(bytes.NewReader(bad), "bad"), false); err == nil || !strings.HasPrefix(err.Error(), "bad:1: ") {
		t.Errorf("strict census of a bad line: %v", err)
	}
	c, err = CountRecords(NewReader(bytes.NewReader(bad), "bad"), true)
	if err != nil || c.Skipped != 1 || len(c.Errors) != 1 || c.Records != grep(`(?m)^.*\S.*$`) {
		t.Errorf("lenient census: %v, %+v", err, c)
	}
}
