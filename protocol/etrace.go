package protocol

import (
	"fmt"
	"io"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

func init() { Register(etraceProto{}) }

// etraceProto is RISC-V Efficient Trace 2.0 (or the 0.026 draft layout).
type etraceProto struct{}

func (etraceProto) Name() string { return "etrace" }
func (etraceProto) Summary() string {
	return "RISC-V Efficient Trace (E-Trace) 2.0, or the 0.026 draft layout"
}

func (etraceProto) NewEncoder(w io.Writer, img *image.Set, cfg *Config) (ingress.Sink, error) {
	if img != nil && len(img.Segments()) == 0 {
		img = nil
	}
	enc, err := etrace.NewEncoder(w, cfg.ETrace, img)
	if err != nil || cfg.ETrace.Data == nil {
		return enc, err
	}
	// data trace: the encoder is also an ingress.DataSink
	return etrace.NewDataEncoder(enc)
}

// etraceDecoder decodes framed bytes or te_inst CSV.
type etraceDecoder struct {
	d    *etrace.Decoder
	csv  bool
	join *etrace.DataJoiner // data trace
}

func (d etraceDecoder) Decode(r io.Reader) error {
	if d.csv {
		if d.join != nil {
			return fmt.Errorf("etrace: a te_inst CSV file has no data trace")
		}
		return d.d.DecodeCSV(r)
	}
	err := d.d.Decode(r)
	if d.join != nil {
		// what the joiner holds at the end: left-over packets, the
		// count of instructions left without their access
		if jerr := d.join.Flush(); err == nil {
			err = jerr
		}
	}
	return err
}

// ForeignSources returns the source IDs of the frames of no configured
// source (etrace.Decoder.ForeignSources).
func (d etraceDecoder) ForeignSources() []uint32 { return d.d.ForeignSources() }

// DecodeJobs decodes r on up to jobs cores (etrace.Decoder.DecodeJobs),
// or serially as SerialReason says.
func (d etraceDecoder) DecodeJobs(r io.Reader, jobs int) error {
	if d.csv || d.join != nil {
		return d.Decode(r)
	}
	return d.d.DecodeJobs(r, jobs)
}

// SerialReason says why DecodeJobs decodes serially, or "".
func (d etraceDecoder) SerialReason() string {
	switch {
	case d.csv:
		return "a te_inst CSV file is decoded serially"
	case d.join != nil:
		return "data trace packets are joined with the instruction trace"
	}
	return d.d.SerialReason()
}

func (etraceProto) NewDecoder(img *image.Set, sink flow.Sink, cfg *Config) (Decoder, error) {
	c := cfg.ETrace
	c.Decode = cfg.Decode
	if c.Encap == etrace.EncapUTDD && c.SrcBits > 0 && (c.Data == nil || c.Data.Harts > 1) && !cfg.ETraceCSV {
		// one decoder per source ID (one per hart), events tagged with
		// it; with data trace of several harts, each with its own data
		// joiner
		return etrace.NewDemux(img, sink, c)
	}
	var join *etrace.DataJoiner
	if c.Data != nil {
		var err error
		if join, err = etrace.NewDataJoiner(sink, img, &c); err != nil {
			return nil, err
		}
		sink = join
	}
	// The one place the E-Trace decoder is constructed.
	d, err := etrace.NewDecoder(img, sink, c)
	if err != nil {
		return nil, err
	}
	if join != nil {
		d.Data = join
	}
	return etraceDecoder{d, cfg.ETraceCSV, join}, nil
}

func (etraceProto) Dump(r io.Reader, w io.Writer, cfg *Config) error {
	c := cfg.ETrace
	if cfg.Dump.CSV {
		if cfg.Dump.Symbolize != nil {
			return ErrNoDumpSymbols
		}
		return etrace.ToCSV(r, &c, w)
	}
	st, err := etrace.DumpWith(r, w, &c, etrace.DumpOptions{Symbolize: cfg.Dump.Symbolize})
	if err == nil && st.Errors > 0 {
		return fmt.Errorf("%d errors", st.Errors)
	}
	return err
}

func (etraceProto) Sniff(prefix []byte, cfg *Config) float64 {
	c := cfg.ETrace
	return etrace.Sniff(prefix, &c).Score()
}
