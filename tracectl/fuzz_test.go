package tracectl

import (
	"encoding/binary"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
)

// FuzzRegisters performs arbitrary register writes, reads, blocks and
// captures on a system with a sink that has both modes: nothing panics,
// reserved offsets read 0, and the RAM sink's pointers stay inside its
// buffer.
func FuzzRegisters(f *testing.F) {
	f.Add([]byte{0, 0, 0x90, 0x01, 0x03, 0x01, 0, 0, 0})
	f.Add([]byte{0, 0x00, 0x90, 0x01, 0x03, 0x03, 0, 0, 0, 0, 0x00, 0x80, 0x01, 0x03, 0x03, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := &sysMem{base: 0x8000_0000, b: make([]byte, 4096)}
		s, err := NewSystem(2, image.NewSet(), 256, mem)
		if err != nil {
			t.Fatal(err)
		}
		for len(data) >= 9 {
			op := data[0] % 4
			addr := EncoderBase + uint64(binary.LittleEndian.Uint32(data[1:])%(MapEnd-EncoderBase+8))
			v := binary.LittleEndian.Uint32(data[5:])
			data = data[9:]
			switch op {
			case 0:
				s.Write32(addr, v)
			case 1:
				got, ok := s.Read32(addr)
				off := uint32(addr % ComponentSize)
				if ok && off >= 0x800 && got != 0 {
					t.Fatalf("reserved %#x reads %#x", addr, got)
				}
			case 2:
				b := ingress.Block{IAddr: uint64(v) &^ 1, IRetire: v >> 28, IType: ingress.IType(v >> 24 & 15), Time: uint64(v)}
				s.Encoders[v&1].Block(&b)
			case 3:
				ReadTrace(s, RAMSinkBase, mem)
				s.Sink.Capture()
			}
			if s.Sink.active() {
				if wp := s.Sink.WP(); wp < s.Sink.Start() || wp > s.Sink.Limit() {
					t.Fatalf("trRamWP %#x outside %#x..%#x", wp, s.Sink.Start(), s.Sink.Limit())
				}
			}
		}
	})
}
