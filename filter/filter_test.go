package filter

import (
	"fmt"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/ingress"
)

type rec struct {
	n, stops, notifies int
}

func (r *rec) Block(*ingress.Block) error { r.n++; return nil }
func (r *rec) Close() error               { return nil }
func (r *rec) TraceOff() error            { r.stops++; return nil }
func (r *rec) Notify() error              { r.notifies++; return nil }

func TestParseAndQualify(t *testing.T) {
	var c Config
	for _, s := range []string{"priv=U;addr=0x100-0x200", "context=7"} {
		if err := c.Parse(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.ParseTrigger("notify=0x150"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"priv=X", "addr=zz", "bogus=1", "from=1"} {
		var d Config
		if d.Parse(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var r rec
	s := New(&c, &r)
	blocks := []ingress.Block{
		{IAddr: 0x100, IRetire: 2, Priv: ingress.PrivU}, // in
		{IAddr: 0x150, IRetire: 2, Priv: ingress.PrivU}, // in, notify
		{IAddr: 0x300, IRetire: 2, Priv: ingress.PrivU}, // out
		{IAddr: 0x300, IRetire: 2, Context: 7},          // in (context)
		{IAddr: 0x100, IRetire: 2, Priv: ingress.PrivM}, // out
	}
	for i := range blocks {
		s.Block(&blocks[i])
	}
	if r.n != 3 || r.stops != 2 || r.notifies != 1 {
		t.Errorf("passed %d, stops %d, notifies %d", r.n, r.stops, r.notifies)
	}
}

// dataRec records what the filter passes on: accesses, responses and
// blocks, in order.
type dataRec struct {
	rec
	got []string
}

func (r *dataRec) Block(b *ingress.Block) error {
	r.got = append(r.got, fmt.Sprintf("block %#x", b.IAddr))
	return nil
}
func (r *dataRec) Access(a *ingress.Access) error {
	r.got = append(r.got, fmt.Sprintf("%s %#x", a.DType, a.DAddr))
	return nil
}
func (r *dataRec) Response(l *ingress.LoadResponse) error {
	r.got = append(r.got, fmt.Sprintf("resp %d", l.LID))
	return nil
}

// TestDataFilterStage checks the data filters' vocabulary and the stage:
// accesses are held until their block, passed on when the block is
// traced and a data filter holds, split responses follow their requests.
func TestDataFilterStage(t *testing.T) {
	for _, bad := range []string{"kind=lod", "daddr=zz", "tval=3", "cmp=context:eq:1"} {
		var c Config
		if c.ParseData(bad) == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	var c Config
	for _, s := range []string{"kind=store;daddr=0x1000-0x2000", "kind=load;priv=M", "kind=atomic;addr=0x500"} {
		if err := c.ParseData(s); err != nil {
			t.Fatal(err)
		}
	}
	if !c.DataNeedsAddr() {
		t.Errorf("DataNeedsAddr false with a daddr condition")
	}
	for _, tc := range []struct {
		kind         uint8
		iaddr, daddr uint64
		priv         ingress.Priv
		want         bool
	}{
		{KindStore, 0x100, 0x1000, ingress.PrivU, true},
		{KindStore, 0x100, 0x2000, ingress.PrivU, false},
		{KindLoad, 0x100, 0x1000, ingress.PrivU, false},
		{KindLoad, 0x100, 0x9000, ingress.PrivM, true},
		{KindAtomic, 0x500, 0, ingress.PrivU, true},
		{KindAtomic, 0x504, 0, ingress.PrivU, false},
	} {
		if got := c.DataQualified(tc.kind, tc.iaddr, tc.daddr, tc.priv); got != tc.want {
			t.Errorf("%+v: %v", tc, got)
		}
	}
	// the stage: a split load in a traced block, one in a block the
	// instruction filter drops, a store the data filter drops
	var k Config
	if err := k.Parse("priv=U"); err != nil {
		t.Fatal(err)
	}
	if err := k.ParseData("kind=load"); err != nil {
		t.Fatal(err)
	}
	r := &dataRec{}
	s := New(&k, r)
	steps := []func() error{
		func() error {
			return s.Access(&ingress.Access{IAddr: 0x100, DAddr: 0x10, DType: ingress.DTypeLoad, Split: true, LRID: 1})
		},
		func() error { return s.Access(&ingress.Access{IAddr: 0x102, DAddr: 0x20, DType: ingress.DTypeStore}) },
		func() error { return s.Response(&ingress.LoadResponse{LID: 1, Resp: ingress.LRespOkay}) },
		func() error { return s.Block(&ingress.Block{IAddr: 0x100, IRetire: 4, Priv: ingress.PrivU}) },
		func() error {
			return s.Access(&ingress.Access{IAddr: 0x200, DAddr: 0x30, DType: ingress.DTypeLoad, Split: true, LRID: 2})
		},
		func() error { return s.Block(&ingress.Block{IAddr: 0x200, IRetire: 4, Priv: ingress.PrivM}) },
		func() error { return s.Response(&ingress.LoadResponse{LID: 2, Resp: ingress.LRespOkay}) },
		func() error {
			return s.Access(&ingress.Access{IAddr: 0x300, DAddr: 0x40, DType: ingress.DTypeLoad, Split: true, LRID: 2})
		},
		func() error { return s.Block(&ingress.Block{IAddr: 0x300, IRetire: 4, Priv: ingress.PrivU}) },
		func() error { return s.Response(&ingress.LoadResponse{LID: 2, Resp: ingress.LRespOkay}) },
	}
	for i, f := range steps {
		if err := f(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	want := "load 0x10,resp 1,block 0x100,load 0x40,block 0x300,resp 2"
	if got := strings.Join(r.got, ","); got != want {
		t.Errorf("passed %s, want %s", got, want)
	}
}
