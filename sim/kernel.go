package sim

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Kernel describes a Linux kernel boot on the virt machine (LoadKernel).
type Kernel struct {
	// Image is the kernel: a raw RISC-V Linux Image (its header gives
	// the load offset and the size the kernel occupies, bss included)
	// or an ELF (vmlinux) loaded at its physical addresses.
	Image string
	// Initrd is the initial RAM disk (optional).
	Initrd string
	// Append is the kernel command line (/chosen bootargs).
	Append string
	// DTB replaces the generated device tree with this file's contents
	// (bootargs and initrd are then the file's business).
	DTB string
	// Firmware is an OpenSBI image (fw_dynamic or fw_jump ELF) run in
	// M-mode; empty runs the kernel in S-mode on the built-in SBI.
	Firmware string
	// RAMSize is the size of the RAM at 0x80000000 (default 512 MiB).
	RAMSize uint64
}

// Physical layout of a kernel boot.
const (
	KernelRAMBase   = 0x80000000
	defaultKRAM     = 512 << 20
	fwJumpAddr      = 0x80200000 // OpenSBI generic fw_jump's FW_JUMP_ADDR
	fwJumpFDTAddr   = 0x82200000 // where fw_jump copies the tree (OpenSBI 1.1: FW_JUMP_FDT_ADDR)
	fwJumpFDTSpace  = 2 << 20    // room left for the tree there
	riscvImageMagic = "RISCV\x00\x00\x00"
)

// kernelBoot is what the device tree says about a kernel boot.
type kernelBoot struct {
	bootargs             string
	initrdStart, initEnd uint64
	ram                  uint64
}

