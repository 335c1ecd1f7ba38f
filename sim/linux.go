package sim

import (
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Linux user mode.
//
// LoadLinuxELF runs a statically linked riscv64 Linux program in U-mode
// with the kernel emulated at the system-call boundary: an ecall performs
// the system call (a7 = number, a0..a5 = arguments, a0 = result) and
// retires like any instruction. Address translation is off (virtual =
// physical): the program's segments, its brk heap, an mmap area and the
// stack are RAM banks at the addresses a Linux kernel (or qemu-user) would
// use. Host files can be opened read-only; standard output and error go to
// Config.Stdout/Stderr and look like pipes to the program (as when
// qemu-riscv64's output is captured). Any exception other than the ecall
// ends the run with a GuestError naming the PC and the instruction (where
// Linux would deliver SIGSEGV, SIGILL, SIGBUS or SIGTRAP).

const (
	linuxStackTop   = 0x4000801000 // qemu-riscv64's stack top
	linuxStackTop32 = 0x40801000   // qemu-riscv32's
	linuxStackSize  = 8 << 20
	linuxMmapBase   = 0x2000000000
	linuxMmapBase32 = 0x20000000
	linuxPageSize   = 4096
)

type linuxFile struct {
	f    *os.File
	name string
}

type linuxState struct {
	brkStart, brk, brkEnd uint64
	mmapNext, mmapEnd     uint64
	files                 map[uint64]*linuxFile
	nextFD                uint64
	exe                   string
	rand                  uint64 // state of the deterministic getrandom
}

// Errno values returned to the guest.
const (
	ePERM   = 1
	eNOENT  = 2
	eBADF   = 9
	eNOMEM  = 12
	eACCES  = 13
	eFAULT  = 14
	eINVAL  = 22
	eNOTTY  = 25
	eNOSYS  = 38
	eRANGE  = 34
	eNODEV  = 19
	eROFS   = 30
	eNOEXEC = 8
)

// LoadLinuxELF loads a static riscv64 (or riscv32) Linux executable with
// its argument and environment strings (argv[0] is the program name; nil
// argv uses the path). envp is passed as is (nil: empty environment).
//
// RV32 programs get the riscv32 stack layout (4-byte words) and system
// call arguments and results of 32 bits; the system calls whose riscv32
// numbers or structures differ from riscv64's (fstat, newfstatat,
// lseek/llseek, clock_gettime, gettimeofday) answer ENOSYS.
func (m *Machine) LoadLinuxELF(path string, argv, envp []string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("sim: %w", err)
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC {
		return fmt.Errorf("sim: %s: not a static executable (type %v)", path, f.Type)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("sim: %s: dynamically linked programs are not supported", path)
		}
	}
	if m.cfg.Harts != 1 {
		return errors.New("sim: Linux user mode runs one hart")
	}
	// memory: segments + brk heap, mmap area, stack
	var lo, hi uint64 = ^uint64(0), 0
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Memsz > 0 {
			if p.Vaddr+p.Memsz < p.Vaddr {
				return fmt.Errorf("sim: %s: segment at %#x of %s ends beyond the address space", path, p.Vaddr, sizeString(p.Memsz))
			}
			lo = min(lo, p.Vaddr&^(linuxPageSize-1))
			hi = max(hi, p.Vaddr+p.Memsz)
		}
	}
	if hi == 0 {
		return fmt.Errorf("sim: %s: no loadable segment", path)
	}
	brk := (hi + linuxPageSize - 1) &^ (linuxPageSize - 1)
	heap := m.cfg.RAMSize
	stackTop, mmapBase := uint64(linuxStackTop), uint64(linuxMmapBase)
	if f.Class == elf.ELFCLASS32 {
		stackTop, mmapBase = linuxStackTop32, linuxMmapBase32
	}
	m.cfg.Banks = []Bank{
		{lo, brk - lo + heap},
		{mmapBase, 4 * m.cfg.RAMSize},
		{stackTop - linuxStackSize, linuxStackSize},
	}
	for i, b := range m.cfg.Banks {
		what := []string{fmt.Sprintf("sim: %s: segments of %s and brk heap of %s (Config.RAMSize, rvtrace run --ram)", path, sizeString(brk-lo), sizeString(heap)),
			fmt.Sprintf("sim: %s: mmap area of 4 × %s (Config.RAMSize, rvtrace run --ram)", path, sizeString(m.cfg.RAMSize)),
			"sim: stack"}[i]
		if err := m.mem.addRAM(b.Base, b.Size, what); err != nil {
			return err
		}
	}
	m.cfg.Misaligned = true // the kernel emulates misaligned accesses
	m.noPMP = true
	if err := m.loadSegments(f, path, false); err != nil {
		return err
	}
	// /proc/self/exe reads as the real path, as qemu-riscv64 answers
	// (relative to the physical working directory, not $PWD)
	exe := path
	if !filepath.IsAbs(exe) {
		if wd, err := syscall.Getwd(); err == nil {
			exe = filepath.Join(wd, exe)
		}
	}
	if r, err := filepath.EvalSymlinks(exe); err == nil {
		exe = r
	}
	h := m.harts[0]
	h.lnx = &linuxState{
		brkStart: brk, brk: brk, brkEnd: brk + heap,
		mmapNext: mmapBase, mmapEnd: mmapBase + 4*m.cfg.RAMSize,
		files: map[uint64]*linuxFile{}, nextFD: 3, exe: exe, rand: 0x9e3779b97f4a7c15,
	}
	h.priv = privU
	h.setMstatus(h.csr.mstatus | 1<<13) // FS = Initial
	// Linux (6.7 and later) lets programs use cbo.zero, not the other
	// cache-block operations.
	h.csr.menvcfg, h.csr.senvcfg = envcfgCBZE, envcfgCBZE
	if argv == nil {
		argv = []string{path}
	}
	// program headers in memory (for AT_PHDR)
	var phdr uint64
	for _, p := range f.Progs {
		if p.Type == elf.PT_PHDR {
			phdr = p.Vaddr
		}
	}
	if phdr == 0 {
		for _, p := range f.Progs {
			if p.Type == elf.PT_LOAD && p.Off == 0 {
				phdr = p.Vaddr + phoff(path, f.Class)
			}
		}
	}
	phent := uint64(56)
	if f.Class == elf.ELFCLASS32 {
		phent = 32
	}
	sp, err := m.linuxStack(stackTop, argv, envp, path, []uint64{
		3, phdr, // AT_PHDR
		4, phent, // AT_PHENT
		5, uint64(len(f.Progs)), // AT_PHNUM
		6, linuxPageSize, // AT_PAGESZ
		7, 0, // AT_BASE
		8, 0, // AT_FLAGS
		9, f.Entry, // AT_ENTRY
		11, 0, 12, 0, 13, 0, 14, 0, // AT_UID, AT_EUID, AT_GID, AT_EGID
		16, hwcap(), // AT_HWCAP
		17, 100, // AT_CLKTCK
	})
	if err != nil {
		return err
	}
	h.pc = f.Entry
	h.x[2] = sp
	h.tr.afterBlock(h.pc)
	return nil
}

