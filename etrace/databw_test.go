package etrace

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/ingress"
	"github.com/rvtrace/rvtrace/sim"
)

var dataTable = flag.Bool("datatable", false, "TestDataBandwidth: print the data trace bandwidth table of PERFORMANCE.md")

// countWriter counts bytes.
type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// dataFan sends accesses and blocks to several encoders.
type dataFan []*DataEncoder

func (f dataFan) Access(a *ingress.Access) error {
	for _, e := range f {
		if err := e.Access(a); err != nil {
			return err
		}
	}
	return nil
}

func (f dataFan) Response(r *ingress.LoadResponse) error {
	for _, e := range f {
		if err := e.Response(r); err != nil {
			return err
		}
	}
	return nil
}

func (f dataFan) Block(b *ingress.Block) error {
	for _, e := range f {
		if err := e.Block(b); err != nil {
			return err
		}
	}
	return nil
}

func (f dataFan) Close() error {
	for _, e := range f {
		if err := e.Close(); err != nil {
			return err
		}
	}
	return nil
}

// TestDataBandwidth prints, with -datatable, the bandwidth of E-Trace
// data trace for the examples' programs and the corpus ELFs: each run on
// the simulator once, traced live by encoders in every data option side
// by side (E-Trace 2.0, delta addresses, raw framing).
//
//	go test ./etrace -run TestDataBandwidth -datatable -v -timeout 1h
func TestDataBandwidth(t *testing.T) {
	if !*dataTable {
		t.Skip("give -datatable")
	}
	progs, _ := filepath.Glob(filepath.Join("..", "examples", "sim-tests", "*.elf"))
	corpusELFs, _ := filepath.Glob(filepath.Join(corpus, "elf", "*.riscv"))
	sort.Strings(corpusELFs)
	progs = append(progs, corpusELFs...)
	type opt struct {
		name string
		data *DataConfig
	}
	opts := []opt{
		{"instructions only", nil},
		{"addr,data", &DataConfig{}},
		{"addr", &DataConfig{Fields: DataAddrOnly}},
		{"data", &DataConfig{Fields: DataValueOnly}},
		{"addr,data uncompressed", &DataConfig{NoCompress: true}},
		{"addr,data split", &DataConfig{Split: true}},
	}
	var b strings.Builder
	fmt.Fprintf(&b, "| program | instructions | accesses | instruction trace bits/instr |")
	for _, o := range opts[1:] {
		fmt.Fprintf(&b, " %s: bytes/access, bits/instr |", o.name)
	}
	b.WriteString("\n|---|---|---|---|" + strings.Repeat("---|", len(opts)-1) + "\n")
	fmt.Print(b.String()) // each row as it is measured
	b.Reset()
	var sumInstr, sumAcc uint64
	sumBytes := make([]int64, len(opts))
	for _, path := range progs {
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".riscv"), ".elf")
		if name == "pk" {
			continue // the proxy kernel alone
		}
		if name == "xrle" || name == "test_discon_branch_exception" {
			continue // they do not stop before the instruction limit here
		}
		kind, _, err := sim.ClassifyELF(path)
		if err != nil {
			t.Fatal(err)
		}
		img := image.NewSet()
		if err := img.AddELF(path); err != nil {
			t.Fatal(err)
		}
		m, err := sim.New(sim.Config{Stdout: io.Discard, Stderr: io.Discard, MaxInstret: 40_000_000})
		if err != nil {
			t.Fatal(err)
		}
		if kind == sim.LinuxUser {
			err = m.LoadLinuxELF(path, []string{path}, nil)
		} else {
			err = m.LoadELF(path)
		}
		if err != nil {
			t.Fatal(err)
		}
		cws := make([]*countWriter, len(opts))
		var fan, sfan dataFan // unified and split protocols
		var des []*DataEncoder
		var plain *Encoder
		var encs []*Encoder
		for i, o := range opts {
			cws[i] = &countWriter{}
			cfg := DefaultConfig()
			cfg.Data = o.data
			enc, err := NewEncoder(cws[i], cfg, img)
			if err != nil {
				t.Fatal(err)
			}
			encs = append(encs, enc)
			if o.data == nil {
				plain = enc
				continue
			}
			de, _ := NewDataEncoder(enc)
			des = append(des, de)
			if o.data.Split {
				sfan = append(sfan, de)
			} else {
				fan = append(fan, de)
			}
		}
		// one data port per protocol, the split one chained after the
		// unified one: both see every access
		port := sim.NewDataPort(m, fan)
		sport := sim.NewDataPort(m, sfan)
		if err := sport.SetSplit(3); err != nil {
			t.Fatal(err)
		}
		port.Next = sport
		if err := m.SetObserver(0, port); err != nil {
			t.Fatal(err)
		}
		if err := m.SetIngress(0, port.Ingress(sport.Ingress(instrAndData{plain, append(fan, sfan...)}))); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(); err != nil && !errors.Is(err, sim.ErrInstructionLimit) {
			var ge *sim.GuestError
			if !errors.As(err, &ge) {
				t.Fatalf("%s: %v", name, err)
			}
		}
		if err := port.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := sport.Flush(); err != nil {
			t.Fatal(err)
		}
		n := encs[0].Stats().Instructions
		acc := port.Accesses
		sumInstr += n
		sumAcc += acc
		fmt.Fprintf(&b, "| %s | %d | %d (%.0f%%) | %.3f |", name, n, acc, 100*float64(acc)/float64(n), float64(cws[0].n*8)/float64(n))
		for i := 1; i < len(opts); i++ {
			// per access of the interface (a split load is two packets)
			ds := des[i-1].Stats()
			fmt.Fprintf(&b, " %.2f, %.2f |", float64(ds.Bytes)/float64(max(acc, 1)), float64(cws[i].n*8)/float64(n))
		}
		b.WriteString("\n")
		fmt.Print(b.String())
		b.Reset()
		for i := range opts {
			sumBytes[i] += cws[i].n
		}
	}
	fmt.Fprintf(&b, "| **all** | %d | %d (%.0f%%) | %.3f |", sumInstr, sumAcc, 100*float64(sumAcc)/float64(sumInstr), float64(sumBytes[0]*8)/float64(sumInstr))
	for i := 1; i < len(opts); i++ {
		fmt.Fprintf(&b, " %.2f, %.2f |", float64(sumBytes[i]-sumBytes[0])/float64(sumAcc), float64(sumBytes[i]*8)/float64(sumInstr))
	}
	b.WriteString("\n")
	fmt.Print(b.String())
}

