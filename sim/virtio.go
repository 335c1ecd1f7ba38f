package sim

import (
	"encoding/binary"
	"fmt"
	"os"
)

// A virtio block device on virtio-mmio (Virtual I/O Device specification
// 1.2, sections 4.2 "Virtio Over MMIO", version 2 register layout, and
// 5.2 "Block Device"), in the first transport slot of QEMU virt's layout
// (0x10001000, PLIC source 1). One request queue of virtioQueueMax
// entries, split virtqueues, no event index and no indirect descriptors;
// requests complete during the QueueNotify write that announces them.
// Features: VIRTIO_F_VERSION_1, VIRTIO_BLK_F_FLUSH and, for a read-only
// disk, VIRTIO_BLK_F_RO (writes then fail with VIRTIO_BLK_S_IOERR).

const (
	VirtioBase     = 0x10001000 // first virtio-mmio transport
	virtioSize     = 0x1000
	virtioQueueMax = 256

	virtioFVersion1 = 1 << 32
	virtioBlkFRO    = 1 << 5
	virtioBlkFFlush = 1 << 9

	vringDescNext  = 1
	vringDescWrite = 2
)

type virtioBlk struct {
	f        *os.File
	sectors  uint64
	readOnly bool
	serial   string

	featSel, drvFeatSel uint32
	drvFeat             uint64
	status              uint32
	intStatus           uint32
	queueNum            uint32
	ready               bool
	desc, avail, used   uint64
	lastAvail           uint16
}

