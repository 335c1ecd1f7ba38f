package sim

import (
	"encoding/binary"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
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
// slot per halfword. The pointer comes first: the garbage collector then
// scans one word of the page, not 64 KiB.
type decPage struct {
	mem   *[pageSize]byte
	pa    uint64 // the physical address of the page (0 for a hart's scratch page)
	insts [pageSize / 2]inst
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
	total   uint64 // bytes of RAM mapped
	limit   uint64 // bound on total (Config.MaxRAM)
}

// DefaultMaxRAM is the default bound on the guest RAM of a machine (all
// banks together): 16 GiB. Guest RAM is never allowed above the host's
// RAM plus swap either (the operating system would refuse to reserve it). RAM is reserved from the host lazily (the
// host's pages are only touched when the guest writes them), so the bound
// is not the memory a run uses but a guard against a size no program
// needs, such as a corrupt ELF segment of a terabyte; Config.MaxRAM
// (rvtrace run --max-ram) raises it.
const DefaultMaxRAM = 16 << 30

// RAMLimitError reports guest RAM that would exceed Config.MaxRAM.
type RAMLimitError struct {
	What        string // what asked for the RAM
	Base, Size  uint64 // the bank refused
	Total       uint64 // guest RAM already mapped
	Limit       uint64
	LimitSource string // how to raise the limit
}

func (e *RAMLimitError) Error() string {
	return fmt.Sprintf("%s: RAM bank %#x of %s would make %s of guest RAM, above the limit of %s (%s)",
		e.What, e.Base, sizeString(e.Size), sizeString(e.Total+e.Size), sizeString(e.Limit), e.LimitSource)
}

// sizeString writes n bytes with a binary unit when it is a whole number
// of them.
func sizeString(n uint64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{60, "EiB"}, {50, "PiB"}, {40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d %s", n>>u.shift, u.name)
		}
	}
	if n >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%d bytes", n)
}

func (mm *memory) find(pa uint64) *region {
	for _, r := range mm.regions {
		if pa-r.base < r.size {
			return r
		}
	}
	return nil
}

// addRAM maps a RAM bank (page aligned) for what (named in errors).
// Overlapping banks are merged by refusing the overlap. The bank's host
// memory is reserved, not touched: Go maps fresh zeroed pages from the
// operating system, which provides them when first written.
func (mm *memory) addRAM(base, size uint64, what string) error {
	base &^= pageMask
	if size > ^uint64(0)-pageMask {
		return fmt.Errorf("%s: bad RAM bank %#x+%#x", what, base, size)
	}
	size = (size + pageMask) &^ pageMask
	if size == 0 || base+size < base {
		return fmt.Errorf("%s: bad RAM bank %#x+%#x", what, base, size)
	}
	limit := mm.limit
	if limit == 0 {
		limit = DefaultMaxRAM
	}
	if size > limit || mm.total+size > limit {
		return &RAMLimitError{What: what, Base: base, Size: size, Total: mm.total, Limit: limit,
			LimitSource: "Config.MaxRAM, rvtrace run --max-ram"}
	}
	// Above the host's RAM and swap, the operating system refuses the
	// reservation and the Go runtime would die of it.
	if host := hostMemory(); host != 0 && mm.total+size > host {
		return &RAMLimitError{What: what, Base: base, Size: size, Total: mm.total, Limit: host,
			LimitSource: "the host's RAM and swap"}
	}
	for _, r := range mm.regions {
		if base < r.base+r.size && r.base < base+size {
			return fmt.Errorf("%s: RAM bank %#x+%#x overlaps %#x+%#x", what, base, size, r.base, r.size)
		}
	}
	mm.total += size
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
	mm.hostWrote(pa, uint64(len(b)))
	return true
}

// hostWrote keeps the decoded-instruction cache coherent after a write
// of n bytes at pa by a device, the SBI or the host, and tells the
// code-write hook of each page holding code that ran.
func (mm *memory) hostWrote(pa, n uint64) {
	mm.invalidateCode(pa, n)
	if mm.m == nil || mm.m.codeHook == nil || n == 0 {
		return
	}
	for a := pa &^ pageMask; a < pa+n && a >= pa&^pageMask; a += pageSize {
		if r := mm.find(a); r != nil && r.flags[(a-r.base)>>pageShift]&pfCode != 0 {
			mm.m.codeHook(max(a, pa))
		}
	}
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
	dp := &decPage{mem: r.page(pa), pa: pa &^ pageMask}
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

// hostMemory returns the host's RAM plus swap in bytes (Linux
// /proc/meminfo MemTotal + SwapTotal), or 0 when unknown.
func hostMemory() uint64 {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0
	}
	var total uint64
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && (f[0] == "MemTotal:" || f[0] == "SwapTotal:") && f[2] == "kB" {
			n, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0
			}
			total += n << 10
		}
	}
	return total
}
