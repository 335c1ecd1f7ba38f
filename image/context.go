package image

import (
	"bytes"
	"sort"
	"sync"
	"sync/atomic"
)

// Images valid in one context only.
//
// A system trace holds several address spaces: the kernel's (the same in
// every process) and one per process, told apart by the trace's context
// (the ASID or scontext the N-Trace Ownership messages and E-Trace
// context fields carry). The images added with [Set.AddELF],
// [Set.AddRaw] and [Set.AddBytes] are global: valid in every context.
// [Set.AddContextBytes] adds memory valid in one context only, and
// [Set.ForContext] returns the view a decoder follows while the trace is
// in that context: the global images with the context's own memory on
// top. Views share the global images' decoded-instruction and run caches
// (a run cached in global memory is followed with the global view).

// ctxImages holds the per-context and timed memory of a Set.
type ctxImages struct {
	mu     sync.Mutex
	spans  map[uint64][]ctxSpan // the context's memory, in the order added
	timed  []ctxSpan            // memory valid from an instruction count on, in the order added
	epochs []uint64             // the distinct counts of timed, sorted
	views  map[viewKey]*Set     // built views
}

type viewKey struct {
	ctx   uint64
	epoch int
}

type ctxSpan struct {
	name   string
	addr   uint64
	data   []byte
	global bool   // timed: valid in every context
	ctx    uint64 // timed: the context, when not global
	from   uint64 // timed: the instruction count from which it holds
}

func (s *Set) ctxImages() *ctxImages {
	if s.ctx == nil {
		s.ctx = &ctxImages{spans: map[uint64][]ctxSpan{}, views: map[viewKey]*Set{}}
	}
	return s.ctx
}

// AddContextBytes loads a copy of data at addr, as an image called name,
// valid only while the trace is in context ctx; there it hides the global
// images. Like the other Add methods it must not run concurrently with
// any other method.
func (s *Set) AddContextBytes(ctx uint64, name string, addr uint64, data []byte) {
	if room := ^uint64(0) - addr; uint64(len(data)) > room {
		data = data[:room]
	}
	if len(data) == 0 {
		return
	}
	c := s.ctxImages()
	c.spans[ctx] = append(c.spans[ctx], ctxSpan{name: name, addr: addr, data: bytes.Clone(data)})
	clear(c.views)
}

// AddTimedBytes loads a copy of data at addr, as an image called name,
// that holds from the from-th instruction of the trace on (counting from
// 0, all sources together): code that was overwritten while the traced
// system ran. It is valid in every context when global, else in context
// ctx only; it hides what was added before it. [Set.View] returns the
// memory at an instruction count.
func (s *Set) AddTimedBytes(global bool, ctx, from uint64, name string, addr uint64, data []byte) {
	if room := ^uint64(0) - addr; uint64(len(data)) > room {
		data = data[:room]
	}
	if len(data) == 0 {
		return
	}
	c := s.ctxImages()
	c.timed = append(c.timed, ctxSpan{name: name, addr: addr, data: bytes.Clone(data), global: global, ctx: ctx, from: from})
	i := sort.Search(len(c.epochs), func(i int) bool { return c.epochs[i] >= from })
	if i == len(c.epochs) || c.epochs[i] != from {
		c.epochs = append(c.epochs, 0)
		copy(c.epochs[i+1:], c.epochs[i:])
		c.epochs[i] = from
	}
	clear(c.views)
}

// HasContexts reports whether some memory was added with
// [Set.AddContextBytes] or [Set.AddTimedBytes]: a decoder then follows
// [Set.View] (or [Set.ForContext]) rather than the Set itself.
func (s *Set) HasContexts() bool { return s != nil && s.ctx != nil }

// Epochs returns the instruction counts at which memory added with
// [Set.AddTimedBytes] starts to hold, sorted.
func (s *Set) Epochs() []uint64 {
	if s == nil || s.ctx == nil {
		return nil
	}
	return s.ctx.epochs
}

