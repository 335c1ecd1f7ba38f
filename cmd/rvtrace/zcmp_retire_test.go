package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// ingressLines reads an ingress CSV written by run (one instruction per
// line) as its header and lines of fields.
func ingressLines(t *testing.T, path string) (map[string]int, [][]string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	col := map[string]int{}
	for i, h := range strings.Split(lines[0], ",") {
		col[h] = i
	}
	var out [][]string
	for _, l := range lines[1:] {
		out = append(out, strings.Split(l, ","))
	}
	return col, out
}

// hexList reads a file of hexadecimal numbers, one a line (a PC list, or
// a column).
func hexList(t *testing.T, path string) []uint64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []uint64
	for _, f := range strings.Fields(string(b)) {
		v, err := strconv.ParseUint(strings.TrimPrefix(f, "0x"), 16, 64)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, v)
	}
	return out
}

// memRecordsIn returns the MR/MW records of a Tarmac file, without times
// and instructions, whose address is in [lo, hi), of the kinds given
// ("MR", "MW" or both).
func memRecordsIn(t *testing.T, path string, lo, hi uint64, kinds string) []string {
	t.Helper()
	var out []string
	for _, r := range instMemRecords(t, path) {
		f := strings.Fields(r) // (pc), MWn, address, value
		if len(f) == 4 {
			f = f[1:]
		}
		a, _ := strconv.ParseUint(f[1], 16, 64)
		if a >= lo && a < hi && strings.Contains(kinds, f[0][:2]) {
			out = append(out, strings.Join(f, " "))
		}
	}
	return out
}

