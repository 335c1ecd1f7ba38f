package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/tarmac"
)

func init() {
	registerOutput(&output{flag: "tarmac", help: "write the flow as a Tarmac trace (RISC-V dialect) to `file`",
		open: func(path string, img *image.Set, opt outputOpts) (flow.Sink, error) {
			w, err := createOutput(path)
			if err != nil {
				return nil, err
			}
			tw := tarmac.NewWriter(w, img, tarmac.WriterOptions{})
			tw.SetCloser(w)
			return tw, nil
		}})
	tarmacCmd.run = runTarmac
	register(tarmacCmd)
}

var tarmacCmd = &command{
	name:    "tarmac",
	summary: "read, check and convert Tarmac traces (RISC-V dialect and Arm), or write one",
	usage: `Usage:
  rvtrace tarmac [--image PROG.elf] IN.tarmac [--records] [--blocks OUT.csv] [outputs]
  rvtrace tarmac --image PROG.elf IN.tarmac --protocol ntrace|etrace -o OUT.bin [encoder options]
  rvtrace tarmac --image PROG.elf --write OUT.tarmac (--pcs-in FILE | --pcseq FILE | --ingress-in FILE.csv | --spike-csv FILE)

The first form reads a Tarmac trace (the RISC-V dialect rvtrace writes, or
an Arm one as Fast Models, gem5 and Arm RTL write it: IT/IS, the ES/LD/ST
style, with or without CPU and timestamp unit; gzipped when named .gz) and
reports its blocks and traps; --records counts its records by tag
and kind instead. A line that is no Tarmac record stops it with FILE:LINE
and the reason; --lenient skips such lines, and reports how many and the
first few on stderr.
--blocks writes the ingress-port blocks it rebuilds as an ingress CSV
(iretire in halfwords, with time: read it back with --iretire-halfwords); the
flow outputs (--folded, --pprof, --chrome, --lcov, --html, --profile,
--flow, --jsonl, --tarmac) analyse or convert it.

The selectors (--src, --priv, --ctx, --from, --to, --range, --symbol,
--sample) choose what the flow outputs of the first form see; the ingress
blocks of --blocks and of the second form are not selected.

Exit status of the first form: 0 when every line was read, 3 when --lenient
skipped malformed lines, 1 on an error (a malformed line without --lenient,
an empty file).

The second form encodes the Tarmac trace (of another simulator) into
N-Trace or E-Trace with the protocol's encoder options.

The third form writes Tarmac (RISC-V dialect: IT, FD/FI, E records) from an
instruction trace; a decoded trace is written with 'rvtrace decode --tarmac
OUT.tarmac', a simulator run with 'rvtrace run --tarmac OUT.tarmac'.

Examples:
  rvtrace tarmac fvp.tarmac --records
  rvtrace tarmac --image fvp.axf fvp.tarmac --folded fvp.folded --html fvp.html
  rvtrace tarmac --image prog.elf prog.tarmac --protocol ntrace --preset best -o prog.nex
  rvtrace tarmac --image prog.elf prog.tarmac --blocks prog.csv
  rvtrace tarmac --image prog.elf --pcs-in prog.pcs --write prog.tarmac
`,
}

