package main

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/image"
	tproto "github.com/rvtrace/rvtrace/protocol"
)

// Framing detection (decode, script, profile, report). A trace's framing
// is what a decoder must know before it can read a message or packet at
// all: the SRC field of N-Trace messages, the encapsulation of E-Trace
// packets (raw, or UTDD with its source ID field, type field and
// timestamp) and the source IDs of an E-Trace data trace. A trace of the
// trace system (rvtrace run --trace-system, --trace-capture, or a RAM sink
// read back by a debugger) is framed otherwise than a decoder's defaults.
// When the command line gives none of a protocol's framing options
// (framingFlags), the decode tries the framings the start of the trace may
// have (protocol.ChooseFraming: the program followed without a gap, the
// most instructions) and decodes with the one that reads it best, saying
// so on stderr in one line that gives the options that fix it. The
// default framing is said nothing of: a raw E-Trace trace whose start
// reads as raw packets (more than half of its bytes) and an N-Trace trace
// without SRC field that decodes without a gap decode exactly as without
// detection. When framings read the start equally well to different flows
// the decode stops with an error naming them and their options. Framing
// options given are the framing: nothing is detected, and a trace that
// does not read so is an error that names the framing it reads in.

// framingFlags are the options of each protocol that set its framing.
var framingFlags = map[string][]string{
	"etrace": {"encap", "src-bits", "src-id", "type-field", "timestamp-bytes",
		"data-trace", "data-src-id", "data-harts", "data-protocol", "data-fields", "data-compress"},
	"ntrace": {"src-bits", "src-id"},
}

// framingGiven reports whether the command line gave one of protocol
// name's framing options.
func framingGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || slices.Contains(framingFlags[name], f.Name) })
	return given
}

// decodeSetup is a decoder's configuration for a trace, and what goes
// with it.
type decodeSetup struct {
	cfg *tproto.Config
	// after, when not nil, is called with the decoder once it has
	// decoded, and the configuration it decoded with.
	after func(d tproto.Decoder, cfg *tproto.Config)
	// detect, when not nil, detects the framing (no framing option
	// given).
	detect framingDetector
}

// framingDetector returns the configuration to decode the trace in with
// (cfg, unchanged, for the default framing or when no other framing reads
// the trace), the framing it detected for the line on stderr ("" for the
// default framing), with the options that fix it, or an error when
// framings tie.
type framingDetector func(in *tproto.Input, img *image.Set, cfg *tproto.Config) (c *tproto.Config, what string, opts []string, err error)

// rawFramingScore is the least share of a trace's start that must read as
// raw E-Trace packets for the raw framing (the default) to be kept without
// trying others. A trace in the UTDD encapsulation reads as almost
// nothing: its headers have message type 0 (or the extend bit set).
const rawFramingScore = 0.5

// readsRaw reports whether the start of a trace (prefix: its first
// etrace.SniffBytes are parsed, which are enough) reads as E-Trace packets
// in the raw framing of cfg: then the raw framing is kept without trying
// others.
func readsRaw(prefix []byte, cfg *etrace.Config) bool {
	return etrace.Sniff(prefix[:min(len(prefix), etrace.SniffBytes)], cfg).Score() >= rawFramingScore
}

// detectETraceFraming is the framingDetector of E-Trace.
func detectETraceFraming(in *tproto.Input, img *image.Set, cfg *tproto.Config) (*tproto.Config, string, []string, error) {
	if cfg.ETraceCSV || cfg.ETrace.Encap != etrace.EncapRaw {
		return cfg, "", nil, nil
	}
	prefix := in.Prefix
	if readsRaw(prefix, &cfg.ETrace) {
		return cfg, "", nil, nil
	}
	guesses := etrace.SniffFramings(prefix, &cfg.ETrace)
	var cands []*tproto.Config
	for _, g := range guesses {
		c := *cfg
		c.ETrace = g.Config
		if c.ETrace.Check() != nil {
			continue
		}
		cands = append(cands, &c)
	}
	best := tproto.ChooseFraming(lookupLib("etrace"), in, img, cands)
	switch {
	case len(best) == 0:
		return cfg, "", nil, nil
	case len(best) > 1:
		return nil, "", nil, ambiguousFraming(best, func(c *tproto.Config) (string, []string) {
			return etraceFramingText(&c.ETrace)
		})
	}
	c := best[0].Config
	if c.ETrace.Encap == etrace.EncapRaw {
		return cfg, "", nil, nil
	}
	what, opts := etraceFramingText(&c.ETrace)
	return c, what, opts, nil
}

// detectNTraceFraming is the framingDetector of N-Trace: the width of the
// SRC field (trTeSrcBits, 0 to 12), when the trace does not decode without
// a gap in the configured one.
func detectNTraceFraming(in *tproto.Input, img *image.Set, cfg *tproto.Config) (*tproto.Config, string, []string, error) {
	p := lookupLib("ntrace")
	if tproto.TrialDecode(p, in, img, cfg).Fits() {
		return cfg, "", nil, nil
	}
	var cands []*tproto.Config
	for w := 0; w <= 12; w++ {
		c := *cfg
		c.NTrace.SrcBits = w
		if w == cfg.NTrace.SrcBits {
			// the configured width first: it wins a tie of equal flows
			cands = slices.Insert(cands, 0, &c)
			continue
		}
		cands = append(cands, &c)
	}
	best := tproto.ChooseFraming(p, in, img, cands)
	switch {
	case len(best) == 0:
		return cfg, "", nil, nil
	case len(best) > 1:
		return nil, "", nil, ambiguousFraming(best, func(c *tproto.Config) (string, []string) {
			return ntraceFramingText(c.NTrace.SrcBits)
		})
	}
	c := best[0].Config
	if c.NTrace.SrcBits == cfg.NTrace.SrcBits {
		return cfg, "", nil, nil
	}
	what, opts := ntraceFramingText(c.NTrace.SrcBits)
	return c, what, opts, nil
}

