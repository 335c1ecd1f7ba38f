package analysis

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
)

// frameName is a function's name as a stack frame of folded output
// ([unknown] with its addresses): spaces and semicolons, which the
// format uses, are replaced.
func frameName(p *Profile, f *Function) string {
	n := p.FuncLabel(f)
	if strings.ContainsAny(n, " ;") {
		n = strings.NewReplacer(" ", "_", ";", ":").Replace(n)
	}
	return n
}

// WriteFolded writes the call stacks in the folded format of Brendan
// Gregg's stackcollapse scripts, which flamegraph.pl and speedscope read:
// one line per distinct stack, outermost frame first, frames separated by
// semicolons, then a space and the number of instructions executed with
// exactly that stack (or the cycles, when cycles is set). The counts add
// up to the profile's instructions (or cycles).
func WriteFolded(w io.Writer, p *Profile, cycles bool) error {
	p.Close()
	bw := bufio.NewWriter(w)
	var path []string
	var line []byte
	walkTree(p.root, func(n *Node, enter bool) {
		if n.Func == nil {
			return
		}
		if !enter {
			path = path[:len(path)-1]
			return
		}
		path = append(path, frameName(p, n.Func))
		v := n.Self
		if cycles {
			v = n.SelfCycles
		}
		if v == 0 {
			return
		}
		line = line[:0]
		for i, s := range path {
			if i > 0 {
				line = append(line, ';')
			}
			line = append(line, s...)
		}
		line = append(line, ' ')
		line = strconv.AppendUint(line, v, 10)
		line = append(line, '\n')
		bw.Write(line)
	})
	return bw.Flush()
}

// ChromeOptions configure a Chrome trace-event writer.
type ChromeOptions struct {
	// MinInsts drops activations that executed fewer instructions
	// (including callees), to keep huge traces loadable; 0 keeps all
	// (but those of no instruction, which are always dropped).
	MinInsts uint64
	// UseTime places spans by the flow's timestamps (for activations that
	// began after the first timestamp) instead of by instructions
	// executed; TimeUnitsPerMicrosecond converts time units to the
	// format's microseconds (0 means 1). By default one instruction is
	// shown as one microsecond, and the times go in the span's args.
	UseTime                 bool
	TimeUnitsPerMicrosecond float64
}

// Chrome is a flow.Sink that writes function activations as Chrome
// trace-event JSON ("X" complete events) as the flow goes, for Perfetto
// (ui.perfetto.dev), chrome://tracing and speedscope. It keeps only the
// open call stack in memory.
//
// Time: the format's timestamps are microseconds; rvtrace writes one
// instruction executed (by the span's hart) as one microsecond unless
// ChromeOptions.UseTime places spans by the flow's timestamps. The
// document says so in its "otherData" ("time_unit"), and its
// "displayTimeUnit" is "ns", so that viewers show one instruction as
// 1,000 ns, the unit of the Perfetto protobuf (Perfetto). Tracks: one per
// hart and privilege level (thread "hart N (S)"; "hart N" when the flow
// reports no privilege level), thread ID 8*hart + level (7 when unknown).
// Activations of no instruction (a function entered and left at once, as
// when a jump lands on a symbol boundary) are left out: they would show
// as zero-length spans that confuse viewers.
type Chrome struct {
	*Profile
	w      *bufio.Writer
	opt    ChromeOptions
	first  bool
	err    error
	closer io.Closer
	tracks map[uint32]bool
	buf    []byte
}

// NewChrome returns a Chrome writer to w for a flow over img (which may
// be nil); popt configures its Profile (its OnSpan is replaced).
func NewChrome(w io.Writer, img *image.Set, popt Options, opt ChromeOptions) *Chrome {
	c := &Chrome{w: bufio.NewWriterSize(w, 256<<10), opt: opt, first: true, tracks: map[uint32]bool{}}
	popt.OnSpan = c.span
	c.Profile = New(img, popt)
	unit := "1 us = 1 instruction executed by the hart"
	if opt.UseTime {
		per := opt.TimeUnitsPerMicrosecond
		if per <= 0 {
			per = 1
		}
		unit = "1 us = " + strconv.FormatFloat(per, 'g', -1, 64) + " time units of the trace's timestamps (spans before the first timestamp: 1 us = 1 instruction)"
	}
	c.w.WriteString(`{"displayTimeUnit":"ns","otherData":{"time_unit":` + strconv.Quote(unit) + `},"traceEvents":[` + "\n")
	return c
}

