package ntrace

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// The paths TestTimedIntegrity traces with -campaign: campaignPaths
// paths from seed campaignSeed, so that a wide run can take paths no
// committed test takes.
var (
	campaignSeed  = flag.Int64("campaign-seed", 1, "first path seed of TestTimedIntegrity with -campaign")
	campaignPaths = flag.Int64("campaign-paths", 2, "paths per program and configuration of TestTimedIntegrity with -campaign")
)

// timed reports whether the trace cfg gives depends on the time the
// ingress blocks carry: timestamps, or a sync period counting cycles.
func timed(cfg Config) bool { return cfg.Timestamps || cfg.SyncMode == SyncCycles }

// timedConfigs are the encoder configurations whose trace depends on
// time, for TestTimedIntegrity: periodic sync counting cycles, with and
// without timestamps, and timestamps with the other sync modes; BTM and
// HTM, 4-bit and 3-bit itypes, narrow I-CNT counters (reported with
// ResourceFull or, in BTM, SYNC=4), every implicit-return mode,
// RepeatBranch and repeated history.
var timedConfigs = []Config{
	withSync(Config{Mode: BTM, Timestamps: true}, SyncCycles, 0),
	withSync(Config{Mode: HTM, Timestamps: true, ImplicitReturn: ReturnFull, StackDepth: 4}, SyncCycles, 1),
	withSync(withTimestamps(Presets["ref-htm-best"]), SyncCycles, 2),
	withSync(Config{Mode: BTM, RepeatBranch: true, Timestamps: true, ICNTBits: 7}, SyncCycles, 1),
	withSync(Config{Mode: HTM, ICNTBits: 6, HistBits: 4, Timestamps: true, ImplicitReturn: ReturnCount, StackDepth: 2},
		SyncCycles, 0),
	withSync(Config{Mode: BTM, ImplicitReturn: ReturnPartial, StackDepth: 2, PartialBits: 12, ICNTBits: 6,
		ICNTFullSync: true}, SyncCycles, 1),
	withSync(Config{Mode: HTM, SequentialJump: true, IndirectNoHist: true}, SyncCycles, 0),
	{Mode: HTM, Timestamps: true, SequentialJump: true, IndirectNoHist: true, ImplicitReturn: ReturnFull},
	withSync(Config{Mode: BTM, Timestamps: true, ICNTBits: 6, ICNTFullSync: true}, SyncHalfwords, 2),
	withSync(Config{Mode: HTM, Timestamps: true}, SyncMessages, 0),
	// 3-bit itype
	withSync(Config{Mode: BTM, Timestamps: true, ITypeWidth: 3}, SyncCycles, 0),
	withSync(Config{Mode: HTM, Timestamps: true, ITypeWidth: 3, ICNTBits: 6, HistBits: 8}, SyncCycles, 1),
	withSync(Config{Mode: BTM, ITypeWidth: 3, ICNTBits: 5}, SyncCycles, 2),
	withSync(Config{Mode: HTM, IndirectNoHist: true, ITypeWidth: 3}, SyncCycles, 0),
	withSync(Config{Mode: BTM, Timestamps: true, ITypeWidth: 3, RepeatBranch: true}, SyncMessages, 1),
	withSync(Config{Mode: HTM, Timestamps: true, IndirectNoHist: true, ITypeWidth: 3}, SyncHalfwords, 1),
	{Mode: HTM, Timestamps: true, ITypeWidth: 3, ICNTBits: 9, HistBits: 8},
}

func withTimestamps(c Config) Config {
	c.Timestamps = true
	return c
}

// timeBlocks gives blocks the times a hart's clock would: from 1 to 2
// cycles per instruction halfword, a stall of 10 to 300 cycles now and
// then (a cache miss), a trap's entry cost, and sometimes the same time as
// the block before (retired in the same cycle).
func timeBlocks(blocks []ingress.Block, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	t := uint64(1000 + rng.Intn(100000))
	for i := range blocks {
		b := &blocks[i]
		if i == 0 || rng.Intn(8) != 0 {
			t += 1 + uint64(b.IRetire) + uint64(rng.Intn(int(b.IRetire)+1))
			if rng.Intn(16) == 0 {
				t += uint64(10 + rng.Intn(290))
			}
			if b.IType.IsTrap() {
				t += uint64(rng.Intn(40))
			}
		}
		b.Time = t
	}
}

