package sim

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// Bank is one RAM bank of the memory map.
type Bank struct {
	Base, Size uint64
}

// Default memory map of bare-metal programs: the two banks of the
// reference flow the corpus comes from (RV64 images linked at 0x80000000,
// RV32 embench images at 0x20010000, some with data at 0x80000000).
const (
	DefaultRAMSize = 64 << 20
	DefaultQuantum = 5000 // Spike's INTERLEAVE
	DefaultTimeDiv = 100  // Spike's INSNS_PER_RTC_TICK
)

// Config configures a Machine. The zero value is usable.
type Config struct {
	// XLEN is 32 or 64; 0 takes it from the ELF class.
	XLEN int
	// Harts is the number of harts (default 1).
	Harts int
	// RAMSize is the size of each default RAM bank (default 64 MiB).
	RAMSize uint64
	// MaxRAM bounds the guest RAM of all banks together (default
	// DefaultMaxRAM, 16 GiB): a bank beyond it is refused with a
	// RAMLimitError before any host memory is reserved.
	MaxRAM uint64
	// Banks replaces the default RAM banks (0x20000000 and 0x80000000,
	// RAMSize each). Segments of the ELF outside every bank get a bank of
	// their own.
	Banks []Bank
	// MaxInstret ends the run with an error (cause ErrInstructionLimit)
	// once the harts together have retired exactly this many
	// instructions (0: no limit).
	MaxInstret uint64
	// Stdout and Stderr receive the guest's console output (HTIF
	// syscalls, UART, Linux write). Nil discards it.
	Stdout, Stderr io.Writer
	// Diagnostics receives the simulator's own messages about the run
	// that are not errors, such as the Linux system calls it does not
	// implement (one line per call number). Nil discards them.
	Diagnostics io.Writer
	// Mode is the ingress block mode (default Coalesced).
	Mode BlockMode
	// Quantum is the number of instructions a hart runs before the next
	// one takes over, and the HTIF polling period (default 5000, as
	// Spike).
	Quantum int
	// TimeDivider is the number of quantum instructions per mtime tick
	// (default 100, as Spike: mtime advances Quantum/TimeDivider per
	// round of all harts).
	TimeDivider int
	// HTIFImmediate makes the host act on every tohost write at once:
	// syscalls are answered before the next instruction. By default the
	// host polls tohost between quanta for syscalls, as Spike does, which
	// is what Spike's instruction counts reflect (the loops waiting for
	// fromhost spin as long). An exit command always ends the run on the
	// store that writes it.
	HTIFImmediate bool
	// PMPEntries is the number of PMP entries (0: 16, as Spike). A
	// negative value implements none: the PMP CSRs are then illegal, as
	// on Spike with --pmpregions=0.
	PMPEntries int
	// MisalignedTrap makes loads and stores to misaligned addresses raise
	// address-misaligned exceptions (Spike without misaligned support).
	// By default they are performed in hardware, byte by byte with every
	// byte translated and checked, as on Spike built with misaligned
	// support and as Linux expects, except on the firmware machines
	// (LoadSBI, LoadFirmware), where they trap to the firmware that
	// emulates them. LR/SC and AMOs always trap when misaligned.
	MisalignedTrap bool
	// Misaligned makes misaligned loads and stores succeed on every
	// machine; it overrides MisalignedTrap (Linux user mode sets it: the
	// kernel emulates them).
	Misaligned bool
	// Timing is the timing model (zero value: one cycle per instruction).
	Timing Timing
	// Args are the arguments the HTIF frontend passes after the program
	// name (HTIF syscall getmainvars, which riscv-pk uses to find its
	// payload).
	Args []string
	// BootSteps is the number of steps of each hart's first quantum spent
	// before the entry point (Spike's boot ROM: 5). They are not counted
	// as retired instructions. Negative means 0; 0 means 5.
	BootSteps int
	// ContextSource selects what the ingress blocks' Context carries:
	// scontext writes (the default) or the ASID of satp.
	ContextSource ContextSource
	// Arch is the program's ISA string (riscv.ParseArch, such as
	// "rv32imac_zcmp_zcmt"); empty takes the ELF file's Tag_RISCV_arch
	// attribute. It chooses what the encodings Zcd shares with Zcmp and
	// Zcmt mean: Zcd's c.fld, c.fsd, c.fldsp, c.fsdsp unless the ISA has
	// Zcmp or Zcmt (then cm.push, cm.pop, ..., cm.jt, cm.jalt and the
	// jvt CSR). Without either, the hart has Zcd.
	Arch string
}

