package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestCLIDataIngressSplitBytes runs programs with E-Trace data trace over
// the split protocol, writing the ingress and data ingress CSV files
// (requests, unified accesses and load responses, the responses placed
// by time), encodes each from its CSV files and checks the result is the
// live run's trace byte for byte: memcpy (a Linux program: system calls
// trap, responses come out of order) run to its exit, and stopped by
// --max-instret with loads in flight (their responses come after the
// last instruction, at the end of the trace), and mt-shared on two harts
// (AMOs: split atomic requests with their store data), each hart's files
// against its frames of the run's trace. It also checks what is refused: an ingress
// CSV without its time column, a response line with a request's fields.
func TestCLIDataIngressSplitBytes(t *testing.T) {
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	memcpy := filepath.Join("..", "..", "examples", "sim-tests", "memcpy.elf")
	code, _, e := rv(t, "run", "--trace", "etrace", "--data-trace", "--data-protocol", "split", "--max-instret", "2000000",
		"-o", p("m.te"), "--ingress", p("i.csv"), "--data-ingress", p("d.csv"), memcpy)
	if code != 0 {
		t.Fatalf("run memcpy: exit %d: %s", code, e)
	}
	d, err := os.ReadFile(p("d.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(d, []byte("iaddr,dtype,daddr,dsize,data,lrid,lresp,lid,ldata,time\n")) {
		t.Fatalf("data ingress CSV header: %q", d[:min(len(d), 80)])
	}
	reqs := regexp.MustCompile(`(?m)^0x[0-9a-f]+,0,0x[0-9a-f]+,[0-3],,[0-7],,,,$`).FindAll(d, -1)
	amos := regexp.MustCompile(`(?m)^0x[0-9a-f]+,(8|9|1[0-4]),0x[0-9a-f]+,[23],0x[0-9a-f]+,[0-7],,,,$`).FindAll(d, -1)
	resps := regexp.MustCompile(`(?m)^,,,,,,2,[0-7],0x[0-9a-f]+,0x[0-9a-f]+$`).FindAll(d, -1)
	if len(reqs) < 1000 || len(resps) != len(reqs)+len(amos) {
		t.Errorf("memcpy: %d load and %d atomic request lines, %d response lines", len(reqs), len(amos), len(resps))
	}
	opts := []string{"encode", "--protocol", "etrace", "--data-trace", "--data-protocol", "split", "--image", memcpy}
	if code, _, e := rv(t, append(opts, "--ingress-in", p("i.csv"), "--data-ingress-in", p("d.csv"), "-o", p("m2.te"))...); code != 0 {
		t.Fatalf("encode memcpy: exit %d: %s", code, e)
	}
	sameFile(t, p("m.te"), p("m2.te"))
	// Runs stopped by an instruction limit: whether loads are still in
	// flight at the limit depends on the run (memcpy is a Linux program:
	// its data addresses move with the environment on its stack), so a
	// few limits are tried and one of them must end with responses after
	// its last instruction (time limit+1); every one must encode back to
	// the live bytes.
	trailing := 0
	for limit := 100000; limit < 100016; limit++ {
		code, _, e = rv(t, "run", "--trace", "etrace", "--data-trace", "--data-protocol", "split", "--max-instret", fmt.Sprint(limit),
			"-o", p("l.te"), "--ingress", p("li.csv"), "--data-ingress", p("ld.csv"), memcpy)
		if code != 0 && !strings.Contains(e, fmt.Sprintf("instruction limit %d reached", limit)) {
			t.Fatalf("run memcpy to %d instructions: exit %d: %s", limit, code, e)
		}
		ld, err := os.ReadFile(p("ld.csv"))
		if err != nil {
			t.Fatal(err)
		}
		if regexp.MustCompile(fmt.Sprintf(`\n,,,,,,2,[0-7],0x[0-9a-f]+,0x%x\n$`, limit+1)).Match(ld) {
			trailing++
		}
		if code, _, e := rv(t, append(opts, "--ingress-in", p("li.csv"), "--data-ingress-in", p("ld.csv"), "-o", p("l2.te"))...); code != 0 {
			t.Fatalf("encode memcpy to %d instructions: exit %d: %s", limit, code, e)
		}
		sameFile(t, p("l.te"), p("l2.te"))
	}
	if trailing == 0 {
		t.Errorf("memcpy stopped at 100000 to 100015 instructions: no data ingress CSV ends with a response after the last instruction")
	}

	// mt-shared on two harts
	mt := filepath.Join("..", "..", "examples", "mt-shared", "mt-shared.elf")
	code, _, e = rv(t, "run", "--harts", "2", "--max-instret", "2000000", "--trace", "etrace", "--data-trace", "--data-protocol", "split",
		"-o", p("mt.te"), "--ingress", p("i{hart}.csv"), "--data-ingress", p("d{hart}.csv"), mt)
	if code != 0 {
		t.Fatalf("run mt-shared: exit %d: %s", code, e)
	}
	atomics := 0
	for h := 0; h < 2; h++ {
		d, err := os.ReadFile(p(fmt.Sprintf("d%d.csv", h)))
		if err != nil {
			t.Fatal(err)
		}
		atomics += len(regexp.MustCompile(`(?m)^0x[0-9a-f]+,(8|9|1[0-4]),0x[0-9a-f]+,[23],0x[0-9a-f]+,[0-7],,,,$`).FindAll(d, -1))
		tr := p(fmt.Sprintf("h%d.te", h))
		code, _, e := rv(t, "encode", "--protocol", "etrace", "--encap", "utdd", "--src-bits", "2", "--src-id", fmt.Sprint(h),
			"--data-trace", "--data-protocol", "split", "--data-src-id", fmt.Sprint(2+h), "--image", mt,
			"--ingress-in", p(fmt.Sprintf("i%d.csv", h)), "--data-ingress-in", p(fmt.Sprintf("d%d.csv", h)), "-o", tr)
		if code != 0 {
			t.Fatalf("encode hart %d: exit %d: %s", h, code, e)
		}
		want := sourceFrames(t, p("mt.te"), 2, uint32(h), uint32(2+h))
		got, err := os.ReadFile(tr)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 1000 || !bytes.Equal(got, want) {
			t.Errorf("hart %d: its CSV files encode to %d bytes, not the %d bytes of its frames in the run's trace", h, len(got), len(want))
		}
	}
	if atomics == 0 {
		t.Errorf("mt-shared: no split atomic request line")
	}

	// refused: an ingress CSV without time, a response with a request's
	// fields
	i, err := os.ReadFile(p("i.csv"))
	if err != nil {
		t.Fatal(err)
	}
	var noTime []string
	for _, l := range strings.Split(strings.TrimSuffix(string(i), "\n"), "\n") {
		f := strings.Split(l, ",")
		noTime = append(noTime, strings.Join(append(f[:9:9], f[10:]...), ","))
	}
	if !strings.HasSuffix(noTime[0], "ilastsize_0,sijump_0") {
		t.Fatalf("ingress CSV header %q: not the columns expected", noTime[0])
	}
	if err := os.WriteFile(p("i-notime.csv"), []byte(strings.Join(noTime, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, e := rv(t, append(opts, "--ingress-in", p("i-notime.csv"), "--data-ingress-in", p("d.csv"), "-o", p("x.te"))...); code == 0 || !strings.Contains(e, "time column") {
		t.Errorf("encode from an ingress CSV without time: exit %d: %s", code, e)
	}
	bad := bytes.Replace(d, resps[0], append([]byte("0x10"), resps[0]...), 1)
	line := bytes.Count(bad[:bytes.Index(bad, resps[0])], []byte("\n")) + 1
	if err := os.WriteFile(p("d-bad.csv"), bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, e := rv(t, append(opts, "--ingress-in", p("i.csv"), "--data-ingress-in", p("d-bad.csv"), "-o", p("x.te"))...); code == 0 || !strings.Contains(e, fmt.Sprintf("d-bad.csv:%d", line)) || !strings.Contains(e, "a response has no iaddr") {
		t.Errorf("encode with a response line that has an iaddr (line %d): exit %d: %s", line, code, e)
	}
}
