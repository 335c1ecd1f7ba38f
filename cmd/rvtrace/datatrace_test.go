package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// memRecords returns the MR/MW records of a Tarmac file without their
// time column.
func memRecords(t *testing.T, path string) []string {
	t.Helper()
	return memRecordsMatching(t, path, `\b(M[RW]\d+ .*)$`)
}

// memRecordsMatching returns the first group of re in each line of the
// file path that matches it.
func memRecordsMatching(t *testing.T, path, re string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	r := regexp.MustCompile(re)
	for _, l := range strings.Split(string(b), "\n") {
		if m := r.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
		}
	}
	return out
}

// TestCLIDataTrace runs an example with E-Trace data trace on, decodes
// it to Tarmac and checks the MR/MW records against the simulator's own
// full Tarmac; encodes the same run again from the ingress and data
// ingress CSV files the run wrote and checks the trace is identical; and
// checks that a trace decoded without --data-trace says why.
func TestCLIDataTrace(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "sim-tests", "setjmp.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"raw", nil},
		{"utdd", []string{"--encap", "utdd", "--src-bits", "2", "--src-id", "1"}},
	} {
		opts := append([]string{"--protocol", "etrace", "--data-trace"}, tc.args...)
		run := append([]string{"run", "--trace", "etrace", "--data-trace"}, tc.args...)
		run = append(run, "-o", p(tc.name+".te"), "--tarmac-full", p(tc.name+".sim.tarmac"),
			"--ingress", p(tc.name+".csv"), "--data-ingress", p(tc.name+".dcsv"), elf)
		if code, _, e := rv(t, run...); code != 0 {
			t.Fatalf("%s: run: exit %d: %s", tc.name, code, e)
		}
		dec := append([]string{"decode"}, opts...)
		dec = append(dec, "--image", elf, p(tc.name+".te"), "--tarmac", p(tc.name+".dec.tarmac"), "--jsonl", p(tc.name+".jsonl"))
		if code, _, e := rv(t, dec...); code != 0 {
			t.Fatalf("%s: decode: exit %d: %s", tc.name, code, e)
		}
		want, got := memRecords(t, p(tc.name+".sim.tarmac")), memRecords(t, p(tc.name+".dec.tarmac"))
		if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %d MR/MW records decoded, the simulator wrote %d, or they differ", tc.name, len(got), len(want))
		}
		js, _ := os.ReadFile(p(tc.name + ".jsonl"))
		if !bytes.Contains(js, []byte(`{"kind":"data","pc":"0x`)) {
			t.Errorf("%s: no data object in the JSON lines", tc.name)
		}
		enc := append([]string{"encode"}, opts...)
		enc = append(enc, "--image", elf, "--ingress-in", p(tc.name+".csv"), "--data-ingress-in", p(tc.name+".dcsv"), "-o", p(tc.name+".2.te"))
		if code, _, e := rv(t, enc...); code != 0 {
			t.Fatalf("%s: encode: exit %d: %s", tc.name, code, e)
		}
		a, _ := os.ReadFile(p(tc.name + ".te"))
		b, _ := os.ReadFile(p(tc.name + ".2.te"))
		if !bytes.Equal(a, b) {
			t.Errorf("%s: trace encoded from the CSV files differs from the live one (%d, %d bytes)", tc.name, len(b), len(a))
		}
	}
	// without --data-trace, the raw framing's data packets are errors
	code, _, e := rv(t, "decode", "--protocol", "etrace", "--image", elf, p("raw.te"), "--jsonl", p("x.jsonl"))
	js, _ := os.ReadFile(p("x.jsonl"))
	if code == 0 && !strings.Contains(string(js), "decode with --data-trace") {
		t.Errorf("decode without --data-trace: exit 0 and no gap naming the data packets: %s", e)
	}
	// flags that need --data-trace, and the encoder's input
	if code, _, e := rv(t, "encode", "--protocol", "etrace", "--image", elf, "--ingress-in", p("raw.csv"), "--data-fields", "addr", "-o", p("y.te")); code == 0 || !strings.Contains(e, "need --data-trace") {
		t.Errorf("--data-fields without --data-trace: exit %d: %s", code, e)
	}
	if code, _, e := rv(t, "encode", "--protocol", "etrace", "--data-trace", "--image", elf, "--ingress-in", p("raw.csv"), "-o", p("y.te")); code == 0 || !strings.Contains(e, "--data-ingress-in") {
		t.Errorf("--data-trace without accesses: exit %d: %s", code, e)
	}
	if code, _, e := rv(t, "run", "--trace", "etrace", "--data-filter", "kind=load", "-o", p("z.te"), elf); code == 0 || !strings.Contains(e, "--data-trace") {
		t.Errorf("--data-filter without --data-trace: exit %d: %s", code, e)
	}
	if code, _, e := rv(t, "run", "--trace", "etrace", "--data-trace", "--data-filter", "kind=lod", "-o", p("z.te"), elf); code == 0 || !strings.Contains(e, "lod") {
		t.Errorf("--data-filter kind=lod: exit %d: %s", code, e)
	}
}

