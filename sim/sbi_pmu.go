package sim

import (
	"encoding/binary"

	"github.com/rvtrace/rvtrace/pmu"
)

// The SBI PMU extension of the built-in firmware (see sbi.go).

// sbiCounterSet expands counter_idx_base and counter_idx_mask; ok is
// false when the set names a counter beyond the last one.
func (h *Hart) sbiCounterSet(base, mask uint64) (idx []int, ok bool) {
	for b := uint64(0); b < uint64(h.xlen); b++ {
		if mask>>b&1 == 0 {
			continue
		}
		i := base + b
		if i >= sbiNumCounters || i < base {
			return nil, false
		}
		idx = append(idx, int(i))
	}
	return idx, true
}

// sbiEventSel validates event_idx/event_data. It returns the dense
// hardware event (or -1 for firmware events, fw the firmware code),
// supported, and false when the event is invalid.
func sbiEventSel(eventIdx, data uint64) (dense, fw int, supported, valid bool) {
	if eventIdx>>20 != 0 {
		return 0, 0, false, false
	}
	e := pmu.EventIdx(eventIdx)
	switch e.Type() {
	case pmu.TypeHardware:
		if e.Code() == 0 || e.Code() > uint32(pmu.HwRefCPUCycles) {
			return 0, 0, false, false
		}
		d := pmu.Dense(eventIdx)
		return d, 0, pmu.Supported(d), true
	case pmu.TypeCache:
		d := pmu.Dense(eventIdx)
		if d < 0 || e.Code()>>3 >= 7 {
			return 0, 0, false, false
		}
		return d, 0, pmu.Supported(d), true
	case pmu.TypeRaw:
		if e.Code() != 0 || data>>56 != 0 {
			return 0, 0, false, false
		}
		d := pmu.Dense(data)
		if d < 0 || data < pmu.RawBase {
			return -1, 0, false, true
		}
		return d, 0, pmu.Supported(d), true
	case pmu.TypeFirmware:
		if e.Code() >= pmu.NumFirmwareEvents {
			return 0, 0, false, false
		}
		return -1, int(e.Code()), true, true
	}
	return 0, 0, false, false
}

// countsEvent reports whether the hart can count dense hardware event d:
// cycles and instructions always, the other events only with an event
// model.
func (h *Hart) countsEvent(d int) bool {
	switch d {
	case denseCycles, denseInstr, denseRef:
		return true
	}
	return h.obs != nil && h.obs.model != nil
}

// hwStarted reports whether hardware counter i counts.
func (h *Hart) hwStarted(i int) bool { return h.csr.mcountinhibit>>uint(i)&1 == 0 }

// canCount reports whether hardware counter i can count dense event d.
func canCount(i, d int) bool {
	switch i {
	case 0:
		return d == denseCycles
	case 1:
		return false
	case 2:
		return d == denseInstr
	}
	return i >= 3 && i < 32
}

func (h *Hart) sbiPMU(fid uint64) {
	a := func(i int) uint64 { return h.Reg(10 + i) }
	f := h.fw
	switch fid {
	case 0: // num_counters
		h.sbiRet(sbiSuccess, sbiNumCounters)
	case 1: // counter_get_info
		i := a(0)
		switch {
		case i >= sbiNumCounters || i == 1:
			h.sbiRet(sbiErrInvalidParam, 0)
		case i < sbiFirstFWCounter:
			h.sbiRet(sbiSuccess, (csrCycle+i)|63<<12)
		default:
			h.sbiRet(sbiSuccess, 1<<uint(h.xlen-1)|63<<12)
		}
	case 2: // counter_config_matching
		data := a(4)
		if h.xlen == 32 {
			data = a(4) | a(5)<<32
		}
		ret, v := h.sbiConfigMatching(a(0), a(1), a(2), a(3), data)
		h.sbiRet(ret, v)
	case 3: // counter_start
		ival := a(3)
		if h.xlen == 32 {
			ival = a(3) | a(4)<<32
		}
		h.sbiRet(h.sbiStart(a(0), a(1), a(2), ival), 0)
	case 4: // counter_stop
		h.sbiRet(h.sbiStop(a(0), a(1), a(2)), 0)
	case 5, 6: // counter_fw_read, counter_fw_read_hi
		i := a(0)
		if i < sbiFirstFWCounter || i >= sbiNumCounters || f.event[i] == sbiNoEvent {
			h.sbiRet(sbiErrInvalidParam, 0)
			return
		}
		v := f.fwVal[i-sbiFirstFWCounter]
		if fid == 6 {
			if h.xlen == 64 {
				v = 0
			} else {
				v >>= 32
			}
		}
		h.sbiRet(sbiSuccess, v)
	case 8: // event_get_info
		h.sbiRet(h.sbiEventInfo(a(0), a(1), a(2), a(3)), 0)
	default: // 7: snapshot shared memory is optional; this firmware does not offer it
		h.sbiRet(sbiErrNotSupported, 0)
	}
}

