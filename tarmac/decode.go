package tarmac

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// Options configure a Decoder.
type Options struct {
	// XLEN is the register width used to decode RISC-V instructions whose
	// record does not name it (the iset "RV32" and "RV64" do); 0 means 64.
	XLEN int
	// Lenient makes the Decoder skip malformed lines instead of failing;
	// [Decoder.Skipped] counts them and [Decoder.Errors] keeps the first
	// few.
	Lenient bool
	// Zc chooses between the compressed extensions that share c.fsdsp's
	// encodings, riscv.ExtZcd or riscv.ExtZcmp|riscv.ExtZcmt, for
	// classifying RISC-V instructions, as the program's ELF file has
	// them (image.Set.Zc). With 0, an instruction in that encoding space
	// is classified as the record's disassembly names it (a cm.*
	// instruction with Zcmp and Zcmt: a cm.popret is a return, a cm.jt a
	// jump; anything else with Zcd), and one without disassembly with
	// riscv.DefaultExt's choice.
	Zc riscv.Ext
}

// Decoder turns the records of a Tarmac trace into ingress-port blocks
// ([Decoder.Next], an ingress.Source) or into the decoded instruction
// flow ([Decoder.Flow]). It reads both the RISC-V dialect and the Arm
// dialects (see the package documentation).
//
// Instructions retired back to back at consecutive addresses, at the same
// time and privilege, form one block, ended by every instruction that is a
// branch, jump, call, return or trap return; an event record ends the
// block with an exception or interrupt. Multi-core traces give each CPU
// its own blocks; [Decoder.Src] tells which CPU a block belongs to.
type Decoder struct {
	r        *Reader
	opt      Options
	cpus     []*cpuState
	cpuIndex map[string]int
	queue    []outBlock
	qhead    int
	cur      outBlock
	eof      bool
	hasTime  bool
	skipped  int
	errs     []error
	onBlock  func(b *ingress.Block, src int) error
}

// cpuState is the per-CPU decoding state.
type cpuState struct {
	src      uint32
	havePrev bool
	prev     instInfo
	blk      outBlock
	inBlk    bool
	context  uint64
	// flow conversion
	pending  outBlock
	havePend bool
	init     bool
	privSent bool // a context event stated priv and ctx
	priv     ingress.Priv
	ctx      uint64
	time     uint64
	// Arm call detection: the last value written to the link register
	// and the number of instructions since (lrAge), capped at
	// lrCallWindow, which also marks "no recent write".
	lr    uint64
	lrAge int
	// popsLR is set when the last instruction reads the stack (an
	// epilogue "LDP x29,x30,[sp],#16", "POP {r4,pc}"): a link register
	// it writes is the caller's return address being restored, not a
	// call being set up.
	popsLR bool
}

// lrCallWindow and lrCallSlack define an Arm call made without a
// branch-with-link instruction ("LDR lr,=ret; B func", "MOV lr,pc; BX
// r3", "LDR x30,...; B func"): a taken jump within lrCallWindow
// instructions after a write of the link register, none of them a
// transfer of control, that left in the link register an address
// within lrCallSlack bytes of the jump's own fall-through address. These
// are the values tarmac-trace-utilities' call detection uses. Unlike
// that tool, which keeps such a call only when a return to the address
// comes later, the decoder streams: it ignores link register values
// loaded from the stack (an epilogue restoring the caller's return
// address before a tail call).
const (
	lrCallWindow = 8
	lrCallSlack  = 64
)

// instInfo is one instruction record, waiting for its successor to know
// how it left.
type instInfo struct {
	addr     uint64
	size     int
	ctl      ctl
	executed bool
	time     uint64
	priv     ingress.Priv
	context  uint64
	line     int64
	arm      bool // an Arm instruction (A, T, X, O)
	thumb    bool
}

