package ingress

import "sync"

// Async returns a sink that hands the blocks it is given to next on
// another goroutine, in batches, so that the producer of blocks (the
// simulator) and their consumer (an encoder) run in parallel on two cores.
// Blocks reach next in order, and TraceOff and Notify calls (when next is
// Gated) keep their place among them. An error from next is returned by
// the first call made after it happened, and by Close, which waits for
// next to finish and closes it.
func Async(next Sink) Sink {
	a := &async{next: next, work: make(chan *asyncBatch, asyncBatches), free: make(chan *asyncBatch, asyncBatches)}
	for i := 0; i < asyncBatches; i++ {
		a.free <- &asyncBatch{items: make([]asyncItem, 0, asyncBatchSize)}
	}
	a.cur = <-a.free
	a.wg.Add(1)
	go a.run()
	return a
}

const (
	asyncBatches   = 4
	asyncBatchSize = 4096
)

// An asyncItem is a block, or a TraceOff or Notify call.
type asyncItem struct {
	b  Block
	op uint8
}

const (
	asyncBlock = iota
	asyncTraceOff
	asyncNotify
)

type asyncBatch struct {
	items []asyncItem
}

type async struct {
	next Sink
	work chan *asyncBatch
	free chan *asyncBatch
	cur  *asyncBatch
	wg   sync.WaitGroup

	mu  sync.Mutex
	err error
}

func (a *async) run() {
	defer a.wg.Done()
	g, _ := a.next.(Gated)
	for batch := range a.work {
		if a.failed() == nil {
			for i := range batch.items {
				it := &batch.items[i]
				var err error
				switch {
				case it.op == asyncBlock:
					err = a.next.Block(&it.b)
				case g == nil:
				case it.op == asyncTraceOff:
					err = g.TraceOff()
				case it.op == asyncNotify:
					err = g.Notify()
				}
				if err != nil {
					a.mu.Lock()
					a.err = err
					a.mu.Unlock()
					break
				}
			}
		}
		batch.items = batch.items[:0]
		a.free <- batch
	}
}

func (a *async) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

func (a *async) add(b *Block, op uint8) error {
	a.cur.items = append(a.cur.items, asyncItem{op: op})
	if b != nil {
		a.cur.items[len(a.cur.items)-1].b = *b
	}
	if len(a.cur.items) == cap(a.cur.items) {
		a.work <- a.cur
		a.cur = <-a.free
		return a.failed()
	}
	return nil
}

// Block queues a copy of b.
func (a *async) Block(b *Block) error { return a.add(b, asyncBlock) }

// TraceOff queues a TraceOff for next.
func (a *async) TraceOff() error { return a.add(nil, asyncTraceOff) }

// Notify queues a Notify for next.
func (a *async) Notify() error { return a.add(nil, asyncNotify) }

// Close hands over what is queued, waits for next to take it all, and
// closes next.
func (a *async) Close() error {
	if a.work == nil {
		return a.failed()
	}
	a.work <- a.cur
	close(a.work)
	a.wg.Wait()
	a.work = nil
	err := a.failed()
	if cerr := a.next.Close(); err == nil {
		err = cerr
	}
	return err
}
