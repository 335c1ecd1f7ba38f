package analysis

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/ingress"
)

// The [unknown] row of the profiles says which addresses it stands for.
func TestUnknownSpan(t *testing.T) {
	p := New(nil, Options{FixedInstSize: 4})
	feed(t, p, []flow.Event{
		{Kind: flow.KindRange, Start: 0x2000, Last: 0x200c, N: 4, End: ingress.ITypeNone},
		{Kind: flow.KindRange, Start: 0x1000, Last: 0x1004, N: 2, End: ingress.ITypeNone},
	})
	lo, hi, ok := p.UnknownSpan()
	if !ok || lo != 0x1000 || hi != 0x200c {
		t.Fatalf("span %#x-%#x %v, want 0x1000-0x200c", lo, hi, ok)
	}
	var b bytes.Buffer
	if err := WriteText(&b, p, TextOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "  [unknown] 0x1000-0x200c\n") {
		t.Errorf("text profile lacks the span:\n%s", b.String())
	}
	b.Reset()
	if err := WriteHTML(&b, p, ReportOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `<td class="l">[unknown] 0x1000-0x200c</td>`) {
		t.Errorf("HTML report lacks the span")
	}
	if !strings.Contains(b.String(), `[unknown] 0x1000-0x200c:`) {
		t.Errorf("HTML flame graph lacks the span")
	}
	b.Reset()
	WriteTree(&b, p, 0)
	if !strings.Contains(b.String(), "  [unknown] 0x1000-0x200c\n") {
		t.Errorf("call tree lacks the span:\n%s", b.String())
	}
	b.Reset()
	if err := WriteFolded(&b, p, false); err != nil {
		t.Fatal(err)
	}
	if b.String() != "[unknown]_0x1000-0x200c 6\n" {
		t.Errorf("folded %q, want the span as the frame", b.String())
	}
	pp := PprofProfile(p)
	for _, f := range pp.Function {
		if f.Name != "[unknown] 0x1000-0x200c" {
			t.Errorf("pprof function %q", f.Name)
		}
	}
	// The timelines: each activation with its own addresses (Chrome),
	// its first address (Perfetto, which names a slice at its start).
	evs := []flow.Event{
		{Kind: flow.KindRange, Start: 0x2000, Last: 0x200c, N: 4, End: ingress.ITypeDirectCall, Target: 0x3000, HasTarget: true},
		{Kind: flow.KindRange, Start: 0x3000, Last: 0x3004, N: 2, End: ingress.ITypeReturn, Target: 0x2010, HasTarget: true},
		{Kind: flow.KindRange, Start: 0x2010, Last: 0x2010, N: 1, End: ingress.ITypeNone},
	}
	b.Reset()
	feed(t, NewChrome(&b, nil, Options{FixedInstSize: 4}, ChromeOptions{}), evs)
	for _, want := range []string{`"name":"[unknown] 0x3000-0x3004"`, `"name":"[unknown] 0x2000-0x2010"`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Chrome JSON lacks %s:\n%s", want, b.String())
		}
	}
	b.Reset()
	feed(t, NewPerfetto(&b, nil, Options{FixedInstSize: 4}, PerfettoOptions{}), evs)
	for _, want := range []string{"[unknown] 0x3000", "[unknown] 0x2000"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("Perfetto trace lacks %s", want)
		}
	}
	// nothing outside the symbols: the plain name, no span
	q := New(nil, Options{FixedInstSize: 4})
	feed(t, q, nil)
	if _, _, ok := q.UnknownSpan(); ok || q.UnknownLabel() != "[unknown]" {
		t.Errorf("empty profile: %v %q", ok, q.UnknownLabel())
	}
}
