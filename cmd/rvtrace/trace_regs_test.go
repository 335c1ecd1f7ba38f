package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/etrace"
	"github.com/rvtrace/rvtrace/filter"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	tproto "github.com/rvtrace/rvtrace/protocol"
	"github.com/rvtrace/rvtrace/sim"
)

// directTrace runs prog on harts harts and encodes every hart's blocks
// into one stream the way rvtrace run did before the encoders were
// programmed through the Trace Control Interface registers: the encoder
// built directly from the configuration the flags give (the encoders'
// own configuration API), behind the filter stage when --filter,
// --trigger or --data-filter is given; with E-Trace --data-trace, the
// data trace encoder fed by the simulator's data trace interface. It is
// the reference the register path must match byte for byte.
func directTrace(t *testing.T, proto, prog string, harts int, args []string) []byte {
	t.Helper()
	fs := flag.NewFlagSet("direct", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var newEnc func(w io.Writer, img *image.Set, h int) (ingress.Sink, error)
	switch proto {
	case "ntrace":
		cfgOf := ntraceConfigFlags(fs)
		newEnc = func(w io.Writer, img *image.Set, h int) (ingress.Sink, error) {
			c, err := cfgOf()
			if err != nil {
				return nil, err
			}
			if h > 0 {
				c.SrcID = uint32(h)
			}
			return protocols["ntrace"].lib.NewEncoder(w, img, &tproto.Config{NTrace: c})
		}
	case "etrace":
		cfgOf := etraceConfigFlags(fs)
		newEnc = func(w io.Writer, img *image.Set, h int) (ingress.Sink, error) {
			c, err := cfgOf()
			if err != nil {
				return nil, err
			}
			if h > 0 {
				c.SrcID = uint32(h)
			}
			return protocols["etrace"].lib.NewEncoder(w, img, &tproto.Config{ETrace: c})
		}
	}
	withFilter := filter.Flags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%s %v: %v", proto, args, err)
	}
	m, err := sim.New(sim.Config{Harts: harts, MaxInstret: 2e6, Stdout: io.Discard, Stderr: io.Discard, Diagnostics: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.LoadELF(prog); err != nil {
		t.Fatal(err)
	}
	img := image.NewSet()
	if err := img.AddELF(prog); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	var w io.Writer = &out
	if proto == "etrace" && harts > 1 {
		w = etrace.NewFunnel(&out) // whole frames as made, as run writes them
	}
	for h := 0; h < harts; h++ {
		raw, err := newEnc(w, img, h)
		if err != nil {
			t.Fatalf("%s %v: %v", proto, args, err)
		}
		enc, err := withFilter(raw)
		if err != nil {
			t.Fatal(err)
		}
		if de, ok := raw.(*etrace.DataEncoder); ok {
			// the hart's data trace interface, through the filter stage
			// if there is one (it passes the accesses of the blocks it
			// traces that the data filters let through)
			// (a multi-access instruction's retirements folded in
			// front of the filter stage, as run does)
			f := ingress.NewFolder(enc, enc.(ingress.DataSink))
			enc = f
			port := sim.NewDataPort(m, f)
			if c := de.Config(); c.Split {
				if err := port.SetSplit(c.LRIDWidth); err != nil {
					t.Fatal(err)
				}
			}
			if err := m.SetObserver(h, port); err != nil {
				t.Fatal(err)
			}
			enc = port.Ingress(enc)
		}
		if err := m.SetIngress(h, enc); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Run(); err != nil {
		t.Fatalf("%s %v: direct run: %v", proto, args, err)
	}
	return out.Bytes()
}

// TestTraceRegisterPathBytes: rvtrace run --trace, which programs each
// hart's trace encoder component through its registers, writes the very
// bytes the encoders configured directly from the same options write, for
// every preset and the main options of both protocols, on one hart and
// on two.
func TestTraceRegisterPathBytes(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	sym := elfSyms(t, demo)
	fib, qs, main := sym("fib"), sym("quicksort.constprop.0"), sym("main")
	addrFilter := fmt.Sprintf("addr=%#x-%#x", fib, fib+0x40)
	trigger := fmt.Sprintf("on=%#x,off=%#x", qs, fib)
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "params.txt")
	if err := os.WriteFile(cfgFile, []byte("notime_p = 0\nnocontext_p = 0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	type tc struct {
		proto string
		prog  string
		harts int
		args  []string
	}
	var cases []tc
	nt := func(args ...string) { cases = append(cases, tc{"ntrace", demo, 1, args}) }
	et := func(args ...string) { cases = append(cases, tc{"etrace", demo, 1, args}) }
	nt()
	for _, p := range []string{"ref-btm", "ref-htm", "ref-htm-rpt", "ref-htm-cs8", "ref-htm-best", "best", "btm", "htm"} {
		nt("--preset", p)
		nt("--preset", p, "--timestamps", "--context", "--sync-mode", "1", "--sync-max", "3")
	}
	nt("--sync-mode", "2", "--sync-max", "6")
	nt("--sync-mode", "3", "--sync-max", "15", "--src-bits", "12", "--src-id", "4095")
	nt("--src-bits", "3", "--src-id", "5")
	nt("--seq-jump", "--all-jumps", "--extend-addr-msb")
	nt("--implicit-return", "1", "--stack-depth", "4")
	nt("--implicit-return", "2", "--partial-bits", "8")
	nt("--implicit-return", "3", "--repeat", "--hist-bits", "8", "--hrepeat-bits", "4")
	nt("--hist-patterns", "--repeat-branch", "--indirect-nohist")
	nt("--mode", "btm", "--icnt-bits", "6", "--icnt-sync", "--btype1")
	nt("--fifo-bytes", "80", "--drain-bytes", "1", "--drain-cycles", "4")
	nt("--start-sync", "2", "--itype-width", "3")
	nt("--filter", addrFilter)
	nt("--filter", "priv=M;"+addrFilter, "--filter", fmt.Sprintf("from=%#x,to=%#x", qs, main))
	nt("--trigger", trigger)
	nt("--preset", "best", "--filter", addrFilter, "--trigger", fmt.Sprintf("notify=%#x", fib))
	et()
	et("--full-address")
	et("--sijump", "--implicit-return", "counter")
	et("--implicit-return", "stack", "--branch-prediction", "--jump-target-cache")
	et("--all-modes")
	et("--resync", "64")
	et("--resync", "16", "--context")
	et("--config", cfgFile, "--encap", "utdd", "--src-bits", "2", "--src-id", "1", "--type-field", "--timestamp-bytes", "4")
	et("--etrace-version", "0.026", "--all-modes")
	et("--filter", addrFilter)
	et("--trigger", trigger, "--branch-prediction")
	vvadd := filepath.Join("..", "..", "..", "shared", "corpus", "ntrace-refcode", "elf", "mt-vvadd.riscv")
	if _, err := os.Stat(vvadd); err == nil {
		cases = append(cases,
			tc{"ntrace", vvadd, 2, []string{"--preset", "best", "--src-bits", "1"}},
			tc{"ntrace", vvadd, 2, []string{"--preset", "ref-btm", "--src-bits", "2", "--timestamps"}},
			tc{"etrace", vvadd, 2, []string{"--encap", "utdd", "--src-bits", "1", "--all-modes"}})
	} else {
		t.Logf("corpus absent (%v): the two-hart cases are left out", err)
	}
	for i, c := range cases {
		want := directTrace(t, c.proto, c.prog, c.harts, c.args)
		out := filepath.Join(dir, fmt.Sprintf("%d.trace", i))
		args := append([]string{"run", "-q", "--max-instret", "2000000", "--harts", fmt.Sprint(c.harts), "--trace", c.proto, "-o", out}, c.args...)
		args = append(args, c.prog)
		code, _, stderr := rv(t, args...)
		if code != 0 {
			t.Errorf("%s %v: exit %d: %s", c.proto, c.args, code, stderr)
			continue
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if len(want) < 64 {
			t.Errorf("%s %v: the direct trace has %d bytes only", c.proto, c.args, len(want))
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s %v on %d harts: the register path's %d bytes differ from the direct encoder's %d at byte %d",
				c.proto, c.args, c.harts, len(got), len(want), firstDiffByte(got, want))
		}
	}
}

// elfSyms returns a function giving the address of a symbol of the ELF
// file prog (the test fails on a symbol it does not have).
func elfSyms(t *testing.T, prog string) func(name string) uint64 {
	t.Helper()
	img := image.NewSet()
	if err := img.AddELF(prog); err != nil {
		t.Fatal(err)
	}
	return func(name string) uint64 {
		a, ok := img.Lookup(name)
		if !ok {
			t.Fatalf("%s has no %s", prog, name)
		}
		return a
	}
}

// TestTraceRegisterFieldErrors: an option whose value the register field
// does not keep is an error naming the option and the field, with a
// non-zero exit and no trace, never a silently changed value.
func TestTraceRegisterFieldErrors(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--trace", "ntrace", "--sync-mode", "1", "--sync-max", "20"}, []string{"--sync-max", "trTeInstSyncMax does not keep 20"}},
		{[]string{"--trace", "ntrace", "--sync-mode", "5"}, []string{"--sync-mode", "trTeInstSyncMode does not keep 5"}},
		{[]string{"--trace", "ntrace", "--src-bits", "13"}, []string{"--src-bits", "trTeSrcBits does not keep 13"}},
		{[]string{"--trace", "ntrace", "--src-bits", "2", "--src-id", "4"}, []string{"--src-id", "trTeSrcID does not keep 4"}},
		{[]string{"--trace", "ntrace", "--implicit-return", "5"}, []string{"--implicit-return", "trTeInstImplicitReturnMode does not keep 5"}},
		{[]string{"--trace", "ntrace", "--filter", "impdef=0x10000000000/0x10000000000"}, []string{"--filter", "trTeFilterMatchValueImpdef"}},
		{[]string{"--trace", "etrace", "--resync", "100"}, []string{"--resync", "trTeInstSyncMax", "not 2^(trTeInstSyncMax+4)"}},
		{[]string{"--trace", "etrace", "--resync", "1048576"}, []string{"--resync", "trTeInstSyncMax does not keep 16"}},
		{[]string{"--trace", "etrace", "--encap", "utdd", "--src-bits", "14"}, []string{"--src-bits", "trTeSrcBits does not keep 14"}},
	} {
		out := filepath.Join(dir, "x.trace")
		args := append([]string{"run", "-q", "--max-instret", "100000", "-o", out}, tc.args...)
		code, _, stderr := rv(t, append(args, demo)...)
		if code == 0 {
			t.Errorf("%v: exit 0", tc.args)
		}
		for _, w := range tc.want {
			if !strings.Contains(stderr, w) {
				t.Errorf("%v: %q does not say %q", tc.args, stderr, w)
			}
		}
		if fi, err := os.Stat(out); err == nil && fi.Size() > 0 {
			t.Errorf("%v: %d bytes of trace written", tc.args, fi.Size())
		}
		os.Remove(out)
	}
	// encode takes the same path
	code, _, stderr := rv(t, "encode", "--protocol", "ntrace", "--image", demo, "--pcs-in", filepath.Join("..", "..", "examples", "analysis", "calls.pcs.gz"),
		"--sync-mode", "1", "--sync-max", "16", "-o", filepath.Join(dir, "e.nex"))
	if code == 0 || !strings.Contains(stderr, "--sync-max") {
		t.Errorf("encode --sync-max 16: exit %d: %s", code, stderr)
	}
}

// TestEncodeRegisterPathBytes: rvtrace encode, whose encoder is the
// component programmed through its registers too, writes the bytes of the
// encoder configured directly, from the same ingress CSV.
func TestEncodeRegisterPathBytes(t *testing.T) {
	demo := filepath.Join("..", "..", "examples", "demo", "demo.elf")
	dir := t.TempDir()
	csv := filepath.Join(dir, "demo.csv")
	if code, _, e := rv(t, "run", "-q", "--max-instret", "60000", "--ingress", csv, demo); code != 1 {
		t.Fatalf("run --ingress: exit %d: %s", code, e)
	}
	for _, tc := range []struct {
		proto string
		args  []string
	}{
		{"ntrace", []string{"--preset", "best"}},
		{"ntrace", []string{"--preset", "ref-btm", "--timestamps", "--sync-mode", "2", "--sync-max", "5"}},
		{"ntrace", []string{"--filter", "priv=M", "--implicit-return", "2"}},
		{"etrace", []string{"--all-modes", "--resync", "256"}},
		{"etrace", []string{"--encap", "utdd", "--src-bits", "4", "--src-id", "9", "--timestamp-bytes", "2"}},
	} {
		// the direct encoder, fed by the encode command's own source
		startFiles(io.Discard) // (the run's output is now an input)
		fs := flag.NewFlagSet("direct", flag.ContinueOnError)
		loadImage := imageFlags(fs)
		openSource := sourceFlags(fs)
		var newEnc func(w io.Writer, img *image.Set) (ingress.Sink, error)
		if tc.proto == "ntrace" {
			cfgOf := ntraceConfigFlags(fs)
			newEnc = func(w io.Writer, img *image.Set) (ingress.Sink, error) {
				c, err := cfgOf()
				if err != nil {
					return nil, err
				}
				return protocols["ntrace"].lib.NewEncoder(w, img, &tproto.Config{NTrace: c})
			}
		} else {
			cfgOf := etraceConfigFlags(fs)
			newEnc = func(w io.Writer, img *image.Set) (ingress.Sink, error) {
				c, err := cfgOf()
				if err != nil {
					return nil, err
				}
				return protocols["etrace"].lib.NewEncoder(w, img, &tproto.Config{ETrace: c})
			}
		}
		withFilter := filter.Flags(fs)
		if err := fs.Parse(append([]string{"--image", demo, "--ingress-in", csv}, tc.args...)); err != nil {
			t.Fatal(err)
		}
		img, err := loadImage()
		if err != nil {
			t.Fatal(err)
		}
		src, closer, err := openSource(img)
		if err != nil {
			t.Fatal(err)
		}
		var want bytes.Buffer
		enc, err := newEnc(&want, img)
		if err != nil {
			t.Fatal(err)
		}
		if enc, err = withFilter(enc); err != nil {
			t.Fatal(err)
		}
		if _, err := pump(src, enc, nil, "direct"); err != nil {
			t.Fatal(err)
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		closer.Close()
		out := filepath.Join(dir, "out")
		args := append([]string{"encode", "-q", "--protocol", tc.proto, "--image", demo, "--ingress-in", csv, "-o", out}, tc.args...)
		if code, _, e := rv(t, args...); code != 0 {
			t.Fatalf("%v: exit %d: %s", tc.args, code, e)
		}
		got, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		if want.Len() < 100 || !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s %v: encode wrote %d bytes, the direct encoder %d", tc.proto, tc.args, len(got), want.Len())
		}
	}
}
