package paralleltest

import (
	"fmt"
	"path/filepath"

	"github.com/rvtrace/rvtrace/image"
)

// Timed returns the image of the ELF file elf with its executable code
// loaded again at each of the instruction counts at
// (image.Set.AddTimedBytes), as a sideband loads code rewritten while the
// traced system ran: a decode follows another view of the image from each
// count on (image.Set.Epochs), and a parallel decode whose pieces start
// from guessed counts must follow the serial decode's views. edit, when
// not nil, changes the code of the segment at addr before it is loaded at
// at[k]; else the code loaded is the ELF's.
func Timed(elf string, at []uint64, edit func(k int, addr uint64, code []byte)) (*image.Set, error) {
	img := image.NewSet()
	if err := img.AddELF(elf); err != nil {
		return nil, err
	}
	for _, s := range img.Segments() {
		if !s.Exec || s.FileSize == 0 {
			continue
		}
		code := make([]byte, s.FileSize)
		if n := img.Read(s.Addr, code); n != len(code) {
			return nil, fmt.Errorf("%s: read %d of the %d bytes of the segment at %#x", elf, n, len(code), s.Addr)
		}
		for k, from := range at {
			if edit != nil {
				edit(k, s.Addr, code)
			}
			img.AddTimedBytes(true, 0, from, fmt.Sprintf("%s from %d", filepath.Base(elf), from), s.Addr, code)
		}
	}
	return img, nil
}
