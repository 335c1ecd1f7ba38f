#!/usr/bin/env bash
# Installs what the tests need beyond Go, then checks that every capability
# the tests use really works (always, even when nothing had to be
# installed), so a missing piece cannot hide behind a machine that happened
# to have it. Exits non-zero naming what is missing.
#
# What the tests use (grep the *_test.go files for exec.Command/LookPath):
#   riscv64-linux-gnu-gcc -static     C test programs (sim, image); needs the
#                                     cross libc headers/libraries
#                                     (libc6-dev-riscv64-cross), which
#                                     --no-install-recommends leaves out
#   riscv64-linux-gnu-{as,objdump,nm,readelf,addr2line}
#                                     reference disassembly and symbols
#   llvm-objdump-19, llvm-mc-19       Zc* disassembly oracle (riscv); llvm-mc
#                                     assembles the Zcmp/Zcmt test program
#                                     (scripts/build-zcmp-tests.sh, which
#                                     scripts/check-examples.sh runs)
#   llvm-addr2line-19                 source-line oracle (analysis)
#   qemu-riscv64, qemu-riscv32        second opinion for Linux user mode
#   qemu-system-riscv64/-riscv32      second opinion for virtual memory
#   OpenSBI fw_jump.elf/fw_dynamic.elf the virt machine's firmware
#   chromium --headless               the HTML report test
#                                     (RVTRACE_BROWSER_TESTS=0 leaves it out)
#   genhtml (lcov)                    renders rvtrace's lcov output
#                                     (analysis TestLcovGenhtml)
#   dtc (device-tree-compiler)        reads back the device trees the
#                                     simulator writes (sim
#                                     TestTraceDeviceTree,
#                                     TestKernelDeviceTree)
#   mke2fs (e2fsprogs)                the guest's virtio disk image (sim
#                                     TestKernelDrive)
#   xz, zstd                          scripts/linux-kit.sh (test.sh runs it)
#                                     decompresses Debian's kernel modules
#                                     and vmlinuz with them (a minimal
#                                     Debian install has neither)
#   staticcheck                       the lint step of scripts/test.sh
#   pprof (standalone)                pprof -disasm through binutils' objdump
#                                     (analysis TestPprofDisasmObjdump)
#
# Needs root (or sudo) for apt-get when something is missing.
set -euo pipefail

OPENSBI=/usr/lib/riscv64-linux-gnu/opensbi/generic
BROWSER=${RVTRACE_BROWSER_TESTS:-1}

if ! command -v go >/dev/null 2>&1; then
  echo "install-test-deps: go is not on PATH: install Go (https://go.dev/dl/) first" >&2
  exit 1
fi
gologs=$(mktemp -d)

need=()
command -v riscv64-linux-gnu-gcc >/dev/null 2>&1 || need+=(gcc-riscv64-linux-gnu)
# The cross C library: without it every test that compiles a C program
# fails with "bits/libc-header-start.h: No such file".
[ -e /usr/riscv64-linux-gnu/include/stdio.h ] && [ -e /usr/riscv64-linux-gnu/lib/libc.a ] || need+=(libc6-dev-riscv64-cross)
command -v riscv64-linux-gnu-objdump >/dev/null 2>&1 || need+=(binutils-riscv64-linux-gnu)
{ command -v llvm-objdump-19 && command -v llvm-mc-19 && command -v llvm-addr2line-19; } >/dev/null 2>&1 || need+=(llvm-19)
{ command -v qemu-riscv64 && command -v qemu-riscv32; } >/dev/null 2>&1 || need+=(qemu-user)
{ command -v qemu-system-riscv64 && command -v qemu-system-riscv32; } >/dev/null 2>&1 || need+=(qemu-system-misc)
[ -e "$OPENSBI/fw_jump.elf" ] && [ -e "$OPENSBI/fw_dynamic.elf" ] || need+=(opensbi)
command -v genhtml >/dev/null 2>&1 || need+=(lcov)
command -v dtc >/dev/null 2>&1 || need+=(device-tree-compiler)
# mke2fs is in /sbin, which a user's PATH may lack (the tests look it up
# on PATH)
command -v mke2fs >/dev/null 2>&1 || need+=(e2fsprogs)
command -v xz >/dev/null 2>&1 || need+=(xz-utils)
command -v zstd >/dev/null 2>&1 || need+=(zstd)
if [ "$BROWSER" = 1 ]; then
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
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
SC=$(command -v staticcheck 2>/dev/null || echo "$(go env GOPATH)/bin/staticcheck")
if [ ! -x "$SC" ]; then
  echo "install-test-deps: installing staticcheck"
  GOFLAGS=-mod=mod go install honnef.co/go/tools/cmd/staticcheck@v0.8.2 >"$gologs/staticcheck.log" 2>&1 || sed 's/^/  /' "$gologs/staticcheck.log" | head -20 >&2
