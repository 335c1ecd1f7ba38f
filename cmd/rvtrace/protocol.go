package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"

	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	tproto "github.com/rvtrace/rvtrace/protocol"
	"github.com/rvtrace/rvtrace/tracectl"
)

// protocol maps the command-line flags of one trace protocol onto the
// typed configuration of package protocol, which holds the encoders,
// decoders and dumps. Each protocol registers one in its own file
// (proto_*.go). Each hook registers the protocol's own options on the
// flag set it is given and returns a constructor that is called after the
// flags are parsed.
type protocol struct {
	name    string
	summary string
	lib     tproto.Protocol
	// encoder: an ingress sink that writes encoded trace to w. img is the
	// program image when one was given (nil otherwise); src is the trace
	// source (hart) number the encoder is for; fc, if not nil, the
	// filters, comparators and triggers (--filter, --trigger). The
	// encoder is the trace encoder component of package tracectl,
	// programmed through its registers (see encoderComponent): a new one,
	// or comp when it is not nil (an encoder of the trace system, whose
	// output goes to its funnel: w is then not used).
	encoder func(fs *flag.FlagSet) encoderFn
	// decoder: the decoder's configuration for the trace named name, and
	// what to do with the decoder once it has decoded (print statistics).
	decoder func(fs *flag.FlagSet) decoderConfigFn
	// dumper: the dump's configuration.
	dumper func(fs *flag.FlagSet) func() (*tproto.Config, error)
}

// encoderFn returns the encoder of trace source src writing to w.
type encoderFn func(w io.Writer, img *image.Set, src int, fc *filter.Config, comp *tracectl.Encoder) (ingress.Sink, error)

// decoderConfigFn returns the decoder configuration for the trace named
// name, with what to do with the decoder after decoding and how to detect
// the framing (framing.go).
type decoderConfigFn func(name string) (*decodeSetup, error)

var protocols = map[string]*protocol{}

func registerProtocol(p *protocol) {
	lib, err := tproto.Lookup(p.name)
	if err != nil {
		panic(err)
	}
	p.lib = lib
	protocols[p.name] = p
}

func protocolNames() string {
	var n []string
	for k := range protocols {
		n = append(n, k)
	}
	sort.Strings(n)
	return strings.Join(n, ", ")
}

func sortedProtocols() []*protocol {
	var out []*protocol
	for _, n := range strings.Split(protocolNames(), ", ") {
		out = append(out, protocols[n])
	}
	return out
}

// lookupProtocol finds the protocol a --protocol flag names.
func lookupProtocol(name string) (*protocol, error) {
	p := protocols[name]
	if p == nil {
		return nil, fmt.Errorf("unknown protocol %q (known: %s)", name, protocolNames())
	}
	return p, nil
}

// protocolFromArgs finds the value of --protocol (default "ntrace") in args
// before the flag set is built, because each protocol adds its own flags.
func protocolFromArgs(args []string) string {
	if p := protocolGiven(args); p != "" {
		return p
	}
	return "ntrace"
}