// outBlock is a finished block and what the flow conversion needs to know
// about it.
type outBlock struct {
	b         ingress.Block
	n         uint64 // instructions in the block
	last      uint64 // address of the last instruction
	src       uint32
	trap      bool
	interrupt bool
	epc       uint64
	next      uint64 // address executed next, when hasNext
	hasNext   bool
	line      int64 // line of the first instruction (for flow Offset)
}

// NewDecoder returns a Decoder reading records from r.
func NewDecoder(r *Reader, opt Options) *Decoder {
	if opt.XLEN != 32 {
		opt.XLEN = 64
	}
	return &Decoder{r: r, opt: opt, cpuIndex: map[string]int{}}
}

// Skipped returns the number of malformed lines skipped in Lenient mode.
func (d *Decoder) Skipped() int { return d.skipped }

// FirstError returns the first malformed line skipped in Lenient mode
// (a *SyntaxError), or nil.
func (d *Decoder) FirstError() error {
	if len(d.errs) == 0 {
		return nil
	}
	return d.errs[0]
}

// MaxKeptErrors is the number of errors of skipped lines that
// [Decoder.Errors] keeps.
const MaxKeptErrors = 5

// Errors returns the errors (*SyntaxError) of the first MaxKeptErrors
// malformed lines skipped in Lenient mode.
func (d *Decoder) Errors() []error { return d.errs }

// Src returns the source (CPU) number of the block returned last by Next:
// the number in the CPU's name ("cpu2" is 2), or the order in which CPUs
// without a number first appeared.
func (d *Decoder) Src() int { return int(d.cur.src) }

// Line returns the line of the first record of the block returned last
// by Next (or given last to a block sink).
func (d *Decoder) Line() int { return int(d.cur.line) }

// Instructions returns the number of instructions of the block returned
// last by Next.
func (d *Decoder) Instructions() uint64 { return d.cur.n }

// Next returns the next ingress block, or io.EOF after the last one. The
// block is reused by the next call. Blocks of different CPUs come in the
// order in which they end.
//
// A block of instructions whose mode is "-" (a RISC-V dialect trace
// written from a decoded flow that does not state the privilege) is an
// error: an ingress block needs a privilege. [Decoder.Flow] takes them
// and states no privilege for them; a block sink gets them with Priv
// PrivUnknown.
func (d *Decoder) Next() (*ingress.Block, error) {
	b, err := d.next()
	if err == nil && b.Priv == privUnknown {
		return nil, d.unknownPriv()
	}
	return b, err
}

// unknownPriv is the error of a block of unknown privilege taken as an
// ingress block.
func (d *Decoder) unknownPriv() error { return UnknownPrivError(int(d.cur.line)) }

// UnknownPrivError is the error of a block of unknown privilege
// (PrivUnknown) starting at line taken as an ingress block.
func UnknownPrivError(line int) error {
	return fmt.Errorf("tarmac: line %d: privilege unknown (mode \"-\": the trace the file was written from did not state it); ingress blocks need one", line)
}

// next is Next without the privilege check.
func (d *Decoder) next() (*ingress.Block, error) {
	for d.qhead == len(d.queue) {
		d.queue, d.qhead = d.queue[:0], 0
		if d.eof {
			return nil, io.EOF
		}
		if err := d.step(); err != nil {
			return nil, err
		}
	}
	d.cur = d.queue[d.qhead]
	d.qhead++
	return &d.cur.b, nil
}

// step reads one record and queues the blocks it ends.
func (d *Decoder) step() error {
	rec, err := d.r.Next()
	if err == io.EOF {
		d.eof = true
		for _, c := range d.cpus {
			d.finishPrev(c, 0, false)
			d.flushBlock(c, 0, false)
		}
		return nil
	}
	if err != nil {
		var se *SyntaxError
		if d.opt.Lenient && errors.As(err, &se) {
			d.skipped++
			if len(d.errs) < MaxKeptErrors {
				d.errs = append(d.errs, err)
			}
			return nil
		}
		return err
	}
	if rec.HasTime {
		d.hasTime = true
	}
	switch rec.Kind {
	case KindInst:
		d.inst(rec)
	case KindEvent:
		d.event(rec)
	case KindReg:
		d.reg(rec)
	}
	return nil
}

