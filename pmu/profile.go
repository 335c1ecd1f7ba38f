package pmu

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/google/pprof/profile"

	"github.com/rvtrace/rvtrace/analysis"
	"github.com/rvtrace/rvtrace/image"
)

// Counts are the per-location counts of a Profile.
type Counts struct {
	Instructions uint64
	Cycles       uint64
	L1IMisses    uint64
	L1DAccesses  uint64
	L1DMisses    uint64
	LLMisses     uint64
	Branches     uint64
	Mispredicts  uint64
}

func (c *Counts) add(o *Counts) {
	c.Instructions += o.Instructions
	c.Cycles += o.Cycles
	c.L1IMisses += o.L1IMisses
	c.L1DAccesses += o.L1DAccesses
	c.L1DMisses += o.L1DMisses
	c.LLMisses += o.LLMisses
	c.Branches += o.Branches
	c.Mispredicts += o.Mispredicts
}

// Profile attributes the model's per-instruction outcomes to program
// counters (Add is meant as the simulator's profile hook) and sums them
// per function.
type Profile struct {
	pcs map[uint64]*Counts
}

// NewProfile returns an empty profile.
func NewProfile() *Profile { return &Profile{pcs: map[uint64]*Counts{}} }

// Add accounts the instruction at pc that just retired: m.Last tells what
// it did, cycles what it cost.
func (p *Profile) Add(pc uint64, m *Model, cycles uint64) {
	c := p.pcs[pc]
	if c == nil {
		c = &Counts{}
		p.pcs[pc] = c
	}
	l := &m.Last
	c.Instructions++
	c.Cycles += cycles
	c.L1IMisses += b2u(l.L1IMiss)
	c.L1DAccesses += b2u(l.L1DAccess)
	c.L1DMisses += b2u(l.L1DMiss)
	c.LLMisses += b2u(l.LLMiss)
	c.Branches += b2u(l.Branch)
	c.Mispredicts += b2u(l.Mispredict)
}

// FuncCounts is one function's line of a profile.
type FuncCounts struct {
	Name string
	Counts
}