// encodeTimed encodes the PC list pcs with cfg as a port reports it (with
// a 3-bit itype, the blocks merged across direct jumps and calls:
// threeBitBlocks), the blocks carrying times (timeBlocks, from seed).
func encodeTimed(img *image.Set, pcs []uint64, cfg Config, seed int64) ([]byte, error) {
	src := ingress.NewPCSource(bytes.NewReader(pcText(pcs)), "pcs", img, ingress.PCOptions{})
	var blocks []ingress.Block
	for {
		b, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		blocks = append(blocks, *b)
	}
	if cfg.ITypeWidth == 3 {
		blocks, _ = threeBitBlocks(blocks)
	}
	timeBlocks(blocks, seed)
	return encodeBlocks(img, blocks, nil, nil, cfg)
}

// timedMsg is a message of a trace with its absolute time.
type timedMsg struct {
	m    Message
	time uint64
}

// timedMessages reads the messages of trace with the absolute time of
// each (a sync message's TSTAMP is absolute, the others' relative to the
// message before).
func timedMessages(trace []byte, cfg WireConfig) ([]timedMsg, error) {
	r := NewReader(bytes.NewReader(trace), cfg)
	var out []timedMsg
	var t uint64
	for {
		var m Message
		err := r.Next(&m)
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		if m.Present(FieldTSTAMP) {
			if m.TCode.IsSync() {
				t = m.Get(FieldTSTAMP)
			} else {
				t += m.Get(FieldTSTAMP)
			}
		}
		m.Raw = nil
		out = append(out, timedMsg{m, t})
	}
}

// sameButTime reports whether a and b are the same message but for
// TSTAMP.
func sameButTime(a, b *Message) bool {
	const ts = 1 << FieldTSTAMP
	if a.TCode != b.TCode || a.Has&^ts != b.Has&^ts {
		return false
	}
	for f := Field(0); f < NumFields; f++ {
		if f != FieldTSTAMP && a.Has&(1<<f) != 0 && a.V[f] != b.V[f] {
			return false
		}
	}
	return true
}

// syncEnds returns the blocks at whose end, in a trace of blocks whose
// messages are want, the sync period counting cycles ran out (reason
// SyncPeriodic), or a Trace Event sync was asked for (SyncTraceEvent,
// Notify): the encoder sends that sync (SYNC=reason) at the start of the
// next block, whose count ends at the end of that block. When a periodic
// sync reports a trap (B-TYPE 1 to 3), the period ran out in the trap's
// block, and the sync is the trap's message.
func syncEnds(blocks []ingress.Block, want []timedMsg, reason uint64) map[int]bool {
	ends := make([]uint64, len(blocks)) // halfwords at the end of each block
	var traps []int                     // the blocks that end in a trap
	var pos uint64
	for i := range blocks {
		pos += uint64(blocks[i].IRetire)
		ends[i] = pos
		if blocks[i].IType.IsTrap() {
			traps = append(traps, i)
		}
	}
	trig := map[int]bool{}
	var at, lastICNT uint64
	next := 0 // trap blocks reported so far
	for k := range want {
		m := &want[k].m
		switch {
		case m.TCode == TCodeResourceFull && m.Get(FieldRCODE) == RCodeICNT:
			at += m.Get(FieldRDATA)
		case m.TCode == TCodeRepeatBranch:
			at += m.Get(FieldBCNT) * lastICNT // (the repeats of the last branch message)
		case m.Present(FieldICNT):
			at += m.Get(FieldICNT)
			lastICNT = m.Get(FieldICNT)
		}
		periodic := m.Present(FieldSYNC) && m.Get(FieldSYNC) == reason
		if m.Present(FieldBTYPE) && m.Get(FieldBTYPE) != BTypeIndirect {
			if next < len(traps) {
				if periodic && reason == SyncPeriodic {
					trig[traps[next]] = true
				}
				next++
			}
			continue
		}
		if !periodic {
			continue
		}
		limit := len(blocks)
		if next < len(traps) {
			limit = traps[next] // (the next trap is not reported yet)
		}
		for i := limit - 1; i >= 0 && ends[i] >= at; i-- {
			if ends[i] == at {
				trig[i] = true
				break
			}
		}
	}
	return trig
}