fi

# the standalone pprof, whose -disasm runs the RISC-V objdump (go tool
# pprof uses Go's own disassembler instead)
PP=$(command -v pprof 2>/dev/null || echo "$(go env GOPATH)/bin/pprof")
if [ ! -x "$PP" ]; then
  echo "install-test-deps: installing pprof"
  GOFLAGS=-mod=mod go install github.com/google/pprof@v0.0.0-20260906184651-6331bc6350fe >"$gologs/pprof.log" 2>&1 || sed 's/^/  /' "$gologs/pprof.log" | head -20 >&2
fi

# Verify every capability, whatever was installed above.
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
missing=()
fail() { missing+=("$1"); echo "install-test-deps: MISSING: $1" >&2; }

cat >"$work/hello.c" <<'EOF'
#include <stdio.h>
int main(int argc, char **argv) { printf("hello from rv64 %d\n", argc); return 0; }
EOF
if ! riscv64-linux-gnu-gcc -static -O2 -o "$work/hello" "$work/hello.c" >"$work/gcc.log" 2>&1; then
  fail "riscv64-linux-gnu-gcc -static cannot build a C program (gcc-riscv64-linux-gnu, libc6-dev-riscv64-cross): $(head -c 300 "$work/gcc.log")"
else
  out=$(qemu-riscv64 "$work/hello" a b 2>&1 || true)
  [ "$out" = "hello from rv64 3" ] || fail "qemu-riscv64 does not run a static riscv64 program (qemu-user): got '$out'"
  # the RV32 programs of the differential tests (internal/rvgen) run on
  # qemu-riscv32
  qemu-riscv32 --version 2>/dev/null | grep -q '^qemu-riscv32 version' || fail "qemu-riscv32 --version (qemu-user)"
  riscv64-linux-gnu-objdump -d "$work/hello" >"$work/hello.dis" 2>&1 || true
  grep -q '<main>:' "$work/hello.dis" ||
    fail "riscv64-linux-gnu-objdump -d does not disassemble (binutils-riscv64-linux-gnu)"
  for t in as nm readelf addr2line; do
    command -v riscv64-linux-gnu-$t >/dev/null 2>&1 || fail "riscv64-linux-gnu-$t (binutils-riscv64-linux-gnu)"
  done
  # llvm-addr2line names the source line of main in a -g build (the
  # source-line oracle of analysis's tests).
  if riscv64-linux-gnu-gcc -static -O2 -g -o "$work/hello-g" "$work/hello.c" >/dev/null 2>&1; then
    mainpc=$(riscv64-linux-gnu-nm "$work/hello-g" | awk '$3 == "main" {print $1}')
    line=$(llvm-addr2line-19 -e "$work/hello-g" "0x$mainpc" 2>&1 || true)
    case "$line" in *hello.c:[0-9]*) ;; *) fail "llvm-addr2line-19 does not name main's source line (llvm-19): got '$line'" ;; esac
  fi
fi

# A Zcb instruction: c.lbu a0,0(a0) is the 16-bit 0x8108 (llvm-mc
# assembles it, llvm-objdump decodes it: a 2-byte lbu, not <unknown>).
if ! printf 'c.lbu a0, 0(a0)\n' | llvm-mc-19 -triple=riscv64 -mattr=+c,+zcb -filetype=obj -o "$work/zc.o" 2>"$work/mc.log"; then
  fail "llvm-mc-19 cannot assemble Zcb (llvm-19): $(head -c 300 "$work/mc.log")"
elif ! { llvm-objdump-19 -d --mattr=+c,+zcb "$work/zc.o" 2>&1 || true; } | grep -v unknown | grep -Eq '^[[:space:]]*0:[[:space:]]+81 ?08[[:space:]]+lbu'; then
  fail "llvm-objdump-19 does not disassemble Zcb c.lbu (llvm-19)"
fi
# A Zcmp instruction, as scripts/build-zcmp-tests.sh assembles them: on
# RV32, cm.push {ra, s0-s11}, -112 is the 16-bit 0xb8fe (stack_adj_base
# 64 plus 3 x 16).
if ! printf 'cm.push {ra, s0-s11}, -112\n' | llvm-mc-19 -triple=riscv32 -mattr=+zca,+zcmp,+zcmt -filetype=obj -o "$work/zcmp.o" 2>"$work/mc.log"; then
  fail "llvm-mc-19 cannot assemble Zcmp (llvm-19): $(head -c 300 "$work/mc.log")"
elif ! { llvm-objdump-19 -d --mattr=+zca,+zcmp "$work/zcmp.o" 2>&1 || true; } | grep -Eq '^[[:space:]]*0:[[:space:]]+b8 ?fe[[:space:]]+cm\.push'; then
  fail "llvm-mc-19 does not assemble Zcmp cm.push as 0xb8fe (llvm-19)"