func (h *Hart) sbiConfigMatching(base, mask, flags, eventIdx, data uint64) (int64, uint64) {
	f := h.fw
	set, ok := h.sbiCounterSet(base, mask)
	if !ok || flags>>8 != 0 {
		return sbiErrInvalidParam, 0
	}
	// an invalid event_idx is an event no counter can monitor
	dense, _, supported, valid := sbiEventSel(eventIdx, data)
	supported = supported && valid
	isFW := pmu.EventIdx(eventIdx).Type() == pmu.TypeFirmware
	if supported && !isFW && !h.countsEvent(dense) {
		// an event only the event model counts, and there is none: a
		// counter would read 0 whatever happens (SBI: "not supported")
		supported = false
	}
	ctr := -1
	if flags&sbiCfgSkipMatch != 0 {
		if base >= sbiNumCounters || f.event[base] == sbiNoEvent {
			return sbiErrInvalidParam, 0
		}
		ctr = int(base)
		isFW = ctr >= sbiFirstFWCounter
	} else {
		if !supported {
			return sbiErrNotSupported, 0
		}
		if isFW {
			for _, i := range set {
				if i >= sbiFirstFWCounter && f.fwOn>>uint(i-sbiFirstFWCounter)&1 == 0 {
					ctr = i
					break
				}
			}
		} else {
			for _, i := range set { // programmable counters first
				if i >= 3 && i < 32 && !h.hwStarted(i) && canCount(i, dense) {
					ctr = i
					break
				}
			}
			if ctr < 0 {
				for _, i := range set {
					if i < 3 && !h.hwStarted(i) && canCount(i, dense) {
						ctr = i
						break
					}
				}
			}
		}
		if ctr < 0 {
			return sbiErrNotSupported, 0
		}
		f.event[ctr], f.data[ctr] = eventIdx, data
		if !isFW && ctr >= 3 {
			var inh uint64
			for _, f := range [...]struct{ flag, bit uint64 }{{sbiCfgSetVUINH, hpmVUINH}, {sbiCfgSetVSINH, hpmVSINH},
				{sbiCfgSetUINH, hpmUINH}, {sbiCfgSetSINH, hpmSINH}, {sbiCfgSetMINH, hpmMINH}} {
				if flags&f.flag != 0 {
					inh |= f.bit
				}
			}
			sel := eventIdx
			if pmu.EventIdx(eventIdx).Type() == pmu.TypeRaw {
				sel = data
			}
			// M-mode counting is always inhibited and OF set until the
			// counter starts (as OpenSBI does)
			h.writeEvent(ctr, sel|inh|hpmMINH|hpmOF, 0)
		}
	}
	if isFW {
		j := ctr - sbiFirstFWCounter
		if flags&sbiCfgClearValue != 0 {
			f.fwVal[j] = 0
		}
		if flags&sbiCfgAutoStart != 0 {
			f.fwOn |= 1 << uint(j)
		}
	} else {
		if flags&sbiCfgClearValue != 0 {
			h.writeCounter(ctr, 0, 0)
		}
		if flags&sbiCfgAutoStart != 0 {
			h.hwStart(ctr)
		}
	}
	return sbiSuccess, uint64(ctr)
}

