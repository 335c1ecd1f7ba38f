package ntrace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/internal/corpus"
)

// threeBitBlocks returns blocks as an ingress port with a 3-bit itype
// may report them: a direct jump or call has itype 0 there, and the block
// it ends in blocks goes on with the next one (of the same privilege and
// context; a trap right after the jump ends the block).
func threeBitBlocks(blocks []ingress.Block) (out []ingress.Block, merged int) {
	out, _ = mergeDirect(blocks, nil)
	return out, len(blocks) - len(out)
}

// mergeDirect is the rule of threeBitBlocks, shared with the re-encode
// oracle (encodeFlowSplit): blocks[i], ending in a direct jump or call,
// goes on with blocks[i+1] when that one retires something or is a trap
// (one that retires nothing is taken right after the jump, which it then
// ends the block of, as encodeFlowSplit puts such a trap) and has the same
// privilege and context, unless keep(i) (keep may be nil) says blocks[i]
// ends where it does. It returns the merged blocks and, for each, the
// index in blocks of the first block it holds.
func mergeDirect(blocks []ingress.Block, keep func(i int) bool) (out []ingress.Block, first []int) {
	for i := 0; i < len(blocks); i++ {
		b := blocks[i]
		first = append(first, i)
		for (b.IType == ingress.ITypeDirectJump || b.IType == ingress.ITypeDirectCall || b.IType == ingress.ITypeOtherDirect) &&
			i+1 < len(blocks) && (blocks[i+1].IRetire > 0 || blocks[i+1].IType.IsTrap()) &&
			blocks[i+1].Priv == b.Priv && blocks[i+1].Context == b.Context && (keep == nil || !keep(i)) {
			n := blocks[i+1]
			if n.IRetire == 0 {
				n.ILastSize = b.ILastSize
			}
			n.IAddr, n.IRetire = b.IAddr, n.IRetire+b.IRetire
			b = n
			i++
		}
		out = append(out, b)
	}
	return out, first
}

// With a 3-bit ingress itype a block may go on past a direct jump or
// call, where the decoder's walk ends a range: the check that a sync due
// after the sync period ran out (counting messages) covers one block
// counted ranges, and made a gap of such an intact BTM trace (the first
// config); it was then limited to 4-bit ports, and now counts, with 3
// bits, the ranges that do not end on a direct jump or call
// (checkDueWalk, checkDueBlock). The trace decodes to every PC, with no
// gap.
func TestDueWalkThreeBitPort(t *testing.T) {
	img := image.NewSet()
	if err := img.AddELF(corpus.Path(t, "ntrace-refcode/elf/coremark.riscv")); err != nil {
		t.Fatal(err)
	}
	pcs := synthFlow(img, 3, 60000, true)
	blocks, merged := threeBitBlocks(synthBlocks(t, img, pcs, false, 3))
	if merged < 1000 {
		t.Fatalf("%d blocks go on past a direct jump: the test lost its case", merged)
	}
	for _, cfg := range []Config{
		{Mode: BTM, SyncMode: SyncMessages, SyncMax: 0, ITypeWidth: 3},
		{Mode: BTM, SyncMode: SyncMessages, SyncMax: 1, ITypeWidth: 3, RepeatBranch: true},
		{Mode: HTM, SyncMode: SyncMessages, SyncMax: 0, ITypeWidth: 3},
	} {
		roundTrip(t, img, blocks, pcs, cfg)
	}
}

