package main

import (
	"encoding/binary"
	"fmt"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
	"github.com/rvtrace/rvtrace/sim"
	"github.com/rvtrace/rvtrace/tracectl"
)

// The E-Trace encoders of a live run follow the simulator's ingress port
// alone (portImage), as a hardware encoder does. One thing the port says
// differently from what rvtrace's E-Trace counts: the simulator reports
// a Zcmt table jump (cm.jt, cm.jalt) as the N-Trace itype table has it, a
// direct jump or call (11, 9: "jump tables are assumed to be static and
// known to the decoder"), where E-Trace, in rvtrace as in its decoder
// (etrace's itypeOf), counts it uninferable: its target comes from the
// jump table in memory, not from the instruction. For a hart with Zcmt a
// tableJumps sink sits in front of each E-Trace encoder and reports them
// as the uninferable jump and call they are (10, 8). It tells them from
// c.j and c.jal, which the port reports alike, by the halfword the hart
// fetched at the block's last address, read through the hart's
// translation as the block is reported: the bytes the hart ran, at the
// address it ran them, in its address space at the time.

// codeReader reads the code a hart runs (sim.Machine).
type codeReader interface {
	PeekCode(hart int, va uint64, priv ingress.Priv, b []byte) (pa uint64, global, ok bool)
}

// tableJumps passes a hart's blocks on to next, an E-Trace encoder,
// with the itype of a block ending in a Zcmt table jump made uninferable.
// It passes blocks one by one (it is no sim.BlockBatcher): it reads the
// hart's memory as each block is reported.
type tableJumps struct {
	next ingress.Sink
	mem  codeReader
	hart int
	xlen int
	ext  riscv.Ext
	// etrace reports whether next encodes E-Trace now (nil: always); a
	// trace system's encoder runs the format its registers select
	etrace func() bool
	b      ingress.Block // the block passed on, when its itype changes
	buf    [2]byte
}

// hasTableJumps reports whether the harts running the program of image
// img implement Zcmt: the simulator takes their compressed extensions
// from the program's Tag_RISCV_arch, as img does.
func hasTableJumps(img *image.Set) bool { return img.Ext()&riscv.ExtZcmt != 0 }

// withTableJumps returns the ingress sink of hart h in front of its
// E-Trace encoder next: next itself unless the hart has Zcmt (img).
// etrace is as tableJumps.etrace.
func withTableJumps(next ingress.Sink, m *sim.Machine, h int, img *image.Set, etrace func() bool) ingress.Sink {
	if !hasTableJumps(img) {
		return next
	}
	// (the halfword of a block the port ends with a direct jump or call
	// is c.j or c.jal, or on a hart with Zcmt cm.jt or cm.jalt, which
	// take c.fsdsp's encodings: decoded with Zcmt rather than Zcd)
	ext := img.Ext()&^riscv.ExtZcd | riscv.ExtZcmt
	return &tableJumps{next: next, mem: m, hart: h, xlen: img.XLEN(), ext: ext, etrace: etrace}
}

// componentETrace returns whether the trace encoder component e runs
// E-Trace (its last enable's settings).
func componentETrace(e *tracectl.Encoder) func() bool {
	return func() bool {
		s, ok := e.LastSettings()
		return ok && s.Format == tracectl.FormatETrace
	}
}

// Block passes b on, as an uninferable jump or call when it ends in a
// table jump.
func (t *tableJumps) Block(b *ingress.Block) error {
	if b.IRetire == 0 || b.ILastSize != 0 || b.IType != ingress.ITypeDirectJump && b.IType != ingress.ITypeDirectCall ||
		t.etrace != nil && !t.etrace() {
		return t.next.Block(b)
	}
	at := b.LastAddr()
	if _, _, ok := t.mem.PeekCode(t.hart, at, b.Priv, t.buf[:]); !ok {
		return fmt.Errorf("etrace: hart %d: cannot read the instruction at %#x it ran (a direct jump or call, or a table jump the trace must report as uninferable)", t.hart, at)
	}
	in := riscv.DecodeExt(uint32(binary.LittleEndian.Uint16(t.buf[:])), t.xlen, t.ext)
	if in.Class != riscv.ClassTableJump {
		return t.next.Block(b)
	}
	t.b = *b // (the other sinks of the hart keep the port's itype)
	t.b.IType = ingress.ITypeIndirectJump
	if in.Link == riscv.LinkCall {
		t.b.IType = ingress.ITypeIndirectCall
	}
	return t.next.Block(&t.b)
}

// Close closes next.
func (t *tableJumps) Close() error { return t.next.Close() }