// Machine is a RISC-V system: harts, memory, CLINT, UART and HTIF.
type Machine struct {
	cfg    Config
	mem    memory
	harts  []*Hart
	clint  clint
	uart   uart
	plic   plic       // virt machine with a kernel (kernel.go)
	input  *input     // console input (kernel.go)
	dtb    []byte     // device tree of a kernel boot
	virtio *virtioBlk // virtio-blk disk (virtio.go)
	sstc   []uint64   // per hart stimecmp when Sstc is implemented (kernel boots on the built-in SBI)
	timing timingTable
	noPMP  bool // no PMP checks at all (Linux user mode)

	// noBrBatch (tests): the interpreter loop leaves at every jump and
	// branch of the ingress port, as it did before Hart.brBatch
	noBrBatch bool

	finisher bool // SiFive test finisher mapped (firmware machines)
	virt     bool // virt machine: firmware and payload (virt.go)
	nPMP     int  // implemented PMP entries

	trace *traceDev // memory-mapped trace components (tracectl.go)

	quantum uint64
	timeDiv uint64
	cur     int // hart whose quantum is next

	htif      bool
	tohost    uint64
	fromhost  uint64
	fromQueue []uint64
	stdout    io.Writer
	stderr    io.Writer

	loaded      bool
	done        bool
	stop        atomic.Bool   // Stop was called
	retired     atomic.Uint64 // instructions retired, all harts, as of the last quantum boundary
	exitInstret uint64        // instructions retired when the exit was written
	exitCode    int
	err         error

	entry uint64
	xlen  int
	path  string
	zc    zcSet // what c.fsdsp's encodings are (zcmp.go)

	unsupported []uint64   // Linux system calls answered ENOSYS, in order
	codeWrites  CodeWrites // stores into executed instructions
	codeHook    func(pa uint64)
}

// CodeWrites counts the stores that overwrote instructions the harts had
// executed (self-modifying code, or code loaded over code). The
// simulator runs the new instructions correctly, but a trace decoded
// against a static program image (the ELF file) is wrong where they ran.
type CodeWrites struct {
	Count     uint64 // stores (one per instruction, whatever its size)
	Hart      int    // the hart of the first one
	PC        uint64 // the address of the first storing instruction
	Addr      uint64 // the (virtual) address it wrote
	lastHart  int
	lastInstr uint64 // instret+1 of the last store counted
}

// codeWritten records a store at va, by the instruction at h.pc, that
// overwrote executed instructions (once per instruction: the byte-wise
// misaligned path calls it per byte).
func (m *Machine) codeWritten(h *Hart, va uint64) {
	cw := &m.codeWrites
	if cw.Count > 0 && cw.lastHart == h.id && cw.lastInstr == h.instret+1 {
		return
	}
	if cw.Count == 0 {
		cw.Hart, cw.PC, cw.Addr = h.id, h.pc, va
	}
	cw.Count++
	cw.lastHart, cw.lastInstr = h.id, h.instret+1
}

// HartStats are the counters of one hart at the end of a run.
type HartStats struct {
	Instret    uint64
	Cycles     uint64
	Exceptions uint64 // exceptions taken (trapping ecall/ebreak included)
	Interrupts uint64 // interrupts taken
}

// Result is the outcome of Run.
type Result struct {
	ExitCode    int         // the guest's exit code
	ExitInstret uint64      // instructions retired when the last store to tohost (the exit) completed
	Instret     uint64      // instructions retired by all harts
	Harts       []HartStats // per hart
	CodeWrites  CodeWrites  // stores into executed instructions (none: Count 0)
}

