package pmu

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Report is the counts of one run: what rvtrace run --pmu prints as a
// table and --pmu-json writes.
type Report struct {
	Seconds float64      `json:"seconds"`
	MIPS    float64      `json:"mips"`
	Harts   []HartCounts `json:"harts"`
	Model   *Config      `json:"model,omitempty"`
}

// HartCounts is the counts of one hart. Events holds every event the
// model counted; an event it cannot count in this run is absent from
// Events and named in NotSupported instead (never counted as 0).
type HartCounts struct {
	Hart         int               `json:"hart"`
	Instructions uint64            `json:"instructions"`
	Cycles       uint64            `json:"cycles"`
	IPC          float64           `json:"ipc"`
	Events       map[string]uint64 `json:"events,omitempty"`
	NotSupported []string          `json:"not_supported,omitempty"`
	Firmware     map[string]uint64 `json:"firmware,omitempty"`
}

// TLBEvents lists the dense events that need address translation: a run
// without it modelled (Linux user mode) cannot count them.
func TLBEvents() []int {
	var out []int
	for i := 1; i < NumDense; i++ {
		if !Supported(i) {
			continue
		}
		n := DenseName(i)
		if strings.HasPrefix(n, "dTLB-") || strings.HasPrefix(n, "iTLB-") || i == Dense(RawPageWalkCycles) {
			out = append(out, i)
		}
	}
	return out
}

// NewHartCounts returns the counts of hart h from model m (nil when the
// run had no event model: then every model event is not supported);
// the dense events in unsupported are reported as not supported too.
func NewHartCounts(h int, instret, cycles uint64, m *Model, unsupported []int) HartCounts {
	hc := HartCounts{Hart: h, Instructions: instret, Cycles: cycles, IPC: ratio(instret, cycles),
		Events: map[string]uint64{}}
	skip := map[int]bool{}
	for _, i := range unsupported {
		skip[i] = true
	}
	for i := 1; i < NumDense; i++ {
		if !Supported(i) {
			continue
		}
		if m == nil || skip[i] {
			hc.NotSupported = append(hc.NotSupported, DenseName(i))
			continue
		}
		hc.Events[DenseName(i)] = m.Total(i)
	}
	hc.Events["cycles"], hc.Events["instructions"], hc.Events["ref-cycles"] = cycles, instret, cycles
	return hc
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Thousands formats n with a comma between groups of three digits, as
// perf stat prints counts.
func Thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// Table layout, as perf stat's: the count right-aligned in countWidth
// columns, the event name from column nameCol, the comment ("# ...")
// from column commentCol.
const (
	countWidth = 18
	nameWidth  = 28
	// NameColumn is the column (0-based) where event names start.
	NameColumn = countWidth + 6
	// CommentColumn is the column (0-based) where comments start.
	CommentColumn = NameColumn + nameWidth + 2
)

// tableRows lists the events of the table in perf stat's order, each
// with the event its percentage comment divides by and what it says.
var tableRows = []struct{ name, of, what string }{
	{"stalled-cycles-frontend", "cycles", "frontend cycles idle"},
	{"stalled-cycles-backend", "cycles", "backend cycles idle"},
	{"branches", "", ""},
	{"branch-misses", "branches", "of all branches"},
	{"L1-icache-loads", "", ""},
	{"L1-icache-load-misses", "L1-icache-loads", "of all L1-icache accesses"},
	{"L1-dcache-loads", "", ""},
	{"L1-dcache-load-misses", "L1-dcache-loads", "of all L1-dcache loads"},
	{"L1-dcache-stores", "", ""},
	{"L1-dcache-store-misses", "L1-dcache-stores", "of all L1-dcache stores"},
	{"cache-references", "", ""},
	{"cache-misses", "cache-references", "of all cache refs"},
	{"dTLB-loads", "", ""},
	{"dTLB-load-misses", "dTLB-loads", "of all dTLB loads"},
	{"iTLB-loads", "", ""},
	{"iTLB-load-misses", "iTLB-loads", "of all iTLB loads"},
	{"bus-cycles", "", ""},
	{"loads", "", ""},
	{"stores", "", ""},
	{"calls", "", ""},
	{"returns", "", ""},
	{"exceptions", "", ""},
	{"interrupts", "", ""},
}

// WriteTable prints the perf-stat-like table: per hart, cycles,
// instructions with the IPC, the model's events with their ratios, the
// firmware events that occurred; an event not counted in this run reads
// <not supported>.
func (r Report) WriteTable(w io.Writer) error {
	var b strings.Builder
	line := func(count, name, comment string) {
		s := fmt.Sprintf("%*s      %s", countWidth, count, name)
		if comment != "" {
			s = fmt.Sprintf("%-*s%s", CommentColumn, s+"  ", comment)
		}
		b.WriteString(strings.TrimRight(s, " ") + "\n")
	}
	for _, h := range r.Harts {
		notSup := map[string]bool{}
		for _, n := range h.NotSupported {
			notSup[n] = true
		}
		fmt.Fprintf(&b, "\n Performance counter stats for hart %d:\n\n", h.Hart)
		line(Thousands(h.Cycles), "cycles", "")
		line(Thousands(h.Instructions), "instructions", fmt.Sprintf("#  %5.2f  insn per cycle", h.IPC))
		for _, row := range tableRows {
			v, ok := h.Events[row.name]
			if !ok || notSup[row.name] {
				line("<not supported>", row.name, "")
				continue
			}
			comment := ""
			if row.of != "" {
				if d, ok := h.Events[row.of]; ok && d != 0 {
					comment = fmt.Sprintf("#  %5.2f%% %s", 100*ratio(v, d), row.what)
				}
			}
			line(Thousands(v), row.name, comment)
		}
		for c := 0; c < NumFirmwareEvents; c++ {
			n := FirmwareName(c)
			if v := h.Firmware[n]; v != 0 {
				line(Thousands(v), n, "")
			}
		}
	}
	fmt.Fprintf(&b, "\n%*.6f      seconds simulated at %.1f M instructions/s\n\n", countWidth, r.Seconds, r.MIPS)
	_, err := io.WriteString(w, b.String())
	return err
}
