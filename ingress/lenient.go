package ingress

import "fmt"

// LineError is a malformed line of a text input (PC list, PCSEQ, ingress
// CSV, spike CSV): the file, the line number (1-based) and why.
type LineError struct {
	File   string
	Line   int
	Reason string
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason) }

// Skipper is implemented by the text readers: in lenient mode
// (PCOptions.Lenient, CSVOptions.Lenient) they skip malformed lines
// instead of failing on the first, and count them.
type Skipper interface {
	// Skipped returns the number of malformed lines skipped so far.
	Skipped() uint64
	// FirstSkipped returns the first few of them (at most
	// MaxSkippedKept).
	FirstSkipped() []*LineError
}

// MaxSkippedKept is how many skipped lines a reader keeps for its report.
const MaxSkippedKept = 5

// skipper decides what a malformed line does: an error, or in lenient
// mode a count.
type skipper struct {
	lenient bool
	n       uint64
	first   []*LineError
}

// bad reports a malformed line: it returns the error, or nil when the
// line is skipped (lenient).
func (s *skipper) bad(file string, line int, format string, args ...any) error {
	e := &LineError{File: file, Line: line, Reason: fmt.Sprintf(format, args...)}
	if !s.lenient {
		return e
	}
	s.n++
	if len(s.first) < MaxSkippedKept {
		s.first = append(s.first, e)
	}
	return nil
}

// Skipped returns the number of malformed lines skipped.
func (s *skipper) Skipped() uint64 { return s.n }

// FirstSkipped returns the first malformed lines skipped.
func (s *skipper) FirstSkipped() []*LineError { return s.first }