// phoff reads e_phoff from an ELF header.
func phoff(path string, class elf.Class) uint64 {
	def := uint64(64)
	if class == elf.ELFCLASS32 {
		def = 52
	}
	fh, err := os.Open(path)
	if err != nil {
		return def
	}
	defer fh.Close()
	var hdr [40]byte
	if _, err := io.ReadFull(fh, hdr[:]); err != nil {
		return def
	}
	if class == elf.ELFCLASS32 {
		return uint64(binary.LittleEndian.Uint32(hdr[28:]))
	}
	return binary.LittleEndian.Uint64(hdr[32:])
}

// hwcap returns AT_HWCAP: the single-letter extensions, as misa bits.
func hwcap() uint64 {
	var v uint64
	for _, c := range "IMAFDC" {
		v |= 1 << uint(c-'A')
	}
	return v
}

// linuxStack builds the initial stack as the kernel (and qemu-riscv64)
// does: strings at the top (the executable name as given, then the
// environment and argument strings),
// 16 random bytes, then argc, argv[], NULL, envp[], NULL and the auxiliary
// vector, 16-byte aligned (XLEN-bit words).
func (m *Machine) linuxStack(top uint64, argv, envp []string, exe string, aux []uint64) (uint64, error) {
	sp := top - 8
	push := func(s string) uint64 {
		sp -= uint64(len(s) + 1)
		m.mem.write(sp, append([]byte(s), 0))
		return sp
	}
	execfn := push(exe)
	envPtrs := make([]uint64, len(envp))
	for i := len(envp) - 1; i >= 0; i-- {
		envPtrs[i] = push(envp[i])
	}
	argPtrs := make([]uint64, len(argv))
	for i := len(argv) - 1; i >= 0; i-- {
		argPtrs[i] = push(argv[i])
	}
	sp &^= 15
	sp -= 16
	random := sp
	var rb [16]byte
	for i := range rb {
		rb[i] = byte(i*37 + 11)
	}
	m.mem.write(random, rb[:])
	aux = append(aux, 25, random, 23, 0, 31, execfn, 0, 0) // AT_RANDOM, AT_SECURE, AT_EXECFN, AT_NULL
	var words []uint64
	words = append(words, uint64(len(argv)))
	words = append(words, argPtrs...)
	words = append(words, 0)
	words = append(words, envPtrs...)
	words = append(words, 0)
	words = append(words, aux...)
	wb := uint64(m.xlen / 8)
	sp -= uint64(len(words)) * wb
	sp &^= 15
	b := make([]byte, 0, len(words)*8)
	for _, w := range words {
		if wb == 4 {
			b = binary.LittleEndian.AppendUint32(b, uint32(w))
		} else {
			b = binary.LittleEndian.AppendUint64(b, w)
		}
	}
	if !m.mem.write(sp, b) {
		return 0, errors.New("sim: arguments do not fit on the stack")
	}
	return sp, nil
}

