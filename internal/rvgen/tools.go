package rvgen

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Tools returns the paths of the cross compiler and of the qemu user-mode
// emulator for xlen, or an error naming the one that is missing.
func Tools(xlen int) (cc, qemu string, err error) {
	cc, err = exec.LookPath("riscv64-linux-gnu-gcc")
	if err != nil {
		return "", "", errors.New("riscv64-linux-gnu-gcc not found (Debian: gcc-riscv64-linux-gnu)")
	}
	q := "qemu-riscv64"
	if xlen == 32 {
		q = "qemu-riscv32"
	}
	qemu, err = exec.LookPath(q)
	if err != nil {
		return "", "", fmt.Errorf("%s not found (Debian: qemu-user)", q)
	}
	return cc, qemu, nil
}

// Build assembles and links the assembly file src into the static
// program out.
func Build(cc, src, out string, xlen int) error {
	return BuildConfig(cc, src, out, Config{XLEN: xlen})
}

// BuildConfig is Build for the programs of cfg (its XLEN and Ext).
func BuildConfig(cc, src, out string, cfg Config) error {
	if cfg.XLEN != 32 {
		cfg.XLEN = 64
	}
	cmd := exec.Command(cc, "-march="+MarchFor(cfg), "-mabi="+Mabi(cfg.XLEN), "-static", "-nostdlib",
		"-Wl,--build-id=none", "-o", out, src)
	msg, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s: %v\n%s", strings.Join(cmd.Args, " "), err, msg)
	}
	return nil
}

// QEMU runs a program under qemu user mode with an empty environment and
// returns its standard output and exit code.
func QEMU(qemu, prog string) ([]byte, int, error) {
	return QEMUConfig(qemu, prog, Config{})
}

// QEMUConfig is QEMU for a program of cfg: with Config.Ext it selects a
// CPU with the extensions (ExtCPU).
func QEMUConfig(qemu, prog string, cfg Config) ([]byte, int, error) {
	var args []string
	if cfg.Ext {
		xlen := cfg.XLEN
		if xlen != 32 {
			xlen = 64
		}
		args = append(args, "-cpu", ExtCPU(xlen))
	}
	cmd := exec.Command(qemu, append(args, prog)...)
	cmd.Env = []string{}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return out.Bytes(), 0, nil
	case errors.As(err, &ee):
		return out.Bytes(), ee.ExitCode(), nil
	default:
		return nil, 0, fmt.Errorf("%s: %v: %s", qemu, err, errb.Bytes())
	}
}

// WriteFile writes the program's source.
func WriteFile(path string, cfg Config) error {
	return os.WriteFile(path, []byte(Generate(cfg)), 0o644)
}
