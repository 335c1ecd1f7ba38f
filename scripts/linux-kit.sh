#!/usr/bin/env bash
# linux-kit.sh: fetches Debian's RISC-V Linux kernel, busybox and perf, and
# builds an initramfs that boots on `rvtrace run --machine virt`.
#
# Downloads, with a private apt configuration (its own sources.list, lists
# and cache under the kit directory, APT::Architecture=riscv64; the
# system's apt configuration is not changed and root is not needed), the
# packages linux-image-riscv64 (the kernel the metapackage depends on),
# busybox-static and linux-perf with the libraries perf needs, extracts
# them with dpkg-deb -x and builds the initramfs. Everything goes into
# $RVTRACE_LINUX_CACHE (default ~/.cache/rvtrace/linux):
#
#   Image               the raw kernel image (Debian's vmlinuz, decompressed)
#   System.map          the kernel's symbols, from linux-image-VERSION-dbg
#                       (a 1.2 GB download, deleted once System.map is out
#                       of it), checked against the Image; --no-system-map
#                       leaves it out (then take the symbols from the
#                       guest's /proc/kallsyms)
#   root/               the extracted tree (root/bin/busybox, perf, libraries)
#   init                the init script the initramfs runs
#   initramfs.cpio.gz   the initramfs: busybox as /bin/sh etc., perf, /init
#   initramfs-busybox.cpio.gz  the same with busybox and /init only
#   versions.txt        the package versions the kit holds
#
# The suite is Debian unstable (sid), the only one with riscv64 packages,
# from the mirror the system's apt sources name (RVTRACE_DEBIAN_MIRROR
# overrides it). Idempotent: a kit that is complete and verifies (unless
# --no-system-map, with a System.map) is left as it is (--force rebuilds
# it). Exits non-zero, saying why, on any failure.
set -euo pipefail

CACHE=${RVTRACE_LINUX_CACHE:-$HOME/.cache/rvtrace/linux}
KIT_VERSION=5 # bump when what the kit builds changes
FORCE=0
SYSMAP=1
for a in "$@"; do
  case $a in
    --force) FORCE=1 ;;
    --no-system-map) SYSMAP=0 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "linux-kit: unknown argument $a" >&2; exit 2 ;;
  esac
done

say() { echo "linux-kit: $*" >&2; }
die() { say "error: $*"; exit 1; }

# verify checks a built kit: the Image's RISC-V header, System.map,
# the busybox binary and the initramfs listing.
verify() {
  local d=$1
  [ -s "$d/Image" ] || { say "missing $d/Image"; return 1; }
  # RISC-V Image header: magic "RISCV\0\0\0" at 48, "RSC\x05" at 56.
  [ "$(dd if="$d/Image" bs=1 skip=48 count=5 2>/dev/null)" = RISCV ] ||
    { say "$d/Image has no RISC-V Image header"; return 1; }
  if [ $SYSMAP = 1 ] || [ -e "$d/System.map" ]; then
    verify_system_map "$d/System.map" "$d/Image" || return 1
  fi
  [ -x "$d/root/bin/busybox" ] || { say "missing $d/root/bin/busybox"; return 1; }
  [ -s "$d/initramfs.cpio.gz" ] || { say "missing $d/initramfs.cpio.gz"; return 1; }
  local list
  list=$(gzip -dc "$d/initramfs.cpio.gz" | cpio_list) || { say "$d/initramfs.cpio.gz does not list"; return 1; }
  for f in init bin usr/bin/busybox usr/bin/sh usr/bin/perf; do
    grep -qx "$f" <<<"$list" || { say "initramfs lacks $f"; return 1; }
  done
  list=$(gzip -dc "$d/initramfs-busybox.cpio.gz" | cpio_list) || { say "$d/initramfs-busybox.cpio.gz does not list"; return 1; }
  for f in init bin usr/bin/busybox usr/bin/sh; do
    grep -qx "$f" <<<"$list" || { say "initramfs-busybox lacks $f"; return 1; }
  done
  # every library perf links must be in the tree
  if command -v riscv64-linux-gnu-objdump >/dev/null 2>&1; then
    local lib
    for lib in $(riscv64-linux-gnu-objdump -p "$d/root/usr/bin/perf" | sed -n 's/^ *NEEDED *//p'); do
      [ -e "$d/root/usr/lib/riscv64-linux-gnu/$lib" ] || [ -e "$d/root/usr/lib/$lib" ] ||
        { say "perf needs $lib, absent from $d/root"; return 1; }
    done
  fi
  [ -s "$d/versions.txt" ] || { say "missing $d/versions.txt"; return 1; }
}

