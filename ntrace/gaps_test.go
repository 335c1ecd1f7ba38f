package ntrace

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/decode"
	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// eventLog records every event of a decode.
type eventLog struct {
	img *image.Set
	evs []flow.Event
	pcs []uint64
}

func (l *eventLog) Event(e *flow.Event) error {
	l.evs = append(l.evs, *e)
	if e.Kind == flow.KindRange {
		pc := e.Start
		for i := uint64(0); i < e.N; i++ {
			l.pcs = append(l.pcs, pc)
			in, _ := l.img.Inst(pc)
			pc += uint64(in.Len)
		}
	}
	return nil
}
func (l *eventLog) Close() error { return nil }

func (l *eventLog) kinds(k flow.Kind) []flow.Event {
	var out []flow.Event
	for _, e := range l.evs {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

// decodeLog decodes trace with cfg and returns the events and Decode's
// error.
func decodeLog(t *testing.T, img *image.Set, trace []byte, cfg DecoderConfig) (*eventLog, error) {
	t.Helper()
	l := &eventLog{img: img}
	err := mustDecoder(t, img, l, cfg).Decode(bytes.NewReader(trace))
	return l, err
}

// messageOffsets returns the byte offset of every message of trace.
func messageOffsets(trace []byte, cfg WireConfig) []int64 {
	r := NewReader(bytes.NewReader(trace), cfg)
	var m Message
	var out []int64
	for r.Next(&m) == nil {
		out = append(out, m.Offset)
	}
	return out
}

// integrityTrace is a path through t1 and its trace with cfg.
func integrityTrace(t *testing.T, cfg Config, n int) (*image.Set, []uint64, []byte) {
	t.Helper()
	img, err := integrityImage()
	if err != nil {
		t.Skip(err)
	}
	cfg.XLEN = img.XLEN()
	truth := synthFlow(img, 7, n, true)
	trace, err := encodePCs(img, truth, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return img, truth, trace
}

// wantGap checks that the log has exactly one gap, with cause and byte
// offset and message index, and returns it.
func wantGap(t *testing.T, l *eventLog, cause error, off, index int64) flow.Event {
	t.Helper()
	gaps := l.kinds(flow.KindGap)
	if len(gaps) != 1 {
		t.Fatalf("%d gaps, want 1: %v", len(gaps), gaps)
	}
	g := gaps[0]
	var de *decode.Error
	if !errors.As(g.Err, &de) || !errors.Is(g.Err, cause) {
		t.Fatalf("gap %v: not a *decode.Error wrapping %v", &g, cause)
	}
	if g.Offset != off || de.Offset != off || g.Index != index || de.Index != index {
		t.Errorf("gap %v at byte %d message %d, want byte %d message %d", &g, g.Offset, g.Index, off, index)
	}
	return g
}

// A message with a reserved TCODE inserted in a trace is a gap at its
// byte and index; what was decoded before it is exact.
func TestGapReservedTCode(t *testing.T) {
	cfg := Config{Mode: HTM}
	img, truth, trace := integrityTrace(t, cfg, 2000)
	offs := messageOffsets(trace, cfg.Wire())
	k := len(offs) / 2
	at := offs[k]
	bad := append(append(append([]byte(nil), trace[:at]...), 5<<2, 3), trace[at:]...) // TCODE 5, an empty field
	l, err := decodeLog(t, img, bad, DecoderConfigFrom(cfg))
	if err != nil {
		t.Fatal(err)
	}
	g := wantGap(t, l, decode.ErrSkipped, at, int64(k))
	if !strings.Contains(g.Err.Error(), "reserved TCODE 5") {
		t.Errorf("gap says %q", g.Err)
	}
	// Before the gap the flow is the truth's beginning (less the suspects).
	if why := checkIntegrity(truth, itemsOf(l)); why != "" {
		t.Error(why)
	}
	// Vendor-defined: a gap by default, a warning when the encoder is
	// known to send them.
	bad[at] = 60 << 2
	l, _ = decodeLog(t, img, bad, DecoderConfigFrom(cfg))
	wantGap(t, l, decode.ErrSkipped, at, int64(k))
	dc := DecoderConfigFrom(cfg)
	dc.VendorMessages = true
	l, _ = decodeLog(t, img, bad, dc)
	if len(l.kinds(flow.KindGap)) != 0 || len(l.kinds(flow.KindWarn)) != 1 || len(l.pcs) != len(truth) {
		t.Errorf("vendor message with VendorMessages: %d gaps, %d warnings, %d of %d PCs",
			len(l.kinds(flow.KindGap)), len(l.kinds(flow.KindWarn)), len(l.pcs), len(truth))
	}
}

func itemsOf(l *eventLog) []flowItem {
	var out []flowItem
	for i := range l.evs {
		e := &l.evs[i]
		switch e.Kind {
		case flow.KindGap:
			out = append(out, flowItem{gap: e})
		case flow.KindRange:
			pc := e.Start
			for j := uint64(0); j < e.N; j++ {
				out = append(out, flowItem{pc: pc})
				in, _ := l.img.Inst(pc)
				pc += uint64(in.Len)
			}
		}
	}
	return out
}

// A trace cut after a message (no ProgTraceCorrelation) ends with a
// truncation gap at the total byte count; with AllowTruncated it does not.
func TestGapTruncated(t *testing.T) {
	cfg := Config{Mode: BTM}
	img, truth, trace := integrityTrace(t, cfg, 1500)
	offs := messageOffsets(trace, cfg.Wire())
	for _, cut := range []int64{offs[len(offs)-1], offs[len(offs)/2], offs[len(offs)/2] + 1} {
		l, err := decodeLog(t, img, trace[:cut], DecoderConfigFrom(cfg))
		if err != nil {
			t.Fatal(err)
		}
		gaps := l.kinds(flow.KindGap)
		if len(gaps) != 1 || !errors.Is(gaps[0].Err, decode.ErrTruncated) || gaps[0].Offset != cut {
			t.Fatalf("cut at %d: gaps %v", cut, gaps)
		}
		if why := checkIntegrity(truth, itemsOf(l)); why != "" {
			t.Errorf("cut at %d: %s", cut, why)
		}
		dc := DecoderConfigFrom(cfg)
		dc.Decode.AllowTruncated = true
		if l, _ := decodeLog(t, img, trace[:cut], dc); len(l.kinds(flow.KindGap)) != 0 {
			t.Errorf("cut at %d with AllowTruncated: %v", cut, l.kinds(flow.KindGap))
		}
	}
	// A trace that starts after its sync: the messages before the first
	// sync are a gap, unless AllowTruncated.
	cfg2 := withSync(Config{Mode: BTM}, SyncMessages, 0)
	img, _, trace = integrityTrace(t, cfg2, 1500)
	start := messageOffsets(trace, cfg2.Wire())[1]
	l, err := decodeLog(t, img, trace[start:], DecoderConfigFrom(cfg2))
	if err != nil {
		t.Fatal(err)
	}
	if g := l.kinds(flow.KindGap); len(g) == 0 || !errors.Is(g[0].Err, decode.ErrSkipped) || g[0].Offset != 0 {
		t.Errorf("trace from byte %d: gaps %v", start, g)
	}
}

// An empty input and an input without any sync message are errors.
func TestDecodeEmptyAndNoSync(t *testing.T) {
	cfg := Config{Mode: HTM}
	img, _, trace := integrityTrace(t, cfg, 500)
	_, err := decodeLog(t, img, nil, DecoderConfigFrom(cfg))
	var de *decode.Error
	if !errors.Is(err, decode.ErrEmpty) || !errors.As(err, &de) {
		t.Errorf("empty input: %v", err)
	}
	// every message but the first (the only sync)
	offs := messageOffsets(trace, cfg.Wire())
	l, err := decodeLog(t, img, trace[offs[1]:], DecoderConfigFrom(cfg))
	if !errors.Is(err, decode.ErrNoSync) || !errors.As(err, &de) || len(l.pcs) != 0 {
		t.Errorf("no sync: %v, %d PCs", err, len(l.pcs))
	}
	if _, err := decodeLog(t, img, bytes.Repeat([]byte{0xff}, 10), DecoderConfigFrom(cfg)); !errors.Is(err, decode.ErrNoSync) {
		t.Errorf("idle bytes only: %v", err)
	}
}

// rewrite re-encodes message k of trace after edit changes it.
func rewrite(t *testing.T, trace []byte, cfg WireConfig, k int, edit func(m *Message)) []byte {
	t.Helper()
	r := NewReader(bytes.NewReader(trace), cfg)
	var out bytes.Buffer
	w := NewWriter(&out, cfg)
	var m Message
	for i := 0; r.Next(&m) == nil; i++ {
		if i == k {
			edit(&m)
		}
		if err := w.Write(&m); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// A periodic sync whose F-ADDR is not where the flow arrived is a
// checkpoint gap naming both addresses, whose Suspect counts the
// instructions decoded since the previous checkpoint, which verified;
// decoding resumes at the next sync, not at the disputed F-ADDR.
func TestGapCheckpoint(t *testing.T) {
	cfg := withSync(Config{Mode: HTM}, SyncMessages, 0)
	img, truth, trace := integrityTrace(t, cfg, 3000)
	// the second periodic sync message
	r := NewReader(bytes.NewReader(trace), cfg.Wire())
	var m Message
	k, syncs := -1, 0
	var faddr uint64
	for i := 0; r.Next(&m) == nil; i++ {
		if m.TCode.IsSync() && m.Get(FieldSYNC) == SyncPeriodic {
			if syncs++; syncs == 2 {
				k, faddr = i, m.Get(FieldFADDR)<<1
				break
			}
		}
	}
	if k < 0 {
		t.Fatal("no second periodic sync")
	}
	wrong := faddr + 4
	bad := rewrite(t, trace, cfg.Wire(), k, func(m *Message) { m.Set(FieldFADDR, wrong>>1) })
	l, err := decodeLog(t, img, bad, DecoderConfigFrom(cfg))
	if err != nil {
		t.Fatal(err)
	}
	gaps := l.kinds(flow.KindGap)
	if len(gaps) == 0 || !errors.Is(gaps[0].Err, decode.ErrCheckpoint) || gaps[0].Index != int64(k) {
		t.Fatalf("gaps %v", gaps)
	}
	msg := gaps[0].Err.Error()
	if !strings.Contains(msg, "0x"+strconvHex(wrong)) || !strings.Contains(msg, "0x"+strconvHex(faddr)) {
		t.Errorf("the gap does not name both addresses: %s", msg)
	}
	// Suspect = instructions between the previous sync event and the gap.
	var inRanges uint64
	for _, e := range l.evs {
		if e.Kind == flow.KindGap {
			break
		}
		switch e.Kind {
		case flow.KindSync:
			inRanges = 0
		case flow.KindRange:
			inRanges += e.N
		}
	}
	if gaps[0].Suspect == 0 || gaps[0].Suspect != inRanges {
		t.Errorf("Suspect %d, want the %d instructions since the previous sync", gaps[0].Suspect, inRanges)
	}
	// The flow resumes at the next sync.
	for i, e := range l.evs {
		if e.Kind == flow.KindGap {
			if next := l.evs[i+1]; next.Kind != flow.KindSync || next.Addr == wrong || next.Offset <= e.Offset {
				t.Errorf("after the gap: %v", &next)
			}
			break
		}
	}
	if why := checkIntegrity(truth, itemsOf(l)); why != "" {
		t.Error(why)
	}
}

func strconvHex(v uint64) string {
	const digits = "0123456789abcdef"
	if v == 0 {
		return "0"
	}
	var b []byte
	for ; v > 0; v >>= 4 {
		b = append([]byte{digits[v&15]}, b...)
	}
	return string(b)
}

// loopImage is `j .` at 0x1000: any I-CNT walks it.
func loopImage() *image.Set {
	img := image.NewSet()
	img.AddBytes("loop", 0x1000, []byte{0x6f, 0x00, 0x00, 0x00}) // jal x0, 0
	img.SetXLEN(64)
	return img
}

func writeMessages(t *testing.T, cfg WireConfig, msgs ...*Message) []byte {
	t.Helper()
	var out bytes.Buffer
	w := NewWriter(&out, cfg)
	for _, m := range msgs {
		if err := w.Write(m); err != nil {
			t.Fatal(err)
		}
	}
	w.Flush()
	return out.Bytes()
}

func msg(tc TCode, kv ...uint64) *Message {
	m := &Message{}
	m.Reset(tc)
	for i := 0; i+1 < len(kv); i += 2 {
		m.Set(Field(kv[i]), kv[i+1])
	}
	return m
}

// An I-CNT beyond the specification's 22 bits is used, with one warning;
// one beyond the decoder's hard bound is a gap, not a walk.
func TestOverlongICNT(t *testing.T) {
	img := loopImage()
	icnt := uint64(1<<22 + 10)
	trace := writeMessages(t, WireConfig{XLEN: 64},
		msg(TCodeProgTraceSync, uint64(FieldSYNC), SyncReset, uint64(FieldICNT), 0, uint64(FieldFADDR), 0x1000>>1),
		msg(TCodeProgTraceCorrelation, uint64(FieldEVCODE), 0, uint64(FieldCDF), 0, uint64(FieldICNT), icnt))
	l := &eventLog{img: img}
	cnt := &flow.Counter{}
	d := mustDecoder(t, img, flow.Multi(cnt, sinkFunc(func(e *flow.Event) {
		if e.Kind != flow.KindRange {
			l.Event(e)
		}
	})), DecoderConfig{})
	if err := d.Decode(bytes.NewReader(trace)); err != nil {
		t.Fatal(err)
	}
	if cnt.Instructions != icnt/2 || len(l.kinds(flow.KindWarn)) != 1 || d.Stats().OverlongICNT != 1 || cnt.Gaps != 0 {
		t.Errorf("%d instructions (want %d), %d warnings, %d counted, %d gaps", cnt.Instructions, icnt/2,
			len(l.kinds(flow.KindWarn)), d.Stats().OverlongICNT, cnt.Gaps)
	}
	second := messageOffsets(trace, WireConfig{XLEN: 64})[1]
	if w := l.kinds(flow.KindWarn)[0]; w.Offset != second || w.Index != 1 {
		t.Errorf("warning at byte %d message %d: %v", w.Offset, w.Index, w.Err)
	}
	trace = writeMessages(t, WireConfig{XLEN: 64},
		msg(TCodeProgTraceSync, uint64(FieldSYNC), SyncReset, uint64(FieldICNT), 0, uint64(FieldFADDR), 0x1000>>1),
		msg(TCodeProgTraceCorrelation, uint64(FieldEVCODE), 0, uint64(FieldCDF), 0, uint64(FieldICNT), 1<<40))
	l, err := decodeLog(t, img, trace, DecoderConfig{})
	if err != nil {
		t.Fatal(err)
	}
	wantGap(t, l, decode.ErrMalformed, second, 1)
	if len(l.pcs) != 0 {
		t.Errorf("%d instructions walked for a hostile I-CNT", len(l.pcs))
	}
}

// A FIFO overflow is one gap per Error message, saying where the flow
// stopped and where it resumed; the encoder counts what was lost.
func TestGapOverflowSpan(t *testing.T) {
	img, err := integrityImage()
	if err != nil {
		t.Skip(err)
	}
	truth := synthFlow(img, 3, 20000, true)
	cfg := Config{Mode: BTM, XLEN: img.XLEN(), FIFOBytes: 80, DrainBytes: 1, DrainCycles: 30}
	var buf bytes.Buffer
	enc, err := NewEncoder(&buf, cfg)
	if err != nil {
		t.Fatal(err)
	}
	src := ingress.NewPCSource(bytes.NewReader(pcText(truth)), "pcs", img, ingress.PCOptions{})
	for {
		b, err := src.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := enc.Block(b); err != nil {
			t.Fatal(err)
		}
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	trace := buf.Bytes()
	st := enc.Stats()
	if st.Overflows == 0 || st.Dropped == 0 || st.LostHalfwords == 0 || !strings.Contains(enc.LossSummary(), "messages dropped") {
		t.Fatalf("overflows %d, dropped %d, lost %d halfwords: %q", st.Overflows, st.Dropped, st.LostHalfwords,
			enc.LossSummary())
	}
	l, err := decodeLog(t, img, trace, DecoderConfigFrom(cfg))
	if err != nil {
		t.Fatal(err)
	}
	gaps := l.kinds(flow.KindGap)
	if int64(len(gaps)) != st.Overflows {
		t.Errorf("%d gaps for %d overflows", len(gaps), st.Overflows)
	}
	for _, g := range gaps {
		var de *decode.Error
		if !errors.Is(g.Err, decode.ErrOverflow) || !errors.As(g.Err, &de) || de.What != "Error" ||
			!strings.Contains(g.Err.Error(), "stops after 0x") ||
			!(strings.Contains(g.Err.Error(), "resumes at 0x") || strings.Contains(g.Err.Error(), "ends before it resumes")) {
			t.Errorf("gap %v", g.Err)
		}
	}
	if why := checkIntegrity(truth, itemsOf(l)); why != "" {
		t.Error(why)
	}
}

// A message whose SRC no configured source has is a gap in every source.
func TestGapUnknownSource(t *testing.T) {
	cfg := Config{Mode: HTM, SrcBits: 2, SrcID: 1}
	img, truth, trace := integrityTrace(t, cfg, 1000)
	offs := messageOffsets(trace, cfg.Wire())
	k := len(offs) / 2
	bad := rewrite(t, trace, cfg.Wire(), k, func(m *Message) { m.Set(FieldSRC, 2) })
	dc := DecoderConfigFrom(cfg)
	dc.Sources = []uint32{1}
	l, err := decodeLog(t, img, bad, dc)
	if err != nil {
		t.Fatal(err)
	}
	wantGap(t, l, decode.ErrUnknownSource, offs[k], int64(k))
	if why := checkIntegrity(truth, itemsOf(l)); why != "" {
		t.Error(why)
	}
	if _, err := NewDecoder(img, l, DecoderConfig{Wire: WireConfig{SrcBits: 2}, Sources: []uint32{4}}); err == nil {
		t.Error("a source that does not fit in SRC is accepted")
	}
}

// The counting implicit return nests at most 31 calls: N-Trace bounds the
// call stack at 32 levels, which is all a decoder keeps.
func TestImplicitReturnCountCap(t *testing.T) {
	for _, c := range []struct {
		depth int
		ok    bool
	}{{0, true}, {5, true}, {6, false}, {32, false}} {
		cfg := Config{Mode: HTM, ImplicitReturn: ReturnCount, StackDepth: c.depth}
		err := cfg.Validate()
		if (err == nil) != c.ok || err != nil && !strings.Contains(err.Error(), "32") {
			t.Errorf("counter width %d: %v", c.depth, err)
		}
	}
	enc, err := NewEncoder(&bytes.Buffer{}, Config{Mode: HTM, ImplicitReturn: ReturnCount})
	if err != nil || enc.callsMax != 31 {
		t.Errorf("default counter: max %d (%v)", enc.callsMax, err)
	}
	// Full-address stacks keep their 1..32 bound.
	if err := (&Config{Mode: HTM, ImplicitReturn: ReturnFull, StackDepth: 33}).Validate(); err == nil {
		t.Error("a 33-entry stack is accepted")
	}
}

// NewDecoder rejects configurations it cannot decode with.
func TestNewDecoderValidates(t *testing.T) {
	img := loopImage()
	for _, c := range []DecoderConfig{{Wire: WireConfig{XLEN: 48}}, {Mode: 4}, {Wire: WireConfig{SrcBits: 13}},
		{TrapBType: 3}, {ICNTBits: 23}, {SyncMode: 4}, {ITypeWidth: 5}} {
		if _, err := NewDecoder(img, &flow.Counter{}, c); err == nil {
			t.Errorf("%+v accepted", c)
		}
	}
}

// Sync messages the encoder could not have sent for the path walked are
// gaps at their byte and index, with every instruction since the previous
// sync suspect. Both corruptions were found by FuzzIntegrity, and decoded
// silently wrong before:
//   - BTM counting messages (SyncMax 0): a U-ADDR bit moves an
//     IndirectBranch's target 32 bytes back, and the next message, 16
//     after the last sync, is an IndirectBranchSync for a trap whose
//     I-CNT then ends on a not-taken beqz; the encoder would have sent a
//     ProgTraceSync after that branch's block and the trap with I-CNT=0;
//   - BTM counting halfwords (SyncMax 2): a flipped bit makes a periodic
//     IndirectBranchSync's trap I-CNT 15 instead of 11, walking on over a
//     not-taken beq: the same impossible trap after a block's end;
//   - BTM counting halfwords (SyncMax 2), ingress itype 4 bits: a
//     flipped bit makes a periodic IndirectBranchSync's trap I-CNT 16
//     instead of 12, ending on a direct jump (j) whose block the period
//     ran out in: a 4-bit itype reports the jump (itype 11), so the trap
//     after it is a block of its own, the same impossible trap;
//   - BTM counting halfwords (SyncMax 2): a trap's U-ADDR overwritten
//     (byte 67 = 0x38) sends the flow to another handler, from which the
//     periodic ProgTraceSync's I-CNT=13 ends on a jalr: the encoder sends
//     ProgTraceSync only on linear code, and reports a jump with
//     IndirectBranchSync (found by FuzzIntegrity, 2026-11-25);
//   - HTM (ref-htm-best, counting messages): an IndirectBranchHistSync
//     without history reporting a return has its I-CNT=1 turned into 0:
//     no instruction is left for the return (which jumped to itself, so
//     F-ADDR matched the address reached).
func TestGapSyncForms(t *testing.T) {
	img, err := integrityImage()
	if err != nil {
		t.Skip(err)
	}
	for _, c := range []struct {
		sel        int
		seed       int64
		n          int
		ops        string
		off, index int64
		says       string
		jumpSync   bool // the sync before reported a jump (news): Suspect counts from an earlier one
	}{
		{7, -39, 2763, "1)\x8eC", 494, 170, "the encoder sends a sync after that block and the trap with I-CNT=0", false},
		{4, -125, 2056, "2\x82\x80$", 66, 18, "the encoder sends a sync after that block and the trap with I-CNT=0", false},
		{4, 196, 800, "\x00\xd1\x00\x02", 207, 48, "trap right after the j 0x2001050c (direct-jump) at 0x20010500", false},
		{4, -6, 791, "1C\x008", 69, 16, "ProgTraceSync whose I-CNT ends on the uninferable jump at 0x200105e0", true},
		{3, -63, 2000, "2\x80%2", 111, 17, "no instruction for its jump", false},
	} {
		cfg := integrityConfigs[c.sel]
		cfg.XLEN = img.XLEN()
		truth := synthFlow(img, c.seed, 200+c.n%2800, true)
		trace, err := encodePCs(img, truth, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if l, err := decodeLog(t, img, trace, DecoderConfigFrom(cfg)); err != nil || len(l.kinds(flow.KindGap)) != 0 {
			t.Fatalf("config %d: the intact trace: %v %v", c.sel, err, l.kinds(flow.KindGap))
		}
		bad, desc := corrupt(trace, []byte(c.ops))
		l, err := decodeLog(t, img, bad, DecoderConfigFrom(cfg))
		if err != nil {
			t.Fatal(err)
		}
		g := wantGap(t, l, decode.ErrInconsistent, c.off, c.index)
		if !strings.Contains(g.Err.Error(), c.says) {
			t.Errorf("%s: gap %v does not say %q", desc, g.Err, c.says)
		}
		var since uint64
		for _, e := range l.evs {
			if e.Kind == flow.KindGap {
				break
			}
			switch e.Kind {
			case flow.KindSync:
				since = 0
			case flow.KindRange:
				since += e.N
			}
		}
		if g.Suspect == 0 || g.Suspect != since && !(c.jumpSync && g.Suspect > since) {
			t.Errorf("%s: Suspect %d, want the %d instructions since the previous sync", desc, g.Suspect, since)
		}
		if why := checkIntegrity(truth, itemsOf(l)); why != "" {
			t.Errorf("%s: %s", desc, why)
		}
	}
}

// An idle byte between two messages of rvtrace's encoder, which sends
// none, is a gap (DecoderConfig.NoIdle): an inserted 0xFF byte can end a
// message early and leave a valid-looking one behind (found by
// FuzzIntegrity: a HIST field cut short, the path still consistent).
// Without NoIdle, idles are skipped as N-Trace allows.
func TestGapIdleBytes(t *testing.T) {
	cfg := Config{Mode: HTM}
	img, truth, trace := integrityTrace(t, cfg, 1500)
	offs := messageOffsets(trace, cfg.Wire())
	at := offs[3]
	bad := append(append(append([]byte(nil), trace[:at]...), 0xFF, 0xFF), trace[at:]...)
	l, err := decodeLog(t, img, bad, DecoderConfigFrom(cfg))
	if err != nil {
		t.Fatal(err)
	}
	g := wantGap(t, l, decode.ErrMalformed, at, 3)
	if !strings.Contains(g.Err.Error(), "2 idle byte(s)") {
		t.Errorf("gap %v", g.Err)
	}
	if why := checkIntegrity(truth, itemsOf(l)); why != "" {
		t.Error(why)
	}
	dc := DecoderConfigFrom(cfg)
	dc.NoIdle = false
	l, err = decodeLog(t, img, bad, dc)
	if err != nil || len(l.kinds(flow.KindGap)) != 0 || !equalPCs(l.pcs, truth) {
		t.Errorf("idles allowed: %v, gaps %v, %d of %d PCs", err, l.kinds(flow.KindGap), len(l.pcs), len(truth))
	}
}
