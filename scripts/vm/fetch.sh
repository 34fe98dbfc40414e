#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Fetches Debian's own kernel and busybox-static for one architecture into
# build/cache/ (never committed; reused when present) and prints where they are:
#
#   scripts/vm/fetch.sh x86|arm64
#   KERNEL=/abs/path/boot/vmlinuz-6.1.0-57-amd64
#   KVER=6.1.0-57-amd64
#   KPKG=linux-image-6.1.0-57-amd64-unsigned 6.1.192-3
#   BUSYBOX=/abs/path/busybox
#
# The kernel is the newest linux-image-$VM_KERNEL_SERIES-N-<arch>[-unsigned]
# apt knows (VM_KERNEL_SERIES default 6.1.0; VM_KERNEL_PKG_<arch> to pin one),
# fetched with `apt-get download` and unpacked with `dpkg -x` (only /boot is
# kept) into build/cache/kernels/<pkg>_<version>_<debarch>/, the layout of
# scripts/gen-vmlinux.sh. Without network the newest cached kernel is used.
# Exits 1 with one line on stderr when nothing usable is there.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${VM_CACHE_DIR:-$top/build/cache}
SERIES=${VM_KERNEL_SERIES:-6.1.0}
me=vm/fetch.sh
say() { printf '%s: %s\n' "$me" "$*" >&2; }
die() { say "$*"; exit 1; }

case ${1:-} in
x86|x86_64|amd64) arch=x86 darch=amd64 ;;
arm64|aarch64) arch=arm64 darch=arm64 ;;
*) die "usage: fetch.sh x86|arm64" ;;
esac
native=$(dpkg --print-architecture 2>/dev/null)
qual=
[ "$darch" = "$native" ] || qual=":$darch"

# candidate VERSION of PKG:ARCH, empty when apt does not know it
candidate() {
	apt-cache policy "$1$qual" 2>/dev/null | sed -n 's/^ *Candidate: *//p' | grep -v '(none)' | head -1
}

# download PKG VERSION DIR: the .deb into DIR (apt-get download writes into cwd)
download() {
	(cd "$3" && apt-get download -q "$1$qual=$2" >/dev/null 2>&1) || return 1
	ls "$3/$1_"*"_$darch.deb" 2>/dev/null | sort -V | tail -1
}

# ---- kernel ----
kdir=$CACHE/kernels
mkdir -p "$kdir" || die "cannot create $kdir"
eval "pin=\${VM_KERNEL_PKG_$arch:-}"
pkg='' ver=''
if [ -n "$pin" ]; then
	pkg=${pin%:*}
else
	re=$(printf '%s' "$SERIES" | sed 's/\./\\./g')
	abi=$(apt-cache pkgnames "linux-image-$SERIES-" 2>/dev/null |
		sed -n "s/^linux-image-\($re-[0-9]*\)-$darch\(-unsigned\)\{0,1\}\$/\1/p" | sort -uV | tail -1)
	for p in "linux-image-$abi-$darch-unsigned" "linux-image-$abi-$darch"; do
		[ -n "$abi" ] || break
		v=$(candidate "$p")
		[ -n "$v" ] && { pkg=$p; ver=$v; break; }
	done
fi
[ -n "$pkg" ] && [ -z "$ver" ] && ver=$(candidate "$pkg")
kernel=
if [ -n "$pkg" ] && [ -n "$ver" ]; then
	dir=$kdir/${pkg}_${ver}_$darch
	if [ ! -d "$dir/boot" ]; then
		deb=$(ls "$kdir/${pkg}_"*"_$darch.deb" 2>/dev/null | grep -F "_$(printf '%s' "$ver" | sed 's/:/%3a/')_" | tail -1)
		if [ -z "$deb" ]; then
			say "apt-get download $pkg$qual=$ver"
			deb=$(download "$pkg" "$ver" "$kdir") || deb=
		fi
		if [ -n "$deb" ] && [ -s "$deb" ]; then
			rm -rf "$dir.tmp"
			if dpkg -x "$deb" "$dir.tmp"; then
				find "$dir.tmp" -mindepth 1 -maxdepth 1 ! -name boot -exec rm -rf {} +
				mv "$dir.tmp" "$dir"
			else
				rm -rf "$dir.tmp"
			fi
		fi
	fi
	kernel=$(ls "$dir"/boot/vmlinuz-* 2>/dev/null | head -1)
fi
if [ -z "$kernel" ]; then
	# offline, or apt does not know the series: the newest cached one
	dir=$(ls -d "$kdir"/linux-image-"$SERIES"-*-"$darch"*_"$darch" 2>/dev/null | sort -V | tail -1)
	[ -n "$dir" ] && kernel=$(ls "$dir"/boot/vmlinuz-* 2>/dev/null | head -1)
	[ -n "$kernel" ] || die "no linux-image-$SERIES-*-$darch: apt-get download failed (no network?) and none is cached in $kdir"
	base=${dir##*/}
	pkg=${base%%_*}
	ver=${base#*_}
	ver=${ver%_*}
	say "using the cached $pkg $ver"
fi

# ---- busybox-static ----
bdir=$CACHE/busybox
mkdir -p "$bdir" || die "cannot create $bdir"
bb=
bver=$(candidate busybox-static)
if [ -n "$bver" ]; then
	bx=$bdir/$(printf "%s" "$bver" | tr : _)_$darch
	if [ ! -x "$bx/bin/busybox" ]; then
		deb=$(ls "$bdir/busybox-static_"*"_$darch.deb" 2>/dev/null | grep -F "_$(printf '%s' "$bver" | sed 's/:/%3a/')_" | tail -1)
		if [ -z "$deb" ]; then
			say "apt-get download busybox-static$qual=$bver"
			deb=$(download busybox-static "$bver" "$bdir") || deb=
		fi
		if [ -n "$deb" ] && [ -s "$deb" ]; then
			rm -rf "$bx.tmp"
			dpkg -x "$deb" "$bx.tmp" && mv "$bx.tmp" "$bx"
		fi
	fi
	[ -x "$bx/bin/busybox" ] && bb=$bx/bin/busybox
fi
if [ -z "$bb" ]; then
	bb=$(ls "$bdir"/*_"$darch"/bin/busybox 2>/dev/null | sort -V | tail -1)
	[ -n "$bb" ] || die "no busybox-static for $darch: apt-get download failed (no network?) and none is cached in $bdir"
fi

echo "KERNEL=$kernel"
echo "KVER=${kernel##*/vmlinuz-}"
echo "KPKG=$pkg $ver"
echo "BUSYBOX=$bb"