// LoadKernel boots a Linux kernel on the virt machine: RAM at
// 0x80000000, the kernel at RAM+text_offset (0x80200000), the device tree
// and the initrd at the top of RAM where neither overlaps the kernel,
// whatever its size. On the built-in SBI (no Firmware) hart 0 starts in
// S-mode at the kernel with a0 = 0 and a1 = the tree, as OpenSBI would
// leave it (with Sstc: menvcfg.STCE set, sstc in the tree); with
// fw_dynamic the firmware gets the kernel's address in
// its information structure (a2); with fw_jump, whose jump address
// (0x80200000) and tree address (0x82200000) are built in, the kernel goes
// above the tree's copy and a three-instruction jump at 0x80200000 leads
// to it. The tree describes the harts, RAM, CLINT, PLIC, the UART with
// its interrupt, the test device (syscon poweroff and reboot), the PMU
// and /chosen (bootargs, linux,initrd-start/end, rng-seed, stdout-path).
func (m *Machine) LoadKernel(k Kernel) error {
	if m.loaded {
		return errors.New("sim: a program is already loaded")
	}
	ram := k.RAMSize
	if ram == 0 {
		ram = defaultKRAM
	}
	if ram < 64<<20 || ram > 64<<30 {
		return fmt.Errorf("sim: kernel RAM size %d MiB outside 64 MiB..64 GiB", ram>>20)
	}
	m.virt = true
	m.finisher = true
	if err := m.mem.addRAM(KernelRAMBase, ram, "sim: kernel RAM"); err != nil {
		return err
	}
	ramEnd := uint64(KernelRAMBase) + ram
	jump := strings.Contains(strings.ToLower(k.Firmware), "jump")
	if k.Firmware != "" {
		f, err := elf.Open(k.Firmware)
		if err != nil {
			return fmt.Errorf("sim: firmware: %w", err)
		}
		err = m.loadSegments(f, k.Firmware, true)
		f.Close()
		if err != nil {
			return err
		}
	} else {
		m.createHarts(64)
		m.loaded = true
		// Sstc with the built-in SBI, which enables it (OpenSBI 1.1 does
		// not set menvcfg.STCE: the kernel would fault on stimecmp)
		m.sstc = make([]uint64, len(m.harts))
		for i := range m.sstc {
			m.sstc[i] = ^uint64(0)
		}
	}
	if m.xlen != 64 {
		return fmt.Errorf("sim: %s: the kernel boot is RV64 only", k.Firmware)
	}
	// The kernel.
	kbase := uint64(KernelRAMBase + 0x200000)
	if jump {
		kbase = fwJumpFDTAddr + fwJumpFDTSpace
	}
	entry, kend, err := m.loadKernelImage(k.Image, kbase, !jump)
	if err != nil {
		return err
	}
	if jump {
		if entry != kbase {
			return fmt.Errorf("sim: %s: fw_jump needs a raw Image (entry at its start)", k.Image)
		}
		// auipc t0, 0; ld t0, 16(t0); jr t0; nop; .dword kernel
		var tr []byte
		for _, w := range []uint32{0x00000297, 0x0102b283, 0x00028067, 0x00000013} {
			tr = binary.LittleEndian.AppendUint32(tr, w)
		}
		tr = binary.LittleEndian.AppendUint64(tr, kbase)
		m.mem.write(fwJumpAddr, tr)
	}
	// The tree and the initrd at the top of RAM: the tree in the last
	// 2 MiB, the initrd page-aligned below it.
	top := ramEnd - 2<<20
	kb := &kernelBoot{bootargs: k.Append, ram: ram}
	var initrd []byte
	if k.Initrd != "" {
		if initrd, err = os.ReadFile(k.Initrd); err != nil {
			return fmt.Errorf("sim: initrd: %w", err)
		}
		start := (top - uint64(len(initrd))) &^ 0xfff
		if uint64(len(initrd)) > top-kend || start < kend {
			return fmt.Errorf("sim: %s (%d MiB) does not fit in RAM above the kernel (end %#x); give more RAM (--ram)",
				k.Initrd, len(initrd)>>20, kend)
		}
		kb.initrdStart, kb.initEnd = start, start+uint64(len(initrd))
		m.mem.write(start, initrd)
	}
	var dtb []byte
	if k.DTB != "" {
		if dtb, err = os.ReadFile(k.DTB); err != nil {
			return fmt.Errorf("sim: device tree: %w", err)
		}
		if len(dtb) < 40 || binary.BigEndian.Uint32(dtb) != 0xd00dfeed {
			return fmt.Errorf("sim: %s: not a flattened device tree (no magic 0xd00dfeed at byte 0)", k.DTB)
		}
	} else {
		dtb = m.makeKernelDTB(kb)
	}
	if len(dtb) > 1<<20 {
		return fmt.Errorf("sim: device tree of %d bytes larger than 1 MiB", len(dtb))
	}
	if jump && len(dtb) > fwJumpFDTSpace/2 {
		return fmt.Errorf("sim: device tree of %d bytes too large for fw_jump's copy at %#x", len(dtb), fwJumpFDTAddr)
	}
	dtbAddr := top
	m.mem.write(dtbAddr, dtb)
	m.dtb = dtb
	fwEntry := m.entry // the firmware's, when there is one
	h := m.harts[0]
	switch {
	case k.Firmware == "":
		for _, t := range m.harts {
			t.fwSetup()
			if t.id != 0 {
				t.fw.parked = true
				t.waiting = true
			}
		}
		h.pc = entry
	default:
		for _, t := range m.harts {
			t.pc = fwEntry
			t.x[10] = uint64(t.id)
			t.x[11] = dtbAddr
		}
		if !jump {
			// fw_dynamic: struct fw_dynamic_info (version 2) below the tree
			var b []byte
			for _, v := range []uint64{0x4942534f, 2, entry, 1, 0, 0} { // magic "OSBI", version, next_addr, S-mode, options, boot_hart
				b = binary.LittleEndian.AppendUint64(b, v)
			}
			info := dtbAddr + 1<<20
			m.mem.write(info, b)
			for _, t := range m.harts {
				t.x[12] = info
			}
		}
	}
	if k.Firmware == "" {
		m.entry = entry
		h.x[10] = 0
		h.x[11] = dtbAddr
	}
	for _, t := range m.harts {
		t.tr.afterBlock(t.pc)
	}
	m.plic.init(len(m.harts))
	return nil
}

// DeviceTree returns the device tree the machine booted with (after
// LoadKernel).
func (m *Machine) DeviceTree() []byte { return m.dtb }

