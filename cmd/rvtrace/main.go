// Command rvtrace is the RISC-V processor-trace tool: it runs programs on its
// simulator, encodes ingress-port records into N-Trace or E-Trace bytes,
// dumps and decodes traces back to the instruction flow, and analyses it.
//
// The command itself only parses flags and wires the packages together;
// every subcommand lives in its own file and registers itself in init.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// command is one subcommand of rvtrace.
type command struct {
	name    string
	summary string
	usage   string // usage lines and examples, shown by -h
	run     func(args []string) error
}

var commands = map[string]*command{}

func register(c *command) { commands[c.name] = c }

// errUsage is returned by a subcommand whose arguments are wrong; the usage
// has already been printed.
var errUsage = errors.New("usage")

// exitError carries a program's exit code through main.
type exitError struct{ code int }

// codeError is an error reported on stderr with a given exit code (a run
// stopped by a signal exits 128+signal number, as shells report it).
type codeError struct {
	code int
	err  error
}

func (e codeError) Error() string { return e.err.Error() }
func (e codeError) Unwrap() error { return e.err }

func (e exitError) Error() string { return fmt.Sprintf("exit code %d", e.code) }

func main() { os.Exit(mainWith(os.Args[1:], os.Stdout, os.Stderr)) }

var stdout io.Writer = os.Stdout
var stderr io.Writer = os.Stderr

func mainWith(args []string, out, errw io.Writer) int {
	stdout, stderr = out, errw
	deprecationShown = map[string]bool{}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		if len(args) > 1 {
			if c := commands[args[1]]; c != nil {
				fmt.Fprintf(out, "%s\n\n%s", c.summary, c.usage)
				return 0
			}
		}
		printHelp(out)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "--version" || args[0] == "-version" {
		args = append([]string{"version"}, args[1:]...)
	}
	c := commands[args[0]]
	if c == nil {
		fmt.Fprintf(errw, "rvtrace: unknown command %q (see rvtrace help)\n", args[0])
		return 2
	}
	stdout = startFiles(out)
	err := c.run(args[1:])
	code := exitCode(errw, c.name, err)
	// A failed write or close of any output (standard output included)
	// is an error even when the command finished.
	for _, e := range finishFiles(err) {
		fmt.Fprintf(errw, "rvtrace %s: %v\n", c.name, e)
		if code == 0 {
			code = 1
		}
	}
	return code
}

// exitCode reports err on errw and returns the exit code for it.
func exitCode(errw io.Writer, name string, err error) int {
	var ee exitError
	var ce codeError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ce):
		fmt.Fprintf(errw, "rvtrace %s: %v\n", name, err)
		return ce.code
	}
	fmt.Fprintf(errw, "rvtrace %s: %v\n", name, err)
	return 1
}

func printHelp(w io.Writer) {
	fmt.Fprintln(w, "rvtrace: RISC-V processor trace (N-Trace, E-Trace, Tarmac), simulator and analysis")
	fmt.Fprintln(w, "\nUsage: rvtrace COMMAND [options] [args]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'rvtrace COMMAND -h' for the options and examples of a command.")
}

// newFlagSet returns a flag set for subcommand c. Asked for (-h), its usage
// text shows the command's summary, usage lines and examples, then the
// flags; a wrong flag prints one line naming it and the hint to run
// "rvtrace CMD -h", not the whole help.
func newFlagSet(c *command) *flag.FlagSet {
	fs := flag.NewFlagSet("rvtrace "+c.name, flag.ContinueOnError)
	// The flag package writes a parse error's line to the output, then
	// calls Usage: the line is caught here to tell the two cases apart.
	var failed bytes.Buffer
	fs.SetOutput(&failed)
	fs.Usage = func() {
		if failed.Len() > 0 {
			fmt.Fprintf(stderr, "rvtrace %s: %s\nRun 'rvtrace %s -h' for the options.\n",
				c.name, strings.TrimSpace(failed.String()), c.name)
			failed.Reset()
			return
		}
		fmt.Fprintf(stderr, "%s\n\n%s\nOptions:\n", c.summary, strings.TrimRight(c.usage, "\n")+"\n")
		printOptions(stderr, c, fs)
	}
	if flagSetHook != nil {
		flagSetHook(c, fs)
	}
	return fs
}

// flagSetHook, when set (by tests), is called with every command's flag
// set as it is made.
var flagSetHook func(c *command, fs *flag.FlagSet)

// parseFlags parses args allowing flags after positional arguments, as
// users type them ("rvtrace decode OUT.bin --pcs x.txt").
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
