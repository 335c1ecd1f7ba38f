package sim

import "fmt"

// pcBatch gathers the PCs a hart retires for the function of SetPCList.
// The interpreter loop does not stop for it at every instruction: it
// leaves at every jump and branch (Hart.cf), so the instructions it
// retired between two exits are a straight line of its fetch window,
// whose addresses straight recovers from the sizes of their decoded
// slots; the instructions the handlers retire come one at a time (add).
type pcBatch struct {
	f   func(pcs []uint64)
	buf []uint64
	n   int
}

// pcBatchLen is the number of PCs a batch holds (a quantum's worth).
const pcBatchLen = 8192

func newPCBatch(f func(pcs []uint64)) *pcBatch {
	return &pcBatch{f: f, buf: make([]uint64, pcBatchLen)}
}

// add appends one PC.
func (l *pcBatch) add(pc uint64) {
	if l.n == len(l.buf) {
		l.flush()
	}
	l.buf[l.n] = pc
	l.n++
}

// straight appends the k instructions retired in a straight line from
// pc, all in the decoded window fp at fbase. The slots hold them still:
// a store into a page with decoded code leaves the interpreter loop
// before it changes a slot, so straight runs before any slot of the line
// is dropped.
func (l *pcBatch) straight(pc, k, fbase uint64, fp *decPage) {
	for k > 0 {
		if l.n == len(l.buf) {
			l.flush()
		}
		buf := l.buf[l.n:]
		m := min(k, uint64(len(buf)))
		for i := range buf[:m] {
			buf[i] = pc
			pc += uint64(fp.insts[((pc-fbase)>>1)&(pageSize/2-1)].size)
		}
		l.n += int(m)
		k -= m
	}
}

// flush hands the PCs gathered to f.
func (l *pcBatch) flush() {
	if l.n > 0 {
		l.f(l.buf[:l.n])
		l.n = 0
	}
}

// SetPCList calls f with the addresses of the instructions hart retires,
// at every privilege level, in order, in batches: f must not keep pcs
// after it returns. Each batch holds PCs of one turn of the hart (the
// scheduling quantum: harts that share f see their PCs in the order they
// retired), and the last batch comes before Run returns. Unlike SetPCHook
// it does not stop the interpreter at every instruction, only at jumps
// and branches. nil removes it (PCs gathered and not yet handed over are
// dropped).
func (m *Machine) SetPCList(hart int, f func(pcs []uint64)) error {
	h := m.Hart(hart)
	if h == nil {
		return fmt.Errorf("sim: no hart %d (load a program first)", hart)
	}
	h.pcl = nil
	if f != nil {
		h.pcl = newPCBatch(f)
	}
	h.updateTraceFlags()
	return nil
}
