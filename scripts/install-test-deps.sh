#!/usr/bin/env bash
# Installs what the tests need beyond Go: the RISC-V cross toolchain and
# binutils (reference disassembly, building the example programs) and QEMU
# user mode (second opinion for the simulator). Idempotent; does nothing
# when everything is present. Needs root (or sudo) for apt-get.
set -euo pipefail

need=()
command -v riscv64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-riscv64-linux-gnu)
command -v riscv64-linux-gnu-objdump >/dev/null 2>&1 || need+=(binutils-riscv64-linux-gnu)
command -v llvm-objdump-19 >/dev/null 2>&1 || need+=(llvm-19)
command -v qemu-riscv64 >/dev/null 2>&1 || need+=(qemu-user)
command -v qemu-system-riscv64 >/dev/null 2>&1 || need+=(qemu-system-misc)
command -v opensbi >/dev/null 2>&1 || [ -e /usr/lib/riscv64-linux-gnu/opensbi ] || need+=(opensbi)
if [ "${RVTRACE_BROWSER_TESTS:-1}" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || need+=(chromium)
fi

if [ ${#need[@]} -gt 0 ]; then
  echo "install-test-deps: installing ${need[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# staticcheck, for the lint step of scripts/test.sh
if ! command -v staticcheck >/dev/null 2>&1 && [ ! -x "$(go env GOPATH)/bin/staticcheck" ]; then
  echo "install-test-deps: installing staticcheck"
  GOFLAGS=-mod=mod go install honnef.co/go/tools/cmd/staticcheck@v0.8.2 >/dev/null 2>&1 || \
    echo "install-test-deps: staticcheck could not be installed; lint step will be skipped"
fi