func runTarmac(args []string) error {
	fs := newFlagSet(tarmacCmd)
	fs.String("protocol", "", "encode the Tarmac trace with this protocol ("+protocolNames()+"), to -o")
	pname := protocolGiven(args)
	var newEnc encoderFn
	if pname != "" {
		p, err := lookupProtocol(pname)
		if err != nil {
			return err
		}
		newEnc = p.encoder(fs)
	}
	loadImage := imageFlags(fs)
	openIngress := sourceFlags(fs)
	out := fs.String("o", "", "encoded trace output `file` (with --protocol)")
	write := fs.String("write", "", "write Tarmac from the instruction trace input to `file`")
	blocksOut := fs.String("blocks", "", "write the ingress blocks as an ingress CSV `file`")
	records := fs.Bool("records", false, "print the number of records of each tag and kind")
	xlen := fs.Int("tarmac-xlen", 64, "XLEN for RISC-V records whose iset does not say")
	lenient := lenientFlag(fs) // shared with the ingress inputs
	noDisasm := fs.Bool("no-disasm", false, "with --write: leave the disassembly out (faster, smaller)")
	progress := progressFlags(fs)
	selOpts := selectFlags(fs)
	openOutputs := extraOutputFlags(fs)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	img, err := loadImage()
	if err != nil {
		return err
	}
	if *write != "" {
		if len(rest) > 0 {
			return fmt.Errorf("--write takes its input from --pcs-in, --pcseq, --ingress-in or --spike-csv, not %q", rest[0])
		}
		return writeTarmac(img, openIngress, *write, *noDisasm, progress)
	}
	if len(rest) != 1 {
		return fmt.Errorf("give one Tarmac file")
	}
	if newEnc != nil && *out == "" {
		return fmt.Errorf("--protocol %s needs -o OUT", pname)
	}
	name := rest[0]
	if *records {
		return countRecords(name, *lenient)
	}
	in, err := openInput(name)
	if err != nil {
		return err
	}
	defer in.Close()
	var r io.Reader = in
	if progress.on() {
		pr := newProgress(in, name, fileSize(name))
		defer pr.Done()
		r = pr
	}
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(r)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		r = zr
	}
	d := tarmac.NewDecoder(tarmac.NewReader(r, name), tarmacOptions(*xlen, *lenient, img))
	sink, err := openOutputs(img)
	if err != nil {
		return err
	}
	cnt := &flow.Counter{}
	counted := flow.Sink(cnt)
	if sink != nil {
		counted = flow.Multi(sink, cnt)
	}
	counted, sel, err := selOpts.wrap(counted, img)
	if err != nil {
		counted.Close()
		return err
	}
	var check flowCheck
	all := check.wrap(counted, img, nil)
	var blocks uint64
	var closers []func() error
	var csvw *ingress.CSVWriter
	if *blocksOut != "" {
		w, err := createOutput(*blocksOut)
		if err != nil {
			return err
		}
		bw := bufio.NewWriterSize(w, 1<<20)
		csvw = ingress.NewCSVWriter(bw, ingress.CSVOptions{Halfwords: true, Time: true, SIJump: true})
		closers = append(closers, csvw.Close, bw.Flush, w.Close)
	}
	encs := map[int]ingress.Sink{}
	var encOut *bufio.Writer
	if newEnc != nil {
		w, err := createOutput(*out)
		if err != nil {
			return err
		}
		encOut = bufio.NewWriterSize(w, 1<<20)
		closers = append(closers, func() error {
			var first error
			keys := make([]int, 0, len(encs))
			for k := range encs {
				keys = append(keys, k)
			}
			sort.Ints(keys)
			for _, k := range keys {
				if err := encs[k].Close(); err != nil && first == nil {
					first = err
				}
			}
			return first
		}, encOut.Flush, w.Close)
	}
	d.SetBlockSink(func(b *ingress.Block, src int) error {
		blocks++
		if b.Priv == tarmac.PrivUnknown && (csvw != nil || newEnc != nil) {
			return fmt.Errorf("%s: %w", name, tarmac.UnknownPrivError(d.Line()))
		}
		if csvw != nil {
			if err := csvw.Block(b); err != nil {
				return err
			}
		}
		if newEnc != nil {
			e := encs[src]
			if e == nil {
				var err error
				if e, err = newEnc(encOut, img, src, nil, nil); err != nil {
					return err
				}
				encs[src] = e
			}
			if err := e.Block(b); err != nil {
				return fmt.Errorf("%s: %w", *out, err)
			}
		}
		return nil
	})
	ferr := d.Flow(all)
	cerr := all.Close()
	for _, c := range closers {
		if err := c(); err != nil && cerr == nil {
			cerr = err
		}
	}
	if ferr != nil {
		return ferr
	}
	if cerr != nil {
		return cerr
	}
	if blocks == 0 && cnt.Instructions == 0 && cnt.Traps == 0 {
		return fmt.Errorf("%s: no instruction or event records: an empty file, or not a Tarmac trace", name)
	}
	fmt.Fprintf(stderr, "%s: %d ingress blocks, %d traps\n", name, blocks, cnt.Traps)
	reportSkipped(name, d.Skipped(), d.Errors())
	sel.report(name)
	if err := check.report(name); err != nil || d.Skipped() == 0 {
		return err
	}
	return exitError{3}
}

