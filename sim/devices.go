package sim

import "io"

// Device addresses (the layout of Spike and QEMU's virt machine).
const (
	ClintBase = 0x02000000 // CLINT: msip, mtimecmp, mtime
	clintSize = 0x10000
	UARTBase  = 0x10000000 // 16550 UART
	uartSize  = 0x100
)

// clint is the core-local interruptor: msip per hart at +0, mtimecmp per
// hart at +0x4000, mtime at +0xbff8. As on Spike, mtimecmp resets to 0
// (so a timer interrupt is pending as soon as it is enabled) and mtime
// advances by Quantum/TimeDivider at the end of every round of harts.
type clint struct {
	mtime    uint64
	mtimecmp []uint64
	msip     []uint32
}

// uart is a 16550 with no input: writes to THR go to the console.
type uart struct {
	out                          io.Writer
	ier, lcr, mcr, scr, dll, dlm uint8
}

func (m *Machine) devRead(h *Hart, pa, size uint64) (uint64, bool) {
	switch {
	case pa-ClintBase < clintSize:
		return m.clint.read(pa-ClintBase, size)
	case pa-UARTBase < uartSize:
		if size != 1 {
			return 0, false
		}
		return uint64(m.uart.read(pa - UARTBase)), true
	case m.finisher && pa-FinisherBase < finisherSize:
		return 0, true
	case m.trace.has(pa):
		return m.traceRead(pa, size)
	}
	return 0, false
}

func (m *Machine) devWrite(h *Hart, pa, size, v uint64) bool {
	switch {
	case pa-ClintBase < clintSize:
		ok := m.clint.write(pa-ClintBase, size, v)
		h.stop = true // may raise or clear an interrupt
		return ok
	case pa-UARTBase < uartSize:
		if size != 1 {
			return false
		}
		m.uart.write(pa-UARTBase, uint8(v))
		return true
	case m.finisher && pa-FinisherBase < finisherSize:
		m.finisherWrite(h, pa-FinisherBase, v)
		return true
	case m.trace.has(pa):
		return m.traceWrite(h, pa, size, v)
	}
	return false
}

// reg64 reads size bytes at byte offset off of a 64-bit register.
func reg64(r, off, size uint64) uint64 {
	v := r >> (8 * off)
	if size < 8 {
		v &= 1<<(8*size) - 1
	}
	return v
}

func setReg64(r, off, size, v uint64) uint64 {
	mask := ^uint64(0)
	if size < 8 {
		mask = 1<<(8*size) - 1
	}
	mask <<= 8 * off
	return r&^mask | (v<<(8*off))&mask
}

func (c *clint) read(off, size uint64) (uint64, bool) {
	if off&(size-1) != 0 {
		return 0, false
	}
	switch {
	case off < 0x4000:
		i := off / 4
		if i >= uint64(len(c.msip)) || size > 4 {
			return 0, true
		}
		return uint64(c.msip[i]), true
	case off < 0xbff8:
		i := (off - 0x4000) / 8
		if i >= uint64(len(c.mtimecmp)) {
			return 0, true
		}
		return reg64(c.mtimecmp[i], (off-0x4000)%8, size), true
	case off < 0xc000:
		return reg64(c.mtime, off-0xbff8, size), true
	}
	return 0, true
}

func (c *clint) write(off, size, v uint64) bool {
	if off&(size-1) != 0 {
		return false
	}
	switch {
	case off < 0x4000:
		if i := off / 4; i < uint64(len(c.msip)) {
			c.msip[i] = uint32(v) & 1
		}
	case off < 0xbff8:
		if i := (off - 0x4000) / 8; i < uint64(len(c.mtimecmp)) {
			c.mtimecmp[i] = setReg64(c.mtimecmp[i], (off-0x4000)%8, size, v)
		}
	case off < 0xc000:
		c.mtime = setReg64(c.mtime, off-0xbff8, size, v)
	}
	return true
}

func (u *uart) read(off uint64) uint8 {
	switch off {
	case 0:
		if u.lcr&0x80 != 0 {
			return u.dll
		}
		return 0 // no input
	case 1:
		if u.lcr&0x80 != 0 {
			return u.dlm
		}
		return u.ier
	case 2:
		return 0xc1 // IIR: FIFOs enabled, no interrupt pending
	case 3:
		return u.lcr
	case 4:
		return u.mcr
	case 5:
		return 0x60 // LSR: transmitter empty, no data ready
	case 6:
		return 0xb0 // MSR: DCD, DSR, CTS
	case 7:
		return u.scr
	}
	return 0
}

func (u *uart) write(off uint64, v uint8) {
	switch off {
	case 0:
		if u.lcr&0x80 != 0 {
			u.dll = v
		} else if u.out != nil {
			_, _ = u.out.Write([]byte{v})
		}
	case 1:
		if u.lcr&0x80 != 0 {
			u.dlm = v
		} else {
			u.ier = v & 0x0f
		}
	case 3:
		u.lcr = v
	case 4:
		u.mcr = v
	case 7:
		u.scr = v
	}
}
