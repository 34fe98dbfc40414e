#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Fetches the CUDA libraries that gpulaunch's tests call (never committed):
# Debian's libcudart11.0 (CUDA runtime 11.8) and libcuda1 (driver 535) from
# the non-free component, by `apt-get download` with a private apt
# configuration (the host's sources are left alone), unpacked with dpkg -x.
#
#   scripts/fixtures.sh [--arch amd64|arm64] [DIR]    (DIR: build/fixtures)
#
# Result: DIR/<arch>/lib/libcudart.so.11.0 and DIR/<arch>/lib/libcuda.so.1
# (symlinks into the unpacked trees). Does nothing when they are there.
# Without network or without the packages it says so and exits 0: the tests
# that need a library skip, counted. Exit 1 only on a local failure.
set -eu

me=fixtures.sh
say() { printf '%s: %s\n' "$me" "$*" >&2; }

arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
dir=
while [ $# -gt 0 ]; do
	case $1 in
	--arch) arch=$2; shift 2 ;;
	-h|--help) sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	-*) say "unknown option '$1'"; exit 2 ;;
	*) dir=$1; shift ;;
	esac
done
top=$(cd "$(dirname "$0")/.." && pwd)
dir=${dir:-$top/build/fixtures}
# absolute: apt-get download runs in another directory (make fixtures
# passes build/fixtures)
if ! mkdir -p "$dir" || ! dir=$(cd "$dir" && pwd); then
	say "cannot create $dir"
	exit 1
fi
case $arch in amd64|arm64) ;; *) say "unsupported architecture '$arch'"; exit 2 ;; esac

out=$dir/$arch
if [ -e "$out/lib/libcudart.so.11.0" ] && [ -e "$out/lib/libcuda.so.1" ]; then
	exit 0
fi
for t in apt-get dpkg; do
	if ! command -v $t >/dev/null 2>&1; then
		say "no $t here: CUDA fixture libraries unavailable (their tests skip)"
		exit 0
	fi
done

apt=$dir/apt
mkdir -p "$out/deb" "$out/lib"
. "$top/scripts/apt-private.sh"
apt_private "$apt" "$arch" \
	"deb [arch=$arch] http://deb.debian.org/debian bookworm non-free" \
	"deb [arch=$arch] http://deb.debian.org/debian bookworm-updates non-free" || exit 1
# shellcheck disable=SC2086
set -- $APT_PRIVATE

if ! apt-get "$@" update >"$apt/update.log" 2>&1; then
	say "apt-get update of Debian non-free failed (offline?): CUDA fixture libraries unavailable"
	exit 0
fi
for p in libcudart11.0 libcuda1; do
	if ls "$out/deb/${p}_"*.deb >/dev/null 2>&1; then
		continue
	fi
	if ! (cd "$out/deb" && apt-get "$@" download "$p:$arch" >"$apt/download.log" 2>&1); then
		say "apt-get download $p:$arch failed: its tests skip"
		continue
	fi
done
for deb in "$out"/deb/*.deb; do
	[ -e "$deb" ] || continue
	dpkg -x "$deb" "$out/root" || { say "dpkg -x $deb failed"; exit 1; }
done
for f in libcudart.so.11.0 libcuda.so.1; do
	src=$(find "$out/root" -name "$f" 2>/dev/null | head -n 1)
	[ -n "$src" ] && ln -sf "$src" "$out/lib/$f"
done
if [ -e "$out/lib/libcudart.so.11.0" ] && [ -e "$out/lib/libcuda.so.1" ]; then
	say "CUDA fixture libraries ($arch) in $out/lib"
else
	say "some CUDA fixture libraries ($arch) are missing: their tests skip"
fi