// The checks that bound the last ingress block by the last range the walk
// emitted (a periodic sync counting halfwords, checkPeriod; a SYNC=4 or
// SYNC=6 or the end message past the period, lastBlock; the I-CNT
// overshoot of a narrow counter, checkOvershoot; the block that ends at a
// point where a ResourceFull RCODE=0 said the counter was full,
// checkFullPoints and fullPoint) made gaps of intact traces from a port
// with a 3-bit itype, whose blocks go on past direct jumps and calls: the
// first config gave "periodic sync after 37 halfwords, not at the period
// of 32" at message 2 of coremark's trace. The last block may also hold
// the ranges before the last that ended on such a jump (srcState.chain).
// The traces decode to every PC, with no gap.
func TestPeriodThreeBitPort(t *testing.T) {
	img := image.NewSet()
	if err := img.AddELF(corpus.Path(t, "ntrace-refcode/elf/coremark.riscv")); err != nil {
		t.Fatal(err)
	}
	pcs := synthFlow(img, 3, 60000, true)
	blocks, merged := threeBitBlocks(synthBlocks(t, img, pcs, false, 3))
	if merged < 1000 {
		t.Fatalf("%d blocks go on past a direct jump: the test lost its case", merged)
	}
	for _, cfg := range []Config{
		{Mode: BTM, SyncMode: SyncHalfwords, SyncMax: 1, ITypeWidth: 3},
		{Mode: HTM, SyncMode: SyncHalfwords, SyncMax: 1, ITypeWidth: 3},
		{Mode: BTM, SyncMode: SyncHalfwords, SyncMax: 1, ITypeWidth: 3, ICNTBits: 6},
		{Mode: BTM, SyncMode: SyncHalfwords, SyncMax: 2, ITypeWidth: 3, ICNTBits: 6, ICNTFullSync: true},
		{Mode: HTM, SyncMode: SyncHalfwords, SyncMax: 0, ITypeWidth: 3, ICNTBits: 5},
		{Mode: HTM, SyncMode: SyncMessages, SyncMax: 0, ITypeWidth: 3, ICNTBits: 5},
		{Mode: BTM, SyncMode: SyncMessages, SyncMax: 0, ITypeWidth: 3, ICNTBits: 5},
	} {
		t.Run("", func(t *testing.T) { roundTrip(t, img, blocks, pcs, cfg) })
	}
}

// threeBitConfigs are encoder configurations with a 3-bit ingress itype:
// both modes, a single sync, periodic sync counting messages and counting
// halfwords, and narrow I-CNT counters (reported with ResourceFull or, in
// BTM, SYNC=4). (No implicit return: it needs the 4-bit itype.)
var threeBitConfigs = []Config{
	{Mode: BTM, ITypeWidth: 3},
	{Mode: HTM, IndirectNoHist: true, ITypeWidth: 3},
	withSync(Config{Mode: BTM, ITypeWidth: 3}, SyncMessages, 0),
	withSync(Config{Mode: BTM, RepeatBranch: true, ITypeWidth: 3}, SyncMessages, 1),
	withSync(Config{Mode: HTM, ITypeWidth: 3}, SyncMessages, 0),
	withSync(Config{Mode: BTM, ITypeWidth: 3}, SyncHalfwords, 1),
	withSync(Config{Mode: HTM, IndirectNoHist: true, ITypeWidth: 3}, SyncHalfwords, 1),
	withSync(Config{Mode: BTM, ICNTBits: 6, SequentialJump: true, ITypeWidth: 3}, SyncHalfwords, 2),
	withSync(Config{Mode: BTM, ICNTBits: 6, ICNTFullSync: true, ITypeWidth: 3}, SyncHalfwords, 2),
	withSync(Config{Mode: HTM, ICNTBits: 5, HistBits: 4, ITypeWidth: 3}, SyncHalfwords, 0),
	withSync(Config{Mode: HTM, ICNTBits: 7, HistBits: 8, ITypeWidth: 3}, SyncMessages, 1),
	withSync(Config{Mode: BTM, ICNTBits: 5, ITypeWidth: 3}, SyncMessages, 0),
	{Mode: HTM, ICNTBits: 9, HistBits: 8, ITypeWidth: 3},
}