// New creates a machine. Harts are created when a program is loaded.
func New(cfg Config) (*Machine, error) {
	if cfg.Harts == 0 {
		cfg.Harts = 1
	}
	if cfg.Harts < 0 || cfg.Harts > 1024 {
		return nil, fmt.Errorf("sim: bad hart count %d", cfg.Harts)
	}
	if cfg.XLEN != 0 && cfg.XLEN != 32 && cfg.XLEN != 64 {
		return nil, fmt.Errorf("sim: bad XLEN %d", cfg.XLEN)
	}
	if cfg.RAMSize == 0 {
		cfg.RAMSize = DefaultRAMSize
	}
	if cfg.PMPEntries == 0 {
		cfg.PMPEntries = pmpEntries
	}
	if cfg.PMPEntries > pmpEntries {
		return nil, fmt.Errorf("sim: at most %d PMP entries", pmpEntries)
	}
	if cfg.Quantum <= 0 {
		cfg.Quantum = DefaultQuantum
	}
	if cfg.BootSteps == 0 {
		cfg.BootSteps = 5
	} else if cfg.BootSteps < 0 {
		cfg.BootSteps = 0
	}
	if cfg.TimeDivider <= 0 {
		cfg.TimeDivider = DefaultTimeDiv
	}
	m := &Machine{cfg: cfg, nPMP: max(cfg.PMPEntries, 0), quantum: uint64(cfg.Quantum), timeDiv: uint64(cfg.TimeDivider),
		timing: cfg.Timing.table()}
	m.mem.m = m
	m.mem.limit = cfg.MaxRAM
	m.stdout, m.stderr = cfg.Stdout, cfg.Stderr
	if m.stdout == nil {
		m.stdout = io.Discard
	}
	if m.stderr == nil {
		m.stderr = io.Discard
	}
	m.uart.out = m.stdout
	m.clint.mtimecmp = make([]uint64, cfg.Harts)
	m.clint.msip = make([]uint32, cfg.Harts)
	return m, nil
}

// Hart returns hart i (nil before a program is loaded).
func (m *Machine) Hart(i int) *Hart {
	if i < 0 || i >= len(m.harts) {
		return nil
	}
	return m.harts[i]
}

// NumHarts returns the number of harts.
func (m *Machine) NumHarts() int { return m.cfg.Harts }

// XLEN returns the machine's register width (after loading).
func (m *Machine) XLEN() int { return m.xlen }

// Entry returns the entry point of the loaded program.
func (m *Machine) Entry() uint64 { return m.entry }

func (m *Machine) createHarts(xlen int) {
	m.xlen = xlen
	m.harts = make([]*Hart, m.cfg.Harts)
	for i := range m.harts {
		h := newHart(m, i, xlen)
		h.takenPenalty = m.timing.taken
		m.harts[i] = h
	}
}

// SetIngress connects hart's ingress port to s (nil disconnects).
func (m *Machine) SetIngress(hart int, s ingress.Sink) error {
	h := m.Hart(hart)
	if h == nil {
		return fmt.Errorf("sim: no hart %d (load a program first)", hart)
	}
	h.tr.sink = s
	h.tr.batch, _ = s.(BlockBatcher)
	h.tr.per = m.cfg.Mode == PerInstruction
	h.tr.afterBlock(h.pc)
	h.updateTraceFlags()
	return nil
}

// SetPCHook calls f with the address of every instruction hart retires,
// at every privilege level (nil removes the hook).
func (m *Machine) SetPCHook(hart int, f func(pc uint64)) error {
	h := m.Hart(hart)
	if h == nil {
		return fmt.Errorf("sim: no hart %d (load a program first)", hart)
	}
	h.tr.hook = f
	h.updateTraceFlags()
	return nil
}

func (h *Hart) updateTraceFlags() {
	// (a PC list needs the loop to leave at every jump and branch too:
	// retireCF then has no sink to report to)
	h.cf = h.tr.sink != nil && !h.tr.per || h.pcl != nil
	h.trOne = h.tr.hook != nil || (h.tr.sink != nil && h.tr.per)
	h.perInst = h.trOne || h.obs != nil
	h.brBatch = h.cf && !h.perInst && h.pcl == nil && h.tr.sink != nil && !h.tr.per && !h.m.noBrBatch
	h.updateFast()
}

// HasHTIF reports whether the loaded program has a tohost symbol: a
// bare-metal program without one cannot exit (the run ends at
// Config.MaxInstret, at Stop, or at a j . loop nothing can leave: ErrSpin).
func (m *Machine) HasHTIF() bool { return m.htif }