// hwStart starts hardware counter i (clearing OF so that its overflow
// interrupt is enabled).
func (h *Hart) hwStart(i int) {
	if i >= 3 && h.hpm.event[i]&hpmOF != 0 {
		h.writeEvent(i, h.hpm.event[i]&^hpmOF, 0)
	}
	h.writeInhibit(h.csr.mcountinhibit &^ (1 << uint(i)))
}

func (h *Hart) sbiStart(base, mask, flags, ival uint64) int64 {
	f := h.fw
	set, ok := h.sbiCounterSet(base, mask)
	if !ok || flags>>1 != 0 {
		return sbiErrInvalidParam
	}
	for _, i := range set {
		if f.event[i] == sbiNoEvent {
			return sbiErrInvalidParam
		}
	}
	ret := int64(sbiSuccess)
	for _, i := range set {
		if i >= sbiFirstFWCounter {
			j := uint(i - sbiFirstFWCounter)
			if f.fwOn>>j&1 != 0 {
				ret = sbiErrAlreadyStart
				continue
			}
			if flags&sbiStartSetInit != 0 {
				f.fwVal[j] = ival
			}
			f.fwOn |= 1 << j
			continue
		}
		if h.hwStarted(i) {
			ret = sbiErrAlreadyStart
			continue
		}
		if flags&sbiStartSetInit != 0 {
			h.writeCounter(i, ival, 0)
		}
		h.hwStart(i)
	}
	return ret
}

func (h *Hart) sbiStop(base, mask, flags uint64) int64 {
	f := h.fw
	set, ok := h.sbiCounterSet(base, mask)
	if !ok || flags>>1 != 0 {
		return sbiErrInvalidParam
	}
	for _, i := range set {
		if f.event[i] == sbiNoEvent {
			return sbiErrInvalidParam
		}
	}
	ret := int64(sbiSuccess)
	for _, i := range set {
		if i >= sbiFirstFWCounter {
			j := uint(i - sbiFirstFWCounter)
			if f.fwOn>>j&1 == 0 {
				ret = sbiErrAlreadyStop
			}
			f.fwOn &^= 1 << j
		} else {
			if !h.hwStarted(i) {
				ret = sbiErrAlreadyStop
			}
			h.writeInhibit(h.csr.mcountinhibit | 1<<uint(i))
		}
		if flags&sbiStopReset != 0 {
			f.event[i] = sbiNoEvent
			if i >= 3 && i < 32 {
				h.writeEvent(i, 0, 0)
			}
		}
	}
	return ret
}

// sbiEventInfo implements event_get_info: num entries of 16 bytes at the
// physical address lo|hi<<32 (event_idx u32, output u32, event_data
// u64); output bit 0 is set for the events the firmware can count.
func (h *Hart) sbiEventInfo(lo, hi, num, flags uint64) int64 {
	if flags != 0 {
		return sbiErrInvalidParam
	}
	addr := lo
	if h.xlen == 32 {
		addr = lo | hi<<32
	} else if hi != 0 {
		return sbiErrInvalidAddr
	}
	if addr&15 != 0 {
		return sbiErrInvalidParam
	}
	size := num * 16
	if num > 1<<16 || size == 0 && num != 0 {
		return sbiErrInvalidParam
	}
	b := h.m.mem.ramSlice(addr, size)
	if b == nil || !h.pmpCheck(addr, max(size, 1), accStore, privS) {
		return sbiErrInvalidAddr
	}
	for i := uint64(0); i < num; i++ {
		e := b[16*i:]
		idx := uint64(binary.LittleEndian.Uint32(e) & 0xfffff)
		data := binary.LittleEndian.Uint64(e[8:])
		_, _, sup, valid := sbiEventSel(idx, data)
		out := uint32(0)
		if valid && sup {
			out = 1
		}
		binary.LittleEndian.PutUint32(e[4:], out)
	}
	h.m.mem.hostWrote(addr, size)
	return sbiSuccess
}