// cpu returns the state of the CPU a record belongs to.
func (d *Decoder) cpu(name string) *cpuState {
	if i, ok := d.cpuIndex[name]; ok {
		return d.cpus[i]
	}
	src, ok := cpuNumber(name)
	if !ok {
		src = uint32(len(d.cpus))
	}
	c := &cpuState{src: src}
	d.cpuIndex[name] = len(d.cpus)
	d.cpus = append(d.cpus, c)
	return c
}

// cpuNumber extracts the trailing decimal number of a CPU name.
func cpuNumber(name string) (uint32, bool) {
	j := len(name)
	for j > 0 && isDigit(name[j-1]) {
		j--
	}
	if j == len(name) || len(name)-j > 6 {
		return 0, name == ""
	}
	v, _ := parseDec([]byte(name[j:]))
	return uint32(v), true
}

// zcGroup is the compressed extensions that share c.fsdsp's encodings.
const zcGroup = riscv.ExtZcd | riscv.ExtZcmp | riscv.ExtZcmt

// riscvExt returns the extensions a RISC-V instruction record is
// classified with (see Options.Zc).
func (d *Decoder) riscvExt(rec *Record, xlen int) riscv.Ext {
	ext := riscv.DefaultExt(xlen)
	switch {
	case d.opt.Zc != 0:
		return ext&^zcGroup | d.opt.Zc&zcGroup
	case rec.OpcodeBytes == 2 && rec.Opcode&0xe003 == 0xa002 && len(rec.Disasm) > 0:
		// funct3 101, op 10: c.fsdsp, or a Zcmp/Zcmt instruction, as
		// the record's disassembly names it
		if bytes.HasPrefix(rec.Disasm, []byte("cm.")) {
			return ext&^zcGroup | riscv.ExtZcmp | riscv.ExtZcmt
		}
		return ext&^zcGroup | riscv.ExtZcd
	}
	return ext
}

func (d *Decoder) inst(rec *Record) {
	if rec.FetchFailed {
		// Not executed, and its opcode is unknown: the exception that
		// follows (a prefetch abort) tells where execution went.
		return
	}
	c := d.cpu(rec.CPU)
	size := rec.OpcodeBytes
	if size == 0 {
		size = 4
	}
	var k ctl
	var priv ingress.Priv
	arm := isArmISet(rec.ISet)
	if arm {
		k = classifyArm(rec.ISet, rec.Opcode, rec.OpcodeBytes, rec.Disasm)
		priv = armPriv(rec.Mode)
	} else {
		xlen := d.opt.XLEN
		switch rec.ISet {
		case "RV32":
			xlen = 32
		case "RV64":
			xlen = 64
		}
		k = classifyRISCV(rec.Opcode, xlen, d.riscvExt(rec, xlen))
		priv = riscvPriv(rec.Mode)
	}
	info := instInfo{
		addr: rec.Addr, size: size, ctl: k, executed: rec.Executed,
		time: rec.Time, priv: priv, context: c.context, line: int64(rec.Line),
		arm: arm, thumb: rec.ISet == "T",
	}
	if c.havePrev {
		d.finishPrev(c, info.addr, true)
	}
	c.prev, c.havePrev = info, true
	if c.lrAge < lrCallWindow {
		c.lrAge++
	}
	c.popsLR = arm && readsStack(rec.Disasm)
}

// readsStack reports whether an Arm instruction's disassembly loads
// from the stack: a POP, or an address based on sp.
func readsStack(d []byte) bool {
	if len(d) >= 3 && (d[0] == 'P' || d[0] == 'p') && (d[1] == 'O' || d[1] == 'o') && (d[2] == 'P' || d[2] == 'p') {
		return true
	}
	for i := 0; i+2 < len(d); i++ {
		if d[i] == '[' && (d[i+1] == 's' || d[i+1] == 'S') && (d[i+2] == 'p' || d[i+2] == 'P') {
			return true
		}
		if (d[i] == 's' || d[i] == 'S') && (d[i+1] == 'p' || d[i+1] == 'P') && d[i+2] == '!' {
			return true // LDM sp!,{...}
		}
	}
	return false
}