// encodeFlowTimed is encodeFlowSplit for a configuration whose trace
// depends on time (timed): it encodes the decoded flow with block times
// under which the encoder writes the messages of bad, the corrupted
// trace, with their very timestamps and periodic syncs, when it finds
// such times, and with the Trace Event syncs (SYNC=6) of bad asked for
// where they are (syncEnds). Counting cycles, the blocks at whose end the
// period ran out are those before the periodic syncs of bad (syncEnds): each gets
// the time of the sync's own block, the others keep the time of the block
// before, so that the count runs out there only. With timestamps, the
// flow is encoded once with a distinct time per block (and, counting
// cycles, the period widened to 2^19 with the same blocks running it
// out): the timestamp of each message then says which block the encoder
// stamped it with, and that block takes the time bad gives that message.
// A block that would stamp two messages with different times (a sync at
// its start and its branch's message at its end) is split after its
// first instruction, as a port may end a block after any instruction.
// (The result is checked by comparing bytes: a time assignment this
// misses makes the oracle reject a valid trace, never accept an invalid
// one.)
func encodeFlowTimed(img *image.Set, evs []flow.Event, cfg Config, points []uint64, bad []byte) ([]byte, error) {
	blocks, off, err := flowBlocks(img, evs, cfg, points)
	if err != nil {
		return nil, err
	}
	if len(blocks) == 0 {
		return nil, errors.New("no blocks")
	}
	want, err := timedMessages(bad, cfg.Wire())
	if err != nil {
		return nil, err
	}
	if cfg.SyncMode == SyncCycles {
		// A sync sent at the start of a block with its time restarts the
		// count there, and that block's end cannot run it out: a block
		// that begins at a sync and ends where the next periodic one
		// counts to was two, the second running the period out.
		at := syncPoints(want)
		var pos uint64
		trig := syncEnds(blocks, want, SyncPeriodic)
		for i := 0; i < len(blocks); i++ {
			if trig[i] && at[pos] {
				if split, _, err := splitFirst(img, blocks, off, i); err == nil {
					blocks, off = split, shiftOff(off, i)
					trig = syncEnds(blocks, want, SyncPeriodic)
				}
			}
			pos += uint64(blocks[i].IRetire)
		}
	}
	for range 8 {
		out, split, err := encodeTimes(img, blocks, off, cfg, want)
		if split < 0 {
			return out, err
		}
		// A port may end a block after any instruction (itype 0): one
		// that stamps two messages with different times was two.
		if blocks, off, err = splitFirst(img, blocks, off, split); err != nil {
			return nil, err
		}
	}
	return nil, errors.New("too many blocks split")
}

// splitFirst returns blocks with block i split after its first
// instruction, the first part ending with itype 0 (a block of one
// instruction that ends in a trap: the trap a block of its own that
// retires nothing), and off shifted so.
func splitFirst(img *image.Set, blocks []ingress.Block, off map[int]bool, i int) ([]ingress.Block, map[int]bool, error) {
	b := blocks[i]
	in, ok := img.Inst(b.IAddr)
	if !ok || in.Len == 0 || uint32(in.Len/2) > b.IRetire || uint32(in.Len/2) == b.IRetire && !b.IType.IsTrap() {
		return nil, nil, fmt.Errorf("block %d of one instruction stamps messages of two times", i)
	}
	first, rest := b, b
	first.IRetire, first.ILastSize, first.IType, first.SIJump = uint32(in.Len/2), uint8(in.Len/4), ingress.ITypeNone, false
	rest.IAddr, rest.IRetire = b.IAddr+uint64(in.Len), b.IRetire-uint32(in.Len/2)
	// (a trap after one instruction: a block of its own, the next one
	// faulting)
	out := append(append(append([]ingress.Block(nil), blocks[:i]...), first, rest), blocks[i+1:]...)
	return out, shiftOff(off, i), nil
}

