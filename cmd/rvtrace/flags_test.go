package main

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/rvtrace/rvtrace/internal/corpus"
)

// commandFlagSets runs every command with -h (for each protocol a command
// can take) and returns the flag sets it parsed, keyed by the command line.
func commandFlagSets(t *testing.T) map[string]*flag.FlagSet {
	t.Helper()
	var last *flag.FlagSet
	flagSetHook = func(_ *command, fs *flag.FlagSet) { last = fs }
	defer func() { flagSetHook = nil }()
	sets := map[string]*flag.FlagSet{}
	var lines [][]string
	for name := range commands {
		lines = append(lines, []string{name, "-h"})
	}
	for _, name := range []string{"encode", "decode", "dump", "script", "profile", "report", "tarmac"} {
		for _, p := range []string{"ntrace", "etrace"} {
			lines = append(lines, []string{name, "--protocol", p, "-h"})
		}
	}
	lines = append(lines, []string{"profile", "--protocol", "tarmac", "-h"}, []string{"report", "--protocol", "tarmac", "-h"},
		[]string{"run", "--trace", "ntrace", "-h"}, []string{"run", "--trace", "etrace", "-h"})
	for _, args := range lines {
		last = nil
		var out, errb bytes.Buffer
		if code := mainWith(args, &out, &errb); code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, errb.String())
		}
		if last == nil {
			t.Fatalf("%v: no flag set made", args)
		}
		sets[strings.Join(args, " ")] = last
	}
	return sets
}

// The rule of the command line: a flag name is an input in every command
// that has it, or an output in every command that has it, never both; a
// deprecated spelling is marked as such and names a flag of its command;
// every command that writes a main output has -o.
func TestFlagRoles(t *testing.T) {
	sets := commandFlagSets(t)
	type use struct{ role, where string }
	roles := map[string]use{}
	var keys []string
	for k := range sets {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fs := sets[k]
		fs.VisitAll(func(f *flag.Flag) {
			role := flagRole(f)
			if role == roleDeprecated {
				a := f.Value.(*aliasValue)
				if fs.Lookup(a.target) == nil {
					t.Errorf("%s: --%s is an alias of --%s, which it does not have", k, f.Name, a.target)
				}
				return
			}
			if role == roleOption {
				return
			}
			if u, ok := roles[f.Name]; ok && u.role != role {
				t.Errorf("--%s is an %s in %q but an %s in %q", f.Name, u.role, u.where, role, k)
			}
			roles[f.Name] = use{role, k}
		})
	}
	// Known inputs and outputs are classified as they should be.
	for name, want := range map[string]string{"pcs": roleOutput, "pcs-in": roleInput, "ingress": roleOutput,
		"ingress-in": roleInput, "image": roleInput, "o": roleOutput, "html": roleOutput, "tarmac": roleOutput,
		"write": roleOutput, "blocks": roleOutput, "config": roleInput, "dtb": roleInput, "dtb-out": roleOutput} {
		if roles[name].role != want {
			t.Errorf("--%s: role %q, want %q", name, roles[name].role, want)
		}
	}
	// The old input spellings are deprecated aliases where they were inputs.
	for _, k := range []string{"encode -h", "convert -h", "profile -h", "report -h", "tarmac -h"} {
		for _, old := range []string{"pcs", "ingress"} {
			if f := sets[k].Lookup(old); f == nil || !isAlias(f) {
				t.Errorf("%s: --%s is not a deprecated alias", k, old)
			}
		}
	}
	noMain := map[string]string{
		"decode":  "writes any number of outputs, each named by its kind (--pcs, --flow, ...)",
		"version": "prints one line on standard output",
	}
	for name := range commands {
		f := sets[name+" -h"].Lookup("o")
		if _, ok := noMain[name]; ok {
			continue
		}
		if f == nil || flagRole(f) != roleOutput {
			t.Errorf("%s has no -o output", name)
		}
	}
}

// The old spelling of an input still works, and says once that it is
// deprecated; the new one gives the same result silently.
func TestDeprecatedInputSpelling(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/t1/test.elf")
	pcs := corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt")
	dir := t.TempDir()
	oldOut, newOut := filepath.Join(dir, "old.csv"), filepath.Join(dir, "new.csv")
	code, _, e := rv(t, "convert", "--image", elf, "--pcs", pcs, "--per-instruction", "--to-ingress", oldOut)
	if code != 0 {
		t.Fatalf("convert --pcs: exit %d: %s", code, e)
	}
	if want := "rvtrace: --pcs as an input is deprecated: use --pcs-in\n"; e != want {
		t.Errorf("convert --pcs: stderr %q, want %q", e, want)
	}
	code, _, e = rv(t, "convert", "--image", elf, "--pcs-in", pcs, "--per-instruction", "-o", newOut)
	if code != 0 || e != "" {
		t.Fatalf("convert --pcs-in: exit %d: %q", code, e)
	}
	a, _ := os.ReadFile(oldOut)
	b, _ := os.ReadFile(newOut)
	if len(a) == 0 || !bytes.Equal(a, b) {
		t.Errorf("convert: --pcs and --pcs-in give different CSVs (%d, %d bytes)", len(a), len(b))
	}
	// profile parses its flags once per protocol before the real parse:
	// the note is still printed once.
	code, out, e := rv(t, "profile", "--image", elf, "--pcs", pcs, "--funcs", "3")
	if code != 0 || strings.Count(e, "deprecated") != 1 || !strings.Contains(out, "instructions") {
		t.Errorf("profile --pcs: exit %d, stderr %q", code, e)
	}
	// The PC list round-trips through the new spellings.
	back := filepath.Join(dir, "back.pcs")
	if code, _, e := rv(t, "convert", "--image", elf, "--ingress-in", newOut, "--format", "pcs", "-o", back); code != 0 || e != "" {
		t.Fatalf("convert --ingress-in: exit %d: %q", code, e)
	}
	if normalized(t, back) != normalized(t, pcs) {
		t.Errorf("convert --ingress-in -o: PC list differs from the input")
	}
	// and so does the old spelling of the ingress input
	back2 := filepath.Join(dir, "back2.pcs")
	code, _, e = rv(t, "convert", "--image", elf, "--ingress", newOut, "--to-pcs", back2)
	if want := "rvtrace: --ingress as an input is deprecated: use --ingress-in\n"; code != 0 || e != want {
		t.Errorf("convert --ingress: exit %d, stderr %q, want %q", code, e, want)
	}
	if normalized(t, back2) != normalized(t, pcs) {
		t.Errorf("convert --ingress: PC list differs from the input")
	}
	if code, _, e := rv(t, "convert", "--image", elf, "--pcs-in", pcs, "-o", back, "--to-pcs", back); code != 2 && code != 1 || !strings.Contains(e, "give one output") {
		t.Errorf("convert -o and --to-pcs: exit %d: %q", code, e)
	}
}

