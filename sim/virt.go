package sim

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
	"strings"

	"github.com/rvtrace/rvtrace/pmu"
)

// The virt machine: real M-mode firmware (OpenSBI's fw_jump or
// fw_dynamic, as Debian's opensbi package ships them) and an S-mode
// payload. The device tree (in the boot ROM at DTBAddr, a1 at the
// firmware's entry) describes the harts (riscv,isa with sscofpmf), the RAM,
// a CLINT ("sifive,clint0"/"riscv,clint0"), the 16550 UART as the
// console (/chosen stdout-path), a SiFive test finisher ("sifive,test1",
// the reset device OpenSBI's SRST uses: shutdown exits 0) and a
// "riscv,pmu" node telling OpenSBI which mhpmevent value selects each
// event and which counters count it: every supported general and cache
// event is its own event_idx as mhpmevent selector on mhpmcounter3..31,
// cycles also on mcycle, instructions also on minstret, and raw events
// 0x20000..0x2001f (the pmu.Raw* selectors) on mhpmcounter3..31. There
// is no PLIC (no external interrupts) and no HTIF.

// fwDynamicInfoAddr is where the fw_dynamic information structure goes
// (a2 at the firmware's entry), at the end of the boot ROM.
const fwDynamicInfoAddr = BootROMBase + bootROMSize - 0x40

// LoadFirmware loads M-mode firmware and an S-mode payload on the virt
// machine. fw_dynamic images (detected by "dynamic" in the file name)
// receive in a2 the address of a struct fw_dynamic_info (version 2) naming
// the payload's entry point and S-mode; fw_jump images jump to their
// built-in address (0x80200000 for Debian's generic build), where the
// payload must be linked.
func (m *Machine) LoadFirmware(fw, payload string) error {
	m.virt = true
	m.finisher = true
	if err := m.LoadELF(fw); err != nil {
		return err
	}
	f, err := elf.Open(payload)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	defer f.Close()
	if f.Machine != elf.EM_RISCV {
		return fmt.Errorf("sim: %s: not a RISC-V ELF", payload)
	}
	if err := m.loadProgs(f, payload, true); err != nil {
		return err
	}
	if strings.Contains(strings.ToLower(fw), "dynamic") {
		var b []byte
		for _, v := range []uint64{0x4942534f, 2, f.Entry, 1, 0, 0} { // magic "OSBI", version, next_addr, S-mode, options, boot_hart
			if m.xlen == 32 {
				b = binary.LittleEndian.AppendUint32(b, uint32(v))
			} else {
				b = binary.LittleEndian.AppendUint64(b, v)
			}
		}
		m.mem.write(fwDynamicInfoAddr, b)
		for _, h := range m.harts {
			h.x[12] = fwDynamicInfoAddr
		}
	}
	return nil
}

// makeVirtDTB describes the virt machine.
func (m *Machine) makeVirtDTB() []byte {
	f := &fdt{offs: map[string]uint32{}}
	f.begin("")
	f.cells("#address-cells", 2)
	f.cells("#size-cells", 2)
	f.str("compatible", "riscv-virtio")
	f.str("model", "rvtrace,virt")
	f.begin("chosen")
	f.str("stdout-path", fmt.Sprintf("/soc/serial@%x", UARTBase))
	f.end()
	m.fdtCPUs(f, "_sscofpmf", false)
	m.fdtMemory(f, true)
	m.fdtPMU(f)
	f.begin("soc")
	f.cells("#address-cells", 2)
	f.cells("#size-cells", 2)
	f.str("compatible", "simple-bus")
	f.prop("ranges", nil)
	m.fdtCLINT(f, clintSize, "sifive,clint0", "riscv,clint0")
	f.begin(fmt.Sprintf("serial@%x", UARTBase))
	f.str("compatible", "ns16550a")
	f.cells("clock-frequency", 3686400)
	f.cells("reg", 0, UARTBase, 0, uartSize)
	f.end()
	f.begin(fmt.Sprintf("test@%x", FinisherBase))
	f.str("compatible", "sifive,test1", "sifive,test0", "syscon")
	f.cells("reg", 0, FinisherBase, 0, finisherSize)
	f.end()
	m.fdtTrace(f)
	f.end()
	f.end()
	return f.blob()
}

// fdtPMU adds the riscv,pmu node OpenSBI reads (see the package comment
// above).
func (m *Machine) fdtPMU(f *fdt) {
	f.begin("pmu")
	f.str("compatible", "riscv,pmu")
	var evSel, evCtr []uint32
	for i := 1; i < pmu.NumDense; i++ {
		sel := pmu.Selector(i)
		if !pmu.Supported(i) || sel >= pmu.RawBase {
			continue
		}
		evSel = append(evSel, uint32(sel), 0, uint32(sel))
	}
	const hpm = 0xfffffff8
	evCtr = append(evCtr, 1, 1, hpm|1, 2, 2, hpm|4, 3, 10, hpm,
		uint32(pmu.CacheEvent(0, 0, 0)), uint32(pmu.CacheEvent(pmu.CacheBPU, pmu.OpPrefetch, pmu.ResultMiss)), hpm)
	f.cells("riscv,event-to-mhpmevent", evSel...)
	f.cells("riscv,event-to-mhpmcounters", evCtr...)
	f.cells("riscv,raw-event-to-mhpmcounters", 0, pmu.RawBase, 0xffffffff, 0xffffffe0, hpm)
	f.end()
}