# verify_system_map MAP IMAGE checks that MAP is the symbol map of the raw
# IMAGE: complete (it ends with _end), its _end - _start is the Image
# header's effective image size (bytes 16-23), and the kernel's version
# banner (linux_banner) is where MAP says, counted from _start (the
# Image's first byte). A map of another build of the kernel misses the
# banner or gives another size (the banner alone can stay in place: the
# kernel's sections start at 2 MiB boundaries).
verify_system_map() {
  local map=$1 img=$2 start end size banner off
  [ -s "$map" ] || { say "missing $map"; return 1; }
  tail -n 3 "$map" | grep -q ' _end$' || { say "$map is incomplete (no _end)"; return 1; }
  start=$(sed -n 's/^\([0-9a-f]\{16\}\) [Tt] _start$/\1/p' "$map" | head -n1)
  end=$(sed -n 's/^\([0-9a-f]\{16\}\) [A-Za-z] _end$/\1/p' "$map" | head -n1)
  banner=$(sed -n 's/^\([0-9a-f]\{16\}\) [DdRr] linux_banner$/\1/p' "$map" | head -n1)
  [ -n "$start" ] && [ -n "$end" ] && [ -n "$banner" ] || { say "$map names no _start, _end or linux_banner"; return 1; }
  size=$(od -An -tu8 --endian=little -j16 -N8 "$img" | tr -d ' ')
  [ "$((0x$end - 0x$start))" = "$size" ] ||
    { say "$map does not match $img: _end - _start is $((0x$end - 0x$start)), the Image's header says ${size:-nothing}"; return 1; }
  off=$((0x$banner - 0x$start))
  [ "$off" -gt 0 ] || { say "$map: linux_banner before _start"; return 1; }
  [ "$(dd if="$img" bs=65536 iflag=skip_bytes,count_bytes skip="$off" count=14 status=none)" = "Linux version " ] ||
    { say "$map does not match $img: no version banner at linux_banner (file offset $off)"; return 1; }
}

# cpio_list lists a newc archive on stdin (host cpio, else the extracted
# busybox under qemu-riscv64).
cpio_list() {
  if command -v cpio >/dev/null 2>&1; then
    cpio -it --quiet
  else
    qemu-riscv64 "$CACHE/root/bin/busybox" cpio -t 2>/dev/null
  fi | sed 's|^\./||'
}

if [ $FORCE = 0 ] && [ "$(cat "$CACHE/.done" 2>/dev/null)" = "$KIT_VERSION" ] && verify "$CACHE" 2>/dev/null; then
  say "kit present and verified in $CACHE"
  cat "$CACHE/versions.txt"
  exit 0
fi

command -v apt-get >/dev/null || die "apt-get is needed"
command -v dpkg-deb >/dev/null || die "dpkg-deb is needed"

mkdir -p "$CACHE"
APT=$CACHE/apt
rm -rf "$APT"
mkdir -p "$APT/lists/partial" "$APT/archives/partial" "$APT/etc/preferences.d" "$APT/etc/apt.conf.d" "$APT/debs"
: >"$APT/status"