// shiftOff returns off for the blocks after block i split in two.
func shiftOff(off map[int]bool, i int) map[int]bool {
	noff := map[int]bool{}
	for j, v := range off {
		if j > i {
			j++
		}
		noff[j] = v
	}
	return noff
}

// syncPoints returns the points of the flow (halfwords from its start)
// where the sync messages of want end their count: the start of the
// block they were sent at.
func syncPoints(want []timedMsg) map[uint64]bool {
	out := map[uint64]bool{}
	var at, lastICNT uint64
	for k := range want {
		m := &want[k].m
		switch {
		case m.TCode == TCodeResourceFull && m.Get(FieldRCODE) == RCodeICNT:
			at += m.Get(FieldRDATA)
		case m.TCode == TCodeRepeatBranch:
			at += m.Get(FieldBCNT) * lastICNT
		case m.Present(FieldICNT):
			at += m.Get(FieldICNT)
			lastICNT = m.Get(FieldICNT)
		}
		if m.TCode.IsSync() {
			out[at] = true
		}
	}
	return out
}

// encodeTimes is encodeFlowTimed for blocks: it returns the trace, or
// the index of a block that stamps messages of two different times
// (split >= 0), or an error.
func encodeTimes(img *image.Set, blocks []ingress.Block, off map[int]bool, cfg Config, want []timedMsg) (out []byte, split int, err error) {
	fail := func(err error) ([]byte, int, error) { return nil, -1, err }
	cycles := cfg.SyncMode == SyncCycles
	var trig map[int]bool
	if cycles {
		trig = syncEnds(blocks, want, SyncPeriodic)
	}
	notify := syncEnds(blocks, want, SyncTraceEvent)
	if !cfg.Timestamps {
		period := uint64(16) << uint(cfg.SyncMax)
		t := uint64(1)
		for i := range blocks {
			if trig[i] {
				t += period
			}
			blocks[i].Time = t
		}
		out, err := encodeBlocks(img, blocks, off, notify, cfg)
		return out, -1, err
	}
	// First pass: which block stamps each message.
	p1 := cfg
	const wide = 1 << 19
	if cycles {
		p1.SyncMax = 15 // a period of 2^19 cycles
	}
	blockOf := map[uint64]int{}
	t, last := uint64(0), uint64(1)
	for i := range blocks {
		t++
		if trig[i] {
			t = max(t, last+2*wide)
			last = t
		}
		blocks[i].Time = t
		blockOf[t] = i
	}
	first, err := encodeBlocks(img, blocks, off, notify, p1)
	if err != nil {
		return fail(err)
	}
	got, err := timedMessages(first, cfg.Wire())
	if err != nil {
		return fail(err)
	}
	if len(got) != len(want) {
		return fail(fmt.Errorf("%d messages, not %d", len(got), len(want)))
	}
	times := make([]uint64, len(blocks))
	set := make([]bool, len(blocks))
	for k := range got {
		if !sameButTime(&got[k].m, &want[k].m) {
			return fail(fmt.Errorf("message %d is %v, not %v", k, &got[k].m, &want[k].m))
		}
		i, ok := blockOf[got[k].time]
		if !ok {
			return fail(fmt.Errorf("message %d stamped %d, no block's time", k, got[k].time))
		}
		if set[i] && times[i] != want[k].time {
			return nil, i, nil
		}
		times[i], set[i] = want[k].time, true
	}
	// Second pass: the blocks that stamp no message keep the time of
	// the block before, or running the period out, take the next
	// stamped time.
	var cur uint64
	for i := range set {
		if set[i] {
			cur = times[i]
			break
		}
	}
	for i := range blocks {
		switch {
		case set[i]:
			cur = times[i]
		case trig[i]:
			for j := i + 1; j < len(blocks); j++ {
				if set[j] {
					cur = times[j]
					break
				}
			}
		}
		blocks[i].Time = cur
	}
	out, err = encodeBlocks(img, blocks, off, notify, cfg)
	return out, -1, err
}