// lookupLib returns the library protocol registered under name.
func lookupLib(name string) tproto.Protocol { return protocols[name].lib }

// ambiguousFraming is the error of framings that read the start of a
// trace equally well to different flows.
func ambiguousFraming(best []tproto.Framing, text func(*tproto.Config) (string, []string)) error {
	var l []string
	for _, f := range best {
		what, opts := text(f.Config)
		l = append(l, fmt.Sprintf("%s (%s; its start decodes to %d instructions, %d gaps)", what, strings.Join(opts, " "), f.Trial.Instructions, f.Trial.Gaps))
	}
	return fmt.Errorf("the framing of the trace is ambiguous: its start reads equally well as %s; decode with the options of the right one", strings.Join(l, ", or as "))
}

// ntraceFramingText describes an N-Trace framing and gives its options.
func ntraceFramingText(srcBits int) (string, []string) {
	if srcBits == 0 {
		return "N-Trace without SRC field", []string{"--protocol", "ntrace", "--src-bits", "0"}
	}
	return fmt.Sprintf("N-Trace, SRC field of %d bit%s", srcBits, plural(srcBits)), []string{"--protocol", "ntrace", "--src-bits", strconv.Itoa(srcBits)}
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// etraceFramingText describes an E-Trace framing (c's Encap, SrcBits,
// SrcID, TypeField, TimestampBytes and data trace source IDs and layout)
// and gives the options that set it.
func etraceFramingText(c *etrace.Config) (string, []string) {
	opts := []string{"--protocol", "etrace", "--encap", c.Encap.String()}
	if c.Encap == etrace.EncapRaw {
		return "E-Trace, raw framing", opts
	}
	what := []string{"E-Trace, UTDD"}
	if c.SrcBits > 0 {
		what = append(what, fmt.Sprintf("%d source bit%s", c.SrcBits, plural(c.SrcBits)))
		opts = append(opts, "--src-bits", strconv.Itoa(c.SrcBits))
	} else {
		what = append(what, "no source ID")
	}
	if c.TypeField {
		what = append(what, "type field")
		opts = append(opts, "--type-field")
	}
	if c.TimestampBytes > 0 {
		what = append(what, fmt.Sprintf("%d-byte timestamps", c.TimestampBytes))
		opts = append(opts, "--timestamp-bytes", strconv.Itoa(c.TimestampBytes))
	}
	if d := c.Data; d != nil {
		opts = append(opts, "--data-trace")
		if d.Harts > 1 {
			what = append(what, fmt.Sprintf("data trace of %d harts (instruction sources 0 to %d, data sources %d to %d)", d.Harts, d.Harts-1, d.Harts, 2*d.Harts-1))
			opts = append(opts, "--data-harts", strconv.Itoa(d.Harts))
		} else {
			what = append(what, fmt.Sprintf("data trace (instruction source %d, data source %d)", c.SrcID, d.SrcID))
			if c.SrcID != 0 {
				opts = append(opts, "--src-id", strconv.FormatUint(uint64(c.SrcID), 10))
			}
			if d.SrcID != (c.SrcID+1)&(1<<uint(c.SrcBits)-1) {
				opts = append(opts, "--data-src-id", strconv.FormatUint(uint64(d.SrcID), 10))
			}
		}
		if d.Split {
			what = append(what, "split protocol")
			opts = append(opts, "--data-protocol", "split")
		}
		if d.Fields != etrace.DataAddrValue {
			what = append(what, "data packets with "+d.Fields.String()+" only")
			opts = append(opts, "--data-fields", d.Fields.String())
		}
		if d.NoCompress {
			what = append(what, "uncompressed")
			opts = append(opts, "--data-compress=false")
		}
	}
	return strings.Join(what, ", "), opts
}

// framingNote is the outcome of a framing detection.
type framingNote struct {
	what string   // the framing detected ("" for the default)
	opts []string // the options that give it
	err  error    // framings tie
}

// detectFraming detects the framing of the trace in (see decodeSetup) and
// sets s.cfg to it.
func detectFraming(s *decodeSetup, in *tproto.Input, img *image.Set) framingNote {
	if s.detect == nil {
		return framingNote{}
	}
	c, what, opts, err := s.detect(in, img, s.cfg)
	if err != nil {
		return framingNote{err: err}
	}
	s.cfg = c
	return framingNote{what: what, opts: opts}
}

// say writes the line of a framing detected on stderr, or returns the
// error of framings that tie, for the trace named name.
func (n framingNote) say(name string) error {
	if n.err != nil {
		return fmt.Errorf("%s: %w", name, n.err)
	}
	if n.what != "" {
		fmt.Fprintf(stderr, "%s: framing detected: %s (pass %s to fix)\n", name, n.what, strings.Join(n.opts, " "))
	}
	return nil
}
