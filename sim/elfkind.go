package sim

import (
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// ProgramKind says how a program ELF is meant to run.
type ProgramKind int

// Program kinds.
const (
	// BareMetal programs run from the entry point in M-mode with HTIF
	// (LoadELF).
	BareMetal ProgramKind = iota
	// LinuxUser programs run in U-mode with emulated system calls
	// (LoadLinuxELF).
	LinuxUser
)

func (k ProgramKind) String() string {
	if k == LinuxUser {
		return "Linux user-mode"
	}
	return "bare-metal"
}

// ntGNUABITag is the type of the GNU ABI note (.note.ABI-tag), whose first
// description word is the OS: 0 for Linux.
const ntGNUABITag = 1

// lowestRAM is the lowest default RAM bank's base: a program entered below
// it cannot run bare-metal on the default machine, where Linux
// executables are linked (0x10000 on RV64).
const lowestRAM = 0x20000000

// ClassifyELF tells a Linux user-mode program from a bare-metal one and
// says why: a tohost symbol (HTIF) makes it bare-metal; the Linux OS ABI
// in the header, a GNU ABI-tag note naming Linux, an interpreter
// (PT_INTERP) or dynamic section make it Linux; without any of these, an
// entry point below every default RAM bank makes it Linux, and anything
// else is bare-metal.
func ClassifyELF(path string) (ProgramKind, string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return BareMetal, "", fmt.Errorf("sim: %w", err)
	}
	defer f.Close()
	return classify(f)
}

func classify(f *elf.File) (ProgramKind, string, error) {
	if syms, err := f.Symbols(); err == nil {
		for _, s := range syms {
			if s.Name == "tohost" {
				return BareMetal, "tohost symbol (HTIF)", nil
			}
		}
	}
	if f.OSABI == elf.ELFOSABI_LINUX {
		return LinuxUser, "ELF OS ABI Linux", nil
	}
	for _, p := range f.Progs {
		switch p.Type {
		case elf.PT_INTERP:
			return LinuxUser, "program interpreter (PT_INTERP)", nil
		case elf.PT_DYNAMIC:
			return LinuxUser, "dynamic section (PT_DYNAMIC)", nil
		}
	}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOTE {
			continue
		}
		data, err := s.Data()
		if err != nil {
			return BareMetal, "", fmt.Errorf("sim: section %s: %w", s.Name, err)
		}
		if linuxABINote(data, f.ByteOrder) {
			return LinuxUser, "GNU ABI-tag note (NT_GNU_ABI_TAG, OS Linux)", nil
		}
	}
	if f.Entry < lowestRAM {
		return LinuxUser, fmt.Sprintf("entry %#x below the bare-metal RAM (%#x) and no tohost", f.Entry, lowestRAM), nil
	}
	return BareMetal, "no Linux marks", nil
}

// linuxABINote reports whether the notes in data hold a GNU ABI tag naming
// Linux. Truncated notes end the walk.
func linuxABINote(data []byte, bo binary.ByteOrder) bool {
	for len(data) >= 12 {
		namesz, descsz, typ := bo.Uint32(data), bo.Uint32(data[4:]), bo.Uint32(data[8:])
		data = data[12:]
		nameEnd := (uint64(namesz) + 3) &^ 3
		descEnd := nameEnd + (uint64(descsz)+3)&^3
		if descEnd > uint64(len(data)) {
			return false
		}
		name, desc := data[:namesz], data[nameEnd:nameEnd+uint64(descsz)]
		if typ == ntGNUABITag && string(name) == "GNU\x00" && len(desc) >= 4 && bo.Uint32(desc) == 0 {
			return true
		}
		data = data[descEnd:]
	}
	return false
}
