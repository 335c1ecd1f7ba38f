package sim

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// linuxKit returns the directory scripts/linux-kit.sh fills, or skips.
func linuxKit(t testing.TB) string {
	t.Helper()
	dir := linuxKitDir()
	if dir == "" {
		t.Skip("Linux kit absent ($RVTRACE_LINUX_CACHE, else ~/.cache/rvtrace/linux): run scripts/linux-kit.sh")
	}
	return dir
}

// bootLimit guards the boots: the busybox initramfs boots in about 0.6 G
// instructions.
const bootLimit = 4_000_000_000

func bootKernel(t *testing.T, fw, cmdline string, stdin []byte) (string, Result) {
	t.Helper()
	dir := linuxKit(t)
	var out bytes.Buffer
	m, err := New(Config{MaxInstret: bootLimit, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if fw != "" {
		fw = filepath.Join("/usr/lib/riscv64-linux-gnu/opensbi/generic", fw)
		if _, err := os.Stat(fw); err != nil {
			t.Skipf("OpenSBI absent: %v", err)
		}
	}
	err = m.LoadKernel(Kernel{Image: filepath.Join(dir, "Image"), Initrd: filepath.Join(dir, "initramfs-busybox.cpio.gz"),
		Append: cmdline, Firmware: fw})
	if err != nil {
		t.Fatal(err)
	}
	if stdin != nil {
		m.SetStdin(bytes.NewReader(stdin))
	}
	res, err := m.Run()
	if err != nil {
		t.Fatalf("%v\nconsole:\n%s", err, tail(out.String()))
	}
	if res.ExitCode != 0 {
		t.Fatalf("exit code %d\nconsole:\n%s", res.ExitCode, tail(out.String()))
	}
	t.Logf("%s: %d instructions", t.Name(), res.Instret)
	return out.String(), res
}

func tail(s string) string {
	if len(s) > 3000 {
		return "..." + s[len(s)-3000:]
	}
	return s
}

var uartIRQs = regexp.MustCompile(`rvtrace-init: ttyS0 interrupts (\d+)`)

// TestKernelBoot boots Debian's kernel on the built-in SBI and on
// OpenSBI's fw_dynamic and fw_jump to the kit's init script, which says
// it is up, reports the UART's interrupt count from /proc/interrupts
// (user-space output goes through the 8250 driver's interrupt path) and
// powers off (exit code 0).
func TestKernelBoot(t *testing.T) {
	for _, fw := range []string{"", "fw_dynamic.elf", "fw_jump.elf"} {
		name := fw
		if name == "" {
			name = "sbi"
		}
		t.Run(name, func(t *testing.T) {
			out, _ := bootKernel(t, fw, "console=ttyS0 rdinit=/init", nil)
			for _, want := range []string{"Linux version", "Machine model: rvtrace,virt", "riscv-plic",
				"ttyS0 at MMIO 0x10000000", "Run /init as init process", "rvtrace-init: up, kernel ",
				"rvtrace-init: powering off", "reboot: Power down"} {
				if !strings.Contains(out, want) {
					t.Errorf("console lacks %q", want)
				}
			}
			if fw != "" && !strings.Contains(out, "OpenSBI v") {
				t.Errorf("console lacks OpenSBI's banner")
			}
			sm := uartIRQs.FindStringSubmatch(out)
			if sm == nil {
				t.Fatalf("no ttyS0 line in /proc/interrupts\nconsole:\n%s", tail(out))
			}
			if n, _ := strconv.Atoi(sm[1]); n == 0 {
				t.Errorf("the UART took no interrupt: %s", sm[0])
			}
		})
	}
}

// TestKernelShell types commands into the busybox shell through the
// UART's input: the shell's answer (computed by the guest) and the exit
// status of a failing command come back on the console. The kernel's
// /proc/cpuinfo isa line lists Svinval and Svpbmt, which it took from the
// device tree and uses (Svpbmt: the UART and the other devices are mapped
// with PBMT=IO; sinval.vma in its TLB flushes).
func TestKernelShell(t *testing.T) {
	in := "echo sum=$((6*7))\nfalse; echo status=$?\ncat /proc/cpuinfo | grep -c processor\ngrep -m1 '^isa' /proc/cpuinfo\nexit\n"
	out, _ := bootKernel(t, "", "console=ttyS0 rdinit=/init rvtrace.shell=1 quiet", []byte(in))
	for _, want := range []string{"sum=42\r\n", "status=1\r\n", "\r\n1\r\n", "rvtrace-init: powering off"} {
		if !strings.Contains(out, want) {
			t.Errorf("console lacks %q\nconsole:\n%s", want, tail(out))
		}
	}
	isa := regexp.MustCompile(`\nisa\s*: (rv64\S*)`).FindStringSubmatch(out)
	if isa == nil {
		t.Fatalf("no isa line from /proc/cpuinfo\nconsole:\n%s", tail(out))
	}
	t.Logf("/proc/cpuinfo: isa %s", isa[1])
	for _, ext := range []string{"_svinval", "_svpbmt", "_sstc", "_zicbom"} {
		if !strings.Contains(isa[1]+"_", ext+"_") {
			t.Errorf("the kernel's isa line lacks %s: %s", ext, isa[1])
		}
	}
}

// TestKernelDrive gives the kernel an ext2 disk image made by the host's
// mke2fs with a file in it: the guest loads virtio_mmio, virtio_blk and
// ext4 from the initramfs, sees /dev/vda with the image's size, mounts it
// and prints the file; a write to the read-only disk fails.
func TestKernelDrive(t *testing.T) {
	dir := linuxKit(t)
	mke2fs, err := exec.LookPath("mke2fs")
	if err != nil {
		t.Skip("mke2fs absent (e2fsprogs)")
	}
	tmp := t.TempDir()
	src := filepath.Join(tmp, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "hello.txt"), []byte("disk says hello-from-vda\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(tmp, "disk.img")
	if out, err := exec.Command(mke2fs, "-q", "-F", "-t", "ext2", "-d", src, img, "4M").CombinedOutput(); err != nil {
		t.Fatalf("mke2fs: %v\n%s", err, out)
	}
	var out bytes.Buffer
	m, err := New(Config{MaxInstret: bootLimit, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AttachDrive(img, false); err != nil {
		t.Fatal(err)
	}
	err = m.LoadKernel(Kernel{Image: filepath.Join(dir, "Image"), Initrd: filepath.Join(dir, "initramfs-busybox.cpio.gz"),
		Append: "console=ttyS0 rdinit=/init rvtrace.shell=1 quiet"})
	if err != nil {
		t.Fatal(err)
	}
	m.SetStdin(strings.NewReader("cat /sys/block/vda/size\nmount -t ext4 -o ro /dev/vda /mnt && cat /mnt/hello.txt\n" +
		"echo x > /mnt/new.txt || echo write-refused\nexit\n"))
	res, err := m.Run()
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("%v, exit code %d\nconsole:\n%s", err, res.ExitCode, tail(out.String()))
	}
	t.Logf("%d instructions", res.Instret)
	for _, want := range []string{"\r\n8192\r\n", "disk says hello-from-vda\r\n", "write-refused\r\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("console lacks %q\nconsole:\n%s", want, tail(out.String()))
		}
	}
}

// TestKernelDeviceTree checks the generated tree with dtc (an independent
// parser): it decompiles, /chosen has the command line and the initrd
// bounds, the initrd's bytes are in RAM there, nothing overlaps the
// kernel, and the PLIC, UART interrupt and poweroff nodes are present.
// The decompiled tree, compiled back and given as Kernel.DTB, is the one
// the machine boots with.
func TestKernelDeviceTree(t *testing.T) {
	dir := linuxKit(t)
	dtc, err := exec.LookPath("dtc")
	if err != nil {
		t.Skip("dtc absent (device-tree-compiler)")
	}
	initrd := filepath.Join(dir, "initramfs-busybox.cpio.gz")
	k := Kernel{Image: filepath.Join(dir, "Image"), Initrd: initrd, Append: "console=ttyS0 rdinit=/init", RAMSize: 256 << 20}
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadKernel(k); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	blob := filepath.Join(tmp, "virt.dtb")
	if err := os.WriteFile(blob, m.DeviceTree(), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(dtc, "-q", "-I", "dtb", "-O", "dts", blob).Output()
	if err != nil {
		t.Fatalf("dtc: %v", err)
	}
	dts := string(out)
	for _, want := range []string{`bootargs = "console=ttyS0 rdinit=/init";`, `compatible = "sifive,plic-1.0.0\0riscv,plic0";`,
		`compatible = "ns16550a";`, "interrupts = <0x0a>;", `compatible = "syscon-poweroff";`, "value = <0x5555>;",
		"rng-seed = ", `riscv,isa-extensions = "i\0m\0a\0f\0d\0c\0`, `\0sscofpmf\0zbc\0`, `\0zcmop\0sstc\0svinval\0svpbmt";`, "_zcmop_sstc_svinval_svpbmt\";", "riscv,cboz-block-size = <0x40>;"} {
		if !strings.Contains(dts, want) {
			t.Errorf("tree lacks %q\n%s", want, dts)
		}
	}
	cell := func(name string) uint64 {
		re := regexp.MustCompile(regexp.QuoteMeta(name) + ` = <0x([0-9a-f]+) 0x([0-9a-f]+)>;`)
		sm := re.FindStringSubmatch(dts)
		if sm == nil {
			t.Fatalf("tree lacks %s", name)
		}
		hi, _ := strconv.ParseUint(sm[1], 16, 32)
		lo, _ := strconv.ParseUint(sm[2], 16, 32)
		return hi<<32 | lo
	}
	start, end := cell("linux,initrd-start"), cell("linux,initrd-end")
	want, err := os.ReadFile(initrd)
	if err != nil {
		t.Fatal(err)
	}
	if end-start != uint64(len(want)) {
		t.Fatalf("initrd %#x..%#x: %d bytes, file has %d", start, end, end-start, len(want))
	}
	got := make([]byte, len(want))
	if !m.ReadMem(start, got) || !bytes.Equal(got, want) {
		t.Errorf("RAM at %#x does not hold the initrd", start)
	}
	img, _ := os.ReadFile(k.Image)
	kend := uint64(0x80200000) + max(uint64(len(img)), uint64(img[16])|uint64(img[17])<<8|uint64(img[18])<<16|uint64(img[19])<<24)
	if start < kend || m.Hart(0).Reg(11) < kend || m.Hart(0).Reg(11) >= 0x80000000+k.RAMSize {
		t.Errorf("initrd at %#x or tree at %#x overlaps the kernel (ends %#x) or lies outside RAM", start, m.Hart(0).Reg(11), kend)
	}
	// round trip through dtc and back in with Kernel.DTB
	blob2 := filepath.Join(tmp, "virt2.dtb")
	cmd := exec.Command(dtc, "-q", "-I", "dts", "-O", "dtb", "-o", blob2)
	cmd.Stdin = strings.NewReader(dts)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("dtc: %v\n%s", err, out)
	}
	m2, _ := New(Config{})
	k.DTB = blob2
	if err := m2.LoadKernel(k); err != nil {
		t.Fatal(err)
	}
	b2, _ := os.ReadFile(blob2)
	if !bytes.Equal(m2.DeviceTree(), b2) {
		t.Errorf("Kernel.DTB not used as given")
	}
	m3, _ := New(Config{})
	k.DTB = initrd
	if err := m3.LoadKernel(k); err == nil {
		t.Errorf("a gzip file accepted as a device tree")
	}
}
