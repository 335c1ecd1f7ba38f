#!/bin/sh
# Builds the bare-metal virtual-memory test programs of
# examples/sim-tests/vm (sim/vm_test.go runs them). The ELF files are
# committed; rebuild them with
#   scripts/build-vm-tests.sh
# Needs riscv64-linux-gnu-gcc (Debian: gcc-riscv64-linux-gnu). The programs
# also run on qemu-system-riscv64/32 -M spike -bios none -kernel PROG.elf
# (Debian: qemu-system-misc), which exits with the same code (svpbmt.S
# built with -DQEMU72, with -cpu rv64,svpbmt=on,svinval=on: see its header).
set -eu
cd "$(dirname "$0")/../examples/sim-tests/vm"
CC=${CC:-riscv64-linux-gnu-gcc}
FLAGS="-nostdlib -static -fno-pie -no-pie -Wl,--build-id=none -Wl,--no-warn-rwx-segments -T link.ld"
echo "$CC -march=rv64gc sv39.S -o sv39.elf"
# (through named object files, so that the ELF does not name a temporary one)
"$CC" -march=rv64gc -mabi=lp64d -c -o sv39.o sv39.S
"$CC" -march=rv64gc -mabi=lp64d $FLAGS -o sv39.elf sv39.o
echo "$CC -march=rv32gc sv32.S -o sv32.elf"
"$CC" -march=rv32gc -mabi=ilp32d -c -o sv32.o sv32.S
"$CC" -march=rv32gc -mabi=ilp32d $FLAGS -o sv32.elf sv32.o
echo "$CC -march=rv64gc_svinval svpbmt.S -o svpbmt.elf"
"$CC" -march=rv64gc_svinval -mabi=lp64d -c -o svpbmt.o svpbmt.S
"$CC" -march=rv64gc_svinval -mabi=lp64d $FLAGS -o svpbmt.elf svpbmt.o
rm sv39.o sv32.o svpbmt.o