// loadKernelImage loads a raw Image at base (or an ELF at its physical
// addresses) and returns the entry point and the end of what the kernel
// occupies. A raw Image goes at RAM+text_offset when useOffset is set and
// its header gives one.
func (m *Machine) loadKernelImage(path string, base uint64, useOffset bool) (entry, end uint64, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, fmt.Errorf("sim: kernel: %w", err)
	}
	if len(b) >= 4 && string(b[:4]) == "\x7fELF" {
		f, err := elf.NewFile(bytes.NewReader(b))
		if err != nil {
			return 0, 0, fmt.Errorf("sim: %s: %w", path, err)
		}
		if f.Machine != elf.EM_RISCV || f.Class != elf.ELFCLASS64 {
			return 0, 0, fmt.Errorf("sim: %s: not a RV64 ELF", path)
		}
		entry = f.Entry
		for _, p := range f.Progs {
			if p.Type != elf.PT_LOAD || p.Memsz == 0 {
				continue
			}
			if entry >= p.Vaddr && entry < p.Vaddr+p.Memsz {
				entry = entry - p.Vaddr + p.Paddr
			}
			data := make([]byte, p.Memsz)
			if _, err := p.ReadAt(data[:p.Filesz], 0); err != nil && p.Filesz > 0 {
				return 0, 0, fmt.Errorf("sim: %s: segment at %#x: %w", path, p.Paddr, err)
			}
			if !m.mem.write(p.Paddr, data) {
				return 0, 0, fmt.Errorf("sim: %s: segment at %#x+%#x outside RAM", path, p.Paddr, p.Memsz)
			}
			end = max(end, p.Paddr+p.Memsz)
		}
		return entry, end, nil
	}
	// RISC-V Image header (Documentation/arch/riscv/boot-image-header.rst):
	// code0, code1, text_offset at 8, image_size at 16, flags, version,
	// res1, res2, magic "RISCV\0\0\0" at 48 (deprecated), magic2 "RSC\x05"
	// at 56.
	if len(b) < 64 || (string(b[48:56]) != riscvImageMagic && string(b[56:60]) != "RSC\x05") {
		return 0, 0, fmt.Errorf("sim: %s: neither an ELF nor a RISC-V Linux Image (no magic at byte 48 or 56)", path)
	}
	if off := binary.LittleEndian.Uint64(b[8:]); useOffset && off != 0 {
		if off%(2<<20) != 0 || off > 64<<20 {
			return 0, 0, fmt.Errorf("sim: %s: text_offset %#x is not a multiple of 2 MiB below 64 MiB", path, off)
		}
		base = KernelRAMBase + off
	}
	size := binary.LittleEndian.Uint64(b[16:])
	if size < uint64(len(b)) {
		size = uint64(len(b))
	}
	if base+size > KernelRAMBase+m.mem.find(KernelRAMBase).size {
		return 0, 0, fmt.Errorf("sim: %s (%d MiB) does not fit in RAM; give more RAM (--ram)", path, size>>20)
	}
	m.mem.write(base, b)
	return base, base + size, nil
}

// makeKernelDTB describes the virt machine to a kernel.
func (m *Machine) makeKernelDTB(kb *kernelBoot) []byte {
	f := &fdt{offs: map[string]uint32{}}
	nh := uint32(len(m.harts))
	plicPh, testPh := nh+1, nh+2
	f.begin("")
	f.cells("#address-cells", 2)
	f.cells("#size-cells", 2)
	f.str("compatible", "riscv-virtio")
	f.str("model", "rvtrace,virt")
	f.begin("chosen")
	f.str("stdout-path", fmt.Sprintf("/soc/serial@%x", UARTBase))
	f.str("bootargs", kb.bootargs)
	if kb.initEnd != 0 {
		f.cells("linux,initrd-start", hi32(kb.initrdStart), uint32(kb.initrdStart))
		f.cells("linux,initrd-end", hi32(kb.initEnd), uint32(kb.initEnd))
	}
	// A fixed seed: the run stays deterministic (and so is the guest's
	// randomness: this is a simulator, not a machine to keep secrets on).
	seed := sha256.Sum256([]byte("rvtrace virt rng-seed " + kb.bootargs))
	seed2 := sha256.Sum256(seed[:])
	f.prop("rng-seed", append(seed[:], seed2[:]...))
	f.end()
	m.fdtCPUsKernel(f)
	f.begin(fmt.Sprintf("memory@%x", KernelRAMBase))
	f.str("device_type", "memory")
	f.cells("reg", 0, KernelRAMBase, hi32(kb.ram), uint32(kb.ram))
	f.end()
	m.fdtPMU(f)
	f.begin("soc")
	f.cells("#address-cells", 2)
	f.cells("#size-cells", 2)
	f.str("compatible", "simple-bus")
	f.prop("ranges", nil)
	m.fdtCLINT(f, clintSize, "sifive,clint0", "riscv,clint0")
	f.begin(fmt.Sprintf("plic@%x", PLICBase))
	f.str("compatible", "sifive,plic-1.0.0", "riscv,plic0")
	f.cells("#address-cells", 0)
	f.cells("#interrupt-cells", 1)
	f.prop("interrupt-controller", nil)
	var ie []uint32
	for i := range m.harts {
		ie = append(ie, uint32(i+1), irqMEI, uint32(i+1), irqSEI)
	}
	f.cells("interrupts-extended", ie...)
	f.cells("reg", 0, PLICBase, 0, plicSize)
	f.cells("riscv,ndev", plicSources-1)
	f.cells("phandle", plicPh)
	f.end()
	f.begin(fmt.Sprintf("serial@%x", UARTBase))
	f.str("compatible", "ns16550a")
	f.cells("clock-frequency", 3686400)
	f.cells("reg", 0, UARTBase, 0, uartSize)
	f.cells("interrupt-parent", plicPh)
	f.cells("interrupts", irqUART)
	f.end()
	if m.virtio != nil {
		f.begin(fmt.Sprintf("virtio_mmio@%x", VirtioBase))
		f.str("compatible", "virtio,mmio")
		f.cells("reg", 0, VirtioBase, 0, virtioSize)
		f.cells("interrupt-parent", plicPh)
		f.cells("interrupts", irqVirtio0)
		f.end()
	}
	f.begin(fmt.Sprintf("test@%x", FinisherBase))
	f.str("compatible", "sifive,test1", "sifive,test0", "syscon")
	f.cells("reg", 0, FinisherBase, 0, finisherSize)
	f.cells("phandle", testPh)
	f.end()
	f.end()
	f.begin("poweroff")
	f.str("compatible", "syscon-poweroff")
	f.cells("regmap", testPh)
	f.cells("offset", 0)
	f.cells("value", 0x5555)
	f.end()
	f.begin("reboot")
	f.str("compatible", "syscon-reboot")
	f.cells("regmap", testPh)
	f.cells("offset", 0)
	f.cells("value", 0x7777)
	f.end()
	f.end()
	return f.blob()
}

