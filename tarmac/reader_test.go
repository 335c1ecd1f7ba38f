package tarmac

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
)

func readAll(t *testing.T, path string) []Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := NewReader(f, path)
	var out []Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		c := *rec
		c.Disasm = append([]byte(nil), rec.Disasm...)
		c.Text = append([]byte(nil), rec.Text...)
		c.ValueText = append([]byte(nil), rec.ValueText...)
		out = append(out, c)
	}
}

// TestArmA64Sample parses the hand-written Fast Models style sample, which
// has every record kind of the specification's example (IT, R, MR/MW,
// E, CACHE, TTW, TLB) and the others (IS, FD/FI, MU, MR with attribute,
// SVE registers, signals, cache maintenance), and checks each record.
func TestArmA64Sample(t *testing.T) {
	recs := readAll(t, "testdata/arm-a64-fastmodel.tarmac")
	src, _ := os.ReadFile("testdata/arm-a64-fastmodel.tarmac")
	if n := strings.Count(string(src), "\n"); len(recs) != n {
		t.Fatalf("%d records for %d lines", len(recs), n)
	}
	count := map[string]int{}
	for _, r := range recs {
		if r.Tag == "" {
			t.Errorf("line %d: no tag: %s", r.Line, r.Text)
		}
		if !r.HasTime || r.CPU != "cpu0" || r.Scale != "clk" {
			t.Errorf("line %d: time %v cpu %q scale %q", r.Line, r.HasTime, r.CPU, r.Scale)
		}
		count[r.Kind.String()]++
	}
	want := map[string]int{"inst": 15, "flow": 5, "reg": 10, "mem": 5, "event": 4, "other": 7}
	for k, v := range want {
		if count[k] != v {
			t.Errorf("%d %s records, want %d", count[k], k, v)
		}
	}
	byLine := func(n int) Record {
		for _, r := range recs {
			if r.Line == n {
				return r
			}
		}
		t.Fatalf("no line %d", n)
		return Record{}
	}
	check := func(line int, f func(r Record) bool) {
		t.Helper()
		if r := byLine(line); !f(r) {
			t.Errorf("line %d parsed as %+v", line, r)
		}
	}
	check(2, func(r Record) bool {
		return r.Kind == KindEvent && r.EventNum == 1 && r.EventDesc == "CoreEvent_Reset" && r.Addr == 0x80000 && r.HasPAddr
	})
	check(4, func(r Record) bool { return r.Kind == KindReg && r.Reg == "TPIDRRO_EL0" && r.Value == 0 })
	check(5, func(r Record) bool {
		return r.Kind == KindInst && r.InstID == 1 && r.Addr == 0x80000 && r.PAddr == 0x80000 && r.NS &&
			r.Opcode == 0xd2800020 && r.OpcodeBytes == 4 && r.ISet == "O" && r.Mode == "EL3h_s" &&
			string(r.Disasm) == "MOV      x0,#1" && r.Executed
	})
	check(9, func(r Record) bool {
		return r.Kind == KindFlow && r.Tag == "FD" && r.Addr == 0x80004 && r.Target == 0x80014 && !r.Indirect
	})
	check(14, func(r Record) bool {
		return r.Kind == KindMem && !r.Write && r.Size == 8 && r.Addr == 0x80100 && r.Value == 0x2a
	})
	check(15, func(r Record) bool { return r.Reg == "X1" && r.Value == 0x2a })
	check(19, func(r Record) bool { return r.Kind == KindMem && r.Write && r.Size == 4 && r.Value == 0xdeadbeef })
	check(24, func(r Record) bool {
		return r.Kind == KindEvent && r.EventNum == 0x80 && r.EventDesc == "CoreEvent_CURRENT_SP0_SYNC" && r.Addr == 0x80028
	})
	check(28, func(r Record) bool {
		return r.Kind == KindMem && r.Write && r.Size == 8 && r.Attr == "ADD" && r.Value == 1
	})
	check(29, func(r Record) bool { return r.Kind == KindMem && r.Write && r.Attr == "X" && r.Value == 0xff })
	check(30, func(r Record) bool {
		return r.Kind == KindMem && !r.Write && r.Size == 1 && r.Attr == "T" && r.Value == 0x7f
	})
	check(32, func(r Record) bool { return r.Kind == KindEvent && r.EventMode == "EL1h_n" && r.EventNum == 0x19 })
	check(33, func(r Record) bool { return r.Kind == KindFlow && r.Indirect && r.Target == 0x80028 })
	check(34, func(r Record) bool { return r.Kind == KindInst && r.Tag == "IS" && !r.Executed })
	check(39, func(r Record) bool { return r.Kind == KindReg && r.Reg == "z31" && r.Wide && r.Value == 1 })
	check(40, func(r Record) bool { return r.Kind == KindReg && r.Reg == "p0" && r.Value == 0xffff })
	check(43, func(r Record) bool { return r.Kind == KindEvent && r.EventNum == 7 && r.EventDesc == "CoreEvent_IRQ" })
}

