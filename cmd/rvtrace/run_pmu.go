package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/rvtrace/rvtrace/analysis"
	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/pmu"
	"github.com/rvtrace/rvtrace/sim"
	"github.com/rvtrace/rvtrace/tarmac"
)

// runPMU holds the performance-counter and machine options of the run
// command (--pmu, --pmu-json, --pmu-model, --pmu-profile, --pmu-pprof,
// --tarmac-full, --machine, --firmware).
type runPMU struct {
	table   *bool
	events  *bool
	json    *string
	model   *string
	profile *string
	pprof   *string
	tarmac  *string
	machine *string
	fw      *string

	models []*pmu.Model
	prof   *pmu.Profile
	tw     *tarmac.Writer
}

const defaultOpenSBI = "/usr/lib/riscv64-linux-gnu/opensbi/generic/fw_jump.elf"

func pmuFlags(fs *flag.FlagSet) *runPMU {
	return &runPMU{
		table:   fs.Bool("pmu", false, "run with the event model and print a perf-stat-like table of the counts after the run"),
		events:  fs.Bool("pmu-events", false, "list every event with its SBI event_idx and exit"),
		json:    fs.String("pmu-json", "", "run with the event model and write the counts as JSON to `file` (- for stdout)"),
		model:   fs.String("pmu-model", "", "event model `spec`: l1i=32K/4/64,l1d=32K/8/64,ll=1M/16/64,itlb=32/32,dtlb=32/32,bp=4096/8/512/8,lat=12/60/20/6,bus=8,prefetch"),
		profile: fs.String("pmu-profile", "", "run with the event model and write per-function counts (TSV) of hart 0 to `file`"),
		pprof: fs.String("pmu-pprof", "", "run with the event model and write the per-instruction counts of hart 0 as a pprof profile to `file` "+
			"(e.g. OUT.pb.gz; go tool pprof -top -sample_index=l1d_miss OUT.pb.gz; sample types: "+strings.Join(pmu.PprofSampleTypes, ", ")+")"),
		tarmac:  fs.String("tarmac-full", "", "write a full Tarmac trace (instructions, registers, memory, traps) of the run to `file`"),
		machine: fs.String("machine", "bare", "bare: M-mode program with HTIF; sbi: S-mode program on the simulator's SBI firmware; virt: OpenSBI (--firmware) and an S-mode payload"),
		fw:      fs.String("firmware", defaultOpenSBI, "M-mode firmware of --machine virt (fw_jump.elf or fw_dynamic.elf; with --kernel the simulator's own SBI unless this is given)"),
	}
}

func (p *runPMU) modelOn() bool {
	return *p.table || *p.json != "" || *p.profile != "" || *p.pprof != "" || *p.model != ""
}

// listEvents writes the --pmu-events table.
func listEvents(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "EVENT_IDX\tEVENT_DATA\tNAME\tDESCRIPTION")
	for _, e := range pmu.Events() {
		data := "-"
		if e.Data != 0 {
			data = fmt.Sprintf("%#x", e.Data)
		}
		fmt.Fprintf(tw, "%#07x\t%s\t%s\t%s\n", uint32(e.Idx), data, e.Name, e.Desc)
	}
	return tw.Flush()
}

// load loads the program as --machine says.
func (p *runPMU) load(m *sim.Machine, prog string) (bool, error) {
	switch *p.machine {
	case "bare", "":
		return false, nil
	case "sbi":
		return true, m.LoadSBI(prog)
	case "virt":
		return true, m.LoadFirmware(*p.fw, prog)
	}
	return false, fmt.Errorf("--machine: unknown machine %q (bare, sbi, virt)", *p.machine)
}

// attach connects the event models, the profile and the Tarmac writer.
func (p *runPMU) attach(m *sim.Machine, img *image.Set) error {
	if p.modelOn() {
		cfg, err := pmu.ParseConfig(*p.model)
		if err != nil {
			return err
		}
		for h := 0; h < m.NumHarts(); h++ {
			pm, err := pmu.New(cfg)
			if err != nil {
				return err
			}
			if err := m.SetEventModel(h, pm); err != nil {
				return err
			}
			p.models = append(p.models, pm)
		}
		if *p.profile != "" || *p.pprof != "" {
			p.prof = pmu.NewProfile()
			if err := m.SetProfileHook(0, p.prof.Add); err != nil {
				return err
			}
		}
	}
	if *p.tarmac != "" {
		w, err := createOutput(*p.tarmac)
		if err != nil {
			return err
		}
		p.tw = tarmac.NewWriter(w, img, tarmac.WriterOptions{XLEN: m.XLEN()})
		p.tw.SetCloser(w)
		for h := 0; h < m.NumHarts(); h++ {
			if err := m.SetTracer(h, p.tw); err != nil {
				return err
			}
		}
	}
	return nil
}

// pmuReport is the JSON form of the counts.
type pmuReport struct {
	Seconds float64     `json:"seconds"`
	MIPS    float64     `json:"mips"`
	Harts   []pmuHart   `json:"harts"`
	Model   *pmu.Config `json:"model,omitempty"`
}

