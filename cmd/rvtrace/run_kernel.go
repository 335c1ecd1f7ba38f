package main

import (
	"debug/elf"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/rvtrace/rvtrace/image"
	"github.com/rvtrace/rvtrace/sim"
)

// runKernel holds the Linux kernel boot options of the run command
// (--kernel, --initrd, --append, --dtb, --dtb-out).
type runKernel struct {
	kernel, initrd, appendArgs, dtb, dtbOut, drive *string
	driveRW                                        *bool
}

// openSBIDir is where Debian's opensbi package installs the generic
// platform's firmware.
const openSBIDir = "/usr/lib/riscv64-linux-gnu/opensbi/generic"

func kernelFlags(fs *flag.FlagSet) *runKernel {
	return &runKernel{
		kernel: fs.String("kernel", "", "with --machine virt: boot this Linux kernel (raw Image or ELF) instead of running a payload; "+
			"on the simulator's SBI unless --firmware is given (a path, or fw_dynamic / fw_jump for Debian's OpenSBI in "+openSBIDir+")"),
		initrd:     fs.String("initrd", "", "with --kernel: the initial RAM disk `file`"),
		appendArgs: fs.String("append", "", "with --kernel: the kernel command line"),
		dtb:        fs.String("dtb", "", "with --kernel: boot with this device tree `file` instead of the generated one"),
		dtbOut:     fs.String("dtb-out", "", "with --kernel: write the device tree the kernel boots with to `file`"),
		drive:      fs.String("drive", "", "with --kernel: a virtio-blk disk (virtio-mmio, /dev/vda) backed by this image `file`, read-only unless --drive-rw"),
		driveRW:    fs.Bool("drive-rw", false, "with --drive: let the guest write to the disk image"),
	}
}

// firmwarePath resolves --firmware for a kernel boot: "" when the flag
// was not given (the built-in SBI), Debian's OpenSBI for a bare name.
func firmwarePath(fs *flag.FlagSet, fw string) string {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "firmware" })
	switch {
	case !set || fw == "" || fw == "sbi" || fw == "builtin":
		return ""
	case fw == "opensbi" || fw == "fw_dynamic":
		return filepath.Join(openSBIDir, "fw_dynamic.elf")
	case fw == "fw_jump":
		return filepath.Join(openSBIDir, "fw_jump.elf")
	case !strings.Contains(fw, "/"):
		if _, err := os.Stat(fw); err != nil {
			return filepath.Join(openSBIDir, fw)
		}
	}
	return fw
}

// load boots the kernel on the virt machine.
func (k *runKernel) load(m *sim.Machine, fs *flag.FlagSet, machine, fw string, extra []string, ram uint64) error {
	if machine != "virt" {
		return fmt.Errorf("--kernel needs --machine virt")
	}
	if len(extra) > 0 {
		return fmt.Errorf("--kernel takes no program arguments (got %q); the command line is --append", extra[0])
	}
	if *k.drive != "" {
		if err := m.AttachDrive(*k.drive, *k.driveRW); err != nil {
			return err
		}
	}
	err := m.LoadKernel(sim.Kernel{Image: *k.kernel, Initrd: *k.initrd, Append: *k.appendArgs, DTB: *k.dtb,
		Firmware: firmwarePath(fs, fw), RAMSize: ram})
	if err != nil {
		return err
	}
	if *k.dtbOut != "" {
		if err := os.WriteFile(*k.dtbOut, m.DeviceTree(), 0o644); err != nil {
			return err
		}
	}
	m.SetStdin(os.Stdin)
	return nil
}

// addImage adds the program's code to the image set: the ELF, or
// nothing for a raw kernel Image (its code is not described by a file
// the decoders can read).
func (k *runKernel) addImage(img *image.Set, prog string) error {
	if *k.kernel != "" {
		if f, err := elf.Open(prog); err == nil {
			f.Close()
			return img.AddELF(prog)
		}
		return nil
	}
	return img.AddELF(prog)
}