// linuxTrap ends the run on an exception (Linux would send a signal).
func (h *Hart) linuxTrap(cause, tval uint64, d *inst) {
	raw, size := h.peekInst(h.pc)
	if d != nil {
		raw, size = d.raw, d.size
	}
	sig := map[uint64]string{
		causeFetchAccess: "SIGSEGV", causeLoadAccess: "SIGSEGV", causeStoreAccess: "SIGSEGV",
		causeFetchPageFault: "SIGSEGV", causeLoadPageFault: "SIGSEGV", causeStorePageFault: "SIGSEGV",
		causeIllegal: "SIGILL", causeBreakpoint: "SIGTRAP",
		causeLoadMisaligned: "SIGBUS", causeStoreMisaligned: "SIGBUS", causeFetchMisaligned: "SIGBUS",
	}[cause]
	if sig == "" {
		sig = "fatal signal"
	}
	h.fail(&GuestError{Hart: h.id, PC: h.pc, Raw: raw, Size: int(size), Cause: cause, TVal: tval,
		Msg: fmt.Sprintf("%s (tval %#x): %s", causeName(cause), tval, sig)})
}

func neg(e uint64) uint64 { return -e }

// guest memory helpers for system calls (user addresses are physical)

func (h *Hart) readGuest(addr, n uint64) ([]byte, bool) {
	if n > 1<<30 {
		return nil, false
	}
	b := make([]byte, n)
	return b, h.m.mem.read(addr, b)
}

func (h *Hart) readCString(addr uint64) (string, bool) {
	var s []byte
	for len(s) < 4096 {
		var c [1]byte
		if !h.m.mem.read(addr+uint64(len(s)), c[:]) {
			return "", false
		}
		if c[0] == 0 {
			return string(s), true
		}
		s = append(s, c[0])
	}
	return "", false
}

