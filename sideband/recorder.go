package sideband

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"path/filepath"

	"github.com/rvtrace/rvtrace/ingress"
)

// xlener is implemented by a Memory that knows the harts' register width
// (sim.Machine): the sideband then records it.
type xlener interface{ XLEN() int }

// Memory reads the code the harts execute: sim.Machine implements it.
type Memory interface {
	// PeekCode reads len(b) bytes at virtual address va, within one
	// page, as the hart fetches them in privilege priv now; global tells
	// whether the translation is the same in every address space.
	PeekCode(hart int, va uint64, priv ingress.Priv, b []byte) (pa uint64, global, ok bool)
	// FetchFrame returns the physical address the hart fetches va from
	// in privilege priv now, cheaply when its TLB holds it.
	FetchFrame(hart int, va uint64, priv ingress.Priv) (pa uint64, ok bool)
	// TranslationGen returns a number that changes whenever the
	// translation of the hart's fetches may have changed.
	TranslationGen(hart int) uint64
	// BlockInstret returns, during a call of the hart's ingress sink,
	// the number of instructions the hart retired before the block's
	// first instruction.
	BlockInstret(hart int) uint64
}

// genAddr is implemented by a Memory whose translation generation can be
// read without a call (sim.Machine).
type genAddr interface {
	TranslationGenAddr(hart int) *uint64
}

// Stats counts what a Recorder did, all harts together.
type Stats struct {
	Matched  int // pages matched to an image
	Literal  int // pages written as bytes records (no image holds them)
	Patched  int // pages written as an image page with a few bytes changed
	Changed  int // pages recorded again because their code changed (overwritten or remapped)
	Remapped int // of those, pages a context ran from another physical page than before
	Unmapped int // pages a block ran from that could not be read when the block was reported (nothing recorded)
}

// Recorder writes a sideband while the simulator runs (see the package
// documentation): [Recorder.Hart] is the ingress sink of each hart. It
// must receive each hart's blocks synchronously, as they retire: it
// reads the hart's memory then.
type Recorder struct {
	mem     Memory
	instret func(hart int) uint64
	w       *Writer
	closer  io.Closer

	images []Image
	data   [][]byte
	seed   maphash.Seed
	index  map[uint64][]loc // page hash: where the images hold such a page

	harts  []*HartRecorder
	open   int // harts whose sink is not closed yet
	closed bool

	buf   [PageSize]byte
	pad   [PageSize]byte
	stats Stats
	err   error
}

// HartRecorder is the ingress sink of one hart of a [Recorder]: each
// hart's records describe the code it ran, stamped with its own
// instruction counts.
type HartRecorder struct {
	r    *Recorder
	hart int
	gen  *uint64 // the hart's translation generation, when it can be read directly

	seen     map[key]*seenAt  // (context, page): the physical page it ran from, checked at a translation generation
	global   map[uint64]entry // page of the global address space: what was recorded
	private  map[key]entry    // (context, page): what was recorded
	byFrame  map[uint64][]key // physical page: the keys that ran from it
	lastKey  key
	lastGen  uint64
	haveLast bool
	last     *seenAt           // seen[lastKey] (nil: look it up)
	lastLoc  map[uint64]loc    // context (or ^0 for global): the last match, to prefer neighbours
	lastVA   map[uint64]uint64 // context (or ^0 for global): the address of the last match
	dirty    map[uint64]uint64 // physical page: the hart's instret at the latest write into it
}

type key struct {
	ctx, page uint64
}

type seenAt struct {
	frame, gen uint64
}

type loc struct {
	img int
	off uint64
}

type entry struct {
	sum   uint64 // hash of the bytes recorded
	frame uint64 // the physical page they were read from
}

const globalCtx = ^uint64(0)

// NewRecorder returns a Recorder for harts harts writing to w (closed by
// Close when it is an io.Closer), matching pages against the image
// files. instret gives the number of instructions a hart has retired,
// exactly (not a per-quantum approximation): records of code that was
// overwritten are stamped with it at the first write into it.
func NewRecorder(w io.Writer, mem Memory, harts int, instret func(hart int) uint64, images []string) (*Recorder, error) {
	if harts < 1 {
		return nil, fmt.Errorf("sideband: %d harts", harts)
	}
	r := &Recorder{mem: mem, instret: instret, seed: maphash.MakeSeed(), index: map[uint64][]loc{}, open: harts}
	for h := 0; h < harts; h++ {
		r.harts = append(r.harts, &HartRecorder{r: r, hart: h, seen: map[key]*seenAt{}, global: map[uint64]entry{},
			private: map[key]entry{}, byFrame: map[uint64][]key{}, lastLoc: map[uint64]loc{}, lastVA: map[uint64]uint64{},
			dirty: map[uint64]uint64{}})
		if ga, ok := mem.(genAddr); ok {
			r.harts[h].gen = ga.TranslationGenAddr(h)
		}
	}
	for i, p := range images {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("sideband: %w", err)
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("sideband: %w", err)
		}
		r.images = append(r.images, Image{Path: abs, Size: int64(len(b)), SHA256: sha256.Sum256(b)})
		r.data = append(r.data, b)
		for off := 0; off < len(b); off += PageSize {
			h := r.hash(page(b, off, r.buf[:]))
			r.index[h] = append(r.index[h], loc{i, uint64(off)})
		}
	}
	xlen := 0
	if x, ok := mem.(xlener); ok {
		xlen = x.XLEN()
	}
	r.w = NewWriter(w, xlen, r.images)
	if c, ok := w.(io.Closer); ok {
		r.closer = c
	}
	return r, nil
}

