package pmu

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// tableCounts checks the layout rule of every counter line of a table
// (count right-aligned ending at column 18, name at NameColumn, comment
// at CommentColumn or later when the name is longer) and returns the
// counts by event name, -1 for <not supported>.
func tableCounts(t *testing.T, table string) map[string]int64 {
	t.Helper()
	num := regexp.MustCompile(`^[1-9][0-9]{0,2}(,[0-9]{3})*$|^0$`)
	out := map[string]int64{}
	for _, l := range strings.Split(table, "\n") {
		if l == "" || strings.HasPrefix(l, " Performance counter stats") || strings.Contains(l, "seconds simulated") {
			continue
		}
		if len(l) < NameColumn+1 || l[countWidth-1] == ' ' || l[countWidth:NameColumn] != "      " || l[NameColumn] == ' ' {
			t.Errorf("misaligned line %q", l)
			continue
		}
		count := strings.TrimLeft(l[:countWidth], " ")
		rest := l[NameColumn:]
		name, comment, _ := strings.Cut(rest, " ")
		comment = strings.TrimSpace(comment)
		if comment != "" {
			if i := strings.IndexByte(l, '#'); i != CommentColumn && !(i > CommentColumn && len(name) > nameWidth) {
				t.Errorf("comment at column %d, want %d: %q", i, CommentColumn, l)
			}
		}
		switch {
		case count == "<not supported>":
			out[name] = -1
		case num.MatchString(count):
			v, _ := strconv.ParseInt(strings.ReplaceAll(count, ",", ""), 10, 64)
			out[name] = v
		default:
			t.Errorf("count %q is not grouped in thousands: %q", count, l)
		}
	}
	return out
}

func TestThousands(t *testing.T) {
	for n, want := range map[uint64]string{0: "0", 7: "7", 999: "999", 1000: "1,000", 123456: "123,456",
		1234567: "1,234,567", 18446744073709551615: "18,446,744,073,709,551,615"} {
		if got := Thousands(n); got != want {
			t.Errorf("Thousands(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestReportTable(t *testing.T) {
	m, err := New(DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	// distinct counts for every event, some with many digits
	for i := 1; i < NumDense; i++ {
		m.Add(i, uint64(i)*uint64(i)*977)
	}
	withTLB := NewHartCounts(0, 1234567, 2345678, m, nil)
	noTLB := NewHartCounts(1, 99, 1000, m, TLBEvents())
	noModel := NewHartCounts(2, 5, 10, nil, nil)
	rep := Report{Seconds: 0.5, MIPS: 2.5, Harts: []HartCounts{withTLB, noTLB, noModel}}
	var b bytes.Buffer
	if err := rep.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	parts := strings.Split(table, " Performance counter stats for hart ")
	if len(parts) != 4 {
		t.Fatalf("want 3 hart sections:\n%s", table)
	}
	for k, h := range rep.Harts {
		got := tableCounts(t, parts[k+1][strings.IndexByte(parts[k+1], '\n'):])
		if got["cycles"] != int64(h.Cycles) || got["instructions"] != int64(h.Instructions) {
			t.Errorf("hart %d: cycles %d instructions %d", k, got["cycles"], got["instructions"])
		}
		for _, row := range tableRows {
			v, ok := got[row.name]
			if !ok {
				t.Errorf("hart %d: no row %s", k, row.name)
				continue
			}
			want := int64(-1)
			if n, ok := h.Events[row.name]; ok {
				want = int64(n)
			}
			if v != want {
				t.Errorf("hart %d: %s = %d, want %d (-1: not supported)", k, row.name, v, want)
			}
		}
	}
	// Not supported is never a count: absent from Events, listed apart.
	for _, n := range []string{"dTLB-loads", "iTLB-load-misses"} {
		if _, ok := noTLB.Events[n]; ok || !contains(noTLB.NotSupported, n) {
			t.Errorf("%s in a run without translation: events %v, not supported %v", n, ok, noTLB.NotSupported)
		}
		if _, ok := withTLB.Events[n]; !ok || contains(withTLB.NotSupported, n) {
			t.Errorf("%s with translation should be counted", n)
		}
	}
	if _, ok := noModel.Events["branches"]; ok || noModel.Events["cycles"] != 10 || len(noModel.NotSupported) == 0 {
		t.Errorf("without a model: %v, not supported %v", noModel.Events, noModel.NotSupported)
	}
	// The IPC comment, perf's style.
	if !strings.Contains(table, "instructions                  #   0.53  insn per cycle\n") {
		t.Errorf("no IPC comment in\n%s", table)
	}
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}
