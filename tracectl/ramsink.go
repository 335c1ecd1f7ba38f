package tracectl

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Memory is the system memory an SMEM-mode RAM sink writes into and a
// trace tool reads back, addressed by physical address.
type Memory interface {
	io.ReaderAt
	io.WriterAt
}

// RAM sink modes (trRamMode).
const (
	ModeSRAM = 0
	ModeSMEM = 1
)

// MaxCapture bounds the size of a capture read from system memory.
const MaxCapture = 1 << 30

// MinSRAM is the smallest SRAM buffer (and the smallest trRamLimitLow + 4
// the SRAM mode accepts).
const MinSRAM = 64

// RAMSink is the trace RAM sink: a circular buffer in its own SRAM (read
// through trRamRPLow/trRamData) or in system memory between trRamStart
// and trRamLimit (SMEM). Trace is stored in 32-bit words, first byte in
// the least significant byte; the bytes of an incomplete word wait inside
// the sink (trRamEmpty = 0) until it is full or the sink is disabled,
// which pads it with Pad bytes.
type RAMSink struct {
	b    bank
	sram []byte
	mem  Memory
	// Pad fills the last word when the sink is disabled with an
	// incomplete word: 0xFF, N-Trace's idle byte, by default (a System
	// sets it to IdleByte of the format enabled).
	Pad byte

	word        [4]byte
	nword       int
	err         error  // error of the system memory
	overwritten uint64 // bytes stored over older trace since trRamWrap was set

	drainW    io.Writer // DrainTo's writer, or nil
	drainFrom uint64    // oldest byte not yet drained
	drainOn   bool      // the sink was enabled since drainFrom was set
	drained   int64
	wraps     int
}

// NewRAMSink returns a RAM sink held in reset. sramBytes (a multiple of 4,
// at least MinSRAM, or 0) is the size of its SRAM; mem, when not nil, is
// the system memory of the SMEM mode. At least one must be given.
func NewRAMSink(sramBytes int, mem Memory) *RAMSink {
	if sramBytes != 0 && (sramBytes < MinSRAM || sramBytes%4 != 0) || sramBytes == 0 && mem == nil {
		panic("tracectl: bad RAM sink configuration")
	}
	regs := append([]Reg(nil), ramRegs...)
	for i := range regs {
		regs[i].Fields = append([]Field(nil), regs[i].Fields...)
	}
	hasSRAM, hasSMEM := uint32(0), uint32(0)
	var modes []uint32
	if sramBytes > 0 {
		hasSRAM = 1
		modes = append(modes, ModeSRAM)
	}
	if mem != nil {
		hasSMEM = 1
		modes = append(modes, ModeSMEM)
	}
	set := func(reg, field string, f func(*Field)) {
		for i := range regs {
			if regs[i].Name == reg {
				f(regs[i].Field(field))
				return
			}
		}
	}
	set("trRamImpl", "trRamHasSRAM", func(f *Field) { f.Reset = hasSRAM })
	set("trRamImpl", "trRamHasSMEM", func(f *Field) { f.Reset = hasSMEM })
	set("trRamControl", "trRamMode", func(f *Field) { f.Legal = modes; f.Reset = modes[0] })
	if sramBytes > 0 {
		set("trRamLimitLow", "trRamLimitLow", func(f *Field) { f.Reset = uint32(sramBytes-4) >> 2 })
	}
	s := &RAMSink{b: newBank(regs), mem: mem, Pad: RAMPadDefault}
	if sramBytes > 0 {
		s.sram = make([]byte, sramBytes)
	}
	return s
}

// Err returns the first error writing system memory or draining the
// buffer (DrainTo), if any.
func (s *RAMSink) Err() error { return s.err }

func (s *RAMSink) active() bool  { return s.b.val[0]&1 != 0 }
func (s *RAMSink) enabled() bool { return s.b.val[0]&2 != 0 }
func (s *RAMSink) mode() uint32  { return s.b.field(RAMControl, "trRamMode") }

// addr returns the 64-bit address held in a Low/High register pair.
func (s *RAMSink) addr(low uint32) uint64 {
	return uint64(s.b.read(low+4))<<32 | uint64(s.b.read(low)&^3)
}

// setAddr stores a into a Low/High pair, keeping the low register's bits
// 1:0 (trRamWrap for the write pointer).
func (s *RAMSink) setAddr(low uint32, a uint64) {
	i, j := s.b.reg(low), s.b.reg(low+4)
	s.b.val[i] = s.b.val[i]&3 | uint32(a)&^3
	s.b.val[j] = uint32(a >> 32)
}

// Start returns trRamStart.
func (s *RAMSink) Start() uint64 { return s.addr(RAMStartLow) }

// Limit returns trRamLimit.
func (s *RAMSink) Limit() uint64 { return s.addr(RAMLimitLow) }