// LoadELF loads a bare-metal program: every PT_LOAD segment at its
// physical address, harts at the entry point in M-mode, registers as
// Spike's boot ROM leaves them (a0 = mhartid, a1 = 0x1020, t0 = entry).
// The tohost and fromhost symbols, when present, enable HTIF.
func (m *Machine) LoadELF(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	defer f.Close()
	if err := m.loadSegments(f, path, true); err != nil {
		return err
	}
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			switch s.Name {
			case "tohost":
				m.tohost = s.Value
				m.htif = true
			case "fromhost":
				m.fromhost = s.Value
			}
		}
	}
	if m.htif {
		m.mem.watch(m.tohost)
	}
	if err := m.installBootROM(); err != nil {
		return err
	}
	for _, h := range m.harts {
		h.pc = m.entry
		h.x[5] = h.sext32(m.entry)
		h.x[10] = uint64(h.id)
		h.x[11] = DTBAddr
		h.tr.afterBlock(h.pc)
	}
	return nil
}

func (m *Machine) loadSegments(f *elf.File, path string, physical bool) error {
	if m.loaded {
		return errors.New("sim: a program is already loaded")
	}
	if f.Machine != elf.EM_RISCV {
		return fmt.Errorf("sim: %s: not a RISC-V ELF (machine %v)", path, f.Machine)
	}
	if f.Data != elf.ELFDATA2LSB {
		return fmt.Errorf("sim: %s: big-endian ELF", path)
	}
	xlen := 64
	if f.Class == elf.ELFCLASS32 {
		xlen = 32
	}
	if m.cfg.XLEN != 0 && m.cfg.XLEN != xlen {
		return fmt.Errorf("sim: %s is RV%d, machine configured RV%d", path, xlen, m.cfg.XLEN)
	}
	m.createHarts(xlen)
	if err := m.setArch(f, path); err != nil {
		return err
	}
	m.path = path
	if m.mem.regions == nil {
		banks := m.cfg.Banks
		if banks == nil && physical {
			banks = []Bank{{0x20000000, m.cfg.RAMSize}, {0x80000000, m.cfg.RAMSize}}
		}
		for _, b := range banks {
			what := fmt.Sprintf("sim: RAM bank of %s (Config.RAMSize/Banks, rvtrace run --ram)", sizeString(b.Size))
			if err := m.mem.addRAM(b.Base, b.Size, what); err != nil {
				return err
			}
		}
	}
	return m.loadProgs(f, path, physical)
}

// loadProgs copies the PT_LOAD segments of f (the file path) to RAM,
// mapping banks for those outside every bank. Segment sizes are checked
// against the file and the RAM limit before anything is allocated.
func (m *Machine) loadProgs(f *elf.File, path string, physical bool) error {
	var fileSize uint64 = ^uint64(0)
	if st, err := os.Stat(path); err == nil && st.Mode().IsRegular() {
		fileSize = uint64(st.Size())
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_LOAD || p.Memsz == 0 {
			continue
		}
		addr := p.Paddr
		if !physical {
			addr = p.Vaddr
		}
		seg := fmt.Sprintf("sim: %s: segment at %#x of %s", path, addr, sizeString(p.Memsz))
		if p.Filesz > p.Memsz {
			return fmt.Errorf("%s: file size %#x larger than its memory size", seg, p.Filesz)
		}
		if p.Off > fileSize || p.Filesz > fileSize-p.Off {
			return fmt.Errorf("%s: bytes %#x+%#x lie beyond the end of the file (%d bytes)", seg, p.Off, p.Filesz, fileSize)
		}
		if addr+p.Memsz < addr || m.xlen == 32 && addr+p.Memsz > 1<<32 {
			return fmt.Errorf("%s: ends beyond the %d-bit address space", seg, m.xlen)
		}
		if err := m.ensureRAM(addr, p.Memsz, seg); err != nil {
			return err
		}
		// Copy in chunks straight from the file: no buffer of the
		// segment's size.
		buf := make([]byte, min(p.Filesz, 1<<20))
		for off := uint64(0); off < p.Filesz; off += uint64(len(buf)) {
			chunk := buf[:min(uint64(len(buf)), p.Filesz-off)]
			if _, err := p.ReadAt(chunk, int64(off)); err != nil {
				return fmt.Errorf("%s: reading it: %w", seg, err)
			}
			if !m.mem.write(addr+off, chunk) {
				return fmt.Errorf("%s: does not fit in RAM", seg)
			}
		}
		// bss is already zero
	}
	m.entry = f.Entry
	m.loaded = true
	return nil
}