// encodeMerged encodes the PC list pcs with cfg as a port with a 3-bit
// itype reports it: the blocks of ingress.PCSource merged across direct
// jumps and calls (threeBitBlocks). It returns the trace and the number of
// merges.
func encodeMerged(img *image.Set, pcs []uint64, cfg Config) ([]byte, int, error) {
	src := ingress.NewPCSource(bytes.NewReader(pcText(pcs)), "pcs", img, ingress.PCOptions{})
	var blocks []ingress.Block
	for {
		b, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, 0, err
		}
		blocks = append(blocks, *b)
	}
	blocks, merged := threeBitBlocks(blocks)
	var out bytes.Buffer
	if cfg.XLEN == 0 {
		cfg.XLEN = img.XLEN()
	}
	enc, err := NewEncoder(&out, cfg)
	if err != nil {
		return nil, 0, err
	}
	for i := range blocks {
		if err := enc.Block(&blocks[i]); err != nil {
			return nil, 0, err
		}
	}
	if err := enc.Close(); err != nil {
		return nil, 0, err
	}
	return out.Bytes(), merged, nil
}

// threeBitImages loads the programs the 3-bit tests trace.
func threeBitImages(t testing.TB) map[string]*image.Set {
	imgs := map[string]*image.Set{}
	for _, p := range []string{"t1/test.elf", "elf/coremark.riscv", "elf/qsort.riscv", "elf/dhrystone.riscv",
		"elf/embench-nettle-aes.riscv"} {
		img := image.NewSet()
		if err := img.AddELF(corpus.Path(t, "ntrace-refcode/"+p)); err != nil {
			t.Fatal(err)
		}
		imgs[p] = img
	}
	return imgs
}

// The re-encode oracle knows 3-bit ports: the trace of a flow whose blocks
// go on past direct jumps and calls (threeBitBlocks), in every
// configuration of threeBitConfigs, decodes to the flow with no gap, and
// re-encoding the decoded flow (encodeFlow, which merges the blocks so
// too) gives those very bytes.
func TestThreeBitMergedReencode(t *testing.T) {
	imgs := threeBitImages(t)
	var traces, merges int
	for name, img := range imgs {
		for ci, cfg := range threeBitConfigs {
			cfg.XLEN = img.XLEN()
			for seed := int64(1); seed <= 3; seed++ {
				truth := synthFlow(img, seed, 3000, true)
				trace, merged, err := encodeMerged(img, truth, cfg)
				if err != nil {
					t.Fatal(err)
				}
				traces++
				merges += merged
				what := fmt.Sprintf("%s, config %d, seed %d", name, ci, seed)
				rec := &flowRecord{img: img}
				if err := mustDecoder(t, img, rec, DecoderConfigFrom(cfg)).Decode(bytes.NewReader(trace)); err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if pcs, gaps := rec.decodedPCs(); gaps || !equalPCs(pcs, truth) {
					for _, it := range rec.items {
						if it.gap != nil {
							t.Errorf("%s: %v", what, it.gap.Err)
							break
						}
					}
					t.Errorf("%s: the merged trace decodes to %d of %d instructions, gaps %v", what, len(pcs), len(truth), gaps)
					continue
				}
				again, err := encodeFlow(img, rec.evs, cfg)
				if err != nil || !bytes.Equal(again, trace) {
					t.Errorf("%s: re-encoding the decoded flow gives %d bytes, not the %d of the trace (%v)",
						what, len(again), len(trace), err)
				}
			}
		}
	}
	t.Logf("%d traces, %d blocks merged across a direct jump", traces, merges)
	if merges < traces*20 {
		t.Errorf("%d merges in %d traces: the test lost its case", merges, traces)
	}
}

