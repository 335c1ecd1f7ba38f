package sim

import (
	"fmt"

	"github.com/rvtrace/rvtrace/pmu"
)

// Built-in SBI firmware.
//
// A machine loaded with LoadSBI runs its program in S-mode on firmware
// the simulator provides in Go, as OpenSBI would provide it in M-mode:
// the harts never execute M-mode code. An ecall from S-mode is an SBI
// call: the simulator performs it and the ecall retires like any other
// instruction (so it counts in minstret, in S-mode). Traps that would go
// to M-mode are handled by the firmware: the machine timer interrupt
// becomes the supervisor timer interrupt (set_timer), misaligned loads and
// stores are emulated (firmware events 0 and 1), illegal instructions and
// access faults are counted (firmware events 2..4) and redirected to the
// S-mode handler, as are the exceptions S-mode did not delegate.
//
// Extensions: base (spec version 3.0, implementation id SBIImplID),
// TIME, IPI, RFENCE (fence.i, sfence.vma, sfence.vma.asid; the hfence
// functions return NOT_SUPPORTED: no hypervisor), HSM (start, stop,
// status; retentive suspend), SRST (the run ends: shutdown or reboot with
// no reason exits 0, system failure exits 1, an SBI-implementation
// reason 0xE00000nn exits nn), DBCN (write, read: no input, write_byte),
// the legacy console putchar/getchar, set_timer, clear_ipi, send_ipi,
// remote fences and shutdown, and PMU: functions 0..6 and 8 of the SBI
// PMU extension (num_counters, counter_get_info, counter_config_matching,
// counter_start, counter_stop, counter_fw_read, counter_fw_read_hi,
// event_get_info); snapshot (7) returns NOT_SUPPORTED.
//
// PMU counters: index 0 is mcycle, 2 minstret, 3..31 mhpmcounter3..31
// (index 1, time, is not a PMU counter: counter_get_info says
// INVALID_PARAM), 32..47 are 16 firmware counters. Cycles may be counted
// on counter 0 or any mhpmcounter, instructions on 2 or any mhpmcounter,
// every other supported hardware event on any mhpmcounter;
// counter_config_matching prefers the lowest programmable counter and
// falls back to the fixed one. At boot mcountinhibit is 0xfffffff8 (cycle
// and instret run, the mhpmcounters are stopped), mcounteren is all ones
// and scounteren 7.

// SBIImplID is the implementation id the built-in firmware reports
// ("RVTR").
const SBIImplID = 0x52565452

// SBI error codes.
const (
	sbiSuccess         = 0
	sbiErrFailed       = -1
	sbiErrNotSupported = -2
	sbiErrInvalidParam = -3
	sbiErrDenied       = -4
	sbiErrInvalidAddr  = -5
	sbiErrAlreadyAvail = -6
	sbiErrAlreadyStart = -7
	sbiErrAlreadyStop  = -8
	sbiNumFWCounters   = 16
	sbiFirstFWCounter  = 32
	sbiNumCounters     = sbiFirstFWCounter + sbiNumFWCounters
	sbiNoEvent         = ^uint64(0)
	sbiCfgSkipMatch    = 1 << 0
	sbiCfgClearValue   = 1 << 1
	sbiCfgAutoStart    = 1 << 2
	// the inhibit flags of counter_config_matching as the ratified SBI
	// (2.0, "Performance Monitoring Unit Extension") numbers them, and
	// Linux and OpenSBI use them (the v6 draft in specs/002 had MINH at
	// bit 3 up to VUINH at bit 7)
	sbiCfgSetVUINH      = 1 << 3
	sbiCfgSetVSINH      = 1 << 4
	sbiCfgSetUINH       = 1 << 5
	sbiCfgSetSINH       = 1 << 6
	sbiCfgSetMINH       = 1 << 7
	sbiStartSetInit     = 1 << 0
	sbiStopReset        = 1 << 0
	sbiExtBase          = 0x10
	sbiExtTime          = 0x54494D45
	sbiExtIPI           = 0x735049
	sbiExtRfence        = 0x52464E43
	sbiExtHSM           = 0x48534D
	sbiExtSRST          = 0x53525354
	sbiExtPMU           = 0x504D55
	sbiExtDBCN          = 0x4442434E
	sbiHSMStarted       = 0
	sbiHSMStopped       = 1
	sbiHSMSuspended     = 4
	sbiSuspendRetentive = 0
)

