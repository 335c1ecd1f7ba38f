package image

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
)

// This file writes small little-endian ELF files for tests: PT_LOAD
// segments, one section per segment, and a symbol table.

type testSeg struct {
	vaddr uint64
	data  []byte
	memsz uint64 // 0: len(data)
	flags elf.ProgFlag
}

type testSym struct {
	name        string
	value, size uint64
	typ         elf.SymType
	bind        elf.SymBind
	shndx       elf.SectionIndex // 0: section of the segment holding value, else SHN_ABS
}

func buildELF(class elf.Class, machine elf.Machine, entry uint64, segs []testSeg, syms []testSym) []byte {
	is64 := class == elf.ELFCLASS64
	var (
		ehsize, phentsize, shentsize, symentsize uint64 = 52, 32, 40, 16
	)
	if is64 {
		ehsize, phentsize, shentsize, symentsize = 64, 56, 64, 24
	}
	le := binary.LittleEndian
	var body bytes.Buffer // everything after the header and program headers
	dataStart := ehsize + phentsize*uint64(len(segs))
	offs := make([]uint64, len(segs))
	for i, sg := range segs {
		offs[i] = dataStart + uint64(body.Len())
		body.Write(sg.data)
	}
	// String tables.
	strtab := []byte{0}
	addStr := func(tab *[]byte, s string) uint32 {
		off := uint32(len(*tab))
		*tab = append(append(*tab, s...), 0)
		return off
	}
	shstr := []byte{0}
	segNames := make([]uint32, len(segs))
	for i := range segs {
		segNames[i] = addStr(&shstr, ".s"+string(rune('a'+i%26)))
	}
	symtabName := addStr(&shstr, ".symtab")
	strtabName := addStr(&shstr, ".strtab")
	shstrName := addStr(&shstr, ".shstrtab")
	// Symbol table.
	var symtab bytes.Buffer
	symtab.Write(make([]byte, symentsize)) // null symbol
	for _, sy := range syms {
		shndx := sy.shndx
		if shndx == 0 {
			shndx = elf.SHN_ABS
			for i, sg := range segs {
				memsz := max(sg.memsz, uint64(len(sg.data)))
				if sy.value >= sg.vaddr && sy.value-sg.vaddr < memsz {
					shndx = elf.SectionIndex(i + 1)
					break
				}
			}
		}
		name := addStr(&strtab, sy.name)
		info := elf.ST_INFO(sy.bind, sy.typ)
		if is64 {
			binary.Write(&symtab, le, elf.Sym64{Name: name, Info: info, Shndx: uint16(shndx), Value: sy.value, Size: sy.size})
		} else {
			binary.Write(&symtab, le, elf.Sym32{Name: name, Value: uint32(sy.value), Size: uint32(sy.size), Info: info, Shndx: uint16(shndx)})
		}
	}
	symOff := dataStart + uint64(body.Len())
	body.Write(symtab.Bytes())
	strOff := dataStart + uint64(body.Len())
	body.Write(strtab)
	shstrOff := dataStart + uint64(body.Len())
	body.Write(shstr)
	for body.Len()%8 != 0 {
		body.WriteByte(0)
	}
	shOff := dataStart + uint64(body.Len())
	nsect := len(segs) + 4
	strIdx := len(segs) + 2

	type sect struct {
		name, typ            uint32
		flags, addr, off, sz uint64
		link, info           uint32
		align, entsize       uint64
	}
	sects := []sect{{}}
	for i, sg := range segs {
		flags := uint64(elf.SHF_ALLOC)
		if sg.flags&elf.PF_X != 0 {
			flags |= uint64(elf.SHF_EXECINSTR)
		}
		if sg.flags&elf.PF_W != 0 {
			flags |= uint64(elf.SHF_WRITE)
		}
		sects = append(sects, sect{name: segNames[i], typ: uint32(elf.SHT_PROGBITS), flags: flags, addr: sg.vaddr, off: offs[i], sz: uint64(len(sg.data)), align: 1})
	}
	sects = append(sects,
		sect{name: symtabName, typ: uint32(elf.SHT_SYMTAB), off: symOff, sz: uint64(symtab.Len()), link: uint32(strIdx), info: 1, align: 8, entsize: symentsize},
		sect{name: strtabName, typ: uint32(elf.SHT_STRTAB), off: strOff, sz: uint64(len(strtab)), align: 1},
		sect{name: shstrName, typ: uint32(elf.SHT_STRTAB), off: shstrOff, sz: uint64(len(shstr)), align: 1},
	)
	for _, s := range sects {
		if is64 {
			binary.Write(&body, le, elf.Section64{Name: s.name, Type: s.typ, Flags: s.flags, Addr: s.addr, Off: s.off, Size: s.sz, Link: s.link, Info: s.info, Addralign: s.align, Entsize: s.entsize})
		} else {
			binary.Write(&body, le, elf.Section32{Name: s.name, Type: s.typ, Flags: uint32(s.flags), Addr: uint32(s.addr), Off: uint32(s.off), Size: uint32(s.sz), Link: s.link, Info: s.info, Addralign: uint32(s.align), Entsize: uint32(s.entsize)})
		}
	}

	var out bytes.Buffer
	ident := [elf.EI_NIDENT]byte{0x7f, 'E', 'L', 'F', byte(class), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)}
	if is64 {
		binary.Write(&out, le, elf.Header64{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: 1, Entry: entry,
			Phoff: ehsize, Shoff: shOff, Ehsize: uint16(ehsize), Phentsize: uint16(phentsize), Phnum: uint16(len(segs)),
			Shentsize: uint16(shentsize), Shnum: uint16(nsect), Shstrndx: uint16(nsect - 1)})
	} else {
		binary.Write(&out, le, elf.Header32{Ident: ident, Type: uint16(elf.ET_EXEC), Machine: uint16(machine), Version: 1, Entry: uint32(entry),
			Phoff: uint32(ehsize), Shoff: uint32(shOff), Ehsize: uint16(ehsize), Phentsize: uint16(phentsize), Phnum: uint16(len(segs)),
			Shentsize: uint16(shentsize), Shnum: uint16(nsect), Shstrndx: uint16(nsect - 1)})
	}
	for i, sg := range segs {
		memsz := max(sg.memsz, uint64(len(sg.data)))
		if is64 {
			binary.Write(&out, le, elf.Prog64{Type: uint32(elf.PT_LOAD), Flags: uint32(sg.flags), Off: offs[i], Vaddr: sg.vaddr, Paddr: sg.vaddr,
				Filesz: uint64(len(sg.data)), Memsz: memsz, Align: 1})
		} else {
			binary.Write(&out, le, elf.Prog32{Type: uint32(elf.PT_LOAD), Off: uint32(offs[i]), Vaddr: uint32(sg.vaddr), Paddr: uint32(sg.vaddr),
				Filesz: uint32(len(sg.data)), Memsz: uint32(memsz), Flags: uint32(sg.flags), Align: 1})
		}
	}
	out.Write(body.Bytes())
	return out.Bytes()
}
