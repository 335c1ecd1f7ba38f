package main

import (
	"fmt"

	"github.com/rvtrace/rvtrace/ingress"
)

var convertCmd = &command{
	name:    "convert",
	summary: "convert between instruction-trace formats (PC list, PCSEQ, spike CSV -> ingress CSV or PC list)",
	usage: `Usage: rvtrace convert [--image PROG.elf] INPUT -o OUT [--format ingress|pcs]

INPUT is one of --pcs-in FILE (with --image), --pcseq FILE, --ingress-in FILE.csv, --spike-csv FILE.
-o writes an ingress CSV (--format ingress, the default) or a PC list
(--format pcs); --to-ingress OUT and --to-pcs OUT say the same in one flag.
The ingress CSV is written one instruction per line (add --iretire-halfwords to write merged blocks).

Examples:
  rvtrace convert --image prog.elf --pcs-in prog.pcs --per-instruction -o prog.csv
  rvtrace convert --image prog.elf --spike-csv prog.spike.csv --format pcs -o prog.pcs
`,
}

func init() {
	convertCmd.run = runConvert
	register(convertCmd)
}

func runConvert(args []string) error {
	fs := newFlagSet(convertCmd)
	loadImage := imageFlags(fs)
	openSource := sourceFlags(fs)
	out := fs.String("o", "", "output `file`, written as --format says")
	format := fs.String("format", "ingress", "format of -o: ingress (CSV) or pcs (PC list; needs --image for merged blocks)")
	toCSV := fs.String("to-ingress", "", "write an ingress CSV `file` (as -o FILE --format ingress)")
	toPCs := fs.String("to-pcs", "", "write a PC list `file` (as -o FILE --format pcs; needs --image for merged blocks)")
	half := fs.Bool("write-halfwords", false, "write iretire in halfwords (merged blocks)")
	withTime := fs.Bool("time", false, "write the time column")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected argument %q", rest[0])
	}
	if *out != "" {
		if *toCSV != "" || *toPCs != "" {
			return fmt.Errorf("give one output: -o, --to-ingress or --to-pcs")
		}
		switch *format {
		case "ingress":
			toCSV = out
		case "pcs":
			toPCs = out
		default:
			return fmt.Errorf("--format %q: want ingress or pcs", *format)
		}
	}
	if (*toCSV == "") == (*toPCs == "") {
		return fmt.Errorf("give one output: -o FILE (with --format ingress or pcs), --to-ingress or --to-pcs")
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
	var sink ingress.Sink
	if *toCSV != "" {
		w, err := createOutput(*toCSV)
		if err != nil {
			return err
		}
		sink = ingress.NewCSVWriter(w, ingress.CSVOptions{Halfwords: *half, Time: *withTime, SIJump: true})
	} else {
		w, err := createOutput(*toPCs)
		if err != nil {
			return err
		}
		sink = ingress.NewPCListSink(w, img)
	}
	if _, err := pump(src, sink, nil, ""); err != nil {
		sink.Close()
		return err
	}
	return sink.Close()
}
