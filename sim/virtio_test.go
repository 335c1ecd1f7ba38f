package sim

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
)

// TestVirtioBlkRequests drives the virtio-blk device as a driver would
// (feature and queue registers, one split virtqueue in RAM, notify) and
// checks each request against the disk image file: a write lands at its
// sector, a read brings it back, the used ring and the interrupt say so,
// and a read-only disk refuses the write with VIRTIO_BLK_S_IOERR.
func TestVirtioBlkRequests(t *testing.T) {
	for _, writable := range []bool{true, false} {
		img := filepath.Join(t.TempDir(), "disk.img")
		if err := os.WriteFile(img, make([]byte, 8*512), 0o644); err != nil {
			t.Fatal(err)
		}
		kern := filepath.Join(t.TempDir(), "Image")
		hdr := make([]byte, 64)
		copy(hdr[48:], riscvImageMagic)
		if err := os.WriteFile(kern, hdr, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := New(Config{})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.AttachDrive(img, writable); err != nil {
			t.Fatal(err)
		}
		if err := m.LoadKernel(Kernel{Image: kern, RAMSize: 64 << 20}); err != nil {
			t.Fatal(err)
		}
		h := m.Hart(0)
		reg := func(off uint64) uint64 {
			v, ok := m.devRead(h, VirtioBase+off, 4)
			if !ok {
				t.Fatalf("read %#x failed", off)
			}
			return v
		}
		set := func(off, v uint64) {
			if !m.devWrite(h, VirtioBase+off, 4, v) {
				t.Fatalf("write %#x failed", off)
			}
		}
		if reg(0) != 0x74726976 || reg(4) != 2 || reg(8) != 2 {
			t.Fatalf("magic/version/device %#x %d %d", reg(0), reg(4), reg(8))
		}
		set(0x14, 0)
		ro := reg(0x10)&virtioBlkFRO != 0
		if ro == writable {
			t.Errorf("VIRTIO_BLK_F_RO = %v for a writable=%v disk", ro, writable)
		}
		if lo, hi := reg(0x100), reg(0x104); lo|hi<<32 != 8 {
			t.Errorf("capacity %d sectors, want 8", lo|hi<<32)
		}
		const desc, avail, used, hdrA, data, stat = 0x81000000, 0x81001000, 0x81002000, 0x81003000, 0x81004000, 0x81005000
		set(0x38, 8)
		set(0x80, desc)
		set(0x90, avail)
		set(0xa0, used)
		set(0x44, 1)
		pattern := bytes.Repeat([]byte("rvtrace!"), 64)
		request := func(n uint16, typ uint32, buf []byte, deviceWrites bool) byte {
			var b []byte
			b = binary.LittleEndian.AppendUint32(b, typ)
			b = binary.LittleEndian.AppendUint32(b, 0)
			b = binary.LittleEndian.AppendUint64(b, 2) // sector 2
			m.WriteMem(hdrA, b)
			m.WriteMem(data, buf)
			m.WriteMem(stat, []byte{0xff})
			flags := uint16(vringDescNext)
			if deviceWrites {
				flags |= vringDescWrite
			}
			var d []byte
			for _, e := range []struct {
				addr  uint64
				len   uint32
				flags uint16
				next  uint16
			}{{hdrA, 16, vringDescNext, 1}, {data, 512, flags, 2}, {stat, 1, vringDescWrite, 0}} {
				d = binary.LittleEndian.AppendUint64(d, e.addr)
				d = binary.LittleEndian.AppendUint32(d, e.len)
				d = binary.LittleEndian.AppendUint16(d, e.flags)
				d = binary.LittleEndian.AppendUint16(d, e.next)
			}
			m.WriteMem(desc, d)
			var a [2]byte
			m.WriteMem(avail+4+2*uint64(n-1), a[:]) // ring[n-1] = head 0
			binary.LittleEndian.PutUint16(a[:], n)
			m.WriteMem(avail+2, a[:])
			set(0x50, 0)
			var u [2]byte
			m.ReadMem(used+2, u[:])
			if got := binary.LittleEndian.Uint16(u[:]); got != n {
				t.Fatalf("used idx %d, want %d", got, n)
			}
			if reg(0x60)&1 == 0 || !m.plic.level.get(irqVirtio0) {
				t.Errorf("no used-buffer interrupt")
			}
			set(0x64, 1)
			if m.plic.level.get(irqVirtio0) {
				t.Errorf("interrupt line still high after the acknowledgement")
			}
			var s [1]byte
			m.ReadMem(stat, s[:])
			return s[0]
		}
		st := request(1, 1, pattern, false)
		file, _ := os.ReadFile(img)
		if writable {
			if st != 0 || !bytes.Equal(file[1024:1536], pattern) {
				t.Fatalf("write: status %d, sector 2 of the file %q...", st, file[1024:1040])
			}
			st = request(2, 0, make([]byte, 512), true)
			got := make([]byte, 512)
			m.ReadMem(data, got)
			if st != 0 || !bytes.Equal(got, pattern) {
				t.Errorf("read: status %d, data %q...", st, got[:16])
			}
		} else if st != 1 || !bytes.Equal(file, make([]byte, 8*512)) {
			t.Errorf("read-only disk: write status %d (want 1, IOERR), file changed: %v", st, !bytes.Equal(file, make([]byte, 8*512)))
		}
	}
}
