package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
	"github.com/rvtrace/rvtrace/sim"
	"github.com/rvtrace/rvtrace/tracectl"
)

// traceSysSRAM is the size of the RAM sink's own buffer (SRAM mode).
const traceSysSRAM = 64 << 10

// traceSys holds the run options of the Trace Control Interface system
// (package tracectl): the components mapped in the simulator, the
// capture read back at the end as a debugger would, and the host script.
type traceSys struct {
	on         *bool
	base       *string
	capture    *string
	captureAll *bool
	script     *string

	enabled bool
	sys     *tracectl.System
	probe   *tracectl.Probe
	sinks   []ingress.Sink // what AttachTrace connected to each hart
	out     io.WriteCloser // --trace-capture-all: the file drained into
	bw      *bufio.Writer
	// by hart: the Folder in front of an encoder tracing data
	// (run_data.go), nil for the others
	folds []*ingress.Folder
}

func traceSysFlags(fs *flag.FlagSet) *traceSys {
	return &traceSys{
		on: fs.Bool("trace-system", false, "map the RISC-V Trace Control Interface components: a trace encoder per hart at --trace-base + hart*0x1000, "+
			"a funnel at +0x18000 and a RAM sink at +0x19000 (64 KiB SRAM or a buffer in system memory), driven by the guest's loads and stores "+
			"or --trace-script (default: on with --machine virt without --kernel)"),
		base:       fs.String("trace-base", "0x3000000", "physical `address` of the trace components (a multiple of 0x1000)"),
		capture:    fs.String("trace-capture", "", "at the end of the run, stop the trace system and write the RAM sink's trace, read back as a debugger does (oldest byte first; a wrapped buffer from its first sync), to `file`"),
		captureAll: fs.Bool("trace-capture-all", false, "with --trace-capture: empty the RAM sink into the file at each wrap (and when it is disabled), so that no trace is lost however small the buffer"),
		script:     fs.String("trace-script", "", "`file` of register writes, reads and checks run by the host at instruction counts or symbols, as a debug probe does (grammar: README, section Tracing like on silicon)"),
	}
}

// setup decides whether the trace system is on and adjusts the simulator
// configuration: a script needs one ingress block per instruction. It is
// on by default on the virt machine, but for a kernel (whose device tree
// does not describe it), where feeding the encoders' ingress ports would
// slow the boot for nothing.
func (t *traceSys) setup(fs *flag.FlagSet, machine string, kernel bool, cfg *sim.Config) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	t.enabled = *t.on || !set["trace-system"] && machine == "virt" && !kernel
	needs := ""
	switch {
	case *t.capture != "":
		needs = "--trace-capture"
	case *t.script != "":
		needs = "--trace-script"
	case *t.captureAll:
		return fmt.Errorf("--trace-capture-all needs --trace-capture FILE")
	case set["trace-base"]:
		needs = "--trace-base"
	}
	if needs != "" {
		if set["trace-system"] && !*t.on {
			return fmt.Errorf("%s needs the trace system (--trace-system=false given)", needs)
		}
		t.enabled = true
	}
	if *t.script != "" {
		if err := noteInput(*t.script); err != nil {
			return err
		}
		cfg.Mode = sim.PerInstruction
	}
	return nil
}

