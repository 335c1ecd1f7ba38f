package protocol

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
)

// PrefixBytes is how much of the start of a trace NewInput reads ahead for
// Detect and Check.
const PrefixBytes = 64 << 10

// Input is a trace being read: its start read ahead for sniffing, and the
// reader that gives the whole trace from its first byte.
type Input struct {
	// R reads the whole trace (decompressed when Gzip).
	R io.Reader
	// Prefix is its first bytes (at most PrefixBytes).
	Prefix []byte
	// Whole is set when Prefix is the whole trace.
	Whole bool
	// Gzip is set when the input was gzip-compressed and R decompresses
	// it; byte offsets in gaps then count decompressed bytes.
	Gzip bool
}

var gzipMagic = []byte{0x1f, 0x8b}

// NewInput reads the start of the trace from r: it decompresses a
// gzip-compressed trace transparently and returns a *decode.Error wrapping
// decode.ErrEmpty for a trace without a byte.
func NewInput(r io.Reader) (*Input, error) {
	br := bufio.NewReaderSize(r, PrefixBytes)
	in := &Input{R: br}
	if magic, _ := br.Peek(2); bytes.Equal(magic, gzipMagic) {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("gzip-compressed, but %w", err)
		}
		br = bufio.NewReaderSize(zr, PrefixBytes)
		in.R, in.Gzip = br, true
	}
	p, err := br.Peek(PrefixBytes)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, err
	}
	in.Prefix, in.Whole = p, err == io.EOF
	if len(p) == 0 {
		return nil, &decode.Error{Offset: 0, Index: -1, Err: decode.ErrEmpty}
	}
	return in, nil
}

// tailMargin is the length of the end of a cut prefix where a gap may be
// the cut itself (a message or packet split by the end of the prefix).
const tailMargin = 512

// Trial is the result of decoding the start of a trace.
type Trial struct {
	// Instructions decoded, gaps found (those at the cut end of a prefix
	// left out), sync events, and sync events at an address of the image.
	Instructions uint64
	Gaps         int
	Syncs        int
	// Warnings counts the warnings (flow.KindWarn: a configuration
	// that disagrees with what the trace announces).
	Warnings     int
	SyncsInImage int
	// FirstSync is the address of the first sync event (when Syncs > 0).
	FirstSync uint64
	// Err is what the decoder returned (nil when it finished).
	Err error
	// Digest is a hash of the events decoded but gaps and warnings,
	// without their byte offsets and message indexes: two trial decodes
	// of the same bytes with the same digest (and Gaps) gave the same
	// flow (sources, instructions, traps, data accesses), told apart at
	// most by where and why they lost trace.
	Digest uint64
}

// Fits reports whether the decoder followed the image through the start
// of the trace: instructions decoded without a gap.
func (t Trial) Fits() bool { return t.Err == nil && t.Gaps == 0 && t.Instructions > 0 }

// trialMaxInstructions bounds the work of a trial decode.
const trialMaxInstructions = 1 << 22

// TrialDecode decodes in.Prefix with p and cfg into a tally (no output)
// and tells how well the trace fits the image.
func TrialDecode(p Protocol, in *Input, img *image.Set, cfg *Config) Trial {
	c := *cfg
	c.MaxInstructions = trialMaxInstructions
	c.Decode.AllowTruncated = true
	t := &trialSink{img: img, cut: int64(len(in.Prefix)) - tailMargin}
	if in.Whole {
		t.cut = int64(len(in.Prefix)) + 1
	}
	d, err := p.NewDecoder(img, t, &c)
	if err != nil {
		return Trial{Err: err}
	}
	err = d.Decode(bytes.NewReader(in.Prefix))
	if t.res.Instructions >= trialMaxInstructions {
		err = nil // the limit, not the trace, stopped it
	}
	t.res.Err = err
	return t.res
}

type trialSink struct {
	img *image.Set
	cut int64
	res Trial
}

