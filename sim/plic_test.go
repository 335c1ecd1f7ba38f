package sim

import (
	"bytes"
	"testing"
)

// TestUARTInterrupts follows the 16550 datasheet's interrupt rules: IIR
// reads 0xc1 (FIFOs on, none pending) until IER enables one; enabling
// ETBEI with the transmitter empty raises THRE (IIR 0xc2), which reading
// IIR acknowledges and writing THR raises again; received data (IIR
// 0xc4, LSR.DR) outranks THRE and lasts until RBR is read. The line
// reaches the PLIC, which raises SEIP on the S-mode context that enables
// source 10 above its threshold; claim returns 10, and the source pends
// again after completion only while the line is still high.
func TestUARTInterrupts(t *testing.T) {
	var out bytes.Buffer
	m, err := New(Config{Stdout: &out})
	if err != nil {
		t.Fatal(err)
	}
	m.createHarts(64)
	m.plic.init(1)
	h := m.harts[0]
	rd := func(pa uint64, size uint64) uint64 {
		v, ok := m.devRead(h, pa, size)
		if !ok {
			t.Fatalf("read %#x failed", pa)
		}
		return v
	}
	wr := func(pa, size, v uint64) {
		if !m.devWrite(h, pa, size, v) {
			t.Fatalf("write %#x failed", pa)
		}
	}
	const iir, ier, lsr = UARTBase + 2, UARTBase + 1, UARTBase + 5
	// PLIC: priority 1 for source 10, enabled on context 1 (S), threshold 0
	wr(PLICBase+4*irqUART, 4, 1)
	wr(PLICBase+plicEnable+plicEnableCtx, 4, 1<<irqUART)
	seip := func() bool { return h.pendingInterrupts()&(1<<irqSEI) != 0 }
	if got := rd(iir, 1); got != 0xc1 || seip() {
		t.Fatalf("idle IIR %#x, SEIP %v", got, seip())
	}
	wr(ier, 1, 2) // ETBEI
	if !seip() || h.pendingInterrupts()&(1<<irqMEI) != 0 {
		t.Fatalf("THRE did not raise SEIP alone (mip %#x)", h.pendingInterrupts())
	}
	if got := rd(iir, 1); got != 0xc2 {
		t.Fatalf("IIR %#x, want 0xc2 (THRE)", got)
	}
	if got := rd(iir, 1); got != 0xc1 || seip() {
		t.Fatalf("after reading IIR: %#x, SEIP %v; want THRE acknowledged", got, seip())
	}
	wr(UARTBase, 1, 'x')
	if out.String() != "x" || rd(iir, 1) != 0xc2 {
		t.Fatalf("THR write: output %q, no new THRE", out.String())
	}
	// input
	m.uart.rx = append(m.uart.rx, 'a')
	wr(ier, 1, 3) // ERBFI | ETBEI
	if got := rd(iir, 1); got != 0xc4 || rd(lsr, 1)&1 == 0 {
		t.Fatalf("IIR %#x, LSR %#x with data; want 0xc4 and DR", got, rd(lsr, 1))
	}
	// claim while the line is high
	if id := rd(PLICBase+plicContext+plicCtxStride+4, 4); id != irqUART {
		t.Fatalf("claim %d, want %d", id, irqUART)
	}
	if seip() {
		t.Fatalf("SEIP still set while the source is claimed")
	}
	if got := rd(UARTBase, 1); got != 'a' {
		t.Fatalf("RBR %#x, want %#x", got, 'a')
	}
	if rd(lsr, 1)&1 != 0 {
		t.Fatalf("DR still set after the FIFO emptied")
	}
	wr(ier, 1, 1) // ERBFI only: the line drops
	wr(PLICBase+plicContext+plicCtxStride+4, 4, irqUART)
	if seip() {
		t.Fatalf("source pends after completion with its line low")
	}
	m.uart.rx = append(m.uart.rx, 'b')
	m.uartLine(h)
	if !seip() {
		t.Fatalf("new input did not raise SEIP")
	}
	wr(PLICBase+plicContext+plicCtxStride, 4, 1) // threshold 1 masks priority 1
	if seip() {
		t.Fatalf("SEIP with the priority at the threshold")
	}
}
