package ingress

import (
	"errors"
	"testing"
)

type recorder struct {
	got    []uint64
	closed bool
	failAt int
}

func (r *recorder) Block(b *Block) error {
	if r.failAt > 0 && len(r.got) == r.failAt {
		return errors.New("boom")
	}
	r.got = append(r.got, b.IAddr)
	return nil
}
func (r *recorder) TraceOff() error { r.got = append(r.got, 1); return nil }
func (r *recorder) Notify() error   { r.got = append(r.got, 3); return nil }
func (r *recorder) Close() error    { r.closed = true; return nil }

func TestAsyncKeepsOrder(t *testing.T) {
	r := &recorder{}
	a := Async(r)
	var want []uint64
	for i := 0; i < 3*asyncBatchSize+17; i++ {
		b := Block{IAddr: uint64(i+2) * 4, IRetire: 2}
		a.Block(&b)
		want = append(want, b.IAddr)
		if i%1000 == 999 {
			a.(Gated).TraceOff()
			want = append(want, 1)
		}
		if i%777 == 0 {
			a.(Gated).Notify()
			want = append(want, 3)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if !r.closed || len(r.got) != len(want) {
		t.Fatalf("closed %v, %d items, want %d", r.closed, len(r.got), len(want))
	}
	for i := range want {
		if r.got[i] != want[i] {
			t.Fatalf("item %d: %d, want %d", i, r.got[i], want[i])
		}
	}
}

func TestAsyncError(t *testing.T) {
	r := &recorder{failAt: 10}
	a := Async(r)
	var err error
	for i := 0; i < 5*asyncBatchSize && err == nil; i++ {
		err = a.Block(&Block{IAddr: uint64(i)})
	}
	if cerr := a.Close(); cerr == nil || err == nil {
		t.Errorf("error not reported: during %v, at close %v", err, cerr)
	}
}
