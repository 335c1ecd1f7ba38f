// Package paralleltest holds what the tests of the protocols' parallel
// decodes (package decode/parallel) share: Log, a sink that records
// everything a decode produces as text in bounded memory, and Diff, which
// compares a serial decode's log with a parallel one's; Timed, an image
// whose code is reloaded at instruction counts; and Bound, which checks
// that a split's pieces tile the trace within a bound of bytes.
package paralleltest

import (
	"errors"
	"fmt"
	"hash"
	"hash/fnv"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
)

// MaxLines is how many lines a Log keeps as text; it folds the rest into
// a count and a hash. A few corrupted bytes can describe billions of
// ranges (a repeat count, an instruction count, a branch count), far more
// than memory holds as text.
const MaxLines = 1 << 16

// Log is a flow.Sink and flow.MessageObserver that records every event
// and message observation of a decode as a line of text (an event's error
// by its message, and whether it is a *decode.Error).
type Log struct {
	// Lines holds the first MaxLines lines.
	Lines []string
	// Gaps counts the gap events, Suspect sums their Suspect counts.
	Gaps    int
	Suspect uint64
	more    int         // lines after the first MaxLines
	hash    hash.Hash64 // of those lines
}

// add records line s.
func (l *Log) add(s string) {
	if len(l.Lines) < MaxLines {
		l.Lines = append(l.Lines, s)
		return
	}
	if l.hash == nil {
		l.hash = fnv.New64a()
	}
	l.more++
	l.hash.Write([]byte(s))
	l.hash.Write([]byte{'\n'})
}

// Event records e.
func (l *Log) Event(e *flow.Event) error {
	c := *e
	c.Err = nil
	s := fmt.Sprintf("%+v", c)
	if e.Err != nil {
		var de *decode.Error
		if !errors.As(e.Err, &de) {
			s += " (not a *decode.Error)"
		}
		s += " err=" + e.Err.Error()
	}
	if e.Kind == flow.KindGap {
		l.Gaps++
		l.Suspect += e.Suspect
	}
	l.add(s)
	return nil
}

// Message records a message observation.
func (l *Log) Message(kind string, offset int64, bits int) {
	l.add(fmt.Sprintf("message %s %d %d", kind, offset, bits))
}

// Close does nothing.
func (l *Log) Close() error { return nil }

// Rest describes the lines folded after the first MaxLines.
func (l *Log) Rest() string {
	if l.hash == nil {
		return "none"
	}
	return fmt.Sprintf("%d lines, hash %x", l.more, l.hash.Sum64())
}

// Diff returns "" when serial and jobs recorded the same lines, else
// where they first differ.
func Diff(serial, jobs *Log) string {
	a, b := serial.Lines, jobs.Lines
	for i := 0; i < max(len(a), len(b)); i++ {
		var x, y string
		if i < len(a) {
			x = a[i]
		}
		if i < len(b) {
			y = b[i]
		}
		if x != y {
			return fmt.Sprintf("output %d of %d/%d differs:\nserial %s\njobs   %s", i, len(a), len(b), x, y)
		}
	}
	if serial.Rest() != jobs.Rest() {
		return fmt.Sprintf("the lines after the first %d differ: serial %s, jobs %s", MaxLines, serial.Rest(), jobs.Rest())
	}
	return ""
}