// Contexts returns the contexts that have memory of their own, sorted.
func (s *Set) Contexts() []uint64 {
	if s.ctx == nil {
		return nil
	}
	var c []uint64
	for k := range s.ctx.spans {
		c = append(c, k)
	}
	sort.Slice(c, func(i, j int) bool { return c[i] < c[j] })
	return c
}

// ForContext returns the address space of context ctx at the start of
// the trace: [Set.View] (ctx, 0).
func (s *Set) ForContext(ctx uint64) *Set { return s.View(ctx, 0) }

// View returns the address space of context ctx at the n-th instruction
// of the trace: s itself when there is no per-context or timed memory
// (or none that applies), else a Set showing the global images, the
// timed global memory holding at n, ctx's memory and ctx's timed memory
// holding at n, each on top of the one before, with s's symbols, lines
// and XLEN. Views are built once and cached, and share the decoded
// instructions of the memory they have in common; View is safe for
// concurrent use once loading is done.
func (s *Set) View(ctx, n uint64) *Set {
	if s == nil || s.ctx == nil {
		return s
	}
	c := s.ctx
	epoch := sort.Search(len(c.epochs), func(i int) bool { return c.epochs[i] > n })
	c.mu.Lock()
	defer c.mu.Unlock()
	k := viewKey{ctx, epoch}
	if v := c.views[k]; v != nil {
		return v
	}
	var layers []ctxSpan
	for _, t := range c.timed {
		if t.global && (epoch > 0 && t.from <= c.epochs[epoch-1]) {
			layers = append(layers, t)
		}
	}
	layers = append(layers, c.spans[ctx]...)
	for _, t := range c.timed {
		if !t.global && t.ctx == ctx && (epoch > 0 && t.from <= c.epochs[epoch-1]) {
			layers = append(layers, t)
		}
	}
	if len(layers) == 0 {
		c.views[k] = s
		return s
	}
	// the view of the previous epoch, when it exists, shares most caches
	base := s
	if epoch > 0 {
		if pv := c.views[viewKey{ctx, epoch - 1}]; pv != nil {
			base = pv
			layers = nil
			for _, t := range c.timed {
				if t.from == c.epochs[epoch-1] && (t.global || t.ctx == ctx) {
					layers = append(layers, t)
				}
			}
			// a global layer must stay under the context's own memory
			// (its spans and its own timed layers): build afresh
			for _, t := range layers {
				if t.global {
					base, layers = s, nil
					break
				}
			}
			if layers == nil && base == s {
				for _, t := range c.timed {
					if t.global && t.from <= c.epochs[epoch-1] {
						layers = append(layers, t)
					}
				}
				layers = append(layers, c.spans[ctx]...)
				for _, t := range c.timed {
					if !t.global && t.ctx == ctx && t.from <= c.epochs[epoch-1] {
						layers = append(layers, t)
					}
				}
			}
		}
	}
	v := &Set{xlen: s.xlen, xlenFrom: s.xlenFrom, zc: s.zc, hasZc: s.hasZc, ext: s.ext, entry: s.entry, entryOK: s.entryOK, zero: s.zero,
		syms: s.syms, byName: s.byName, symRanges: s.symRanges, lines: s.lines, files: s.files, elves: s.elves}
	v.segs = append(v.segs, base.segs...)
	// The spans keep their page caches (shared with base) where the
	// layers cut them on page boundaries; the others get fresh ones.
	v.spans = append(v.spans, base.spans...)
	for _, o := range layers {
		v.segs = append(v.segs, Segment{Image: o.name, Addr: o.addr, MemSize: uint64(len(o.data)),
			FileSize: uint64(len(o.data)), Read: true, Exec: true})
		v.mapRegion(o.addr, o.addr+uint64(len(o.data)), o.data)
	}
	for i := range v.spans {
		sp := &v.spans[i]
		if want := (len(sp.data) + pageBytes - 1) / pageBytes; len(sp.pages) != want {
			sp.pages = make([]atomic.Pointer[instPage], want)
		}
	}
	c.views[k] = v
	return v
}
