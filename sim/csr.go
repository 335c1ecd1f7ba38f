package sim

// CSR addresses (privileged spec tables "Currently allocated RISC-V
// unprivileged/supervisor/machine-level CSR addresses").
const (
	csrFflags        = 0x001
	csrFrm           = 0x002
	csrFcsr          = 0x003
	csrCycle         = 0xC00
	csrTime          = 0xC01
	csrInstret       = 0xC02
	csrHpmcounter3   = 0xC03
	csrHpmcounter31  = 0xC1F
	csrCycleh        = 0xC80
	csrTimeh         = 0xC81
	csrInstreth      = 0xC82
	csrHpmcounter3h  = 0xC83
	csrHpmcounter31h = 0xC9F
	csrSstatus       = 0x100
	csrSie           = 0x104
	csrStvec         = 0x105
	csrScounteren    = 0x106
	csrStimecmp      = 0x14D
	csrSenvcfg       = 0x10A
	csrSscratch      = 0x140
	csrSepc          = 0x141
	csrScause        = 0x142
	csrStval         = 0x143
	csrSip           = 0x144
	csrSatp          = 0x180
	csrScontext      = 0x5A8
	csrMvendorid     = 0xF11
	csrMarchid       = 0xF12
	csrMimpid        = 0xF13
	csrMhartid       = 0xF14
	csrMconfigptr    = 0xF15
	csrMstatus       = 0x300
	csrMisa          = 0x301
	csrMedeleg       = 0x302
	csrMideleg       = 0x303
	csrMie           = 0x304
	csrMtvec         = 0x305
	csrMcounteren    = 0x306
	csrMenvcfg       = 0x30A
	csrMstatush      = 0x310
	csrMenvcfgh      = 0x31A
	csrMcountinhibit = 0x320
	csrMhpmevent3    = 0x323
	csrMhpmevent31   = 0x33F
	csrMscratch      = 0x340
	csrMepc          = 0x341
	csrMcause        = 0x342
	csrMtval         = 0x343
	csrMip           = 0x344
	csrPmpcfg0       = 0x3A0
	csrPmpcfg15      = 0x3AF
	csrPmpaddr0      = 0x3B0
	csrPmpaddr63     = 0x3EF
	csrMseccfg       = 0x747
	csrTselect       = 0x7A0
	csrTdata1        = 0x7A1
	csrTdata2        = 0x7A2
	csrTdata3        = 0x7A3
	csrTinfo         = 0x7A4
	csrMcontext      = 0x7A8
	csrMcycle        = 0xB00
	csrMinstret      = 0xB02
	csrMhpmcounter3  = 0xB03
	csrMhpmcounter31 = 0xB1F
	csrMcycleh       = 0xB80
	csrMinstreth     = 0xB82
	csrMhpmcounter3h = 0xB83
	csrMhpmcntr31h   = 0xB9F
)

// mstatus fields.
const (
	mstatusSIE  = 1 << 1
	mstatusMIE  = 1 << 3
	mstatusSPIE = 1 << 5
	mstatusMPIE = 1 << 7
	mstatusSPP  = 1 << 8
	mstatusMPP  = 3 << 11
	mstatusFS   = 3 << 13
	mstatusMPRV = 1 << 17
	mstatusSUM  = 1 << 18
	mstatusMXR  = 1 << 19
	mstatusTVM  = 1 << 20
	mstatusTW   = 1 << 21
	mstatusTSR  = 1 << 22

	mstatusWritable = mstatusSIE | mstatusMIE | mstatusSPIE | mstatusMPIE | mstatusSPP |
		mstatusMPP | mstatusFS | mstatusMPRV | mstatusSUM | mstatusMXR | mstatusTVM |
		mstatusTW | mstatusTSR
	sstatusMask = mstatusSIE | mstatusSPIE | mstatusSPP | mstatusFS | mstatusSUM |
		mstatusMXR | 3<<32 // UXL
	// interrupts that can be delegated, and software-writable mip bits
	midelegMask = 1<<irqSSI | 1<<irqSTI | 1<<irqSEI | 1<<irqLCOF
	mipWritable = 1<<irqSSI | 1<<irqSTI | 1<<irqSEI | 1<<irqLCOF
	mieMask     = 1<<irqSSI | 1<<irqMSI | 1<<irqSTI | 1<<irqMTI | 1<<irqSEI | 1<<irqMEI | 1<<irqLCOF
	// exceptions that can be delegated (all but ecall from M)
	medelegMask = 0xb3ff
)

