package main

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/riscv"
)

// halfwords is a codeReader holding one halfword per address.
type halfwords map[uint64]uint16

func (h halfwords) PeekCode(hart int, va uint64, priv ingress.Priv, b []byte) (uint64, bool, bool) {
	w, ok := h[va]
	if !ok || len(b) != 2 {
		return 0, false, false
	}
	binary.LittleEndian.PutUint16(b, w)
	return va, true, true
}

// blockLog is an ingress sink keeping the itypes it was given.
type blockLog []ingress.IType

func (l *blockLog) Block(b *ingress.Block) error { *l = append(*l, b.IType); return nil }
func (l *blockLog) Close() error                 { return nil }

// TestTableJumps: blocks ending in a 2-byte direct jump or call are passed
// on as the port reported them when the hart ran c.j or c.jal there, as
// an uninferable jump or call when it ran cm.jt or cm.jalt (the
// riscv package's decoding of the halfword), without changing the block
// the other sinks see; other blocks are not looked at; an instruction
// that cannot be read is an error naming its address. With etrace
// reporting false (a trace system's encoder running N-Trace) every
// block passes unchanged.
func TestTableJumps(t *testing.T) {
	mem := halfwords{
		0x1000: 0xa001, // c.j 0x1000
		0x2000: 0xa002, // cm.jt 0
		0x3000: 0xa082, // cm.jalt 32
		0x4000: 0x2001, // c.jal (RV32) / c.addiw (RV64)
	}
	for _, in := range []struct {
		at    uint64
		class riscv.Class
	}{{0x1000, riscv.ClassJump}, {0x2000, riscv.ClassTableJump}, {0x3000, riscv.ClassTableJump}} {
		if c := riscv.DecodeExt(uint32(mem[in.at]), 64, riscv.DefaultExt(64)&^riscv.ExtZcd|riscv.ExtZcmt).Class; c != in.class {
			t.Fatalf("%#x decodes as class %v, want %v", mem[in.at], c, in.class)
		}
	}
	var log blockLog
	etrace := true
	tj := &tableJumps{next: &log, mem: mem, xlen: 32, ext: riscv.DefaultExt(32)&^riscv.ExtZcd | riscv.ExtZcmt,
		etrace: func() bool { return etrace }}
	blocks := []struct {
		at        uint64
		it, want  ingress.IType
		lastSize4 bool
	}{
		{0x1000, ingress.ITypeDirectJump, ingress.ITypeDirectJump, false},
		{0x2000, ingress.ITypeDirectJump, ingress.ITypeIndirectJump, false},
		{0x3000, ingress.ITypeDirectCall, ingress.ITypeIndirectCall, false},
		{0x4000, ingress.ITypeDirectCall, ingress.ITypeDirectCall, false},
		{0x5000, ingress.ITypeTaken, ingress.ITypeTaken, false},          // not read
		{0x6000, ingress.ITypeDirectJump, ingress.ITypeDirectJump, true}, // 4 bytes: not read
	}
	for _, b := range blocks {
		blk := ingress.Block{IAddr: b.at - 4, IRetire: 3, IType: b.it}
		if b.lastSize4 {
			blk.IRetire, blk.ILastSize = 4, 1
		}
		if err := tj.Block(&blk); err != nil {
			t.Fatalf("block at %#x: %v", b.at, err)
		}
		if blk.IType != b.it {
			t.Errorf("block at %#x: the block given changed to itype %v", b.at, blk.IType)
		}
		if got := log[len(log)-1]; got != b.want {
			t.Errorf("block ending at %#x (%v): passed on as %v, want %v", b.at, b.it, got, b.want)
		}
	}
	err := tj.Block(&ingress.Block{IAddr: 0x7000, IRetire: 1, IType: ingress.ITypeDirectJump})
	if err == nil || !strings.Contains(err.Error(), "0x7000") {
		t.Errorf("unreadable instruction: error %v", err)
	}
	etrace = false
	if err := tj.Block(&ingress.Block{IAddr: 0x2000, IRetire: 1, IType: ingress.ITypeDirectJump}); err != nil ||
		log[len(log)-1] != ingress.ITypeDirectJump {
		t.Errorf("N-Trace: cm.jt passed on as %v (%v), want the port's itype", log[len(log)-1], err)
	}
}

// TestHartMulti: the accesses of the instruction a hart ran, read from
// its memory in its privilege: a cbo.zero (eight, its two halfwords
// read), a store (one), an addi (none), and 0 (unknown: the folder waits
// for the next block) when either halfword cannot be read.
func TestHartMulti(t *testing.T) {
	mem := halfwords{
		0x1000: 0x200f, 0x1002: 0x0046, // cbo.zero 0(a2)
		0x2000: 0x2023, 0x2002: 0x0006, // sw zero,0(a2)
		0x3000: 0x0593, 0x3002: 0x0015, // addi a1,a1,1
		0x4000: 0x200f, // cbo.zero's first half, at the end of what is readable
	}
	img := image.NewSet()
	img.SetXLEN(64)
	multi := hartMulti(mem, func() ingress.Priv { return ingress.PrivU }, 0, img)
	for _, c := range []struct {
		at   uint64
		want int
	}{{0x1000, 8}, {0x2000, 1}, {0x3000, 0}, {0x4000, 0}, {0x5000, 0}} {
		if got := multi(c.at); got != c.want {
			t.Errorf("%#x: %d accesses, want %d", c.at, got, c.want)
		}
	}
}
