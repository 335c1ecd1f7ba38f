package tracectl

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// The expected values in these tests are written from the text of the
// RISC-V Trace Control Interface specification, not from the tables of the
// package.

type bus struct {
	t testing.TB
	s *System
}

func (b bus) w(addr uint64, v uint32) {
	b.t.Helper()
	ok, err := b.s.Write32(addr, v)
	if !ok || err != nil {
		b.t.Fatalf("write %#x to %#x: ok=%v err=%v", v, addr, ok, err)
	}
}

func (b bus) r(addr uint64) uint32 {
	b.t.Helper()
	v, ok := b.s.Read32(addr)
	if !ok {
		b.t.Fatalf("read %#x: no register", addr)
	}
	return v
}

func newTestSystem(t testing.TB, harts, sram int) (*System, bus) {
	s, err := NewSystem(harts, nil, sram, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s, bus{t, s}
}

const (
	enc0 = 0x0300_0000
	fun  = 0x0301_8000
	ram  = 0x0301_9000
)

// releaseAll performs the reset sequence of "Reset and Discovery" on every
// component: write 0 to tr??Control, wait for tr??Active = 0, write 1,
// wait for tr??Active = 1.
func releaseAll(t testing.TB, b bus, harts int) {
	t.Helper()
	bases := []uint64{ram, fun}
	for h := 0; h < harts; h++ {
		bases = append(bases, enc0+uint64(h)*0x1000)
	}
	for _, base := range bases {
		b.w(base, 0)
		if b.r(base)&1 != 0 {
			t.Fatalf("%#x: tr??Active still 1 after writing 0", base)
		}
		b.w(base, 1)
		if b.r(base)&1 != 1 {
			t.Fatalf("%#x: tr??Active not 1 after writing 1", base)
		}
	}
}

// specRegs are the register offsets of the specification's register map
// (summary tables) for each component; filters and comparators have up to
// 16 units.
func specEncoderOffsets() map[uint32]bool {
	m := map[uint32]bool{}
	for _, o := range []uint32{0x000, 0x004, 0x008, 0x00C, 0x010, 0x01C, 0x040, 0x048, 0x04C, 0x050, 0x054, 0x058} {
		m[o] = true
	}
	for i := uint32(0); i < 16; i++ {
		for _, o := range []uint32{0x400, 0x404, 0x408, 0x40C, 0x410, 0x414, 0x418} {
			m[o+0x20*i] = true
		}
		for _, o := range []uint32{0x600, 0x610, 0x614, 0x618, 0x61C} {
			m[o+0x20*i] = true
		}
	}
	return m
}

var specFunnelOffsets = map[uint32]bool{0x000: true, 0x004: true, 0x008: true, 0x040: true, 0x048: true, 0x04C: true}
var specRAMOffsets = map[uint32]bool{0x000: true, 0x004: true, 0x010: true, 0x014: true, 0x018: true, 0x01C: true,
	0x020: true, 0x024: true, 0x028: true, 0x02C: true, 0x040: true}

// Only tr??Active and tr??Enable are reset at power-up: every control
// register reads 0 before the tool releases the components.
func TestPowerUp(t *testing.T) {
	_, b := newTestSystem(t, 2, 4096)
	for _, a := range []uint64{enc0, enc0 + 0x1000, fun, ram} {
		if v := b.r(a); v&3 != 0 {
			t.Errorf("%#x: tr??Control = %#x at power-up, want Active = Enable = 0", a, v)
		}
	}
}

// Reset values from the specification's register tables, after writing
// 0x1 to tr??Control ("Trace Components Reset").
func TestResetValues(t *testing.T) {
	_, b := newTestSystem(t, 1, 4096)
	releaseAll(t, b, 1)
	type check struct {
		name      string
		addr      uint64
		mask, val uint32
	}
	for _, c := range []check{
		// trTeControl: trTeActive=1 (written), trTeEnable=0, trTeEmpty=1; reserved 0.
		{"trTeControl Active/Enable/Empty", enc0, 0xB, 0x9},
		{"trTeControl reserved", enc0, 3<<7 | 1<<10 | 1<<14 | 3<<18 | 0x1F<<27, 0},
		// trTeImpl: VerMajor 1, VerMinor 0, CompType 1, 15:12 reserved.
		{"trTeImpl", enc0 + 4, 0xFFFF, 0x0101},
		{"trTsCounterLow", enc0 + 0x48, 0xFFFFFFFF, 0},
		{"trTsCounterHigh", enc0 + 0x4C, 0xFFFFFFFF, 0},
		// trFunnelControl: Active 1, Enable 0, bit 2 reserved, Empty 1, 31:4 reserved.
		{"trFunnelControl", fun, 0xFFFFFFFF, 0x9},
		// trFunnelImpl: 1.0, CompType 8, 23:12 reserved.
		{"trFunnelImpl", fun + 4, 0xFFFFFF, 0x801},
		// trRamControl: Active 1, Enable 0, 2 reserved, Empty 1, 7:5 and 31:15 reserved.
		{"trRamControl", ram, 0xF | 7<<5 | 0x1FFFF<<15, 0x9},
		// trRamImpl: 1.0, CompType 9, 23:14 reserved.
		{"trRamImpl", ram + 4, 0xFFFFFF &^ (3 << 12), 0x901},
		// trRamStartLow/LimitLow/RPLow bits 1:0 are always 0, trRamWPLow bit 1.
		{"trRamStartLow 1:0", ram + 0x10, 3, 0},
		{"trRamLimitLow 1:0", ram + 0x18, 3, 0},
		{"trRamWPLow 1", ram + 0x20, 2, 0},
		{"trRamRPLow 1:0", ram + 0x28, 3, 0},
	} {
		if v := b.r(c.addr); v&c.mask != c.val {
			t.Errorf("%s (%#x) = %#x, want %#x under mask %#x", c.name, c.addr, v&c.mask, c.val, c.mask)
		}
	}
	// This RAM sink has an SRAM only.
	if v := b.r(ram + 4); v>>12&3 != 1 {
		t.Errorf("trRamHasSRAM/HasSMEM = %d, want 1 (SRAM only)", v>>12&3)
	}
	// trTeProtocolMajor/Minor: the version of the protocol trTeFormat selects
	// (N-Trace 1.0, E-Trace 2.0).
	f := b.r(enc0) >> 24 & 7
	want := map[uint32]uint32{0: 0x02, 1: 0x01}[f]
	if v := b.r(enc0+4) >> 16 & 0xFF; v != want {
		t.Errorf("trTeFormat %d: trTeProtocolMinor:Major = %#x, want %#x", f, v, want)
	}
}

// Registers the specification does not define, or this implementation
// does not have, read 0 and ignore writes; reserved bits of defined
// registers read 0.
func TestReservedReadZero(t *testing.T) {
	_, b := newTestSystem(t, 1, 4096)
	releaseAll(t, b, 1)
	for _, c := range []struct {
		base uint64
		regs map[uint32]bool
	}{{enc0, specEncoderOffsets()}, {fun, specFunnelOffsets}, {ram, specRAMOffsets}} {
		for off := uint32(0); off < 0x1000; off += 4 {
			if c.regs[off] {
				continue
			}
			b.w(c.base+uint64(off), 0xFFFFFFFF)
			if v := b.r(c.base + uint64(off)); v != 0 {
				t.Errorf("reserved %#x reads %#x after writing all ones", c.base+uint64(off), v)
			}
		}
	}
	// Reserved bits, from the register tables (the control registers are
	// written with all other bits set but Enable, to keep the component
	// disabled).
	reserved := map[uint64]uint32{
		enc0 + 0x000: 3<<7 | 1<<10 | 1<<14 | 3<<18 | 0x1F<<27,
		enc0 + 0x004: 0xF000,
		enc0 + 0x008: 0x1F << 11,
		enc0 + 0x00C: 0xFFFF0000,
		enc0 + 0x010: 0x1FF<<7 | 0xFFF<<20,
		enc0 + 0x01C: 0xFFFF0000,
		enc0 + 0x040: 1<<7 | 0x1F<<10 | 3<<30,
		fun + 0x000:  1<<2 | 0xFFFFFFF0,
		fun + 0x004:  0xFFF000,
		fun + 0x008:  0xFFFF0000,
		ram + 0x000:  1<<2 | 7<<5 | 0x1FFFF<<15,
		ram + 0x004:  0x3FF << 14,
	}
	for i := uint64(0); i < 16; i++ {
		reserved[enc0+0x400+0x20*i] = 0x7F<<17 | 0x3F<<26
		reserved[enc0+0x404+0x20*i] = 0xFFFFFE00
		reserved[enc0+0x418+0x20*i] = 0xFF000000
		reserved[enc0+0x600+0x20*i] = 1<<7 | 1<<11 | 0xFFFF0000
	}
	for a, m := range reserved {
		v := uint32(0xFFFFFFFF)
		if a == enc0 || a == fun || a == ram {
			v = 0xFFFFFFFF &^ 2
		}
		b.w(a, v)
		if got := b.r(a); got&m != 0 {
			t.Errorf("%#x: reserved bits %#x read %#x", a, m, got&m)
		}
	}
}

func field(v uint32, hi, lo uint) uint32 { return v >> lo & (1<<(hi-lo+1) - 1) }

func setField(v uint32, hi, lo uint, x uint32) uint32 {
	m := uint32(1<<(hi-lo+1)-1) << lo
	return v&^m | x<<lo&m
}

// WARL fields read back what the hardware keeps.
func TestWARL(t *testing.T) {
	_, b := newTestSystem(t, 3, 4096)
	releaseAll(t, b, 3)
	ctl := b.r(enc0)
	// trTeInstMode: "When non-supported mode (different than 0) is set, it
	// cannot revert to 0 but MUST revert to supported non-0 mode"; one of
	// 3 or 6 must be implemented.
	kept := map[uint32]bool{}
	for m := uint32(1); m < 8; m++ {
		b.w(enc0, setField(ctl, 6, 4, m))
		got := field(b.r(enc0), 6, 4)
		if got == 0 {
			t.Errorf("trTeInstMode %d read back as 0", m)
		}
		if got == m {
			kept[m] = true
		}
	}
	if !kept[3] || !kept[6] {
		t.Errorf("trTeInstMode keeps %v, want 3 and 6 (both encoders' modes)", kept)
	}
	// trTeFormat: 0 (E-Trace) and 1 (N-Trace) are implemented; a reserved
	// format reads back as one of them.
	for _, f := range []uint32{0, 1, 7, 3} {
		b.w(enc0, setField(ctl, 26, 24, f))
		got := field(b.r(enc0), 26, 24)
		if f <= 1 && got != f || got > 1 {
			t.Errorf("trTeFormat %d read back as %d", f, got)
		}
	}
	// trTeInstSyncMode: at least one non-zero mechanism; N-Trace has all.
	b.w(enc0, setField(ctl, 26, 24, 1))
	ctl = b.r(enc0)
	for m := uint32(0); m < 4; m++ {
		b.w(enc0, setField(ctl, 17, 16, m))
		if got := field(b.r(enc0), 17, 16); got != m {
			t.Errorf("N-Trace trTeInstSyncMode %d read back as %d", m, got)
		}
	}
	// trTeInstSyncMax: 4 bits.
	b.w(enc0, setField(ctl, 23, 20, 0xF))
	if got := field(b.r(enc0), 23, 20); got != 0xF {
		t.Errorf("trTeInstSyncMax 15 read back as %d", got)
	}
	// trTeInstStallOrOverflow is RW1C: writing 1 does not set it.
	b.w(enc0, ctl|1<<12)
	if b.r(enc0)&(1<<12) != 0 {
		t.Errorf("writing 1 to trTeInstStallOrOverflow set it")
	}
	// trTeSrcBits: 0..12 ("The number of bits in the trace source field
	// (0..12)").
	for _, n := range []uint32{0, 5, 12, 13, 15} {
		b.w(enc0+8, n<<28)
		got := b.r(enc0+8) >> 28
		if n <= 12 && got != n || got > 12 {
			t.Errorf("trTeSrcBits %d read back as %d", n, got)
		}
	}
	b.w(enc0+8, 4<<28|9<<16)
	if got := b.r(enc0+8) >> 16 & 0xFFF; got != 9 {
		t.Errorf("trTeSrcID 9 with 4 SRC bits read back as %d", got)
	}
	// trTeInstFilters: one bit per implemented filter.
	b.w(enc0+0xC, 0xFFFFFFFF)
	if got := b.r(enc0 + 0xC); got == 0 || got > 0xFFFF {
		t.Errorf("trTeInstFilters all ones read back as %#x", got)
	}
	// trTsReset is write-1: it does not read back; trTsWidth is read-only.
	ts := b.r(enc0 + 0x40)
	b.w(enc0+0x40, ts|1<<2|0x3F<<24)
	if got := b.r(enc0 + 0x40); got&(1<<2) != 0 || field(got, 29, 24) != field(ts, 29, 24) {
		t.Errorf("trTsControl %#x after writing trTsReset and trTsWidth (was %#x)", got, ts)
	}
	// tr??Impl is read-only.
	b.w(enc0+4, 0)
	if v := b.r(enc0 + 4); v&0xFFF != 0x101 {
		t.Errorf("trTeImpl changed by a write: %#x", v)
	}
	// trFunnelDisInput: "it can be set to 0xFFFF to detect which inputs
	// may be disabled": three inputs here.
	b.w(fun+8, 0xFFFFFFFF)
	if v := b.r(fun + 8); v != 0x7 {
		t.Errorf("trFunnelDisInput read back %#x, want 0x7 (3 inputs)", v)
	}
	// RAM sink, SRAM mode: "Detection of valid ranges ... by writing 0 and
	// 0xFFFFFFFF. After setting 0, the lowest possible value must be set.
	// After setting 0xFFFFFFFF the highest possible value must be set."
	// trRamStart is 0 in SRAM mode and trRamLimit is at most 2^M - 4.
	b.w(ram+0x10, 0xFFFFFFFF)
	if v := b.r(ram + 0x10); v != 0 {
		t.Errorf("SRAM trRamStartLow = %#x, want 0", v)
	}
	b.w(ram+0x18, 0xFFFFFFFF)
	if v := b.r(ram + 0x18); v != 4096-4 {
		t.Errorf("SRAM trRamLimitLow after 0xFFFFFFFF = %#x, want %#x", v, 4096-4)
	}
	b.w(ram+0x18, 0)
	low := b.r(ram + 0x18)
	if low == 0 || low > 4096-4 || low%4 != 0 {
		t.Errorf("SRAM trRamLimitLow after 0 = %#x", low)
	}
	b.w(ram+0x18, 0xFFFFFFFF)
	// trRamRPLow "must accept any 32-bit aligned value in inclusive range
	// < 0 .. trRamLimitLow >".
	for _, rp := range []uint32{0, 4, 0x800, 4096 - 4} {
		b.w(ram+0x28, rp)
		if v := b.r(ram + 0x28); v != rp {
			t.Errorf("trRamRPLow %#x read back %#x", rp, v)
		}
	}
	// trRamWPLow "must at least accept a write of 0"; bit 0 is trRamWrap.
	b.w(ram+0x20, 0)
	if v := b.r(ram + 0x20); v != 0 {
		t.Errorf("trRamWPLow 0 read back %#x", v)
	}
	// trRamMode: SMEM is not implemented by this sink.
	b.w(ram, 1|1<<4)
	if v := b.r(ram); v>>4&1 != 0 {
		t.Errorf("trRamMode 1 kept by an SRAM-only sink")
	}
}

// Enabling and disabling as the specification sequences them.
func TestEnableSequence(t *testing.T) {
	s, b := newTestSystem(t, 1, 4096)
	// Writing Enable while the component is in reset does not enable it:
	// "When component is held in reset (tr??Active is 0), then tr??Enable
	// bit must be reset to 0 as well".
	b.w(enc0, 2)
	if b.r(enc0)&3 != 0 {
		t.Errorf("trTeEnable set while trTeActive = 0")
	}
	releaseAll(t, b, 1)
	// sink, then funnel, then encoder
	b.w(ram+0x20, 0) // trRamWP = trRamStart
	lim, rp := b.r(ram+0x18), b.r(ram+0x28)
	b.w(ram, 3)
	if b.r(ram)&2 == 0 {
		t.Fatal("trRamEnable does not read 1")
	}
	// "Enabling trace must NOT change any of trRamStart/Size/WP/RP registers."
	if b.r(ram+0x10) != 0 || b.r(ram+0x18) != lim || b.r(ram+0x20) != 0 || b.r(ram+0x28) != rp {
		t.Errorf("enabling the sink changed its addresses")
	}
	// "the trace tool should NOT write any of trRamStart/Limit/WP registers"
	// while enabled: this sink ignores such writes.
	b.w(ram+0x20, 0x40)
	if b.r(ram+0x20) != 0 {
		t.Errorf("trRamWPLow written while the sink is enabled")
	}
	b.w(fun, 3)
	if b.r(fun)&2 == 0 {
		t.Fatal("trFunnelEnable does not read 1")
	}
	ctl := b.r(enc0)
	b.w(enc0, ctl|2)
	if b.r(enc0)&2 == 0 {
		t.Fatalf("trTeEnable does not read 1: %v", s.Encoders[0].Err())
	}
	b.w(enc0, ctl|2|4)
	if b.r(enc0)&4 == 0 {
		t.Fatal("trTeInstTracing does not read 1")
	}
	// disable: encoder, funnel, sink; each reads Enable=0 and Empty=1
	for _, a := range []uint64{enc0, fun, ram} {
		b.w(a, b.r(a)&^2)
		if v := b.r(a); v&2 != 0 || v&8 == 0 {
			t.Errorf("%#x after disabling: %#x, want Enable=0 Empty=1", a, v)
		}
	}
	// reset again: Active and Enable 0
	b.w(enc0, 0)
	if b.r(enc0)&3 != 0 {
		t.Errorf("trTeControl after writing 0: %#x", b.r(enc0))
	}
}

// The dump lists every register of the tables once.
func TestDump(t *testing.T) {
	s, b := newTestSystem(t, 2, 4096)
	releaseAll(t, b, 2)
	var out bytes.Buffer
	if err := s.Dump(&out); err != nil {
		t.Fatal(err)
	}
	e, f, r := Registers()
	if n, want := strings.Count(out.String(), "\n"), 2*len(e)+len(f)+len(r); n != want {
		t.Errorf("dump has %d lines, want %d", n, want)
	}
	for _, want := range []string{
		fmt.Sprintf("%#010x trTeImpl", enc0+0x1004),
		fmt.Sprintf("%#010x trFunnelImpl", fun+4),
		fmt.Sprintf("%#010x trRamData", ram+0x40),
		"trTeInstMode=0x6",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dump lacks %q", want)
		}
	}
}