// fsDirty marks the FP state dirty (any write of an FP register or fflags).
func (h *Hart) fsDirty() { h.csr.mstatus |= mstatusFS }

func (h *Hart) mstatusRead() uint64 {
	v := h.csr.mstatus
	if v&mstatusFS == mstatusFS {
		if h.xlen == 32 {
			v |= 1 << 31
		} else {
			v |= 1 << 63
		}
	}
	return v
}

// csrAccess checks the privilege and read-only rules of an access.
func (h *Hart) csrAllowed(n uint32, write bool) bool {
	if uint8((n>>8)&3) > h.priv {
		return false
	}
	if write && n>>10 == 3 {
		return false
	}
	return true
}

// counterAllowed checks mcounteren/scounteren for the user counters.
func (h *Hart) counterAllowed(bit uint) bool {
	if h.priv < privM && h.csr.mcounteren>>bit&1 == 0 {
		return false
	}
	if h.priv < privS && h.csr.scounteren>>bit&1 == 0 {
		return false
	}
	return true
}

// csrRead returns the value of CSR n, or false when the read is illegal.
func (h *Hart) csrRead(n uint32) (uint64, bool) {
	c := &h.csr
	rv32 := h.xlen == 32
	if h.m.nPMP == 0 && n >= csrPmpcfg0 && n <= csrPmpaddr63 {
		return 0, false
	}
	switch {
	case n >= csrPmpcfg0 && n <= csrPmpcfg15:
		i := int(n - csrPmpcfg0)
		if !rv32 && i&1 != 0 {
			return 0, false
		}
		per := 8
		if rv32 {
			per = 4
		}
		var v uint64
		for j := 0; j < per; j++ {
			if k := i*4 + j; k < pmpEntries {
				v |= uint64(c.pmpcfg[k]) << (8 * j)
			}
		}
		return v, true
	case n >= csrPmpaddr0 && n <= csrPmpaddr63:
		i := int(n - csrPmpaddr0)
		if i < pmpEntries {
			return c.pmpaddr[i], true
		}
		return 0, true
	}
	if v, ok, handled := h.counterRead(n); handled {
		return v, ok
	}
	switch n {
	case csrFflags, csrFrm, csrFcsr:
		if h.fsOff {
			return 0, false
		}
		switch n {
		case csrFflags:
			return c.fflags, true
		case csrFrm:
			return c.frm, true
		}
		return c.frm<<5 | c.fflags, true
	case csrTime:
		return h.m.clint.mtime, h.counterAllowed(1)
	case csrTimeh:
		return h.m.clint.mtime >> 32, rv32 && h.counterAllowed(1)
	case csrSstatus:
		return h.mstatusRead() & (sstatusMask | 1<<63 | 1<<31), true
	case csrSie:
		return c.mie & c.mideleg, true
	case csrStvec:
		return c.stvec, true
	case csrScounteren:
		return c.scounteren, true
	case csrStimecmp:
		if !h.sstcAllowed() {
			return 0, false
		}
		return h.m.sstc[h.id], true
	case csrSenvcfg:
		return c.senvcfg, true
	case csrSscratch:
		return c.sscratch, true
	case csrSepc:
		return c.sepc, true
	case csrScause:
		return c.scause, true
	case csrStval:
		return c.stval, true
	case csrSip:
		return h.pendingInterrupts() & c.mideleg, true
	case csrSatp:
		if h.priv == privS && c.mstatus&mstatusTVM != 0 {
			return 0, false
		}
		return c.satp, true
	case csrScontext:
		return c.scontext, true
	case csrMvendorid, csrMarchid, csrMimpid, csrMconfigptr:
		return 0, true
	case csrMhartid:
		return uint64(h.id), true
	case csrMstatus:
		return h.mstatusRead(), true
	case csrMstatush:
		return 0, rv32
	case csrMisa:
		return c.misa, true
	case csrMedeleg:
		return c.medeleg, true
	case csrMideleg:
		return c.mideleg, true
	case csrMie:
		return c.mie, true
	case csrMtvec:
		return c.mtvec, true
	case csrMcounteren:
		return c.mcounteren, true
	case csrMenvcfg:
		return c.menvcfg, true
	case csrMenvcfgh:
		return 0, rv32
	case csrMscratch:
		return c.mscratch, true
	case csrMepc:
		return c.mepc, true
	case csrMcause:
		return c.mcause, true
	case csrMtval:
		return c.mtval, true
	case csrMip:
		return h.pendingInterrupts(), true
	case csrMseccfg:
		return 0, true
	case csrTselect:
		return c.tselect, true
	case csrTdata1, csrTdata2, csrTdata3:
		return 0, true
	case csrTinfo:
		return 1, true // no trigger types supported at any index
	case csrMcontext:
		return c.mcontext, true
	case csrJvt:
		return c.jvt, h.m.zc&zcZcmt != 0
	}
	return 0, false
}

