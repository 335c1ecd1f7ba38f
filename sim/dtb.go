package sim

import (
	"encoding/binary"
	"fmt"
)

// Boot ROM: like Spike, the machine has a small ROM at 0x1000 holding the
// reset code and, at 0x1020 (a1 at the entry point), a flattened device
// tree describing the harts, the RAM banks, the CLINT, the UART and HTIF.
// The reset code itself is not executed: the harts start at the ELF entry
// with the registers it would have set (see Config.BootSteps).
const (
	BootROMBase = 0x1000
	bootROMSize = 0x1000
	DTBAddr     = 0x1020
)

// fdt builds a flattened device tree (devicetree specification v0.4,
// version 17 blobs).
type fdt struct {
	structs []byte
	strs    []byte
	offs    map[string]uint32
}

const (
	fdtBeginNode = 1
	fdtEndNode   = 2
	fdtProp      = 3
	fdtEnd       = 9
)

func (f *fdt) u32(v uint32) { f.structs = binary.BigEndian.AppendUint32(f.structs, v) }

func (f *fdt) pad() {
	for len(f.structs)%4 != 0 {
		f.structs = append(f.structs, 0)
	}
}

func (f *fdt) begin(name string) {
	f.u32(fdtBeginNode)
	f.structs = append(f.structs, name...)
	f.structs = append(f.structs, 0)
	f.pad()
}

func (f *fdt) end() { f.u32(fdtEndNode) }

func (f *fdt) prop(name string, val []byte) {
	off, ok := f.offs[name]
	if !ok {
		off = uint32(len(f.strs))
		f.strs = append(append(f.strs, name...), 0)
		f.offs[name] = off
	}
	f.u32(fdtProp)
	f.u32(uint32(len(val)))
	f.u32(off)
	f.structs = append(f.structs, val...)
	f.pad()
}

func (f *fdt) str(name string, vals ...string) {
	var b []byte
	for _, v := range vals {
		b = append(append(b, v...), 0)
	}
	f.prop(name, b)
}

