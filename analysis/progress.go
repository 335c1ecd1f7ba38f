package analysis

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// Progress is an io.Reader that reports how far reading has got on a
// writer (standard error) while a long run goes: bytes read, rate, and
// when the total size is known the percentage and the estimated time
// left. It reports at most once per Interval, and only once the run has
// taken longer than Delay, so short runs print nothing.
//
// A run that reads no input (a simulation) leaves R nil, sets Count and
// calls Poll periodically instead of reading: the reports then show the
// count, its rate and, when CountTotal is known, the percentage and the
// estimated time left.
type Progress struct {
	R        io.Reader
	W        io.Writer
	Name     string
	Total    int64 // input size in bytes; 0 when unknown
	Interval time.Duration
	Delay    time.Duration
	// Count, when set, is read at each report: a count of items done
	// (instructions) shown with its rate.
	Count func() uint64
	Unit  string // name of what Count counts ("instructions")
	// CountTotal is the count the run will reach (0 when unknown); with
	// no Total it gives the percentage and the time left.
	CountTotal uint64

	n       atomic.Int64
	start   time.Time
	last    time.Time
	printed bool
}

// NewProgress returns a Progress reading r, named name (the file), of
// total bytes (0 when unknown), reporting to w every second after the
// first two seconds.
func NewProgress(r io.Reader, w io.Writer, name string, total int64) *Progress {
	return &Progress{R: r, W: w, Name: name, Total: total, Interval: time.Second, Delay: 2 * time.Second}
}

// Read reads from the underlying reader and reports when due.
func (p *Progress) Read(b []byte) (int, error) {
	n, err := p.R.Read(b)
	p.n.Add(int64(n))
	now := time.Now()
	if p.start.IsZero() {
		p.start, p.last = now, now
	}
	if now.Sub(p.start) >= p.Delay && now.Sub(p.last) >= p.Interval {
		p.last = now
		p.report(now, false)
	}
	return n, err
}

// Poll reports when due, for runs that read no input through the
// Progress (call it periodically, from one goroutine at a time).
func (p *Progress) Poll() {
	now := time.Now()
	if p.start.IsZero() {
		p.start, p.last = now, now
	}
	if now.Sub(p.start) >= p.Delay && now.Sub(p.last) >= p.Interval {
		p.last = now
		p.report(now, false)
	}
}

// Done prints a final report if any report was printed, ending the line.
func (p *Progress) Done() {
	if p.printed {
		p.report(time.Now(), true)
	}
}

func (p *Progress) report(now time.Time, final bool) {
	el := now.Sub(p.start).Seconds()
	if el <= 0 {
		el = 1e-9
	}
	n := p.n.Load()
	rate := float64(n) / el
	s := p.Name + ":"
	if p.R != nil {
		s += " " + byteSize(n)
		if p.Total > 0 {
			s += fmt.Sprintf(" of %s (%.0f%%)", byteSize(p.Total), 100*float64(n)/float64(p.Total))
		}
		s += fmt.Sprintf(", %s/s", byteSize(int64(rate)))
	}
	var c uint64
	if p.Count != nil {
		c = p.Count()
		if p.R != nil {
			s += ","
		}
		s += fmt.Sprintf(" %d %s", c, p.Unit)
		if p.R == nil && p.CountTotal > 0 {
			s += fmt.Sprintf(" of %d (%.0f%%)", p.CountTotal, 100*float64(c)/float64(p.CountTotal))
		}
		s += fmt.Sprintf(" (%.1f M/s)", float64(c)/el/1e6)
	}
	if !final {
		switch {
		case p.R != nil && p.Total > 0 && rate > 0:
			left := time.Duration(float64(p.Total-n) / rate * float64(time.Second)).Round(time.Second)
			s += fmt.Sprintf(", ETA %s", left)
		case p.R == nil && p.CountTotal > 0 && c > 0 && c <= p.CountTotal:
			left := time.Duration(float64(p.CountTotal-c) / (float64(c) / el) * float64(time.Second)).Round(time.Second)
			s += fmt.Sprintf(", ETA %s", left)
		}
	}
	if final {
		s += fmt.Sprintf(", %s", time.Duration(el*float64(time.Second)).Round(time.Millisecond))
	}
	end := "\r"
	if final {
		end = "\n"
	}
	fmt.Fprintf(p.W, "\r%-79s%s", s, end)
	p.printed = true
}

func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
