package main

import (
	"bufio"
	"fmt"
	"io"

	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/flow"
)

var encodeCmd = &command{
	name:    "encode",
	summary: "encode an instruction trace (PC list, ingress CSV, ...) into N-Trace or E-Trace bytes",
	usage: `Usage: rvtrace encode --protocol ntrace|etrace [--image PROG.elf] INPUT [options] -o OUT.bin

INPUT is one of --pcs FILE (with --image), --pcseq FILE, --ingress FILE.csv, --spike-csv FILE.

--filter and --trigger put the filter stage of the Trace Control Interface in
front of the encoder (see -h for their syntax).

Examples:
  rvtrace encode --protocol ntrace --image prog.elf --pcs prog.pcs --preset best -o prog.nex
  rvtrace encode --image prog.elf --pcs prog.pcs --filter 'addr=0x80001000-0x80002000' -o part.nex
  rvtrace encode --protocol ntrace --image prog.elf --pcs prog.pcs --mode htm --implicit-return 3 --timestamps -o prog.nex
  rvtrace encode --protocol ntrace --ingress prog.csv --preset ref-htm -o prog.nex
`,
}

var decodeCmd = &command{
	name:    "decode",
	summary: "decode N-Trace or E-Trace bytes with the program image back to the instruction flow",
	usage: `Usage: rvtrace decode --protocol ntrace|etrace --image PROG.elf TRACE [outputs]

Outputs (any number; without one, a summary is printed): --pcs, --flow, --jsonl and the analysis outputs.

Examples:
  rvtrace decode --protocol ntrace --image prog.elf prog.nex --pcs decoded.txt
  rvtrace decode --image prog.elf prog.nex --preset best --flow -
`,
}

var dumpCmd = &command{
	name:    "dump",
	summary: "list the messages or packets of a trace file with all their fields",
	usage: `Usage: rvtrace dump --protocol ntrace|etrace TRACE [--bytes] [--stats]

Examples:
  rvtrace dump prog.nex
  rvtrace dump --bytes prog.nex | less
`,
}

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
	newEnc := p.encoder(fs)
	withFilter := filter.Flags(fs)
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
	enc, err := newEnc(cw, img, 0)
	if err != nil {
		f.Close()
		return err
	}
	rawEnc := enc
	if enc, err = withFilter(enc); err != nil {
		f.Close()
		return err
	}
	blocks, err := pump(src, enc)
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
		if d, ok := src.(interface{ Discontinuities() uint64 }); ok && d.Discontinuities() > 0 {
			line += fmt.Sprintf(" (%d unexplained PC changes reported as exceptions)", d.Discontinuities())
		}
		if l, ok := rawEnc.(interface{ LossSummary() string }); ok && l.LossSummary() != "" {
			line += "; " + l.LossSummary()
		}
		fmt.Fprintln(stderr, line)
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

func runDecode(args []string) error {
	fs := newFlagSet(decodeCmd)
	fs.String("protocol", "ntrace", "trace protocol: "+protocolNames())
	p, err := lookupProtocol(protocolFromArgs(args))
	if err != nil {
		return err
	}
	loadImage := imageFlags(fs)
	openOutputs := outputFlags(fs)
	onlySrc := fs.Int("src", -1, "decode only the messages of this trace source (SRC field value); default all")
	decode := p.decoder(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("give exactly one trace file to decode")
	}
	img, err := loadImage()
	if err != nil {
		return err
	}
	if len(img.Segments()) == 0 {
		return fmt.Errorf("decoding needs the program image (--image PROG.elf)")
	}
	in, err := openInput(rest[0])
	if err != nil {
		return err
	}
	defer in.Close()
	sink, err := openOutputs(img)
	if err != nil {
		return err
	}
	cnt := &flow.Counter{}
	all := flow.Sink(cnt)
	if sink != nil {
		all = flow.Multi(sink, cnt)
	}
	if *onlySrc >= 0 {
		all = flow.OnlySrc(all, uint32(*onlySrc))
	}
	derr := decode(bufio.NewReaderSize(in, 1<<20), rest[0], img, all)
	cerr := all.Close()
	if derr != nil {
		return fmt.Errorf("%s: %w", rest[0], derr)
	}
	if cerr != nil {
		return cerr
	}
	fmt.Fprintf(stderr, "%s: %d instructions in %d ranges, %d traps, %d syncs, %d gaps\n", rest[0],
		cnt.Instructions, cnt.Ranges, cnt.Traps, cnt.Events[flow.KindSync], cnt.Gaps)
	if cnt.Gaps > 0 {
		return exitError{3}
	}
	return nil
}

func runDump(args []string) error {
	fs := newFlagSet(dumpCmd)
	fs.String("protocol", "ntrace", "trace protocol: "+protocolNames())
	p, err := lookupProtocol(protocolFromArgs(args))
	if err != nil {
		return err
	}
	dump := p.dumper(fs)
	out := fs.String("o", "-", "output `file`")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 1 {
		return fmt.Errorf("give exactly one trace file to dump")
	}
	in, err := openInput(rest[0])
	if err != nil {
		return err
	}
	defer in.Close()
	w, err := createOutput(*out)
	if err != nil {
		return err
	}
	if err := dump(bufio.NewReaderSize(in, 1<<20), rest[0], w); err != nil {
		w.Close()
		return fmt.Errorf("%s: %w", rest[0], err)
	}
	return w.Close()
}