// Functions sums the counts per function; symbolize names the function
// of an address (ok false: the address is reported as "?").
func (p *Profile) Functions(symbolize func(pc uint64) (string, bool)) []FuncCounts {
	by := map[string]*FuncCounts{}
	for pc, c := range p.pcs {
		name, ok := symbolize(pc)
		if !ok {
			name = "?"
		}
		f := by[name]
		if f == nil {
			f = &FuncCounts{Name: name}
			by[name] = f
		}
		f.add(c)
	}
	out := make([]FuncCounts, 0, len(by))
	for _, f := range by {
		out = append(out, *f)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Cycles != out[j].Cycles {
			return out[i].Cycles > out[j].Cycles
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// WriteFunctions writes the per-function counts as a tab-separated table
// with a header line, heaviest functions (by cycles) first.
func WriteFunctions(w io.Writer, fs []FuncCounts) error {
	var b strings.Builder
	b.WriteString("function\tinstructions\tcycles\tipc\tl1i_misses\tl1d_accesses\tl1d_misses\tllc_misses\tbranches\tbranch_misses\n")
	for _, f := range fs {
		ipc := 0.0
		if f.Cycles > 0 {
			ipc = float64(f.Instructions) / float64(f.Cycles)
		}
		fmt.Fprintf(&b, "%s\t%d\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\n", f.Name, f.Instructions, f.Cycles,
			strconv.FormatFloat(ipc, 'f', 3, 64), f.L1IMisses, f.L1DAccesses, f.L1DMisses, f.LLMisses, f.Branches, f.Mispredicts)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// PprofSampleTypes are the sample types of Pprof's profiles, in order:
// the value of "go tool pprof -sample_index" that selects each count of
// Counts. cycles is the default.
var PprofSampleTypes = []string{"cycles", "instructions", "l1i_miss", "l1d_access", "l1d_miss",
	"llc_miss", "branches", "branch_miss"}

// Pprof returns the profile as a pprof profile built by
// analysis.PprofBuilder: one sample per instruction address with its
// counts (PprofSampleTypes; cycles by default), located by frames (its
// source frames, inlined functions included: analysis.ImageFrames) in the
// mapping of its ELF file (files, from image.Set.Files: path and build
// ID). "go tool pprof -top -sample_index=l1d_miss" then lists the
// functions by L1D misses, and -list, -disasm or -http's source view
// refine that per line and per instruction.
func (p *Profile) Pprof(frames analysis.FramesFunc, files []image.File) *profile.Profile {
	b := analysis.NewPprofBuilder(PprofSampleTypes, frames, files)
	pcs := make([]uint64, 0, len(p.pcs))
	for pc := range p.pcs {
		pcs = append(pcs, pc)
	}
	sort.Slice(pcs, func(i, j int) bool { return pcs[i] < pcs[j] })
	stack := make([]*profile.Location, 1)
	for _, pc := range pcs {
		c := p.pcs[pc]
		stack[0] = b.Location(pc)
		b.Add(stack, []int64{int64(c.Cycles), int64(c.Instructions), int64(c.L1IMisses), int64(c.L1DAccesses),
			int64(c.L1DMisses), int64(c.LLMisses), int64(c.Branches), int64(c.Mispredicts)})
	}
	return b.Profile()
}

// WritePprof writes the profile as a gzipped pprof protocol buffer (see
// Pprof), for "go tool pprof".
func (p *Profile) WritePprof(w io.Writer, frames analysis.FramesFunc, files []image.File) error {
	return p.Pprof(frames, files).Write(w)
}

// ParseConfig parses a model description: comma-separated items
// "l1i=SIZE/WAYS/LINE", "l1d=...", "ll=...", "itlb=ENTRIES/WAYS",
// "dtlb=...", "bp=ENTRIES/HISTORY/BTB/RAS", "lat=LL/MEM/WALK/MISPREDICT",
// "bus=BYTES" and "prefetch". Sizes accept K and M suffixes. Omitted
// items keep the defaults.
func ParseConfig(s string) (Config, error) {
	c := DefaultConfig()
	if strings.TrimSpace(s) == "" {
		return c, nil
	}
	for _, item := range strings.Split(s, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(item), "=")
		nums := func(n int) ([]int, error) {
			parts := strings.Split(v, "/")
			if len(parts) != n {
				return nil, fmt.Errorf("pmu: %s: want %d numbers separated by /", item, n)
			}
			out := make([]int, n)
			for i, p := range parts {
				mult := 1
				switch {
				case strings.HasSuffix(strings.ToUpper(p), "K"):
					mult, p = 1<<10, p[:len(p)-1]
				case strings.HasSuffix(strings.ToUpper(p), "M"):
					mult, p = 1<<20, p[:len(p)-1]
				}
				x, err := strconv.Atoi(p)
				if err != nil || x < 0 {
					return nil, fmt.Errorf("pmu: %s: bad number %q", item, p)
				}
				out[i] = x * mult
			}
			return out, nil
		}
		var n []int
		var err error
		switch strings.ToLower(k) {
		case "l1i", "l1d", "ll":
			if n, err = nums(3); err == nil {
				cc := CacheConfig{Size: n[0], Ways: n[1], LineSize: n[2]}
				switch strings.ToLower(k) {
				case "l1i":
					c.L1I = cc
				case "l1d":
					c.L1D = cc
				default:
					c.LL = cc
				}
			}
		case "itlb", "dtlb":
			if n, err = nums(2); err == nil {
				t := TLBConfig{Entries: n[0], Ways: n[1]}
				if strings.ToLower(k) == "itlb" {
					c.ITLB = t
				} else {
					c.DTLB = t
				}
			}
		case "bp":
			if n, err = nums(4); err == nil {
				c.Predictor = PredictorConfig{Entries: n[0], HistoryBits: n[1], BTBEntries: n[2], RASDepth: n[3]}
			}
		case "lat":
			if n, err = nums(4); err == nil {
				c.LLLatency, c.MemLatency, c.WalkLatency, c.MispredictPenalty = n[0], n[1], n[2], n[3]
			}
		case "bus":
			if n, err = nums(1); err == nil {
				c.BusWidth = n[0]
			}
		case "prefetch":
			c.Prefetch = true
		default:
			err = fmt.Errorf("pmu: unknown model item %q", item)
		}
		if err != nil {
			return c, err
		}
	}
	return c, c.Validate()
}