// ensureRAM maps a bank for [addr, addr+n) when it is not all RAM yet;
// what names the segment in errors.
func (m *Machine) ensureRAM(addr, n uint64, what string) error {
	if m.mem.ramSlice(addr, n) != nil {
		return nil
	}
	const mb = 1 << 20
	if addr+n < addr || addr+n+mb-1 < addr+n {
		return fmt.Errorf("%s: wraps around the address space", what)
	}
	lo := addr &^ (mb - 1)
	hi := (addr + n + mb - 1) &^ (mb - 1)
	// trim against existing banks
	for _, r := range m.mem.regions {
		if r.base <= lo && lo < r.base+r.size {
			lo = r.base + r.size
		}
		if r.base < hi && hi <= r.base+r.size {
			hi = r.base
		}
	}
	if hi <= lo {
		return fmt.Errorf("%s: cannot map RAM for %#x+%#x", what, addr, n)
	}
	return m.mem.addRAM(lo, hi-lo, what)
}

// ErrStopped is the cause (errors.Is) of the GuestError Run returns when
// Stop ended the run.
var ErrStopped = errors.New("sim: stopped by the host")

// ErrInstructionLimit is the cause (errors.Is) of the GuestError Run
// returns when the harts retired Config.MaxInstret instructions.
var ErrInstructionLimit = errors.New("sim: instruction limit reached")

// Stop asks Run to end at the next boundary between quanta (at most
// Config.Quantum instructions later), as if the program had stopped
// there: the ingress sinks are closed, so encoders write their end
// message, and Run returns a GuestError whose cause is ErrStopped. It is
// safe to call from another goroutine (a signal handler).
func (m *Machine) Stop() { m.stop.Store(true) }

// Retired returns the instructions the harts have retired together, as of
// the last boundary between quanta of Run (at most Config.Quantum behind
// per hart). It is safe to call from another goroutine while Run goes (a
// progress display).
func (m *Machine) Retired() uint64 { return m.retired.Load() }

// ReadMem reads guest physical memory (RAM only).
func (m *Machine) ReadMem(pa uint64, b []byte) bool { return m.mem.read(pa, b) }

// WriteMem writes guest physical memory (RAM only).
func (m *Machine) WriteMem(pa uint64, b []byte) bool { return m.mem.write(pa, b) }

// Run runs the loaded program until it exits, fails or reaches the
// instruction limit. The harts take turns of Quantum instructions, in
// order; between turns the host polls tohost as Spike does. The ingress
// sinks are closed at the end.
func (m *Machine) Run() (res Result, err error) {
	if !m.loaded {
		return res, errors.New("sim: no program loaded")
	}
	for !m.done {
		if m.stop.Load() {
			h := m.harts[m.cur]
			raw, size := h.peekInst(h.pc)
			m.err = &GuestError{Hart: h.id, PC: h.pc, Raw: raw, Size: int(size), Msg: "stopped by the host", Err: ErrStopped}
			m.done = true
			break
		}
		// The host answers a tohost write (an exit at the very last
		// instruction allowed included) before the limit applies.
		if m.htif && !m.cfg.HTIFImmediate {
			if v, _ := m.mem.read64(m.tohost); v != 0 {
				m.mem.write64(m.tohost, 0)
				m.htifCommand(v)
				m.deliverFromhost()
				continue
			}
		}
		if m.cfg.MaxInstret != 0 && m.totalInstret() >= m.cfg.MaxInstret {
			h := m.harts[m.cur]
			raw, size := h.peekInst(h.pc)
			m.err = &GuestError{Hart: h.id, PC: h.pc, Raw: raw, Size: int(size),
				Msg: fmt.Sprintf("instruction limit %d reached (the instruction shown was not executed)", m.cfg.MaxInstret), Err: ErrInstructionLimit}
			m.done = true
			break
		}
		m.idle()
		m.deliverFromhost()
		m.retired.Store(m.totalInstret())
	}
	for _, h := range m.harts {
		if cerr := h.tr.close(); cerr != nil && m.err == nil {
			m.err = cerr
		}
		h.tr.sink = nil
		h.updateTraceFlags()
	}
	res.ExitCode = m.exitCode
	res.ExitInstret = m.exitInstret
	res.CodeWrites = m.codeWrites
	for _, h := range m.harts {
		res.Harts = append(res.Harts, HartStats{Instret: h.instret, Cycles: h.cycle,
			Exceptions: h.nExc, Interrupts: h.nIntr})
		res.Instret += h.instret
	}
	var ge *GuestError
	if errors.As(m.err, &ge) {
		if ge.XLEN == 0 {
			ge.XLEN = m.xlen
		}
		if ge.Ext == 0 {
			ge.Ext = riscv.DefaultExt(m.xlen)&^zcGroup | m.zc.ext()
		}
	}
	return res, m.err
}

