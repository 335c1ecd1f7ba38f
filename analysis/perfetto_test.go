package analysis

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// mergeRanges joins each range to the next when the next starts at the
// instruction after its last one (a branch not taken, a jump to the next
// address, code falling through), as E-Trace reports them: long ranges
// that run across function boundaries. It returns the merged flow and
// how many merged ranges cross from one function into another.
func mergeRanges(t *testing.T, img *image.Set, p *Profile, evs []flow.Event) ([]flow.Event, int) {
	t.Helper()
	var out []flow.Event
	crossing := 0
	for _, e := range evs {
		if n := len(out); n > 0 && e.Kind == flow.KindRange && out[n-1].Kind == flow.KindRange {
			prev := &out[n-1]
			in, ok := img.Inst(prev.Last)
			linear := prev.End == ingress.ITypeNone || prev.End == ingress.ITypeNotTaken ||
				prev.End == ingress.ITypeDirectJump || prev.End == ingress.ITypeOtherDirect
			if ok && linear && e.Start == prev.Last+uint64(in.Len) && prev.Src == e.Src {
				if p.Lookup(prev.Start) != p.Lookup(e.Last) {
					crossing++
				}
				prev.Last, prev.N, prev.End, prev.Target, prev.HasTarget = e.Last, prev.N+e.N, e.End, e.Target, e.HasTarget
				continue
			}
		}
		out = append(out, e)
	}
	return out, crossing
}

// chromeSpan is an "X" event of Chrome JSON.
type chromeSpan struct {
	Name string  `json:"name"`
	Ph   string  `json:"ph"`
	Ts   float64 `json:"ts"`
	Dur  float64 `json:"dur"`
	Tid  uint32  `json:"tid"`
	Args struct {
		Name         string `json:"name"`
		Instructions uint64 `json:"instructions"`
		Depth        int    `json:"depth"`
	} `json:"args"`
}

// chromeJSON runs the Chrome writer on evs and returns its spans (sorted
// by track, start, then longest first) and track names, checking that
// the spans of each track nest and none is of zero length.
func chromeJSON(t *testing.T, img *image.Set, evs []flow.Event) ([]chromeSpan, map[uint32]string) {
	t.Helper()
	var buf bytes.Buffer
	c := NewChrome(&buf, img, Options{}, ChromeOptions{})
	feed(t, c, evs)
	var doc struct {
		DisplayTimeUnit string            `json:"displayTimeUnit"`
		OtherData       map[string]string `json:"otherData"`
		TraceEvents     []chromeSpan      `json:"traceEvents"`
	}
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("invalid JSON: %v", err)
	}
	if doc.OtherData["time_unit"] != "1 us = 1 instruction executed by the hart" {
		t.Errorf("otherData %v: no time unit", doc.OtherData)
	}
	// shown in ns, the Perfetto protobuf's unit: 1 instruction = 1000 ns
	if doc.DisplayTimeUnit != "ns" {
		t.Errorf("displayTimeUnit %q, want ns", doc.DisplayTimeUnit)
	}
	names := map[uint32]string{}
	var spans []chromeSpan
	for _, e := range doc.TraceEvents {
		switch e.Ph {
		case "M":
			if e.Name == "thread_name" {
				names[e.Tid] = e.Args.Name
			}
		case "X":
			if e.Dur <= 0 || e.Args.Instructions == 0 {
				t.Errorf("zero-length span %+v", e)
			}
			if _, ok := names[e.Tid]; !ok {
				t.Errorf("span on unnamed track %d", e.Tid)
			}
			spans = append(spans, e)
		}
	}
	slices.SortStableFunc(spans, func(a, b chromeSpan) int {
		if a.Tid != b.Tid {
			return int(a.Tid) - int(b.Tid)
		}
		if a.Ts != b.Ts {
			if a.Ts < b.Ts {
				return -1
			}
			return 1
		}
		if a.Dur != b.Dur {
			if a.Dur > b.Dur {
				return -1
			}
			return 1
		}
		return a.Args.Depth - b.Args.Depth
	})
	// Nesting: on each track, a span starts after the previous one ends
	// or ends within the innermost open one.
	var open []float64
	tid := ^uint32(0)
	for _, s := range spans {
		if s.Tid != tid {
			tid, open = s.Tid, open[:0]
		}
		for len(open) > 0 && open[len(open)-1] <= s.Ts {
			open = open[:len(open)-1]
		}
		if len(open) > 0 && s.Ts+s.Dur > open[len(open)-1] {
			t.Fatalf("track %d: span %s [%v, %v) overlaps its parent's end %v", s.Tid, s.Name, s.Ts, s.Ts+s.Dur, open[len(open)-1])
		}
		open = append(open, s.Ts+s.Dur)
	}
	return spans, names
}

