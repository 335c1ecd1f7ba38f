package etrace

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// The integrity rule (decode package documentation): every instruction the
// decoder emits is one the program executed, in order, or lies inside a
// reported gap (among the Suspect instructions before it). The tests here
// check it as an oracle on corrupted traces of known programs.

// intSink records the decoded instructions and where the gaps fall.
type intSink struct {
	img   *image.Set
	pcs   []uint64
	gaps  []intGap
	traps []flowTrap // the traps, as blocks to re-encode the flow with
	other int        // notify and other events a clean trace of the truth has none of
	err   error
}

type intGap struct {
	at      int // len(pcs) when the gap came
	suspect uint64
	err     error
}

func (s *intSink) Event(e *flow.Event) error {
	switch e.Kind {
	case flow.KindRange:
		a := e.Start
		for n := uint64(0); n < e.N; n++ {
			s.pcs = append(s.pcs, a)
			in, ok := s.img.Inst(a)
			if !ok {
				if s.err == nil {
					s.err = fmt.Errorf("range %v: no instruction at %#x", e, a)
				}
				return nil
			}
			a = in.Next(a)
		}
		if a2 := s.pcs[len(s.pcs)-1]; a2 != e.Last && s.err == nil {
			s.err = fmt.Errorf("range %v ends at %#x", e, a2)
		}
	case flow.KindGap:
		var de *decode.Error
		if !errors.As(e.Err, &de) && s.err == nil {
			s.err = fmt.Errorf("gap %v: not a *decode.Error", e)
		} else if s.err == nil && (de.Offset != e.Offset || de.Index != e.Index || de.Offset < 0 || de.Index < 0) {
			s.err = fmt.Errorf("gap %v: offset/index %d/%d, error's %d/%d", e, e.Offset, e.Index, de.Offset, de.Index)
		}
		s.gaps = append(s.gaps, intGap{at: len(s.pcs), suspect: e.Suspect, err: e.Err})
	case flow.KindTrap:
		b := ingress.Block{IAddr: e.Addr, IType: ingress.ITypeException, Cause: e.Cause, TVal: e.TVal}
		if e.Interrupt {
			b.IType = ingress.ITypeInterrupt
		}
		if b.IAddr == 0 && len(s.pcs) > 0 {
			// the decoder could not infer the EPC (not in a thaddr=1
			// packet): any address that follows gives the same packets
			if in, ok := s.img.Inst(s.pcs[len(s.pcs)-1]); ok {
				b.IAddr = in.Next(s.pcs[len(s.pcs)-1])
			}
		}
		s.traps = append(s.traps, flowTrap{at: len(s.pcs), blk: b})
	case flow.KindNotify:
		s.other++
	}
	return nil
}

func (s *intSink) Close() error { return nil }

// checkRule checks the decoded flow in s against truth. It returns a
// description of the first violation ("" if none) and the number of wrong
// instructions emitted before the gap that flagged them (the detection
// latency; 0 when nothing wrong was emitted).
func checkRule(truth []uint64, s *intSink) (string, int) { return checkRuleTo(truth, s, false) }

// checkRuleEnd is checkRule, but the segment after the last gap must be
// the end of the truth (checkRule takes its first occurrence, which in a
// program that spins in a loop can be an earlier one).
func checkRuleEnd(truth []uint64, s *intSink) string {
	v, _ := checkRuleTo(truth, s, true)
	return v
}

// checkRuleTo is checkRule, and checkRuleEnd with atEnd.
func checkRuleTo(truth []uint64, s *intSink, atEnd bool) (string, int) {
	pos := 0
	start := 0
	latency := 0
	for gi := 0; gi <= len(s.gaps); gi++ {
		end := len(s.pcs)
		var sus uint64
		if gi < len(s.gaps) {
			end, sus = s.gaps[gi].at, s.gaps[gi].suspect
		}
		seg := s.pcs[start:end]
		keep := len(seg)
		if gi < len(s.gaps) {
			keep -= int(min(sus, uint64(len(seg))))
		}
		if atEnd && gi == len(s.gaps) && len(s.gaps) > 0 {
			// the end of the truth
			if j := len(truth) - keep; j < pos || !slicesEqual(truth[j:], seg) {
				return fmt.Sprintf("the last segment (instructions %d..%d of the decoded flow) is not the end of the truth after position %d", start, end, pos), 0
			}
			return "", latency
		}
		j, ok := findRun(truth, seg[:keep], pos)
		if !ok {
			return fmt.Sprintf("segment %d (instructions %d..%d of the decoded flow, %d kept) is not a run of the truth after position %d",
				gi, start, end, keep, pos), 0
		}
		// how many of the suspect ones were wrong
		m := keep
		for m < len(seg) && j+m < len(truth) && truth[j+m] == seg[m] {
			m++
		}
		latency = max(latency, len(seg)-m)
		pos = j + keep
		if gi == len(s.gaps) && (len(seg) > 0 || len(s.gaps) == 0) && pos != len(truth) {
			return fmt.Sprintf("the last segment ends at truth position %d of %d with no gap after it", pos, len(truth)), 0
		}
		start = end
	}
	return "", latency
}