// openTarmac opens a Tarmac file, gunzipping it when its name ends in
// .gz.
func openTarmac(name string) (io.Reader, io.Closer, error) {
	in, err := openInput(name)
	if err != nil {
		return nil, nil, err
	}
	if !strings.HasSuffix(name, ".gz") {
		return in, in, nil
	}
	zr, err := gzip.NewReader(in)
	if err != nil {
		in.Close()
		return nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	return zr, in, nil
}

// countRecords prints the number of records of each tag and kind of a
// Tarmac file.
func countRecords(name string, lenient bool) error {
	r, closer, err := openTarmac(name)
	if err != nil {
		return err
	}
	defer closer.Close()
	c, err := tarmac.CountRecords(tarmac.NewReader(r, name), lenient)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%-12s %-6s %s\n", "tag", "kind", "records")
	for _, t := range c.Counts {
		tag := t.Tag
		if tag == "" {
			tag = "(untagged)"
		}
		fmt.Fprintf(stdout, "%-12s %-6s %d\n", tag, t.Kind, t.Records)
	}
	reportSkipped(name, c.Skipped, c.Errors)
	if c.Skipped > 0 {
		return exitError{3} // as the decoding forms: lines were skipped
	}
	return nil
}

// reportSkipped tells on stderr how many malformed lines --lenient
// skipped, and the first few.
func reportSkipped(name string, skipped int, errs []error) {
	if skipped == 0 {
		return
	}
	fmt.Fprintf(stderr, "%s: %d malformed lines skipped (--lenient); the first %d:\n", name, skipped, len(errs))
	for _, e := range errs {
		fmt.Fprintf(stderr, "  %v\n", e)
	}
}

// sniffTarmac reports whether the file starts like a Tarmac text trace.
func sniffTarmac(name string) bool { return sniffFile(name).Tarmac }

// sniffArm reports whether a Tarmac file holds Arm instruction records.
func sniffArm(name string) bool { return sniffFile(name).Arm }

func sniffFile(name string) tarmac.SniffResult {
	f, err := os.Open(name)
	if err != nil {
		return tarmac.SniffResult{}
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(name, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return tarmac.SniffResult{}
		}
		r = zr
	}
	return tarmac.Sniff(r)
}

// writeTarmac writes Tarmac from an ingress input.
func writeTarmac(img *image.Set, open func(*image.Set) (ingress.Source, io.Closer, error), path string, noDisasm bool, progress *progressFlag) error {
	if len(img.Segments()) == 0 && !img.HasContexts() {
		return fmt.Errorf("--write needs the program image (--image PROG.elf) for the instructions")
	}
	src, closer, err := open(img)
	if err != nil {
		return err
	}
	defer closer.Close()
	w, err := createOutput(path)
	if err != nil {
		return err
	}
	tw := tarmac.NewWriter(w, img, tarmac.WriterOptions{NoDisasm: noDisasm})
	tw.SetCloser(w)
	n, err := pump(src, tw, progress, path)
	if err != nil {
		tw.Close()
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %d ingress blocks written\n", path, n)
	return nil
}

// tarmacOptions returns the Tarmac decoder's options: the register width
// and leniency given, and the program image's choice between Zcd and
// Zcmp/Zcmt, when it holds a RISC-V ELF file, for classifying the
// instructions that share their encodings.
func tarmacOptions(xlen int, lenient bool, img *image.Set) tarmac.Options {
	o := tarmac.Options{XLEN: xlen, Lenient: lenient}
	if img != nil {
		if zc, ok := img.Zc(); ok {
			o.Zc = zc
		}
	}
	return o
}