MIRROR=${RVTRACE_DEBIAN_MIRROR:-}
if [ -z "$MIRROR" ]; then
  MIRROR=$(grep -rhE '^(deb |URIs:)' /etc/apt/sources.list /etc/apt/sources.list.d/ 2>/dev/null | grep -oE 'https?://[^ ]*/debian/?' |
    grep -v security | head -n1 || true)
fi
MIRROR=${MIRROR:-http://deb.debian.org/debian}
MIRROR=${MIRROR%/}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
if [ -e "$KEYRING" ]; then
  echo "deb [arch=riscv64 signed-by=$KEYRING] $MIRROR sid main" >"$APT/sources.list"
else
  say "warning: $KEYRING missing, package signatures are not checked"
  echo "deb [arch=riscv64 trusted=yes] $MIRROR sid main" >"$APT/sources.list"
fi

aptopts=(
  -o "Dir::Etc::SourceList=$APT/sources.list"
  -o "Dir::Etc::SourceParts=-"
  -o "Dir::Etc::Parts=$APT/etc/apt.conf.d"
  -o "Dir::Etc::Preferences=$APT/etc/preferences"
  -o "Dir::Etc::PreferencesParts=$APT/etc/preferences.d"
  -o "Dir::State=$APT"
  -o "Dir::State::Lists=$APT/lists"
  -o "Dir::State::status=$APT/status"
  -o "Dir::Cache=$APT"
  -o "Dir::Cache::Archives=$APT/archives"
  -o "APT::Architecture=riscv64"
  -o "APT::Architectures::=riscv64"
  -o "Acquire::Languages=none"
  -o "Acquire::IndexTargets::deb::Contents-deb::DefaultEnabled=false"
  -o "Debug::NoLocking=true"
)

say "fetching the package lists of Debian sid riscv64 from $MIRROR"
if [ "$(id -u)" = 0 ]; then aptopts+=(-o "APT::Sandbox::User=root"); fi
if ! apt-get "${aptopts[@]}" -qq update >"$APT/update.log" 2>&1 ||
  ! ls "$APT"/lists/*_sid_main_binary-riscv64_Packages* >/dev/null 2>&1; then
  cat "$APT/update.log" >&2
  die "Debian unstable (sid) riscv64 is not reachable through $MIRROR"
fi

policy_version() { apt-cache "${aptopts[@]}" show "$1" 2>/dev/null | sed -n 's/^Version: //p' | head -n1; }

# The kernel: the metapackage names the versioned image package.
KPKG=$(apt-cache "${aptopts[@]}" depends linux-image-riscv64 2>/dev/null |
  sed -n 's/^ *Depends: \(linux-image-[0-9][^ ]*\).*/\1/p' | head -n1)
[ -n "$KPKG" ] || die "linux-image-riscv64 names no kernel package"
# Since 7.x the image package is split: linux-binary-VERSION holds
# /usr/lib/modules/VERSION/vmlinuz (older ones keep /boot/vmlinuz-VERSION).
KVER=${KPKG#linux-image-}
kpkgs=("$KPKG")
for cand in "linux-binary-$KVER" "linux-image-$KVER-unsigned"; do
  if [ -n "$(policy_version "$cand")" ]; then kpkgs+=("$cand"); fi
done
say "kernel: ${kpkgs[*]} $(policy_version "$KPKG")"

# linux-perf and the libraries it links, recursively, but not libc's own
# closure beyond what perf needs at run time.
want=(busybox-static linux-perf "${kpkgs[@]}")
deps=$(apt-cache "${aptopts[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances --no-pre-depends linux-perf 2>/dev/null |
  grep -v '^ ' | grep -v '^<' | sort -u)
for p in $deps; do
  case $p in
    linux-perf|debconf*|perl*|python3*|libperl*|libpython*-stdlib|dpkg|tar|install-info|*-common|gcc-*-base|libc-bin|sensible-utils|mime-support|media-types|tzdata|readline-common|netbase|base-files|debianutils|coreutils|sed|grep|findutils|bash|dash|diffutils|util-linux|libpam*|login|passwd|adduser) ;;
    lib*|zlib*) want+=("$p") ;;
  esac