// TestArmES parses the ES/LD/ST style: continuation lines without a
// timestamp, BR records, LD/ST windows, CCFAIL and EXC lines.
func TestArmES(t *testing.T) {
	recs := readAll(t, "testdata/arm-a32-es-style.tarmac")
	if recs[0].Kind != KindOther || recs[1].Kind != KindEvent || recs[1].EventDesc != "Reset" {
		t.Errorf("header/reset: %+v %+v", recs[0], recs[1])
	}
	var st, ld *Record
	for i := range recs {
		r := &recs[i]
		if r.Tag == "ST" {
			st = r
		}
		if r.Tag == "LD" && ld == nil {
			ld = r
		}
		if r.Kind == KindInst && r.Addr == 0x801c && r.Executed {
			t.Error("CCFAIL instruction counted as executed")
		}
	}
	// PUSH {r11,lr} stores r11 at 0xffff0 and lr=0x8008 at 0xffff4.
	if st == nil || st.Addr != 0xffff8 || st.Size != 8 || st.Value != 0x0000800800000000 {
		t.Errorf("ST record: %+v", st)
	}
	if ld == nil || ld.Addr != 0x100000 || ld.Size != 1 || ld.Value != 0x3a {
		t.Errorf("LD record: %+v", ld)
	}
	for _, r := range recs {
		if r.Kind == KindInst && (r.Time != 0 || r.Scale != "tic" || r.Mode != "svc_s" || r.ISet != "A") {
			t.Errorf("line %d: %+v", r.Line, r)
		}
	}
}

// decodeFlow decodes a Tarmac file into flow events.
func decodeFlow(t *testing.T, path string) []flow.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var c collect
	if err := NewDecoder(NewReader(f, path), Options{}).Flow(&c); err != nil {
		t.Fatal(err)
	}
	return c.evs
}

type collect struct{ evs []flow.Event }

func (c *collect) Event(e *flow.Event) error { c.evs = append(c.evs, *e); return nil }
func (c *collect) Close() error              { return nil }

// ranges lists the ranges and traps of a flow as text.
func flowSummary(evs []flow.Event) string {
	var b strings.Builder
	for _, e := range evs {
		switch e.Kind {
		case flow.KindRange, flow.KindTrap:
			b.WriteString(e.String())
			b.WriteByte('\n')
		}
	}
	return b.String()
}

func TestArmA64Flow(t *testing.T) {
	got := flowSummary(decodeFlow(t, "testdata/arm-a64-fastmodel.tarmac"))
	want := `range 0x80000..0x80000 n=1 end=none next=0x80004
range 0x80004..0x80004 n=1 end=direct-call next=0x80014
range 0x80014..0x80014 n=1 end=none next=0x80018
range 0x80018..0x80018 n=1 end=none next=0x8001c
range 0x8001c..0x8001c n=1 end=taken next=0x80024
range 0x80024..0x80024 n=1 end=none
trap exception at 0x80028 handler=0x80400 cause=0x80 tval=0x0
range 0x80400..0x80400 n=1 end=none next=0x80404
range 0x80404..0x80404 n=1 end=trap-return next=0x80028
range 0x80028..0x80028 n=1 end=not-taken next=0x8002c
range 0x8002c..0x8002c n=1 end=return next=0x80008
range 0x80008..0x80008 n=1 end=none next=0x8000c
range 0x8000c..0x8000c n=1 end=direct-jump
trap interrupt at 0x80010 handler=0x80400 cause=0x7 tval=0x0
range 0x80400..0x80400 n=1 end=none next=0x80404
range 0x80404..0x80404 n=1 end=trap-return next=0x80010
range 0x80010..0x80010 n=1 end=none
`
	if got != want {
		t.Errorf("flow:\n%s\nwant:\n%s", got, want)
	}
}

func TestArmA32ESFlow(t *testing.T) {
	got := flowSummary(decodeFlow(t, "testdata/arm-a32-es-style.tarmac"))
	want := `range 0x8000..0x8004 n=2 end=direct-call next=0x8010
range 0x8010..0x801c n=4 end=not-taken next=0x8020
range 0x8020..0x8020 n=1 end=return next=0x8008
range 0x8008..0x8008 n=1 end=none
trap exception at 0x0 handler=0x8 cause=0x3 tval=0x0
range 0x8..0x8 n=1 end=return next=0x800c
range 0x800c..0x800c n=1 end=direct-jump
`
	if got != want {
		t.Errorf("flow:\n%s\nwant:\n%s", got, want)
	}
}