// fwHart is the per-hart state of the built-in SBI firmware.
type fwHart struct {
	parked  bool                   // HSM stopped: the hart does not run
	event   [sbiNumCounters]uint64 // configured event_idx per counter, sbiNoEvent when none
	data    [sbiNumCounters]uint64 // event_data of raw events
	fwVal   [sbiNumFWCounters]uint64
	fwOn    uint32 // started firmware counters
	fwCount [pmu.NumFirmwareEvents]uint64
}

// LoadSBI loads a program that runs in S-mode on the simulator's
// built-in SBI firmware: segments at their physical addresses, hart 0
// started in S-mode at the entry point with a0 = hartid and a1 = the
// device tree, the other harts stopped (HSM hart_start starts them).
func (m *Machine) LoadSBI(path string) error {
	if err := m.LoadELF(path); err != nil {
		return err
	}
	m.finisher = true
	for _, h := range m.harts {
		h.fwSetup()
		if h.id != 0 {
			h.fw.parked = true
			h.waiting = true
		}
	}
	return nil
}

// fwSetup puts a hart in the state OpenSBI leaves it in before entering
// S-mode.
func (h *Hart) fwSetup() {
	h.fw = &fwHart{}
	for i := range h.fw.event {
		h.fw.event[i] = sbiNoEvent
	}
	c := &h.csr
	c.medeleg = 1<<causeFetchMisaligned | 1<<causeBreakpoint | 1<<causeEcallU |
		1<<causeFetchPageFault | 1<<causeLoadPageFault | 1<<causeStorePageFault
	c.mideleg = 1<<irqSSI | 1<<irqSTI | 1<<irqSEI | 1<<irqLCOF
	c.mcounteren = 0xffffffff
	c.scounteren = 7
	// as OpenSBI does for a priv 1.12 hart with Zicbom/Zicboz: cbo.* in
	// S-mode (cbo.inval invalidates)
	c.menvcfg = envcfgCBIE | envcfgCBCFE | envcfgCBZE
	if h.m.sstc != nil {
		c.menvcfg |= menvcfgSTCE
	}
	if h.xlen == 64 { // Svpbmt, as OpenSBI enables it for S-mode
		c.menvcfg |= menvcfgPBMTE
	}
	h.writeInhibit(0xfffffff8)
	c.mie = 0
	h.m.clint.mtimecmp[h.id] = ^uint64(0)
	if h.m.nPMP > 0 { // everything accessible to S and U
		c.pmpaddr[0] = ^uint64(0) >> 10
		c.pmpcfg[0] = pmpR | pmpW | pmpX | pmpNAP
	}
	h.setMstatus(c.mstatus&^mstatusFS | 1<<13) // FS = Initial
	old := h.priv
	h.priv = privS
	h.privChanged(old)
	h.flushTLB()
}

// FirmwareCounts returns how many times hart's built-in firmware saw each
// firmware event (nil without the built-in firmware).
func (m *Machine) FirmwareCounts(hart int) []uint64 {
	h := m.Hart(hart)
	if h == nil || h.fw == nil {
		return nil
	}
	return append([]uint64(nil), h.fw.fwCount[:]...)
}

// fwEvent counts firmware event code on hart h.
func (h *Hart) fwEvent(code int) {
	f := h.fw
	f.fwCount[code]++
	if f.fwOn == 0 {
		return
	}
	want := uint64(pmu.FirmwareEvent(code))
	for j := 0; j < sbiNumFWCounters; j++ {
		if f.fwOn>>uint(j)&1 != 0 && f.event[sbiFirstFWCounter+j] == want {
			f.fwVal[j]++
		}
	}
}