func (m *Machine) totalInstret() uint64 {
	var n uint64
	for _, h := range m.harts {
		n += h.instret
	}
	return n
}

// idle runs the current hart for one quantum (Spike's sim_t::step with
// INTERLEAVE steps) and moves to the next hart; after a full round mtime
// advances.
func (m *Machine) idle() {
	h := m.harts[m.cur]
	if h.waiting && m.allWaiting() {
		m.fastForward()
		if m.done {
			return
		}
	}
	q := m.quantum
	if m.cfg.MaxInstret != 0 {
		left := m.cfg.MaxInstret - min(m.totalInstret(), m.cfg.MaxInstret)
		q = max(min(q, left), 1)
	}
	if !h.booted {
		// Spike's boot ROM runs 5 instructions of the first quantum
		h.booted = true
		q -= min(q-1, uint64(m.cfg.BootSteps))
	}
	h.step(q)
	if h.lnx == nil {
		// Spike: yield_load_reservation at the end of every quantum, even
		// with one hart (an LR/SC pair across the boundary fails). Linux
		// user mode runs one hart and keeps the reservation, as
		// qemu-riscv64 does: its SC then fails only when the program's
		// own rules say so (found by the differential test).
		h.resValid = false
	}
	if len(m.harts) == 1 && !m.done {
		m.skipSpin(h)
	}
	m.cur++
	if m.cur == len(m.harts) {
		m.cur = 0
		m.clint.mtime += m.quantum / m.timeDiv
		if m.input != nil {
			m.feedInput(0)
		}
	}
}

// ErrSpin is the cause (errors.Is) of the GuestError Run returns when the
// hart of a one-hart machine spins in a jump to itself (j .) that no
// interrupt can leave, with no instruction limit: the program cannot
// exit, so the run ends there instead of hanging.
var ErrSpin = errors.New("sim: the program spins forever")

// skipSpin ends the spinning of a lone hart in a j . loop that nothing can
// leave: no interrupt the hart enables (mie) can be taken at its
// privilege (interruptsMasked), so the loop runs forever. Without an
// instruction limit the run ends with an error (ErrSpin) instead of
// hanging, whatever watches the retirements (they have seen the
// instructions of the loop up to the end of the quantum). With a limit,
// the instructions and cycles the loop would retire up to the limit are
// counted at once (the run ends as if it had spun), unless a PC hook, an
// ingress sink, an observer or an armed counter watches the retirements:
// the loop then runs to the limit. Not in Linux user mode.
func (m *Machine) skipSpin(h *Hart) {
	if h.halted || h.waiting || h.lnx != nil || !h.interruptsMasked() {
		return
	}
	raw, size := h.peekInst(h.pc)
	if !(size == 4 && raw == 0x0000006f || size == 2 && raw == 0xa001) { // j . or c.j .
		return
	}
	if m.cfg.MaxInstret == 0 {
		if m.htif {
			if v, _ := m.mem.read64(m.tohost); v != 0 {
				return // a command the host has not seen yet (Run polls it)
			}
		}
		why := "interrupts disabled"
		if h.csr.mie != 0 {
			why = fmt.Sprintf("the interrupts mie enables (%#x) are masked in %s-mode", h.csr.mie, ingress.Priv(h.priv))
		}
		m.err = &GuestError{Hart: h.id, PC: h.pc, Raw: raw, Size: int(size), Err: ErrSpin,
			Msg: fmt.Sprintf("the hart spins forever in j . (%s: nothing can end the loop); the program did not exit, the run stops after %d instructions",
				why, m.totalInstret())}
		m.done = true
		return
	}
	if h.perInst || h.cf || h.obs != nil || h.hpm.armed {
		return
	}
	total := m.totalInstret()
	if total >= m.cfg.MaxInstret {
		return
	}
	left := m.cfg.MaxInstret - total
	d := h.decode(raw)
	cyc := uint64(m.timing.cost(&d))
	if d.itype != 0 && d.itype != 4 && d.itype < itEnd {
		cyc += h.takenPenalty
	}
	h.instret += left
	h.cycle += left * cyc
	h.lastSize = size
}

