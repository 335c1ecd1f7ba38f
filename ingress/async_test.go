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
		r.failAt = 0 // (once: what next is given after it shows)
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

// batchRecorder is a recorder that also takes blocks in batches.
type batchRecorder struct {
	recorder
	calls int
}

func (r *batchRecorder) Blocks(bs []Block) error {
	r.calls++
	for i := range bs {
		if err := r.Block(&bs[i]); err != nil {
			return err
		}
	}
	return nil
}

// TestAsyncBlocksKeepOrder: blocks given one by one and in batches of
// every size (across the batches handed over), with TraceOff and Notify
// calls among them, reach next in order, through its Blocks when it has
// one.
func TestAsyncBlocksKeepOrder(t *testing.T) {
	for _, batched := range []bool{false, true} {
		br := &batchRecorder{}
		var next Sink = &br.recorder
		if batched {
			next = br
		}
		a := Async(next)
		var want []uint64
		addr := uint64(8)
		newBlock := func() Block {
			addr += 4
			return Block{IAddr: addr, IRetire: 2}
		}
		for i := 0; i < 400; i++ {
			switch i % 5 {
			case 0, 2:
				var bs []Block
				for k := 0; k < (i*37)%5000; k++ {
					bs = append(bs, newBlock())
					want = append(want, addr)
				}
				if err := a.(interface{ Blocks([]Block) error }).Blocks(bs); err != nil {
					t.Fatal(err)
				}
			case 1:
				b := newBlock()
				want = append(want, addr)
				if err := a.Block(&b); err != nil {
					t.Fatal(err)
				}
			case 3:
				a.(Gated).TraceOff()
				want = append(want, 1)
			case 4:
				a.(Gated).Notify()
				want = append(want, 3)
			}
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		r := &br.recorder
		if !r.closed || len(r.got) != len(want) {
			t.Fatalf("batched %v: closed %v, %d items, want %d", batched, r.closed, len(r.got), len(want))
		}
		for i := range want {
			if r.got[i] != want[i] {
				t.Fatalf("batched %v: item %d: %d, want %d", batched, i, r.got[i], want[i])
			}
		}
		if batched && br.calls == 0 {
			t.Fatal("next's Blocks not used")
		}
	}
}

// TestAsyncBlocksError: an error of next's Blocks reaches the producer (by
// a later call and by Close), and next gets nothing after it: neither the
// rest of its batch, nor the TraceOff calls queued after it, nor later
// batches, even when the producer goes on.
func TestAsyncBlocksError(t *testing.T) {
	const failAt = 2*asyncBatchSize + 123
	br := &batchRecorder{recorder: recorder{failAt: failAt}}
	a := Async(br)
	var err error
	addr := uint64(8)
	// (on after the error too, as a producer that does not look)
	for i := 0; i < 40; i++ {
		bs := make([]Block, 1000)
		for k := range bs {
			addr += 4
			bs[k] = Block{IAddr: addr, IRetire: 2}
		}
		e := a.(interface{ Blocks([]Block) error }).Blocks(bs)
		if e == nil {
			e = a.(Gated).TraceOff()
		}
		if err == nil {
			err = e
		}
	}
	cerr := a.Close()
	if err == nil || cerr == nil {
		t.Errorf("error not reported: during %v, at close %v", err, cerr)
	}
	if len(br.got) != failAt || br.calls == 0 || br.failAt != 0 {
		t.Errorf("next took %d items in %d Blocks calls, want %d: the items before its error", len(br.got), br.calls, failAt)
	}
}