done
say "downloading ${#want[@]} packages and linux-modules-$KVER (for virtio-blk and ext4)"
(cd "$APT/debs" && apt-get "${aptopts[@]}" -qq download "${want[@]}" >"$APT/download.log" 2>&1) ||
  { cat "$APT/download.log" >&2; die "apt-get download failed"; }
mkdir -p "$APT/modules"
(cd "$APT/modules" && apt-get "${aptopts[@]}" -qq download "linux-modules-$KVER" >>"$APT/download.log" 2>&1) ||
  { cat "$APT/download.log" >&2; die "apt-get download linux-modules-$KVER failed"; }

ROOT=$CACHE/root
rm -rf "$ROOT" "$CACHE/.done"
mkdir -p "$ROOT"
: >"$CACHE/versions.txt.new"
for deb in "$APT"/debs/*.deb; do
  dpkg-deb -x "$deb" "$ROOT"
  echo "$(dpkg-deb -f "$deb" Package) $(dpkg-deb -f "$deb" Version)" >>"$CACHE/versions.txt.new"
done
# The modules a disk needs (virtio_mmio, virtio_blk, ext4 and what they
# depend on, from modules.dep), decompressed, and the order to load them
# in (usr/lib/modules/load, read by the init script).
MTMP=$APT/modules/x
rm -rf "$MTMP"
mdeb=$(ls "$APT"/modules/*.deb)
dpkg-deb -x "$mdeb" "$MTMP"
echo "$(dpkg-deb -f "$mdeb" Package) $(dpkg-deb -f "$mdeb" Version)" >>"$CACHE/versions.txt.new"
MDIR=$(ls -d "$MTMP"/usr/lib/modules/* | head -n1)
KREL=$(basename "$MDIR")
mkdir -p "$ROOT/usr/lib/modules/$KREL"
: >"$ROOT/usr/lib/modules/load"
declare -A seen=()
add_mod() { # add_mod NAME: its dependencies (.modinfo depends=) first
  local name=${1//-/_} path out d
  [ -n "${seen[$name]:-}" ] && return
  seen[$name]=1
  path=$(find "$MDIR/kernel" \( -name "$name.ko*" -o -name "${name//_/-}.ko*" \) | head -n1)
  [ -n "$path" ] || die "module $name not in linux-modules-$KVER"
  out="$ROOT/usr/lib/modules/$KREL/$name.ko"
  case $path in
    *.ko.xz) xz -dc "$path" >"$out" ;;
    *.ko.zst) zstd -qdc "$path" >"$out" ;;
    *.ko.gz) gzip -dc "$path" >"$out" ;;
    *) cp "$path" "$out" ;;
  esac
  for d in $(tr '\0' '\n' <"$out" | sed -n 's/^depends=//p' | tr ',' ' '); do add_mod "$d"; done
  echo "/lib/modules/$KREL/$name.ko" >>"$ROOT/usr/lib/modules/load"
}
for m in virtio_mmio virtio_blk ext4; do add_mod $m; done
rm -rf "$MTMP" "$mdeb" # 116 MB of modules of which the kit keeps six
sort -o "$CACHE/versions.txt.new" "$CACHE/versions.txt.new"

# The kernel image: Debian's riscv64 vmlinuz is the Image, compressed
# (gzip for the kernels so far); decompress whatever it is.
VMLINUZ=$(ls "$ROOT"/usr/lib/modules/*/vmlinuz "$ROOT"/boot/vmlinu[xz]-* 2>/dev/null | head -n1 || true)
[ -n "$VMLINUZ" ] || die "no vmlinuz in ${kpkgs[*]}"
case $(od -An -tx1 -N4 "$VMLINUZ" | tr -d ' ') in
  1f8b*) gzip -dc "$VMLINUZ" >"$CACHE/Image" ;;
  28b52ffd) zstd -qdc "$VMLINUZ" >"$CACHE/Image" ;;
  fd377a58) xz -dc "$VMLINUZ" >"$CACHE/Image" ;;
  *) cp "$VMLINUZ" "$CACHE/Image" ;;