// findRun returns the first j >= from with truth[j:j+len(seg)] == seg.
func findRun(truth, seg []uint64, from int) (int, bool) {
	if len(seg) == 0 {
		return from, true
	}
	for j := from; j+len(seg) <= len(truth); j++ {
		if truth[j] == seg[0] && slices.Equal(truth[j:j+len(seg)], seg) {
			return j, true
		}
	}
	return 0, false
}

// integrityConfig returns the configuration the fuzz input chooses.
func integrityConfig(sel byte) Config {
	c := DefaultConfig()
	switch sel % 5 {
	case 1:
		c.Options.FullAddress = true
	case 2:
		c.Options.ImplicitReturn = true
	case 3:
		c.Options.BranchPrediction = true
	case 4:
		c.Options.JumpTargetCache = true
	}
	if sel/5%2 == 1 {
		c.ResyncPeriod = 16
	}
	c.Check()
	return c
}

// corrupt applies the corruption ops describes (4 bytes: kind, position,
// value) to a copy of data. One corruption only: with two, an undetectable
// one (a sync address moved to the instruction before it, which reaches
// the same path) next to a detected one escapes the oracle's excuse.
func corrupt(data, ops []byte) []byte {
	out := slices.Clone(data)
	for k := 0; k+4 <= len(ops) && k < 4 && len(out) > 0; k += 4 {
		pos := int(ops[k+1])<<8 | int(ops[k+2])
		v := ops[k+3]
		switch ops[k] % 4 {
		case 0: // bit flip
			out[pos%len(out)] ^= 1 << (v & 7)
		case 1: // cut
			out = out[:pos%(len(out)+1)]
		case 2: // inserted byte
			i := pos % (len(out) + 1)
			out = slices.Insert(out, i, v)
		case 3: // deleted byte
			i := pos % len(out)
			out = slices.Delete(out, i, i+1)
		}
	}
	return out
}

