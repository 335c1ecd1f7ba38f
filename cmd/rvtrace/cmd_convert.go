package main

import (
	"fmt"

	"github.com/rvtrace/rvtrace/ingress"
)

var convertCmd = &command{
	name:    "convert",
	summary: "convert between instruction-trace formats (PC list, PCSEQ, spike CSV -> ingress CSV or PC list)",
	usage: `Usage: rvtrace convert [--image PROG.elf] INPUT (--to-ingress OUT.csv | --to-pcs OUT.txt)

INPUT is one of --pcs FILE (with --image), --pcseq FILE, --ingress FILE.csv, --spike-csv FILE.
The ingress CSV is written one instruction per line (add --iretire-halfwords to write merged blocks).

Examples:
  rvtrace convert --image prog.elf --pcs prog.pcs --per-instruction --to-ingress prog.csv
  rvtrace convert --image prog.elf --spike-csv prog.spike.csv --to-pcs prog.pcs
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
	toCSV := fs.String("to-ingress", "", "write an ingress CSV `file`")
	toPCs := fs.String("to-pcs", "", "write a PC list `file` (needs --image for merged blocks)")
	half := fs.Bool("write-halfwords", false, "write iretire in halfwords (merged blocks)")
	withTime := fs.Bool("time", false, "write the time column")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return fmt.Errorf("unexpected argument %q", rest[0])
	}
	if (*toCSV == "") == (*toPCs == "") {
		return fmt.Errorf("give one output: --to-ingress or --to-pcs")
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
