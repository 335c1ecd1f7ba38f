package sim

// The platform-level interrupt controller of the virt machine (RISC-V PLIC
// specification 1.0.0, QEMU virt's layout): interrupt sources 1..plicSources-1
// with a priority each, two contexts per hart (2h: M-mode, 2h+1:
// S-mode) with an enable bit per source, a priority threshold and a
// claim/complete register. Sources are level-triggered: an unclaimed
// source pends while its line is high (as on QEMU: a line that drops
// before the claim withdraws the request); completing it lets it pend
// again. A context's interrupt output (mip.MEIP or mip.SEIP of
// its hart) is high while a pending, enabled source has a priority above
// its threshold.

const (
	PLICBase    = 0x0c000000 // PLIC
	plicSize    = 0x04000000
	plicSources = 96 // source 0 is "no interrupt"; riscv,ndev = 95

	plicPending   = 0x1000
	plicEnable    = 0x2000
	plicEnableCtx = 0x80
	plicContext   = 0x200000
	plicCtxStride = 0x1000

	// Interrupt sources of the virt machine's devices (as on QEMU).
	irqVirtio0 = 1  // virtio-mmio transports 1..8
	irqUART    = 10 // the 16550
)

type plicWords [(plicSources + 63) / 64]uint64

func (w *plicWords) get(i uint32) bool { return w[i/64]>>(i%64)&1 != 0 }
func (w *plicWords) set(i uint32, v bool) {
	if v {
		w[i/64] |= 1 << (i % 64)
	} else {
		w[i/64] &^= 1 << (i % 64)
	}
}

type plic struct {
	prio      [plicSources]uint32
	level     plicWords // source lines
	pending   plicWords
	claimed   plicWords
	enable    []plicWords // per context
	threshold []uint32    // per context
	// eip is each hart's external interrupt lines as mip bits (MEIP,
	// SEIP), read by pendingInterrupts.
	eip []uint64
}

func (p *plic) init(harts int) {
	p.enable = make([]plicWords, 2*harts)
	p.threshold = make([]uint32, 2*harts)
	p.eip = make([]uint64, harts)
}

// setLevel sets the line of source irq and updates the harts' lines.
func (p *plic) setLevel(irq uint32, high bool) {
	if p.eip == nil || p.level.get(irq) == high {
		return
	}
	p.level.set(irq, high)
	if !p.claimed.get(irq) {
		p.pending.set(irq, high) // as QEMU's: a line that drops unclaimed no longer pends
	}
	p.update()
}

// best returns the pending enabled source of context ctx with the
// highest priority above the threshold (lowest id on a tie), or 0.
func (p *plic) best(ctx int) uint32 {
	var id, pr uint32
	for w := range p.pending {
		bits := p.pending[w] & p.enable[ctx][w]
		for bits != 0 {
			b := uint32(0)
			for bits>>b&1 == 0 {
				b++
			}
			bits &^= 1 << b
			i := uint32(w)*64 + b
			if p.prio[i] > pr {
				id, pr = i, p.prio[i]
			}
		}
	}
	if pr <= p.threshold[ctx] {
		return 0
	}
	return id
}

func (p *plic) update() {
	for h := range p.eip {
		var v uint64
		if p.best(2*h) != 0 {
			v |= 1 << irqMEI
		}
		if p.best(2*h+1) != 0 {
			v |= 1 << irqSEI
		}
		p.eip[h] = v
	}
}

func (p *plic) read(off uint64) uint32 {
	switch {
	case off < plicPending:
		if i := off / 4; i < plicSources {
			return p.prio[i]
		}
	case off < plicEnable:
		if i := (off - plicPending) / 4; i < uint64(len(p.pending))*2 {
			return uint32(p.pending[i/2] >> (32 * (i % 2)))
		}
	case off < plicContext:
		ctx, i := (off-plicEnable)/plicEnableCtx, (off-plicEnable)%plicEnableCtx/4
		if ctx < uint64(len(p.enable)) && i < uint64(len(p.pending))*2 {
			return uint32(p.enable[ctx][i/2] >> (32 * (i % 2)))
		}
	default:
		ctx, r := (off-plicContext)/plicCtxStride, (off-plicContext)%plicCtxStride
		if ctx >= uint64(len(p.threshold)) {
			return 0
		}
		switch r {
		case 0:
			return p.threshold[ctx]
		case 4: // claim
			id := p.best(int(ctx))
			if id != 0 {
				p.pending.set(id, false)
				p.claimed.set(id, true)
				p.update()
			}
			return id
		}
	}
	return 0
}

func (p *plic) write(off uint64, v uint32) {
	switch {
	case off < plicPending:
		if i := off / 4; i > 0 && i < plicSources {
			p.prio[i] = v & 7
		}
	case off < plicEnable:
		// pending bits are read-only
	case off < plicContext:
		ctx, i := (off-plicEnable)/plicEnableCtx, (off-plicEnable)%plicEnableCtx/4
		if ctx < uint64(len(p.enable)) && i < uint64(len(p.pending))*2 {
			sh := 32 * (i % 2)
			w := &p.enable[ctx][i/2]
			*w = *w&^(0xffffffff<<sh) | uint64(v)<<sh
			if i == 0 {
				*w &^= 1 // source 0 does not exist
			}
		}
	default:
		ctx, r := (off-plicContext)/plicCtxStride, (off-plicContext)%plicCtxStride
		if ctx >= uint64(len(p.threshold)) {
			return
		}
		switch r {
		case 0:
			p.threshold[ctx] = v & 7
		case 4: // complete
			if v > 0 && v < plicSources && p.claimed.get(v) {
				p.claimed.set(v, false)
				if p.level.get(v) {
					p.pending.set(v, true)
				}
			}
		}
	}
	p.update()
}
