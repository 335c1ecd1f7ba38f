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

// Memory reads the code a hart executes: sim.Machine.PeekCode.
type Memory interface {
	// PeekCode reads len(b) bytes at virtual address va, within one
	// page, as the hart fetches them in privilege priv now; global tells
	// whether the translation is the same in every address space.
	PeekCode(hart int, va uint64, priv ingress.Priv, b []byte) (pa uint64, global, ok bool)
}

// Stats counts what a Recorder did.
type Stats struct {
	Matched  int // pages matched to an image
	Literal  int // pages written as bytes records (no image holds them)
	Patched  int // pages written as an image page with a few bytes changed
	Changed  int // pages recorded again because their code changed
	Unmapped int // pages a block ran from that could not be read when the block was reported (nothing recorded)
}

// Recorder is an ingress.Sink that writes a sideband while the simulator
// runs (see the package documentation). It must receive the hart's blocks
// synchronously, as they retire: it reads the hart's memory then.
type Recorder struct {
	mem     Memory
	hart    int
	instret func() uint64
	w       *Writer
	closer  io.Closer

	images []Image
	data   [][]byte
	seed   maphash.Seed
	index  map[uint64][]loc // page hash: where the images hold such a page

	seen     map[key]uint64   // (context, page): the physical page it ran from
	global   map[uint64]entry // page of the global address space: what was recorded
	private  map[key]entry    // (context, page): what was recorded
	byFrame  map[uint64][]key // physical page: the keys that ran from it
	lastKey  key
	haveLast bool
	lastLoc  map[uint64]loc    // context (or ^0 for global): the last match, to prefer neighbours
	lastVA   map[uint64]uint64 // context (or ^0 for global): the address of the last match
	dirty    map[uint64]uint64 // physical page: instret of the latest store into it

	buf   [PageSize]byte
	pad   [PageSize]byte
	stats Stats
	err   error
}

type key struct {
	ctx, page uint64
}

type loc struct {
	img int
	off uint64
}

type entry struct {
	sum uint64 // hash of the bytes recorded
}

const globalCtx = ^uint64(0)

// NewRecorder returns a Recorder writing to w (closed by Close when it
// is an io.Closer) for hart, matching pages against the image files.
// instret gives the number of instructions the harts have retired,
// exactly (not a per-quantum approximation): records of code that
// changed are stamped with it at the first store that overwrote the code.
func NewRecorder(w io.Writer, mem Memory, hart int, instret func() uint64, images []string) (*Recorder, error) {
	r := &Recorder{mem: mem, hart: hart, instret: instret, seed: maphash.MakeSeed(),
		index: map[uint64][]loc{}, seen: map[key]uint64{}, global: map[uint64]entry{},
		private: map[key]entry{}, byFrame: map[uint64][]key{}, lastLoc: map[uint64]loc{}, lastVA: map[uint64]uint64{}, dirty: map[uint64]uint64{}}
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
	r.w = NewWriter(w, r.images)
	if c, ok := w.(io.Closer); ok {
		r.closer = c
	}
	return r, nil
}

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

// Block looks at the pages the block ran from.
func (r *Recorder) Block(b *ingress.Block) error {
	if r.err != nil || b.IRetire == 0 {
		return r.err
	}
	first := b.IAddr / PageSize
	last := (b.IAddr + 2*uint64(b.IRetire) - 1) / PageSize
	for p := first; ; p++ {
		k := key{b.Context, p}
		if !r.haveLast || k != r.lastKey {
			if _, ok := r.seen[k]; !ok {
				if err := r.visit(k, b.Priv); err != nil {
					r.err = err
					return err
				}
			}
			r.lastKey, r.haveLast = k, true
		}
		if p == last {
			break
		}
	}
	return nil
}

// visit records page k.page of context k.ctx, run for the first time
// (or again after its code was overwritten).
func (r *Recorder) visit(k key, priv ingress.Priv) error {
	va := k.page * PageSize
	pa, global, ok := r.mem.PeekCode(r.hart, va, priv, r.buf[:])
	if !ok {
		// The block ran there, but the translation changed before it
		// was reported (the instruction that turns the MMU on): nothing
		// is recorded, and a decoder reaching the page reports a gap.
		r.stats.Unmapped++
		return nil
	}
	frame := pa / PageSize
	r.seen[k] = frame
	r.byFrame[frame] = append(r.byFrame[frame], k)
	sum := r.hash(r.buf[:])
	rec := Record{Context: k.ctx, Global: global, Start: va, End: va + PageSize}
	lk := k.ctx
	changed := false
	if global {
		lk = globalCtx
		if e, ok := r.global[k.page]; ok {
			if e.sum == sum {
				return nil
			}
			r.stats.Changed++
			changed = true
		}
		r.global[k.page] = entry{sum}
	} else {
		if e, ok := r.private[k]; ok {
			if e.sum == sum {
				return nil
			}
			r.stats.Changed++
			changed = true
		}
		r.private[k] = entry{sum}
	}
	if changed {
		rec.Instret = r.dirty[frame]
	}
	if l, ok := r.match(sum, va, lk); ok {
		rec.Image, rec.Offset = l.img, l.off
		r.lastLoc[lk], r.lastVA[lk] = l, va
		r.stats.Matched++
		return r.w.Write(&rec)
	}
	if l, ok := r.near(va, lk); ok {
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
			p := Record{Context: k.ctx, Global: global, Start: va + uint64(i), End: va + uint64(j), Image: -1,
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
func (r *Recorder) near(va, lk uint64) (loc, bool) {
	l, ok := r.lastLoc[lk]
	if !ok {
		return loc{}, false
	}
	off := l.off + (va - r.lastVA[lk])
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
func (r *Recorder) match(sum, va uint64, lk uint64) (loc, bool) {
	cands := r.index[sum]
	var found loc
	n := 0
	prev, havePrev := r.lastLoc[lk]
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

// CodeWritten tells the recorder that a store wrote physical address pa
// in a page holding code that ran (sim.Machine.SetCodeWriteHook): the
// pages that ran from there are matched again the next time they run.
func (r *Recorder) CodeWritten(pa uint64) {
	frame := pa / PageSize
	ks := r.byFrame[frame]
	for _, k := range ks {
		if r.seen[k] == frame {
			delete(r.seen, k)
		}
	}
	delete(r.byFrame, frame)
	// The bytes seen when the page runs next hold from the latest store
	// before (the page did not run since the first one).
	r.dirty[frame] = r.instret()
	r.haveLast = false
}

// Close flushes the sideband and closes its writer.
func (r *Recorder) Close() error {
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