// TestCLIMultiAccessRetire: with data trace, run retires a multi-access
// instruction (a Zcmp push or pop of several registers, and by the same
// rule a cbo.zero, which the simulator makes as eight stores) once per
// access on the ingress port, as E-Trace's "Data Trace Interface
// requirements" require: in the ingress CSV the instruction is that many
// lines with its address, itype 0 but the last (13 for a pop-return), and
// the data ingress CSV has its accesses one per line, as many. For the
// Zcmp and Zicboz programs, RV32 and RV64, unified and split protocols,
// with merged blocks and one block per instruction:
//   - the trace decodes to the PCs the simulator retired (each instruction
//     once) and to its MR/MW records, one for one;
//   - encode from the two CSV files gives the run's bytes, and so do the
//     same CSV files with each instruction retired once (the files run
//     wrote before it followed the rule: the ingress lines folded, the
//     data file as it is);
//   - encode from the ingress CSV alone (no data trace), E-Trace and
//     N-Trace, decodes to the run's PCs;
//   - an N-Trace run writing the data trace interface (--data-ingress:
//     N-Trace has no data trace of its own) makes the bytes of a run
//     without it, the CSV files the retirements;
//   - data filters (kind, data address) decode to the simulator's records
//     they select; instruction address filters ending or starting in a
//     function with a push and a pop-return decode without a warning to
//     the simulator's records of the instructions traced;
//   - the traces run made before it followed the rule (committed,
//     examples/sim-tests/zcmp/zcmp64-*-once.te) are the bytes run makes
//     now, and decode the same.
func TestCLIMultiAccessRetire(t *testing.T) {
	dir := t.TempDir()
	zdir := filepath.Join("..", "..", "examples", "sim-tests", "zcmp")
	for _, prog := range []string{"zcmp", "cboz"} {
		for _, xlen := range []int{32, 64} {
			elf := filepath.Join(zdir, fmt.Sprintf("%s%d.elf", prog, xlen))
			for _, dp := range []string{"unified", "split"} {
				name := fmt.Sprintf("%s%d %s", prog, xlen, dp)
				n := func(s string) string { return filepath.Join(dir, fmt.Sprintf("%s%d.%s.%s", prog, xlen, dp, s)) }
				data := []string{"--data-trace", "--data-protocol", dp}
				// merged blocks
				runArgs := append([]string{"run", "-q", "--max-instret", "100000", "--trace", "etrace", "-o", n("te"),
					"--tarmac-full", n("sim.tarmac"), "--pcs", n("run.pcs")}, data...)
				if code, _, e := rv(t, append(runArgs, elf)...); code != 0 {
					t.Fatalf("%s: run: exit %d: %s", name, code, e)
				}
				checkDecoded(t, name, elf, n("te"), data, n("run.pcs"), n("sim.tarmac"), n("dec"))
				if xlen == 64 && prog == "zcmp" {
					old, err := os.ReadFile(filepath.Join(zdir, "zcmp64-"+dp+"-once.te"))
					if err != nil {
						t.Fatal(err)
					}
					if now, _ := os.ReadFile(n("te")); !bytes.Equal(old, now) {
						t.Errorf("%s: the trace differs from the one run made retiring each instruction once", name)
					}
					checkDecoded(t, name+" (old trace)", elf, filepath.Join(zdir, "zcmp64-"+dp+"-once.te"), data, n("run.pcs"), n("sim.tarmac"), n("olddec"))
				}
				// one block per instruction, with the CSV files
				runArgs = append([]string{"run", "-q", "--max-instret", "100000", "--trace", "etrace", "-o", n("pi.te"),
					"--tarmac-full", n("pi.sim.tarmac"), "--pcs", n("pi.run.pcs"), "--ingress", n("csv"), "--data-ingress", n("dcsv")}, data...)
				if code, _, e := rv(t, append(runArgs, elf)...); code != 0 {
					t.Fatalf("%s: run --ingress: exit %d: %s", name, code, e)
				}
				checkDecoded(t, name+" per instruction", elf, n("pi.te"), data, n("pi.run.pcs"), n("pi.sim.tarmac"), n("pi.dec"))
				checkRetireCSV(t, name, prog, n("csv"), n("dcsv"), n("pi.run.pcs"), dp == "unified", n("once.csv"))
				live, _ := os.ReadFile(n("pi.te"))
				for _, in := range []string{n("csv"), n("once.csv")} {
					if code, _, e := rv(t, append([]string{"encode", "--protocol", "etrace", "--image", elf, "--ingress-in", in,
						"--data-ingress-in", n("dcsv"), "-o", n("enc.te")}, data...)...); code != 0 {
						t.Fatalf("%s: encode %s: exit %d: %s", name, filepath.Base(in), code, e)
					}
					if b, _ := os.ReadFile(n("enc.te")); len(live) == 0 || !bytes.Equal(b, live) {
						t.Errorf("%s: encoded from %s and the data CSV: %d bytes, not the run's %d", name, filepath.Base(in), len(b), len(live))
					}
				}
				if dp == "split" {
					continue
				}
				// N-Trace while the data trace interface is written: the
				// encoder sees each instruction once (the bytes of a run
				// without it), the ingress CSV the retirements
				if code, _, e := rv(t, "run", "-q", "--max-instret", "100000", "--trace", "ntrace", "-o", n("nt"), elf); code != 0 {
					t.Fatalf("%s: run --trace ntrace: exit %d: %s", name, code, e)
				}
				if code, _, e := rv(t, "run", "-q", "--max-instret", "100000", "--trace", "ntrace", "-o", n("nt2"),
					"--ingress", n("nt.csv"), "--data-ingress", n("nt.dcsv"), "--pcs", n("nt.run.pcs"), elf); code != 0 {
					t.Fatalf("%s: run --trace ntrace --data-ingress: exit %d: %s", name, code, e)
				}
				checkRetireCSV(t, name+" with N-Trace", prog, n("nt.csv"), n("nt.dcsv"), n("nt.run.pcs"), true, n("nt.once.csv"))
				a, _ := os.ReadFile(n("nt"))
				if b, _ := os.ReadFile(n("nt2")); len(a) == 0 || !bytes.Equal(a, b) {
					t.Errorf("%s: the N-Trace run with the data trace interface written differs from the run without", name)
				}
				// the ingress CSV alone, without data trace
				for _, proto := range []string{"etrace", "ntrace"} {
					if code, _, e := rv(t, "encode", "--protocol", proto, "--image", elf, "--ingress-in", n("csv"), "-o", n("nodata")); code != 0 {
						t.Fatalf("%s: encode --protocol %s without data: exit %d: %s", name, proto, code, e)
					}
					if code, _, e := rv(t, "decode", "--protocol", proto, "--image", elf, n("nodata"), "--pcs", n("nodata.pcs")); code != 0 {
						t.Fatalf("%s: decode --protocol %s without data: exit %d: %s", name, proto, code, e)
					}
					a, _ := os.ReadFile(n("pi.run.pcs"))
					if b, _ := os.ReadFile(n("nodata.pcs")); !bytes.Equal(a, b) {
						t.Errorf("%s: %s encoded from the ingress CSV alone does not decode to the run's PCs", name, proto)
					}
				}
			}
			if prog == "zcmp" {
				checkInstFilter(t, elf, xlen, filepath.Join(dir, fmt.Sprintf("zcmp%d.ifilter", xlen)))
			}
			// data filters: the stores; the accesses to the stack (push
			// and pop, paired by address alone)
			sp := map[int][2]uint64{32: {0x80002000, 0x80002800}, 64: {0x80002000, 0x80002800}}[xlen]
			for _, c := range []struct {
				filter string
				lo, hi uint64
				kinds  string
			}{
				{"kind=store", 0, ^uint64(0), "MW"},
				{fmt.Sprintf("daddr=%#x-%#x", sp[0], sp[1]), sp[0], sp[1], "MRMW"},
			} {
				name := fmt.Sprintf("%s%d --data-filter %s", prog, xlen, c.filter)
				n := func(s string) string { return filepath.Join(dir, fmt.Sprintf("%s%d.filter.%s", prog, xlen, s)) }
				data := []string{"--data-trace", "--data-filter", c.filter}
				if code, _, e := rv(t, append(append([]string{"run", "-q", "--max-instret", "100000", "--trace", "etrace", "-o", n("te"),
					"--tarmac-full", n("sim.tarmac")}, data...), elf)...); code != 0 {
					t.Fatalf("%s: run: exit %d: %s", name, code, e)
				}
				if code, _, e := rv(t, append([]string{"decode", "--protocol", "etrace", "--image", elf, n("te"), "--tarmac", n("dec.tarmac")}, data...)...); code != 0 {
					t.Fatalf("%s: decode: exit %d: %s", name, code, e)
				}
				want, got := memRecordsIn(t, n("sim.tarmac"), c.lo, c.hi, c.kinds), memRecordsIn(t, n("dec.tarmac"), 0, ^uint64(0), "MRMW")
				if len(want) < 8 || strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s: %d records decoded, the simulator's selected are %d, or they differ", name, len(got), len(want))
				}
			}
		}
	}
}

