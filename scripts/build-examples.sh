#!/usr/bin/env bash
# Builds the bundled example programs from their sources with the Debian
# RISC-V cross compiler (scripts/install-test-deps.sh installs it). The
# built ELFs are committed, so running the examples needs no compiler.
set -euo pipefail
cd "$(dirname "$0")/../examples/demo"
CC=${CC:-riscv64-linux-gnu-gcc}
# The ELFs are reproducible bit for bit: source paths in the debug
# information are relative to the repository (-ffile-prefix-map), and assembly sources go
# through a named object file, since an ELF linked straight from a .S
# names the compiler's temporary object in its symbol table.
EX=$(cd .. && pwd)
CFLAGS="-O2 -g -march=rv64gc -mabi=lp64d -mcmodel=medany -ffreestanding -fno-builtin -nostdlib -nostartfiles -static -fno-pie -no-pie -ffile-prefix-map=$EX=examples -Wa,--debug-prefix-map=$EX=examples"
$CC $CFLAGS -c -o start.o start.S
$CC $CFLAGS -T link.ld -o demo.elf start.o demo.c
rm start.o
echo "built examples/demo/demo.elf"
cd ../trace-self
$CC $CFLAGS -c -o start.o start.S
$CC $CFLAGS -T link.ld -o trace-self.elf start.o trace-self.c
rm start.o
echo "built examples/trace-self/trace-self.elf"
$CC $CFLAGS -DSMODE -c -o start.o start.S
$CC $CFLAGS -DSMODE -Wl,--build-id=none -T link-s.ld -o trace-self-s.elf start.o trace-self.c
rm start.o
echo "built examples/trace-self/trace-self-s.elf"
cd ../mt-shared
$CC -O1 -march=rv64gc -mabi=lp64d -mcmodel=medany -nostdlib -nostartfiles -static \
	-Wl,-Ttext=0x80000000 -o mt-shared.elf mt-shared.c
echo "built examples/mt-shared/mt-shared.elf"