// linuxSyscall performs the system call of an ecall.
func (h *Hart) linuxSyscall() {
	x := &h.x
	nr := x[17] & h.amask
	a0, a1, a2, a3 := x[10]&h.amask, x[11]&h.amask, x[12]&h.amask, x[13]&h.amask
	l := h.lnx
	m := h.m
	ret := neg(eNOSYS)
	orig, handled := nr, false
	if h.xlen == 32 {
		switch nr {
		case 79, 80, 62, 113, 169: // not riscv32 system calls (or not with these structures)
			nr = ^uint64(0)
		case 66: // writev with 8-byte struct iovec
			nr, handled = ^uint64(0), true
			var total uint64
			ret = 0
			for i := uint64(0); i < a2; i++ {
				iov, ok := h.readGuest(a1+8*i, 8)
				if !ok {
					ret = neg(eFAULT)
					break
				}
				r := h.sysWrite(a0, uint64(binary.LittleEndian.Uint32(iov)), uint64(binary.LittleEndian.Uint32(iov[4:])))
				if int64(r) < 0 {
					ret = r
					break
				}
				total += r
				ret = total
			}
		}
	}
	switch nr {
	case 63: // read
		ret = h.sysRead(a0, a1, a2, -1)
	case 67: // pread64
		ret = h.sysRead(a0, a1, a2, int64(a3))
	case 64: // write
		ret = h.sysWrite(a0, a1, a2)
	case 66: // writev
		var total uint64
		ret = 0
		for i := uint64(0); i < a2; i++ {
			iov, ok := h.readGuest(a1+16*i, 16)
			if !ok {
				ret = neg(eFAULT)
				break
			}
			r := h.sysWrite(a0, binary.LittleEndian.Uint64(iov), binary.LittleEndian.Uint64(iov[8:]))
			if int64(r) < 0 {
				ret = r
				break
			}
			total += r
			ret = total
		}
	case 56: // openat
		ret = h.sysOpenat(a0, a1, a2)
	case 57: // close
		if f, ok := l.files[a0]; ok {
			f.f.Close()
			delete(l.files, a0)
			ret = 0
		} else if a0 <= 2 {
			ret = 0
		} else {
			ret = neg(eBADF)
		}
	case 62: // lseek
		if f, ok := l.files[a0]; ok {
			off, err := f.f.Seek(int64(a1), int(a2))
			ret = errnoOr(uint64(off), err)
		} else {
			ret = neg(eBADF)
		}
	case 80: // fstat
		ret = h.sysFstat(a0, a1)
	case 79: // newfstatat
		name, ok := h.readCString(a1)
		switch {
		case !ok:
			ret = neg(eFAULT)
		case name == "" && a3&0x1000 != 0: // AT_EMPTY_PATH
			ret = h.sysFstat(a0, a2)
		default:
			fi, err := os.Stat(h.hostPath(a0, name))
			if err != nil {
				ret = errnoOr(0, err)
			} else {
				ret = h.writeStat(a2, statOf(fi))
			}
		}
	case 48, 439: // faccessat, faccessat2
		name, ok := h.readCString(a1)
		if !ok {
			ret = neg(eFAULT)
		} else if _, err := os.Stat(h.hostPath(a0, name)); err != nil {
			ret = errnoOr(0, err)
		} else if a2&2 != 0 { // W_OK: host files are read-only
			ret = neg(eROFS)
		} else {
			ret = 0
		}
	case 78: // readlinkat
		name, ok := h.readCString(a1)
		if !ok {
			ret = neg(eFAULT)
		} else if name == "/proc/self/exe" {
			n := min(uint64(len(l.exe)), a3)
			m.mem.write(a2, []byte(l.exe[:n]))
			ret = n
		} else if t, err := os.Readlink(h.hostPath(a0, name)); err != nil {
			ret = errnoOr(0, err)
		} else {
			n := min(uint64(len(t)), a3)
			m.mem.write(a2, []byte(t[:n]))
			ret = n
		}
	case 29: // ioctl
		ret = neg(eNOTTY)
	case 214: // brk
		if a0 >= l.brkStart && a0 <= l.brkEnd {
			if a0 < l.brk {
				m.mem.write(a0, make([]byte, l.brk-a0))
			}
			l.brk = a0
		}
		ret = l.brk
	case 222: // mmap
		ret = h.sysMmap(a0, a1, x[13]&h.amask, x[14]&h.amask)
	case 215, 226, 233: // munmap, mprotect, madvise
		ret = 0
	case 93, 94: // exit, exit_group
		m.exit(int(int32(a0)))
		h.stop = true
		ret = 0
	case 113: // clock_gettime
		ns := h.instret // a 1 GHz clock of retired instructions: deterministic
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], ns/1e9)
		binary.LittleEndian.PutUint64(b[8:], ns%1e9)
		ret = writeOr(m, a1, b[:])
	case 169: // gettimeofday
		ns := h.instret
		var b [16]byte
		binary.LittleEndian.PutUint64(b[:], ns/1e9)
		binary.LittleEndian.PutUint64(b[8:], ns%1e9/1000)
		ret = 0
		if a0 != 0 {
			ret = writeOr(m, a0, b[:])
		}
	case 160: // uname
		var b [6 * 65]byte
		for i, s := range []string{"Linux", "rvtrace", "6.1.0", "#1 SMP", "riscv64", "(none)"} {
			copy(b[i*65:], s)
		}
		ret = writeOr(m, a0, b[:])
	case 96: // set_tid_address
		ret = 1000
	case 172, 178: // getpid, gettid
		ret = 1000
	case 173: // getppid
		ret = 999
	case 174, 175, 176, 177: // getuid, geteuid, getgid, getegid
		ret = 0
	case 99: // set_robust_list: ENOSYS, as qemu-riscv64 answers
		ret = neg(eNOSYS)
	case 134: // rt_sigaction
		ret = 0
		if a2 != 0 {
			ret = writeOr(m, a2, make([]byte, 32))
		}
	case 135: // rt_sigprocmask
		ret = 0
		if a2 != 0 {
			ret = writeOr(m, a2, make([]byte, 8))
		}
	case 261: // prlimit64
		ret = 0
		if a3 != 0 {
			var b [16]byte
			cur, mx := ^uint64(0), ^uint64(0)
			if a1 == 3 { // RLIMIT_STACK
				cur = linuxStackSize
			}
			binary.LittleEndian.PutUint64(b[:], cur)
			binary.LittleEndian.PutUint64(b[8:], mx)
			ret = writeOr(m, a3, b[:])
		}
	case 278: // getrandom: deterministic bytes
		b := make([]byte, min(a1, 1<<20))
		for i := range b {
			l.rand ^= l.rand << 13
			l.rand ^= l.rand >> 7
			l.rand ^= l.rand << 17
			b[i] = byte(l.rand)
		}
		ret = writeOr(m, a0, b)
		if ret == 0 {
			ret = uint64(len(b))
		}
	case 98: // futex: one thread, nothing to wait for
		ret = 0
	case 124: // sched_yield
		ret = 0
	case 131, 129: // tgkill, kill: deliver SIGABRT and the like by ending the run
		m.exit(128 + int(a2&0x7f))
		h.stop = true
		ret = 0
	case 179: // sysinfo
		ret = h.sysinfo(a0)
	default:
		if !handled {
			h.unsupportedSyscall(orig)
		}
	}
	x[10] = h.sext32(ret)
}

