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
	// nothing outside the symbols: the plain name, no span
	q := New(nil, Options{FixedInstSize: 4})
	feed(t, q, nil)
	if _, _, ok := q.UnknownSpan(); ok || q.UnknownLabel() != "[unknown]" {
		t.Errorf("empty profile: %v %q", ok, q.UnknownLabel())
	}
}
