package main

import (
	"flag"
	"fmt"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
)

// output is a flow sink that the decode and run commands can write, chosen
// by a flag naming the output file (for example --pcs OUT.txt or
// --folded OUT.folded). Each sink package registers its outputs in the file
// of the CLI that wires it.
type output struct {
	flag string // flag name, without dashes
	help string
	// open creates the sink writing to path ("-" is standard output). img
	// is the program image (never nil, possibly empty).
	open func(path string, img *image.Set, opt outputOpts) (flow.Sink, error)
}

// outputOpts are the options of the outputs that some of them read.
type outputOpts struct {
	// noGapMarks leaves the "# gap at byte N" comment lines out of PC
	// lists (--no-gap-marks).
	noGapMarks bool
}

// gapMarksFlag registers --no-gap-marks when fs has the --pcs output.
func gapMarksFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("no-gap-marks", false, "write plain PC lists: no '# gap at byte N (message I): reason' comment line where the flow has a gap")
}

var outputs []*output

func registerOutput(o *output) { outputs = append(outputs, o) }

// outputFlags registers one string flag per output on fs (except those
// named in skip, which the command defines itself) and returns a
// function that opens the chosen sinks after parsing, as one flow.Sink
// (nil when none was chosen).
func outputFlags(fs *flag.FlagSet, skip ...string) func(img *image.Set) (flow.Sink, error) {
	paths := make([]*string, len(outputs))
	empty := ""
	var noMarks *bool
outer:
	for i, o := range outputs {
		for _, s := range skip {
			if o.flag == s {
				paths[i] = &empty
				continue outer
			}
		}
		paths[i] = fs.String(o.flag, "", o.help)
		if o.flag == "pcs" {
			noMarks = gapMarksFlag(fs)
		}
	}
	return func(img *image.Set) (flow.Sink, error) {
		var sinks []flow.Sink
		var opt outputOpts
		if noMarks != nil {
			opt.noGapMarks = *noMarks
		}
		for i, o := range outputs {
			if *paths[i] == "" {
				continue
			}
			s, err := o.open(*paths[i], img, opt)
			if err != nil {
				for _, s := range sinks {
					s.Close()
				}
				return nil, fmt.Errorf("--%s %s: %w", o.flag, *paths[i], err)
			}
			sinks = append(sinks, s)
		}
		switch len(sinks) {
		case 0:
			return nil, nil
		case 1:
			return sinks[0], nil
		}
		return flow.Multi(sinks...), nil
	}
}
