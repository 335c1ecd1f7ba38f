package etrace

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/image"
)

// The framing campaign: traces of real programs in every framing (raw,
// UTDD, several sources through a Funnel) are corrupted (bit flips, one
// or several; inserted, deleted bytes; cuts) and each decoded flow is
// checked against the integrity rule with the re-encode oracle. An
// outcome is one of:
//
//   - gap: the decoder reported a gap (or refused the trace: no sync);
//     every instruction it emitted outside the gaps' suspect counts is
//     one the program executed, in order;
//   - clean: no gap, and the decoded flow is the truth exactly (the
//     corruption did not matter, as a UTDD null byte);
//   - allowed: no gap, the flow differs, but the corrupted bytes are a
//     valid trace of it (re-encoding the decoded flow gives them, UTDD
//     null bytes between frames and timestamp values aside);
//   - violation: anything else.

// outcome of one corrupted trace
const (
	outGap = iota
	outClean
	outAllowed
	outViolation
)

// campaignTrace is a clean trace the campaign corrupts.
type campaignTrace struct {
	name  string
	cfg   Config
	img   *image.Set
	data  []byte
	truth map[uint32][]uint64 // each source's retired PCs (source 0 alone without a Demux)
	multi bool                // several sources: decoded with a Demux
	small bool                // bound the decoder's walks (fuzzing)
}

// check decodes bad and classifies the result; a violation comes with its
// description.
func (tr *campaignTrace) check(t testing.TB, bad []byte) (int, string) {
	if tr.multi {
		return tr.checkMulti(t, bad)
	}
	s, err := decodeInto(t, tr.cfg, tr.img, bad, tr.small)
	if err != nil {
		var de *decode.Error
		if !errors.As(err, &de) || !errors.Is(err, decode.ErrEmpty) && !errors.Is(err, decode.ErrNoSync) {
			return outViolation, fmt.Sprintf("Decode: %v", err)
		}
		if len(s.pcs) != 0 {
			return outViolation, fmt.Sprintf("Decode: %v after %d instructions", err, len(s.pcs))
		}
		return outGap, ""
	}
	return classify(t, tr.cfg, tr.img, tr.truth[0], s, framesOf(tr.cfg, bad))
}

// framesOf returns the frames of a single-source trace, framing included,
// without the UTDD null bytes between them (a null byte is part of no
// frame, and a decoder cannot tell one a damaged header left from one a
// transport inserted) and with their timestamps zero (see
// appendFrame); data itself when a frame cannot be read.
func framesOf(cfg Config, data []byte) []byte {
	sc := NewScanner(bytes.NewReader(data), &cfg)
	var out []byte
	for sc.Scan() {
		out = appendFrame(out, &cfg, data[sc.Frame().Offset:sc.Offset()])
	}
	if sc.Err() != nil {
		return data
	}
	return out
}

// appendFrame appends the frame fr to out with its UTDD timestamp zero,
// as the test encoders write it: the decoder does not read timestamps,
// and any value is one a wrapping timestamp counter could give, so a
// damaged timestamp leaves bytes that are a valid trace of the flow.
func appendFrame(out []byte, cfg *Config, fr []byte) []byte {
	n := len(out)
	out = append(out, fr...)
	if cfg.Encap == EncapUTDD && fr[0]&0x80 != 0 {
		ts := out[n+1+cfg.srcBytes():]
		clear(ts[:min(len(ts), cfg.TimestampBytes)])
	}
	return out
}

// flows decodes bad and returns each source's decoded instructions.
func (tr *campaignTrace) flows(t testing.TB, bad []byte) map[uint32][]uint64 {
	if !tr.multi {
		s, _ := decodeInto(t, tr.cfg, tr.img, bad, tr.small)
		return map[uint32][]uint64{0: s.pcs}
	}
	s := &srcSinks{img: tr.img, srcs: map[uint32]*intSink{}}
	d, err := NewDemux(tr.img, s, tr.cfg)
	if err != nil {
		t.Fatal(err)
	}
	d.Decode(bytes.NewReader(bad))
	out := map[uint32][]uint64{}
	for src, is := range s.srcs {
		out[src] = is.pcs
	}
	return out
}

