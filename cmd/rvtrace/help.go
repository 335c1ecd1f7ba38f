package main

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// The command line follows one rule: a flag name means the same thing in
// every command. A flag naming a file is an input (positional arguments,
// --image, --pcs-in, --ingress-in, ...) or an output (-o, the main output
// of a command, and the named outputs --pcs, --flow, --html, ...), never
// one in a command and the other in the next. Old spellings that broke
// the rule are kept as deprecated aliases: they work, are hidden from -h
// and print one line on stderr when used.

// Help headings, in the order -h shows them: the options that must match
// the encoder first.
const (
	headFormat  = "Trace format (must match the encoder)"
	headETrace  = "E-Trace options"
	headInputs  = "Inputs"
	headSelect  = "Selection"
	headOutputs = "Outputs"
	headOther   = "Other"
)

var helpHeadings = []string{headFormat, headETrace, headInputs, headSelect, headOutputs, headOther}

// flagGroups places the flags whose heading is not told by their role or
// by the protocol that registers them.
var flagGroups = map[string]string{
	"protocol":        headFormat,
	"trace":           headFormat,
	"allow-truncated": headFormat,
	"per-instruction": headInputs,
	"xlen":            headInputs,
	"tarmac-xlen":     headInputs,
	"lenient":         headInputs,
	"kernel":          headInputs,
	"firmware":        headInputs,
	// the listing options of dump and of the N-Trace decoder: they do
	// not change what is decoded
	"stats":             headOther,
	"bytes":             headOutputs,
	"to-csv":            headOutputs,
	"iretire-halfwords": headInputs,
	"src":               headSelect,
	"priv":              headSelect,
	"ctx":               headSelect,
	"from":              headSelect,
	"to":                headSelect,
	"range":             headSelect,
	"symbol":            headSelect,
	"sample":            headSelect,
	"no-gap-marks":      headOutputs,
	"strict":            headOutputs,
	"F":                 headOutputs,
	"ranges":            headOutputs,
	"no-header":         headOutputs,
	"write-halfwords":   headOutputs,
	"time":              headOutputs,
	"no-disasm":         headOutputs,
	"format":            headOutputs,
	// the Trace Control Interface system of rvtrace run
	"trace-system":      headOther,
	"trace-base":        headOther,
	"trace-capture":     headOutputs,
	"trace-capture-all": headOutputs,
	"trace-script":      headInputs,
}

// protoHooks says, for the commands whose flags depend on the protocol,
// which of a protocol's hooks registers its flags.
var protoHooks = map[string]func(p *protocol, fs *flag.FlagSet){
	"decode":  func(p *protocol, fs *flag.FlagSet) { p.decoder(fs) },
	"script":  func(p *protocol, fs *flag.FlagSet) { p.decoder(fs) },
	"profile": func(p *protocol, fs *flag.FlagSet) { p.decoder(fs) },
	"report":  func(p *protocol, fs *flag.FlagSet) { p.decoder(fs) },
	"dump":    func(p *protocol, fs *flag.FlagSet) { p.dumper(fs) },
	"encode":  func(p *protocol, fs *flag.FlagSet) { p.encoder(fs) },
	"tarmac":  func(p *protocol, fs *flag.FlagSet) { p.encoder(fs) },
	"run":     func(p *protocol, fs *flag.FlagSet) { p.encoder(fs) },
}

// protoHeading is the heading of a protocol's own options.
func protoHeading(p *protocol) string {
	if p.name == "etrace" {
		return headETrace
	}
	return headFormat
}

// aliasValue is a deprecated spelling of another flag of the same flag
// set: setting it sets the other one and says so, once, on stderr.
type aliasValue struct {
	fs     *flag.FlagSet
	target string
	note   string
}

// deprecationShown holds the notes already printed by this invocation
// (the flags of a command may be parsed more than once, once per
// protocol, before the real parse).
var deprecationShown = map[string]bool{}

func (a *aliasValue) String() string {
	if a == nil || a.fs == nil {
		return ""
	}
	if f := a.fs.Lookup(a.target); f != nil {
		return f.Value.String()
	}
	return ""
}

func (a *aliasValue) Set(s string) error {
	if !deprecationShown[a.note] {
		deprecationShown[a.note] = true
		fmt.Fprintf(stderr, "rvtrace: %s\n", a.note)
	}
	return a.fs.Lookup(a.target).Value.Set(s)
}

// deprecatedAlias registers old on fs as a deprecated spelling of the flag
// target (registered on fs before or after it), with the note printed
// when it is used.
func deprecatedAlias(fs *flag.FlagSet, old, target, note string) {
	fs.Var(&aliasValue{fs: fs, target: target, note: note}, old, "deprecated: "+note)
}

// inputAlias registers the old input spelling old of the input flag
// old+"-in": it was an output in other commands.
func inputAlias(fs *flag.FlagSet, old string) {
	deprecatedAlias(fs, old, old+"-in", fmt.Sprintf("--%s as an input is deprecated: use --%s-in", old, old))
}

// isAlias reports whether f is a deprecated alias.
func isAlias(f *flag.Flag) bool {
	_, ok := f.Value.(*aliasValue)
	return ok
}

// Flag roles: what a flag names.
const (
	roleOption     = "option"
	roleInput      = "input"
	roleOutput     = "output"
	roleDeprecated = "deprecated alias"
)