// interruptsMasked reports whether no interrupt the hart enables in mie
// can be taken at its privilege: a delegated one (mideleg) only below S
// mode or in S mode with sstatus.SIE set, another only below M mode or in
// M mode with mstatus.MIE set.
func (h *Hart) interruptsMasked() bool {
	for en := h.csr.mie; en != 0; en &= en - 1 {
		i := uint(bits.TrailingZeros64(en))
		if h.csr.mideleg>>i&1 != 0 {
			if h.priv < privS || h.priv == privS && h.csr.mstatus&mstatusSIE != 0 {
				return false
			}
		} else if h.priv < privM || h.csr.mstatus&mstatusMIE != 0 {
			return false
		}
	}
	return true
}

func (m *Machine) allWaiting() bool {
	for _, h := range m.harts {
		if !h.waiting && !h.halted {
			return false
		}
	}
	return true
}

// fastForward advances mtime to the first timer interrupt some waiting
// hart can take, or ends the run when none can come.
func (m *Machine) fastForward() {
	best := ^uint64(0)
	for _, h := range m.harts {
		if h.halted {
			continue
		}
		if h.pendingInterrupts()&h.csr.mie != 0 {
			return
		}
		if h.csr.mie&(1<<irqMTI) != 0 && m.clint.mtimecmp[h.id] < best {
			best = m.clint.mtimecmp[h.id]
		}
		if m.sstc != nil && h.csr.menvcfg&menvcfgSTCE != 0 && h.csr.mie&(1<<irqSTI) != 0 && m.sstc[h.id] < best {
			best = m.sstc[h.id]
		}
	}
	if m.input != nil {
		var ticks uint64
		if best != ^uint64(0) && best > m.clint.mtime {
			ticks = best - m.clint.mtime
		}
		if m.idleInput(best != ^uint64(0), ticks) {
			return
		}
	}
	if best == ^uint64(0) {
		h := m.harts[m.cur]
		raw, size := h.peekInst(h.pc)
		m.err = &GuestError{Hart: h.id, PC: h.pc, Raw: raw, Size: int(size),
			Msg: "every hart waits (wfi) for an interrupt that cannot come"}
		m.done = true
		return
	}
	tick := m.quantum / m.timeDiv
	if tick == 0 {
		tick = 1
	}
	if best > m.clint.mtime {
		rounds := (best - m.clint.mtime + tick - 1) / tick
		m.clint.mtime += (rounds - 1) * tick
	}
}

// HTIF (host-target interface).

// watchedStore is called after a store to a watched page (tohost's).
func (m *Machine) watchedStore(h *Hart, pa, size uint64) {
	if !m.htif || pa >= m.tohost+8 || pa+size <= m.tohost {
		return
	}
	v, _ := m.mem.read64(m.tohost)
	if !m.done {
		// the last store to tohost before the host acts on it
		m.exitInstret = m.totalInstret() + 1
	}
	// An exit command ends the run on the store that writes it, as the
	// instruction counts of Spike's logs do: polling it later would
	// retire the program's final spin loop (j .) until the host looks.
	// On RV32 the exit is two stores, the low word then the high one:
	// the run ends on the one that completes the doubleword.
	if m.cfg.HTIFImmediate || pa+size == m.tohost+8 && m.isExit(v) {
		if v != 0 {
			m.mem.write64(m.tohost, 0)
			m.htifCommand(v)
			m.deliverFromhost()
			h.stop = true
		}
	}
}