// attach builds the components and maps them into the machine, with the
// device tree nodes describing them.
func (t *traceSys) attach(m *sim.Machine, img *image.Set) error {
	if !t.enabled {
		return nil
	}
	base, err := strconv.ParseUint(*t.base, 0, 64)
	if err != nil {
		return fmt.Errorf("--trace-base %q: want an address", *t.base)
	}
	if m.NumHarts() > tracectl.MaxHarts {
		return fmt.Errorf("the trace system has encoders for %d harts, not %d", tracectl.MaxHarts, m.NumHarts())
	}
	// (the encoders follow the ingress port alone: portImage)
	if t.sys, err = tracectl.NewSystem(m.NumHarts(), portImage(img), traceSysSRAM, m.TraceMemory()); err != nil {
		return err
	}
	if err := t.sys.SetBase(base); err != nil {
		return fmt.Errorf("--trace-base: %w", err)
	}
	sinks := t.sys.Sinks()
	if *t.script != "" {
		f, err := openInput(*t.script)
		if err != nil {
			return err
		}
		sc, err := tracectl.ParseScript(*t.script, f, img.Lookup)
		f.Close()
		if err != nil {
			return err
		}
		t.probe = sc.Probe(t.sys, sinks[0], stderr)
		sinks[0] = t.probe
	}
	for h := range sinks {
		// E-Trace from the bytes the hart ran (run_tablejump.go)
		sinks[h] = withTableJumps(sinks[h], m, h, img, componentETrace(t.sys.Encoders[h]))
	}
	t.sinks = sinks
	if err := m.AttachTrace(t.sys, t.sys.Base(), t.sys.End(), sinks); err != nil {
		return err
	}
	nodes := []sim.TraceNode{}
	for h := range t.sys.Encoders {
		nodes = append(nodes, sim.TraceNode{Name: "trace-encoder", Compatible: []string{"riscv,trace-encoder"},
			Base: t.sys.EncoderAddr(h), Size: tracectl.ComponentSize, Hart: h})
	}
	nodes = append(nodes,
		sim.TraceNode{Name: "trace-funnel", Compatible: []string{"riscv,trace-funnel"}, Base: t.sys.FunnelAddr(), Size: tracectl.ComponentSize, Hart: -1},
		sim.TraceNode{Name: "trace-ram-sink", Compatible: []string{"riscv,trace-ram-sink"}, Base: t.sys.SinkAddr(), Size: tracectl.ComponentSize, Hart: -1})
	if err := m.DescribeTrace(nodes); err != nil {
		return err
	}
	if *t.captureAll {
		if t.out, err = createOutput(*t.capture); err != nil {
			return err
		}
		t.bw = bufio.NewWriterSize(t.out, 1<<20)
		t.sys.Sink.DrainTo(t.bw)
	}
	return nil
}

// with returns the ingress sink of hart h when other sinks (--trace, ...)
// take its blocks too: the trace system's encoder first.
func (t *traceSys) with(h int, s ingress.Sink) ingress.Sink {
	if t.sys == nil {
		return s
	}
	return fanout{t.sysSink(h), s}
}

// sysSink is what AttachTrace connected to hart h.
func (t *traceSys) sysSink(h int) ingress.Sink {
	if h < len(t.folds) && t.folds[h] != nil {
		return t.folds[h]
	}
	return t.sinks[h]
}

