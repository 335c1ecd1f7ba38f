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

	linux  bool // Linux user mode: no address translation to count TLB events in
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
			if err := m.SetObserver(h, p.tw); err != nil {
				return err
			}
		}
	}
	return nil
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
	rep := pmu.Report{Seconds: secs, MIPS: float64(res.Instret) / secs / 1e6}
	cfg := p.models[0].Config()
	rep.Model = &cfg
	var unsupported []int
	if p.linux {
		// Linux user mode runs without address translation: the TLBs
		// see nothing a real run would.
		unsupported = pmu.TLBEvents()
	}
	for h, hs := range res.Harts {
		var model *pmu.Model
		if h < len(p.models) {
			model = p.models[h]
		}
		ph := pmu.NewHartCounts(h, hs.Instret, hs.Cycles, model, unsupported)
		if fc := m.FirmwareCounts(h); fc != nil {
			ph.Firmware = map[string]uint64{}
			for c, n := range fc {
				ph.Firmware[pmu.FirmwareName(c)] = n
			}
		}
		rep.Harts = append(rep.Harts, ph)
	}
	if *p.table {
		keep(rep.WriteTable(stderr))
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
