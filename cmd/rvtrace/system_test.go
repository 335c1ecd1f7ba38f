package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/sideband"
)

// linuxKitDir returns the directory scripts/linux-kit.sh fills, or skips.
func linuxKitDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("RVTRACE_LINUX_CACHE")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Skip("no home directory for the Linux kit")
		}
		dir = filepath.Join(home, ".cache", "rvtrace", "linux")
	}
	for _, f := range []string{"Image", "initramfs-busybox.cpio.gz", "root/usr/bin/busybox"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Skipf("Linux kit absent (%v): run scripts/linux-kit.sh", err)
		}
	}
	return dir
}

// cpioNewc returns a cpio archive (newc format, as the kernel's
// initramfs unpacker reads it) holding the files, mode 0755.
func cpioNewc(files map[string]string) []byte {
	var b bytes.Buffer
	ino := 1
	entry := func(name string, mode int, data string) {
		fmt.Fprintf(&b, "070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
			ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name)+1, 0)
		ino++
		b.WriteString(name)
		b.WriteByte(0)
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
		b.WriteString(data)
		for b.Len()%4 != 0 {
			b.WriteByte(0)
		}
	}
	for name, data := range files {
		entry(name, 0o100755, data)
	}
	entry("TRAILER!!!", 0, "")
	return b.Bytes()
}

// symbolsInit is the init of an untraced boot that writes the kernel's
// symbols (/proc/kallsyms) to the disk, for a kit made without System.map
// (scripts/linux-kit.sh --no-system-map): it loads the disk's modules (virtio-mmio and virtio-blk
// only: ext4 costs 2 G instructions) and powers off. Generating the text
// costs the kernel about 1.2 G instructions.
const symbolsInit = `#!/bin/sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t devtmpfs devtmpfs /dev
/bin/busybox insmod /lib/modules/*/virtio_mmio.ko
/bin/busybox insmod /lib/modules/*/virtio_blk.ko
echo 0 > /proc/sys/kernel/kptr_restrict
/bin/busybox dd if=/proc/kallsyms of=/dev/vda bs=65536 2>/dev/null
/bin/busybox sync
echo "rvtrace-systest: kallsyms written"
/bin/busybox poweroff -f
`

