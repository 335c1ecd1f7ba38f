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

// Done prints a final report if any report was printed, ending the line.
func (p *Progress) Done() {
	if p.printed {
		p.report(time.Now(), true)
	}
}

func (p *Progress) report(now time.Time, final bool) {
	el := now.Sub(p.start).Seconds()
	n := p.n.Load()
	rate := float64(n) / el
	s := fmt.Sprintf("%s: %s", p.Name, byteSize(n))
	if p.Total > 0 {
		s += fmt.Sprintf(" of %s (%.0f%%)", byteSize(p.Total), 100*float64(n)/float64(p.Total))
	}
	s += fmt.Sprintf(", %s/s", byteSize(int64(rate)))
	if p.Count != nil {
		c := p.Count()
		s += fmt.Sprintf(", %d %s (%.1f M/s)", c, p.Unit, float64(c)/el/1e6)
	}
	if p.Total > 0 && rate > 0 && !final {
		left := time.Duration(float64(p.Total-n) / rate * float64(time.Second)).Round(time.Second)
		s += fmt.Sprintf(", ETA %s", left)
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