// flip is one bit flipped.
type flip struct{ at, bit int }

// recheck classifies a trace corrupted by several bit flips whose
// decoded flow breaks the rule against the truth: when some of the flips
// alone leave bytes that are a valid trace of another flow (outAllowed:
// re-encoding the flow decoded from them gives them), that flow is the
// truth of those bytes, against which the other flips are judged (no
// decoder can see such flips, with or without others). Every such subset
// of the flips is tried.
func (tr *campaignTrace) recheck(t testing.TB, flips []flip) (int, string) {
	bad := slices.Clone(tr.data)
	for _, f := range flips {
		bad[f.at] ^= 1 << f.bit
	}
	why := ""
	for set := 1; set < 1<<len(flips)-1; set++ {
		cand := slices.Clone(tr.data)
		for i, f := range flips {
			if set&(1<<i) != 0 {
				cand[f.at] ^= 1 << f.bit
			}
		}
		if o, _ := tr.check(t, cand); o != outAllowed {
			continue
		}
		cur := *tr
		cur.truth = tr.flows(t, cand)
		o, w := cur.check(t, bad)
		if o != outViolation {
			return o, ""
		}
		why = w
	}
	if why == "" {
		why = "no subset of the flips is a valid trace of another flow"
	}
	return outViolation, why
}

// classify checks one source's decoded flow s against truth; frames are
// the source's bytes in the corrupted trace, which a gap-free flow that
// is not the truth must re-encode to.
func classify(t testing.TB, cfg Config, img *image.Set, truth []uint64, s *intSink, frames []byte) (int, string) {
	if s.err != nil {
		return outViolation, s.err.Error()
	}
	if len(s.gaps) > 0 {
		if v, _ := checkRule(truth, s); v != "" {
			return outViolation, describe(v, s)
		}
		return outGap, ""
	}
	if slices.Equal(s.pcs, truth) && s.other == 0 {
		return outClean, ""
	}
	if reencodes(t, cfg, img, s, frames) {
		return outAllowed, ""
	}
	i := 0
	for i < len(s.pcs) && i < len(truth) && s.pcs[i] == truth[i] {
		i++
	}
	return outViolation, fmt.Sprintf("no gap: %d instructions decoded, %d executed, first difference at %d", len(s.pcs), len(truth), i)
}

func describe(v string, s *intSink) string {
	var b strings.Builder
	b.WriteString(v)
	for _, g := range s.gaps {
		fmt.Fprintf(&b, "\n  gap after %d instructions, %d suspect: %v", g.at, g.suspect, g.err)
	}
	return b.String()
}