// unsupportedSyscall names a system call the emulation does not implement
// (answered ENOSYS) on Config.Diagnostics, once per number, and records
// it for UnsupportedSyscalls.
func (h *Hart) unsupportedSyscall(nr uint64) {
	m := h.m
	for _, n := range m.unsupported {
		if n == nr {
			return
		}
	}
	m.unsupported = append(m.unsupported, nr)
	if m.cfg.Diagnostics != nil {
		fmt.Fprintf(m.cfg.Diagnostics, "sim: %s: unsupported system call %s at pc %#x, answered ENOSYS\n",
			filepath.Base(m.path), SyscallName(nr, h.xlen), h.pc)
	}
}

// UnsupportedSyscalls returns the numbers of the system calls the Linux
// program made that the emulation does not implement (each answered
// ENOSYS), in the order of their first call. set_robust_list is answered
// ENOSYS on purpose, as qemu-riscv64 does, and is not listed.
func (m *Machine) UnsupportedSyscalls() []uint64 { return m.unsupported }

// sysinfo writes struct sysinfo (asm-generic layout: longs of XLEN bits).
// The answer is deterministic and describes the emulated machine, not the
// host (qemu-riscv64 passes the host's through): uptime is the retired
// instruction count at 1 GHz, the clock clock_gettime reads; the loads
// are 0; totalram is the guest RAM of the brk heap and mmap area, freeram
// what the program has not taken of it yet; no shared, buffer, swap or
// high memory; one process; mem_unit 1.
func (h *Hart) sysinfo(addr uint64) uint64 {
	l := h.lnx
	w := uint64(h.xlen / 8)
	total := (l.brkEnd - l.brkStart) + (l.mmapEnd - linuxMmapStart(h))
	free := (l.brkEnd - l.brk) + (l.mmapEnd - l.mmapNext)
	size := 64
	if w == 8 {
		size = 112
	}
	b := make([]byte, size)
	put := func(off, v uint64) {
		if w == 8 {
			binary.LittleEndian.PutUint64(b[off:], v)
		} else {
			binary.LittleEndian.PutUint32(b[off:], uint32(min(v, 1<<32-1)))
		}
	}
	put(0, h.instret/1e9)                      // uptime
	put(4*w, total)                            // totalram (after loads[3])
	put(5*w, free)                             // freeram
	binary.LittleEndian.PutUint16(b[10*w:], 1) // procs
	binary.LittleEndian.PutUint32(b[13*w:], 1) // mem_unit
	return writeOr(h.m, addr, b)
}

