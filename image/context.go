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

// ctxImages holds the per-context memory of a Set.
type ctxImages struct {
	mu    sync.Mutex
	spans map[uint64][]ctxSpan // the context's memory, in the order added
	views map[uint64]*Set      // built views
}

type ctxSpan struct {
	name string
	addr uint64
	data []byte
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
	if s.ctx == nil {
		s.ctx = &ctxImages{spans: map[uint64][]ctxSpan{}, views: map[uint64]*Set{}}
	}
	s.ctx.spans[ctx] = append(s.ctx.spans[ctx], ctxSpan{name, addr, bytes.Clone(data)})
	clear(s.ctx.views)
}

// HasContexts reports whether some memory was added with
// [Set.AddContextBytes].
func (s *Set) HasContexts() bool { return s.ctx != nil }

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

// ForContext returns the address space of context ctx: s itself when ctx
// has no memory of its own (nor any context has), else a Set showing the
// global images with ctx's memory on top, with s's symbols, lines and
// XLEN. The view is built once per context and cached; ForContext is safe
// for concurrent use once loading is done.
func (s *Set) ForContext(ctx uint64) *Set {
	c := s.ctx
	if c == nil {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if v := c.views[ctx]; v != nil {
		return v
	}
	own := c.spans[ctx]
	if len(own) == 0 {
		c.views[ctx] = s
		return s
	}
	v := &Set{xlen: s.xlen, xlenFrom: s.xlenFrom, entry: s.entry, entryOK: s.entryOK, zero: s.zero,
		syms: s.syms, byName: s.byName, symRanges: s.symRanges, lines: s.lines, files: s.files, elves: s.elves}
	v.segs = append(v.segs, s.segs...)
	// The global spans keep their page caches (shared with s); the spans
	// cut by the context's memory get fresh ones.
	v.spans = append(v.spans, s.spans...)
	for _, o := range own {
		v.segs = append(v.segs, Segment{Image: o.name, Addr: o.addr, MemSize: uint64(len(o.data)),
			FileSize: uint64(len(o.data)), Read: true, Exec: true})
		v.mapRegion(o.addr, o.addr+uint64(len(o.data)), o.data)
	}
	for i := range v.spans {
		sp := &v.spans[i]
		if !sharesCache(sp, s.spans) {
			sp.pages = make([]atomic.Pointer[instPage], (len(sp.data)+pageBytes-1)/pageBytes)
		}
	}
	c.views[ctx] = v
	return v
}

// sharesCache reports whether sp is one of spans unchanged, so that its
// page cache can be shared.
func sharesCache(sp *span, spans []span) bool {
	i := sort.Search(len(spans), func(i int) bool { return spans[i].start >= sp.start })
	if i == len(spans) {
		return false
	}
	g := &spans[i]
	return g.start == sp.start && g.end == sp.end && len(g.data) == len(sp.data) && len(g.pages) == len(sp.pages) &&
		(len(sp.pages) == 0 || &g.pages[0] == &sp.pages[0])
}