// checkMulti decodes a corrupted multi-source trace with a Demux and
// classifies it: a violation in any source is one of the trace.
func (tr *campaignTrace) checkMulti(t testing.TB, bad []byte) (int, string) {
	s := &srcSinks{img: tr.img, srcs: map[uint32]*intSink{}}
	d, err := NewDemux(tr.img, s, tr.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tr.small {
		d.MaxSteps, d.MaxWalk = 1<<12, 1<<14
	}
	if err := d.Decode(bytes.NewReader(bad)); err != nil {
		if !errors.Is(err, decode.ErrEmpty) && !errors.Is(err, decode.ErrNoSync) {
			return outViolation, fmt.Sprintf("Decode: %v", err)
		}
		for src, is := range s.srcs {
			if len(is.pcs) != 0 {
				return outViolation, fmt.Sprintf("Decode: %v after %d instructions of source %d", err, len(is.pcs), src)
			}
		}
		return outGap, ""
	}
	frames, framingOK := srcFrames(tr.cfg, bad)
	worst := outClean
	ids := make([]uint32, 0, len(s.srcs))
	for src := range s.srcs {
		ids = append(ids, src)
	}
	for src := range tr.truth {
		if s.srcs[src] == nil {
			// a source lost all its frames: the others must say so
			s.srcs[src] = &intSink{img: tr.img}
			ids = append(ids, src)
		}
	}
	slices.Sort(ids)
	for _, src := range ids {
		is := s.srcs[src]
		var fr []byte
		if framingOK {
			fr = frames[src]
		}
		c := tr.cfg
		c.SrcID = src
		out, why := classify(t, c, tr.img, tr.truth[src], is, fr)
		if out == outViolation {
			if len(is.pcs) == 0 && len(is.gaps) == 0 && anyGap(s) {
				// a source that emitted nothing, in a trace with a gap
				// (its frames may be those lost at the gap)
				out = outGap
			} else {
				return outViolation, fmt.Sprintf("source %d: %s", src, why)
			}
		}
		switch {
		case out == outGap:
			worst = outGap
		case out == outAllowed && worst == outClean:
			worst = outAllowed
		}
	}
	return worst, ""
}

func anyGap(s *srcSinks) bool { return len(s.gaps) > 0 }

// srcFrames splits a multi-source trace into each source's frames,
// framing included; ok is false when a frame cannot be read (the
// re-encode oracle then excuses nothing).
func srcFrames(cfg Config, data []byte) (map[uint32][]byte, bool) {
	sc := NewScanner(bytes.NewReader(data), &cfg)
	out := map[uint32][]byte{}
	for sc.Scan() {
		fr := sc.Frame()
		out[fr.SrcID] = appendFrame(out[fr.SrcID], &cfg, data[fr.Offset:sc.Offset()])
	}
	return out, sc.Err() == nil
}

// corruptions the campaign applies
var campaignKinds = []struct {
	name string
	// op returns the corrupted bytes, what was done, and the bits
	// flipped when there are several
	op func(rnd *rand.Rand, data []byte) ([]byte, string, []flip)
}{
	{"single bit flip", func(rnd *rand.Rand, data []byte) ([]byte, string, []flip) {
		bad := slices.Clone(data)
		at, bit := rnd.Intn(len(bad)), rnd.Intn(8)
		bad[at] ^= 1 << bit
		return bad, fmt.Sprintf("byte %d bit %d", at, bit), nil
	}},
	{"2-3 bit flips", func(rnd *rand.Rand, data []byte) ([]byte, string, []flip) {
		bad := slices.Clone(data)
		var d []string
		var fl []flip
		for k := 2 + rnd.Intn(2); k > 0; k-- {
			at, bit := rnd.Intn(len(bad)), rnd.Intn(8)
			bad[at] ^= 1 << bit
			d = append(d, fmt.Sprintf("byte %d bit %d", at, bit))
			fl = append(fl, flip{at, bit})
		}
		return bad, strings.Join(d, ", "), fl
	}},
	{"inserted byte", func(rnd *rand.Rand, data []byte) ([]byte, string, []flip) {
		at, v := rnd.Intn(len(data)+1), byte(rnd.Intn(256))
		return slices.Insert(slices.Clone(data), at, v), fmt.Sprintf("%#02x inserted at byte %d", v, at), nil
	}},
	{"deleted byte", func(rnd *rand.Rand, data []byte) ([]byte, string, []flip) {
		at := rnd.Intn(len(data))
		return slices.Delete(slices.Clone(data), at, at+1), fmt.Sprintf("byte %d deleted", at), nil
	}},
	{"cut", func(rnd *rand.Rand, data []byte) ([]byte, string, []flip) {
		at := rnd.Intn(len(data))
		return slices.Clone(data[:at]), fmt.Sprintf("cut at byte %d", at), nil
	}},
}

// framingTraces returns the traces of the framing campaign: mt-matmul on
// two harts through a Funnel (2-bit source IDs), hart 1's blocks alone in
// the raw and UTDD framings, and t1 of the reference corpus in the UTDD
// framing with a source ID and a timestamp.
func framingTraces(t testing.TB) []*campaignTrace {
	var out []*campaignTrace
	cfg := multiConfig(2)
	r := runMultiHart(t, "mt-matmul.riscv", 2, 500, cfg)
	out = append(out, &campaignTrace{name: "mt-matmul 2 harts, funnel", cfg: cfg, img: r.img, data: slices.Clone(r.log.all.Bytes()),
		truth: map[uint32][]uint64{0: r.truth[0], 1: r.truth[1]}, multi: true})
	for _, e := range []Encap{EncapRaw, EncapUTDD} {
		c := DefaultConfig()
		c.Encap = e
		data, _ := encode(t, c, r.img, r.blocks[1])
		out = append(out, &campaignTrace{name: "mt-matmul hart 1, " + e.String(), cfg: c, img: r.img, data: data,
			truth: map[uint32][]uint64{0: r.truth[1]}})
	}
	img, pcs := loadT1(t)
	blocks := genBlocks(t, img, pcs, genOpts{})
	for _, e := range []Encap{EncapRaw, EncapUTDD} {
		c := DefaultConfig()
		c.ResyncPeriod = 16
		c.Encap = e
		if e == EncapUTDD {
			c.SrcBits, c.SrcID, c.TimestampBytes = 6, 5, 2
		}
		data, _ := encode(t, c, nil, blocks)
		out = append(out, &campaignTrace{name: "t1 resync 16, " + e.String(), cfg: c, img: img, data: data,
			truth: map[uint32][]uint64{0: pcs}})
	}
	return out
}

// TestFramingCampaign runs the framing campaign: every trace of
// framingTraces, every corruption of campaignKinds, n cases each (200, or
// RVTRACE_CAMPAIGN_N), seeded. It fails on any violation of the
// integrity rule and logs a table of outcomes. It runs with -campaign
// (or RVTRACE_CAMPAIGN=1).
func TestFramingCampaign(t *testing.T) {
	if !*campaign && os.Getenv("RVTRACE_CAMPAIGN") == "" {
		t.Skip("needs -campaign or RVTRACE_CAMPAIGN=1")
	}
	n := 200
	if v := os.Getenv("RVTRACE_CAMPAIGN_N"); v != "" {
		fmt.Sscan(v, &n)
	}
	seed := int64(9)
	if v := os.Getenv("RVTRACE_CAMPAIGN_SEED"); v != "" {
		fmt.Sscan(v, &seed)
	}
	var rows []string
	var tot [4]int
	for _, tr := range framingTraces(t) {
		for _, k := range campaignKinds {
			rnd := rand.New(rand.NewSource(seed))
			var cnt [4]int
			for i := 0; i < n; i++ {
				bad, what, flips := k.op(rnd, tr.data)
				out, why := tr.check(t, bad)
				if out == outViolation && len(flips) > 1 {
					if o, w := tr.recheck(t, flips); o != outViolation {
						out = o
					} else {
						why += "\n  judged against the flows of the flips that are undetectable alone: " + w
					}
				}
				cnt[out]++
				if out == outViolation && cnt[out] <= 3 {
					t.Errorf("%s, %s (%s): %s", tr.name, k.name, what, why)
				}
			}
			for i := range tot {
				tot[i] += cnt[i]
			}
			rows = append(rows, fmt.Sprintf("| %s | %s | %d | %d | %d | %d | %d |", tr.name, k.name, n, cnt[outGap], cnt[outClean], cnt[outAllowed], cnt[outViolation]))
		}
	}
	sort.Strings(rows)
	t.Logf("| trace | corruption | trials | gap | clean | allowed undetected | violations |\n%s\n| total | | %d | %d | %d | %d | %d |",
		strings.Join(rows, "\n"), tot[0]+tot[1]+tot[2]+tot[3], tot[outGap], tot[outClean], tot[outAllowed], tot[outViolation])
}

// TestFramingExhaustive flips every bit of the mt-matmul traces of
// framingTraces, one at a time, and checks the integrity rule on each
// (RVTRACE_EXHAUSTIVE=1; minutes).
func TestFramingExhaustive(t *testing.T) {
	if os.Getenv("RVTRACE_EXHAUSTIVE") == "" {
		t.Skip("needs RVTRACE_EXHAUSTIVE=1")
	}
	for _, tr := range framingTraces(t) {
		if !strings.HasPrefix(tr.name, "mt-matmul") {
			continue
		}
		var cnt [4]int
		for at := range tr.data {
			for bit := 0; bit < 8; bit++ {
				bad := slices.Clone(tr.data)
				bad[at] ^= 1 << bit
				out, why := tr.check(t, bad)
				cnt[out]++
				if out == outViolation && cnt[out] <= 5 {
					t.Errorf("%s, byte %d bit %d: %s", tr.name, at, bit, why)
				}
			}
		}
		t.Logf("| %s | %d | %d | %d | %d | %d |", tr.name, 8*len(tr.data), cnt[outGap], cnt[outClean], cnt[outAllowed], cnt[outViolation])
	}
}

var (
	funnelOnce  sync.Once
	funnelTrace *campaignTrace
)

// loadFunnel returns the two-hart mt-matmul funnel trace of
// framingTraces, made once.
func loadFunnel(t testing.TB) *campaignTrace {
	funnelOnce.Do(func() {
		cfg := multiConfig(2)
		r := runMultiHart(t, "mt-matmul.riscv", 2, 500, cfg)
		funnelTrace = &campaignTrace{name: "mt-matmul 2 harts, funnel", cfg: cfg, img: r.img, data: slices.Clone(r.log.all.Bytes()),
			truth: map[uint32][]uint64{0: r.truth[0], 1: r.truth[1]}, multi: true, small: true}
	})
	if funnelTrace == nil {
		t.Skip("no funnel trace")
	}
	return funnelTrace
}

// framingConfig returns the configuration of FuzzFraming's input: sel%3
// the framing (raw; UTDD; UTDD with a 6-bit source ID, a type field and
// a 2-byte timestamp), the options and resynchronisation as
// integrityConfig(sel/3).
func framingConfig(sel byte) Config {
	c := integrityConfig(sel / 3)
	switch sel % 3 {
	case 1:
		c.Encap = EncapUTDD
	case 2:
		c.Encap, c.SrcBits, c.SrcID, c.TypeField, c.TimestampBytes = EncapUTDD, 6, 5, true, 2
	}
	c.Check()
	return c
}

// FuzzFraming checks the integrity rule in every framing: a piece of t1's
// execution encoded raw or UTDD-framed (framingConfig), or, when sel is
// 255, the two-hart mt-matmul funnel trace, corrupted as ops says
// (corrupt: a bit flip, cut, inserted or deleted byte), decoded and
// classified as the framing campaign does.
func FuzzFraming(f *testing.F) {
	img, pcs := loadT1(f)
	f.Add(byte(0), uint16(0), uint16(500), []byte{0, 0, 40, 3})
	f.Add(byte(1), uint16(100), uint16(1000), []byte{0, 0, 41, 0})
	f.Add(byte(2), uint16(2000), uint16(700), []byte{2, 0, 90, 0})
	f.Add(byte(16), uint16(3000), uint16(2000), []byte{3, 0, 30, 0x5a})
	f.Add(byte(17), uint16(4000), uint16(1500), []byte{0, 0, 20, 1})
	f.Add(byte(255), uint16(0), uint16(0), []byte{0, 0x0f, 0x98, 1})
	f.Add(byte(255), uint16(0), uint16(0), []byte{0, 0x08, 0x22, 4})
	f.Fuzz(func(t *testing.T, sel byte, start, n uint16, ops []byte) {
		var tr *campaignTrace
		if sel == 255 {
			tr = loadFunnel(t)
		} else {
			cfg := framingConfig(sel)
			s := int(start) * 2 % (len(pcs) - 3000)
			truth := pcs[s : s+200+int(n)%2800]
			data, _ := encode(t, cfg, nil, genBlocks(t, img, truth, genOpts{}))
			tr = &campaignTrace{cfg: cfg, img: img, data: data, truth: map[uint32][]uint64{0: truth}, small: true}
		}
		bad := corrupt(tr.data, ops)
		if out, why := tr.check(t, bad); out == outViolation {
			t.Fatalf("config %d, %d bytes -> %d bytes: %s", sel, len(tr.data), len(bad), why)
		}
	})
}