// linuxMmapStart returns the base of the mmap area.
func linuxMmapStart(h *Hart) uint64 {
	if h.xlen == 32 {
		return linuxMmapBase32
	}
	return linuxMmapBase
}

func writeOr(m *Machine, addr uint64, b []byte) uint64 {
	if !m.mem.write(addr, b) {
		return neg(eFAULT)
	}
	return 0
}

func errnoOr(v uint64, err error) uint64 {
	if err == nil {
		return v
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return neg(uint64(errno))
	}
	if errors.Is(err, fs.ErrNotExist) {
		return neg(eNOENT)
	}
	if errors.Is(err, fs.ErrPermission) {
		return neg(eACCES)
	}
	return neg(eINVAL)
}

// hostPath resolves a guest path (relative paths against the host's
// working directory; dirfd other than AT_FDCWD is taken as that file's
// directory).
func (h *Hart) hostPath(dirfd uint64, name string) string {
	if filepath.IsAbs(name) || int64(dirfd) == -100 {
		return name
	}
	if f, ok := h.lnx.files[dirfd]; ok {
		return filepath.Join(f.name, name)
	}
	return name
}

func (h *Hart) sysOpenat(dirfd, pname, flags uint64) uint64 {
	name, ok := h.readCString(pname)
	if !ok {
		return neg(eFAULT)
	}
	if flags&3 != 0 || flags&0x40 != 0 { // O_WRONLY/O_RDWR/O_CREAT
		return neg(eROFS)
	}
	f, err := os.Open(h.hostPath(dirfd, name))
	if err != nil {
		return errnoOr(0, err)
	}
	fd := h.lnx.nextFD
	h.lnx.nextFD++
	h.lnx.files[fd] = &linuxFile{f: f, name: h.hostPath(dirfd, name)}
	return fd
}

func (h *Hart) sysRead(fd, buf, n uint64, off int64) uint64 {
	if fd == 0 {
		return 0 // no input
	}
	f, ok := h.lnx.files[fd]
	if !ok {
		return neg(eBADF)
	}
	b := make([]byte, min(n, 1<<24))
	var k int
	var err error
	if off >= 0 {
		k, err = f.f.ReadAt(b, off)
	} else {
		k, err = f.f.Read(b)
	}
	if err != nil && err != io.EOF && k == 0 {
		return errnoOr(0, err)
	}
	if !h.m.mem.write(buf, b[:k]) {
		return neg(eFAULT)
	}
	return uint64(k)
}

