package sim

import (
	"fmt"

	"github.com/rvtrace/rvtrace/tracectl"
)

// AttachTraceControl maps the Trace Control Interface components of sys
// (encoders at tracectl.EncoderBase + N*0x1000, funnel, RAM sink) into the
// physical address space, where harts reach them with 32-bit loads and
// stores, and connects each hart's ingress port to its encoder. Call it
// after loading the program; sys needs an encoder per hart. Accesses of
// another size to the components' range are access faults; an encoder
// error (raised by a register write that flushes it, or by a block) stops
// the run with that error.
func (m *Machine) AttachTraceControl(sys *tracectl.System) error {
	if len(sys.Encoders) < len(m.harts) {
		return fmt.Errorf("sim: %d harts but %d trace encoders", len(m.harts), len(sys.Encoders))
	}
	for i := range m.harts {
		if err := m.SetIngress(i, sys.Encoders[i]); err != nil {
			return err
		}
	}
	m.tracectl = sys
	return nil
}

// TraceMemory returns the machine's physical memory for a RAM sink in
// SMEM mode.
func (m *Machine) TraceMemory() tracectl.Memory { return physMem{m} }

// physMem is physical memory as io.ReaderAt and io.WriterAt.
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

// traceRead is a load from the trace components' range.
func (m *Machine) traceRead(pa, size uint64) (uint64, bool) {
	if size != 4 {
		return 0, false
	}
	v, ok := m.tracectl.Read32(pa)
	return uint64(v), ok
}

// traceWrite is a store to the trace components' range.
func (m *Machine) traceWrite(h *Hart, pa, size, v uint64) bool {
	if size != 4 {
		return false
	}
	ok, err := m.tracectl.Write32(pa, uint32(v))
	if err != nil {
		h.fail(fmt.Errorf("trace encoder: %w", err))
	}
	return ok
}