// Hart returns the ingress sink of hart h.
func (r *Recorder) Hart(h int) *HartRecorder { return r.harts[h] }

// page returns the 4 KiB of b at off, zero-padded past its end (in tmp).
func page(b []byte, off int, tmp []byte) []byte {
	if off+PageSize <= len(b) {
		return b[off : off+PageSize]
	}
	n := copy(tmp, b[off:])
	clear(tmp[n:])
	return tmp[:PageSize]
}

func (r *Recorder) hash(b []byte) uint64 { return maphash.Bytes(r.seed, b) }

// Stats returns what the recorder did so far.
func (r *Recorder) Stats() Stats { return r.stats }

// Block looks at the pages the block ran from. A page is read and
// matched the first time a context runs from it, and again when its
// bytes may have changed: a write into its physical page
// ([Recorder.CodeWritten]), or a translation that now gives another
// physical page (the kernel remapped the address, or gave the context
// number to a new process). Between two changes of the hart's
// translation generation a page that was checked costs a comparison.
func (hr *HartRecorder) Block(b *ingress.Block) error {
	r := hr.r
	if r.err != nil || b.IRetire == 0 {
		return r.err
	}
	var gen uint64
	if hr.gen != nil {
		gen = *hr.gen
	} else {
		gen = r.mem.TranslationGen(hr.hart)
	}
	first := b.IAddr / PageSize
	last := (b.IAddr + 2*uint64(b.IRetire) - 1) / PageSize
	for p := first; ; p++ {
		k := key{b.Context, p}
		if !hr.haveLast || k != hr.lastKey || gen != hr.lastGen {
			if !hr.haveLast || k != hr.lastKey || hr.last == nil {
				hr.last = hr.seen[k]
			}
			hr.lastKey, hr.lastGen, hr.haveLast = k, gen, true
			if err := hr.check(k, b.Priv, gen); err != nil {
				r.err = err
				return err
			}
		}
		if p == last {
			break
		}
	}
	return nil
}

// check records page k.page of context k.ctx (whose seen entry is
// hr.last) unless it was recorded as it is now.
func (hr *HartRecorder) check(k key, priv ingress.Priv, gen uint64) error {
	s := hr.last
	if s == nil {
		return hr.visit(k, priv, gen)
	}
	if s.gen == gen {
		return nil
	}
	pa, ok := hr.r.mem.FetchFrame(hr.hart, k.page*PageSize, priv)
	if !ok {
		// unmapped since the block ran (see visit): checked next time
		return nil
	}
	if pa/PageSize == s.frame {
		s.gen = gen
		return nil
	}
	return hr.visit(k, priv, gen)
}

// Close tells that the hart's trace ended; the last hart to close
// closes the Recorder.
func (hr *HartRecorder) Close() error {
	r := hr.r
	if r.open > 0 {
		r.open--
	}
	if r.open > 0 {
		return r.err
	}
	return r.Close()
}