// The integrity rule on corrupted traces of 3-bit ports (threeBitConfigs,
// the blocks merged across direct jumps and calls): in every trace, the
// I-CNT of each message that has one and the RDATA of each ResourceFull
// RCODE=0 of the first 40 grown and shrunk by 1 to 6 halfwords (the
// counts the widened last-block bounds judge), and random corruptions as
// FuzzIntegrity makes them (a flipped bit, a cut, an inserted, deleted or
// overwritten byte): each decodes to the truth, or a gap covers every
// difference, or the corrupted bytes are a trace of the decoded flow
// (integrityOf). Five programs, two paths each; with -short two programs
// and one path, with -campaign 200 random corruptions per trace instead of
// 20. (Before the checks it brought, checkFullTaken, checkRepeat, SYNC=0
// and the due-sync checks counting blocks with 3 bits, 10 of 54,117
// corruptions broke the rule.)
func TestThreeBitIntegrity(t *testing.T) {
	imgs := threeBitImages(t)
	random, seeds := 20, int64(2)
	if *campaign {
		random = 200
	}
	names := []string{"t1/test.elf", "elf/coremark.riscv", "elf/qsort.riscv", "elf/dhrystone.riscv",
		"elf/embench-nettle-aes.riscv"}
	if testing.Short() && !*campaign {
		names, seeds = names[:2], 1
	}
	var tried, detected, silent, violations int
	for _, name := range names {
		img := imgs[name]
		for ci, cfg := range threeBitConfigs {
			cfg.XLEN = img.XLEN()
			for seed := int64(1); seed <= seeds; seed++ {
				truth := synthFlow(img, seed, 1500, true)
				trace, _, err := encodeMerged(img, truth, cfg)
				if err != nil {
					t.Fatal(err)
				}
				check := func(bad []byte, what string) {
					tried++
					what = fmt.Sprintf("%s, config %d, seed %d: %s", name, ci, seed, what)
					why, rec := integrityOf(t, img, truth, cfg, bad, what)
					if why != "" {
						violations++
						t.Errorf("%s: %s", what, why)
						return
					}
					if _, gaps := rec.decodedPCs(); gaps {
						detected++
					} else {
						silent++
					}
				}
				r := NewReader(bytes.NewReader(trace), cfg.Wire())
				var m Message
				for k := 0; r.Next(&m) == nil && k < 40; k++ {
					f := FieldICNT
					if m.TCode == TCodeResourceFull && m.Get(FieldRCODE) == RCodeICNT {
						f = FieldRDATA
					} else if !m.Present(FieldICNT) {
						continue
					}
					for _, d := range []int64{-6, -5, -4, -3, -2, -1, 1, 2, 3, 4, 5, 6} {
						v := int64(m.Get(f)) + d
						if v < 0 {
							continue
						}
						bad := rewrite(t, trace, cfg.Wire(), k, func(m *Message) { m.Set(f, uint64(v)) })
						check(bad, fmt.Sprintf("%s (message %d) %s %d → %d", m.TCode, k, f, m.Get(f), v))
					}
				}
				rng := rand.New(rand.NewSource(seed*1000 + int64(ci)))
				for i := 0; i < random; i++ {
					ops := []byte{byte(rng.Intn(5)), byte(rng.Intn(256)), byte(rng.Intn(256)), byte(rng.Intn(256))}
					bad, desc := corrupt(trace, ops)
					check(bad, desc)
				}
			}
		}
	}
	t.Logf("%d corruptions of 3-bit traces: %d detected, %d without a gap (the truth, or a trace of the decoded flow), %d breaking the rule",
		tried, detected, silent, violations)
	if detected == 0 || silent == 0 {
		t.Errorf("the test lost its cases")
	}
}

