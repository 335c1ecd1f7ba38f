package sim

import (
	"fmt"
	"io"

	"github.com/rvtrace/rvtrace/ingress"
)

// TraceRegs is 32-bit register access to memory-mapped trace components,
// such as the Trace Control Interface components of tracectl.System.
type TraceRegs interface {
	Read32(addr uint64) (uint32, bool)
	Write32(addr uint64, v uint32) (bool, error)
}

// traceDev is the trace components mapped at [base, end).
type traceDev struct {
	regs      TraceRegs
	base, end uint64
	nodes     []TraceNode // in the device tree
}

// AttachTrace maps regs at the physical addresses base..end-1, where harts
// reach them with 32-bit loads and stores, and connects hart i's ingress
// port to encoders[i] (for tracectl.System: AttachTrace(sys,
// tracectl.EncoderBase, tracectl.MapEnd, sys.Sinks())). Call it after
// loading the program. Accesses of another size to the range are access
// faults; an error from a register write (an encoder failing when the
// write flushes or starts it) stops the run with that error.
func (m *Machine) AttachTrace(regs TraceRegs, base, end uint64, encoders []ingress.Sink) error {
	if len(encoders) < len(m.harts) {
		return fmt.Errorf("sim: %d harts but %d trace encoders", len(m.harts), len(encoders))
	}
	if end <= base {
		return fmt.Errorf("sim: empty trace component range %#x..%#x", base, end)
	}
	for _, d := range []struct {
		name       string
		base, size uint64
	}{{"the boot ROM", BootROMBase, bootROMSize}, {"the test finisher", FinisherBase, finisherSize}, {"the CLINT", ClintBase, clintSize},
		{"the PLIC", PLICBase, plicSize}, {"the UART", UARTBase, uartSize}, {"the virtio disk", VirtioBase, virtioSize}} {
		if base < d.base+d.size && d.base < end {
			return fmt.Errorf("sim: the trace components at %#x..%#x overlap %s at %#x", base, end, d.name, d.base)
		}
	}
	for a := base; a < end; a += 0x1000 {
		if m.mem.find(a) != nil {
			return fmt.Errorf("sim: the trace components at %#x..%#x overlap memory at %#x", base, end, a)
		}
	}
	for i := range m.harts {
		if err := m.SetIngress(i, encoders[i]); err != nil {
			return err
		}
	}
	m.trace = &traceDev{regs: regs, base: base, end: end}
	return nil
}

// PhysMem is physical memory as io.ReaderAt and io.WriterAt (offsets are
// physical addresses).
type PhysMem interface {
	io.ReaderAt
	io.WriterAt
}

// TraceMemory returns the machine's physical memory, for a trace RAM sink
// in SMEM mode.
func (m *Machine) TraceMemory() PhysMem { return physMem{m} }

type physMem struct{ m *Machine }

func (p physMem) ReadAt(b []byte, off int64) (int, error) {
	if !p.m.ReadMem(uint64(off), b) {
		return 0, fmt.Errorf("sim: no memory at %#x (%d bytes)", off, len(b))
	}
	return len(b), nil
}

func (p physMem) WriteAt(b []byte, off int64) (int, error) {
	if !p.m.WriteMem(uint64(off), b) {
		return 0, fmt.Errorf("sim: no memory at %#x (%d bytes)", off, len(b))
	}
	return len(b), nil
}

// has reports whether pa is in the trace components' range.
func (d *traceDev) has(pa uint64) bool { return d != nil && pa >= d.base && pa < d.end }

// traceRead is a load from the trace components' range.
func (m *Machine) traceRead(pa, size uint64) (uint64, bool) {
	if size != 4 {
		return 0, false
	}
	v, ok := m.trace.regs.Read32(pa)
	return uint64(v), ok
}

// traceWrite is a store to the trace components' range.
func (m *Machine) traceWrite(h *Hart, pa, size, v uint64) bool {
	if size != 4 || pa%4 != 0 {
		return false
	}
	h.tr.sendThroughStore()
	ok, err := m.trace.regs.Write32(pa, uint32(v))
	if err != nil {
		h.fail(fmt.Errorf("trace component at %#x: %w", pa, err))
	}
	return ok
}

// TraceNode is a trace component the device tree describes (a node under
// /soc).
type TraceNode struct {
	Name       string   // node name before the unit address, e.g. "trace-encoder"
	Compatible []string // e.g. "riscv,trace-encoder"
	Base, Size uint64
	Hart       int // the hart an encoder traces ("rvtrace,hart"), or -1
}

// DescribeTrace adds nodes for the trace components to the device tree in
// the boot ROM (the bare, sbi and virt machines; a kernel's device tree is
// written when the kernel is loaded and is not changed). Call it after
// AttachTrace.
func (m *Machine) DescribeTrace(nodes []TraceNode) error {
	if m.trace == nil {
		return fmt.Errorf("sim: DescribeTrace before AttachTrace")
	}
	m.trace.nodes = nodes
	if m.dtb != nil || m.mem.find(BootROMBase) == nil {
		return nil
	}
	return m.writeBootROM()
}

// fdtTrace adds the trace components' nodes.
func (m *Machine) fdtTrace(f *fdt) {
	if m.trace == nil {
		return
	}
	for _, n := range m.trace.nodes {
		f.begin(fmt.Sprintf("%s@%x", n.Name, n.Base))
		f.str("compatible", n.Compatible...)
		f.cells("reg", hi32(n.Base), uint32(n.Base), hi32(n.Size), uint32(n.Size))
		if n.Hart >= 0 {
			f.cells("rvtrace,hart", uint32(n.Hart))
		}
		f.end()
	}
}

// sendThroughStore sends the hart's ingress port everything up to and
// including the store being executed (at h.pc) before the store changes a
// trace register, so that the write takes effect between the store and
// the next instruction, as on hardware where the store retires before
// its effect: an encoder enabled by it traces from the next instruction,
// and one disabled by it has traced the store. The store is then not
// reported again when it retires.
func (t *tracer) sendThroughStore() {
	if t.sink == nil {
		return
	}
	h := t.h
	pc := h.pc
	var size uint8
	if off := pc - h.fbase; off < pageSize-2 && h.fpage.insts[off>>1].op != opInvalid {
		size = h.fpage.insts[off>>1].size
	} else if d := h.fetchSlow(pc); d != nil {
		size = d.size
	} else {
		return
	}
	if t.per {
		if t.havePend {
			t.emit(&t.pend, t.pendRet)
			t.havePend = false
		}
		b := &t.pend
		t.fill(b)
		b.IAddr, b.IRetire, b.IType, b.ILastSize = pc, uint32(size/2), 0, lastSizeCode(size)
		t.emit(b, h.instret)
		t.skipNext = true
		t.afterBlock(pc + uint64(size))
		return
	}
	b := &t.blk
	t.fill(b)
	b.IAddr = t.start
	b.IRetire = uint32(((pc + uint64(size) - t.start) & h.amask) / 2)
	b.IType = 0
	b.ILastSize = lastSizeCode(size)
	t.emit(b, t.startRet)
	t.afterBlock(pc + uint64(size))
	t.startRet++ // the store, which retires after this
}
