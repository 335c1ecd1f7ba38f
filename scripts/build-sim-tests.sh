#!/bin/sh
# Builds the Linux guest programs the simulator tests run (sim/linux_test.go)
# into static riscv64 ELF files next to their sources. The ELF files are
# committed so that the tests need no cross compiler; rebuild them with
#   scripts/build-sim-tests.sh
# Needs riscv64-linux-gnu-gcc (Debian: gcc-riscv64-linux-gnu).
set -eu
cd "$(dirname "$0")/../examples/sim-tests"
CC=${CC:-riscv64-linux-gnu-gcc}
for src in *.c; do
	out=${src%.c}.elf
	echo "$CC -static -O2 $src -o $out"
	"$CC" -static -O2 -march=rv64gc -mabi=lp64d -o "$out" "$src" -lm
done