// isExit tells whether the tohost command v ends the program: an exit
// code, or a syscall-proxy exit whose magic_mem the guest has written.
func (m *Machine) isExit(v uint64) bool {
	if v == 0 || v>>48 != 0 {
		return false
	}
	if v&1 != 0 {
		return true
	}
	nr, ok := m.mem.read64(v)
	return ok && nr == sysExit
}

func (m *Machine) deliverFromhost() {
	if len(m.fromQueue) == 0 || m.fromhost == 0 {
		return
	}
	if v, ok := m.mem.read64(m.fromhost); ok && v == 0 {
		m.mem.write64(m.fromhost, m.fromQueue[0])
		m.fromQueue = m.fromQueue[1:]
	}
}

// Syscall numbers of the HTIF proxy (riscv-pk / newlib numbering).
const (
	sysWrite       = 64
	sysExit        = 93
	sysGetmainvars = 2011
)

// getmainvars writes argc, argv[], a NULL envp and the strings to the
// guest buffer at buf (the layout of Spike's frontend).
func (m *Machine) getmainvars(buf, limit uint64) uint64 {
	args := append([]string{filepathBase(m.path)}, m.cfg.Args...)
	words := make([]uint64, len(args)+3)
	words[0] = uint64(len(args))
	sz := uint64(len(words) * 8)
	var strs []byte
	for i, a := range args {
		words[i+1] = buf + sz + uint64(len(strs))
		strs = append(append(strs, a...), 0)
	}
	if sz+uint64(len(strs)) > limit {
		return uint64(1<<64 - 12) // -ENOMEM
	}
	var b []byte
	for _, w := range words {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	if !m.mem.write(buf, append(b, strs...)) {
		return uint64(1<<64 - 14)
	}
	return 0
}

// htifCommand executes one tohost command: device 0 is the syscall proxy
// (payload bit 0 set: exit with code payload>>1; otherwise payload points
// to magic_mem, eight 64-bit words: syscall number and arguments; the
// result goes back to magic_mem[0] and fromhost is set to 1), device 1
// the console (command 1 prints a character).
func (m *Machine) htifCommand(v uint64) {
	dev, cmd, payload := v>>56, (v>>48)&0xff, v<<16>>16
	switch {
	case dev == 0 && cmd == 0:
		if payload&1 != 0 {
			m.exit(int(payload >> 1))
			return
		}
		var w [8]uint64
		for i := range w {
			w[i], _ = m.mem.read64(payload + 8*uint64(i))
		}
		ret := uint64(1<<64 - 38) // -ENOSYS
		switch w[0] {
		case sysWrite:
			buf := make([]byte, min(w[3], 1<<24))
			if m.mem.read(w[2], buf) {
				switch w[1] {
				case 1:
					_, _ = m.stdout.Write(buf)
				case 2:
					_, _ = m.stderr.Write(buf)
				}
				ret = uint64(len(buf))
			} else {
				ret = uint64(1<<64 - 14) // -EFAULT
			}
		case sysExit:
			m.exit(int(int64(w[1])))
			return
		case sysGetmainvars:
			ret = m.getmainvars(w[1], w[2])
		}
		m.mem.write64(payload, ret)
		m.fromQueue = append(m.fromQueue, dev<<56|cmd<<48|1)
	case dev == 1 && cmd == 1:
		_, _ = m.stdout.Write([]byte{byte(payload)})
	}
}

func (m *Machine) exit(code int) {
	m.exitCode = code
	m.done = true
	for _, h := range m.harts {
		h.stop = true
	}
}

// RunELF is a convenience: load a bare-metal ELF into a new machine and
// run it.
func RunELF(path string, cfg Config) (Result, error) {
	m, err := New(cfg)
	if err != nil {
		return Result{}, err
	}
	if err := m.LoadELF(path); err != nil {
		return Result{}, err
	}
	return m.Run()
}

func filepathBase(p string) string { return filepath.Base(p) }
