#!/usr/bin/env bash
# boot-compare.sh: boots the Linux kit's kernel and initramfs on rvtrace's
# virt machine and on QEMU's (qemu-system-riscv64 -M virt), in interleaved
# rounds, and prints for each the wall-clock time from start to a console
# line (the kit's init script saying it is up), the time to power off,
# and for rvtrace the instructions it retired and its rate with Sv39 on.
#
#   scripts/boot-compare.sh [--rounds N] [--initrd FILE] [--line TEXT]
#
# Both machines get the same kernel (the kit's Image), initramfs (default
# initramfs-busybox.cpio.gz), command line (console=ttyS0 rdinit=/init
# quiet), one hart and 512 MiB of RAM. rvtrace uses its built-in SBI (add
# --rvtrace-firmware fw_dynamic.elf for Debian's OpenSBI); QEMU uses its
# bundled OpenSBI (-bios default, fw_dynamic: QEMU 7.2's fw_jump places
# the device tree at 0x82200000, inside Debian's 36 MB Image). rvtrace is
# built from this tree into a temporary directory (RVTRACE=path to use
# another binary). Needs the kit (scripts/linux-kit.sh) and
# qemu-system-riscv64 (Debian: qemu-system-misc). Every run is bounded:
# rvtrace by --max-instret, QEMU by a timeout.
set -euo pipefail

ROUNDS=3
KIT=${RVTRACE_LINUX_CACHE:-$HOME/.cache/rvtrace/linux}
INITRD=$KIT/initramfs-busybox.cpio.gz
LINE="rvtrace-init: up"
FW=
while [ $# -gt 0 ]; do
  case $1 in
    --rounds) ROUNDS=$2; shift 2 ;;
    --initrd) INITRD=$2; shift 2 ;;
    --line) LINE=$2; shift 2 ;;
    --rvtrace-firmware) FW=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "boot-compare: unknown argument $1" >&2; exit 2 ;;
  esac
done
APPEND="console=ttyS0 rdinit=/init quiet"
MAXINSTRET=8000000000 # the busybox initramfs boots in about 1 G instructions
QEMU_TIMEOUT=600

[ -s "$KIT/Image" ] && [ -s "$INITRD" ] || { echo "boot-compare: no kit in $KIT: run scripts/linux-kit.sh" >&2; exit 1; }
QEMU=$(command -v qemu-system-riscv64) || { echo "boot-compare: qemu-system-riscv64 not installed" >&2; exit 1; }
TIME=/usr/bin/time # GNU time, for the CPU seconds (Debian: time)
[ -x "$TIME" ] || { echo "boot-compare: $TIME (GNU time) not installed" >&2; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
if [ -z "${RVTRACE:-}" ]; then
  (cd "$(dirname "$0")/.." && go build -o "$TMP/rvtrace" ./cmd/rvtrace)
  RVTRACE=$TMP/rvtrace
fi

# timed NAME CMD...: runs CMD with its console (stdout and stderr) on a
# pipe, and prints "NAME LINE_S TOTAL_S EXIT CPU_S" (seconds from the
# start to the first console line containing $LINE and to the end, the
# exit code, and the CPU seconds, user and system, of the whole run); the
# console goes to $TMP/NAME.out. A run that never prints the line fails.
timed() {
  local name=$1 t0 hit= t1 rc cpu=-
  shift
  t0=$EPOCHREALTIME
  set +e
  "$TIME" -f '%U %S' -o "$TMP/$name.cpu" "$@" 2>&1 | {
    while IFS= read -r l; do
      printf '%s\n' "$l"
      if [ -z "$hit" ] && [[ $l == *"$LINE"* ]]; then
        hit=$EPOCHREALTIME
        echo "$hit" >"$TMP/$name.hit"
      fi
    done
  } >"$TMP/$name.out"
  rc=${PIPESTATUS[0]}
  set -e
  t1=$EPOCHREALTIME
  if [ ! -s "$TMP/$name.hit" ]; then
    echo "boot-compare: $name (exit $rc) never printed \"$LINE\"; its console ends:" >&2
    tail -n 20 "$TMP/$name.out" >&2
    return 1
  fi
  hit=$(cat "$TMP/$name.hit")
  rm -f "$TMP/$name.hit"
  cpu=$(awk 'NF == 2 && $1 ~ /^[0-9.]+$/ { printf "%.2f", $1 + $2 }' "$TMP/$name.cpu")
  awk -v n="$name" -v a="$t0" -v b="$hit" -v c="$t1" -v rc="$rc" -v cpu="${cpu:--}" 'BEGIN { printf "%s %.2f %.2f %d %s\n", n, b - a, c - a, rc, cpu }'
}

rv_args=(run --machine virt --kernel "$KIT/Image" --initrd "$INITRD" --append "$APPEND" --max-instret "$MAXINSTRET" --progress=false)
[ -n "$FW" ] && rv_args+=(--firmware "$FW")
q_args=(-M virt -smp 1 -m 512M -nographic -bios default -kernel "$KIT/Image" -initrd "$INITRD" -append "$APPEND")

echo "kernel $KIT/Image, initrd $INITRD, line \"$LINE\", $ROUNDS rounds, $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$("$QEMU" --version | head -n1)"
printf '%-8s %5s %8s %8s %6s %4s  %s\n' machine round line_s total_s cpu_s exit note
for r in $(seq 1 "$ROUNDS"); do
  res=$(timed rvtrace "$RVTRACE" "${rv_args[@]}")
  read -r n a b rc cpu <<<"$res"
  note=$(grep -o '[0-9]* instructions, [0-9]* cycles' "$TMP/rvtrace.out" | head -n1 | cut -d, -f1 || true)
  if [ -n "$note" ] && [ "$cpu" != - ]; then
    note="$note, $(awk -v i="${note%% *}" -v c="$cpu" 'BEGIN { printf "%.0f M instructions per CPU-second", i / c / 1e6 }')"
  fi
  printf '%-8s %5d %8s %8s %6s %4s  %s\n' rvtrace "$r" "$a" "$b" "$cpu" "$rc" "$note"
  res=$(timed qemu timeout "$QEMU_TIMEOUT" "$QEMU" "${q_args[@]}")
  read -r n a b rc cpu <<<"$res"
  printf '%-8s %5d %8s %8s %6s %4s  %s\n' qemu "$r" "$a" "$b" "$cpu" "$rc" ""
done