// Filter and comparator registers: writing all ones keeps every field of
// the specification's tables that this encoder implements (data trace
// fields and the daddr comparator input are tied to 0, the secondary
// comparator's mask function 6 is not kept).
func TestFilterComparatorWARL(t *testing.T) {
	_, b := newTestSystem(t, 1, 4096)
	releaseAll(t, b, 1)
	for i := uint64(0); i < NumFilters; i++ {
		base := uint64(enc0 + 0x400 + 0x20*i)
		for off, want := range map[uint64]uint32{
			0x00: 0x1FFFF,    // trTeFilterEnable .. trTeFilterMatchImpdef (bits 16:0); Dtype/Dsize 0
			0x04: 0x1FF,      // privileges 7:0, interrupt value 8
			0x08: 0xFFFFFFFF, // ecause 31:0
			0x0C: 0xFFFFFFFF, // ecause 63:32
			0x10: 0xFFFFFFFF, // impdef value
			0x14: 0xFFFFFFFF, // impdef mask
			0x18: 0,          // data match: no data trace
			0x1C: 0,          // reserved
		} {
			b.w(base+off, 0xFFFFFFFF)
			if v := b.r(base + off); v != want {
				t.Errorf("filter %d +%#x: all ones read back %#x, want %#x", i, off, v, want)
			}
		}
	}
	for j := uint64(0); j < NumComparators; j++ {
		base := uint64(enc0 + 0x600 + 0x20*j)
		for off, want := range map[uint64]uint32{
			// PInput/SInput 3 (daddr) not kept: 0; PFunction 7, SFunction 7,
			// MatchMode 3, PNotify, SNotify
			0x00: 7<<4 | 7<<8 | 3<<12 | 1<<14 | 1<<15,
			0x04: 0, 0x08: 0, 0x0C: 0, // reserved
			0x10: 0xFFFFFFFF, 0x14: 0xFFFFFFFF, 0x18: 0xFFFFFFFF, 0x1C: 0xFFFFFFFF,
		} {
			b.w(base+off, 0xFFFFFFFF)
			if v := b.r(base + off); v != want {
				t.Errorf("comparator %d +%#x: all ones read back %#x, want %#x", j, off, v, want)
			}
		}
	}
	// Units beyond the implemented ones read 0.
	b.w(enc0+0x400+0x20*NumFilters, 1)
	b.w(enc0+0x600+0x20*NumComparators, 0x70)
	if b.r(enc0+0x400+0x20*NumFilters) != 0 || b.r(enc0+0x600+0x20*NumComparators) != 0 {
		t.Error("an unimplemented filter or comparator keeps a write")
	}
}

// trTeInstFeatures with N-Trace: the N-Trace features are kept (sequential
// jump, implicit return, repeated history, all jumps, ExtendAddrMSB) and
// the E-Trace-only ones read 0; trTeSrcBits 15 is not kept, and neither is
// a trTeSrcID that does not fit.
func TestFeaturesNTrace(t *testing.T) {
	_, b := newTestSystem(t, 1, 4096)
	releaseAll(t, b, 1)
	b.w(enc0, 1|6<<4|1<<24)
	b.w(enc0+8, 0xFFFFFFFF)
	if v := b.r(enc0 + 8); v != 1<<2|1<<3|3<<6|1<<8|1<<9|1<<10 {
		t.Errorf("trTeInstFeatures all ones read back %#x", v)
	}
	// the implicit return mode 0 ("not reporting") is not kept either
	b.w(enc0+8, 1<<3|0<<6)
	if v := b.r(enc0+8) >> 6 & 3; v == 0 {
		t.Errorf("trTeInstImplicitReturnMode 0 kept")
	}
}
