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

// uart is a 16550: writes to THR go to the console, input comes from
// Config.Stdin one byte at a time (the receive FIFO holds what the guest
// has not read; the host feeds the next byte when it is empty, so piped
// input arrives as if typed). Its interrupt (source irqUART of the PLIC)
// is high while received data is available with IER.ERBFI set, or the
// transmitter is empty with IER.ETBEI set and the THRE interrupt not yet
// acknowledged (by reading IIR or writing THR).
type uart struct {
	out                          io.Writer
	ier, lcr, mcr, scr, dll, dlm uint8
	rx                           []byte // receive FIFO
	thre                         bool   // THRE interrupt pending
}

func (m *Machine) devRead(h *Hart, pa, size uint64) (uint64, bool) {
	switch {
	case pa-ClintBase < clintSize:
		return m.clint.read(pa-ClintBase, size)
	case pa-UARTBase < uartSize:
		if size != 1 {
			return 0, false
		}
		v := m.uart.read(pa - UARTBase)
		m.uartLine(h)
		return uint64(v), true
	case m.plic.eip != nil && pa-PLICBase < plicSize:
		if size != 4 || pa&3 != 0 {
			return 0, false
		}
		v := m.plic.read(pa - PLICBase)
		h.stop = true // a claim may lower the hart's line
		return uint64(v), true
	case m.virtio != nil && pa-VirtioBase < virtioSize:
		return m.virtioRead(pa-VirtioBase, size)
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
		m.uartLine(h)
		return true
	case m.plic.eip != nil && pa-PLICBase < plicSize:
		if size != 4 || pa&3 != 0 {
			return false
		}
		m.plic.write(pa-PLICBase, uint32(v))
		h.stop = true
		return true
	case m.virtio != nil && pa-VirtioBase < virtioSize:
		ok := m.virtioWrite(h, pa-VirtioBase, size, v)
		h.stop = true
		return ok
	case m.finisher && pa-FinisherBase < finisherSize:
		m.finisherWrite(h, pa-FinisherBase, v)
		return true
	case m.trace.has(pa):
		return m.traceWrite(h, pa, size, v)
	}
	return false
}

// uartLine passes the UART's interrupt line to the PLIC (h: the hart
// whose access changed it, which then checks its interrupts).
func (m *Machine) uartLine(h *Hart) {
	if m.plic.eip == nil {
		return
	}
	m.plic.setLevel(irqUART, m.uart.irq())
	if h != nil {
		h.stop = true
	}
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

// irq reports the UART's interrupt line.
func (u *uart) irq() bool {
	return u.ier&1 != 0 && len(u.rx) > 0 || u.ier&2 != 0 && u.thre
}

// iir is the interrupt identification register: FIFOs enabled, the
// highest-priority pending interrupt (received data, then THRE).
func (u *uart) iir() uint8 {
	switch {
	case u.ier&1 != 0 && len(u.rx) > 0:
		return 0xc4
	case u.ier&2 != 0 && u.thre:
		return 0xc2
	}
	return 0xc1
}

func (u *uart) read(off uint64) uint8 {
	switch off {
	case 0:
		if u.lcr&0x80 != 0 {
			return u.dll
		}
		if len(u.rx) == 0 {
			return 0
		}
		b := u.rx[0]
		u.rx = u.rx[1:]
		return b
	case 1:
		if u.lcr&0x80 != 0 {
			return u.dlm
		}
		return u.ier
	case 2:
		v := u.iir()
		if v == 0xc2 {
			u.thre = false // reading IIR acknowledges THRE
		}
		return v
	case 3:
		return u.lcr
	case 4:
		return u.mcr
	case 5:
		v := uint8(0x60) // LSR: transmitter empty
		if len(u.rx) > 0 {
			v |= 1 // data ready
		}
		return v
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
		} else {
			if u.out != nil {
				_, _ = u.out.Write([]byte{v})
			}
			u.thre = true // sent at once: the transmitter is empty again
		}
	case 1:
		if u.lcr&0x80 != 0 {
			u.dlm = v
		} else {
			if v&2 != 0 && u.ier&2 == 0 {
				u.thre = true // enabling ETBEI with THR empty interrupts
			}
			u.ier = v & 0x0f
		}
	case 2: // FCR
		if v&2 != 0 {
			u.rx = u.rx[:0]
		}
	case 3:
		u.lcr = v
	case 4:
		u.mcr = v
	case 7:
		u.scr = v
	}
}