// A ResourceFull RCODE=0 sent once a branch message completed the sync
// period counting messages ends the block the encoder syncs after: the
// sync, or the end message, walks nothing past it (checkDueFull). A 3-bit
// BTM trace of qsort (5-bit counter, a sync every 16 messages) ends in a
// loop of `j .` merged into one block of 1,264 halfwords reported full
// after a trap message completed the period; its end message's I-CNT 0
// grown by 1 to 6 walked that many more jumps without a gap before, as
// the block may go on past each.
func TestDueFullEnd(t *testing.T) {
	img := threeBitImages(t)["elf/qsort.riscv"]
	cfg := threeBitConfigs[11]
	cfg.XLEN = img.XLEN()
	truth := synthFlow(img, 7, 1500, true)
	trace, _, err := encodeMerged(img, truth, cfg)
	if err != nil {
		t.Fatal(err)
	}
	last, k := lastMessage(trace, cfg.Wire())
	if last.TCode != TCodeProgTraceCorrelation || last.Get(FieldICNT) != 0 {
		t.Fatalf("the trace ends with %v: the test lost its case", &last)
	}
	for v := uint64(1); v <= 6; v++ {
		bad := rewrite(t, trace, cfg.Wire(), k, func(m *Message) { m.Set(FieldICNT, v) })
		why, rec := integrityOf(t, img, truth, cfg, bad, fmt.Sprintf("end I-CNT 0 → %d", v))
		if why != "" {
			t.Errorf("end I-CNT 0 → %d: %s", v, why)
		}
		if _, gaps := rec.decodedPCs(); !gaps {
			t.Errorf("end I-CNT 0 → %d: no gap", v)
		}
	}
}

// rvtrace's encoder starts a trace again after an end message
// (ProgTraceCorrelation, EVCODE=4 when tracing was turned off) with
// SYNC=5 (trace enable), and ends it for good otherwise: another sync
// after an end message is a gap that holds the instructions since the
// last checkpoint suspect, and decoding starts again there. A 3-bit BTM
// trace of t1 (6-bit counter, a sync every 64 halfwords), byte 194 made
// 0x84: a ResourceFull RCODE=0 RDATA=64 becomes a ProgTraceCorrelation
// with I-CNT=16, followed by a periodic ProgTraceSync; the flow ended 48
// halfwords early and went on at the sync without a gap before.
func TestSyncAfterEnd(t *testing.T) {
	img := threeBitImages(t)["t1/test.elf"]
	cfg := threeBitConfigs[7]
	cfg.XLEN = img.XLEN()
	truth := synthFlow(img, 10, 1500, true)
	trace, _, err := encodeMerged(img, truth, cfg)
	if err != nil {
		t.Fatal(err)
	}
	bad := append([]byte(nil), trace...)
	bad[194] = 0x84
	r := NewReader(bytes.NewReader(bad), cfg.Wire())
	var m Message
	var seq []TCode
	for r.Next(&m) == nil {
		if m.Offset >= 194 && len(seq) < 2 {
			seq = append(seq, m.TCode)
		}
	}
	if len(seq) != 2 || seq[0] != TCodeProgTraceCorrelation || seq[1] != TCodeProgTraceSync {
		t.Fatalf("the corrupted trace has %v at byte 194: the test lost its case", seq)
	}
	why, rec := integrityOf(t, img, truth, cfg, bad, "byte 194 = 0x84")
	if why != "" {
		t.Fatal(why)
	}
	gaps := 0
	for _, it := range rec.items {
		if it.gap != nil {
			gaps++
			if !strings.Contains(it.gap.Err.Error(), "after the end message") {
				t.Errorf("gap %v", it.gap.Err)
			}
		}
	}
	if pcs, _ := rec.decodedPCs(); gaps != 1 || len(pcs) < len(truth)-100 {
		t.Errorf("%d gaps, %d of %d instructions decoded", gaps, len(pcs), len(truth))
	}
}