esac
# the kernel package's files stay out of the initramfs
for d in "$ROOT"/usr/lib/modules/*/; do
  rm -rf "$d"vmlinuz "$d"System.map "$d"config "$d"dtb "$d"modules.*
done
# Debian's System.map (in linux-base-VERSION, not fetched) is a stub
# naming linux-image-VERSION-dbg, 1.2 GB of debug information whose first
# file is the real System.map. Unless --no-system-map, the kit downloads
# that package (apt checks it against the signed index), takes System.map
# out and deletes the package.
rm -f "$CACHE/System.map"
if [ $SYSMAP = 1 ]; then
  DBG=linux-image-$KVER-dbg
  [ -n "$(policy_version "$DBG")" ] || die "$DBG (the kernel's System.map) is not in the package index"
  say "System.map: downloading $DBG $(policy_version "$DBG") (1.2 GB)"
  mkdir -p "$APT/dbg"
  (cd "$APT/dbg" && apt-get "${aptopts[@]}" -qq download "$DBG" >"$APT/sysmap.log" 2>&1) ||
    { cat "$APT/sysmap.log" >&2; rm -rf "$APT/dbg"; die "apt-get download $DBG failed"; }
  # the same upload as the kernel, else its map is another build's
  dver=$(dpkg-deb -f "$APT"/dbg/*.deb Version)
  kver=$(awk -v p="$KPKG" '$1 == p { print $2 }' "$CACHE/versions.txt.new")
  [ "$dver" = "$kver" ] ||
    { rm -rf "$APT/dbg"; die "$DBG is version $dver, the kernel ($KPKG) $kver: the archive's -dbg package lags the kernel (retry later, or --no-system-map)"; }
  set +o pipefail # dpkg-deb stops with SIGPIPE once tar has the file
  tarok=0
  dpkg-deb --fsys-tarfile "$APT"/dbg/*.deb 2>>"$APT/sysmap.log" |
    tar -xO --wildcards --occurrence=1 "*/modules/$KREL/System.map" >"$CACHE/System.map.new" 2>>"$APT/sysmap.log" || tarok=$?
  set -o pipefail
  rm -rf "$APT/dbg"
  if [ "$tarok" != 0 ] || ! verify_system_map "$CACHE/System.map.new" "$CACHE/Image"; then
    cat "$APT/sysmap.log" >&2
    die "no valid System.map in $DBG"
  fi
  mv "$CACHE/System.map.new" "$CACHE/System.map"
  echo "$DBG $dver (System.map only)" >>"$CACHE/versions.txt.new"
fi

# The busybox tree: busybox as every applet; the root tree's usr-merged
# layout (bin -> usr/bin) is kept.
for d in bin sbin lib; do
  [ -e "$ROOT/$d" ] || { mkdir -p "$ROOT/usr/$d"; ln -s "usr/$d" "$ROOT/$d"; }
done
mkdir -p "$ROOT"/{proc,sys,dev,tmp,mnt,root,etc}
[ -x "$ROOT/bin/busybox" ] || die "busybox-static did not provide bin/busybox"
for a in sh ash mount umount cat echo ls poweroff reboot halt mkdir uname sleep dmesg ps; do
  [ -e "$ROOT/bin/$a" ] || ln -s busybox "$ROOT/bin/$a"
done
[ -x "$ROOT/usr/bin/perf" ] || {
  p=$(ls "$ROOT"/usr/bin/perf_* 2>/dev/null | head -n1)
  [ -n "$p" ] || die "linux-perf provided no perf binary"
  ln -s "$(basename "$p")" "$ROOT/usr/bin/perf"
}

