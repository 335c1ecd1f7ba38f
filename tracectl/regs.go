package tracectl

import (
	"fmt"
	"io"
	"strings"
)

// Access is how software may access a register field (the "RW" column of
// the specification's register tables).
type Access uint8

// Field access types.
const (
	// Reserved fields read as 0 and ignore writes ("--").
	Reserved Access = iota
	// RO fields are read-only; hardware may change them.
	RO
	// RW fields keep what is written.
	RW
	// WARL fields keep a written value when it is legal and their previous
	// value otherwise ("write any, read legal").
	WARL
	// W1C fields are set by hardware and cleared by writing 1 (RW1C).
	W1C
	// W1 fields are actions triggered by writing 1; they read as 0.
	W1
)

// String returns the specification's spelling of the access type.
func (a Access) String() string {
	switch a {
	case RO:
		return "RO"
	case RW:
		return "RW"
	case WARL:
		return "WARL"
	case W1C:
		return "RW1C"
	case W1:
		return "W1"
	}
	return "--"
}

// Field is one field of a register: bits Hi..Lo.
type Field struct {
	Name   string
	Hi, Lo uint8
	Access Access
	// Reset is the value after reset. Where the specification says the
	// reset value is undefined (Undef is set) or system dependent, it is
	// this implementation's choice.
	Reset uint32
	Undef bool
	// Legal lists the values a WARL field keeps (nil: every value that
	// fits). A field that is hard-wired has a single legal value.
	Legal []uint32
}

// mask returns the field's bits in place.
func (f *Field) mask() uint32 {
	w := uint(f.Hi-f.Lo) + 1
	if w >= 32 {
		return ^uint32(0)
	}
	return (1<<w - 1) << f.Lo
}

// get extracts the field from a register value.
func (f *Field) get(v uint32) uint32 { return (v & f.mask()) >> f.Lo }

// set returns v with the field replaced by x.
func (f *Field) set(v, x uint32) uint32 { return v&^f.mask() | (x<<f.Lo)&f.mask() }

// legal reports whether x is a value the field keeps.
func (f *Field) legal(x uint32) bool {
	if f.Legal == nil {
		return true
	}
	for _, l := range f.Legal {
		if l == x {
			return true
		}
	}
	return false
}

// Reg is one 32-bit register of a component: its name, byte offset in
// the component's 4 KiB block and fields. Bits that no field covers are
// reserved (read 0, ignore writes).
type Reg struct {
	Name   string
	Offset uint32
	Fields []Field
}

// ResetValue returns the register's value after reset.
func (r *Reg) ResetValue() uint32 {
	var v uint32
	for i := range r.Fields {
		v = r.Fields[i].set(v, r.Fields[i].Reset)
	}
	return v
}

// Field returns the field named name, or nil.
func (r *Reg) Field(name string) *Field {
	for i := range r.Fields {
		if r.Fields[i].Name == name {
			return &r.Fields[i]
		}
	}
	return nil
}

// ComponentSize is the size of each component's register block.
const ComponentSize = 0x1000

// bank holds the registers of one component, driven by its table.
type bank struct {
	regs  []Reg
	index [ComponentSize / 4]int16 // offset/4 -> index in regs + 1 (0: none)
	val   []uint32
}

func newBank(regs []Reg) bank {
	b := bank{regs: regs, val: make([]uint32, len(regs))}
	for i := range regs {
		off := regs[i].Offset
		if off%4 != 0 || off >= ComponentSize || b.index[off/4] != 0 {
			panic(fmt.Sprintf("tracectl: bad register table entry %s at %#x", regs[i].Name, off))
		}
		b.index[off/4] = int16(i + 1)
	}
	b.reset()
	return b
}

// reset sets every register to its reset value.
func (b *bank) reset() {
	for i := range b.regs {
		b.val[i] = b.regs[i].ResetValue()
	}
}