// guestKallsyms boots the kit's kernel with symbolsInit and returns the
// path of the symbols it wrote.
func guestKallsyms(t *testing.T, kit, dir string) string {
	t.Helper()
	initrd, err := os.ReadFile(filepath.Join(kit, "initramfs-busybox.cpio.gz"))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(cpioNewc(map[string]string{"init": symbolsInit}))
	zw.Close()
	myInitrd := filepath.Join(dir, "initrd-syms.cpio.gz")
	if err := os.WriteFile(myInitrd, append(initrd, gz.Bytes()...), 0o644); err != nil {
		t.Fatal(err)
	}
	disk := filepath.Join(dir, "syms.disk")
	if err := os.WriteFile(disk, make([]byte, 16<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errb := rv(t, "run", "--machine", "virt", "--kernel", filepath.Join(kit, "Image"), "--initrd", myInitrd,
		"--append", "console=ttyS0 rdinit=/init quiet", "--drive", disk, "--drive-rw", "--max-instret", "4000000000", "-q")
	if code != 0 || !strings.Contains(out, "rvtrace-systest: kallsyms written") {
		t.Fatalf("kallsyms boot: exit %d\nstderr: %s\nconsole: %s", code, errb, tail(out))
	}
	raw, err := os.ReadFile(disk)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.IndexByte(raw, 0); i >= 0 {
		raw = raw[:i]
	}
	syms := filepath.Join(dir, "kallsyms")
	if err := os.WriteFile(syms, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	list, err := image.ReadSymbolMap(bytes.NewReader(raw), syms)
	if err != nil || len(list) < 10000 {
		t.Fatalf("kallsyms from the guest: %d symbols, %v", len(list), err)
	}
	return syms
}

// kitSystemMap returns the kit's System.map, or "" (a kit made with
// scripts/linux-kit.sh --no-system-map).
func kitSystemMap(kit string) string {
	p := filepath.Join(kit, "System.map")
	if st, err := os.Stat(p); err == nil && st.Size() > 0 {
		return p
	}
	return ""
}

// TestKernelProfileSystemMap traces the first 100 M instructions of the
// kit's kernel booting (N-Trace best, with a sideband matching the pages
// run against the Image) and profiles them with the kit's System.map
// (Debian's, from the kernel's -dbg package): the profile names the
// kernel's functions, start_kernel with nearly all of the run inside it,
// and has no gap.
func TestKernelProfileSystemMap(t *testing.T) {
	if testing.Short() {
		t.Skip("a traced Linux boot (100 M instructions) takes a minute")
	}
	kit := linuxKitDir(t)
	sysmap := kitSystemMap(kit)
	if sysmap == "" {
		t.Skip("the Linux kit has no System.map (it was made with --no-system-map): run scripts/linux-kit.sh")
	}
	dir := t.TempDir()
	kernel := filepath.Join(kit, "Image")
	trace, side := filepath.Join(dir, "sys.nex"), filepath.Join(dir, "sys.side")
	code, _, errb := rv(t, "run", "--machine", "virt", "--kernel", kernel, "--initrd", filepath.Join(kit, "initramfs-busybox.cpio.gz"),
		"--append", "console=ttyS0 rdinit=/init quiet", "--max-instret", "100000000", "--trace", "ntrace", "--preset", "best",
		"-o", trace, "--sideband", side, "--image", kernel, "-q")
	if code != 1 || !strings.Contains(errb, "instruction limit 100000000 reached") {
		t.Fatalf("run: exit %d: %s", code, errb)
	}
	code, prof, errb := rv(t, "profile", "--protocol", "ntrace", "--preset", "best", "--sideband-in", side,
		"--symbols", sysmap, trace, "--funcs", "100000")
	if code != 0 {
		t.Fatalf("profile: exit %d: %s", code, errb)
	}
	if !strings.Contains(prof, "lost          nothing") {
		t.Errorf("profile reports lost trace:\n%s", tail(prof))
	}
	// start_kernel: self, inclusive, calls, trace bytes, name
	m := regexp.MustCompile(`\n +[0-9.]+% +\d+ +(\d+) +1 +\d+ +start_kernel\n`).FindStringSubmatch(prof)
	if m == nil {
		t.Fatalf("profile has no start_kernel called once:\n%s", tail(prof))
	}
	if incl, _ := strconv.ParseUint(m[1], 10, 64); incl < 50_000_000 {
		t.Errorf("start_kernel includes %d instructions of the first 100 M", incl)
	}
	for _, fn := range []string{"setup_arch", "memset", "rest_init"} {
		if !regexp.MustCompile(`\s` + fn + `\n`).MatchString(prof) {
			t.Errorf("profile lacks %s", fn)
		}
	}
}

// pcHash reads a PC list from a named pipe and hashes it; wait returns
// the SHA-256 and the number of lines once the writer closed it (or
// never opened it: call wait after the command returned).
func pcHash(t *testing.T, dir, name string) (path string, wait func() (string, int)) {
	t.Helper()
	path = filepath.Join(dir, name)
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no named pipes: %v", err)
	}
	type res struct {
		sum string
		n   int
	}
	ch := make(chan res, 1)
	go func() {
		f, err := os.Open(path)
		if err != nil {
			ch <- res{"open: " + err.Error(), 0}
			return
		}
		defer f.Close()
		h := sha256.New()
		n := 0
		buf := make([]byte, 1<<20)
		for {
			k, err := f.Read(buf)
			h.Write(buf[:k])
			n += bytes.Count(buf[:k], []byte{'\n'})
			if err == io.EOF {
				break
			}
			if err != nil {
				ch <- res{"read: " + err.Error(), n}
				return
			}
		}
		ch <- res{fmt.Sprintf("%x", h.Sum(nil)), n}
	}()
	return path, func() (string, int) {
		// unblock a reader whose writer never came
		if f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			f.Close()
		}
		r := <-ch
		return r.sum, r.n
	}
}

// TestSystemTrace boots Debian's kernel to the kit's busybox init traced live,
// in N-Trace (preset best) and in E-Trace (every optional mode), with a sideband matching the pages run against the
// kernel Image and busybox. Each trace, decoded with the sideband alone,
// gives exactly the PC sequence the simulator retired (compared by
// SHA-256, through named pipes: a boot is a billion instructions), and
// the profile of the N-Trace names kernel functions (from the kit's
// System.map, or without one the /proc/kallsyms the guest wrote to its
// disk in an untraced boot) and splits kernel and user time.
func TestSystemTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("a traced Linux boot takes minutes")
	}
	kit := linuxKitDir(t)
	dir := t.TempDir()
	kernel := filepath.Join(kit, "Image")
	busybox := filepath.Join(kit, "root/usr/bin/busybox")
	initrd := filepath.Join(kit, "initramfs-busybox.cpio.gz")
	syms := kitSystemMap(kit)
	if syms == "" {
		syms = guestKallsyms(t, kit, dir)
	}
	etraceModes := []string{"--all-modes"}
	var simSum string
	var simN int
	for _, tc := range []struct {
		proto string
		opts  []string
	}{
		{"ntrace", []string{"--preset", "best"}},
		{"etrace", etraceModes},
	} {
		trace := filepath.Join(dir, tc.proto+".trace")
		side := filepath.Join(dir, tc.proto+".side")
		fifo, wait := pcHash(t, dir, tc.proto+"-sim.pcs")
		args := append([]string{"run", "--machine", "virt", "--kernel", kernel, "--initrd", initrd,
			"--append", "console=ttyS0 rdinit=/init quiet", "--max-instret", "3000000000", "--trace", tc.proto}, tc.opts...)
		args = append(args, "-o", trace, "--sideband", side, "--image", kernel, "--image", busybox, "--pcs", fifo)
		code, out, errb := rv(t, args...)
		sum, n := wait()
		if code != 0 || !strings.Contains(out, "rvtrace-init: powering off") {
			t.Fatalf("%s: run: exit %d\nstderr: %s\nconsole: %s", tc.proto, code, errb, tail(out))
		}
		t.Logf("%s run: %d instructions; %s", tc.proto, n, strings.TrimSpace(errb))
		if simSum == "" {
			simSum, simN = sum, n
		} else if sum != simSum || n != simN {
			t.Errorf("%s: the simulator ran %d instructions (%s), the first run %d (%s)", tc.proto, n, sum, simN, simSum)
		}
		checkSideband(t, side, busybox)

		dec := append([]string{"decode", "--protocol", tc.proto}, tc.opts...)
		if tc.proto == "etrace" {
			dec = append(dec, "--context")
		}
		fifo2, wait2 := pcHash(t, dir, tc.proto+"-dec.pcs")
		code, _, errb = rv(t, append(dec, "--sideband-in", side, trace, "--pcs", fifo2)...)
		dsum, dn := wait2()
		if code != 0 {
			t.Fatalf("%s: decode: exit %d: %s", tc.proto, code, errb)
		}
		if dsum != sum || dn != n {
			t.Fatalf("%s: decoded %d instructions (%s), the simulator ran %d (%s)\n%s", tc.proto, dn, dsum, n, sum, errb)
		}
		if tc.proto != "ntrace" {
			continue
		}
		code, prof, errb := rv(t, "profile", "--protocol", "ntrace", "--preset", "best", "--sideband-in", side,
			"--symbols", syms, trace, "--funcs", "40")
		if code != 0 {
			t.Fatalf("profile: exit %d: %s", code, errb)
		}
		for _, want := range []string{"privilege     S ", ", U ", "memset", "inflate_fast"} {
			if !strings.Contains(prof, want) {
				t.Errorf("profile lacks %q:\n%s", want, prof)
			}
		}
		t.Logf("profile:\n%s", prof)
	}
}