func (t *trialSink) Event(e *flow.Event) error {
	if e.Kind != flow.KindGap && e.Kind != flow.KindWarn {
		t.digest(e)
	}
	switch e.Kind {
	case flow.KindRange:
		t.res.Instructions += e.N
	case flow.KindSync:
		if t.res.Syncs == 0 {
			t.res.FirstSync = e.Addr
		}
		t.res.Syncs++
		if t.img.Contains(e.Addr) {
			t.res.SyncsInImage++
		}
	case flow.KindWarn:
		t.res.Warnings++
	case flow.KindGap:
		if e.Addr != 0 && errors.Is(e.Err, decode.ErrOutsideImage) {
			// A sync whose address is outside every image.
			if t.res.Syncs == 0 {
				t.res.FirstSync = e.Addr
			}
			t.res.Syncs++
		}
		if e.Offset < t.cut && !errors.Is(e.Err, decode.ErrTruncated) {
			t.res.Gaps++
		}
	}
	return nil
}

func (t *trialSink) Close() error { return nil }

// digest adds e to Trial.Digest (FNV-1a over 64-bit words).
func (t *trialSink) digest(e *flow.Event) {
	h := t.res.Digest
	if h == 0 {
		h = 14695981039346656037
	}
	a := &e.Access
	for _, v := range [...]uint64{uint64(e.Kind), uint64(e.Src), uint64(e.End), b2u(e.Interrupt), uint64(e.Priv), uint64(e.Reason),
		e.N, e.Start, e.Last, e.Addr, e.Target, e.Cause, e.TVal, e.Context, e.Time,
		a.IAddr, a.DAddr, a.Data, a.SData, uint64(a.LRID), uint64(a.DType), uint64(a.DSize), b2u(a.Split), uint64(e.AccessHas)} {
		h = (h ^ v) * 1099511628211
	}
	t.res.Digest = h
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// MismatchError says that a trace does not fit the protocol, the
// configuration or the image it is decoded with, and what it looks like
// instead.
type MismatchError struct {
	// Protocol is the protocol the trace was to be decoded with.
	Protocol string
	// LooksLike names the protocol whose decoder follows the image through
	// the start of the trace, when another one does ("" otherwise).
	LooksLike string
	// SrcBits is the SRC field width with which the trace decodes, when
	// the configuration has another one (-1 otherwise).
	SrcBits int
	// NotInImage is set when no sync address of the trace is in the image
	// (FirstSync is the first one).
	NotInImage bool
	FirstSync  uint64
}

func (e *MismatchError) Error() string {
	switch {
	case e.LooksLike != "":
		return fmt.Sprintf("looks like %s, not %s", displayName(e.LooksLike), displayName(e.Protocol))
	case e.SrcBits > 0:
		return fmt.Sprintf("messages carry a SRC field of %d bits", e.SrcBits)
	case e.SrcBits == 0:
		return "messages carry no SRC field"
	case e.NotInImage:
		return fmt.Sprintf("no sync address of the trace is in the program image (the first is %#x): wrong image?", e.FirstSync)
	}
	return "the trace does not fit its configuration"
}

// displayName is how people write a protocol's name.
func displayName(name string) string {
	switch name {
	case "ntrace":
		return "N-Trace"
	case "etrace":
		return "E-Trace"
	}
	return name
}

// DisplayName returns how people write the protocol's name ("N-Trace",
// "E-Trace"; the name itself for others).
func DisplayName(p Protocol) string { return displayName(p.Name()) }

// Detect picks the protocol of a trace from its start: the one whose
// decoder (with cfg) follows the image without a gap, decoding the most
// instructions; when none does, the one whose wire format the start
// parses best as (Default on a tie). The error is a *MismatchError from Check when the best
// guess does not fit either.
func Detect(in *Input, img *image.Set, cfg *Config) (Protocol, error) {
	best := Fitting(in, img, cfg)
	if best != nil {
		return best, nil
	}
	score := -1.0
	for _, p := range All() {
		if s := p.Sniff(in.Prefix, cfg); s > score || s == score && p.Name() == Default || cfg.ETraceCSV && p.Name() == "etrace" {
			best, score = p, s
		}
	}
	return best, Check(best, in, img, cfg)
}

// Fitting returns the protocol whose decoder (with cfg) follows the image
// through the start of the trace without a gap, decoding the most
// instructions (Detect's choice when there is one), or nil when none
// does.
func Fitting(in *Input, img *image.Set, cfg *Config) Protocol {
	var best Protocol
	var bestN uint64
	for _, p := range All() {
		if cfg.ETraceCSV && p.Name() != "etrace" {
			continue
		}
		if t := TrialDecode(p, in, img, cfg); t.Fits() && (best == nil || t.Instructions > bestN) {
			best, bestN = p, t.Instructions
		}
	}
	return best
}

// Check decodes the start of the trace with p and cfg and returns a
// *MismatchError when it does not fit but fits another protocol, or the
// same with another SRC field width (N-Trace), or when no sync address of
// it is in the image. It returns nil when the start decodes, and also
// when it decodes with gaps that nothing else explains (a damaged trace:
// decoding it reports them).
func Check(p Protocol, in *Input, img *image.Set, cfg *Config) error {
	t := TrialDecode(p, in, img, cfg)
	if t.Fits() {
		return nil
	}
	for _, q := range All() {
		if q.Name() == p.Name() || cfg.ETraceCSV {
			continue
		}
		if TrialDecode(q, in, img, cfg).Fits() {
			return &MismatchError{Protocol: p.Name(), LooksLike: q.Name(), SrcBits: -1}
		}
	}
	if p.Name() == "ntrace" {
		have := cfg.NTrace.SrcBits
		for bits := 0; bits <= 12; bits++ {
			if bits == have {
				continue
			}
			c := *cfg
			c.NTrace.SrcBits = bits
			if c.NTrace.SrcID >= 1<<bits {
				c.NTrace.SrcID = 0
			}
			if TrialDecode(p, in, img, &c).Fits() {
				return &MismatchError{Protocol: p.Name(), SrcBits: bits}
			}
		}
	}
	if t.Syncs > 0 && t.SyncsInImage == 0 {
		return &MismatchError{Protocol: p.Name(), SrcBits: -1, NotInImage: true, FirstSync: t.FirstSync}
	}
	return nil
}

// Default is the name of the protocol Detect and Guess prefer when the
// start of a trace fits none better than another.
const Default = "ntrace"

// Guess returns the protocol whose wire format the start of a trace
// parses best as, with its score (0 to 1), without an image: for a dump.
// On a tie it returns the Default protocol.
func Guess(in *Input, cfg *Config) (Protocol, float64) {
	var best Protocol
	score := -1.0
	for _, p := range All() {
		if s := p.Sniff(in.Prefix, cfg); s > score || s == score && p.Name() == Default {
			best, score = p, s
		}
	}
	return best, score
}

// Framing is a configuration a trace may be framed with (the source ID
// field of N-Trace messages, the encapsulation of E-Trace packets), and
// how the start of the trace decodes with it.
type Framing struct {
	Config *Config
	Trial  Trial
}

// better reports whether trial a decodes the start of a trace better than
// b: fewer gaps, then fewer warnings, then more instructions.
func better(a, b Trial) bool {
	if a.Gaps != b.Gaps {
		return a.Gaps < b.Gaps
	}
	if a.Warnings != b.Warnings {
		return a.Warnings < b.Warnings
	}
	return a.Instructions > b.Instructions
}

// ChooseFraming decodes the start of the trace with p and each of the
// candidate configurations, given in order of preference, and returns
// those that decode it best: the fewest gaps, then the fewest warnings,
// then the most instructions,
// with at least one instruction after a sync. Candidates that decode it to
// the same flow (Trial.Digest) are one: the first of them stands for the
// others. One Framing returned is the framing of the trace as far as its
// start tells; several decode it equally well to different flows (the
// start does not tell them apart: the caller must not choose); none, no
// candidate decodes an instruction.
func ChooseFraming(p Protocol, in *Input, img *image.Set, cands []*Config) []Framing {
	var best []Framing
	for _, c := range cands {
		t := TrialDecode(p, in, img, c)
		if t.Instructions == 0 || t.Syncs == 0 {
			continue
		}
		switch {
		case len(best) == 0 || better(t, best[0].Trial):
			best = append(best[:0], Framing{c, t})
		case !better(best[0].Trial, t) && !slices.ContainsFunc(best, func(f Framing) bool { return f.Trial.Digest == t.Digest }):
			best = append(best, Framing{c, t})
		}
	}
	return best
}
