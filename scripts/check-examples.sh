#!/usr/bin/env bash
# Checks that every committed example and test ELF is what the project's
# build scripts make from the sources in the repository, byte for byte:
# it copies the sources and scripts to a temporary directory, runs every
# scripts/build-*.sh and examples/analysis/build.sh (its ELFs only) there,
# and compares each ELF with the committed one. The recorded differential
# tests (examples/difftest, made by its generator) are checked by
# TestDifftestRecorded instead.
# Needs the Debian cross compiler (scripts/install-test-deps.sh installs
# and checks it), the one the committed ELFs were built with (Debian
# bookworm's GCC 12): another gives other bytes. Exits 1 naming each ELF
# that differs, and the compilers when they are not the same.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The committed files only (a work tree may hold scratch output); from a
# source tree without git (a tarball), every file there.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t srcs < <(git ls-files scripts examples etrace)
  mapfile -t elfs < <(git ls-files '*.elf' | grep -v '^examples/difftest/')
else
  mapfile -t srcs < <(find scripts examples etrace -type f)
  mapfile -t elfs < <(find . -name '*.elf' ! -path './examples/difftest/*' | sed 's|^\./||' | LC_ALL=C sort)
fi
printf '%s\0' "${srcs[@]}" | tar --null -T - -cf - | tar -xf - -C "$tmp"
# Without the committed ELFs: each must come from a build script.
for f in "${elfs[@]}"; do rm -f "$tmp/$f"; done
for s in scripts/build-*.sh examples/analysis/build.sh; do
  if ! (cd "$tmp" && ELF_ONLY=1 bash "$s" >"$tmp/build.log" 2>&1); then
    cat "$tmp/build.log"
    echo "check-examples: $s failed" >&2
    exit 1
  fi
done
bad=0
for f in "${elfs[@]}"; do
  if [ ! -e "$tmp/$f" ]; then
    echo "check-examples: $f is committed but no build script makes it" >&2
    bad=1
  elif ! cmp -s "$f" "$tmp/$f"; then
    echo "check-examples: $f differs from what its build script makes from the committed sources" >&2
    bad=1
  fi
done
if [ "$bad" != 0 ]; then
  # The same sources give the same bytes only with the same toolchain: say
  # so when the compiler is not the one the committed ELFs name.
  cc=$(${CC:-riscv64-linux-gnu-gcc} --version | head -n1 | sed 's/^[^ ]* //')
  made=$(for f in "${elfs[@]}"; do
    LC_ALL=C tr -c '[:print:]' '\n' <"$f" | sed -n 's/^GCC: //p'
  done | sort -u | paste -sd, -)
  case ",$made," in
    *",$cc,"*) ;;
    *) echo "check-examples: the committed ELFs were built with GCC ${made:-unknown}; this machine's is $cc: rebuild them with the build scripts and commit them when the project's toolchain changed" >&2 ;;
  esac
  exit 1
fi
echo "check-examples: ${#elfs[@]} ELF files rebuilt from source, identical"
