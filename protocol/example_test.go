package protocol_test

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"log"
	"os"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/protocol"
)

// Encode the PCs a program executed with a protocol picked by name, then
// decode the trace telling its protocol from its first bytes, as 'rvtrace
// decode --protocol auto' does, and say whether it decoded completely.
func Example() {
	img := image.NewSet()
	if err := img.AddELF("../examples/analysis/calls.elf"); err != nil {
		log.Fatal(err)
	}
	f, err := os.Open("../examples/analysis/calls.pcs.gz")
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	pcs, err := gzip.NewReader(f)
	if err != nil {
		log.Fatal(err)
	}
	cfg := protocol.DefaultConfig()
	enc, err := protocol.Lookup("etrace")
	if err != nil {
		log.Fatal(err)
	}
	var trace bytes.Buffer
	sink, err := enc.NewEncoder(&trace, img, cfg)
	if err != nil {
		log.Fatal(err)
	}
	src := ingress.NewPCSource(pcs, "calls.pcs", img, ingress.PCOptions{})
	for {
		b, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			log.Fatal(err)
		}
		if err := sink.Block(b); err != nil {
			log.Fatal(err)
		}
	}
	if err := sink.Close(); err != nil {
		log.Fatal(err)
	}

	in, err := protocol.NewInput(&trace)
	if err != nil {
		log.Fatal(err)
	}
	p, err := protocol.Detect(in, img, cfg)
	if err != nil {
		log.Fatal(err)
	}
	var integ flow.Integrity
	d, err := p.NewDecoder(img, &integ, cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := d.Decode(in.R); err != nil {
		log.Fatal(err)
	}
	fmt.Println(protocol.DisplayName(p)+":", integ.Summary(false))
	// Output: E-Trace: 8587 instructions, 0 gaps, 0 suspect instructions, 0 lost spans
}

// Pick a protocol by name, as --protocol does.
func ExampleLookup() {
	p, err := protocol.Lookup("etrace")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Name(), "-", p.Summary())
	fmt.Println(protocol.Names())
	// Output:
	// etrace - RISC-V Efficient Trace (E-Trace) 2.0, or the 0.026 draft layout
	// [etrace ntrace]
}