// kernelISA lists the extensions the simulator implements, as
// riscv,isa-extensions names them (then those of isaExt, sstc on the
// built-in SBI, and isaSupervisor).
var kernelISA = []string{"i", "m", "a", "f", "d", "c", "zicntr", "zicsr", "zifencei", "zihpm",
	"zba", "zbb", "zbs", "sscofpmf"}

// fdtCPUsKernel adds the cpus node with riscv,isa-base and
// riscv,isa-extensions as well as the riscv,isa string.
func (m *Machine) fdtCPUsKernel(f *fdt) {
	exts := append([]string(nil), kernelISA...)
	exts = append(exts, strings.Split(strings.TrimPrefix(isaExt, "_"), "_")...)
	if m.sstc != nil {
		exts = append(exts, "sstc")
	}
	exts = append(exts, strings.Split(strings.TrimPrefix(isaSupervisor(64), "_"), "_")...)
	isa := "rv64" + m.isaCompressed()
	for _, e := range exts[6:] {
		isa += "_" + e
	}
	if m.zc&(zcZcmp|zcZcmt) != 0 {
		// C with D means Zcd, which Zcmp and Zcmt exclude
		exts[5] = "zca"
		exts = append(exts, strings.Split(m.zc.String(), "_")...)
	}
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
		f.str("riscv,isa-base", "rv64i")
		f.str("riscv,isa-extensions", exts...)
		f.str("mmu-type", "riscv,sv39")
		f.cells("riscv,cbom-block-size", cboBlock)
		f.cells("riscv,cboz-block-size", cboBlock)
		f.cells("riscv,cbop-block-size", cboBlock)
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

// input feeds console input (Config.Stdin) to the UART.
type input struct {
	ch  chan byte
	tty bool // a terminal: wait for it in real time when the harts idle
	eof bool
}

func newInput(r io.Reader) *input {
	in := &input{ch: make(chan byte, 4096)}
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			in.tty = true
		}
	}
	go func() {
		buf := make([]byte, 256)
		for {
			n, err := r.Read(buf)
			for _, b := range buf[:n] {
				in.ch <- b
			}
			if err != nil {
				close(in.ch)
				return
			}
		}
	}()
	return in
}

// feedInput moves the next input byte into the UART's empty receive
// FIFO once the guest receives (IER.ERBFI has been set). wait is how long
// to wait for it (0: not at all, <0: until it comes or input ends). It
// reports whether a byte was fed.
func (m *Machine) feedInput(wait time.Duration) bool {
	in := m.input
	if in == nil || in.eof || len(m.uart.rx) > 0 || m.uart.ier&1 == 0 {
		return false
	}
	var b byte
	var ok bool
	switch {
	case wait == 0:
		select {
		case b, ok = <-in.ch:
		default:
			return false
		}
	case wait < 0:
		b, ok = <-in.ch
	default:
		t := time.NewTimer(wait)
		select {
		case b, ok = <-in.ch:
		case <-t.C:
			return false
		}
		t.Stop()
	}
	if !ok {
		in.eof = true
		return false
	}
	m.uart.rx = append(m.uart.rx, b)
	m.uartLine(nil)
	return true
}

// idleInput is called when every hart waits for an interrupt: it waits
// for console input, forever when no timer can wake the harts (timer
// false), at most the timer's delay in real time on a terminal. It
// reports whether input came.
func (m *Machine) idleInput(timer bool, ticks uint64) bool {
	if m.input == nil {
		return false
	}
	switch {
	case !timer:
		return m.feedInput(-1)
	case m.input.tty:
		d := time.Duration(ticks) * 100 * time.Nanosecond // 10 MHz timebase
		return m.feedInput(min(d, 50*time.Millisecond))
	}
	return m.feedInput(0)
}

// SetStdin connects r to the console's input (the UART of the virt
// machine with a kernel). Call it before Run.
func (m *Machine) SetStdin(r io.Reader) {
	if r != nil {
		m.input = newInput(r)
	}
}
