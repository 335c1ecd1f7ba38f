package sim

import (
	"encoding/binary"
	"fmt"
	"sort"
)

const (
	pageShift = 12
	pageSize  = 1 << pageShift
	pageMask  = pageSize - 1
	tlbSize   = 256 // entries of each direct-mapped software TLB
	tlbMask   = tlbSize - 1
	noTag     = ^uint64(0)
)

// Page flags of a RAM page (region.flags).
const (
	pfCode  = 1 << iota // decoded instructions are cached for the page
	pfWatch             // stores must take the slow path (HTIF tohost)
)

// decPage holds the decoded instructions of one 4 KiB physical page, one
// slot per halfword.
type decPage struct {
	insts [pageSize / 2]inst
	mem   *[pageSize]byte
}

// region is a RAM bank.
type region struct {
	base, size uint64
	mem        []byte
	dec        []*decPage
	flags      []uint8
}

func (r *region) page(pa uint64) *[pageSize]byte {
	off := (pa - r.base) &^ pageMask
	return (*[pageSize]byte)(r.mem[off : off+pageSize])
}

// tlbEntry maps one virtual page to host memory.
type tlbEntry struct {
	tag  uint64 // virtual page number, noTag when empty
	page *[pageSize]byte
}

// itlbEntry maps one virtual page to the decoded instructions of its
// physical page (fetch permission and PMP checked for the whole page).
type itlbEntry struct {
	tag uint64 // virtual page number, noTag when empty
	dp  *decPage
}

const (
	itlbSize = 64
	itlbMask = itlbSize - 1
)

// memory is the physical address space shared by all harts: RAM banks and
// devices.
type memory struct {
	regions []*region
	m       *Machine
}

func (mm *memory) find(pa uint64) *region {
	for _, r := range mm.regions {
		if pa-r.base < r.size {
			return r
		}
	}
	return nil
}

// addRAM maps a RAM bank (page aligned). Overlapping banks are merged by
// refusing the overlap.
func (mm *memory) addRAM(base, size uint64) error {
	base &^= pageMask
	size = (size + pageMask) &^ pageMask
	for _, r := range mm.regions {
		if base < r.base+r.size && r.base < base+size {
			return fmt.Errorf("sim: RAM bank %#x+%#x overlaps %#x+%#x", base, size, r.base, r.size)
		}
	}
	if size == 0 || base+size < base {
		return fmt.Errorf("sim: bad RAM bank %#x+%#x", base, size)
	}
	n := size >> pageShift
	mm.regions = append(mm.regions, &region{base: base, size: size, mem: make([]byte, size),
		dec: make([]*decPage, n), flags: make([]uint8, n)})
	sort.Slice(mm.regions, func(i, j int) bool { return mm.regions[i].base < mm.regions[j].base })
	return nil
}

// ramSlice returns the host bytes of [pa, pa+n) when they are all RAM.
func (mm *memory) ramSlice(pa, n uint64) []byte {
	r := mm.find(pa)
	if r == nil || pa-r.base+n > r.size || pa+n < pa {
		return nil
	}
	off := pa - r.base
	return r.mem[off : off+n]
}

// read and write access RAM for the host (loader, HTIF); false when the
// range is not RAM.
func (mm *memory) read(pa uint64, b []byte) bool {
	s := mm.ramSlice(pa, uint64(len(b)))
	if s == nil {
		// fall back to byte by byte across banks
		for i := range b {
			t := mm.ramSlice(pa+uint64(i), 1)
			if t == nil {
				return false
			}
			b[i] = t[0]
		}
		return true
	}
	copy(b, s)
	return true
}

func (mm *memory) write(pa uint64, b []byte) bool {
	for i := range b {
		t := mm.ramSlice(pa+uint64(i), 1)
		if t == nil {
			return false
		}
		t[0] = b[i]
	}
	mm.invalidateCode(pa, uint64(len(b)))
	return true
}

func (mm *memory) read64(pa uint64) (uint64, bool) {
	var b [8]byte
	ok := mm.read(pa, b[:])
	return binary.LittleEndian.Uint64(b[:]), ok
}

func (mm *memory) write64(pa, v uint64) bool {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return mm.write(pa, b[:])
}

// invalidateCode drops the decoded instructions that overlap [pa, pa+n).
// It reports whether one of them was a decoded (executed) instruction
// that the range overwrites.
func (mm *memory) invalidateCode(pa, n uint64) bool {
	hit := false
	for a := (pa - 2) &^ 1; a < pa+n; a += 2 {
		r := mm.find(a)
		if r == nil {
			continue
		}
		if dp := r.dec[(a-r.base)>>pageShift]; dp != nil {
			d := &dp.insts[(a&pageMask)>>1]
			if d.op != opInvalid && a+uint64(d.size) > pa {
				hit = true
			}
			d.op = opInvalid
		}
	}
	return hit
}

// decPageFor returns (creating) the decoded-instruction page of pa, which
// must be RAM. Creating one makes the page a code page: stores to it then
// take the slow path, so every hart's store TLB is flushed.
func (mm *memory) decPageFor(r *region, pa uint64) *decPage {
	i := (pa - r.base) >> pageShift
	if dp := r.dec[i]; dp != nil {
		return dp
	}
	dp := &decPage{mem: r.page(pa)}
	r.dec[i] = dp
	r.flags[i] |= pfCode
	for _, h := range mm.m.harts {
		h.flushWTLB()
	}
	return dp
}

// watch makes stores to the page of pa take the slow path.
func (mm *memory) watch(pa uint64) {
	if r := mm.find(pa); r != nil {
		r.flags[(pa-r.base)>>pageShift] |= pfWatch
		for _, h := range mm.m.harts {
			h.flushWTLB()
		}
	}
}