// finishPrev adds the waiting instruction of c to its block, now that
// what follows it is known (next, when hasNext).
func (d *Decoder) finishPrev(c *cpuState, next uint64, hasNext bool) {
	if !c.havePrev {
		return
	}
	p := c.prev
	c.havePrev = false
	it := itypeOf(p.ctl, p.executed, p.addr, p.size, next, hasNext)
	if p.arm && hasNext && next != p.addr+uint64(p.size) {
		it = c.armCall(it, p)
		c.lrAge = lrCallWindow // a transfer of control
	}
	b := &c.blk.b
	if c.inBlk && (p.addr != b.NextAddr() || p.time != b.Time || p.priv != b.Priv || p.context != b.Context) {
		d.flushBlock(c, p.addr, true)
	}
	if !c.inBlk {
		c.inBlk = true
		c.blk = outBlock{src: c.src, line: p.line}
		c.blk.b = ingress.Block{IAddr: p.addr, Time: p.time, Priv: p.priv, Context: p.context}
	}
	b.IRetire += uint32(p.size / 2)
	b.ILastSize = lastSizeCode(p.size)
	c.blk.n++
	c.blk.last = p.addr
	if it != ingress.ITypeNone {
		b.IType = it
		d.flushBlock(c, next, hasNext)
	}
}

func lastSizeCode(size int) uint8 {
	switch {
	case size <= 2:
		return 0
	case size <= 4:
		return 1
	case size <= 8:
		return 2
	}
	return 3
}

// flushBlock queues the block being built for c, if any.
func (d *Decoder) flushBlock(c *cpuState, next uint64, hasNext bool) {
	if !c.inBlk {
		return
	}
	c.inBlk = false
	c.blk.next, c.blk.hasNext = next, hasNext
	d.queue = append(d.queue, c.blk)
}

// event handles E records: traps end the block of their CPU.
func (d *Decoder) event(rec *Record) {
	if rec.Tag == "E" && !rec.HasAddr {
		// A named event without an address (DebugEvent_..., a signal
		// of an RTL trace): no trap.
		return
	}
	c := d.cpu(rec.CPU)
	desc := rec.EventDesc
	switch {
	case strings.Contains(desc, "ModeChange"):
		return
	case containsFold(desc, "reset"), desc == GapEventDesc: // CoreEvent_Reset, CoreEvent_RESET, ES EXC Reset; a gap
		d.finishPrev(c, 0, false)
		d.flushBlock(c, 0, false)
		return
	}
	interrupt, cause, riscv := eventCause(rec)
	if riscv {
		// The RISC-V dialect's value is the EPC: the address that would
		// have executed next.
		d.finishPrev(c, rec.Addr, true)
	} else {
		d.finishPrev(c, 0, false)
	}
	it := ingress.ITypeException
	if interrupt {
		it = ingress.ITypeInterrupt
	}
	if !c.inBlk {
		priv := c.lastPriv() // (before the new block is open)
		c.inBlk = true
		c.blk = outBlock{src: c.src, line: int64(rec.Line)}
		if rec.EventMode != "" {
			priv = riscvPriv(rec.EventMode)
		}
		c.blk.b = ingress.Block{IAddr: rec.Addr, Time: rec.Time, Priv: priv, Context: c.context}
	}
	c.blk.b.IType = it
	c.blk.b.Cause = cause
	c.blk.b.TVal = rec.Value1
	c.blk.trap, c.blk.interrupt, c.blk.epc = true, interrupt, rec.Addr
	d.flushBlock(c, 0, false)
}