// fwTrap handles a trap that would enter M-mode. It returns handled
// (nothing more to do) or redirect (deliver the trap to S-mode).
// The trap to deliver may differ from the one raised when emulating a
// misaligned access faulted.
func (h *Hart) fwTrap(cause, tval uint64, intr bool, d *inst) (handled, redirect bool, c2, t2 uint64) {
	c := &h.csr
	if intr {
		switch cause {
		case irqMTI:
			c.mip |= 1 << irqSTI
			c.mie &^= 1 << irqMTI
			return true, false, cause, tval
		case irqMSI:
			h.m.clint.msip[h.id] = 0
			c.mip |= 1 << irqSSI
			return true, false, cause, tval
		}
		// other M-level interrupts are not enabled by the firmware
		c.mie &^= 1 << cause
		return true, false, cause, tval
	}
	switch cause {
	case causeLoadMisaligned, causeStoreMisaligned:
		h.excCause, h.excTval = cause, tval
		if d != nil && h.fwMisaligned(d) {
			return true, false, cause, tval
		}
		return false, true, h.excCause, h.excTval // a fault while emulating
	case causeIllegal:
		h.fwEvent(pmu.FwIllegalInsn)
	case causeLoadAccess:
		h.fwEvent(pmu.FwAccessLoad)
	case causeStoreAccess:
		h.fwEvent(pmu.FwAccessStore)
	}
	return false, true, cause, tval
}

// fwMisaligned emulates a misaligned load or store byte by byte. It
// returns false when the instruction cannot be emulated (atomics) or a
// byte access faulted (h.excCause then holds the fault).
func (h *Hart) fwMisaligned(d *inst) bool {
	var size uint64
	store, fp := false, false
	switch d.op {
	case opLH, opLHU:
		size = 2
	case opLW, opLWU:
		size = 4
	case opLD:
		size = 8
	case opFLW:
		size, fp = 4, true
	case opFLD:
		size, fp = 8, true
	case opSH:
		size, store = 2, true
	case opSW:
		size, store = 4, true
	case opSD:
		size, store = 8, true
	case opFSW:
		size, store, fp = 4, true, true
	case opFSD:
		size, store, fp = 8, true, true
	default:
		return false
	}
	pc := h.pc
	va := (h.x[d.rs1&31] + uint64(d.imm)) & h.amask
	if store {
		v := h.x[d.rs2&31]
		if fp {
			v = h.f[d.rs2&31]
		}
		for i := uint64(0); i < size; i++ {
			if _, ok := h.storeTarget((va+i)&h.amask, 1); !ok {
				return false
			}
		}
		for i := uint64(0); i < size; i++ {
			if !h.storeSlow((va+i)&h.amask, 1, v>>(8*i)) {
				return false
			}
		}
		h.fwEvent(pmu.FwMisalignedStore)
	} else {
		var v uint64
		for i := uint64(0); i < size; i++ {
			b, ok := h.loadSlow((va+i)&h.amask, 1)
			if !ok {
				return false
			}
			v |= b << (8 * i)
		}
		switch {
		case fp:
			h.writeF(d.rd, v, size == 8)
		case d.op == opLH:
			h.SetReg(int(d.rd), uint64(int64(int16(v))))
		case d.op == opLW:
			h.SetReg(int(d.rd), uint64(int64(int32(v))))
		default:
			h.SetReg(int(d.rd), v)
		}
		h.fwEvent(pmu.FwMisalignedLoad)
	}
	// the trap and the firmware's return, as the trace port sees them
	h.tr.trap(pc, causeLoadMisaligned+2*b2u(store), va, false)
	h.pc = (pc + uint64(d.size)) & h.amask
	h.dropFetchWindow()
	h.tr.restart(h.pc)
	return true
}

// errCode returns an SBI error code as a register value.
func errCode(e int64) uint64 { return uint64(e) }

