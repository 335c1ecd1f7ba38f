package tarmac

import (
	"bufio"
	"fmt"
	"io"
	"strconv"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// Reg numbers a RISC-V register for [Writer.RegWrite]: 0..31 are the
// integer registers x0..x31, RegF+n the floating-point register fn, and
// RegCSR+n the CSR numbered n.
type Reg uint16

// Register number bases.
const (
	RegX   Reg = 0
	RegF   Reg = 32
	RegCSR Reg = 0x1000
)

var xNames = [32]string{
	"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "s0", "s1", "a0", "a1", "a2", "a3", "a4", "a5",
	"a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
}

var fNames = [32]string{
	"ft0", "ft1", "ft2", "ft3", "ft4", "ft5", "ft6", "ft7", "fs0", "fs1", "fa0", "fa1", "fa2", "fa3", "fa4", "fa5",
	"fa6", "fa7", "fs2", "fs3", "fs4", "fs5", "fs6", "fs7", "fs8", "fs9", "fs10", "fs11", "ft8", "ft9", "ft10", "ft11",
}

var csrNames = map[uint16]string{
	0x001: "fflags", 0x002: "frm", 0x003: "fcsr", 0x008: "vstart", 0x009: "vxsat", 0x00a: "vxrm", 0x00f: "vcsr", 0x015: "seed", 0x017: "jvt",
	0xc00: "cycle", 0xc01: "time", 0xc02: "instret", 0xc20: "vl", 0xc21: "vtype", 0xc22: "vlenb",
	0x100: "sstatus", 0x104: "sie", 0x105: "stvec", 0x106: "scounteren", 0x10a: "senvcfg", 0x140: "sscratch",
	0x141: "sepc", 0x142: "scause", 0x143: "stval", 0x144: "sip", 0x14d: "stimecmp", 0x180: "satp", 0x5a8: "scontext",
	0x600: "hstatus", 0x602: "hedeleg", 0x603: "hideleg", 0x604: "hie", 0x606: "hcounteren", 0x607: "hgeie",
	0x643: "htval", 0x644: "hip", 0x645: "hvip", 0x64a: "htinst", 0x680: "hgatp", 0x6a8: "hcontext",
	0x200: "vsstatus", 0x204: "vsie", 0x205: "vstvec", 0x240: "vsscratch", 0x241: "vsepc", 0x242: "vscause",
	0x243: "vstval", 0x244: "vsip", 0x280: "vsatp",
	0xf11: "mvendorid", 0xf12: "marchid", 0xf13: "mimpid", 0xf14: "mhartid", 0xf15: "mconfigptr",
	0x300: "mstatus", 0x301: "misa", 0x302: "medeleg", 0x303: "mideleg", 0x304: "mie", 0x305: "mtvec",
	0x306: "mcounteren", 0x30a: "menvcfg", 0x310: "mstatush", 0x320: "mcountinhibit", 0x340: "mscratch",
	0x341: "mepc", 0x342: "mcause", 0x343: "mtval", 0x344: "mip", 0x34a: "mtinst", 0x34b: "mtval2",
	0x3a0: "pmpcfg0", 0x3b0: "pmpaddr0", 0x7a0: "tselect", 0x7a1: "tdata1", 0x7a2: "tdata2", 0x7a3: "tdata3",
	0x7a8: "mcontext", 0x7b0: "dcsr", 0x7b1: "dpc", 0x7b2: "dscratch0", 0x7b3: "dscratch1",
	0xb00: "mcycle", 0xb02: "minstret",
	0xb80: "mcycleh", 0xb82: "minstreth", 0xc80: "cycleh", 0xc81: "timeh", 0xc82: "instreth", // RV32 upper halves
}

// String returns the register's name as the RISC-V dialect writes it: the
// ABI name of integer and floating-point registers ("a0", "fs1"), the name
// of known CSRs ("mstatus") and "csr0x" followed by the hex number of
// others.
func (r Reg) String() string {
	switch {
	case r < 32:
		return xNames[r]
	case r < 64:
		return fNames[r-32]
	case r >= RegCSR && r < RegCSR+0x1000:
		if n, ok := csrNames[uint16(r-RegCSR)]; ok {
			return n
		}
		return "csr0x" + strconv.FormatUint(uint64(r-RegCSR), 16)
	}
	return "reg" + strconv.Itoa(int(r))
}

// WriterOptions configure a Writer.
type WriterOptions struct {
	// XLEN (32 or 64) sets the width of addresses and register values and
	// the decoding of instructions; 0 takes the image's XLEN, or 64.
	XLEN int
	// Scale is the timestamp unit written after the time; "" means "clk".
	Scale string
	// NoDisasm leaves the disassembly out of instruction records (a bare
	// ":" ends them), which makes writing several times faster.
	NoDisasm bool
}

// Writer writes the RISC-V dialect of Tarmac (see the package
// documentation). It is a flow.Sink (instructions, program flow, events
// and timestamps from a decoded trace), an ingress.Sink (blocks from a
// simulator or a capture of the ingress port; instructions are read from
// the image) and a simulator's observer (sim.Observer, which this
// package does not import: for each retired instruction the simulator
// calls Inst, then IntReg, FPReg, CSR or RegWrite for the registers it
// wrote and Mem for its data accesses; Trap reports an exception or
// interrupt taken before the next Inst). Use one of the three per
// Writer. Close flushes the output; it does not close the underlying
// io.Writer.
type Writer struct {
	w     *bufio.Writer
	img   *image.Set
	xlen  int
	ext   riscv.Ext // what instructions are decoded with: the image's (Zcd or Zcmp/Zcmt)
	scale string
	noDis bool
	buf   []byte
	harts []*hartOut
	dis   map[uint64]disEntry
	err   error
	flush io.Closer
}

// hartOut is the per-hart state of a Writer.
type hartOut struct {
	id      uint64 // instructions written
	time    uint64 // current time
	priv    ingress.Priv
	privOK  bool // priv was set by a context event
	context uint64
	ctxInit bool
	// the last instruction, for its program-flow record
	havePrev bool
	prevPC   uint64
	prevLen  uint8
	prevCtl  ctl
	prevID   uint64
	prevTime uint64
}

// NewWriter returns a Writer writing to w. img provides the instructions
// for the flow.Sink and ingress.Sink uses (it may be nil for the
// sim.Observer use).
func NewWriter(w io.Writer, img *image.Set, opt WriterOptions) *Writer {
	xlen := opt.XLEN
	if xlen != 32 && xlen != 64 {
		xlen = 64
		if img != nil {
			xlen = img.XLEN()
		}
	}
	scale := opt.Scale
	if scale == "" {
		scale = "clk"
	}
	ext := riscv.DefaultExt(xlen)
	if img != nil && img.XLEN() == xlen {
		ext = img.Ext()
	}
	return &Writer{w: bufio.NewWriterSize(w, 256<<10), img: img, xlen: xlen, ext: ext, scale: scale, noDis: opt.NoDisasm}
}

// SetCloser makes Close also close c (the file the Writer writes to).
func (w *Writer) SetCloser(c io.Closer) { w.flush = c }

func (w *Writer) hart(h int) *hartOut {
	if h < 0 {
		h = 0
	}
	for len(w.harts) <= h {
		w.harts = append(w.harts, &hartOut{})
	}
	return w.harts[h]
}

// prefix starts a line: "<time> <scale> cpu<n> ".
func (w *Writer) prefix(h int, time uint64) {
	w.buf = strconv.AppendUint(w.buf[:0], time, 10)
	w.buf = append(w.buf, ' ')
	w.buf = append(w.buf, w.scale...)
	w.buf = append(w.buf, " cpu"...)
	w.buf = strconv.AppendInt(w.buf, int64(h), 10)
	w.buf = append(w.buf, ' ')
}

func (w *Writer) appendHex(v uint64, digits int) {
	var tmp [16]byte
	for i := 15; i >= 0; i-- {
		tmp[i] = "0123456789abcdef"[v&15]
		v >>= 4
	}
	w.buf = append(w.buf, tmp[16-digits:]...)
}

func (w *Writer) addrDigits() int {
	if w.xlen == 32 {
		return 8
	}
	return 16
}

func (w *Writer) line() error {
	if w.err != nil {
		return w.err
	}
	w.buf = append(w.buf, '\n')
	_, w.err = w.w.Write(w.buf)
	return w.err
}

// writeInst writes an IT record and remembers the instruction for its
// program-flow record.
func (w *Writer) writeInst(h int, ho *hartOut, pc uint64, raw uint32, size uint8, priv ingress.Priv) error {
	ho.id++
	w.prefix(h, ho.time)
	w.buf = append(w.buf, "IT ("...)
	w.buf = strconv.AppendUint(w.buf, ho.id, 10)
	w.buf = append(w.buf, ") "...)
	w.appendHex(pc, w.addrDigits())
	w.buf = append(w.buf, ' ')
	if size == 2 {
		w.appendHex(uint64(raw&0xffff), 4)
	} else {
		w.appendHex(uint64(raw), 8)
	}
	if w.xlen == 32 {
		w.buf = append(w.buf, " RV32 "...)
	} else {
		w.buf = append(w.buf, " RV64 "...)
	}
	if priv == privUnknown {
		w.buf = append(w.buf, '-')
	} else {
		w.buf = append(w.buf, priv.String()...)
	}
	w.buf = append(w.buf, " :"...)
	if !w.noDis {
		w.buf = append(w.buf, ' ')
		w.buf = append(w.buf, w.disasm(raw, pc)...)
	}
	ho.havePrev, ho.prevPC, ho.prevLen, ho.prevID, ho.prevTime = true, pc, size, ho.id, ho.time
	ho.prevCtl = classifyRISCV(raw, w.xlen, w.ext)
	if !ho.privOK {
		ho.priv = priv
	}
	return w.line()
}

// disasm returns the disassembly of raw at pc, cached per address (the
// disassembly of a branch depends on its address).
func (w *Writer) disasm(raw uint32, pc uint64) string {
	if e, ok := w.dis[pc]; ok && e.raw == raw {
		return e.text
	}
	if w.dis == nil || len(w.dis) >= 1<<20 {
		w.dis = make(map[uint64]disEntry)
	}
	t := riscv.DisasmExt(raw, pc, w.xlen, w.ext)
	w.dis[pc] = disEntry{raw, t}
	return t
}

type disEntry struct {
	raw  uint32
	text string
}

// flowTo writes the program-flow record of the last instruction of hart h
// when it moved to next other than by falling through.
func (w *Writer) flowTo(h int, ho *hartOut, next uint64) error {
	if !ho.havePrev {
		return nil
	}
	ho.havePrev = false
	if next == ho.prevPC+uint64(ho.prevLen) || ho.prevCtl == ctlLinear || ho.prevCtl == ctlTrap {
		return nil
	}
	w.prefix(h, ho.prevTime)
	switch ho.prevCtl {
	case ctlBranch, ctlJump, ctlCall, ctlOtherDirect:
		w.buf = append(w.buf, "FD ("...)
	default:
		w.buf = append(w.buf, "FI ("...)
	}
	w.buf = strconv.AppendUint(w.buf, ho.prevID, 10)
	w.buf = append(w.buf, ") "...)
	w.appendHex(ho.prevPC, w.addrDigits())
	w.buf = append(w.buf, ' ')
	w.appendHex(next, w.addrDigits())
	if w.xlen == 32 {
		w.buf = append(w.buf, " RV32"...)
	} else {
		w.buf = append(w.buf, " RV64"...)
	}
	return w.line()
}

// Inst writes the instruction record of an instruction retired by hart
// at time (in the simulator's clock), at pc with encoding raw (16-bit
// encodings in the low half), in privilege priv (sim.Observer).
func (w *Writer) Inst(hart int, time uint64, pc uint64, raw uint32, priv ingress.Priv) error {
	ho := w.hart(hart)
	if err := w.flowTo(hart, ho, pc); err != nil {
		return err
	}
	ho.time = time
	size := uint8(4)
	if raw&3 != 3 {
		size = 2
	}
	return w.writeInst(hart, ho, pc, raw, size, priv)
}

// IntReg writes the register record of integer register xn
// (sim.Observer).
func (w *Writer) IntReg(hart int, n int, value uint64) error {
	return w.RegWrite(hart, RegX+Reg(n&31), value)
}

// FPReg writes the register record of floating-point register fn
// (sim.Observer).
func (w *Writer) FPReg(hart int, n int, value uint64) error {
	return w.RegWrite(hart, RegF+Reg(n&31), value)
}

// CSR writes the register record of the CSR numbered n (sim.Observer).
func (w *Writer) CSR(hart int, n uint16, value uint64) error {
	return w.RegWrite(hart, RegCSR+Reg(n&0xfff), value)
}

// RegWrite writes a register record of the last instruction.
func (w *Writer) RegWrite(hart int, reg Reg, value uint64) error {
	ho := w.hart(hart)
	return w.writeReg(hart, ho.time, reg.String(), value)
}

func (w *Writer) writeReg(hart int, time uint64, name string, value uint64) error {
	w.prefix(hart, time)
	w.buf = append(w.buf, "R "...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, ' ')
	w.appendHex(value, w.addrDigits())
	return w.line()
}

// Mem writes a memory access record (sim.Observer): MR<size> or MW<size>, with
// the data in as many hex digits as the size, split by an underscore
// every 8 digits as the Arm format does for 64-bit data.
func (w *Writer) Mem(hart int, write bool, addr uint64, size int, value uint64) error {
	ho := w.hart(hart)
	w.prefix(hart, ho.time)
	if write {
		w.buf = append(w.buf, "MW"...)
	} else {
		w.buf = append(w.buf, "MR"...)
	}
	w.buf = strconv.AppendInt(w.buf, int64(size), 10)
	w.buf = append(w.buf, ' ')
	w.appendHex(addr, w.addrDigits())
	w.buf = append(w.buf, ' ')
	switch {
	case size >= 8:
		w.appendHex(value>>32, 8)
		w.buf = append(w.buf, '_')
		w.appendHex(value&0xffffffff, 8)
	case size <= 0:
		w.appendHex(value, 2)
	default:
		w.appendHex(value, 2*size)
	}
	return w.line()
}

// Trap writes an event record (sim.Observer): "E <epc> <mode> <tval> <number>
// <desc>", where mode is priv, the privilege the trap was taken from, and
// number is the cause, with bit 31 set for interrupts.
func (w *Writer) Trap(hart int, time uint64, priv ingress.Priv, interrupt bool, cause, epc, tval uint64) error {
	ho := w.hart(hart)
	if err := w.flowTo(hart, ho, epc); err != nil {
		return err
	}
	ho.time = time
	return w.writeTrap(hart, ho, interrupt, true, cause, epc, tval, priv)
}

// writeTrap writes the E record of a trap. Without its cause (known
// false: an N-Trace carries none) the record has no tval and the cause
// is UnknownCause, named Exception_Unknown or Interrupt_Unknown.
func (w *Writer) writeTrap(hart int, ho *hartOut, interrupt, known bool, cause, epc, tval uint64, priv ingress.Priv) error {
	w.prefix(hart, ho.time)
	w.buf = append(w.buf, "E "...)
	w.appendHex(epc, w.addrDigits())
	w.buf = append(w.buf, ' ')
	if priv != privUnknown {
		// (an unknown mode is left out, as the Arm grammar allows)
		w.buf = append(w.buf, priv.String()...)
		w.buf = append(w.buf, ' ')
	}
	if !known {
		cause = UnknownCause
	} else {
		w.appendHex(tval, w.addrDigits())
		w.buf = append(w.buf, ' ')
	}
	num := cause & 0x7fffffff
	if interrupt {
		num |= causeInterruptBit
	}
	w.appendHex(num, 8)
	w.buf = append(w.buf, ' ')
	w.buf = append(w.buf, CauseName(interrupt, cause)...)
	return w.line()
}

var exceptionNames = []string{
	"InstructionAddressMisaligned", "InstructionAccessFault", "IllegalInstruction", "Breakpoint",
	"LoadAddressMisaligned", "LoadAccessFault", "StoreAddressMisaligned", "StoreAccessFault",
	"EcallFromU", "EcallFromS", "EcallFromVS", "EcallFromM",
	"InstructionPageFault", "LoadPageFault", "", "StorePageFault", "DoubleTrap", "", "SoftwareCheck", "HardwareError",
	"InstructionGuestPageFault", "LoadGuestPageFault", "VirtualInstruction", "StoreGuestPageFault",
}

var interruptNames = []string{
	"", "SupervisorSoftware", "VirtualSupervisorSoftware", "MachineSoftware",
	"", "SupervisorTimer", "VirtualSupervisorTimer", "MachineTimer",
	"", "SupervisorExternal", "VirtualSupervisorExternal", "MachineExternal",
	"SupervisorGuestExternal", "CounterOverflow",
}

// UnknownCause is the cause the RISC-V dialect writes for a trap whose
// cause the trace does not give (a decoded N-Trace): event number
// 7fffffff (ffffffff for an interrupt), named by CauseName
// "Exception_Unknown" or "Interrupt_Unknown", and no tval.
const UnknownCause = 0x7fffffff

// CauseName returns the event description the RISC-V dialect writes for a
// trap: "Exception_" or "Interrupt_" followed by the privileged
// specification's name of the cause ("Exception_IllegalInstruction",
// "Interrupt_MachineTimer"), "Unknown" for UnknownCause, or the cause
// number when it has no name.
func CauseName(interrupt bool, cause uint64) string {
	names, pre := exceptionNames, "Exception_"
	if interrupt {
		names, pre = interruptNames, "Interrupt_"
	}
	if cause == UnknownCause {
		return pre + "Unknown"
	}
	if cause < uint64(len(names)) && names[cause] != "" {
		return pre + names[cause]
	}
	return pre + strconv.FormatUint(cause, 10)
}

// contextReg names the context register of a privilege level.
func contextReg(p ingress.Priv) string {
	if p == ingress.PrivM || p == ingress.PrivD {
		return "mcontext"
	}
	return "scontext"
}

// setContext writes a register record for the context when it changed.
func (w *Writer) setContext(h int, ho *hartOut, priv ingress.Priv, ctx uint64) error {
	if ho.ctxInit && ctx == ho.context {
		return nil
	}
	if !ho.ctxInit && ctx == 0 {
		ho.ctxInit = true
		return nil
	}
	ho.ctxInit, ho.context = true, ctx
	return w.writeReg(h, ho.time, contextReg(priv), ctx)
}

// Block writes the instructions of an ingress block, read from the image,
// and an event record when the block ends in a trap (ingress.Sink).
func (w *Writer) Block(b *ingress.Block) error {
	const h = 0
	ho := w.hart(h)
	if b.IRetire > 0 {
		if err := w.flowTo(h, ho, b.IAddr); err != nil {
			return err
		}
	}
	ho.time = b.Time
	if err := w.setContext(h, ho, b.Priv, b.Context); err != nil {
		return err
	}
	addr, end := b.IAddr, b.NextAddr()
	for addr < end {
		raw, size := w.fetch(addr)
		if addr+uint64(size) > end {
			size = uint8(end - addr)
		}
		if err := w.writeInst(h, ho, addr, raw, size, b.Priv); err != nil {
			return err
		}
		addr += uint64(size)
	}
	if b.IType.IsTrap() {
		epc := b.NextAddr()
		if b.IRetire == 0 {
			epc = b.IAddr
		}
		if err := w.flowTo(h, ho, epc); err != nil {
			return err
		}
		return w.writeTrap(h, ho, b.IType == ingress.ITypeInterrupt, true, b.Cause, epc, b.TVal, b.Priv)
	}
	return nil
}

// fetch reads the instruction at addr from the image.
func (w *Writer) fetch(addr uint64) (uint32, uint8) {
	if w.img != nil {
		if in, ok := w.img.Inst(addr); ok && in.Len >= 2 {
			return in.Raw, in.Len
		}
	}
	return 0, 4
}

// Event writes the records of a flow event (flow.Sink): instruction
// records for the instructions of a range (read from the image), program
// flow records for its taken branches and jumps, an event record for a
// trap, a TraceGap event record for a gap. Time events set the time of
// the records that follow; context events write the context register and
// set the privilege: until the first, the mode of instruction records is
// "-" (unknown) and event records have no mode. Data events (data trace,
// with address and value) write the MR/MW records of loads, stores and
// atomics, and of a CSR access (CSR data trace) the R record of the
// instruction's destination register (rd not x0) with the value read from
// the CSR, as the simulator's full Tarmac has it; not the CSR's record,
// whose value after a write the trace does not give exactly (the CSR
// legalises what is written). Other events write nothing.
func (w *Writer) Event(e *flow.Event) error {
	h := int(e.Src)
	ho := w.hart(h)
	switch e.Kind {
	case flow.KindTime:
		ho.time = e.Time
	case flow.KindContext:
		ho.priv, ho.privOK = e.Priv, true
		return w.setContext(h, ho, e.Priv, e.Context)
	case flow.KindRange:
		if err := w.flowTo(h, ho, e.Start); err != nil {
			return err
		}
		// The privilege is known once a context event stated it
		// (flow.Event.Priv is kept only by decoders that know it; an
		// N-Trace without Ownership messages never states it).
		priv := privUnknown
		if ho.privOK {
			priv = ho.priv
		}
		addr := e.Start
		for i := uint64(0); i < e.N; i++ {
			raw, size := w.fetch(addr)
			if i == e.N-1 && addr != e.Last {
				addr = e.Last // the image disagrees with the flow: trust the flow
				raw, size = w.fetch(addr)
			}
			if err := w.writeInst(h, ho, addr, raw, size, priv); err != nil {
				return err
			}
			addr += uint64(size)
		}
		if e.HasTarget {
			return w.flowTo(h, ho, e.Target)
		}
	case flow.KindTrap:
		if err := w.flowTo(h, ho, e.Addr); err != nil {
			return err
		}
		priv := privUnknown
		if ho.privOK {
			priv = ho.priv
		}
		return w.writeTrap(h, ho, e.Interrupt, e.HasCause, e.Cause, e.Addr, e.TVal, priv)
	case flow.KindGap:
		ho.havePrev = false
		return w.writeGap(h, ho, e)
	case flow.KindSync, flow.KindStop:
		ho.havePrev = false
	case flow.KindData:
		// MR/MW records need both the address and the value
		a := &e.Access
		if e.AccessHas != flow.AccessAddr|flow.AccessData {
			return nil
		}
		if a.DType.Reads() {
			if err := w.Mem(h, false, a.DAddr, a.Bytes(), a.Data); err != nil {
				return err
			}
		}
		switch {
		case a.DType.IsAtomic():
			return w.Mem(h, true, a.DAddr, a.Bytes(), a.SData)
		case a.DType == ingress.DTypeStore:
			return w.Mem(h, true, a.DAddr, a.Bytes(), a.Data)
		case a.DType.IsCSR():
			// a CSR access (CSR data trace): rd of the Zicsr
			// instruction at Addr receives the value read
			if raw, _ := w.fetch(e.Addr); raw&0x7f == 0x73 && raw>>12&3 != 0 && raw>>7&31 != 0 {
				return w.IntReg(h, int(raw>>7&31), a.SData)
			}
		}
	}
	return nil
}

// PrivUnknown is the privilege of instructions whose Tarmac records do
// not state it: the Writer writes "-" as the mode of the IT records of a
// decoded flow before a context event states the privilege (and no mode
// in their E records), and the Decoder reads "-" as PrivUnknown. It is
// the Priv of such blocks given to a block sink ([Decoder.SetBlockSink]);
// [Decoder.Next] refuses them.
const PrivUnknown ingress.Priv = 0xff

const privUnknown = PrivUnknown

// GapEventDesc is the event description of the E record that marks a gap
// in a Tarmac trace written from a decoded flow (see the package
// documentation).
const GapEventDesc = "TraceGap"

// writeGap writes the E record of a gap:
// "E <offset> <suspect> <index> TraceGap".
func (w *Writer) writeGap(h int, ho *hartOut, e *flow.Event) error {
	w.prefix(h, ho.time)
	w.buf = append(w.buf, "E "...)
	w.appendHex(uint64(e.Offset), w.addrDigits())
	w.buf = append(w.buf, ' ')
	w.appendHex(e.Suspect, 8)
	w.buf = append(w.buf, ' ')
	w.appendHex(uint64(e.Index), 8)
	w.buf = append(w.buf, ' ')
	w.buf = append(w.buf, GapEventDesc...)
	return w.line()
}

// Close flushes the output (and closes the file set by SetCloser).
func (w *Writer) Close() error {
	err := w.err
	if e := w.w.Flush(); err == nil {
		err = e
	}
	if w.flush != nil {
		if e := w.flush.Close(); err == nil {
			err = e
		}
		w.flush = nil
	}
	if err != nil {
		return fmt.Errorf("tarmac: %w", err)
	}
	return nil
}