// instrAndData feeds the plain encoder and the data encoders the same
// blocks.
type instrAndData struct {
	plain *Encoder
	fan   dataFan
}

func (s instrAndData) Block(b *ingress.Block) error {
	if err := s.plain.Block(b); err != nil {
		return err
	}
	return s.fan.Block(b)
}

func (s instrAndData) Close() error {
	if err := s.plain.Close(); err != nil {
		return err
	}
	return s.fan.Close()
}

// TestDataCSRBandwidth prints, with -datatable, what CSR data trace
// (DataConfig.CSR) costs: the CSR test program and two corpus ELFs (pmp,
// CSR-heavy; coremark), each run on the simulator once and traced live
// by encoders with and without CSR accesses side by side (E-Trace 2.0,
// delta addresses, raw framing), with address and data and with address
// only. The CSR encoders' data packets are those of the others plus one
// CSR packet per retired Zicsr instruction (CSR packets have a
// compression state of their own, the te_inst packets are the same and
// the support packet is the same size, doptions bit 4 aside), so the
// bytes per CSR access are the difference.
//
//	go test ./etrace -run TestDataCSRBandwidth -datatable -v
func TestDataCSRBandwidth(t *testing.T) {
	if !*dataTable {
		t.Skip("give -datatable")
	}
	opts := []*DataConfig{
		nil, // instruction trace only
		{}, {CSR: true},
		{Fields: DataAddrOnly}, {Fields: DataAddrOnly, CSR: true},
	}
	fmt.Print("| program | instructions | accesses (loads, stores, atomics) | CSR accesses | instruction trace bits/instr |" +
		" addr,data: bytes/access, bits/instr | addr,data + CSR: bytes/access, bytes/CSR access, bits/instr |" +
		" addr: bytes/access, bits/instr | addr + CSR: bytes/access, bytes/CSR access, bits/instr |\n" +
		"|---|---|---|---|---|---|---|---|---|\n")
	for _, prog := range []string{csrProg, "pmp.riscv", "coremark.riscv"} {
		path, _ := simProgram(t, prog)
		img := image.NewSet()
		if err := img.AddELF(path); err != nil {
			t.Fatal(err)
		}
		m, err := sim.New(sim.Config{Stdout: io.Discard, Stderr: io.Discard, MaxInstret: 40_000_000})
		if err != nil {
			t.Fatal(err)
		}
		if err := m.LoadELF(path); err != nil {
			t.Fatal(err)
		}
		cws := make([]*countWriter, len(opts))
		des := make([]*DataEncoder, len(opts))
		var plain *Encoder
		var fan, cfan dataFan // without and with CSR accesses
		for i, d := range opts {
			cws[i] = &countWriter{}
			cfg := DefaultConfig()
			cfg.Data = d
			enc, err := NewEncoder(cws[i], cfg, img)
			if err != nil {
				t.Fatal(err)
			}
			if d == nil {
				plain = enc
				continue
			}
			des[i], _ = NewDataEncoder(enc)
			if d.CSR {
				cfan = append(cfan, des[i])
			} else {
				fan = append(fan, des[i])
			}
		}
		// one data port each, the CSR one chained after the other: both
		// see every access
		port := sim.NewDataPort(m, fan)
		cport := sim.NewDataPort(m, cfan)
		cport.TraceCSR = true
		port.Next = cport
		if err := m.SetObserver(0, port); err != nil {
			t.Fatal(err)
		}
		if err := m.SetIngress(0, port.Ingress(cport.Ingress(instrAndData{plain, append(fan, cfan...)}))); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(); err != nil && !errors.Is(err, sim.ErrInstructionLimit) {
			var ge *sim.GuestError
			if !errors.As(err, &ge) {
				t.Fatalf("%s: %v", prog, err)
			}
		}
		if err := port.Flush(); err != nil {
			t.Fatal(err)
		}
		if err := cport.Flush(); err != nil {
			t.Fatal(err)
		}
		n := plain.Stats().Instructions
		acc, csrs := port.Accesses, cport.Accesses-port.Accesses
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".riscv"), ".elf")
		fmt.Printf("| %s | %d | %d | %d | %.3f |", name, n, acc, csrs, float64(cws[0].n*8)/float64(n))
		for i := 1; i < len(opts); i += 2 {
			b0, b1 := des[i].Stats().Bytes, des[i+1].Stats().Bytes
			fmt.Printf(" %.2f, %.2f | %.2f, %.2f, %.2f |", float64(b0)/float64(max(acc, 1)), float64(cws[i].n*8)/float64(n),
				float64(b1)/float64(max(acc+csrs, 1)), float64(b1-b0)/float64(max(csrs, 1)), float64(cws[i+1].n*8)/float64(n))
			if cws[i+1].n-int64(b1) != cws[i].n-int64(b0) {
				t.Errorf("%s: the instruction trace with CSR accesses is %d bytes, without %d", name, cws[i+1].n-int64(b1), cws[i].n-int64(b0))
			}
		}
		fmt.Println()
	}
}