// sbiRet sets the return registers of an SBI call.
func (h *Hart) sbiRet(err int64, val uint64) {
	h.SetReg(10, uint64(err))
	h.SetReg(11, val)
}

// arg64 returns the 64-bit argument in register i (RV32: the pair i, i+1).
func (h *Hart) arg64(i int) uint64 {
	if h.xlen == 32 {
		return h.Reg(i) | h.Reg(i+1)<<32
	}
	return h.Reg(i)
}

// sbiCall performs the SBI call of an ecall from S-mode.
func (h *Hart) sbiCall() {
	eid, fid := h.Reg(17), h.Reg(16)
	a := func(i int) uint64 { return h.Reg(10 + i) }
	switch eid {
	case 0x00: // legacy set_timer
		h.sbiSetTimer(h.arg64(10))
		h.SetReg(10, 0)
	case 0x01: // legacy console_putchar
		_, _ = h.m.stdout.Write([]byte{byte(a(0))})
		h.SetReg(10, 0)
	case 0x02: // legacy console_getchar: no input
		h.SetReg(10, ^uint64(0))
	case 0x03: // legacy clear_ipi
		h.csr.mip &^= 1 << irqSSI
		h.SetReg(10, 0)
	case 0x04, 0x05, 0x06, 0x07: // legacy send_ipi, remote fences (hart mask by pointer)
		var mask uint64 = ^uint64(0)
		if p := a(0); p != 0 {
			v, ok := h.readSupervisor(p, uint64(h.xlen/8))
			if !ok {
				h.SetReg(10, errCode(sbiErrInvalidAddr))
				return
			}
			mask = v
		}
		switch eid {
		case 0x04:
			h.sbiIPI(mask, 0)
		case 0x05:
			h.sbiFence(mask, 0, pmu.FwFenceISent)
		default:
			h.sbiFence(mask, 0, pmu.FwSfenceVMASent)
		}
		h.SetReg(10, 0)
	case 0x08: // legacy shutdown
		h.m.exit(0)
	case sbiExtBase:
		h.sbiBase(fid, a(0))
	case sbiExtTime:
		if fid != 0 {
			h.sbiRet(sbiErrNotSupported, 0)
			return
		}
		h.sbiSetTimer(h.arg64(10))
		h.sbiRet(sbiSuccess, 0)
	case sbiExtIPI:
		if fid != 0 {
			h.sbiRet(sbiErrNotSupported, 0)
			return
		}
		h.sbiRet(h.sbiIPI(a(0), a(1)), 0)
	case sbiExtRfence:
		switch fid {
		case 0:
			h.sbiRet(h.sbiFence(a(0), a(1), pmu.FwFenceISent), 0)
		case 1:
			h.sbiRet(h.sbiFence(a(0), a(1), pmu.FwSfenceVMASent), 0)
		case 2:
			h.sbiRet(h.sbiFence(a(0), a(1), pmu.FwSfenceVMAASIDSent), 0)
		default: // hfence.*: no hypervisor extension
			h.sbiRet(sbiErrNotSupported, 0)
		}
	case sbiExtHSM:
		h.sbiHSM(fid, a(0), a(1), a(2))
	case sbiExtSRST:
		h.sbiReset(fid, a(0), a(1))
	case sbiExtDBCN:
		h.sbiDBCN(fid, a(0), a(1), a(2))
	case sbiExtPMU:
		h.sbiPMU(fid)
	default:
		h.sbiRet(sbiErrNotSupported, 0)
	}
}

func (h *Hart) sbiBase(fid, arg uint64) {
	switch fid {
	case 0: // get_spec_version: 3.0
		h.sbiRet(sbiSuccess, 3<<24)
	case 1:
		h.sbiRet(sbiSuccess, SBIImplID)
	case 2:
		h.sbiRet(sbiSuccess, 1)
	case 3: // probe_extension
		switch arg {
		case sbiExtBase, sbiExtTime, sbiExtIPI, sbiExtRfence, sbiExtHSM, sbiExtSRST, sbiExtPMU, sbiExtDBCN,
			0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08:
			h.sbiRet(sbiSuccess, 1)
		default:
			h.sbiRet(sbiSuccess, 0)
		}
	case 4, 5, 6: // mvendorid, marchid, mimpid
		v, _ := h.csrRead(csrMvendorid + uint32(fid-4))
		h.sbiRet(sbiSuccess, v)
	default:
		h.sbiRet(sbiErrNotSupported, 0)
	}
}