func (f *fdt) cells(name string, vals ...uint32) {
	var b []byte
	for _, v := range vals {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	f.prop(name, b)
}

func (f *fdt) blob() []byte {
	f.u32(fdtEnd)
	const hdr = 40
	rsv := 16 // one empty reservation entry
	offStruct := hdr + rsv
	offStrings := offStruct + len(f.structs)
	total := offStrings + len(f.strs)
	b := make([]byte, 0, total)
	for _, v := range []uint32{0xd00dfeed, uint32(total), uint32(offStruct), uint32(offStrings),
		hdr, 17, 16, 0, uint32(len(f.strs)), uint32(len(f.structs))} {
		b = binary.BigEndian.AppendUint32(b, v)
	}
	b = append(b, make([]byte, rsv)...)
	b = append(b, f.structs...)
	return append(b, f.strs...)
}

func hi32(v uint64) uint32 { return uint32(v >> 32) }

// isaCompressed returns the start of the harts' ISA string after rv32 or
// rv64: "imafdc", whose C with D is Zca and Zcd (and Zcf on RV32); with
// Zcmp or Zcmt, which exclude Zcd's encodings, "imafd_zca" (with "_zcf"
// on RV32) and the zcSet's names.
func (m *Machine) isaCompressed() string {
	if m.zc&(zcZcmp|zcZcmt) == 0 {
		return "imafdc"
	}
	s := "imafd_zca"
	if m.xlen == 32 {
		s += "_zcf"
	}
	return s + "_" + m.zc.String()
}

// fdtCPUs adds the cpus node: one cpu per hart with its interrupt
// controller (phandle hart+1). extISA is appended to the ISA string.
func (m *Machine) fdtCPUs(f *fdt, extISA string, clock bool) {
	isa, mmu := "rv64", "riscv,sv39"
	if m.xlen == 32 {
		isa, mmu = "rv32", "riscv,sv32"
	}
	isa += m.isaCompressed() + "_zicsr_zifencei_zba_zbb_zbs" + isaExt + extISA + isaSupervisor(m.xlen)
	f.begin("cpus")
	f.cells("#address-cells", 1)
	f.cells("#size-cells", 0)
	f.cells("timebase-frequency", 10000000)
	for i := range m.harts {
		f.begin(fmt.Sprintf("cpu@%d", i))
		f.str("device_type", "cpu")
		f.cells("reg", uint32(i))
		f.str("status", "okay")
		f.str("compatible", "riscv")
		f.str("riscv,isa", isa)
		f.cells("riscv,cbom-block-size", cboBlock)
		f.cells("riscv,cboz-block-size", cboBlock)
		f.str("mmu-type", mmu)
		if clock {
			f.cells("clock-frequency", 1000000000)
		}
		f.begin("interrupt-controller")
		f.cells("#interrupt-cells", 1)
		f.prop("interrupt-controller", nil)
		f.str("compatible", "riscv,cpu-intc")
		f.cells("phandle", uint32(i+1))
		f.end()
		f.end()
	}
	f.end()
}

// fdtMemory adds a memory node per RAM region (but the boot ROM when
// skipROM is set).
func (m *Machine) fdtMemory(f *fdt, skipROM bool) {
	for _, r := range m.mem.regions {
		if skipROM && r.base == BootROMBase {
			continue
		}
		f.begin(fmt.Sprintf("memory@%x", r.base))
		f.str("device_type", "memory")
		f.cells("reg", hi32(r.base), uint32(r.base), hi32(r.size), uint32(r.size))
		f.end()
	}
}

// fdtCLINT adds the CLINT node with every hart's software and timer
// interrupts.
func (m *Machine) fdtCLINT(f *fdt, size uint32, compatible ...string) {
	f.begin(fmt.Sprintf("clint@%x", ClintBase))
	f.str("compatible", compatible...)
	var ie []uint32
	for i := range m.harts {
		ie = append(ie, uint32(i+1), irqMSI, uint32(i+1), irqMTI)
	}
	f.cells("interrupts-extended", ie...)
	f.cells("reg", 0, ClintBase, 0, size)
	f.end()
}

// makeDTB describes the machine.
func (m *Machine) makeDTB() []byte {
	f := &fdt{offs: map[string]uint32{}}
	f.begin("")
	f.cells("#address-cells", 2)
	f.cells("#size-cells", 2)
	f.str("compatible", "ucb,spike-bare-dev")
	f.str("model", "ucb,spike-bare")
	f.begin("chosen")
	f.str("stdout-path", fmt.Sprintf("/soc/serial@%x", UARTBase))
	f.str("bootargs", "")
	f.end()
	m.fdtCPUs(f, "", true)
	m.fdtMemory(f, false)
	f.begin("soc")
	f.cells("#address-cells", 2)
	f.cells("#size-cells", 2)
	f.str("compatible", "ucb,spike-bare-soc", "simple-bus")
	f.prop("ranges", nil)
	m.fdtCLINT(f, 0xc0000, "riscv,clint0")
	f.begin(fmt.Sprintf("serial@%x", UARTBase))
	f.str("compatible", "ns16550a")
	f.cells("clock-frequency", 10000000)
	f.cells("reg", 0, UARTBase, 0, uartSize)
	f.cells("reg-shift", 0)
	f.end()
	m.fdtTrace(f)
	f.end()
	if m.htif {
		f.begin("htif")
		f.str("compatible", "ucb,htif0")
		f.end()
	}
	f.end()
	return f.blob()
}

// installBootROM maps the boot ROM (as RAM the harts may read) with the
// reset code and the device tree.
func (m *Machine) installBootROM() error {
	if m.mem.find(BootROMBase) != nil {
		return nil
	}
	if err := m.mem.addRAM(BootROMBase, bootROMSize, "sim: boot ROM"); err != nil {
		return err
	}
	return m.writeBootROM()
}

// writeBootROM writes the reset code and the device tree into the boot
// ROM.
func (m *Machine) writeBootROM() error {
	var rom []byte
	reset := []uint32{
		0x00000297, // auipc t0, 0
		0x02028593, // addi a1, t0, 32
		0xf1402573, // csrr a0, mhartid
		0x0182b283, // ld t0, 24(t0)   (lw on RV32)
		0x00028067, // jr t0
	}
	if m.xlen == 32 {
		reset[3] = 0x0182a283
	}
	for _, w := range reset {
		rom = binary.LittleEndian.AppendUint32(rom, w)
	}
	rom = append(rom, 0, 0, 0, 0)
	rom = binary.LittleEndian.AppendUint64(rom, m.entry)
	dtb := m.makeDTB()
	if m.virt {
		dtb = m.makeVirtDTB()
	}
	if len(dtb) > bootROMSize-0x20 {
		return fmt.Errorf("sim: device tree too large (%d bytes)", len(dtb))
	}
	rom = append(rom, dtb...)
	m.mem.write(BootROMBase, rom)
	return nil
}