// finish runs the script's end, stops the trace system and writes the
// capture, saying on stderr what it holds and how to decode it (with the
// decode options imageArgs: hintImage).
func (t *traceSys) finish(imageArgs string, quiet bool) error {
	if t.sys == nil {
		return nil
	}
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if t.probe != nil {
		keep(t.probe.End())
	}
	for h, e := range t.sys.Encoders {
		// Said even with -q: the trace lacks what these would have
		// traced.
		if n, err := e.RefusedEnables(); n > 0 {
			times := "a write"
			if n > 1 {
				times = fmt.Sprintf("%d writes", n)
			}
			fmt.Fprintf(stderr, "rvtrace run: warning: trace encoder of hart %d: %s of trTeEnable = 1 did not enable it (trTeEnable read back 0); the last because: %v\n", h, times, err)
		}
	}
	if *t.capture == "" {
		return firstErr
	}
	if t.bw != nil {
		// everything was drained as the sink stored it: stopping the
		// system drains the rest
		err := t.sys.Stop()
		n, derr := t.sys.Sink.Drained()
		keep(derr)
		keep(t.bw.Flush())
		keep(t.out.Close())
		if firstErr != nil {
			// the file does not hold the trace: nothing to describe
			return firstErr
		}
		if n == 0 {
			keep(fmt.Errorf("--trace-capture %s: the trace RAM sink stored no trace; the file is empty", *t.capture))
			return firstErr
		}
		if !errors.Is(err, tracectl.ErrNoSink) {
			keep(err)
		}
		if !quiet {
			fmt.Fprintf(stderr, "rvtrace run: trace capture %s: %d bytes, emptied from the RAM sink at each of its %d wraps and when it was disabled: nothing lost\n",
				*t.capture, n, t.sys.Sink.Wraps())
		}
		if set, ok := t.sys.Encoders[0].LastSettings(); ok {
			t.decodeHint(set, imageArgs, *t.capture, "")
		}
		return firstErr
	}
	c, err := t.sys.StopAndCapture()
	if errors.Is(err, tracectl.ErrNoSink) {
		keep(fmt.Errorf("--trace-capture %s: %w; nothing written", *t.capture, err))
		return firstErr
	}
	if err != nil {
		keep(fmt.Errorf("--trace-capture %s: %w", *t.capture, err))
		return firstErr
	}
	f, err := createOutput(*t.capture)
	if err != nil {
		keep(err)
		return firstErr
	}
	_, werr := f.Write(c.Bytes)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		// the file does not hold the capture: nothing to describe
		keep(werr)
		return firstErr
	}
	if c.Wrapped {
		// Said even with -q: the capture is not the whole trace.
		fmt.Fprintf(stderr, "rvtrace run: trace capture %s: the RAM sink wrapped: %d bytes of older trace were overwritten, and the %d bytes before the first sync in the buffer were dropped (%d bytes lost in all); the capture starts at that sync (--trace-capture-all keeps everything)\n",
			*t.capture, c.Overwritten, c.Skipped, c.Overwritten+uint64(c.Skipped))
	}
	if !quiet {
		fmt.Fprintf(stderr, "rvtrace run: trace capture %s: %d bytes\n", *t.capture, len(c.Bytes))
	}
	if c.Enabled {
		t.decodeHint(c.Settings, imageArgs, *t.capture, "")
	} else {
		fmt.Fprintf(stderr, "rvtrace run: trace capture %s: the trace encoder of hart 0 was never enabled\n", *t.capture)
	}
	return firstErr
}

// tapHint says how to decode the funnel's output that -o (out) recorded
// (SetTap): with the options of the encoders' last start, as the capture.
func (t *traceSys) tapHint(imageArgs, out string) {
	if set, ok := t.sys.Encoders[0].LastSettings(); ok {
		t.decodeHint(set, imageArgs, out, "-o "+out)
	}
}

// decodeHint says how to decode file, the capture (what is "") or, named
// by what, another trace of the encoders' settings s, with the program
// given by imageArgs (hintImage).
func (t *traceSys) decodeHint(s tracectl.Settings, imageArgs, file, what string) {
	about, prefix := "trace capture "+file, ""
	if what != "" {
		about, prefix = what, what+": "
	}
	args, params := hintArgs(s)
	if s.Format != tracectl.FormatNTrace {
		if d := s.ETrace.Data; d != nil && d.Filter.HasData() {
			fmt.Fprintf(stderr, "rvtrace run: %s: decode with the run's --data-filter options as SPEC (the data joiner expects the accesses they let through)\n", about)
		}
		if len(params) > 0 {
			fmt.Fprintf(stderr, "rvtrace run: %s: decode with a --config file holding: %s\n", about, strings.Join(params, "; "))
		}
	}
	// Encoders started with settings that decode differently: the one
	// command decodes the parts of the last settings only.
	key := strings.Join(args, " ") + "|" + strings.Join(params, "; ")
	seen := map[string]bool{key: true}
	var others []string
	for h, enc := range t.sys.Encoders {
		for _, o := range enc.StartedSettings() {
			a, p := hintArgs(o)
			k := strings.Join(a, " ") + "|" + strings.Join(p, "; ")
			if seen[k] {
				continue
			}
			seen[k] = true
			o := fmt.Sprintf("hart %d: %s", h, strings.Join(a, " "))
			if len(p) > 0 {
				o += " (with a --config file holding: " + strings.Join(p, "; ") + ")"
			}
			others = append(others, o)
		}
	}
	if len(others) > 0 {
		// Said even with -q, as the hint itself.
		fmt.Fprintf(stderr, "rvtrace run: %s: warning: the trace encoders were also enabled with settings that decode differently; the command below decodes what hart 0's last settings traced and shows the rest as gaps; the other settings decode with: %s\n",
			about, strings.Join(others, "; "))
	}
	srcs := ""
	if len(t.sys.Encoders) > 1 && (s.NTrace.SrcBits > 0 || s.ETrace.SrcBits > 0) {
		srcs = " (one source per hart: --src N selects hart N's trace)"
	}
	fmt.Fprintf(stderr, "rvtrace run: %sdecode with: rvtrace decode %s %s %s%s\n", prefix, strings.Join(args, " "), imageArgs, file, srcs)
}