// WP returns trRamWP.
func (s *RAMSink) WP() uint64 { return s.addr(RAMWPLow) }

// Wrapped returns trRamWrap.
func (s *RAMSink) Wrapped() bool { return s.b.val[s.b.reg(RAMWPLow)]&1 != 0 }

func (s *RAMSink) setWrap(w bool) { i := s.b.reg(RAMWPLow); s.b.val[i] = s.b.val[i]&^1 | b2u(w) }

func b2u(b bool) uint32 {
	if b {
		return 1
	}
	return 0
}

// ReadReg returns the register at byte offset off. Reading trRamData in SRAM
// mode returns the word at trRamRP and advances trRamRP (to trRamStart
// after trRamLimit).
func (s *RAMSink) ReadReg(off uint32) uint32 {
	if off != RAMControl && !s.active() {
		return 0
	}
	s.b.setField(RAMControl, "trRamEmpty", b2u(s.nword == 0))
	if off == RAMData {
		if s.mode() != ModeSRAM {
			return 0
		}
		rp := s.addr(RAMRPLow)
		v := binary.LittleEndian.Uint32(s.sram[rp:])
		if rp >= s.Limit() {
			rp = s.Start()
		} else {
			rp += 4
		}
		s.setAddr(RAMRPLow, rp)
		return v
	}
	return s.b.read(off)
}

// WriteReg writes the register at byte offset off. Disabling the sink
// (trRamEnable 1 -> 0) flushes an incomplete word.
func (s *RAMSink) WriteReg(off, v uint32) {
	active := s.active()
	switch {
	case off == RAMControl && v&1 == 0:
		s.flush()
		s.drainPending()
		s.b.reset()
		s.nword = 0
		s.overwritten = 0
		return
	case off == RAMControl && !active:
		s.b.reset()
		s.b.val[0] |= 1
		s.legalize()
		s.overwritten = 0
		return
	case !active:
		return
	case s.enabled() && off >= RAMStartLow && off <= RAMWPHigh:
		// the buffer's addresses cannot change while trace is stored
		return
	}
	wasEnabled := s.enabled()
	old, _, ok := s.b.write(off, v)
	if !ok {
		return
	}
	switch off {
	case RAMStartLow, RAMStartHigh, RAMLimitLow, RAMLimitHigh, RAMControl:
		s.legalize()
	case RAMWPLow, RAMWPHigh, RAMRPLow, RAMRPHigh:
		s.legalizePointer(off&^4, off, old)
	}
	if !s.Wrapped() {
		s.overwritten = 0 // the tool cleared trRamWrap
	}
	if wasEnabled && !s.enabled() {
		s.flush()
		s.drainPending()
	}
	if !wasEnabled && s.enabled() {
		s.drainFrom, s.drainOn = s.WP(), true
	}
	s.b.setField(RAMControl, "trRamEmpty", b2u(s.nword == 0))
}

// legalize makes the addresses legal for the mode: in SRAM mode
// trRamStart is 0 and trRamLimit is trimmed to MinSRAM-4 .. size-4; in
// SMEM mode the limit is at least the start. The pointers are then brought
// into the buffer.
func (s *RAMSink) legalize() {
	if s.mode() == ModeSRAM {
		s.setAddr(RAMStartLow, 0)
		lim := s.Limit()
		lim = min(max(lim, MinSRAM-4), uint64(len(s.sram)-4))
		s.setAddr(RAMLimitLow, lim)
	} else if s.Limit() < s.Start() {
		s.setAddr(RAMLimitLow, s.Start())
	}
	for _, low := range []uint32{RAMWPLow, RAMRPLow} {
		if p := s.addr(low); p < s.Start() || p > s.Limit() {
			s.setAddr(low, s.Start())
		}
	}
	if s.mode() == ModeSMEM {
		s.setAddr(RAMRPLow, 0) // no read-back path in SMEM mode
	}
}

// legalizePointer keeps the old value of a pointer written outside the
// buffer (trRamRP has no meaning in SMEM mode and stays 0).
func (s *RAMSink) legalizePointer(low, off, old uint32) {
	if low == RAMRPLow && s.mode() == ModeSMEM {
		s.setAddr(RAMRPLow, 0)
		return
	}
	if p := s.addr(low); p < s.Start() || p > s.Limit() {
		s.b.val[s.b.reg(off)] = old
	}
}

// Write stores p in the buffer when the sink is active and enabled. When
// the sink stops on wrap, the bytes after the buffer is full are lost and
// ErrDropped is returned, as it is when the sink is not enabled.
func (s *RAMSink) Write(p []byte) (int, error) {
	for i, c := range p {
		if !s.active() || !s.enabled() {
			return i, ErrDropped
		}
		s.word[s.nword] = c
		s.nword++
		if s.nword == 4 {
			s.store()
		}
	}
	return len(p), nil
}

