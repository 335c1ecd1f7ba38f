package tracectl

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// specField is one row of a register table of the Trace Control
// Interface specification.
type specField struct {
	hi, lo        uint8
	name          string // "" for a reserved range ("--") or an unnamed field
	access, reset string // the RW and Reset columns as written
}

// specReg is one register table of the specification.
type specReg struct {
	name   string // e.g. trTeFilter__i__Control
	offset uint32 // of unit 0 for the filter and comparator registers
	line   int
	fields []specField
}

// readSpecRegs parses every ".*Register: NAME ..." table of the
// specification's AsciiDoc source: rows of five cells (Bit, Field,
// Description, RW, Reset), a description running over several lines.
func readSpecRegs(t *testing.T, path string) []specReg {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	title := regexp.MustCompile(`^\.\*Register: (?:\S+ )?(tr[A-Za-z_]+)\s*:`)
	offset := regexp.MustCompile(`\+\s*(0x[0-9A-Fa-f]+)`)
	bitsRe := regexp.MustCompile(`^(\d+)(?::(\d+))?$`)
	var regs []specReg
	for i := 0; i < len(lines); i++ {
		m := title.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		r := specReg{name: m[1], line: i + 1}
		o := offset.FindStringSubmatch(lines[i])
		if o == nil {
			t.Fatalf("%s:%d: no offset in %q", path, i+1, lines[i])
		}
		off, _ := strconv.ParseUint(o[1], 0, 32)
		r.offset = uint32(off)
		j := i + 1
		for j < len(lines) && !strings.HasPrefix(lines[j], "|===") {
			j++
		}
		k := j + 1
		for k < len(lines) && !strings.HasPrefix(lines[k], "|===") {
			k++
		}
		if k >= len(lines) {
			t.Fatalf("%s:%d: %s: no table", path, i+1, r.name)
		}
		cells := strings.Split(strings.Join(lines[j+1:k], "\n"), "|")[1:]
		if len(cells)%5 != 0 || len(cells) < 10 {
			t.Fatalf("%s:%d: %s: %d cells, not rows of 5", path, i+1, r.name, len(cells))
		}
		for c := 5; c < len(cells); c += 5 { // after the header row
			bm := bitsRe.FindStringSubmatch(strings.TrimSpace(cells[c]))
			if bm == nil {
				t.Fatalf("%s:%d: %s: bit range %q", path, i+1, r.name, cells[c])
			}
			hi, _ := strconv.Atoi(bm[1])
			lo := hi
			if bm[2] != "" {
				lo, _ = strconv.Atoi(bm[2])
			}
			name := strings.TrimSpace(cells[c+1])
			name = strings.TrimSuffix(name, " a") // an AsciiDoc cell style for the next cell
			name = strings.ReplaceAll(name, "**", "")
			if name == "--" {
				name = ""
			}
			r.fields = append(r.fields, specField{hi: uint8(hi), lo: uint8(lo), name: name,
				access: strings.TrimSpace(cells[c+3]), reset: strings.Join(strings.Fields(cells[c+4]), " ")})
		}
		regs = append(regs, r)
		i = k
	}
	return regs
}

