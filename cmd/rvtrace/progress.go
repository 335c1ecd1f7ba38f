package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/rvtrace/rvtrace/analysis"
)

// progressFlag is the value of --progress: auto (the default: on when
// standard error is a terminal), or a boolean. A bare --progress forces it
// on, --progress=false turns it off ("on" and "off" are taken too).
type progressFlag struct{ mode string }

func (p *progressFlag) String() string {
	if p == nil || p.mode == "" {
		return "auto"
	}
	return p.mode
}

func (p *progressFlag) Set(s string) error {
	switch s {
	case "auto":
		p.mode = s
		return nil
	case "on", "yes":
		p.mode = "true"
		return nil
	case "off", "no":
		p.mode = "false"
		return nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return fmt.Errorf("want auto, true or false")
	}
	p.mode = strconv.FormatBool(v)
	return nil
}

func (p *progressFlag) IsBoolFlag() bool { return true }

// on reports whether progress is shown.
func (p *progressFlag) on() bool { return showProgress(p.String()) }

// progressFlags registers --progress on fs.
func progressFlags(fs *flag.FlagSet) *progressFlag {
	p := &progressFlag{mode: "auto"}
	fs.Var(p, "progress", "progress with rate and ETA on stderr, every second once the command has run 2 s: "+
		"on by default when stderr is a terminal; --progress forces it, --progress=false turns it off")
	return p
}

// showProgress tells whether a --progress mode shows progress: always
// for true, never for false, and for auto when standard error is a
// terminal (a character device) that the command writes to.
func showProgress(mode string) bool {
	switch mode {
	case "on", "yes", "true":
		return true
	case "off", "no", "false":
		return false
	}
	st, err := os.Stderr.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0 && stderr == io.Writer(os.Stderr)
}

// The delay before the first progress report and the interval between
// reports (tests shorten them).
var (
	progressDelay    = 2 * time.Second
	progressInterval = time.Second
)

// newProgress returns a progress reporter on standard error for reading
// r, the input called name of total bytes (0 when unknown).
func newProgress(r io.Reader, name string, total int64) *analysis.Progress {
	p := analysis.NewProgress(r, stderr, name, total)
	p.Delay, p.Interval = progressDelay, progressInterval
	return p
}

// fileSize returns the size of a regular file (0 for anything else).
func fileSize(name string) int64 {
	if st, err := os.Stat(name); err == nil && st.Mode().IsRegular() {
		return st.Size()
	}
	return 0
}

// countProgress reports a count that another goroutine advances (count
// must be safe to call concurrently): name, the count in unit with its
// rate and, when total is not 0, the percentage and the time left. It
// polls from its own goroutine; stop ends it and prints the final line
// when a report was printed.
func countProgress(name string, count func() uint64, unit string, total uint64) (stop func()) {
	p := newProgress(nil, name, 0)
	p.Count, p.Unit, p.CountTotal = count, unit, total
	p.Poll() // starts the clock
	tick := max(progressInterval/4, 10*time.Millisecond)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				p.Poll()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			p.Done()
		})
	}
}

// syncWriter serializes the writes to w of several goroutines.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