// containsFold reports whether s contains the lower-case ASCII word sub,
// in any case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// lastPriv is the privilege of the last instruction seen on c.
func (c *cpuState) lastPriv() ingress.Priv {
	if c.inBlk {
		return c.blk.b.Priv
	}
	return c.prev.priv
}

// eventCause interprets an event record as a trap.
func eventCause(rec *Record) (interrupt bool, cause uint64, riscv bool) {
	desc := rec.EventDesc
	switch {
	case strings.HasPrefix(desc, "Exception_") || strings.HasPrefix(desc, "Interrupt_"):
		return rec.EventNum&causeInterruptBit != 0, rec.EventNum &^ causeInterruptBit, true
	case strings.Contains(desc, "IRQ"), strings.Contains(desc, "FIQ"), strings.Contains(desc, "SError"), strings.Contains(desc, "SERROR"):
		return true, rec.EventNum, false
	}
	return false, rec.EventNum, false
}

// causeInterruptBit marks interrupts in the event number of the RISC-V
// dialect.
const causeInterruptBit = 0x80000000

// armCall turns a taken Arm jump into a call when the link register was
// just set to its return address (see lrCallWindow).
func (c *cpuState) armCall(it ingress.IType, p instInfo) ingress.IType {
	if c.lrAge >= lrCallWindow {
		return it
	}
	ret := p.addr + uint64(p.size)
	if p.thumb {
		ret |= 1
	}
	if d := c.lr - ret; d >= lrCallSlack && -d > lrCallSlack {
		return it
	}
	switch it {
	case ingress.ITypeDirectJump, ingress.ITypeTaken:
		return ingress.ITypeDirectCall
	case ingress.ITypeIndirectJump:
		return ingress.ITypeIndirectCall
	}
	return it
}

// reg tracks the registers that the blocks carry, the context, and the
// link register of Arm traces (for armCall).
func (d *Decoder) reg(rec *Record) {
	name := rec.Reg
	for _, s := range [...]string{"scontext", "mcontext", "hcontext", "contextidr", "contextidr_el1", "contextidr_el2"} {
		if strings.EqualFold(name, s) {
			c := d.cpu(rec.CPU)
			c.context = rec.Value
			return
		}
	}
	if k := strings.IndexByte(name, '_'); k > 0 {
		name = name[:k] // banked: r14_svc, LR_SVC
	}
	if strings.EqualFold(name, "lr") || strings.EqualFold(name, "r14") || strings.EqualFold(name, "x30") {
		c := d.cpu(rec.CPU)
		if c.popsLR {
			c.lrAge = lrCallWindow
		} else {
			c.lr, c.lrAge = rec.Value, 0
		}
	}
}

func isArmISet(s string) bool { return s == "A" || s == "T" || s == "X" || s == "O" }

// riscvPriv maps the mode field of the RISC-V dialect to a privilege.
func riscvPriv(mode string) ingress.Priv {
	switch mode {
	case "-":
		return privUnknown
	case "U", "u":
		return ingress.PrivU
	case "S", "s", "HS", "hs":
		return ingress.PrivS
	case "D", "d":
		return ingress.PrivD
	case "VU", "vu":
		return ingress.PrivVU
	case "VS", "vs":
		return ingress.PrivVS
	}
	return ingress.PrivM
}

// armPriv maps an Arm mode ("EL1h_n", "svc_s", "usr", "thread", "thrd_s")
// to the
// nearest RISC-V privilege: EL0 and user modes are U, EL1/EL2 and the
// other AArch32 modes S, EL3 and monitor mode M.
func armPriv(mode string) ingress.Priv {
	m := mode
	if k := strings.IndexByte(m, '_'); k >= 0 {
		m = m[:k]
	}
	is := func(s string) bool { return strings.EqualFold(m, s) }
	el := func(n byte) bool { return len(m) >= 3 && strings.EqualFold(m[:2], "el") && m[2] == n }
	switch {
	case el('0'), is("usr"), is("thread"), is("thrd"):
		return ingress.PrivU
	case el('3'), is("mon"), is("handler"):
		return ingress.PrivM
	}
	return ingress.PrivS
}