// storeRecords returns the MW records of a full Tarmac file that are not
// those of an AMO (the instruction record before names it).
func storeRecords(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	re := regexp.MustCompile(`\bMW\d+ .*$`)
	amo := false
	for _, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, " IT ") {
			amo = strings.Contains(l, ": amo")
		}
		if m := re.FindString(l); m != "" && !amo {
			out = append(out, m)
		}
	}
	return out
}

// TestCLIDataFilter runs an example with an instruction filter and a data
// filter keeping the stores, decodes it with the same data filter, and
// checks that the MR/MW records decoded are the simulator's MW records
// of stores (not of AMOs), in both protocols.
func TestCLIDataFilter(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "sim-tests", "setjmp.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	for _, proto := range []string{"unified", "split"} {
		if code, _, e := rv(t, "run", "--trace", "etrace", "--data-trace", "--data-protocol", proto, "--filter", "priv=U", "--data-filter", "kind=store",
			"-o", p(proto+".te"), "--tarmac-full", p(proto+".sim.tarmac"), elf); code != 0 {
			t.Fatalf("%s: run: exit %d: %s", proto, code, e)
		}
		if code, _, e := rv(t, "decode", "--protocol", "etrace", "--data-trace", "--data-protocol", proto, "--data-filter", "kind=store",
			"--image", elf, p(proto+".te"), "--tarmac", p(proto+".dec.tarmac")); code != 0 {
			t.Fatalf("%s: decode: exit %d: %s", proto, code, e)
		}
		want := storeRecords(t, p(proto+".sim.tarmac"))
		got := memRecords(t, p(proto+".dec.tarmac"))
		if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s: %d MR/MW records decoded, the simulator wrote %d MW records, or they differ", proto, len(got), len(want))
		}
	}
}

// TestCLIDataTraceSplit runs an example with the split data protocol,
// decodes it to Tarmac with --data-protocol split and checks the MR/MW
// records against the simulator's full Tarmac; a decoder told the other
// protocol warns at the support packet; the data ingress CSV, which holds
// the unified protocol, is refused with split.
func TestCLIDataTraceSplit(t *testing.T) {
	elf := filepath.Join("..", "..", "examples", "sim-tests", "setjmp.elf")
	dir := t.TempDir()
	p := func(n string) string { return filepath.Join(dir, n) }
	if code, _, e := rv(t, "run", "--trace", "etrace", "--data-trace", "--data-protocol", "split", "-o", p("s.te"), "--tarmac-full", p("s.sim.tarmac"), elf); code != 0 {
		t.Fatalf("run: exit %d: %s", code, e)
	}
	if code, _, e := rv(t, "decode", "--protocol", "etrace", "--data-trace", "--data-protocol", "split", "--image", elf, p("s.te"), "--tarmac", p("s.dec.tarmac")); code != 0 {
		t.Fatalf("decode: exit %d: %s", code, e)
	}
	want, got := memRecords(t, p("s.sim.tarmac")), memRecords(t, p("s.dec.tarmac"))
	if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%d MR/MW records decoded, the simulator wrote %d, or they differ", len(got), len(want))
	}
	// the packet listing shows requests and load data with their lrid
	code, out, e := rv(t, "dump", "--protocol", "etrace", "--data-trace", "--data-protocol", "split", p("s.te"))
	if code != 0 || !strings.Contains(out, "load request lrid") || !strings.Contains(out, "-> load data of lrid") || strings.Contains(out, "error:") {
		t.Errorf("dump: exit %d, %d bytes of listing without split requests and load data, or with errors: %s", code, len(out), e)
	}
	code, out, e = rv(t, "decode", "--protocol", "etrace", "--data-trace", "--image", elf, p("s.te"), "--jsonl", p("u.jsonl"))
	js, _ := os.ReadFile(p("u.jsonl"))
	if !strings.Contains(string(js)+out+e, "split protocol") {
		t.Errorf("split trace decoded as unified: exit %d, no warning naming the protocol: %s", code, e)
	}
	// --data-ingress writes the split protocol's CSV
	// (TestCLIDataIngressSplitBytes encodes it back)
	if code, _, e := rv(t, "run", "--trace", "etrace", "--data-trace", "--data-protocol", "split", "--data-ingress", p("d.csv"), "-o", p("z.te"), elf); code != 0 {
		t.Errorf("--data-ingress with split: exit %d: %s", code, e)
	} else if d, _ := os.ReadFile(p("d.csv")); !strings.HasPrefix(string(d), "iaddr,dtype,daddr,dsize,data,lrid,lresp,lid,ldata,time\n") {
		t.Errorf("--data-ingress with split: not the split protocol's CSV: %.80q", d)
	}
	if code, _, e := rv(t, "run", "--trace", "etrace", "--data-trace", "--data-protocol", "both", "-o", p("z.te"), elf); code == 0 || !strings.Contains(e, "--data-protocol") {
		t.Errorf("--data-protocol both: exit %d: %s", code, e)
	}
}