// protocolGiven returns the value of an explicit --protocol flag in args,
// or "".
func protocolGiven(args []string) string {
	for i, a := range args {
		for _, pre := range []string{"--protocol=", "-protocol="} {
			if strings.HasPrefix(a, pre) {
				return a[len(pre):]
			}
		}
		if (a == "--protocol" || a == "-protocol") && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// protoChoice is the protocol a decoding command decodes with: one named
// by --protocol, or, with --protocol auto (the default), the one the trace
// looks like among those whose flags parse the command line.
type protoChoice struct {
	auto bool
	// p is the protocol whose flags the command registers.
	p *protocol
	// alts are, with auto, the protocols whose flags parse the
	// arguments, with their decoder configurations.
	alts []altDecoder
}

type altDecoder struct {
	p      *protocol
	config decoderConfigFn
}

// resolveProtocol reads --protocol from args before the flags are
// registered. register registers every flag of the command for protocol
// p and returns its decoder configuration; with auto it is called once
// per protocol on a scratch flag set to see which protocols' flags parse
// the command line.
func resolveProtocol(args []string, register func(fs *flag.FlagSet, p *protocol) decoderConfigFn) (*protoChoice, error) {
	given := protocolGiven(args)
	if given != "" && given != "auto" {
		p, err := lookupProtocol(given)
		if err != nil {
			return nil, err
		}
		return &protoChoice{p: p}, nil
	}
	pc := &protoChoice{auto: true}
	for _, p := range sortedProtocols() {
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		cfg := register(fs, p)
		if _, err := parseFlags(fs, args); err != nil && !errors.Is(err, flag.ErrHelp) {
			continue
		}
		pc.alts = append(pc.alts, altDecoder{p, cfg})
	}
	pc.p = protocols["ntrace"]
	for _, a := range pc.alts {
		if a.p.name == "ntrace" {
			return pc, nil
		}
	}
	if len(pc.alts) > 0 {
		pc.p = pc.alts[0].p
	}
	return pc, nil
}

// protocolFlag registers --protocol, with auto as its default.
func protocolFlag(fs *flag.FlagSet, extra string) {
	fs.String("protocol", "auto", "trace protocol: auto (from the trace's first bytes), "+extra+protocolNames())
}

// mismatchError words a protocol.MismatchError with the flags that fix it.
func mismatchError(name string, err error) error {
	var me *tproto.MismatchError
	if !errors.As(err, &me) {
		return fmt.Errorf("%s: %w", name, err)
	}
	switch {
	case me.LooksLike != "":
		return fmt.Errorf("%s: looks like %s; use --protocol %s", name, tproto.DisplayName(protocols[me.LooksLike].lib), me.LooksLike)
	case me.SrcBits > 0:
		return fmt.Errorf("%s: messages carry a SRC field: --src-bits %d", name, me.SrcBits)
	case me.SrcBits == 0:
		return fmt.Errorf("%s: messages carry no SRC field: leave out --src-bits", name)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// decodeFlags are the flags every decoding command shares.
type decodeFlags struct {
	strict     *bool
	allowTrunc *bool
	jobs       *int // decode only: --jobs
	jobsGiven  bool // --jobs was on the command line
}

func addDecodeFlags(fs *flag.FlagSet) *decodeFlags {
	return &decodeFlags{
		strict: fs.Bool("strict", false, "withhold the suspect instructions a gap calls into doubt instead of writing them"),
		allowTrunc: fs.Bool("allow-truncated", false,
			"the trace is a circular-buffer capture: it may start without a sync and end without its end message"),
	}
}

// flowCheck is the integrity tally of a decoding command and its chain of
// sinks.
type flowCheck struct {
	integ  flow.Integrity
	strict bool
}

// wrap returns the sink the decoder feeds: the tally, then sink (behind
// flow.Strict with --strict). Closing it closes sink.
func (c *flowCheck) wrap(sink flow.Sink, img *image.Set, df *decodeFlags) flow.Sink {
	if sink == nil {
		return &c.integ
	}
	if df != nil && *df.strict {
		c.strict = true
		sink = flow.Strict(sink, img)
	}
	return flow.Multi(&c.integ, sink)
}

// report prints the summary line and the first gaps on stderr, and
// returns exitError{3} when the flow has gaps.
func (c *flowCheck) report(name string) error {
	fmt.Fprintf(stderr, "%s: %s\n", name, c.integ.Summary(c.strict))
	for _, l := range c.integ.Details() {
		fmt.Fprintf(stderr, "  %s\n", l)
	}
	if !c.integ.Clean() {
		return exitError{3}
	}
	return nil
}

// decodeTrace decodes the trace read from r (named name) with the program
// image into sink, which it does not close: the protocol chosen (or, with
// auto, detected from the trace's first bytes), checked against the
// start of the trace first.
func decodeTrace(pc *protoChoice, config decoderConfigFn, df *decodeFlags, name string, r io.Reader, img *image.Set, sink flow.Sink) error {
	in, err := tproto.NewInput(r)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if in.Gzip {
		fmt.Fprintf(stderr, "%s: gzip-compressed: decompressing (byte offsets count decompressed bytes)\n", name)
	}
	p := pc.p
	setup, err := config(name)
	if err != nil {
		return err
	}
	if pc.auto && len(pc.alts) > 1 {
		setups := map[string]*decodeSetup{}
		detected := map[string]framingNote{}
		merged := *setup.cfg
		for _, a := range pc.alts {
			s, err := a.config(name)
			if err != nil {
				continue
			}
			if df != nil {
				s.cfg.Decode.AllowTruncated = *df.allowTrunc
			}
			setups[a.p.name] = s
			switch a.p.name {
			case "ntrace":
				merged.NTrace, merged.JVT = s.cfg.NTrace, s.cfg.JVT
			case "etrace":
				merged.ETrace, merged.ETraceCSV = s.cfg.ETrace, s.cfg.ETraceCSV
			}
		}
		if df != nil {
			merged.Decode.AllowTruncated = *df.allowTrunc
		}
		var err error
		lib := tproto.Fitting(in, img, &merged)
		if lib == nil || lib.Name() != "etrace" && lib.Sniff(in.Prefix, &merged) < 0.99 && !merged.ETraceCSV {
			// no protocol fits in its default framing, or not much
			// like the one that does: each protocol's framing,
			// detected unless given (an ambiguous one matters if the
			// trace is of its protocol)
			for _, a := range pc.alts {
				if s := setups[a.p.name]; s != nil {
					n := detectFraming(s, in, img)
					detected[a.p.name] = n
					switch a.p.name {
					case "ntrace":
						merged.NTrace = s.cfg.NTrace
					case "etrace":
						merged.ETrace = s.cfg.ETrace
					}
				}
			}
			lib, err = tproto.Detect(in, img, &merged)
		}
		for _, a := range pc.alts {
			// no protocol fits: an ambiguous framing says why
			if n := detected[a.p.name]; n.err != nil && (err != nil || !tproto.TrialDecode(lib, in, img, &merged).Fits()) {
				return fmt.Errorf("%s: %w", name, n.err)
			}
		}
		if (err != nil || lib.Name() != "etrace" && lib.Sniff(in.Prefix, &merged) < 0.99) && !merged.ETraceCSV {
			// no protocol fits, or not much like the one chosen:
			// perhaps a capture of the trace system decoded without
			// its framing
			// (the framing was detected, unless given: it ran above)
			if h := etraceFramingHint(in.Prefix, merged.ETrace, setups["etrace"] != nil && setups["etrace"].detect != nil); h != "" {
				return fmt.Errorf("%s: %s", name, h)
			}
		}
		if err != nil {
			return mismatchError(name, err)
		}
		p = protocols[lib.Name()]
		if setups[p.name] != nil {
			setup = setups[p.name]
		} else {
			setup = &decodeSetup{cfg: &merged}
		}
		if err := detected[p.name].say(name); err != nil {
			return err
		}
	} else {
		if df != nil {
			setup.cfg.Decode.AllowTruncated = *df.allowTrunc
		}
		if p.name == "etrace" {
			// (a sniff: cheap)
			if err := detectFraming(setup, in, img).say(name); err != nil {
				return err
			}
		}
		err := tproto.Check(p.lib, in, img, setup.cfg)
		var me *tproto.MismatchError
		if p.name == "ntrace" && errors.As(err, &me) && me.SrcBits >= 0 && setup.detect != nil {
			// another SRC field fits: detected unless given
			if err := detectFraming(setup, in, img).say(name); err != nil {
				return err
			}
			err = tproto.Check(p.lib, in, img, setup.cfg)
		}
		if err != nil {
			return mismatchError(name, err)
		}
	}
	cfg := setup.cfg
	if df != nil {
		cfg.Decode.AllowTruncated = *df.allowTrunc
	}
	if p.name == "etrace" && !cfg.ETraceCSV {
		// a capture of the trace system decoded without its framing
		if h := etraceFramingHint(in.Prefix, cfg.ETrace, setup.detect != nil); h != "" {
			return fmt.Errorf("%s: %s", name, h)
		}
	}
	d, err := p.lib.NewDecoder(img, sink, cfg)
	if err != nil {
		return err
	}
	err = runDecoder(d, in.R, df, name, sink)
	if setup.after != nil {
		setup.after(d, cfg)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// jobsFlag adds decode's --jobs.
func (df *decodeFlags) jobsFlag(fs *flag.FlagSet) {
	df.jobs = fs.Int("jobs", 0, "decode up to `N` pieces of the trace at once, split at sync messages or packets (N-Trace, E-Trace of one source or several: UTDD source IDs), with the serial decode's result; 0: one per CPU. "+
		"Not given: one per CPU when the decode writes no per-instruction output (the summary), else 1 (the outputs take the events in order on one core: see PERFORMANCE.md)")
}

// numCPU is the number of jobs of --jobs 0: the CPUs the process may use
// (GOMAXPROCS, which follows the affinity mask and a container's CPU
// limit, where runtime.NumCPU counts the machine's). A variable for the
// tests: the default decode must be exercised with several jobs on any
// machine.
var numCPU = func() int { return runtime.GOMAXPROCS(0) }

// runDecoder decodes r with d into sink, on --jobs pieces at once when
// the decoder can split the trace; with --jobs given above 1, it says on
// stderr why it decodes serially when it does.
func runDecoder(d tproto.Decoder, r io.Reader, df *decodeFlags, name string, sink flow.Sink) error {
	if df == nil || df.jobs == nil {
		return d.Decode(r)
	}
	jobs := *df.jobs
	switch {
	case !df.jobsGiven && !flow.TalliesRanges(sink):
		jobs = 1
	case jobs <= 0:
		jobs = numCPU()
	}
	if jobs <= 1 {
		return d.Decode(r)
	}
	pd, ok := d.(interface {
		DecodeJobs(r io.Reader, jobs int) error
		SerialReason() string
	})
	why := "the decoder cannot split a trace"
	if ok {
		why = pd.SerialReason()
	}
	if why != "" {
		if df.jobsGiven {
			fmt.Fprintf(stderr, "%s: decoding serially (--jobs %d): %s\n", name, jobs, why)
		}
		return d.Decode(r)
	}
	return pd.DecodeJobs(r, jobs)
}