// csrWrite writes CSR n (the value already zero-extended to XLEN).
// It reports whether the write is legal.
func (h *Hart) csrWrite(n uint32, v uint64) bool {
	c := &h.csr
	rv32 := h.xlen == 32
	if rv32 {
		v &= 0xffffffff
	}
	if h.m.nPMP == 0 && n >= csrPmpcfg0 && n <= csrPmpaddr63 {
		return false
	}
	switch {
	case n >= csrPmpcfg0 && n <= csrPmpcfg15:
		i := int(n - csrPmpcfg0)
		if !rv32 && i&1 != 0 {
			return false
		}
		per := 8
		if rv32 {
			per = 4
		}
		for j := 0; j < per; j++ {
			k := i*4 + j
			if k >= h.m.nPMP || c.pmpcfg[k]&pmpL != 0 {
				continue
			}
			b := uint8(v >> (8 * j))
			if b&(pmpR|pmpW) == pmpW { // W without R is reserved
				b &^= pmpW
			}
			c.pmpcfg[k] = b & (pmpR | pmpW | pmpX | pmpA | pmpL)
		}
		h.flushTLB()
		return true
	case n >= csrPmpaddr0 && n <= csrPmpaddr63:
		i := int(n - csrPmpaddr0)
		if i < h.m.nPMP && c.pmpcfg[i]&pmpL == 0 &&
			!(i+1 < pmpEntries && c.pmpcfg[i+1]&pmpL != 0 && c.pmpcfg[i+1]&pmpA == pmpTOR) {
			if rv32 {
				c.pmpaddr[i] = v
			} else {
				c.pmpaddr[i] = v & (1<<54 - 1)
			}
		}
		h.flushTLB()
		return true
	}
	if ok, handled := h.counterWrite(n, v); handled {
		return ok
	}
	switch n {
	case csrFflags, csrFrm, csrFcsr:
		if h.fsOff {
			return false
		}
		switch n {
		case csrFflags:
			c.fflags = v & 31
		case csrFrm:
			c.frm = v & 7
		default:
			c.fflags = v & 31
			c.frm = (v >> 5) & 7
		}
		h.fsDirty()
	case csrSstatus:
		h.setMstatus(c.mstatus&^sstatusMask | v&sstatusMask)
	case csrSie:
		c.mie = c.mie&^c.mideleg | v&c.mideleg&mieMask
	case csrStvec:
		c.stvec = v &^ 2
	case csrScounteren:
		c.scounteren = v & 0xffffffff
	case csrSenvcfg:
		c.senvcfg = envcfgWrite(c.senvcfg, v)
	case csrSscratch:
		c.sscratch = v
	case csrSepc:
		c.sepc = v &^ 1
	case csrScause:
		c.scause = v
	case csrStval:
		c.stval = v
	case csrSip:
		m := c.mideleg & (1<<irqSSI | 1<<irqLCOF)
		c.mip = c.mip&^m | v&m
	case csrSatp:
		if h.priv == privS && c.mstatus&mstatusTVM != 0 {
			return false
		}
		if rv32 {
			c.satp = v
		} else if mode := v >> 60; mode == 0 || mode == 8 {
			c.satp = v & (0xf<<60 | 0xffff<<44 | (1<<44 - 1)) // MODE, ASID, PPN
		}
		h.flushTLB()
		h.updateFast()
		if h.m.cfg.ContextSource == ContextASID {
			h.tr.asidChange(h.asid())
		}
	case csrScontext:
		c.scontext = v
		if h.m.cfg.ContextSource == ContextSContext {
			h.tr.contextChange(v)
		}
	case csrMstatus:
		h.setMstatus(v)
	case csrMstatush, csrMenvcfgh:
		return rv32
	case csrMisa:
	case csrMedeleg:
		c.medeleg = v & medelegMask
	case csrMideleg:
		c.mideleg = v & midelegMask
	case csrMie:
		c.mie = v & mieMask
	case csrMtvec:
		c.mtvec = v &^ 2
	case csrMcounteren:
		c.mcounteren = v & 0xffffffff
	case csrMenvcfg:
		old := c.menvcfg
		c.menvcfg = envcfgWrite(c.menvcfg, v)
		if h.m.sstc != nil {
			c.menvcfg |= v & menvcfgSTCE
		}
		if !rv32 {
			c.menvcfg |= v & menvcfgPBMTE // Svpbmt (Sv39 only)
		}
		if (old^c.menvcfg)&menvcfgPBMTE != 0 {
			h.flushTLB() // translations cached under the other rule
		}
		h.stop = true // may enable the Sstc timer interrupt
	case csrStimecmp:
		if !h.sstcAllowed() {
			return false
		}
		h.m.sstc[h.id] = v
		h.stop = true // may raise or clear STIP
	case csrMscratch:
		c.mscratch = v
	case csrMepc:
		c.mepc = v &^ 1
	case csrMcause:
		c.mcause = v
	case csrMtval:
		c.mtval = v
	case csrMip:
		c.mip = c.mip&^mipWritable | v&mipWritable
	case csrMseccfg, csrTdata1, csrTdata2, csrTdata3, csrTinfo:
	case csrTselect:
		c.tselect = 0
	case csrMcontext:
		c.mcontext = v
	case csrJvt:
		if h.m.zc&zcZcmt == 0 {
			return false
		}
		c.jvt = v &^ 63 // WARL: mode 0 (jump table mode) is the only one
	default:
		return false
	}
	return true
}

func (h *Hart) setMstatus(v uint64) {
	old := h.csr.mstatus
	nv := old&^mstatusWritable | v&mstatusWritable
	if (nv&mstatusMPP)>>11 == 2 { // reserved: keep the old value
		nv = nv&^mstatusMPP | old&mstatusMPP
	}
	h.csr.mstatus = nv
	h.fsOff = nv&mstatusFS == 0
	if (old^nv)&(mstatusMPRV|mstatusSUM|mstatusMXR|mstatusMPP) != 0 {
		h.flushTLB()
	}
}

// menvcfgSTCE enables Sstc's stimecmp (menvcfg bit 63).
const menvcfgSTCE = 1 << 63

// sstcAllowed reports whether the hart may access stimecmp (Sstc present;
// from S-mode only with menvcfg.STCE and mcounteren.TM).
func (h *Hart) sstcAllowed() bool {
	if h.m.sstc == nil || h.xlen != 64 {
		return false
	}
	return h.priv == privM || h.priv == privS && h.csr.menvcfg&menvcfgSTCE != 0 && h.csr.mcounteren&2 != 0
}