// hintArgs returns the rvtrace decode options of the encoder settings s,
// and for E-Trace the parameters a --config file must hold (then the
// options end with --config PARAMS).
func hintArgs(s tracectl.Settings) (args, params []string) {
	if s.Format == tracectl.FormatNTrace {
		args = ntraceDecodeArgs(s.NTrace)
		if ntraceArgsOwn(args, s.NTrace) {
			args = append(args, "--encoder", "rvtrace")
		}
		return args, nil
	}
	args, params = etraceDecodeArgs(s.ETrace)
	if len(params) > 0 {
		args = append(args, "--config", "PARAMS")
	}
	return args, params
}

// ntraceDecodeArgs returns the rvtrace decode options of an N-Trace
// configuration the trace system's registers select.
func ntraceDecodeArgs(c ntrace.Config) []string {
	a := []string{"--protocol", "ntrace", "--mode"}
	if c.Mode == ntrace.HTM {
		a = append(a, "htm")
	} else {
		a = append(a, "btm")
	}
	if c.SrcBits > 0 {
		a = append(a, "--src-bits", strconv.Itoa(c.SrcBits))
	}
	if c.ImplicitReturn != 0 {
		a = append(a, "--implicit-return", strconv.Itoa(c.ImplicitReturn))
	}
	for _, f := range []struct {
		on   bool
		name string
	}{{c.SequentialJump, "--seq-jump"}, {c.RepeatedHistory, "--repeat"}, {c.ExtendAddrMSB, "--extend-addr-msb"},
		{c.AllJumps, "--all-jumps"}, {c.Timestamps, "--timestamps"}, {c.Context, "--context"}} {
		if f.on {
			a = append(a, f.name)
		}
	}
	if c.SyncMode != 0 {
		a = append(a, "--sync-mode", strconv.Itoa(c.SyncMode), "--sync-max", strconv.Itoa(c.SyncMax))
	}
	if c.ExtendAddrMSB || c.XLEN == 32 {
		a = append(a, "--xlen", strconv.Itoa(c.XLEN))
	}
	return a
}

// ntraceArgsOwn says whether the decode options args give the decoder the
// configuration of rvtrace's encoder configured as c (every field
// ntrace.DecoderConfigFrom reads), so that decode --encoder rvtrace
// checks the trace against that encoder without false gaps.
func ntraceArgsOwn(args []string, c ntrace.Config) bool {
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfgOf := ntraceConfigFlags(fs)
	fs.String("protocol", "", "")
	fs.Int("xlen", 0, "")
	if fs.Parse(args) != nil || fs.NArg() != 0 {
		return false
	}
	d, err := cfgOf()
	if err != nil {
		return false
	}
	want, got := ntrace.DecoderConfigFrom(c), ntrace.DecoderConfigFrom(d)
	got.Wire.XLEN = want.Wire.XLEN // the decoder takes XLEN from the image
	return reflect.DeepEqual(want, got)
}

