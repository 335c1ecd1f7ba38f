#!/bin/sh
# Builds the S-mode PMU test programs (examples/pmu/pmutest.elf and
# region.elf) with the Debian cross compiler (gcc-riscv64-linux-gnu).
set -e
cd "$(dirname "$0")/../examples/pmu"
CC=${CC:-riscv64-linux-gnu-gcc}
# Assembly sources go through named object files: an ELF linked straight
# from a .S names the compiler's temporary object in its symbol table, so
# it would differ from build to build.
P="-march=rv64imafdc_zicsr_zifencei -mabi=lp64d -mcmodel=medany -fno-pic"
$CC $P -c -o start.o start.S
$CC $P -O2 -ffreestanding -fno-builtin -nostdlib -nostartfiles \
	-mcmodel=medany -fno-pic -no-pie -static -Wall -Wextra -Wno-unused-parameter \
	-T link.ld -Wl,--build-id=none -Wl,--no-warn-rwx-segments -o pmutest.elf start.o pmutest.c
$CC -march=rv64imac_zicsr -mabi=lp64 -c -o region.o region.S
$CC -march=rv64imac_zicsr -mabi=lp64 -nostdlib -nostartfiles -static -no-pie \
	-T link.ld -Wl,--build-id=none -Wl,--no-warn-rwx-segments -o region.elf region.o
rm start.o region.o
echo "built examples/pmu/pmutest.elf and region.elf"