// The checks TestThreeBitIntegrity's full run needs, on its cases (t1,
// seed 2), in -short too: each corruption must be a gap at the corrupted
// message, saying the check's reason, and keep the integrity rule.
// checkRepeat: with RepeatBranch (config 3), DirectBranch I-CNT=47,
// RepeatBranch, DirectBranch I-CNT=53, RepeatBranch; the first I-CNT made
// 53 (a message equal to the last one, which the encoder would have
// counted) or the second made 47. checkFullTaken: in BTM with a 6-bit
// counter (configs 7 and 11), a DirectBranch's I-CNT 6 made 0, after a
// ResourceFull whose RDATA ends on the taken branch. (The first case's
// gap is at the second DirectBranch, the one equal to the first.)
func TestThreeBitRepeatFullTaken(t *testing.T) {
	img := threeBitImages(t)["t1/test.elf"]
	for _, c := range []struct {
		cfg, msg  int
		from, to  uint64
		gapMsg    int64 // the message the gap is at
		tc        TCode
		errSubstr string
	}{
		{3, 3, 47, 53, 5, TCodeDirectBranch, "which the encoder would count in a RepeatBranch"},
		{3, 5, 53, 47, 5, TCodeDirectBranch, "which the encoder would count in a RepeatBranch"},
		{7, 11, 6, 0, 11, TCodeDirectBranch, "counter full at the taken branch"},
		{11, 10, 6, 0, 10, TCodeDirectBranch, "counter full at the taken branch"},
		{11, 13, 6, 0, 13, TCodeDirectBranch, "counter full at the taken branch"},
	} {
		cfg := threeBitConfigs[c.cfg]
		cfg.XLEN = img.XLEN()
		truth := synthFlow(img, 2, 1500, true)
		trace, _, err := encodeMerged(img, truth, cfg)
		if err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("config %d, message %d, I-CNT %d → %d", c.cfg, c.msg, c.from, c.to)
		r := NewReader(bytes.NewReader(trace), cfg.Wire())
		var m Message
		for k := 0; k <= c.msg; k++ {
			if err := r.Next(&m); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		if m.TCode != c.tc || m.Get(FieldICNT) != c.from {
			t.Fatalf("%s: message %d is %v: the test lost its case", what, c.msg, &m)
		}
		bad := rewrite(t, trace, cfg.Wire(), c.msg, func(m *Message) { m.Set(FieldICNT, c.to) })
		why, rec := integrityOf(t, img, truth, cfg, bad, what)
		if why != "" {
			t.Errorf("%s: %s", what, why)
		}
		var first *flow.Event
		for _, it := range rec.items {
			if it.gap != nil {
				first = it.gap
				break
			}
		}
		var de *decode.Error
		switch {
		case first == nil:
			t.Errorf("%s: no gap", what)
		case !errors.As(first.Err, &de) || de.Index != c.gapMsg || !strings.Contains(first.Err.Error(), c.errSubstr):
			t.Errorf("%s: first gap %v, want one at message %d saying %q", what, first.Err, c.gapMsg, c.errSubstr)
		}
	}
}

// rvtrace's encoder sends no SYNC=0 (external trigger): one is a gap.
// TestThreeBitIntegrity's full run's case, in -short too: qsort, BTM
// with a 6-bit counter (config 7), seed 2, byte 299 deleted, which turns
// a trap's periodic sync into one with SYNC=0 and a shorter I-CNT.
func TestThreeBitSyncZero(t *testing.T) {
	img := threeBitImages(t)["elf/qsort.riscv"]
	cfg := threeBitConfigs[7]
	cfg.XLEN = img.XLEN()
	truth := synthFlow(img, 2, 1500, true)
	trace, _, err := encodeMerged(img, truth, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(trace) < 300 {
		t.Fatalf("%d bytes: the test lost its case", len(trace))
	}
	bad := append(append([]byte(nil), trace[:299]...), trace[300:]...)
	why, rec := integrityOf(t, img, truth, cfg, bad, "byte 299 deleted")
	if why != "" {
		t.Fatal(why)
	}
	for _, it := range rec.items {
		if it.gap != nil && strings.Contains(it.gap.Err.Error(), "SYNC=0 (external trigger) from rvtrace's encoder") {
			return
		}
	}
	t.Errorf("no gap for the SYNC=0")
}