// SetCloser makes Close also close cl (the output file).
func (c *Chrome) SetCloser(cl io.Closer) { c.closer = cl }

// TrackID returns the track (thread ID) of a span: one per hart and
// privilege level.
func TrackID(s *Span) uint32 {
	lvl := uint32(7)
	if s.PrivKnown {
		lvl = uint32(s.Priv) & 7
	}
	return s.Src<<3 | lvl
}

// TrackName names the track of a span: "hart N (LEVEL)", or "hart N"
// when the privilege level is not known.
func TrackName(s *Span) string {
	if s.PrivKnown {
		return fmt.Sprintf("hart %d (%s)", s.Src, s.Priv)
	}
	return fmt.Sprintf("hart %d", s.Src)
}

func (c *Chrome) span(s *Span) {
	if s.Insts == 0 || s.Insts < c.opt.MinInsts || c.err != nil {
		return
	}
	tid := TrackID(s)
	if !c.tracks[tid] {
		c.tracks[tid] = true
		c.sep()
		fmt.Fprintf(c.w, `{"name":"thread_name","ph":"M","pid":1,"tid":%d,"args":{"name":%q}},`+"\n", tid, TrackName(s))
		fmt.Fprintf(c.w, `{"name":"thread_sort_index","ph":"M","pid":1,"tid":%d,"args":{"sort_index":%d}}`, tid, tid)
	}
	scale := 1.0
	begin, end := s.Begin, s.End
	if c.opt.UseTime && s.Timed {
		begin, end = s.BeginTime, s.EndTime
		if c.opt.TimeUnitsPerMicrosecond > 0 {
			scale = 1 / c.opt.TimeUnitsPerMicrosecond
		}
	}
	c.sep()
	b := c.buf[:0]
	b = append(b, `{"name":`...)
	b = strconv.AppendQuote(b, s.Label())
	b = append(b, `,"cat":"function","ph":"X","pid":1,"tid":`...)
	b = strconv.AppendUint(b, uint64(tid), 10)
	b = append(b, `,"ts":`...)
	b = strconv.AppendFloat(b, float64(begin)*scale, 'f', -1, 64)
	b = append(b, `,"dur":`...)
	b = strconv.AppendFloat(b, float64(end-begin)*scale, 'f', -1, 64)
	b = append(b, `,"args":{"instructions":`...)
	b = strconv.AppendUint(b, s.Insts, 10)
	if s.Timed {
		b = append(b, `,"time":`...)
		b = strconv.AppendUint(b, s.BeginTime, 10)
		b = append(b, `,"cycles":`...)
		b = strconv.AppendUint(b, s.EndTime-s.BeginTime, 10)
	}
	b = append(b, `,"depth":`...)
	b = strconv.AppendInt(b, int64(s.Depth), 10)
	b = append(b, "}}"...)
	c.buf = b
	_, c.err = c.w.Write(b)
}

func (c *Chrome) sep() {
	if !c.first {
		c.w.WriteString(",\n")
	}
	c.first = false
}

// Event adds a flow event.
func (c *Chrome) Event(e *flow.Event) error {
	if c.err != nil {
		return c.err
	}
	return c.Profile.Event(e)
}

// Close ends the open activations and finishes the JSON document.
func (c *Chrome) Close() error {
	c.Profile.Close()
	c.w.WriteString("\n]}\n")
	err := c.err
	if e := c.w.Flush(); err == nil {
		err = e
	}
	if c.closer != nil {
		if e := c.closer.Close(); err == nil {
			err = e
		}
	}
	return err
}