func (h *Hart) sbiSetTimer(t uint64) {
	h.fwEvent(pmu.FwSetTimer)
	h.m.clint.mtimecmp[h.id] = t
	h.csr.mip &^= 1 << irqSTI
	h.csr.mie |= 1 << irqMTI
	h.stop = true
}

// hartsOf returns the harts of an SBI hart mask, or false when one of
// them does not exist (base -1: all harts).
func (h *Hart) hartsOf(mask, base uint64) ([]*Hart, bool) {
	var hs []*Hart
	if base == h.amask {
		return h.m.harts, true
	}
	for i := uint64(0); i < uint64(h.xlen); i++ {
		if mask>>i&1 == 0 {
			continue
		}
		id := base + i
		if id >= uint64(len(h.m.harts)) || id < base {
			return nil, false
		}
		hs = append(hs, h.m.harts[id])
	}
	return hs, true
}

func (h *Hart) sbiIPI(mask, base uint64) int64 {
	hs, ok := h.hartsOf(mask, base)
	if !ok {
		return sbiErrInvalidParam
	}
	for _, t := range hs {
		h.fwEvent(pmu.FwIPISent)
		t.fwEvent(pmu.FwIPIReceived)
		t.csr.mip |= 1 << irqSSI
	}
	h.stop = true
	return sbiSuccess
}

// sbiFence performs a remote fence.i or sfence.vma (sent is the SENT
// firmware event; the RECEIVED one follows it).
func (h *Hart) sbiFence(mask, base uint64, sent int) int64 {
	hs, ok := h.hartsOf(mask, base)
	if !ok {
		return sbiErrInvalidParam
	}
	for _, t := range hs {
		h.fwEvent(sent)
		t.fwEvent(sent + 1)
		t.flushTLB()
		if t.obs != nil && t.obs.model != nil && sent != pmu.FwFenceISent {
			t.obs.model.FlushTLBs()
		}
	}
	return sbiSuccess
}

func (h *Hart) sbiHSM(fid, a0, a1, a2 uint64) {
	switch fid {
	case 0: // hart_start(hartid, start_addr, opaque)
		if a0 >= uint64(len(h.m.harts)) {
			h.sbiRet(sbiErrInvalidParam, 0)
			return
		}
		t := h.m.harts[a0]
		if t.fw == nil || !t.fw.parked {
			h.sbiRet(sbiErrAlreadyAvail, 0)
			return
		}
		if h.m.mem.find(a1) == nil {
			h.sbiRet(sbiErrInvalidAddr, 0)
			return
		}
		t.fw.parked = false
		t.waiting = false
		old := t.priv
		t.priv = privS
		t.privChanged(old)
		t.csr.satp = 0
		t.updateFast()
		t.csr.mstatus &^= mstatusSIE
		t.pc = a1 & t.amask
		t.SetReg(10, a0)
		t.SetReg(11, a2)
		t.flushTLB()
		t.tr.restart(t.pc)
		h.sbiRet(sbiSuccess, 0)
	case 1: // hart_stop
		h.fw.parked = true
		h.waiting = true
		h.stop = true
		h.sbiRet(sbiSuccess, 0)
	case 2: // hart_get_status
		if a0 >= uint64(len(h.m.harts)) {
			h.sbiRet(sbiErrInvalidParam, 0)
			return
		}
		t := h.m.harts[a0]
		st := uint64(sbiHSMStarted)
		if t.fw != nil && t.fw.parked {
			st = sbiHSMStopped
		}
		h.sbiRet(sbiSuccess, st)
	case 3: // hart_suspend(type, resume_addr, opaque)
		switch {
		case a0 == sbiSuspendRetentive:
			if h.pendingInterrupts()&h.csr.mie == 0 {
				h.waiting = true
			}
			h.stop = true
			h.sbiRet(sbiSuccess, 0)
		case a0 == 0x80000000 || a0 >= 0x10000000 && a0 < 0x80000000 || a0 >= 0x90000000 && a0 <= 0xffffffff:
			h.sbiRet(sbiErrNotSupported, 0)
		default:
			h.sbiRet(sbiErrInvalidParam, 0)
		}
	default:
		h.sbiRet(sbiErrNotSupported, 0)
	}
}

