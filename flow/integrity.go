package flow

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rvtrace/rvtrace/decode"
)

// DefaultFirstGaps is how many gaps (and warnings) an Integrity keeps in
// full when MaxFirst is 0.
const DefaultFirstGaps = 5

// Integrity is a sink that tallies what a reader of a decoded flow needs
// to know to trust it: how many instructions were decoded, how many gaps
// interrupted the flow, how many instructions before those gaps are
// suspect, how many gaps are trace the encoder or the capture lost, and
// the first gaps and warnings in full. It is the "right or flagged" check
// of every rvtrace command: a flow is clean when it has no gap.
//
// Put it in front of (or next to) the other sinks, for example
// flow.Multi(out, &integ). It passes nothing on; Close does nothing.
type Integrity struct {
	// Instructions is the number of instructions in the ranges seen.
	Instructions uint64
	// Gaps is the number of gap events.
	Gaps uint64
	// Suspect is the sum of the gaps' Suspect counts: instructions emitted
	// before a gap, since the last point known good, that may be wrong.
	Suspect uint64
	// Lost is the number of gaps where trace is missing from the capture
	// rather than undecodable: the encoder reported lost trace
	// (decode.ErrOverflow) or the capture ends early (decode.ErrTruncated).
	Lost uint64
	// Warnings is the number of warning events.
	Warnings uint64
	// FirstGaps and FirstWarnings hold copies of the first MaxFirst gap
	// and warning events, in flow order.
	FirstGaps, FirstWarnings []Event
	// MaxFirst bounds FirstGaps and FirstWarnings (DefaultFirstGaps when
	// 0, none when negative).
	MaxFirst int
}

func (g *Integrity) max() int {
	if g.MaxFirst == 0 {
		return DefaultFirstGaps
	}
	return g.MaxFirst
}

// Event tallies e.
func (g *Integrity) Event(e *Event) error {
	switch e.Kind {
	case KindRange:
		g.Instructions += e.N
	case KindGap:
		g.Gaps++
		g.Suspect += e.Suspect
		if errors.Is(e.Err, decode.ErrOverflow) || errors.Is(e.Err, decode.ErrTruncated) {
			g.Lost++
		}
		if len(g.FirstGaps) < g.max() {
			g.FirstGaps = append(g.FirstGaps, *e)
		}
	case KindWarn:
		g.Warnings++
		if len(g.FirstWarnings) < g.max() {
			g.FirstWarnings = append(g.FirstWarnings, *e)
		}
	}
	return nil
}

// TalliesRanges reports true: an Integrity is a RangeTally.
func (g *Integrity) TalliesRanges() bool { return true }

// TallyRanges counts the instructions of n range events.
func (g *Integrity) TallyRanges(n, ins uint64) { g.Instructions += ins }

// Close does nothing.
func (g *Integrity) Close() error { return nil }

// Clean reports whether the flow had no gap: every instruction in it is
// one the program executed, in order.
func (g *Integrity) Clean() bool { return g.Gaps == 0 }

// Summary returns the one-line summary of the tally, without a trailing
// newline: "N instructions, G gaps, S suspect instructions, L lost spans"
// (and warnings when there were some). withheld words the suspect count
// for a flow that went through Strict.
func (g *Integrity) Summary(withheld bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d instructions, %d %s", g.Instructions, g.Gaps, plural(g.Gaps, "gap", "gaps"))
	fmt.Fprintf(&b, ", %d suspect %s", g.Suspect, plural(g.Suspect, "instruction", "instructions"))
	if withheld {
		b.WriteString(" withheld")
	}
	fmt.Fprintf(&b, ", %d lost %s", g.Lost, plural(g.Lost, "span", "spans"))
	if g.Warnings > 0 {
		fmt.Fprintf(&b, ", %d %s", g.Warnings, plural(g.Warnings, "warning", "warnings"))
	}
	return b.String()
}

func plural(n uint64, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Details returns one line per gap and warning kept in FirstGaps and
// FirstWarnings (see DescribeGap), and a last line saying how many more
// there were, each without a trailing newline.
func (g *Integrity) Details() []string {
	var out []string
	for i := range g.FirstGaps {
		out = append(out, DescribeGap(&g.FirstGaps[i]))
	}
	if n := g.Gaps - uint64(len(g.FirstGaps)); n > 0 {
		out = append(out, fmt.Sprintf("... and %d more %s", n, plural(n, "gap", "gaps")))
	}
	for i := range g.FirstWarnings {
		out = append(out, DescribeGap(&g.FirstWarnings[i]))
	}
	if n := g.Warnings - uint64(len(g.FirstWarnings)); n > 0 {
		out = append(out, fmt.Sprintf("... and %d more %s", n, plural(n, "warning", "warnings")))
	}
	return out
}

// DescribeGap renders a gap or warning event on one line: "gap at byte N
// (message I): reason", with the number of suspect instructions when the
// gap has some, and "warning at byte N ..." for a warning. The reason is
// the cause carried by the event's *decode.Error (its position is already
// in the line), or the whole error when it is of another type.
func DescribeGap(e *Event) string {
	var b strings.Builder
	if e.Kind == KindWarn {
		b.WriteString("warning")
	} else {
		b.WriteString("gap")
	}
	if e.Offset >= 0 {
		fmt.Fprintf(&b, " at byte %d", e.Offset)
	}
	if e.Index >= 0 {
		fmt.Fprintf(&b, " (message %d)", e.Index)
	}
	b.WriteString(": ")
	b.WriteString(GapReason(e.Err))
	switch {
	case e.Suspect == 1:
		b.WriteString("; the instruction before it is suspect")
	case e.Suspect > 1:
		fmt.Fprintf(&b, "; the %d instructions before it are suspect", e.Suspect)
	}
	return b.String()
}

// GapReason returns the cause of a gap or warning error without its
// position: for a *decode.Error its What, cause and Expected; otherwise
// the error's text ("unknown" when err is nil).
func GapReason(err error) string {
	if err == nil {
		return "unknown"
	}
	var de *decode.Error
	if !errors.As(err, &de) {
		return err.Error()
	}
	var b strings.Builder
	if de.What != "" {
		b.WriteString(de.What)
		b.WriteString(": ")
	}
	if de.Err != nil {
		b.WriteString(de.Err.Error())
	} else {
		b.WriteString("decode error")
	}
	if de.Expected != "" {
		fmt.Fprintf(&b, " (expected %s)", de.Expected)
	}
	return b.String()
}
