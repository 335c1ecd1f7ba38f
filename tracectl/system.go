package tracectl

import (
	"fmt"
	"io"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// Base addresses of the trace components in the physical address map.
const (
	EncoderBase = 0x0300_0000 // encoder of hart N at EncoderBase + N*ComponentSize
	FunnelBase  = 0x0301_8000
	RAMSinkBase = 0x0301_9000
	// MapEnd is the end of the trace components' address range.
	MapEnd = RAMSinkBase + ComponentSize
	// MaxHarts is the number of harts whose encoders the map holds below
	// the funnel (and the funnel has inputs for).
	MaxHarts = MaxInputs
)

// System is the trace system of a machine: one encoder per hart, a
// funnel whose input N is hart N's encoder, and a RAM sink, at the
// addresses of the constants above.
type System struct {
	Encoders []*Encoder
	Funnel   *Funnel
	Sink     *RAMSink
	base     uint64 // where the encoder of hart 0 is (EncoderBase unless moved by SetBase)
	tap      *tap   // SetTap
}

// NewSystem returns the trace components of harts harts (1..MaxHarts),
// every one held in reset. img is the program image (needed by E-Trace);
// sramBytes and mem configure the RAM sink (see NewRAMSink).
func NewSystem(harts int, img *image.Set, sramBytes int, mem Memory) (*System, error) {
	if harts < 1 || harts > MaxHarts {
		return nil, fmt.Errorf("trace system: %d harts (1..%d)", harts, MaxHarts)
	}
	if sramBytes != 0 && (sramBytes < MinSRAM || sramBytes%4 != 0) || sramBytes == 0 && mem == nil {
		return nil, fmt.Errorf("trace system: the RAM sink needs an SRAM of at least %d bytes (a multiple of 4) or system memory", MinSRAM)
	}
	s := &System{Sink: NewRAMSink(sramBytes, mem), base: EncoderBase}
	s.Funnel = NewFunnel(harts, s.Sink)
	for h := 0; h < harts; h++ {
		e := NewEncoder(img, s.Funnel.Input(h))
		// the sink pads its last word with the idle byte of the format
		// enabled last (one stream holds one format)
		e.onEnable = func(format int) { s.Sink.Pad = IdleByte(format) }
		e.shared = s.Funnel
		e.refresh()
		s.Encoders = append(s.Encoders, e)
	}
	return s, nil
}

// Sinks returns the encoders as ingress sinks, hart by hart (for
// sim.Machine.AttachTrace).
func (s *System) Sinks() []ingress.Sink {
	out := make([]ingress.Sink, len(s.Encoders))
	for i, e := range s.Encoders {
		out[i] = e
	}
	return out
}

// Contains reports whether addr is inside the trace components' range at
// its default place (EncoderBase..MapEnd).
func Contains(addr uint64) bool { return addr >= EncoderBase && addr < MapEnd }

// MapSize is the size of the trace components' address range.
const MapSize = MapEnd - EncoderBase

// SetBase moves the trace components: the encoder of hart N to base +
// N*ComponentSize, the funnel to base + (FunnelBase - EncoderBase), the
// RAM sink to base + (RAMSinkBase - EncoderBase). base must be aligned to
// ComponentSize.
func (s *System) SetBase(base uint64) error {
	if base%ComponentSize != 0 || base+MapSize < base {
		return fmt.Errorf("trace system: base %#x is not a multiple of %#x below 2^64-%#x", base, ComponentSize, uint64(MapSize))
	}
	s.base = base
	return nil
}

// Base returns the address of the encoder of hart 0, the start of the
// trace components' range.
func (s *System) Base() uint64 { return s.base }

// End returns the end of the trace components' range.
func (s *System) End() uint64 { return s.base + MapSize }

// EncoderAddr returns the address of the encoder of hart h.
func (s *System) EncoderAddr(h int) uint64 { return s.base + uint64(h)*ComponentSize }

// FunnelAddr returns the address of the funnel.
func (s *System) FunnelAddr() uint64 { return s.base + FunnelBase - EncoderBase }

// SinkAddr returns the address of the RAM sink.
func (s *System) SinkAddr() uint64 { return s.base + RAMSinkBase - EncoderBase }

// component returns the register reader and writer at addr.
func (s *System) component(addr uint64) (read func(uint32) uint32, write func(uint32, uint32) error, off uint32, ok bool) {
	if addr < s.base || addr >= s.End() {
		return nil, nil, 0, false
	}
	off = uint32(addr % ComponentSize)
	base := addr - uint64(off)
	switch {
	case base == s.FunnelAddr():
		return s.Funnel.ReadReg, func(o, v uint32) error { s.Funnel.WriteReg(o, v); return nil }, off, true
	case base == s.SinkAddr():
		return s.Sink.ReadReg, func(o, v uint32) error { s.Sink.WriteReg(o, v); return nil }, off, true
	}
	if h := int((base - s.base) / ComponentSize); h < len(s.Encoders) {
		return s.Encoders[h].ReadReg, s.Encoders[h].WriteReg, off, true
	}
	// an unpopulated slot: reads 0, ignores writes
	return func(uint32) uint32 { return 0 }, func(uint32, uint32) error { return nil }, off, true
}

// Read32 reads the 32-bit register at addr. ok is false outside the trace
// components' range or for an unaligned address.
func (s *System) Read32(addr uint64) (v uint32, ok bool) {
	read, _, off, ok := s.component(addr)
	if !ok || off%4 != 0 {
		return 0, false
	}
	return read(off), true
}

// Write32 writes the 32-bit register at addr. ok is false outside the
// trace components' range or for an unaligned address; err is an
// encoder's error when the write flushes or starts it.
func (s *System) Write32(addr uint64, v uint32) (ok bool, err error) {
	_, write, off, ok := s.component(addr)
	if !ok || off%4 != 0 {
		return false, nil
	}
	return true, write(off, v)
}

// Dump writes the registers of every component.
func (s *System) Dump(w io.Writer) error {
	for h, e := range s.Encoders {
		if err := e.Dump(w, s.EncoderAddr(h)); err != nil {
			return err
		}
	}
	if err := s.Funnel.Dump(w, s.FunnelAddr()); err != nil {
		return err
	}
	return s.Sink.Dump(w, s.SinkAddr())
}

// Bus is register access as a trace tool has it (through the debug
// module's system bus access, or a hart's loads and stores).
type Bus interface {
	Read32(addr uint64) (uint32, bool)
	Write32(addr uint64, v uint32) (bool, error)
}

// ReadTrace reads the trace a RAM sink at base holds, oldest byte first,
// the way the specification's "Enabling and Disabling" section tells a
// tool to: it reads trRamWP and trRamWrap, then in SRAM mode sets trRamRP
// and reads trRamData word by word, and in SMEM mode reads the buffer from
// mem. The sink should have been disabled first.
func ReadTrace(bus Bus, base uint64, mem io.ReaderAt) ([]byte, error) {
	rd := func(off uint32) (uint32, error) {
		v, ok := bus.Read32(base + uint64(off))
		if !ok {
			return 0, fmt.Errorf("trace RAM sink: no register at %#x", base+uint64(off))
		}
		return v, nil
	}
	var regs [8]uint32
	for i, off := range []uint32{RAMControl, RAMImpl, RAMStartLow, RAMStartHigh, RAMLimitLow, RAMLimitHigh, RAMWPLow, RAMWPHigh} {
		v, err := rd(off)
		if err != nil {
			return nil, err
		}
		regs[i] = v
	}
	if ct := regs[1] >> 8 & 0xF; ct != CompRAMSink {
		return nil, fmt.Errorf("trace RAM sink at %#x: trRamCompType is %#x, not %#x", base, ct, CompRAMSink)
	}
	if regs[0]&1 == 0 {
		return nil, fmt.Errorf("trace RAM sink at %#x is in reset (trRamActive = 0)", base)
	}
	start := uint64(regs[3])<<32 | uint64(regs[2]&^3)
	limit := uint64(regs[5])<<32 | uint64(regs[4]&^3)
	wp := uint64(regs[7])<<32 | uint64(regs[6]&^3)
	wrapped := regs[6]&1 != 0
	from, n := start, wp-start
	if wrapped {
		from, n = wp, limit+4-start
	}
	if limit < start || wp < start || wp > limit {
		return nil, fmt.Errorf("trace RAM sink at %#x: inconsistent trRamStart %#x, trRamLimit %#x, trRamWP %#x", base, start, limit, wp)
	}
	if n > MaxCapture {
		return nil, fmt.Errorf("trace RAM sink at %#x: a buffer of %#x bytes is larger than the %#x bytes a capture may have", base, n, uint64(MaxCapture))
	}
	if regs[0]>>4&1 == ModeSMEM {
		if mem == nil {
			return nil, fmt.Errorf("trace RAM sink at %#x is in SMEM mode: the system memory is needed", base)
		}
		if !wrapped {
			return readMem(mem, start, n)
		}
		a, err := readMem(mem, wp, limit+4-wp)
		if err != nil {
			return nil, err
		}
		b, err := readMem(mem, start, wp-start)
		if err != nil {
			return nil, err
		}
		return append(a, b...), nil
	}
	if _, err := bus.Write32(base+RAMRPHigh, uint32(from>>32)); err != nil {
		return nil, err
	}
	if _, err := bus.Write32(base+RAMRPLow, uint32(from)); err != nil {
		return nil, err
	}
	if rp, err := rd(RAMRPLow); err != nil {
		return nil, err
	} else if uint64(rp&^3) != from&0xFFFFFFFF {
		return nil, fmt.Errorf("trace RAM sink at %#x: trRamRPLow reads %#x after writing %#x", base, rp, uint32(from))
	}
	out := make([]byte, 0, n)
	for i := uint64(0); i < n; i += 4 {
		w, err := rd(RAMData)
		if err != nil {
			return nil, err
		}
		out = append(out, byte(w), byte(w>>8), byte(w>>16), byte(w>>24))
	}
	return out, nil
}

// readMem reads n bytes of system memory at addr, in chunks, so that a
// buffer outside the memory fails before much is allocated.
func readMem(mem io.ReaderAt, addr, n uint64) ([]byte, error) {
	const chunk = 64 << 10
	var out []byte
	for n > 0 {
		k := min(n, chunk)
		out = append(out, make([]byte, k)...)
		if _, err := mem.ReadAt(out[uint64(len(out))-k:], int64(addr)); err != nil {
			return nil, fmt.Errorf("reading the trace at %#x: %w", addr, err)
		}
		addr += k
		n -= k
	}
	return out, nil
}

// SetTap sends the funnel's output to w as well as to the RAM sink, as a
// trace tap on the funnel's output port would: w receives every byte the
// funnel passes on (each encoder write whole, in the order the funnel
// interleaves them), whether the sink takes it or not, and nothing the
// funnel drops (funnel disabled; a disabled input's bytes are discarded).
// w's first write error is kept (TapErr) and later bytes are not written
// to it; the sink is not affected.
func (s *System) SetTap(w io.Writer) {
	s.tap = &tap{sink: s.Sink, w: w}
	s.Funnel.out = s.tap
}

// TapErr returns the first error writing to the writer of SetTap.
func (s *System) TapErr() error {
	if s.tap == nil {
		return nil
	}
	return s.tap.err
}

// tap writes the funnel's output to the sink and to a second writer.
type tap struct {
	sink io.Writer
	w    io.Writer
	err  error
}

func (t *tap) Write(p []byte) (int, error) {
	if t.err == nil {
		if _, err := t.w.Write(p); err != nil {
			t.err = err
		}
	}
	return t.sink.Write(p)
}