// decodeInto decodes data into a new intSink.
func decodeInto(t testing.TB, cfg Config, img *image.Set, data []byte, small bool) (*intSink, error) {
	s := &intSink{img: img}
	d, err := NewDecoder(img, s, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if small {
		d.MaxSteps, d.MaxWalk = 1<<12, 1<<14
	}
	return s, d.Decode(bytes.NewReader(data))
}

// integrityCheck decodes the corrupted trace bad of truth and checks the
// rule; a violation is excused only when the decoded flow has no gap and
// re-encoding it gives bad exactly.
func integrityCheck(t testing.TB, cfg Config, img *image.Set, truth []uint64, bad []byte, small bool) (string, int) {
	s, err := decodeInto(t, cfg, img, bad, small)
	if err != nil {
		if !errors.Is(err, decode.ErrEmpty) && !errors.Is(err, decode.ErrNoSync) {
			return fmt.Sprintf("Decode: %v", err), 0
		}
		var de *decode.Error
		if !errors.As(err, &de) {
			return fmt.Sprintf("Decode: %v is not a *decode.Error", err), 0
		}
		if len(s.pcs) != 0 {
			return fmt.Sprintf("Decode: %v after %d instructions", err, len(s.pcs)), 0
		}
		return "", 0
	}
	if s.err != nil {
		return s.err.Error(), 0
	}
	v, lat := checkRule(truth, s)
	if v == "" {
		return "", lat
	}
	if len(s.gaps) == 0 && reencodes(t, cfg, img, s, bad) {
		return "", 0 // the corrupted bytes are a valid trace of the decoded flow
	}
	var b strings.Builder
	b.WriteString(v)
	for _, g := range s.gaps {
		fmt.Fprintf(&b, "\n  gap after %d instructions, %d suspect: %v", g.at, g.suspect, g.err)
	}
	return b.String(), 0
}

// reencodes is the re-encode oracle: it reports whether bad is what
// encoding the flow decoded into s (its traps included) with cfg gives,
// for a flow with instructions and no event a clean trace has none of.
// The flow does not say whether a branch that ends it was taken: both are
// tried.
func reencodes(t testing.TB, cfg Config, img *image.Set, s *intSink, bad []byte) bool {
	if s.other != 0 || len(s.pcs) == 0 || bad == nil {
		return false
	}
	blocks := genBlocks(t, img, s.pcs, genOpts{traps: s.traps})
	if again, _ := encode(t, cfg, nil, blocks); bytes.Equal(again, bad) {
		return true
	}
	if b := &blocks[len(blocks)-1]; b.IType == ingress.ITypeNotTaken {
		b.IType = ingress.ITypeTaken
		if again, _ := encode(t, cfg, nil, blocks); bytes.Equal(again, bad) {
			return true
		}
	}
	return false
}

// TestOracleTrapFlow checks the oracle's excuse on the one undetectable
// kind of corruption a trap packet gives: bytes that are the valid trace
// of a flow which stops with a trap (E-Trace has no packet count, and a
// trap followed by the end of tracing is how a program that exits through
// an ECALL ends). The decoder cannot tell them from a shortened trace of
// the truth; the oracle excuses them only because re-encoding the decoded
// flow, its trap included, gives those very bytes.
func TestOracleTrapFlow(t *testing.T) {
	img, pcs := loadT1(t)
	truth := pcs[1000:1600]
	for _, k := range []int{1, 150, 300} {
		for _, intr := range []bool{false, true} {
			tb := ingress.Block{IAddr: truth[k], IType: ingress.ITypeException, Cause: 5, TVal: 0x1234}
			if intr {
				tb.IType, tb.TVal = ingress.ITypeInterrupt, 0
			}
			cfg := DefaultConfig()
			bad, _ := encode(t, cfg, nil, genBlocks(t, img, truth[:k], genOpts{traps: []flowTrap{{at: k, blk: tb}}}))
			s, err := decodeInto(t, cfg, img, bad, true)
			if err != nil || len(s.gaps) != 0 || len(s.traps) != 1 || !slices.Equal(s.pcs, truth[:k]) {
				t.Fatalf("k=%d: %d instructions, %d gaps, %d traps, %v", k, len(s.pcs), len(s.gaps), len(s.traps), err)
			}
			if s.traps[0].blk.IAddr != truth[k] {
				t.Errorf("k=%d: trap EPC %#x, want %#x", k, s.traps[0].blk.IAddr, truth[k])
			}
			if v, _ := integrityCheck(t, cfg, img, truth, bad, true); v != "" {
				t.Errorf("k=%d, interrupt %v: %s", k, intr, v)
			}
			// without its trap the flow re-encodes to other bytes: the
			// excuse rests on the trap
			if again, _ := encode(t, cfg, nil, genBlocks(t, img, truth[:k], genOpts{})); bytes.Equal(again, bad) {
				t.Errorf("k=%d: the flow without its trap gives the same bytes", k)
			}
		}
	}
}

// FuzzIntegrity encodes a piece of t1's execution with a configuration the
// input chooses, corrupts the bytes as the input says (bit flips, cuts,
// inserted and deleted bytes), decodes them and checks the integrity
// rule.
func FuzzIntegrity(f *testing.F) {
	img, pcs := loadT1(f)
	f.Add(byte(0), uint16(0), uint16(500), []byte{})
	f.Add(byte(5), uint16(100), uint16(1000), []byte{0, 0, 40, 3})
	f.Add(byte(1), uint16(2000), uint16(700), []byte{1, 0, 90, 0})
	f.Add(byte(2), uint16(3000), uint16(2000), []byte{2, 0, 30, 0x5a})
	f.Add(byte(3), uint16(4000), uint16(1500), []byte{3, 0, 20, 0})
	f.Add(byte(9), uint16(5000), uint16(2500), []byte{0, 0, 10, 1, 0, 0, 77, 6})
	f.Fuzz(func(t *testing.T, sel byte, start, n uint16, ops []byte) {
		cfg := integrityConfig(sel)
		s := int(start) * 2 % (len(pcs) - 3000)
		truth := pcs[s : s+200+int(n)%2800]
		data, _ := encode(t, cfg, nil, genBlocks(t, img, truth, genOpts{}))
		bad := corrupt(data, ops)
		if v, _ := integrityCheck(t, cfg, img, truth, bad, true); v != "" {
			if os.Getenv("ETRACE_DEBUG") != "" {
				debugIntegrity(t, cfg, img, truth, data, bad)
			}
			t.Fatalf("config %d, truth %d..%d, %d bytes -> %d bytes: %s", sel, s, s+len(truth), len(data), len(bad), v)
		}
	})
}

var campaign = flag.Bool("campaign", false, "run the reliability campaign (TestReliabilityCampaign)")

// TestReliabilityCampaign corrupts traces of t1 in many ways and counts
// integrity rule violations (there must be none) and the detection
// latency. Run with go test ./etrace -run TestReliabilityCampaign
// -campaign (or RVTRACE_CAMPAIGN=1).
func TestReliabilityCampaign(t *testing.T) {
	if !*campaign && os.Getenv("RVTRACE_CAMPAIGN") == "" {
		t.Skip("needs -campaign or RVTRACE_CAMPAIGN=1")
	}
	img, pcs := loadT1(t)
	blocks := genBlocks(t, img, pcs, genOpts{})
	rnd := rand.New(rand.NewSource(9))
	resync := DefaultConfig()
	resync.ResyncPeriod = 16
	single := DefaultConfig()
	for _, c := range []struct {
		name string
		cfg  Config
		kind byte
		n    int
	}{
		{"bit flips, ResyncPeriod 16", resync, 0, 500},
		{"bit flips, one sync", single, 0, 500},
		{"cuts", resync, 1, 100},
		{"inserted bytes", resync, 2, 100},
		{"deleted bytes", resync, 3, 100},
	} {
		data, _ := encode(t, c.cfg, nil, blocks)
		violations, flagged := 0, 0
		var lats []int
		for i := 0; i < c.n; i++ {
			pos := rnd.Intn(len(data))
			bad := slices.Clone(data)
			switch c.kind {
			case 0:
				bad[pos] ^= 1 << rnd.Intn(8)
			case 1:
				bad = bad[:pos]
			case 2:
				bad = slices.Insert(bad, pos, byte(rnd.Intn(256)))
			case 3:
				bad = slices.Delete(bad, pos, pos+1)
			}
			v, lat := integrityCheck(t, c.cfg, img, pcs, bad, false)
			if v != "" {
				violations++
				if violations <= 3 {
					t.Errorf("%s, byte %d: %s", c.name, pos, v)
				}
				continue
			}
			if lat > 0 {
				flagged++
			}
			lats = append(lats, lat)
		}
		slices.Sort(lats)
		med, p90, mx, medWrong := 0, 0, 0, 0
		if len(lats) > 0 {
			med, p90, mx = lats[len(lats)/2], lats[len(lats)*9/10], lats[len(lats)-1]
		}
		if flagged > 0 {
			wrong := lats[len(lats)-flagged:]
			medWrong = wrong[len(wrong)/2]
		}
		// | case | corruptions | trace bytes | violations | corruptions with wrong
		// instructions before their gap | median | p90 | max of those
		// instructions over all corruptions | median over those with some |
		t.Logf("| %s | %d | %d | %d | %d | %d | %d | %d | %d |", c.name, c.n, len(data), violations, flagged, med, p90, mx, medWrong)
	}
}

// debugIntegrity logs both traces and where the decoded flow leaves the
// truth (ETRACE_DEBUG=1).
func debugIntegrity(t *testing.T, cfg Config, img *image.Set, truth []uint64, data, bad []byte) {
	var a, b strings.Builder
	Dump(bytes.NewReader(data), &a, &cfg)
	Dump(bytes.NewReader(bad), &b, &cfg)
	t.Logf("original:\n%s\ncorrupted:\n%s", a.String(), b.String())
	s, _ := decodeInto(t, cfg, img, bad, true)
	i := 0
	for i < len(s.pcs) && i < len(truth) && s.pcs[i] == truth[i] {
		i++
	}
	t.Logf("decoded %d instructions, first difference at %d: got %x, want %x", len(s.pcs), i,
		s.pcs[i:min(i+8, len(s.pcs))], truth[i:min(i+8, len(truth))])
	for _, g := range s.gaps {
		t.Logf("gap after %d, %d suspect: %v", g.at, g.suspect, g.err)
	}
	if len(s.pcs) > 0 {
		again, _ := encode(t, cfg, nil, genBlocks(t, img, s.pcs, genOpts{traps: s.traps}))
		var c strings.Builder
		Dump(bytes.NewReader(again), &c, &cfg)
		t.Logf("decoded flow re-encoded:\n%s", c.String())
	}
}