// store writes the complete word at trRamWP and advances the pointer.
func (s *RAMSink) store() {
	wp := s.WP()
	if s.mode() == ModeSRAM {
		copy(s.sram[wp:], s.word[:])
	} else if _, err := s.mem.WriteAt(s.word[:], int64(wp)); err != nil && s.err == nil {
		s.err = fmt.Errorf("trace RAM sink: writing system memory at %#x: %w", wp, err)
	}
	s.nword = 0
	if s.Wrapped() {
		s.overwritten += 4
	}
	if wp >= s.Limit() {
		s.wraps++
		if s.drainW != nil && s.drainOn {
			s.drain(s.drainFrom, wp+4)
			s.drainFrom = s.Start()
		}
		s.setAddr(RAMWPLow, s.Start())
		s.setWrap(true)
		if s.b.field(RAMControl, "trRamStopOnWrap") == 1 {
			s.b.setField(RAMControl, "trRamEnable", 0)
		}
		return
	}
	s.setAddr(RAMWPLow, wp+4)
}

// flush pads and stores an incomplete word.
func (s *RAMSink) flush() {
	if s.nword == 0 || !s.active() {
		return
	}
	for s.nword < 4 {
		s.word[s.nword] = s.Pad
		s.nword++
	}
	s.store()
}

// Overwritten returns the number of bytes of trace the sink stored over
// older trace since trRamWrap was last set by a wrap: the bytes a capture
// of the buffer has lost. A host reading it knows only trRamWrap; the
// simulator counts.
func (s *RAMSink) Overwritten() uint64 { return s.overwritten }

// Wraps returns how many times the write pointer wrapped since the sink
// was created.
func (s *RAMSink) Wraps() int { return s.wraps }

// DrainTo makes the sink copy everything it stores to w, oldest byte
// first, as a debugger that empties the buffer each time it wraps would:
// the whole buffer at each wrap (before any of it is overwritten), and
// what was stored since the last wrap when the sink is disabled or reset.
// Nothing is lost, however small the buffer. Drained returns the bytes
// written and the first error.
func (s *RAMSink) DrainTo(w io.Writer) {
	s.drainW = w
	s.drainFrom, s.drainOn = s.WP(), s.enabled()
}

// Drained returns the number of bytes DrainTo's writer took and the first
// error reading the buffer or writing them.
func (s *RAMSink) Drained() (int64, error) { return s.drained, s.err }

// drainPending drains what was stored since the last drain (the sink is
// being disabled or reset).
func (s *RAMSink) drainPending() {
	if s.drainW == nil || !s.drainOn || !s.active() {
		return
	}
	if wp := s.WP(); wp > s.drainFrom {
		s.drain(s.drainFrom, wp)
	}
	s.drainFrom, s.drainOn = s.WP(), false
}

// drain writes the buffer's bytes from..to-1 to the drain writer.
func (s *RAMSink) drain(from, to uint64) {
	if s.err != nil || to <= from {
		return
	}
	var b []byte
	if s.mode() == ModeSRAM {
		b = s.sram[from:to]
	} else {
		var err error
		if b, err = readMem(s.mem, from, to-from); err != nil {
			s.err = fmt.Errorf("trace RAM sink: draining: %w", err)
			return
		}
	}
	n, err := s.drainW.Write(b)
	s.drained += int64(n)
	if err != nil {
		s.err = fmt.Errorf("trace RAM sink: draining: %w", err)
	}
}

// Capture returns the trace held in the buffer, oldest byte first: from
// trRamWP to the end and from the start to trRamWP when the buffer
// wrapped, else from the start to trRamWP.
func (s *RAMSink) Capture() ([]byte, error) {
	start, lim, wp := s.Start(), s.Limit(), s.WP()
	if lim-start >= MaxCapture {
		return nil, fmt.Errorf("trace RAM sink: a buffer of %#x bytes is larger than the %#x bytes a capture may have", lim-start+4, uint64(MaxCapture))
	}
	read := func(from, to uint64) ([]byte, error) {
		if s.mode() == ModeSRAM {
			return append([]byte(nil), s.sram[from:to]...), nil
		}
		b, err := readMem(s.mem, from, to-from)
		if err != nil {
			return nil, fmt.Errorf("trace RAM sink: %w", err)
		}
		return b, nil
	}
	if !s.Wrapped() {
		return read(start, wp)
	}
	a, err := read(wp, lim+4)
	if err != nil {
		return nil, err
	}
	b, err := read(start, wp)
	if err != nil {
		return nil, err
	}
	return append(a, b...), nil
}

// Dump writes every register, as mapped at base.
func (s *RAMSink) Dump(w io.Writer, base uint64) error { return s.b.dump(w, base) }