// The timed re-encode oracle: the trace of a path through each program
// whose blocks carry time (timeBlocks), in every configuration of
// timedConfigs, decodes to the path with no gap, and re-encoding the
// decoded flow with the times encodeFlowTimed finds gives those very
// bytes. Counting cycles, the periodic syncs come where the time says
// (SyncCycles without timestamps had none before: the encoder counted
// cycles only once a message carried a timestamp). It is no excuse for
// any bytes: a periodic sync's TSTAMP made earlier than the sync period
// allows, and a branch message's TSTAMP made later than the next sync,
// give bytes no time assignment reproduces.
func TestTimedReencode(t *testing.T) {
	imgs := threeBitImages(t)
	names := []string{"t1/test.elf", "elf/coremark.riscv", "elf/qsort.riscv"}
	var traces, syncs, rejected int
	for _, name := range names {
		img := imgs[name]
		for ci, cfg := range timedConfigs {
			cfg.XLEN = img.XLEN()
			for seed := int64(1); seed <= 2; seed++ {
				what := fmt.Sprintf("%s, config %d, seed %d", name, ci, seed)
				truth := synthFlow(img, seed, 2000, true)
				trace, err := encodeTimed(img, truth, cfg, seed)
				if err != nil {
					t.Fatal(err)
				}
				traces++
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
					t.Errorf("%s: decodes to %d of %d instructions, gaps %v", what, len(pcs), len(truth), gaps)
					continue
				}
				if !reencodes(img, rec, cfg, trace) {
					again, err := encodeFlowTimed(img, rec.evs, cfg, nil, trace)
					t.Errorf("%s: re-encoding the decoded flow gives %d bytes, not the %d of the trace (%v)",
						what, len(again), len(trace), err)
				}
				if cfg.SyncMode != SyncCycles {
					continue
				}
				msgs, _ := timedMessages(trace, cfg.Wire())
				period := uint64(16) << uint(cfg.SyncMax)
				n := 0
				for k, m := range msgs {
					if m.m.Present(FieldSYNC) && m.m.Get(FieldSYNC) == SyncPeriodic {
						n++
					}
					if !cfg.Timestamps || k == 0 || k+1 >= len(msgs) {
						continue
					}
					// a periodic sync stamped one period after the sync
					// before it, less 1; a branch message without SYNC
					// stamped a period after the sync before it
					var prevSync uint64
					for j := k - 1; j >= 0; j-- {
						if msgs[j].m.TCode.IsSync() {
							prevSync = msgs[j].time
							break
						}
					}
					var bad []byte
					switch tc := m.m.TCode; {
					case m.m.Present(FieldSYNC) && m.m.Get(FieldSYNC) == SyncPeriodic:
						bad = retime(t, trace, cfg.Wire(), k, prevSync+period-1)
					case tc == TCodeDirectBranch || tc == TCodeIndirectBranch || tc == TCodeIndirectBranchHist:
						if msgs[k+1].time >= prevSync+period {
							bad = retime(t, trace, cfg.Wire(), k, prevSync+period)
						}
					}
					if bad == nil || k%3 != 0 {
						continue
					}
					if reencodes(img, rec, cfg, bad) {
						t.Errorf("%s: message %d (%s) retimed: re-encoding the decoded flow gives those bytes", what, k,
							m.m.TCode)
					}
					rejected++
				}
				if n < 5 {
					t.Errorf("%s: %d periodic syncs", what, n)
				}
				syncs += n
			}
		}
	}
	t.Logf("%d traces (%d periodic syncs counting cycles), %d retimed messages rejected", traces, syncs, rejected)
	if rejected < 100 {
		t.Errorf("the test lost its cases")
	}
}

