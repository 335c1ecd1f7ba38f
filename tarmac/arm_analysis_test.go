package tarmac

import (
	"bytes"
	"encoding/binary"
	"os"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/analysis"
	"github.com/rvtrace/rvtrace/image"
)

// elfSym is a function symbol of armELF.
type elfSym struct {
	name       string
	addr, size uint64
}

// armELF builds a minimal AArch64 ELF executable with a text segment of
// textSize zero bytes at textAddr and function symbols, standing in for
// the ELF of a Fast Models run (the symbols are what the analyses need
// from it).
func armELF(t *testing.T, textAddr, textSize uint64, syms []elfSym) []byte {
	t.Helper()
	le := binary.LittleEndian
	const textOff = 0x1000
	// string tables
	strtab := []byte{0}
	var symtab bytes.Buffer
	symtab.Write(make([]byte, 24)) // null symbol
	for _, s := range syms {
		var e [24]byte
		le.PutUint32(e[0:], uint32(len(strtab)))
		strtab = append(append(strtab, s.name...), 0)
		e[4] = 1<<4 | 2 // STB_GLOBAL, STT_FUNC
		le.PutUint16(e[6:], 4)
		le.PutUint64(e[8:], s.addr)
		le.PutUint64(e[16:], s.size)
		symtab.Write(e[:])
	}
	shstr := []byte("\x00.symtab\x00.strtab\x00.shstrtab\x00.text\x00")
	name := func(n string) uint32 { return uint32(bytes.Index(shstr, []byte(n+"\x00"))) }
	symOff := textOff + textSize
	strOff := symOff + uint64(symtab.Len())
	shstrOff := strOff + uint64(len(strtab))
	shOff := (shstrOff + uint64(len(shstr)) + 7) &^ 7
	f := make([]byte, shOff+5*64)
	copy(f, "\x7fELF")
	f[4], f[5], f[6] = 2, 1, 1
	le.PutUint16(f[16:], 2)   // ET_EXEC
	le.PutUint16(f[18:], 183) // EM_AARCH64
	le.PutUint32(f[20:], 1)
	le.PutUint64(f[24:], textAddr)
	le.PutUint64(f[32:], 64)
	le.PutUint64(f[40:], shOff)
	le.PutUint16(f[52:], 64)
	le.PutUint16(f[54:], 56)
	le.PutUint16(f[56:], 1)
	le.PutUint16(f[58:], 64)
	le.PutUint16(f[60:], 5)
	le.PutUint16(f[62:], 3)
	ph := f[64:]
	le.PutUint32(ph[0:], 1) // PT_LOAD
	le.PutUint32(ph[4:], 5) // R+X
	le.PutUint64(ph[8:], textOff)
	le.PutUint64(ph[16:], textAddr)
	le.PutUint64(ph[24:], textAddr)
	le.PutUint64(ph[32:], textSize)
	le.PutUint64(ph[40:], textSize)
	le.PutUint64(ph[48:], 0x1000)
	copy(f[symOff:], symtab.Bytes())
	copy(f[strOff:], strtab)
	copy(f[shstrOff:], shstr)
	sh := func(i int, nm string, typ uint32, flags, addr, off, size uint64, link, info uint32, ent uint64) {
		h := f[shOff+uint64(i)*64:]
		le.PutUint32(h[0:], name(nm))
		le.PutUint32(h[4:], typ)
		le.PutUint64(h[8:], flags)
		le.PutUint64(h[16:], addr)
		le.PutUint64(h[24:], off)
		le.PutUint64(h[32:], size)
		le.PutUint32(h[40:], link)
		le.PutUint32(h[44:], info)
		le.PutUint64(h[48:], 8)
		le.PutUint64(h[56:], ent)
	}
	sh(1, ".symtab", 2, 0, 0, symOff, uint64(symtab.Len()), 2, 1, 24)
	sh(2, ".strtab", 3, 0, 0, strOff, uint64(len(strtab)), 0, 0, 0)
	sh(3, ".shstrtab", 3, 0, 0, shstrOff, uint64(len(shstr)), 0, 0, 0)
	sh(4, ".text", 1, 6, textAddr, textOff, textSize, 0, 0, 0)
	return f
}

// TestArmAnalyses runs the analyses on the Fast Models style A64 sample
// with an ELF: call tree, flat profile and folded stacks agree with the
// trace.
func TestArmAnalyses(t *testing.T) {
	elfBytes := armELF(t, 0x80000, 0x1000, []elfSym{{"_start", 0x80000, 0x14}, {"func", 0x80014, 0x1c}, {"el3_vector", 0x80400, 0x10}})
	img := image.NewSet()
	if err := img.AddELFReader("fvp.axf", bytes.NewReader(elfBytes)); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open("testdata/arm-a64-fastmodel.tarmac")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := analysis.New(img, analysis.Options{FixedInstSize: 4})
	if err := NewDecoder(NewReader(f, "fvp.tarmac"), Options{}).Flow(p); err != nil {
		t.Fatal(err)
	}
	p.Close()
	if p.Instructions() != 15 || p.Traps() != 2 {
		t.Errorf("instructions %d traps %d, want 15 and 2", p.Instructions(), p.Traps())
	}
	var tree strings.Builder
	analysis.WriteTree(&tree, p, 0)
	got := tree.String()
	for _, line := range []string{
		"100.00%          15           5        1  _start\n",
		" 53.33%           8           6        1    func\n",
		" 13.33%           2           2        1      el3_vector [trap]\n",
		" 13.33%           2           2        1    el3_vector [trap]\n",
	} {
		if !strings.Contains(got, line) {
			t.Errorf("call tree lacks %q:\n%s", line, got)
		}
	}
	var folded bytes.Buffer
	analysis.WriteFolded(&folded, p, false)
	if !strings.Contains(folded.String(), "_start;func;el3_vector 2\n") {
		t.Errorf("folded:\n%s", folded.String())
	}
	// Every instruction has its own timestamp; the time to the next
	// one is its cost, and the last one has none.
	if p.Cycles() != 14 {
		t.Errorf("cycles %d, want 14", p.Cycles())
	}
}