func (h *Hart) sbiReset(fid, typ, reason uint64) {
	if fid != 0 {
		h.sbiRet(sbiErrNotSupported, 0)
		return
	}
	if typ > 2 && (typ < 0xF0000000 || typ > 0xFFFFFFFF) {
		h.sbiRet(sbiErrInvalidParam, 0)
		return
	}
	if typ >= 0xF0000000 {
		h.sbiRet(sbiErrNotSupported, 0)
		return
	}
	code := -1
	switch {
	case reason == 0:
		code = 0
	case reason == 1:
		code = 1
	case reason >= 0xE0000000 && reason <= 0xEFFFFFFF:
		code = int(reason & 0xff)
	case reason >= 0xF0000000 && reason <= 0xFFFFFFFF:
		code = 1
	}
	if code < 0 {
		h.sbiRet(sbiErrInvalidParam, 0)
		return
	}
	h.m.exit(code)
}

func (h *Hart) sbiDBCN(fid, n, lo, hi uint64) {
	switch fid {
	case 0, 1: // write / read
		addr := lo
		if h.xlen == 32 {
			addr = lo | hi<<32
		} else if hi != 0 {
			h.sbiRet(sbiErrInvalidParam, 0)
			return
		}
		if fid == 1 {
			h.sbiRet(sbiSuccess, 0) // no console input
			return
		}
		buf := make([]byte, min(n, 1<<20))
		if !h.m.mem.read(addr, buf) || !h.pmpCheck(addr, uint64(len(buf)), accLoad, privS) {
			h.sbiRet(sbiErrInvalidParam, 0)
			return
		}
		_, _ = h.m.stdout.Write(buf)
		h.sbiRet(sbiSuccess, uint64(len(buf)))
	case 2:
		_, _ = h.m.stdout.Write([]byte{byte(n)})
		h.sbiRet(sbiSuccess, 0)
	default:
		h.sbiRet(sbiErrNotSupported, 0)
	}
}

// readSupervisor reads size bytes at a supervisor virtual address.
func (h *Hart) readSupervisor(va, size uint64) (uint64, bool) {
	save := [2]uint64{h.excCause, h.excTval}
	defer func() { h.excCause, h.excTval = save[0], save[1] }()
	var v uint64
	for i := uint64(0); i < size; i++ {
		b, ok := h.loadSlow((va+i)&h.amask, 1)
		if !ok {
			return 0, false
		}
		v |= b << (8 * i)
	}
	return v, true
}

func (f *fwHart) String() string { return fmt.Sprintf("fw(parked=%v)", f.parked) }

// FinisherBase is the address of the SiFive test finisher of the machines
// that run firmware (LoadSBI, LoadFirmware), as on QEMU's virt machine: a
// 32-bit write of 0x5555 ends the run with exit code 0, 0x3333 | code<<16
// with exit code code (1 when code is 0), 0x7777 (reset) with 0.
const (
	FinisherBase = 0x100000
	finisherSize = 0x1000
)

func (m *Machine) finisherWrite(h *Hart, off, v uint64) {
	if off != 0 {
		return
	}
	switch v & 0xffff {
	case 0x5555, 0x7777:
		m.exit(0)
	case 0x3333:
		code := int(v>>16) & 0xffff
		if code == 0 {
			code = 1
		}
		m.exit(code)
	}
	h.stop = true
}
