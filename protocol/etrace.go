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
	return etrace.NewEncoder(w, cfg.ETrace, img)
}

// etraceDecoder decodes framed bytes or te_inst CSV.
type etraceDecoder struct {
	d   *etrace.Decoder
	csv bool
}

func (d etraceDecoder) Decode(r io.Reader) error {
	if d.csv {
		return d.d.DecodeCSV(r)
	}
	return d.d.Decode(r)
}

func (etraceProto) NewDecoder(img *image.Set, sink flow.Sink, cfg *Config) (Decoder, error) {
	c := cfg.ETrace
	c.Decode = cfg.Decode
	// The one place the E-Trace decoder is constructed.
	d, err := etrace.NewDecoder(img, sink, c)
	if err != nil {
		return nil, err
	}
	return etraceDecoder{d, cfg.ETraceCSV}, nil
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