// visit reads and records page k.page of context k.ctx, run for the
// first time, or again since its code may have changed.
func (hr *HartRecorder) visit(k key, priv ingress.Priv, gen uint64) error {
	r := hr.r
	va := k.page * PageSize
	pa, global, ok := r.mem.PeekCode(hr.hart, va, priv, r.buf[:])
	if !ok {
		// The block ran there, but the translation changed before it
		// was reported (the instruction that turns the MMU on): nothing
		// is recorded, and a decoder reaching the page reports a gap.
		r.stats.Unmapped++
		return nil
	}
	frame := pa / PageSize
	s := hr.seen[k]
	if s == nil {
		s = &seenAt{frame: ^uint64(0)}
		hr.seen[k] = s
	}
	if s.frame != frame {
		hr.byFrame[frame] = append(hr.byFrame[frame], k)
	}
	s.frame, s.gen = frame, gen
	hr.last = s
	sum := r.hash(r.buf[:])
	rec := Record{Hart: hr.hart, Context: k.ctx, Global: global, Start: va, End: va + PageSize}
	lk := k.ctx
	var e entry
	var had bool
	if global {
		lk = globalCtx
		e, had = hr.global[k.page]
		hr.global[k.page] = entry{sum, frame}
	} else {
		e, had = hr.private[k]
		hr.private[k] = entry{sum, frame}
	}
	if had {
		if e.sum == sum {
			return nil
		}
		r.stats.Changed++
		if e.frame != frame {
			// Another physical page: its bytes hold from this block on
			// (the address ran from the old page until the translation
			// changed, and not since, or it would have been checked).
			r.stats.Remapped++
			rec.Instret = r.mem.BlockInstret(hr.hart)
		} else {
			// Overwritten in place: the bytes hold from the latest write
			// (the page did not run since the first one).
			rec.Instret = hr.dirty[frame]
		}
	}
	if l, ok := r.match(sum, va, lk, hr); ok {
		rec.Image, rec.Offset = l.img, l.off
		hr.lastLoc[lk], hr.lastVA[lk] = l, va
		r.stats.Matched++
		return r.w.Write(&rec)
	}
	if l, ok := r.near(va, lk, hr); ok {
		// the image's page with a few bytes changed (code the kernel
		// patched): a map record and bytes records for the changes,
		// with the same INSTRET, so that they add up
		rec.Image, rec.Offset = l.img, l.off
		if err := r.w.Write(&rec); err != nil {
			return err
		}
		img := page(r.data[l.img], int(l.off), r.pad[:])
		for i := 0; i < PageSize; {
			if img[i] == r.buf[i] {
				i++
				continue
			}
			j := i + 1
			for same := 0; j < PageSize && same < 16; j++ {
				if img[j] == r.buf[j] {
					same++
				} else {
					same = 0
				}
			}
			for j > i && img[j-1] == r.buf[j-1] {
				j--
			}
			p := Record{Hart: hr.hart, Context: k.ctx, Global: global, Start: va + uint64(i), End: va + uint64(j), Image: -1,
				Bytes: r.buf[i:j], Instret: rec.Instret}
			if err := r.w.Write(&p); err != nil {
				return err
			}
			i = j
		}
		r.stats.Patched++
		return nil
	}
	rec.Image, rec.Bytes = -1, r.buf[:]
	r.stats.Literal++
	return r.w.Write(&rec)
}

// maxPatch is the most bytes a page may differ from the image page at
// the same distance as the last match for it to be recorded as that page
// with changes.
const maxPatch = 256

// near finds the image page at the same distance from va as the last
// match of the address space, when it differs from the page read in at
// most maxPatch bytes.
func (r *Recorder) near(va, lk uint64, hr *HartRecorder) (loc, bool) {
	l, ok := hr.lastLoc[lk]
	if !ok {
		return loc{}, false
	}
	off := l.off + (va - hr.lastVA[lk])
	if off >= uint64(len(r.data[l.img])) || off%PageSize != 0 {
		return loc{}, false
	}
	img := page(r.data[l.img], int(off), r.pad[:])
	diff := 0
	for i := range img {
		if img[i] != r.buf[i] {
			if diff++; diff > maxPatch {
				return loc{}, false
			}
		}
	}
	return loc{l.img, off}, true
}

// match finds an image page holding exactly the bytes in r.buf (hash
// sum), preferring the one next to the last match of the address space.
func (r *Recorder) match(sum, va uint64, lk uint64, hr *HartRecorder) (loc, bool) {
	cands := r.index[sum]
	var found loc
	n := 0
	prev, havePrev := hr.lastLoc[lk]
	for _, c := range cands {
		if !bytes.Equal(page(r.data[c.img], int(c.off), r.pad[:]), r.buf[:]) {
			continue
		}
		if n == 0 {
			found = c
		}
		n++
		if havePrev && c.img == prev.img {
			found = c
			break
		}
	}
	return found, n > 0
}

// CodeWritten tells the recorder that physical address pa was written
// in a page holding code that ran (sim.Machine.SetCodeWriteHook): the
// pages that ran from there are matched again the next time they run,
// on every hart.
func (r *Recorder) CodeWritten(pa uint64) {
	frame := pa / PageSize
	for _, hr := range r.harts {
		for _, k := range hr.byFrame[frame] {
			if s := hr.seen[k]; s != nil && s.frame == frame {
				delete(hr.seen, k)
			}
		}
		delete(hr.byFrame, frame)
		// The bytes seen when the page runs next hold from the latest
		// write before (the page did not run since the first one).
		hr.dirty[frame] = r.instret(hr.hart)
		hr.haveLast, hr.last = false, nil
	}
}

// Close flushes the sideband and closes its writer (once).
func (r *Recorder) Close() error {
	if r.closed {
		return r.err
	}
	r.closed = true
	err := r.w.Flush()
	if r.closer != nil {
		if e := r.closer.Close(); err == nil {
			err = e
		}
	}
	if r.err != nil {
		return r.err
	}
	return err
}
