package protocol

import (
	"fmt"
	"io"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
)

func init() { Register(ntraceProto{}) }

// ntraceProto is RISC-V N-Trace 1.0.
type ntraceProto struct{}

func (ntraceProto) Name() string    { return "ntrace" }
func (ntraceProto) Summary() string { return "RISC-V N-Trace 1.0 (Nexus IEEE-5001 based)" }

func (ntraceProto) NewEncoder(w io.Writer, img *image.Set, cfg *Config) (ingress.Sink, error) {
	c := cfg.NTrace
	if img != nil && c.XLEN == 0 {
		c.XLEN = img.XLEN()
	}
	return ntrace.NewEncoder(w, c)
}

// ntraceDecoderConfig is the N-Trace decoder configuration for cfg and
// img. By default it takes only what the wire format needs from
// cfg.NTrace (and whether direct jumps are traced as branches): a decoder
// learns the mode and the optimisations from the messages, and the
// encoder-specific checks of ntrace.DecoderConfigFrom would reject a
// trace whose encoder was configured otherwise than cfg's defaults. With
// cfg.NTraceOwnEncoder the user says the trace is rvtrace's own, written
// with cfg.NTrace, and those checks apply.
func ntraceDecoderConfig(img *image.Set, cfg *Config) ntrace.DecoderConfig {
	dc := ntrace.DecoderConfig{Wire: cfg.NTrace.Wire(), AllJumps: cfg.NTrace.AllJumps}
	if cfg.NTraceOwnEncoder {
		dc = ntrace.DecoderConfigFrom(cfg.NTrace)
	}
	dc.Wire.XLEN = img.XLEN()
	dc.JVT = cfg.JVT
	if dc.JVT == 0 {
		if a, ok := img.Lookup("__jvt_base$"); ok {
			dc.JVT = a
		}
	}
	dc.Decode = cfg.Decode
	dc.MaxInstructions = cfg.MaxInstructions
	return dc
}

// NewDecoder returns an *ntrace.Decoder (its Stats method gives message
// statistics).
func (ntraceProto) NewDecoder(img *image.Set, sink flow.Sink, cfg *Config) (Decoder, error) {
	if err := cfg.NTrace.Validate(); err != nil {
		return nil, err
	}
	// The one place the N-Trace decoder is constructed.
	d, err := ntrace.NewDecoder(img, sink, ntraceDecoderConfig(img, cfg))
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (ntraceProto) Dump(r io.Reader, w io.Writer, cfg *Config) error {
	wire := cfg.NTrace.Wire()
	if wire.XLEN == 0 {
		wire.XLEN = 64
	}
	var sw *symWriter
	if cfg.Dump.Symbolize != nil && !cfg.Dump.Bytes {
		sw = &symWriter{w: w, sym: cfg.Dump.Symbolize}
		w = sw
	}
	st, err := ntrace.Dump(r, w, ntrace.DumpOptions{Bytes: cfg.Dump.Bytes, Wire: wire})
	if sw != nil {
		if ferr := sw.flush(); err == nil {
			err = ferr
		}
	}
	if cfg.Dump.Stats != nil && st != nil {
		WriteNTraceStats(cfg.Dump.Stats, st)
	}
	return err
}

func (ntraceProto) Sniff(prefix []byte, cfg *Config) float64 {
	return ntrace.Sniff(prefix, cfg.NTrace.Wire()).Score()
}

// WriteNTraceStats writes N-Trace message statistics, one line per TCODE.
func WriteNTraceStats(w io.Writer, st *ntrace.Stats) {
	fmt.Fprintf(w, "%d bytes, %d messages, %d idle bytes, %d malformed\n", st.Bytes, st.Messages, st.Idles, st.Errors)
	for tc := 0; tc < 64; tc++ {
		if st.ByTCode[tc] > 0 {
			fmt.Fprintf(w, "  %-24s %8d messages %9d bytes\n", ntrace.TCode(tc), st.ByTCode[tc], st.BytesByTCode[tc])
		}
	}
	if st.Instructions > 0 {
		fmt.Fprintf(w, "  %d instructions, %.3f bits/instruction\n", st.Instructions, st.BitsPerInstruction())
	}
}