# The init script: mounts the kernel file systems, says it is up, runs the
# command line's rvtrace.cmd (or an interactive shell with rvtrace.shell=1)
# and powers off.
cat >"$CACHE/init" <<'EOF'
#!/bin/sh
/bin/busybox mount -t proc proc /proc
/bin/busybox mount -t sysfs sysfs /sys
/bin/busybox mount -t devtmpfs devtmpfs /dev 2>/dev/null
# the disk's modules (virtio-mmio, virtio-blk, ext4), quietly, when the
# machine has a virtio-mmio device
if [ -f /lib/modules/load ] && /bin/busybox ls -d /proc/device-tree/soc/virtio_mmio@* >/dev/null 2>&1; then
  for m in $(/bin/busybox cat /lib/modules/load); do /bin/busybox insmod "$m" 2>/dev/null; done
fi
echo "rvtrace-init: up, kernel $(/bin/busybox uname -r)"
# The console's interrupt count: non-zero when output went through the
# UART's interrupt path.
while read -r n count rest; do
  case $rest in *ttyS0*) echo "rvtrace-init: ttyS0 interrupts $count" ;; esac
done </proc/interrupts
for arg in $(/bin/busybox cat /proc/cmdline); do
  case $arg in
    rvtrace.shell=1) /bin/busybox sh ;;
  esac
done
echo "rvtrace-init: powering off"
/bin/busybox poweroff -f
EOF
chmod +x "$CACHE/init"
cp "$CACHE/init" "$ROOT/init"

# The initramfs, without the kernel image, modules and docs.
(
  cd "$ROOT"
  find . \( -path ./boot -o -path ./usr/share/doc \
    -o -path ./usr/share/man -o -path ./usr/share/locale \) -prune -o -print |
    sed 's|^\./||; /^\.$/d' | LC_ALL=C sort >"$CACHE/initramfs.list"
  if command -v cpio >/dev/null 2>&1; then
    cpio -o -H newc --quiet <"$CACHE/initramfs.list"
  else
    command -v qemu-riscv64 >/dev/null || die "neither cpio nor qemu-riscv64 is installed"
    qemu-riscv64 "$ROOT/bin/busybox" cpio -o -H newc <"$CACHE/initramfs.list" 2>/dev/null
  fi | gzip -9n >"$CACHE/initramfs.cpio.gz.new"
)
mv "$CACHE/initramfs.cpio.gz.new" "$CACHE/initramfs.cpio.gz"
# A small one with busybox and the init script only (quick boots: the
# kernel unpacks the large one for about as long as it boots).
(
  cd "$ROOT"
  {
    printf '%s\n' init bin lib usr usr/bin usr/bin/busybox usr/bin/sh proc sys dev tmp mnt usr/lib usr/lib/modules
    find usr/lib/modules -mindepth 1
  } >"$CACHE/initramfs-busybox.list"
  if command -v cpio >/dev/null 2>&1; then
    cpio -o -H newc --quiet <"$CACHE/initramfs-busybox.list"
  else
    qemu-riscv64 "$ROOT/bin/busybox" cpio -o -H newc <"$CACHE/initramfs-busybox.list" 2>/dev/null
  fi | gzip -9n >"$CACHE/initramfs-busybox.cpio.gz"
)
sort -o "$CACHE/versions.txt.new" "$CACHE/versions.txt.new"
mv "$CACHE/versions.txt.new" "$CACHE/versions.txt"

verify "$CACHE" || die "the kit in $CACHE does not verify"
echo "$KIT_VERSION" >"$CACHE/.done"
say "kit ready in $CACHE:"
ls -l "$CACHE/Image" $([ $SYSMAP = 1 ] && echo "$CACHE/System.map") "$CACHE/initramfs.cpio.gz" "$CACHE/initramfs-busybox.cpio.gz" "$CACHE/root/bin/busybox" >&2
cat "$CACHE/versions.txt"
