package riscv

import "testing"

// benchWords is a mix of common instructions: compressed and 32-bit ALU
// ops, loads/stores, branches, jumps, calls and returns.
var benchWords = [16]uint32{
	0x1141, 0xe406, 0x00150513, 0x4505, 0x8082, 0x00b50863, 0x0000a503, 0x00a5b023,
	0x9502, 0x02a5053b, 0xc0051553, 0x2001, 0xb862, 0xfe0718e3, 0x000080e7, 0x6505,
}

var sinkN int

// BenchmarkDecode decodes a mix of instructions and uses the fields a trace
// decoder looks at.
func BenchmarkDecode(b *testing.B) {
	for _, xlen := range []int{64, 32} {
		b.Run(map[int]string{32: "rv32", 64: "rv64"}[xlen], func(b *testing.B) {
			b.ReportAllocs()
			n := 0
			for i := 0; b.Loop(); i++ {
				in := Decode(benchWords[i&15], xlen)
				n += int(in.Len) + int(in.Class) + int(in.Link) + int(in.Imm)
			}
			sinkN = n
		})
	}
}

// callFloor is a non-inlined function that returns an Inst: what a call
// of Decode costs at least, to read BenchmarkDecode against on a machine
// whose speed is unknown or shared.
//
//go:noinline
func callFloor(raw uint32) Inst {
	return Inst{Raw: raw, Len: 4, Rd: uint8(raw >> 7 & 31), Imm: int64(raw)}
}

func BenchmarkCallFloor(b *testing.B) {
	n := 0
	for i := 0; b.Loop(); i++ {
		in := callFloor(benchWords[i&15])
		n += int(in.Len) + int(in.Class) + int(in.Link) + int(in.Imm)
	}
	sinkN = n
}

// BenchmarkDecodeSame decodes one instruction over and over (no branch
// misprediction between instructions).
func BenchmarkDecodeSame(b *testing.B) {
	for _, w := range []uint32{0x00150513, 0x4505, 0x00b50863} {
		b.Run(Decode(w, 64).Op.String(), func(b *testing.B) {
			n := 0
			for b.Loop() {
				in := Decode(w, 64)
				n += int(in.Len) + int(in.Class) + int(in.Link) + int(in.Imm)
			}
			sinkN = n
		})
	}
}

func BenchmarkDisasm(b *testing.B) {
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		_ = Disasm(benchWords[i&15], 0x80000000, 64)
	}
}

// BenchmarkIndexBuild measures the start-up cost of the decode index.
func BenchmarkIndexBuild(b *testing.B) {
	b.ReportAllocs()
	var i32 [1 << 15]uint8
	var i16 [1 << 10]uint8
	for b.Loop() {
		buildIndex(i32[:], spec32)
		buildIndex(i16[:], spec16)
	}
}
