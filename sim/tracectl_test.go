package sim

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/flow"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ntrace"
	"github.com/rvtrace/rvtrace/tracectl"
)

// pcList collects the PCs of a decoded flow and counts gaps.
type pcList struct {
	img  *image.Set
	pcs  []uint64
	gaps int
}

func (p *pcList) Event(e *flow.Event) error {
	switch e.Kind {
	case flow.KindRange:
		for pc := e.Start; ; {
			p.pcs = append(p.pcs, pc)
			if pc == e.Last {
				break
			}
			in, _ := p.img.Inst(pc)
			pc += uint64(in.Len)
		}
	case flow.KindGap:
		p.gaps++
	}
	return nil
}
func (p *pcList) Close() error { return nil }

// A guest programs the trace components with loads and stores at their
// physical addresses, traces a loop and disables them; the capture read
// back through trRamRPLow/trRamData decodes to a contiguous stretch of
// what the hart executed that holds the whole loop.
func TestTraceControlGuest(t *testing.T) {
	cc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		t.Skip("riscv64-linux-gnu-gcc not installed")
	}
	elf := filepath.Join(t.TempDir(), "tracectl.elf")
	out, err := exec.Command(cc, "-march=rv64gc", "-mabi=lp64d", "-nostdlib", "-nostartfiles", "-static",
		"-T", "testdata/tracectl.ld", "-o", elf, "testdata/tracectl.S").CombinedOutput()
	if err != nil {
		t.Fatalf("building the guest: %v\n%s", err, out)
	}
	img := image.NewSet()
	if err := img.AddELF(elf); err != nil {
		t.Fatal(err)
	}
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(elf); err != nil {
		t.Fatal(err)
	}
	sys, err := tracectl.NewSystem(1, img, 16<<10, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AttachTrace(sys, tracectl.EncoderBase, tracectl.MapEnd, sys.Sinks()); err != nil {
		t.Fatal(err)
	}
	var executed []uint64
	if err := m.SetPCHook(0, func(pc uint64) { executed = append(executed, pc) }); err != nil {
		t.Fatal(err)
	}
	res, err := m.Run()
	if err != nil {
		t.Fatal(err)
	}
	if res.ExitCode != tracectl.CompRAMSink {
		t.Fatalf("guest exit code %d: it read trRamCompType %d, want %d", res.ExitCode, res.ExitCode, tracectl.CompRAMSink)
	}
	capture, err := tracectl.ReadTrace(sys, tracectl.RAMSinkBase, nil)
	if err != nil {
		t.Fatal(err)
	}
	set, err := sys.Encoders[0].Settings()
	if err != nil {
		t.Fatal(err)
	}
	got := &pcList{img: img}
	d, err := ntrace.NewDecoder(img, got, ntrace.DecoderConfigFrom(set.NTrace))
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Decode(bytes.NewReader(capture)); err != nil {
		t.Fatal(err)
	}
	if got.gaps != 0 || len(got.pcs) == 0 {
		t.Fatalf("decoded %d instructions with %d gaps from %d bytes", len(got.pcs), got.gaps, len(capture))
	}
	// find the decoded flow in the executed one
	at := -1
	for i := range executed {
		if i+len(got.pcs) <= len(executed) && executed[i] == got.pcs[0] && equal(executed[i:i+len(got.pcs)], got.pcs) {
			at = i
			break
		}
	}
	if at < 0 {
		t.Fatalf("the %d decoded instructions are not a stretch of the %d executed", len(got.pcs), len(executed))
	}
	// the stretch holds every call of f: 200 calls of 5 + 4 instructions
	calls := 0
	f, ok := img.Lookup("f")
	if !ok {
		t.Fatal("no symbol f")
	}
	for _, pc := range got.pcs {
		if pc == f {
			calls++
		}
	}
	if calls != 200 {
		t.Errorf("the trace holds %d calls of f, want 200 (traced %d of %d instructions from %d)", calls, len(got.pcs), len(executed), at)
	}
	t.Logf("%d bytes of trace, %d instructions traced of %d executed", len(capture), len(got.pcs), len(executed))
}

func equal(a, b []uint64) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return len(a) == len(b)
}

// DescribeTrace adds the trace components to the device tree in the boot
// ROM, which dtc (an independent parser) reads back.
func TestTraceDeviceTree(t *testing.T) {
	dtc, err := exec.LookPath("dtc")
	if err != nil {
		t.Skip("dtc absent (device-tree-compiler)")
	}
	cc, err := exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		t.Skip("riscv64-linux-gnu-gcc not installed")
	}
	elf := filepath.Join(t.TempDir(), "tracectl.elf")
	if out, err := exec.Command(cc, "-march=rv64gc", "-mabi=lp64d", "-nostdlib", "-nostartfiles", "-static",
		"-T", "testdata/tracectl.ld", "-o", elf, "testdata/tracectl.S").CombinedOutput(); err != nil {
		t.Fatalf("building the guest: %v\n%s", err, out)
	}
	m, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(elf); err != nil {
		t.Fatal(err)
	}
	sys, err := tracectl.NewSystem(1, nil, 4096, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AttachTrace(sys, sys.Base(), sys.End(), sys.Sinks()); err != nil {
		t.Fatal(err)
	}
	if err := m.DescribeTrace([]TraceNode{
		{Name: "trace-encoder", Compatible: []string{"riscv,trace-encoder"}, Base: sys.EncoderAddr(0), Size: 0x1000, Hart: 0},
		{Name: "trace-ram-sink", Compatible: []string{"riscv,trace-ram-sink"}, Base: sys.SinkAddr(), Size: 0x1000, Hart: -1},
	}); err != nil {
		t.Fatal(err)
	}
	hdr := make([]byte, 8)
	if !m.ReadMem(DTBAddr, hdr) {
		t.Fatal("no boot ROM")
	}
	blob := make([]byte, uint32(hdr[4])<<24|uint32(hdr[5])<<16|uint32(hdr[6])<<8|uint32(hdr[7]))
	m.ReadMem(DTBAddr, blob)
	path := filepath.Join(t.TempDir(), "m.dtb")
	if err := os.WriteFile(path, blob, 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(dtc, "-q", "-I", "dtb", "-O", "dts", path).Output()
	if err != nil {
		t.Fatalf("dtc: %v", err)
	}
	dts := string(out)
	for _, want := range []string{"trace-encoder@3000000 {", `compatible = "riscv,trace-encoder";`, "reg = <0x00 0x3000000 0x00 0x1000>;",
		"rvtrace,hart = <0x00>;", "trace-ram-sink@3019000 {", "reg = <0x00 0x3019000 0x00 0x1000>;", "serial@"} {
		if !strings.Contains(dts, want) {
			t.Errorf("tree lacks %q\n%s", want, dts)
		}
	}
}