type pmuHart struct {
	Hart         int               `json:"hart"`
	Instructions uint64            `json:"instructions"`
	Cycles       uint64            `json:"cycles"`
	IPC          float64           `json:"ipc"`
	Events       map[string]uint64 `json:"events,omitempty"`
	Firmware     map[string]uint64 `json:"firmware,omitempty"`
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// finish writes the table, the JSON and the profile, and closes the
// Tarmac writer.
func (p *runPMU) finish(m *sim.Machine, res sim.Result, secs float64, img *image.Set) error {
	var firstErr error
	keep := func(err error) {
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if p.tw != nil {
		keep(p.tw.Close())
	}
	if !p.modelOn() {
		return firstErr
	}
	rep := pmuReport{Seconds: secs, MIPS: float64(res.Instret) / secs / 1e6}
	cfg := p.models[0].Config()
	rep.Model = &cfg
	for h, hs := range res.Harts {
		ph := pmuHart{Hart: h, Instructions: hs.Instret, Cycles: hs.Cycles, IPC: ratio(hs.Instret, hs.Cycles),
			Events: map[string]uint64{}}
		if h < len(p.models) {
			for i := 1; i < pmu.NumDense; i++ {
				if !pmu.Supported(i) {
					continue
				}
				ph.Events[pmu.DenseName(i)] = p.models[h].Total(i)
			}
			ph.Events["cycles"], ph.Events["instructions"], ph.Events["ref-cycles"] = hs.Cycles, hs.Instret, hs.Cycles
		}
		if fc := m.FirmwareCounts(h); fc != nil {
			ph.Firmware = map[string]uint64{}
			for c, n := range fc {
				ph.Firmware[pmu.FirmwareName(c)] = n
			}
		}
		rep.Harts = append(rep.Harts, ph)
	}
	if *p.table {
		keep(writePMUTable(stderr, rep))
	}
	if *p.json != "" {
		w, err := createOutput(*p.json)
		if err == nil {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			keep(enc.Encode(rep))
			keep(w.Close())
		}
		keep(err)
	}
	if p.prof != nil && *p.profile != "" {
		w, err := createOutput(*p.profile)
		if err == nil {
			fs := p.prof.Functions(func(pc uint64) (string, bool) {
				name, _, ok := img.Symbolize(pc)
				return name, ok
			})
			keep(pmu.WriteFunctions(w, fs))
			keep(w.Close())
		}
		keep(err)
	}
	if p.prof != nil && *p.pprof != "" {
		w, err := createOutput(*p.pprof)
		if err == nil {
			keep(p.prof.WritePprof(w, analysis.ImageFrames(img, func(pc uint64) string {
				name, _, _ := img.Symbolize(pc)
				return name
			}), img.Files()))
			keep(w.Close())
		}
		keep(err)
	}
	return firstErr
}

// writePMUTable prints the perf-stat-like summary.
func writePMUTable(w io.Writer, rep pmuReport) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', tabwriter.AlignRight)
	for _, h := range rep.Harts {
		e := h.Events
		fmt.Fprintf(tw, "\n Performance counter stats for hart %d:\t\t\t\n\n", h.Hart)
		line := func(name string, v uint64, note string) {
			fmt.Fprintf(tw, "%d\t  %s\t  %s\t\n", v, name, note)
		}
		pct := func(a, b uint64, what string) string {
			if b == 0 {
				return ""
			}
			return fmt.Sprintf("# %6.2f%% %s", 100*ratio(a, b), what)
		}
		line("cycles", h.Cycles, "")
		line("instructions", h.Instructions, fmt.Sprintf("# %6.2f insn per cycle", h.IPC))
		line("stalled-cycles-frontend", e["stalled-cycles-frontend"], pct(e["stalled-cycles-frontend"], h.Cycles, "frontend cycles idle"))
		line("stalled-cycles-backend", e["stalled-cycles-backend"], pct(e["stalled-cycles-backend"], h.Cycles, "backend cycles idle"))
		line("branches", e["branches"], "")
		line("branch-misses", e["branch-misses"], pct(e["branch-misses"], e["branches"], "of all branches"))
		line("L1-icache-loads", e["L1-icache-loads"], "")
		line("L1-icache-load-misses", e["L1-icache-load-misses"], pct(e["L1-icache-load-misses"], e["L1-icache-loads"], "of all L1-icache accesses"))
		line("L1-dcache-loads", e["L1-dcache-loads"], "")
		line("L1-dcache-load-misses", e["L1-dcache-load-misses"], pct(e["L1-dcache-load-misses"], e["L1-dcache-loads"], "of all L1-dcache loads"))
		line("L1-dcache-stores", e["L1-dcache-stores"], "")
		line("L1-dcache-store-misses", e["L1-dcache-store-misses"], pct(e["L1-dcache-store-misses"], e["L1-dcache-stores"], "of all L1-dcache stores"))
		line("cache-references", e["cache-references"], "")
		line("cache-misses", e["cache-misses"], pct(e["cache-misses"], e["cache-references"], "of all cache refs"))
		line("dTLB-loads", e["dTLB-loads"], "")
		line("dTLB-load-misses", e["dTLB-load-misses"], pct(e["dTLB-load-misses"], e["dTLB-loads"], "of all dTLB loads"))
		line("iTLB-loads", e["iTLB-loads"], "")
		line("iTLB-load-misses", e["iTLB-load-misses"], pct(e["iTLB-load-misses"], e["iTLB-loads"], "of all iTLB loads"))
		line("bus-cycles", e["bus-cycles"], "")
		for _, n := range []string{"loads", "stores", "calls", "returns", "exceptions", "interrupts"} {
			line(n, e[n], "")
		}
		for c := 0; c < pmu.NumFirmwareEvents; c++ {
			n := pmu.FirmwareName(c)
			if v := h.Firmware[n]; v != 0 {
				line(n, v, "")
			}
		}
	}
	fmt.Fprintf(tw, "\n%.6f\t  seconds simulated at %.1f M instructions/s\t\t\n\n", rep.Seconds, rep.MIPS)
	return tw.Flush()
}
