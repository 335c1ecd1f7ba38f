package paralleltest

import (
	"errors"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
)

// Diff finds a difference among the lines kept as text and among those
// folded, and a Log keeps no more than MaxLines lines.
func TestDiff(t *testing.T) {
	fill := func(n int, diffAt int) *Log {
		l := &Log{}
		for i := 0; i < n; i++ {
			e := flow.Event{Kind: flow.KindRange, Start: uint64(i), N: 1}
			if i == diffAt {
				e.N = 2
			}
			l.Event(&e)
		}
		return l
	}
	n := MaxLines + 100
	a := fill(n, -1)
	if len(a.Lines) != MaxLines || a.Rest() == "none" {
		t.Fatalf("%d lines kept, rest %s", len(a.Lines), a.Rest())
	}
	if d := Diff(a, fill(n, -1)); d != "" {
		t.Errorf("equal logs differ: %s", d)
	}
	for _, at := range []int{5, MaxLines + 50} {
		if d := Diff(a, fill(n, at)); d == "" {
			t.Errorf("a difference at line %d not found", at)
		}
	}
	if d := Diff(a, fill(n+1, -1)); d == "" {
		t.Error("a line more not found")
	}
	if d := Diff(fill(10, -1), fill(11, -1)); !strings.Contains(d, "output 10 of 10/11") {
		t.Errorf("a line more: %q", d)
	}
}

// A gap's error is recorded with its message and whether it is a
// *decode.Error; gaps and their suspect counts are summed.
func TestLogGap(t *testing.T) {
	l := &Log{}
	l.Event(&flow.Event{Kind: flow.KindGap, Suspect: 3, Err: &decode.Error{Offset: 7, Err: decode.ErrTruncated}})
	l.Event(&flow.Event{Kind: flow.KindGap, Suspect: 4, Err: errors.New("plain")})
	l.Message("sync", 7, 24)
	if l.Gaps != 2 || l.Suspect != 7 || len(l.Lines) != 3 {
		t.Fatalf("%d gaps, %d suspect, %d lines", l.Gaps, l.Suspect, len(l.Lines))
	}
	if strings.Contains(l.Lines[0], "not a *decode.Error") || !strings.Contains(l.Lines[1], "(not a *decode.Error) err=plain") ||
		l.Lines[2] != "message sync 7 24" {
		t.Errorf("lines %q", l.Lines)
	}
}
