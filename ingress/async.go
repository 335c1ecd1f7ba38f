package ingress

import "sync"

// Async returns a sink that hands the blocks it is given to next on
// another goroutine, in batches, so that the producer of blocks (the
// simulator) and their consumer (an encoder) run in parallel on two cores.
// Blocks reach next in order, and TraceOff and Notify calls (when next is
// Gated) keep their place among them. The sink also takes several blocks
// in one call (Blocks), and gives next the runs of blocks between those
// calls in one call when next takes them so (a Blocks method). An error
// from next is returned by the first call that hands a batch over after
// it happened (up to a batch of blocks later), and by Close, which waits
// for next to finish and closes it; next is given nothing after its
// error.
func Async(next Sink) Sink {
	a := &async{next: next, work: make(chan *asyncBatch, asyncBatches), free: make(chan *asyncBatch, asyncBatches)}
	for i := 0; i < asyncBatches; i++ {
		a.free <- &asyncBatch{blocks: make([]Block, 0, asyncBatchSize), ops: make([]asyncOp, 0, asyncBatchSize)}
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

// An asyncOp is a TraceOff or Notify call, made before the block at
// index at of its batch.
type asyncOp struct {
	at int
	op uint8
}

const (
	asyncTraceOff = iota + 1
	asyncNotify
)

// asyncBatch holds blocks and the calls among them.
type asyncBatch struct {
	blocks []Block
	ops    []asyncOp
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

// blocksSink is a sink that takes several blocks in one call, as if one
// by one.
type blocksSink interface {
	Blocks(bs []Block) error
}

func (a *async) run() {
	defer a.wg.Done()
	g, _ := a.next.(Gated)
	bs, _ := a.next.(blocksSink)
	deliver := func(blocks []Block) error {
		if bs != nil {
			if len(blocks) == 0 {
				return nil
			}
			return bs.Blocks(blocks)
		}
		for i := range blocks {
			if err := a.next.Block(&blocks[i]); err != nil {
				return err
			}
		}
		return nil
	}
	for batch := range a.work {
		if a.failed() == nil {
			pos := 0
			var err error
			for _, op := range batch.ops {
				if err = deliver(batch.blocks[pos:op.at]); err != nil {
					break
				}
				pos = op.at
				switch {
				case g == nil:
				case op.op == asyncTraceOff:
					err = g.TraceOff()
				case op.op == asyncNotify:
					err = g.Notify()
				}
				if err != nil {
					break
				}
			}
			if err == nil {
				err = deliver(batch.blocks[pos:])
			}
			if err != nil {
				a.mu.Lock()
				a.err = err
				a.mu.Unlock()
			}
		}
		batch.blocks, batch.ops = batch.blocks[:0], batch.ops[:0]
		a.free <- batch
	}
}

func (a *async) failed() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.err
}

// handOver gives the current batch to the other goroutine when it is
// full.
func (a *async) handOver() error {
	if len(a.cur.blocks) < cap(a.cur.blocks) && len(a.cur.ops) < cap(a.cur.ops) {
		return nil
	}
	a.work <- a.cur
	a.cur = <-a.free
	return a.failed()
}

// Block queues a copy of b.
func (a *async) Block(b *Block) error {
	a.cur.blocks = append(a.cur.blocks, *b)
	return a.handOver()
}

// Blocks queues a copy of bs.
func (a *async) Blocks(bs []Block) error {
	for len(bs) > 0 {
		n := min(len(bs), cap(a.cur.blocks)-len(a.cur.blocks))
		a.cur.blocks = append(a.cur.blocks, bs[:n]...)
		bs = bs[n:]
		if err := a.handOver(); err != nil {
			return err
		}
	}
	return nil
}

func (a *async) op(op uint8) error {
	a.cur.ops = append(a.cur.ops, asyncOp{at: len(a.cur.blocks), op: op})
	return a.handOver()
}

// TraceOff queues a TraceOff for next.
func (a *async) TraceOff() error { return a.op(asyncTraceOff) }

// Notify queues a Notify for next.
func (a *async) Notify() error { return a.op(asyncNotify) }

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
