package filter

import (
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