// AttachDrive gives the virt machine a virtio-blk disk backed by path
// (writable only with writable set). Call it before LoadKernel, whose
// device tree then describes the disk.
func (m *Machine) AttachDrive(path string, writable bool) error {
	flag := os.O_RDONLY
	if writable {
		flag = os.O_RDWR
	}
	f, err := os.OpenFile(path, flag, 0)
	if err != nil {
		return fmt.Errorf("sim: drive: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("sim: drive: %w", err)
	}
	if st.Size()%512 != 0 || st.Size() == 0 {
		f.Close()
		return fmt.Errorf("sim: drive %s: size %d is not a non-zero multiple of 512 bytes", path, st.Size())
	}
	m.virtio = &virtioBlk{f: f, sectors: uint64(st.Size()) / 512, readOnly: !writable, serial: "rvtrace-disk0"}
	return nil
}

func (v *virtioBlk) features() uint64 {
	f := uint64(virtioFVersion1 | virtioBlkFFlush)
	if v.readOnly {
		f |= virtioBlkFRO
	}
	return f
}

func (v *virtioBlk) reset() {
	f, sec, ro, ser := v.f, v.sectors, v.readOnly, v.serial
	*v = virtioBlk{f: f, sectors: sec, readOnly: ro, serial: ser}
}

func (m *Machine) virtioRead(off, size uint64) (uint64, bool) {
	v := m.virtio
	if off >= 0x100 { // configuration space: capacity, then zeros
		var cfg [0x40]byte
		binary.LittleEndian.PutUint64(cfg[:], v.sectors)
		o := off - 0x100
		var r uint64
		for i := uint64(0); i < size && o+i < uint64(len(cfg)); i++ {
			r |= uint64(cfg[o+i]) << (8 * i)
		}
		return r, true
	}
	if size != 4 || off&3 != 0 {
		return 0, false
	}
	var r uint32
	switch off {
	case 0x000:
		r = 0x74726976 // "virt"
	case 0x004:
		r = 2
	case 0x008:
		r = 2 // block device
	case 0x00c:
		r = 0x52565452 // "RVTR"
	case 0x010:
		r = uint32(v.features() >> (32 * (v.featSel & 1)))
		if v.featSel > 1 {
			r = 0
		}
	case 0x034:
		r = virtioQueueMax
	case 0x044:
		r = uint32(b2u(v.ready))
	case 0x060:
		r = v.intStatus
	case 0x070:
		r = v.status
	case 0x0fc:
		r = 0
	}
	return uint64(r), true
}

func (m *Machine) virtioWrite(h *Hart, off, size, val uint64) bool {
	v := m.virtio
	if off >= 0x100 {
		return true // configuration space is read-only
	}
	if size != 4 || off&3 != 0 {
		return false
	}
	x := uint32(val)
	switch off {
	case 0x014:
		v.featSel = x
	case 0x020:
		if v.drvFeatSel < 2 {
			sh := 32 * v.drvFeatSel
			v.drvFeat = v.drvFeat&^(0xffffffff<<sh) | uint64(x)<<sh
		}
	case 0x024:
		v.drvFeatSel = x
	case 0x030:
		// one queue: the selector is ignored
	case 0x038:
		if x <= virtioQueueMax {
			v.queueNum = x
		}
	case 0x044:
		v.ready = x&1 != 0
	case 0x050:
		if x == 0 {
			m.virtioNotify(h)
		}
	case 0x064:
		v.intStatus &^= x
	case 0x070:
		if x == 0 {
			v.reset()
		} else {
			v.status = x
		}
	case 0x080:
		v.desc = v.desc&^0xffffffff | uint64(x)
	case 0x084:
		v.desc = v.desc&0xffffffff | uint64(x)<<32
	case 0x090:
		v.avail = v.avail&^0xffffffff | uint64(x)
	case 0x094:
		v.avail = v.avail&0xffffffff | uint64(x)<<32
	case 0x0a0:
		v.used = v.used&^0xffffffff | uint64(x)
	case 0x0a4:
		v.used = v.used&0xffffffff | uint64(x)<<32
	}
	m.plic.setLevel(irqVirtio0, v.intStatus != 0)
	return true
}

// virtioNotify processes the available requests of the queue.
func (m *Machine) virtioNotify(h *Hart) {
	v := m.virtio
	if !v.ready || v.queueNum == 0 {
		return
	}
	var b2 [2]byte
	if !m.mem.read(v.avail+2, b2[:]) {
		m.virtioFail(h, "available ring at %#x outside RAM", v.avail)
		return
	}
	idx := binary.LittleEndian.Uint16(b2[:])
	for v.lastAvail != idx {
		if !m.mem.read(v.avail+4+2*uint64(v.lastAvail%uint16(v.queueNum)), b2[:]) {
			m.virtioFail(h, "available ring at %#x outside RAM", v.avail)
			return
		}
		head := binary.LittleEndian.Uint16(b2[:])
		n, ok := m.virtioRequest(h, head)
		if !ok {
			return
		}
		used := v.used + 4 + 8*uint64(v.lastAvail%uint16(v.queueNum))
		var e [8]byte
		binary.LittleEndian.PutUint32(e[:], uint32(head))
		binary.LittleEndian.PutUint32(e[4:], n)
		var ui [2]byte
		m.mem.read(v.used+2, ui[:])
		binary.LittleEndian.PutUint16(ui[:], binary.LittleEndian.Uint16(ui[:])+1)
		if !m.mem.write(used, e[:]) || !m.mem.write(v.used+2, ui[:]) {
			m.virtioFail(h, "used ring at %#x outside RAM", v.used)
			return
		}
		v.lastAvail++
		v.intStatus |= 1
	}
}

func (m *Machine) virtioFail(h *Hart, format string, args ...any) {
	raw, size := h.peekInst(h.pc)
	m.err = &GuestError{Hart: h.id, PC: h.pc, Raw: raw, Size: int(size), Msg: "virtio-blk: " + fmt.Sprintf(format, args...)}
	m.exit(1)
}

type vdesc struct {
	addr  uint64
	len   uint32
	flags uint16
}

// virtioRequest performs the request whose descriptor chain starts at
// head and returns how many bytes it wrote into the guest's buffers.
func (m *Machine) virtioRequest(h *Hart, head uint16) (uint32, bool) {
	v := m.virtio
	var chain []vdesc
	i := head
	for {
		if uint32(i) >= v.queueNum || len(chain) > int(v.queueNum) {
			m.virtioFail(h, "bad descriptor chain from %d", head)
			return 0, false
		}
		var d [16]byte
		if !m.mem.read(v.desc+16*uint64(i), d[:]) {
			m.virtioFail(h, "descriptor table at %#x outside RAM", v.desc)
			return 0, false
		}
		chain = append(chain, vdesc{binary.LittleEndian.Uint64(d[:]), binary.LittleEndian.Uint32(d[8:]), binary.LittleEndian.Uint16(d[12:])})
		if chain[len(chain)-1].flags&vringDescNext == 0 {
			break
		}
		i = binary.LittleEndian.Uint16(d[14:])
	}
	if len(chain) < 2 || chain[0].len < 16 || chain[len(chain)-1].len < 1 {
		m.virtioFail(h, "malformed request (descriptor chain from %d)", head)
		return 0, false
	}
	var hdr [16]byte
	if !m.mem.read(chain[0].addr, hdr[:]) {
		m.virtioFail(h, "request header at %#x outside RAM", chain[0].addr)
		return 0, false
	}
	typ, sector := binary.LittleEndian.Uint32(hdr[:]), binary.LittleEndian.Uint64(hdr[8:])
	data := chain[1 : len(chain)-1]
	status := byte(0) // VIRTIO_BLK_S_OK
	var written uint32
	pos := int64(sector) * 512
	var total uint64
	for _, d := range data {
		total += uint64(d.len)
	}
	switch typ {
	case 0, 1: // IN (read), OUT (write)
		if sector > v.sectors || total > (v.sectors-sector)*512 || typ == 1 && v.readOnly {
			status = 1 // IOERR
			break
		}
		for _, d := range data {
			buf := make([]byte, d.len)
			if typ == 0 {
				if _, err := v.f.ReadAt(buf, pos); err != nil || !m.mem.write(d.addr, buf) {
					status = 1
					break
				}
				written += d.len
			} else {
				if !m.mem.read(d.addr, buf) {
					status = 1
					break
				}
				if _, err := v.f.WriteAt(buf, pos); err != nil {
					status = 1
					break
				}
			}
			pos += int64(d.len)
		}
	case 4: // FLUSH
		if !v.readOnly && v.f.Sync() != nil {
			status = 1
		}
	case 8: // GET_ID: 20 bytes
		if len(data) > 0 {
			id := make([]byte, min(20, data[0].len))
			copy(id, v.serial)
			m.mem.write(data[0].addr, id)
			written += uint32(len(id))
		}
	default:
		status = 2 // UNSUPP
	}
	m.mem.write(chain[len(chain)-1].addr, []byte{status})
	return written + 1, true
}
