package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

var versionCmd = &command{
	name:    "version",
	summary: "print the module version and the VCS revision rvtrace was built from",
	usage: `Usage: rvtrace version
       rvtrace --version

Prints the module version (a tag for "go install ...@vX", "(devel)" for a
build from a checkout), the VCS revision and time, whether the working tree
had uncommitted changes (+dirty), and the Go toolchain.
`,
}

func init() {
	versionCmd.run = runVersion
	register(versionCmd)
}

func runVersion(args []string) error {
	fs := newFlagSet(versionCmd)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 0 {
		return fmt.Errorf("version takes no arguments")
	}
	bi, ok := debug.ReadBuildInfo()
	return printVersion(stdout, bi, ok)
}

// printVersion writes the version line for build information bi (ok is
// false when the binary carries none).
func printVersion(w io.Writer, bi *debug.BuildInfo, ok bool) error {
	if !ok {
		_, err := fmt.Fprintln(w, "rvtrace: no build information in this binary")
		return err
	}
	v := bi.Main.Version
	if v == "" {
		v = "(unknown)"
	}
	var rev, at string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	line := "rvtrace " + v
	if rev != "" {
		line += " revision " + rev
		if dirty {
			line += "+dirty"
		}
	} else if v == "(devel)" || v == "(unknown)" {
		// a release (go install ...@vX) is its tag; a checkout's build
		// without stamping says so rather than nothing
		line += " (no VCS revision recorded)"
	}
	if at != "" {
		line += " " + at
	}
	if bi.GoVersion != "" {
		line += " " + bi.GoVersion
	}
	_, err := fmt.Fprintln(w, line)
	return err
}