// checkDecoded decodes trace (made with the data trace options data) and
// compares its PCs and MR/MW records with the simulator's.
func checkDecoded(t *testing.T, name, elf, trace string, data []string, runPCs, simTarmac, out string) {
	t.Helper()
	code, _, e := rv(t, append([]string{"decode", "--protocol", "etrace", "--image", elf, trace,
		"--pcs", out + ".pcs", "--tarmac", out + ".tarmac"}, data...)...)
	if code != 0 || strings.Contains(e, "warning") || strings.Contains(e, "gap at") {
		t.Fatalf("%s: decode: exit %d: %s", name, code, e)
	}
	a, _ := os.ReadFile(runPCs)
	if b, _ := os.ReadFile(out + ".pcs"); len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("%s: the decoded PCs are not the %d the simulator retired", name, bytes.Count(a, []byte("\n")))
	}
	want, got := instMemRecords(t, simTarmac), instMemRecords(t, out+".tarmac")
	if len(want) < 50 || strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s: %d MR/MW records decoded, the simulator wrote %d, or they differ", name, len(got), len(want))
	}
}

// checkRetireCSV checks the retirements of an ingress CSV written with
// data trace against the PCs retired (runPCs) and the data ingress CSV
// (unified: its accesses), and writes the same file with each
// instruction retired once to once.
func checkRetireCSV(t *testing.T, name, prog, csv, dcsv, runPCs string, unified bool, once string) {
	t.Helper()
	col, lines := ingressLines(t, csv)
	var drows []uint64 // the iaddr of each access
	if unified {
		dcol, dl := ingressLines(t, dcsv)
		for _, l := range dl {
			v, _ := strconv.ParseUint(strings.TrimPrefix(l[dcol["iaddr"]], "0x"), 16, 64)
			drows = append(drows, v)
		}
	}
	addr := func(l []string) uint64 { v, _ := strconv.ParseUint(l[col["iaddr_0"]], 16, 64); return v }
	var folded []uint64
	var out bytes.Buffer
	b, _ := os.ReadFile(csv)
	out.WriteString(strings.SplitN(string(b), "\n", 2)[0] + "\n")
	multis, pops, d := 0, 0, 0
	for i := 0; i < len(lines); {
		x := addr(lines[i])
		k := 1
		for i+k < len(lines) && addr(lines[i+k]) == x {
			k++
		}
		folded = append(folded, x)
		last := lines[i+k-1]
		if k > 1 {
			multis++
			for _, l := range lines[i : i+k-1] {
				if l[col["itype_0"]] != "0" {
					t.Errorf("%s: a retirement of %#x but the last has itype %s", name, x, l[col["itype_0"]])
				}
			}
			if last[col["itype_0"]] == "13" {
				pops++
			}
			if prog == "cboz" && k != 8 {
				t.Errorf("%s: cbo.zero at %#x retired %d times, want 8", name, x, k)
			}
			if unified {
				for d < len(drows) && drows[d] != x {
					d++
				}
				n := 0
				for d < len(drows) && drows[d] == x {
					d++
					n++
				}
				if n != k {
					t.Errorf("%s: %#x retired %d times with %d accesses", name, x, k, n)
				}
			}
		}
		// retired once: the first line, with the last one's itype
		l := append([]string(nil), lines[i]...)
		l[col["itype_0"]] = last[col["itype_0"]]
		out.WriteString(strings.Join(l, ",") + "\n")
		i += k
	}
	if fmt.Sprint(folded) != fmt.Sprint(hexList(t, runPCs)) {
		t.Errorf("%s: the ingress CSV's instructions, each retired once, are not the PCs retired", name)
	}
	if want := map[string]int{"zcmp": 8, "cboz": 2}[prog]; multis < want || prog == "zcmp" && pops < 2 {
		t.Errorf("%s: %d instructions retired several times (%d pop-returns), want %d", name, multis, pops, want)
	}
	if err := os.WriteFile(once, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkInstFilter traces the Zcmp program with instruction address
// filters around f_popretz (a push of four registers, a cm.popretz) and
// f_popret: each decodes without a warning, and its MR/MW records are
// the simulator's, in order, every access of a push or pop traced with it
// (the filters see each instruction once, with all its accesses).
func checkInstFilter(t *testing.T, elf string, xlen int, out string) {
	t.Helper()
	sym := elfSyms(t, elf)
	fz, fp := sym("f_popretz"), sym("f_popret")
	for _, r := range [][2]uint64{{fz, fp}, {fz + 2, fp + 2}, {sym("_start"), fz + 2}} {
		f := fmt.Sprintf("addr=%#x-%#x", r[0], r[1])
		name := fmt.Sprintf("zcmp%d --filter %s", xlen, f)
		if code, _, e := rv(t, "run", "-q", "--max-instret", "100000", "--trace", "etrace", "--data-trace", "--filter", f,
			"-o", out+".te", "--tarmac-full", out+".sim.tarmac", elf); code != 0 {
			t.Fatalf("%s: run: exit %d: %s", name, code, e)
		}
		code, _, e := rv(t, "decode", "--protocol", "etrace", "--data-trace", "--image", elf, out+".te", "--tarmac", out+".dec.tarmac")
		if code != 0 || strings.Contains(e, "warning") || strings.Contains(e, "gap at") {
			t.Fatalf("%s: decode: exit %d: %s", name, code, e)
		}
		want, got := instMemRecords(t, out+".sim.tarmac"), instMemRecords(t, out+".dec.tarmac")
		i := 0
		for _, g := range got {
			for i < len(want) && want[i] != g {
				i++
			}
			if i == len(want) {
				t.Errorf("%s: decoded record %q is not among the simulator's, in order", name, g)
				break
			}
			i++
		}
		if len(got) < 4 {
			t.Errorf("%s: %d records decoded", name, len(got))
		}
	}
}