// TestSpecRegisterTables checks the register tables of the package
// against the register tables of the Trace Control Interface
// specification, parsed from its source (../shared/specs beside the
// repository): every register of the trace encoder, funnel and RAM sink
// is there at the specification's offset (every filter and comparator
// unit), every field has the specification's name, bits and access type
// (RW1C is W1C; a WARL field may be hard-wired, a single legal value;
// trRamData, "R or RW", is read-only here), a reset value given as a
// number is the field's reset value, an undefined one (Undef) is marked
// as this implementation's choice, reserved bits have no field, and no
// field or register is there that the specification does not define. The
// PIB sink and the ATB bridge are not modelled: no component has their
// registers.
func TestSpecRegisterTables(t *testing.T) {
	root := corpus.Root()
	path := filepath.Join(root, "..", "shared", "specs", "RISC-V-Trace-Control-Interface.adoc")
	if _, err := os.Stat(path); root == "" || err != nil {
		t.Skipf("the Trace Control Interface specification is not at %s: skipping", path)
	}
	spec := readSpecRegs(t, path)
	enc, fun, ram := Registers()
	tables := map[string][]Reg{"encoder": enc, "funnel": fun, "RAM sink": ram}
	// the tables of each component: trTs* registers are in the encoder
	// and the funnel (the timestamp unit of either)
	compOf := func(name string) []string {
		switch {
		case strings.HasPrefix(name, "trTs"):
			return []string{"encoder", "funnel"}
		case strings.HasPrefix(name, "trTe"):
			return []string{"encoder"}
		case strings.HasPrefix(name, "trFunnel"):
			return []string{"funnel"}
		case strings.HasPrefix(name, "trRam"):
			return []string{"RAM sink"}
		}
		return nil // PIB sink, ATB bridge
	}
	seen := map[string]map[string]bool{"encoder": {}, "funnel": {}, "RAM sink": {}}
	checked := 0
	for _, sr := range spec {
		comps := compOf(sr.name)
		if comps == nil {
			for c, regs := range tables {
				for _, r := range regs {
					if r.Name == sr.name {
						t.Errorf("%s: the %s has %s, a register of a component not modelled", sr.name, c, r.Name)
					}
				}
			}
			continue
		}
		units := []int{0}
		switch {
		case strings.Contains(sr.name, "__i__"):
			units = units[:0]
			for i := 0; i < NumFilters; i++ {
				units = append(units, i)
			}
		case strings.Contains(sr.name, "__j__"):
			units = units[:0]
			for j := 0; j < NumComparators; j++ {
				units = append(units, j)
			}
		}
		for _, c := range comps {
			for _, u := range units {
				name := strings.NewReplacer("__i__", strconv.Itoa(u), "__j__", strconv.Itoa(u)).Replace(sr.name)
				off := sr.offset + uint32(u)*FilterStride
				var reg *Reg
				for i := range tables[c] {
					if tables[c][i].Name == name {
						reg = &tables[c][i]
					}
				}
				if reg == nil {
					t.Errorf("spec line %d: the %s has no register %s", sr.line, c, name)
					continue
				}
				seen[c][name] = true
				checked++
				if reg.Offset != off {
					t.Errorf("%s %s: offset %#x, the specification's %#x", c, name, reg.Offset, off)
				}
				checkSpecFields(t, c, reg, sr)
			}
		}
	}
	for c, regs := range tables {
		for _, r := range regs {
			if !seen[c][r.Name] {
				t.Errorf("the %s has %s, which the specification does not define", c, r.Name)
			}
		}
	}
	if checked < 100 {
		t.Errorf("%d registers checked: the specification was not read", checked)
	}
	checkSpecLive(t, spec)
}

// checkSpecLive checks the registers as a tool reads them, after the
// components' release from reset ("Reset and Discovery"): a field whose
// reset value the specification gives as a number reads it, and a WARL
// field of up to 4 bits with legal values reads back a legal value after
// each value it is written, the other bits of the register kept (read,
// modify, write, as a tool probes a WARL field).
func checkSpecLive(t *testing.T, spec []specReg) {
	sys, b := newTestSystem(t, 1, 4096)
	releaseAll(t, b, 1)
	bases := map[string][]uint64{"trTs": {enc0, fun}, "trTe": {enc0}, "trFunnel": {fun}, "trRam": {ram}}
	regOf := func(base uint64, off uint32) *Reg {
		var bk *bank
		switch base {
		case enc0:
			bk = &sys.Encoders[0].b
		case fun:
			bk = &sys.Funnel.b
		default:
			bk = &sys.Sink.b
		}
		if i := bk.index[off/4]; i > 0 {
			return &bk.regs[i-1]
		}
		return nil
	}
	probed := 0
	for _, sr := range spec {
		var comp []uint64
		for p, bs := range bases {
			if strings.HasPrefix(sr.name, p) {
				comp = bs
			}
		}
		for _, base := range comp {
			a := base + uint64(sr.offset)
			reg := regOf(base, sr.offset)
			if reg == nil {
				continue // said by TestSpecRegisterTables
			}
			for _, sf := range sr.fields {
				if sf.name == "" {
					continue
				}
				v, err := strconv.ParseUint(sf.reset, 0, 32)
				if err == nil && !strings.HasSuffix(sf.name, "Active") { // (tr??Active: 1 written)
					if got := b.r(a) >> sf.lo & (1<<(sf.hi-sf.lo+1) - 1); uint64(got) != v {
						t.Errorf("%#x %s.%s reads %d after the release from reset, the specification's reset value is %d", a, sr.name, sf.name, got, v)
					}
				}
				f := reg.Field(sf.name)
				if f == nil || f.Access != WARL || f.Legal == nil || f.Hi-f.Lo >= 4 {
					continue
				}
				for x := uint32(0); x < 1<<(f.Hi-f.Lo+1); x++ {
					old := b.r(a)
					if sr.offset == 0 {
						old &^= 2 // tr??Enable stays 0: the component is probed disabled
					}
					b.w(a, f.set(old, x))
					got := f.get(b.r(a))
					if !f.legal(got) {
						t.Errorf("%#x %s.%s: written %d, reads back %d, not a legal value %v", a, sr.name, f.Name, x, got, f.Legal)
					}
					if f.legal(x) && got != x && !dependsOnOthers(f.Name) {
						t.Errorf("%#x %s.%s: written %d, a legal value, reads back %d", a, sr.name, f.Name, x, got)
					}
					probed++
				}
			}
		}
	}
	if probed < 50 {
		t.Errorf("%d WARL writes probed", probed)
	}
}

