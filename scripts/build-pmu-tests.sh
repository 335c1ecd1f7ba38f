#!/bin/sh
# Builds the S-mode PMU test programs (examples/pmu/pmutest.elf and
# region.elf) with the Debian cross compiler (gcc-riscv64-linux-gnu).
set -e
cd "$(dirname "$0")/../examples/pmu"
CC=${CC:-riscv64-linux-gnu-gcc}
$CC -march=rv64imafdc_zicsr_zifencei -mabi=lp64d -O2 -ffreestanding -fno-builtin -nostdlib -nostartfiles \
	-mcmodel=medany -fno-pic -no-pie -static -Wall -Wextra -Wno-unused-parameter \
	-T link.ld -Wl,--build-id=none -Wl,--no-warn-rwx-segments -o pmutest.elf start.S pmutest.c
$CC -march=rv64imac_zicsr -mabi=lp64 -nostdlib -nostartfiles -static -no-pie \
	-T link.ld -Wl,--build-id=none -Wl,--no-warn-rwx-segments -o region.elf region.S
echo "built examples/pmu/pmutest.elf and region.elf"
