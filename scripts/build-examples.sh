#!/usr/bin/env bash
# Builds the bundled example programs from their sources with the Debian
# RISC-V cross compiler (scripts/install-test-deps.sh installs it). The
# built ELFs are committed, so running the examples needs no compiler.
set -euo pipefail
cd "$(dirname "$0")/../examples/demo"
CC=${CC:-riscv64-linux-gnu-gcc}
CFLAGS="-O2 -g -march=rv64gc -mabi=lp64d -mcmodel=medany -ffreestanding -fno-builtin -nostdlib -nostartfiles -static -fno-pie -no-pie"
$CC $CFLAGS -T link.ld -o demo.elf start.S demo.c
echo "built examples/demo/demo.elf"
cd ../trace-self
$CC $CFLAGS -T link.ld -o trace-self.elf start.S trace-self.c
echo "built examples/trace-self/trace-self.elf"
$CC $CFLAGS -DSMODE -Wl,--build-id=none -T link-s.ld -o trace-self-s.elf start.S trace-self.c
echo "built examples/trace-self/trace-self-s.elf"