// reg returns the index of the register at off, or -1.
func (b *bank) reg(off uint32) int {
	if off >= ComponentSize || off%4 != 0 {
		return -1
	}
	return int(b.index[off/4]) - 1
}

// read returns the register at off (0 for reserved offsets).
func (b *bank) read(off uint32) uint32 {
	if i := b.reg(off); i >= 0 {
		return b.val[i]
	}
	return 0
}

// write applies a software write of v to the register at off following
// the access type of each field, and returns the old and new values.
// Reserved offsets ignore writes (ok is false).
func (b *bank) write(off, v uint32) (old, nv uint32, ok bool) {
	i := b.reg(off)
	if i < 0 {
		return 0, 0, false
	}
	old = b.val[i]
	nv = old
	for j := range b.regs[i].Fields {
		f := &b.regs[i].Fields[j]
		x := f.get(v)
		switch f.Access {
		case RW:
			nv = f.set(nv, x)
		case WARL:
			if f.legal(x) {
				nv = f.set(nv, x)
			}
		case W1C:
			nv = f.set(nv, f.get(nv)&^x)
		}
	}
	b.val[i] = nv
	return old, nv, true
}

// field returns the value of a named field of the register at off.
func (b *bank) field(off uint32, name string) uint32 {
	i := b.reg(off)
	if i < 0 {
		return 0
	}
	f := b.regs[i].Field(name)
	if f == nil {
		panic("tracectl: no field " + name)
	}
	return f.get(b.val[i])
}

// setField sets a named field of the register at off (a hardware update).
func (b *bank) setField(off uint32, name string, x uint32) {
	i := b.reg(off)
	f := b.regs[i].Field(name)
	if f == nil {
		panic("tracectl: no field " + name)
	}
	b.val[i] = f.set(b.val[i], x)
}

// dump writes every register with its value and fields.
func (b *bank) dump(w io.Writer, base uint64) error {
	for i := range b.regs {
		r := &b.regs[i]
		var s strings.Builder
		for j := range r.Fields {
			f := &r.Fields[j]
			if j > 0 {
				s.WriteByte(' ')
			}
			fmt.Fprintf(&s, "%s=%#x", f.Name, f.get(b.val[i]))
		}
		if _, err := fmt.Fprintf(w, "%#010x %-32s %#010x  %s\n", base+uint64(r.Offset), r.Name, b.val[i], s.String()); err != nil {
			return err
		}
	}
	return nil
}

// Helpers to write the tables compactly.

func bit(name string, n uint8, a Access, reset uint32, legal ...uint32) Field {
	return Field{Name: name, Hi: n, Lo: n, Access: a, Reset: reset, Legal: legalOrNil(legal)}
}

func bits(name string, hi, lo uint8, a Access, reset uint32, legal ...uint32) Field {
	return Field{Name: name, Hi: hi, Lo: lo, Access: a, Reset: reset, Legal: legalOrNil(legal)}
}

// undef marks the field's reset value as undefined by the specification.
func undef(f Field) Field { f.Undef = true; return f }

func legalOrNil(l []uint32) []uint32 {
	if len(l) == 0 {
		return nil
	}
	return l
}

// Component types (tr??CompType of the tr??Impl registers).
const (
	CompEncoder = 0x1
	CompFunnel  = 0x8
	CompRAMSink = 0x9
)

// impl returns a tr??Impl register of version 1.0 and component type ct,
// with extra fields.
func impl(prefix string, ct uint32, extra ...Field) Reg {
	f := []Field{
		bits(prefix+"VerMajor", 3, 0, RO, 1),
		bits(prefix+"VerMinor", 7, 4, RO, 0),
		bits(prefix+"CompType", 11, 8, RO, ct),
	}
	return Reg{Name: prefix + "Impl", Offset: 0x004, Fields: append(f, extra...)}
}

// valueRange lists the values lo..hi.
func valueRange(lo, hi uint32) []uint32 {
	v := make([]uint32, 0, hi-lo+1)
	for x := lo; x <= hi; x++ {
		v = append(v, x)
	}
	return v
}