// fileWords are the value names (the back-quoted word of a usage) of the
// flags that name a file, directory or program to read.
var fileWords = map[string]bool{"file": true, "FILE@ADDR": true, "directory": true, "ELF": true,
	"binary": true, "source": true}

// flagRole tells what a flag names from its registration: -o and a flag
// whose usage writes a `file` name an output, a flag whose value is a file
// otherwise an input.
func flagRole(f *flag.Flag) string {
	if isAlias(f) {
		return roleDeprecated
	}
	if f.Name == "o" {
		return roleOutput
	}
	word, usage := flag.UnquoteUsage(f)
	if !fileWords[word] {
		return roleOption
	}
	if strings.Contains(usage, "write") || strings.Contains(usage, "output") {
		return roleOutput
	}
	return roleInput
}

// helpLine is one option in the help.
type helpLine struct {
	f    *flag.Flag
	note string // extra words after the usage
}

// printOptions writes the options of fs, command c, grouped under the help
// headings. For a command whose protocol is chosen from the trace, the
// options of every protocol are listed (only one protocol's are parsed
// at a time; with --protocol auto either's may be given).
func printOptions(w io.Writer, c *command, fs *flag.FlagSet) {
	groups := map[string][]helpLine{}
	protoOf := map[string]*protocol{} // flag name: the protocol whose option it is
	scratch := map[*protocol]*flag.FlagSet{}
	auto := false
	if hook := protoHooks[c.name]; hook != nil {
		if f := fs.Lookup("protocol"); f != nil && (f.Value.String() == "auto") {
			auto = true
		}
		for _, p := range sortedProtocols() {
			s := flag.NewFlagSet("", flag.ContinueOnError)
			s.SetOutput(io.Discard)
			hook(p, s)
			scratch[p] = s
		}
		// A flag the protocols share (--src-bits) belongs to the one
		// whose usage the command registered.
		for _, p := range sortedProtocols() {
			scratch[p].VisitAll(func(sf *flag.Flag) {
				if f := fs.Lookup(sf.Name); f != nil && f.Usage == sf.Usage {
					protoOf[sf.Name] = p
				}
			})
		}
	}
	aliases := map[string][]string{}
	fs.VisitAll(func(f *flag.Flag) {
		if a, ok := f.Value.(*aliasValue); ok {
			aliases[a.target] = append(aliases[a.target], "--"+f.Name)
		}
	})
	fs.VisitAll(func(f *flag.Flag) {
		if isAlias(f) {
			return
		}
		h := groupOf(f, protoOf[f.Name])
		var note string
		if a := aliases[f.Name]; len(a) > 0 {
			note = "(deprecated spelling: " + strings.Join(a, ", ") + ")"
		}
		groups[h] = append(groups[h], helpLine{f, note})
	})
	if auto {
		// the other protocols' options
		for _, p := range sortedProtocols() {
			scratch[p].VisitAll(func(sf *flag.Flag) {
				if f := fs.Lookup(sf.Name); f != nil && f.Usage == sf.Usage {
					return
				}
				if _, ok := flagGroups[sf.Name]; ok {
					return
				}
				h := protoHeading(p)
				groups[h] = append(groups[h], helpLine{sf, ""})
			})
		}
	}
	for _, h := range helpHeadings {
		lines := groups[h]
		if len(lines) == 0 {
			continue
		}
		sort.SliceStable(lines, func(i, j int) bool {
			// --protocol first: it says which options apply
			if a, b := lines[i].f.Name == "protocol", lines[j].f.Name == "protocol"; a != b {
				return a
			}
			return lines[i].f.Name < lines[j].f.Name
		})
		fmt.Fprintf(w, "\n%s:\n", h)
		for _, l := range lines {
			printFlag(w, l.f, l.note)
		}
	}
}

// groupOf returns the heading of flag f; p is the protocol whose option it
// is (nil for none).
func groupOf(f *flag.Flag, p *protocol) string {
	if h, ok := flagGroups[f.Name]; ok {
		return h
	}
	if p != nil {
		return protoHeading(p)
	}
	switch flagRole(f) {
	case roleInput:
		return headInputs
	case roleOutput:
		return headOutputs
	}
	return headOther
}

// printFlag writes one option as flag.PrintDefaults does, with double
// dashes for long names.
func printFlag(w io.Writer, f *flag.Flag, note string) {
	dash := "--"
	if len(f.Name) == 1 {
		dash = "-"
	}
	name, usage := flag.UnquoteUsage(f)
	line := "  " + dash + f.Name
	if name != "" {
		line += " " + name
	}
	fmt.Fprintln(w, line)
	usage = strings.TrimSuffix(usage, " ("+name+")") // the value name a flag.Func usage ends with
	usage = strings.ReplaceAll(usage, "\n", "\n    \t")
	switch f.DefValue {
	case "", "0", "false", "[]":
	default:
		if _, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && f.DefValue == "false" {
			break
		}
		if strings.Trim(f.DefValue, "0123456789.-") == "" && f.DefValue != "-" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		} else {
			usage += fmt.Sprintf(" (default %q)", f.DefValue)
		}
	}
	if note != "" {
		usage += " " + note
	}
	fmt.Fprintf(w, "    \t%s\n", usage)
}