// TestChromeLongRanges: ranges that run across function boundaries (as
// E-Trace gives them: __sigsetjmp falling into __sigjmp_save) give the
// very spans that the same flow cut at every branch gives, and no
// zero-length span.
func TestChromeLongRanges(t *testing.T) {
	img, pcs := loadProgram(t, "inline")
	evs := pcsToFlow(t, img, pcs)
	long, crossing := mergeRanges(t, img, New(img, Options{}), evs)
	if crossing == 0 || len(long) >= len(evs) {
		t.Fatalf("merging gave %d ranges of %d, %d across functions", len(long), len(evs), crossing)
	}
	want, _ := chromeJSON(t, img, evs)
	got, _ := chromeJSON(t, img, long)
	if len(got) != len(want) {
		t.Fatalf("long ranges: %d spans, short ranges %d", len(got), len(want))
	}
	for i := range want {
		w, g := want[i], got[i]
		if w.Name != g.Name || w.Ts != g.Ts || w.Dur != g.Dur || w.Args.Depth != g.Args.Depth {
			t.Errorf("span %d: long ranges %s at %v for %v depth %d, short ranges %s at %v for %v depth %d",
				i, g.Name, g.Ts, g.Dur, g.Args.Depth, w.Name, w.Ts, w.Dur, w.Args.Depth)
		}
	}
}

// twoHarts is the calls program's flow on hart 0 and hart 1, with
// privilege levels: S for a stretch of ranges, U otherwise.
func twoHarts(t *testing.T) (*image.Set, []flow.Event) {
	img, pcs := loadProgram(t, "calls")
	evs := pcsToFlow(t, img, pcs)
	var out []flow.Event
	for src := uint32(0); src < 2; src++ {
		out = append(out, flow.Event{Kind: flow.KindContext, Src: src, Priv: ingress.PrivU, Offset: -1})
		for i, e := range evs {
			switch i {
			case len(evs) / 3:
				out = append(out, flow.Event{Kind: flow.KindContext, Src: src, Priv: ingress.PrivS, Offset: -1})
			case len(evs) / 2:
				out = append(out, flow.Event{Kind: flow.KindContext, Src: src, Priv: ingress.PrivU, Offset: -1})
			}
			e.Src = src
			out = append(out, e)
		}
	}
	return img, out
}

// TestChromeTracks: one track per hart and privilege level, named so.
func TestChromeTracks(t *testing.T) {
	img, evs := twoHarts(t)
	spans, names := chromeJSON(t, img, evs)
	want := map[uint32]string{0: "hart 0 (U)", 1: "hart 0 (S)", 8: "hart 1 (U)", 9: "hart 1 (S)"}
	if fmt.Sprint(names) != fmt.Sprint(want) {
		t.Errorf("tracks %v, want %v", names, want)
	}
	per := map[uint32]int{}
	for _, s := range spans {
		per[s.Tid]++
	}
	if per[0] == 0 || per[1] == 0 || per[0] != per[8] || per[1] != per[9] {
		t.Errorf("spans per track %v", per)
	}
}

// pbField is one field of a protobuf message.
type pbField struct {
	num  int
	v    uint64 // varint
	data []byte // length-delimited
}

// pbDecode decodes the fields of a message (varint and length-delimited
// only, as the writer uses).
func pbDecode(t *testing.T, b []byte) []pbField {
	t.Helper()
	var out []pbField
	for len(b) > 0 {
		tag, n := binary.Uvarint(b)
		if n <= 0 {
			t.Fatalf("bad tag")
		}
		b = b[n:]
		f := pbField{num: int(tag >> 3)}
		switch tag & 7 {
		case 0:
			f.v, n = binary.Uvarint(b)
			if n <= 0 {
				t.Fatalf("field %d: bad varint", f.num)
			}
			b = b[n:]
		case 2:
			l, n := binary.Uvarint(b)
			if n <= 0 || uint64(len(b)-n) < l {
				t.Fatalf("field %d: bad length", f.num)
			}
			f.data = b[n : n+int(l)]
			b = b[n+int(l):]
		default:
			t.Fatalf("field %d: wire type %d", f.num, tag&7)
		}
		out = append(out, f)
	}
	return out
}