// dependsOnOthers reports whether a field's legal values depend on other
// fields or on the hart too (the table's are the union over them): the
// trace format's sync modes and implicit return modes, and the data trace
// fields, tied to 0 without a data trace interface (this system's harts
// have none).
func dependsOnOthers(name string) bool {
	switch name {
	case "trTeInstSyncMode", "trTeInstImplicitReturnMode":
		return true
	}
	return strings.HasPrefix(name, "trTeData")
}

// checkSpecFields checks the fields of reg against the specification's
// table sr.
func checkSpecFields(t *testing.T, comp string, reg *Reg, sr specReg) {
	t.Helper()
	used := map[string]bool{}
	for _, sf := range sr.fields {
		var f *Field
		for i := range reg.Fields {
			g := &reg.Fields[i]
			if sf.name != "" && g.Name == sf.name || sf.name == "" && sf.access != "--" && sf.access != "RO" && g.Hi == sf.hi && g.Lo == sf.lo {
				f = g
			}
		}
		if sf.name == "" && (sf.access == "--" || sf.access == "RO") {
			// reserved bits (or bits read as 0): no field over them
			for i := range reg.Fields {
				g := &reg.Fields[i]
				if g.Lo <= sf.hi && sf.lo <= g.Hi {
					t.Errorf("%s %s: field %s (%d:%d) over the reserved bits %d:%d", comp, reg.Name, g.Name, g.Hi, g.Lo, sf.hi, sf.lo)
				}
			}
			if sf.reset != "0" && sf.reset != "<<SD,SD>>" {
				t.Errorf("%s %s: reserved bits %d:%d reset %q", comp, reg.Name, sf.hi, sf.lo, sf.reset)
			}
			continue
		}
		what := sf.name
		if what == "" {
			what = "the unnamed field " + strconv.Itoa(int(sf.hi)) + ":" + strconv.Itoa(int(sf.lo))
		}
		if f == nil {
			t.Errorf("%s %s: no field %s (%d:%d)", comp, reg.Name, what, sf.hi, sf.lo)
			continue
		}
		used[f.Name] = true
		if f.Hi != sf.hi || f.Lo != sf.lo {
			t.Errorf("%s %s.%s: bits %d:%d, the specification's %d:%d", comp, reg.Name, f.Name, f.Hi, f.Lo, sf.hi, sf.lo)
		}
		want := map[string]Access{"RW": RW, "RO": RO, "WARL": WARL, "RW1C": W1C, "W1": W1, "R or RW": RO}[sf.access]
		if want == Reserved {
			t.Errorf("%s %s.%s: access %q not understood", comp, reg.Name, f.Name, sf.access)
		} else if f.Access != want {
			t.Errorf("%s %s.%s: access %v, the specification's %s", comp, reg.Name, f.Name, f.Access, sf.access)
		}
		switch r := sf.reset; {
		case r == "<<SD,SD>>" || r == "SD" || r == "--":
			// system dependent, or none (an action)
		case strings.HasPrefix(r, "<<Undef,Undef>>"):
			if !f.Undef {
				t.Errorf("%s %s.%s: the specification leaves its reset value undefined, the table does not mark %d as this implementation's choice", comp, reg.Name, f.Name, f.Reset)
			}
		default:
			v, err := strconv.ParseUint(r, 0, 32)
			if err != nil {
				t.Errorf("%s %s.%s: reset %q not understood", comp, reg.Name, f.Name, r)
			} else if f.Undef || f.Reset != uint32(v) {
				t.Errorf("%s %s.%s: reset %d (undef %v), the specification's %d", comp, reg.Name, f.Name, f.Reset, f.Undef, v)
			}
		}
		if f.Legal != nil && !f.legal(f.Reset) {
			t.Errorf("%s %s.%s: reset value %d is not among its legal values %v", comp, reg.Name, f.Name, f.Reset, f.Legal)
		}
		if f.Access != WARL && f.Legal != nil && f.Access != RO {
			t.Errorf("%s %s.%s: legal values on a %v field", comp, reg.Name, f.Name, f.Access)
		}
	}
	for i := range reg.Fields {
		if g := &reg.Fields[i]; !used[g.Name] {
			t.Errorf("%s %s: field %s (%d:%d), which the specification does not define", comp, reg.Name, g.Name, g.Hi, g.Lo)
		}
	}
}
