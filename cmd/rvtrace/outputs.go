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
	open func(path string, img *image.Set) (flow.Sink, error)
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
outer:
	for i, o := range outputs {
		for _, s := range skip {
			if o.flag == s {
				paths[i] = &empty
				continue outer
			}
		}
		paths[i] = fs.String(o.flag, "", o.help)
	}
	return func(img *image.Set) (flow.Sink, error) {
		var sinks []flow.Sink
		for i, o := range outputs {
			if *paths[i] == "" {
				continue
			}
			s, err := o.open(*paths[i], img)
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
