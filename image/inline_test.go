package image_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/internal/testprog"
)

// TestFramesAddr2line compares Frames with "addr2line -i -f" (binutils,
// an independent DWARF reader) on every executed address of
// examples/analysis/inline.elf, a gcc -O2 build whose helpers are inlined
// two deep: same functions, same lines, same files, innermost first.
func TestFramesAddr2line(t *testing.T) {
	tool, err := exec.LookPath("riscv64-linux-gnu-addr2line")
	if err != nil {
		t.Skip("riscv64-linux-gnu-addr2line not found (Debian: binutils-riscv64-linux-gnu)")
	}
	img, pcs := testprog.Load(t, "inline")
	elf := filepath.Join("..", "examples", "analysis", "inline.elf")
	seen := map[uint64]bool{}
	var addrs []uint64
	for _, pc := range pcs {
		if !seen[pc] {
			seen[pc] = true
			addrs = append(addrs, pc)
		}
	}
	var in bytes.Buffer
	for _, a := range addrs {
		fmt.Fprintf(&in, "%#x\n", a)
	}
	// -a prints each address before its frames, to delimit them.
	cmd := exec.Command(tool, "-a", "-i", "-f", "-e", elf)
	cmd.Stdin = &in
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("addr2line: %v", err)
	}
	want := map[uint64][]image.Frame{}
	var cur uint64
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "0x") {
			cur, err = strconv.ParseUint(l[2:], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			want[cur] = nil
			continue
		}
		if !sc.Scan() {
			t.Fatal("addr2line: function without position")
		}
		pos := sc.Text()
		if i := strings.Index(pos, " ("); i >= 0 {
			pos = pos[:i] // " (discriminator N)"
		}
		file, line, _ := strings.Cut(pos, ":")
		n, err := strconv.Atoi(line)
		if err != nil || file == "??" {
			// No line information: addr2line falls back to the symbol
			// table and the object's name.
			file, n = "", 0
		}
		if l == "??" {
			l = ""
		}
		want[cur] = append(want[cur], image.Frame{Func: l, File: file, Line: n})
	}
	inlined, compared, deep := 0, 0, 0
	var buf []image.Frame
	for _, a := range addrs {
		w := want[a]
		buf = img.Frames(a, buf[:0])
		if len(w) == 0 || w[0].File == "" {
			continue // addr2line knows nothing of it (no DWARF)
		}
		compared++
		if len(w) > 1 {
			inlined++
		}
		if len(w) > 2 {
			deep++
		}
		same := len(buf) == len(w)
		for i := 0; same && i < len(w); i++ {
			same = buf[i].Func == w[i].Func && buf[i].Line == w[i].Line &&
				filepath.Base(buf[i].File) == filepath.Base(w[i].File)
		}
		if !same {
			t.Errorf("%#x: Frames %v, addr2line %v", a, buf, w)
		}
	}
	// The program's own code (glibc has no DWARF): main, cmp, checksum.
	if inlined < 10 || deep < 2 || compared < 50 {
		t.Errorf("compared %d addresses, %d with inlined frames, %d two deep: want more", compared, inlined, deep)
	}
	t.Logf("%d addresses compared, %d with inlined frames, %d two deep", compared, inlined, deep)
}

// TestFilesBuildID checks the build ID against "readelf -n".
func TestFilesBuildID(t *testing.T) {
	tool, err := exec.LookPath("riscv64-linux-gnu-readelf")
	if err != nil {
		t.Skip("riscv64-linux-gnu-readelf not found (Debian: binutils-riscv64-linux-gnu)")
	}
	elf := filepath.Join("..", "examples", "analysis", "inline.elf")
	out, err := exec.Command(tool, "-n", elf).Output()
	if err != nil {
		t.Fatal(err)
	}
	_, id, ok := strings.Cut(string(out), "Build ID: ")
	if !ok {
		t.Fatalf("readelf -n: no build ID\n%s", out)
	}
	id = strings.TrimSpace(strings.SplitN(id, "\n", 2)[0])
	img := image.NewSet()
	if err := img.AddELF(elf); err != nil {
		t.Fatal(err)
	}
	fs := img.Files()
	if len(fs) != 1 || fs[0].BuildID != id || fs[0].Path != elf || fs[0].Limit <= fs[0].Start {
		t.Errorf("Files() = %+v, want one with build ID %s", fs, id)
	}
}