// etraceDecodeArgs returns the rvtrace decode options of an E-Trace
// configuration the trace system's registers select, and the parameter
// lines a --config file needs where they differ from the defaults.
func etraceDecodeArgs(c etrace.Config) (args, params []string) {
	a := []string{"--protocol", "etrace", "--encap", "utdd"}
	o := c.Options
	for _, f := range []struct {
		on   bool
		name string
	}{{o.FullAddress, "--full-address"}, {o.ImplicitException, "--implicit-exception"}, {o.SIJump, "--sijump"},
		{o.BranchPrediction, "--branch-prediction"}, {o.JumpTargetCache, "--jump-target-cache"}} {
		if f.on {
			a = append(a, f.name)
		}
	}
	if o.ImplicitReturn {
		a = append(a, "--implicit-return", "stack")
	}
	if c.ResyncPeriod > 0 {
		a = append(a, "--resync", strconv.Itoa(c.ResyncPeriod))
	}
	if c.SrcBits > 0 {
		a = append(a, "--src-bits", strconv.Itoa(c.SrcBits))
	}
	if c.Version == etrace.V026 {
		a = append(a, "--etrace-version", "0.026")
	}
	if c.TypeField {
		a = append(a, "--type-field")
	}
	if c.TimestampBytes > 0 {
		a = append(a, "--timestamp-bytes", strconv.Itoa(c.TimestampBytes))
	}
	if d := c.Data; d != nil {
		a = append(a, "--data-trace")
		if d.Fields != etrace.DataAddrValue {
			a = append(a, "--data-fields", d.Fields.String())
		}
		if d.Split {
			a = append(a, "--data-protocol", "split")
		}
		if d.NoCompress {
			a = append(a, "--data-compress=false")
		}
		if d.CSR && d.CSRWidth != 0 && d.CSRWidth != 64 {
			// (the support packet announces the CSR packets: --data-csr
			// on decode would only override it; their width it does
			// not give)
			a = append(a, "--data-csr-width", strconv.Itoa(d.CSRWidth))
		}
		if c.Encap == etrace.EncapUTDD && d.Harts > 1 {
			a = append(a, "--data-harts", strconv.Itoa(d.Harts))
		} else if c.Encap == etrace.EncapUTDD {
			// one source of instruction packets and one of data
			// packets, which the decoder takes by their IDs
			if c.SrcID != 0 {
				a = append(a, "--src-id", strconv.FormatUint(uint64(c.SrcID), 10))
			}
			a = append(a, "--data-src-id", strconv.FormatUint(uint64(d.SrcID), 10))
		}
		if d.Filter.HasData() {
			a = append(a, "--data-filter", "SPEC")
		}
	}
	// the parameters that differ from those the decoder takes by default
	// with these options
	d := etrace.DefaultConfig()
	d.Options = c.Options
	_ = d.Check() // fills the sizes the options need, as the decoder does
	p, q := c.Params, d.Params
	for _, f := range []struct {
		name string
		v, w uint64
	}{
		{"iaddress_width_p", uint64(p.IAddressWidth), uint64(q.IAddressWidth)},
		{"iaddress_lsb_p", uint64(p.IAddressLSB), uint64(q.IAddressLSB)},
		{"context_width_p", uint64(p.ContextWidth), uint64(q.ContextWidth)},
		{"time_width_p", uint64(p.TimeWidth), uint64(q.TimeWidth)},
		{"ecause_width_p", uint64(p.EcauseWidth), uint64(q.EcauseWidth)},
		{"privilege_width_p", uint64(p.PrivilegeWidth), uint64(q.PrivilegeWidth)},
		{"notime_p", uint64(b2i(p.NoTime)), uint64(b2i(q.NoTime))},
		{"nocontext_p", uint64(b2i(p.NoContext)), uint64(b2i(q.NoContext))},
		{"notval_p", uint64(b2i(p.NoTval)), uint64(b2i(q.NoTval))},
		{"return_stack_size_p", uint64(p.ReturnStackSize), uint64(q.ReturnStackSize)},
		{"call_counter_size_p", uint64(p.CallCounterSize), uint64(q.CallCounterSize)},
		{"bpred_size_p", uint64(p.BPredSize), uint64(q.BPredSize)},
		{"cache_size_p", uint64(p.CacheSize), uint64(q.CacheSize)},
		{"f0s_width_p", uint64(p.F0SWidth), uint64(q.F0SWidth)},
		{"sijump_p", uint64(b2i(p.SIJump)), uint64(b2i(q.SIJump))},
		{"itype_width_p", uint64(p.ITypeWidth), uint64(q.ITypeWidth)},
		{"rvtrace_tvec", p.TVec, q.TVec},
	} {
		if f.v != f.w {
			params = append(params, fmt.Sprintf("%s = %d", f.name, int64(f.v)))
		}
	}
	return a, params
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// etraceSystemFraming sets the framing of E-Trace through the trace
// system (--trace etrace with --trace-capture) when the options leave it
// out, and returns what the run summary says of it ("" when the options
// gave it). The funnel merges the encoders' output into one stream that
// the RAM sink stores in 32-bit words: the packets are framed in the
// Unformatted Trace & Diagnostic Data encapsulation, whose source ID
// tells the sources apart and whose null packet pads the sink's last
// word. A data trace of one hart then needs a source ID field of 1 bit
// for its data packets (source 1; --src-bits 1); several harts' widths
// are set by run for every trace of several harts. Another framing
// given is an error.
func etraceSystemFraming(fs *flag.FlagSet, harts int) (string, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	e := fs.Lookup("encap")
	if e == nil {
		return "", nil
	}
	if set["encap"] && e.Value.String() != "utdd" {
		return "", fmt.Errorf("--encap %s: E-Trace through the trace system is framed in the UTDD encapsulation: "+
			"with --trace-capture the funnel's stream carries every encoder's packets, told apart by their source IDs, and the RAM sink pads its last 32-bit word "+
			"with the UTDD null packet, which the raw framing has no equivalent of; leave out --encap (utdd is the default there), "+
			"or write the encoder's own output with -o instead of --trace-capture", e.Value)
	}
	var said []string
	why := ""
	if !set["encap"] {
		if err := fs.Set("encap", "utdd"); err != nil {
			return "", err
		}
		said = append(said, "--encap utdd")
	}
	if dt := fs.Lookup("data-trace"); harts == 1 && !set["src-bits"] && dt != nil && dt.Value.String() == "true" {
		// the data packets need a source ID of their own
		if err := fs.Set("src-bits", "1"); err != nil {
			return "", err
		}
		said = append(said, "--src-bits 1")
		why = "; instruction packets carry source ID 0, data packets 1"
	}
	if len(said) == 0 {
		return "", nil
	}
	return "E-Trace through the trace system: " + strings.Join(said, " ") +
		" (the funnel and the RAM sink take packets framed in the UTDD encapsulation" + why + "): decode with the same options", nil
}

// etraceFramingHint says how to decode a trace whose first bytes
// (prefix) do not read as E-Trace packets in cfg's raw framing but read
// in the UTDD encapsulation, as the trace system's RAM sink stores them (a
// capture of rvtrace run --trace etrace --trace-capture, or of a guest's
// or a script's programming): it returns the options of the first
// framing in which the start reads without an error
// (etrace.SniffFramings), or "" when the raw framing is not what fails or
// no UTDD framing reads the bytes so. detected says that the command line
// gave no framing option and the decode tried the framings the trace
// reads in (framing.go), none of which decoded an instruction of the
// image from its start: then the image is the likely cause.
func etraceFramingHint(prefix []byte, cfg etrace.Config, detected bool) string {
	if cfg.Encap != etrace.EncapRaw {
		return ""
	}
	if readsRaw(prefix, &cfg) {
		return ""
	}
	for _, g := range etrace.SniffFramings(prefix, &cfg) {
		if r := g.Result; g.Config.Encap == etrace.EncapRaw || r.Errors > 0 || r.Packets < 4 {
			continue
		}
		_, opts := etraceFramingText(&g.Config)
		if detected {
			return "the trace's packets are framed in the UTDD encapsulation, not raw, as the trace system's RAM sink stores them, " +
				"but in none of the framings they read in does the start of the trace decode to an instruction of the program image: wrong image? " +
				"(decode with " + strings.Join(opts, " ") + " to see where it fails)"
		}
		return "the trace's packets are framed in the UTDD encapsulation, not raw, as the trace system's RAM sink stores them " +
			"(rvtrace run --trace-capture, which printed the whole decode command): decode with " + strings.Join(opts, " ") +
			" (and the run's --data-csr-width, --data-filter if it had them), or without framing options to detect the framing"
	}
	return ""
}