func (h *Hart) sysWrite(fd, buf, n uint64) uint64 {
	var w io.Writer
	switch fd {
	case 1:
		w = h.m.stdout
	case 2:
		w = h.m.stderr
	default:
		if _, ok := h.lnx.files[fd]; ok {
			return neg(eBADF) // opened read-only
		}
		return neg(eBADF)
	}
	b, ok := h.readGuest(buf, n)
	if !ok {
		return neg(eFAULT)
	}
	if _, err := w.Write(b); err != nil {
		return errnoOr(0, err) // as the kernel: ENOSPC on a full disk, EPIPE...
	}
	return n
}

func (h *Hart) sysMmap(addr, length, flags, fd uint64) uint64 {
	l := h.lnx
	if flags&0x20 == 0 { // not MAP_ANONYMOUS
		return neg(eNODEV)
	}
	n := (length + linuxPageSize - 1) &^ (linuxPageSize - 1)
	if n == 0 {
		return neg(eINVAL)
	}
	if flags&0x10 != 0 { // MAP_FIXED
		if !h.m.mem.write(addr, make([]byte, n)) {
			return neg(eNOMEM)
		}
		return addr
	}
	if l.mmapNext+n > l.mmapEnd {
		return neg(eNOMEM)
	}
	a := l.mmapNext
	l.mmapNext += n
	return a
}

// stat is the part of struct stat the guest sees.
type stat struct {
	mode, size, blksize, mtime uint64
}

func statOf(fi fs.FileInfo) stat {
	mode := uint64(fi.Mode().Perm())
	switch {
	case fi.IsDir():
		mode |= 0o040000
	case fi.Mode()&fs.ModeCharDevice != 0:
		mode |= 0o020000
	case fi.Mode()&fs.ModeNamedPipe != 0:
		mode |= 0o010000
	default:
		mode |= 0o100000
	}
	return stat{mode: mode, size: uint64(fi.Size()), blksize: 4096, mtime: uint64(fi.ModTime().Unix())}
}

func (h *Hart) sysFstat(fd, buf uint64) uint64 {
	if fd <= 2 {
		// the standard streams are pipes (as for a captured qemu-riscv64)
		return h.writeStat(buf, stat{mode: 0o010600, blksize: 4096})
	}
	f, ok := h.lnx.files[fd]
	if !ok {
		return neg(eBADF)
	}
	fi, err := f.f.Stat()
	if err != nil {
		return errnoOr(0, err)
	}
	return h.writeStat(buf, statOf(fi))
}

// writeStat writes a riscv64 (asm-generic) struct stat.
func (h *Hart) writeStat(buf uint64, s stat) uint64 {
	var b [128]byte
	binary.LittleEndian.PutUint64(b[0:], 1) // st_dev
	binary.LittleEndian.PutUint64(b[8:], 1) // st_ino
	binary.LittleEndian.PutUint32(b[16:], uint32(s.mode))
	binary.LittleEndian.PutUint32(b[20:], 1) // st_nlink
	binary.LittleEndian.PutUint64(b[48:], s.size)
	binary.LittleEndian.PutUint32(b[56:], uint32(s.blksize))
	binary.LittleEndian.PutUint64(b[64:], (s.size+511)/512)
	binary.LittleEndian.PutUint64(b[88:], s.mtime)
	return writeOr(h.m, buf, b[:])
}

// RunLinuxELF is a convenience: load a static Linux program into a new
// machine and run it.
func RunLinuxELF(path string, argv, envp []string, cfg Config) (Result, error) {
	m, err := New(cfg)
	if err != nil {
		return Result{}, err
	}
	if err := m.LoadLinuxELF(path, argv, envp); err != nil {
		return Result{}, err
	}
	return m.Run()
}
