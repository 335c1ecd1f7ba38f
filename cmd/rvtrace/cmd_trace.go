package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"

	"github.com/rvtrace/rvtrace/analysis"
	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	tproto "github.com/rvtrace/rvtrace/protocol"
)

var encodeCmd = &command{
	name:    "encode",
	summary: "encode an instruction trace (PC list, ingress CSV, ...) into N-Trace or E-Trace bytes",
	usage: `Usage: rvtrace encode --protocol ntrace|etrace [--image PROG.elf] INPUT [options] -o OUT.bin

INPUT is one of --pcs-in FILE (with --image), --pcseq FILE, --ingress-in FILE.csv, --spike-csv FILE.

--filter and --trigger put the filter stage of the Trace Control Interface in
front of the encoder (see -h for their syntax).

Examples:
  rvtrace encode --protocol ntrace --image prog.elf --pcs-in prog.pcs --preset best -o prog.nex
  rvtrace encode --image prog.elf --pcs-in prog.pcs --filter 'addr=0x80001000-0x80002000' -o part.nex
  rvtrace encode --protocol ntrace --image prog.elf --pcs-in prog.pcs --mode htm --implicit-return 3 --timestamps -o prog.nex
  rvtrace encode --protocol ntrace --ingress-in prog.csv --preset ref-htm -o prog.nex
`,
}

var decodeCmd = &command{
	name:    "decode",
	summary: "decode N-Trace or E-Trace bytes with the program image back to the instruction flow",
	usage: `Usage: rvtrace decode [--protocol auto|ntrace|etrace] --image PROG.elf TRACE [outputs]

Outputs (any number; without one, only the summary is printed): --pcs, --flow,
--jsonl and the analysis outputs.

--protocol auto (the default) tells N-Trace from E-Trace by the first bytes of
the trace: the protocol whose decoder follows the image through them. Without
framing options (N-Trace: --src-bits, --src-id; E-Trace: --encap, --src-bits,
--src-id, --type-field, --timestamp-bytes and the data trace's --data-trace,
--data-harts, --data-src-id, --data-protocol, --data-fields, --data-compress)
the framing is detected the same way, as a capture of the trace system or a
debugger's dump of a RAM sink has it (N-Trace's SRC field; E-Trace raw or in
the UTDD encapsulation, its source IDs, type field, timestamps and data trace
sources), and said in one line with the options that fix it ("framing
detected: E-Trace, UTDD, 1 source bit (pass --protocol etrace --encap utdd
--src-bits 1 to fix)"); nothing is said of the default framing (raw E-Trace,
N-Trace without SRC field). Framings that read the start equally well into
different flows stop the decode, naming each with its options. Framing options
given are never overridden: a trace that does not fit the protocol, its
options or the image is refused with what it looks like instead ("looks like
E-Trace; use --protocol etrace", "messages carry a SRC field: --src-bits 2").
A gzip-compressed trace is decompressed.
The options below are grouped: the trace format ones must match the
encoder's (N-Trace's under the first heading, E-Trace's under their own);
with auto, options of either protocol may be given.
` + selectUsage + integrityUsage + `
Examples:
  rvtrace decode --protocol ntrace --image prog.elf prog.nex --pcs decoded.txt
  rvtrace decode --image prog.elf prog.nex --preset best --flow -
  rvtrace decode --image prog.elf prog.nex --preset best --encoder rvtrace   # rvtrace's own trace, all its checks
`,
}

var dumpCmd = &command{
	name:    "dump",
	summary: "list the messages or packets of a trace file with all their fields",
	usage: `Usage: rvtrace dump [--protocol auto|ntrace|etrace] TRACE [--bytes] [--stats]

--protocol auto (the default) dumps the trace as the protocol whose messages
its first bytes parse best as.

Examples:
  rvtrace dump prog.nex
  rvtrace dump --bytes prog.nex | less
  rvtrace dump --image prog.elf prog.nex   # full addresses as [0x80000024 <_start+0x24>]
  rvtrace dump --image prog.elf prog.ete   # E-Trace addresses made absolute, named the same way
`,
}

// integrityUsage is the part of the usage of every decoding command that
// says how it reports lost trace.
const integrityUsage = `
Every decoded result is right or flagged. On stderr a summary line gives the
instructions, gaps, suspect instructions (decoded before a gap since the last
point known good: they may be wrong) and lost spans (trace the encoder or the
capture lost), then the first gaps with byte offset, message index and reason.
The outputs mark the gaps too: a '# gap at byte N (message I): reason' line in
PC lists (--no-gap-marks leaves it out), a GAP line in --flow, a gap object in
--jsonl, a TraceGap E record in --tarmac, a lost row in profiles and reports.
--strict withholds the suspect instructions instead of writing them.
--allow-truncated accepts a circular-buffer capture, which may start without
a sync and end without the end message.

Exit status: 0 when the trace decoded completely, 3 when it decoded with gaps,
1 when it could not be decoded (empty, no sync, not this protocol...), 2 for
wrong usage.
`

