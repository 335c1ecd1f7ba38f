package main

import (
	"bytes"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionLine(t *testing.T) {
	bi := &debug.BuildInfo{
		GoVersion: "go1.26.8",
		Main:      debug.Module{Path: "github.com/rvtrace/rvtrace", Version: "v0.3.1"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "2b1aa380d7ae27d111a0c3f2910ffc4a858e55ca"},
			{Key: "vcs.time", Value: "2026-11-24T16:03:32Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	var b bytes.Buffer
	if err := printVersion(&b, bi, true); err != nil {
		t.Fatal(err)
	}
	want := "rvtrace v0.3.1 revision 2b1aa380d7ae27d111a0c3f2910ffc4a858e55ca+dirty 2026-11-24T16:03:32Z go1.26.8\n"
	if b.String() != want {
		t.Errorf("got %q\nwant %q", b.String(), want)
	}
	// A build without VCS stamping says so instead of printing nothing.
	b.Reset()
	bi.Main.Version = "(devel)"
	bi.Settings = nil
	printVersion(&b, bi, true)
	if want := "rvtrace (devel) (no VCS revision recorded) go1.26.8\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	// A module-proxy build of a release has its tag and no VCS stamp.
	b.Reset()
	bi.Main.Version = "v0.3.1"
	printVersion(&b, bi, true)
	if want := "rvtrace v0.3.1 go1.26.8\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
	b.Reset()
	printVersion(&b, nil, false)
	if !strings.Contains(b.String(), "no build information") {
		t.Errorf("got %q", b.String())
	}
}

func TestVersionCommand(t *testing.T) {
	code, out, errs := rv(t, "version")
	if code != 0 || errs != "" {
		t.Fatalf("version: exit %d, stderr %q", code, errs)
	}
	bi, ok := debug.ReadBuildInfo()
	var want bytes.Buffer
	printVersion(&want, bi, ok)
	if out != want.String() {
		t.Errorf("version printed %q, want %q", out, want.String())
	}
	for _, flag := range []string{"--version", "-version"} {
		if code, out2, _ := rv(t, flag); code != 0 || out2 != out {
			t.Errorf("%s: exit %d, %q; want %q", flag, code, out2, out)
		}
	}
	if code, _, _ := rv(t, "version", "extra"); code == 0 {
		t.Errorf("version with an argument succeeded")
	}
}

// A wrong flag gets one line naming it and the hint, not the whole help.
func TestUnknownFlagShortMessage(t *testing.T) {
	if len(commands) < 8 {
		t.Fatalf("only %d commands registered", len(commands))
	}
	for cmd := range commands {
		code, out, errs := rv(t, cmd, "--no-such-flag", "x")
		if code != 2 {
			t.Errorf("%s: exit %d, want 2", cmd, code)
		}
		want := "rvtrace " + cmd + ": flag provided but not defined: -no-such-flag\nRun 'rvtrace " + cmd + " -h' for the options.\n"
		if errs != want || out != "" {
			t.Errorf("%s: stderr %q stdout %q\nwant stderr %q", cmd, errs, out, want)
		}
		// -h still prints the whole help, options included.
		code, _, help := rv(t, cmd, "-h")
		if code != 0 || !strings.Contains(help, "Options:") || strings.Count(help, "\n") < 5 {
			t.Errorf("%s -h: exit %d, help %q", cmd, code, help)
		}
	}
	// A bad value is one line too.
	code, _, errs := rv(t, "run", "--harts", "two", "prog")
	if code != 2 || strings.Count(errs, "\n") != 2 || !strings.Contains(errs, `invalid value "two" for flag -harts`) {
		t.Errorf("bad value: exit %d, %q", code, errs)
	}
}
