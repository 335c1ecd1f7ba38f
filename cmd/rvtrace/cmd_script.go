package main

import (
	"flag"
	"fmt"
	"io"

	"github.com/rvtrace/rvtrace/analysis"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
)

var scriptCmd = &command{
	name:    "script",
	summary: "list every executed instruction of a trace, one per line, like perf script",
	usage: `Usage: rvtrace script [--protocol auto|ntrace|etrace] --image PROG.elf TRACE [-F FIELDS] [--ranges] [-o FILE] [selectors]

Decodes the trace as rvtrace decode does and writes one line per executed
instruction (or, with --ranges, per range of consecutive instructions), with
the columns -F chooses, as perf script -F takes them: a comma-separated list
replaces the default set, +field and -field add to it or remove from it.

Fields: idx (instruction index from 0), time (last timestamp), src (trace
source), priv, ctx (privilege and context), ip (address), sym (symbol+offset),
srcline (file:line from DWARF), insn (disassembly), branch (how the last
instruction of a range left it, with the next address; not-taken on a branch
inside a range). Default: idx,ip,sym,insn,branch.

A '#' line names the columns (--no-header leaves it out). Traps are listed as
'TRAP exception|interrupt cause C tval V at EPC handler H' lines, lost trace as
'GAP at byte N (message I): reason' lines, warnings as WARNING lines.
'rvtrace decode --script FILE' writes the same listing with the default
fields next to other outputs.
` + selectUsage + integrityUsage + `
Examples:
  rvtrace script --image prog.elf prog.nex > prog.script
  rvtrace script --image prog.elf prog.nex -F +srcline,-idx --symbol main
  rvtrace script --image prog.elf prog.nex --ranges --from 1000000 --to 1001000
`,
}

func init() {
	scriptCmd.run = runScript
	register(scriptCmd)
	registerOutput(&output{flag: "script", help: "write one line per executed instruction (rvtrace script's listing, default fields) to `file`",
		open: func(path string, img *image.Set, opt outputOpts) (flow.Sink, error) {
			w, err := createOutput(path)
			if err != nil {
				return nil, err
			}
			s := analysis.NewScript(w, img, analysis.ScriptOptions{})
			s.SetCloser(w)
			return s, nil
		}})
}

// scriptOpts are the flags of the script command.
type scriptOpts struct {
	decodeOpts
	fields   *string
	ranges   *bool
	noHeader *bool
	out      *string
	progress *progressFlag
}

func scriptCmdFlags(fs *flag.FlagSet, p *protocol) *scriptOpts {
	protocolFlag(fs, "")
	o := &scriptOpts{}
	o.loadImage = imageFlags(fs)
	o.openOutputs = outputFlags(fs, "script")
	o.sel = selectFlags(fs)
	o.df = addDecodeFlags(fs)
	o.config = p.decoder(fs)
	o.fields = fs.String("F", "", "the `fields` (comma separated; +f, -f change the default set idx,ip,sym,insn,branch)")
	o.ranges = fs.Bool("ranges", false, "one line per range instead of one per instruction")
	o.noHeader = fs.Bool("no-header", false, "leave out the '#' line naming the columns")
	o.out = fs.String("o", "-", "output `file`")
	o.progress = progressFlags(fs)
	return o
}

func runScript(args []string) error {
	pc, err := resolveProtocol(args, func(fs *flag.FlagSet, p *protocol) decoderConfigFn {
		return scriptCmdFlags(fs, p).config
	})
	if err != nil {
		return err
	}
	fs := newFlagSet(scriptCmd)
	o := scriptCmdFlags(fs, pc.p)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("give exactly one trace file")
	}
	opt := analysis.ScriptOptions{Ranges: *o.ranges, NoHeader: *o.noHeader}
	if *o.fields != "" {
		if opt.Fields, err = analysis.ParseScriptFields(*o.fields); err != nil {
			return fmt.Errorf("-F %s: %w", *o.fields, err)
		}
	}
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
	// Check the selectors before creating the output.
	if _, err := o.sel.selector(img); err != nil {
		return err
	}
	w, err := createOutput(*o.out)
	if err != nil {
		return err
	}
	script := analysis.NewScript(w, img, opt)
	script.SetCloser(w)
	out := flow.Sink(script)
	extra, err := o.openOutputs(img)
	if err != nil {
		script.Close()
		return err
	}
	if extra != nil {
		out = flow.Multi(script, extra)
	}
	out, sel, err := o.sel.wrap(out, img)
	if err != nil {
		out.Close()
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
	what := "instructions"
	if *o.ranges {
		what = "ranges"
	}
	fmt.Fprintf(stderr, "%s: %d %s listed\n", rest[0], script.Lines(), what)
	sel.report(rest[0])
	return check.report(rest[0])
}
