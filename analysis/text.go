package analysis

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/rvtrace/rvtrace/ingress"
)

// TextOptions configure WriteText.
type TextOptions struct {
	// Funcs is the number of functions in the flat profile (0: 30; <0: all).
	Funcs int
	// Lines is the number of source lines in the line profile (0: 20;
	// <0: none).
	Lines int
	// Tree writes the call tree, down to nodes with at least TreeMin
	// percent of the instructions inclusive (0: 0.5).
	Tree    bool
	TreeMin float64
}

func pct(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return 100 * float64(a) / float64(b)
}

// WriteText writes a readable report: the run summary, the flat profile
// by function (self and inclusive instructions and cycles, calls, trace
// cost), the hottest source lines and, if asked, the call tree.
func WriteText(w io.Writer, p *Profile, opt TextOptions) error {
	if opt.Funcs == 0 {
		opt.Funcs = 30
	}
	if opt.Lines == 0 {
		opt.Lines = 20
	}
	if opt.TreeMin == 0 {
		opt.TreeMin = 0.5
	}
	bw := bufio.NewWriter(w)
	total := p.Instructions()
	fs := p.FuncStats()
	fmt.Fprintf(bw, "instructions  %d\n", total)
	if p.HasCycles() {
		fmt.Fprintf(bw, "cycles        %d (%.3f instructions per time unit)\n", p.Cycles(), p.IPC())
	}
	fmt.Fprintf(bw, "functions     %d executed\n", len(fs))
	fmt.Fprintf(bw, "traps         %d\n", p.Traps())
	if pi, levels := p.PrivInstructions(), 0; total > 0 {
		line := ""
		for l := len(pi) - 1; l >= 0; l-- {
			if pi[l] > 0 {
				levels++
				line += fmt.Sprintf(", %s %d (%.1f%%)", ingress.Priv(l), pi[l], 100*float64(pi[l])/float64(total))
			}
		}
		if levels > 1 {
			fmt.Fprintf(bw, "privilege     %s\n", line[2:])
		}
	}
	writeLost(bw, p, 10)
	if tb := p.TraceBytes(); tb > 0 {
		fmt.Fprintf(bw, "trace         %d bytes, %.3f bits per instruction\n", tb, p.BitsPerInstruction())
	}
	fmt.Fprintln(bw)
	cyc := p.HasCycles()
	trace := p.TraceBytes() > 0 && p.offsets
	hdr := "  self%        self   inclusive       calls"
	if cyc {
		hdr += "  self-cycles  incl-cycles"
	}
	if trace {
		hdr += "  trace-bytes"
	}
	fmt.Fprintln(bw, hdr+"  function")
	for i, f := range fs {
		if opt.Funcs > 0 && i >= opt.Funcs {
			fmt.Fprintf(bw, "  ... %d more functions\n", len(fs)-i)
			break
		}
		fmt.Fprintf(bw, "%6.2f%% %11d %11d %11d", pct(f.Self, total), f.Self, f.Inclusive, f.Calls)
		if cyc {
			fmt.Fprintf(bw, " %12d %12d", f.SelfCycles, f.InclCycles)
		}
		if trace {
			fmt.Fprintf(bw, " %12d", f.TraceBytes)
		}
		name := f.Func.Name
		if f.Func.ID == 0 {
			name = p.UnknownLabel()
		}
		fmt.Fprintf(bw, "  %s", name)
		if f.Func.File != "" {
			fmt.Fprintf(bw, " (%s:%d)", filepath.Base(f.Func.File), f.Func.Line)
		}
		fmt.Fprintln(bw)
	}
	if ls := p.LineStats(); opt.Lines > 0 && len(ls) > 0 {
		fmt.Fprintln(bw, "\n  self%        insts", map[bool]string{true: "      cycles", false: ""}[cyc], " line")
		for i, l := range ls {
			if i >= opt.Lines {
				break
			}
			fmt.Fprintf(bw, "%6.2f%% %12d", pct(l.Insts, total), l.Insts)
			if cyc {
				fmt.Fprintf(bw, " %12d", l.Cycles)
			}
			fmt.Fprintf(bw, "  %s:%d (%s)\n", filepath.Base(l.File), l.Line, l.Func.Name)
		}
	}
	if opt.Tree {
		fmt.Fprintln(bw, "\ncall tree (inclusive%, inclusive, self, calls):")
		WriteTree(bw, p, opt.TreeMin)
	}
	return bw.Flush()
}

// WriteTree writes the call tree, one node per line indented by depth,
// with nodes of less than minPct percent of the instructions (inclusive)
// left out.
func WriteTree(w io.Writer, p *Profile, minPct float64) {
	p.Close()
	total := p.root.Inclusive
	depth := -1
	walkTree(p.root, func(n *Node, enter bool) {
		if !enter {
			depth--
			return
		}
		depth++
		if n.Func == nil || pct(n.Inclusive, total) < minPct {
			return
		}
		trap := ""
		if n.Trap {
			trap = " [trap]"
		}
		fmt.Fprintf(w, "%6.2f%% %11d %11d %8d  %s%s%s\n", pct(n.Inclusive, total), n.Inclusive, n.Self, n.Calls,
			strings.Repeat("  ", depth-1), p.FuncLabel(n.Func), trap)
	})
}

// writeLost writes the "lost" row: the gaps (trace lost or undecodable)
// and the suspect instructions, then the first max gaps.
func writeLost(w io.Writer, p *Profile, max int) {
	if p.Gaps() == 0 {
		fmt.Fprintf(w, "lost          nothing: no gap in the trace\n")
		return
	}
	gaps, insts := "gaps", "instructions"
	if p.Gaps() == 1 {
		gaps = "gap"
	}
	if p.Suspect() == 1 {
		insts = "instruction"
	}
	fmt.Fprintf(w, "lost          %d %s, %d suspect %s: the profile misses what ran in the gaps\n", p.Gaps(), gaps, p.Suspect(), insts)
	for i, g := range p.GapList() {
		if i == max {
			break
		}
		fmt.Fprintf(w, "              %s\n", g)
	}
	if n := p.Gaps() - uint64(min(max, len(p.GapList()))); n > 0 {
		fmt.Fprintf(w, "              ... and %d more gaps\n", n)
	}
}