// SetBlockSink makes Flow also pass every block to f, with the source
// (CPU) it belongs to, as it goes: to encode a Tarmac trace and analyse it
// in one pass. A block whose records do not state the privilege has Priv
// PrivUnknown (refuse it with UnknownPrivError(d.Line()) where a
// privilege is needed).
func (d *Decoder) SetBlockSink(f func(b *ingress.Block, src int) error) { d.onBlock = f }

// Flow reads the whole trace and writes it to sink as flow events: per
// block a context event when the privilege or context changed, a time
// event when the time changed (only for traces with timestamps), the
// range of its instructions, and a trap event for blocks ended by an
// exception or interrupt. Flow does not close sink.
func (d *Decoder) Flow(sink flow.Sink) error {
	var ev flow.Event
	for {
		_, err := d.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		ob := &d.cur // valid until the next call of Next
		if d.onBlock != nil {
			if err := d.onBlock(&ob.b, int(ob.src)); err != nil {
				return err
			}
		}
		c := d.cpus[d.cpuSlot(ob.src)]
		if c.havePend {
			p := &c.pending
			if p.trap {
				p.next, p.hasNext = ob.b.IAddr, true // the handler
			}
			if err := d.emit(c, p, &ev, sink); err != nil {
				return err
			}
		}
		c.pending, c.havePend = *ob, true
	}
	for _, c := range d.cpus {
		if c.havePend {
			c.havePend = false
			if err := d.emit(c, &c.pending, &ev, sink); err != nil {
				return err
			}
		}
	}
	return nil
}

// cpuSlot finds the index in d.cpus of the CPU with source number src.
func (d *Decoder) cpuSlot(src uint32) int {
	for i, c := range d.cpus {
		if c.src == src {
			return i
		}
	}
	return 0
}

// emit writes the flow events of one block.
func (d *Decoder) emit(c *cpuState, ob *outBlock, ev *flow.Event, sink flow.Sink) error {
	b := &ob.b
	send := func() error { return sink.Event(ev) }
	priv := b.Priv
	if priv == privUnknown {
		// "-": the trace does not state it; no context event (as
		// from a decoder that does not know it).
		priv = 0
	} else if !c.privSent || b.Priv != c.priv || b.Context != c.ctx {
		*ev = flow.Event{Kind: flow.KindContext, Priv: b.Priv, Context: b.Context, Src: ob.src, Offset: -1}
		if err := send(); err != nil {
			return err
		}
		c.priv, c.ctx, c.privSent = b.Priv, b.Context, true
	}
	if d.hasTime && (!c.init || b.Time != c.time) {
		*ev = flow.Event{Kind: flow.KindTime, Time: b.Time, Priv: priv, Src: ob.src, Offset: -1}
		if err := send(); err != nil {
			return err
		}
		c.time = b.Time
	}
	c.init = true
	if ob.n > 0 {
		end := b.IType
		if ob.trap {
			end = ingress.ITypeNone
		}
		*ev = flow.Event{Kind: flow.KindRange, End: end, N: ob.n, Start: b.IAddr, Last: ob.last,
			Priv: priv, Src: ob.src, Offset: -1}
		if ob.hasNext && !ob.trap {
			ev.Target, ev.HasTarget = ob.next, true
		}
		if err := send(); err != nil {
			return err
		}
	}
	if ob.trap {
		*ev = flow.Event{Kind: flow.KindTrap, Interrupt: ob.interrupt, HasCause: true, Cause: b.Cause, TVal: b.TVal,
			Addr: ob.epc, Priv: priv, Src: ob.src, Offset: -1}
		if b.Cause == UnknownCause { // Exception_Unknown: the trace gave none
			ev.HasCause, ev.Cause, ev.TVal = false, 0, 0
		}
		if ob.hasNext {
			ev.Target, ev.HasTarget = ob.next, true
		}
		if err := send(); err != nil {
			return err
		}
	}
	return nil
}
