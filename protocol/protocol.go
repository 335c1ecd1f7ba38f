// Package protocol is the registry of the trace protocols rvtrace
// encodes and decodes (N-Trace and E-Trace), so that a Go program can
// pick one by name, as the rvtrace command does with --protocol, or let
// the trace say which it is (Detect), and then encode, decode or dump it
// with typed configurations.
//
// Each Protocol reads its own part of a Config: N-Trace its NTrace field,
// E-Trace its ETrace field; both read the options every decoder shares
// (Decode). Flags and files are the caller's business: the rvtrace command
// maps its flags onto a Config.
//
// Sniffing guards decoding against the wrong input. NewInput reads the
// start of a trace (decompressing gzip transparently and refusing an empty
// trace with decode.ErrEmpty); Detect picks the protocol whose decoder
// follows the program image through that start without a gap; Check
// tells, before a long decode, when the start of the trace fits another
// protocol or another configuration (a SRC field the configuration does
// not have) or no address of it is in the image, as a *MismatchError.
package protocol

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/ntrace"
)

// Config is the configuration of a protocol's encoder, decoder and dump.
// Each protocol reads the fields named for it and ignores the others.
type Config struct {
	// NTrace configures the N-Trace encoder; the decoder and the dump use
	// its wire-format fields (SrcBits, ExtendAddrMSB, XLEN, AllJumps).
	NTrace ntrace.Config
	// NTraceOwnEncoder says the N-Trace trace was written by rvtrace's
	// encoder configured exactly as NTrace: the decoder then takes its
	// configuration from ntrace.DecoderConfigFrom(NTrace), with every
	// check of what that encoder never sends (idle bytes inside a trace, a
	// periodic sync off its period, a sync reporting a jump...). A trace
	// from another encoder, or from rvtrace's configured otherwise, then
	// has false gaps.
	NTraceOwnEncoder bool
	// JVT is the base of the Zcmt jump table for the N-Trace decoder (0:
	// the image's __jvt_base$ symbol when it has one).
	JVT uint64
	// ETrace configures the E-Trace encoder, decoder and dump.
	ETrace etrace.Config
	// ETraceCSV says that the E-Trace decoder's input is the reference
	// flow's te_inst CSV rather than framed bytes.
	ETraceCSV bool
	// Decode holds the options every protocol's decoder shares
	// (AllowTruncated for circular-buffer captures).
	Decode decode.Options
	// MaxInstructions, when not 0, bounds the instructions a decoder
	// decodes (N-Trace), as a guard against a hostile trace whose repeat
	// counts describe billions of instructions.
	MaxInstructions uint64
	// Dump configures Dump.
	Dump DumpOptions
}

// DumpOptions configure a protocol's dump.
type DumpOptions struct {
	// Bytes lists N-Trace traces one byte a line, like the N-Trace
	// reference code's dump.
	Bytes bool
	// CSV writes E-Trace packets as the reference flow's te_inst CSV
	// instead of a listing.
	CSV bool
	// Stats, when not nil, receives statistics after the listing
	// (N-Trace: messages and bytes by TCODE).
	Stats io.Writer
	// Symbolize, when not nil, names the function an address is in
	// ("main+0x10", "" for none): the N-Trace listing shows it after
	// every full address, the E-Trace listing after every address a
	// packet gives, made absolute (etrace.DumpOptions). The E-Trace
	// te_inst CSV refuses it (ErrNoDumpSymbols).
	Symbolize func(addr uint64) string
}

// ErrNoDumpSymbols is the error of an E-Trace te_inst CSV dump asked for
// symbols.
var ErrNoDumpSymbols = errors.New("the te_inst CSV has no place for symbols: dump without --to-csv to see them")

// DefaultConfig returns a Config with each protocol's defaults: N-Trace in
// HTM mode, E-Trace 2.0 in its default configuration.
func DefaultConfig() *Config {
	return &Config{NTrace: ntrace.Config{Mode: ntrace.HTM}, ETrace: etrace.DefaultConfig()}
}

// Decoder decodes a whole trace read from r into the flow sink it was
// made with. It reports lost or undecodable trace as gap events and
// returns an error only when decoding cannot go on (a sink or read error,
// an empty trace or one without a sync); it does not close the sink.
type Decoder interface {
	Decode(r io.Reader) error
}

// Protocol is one trace protocol.
type Protocol interface {
	// Name is the protocol's name ("ntrace", "etrace").
	Name() string
	// Summary describes the protocol in a few words.
	Summary() string
	// NewEncoder returns an ingress sink that encodes the blocks it is
	// given and writes the trace to w. img is the program image when
	// one is known (nil otherwise).
	NewEncoder(w io.Writer, img *image.Set, cfg *Config) (ingress.Sink, error)
	// NewDecoder returns a decoder following the program in img that
	// sends the decoded flow to sink.
	NewDecoder(img *image.Set, sink flow.Sink, cfg *Config) (Decoder, error)
	// Dump writes a readable listing of the messages or packets read
	// from r to w. Bytes that do not parse are listed in place.
	Dump(r io.Reader, w io.Writer, cfg *Config) error
	// Sniff tells how well prefix, the start of a trace, parses as this
	// protocol with cfg: 0 (not at all) to 1 (every byte).
	Sniff(prefix []byte, cfg *Config) float64
}

var registry = map[string]Protocol{}

// Register adds p to the registry under p.Name(), replacing a protocol
// of that name. The N-Trace and E-Trace protocols are registered by this
// package.
func Register(p Protocol) { registry[p.Name()] = p }

// Lookup returns the protocol registered under name.
func Lookup(name string) (Protocol, error) {
	if p := registry[name]; p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("unknown protocol %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Names returns the names of the registered protocols, sorted.
func Names() []string {
	n := make([]string, 0, len(registry))
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// All returns the registered protocols, sorted by name.
func All() []Protocol {
	var out []Protocol
	for _, n := range Names() {
		out = append(out, registry[n])
	}
	return out
}