// TestPerfettoStructure decodes the Perfetto trace back (no
// trace_processor here): every packet is well formed, the first clears
// the incremental state, tracks are described before use, slice begins
// and ends pair up as a stack on each track with timestamps that never go
// back, and the slices (per track: names, start, length) are those of
// the Chrome JSON of the same flow.
func TestPerfettoStructure(t *testing.T) {
	img, evs := twoHarts(t)
	evs, _ = mergeRanges(t, img, New(img, Options{}), evs)
	chrome, names := chromeJSON(t, img, evs)
	var buf bytes.Buffer
	pf := NewPerfetto(&buf, img, Options{}, PerfettoOptions{})
	feed(t, pf, evs)

	tracks := map[uint64]string{}
	interned := map[uint64]string{}
	type open struct {
		name string
		ts   uint64
	}
	stacks := map[uint64][]open{}
	last := map[uint64]uint64{}
	var got []chromeSpan
	for i, pkt := range pbDecode(t, buf.Bytes()) {
		if pkt.num != 1 {
			t.Fatalf("Trace field %d, want 1 (packet)", pkt.num)
		}
		var ts, flags, seq uint64
		var ev []pbField
		for _, f := range pbDecode(t, pkt.data) {
			switch f.num {
			case 8:
				ts = f.v
			case 10:
				seq = f.v
			case 13:
				flags = f.v
			case 60:
				var uuid uint64
				var name string
				for _, g := range pbDecode(t, f.data) {
					switch g.num {
					case 1:
						uuid = g.v
					case 2:
						name = string(g.data)
					}
				}
				tracks[uuid] = name
			case 12:
				for _, g := range pbDecode(t, f.data) {
					if g.num != 2 {
						continue
					}
					var iid uint64
					var name string
					for _, h := range pbDecode(t, g.data) {
						switch h.num {
						case 1:
							iid = h.v
						case 2:
							name = string(h.data)
						}
					}
					interned[iid] = name
				}
			case 11:
				ev = pbDecode(t, f.data)
			}
		}
		if seq != 1 {
			t.Fatalf("packet %d: sequence %d", i, seq)
		}
		if i == 0 && flags&1 == 0 {
			t.Fatal("first packet does not clear the incremental state")
		}
		if ev == nil {
			continue
		}
		if flags&2 == 0 {
			t.Fatalf("packet %d: track event without SEQ_NEEDS_INCREMENTAL_STATE", i)
		}
		var typ, uuid, iid uint64
		for _, f := range ev {
			switch f.num {
			case 9:
				typ = f.v
			case 11:
				uuid = f.v
			case 10:
				iid = f.v
			}
		}
		if _, ok := tracks[uuid]; !ok {
			t.Fatalf("packet %d: event on undescribed track %d", i, uuid)
		}
		if ts < last[uuid] {
			t.Fatalf("packet %d: track %d goes back in time: %d after %d", i, uuid, ts, last[uuid])
		}
		last[uuid] = ts
		switch typ {
		case 1:
			name, ok := interned[iid]
			if !ok {
				t.Fatalf("packet %d: name iid %d not interned", i, iid)
			}
			stacks[uuid] = append(stacks[uuid], open{name, ts})
		case 2:
			st := stacks[uuid]
			if len(st) == 0 {
				t.Fatalf("packet %d: slice end without begin on track %d", i, uuid)
			}
			o := st[len(st)-1]
			stacks[uuid] = st[:len(st)-1]
			if ts <= o.ts {
				t.Errorf("packet %d: zero-length slice %s", i, o.name)
			}
			s := chromeSpan{Name: o.name, Ts: float64(o.ts) / 1000, Dur: float64(ts-o.ts) / 1000, Tid: uint32(uuid - 1)}
			s.Args.Depth = len(st) - 1
			got = append(got, s)
		default:
			t.Fatalf("packet %d: event type %d", i, typ)
		}
	}
	for uuid, st := range stacks {
		if len(st) > 0 {
			t.Errorf("track %d: %d slices never end", uuid, len(st))
		}
	}
	for uuid, name := range tracks {
		if names[uint32(uuid-1)] != name {
			t.Errorf("track %d named %q, Chrome JSON %q", uuid, name, names[uint32(uuid-1)])
		}
	}
	if len(got) != len(chrome) || len(got) < 100 {
		t.Fatalf("%d slices, Chrome JSON %d spans", len(got), len(chrome))
	}
	key := func(s chromeSpan) string { return fmt.Sprintf("%d %s %v %v", s.Tid, s.Name, s.Ts, s.Dur) }
	var a, b []string
	for i := range got {
		a, b = append(a, key(got[i])), append(b, key(chrome[i]))
	}
	slices.Sort(a)
	slices.Sort(b)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("slice %s, Chrome span %s", a[i], b[i])
		}
	}
}