// checkSideband checks that the sideband maps busybox into several user
// contexts and that its records parse.
func checkSideband(t *testing.T, side, busybox string) {
	t.Helper()
	f, err := os.Open(side)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sf, err := sideband.Read(f, side)
	if err != nil {
		t.Fatal(err)
	}
	bb := -1
	for i, im := range sf.Images {
		if filepath.Base(im.Path) == filepath.Base(busybox) {
			bb = i
		}
	}
	ctxs := map[uint64]bool{}
	for _, r := range sf.Records {
		if !r.Global && r.Image == bb && r.Start < 0x200000 {
			ctxs[r.Context] = true
		}
	}
	if len(ctxs) < 3 {
		t.Errorf("busybox is mapped in %d user contexts, want several (one per process)", len(ctxs))
	}
}

func tail(s string) string {
	if len(s) > 3000 {
		return "..." + s[len(s)-3000:]
	}
	return s
}

// TestCLISideband runs a tiny raw kernel Image traced with a sideband:
// the sideband maps the page it ran to the Image (global: MMU off), and
// decoding with the sideband alone, with the Image placed by hand
// (FILE@ADDR) and with it limited to context 0 (ctx=0:FILE@ADDR) gives
// the PCs the simulator retired; a context the trace is not in has no
// code. Bad arguments and sidebands fail with messages naming them.
func TestCLISideband(t *testing.T) {
	img := tinyImage(t)
	dir := t.TempDir()
	nex, side, pcs := filepath.Join(dir, "t.nex"), filepath.Join(dir, "t.side"), filepath.Join(dir, "run.pcs")
	code, out, errb := rv(t, "run", "--machine", "virt", "--kernel", img, "--trace", "ntrace", "--preset", "best", "-o", nex,
		"--sideband", side, "--image", img, "--pcs", pcs)
	if code != 0 || out != "K" || !strings.Contains(errb, "sideband "+side+": 1 pages matched to images") {
		t.Fatalf("run: exit %d, stdout %q, stderr %s", code, out, errb)
	}
	b, err := os.ReadFile(side)
	if err != nil || !strings.Contains(string(b), "\nmap 0x0 * 0x80200000 0x80201000 0x0 0x0 0x0\n") {
		t.Fatalf("sideband: %v\n%s", err, b)
	}
	want, err := os.ReadFile(pcs)
	if err != nil || len(want) == 0 {
		t.Fatal(err)
	}
	for i, imgArgs := range [][]string{
		{"--sideband-in", side},
		{"--image", img + "@0x80200000"},
		{"--image", "ctx=0:" + img + "@0x80200000"},
	} {
		got := filepath.Join(dir, fmt.Sprintf("dec%d.pcs", i))
		code, _, errb := rv(t, append(append([]string{"decode", "--protocol", "ntrace", "--preset", "best"}, imgArgs...), nex, "--pcs", got)...)
		g, _ := os.ReadFile(got)
		if code != 0 || !bytes.Equal(g, want) {
			t.Errorf("decode %v: exit %d, %d bytes of PCs, want %d\n%s", imgArgs, code, len(g), len(want), errb)
		}
	}
	code, _, errb = rv(t, "decode", "--protocol", "ntrace", "--preset", "best", "--image", "ctx=5:"+img+"@0x80200000", nex)
	if code == 0 || !strings.Contains(errb, "wrong image?") {
		t.Errorf("decode with the image in another context: exit %d, %s", code, errb)
	}
	bad := filepath.Join(dir, "bad.side")
	if err := os.WriteFile(bad, []byte(sideband.Magic+"\nmap 0x0 * 0x1000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"decode", "--protocol", "ntrace", "--sideband-in", bad, nex}, bad + ":2: map: want HART CTX"},
		{[]string{"decode", "--protocol", "ntrace", "--image", "ctx=x:" + img, nex}, "want ctx=N:FILE[@ADDR]"},
		{[]string{"decode", "--protocol", "ntrace", "--image", img + "@0xzz", nex}, "invalid address"},
		{[]string{"run", "--machine", "virt", "--kernel", img, "--image", img}, "run takes images only to match the pages of a --sideband"},
		{[]string{"run", "--machine", "virt", "--kernel", img, "--context-source", "pid"}, "--context-source \"pid\""},
	} {
		code, _, errb := rv(t, tc.args...)
		if code == 0 || !strings.Contains(errb, tc.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", tc.args, code, errb, tc.want)
		}
	}
}