// retime returns trace with message k given the absolute time at (the
// message after it keeping its own).
func retime(t *testing.T, trace []byte, cfg WireConfig, k int, at uint64) []byte {
	msgs, err := timedMessages(trace, cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := rewrite(t, trace, cfg, k, func(m *Message) {
		if m.TCode.IsSync() {
			m.Set(FieldTSTAMP, at)
		} else {
			m.Set(FieldTSTAMP, at-msgs[k-1].time)
		}
	})
	if k+1 < len(msgs) && !msgs[k+1].m.TCode.IsSync() {
		out = rewrite(t, out, cfg, k+1, func(m *Message) { m.Set(FieldTSTAMP, msgs[k+1].time-at) })
	}
	return out
}

// The integrity rule on corrupted traces whose blocks carry time
// (timedConfigs: periodic sync counting cycles, with and without
// timestamps, and timestamps with the other sync modes; 4-bit and 3-bit
// itypes, the blocks merged across direct jumps and calls with 3): in
// every trace, the I-CNT of each message that has one and the RDATA of
// each ResourceFull RCODE=0 of the first 40 grown and shrunk by 1 to 6
// halfwords, the TSTAMP of each of the first 40 moved by ±1, ±half a
// sync period and ±a period, and random corruptions as FuzzIntegrity
// makes them (a flipped bit, a cut, an inserted, deleted or overwritten
// byte): each decodes to the truth, or a gap covers every difference, or
// the corrupted bytes are a trace of the decoded flow with some block
// times (integrityOf, encodeFlowTimed). Five programs, two paths each
// (from -campaign-seed, -campaign-paths of them with -campaign), 20
// random corruptions per trace (200 with -campaign); with -short, t1 and
// one path.
func TestTimedIntegrity(t *testing.T) {
	imgs := threeBitImages(t)
	random, seed0, seeds := 20, int64(1), int64(2)
	names := []string{"t1/test.elf", "elf/coremark.riscv", "elf/qsort.riscv", "elf/dhrystone.riscv",
		"elf/embench-nettle-aes.riscv"}
	if *campaign {
		random, seed0, seeds = 200, *campaignSeed, *campaignPaths
	} else if testing.Short() {
		names, seeds = names[:1], 1
	}
	var tried, detected, silent, violations int
	for _, name := range names {
		img := imgs[name]
		for ci, cfg := range timedConfigs {
			cfg.XLEN = img.XLEN()
			period := int64(16) << uint(cfg.SyncMax)
			for seed := seed0; seed < seed0+seeds; seed++ {
				truth := synthFlow(img, seed, 1500, true)
				trace, err := encodeTimed(img, truth, cfg, seed)
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
					if m.Present(FieldTSTAMP) {
						for _, d := range []int64{-period, -period / 2, -1, 1, period / 2, period} {
							v := int64(m.Get(FieldTSTAMP)) + d
							if v < 0 {
								continue
							}
							bad := rewrite(t, trace, cfg.Wire(), k, func(m *Message) { m.Set(FieldTSTAMP, uint64(v)) })
							check(bad, fmt.Sprintf("%s (message %d) TSTAMP %d → %d", m.TCode, k, m.Get(FieldTSTAMP), v))
						}
					}
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
	t.Logf("%d corruptions of traces with time: %d detected, %d without a gap (the truth, or a trace of the decoded flow), %d breaking the rule",
		tried, detected, silent, violations)
	if detected == 0 || silent == 0 {
		t.Errorf("the test lost its cases")
	}
}

// The checks TestTimedIntegrity's -campaign run needed, on its cases, in
// -short too: each corruption must be a gap at the corrupted message
// saying the check's reason, and keep the integrity rule. checkCycleSync:
// in a loop of `j .` at the end of coremark (HTM, implicit returns, a
// sync every 32 cycles), a periodic ProgTraceSync's I-CNT 4 made 1 or 0,
// right after another, which restarted the count at the start of the
// block it walks, and there a trap's IndirectBranchSync I-CNT 4 made 0
// (BTM). checkSameBlock: there, a trap's IndirectBranch I-CNT 4 made 0
// right after a periodic ProgTraceSync, with a TSTAMP of 40 (HTM,
// ref-htm-best). checkCycleTime: dhrystone (3-bit HTM, 6-bit counter), an
// IndirectBranchHistSync's I-CNT 0 made 1 after a ResourceFull RCODE=0
// stamped past the period, walking the return at F-ADDR; t1 and coremark
// (HTM, a 4-bit HIST register sent when the next branch needs room),
// one's I-CNT 14 made 15 (or 27 made 32) after a HIST record stamped
// past the period, walking on past the branch the record was sent at to
// a return (checkDueHist).
func TestTimedChecks(t *testing.T) {
	imgs := threeBitImages(t)
	for _, c := range []struct {
		img       string
		cfg, seed int
		msg       int
		from, to  uint64
		gapMsg    int64
		errSubstr string
	}{
		{"elf/coremark.riscv", 1, 2, 32, 4, 1, 32, "periodic sync counting cycles 1 instructions after the sync before"},
		{"elf/coremark.riscv", 1, 2, 32, 4, 0, 32, "periodic sync counting cycles 0 instructions after the sync before"},
		{"elf/dhrystone.riscv", 11, 2, 30, 0, 1, 30, "after the ResourceFull that reported the block the sync period ran out in"},
		{"elf/coremark.riscv", 0, 7, 32, 4, 0, 32, "periodic sync counting cycles 0 instructions after the sync before"},
		{"t1/test.elf", 4, 3, 5, 14, 15, 5, "does not end on the branch that record was sent at"},
		{"elf/coremark.riscv", 4, 8, 13, 27, 32, 13, "does not end on the branch that record was sent at"},
		{"elf/coremark.riscv", 2, 7, 15, 4, 0, 15, "after the sync sent at the start of the block whose trap it reports"},
	} {
		img := imgs[c.img]
		cfg := timedConfigs[c.cfg]
		cfg.XLEN = img.XLEN()
		truth := synthFlow(img, int64(c.seed), 1500, true)
		trace, err := encodeTimed(img, truth, cfg, int64(c.seed))
		if err != nil {
			t.Fatal(err)
		}
		what := fmt.Sprintf("%s config %d seed %d, message %d, I-CNT %d → %d", c.img, c.cfg, c.seed, c.msg, c.from, c.to)
		msgs, err := timedMessages(trace, cfg.Wire())
		if err != nil || len(msgs) <= c.msg || msgs[c.msg].m.Get(FieldICNT) != c.from {
			t.Fatalf("%s: the test lost its case (%v)", what, err)
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

// Two more cases of the -campaign run, byte corruptions that gave another
// valid-looking sync: in a loop of `j .` at the end of coremark (BTM, a
// sync every 16 cycles, a 22-bit counter), a byte 0xd0 inserted at 492
// turned a periodic ProgTraceSync into a SYNC=4 with I-CNT 459, walking
// 452 more jumps, from an encoder that reports a full counter with
// ResourceFull only (DecoderConfig.NoICNTFullSync); in dhrystone
// (ref-htm-best, a sync every 64 cycles), byte 468 deleted turned one
// into a SYNC=6 (trace event) with I-CNT=0 right after another, which
// the encoder sends at the start of a later block. Each is a gap saying
// so, and keeps the integrity rule.
func TestTimedSyncChecks(t *testing.T) {
	imgs := threeBitImages(t)
	for _, c := range []struct {
		img       string
		cfg, seed int
		pos, ins  int // ins < 0: delete the byte at pos
		errSubstr string
	}{
		{"elf/coremark.riscv", 0, 5, 492, 0xd0, "SYNC=4 (I-CNT full) from an encoder that reports a full I-CNT counter with ResourceFull"},
		{"elf/dhrystone.riscv", 2, 4, 468, -1, "SYNC=6 (trace event) with nothing walked since the sync before"},
	} {
		img := imgs[c.img]
		cfg := timedConfigs[c.cfg]
		cfg.XLEN = img.XLEN()
		truth := synthFlow(img, int64(c.seed), 1500, true)
		trace, err := encodeTimed(img, truth, cfg, int64(c.seed))
		if err != nil || len(trace) <= c.pos {
			t.Fatalf("%s: the test lost its case (%v)", c.img, err)
		}
		bad := append([]byte(nil), trace[:c.pos]...)
		if c.ins >= 0 {
			bad = append(append(bad, byte(c.ins)), trace[c.pos:]...)
		} else {
			bad = append(bad, trace[c.pos+1:]...)
		}
		what := fmt.Sprintf("%s config %d seed %d, byte %d", c.img, c.cfg, c.seed, c.pos)
		why, rec := integrityOf(t, img, truth, cfg, bad, what)
		if why != "" {
			t.Errorf("%s: %s", what, why)
		}
		found := false
		for _, it := range rec.items {
			if it.gap != nil && strings.Contains(it.gap.Err.Error(), c.errSubstr) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: no gap saying %q", what, c.errSubstr)
		}
	}
}