func TestArmT32NoCPUFlow(t *testing.T) {
	evs := decodeFlow(t, "testdata/arm-t32-no-cpu.tarmac")
	got := flowSummary(evs)
	want := `range 0x200..0x200 n=1 end=none next=0x202
range 0x202..0x202 n=1 end=direct-call next=0x208
range 0x208..0x208 n=1 end=return next=0x206
range 0x206..0x206 n=1 end=direct-jump next=0x206
range 0x206..0x206 n=1 end=direct-jump
`
	if got != want {
		t.Errorf("flow:\n%s\nwant:\n%s", got, want)
	}
	var times []uint64
	for _, e := range evs {
		if e.Kind == flow.KindTime {
			times = append(times, e.Time)
		}
	}
	if len(times) != 4 || times[3] != 400 {
		t.Errorf("times %v", times)
	}
}

func TestTarmacSyntaxErrors(t *testing.T) {
	bad := []string{
		"1 clk cpu0 IT (x) 0000 00000000 O EL3h_s : NOP",
		"1 clk cpu0 IT (1) zz 00000000 O EL3h_s : NOP",
		"1 clk cpu0 IT (1) 1000 123456789abc O EL3h_s : NOP",
		"1 clk cpu0 R X0",
		"1 clk cpu0 R X0 zz",
		"1 clk cpu0 MR4 1000",
		"1 clk cpu0 MR0 1000 00",
		"1 clk cpu0 FD (1) 1000",
		"1 clk cpu0 E",
		"LD 1000 ........",
		"99999999999999999999999 clk cpu0 IT (1) 1000 00000013 RV64 M : nop",
		// Lines that are no Tarmac record, and malformed fields of the
		// forms the strict reader added.
		"this is not a tarmac line",
		"1 clk cpu0 FOO 1234",
		"1 clk",
		"1.5.3 us R x0 1",
		"1 clk cpu0 R X0 0000000000000001 junk",
		"1 clk cpu0 R X0<12:0> 0001",
		"1 clk cpu0 MR4 1000 00000001 00000002",
		"1 clk cpu0 MR4 1000 (BROKEN)",
		"1 clk cpu0 IT (1) 1000 00000013 Q M : nop",
		"1 clk cpu0 IT (1) 1000 00000013 RV64 M nop",
		"1 clk cpu0 E 1000 zz CoreEvent_X",
		"1 clk cpu0 E 1000 00000001 Core-Event",
		"1 clk cpu0 ES (1000:zzzz) A svc: MOV r0,r0",
		"BR (xyz) A",
		"ST 1000 00000000 00000000",
		"LD 1000 ........ ........ ........ ....zz..",
	}
	for _, line := range bad {
		r := NewReader(strings.NewReader("0 clk cpu0 R X0 0\n"+line+"\n"), "bad.tarmac")
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		_, err := r.Next()
		var se *SyntaxError
		if !errors.As(err, &se) || se.Line != 2 || se.File != "bad.tarmac" || !strings.HasPrefix(err.Error(), "bad.tarmac:2: ") {
			t.Errorf("%q: error %v, want a SyntaxError at bad.tarmac:2", line, err)
		}
		// reading goes on after the bad line
		if _, err := r.Next(); err != io.EOF {
			t.Errorf("%q: after the error: %v", line, err)
		}
	}
	// A Decoder stops at the first error unless Lenient.
	in := "1 clk cpu0 IT (1) 00001000 00000013 RV64 M : nop\n1 clk cpu0 R a0 zz\n2 clk cpu0 IT (2) 00001004 00000013 RV64 M : nop\n"
	d := NewDecoder(NewReader(strings.NewReader(in), "x.tarmac"), Options{})
	if err := d.Flow(&collect{}); err == nil || !strings.Contains(err.Error(), "x.tarmac:2") {
		t.Errorf("strict decoder: %v", err)
	}
	d = NewDecoder(NewReader(strings.NewReader(in), "x.tarmac"), Options{Lenient: true})
	var c collect
	if err := d.Flow(&c); err != nil || d.Skipped() != 1 {
		t.Errorf("lenient decoder: %v, skipped %d", err, d.Skipped())
	}
	if s := flowSummary(c.evs); s != "range 0x1000..0x1000 n=1 end=none next=0x1004\nrange 0x1004..0x1004 n=1 end=none\n" {
		t.Errorf("lenient flow: %s", s)
	}
}

func TestMultiCPU(t *testing.T) {
	in := `1 clk cpu0 IT (1) 00001000 00000013 RV64 M : nop
1 clk cpu1 IT (1) 00002000 00000013 RV64 S : nop
2 clk cpu0 IT (2) 00001004 0000006f RV64 M : j 0x1004
2 clk cpu1 IT (2) 00002004 00000013 RV64 S : nop
`
	d := NewDecoder(NewReader(strings.NewReader(in), "mc"), Options{})
	var got []string
	for {
		b, err := d.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d %s %s %x %d", d.Src(), b.Priv, b.IType, b.IAddr, b.IRetire))
	}
	want := "0 M none 1000 2|0 M direct-jump 1004 2|1 S none 2000 2|1 S none 2004 2"
	if strings.Join(got, "|") != want {
		t.Errorf("blocks %v, want %s", got, want)
	}
}