fi

for q in qemu-system-riscv64 qemu-system-riscv32; do
  $q --version 2>/dev/null | grep -q 'QEMU emulator' || fail "$q --version (qemu-system-misc)"
done
for fw in fw_jump.elf fw_dynamic.elf; do
  [ -s "$OPENSBI/$fw" ] || fail "OpenSBI firmware $OPENSBI/$fw (opensbi)"
done

# dtc compiles a device tree source and reads the blob back.
printf '/dts-v1/;\n/ { compatible = "rvtrace"; };\n' >"$work/t.dts"
if ! dtc -q -I dts -O dtb -o "$work/t.dtb" "$work/t.dts" >"$work/dtc.log" 2>&1 ||
  ! dtc -q -I dtb -O dts "$work/t.dtb" 2>/dev/null | grep -q 'compatible = "rvtrace"'; then
  fail "dtc does not compile and decompile a device tree (device-tree-compiler): $(head -c 300 "$work/dtc.log" 2>/dev/null)"
fi

# mke2fs makes an ext2 image holding a directory's files, as
# TestKernelDrive does.
mkdir -p "$work/e2src" && echo rvtrace >"$work/e2src/f"
if ! mke2fs -q -F -t ext2 -d "$work/e2src" "$work/e2.img" 1M >"$work/mke2fs.log" 2>&1; then
  fail "mke2fs -d does not make an ext2 image (e2fsprogs, on PATH): $(head -c 300 "$work/mke2fs.log")"
fi

# the Linux kit's decompressors
[ "$(printf rvtrace | xz -c 2>/dev/null | xz -dc 2>/dev/null)" = rvtrace ] || fail "xz does not compress and decompress (xz-utils)"
[ "$(printf rvtrace | zstd -qc 2>/dev/null | zstd -qdc 2>/dev/null)" = rvtrace ] || fail "zstd does not compress and decompress (zstd)"

# genhtml renders a one-function tracefile (with its source) to HTML.
printf 'int f(void) { return 1; }\n' >"$work/cov.c"
printf 'TN:t\nSF:%s\nFN:1,f\nFNDA:1,f\nFNF:1\nFNH:1\nDA:1,1\nLF:1\nLH:1\nend_of_record\n' "$work/cov.c" >"$work/cov.info"
if ! genhtml -q -o "$work/covhtml" "$work/cov.info" >"$work/genhtml.log" 2>&1 || ! grep -q 'cov.c' "$work/covhtml/index.html" 2>/dev/null; then
  fail "genhtml does not render an lcov tracefile (lcov): $(head -c 300 "$work/genhtml.log")"
fi

if [ "$BROWSER" = 1 ]; then
  chrome=$(command -v chromium || command -v chromium-browser || true)
  if [ -z "$chrome" ]; then
    fail "chromium (set RVTRACE_BROWSER_TESTS=0 to leave the browser test out)"
  else
    printf '<!doctype html><p id="x">rvtrace</p><script>document.getElementById("x").textContent="rendered"</script>\n' >"$work/t.html"
    dom=$(timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --no-first-run \
      --disable-background-networking --disable-component-update --disable-sync \
      --user-data-dir="$work/chrome" --dump-dom "file://$work/t.html" 2>/dev/null || true)
    case "$dom" in
    *'>rendered<'*) ;;
    *) fail "chromium --headless does not render a local page and run its script (chromium)" ;;
    esac
    timeout 120 "$chrome" --headless --no-sandbox --disable-gpu --no-first-run \
      --disable-background-networking --disable-component-update --disable-sync \
      --user-data-dir="$work/chrome" --window-size=320,200 --screenshot="$work/shot.png" "file://$work/t.html" >/dev/null 2>&1 || true
    [ "$(head -c 8 "$work/shot.png" 2>/dev/null | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] ||
      fail "chromium --headless --screenshot does not write a PNG (chromium)"
  fi
fi

if [ ! -x "$SC" ]; then
  fail "staticcheck (go install honnef.co/go/tools/cmd/staticcheck@v0.8.2)"
elif ! "$SC" -version >/dev/null 2>&1; then
  fail "staticcheck does not run ($SC -version)"
fi

if [ ! -x "$PP" ]; then
  fail "pprof (go install github.com/google/pprof@v0.0.0-20260906184651-6331bc6350fe)"
elif ! "$PP" -h >/dev/null 2>&1; then
  fail "pprof does not run ($PP -h)"
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-test-deps: ${#missing[@]} capabilities missing; the tests that need them would fail or skip" >&2
  exit 1
fi
echo "install-test-deps: all test tools present and working"