func init() {
	encodeCmd.run = runEncode
	decodeCmd.run = runDecode
	dumpCmd.run = runDump
	register(encodeCmd)
	register(decodeCmd)
	register(dumpCmd)
}

func runEncode(args []string) error {
	fs := newFlagSet(encodeCmd)
	fs.String("protocol", "ntrace", "trace protocol: "+protocolNames())
	p, err := lookupProtocol(protocolFromArgs(args))
	if err != nil {
		return err
	}
	loadImage := imageFlags(fs)
	openSource := sourceFlags(fs)
	out := fs.String("o", "", "output trace `file` (required)")
	quiet := fs.Bool("q", false, "no summary on stderr")
	progress := progressFlags(fs)
	newEnc := p.encoder(fs)
	filterCfg := filter.ConfigFlags(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected argument %q", rest[0])
	}
	if *out == "" {
		return fmt.Errorf("missing -o OUT")
	}
	img, err := loadImage()
	if err != nil {
		return err
	}
	src, closer, err := openSource(img)
	if err != nil {
		return err
	}
	defer closer.Close()
	f, err := createOutput(*out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	cw := &countWriter{w: bw}
	fc, err := filterCfg()
	if err != nil {
		f.Close()
		return err
	}
	enc, err := newEnc(cw, img, 0, &fc, nil)
	if err != nil {
		f.Close()
		return err
	}
	rawEnc := enc
	blocks, err := pump(src, enc, progress, *out)
	if err != nil {
		f.Close()
		return err
	}
	if err := enc.Close(); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if !*quiet {
		line := fmt.Sprintf("%s: %d bytes from %d ingress blocks", *out, cw.n, blocks)
		if c, ok := src.(counted); ok && c.Instructions() > 0 {
			n := c.Instructions()
			line += fmt.Sprintf(", %d instructions, %.3f bits/instr", n, float64(cw.n*8)/float64(n))
		}
		if fs, ok := src.(*ingress.FoldSource); ok && fs.Folded() > 0 {
			line += fmt.Sprintf(" (%d repeated retirements of multi-access instructions folded)", fs.Folded())
		}
		if d, ok := src.(interface{ Discontinuities() uint64 }); ok && d.Discontinuities() > 0 {
			line += fmt.Sprintf(" (%d unexplained PC changes reported as exceptions)", d.Discontinuities())
		}
		if l, ok := rawEnc.(interface{ LossSummary() string }); ok && l.LossSummary() != "" {
			line += "; " + l.LossSummary()
		}
		fmt.Fprintln(stderr, line)
	}
	if w, ok := rawEnc.(interface{ Warning() string }); ok && w.Warning() != "" {
		// Said even with -q: what the encoder could not trace as asked.
		fmt.Fprintf(stderr, "%s: warning: %s\n", *out, w.Warning())
	}
	return nil
}

// countWriter counts bytes written.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// decodeOpts are the flags of the decode command.
type decodeOpts struct {
	loadImage   func() (*image.Set, error)
	openOutputs func(img *image.Set) (flow.Sink, error)
	sel         *selectOpts
	config      decoderConfigFn
	df          *decodeFlags
	progress    *progressFlag
}

func decodeCmdFlags(fs *flag.FlagSet, p *protocol) *decodeOpts {
	protocolFlag(fs, "")
	o := &decodeOpts{}
	o.loadImage = imageFlags(fs)
	o.openOutputs = outputFlags(fs)
	o.sel = selectFlags(fs)
	o.df = addDecodeFlags(fs)
	o.df.jobsFlag(fs)
	o.config = p.decoder(fs)
	o.progress = progressFlags(fs)
	return o
}

func runDecode(args []string) error {
	pc, err := resolveProtocol(args, func(fs *flag.FlagSet, p *protocol) decoderConfigFn {
		return decodeCmdFlags(fs, p).config
	})
	if err != nil {
		return err
	}
	fs := newFlagSet(decodeCmd)
	o := decodeCmdFlags(fs, pc.p)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("give exactly one trace file to decode")
	}
	if *o.df.jobs < 0 {
		return codeError{2, fmt.Errorf("--jobs %d: give the number of pieces decoded at once (0: one per CPU)", *o.df.jobs)}
	}
	fs.Visit(func(f *flag.Flag) { o.df.jobsGiven = o.df.jobsGiven || f.Name == "jobs" })
	img, err := o.loadImage()
	if err != nil {
		return err
	}
	if len(img.Segments()) == 0 && !img.HasContexts() {
		return fmt.Errorf("decoding needs the program image (--image PROG.elf)")
	}
	in, err := openInput(rest[0])
	if err != nil {
		return err
	}
	defer in.Close()
	sink, err := o.openOutputs(img)
	if err != nil {
		return err
	}
	cnt := &flow.Counter{}
	out := flow.Sink(cnt)
	if sink != nil {
		out = flow.Multi(sink, cnt)
	}
	out, sel, err := o.sel.wrap(out, img)
	if err != nil {
		if sink != nil {
			sink.Close()
		}
		return err
	}
	var check flowCheck
	all := check.wrap(out, img, o.df)
	var r io.Reader = in
	var prog *analysis.Progress
	if o.progress.on() {
		prog = newProgress(in, rest[0], fileSize(rest[0]))
		r = prog
	}
	derr := decodeTrace(pc, o.config, o.df, rest[0], r, img, all)
	cerr := all.Close()
	if prog != nil {
		prog.Done()
	}
	if derr != nil {
		return derr
	}
	if cerr != nil {
		return cerr
	}
	fmt.Fprintf(stderr, "%s: %d ranges, %d traps, %d syncs\n", rest[0], cnt.Ranges, cnt.Traps, cnt.Events[flow.KindSync])
	sel.report(rest[0])
	return check.report(rest[0])
}