// report names its file with -o; --html is its deprecated spelling.
func TestReportHTMLAlias(t *testing.T) {
	elf := corpus.Path(t, "ntrace-refcode/t1/test.elf")
	pcs := corpus.Path(t, "ntrace-refcode/t1/test-PCONLY.txt")
	out := filepath.Join(t.TempDir(), "r.html")
	code, _, e := rv(t, "report", "--image", elf, "--pcs-in", pcs, "--html", out)
	if code != 0 || !strings.Contains(e, "--html is deprecated") {
		t.Fatalf("report --html: exit %d: %s", code, e)
	}
	data, err := os.ReadFile(out)
	if err != nil || !bytes.Contains(data, []byte("<html")) {
		t.Errorf("report --html wrote no report: %v", err)
	}
}

// helpSections returns the help text of a command line split by heading.
func helpSections(t *testing.T, args ...string) (string, map[string]string) {
	t.Helper()
	code, _, e := rv(t, args...)
	if code != 0 {
		t.Fatalf("%v: exit %d", args, code)
	}
	sec := map[string]string{}
	cur := ""
	for _, l := range strings.Split(e, "\n") {
		if strings.HasSuffix(l, ":") && !strings.HasPrefix(l, " ") {
			cur = strings.TrimSuffix(l, ":")
			continue
		}
		if cur != "" {
			sec[cur] += l + "\n"
		}
	}
	return e, sec
}

func TestHelpGroups(t *testing.T) {
	for _, args := range [][]string{{"decode", "-h"}, {"profile", "-h"}, {"script", "-h"}, {"report", "-h"}} {
		all, sec := helpSections(t, args...)
		// headings in order, the trace format first
		last := -1
		for _, h := range []string{headFormat, headETrace, headInputs, headSelect, headOutputs} {
			i := strings.Index(all, "\n"+h+":\n")
			if i < 0 {
				t.Errorf("%v: no heading %q", args, h)
				continue
			}
			if i < last {
				t.Errorf("%v: heading %q out of order", args, h)
			}
			last = i
		}
		has := func(h, flag string) bool {
			for _, l := range strings.Split(sec[h], "\n") {
				if l == "  "+flag || strings.HasPrefix(l, "  "+flag+" ") {
					return true
				}
			}
			return false
		}
		for _, f := range []string{"--protocol", "--preset", "--mode", "--src-bits", "--timestamps", "--allow-truncated"} {
			if !has(headFormat, f) {
				t.Errorf("%v: %s not under %q", args, f, headFormat)
			}
		}
		for _, f := range []string{"--encap", "--full-address", "--config", "--etrace-version"} {
			if !has(headETrace, f) {
				t.Errorf("%v: %s not under %q", args, f, headETrace)
			}
		}
		if !has(headInputs, "--image") || !has(headSelect, "--from") {
			t.Errorf("%v: --image or --from misplaced", args)
		}
		if strings.Contains(all, "deprecated:") {
			t.Errorf("%v: a deprecated alias is listed", args)
		}
	}
	// E-Trace's src-bits is listed with its own meaning under its heading.
	_, sec := helpSections(t, "decode", "-h")
	if !strings.Contains(sec[headETrace], "--src-bits") || !strings.Contains(sec[headETrace], "utdd") {
		t.Errorf("decode -h: E-Trace's --src-bits missing:\n%s", sec[headETrace])
	}
	// Output flags are under Outputs, in decode and profile.
	if !strings.Contains(sec[headOutputs], "  --pcs file") {
		t.Errorf("decode -h: --pcs not under Outputs")
	}
	_, sec = helpSections(t, "profile", "-h")
	if !strings.Contains(sec[headInputs], "  --pcs-in file") || strings.Contains(sec[headOutputs], "--pcs ") {
		t.Errorf("profile -h: --pcs-in not an input")
	}
	// An unknown flag prints one line and the hint.
	code, _, e := rv(t, "decode", "--no-such-flag")
	if code != 2 || strings.Count(e, "\n") != 2 || !strings.Contains(e, "rvtrace decode -h") {
		t.Errorf("decode --no-such-flag: exit %d: %q", code, e)
	}
}
