package sideband

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/rvtrace/rvtrace/image"
)

// Apply loads the code the sideband describes into set: global records
// as images valid in every context ([image.Set.AddBytes]), the others
// valid in their context only ([image.Set.AddContextBytes]). read reads
// an image file (os.ReadFile when nil); a file whose size or SHA-256
// differs from the sideband's is an error naming it.
//
// A record that gives bytes for an address of its context again with a
// larger INSTRET (code overwritten or remapped while the system ran) is
// loaded with [image.Set.AddTimedBytes]: the decoders follow
// [image.Set.View] and use the bytes that ran at each point of the
// trace. Records with the same INSTRET add up (a map record and bytes
// records correcting it).
//
// A sideband of several harts is loaded as one address space per
// context, the same for every hart: each hart's records must give the
// same bytes where they meet, and none may change while the system ran
// (INSTRET above 0), as each counts the instructions of its hart while
// the image's instruction count is the trace's, all sources together.
// Apply refuses such a sideband with an error naming the record.
func (f *File) Apply(set *image.Set, read func(path string) ([]byte, error)) error {
	if read == nil {
		read = os.ReadFile
	}
	set.SetProgramXLEN(f.XLEN) // an ELF file or --xlen decides over it
	data := make([][]byte, len(f.Images))
	for i, im := range f.Images {
		b, err := read(im.Path)
		if err != nil {
			return fmt.Errorf("%s: image %d: %w", f.Name, i, err)
		}
		if int64(len(b)) != im.Size || sha256.Sum256(b) != im.SHA256 {
			return fmt.Errorf("%s: image %d: %s is not the file the sideband was recorded with (%d bytes, SHA-256 %x; the sideband says %d bytes, %x)",
				f.Name, i, im.Path, len(b), sha256.Sum256(b), im.Size, im.SHA256)
		}
		data[i] = b
	}
	type space struct {
		global bool
		ctx    uint64
	}
	type layer struct {
		from uint64
		b    []byte
		name string
		line int // the first record of the layer
	}
	type hartSpace struct {
		hart int
		space
	}
	multi := f.Harts() > 1
	pages := map[hartSpace]map[uint64][]layer{}
	for ri := range f.Records {
		r := &f.Records[ri]
		if multi && r.Instret > 0 {
			return &SyntaxError{File: f.Name, Line: r.Line, Msg: fmt.Sprintf("hart %d: the code at %#x changed at instruction %#x while the system ran: a sideband of %d harts is only decoded when no code changed (each hart's records count its own instructions, a decoder counts all sources together)",
				r.Hart, r.Start, r.Instret, f.Harts())}
		}
		sp := hartSpace{r.Hart, space{r.Global, r.Context}}
		if r.Global {
			sp.space.ctx = 0
		}
		m := pages[sp]
		if m == nil {
			m = map[uint64][]layer{}
			pages[sp] = m
		}
		var content []byte
		name := "sideband " + filepath.Base(f.Name)
		if r.Image >= 0 {
			b := data[r.Image]
			content = make([]byte, r.End-r.Start)
			if r.Offset < uint64(len(b)) {
				copy(content, b[r.Offset:])
			}
			name = filepath.Base(f.Images[r.Image].Path)
		} else {
			content = r.Bytes
		}
		// split into the pieces of 4 KiB pages
		for a := r.Start; a < r.End; {
			pgStart := a &^ (PageSize - 1)
			end := min(pgStart+PageSize, r.End)
			piece := content[a-r.Start : end-r.Start]
			ls := m[pgStart]
			n := len(ls)
			switch {
			case n == 0:
				ls = append(ls, layer{0, nil, name, r.Line})
			case r.Instret < ls[n-1].from:
				return &SyntaxError{File: f.Name, Line: r.Line, Msg: fmt.Sprintf("INSTRET %#x: the bytes at %#x already changed at %#x", r.Instret, a, ls[n-1].from)}
			case r.Instret > ls[n-1].from:
				// the code there changed: a new layer, on the last one
				ls = append(ls, layer{r.Instret, bytes.Clone(ls[n-1].b), name, r.Line})
			}
			l := &ls[len(ls)-1]
			if hi := end - pgStart; uint64(len(l.b)) < hi {
				l.b = append(l.b, make([]byte, hi-uint64(len(l.b)))...)
			}
			copy(l.b[a-pgStart:], piece)
			m[pgStart] = ls
			a = end
		}
	}
	// one address space per context: the harts' pages merged (a single
	// hart's as they are)
	merged := map[space]map[uint64][]layer{}
	var hss []hartSpace
	for hs := range pages {
		hss = append(hss, hs)
	}
	sort.Slice(hss, func(i, j int) bool { return hss[i].hart < hss[j].hart })
	for _, hs := range hss {
		m := merged[hs.space]
		if m == nil {
			merged[hs.space] = pages[hs]
			continue
		}
		for a, ls := range pages[hs] {
			old, ok := m[a]
			if !ok {
				m[a] = ls
				continue
			}
			// (multi-hart: one layer each, from instruction 0)
			x, y := old[0].b, ls[0].b
			n := min(len(x), len(y))
			if i := mismatch(x[:n], y[:n]); i >= 0 {
				ctx := "every context"
				if !hs.global {
					ctx = fmt.Sprintf("context %#x", hs.ctx)
				}
				return &SyntaxError{File: f.Name, Line: ls[0].line, Msg: fmt.Sprintf("hart %d ran other code at %#x in %s than an earlier hart (line %d): a sideband of several harts holds one address space per context",
					hs.hart, a+uint64(i), ctx, old[0].line)}
			}
			if len(y) > len(x) {
				m[a] = ls
			}
		}
	}
	pages2 := merged
	var spaces []space
	for sp := range pages2 {
		spaces = append(spaces, sp)
	}
	sort.Slice(spaces, func(i, j int) bool {
		a, b := spaces[i], spaces[j]
		if a.global != b.global {
			return a.global
		}
		return a.ctx < b.ctx
	})
	for _, sp := range spaces {
		m := pages2[sp]
		addrs := make([]uint64, 0, len(m))
		for a := range m {
			addrs = append(addrs, a)
		}
		sort.Slice(addrs, func(i, j int) bool { return addrs[i] < addrs[j] })
		for i := 0; i < len(addrs); {
			// one image per run of whole, adjacent pages
			start := addrs[i]
			buf := append([]byte(nil), m[start][0].b...)
			name := m[start][0].name
			j := i + 1
			for j < len(addrs) && addrs[j] == addrs[j-1]+PageSize && len(m[addrs[j-1]][0].b) == PageSize {
				buf = append(buf, m[addrs[j]][0].b...)
				j++
			}
			if sp.global {
				set.AddBytes(name, start, buf)
			} else {
				set.AddContextBytes(sp.ctx, name, start, buf)
			}
			i = j
		}
		for _, a := range addrs {
			for _, l := range m[a][1:] {
				set.AddTimedBytes(sp.global, sp.ctx, l.from, l.name, a, l.b)
			}
		}
	}
	return nil
}

// mismatch returns the first index where a and b differ, or -1.
func mismatch(a, b []byte) int {
	for i := range a {
		if a[i] != b[i] {
			return i
		}
	}
	return -1
}
