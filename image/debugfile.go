package image

import (
	"debug/dwarf"
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
)

// DebugDirs are the directories searched for the separate debug file of a
// stripped ELF file, as debuggers do (GDB's debug-file-directory): a file
// whose GNU build ID is the hexadecimal string XXYYYY... has its debug
// information in DIR/.build-id/XX/YYYY....debug, as Debian's -dbgsym
// packages install it. Before these, the loader looks in usr/lib/debug
// under each directory that holds the ELF file (the root of an extracted
// package tree or a sysroot: a debug package extracted beside the program
// is found without configuration).
var DebugDirs = []string{"/usr/lib/debug"}

// debugFileFor returns the path of the separate debug file of the ELF file
// path whose build ID is id (hexadecimal), or "" when there is none.
func debugFileFor(path, id string) string {
	if len(id) < 3 {
		return ""
	}
	rel := filepath.Join(".build-id", id[:2], id[2:]+".debug")
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	var dirs []string
	for d := filepath.Dir(abs); ; d = filepath.Dir(d) {
		dirs = append(dirs, filepath.Join(d, "usr", "lib", "debug"))
		if filepath.Dir(d) == d {
			break
		}
	}
	dirs = append(dirs, DebugDirs...)
	for _, d := range dirs {
		p := filepath.Join(d, rel)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// loadDebugFile reads the symbols and DWARF line tables of the separate
// debug file of the stripped ELF file name (f), found by its build ID
// ([DebugDirs]). It returns nothing when f has no build ID or no debug
// file is found, and an error naming the debug file when it is not an ELF
// file or its build ID differs from f's.
func loadDebugFile(name string, f *elf.File, segs []loadedSeg) (syms []symEntry, lines []seqRows, d *dwarf.Data, err error) {
	id := buildID(f)
	if id == "" {
		return nil, nil, nil, nil
	}
	path := debugFileFor(name, id)
	if path == "" {
		return nil, nil, nil, nil
	}
	df, err := elf.Open(path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("image: %s: debug file %s: %w", name, path, err)
	}
	defer df.Close()
	if did := buildID(df); did != id {
		return nil, nil, nil, fmt.Errorf("image: %s: debug file %s has build ID %q, want %q", name, path, did, id)
	}
	syms, err = elfSymbols(df)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("image: %s: debug file %s: %v", name, path, err)
	}
	lines, d = elfLines(df, segs)
	return syms, lines, d, nil
}