func runDump(args []string) error {
	given := protocolGiven(args)
	auto := given == "" || given == "auto"
	p := protocols["ntrace"]
	if !auto {
		var err error
		if p, err = lookupProtocol(given); err != nil {
			return err
		}
	}
	type dumpAlt struct {
		p      *protocol
		config func() (*tproto.Config, error)
	}
	var alts []dumpAlt
	register := func(fs *flag.FlagSet, p *protocol) (func() (*tproto.Config, error), *string) {
		protocolFlag(fs, "")
		dump := p.dumper(fs)
		var elfs multiFlag
		fs.Var(&elfs, "image", "program ELF `file` whose symbols name the addresses of the listing (repeatable)")
		return func() (*tproto.Config, error) {
			c, err := dump()
			if err != nil || len(elfs) == 0 {
				return c, err
			}
			if c.Dump.Bytes {
				return nil, fmt.Errorf("--image: the --bytes listing shows no full addresses to name")
			}
			img := image.NewSet()
			for _, e := range elfs {
				if err := noteInput(e); err != nil {
					return nil, err
				}
				if err := img.AddELF(e); err != nil {
					return nil, err
				}
			}
			c.Dump.Symbolize = func(a uint64) string {
				name, off, ok := img.Symbolize(a)
				switch {
				case !ok:
					return ""
				case off == 0:
					return name
				}
				return fmt.Sprintf("%s+%#x", name, off)
			}
			return c, nil
		}, fs.String("o", "-", "output `file`")
	}
	if auto {
		for _, q := range sortedProtocols() {
			fs := flag.NewFlagSet("", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			c, _ := register(fs, q)
			if _, err := parseFlags(fs, args); err == nil {
				alts = append(alts, dumpAlt{q, c})
			}
		}
		if len(alts) == 1 {
			p = alts[0].p
		}
	}
	fs := newFlagSet(dumpCmd)
	config, out := register(fs, p)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("give exactly one trace file to dump")
	}
	f, err := openInput(rest[0])
	if err != nil {
		return err
	}
	defer f.Close()
	in, err := tproto.NewInput(f)
	if err != nil {
		return fmt.Errorf("%s: %w", rest[0], err)
	}
	if auto && len(alts) > 1 {
		merged := &tproto.Config{}
		byName := map[string]func() (*tproto.Config, error){}
		for _, a := range alts {
			c, err := a.config()
			if err != nil {
				continue
			}
			byName[a.p.name] = a.config
			switch a.p.name {
			case "ntrace":
				merged.NTrace = c.NTrace
			case "etrace":
				merged.ETrace = c.ETrace
			}
		}
		lib, _ := tproto.Guess(in, merged)
		if c := byName[lib.Name()]; c != nil {
			p, config = protocols[lib.Name()], c
		}
	}
	cfg, err := config()
	if err != nil {
		return err
	}
	w, err := createOutput(*out)
	if err != nil {
		return err
	}
	if err := p.lib.Dump(in.R, w, cfg); err != nil {
		w.Close()
		return fmt.Errorf("%s: %w", rest[0], err)
	}
	return w.Close()
}
