#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The libbpf every tool is linked with, pinned here and nowhere else: the
# source package of Debian sid, fetched through the package registry with a
# private sources list (the system's sources and package lists untouched),
# its .dsc checked against the checksum below (dpkg-source then checks the
# tarballs against the .dsc), built as a static library.
#
#   scripts/libbpf.sh fetch                 the source into build/cache/libbpf/
#   scripts/libbpf.sh build ARCH OUT [CC AR] libbpf.a and headers (its uapi too) into OUT
#                                           (OUT/lib/libbpf.a, OUT/include/bpf/)
#   scripts/libbpf.sh version               the pinned version (1.7.0-1)
#
# Why 1.7.0 from source rather than bookworm-backports' 1.4.6 binary: 1.6+
# mmaps the kernel's sysfs BTF instead of reading and copying it (schedlat's
# startup RSS, docs/PERFORMANCE.md), and the source builds for arm64 with the
# cross compiler as well as natively.
set -eu

LIBBPF_VERSION=1.7.0-1
LIBBPF_DSC_SHA256=e98102cf5441b877ef390931f0dbef60203e750861dcdb16c24fc2a705d8c342
LIBBPF_SUITE=sid

me=libbpf.sh
say() { printf '%s: %s\n' "$me" "$*" >&2; }
die() { say "$*"; exit 1; }

top=$(cd "$(dirname "$0")/.." && pwd)
cache=${AISCOPE_LIBBPF_CACHE:-$top/build/cache/libbpf}
upstream=${LIBBPF_VERSION%-*}
dsc=$cache/libbpf_$LIBBPF_VERSION.dsc
src=$cache/libbpf-$LIBBPF_VERSION

dsc_ok() {
	[ -f "$dsc" ] && [ "$(sha256sum "$dsc" | cut -d' ' -f1)" = "$LIBBPF_DSC_SHA256" ]
}

# fetch: apt-get source --download-only of the pinned version with its own
# sources list, lists and cache under $cache/apt, then dpkg-source -x
fetch() {
	[ -f "$src/.aiscope-unpacked" ] && dsc_ok && return 0
	command -v apt-get >/dev/null 2>&1 && command -v dpkg-source >/dev/null 2>&1 ||
		die "apt-get and dpkg-source are needed to fetch libbpf $LIBBPF_VERSION"
	apt=$cache/apt
	mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial" || exit 1
	echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg]" \
		"http://deb.debian.org/debian $LIBBPF_SUITE main" > "$apt/sources.list"
	set -- -q -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
		-o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" \
		-o APT::Sandbox::User=root
	if [ ! -f "$dsc" ]; then
		say "fetching the libbpf $LIBBPF_VERSION source package ($LIBBPF_SUITE)"
		apt-get "$@" update </dev/null >"$apt/update.log" 2>&1 ||
			die "apt-get update of the $LIBBPF_SUITE sources failed (see $apt/update.log)"
		(cd "$cache" && apt-get "$@" source --download-only "libbpf=$LIBBPF_VERSION" \
			</dev/null >"$apt/source.log" 2>&1) ||
			die "apt-get source libbpf=$LIBBPF_VERSION failed (see $apt/source.log)"
	fi
	dsc_ok || die "$dsc: sha256 is not the pinned $LIBBPF_DSC_SHA256"
	rm -rf "$src"
	dpkg-source -q --no-check -x "$dsc" "$src" >/dev/null ||
		die "dpkg-source -x $dsc failed"
	touch "$src/.aiscope-unpacked"
}

# build ARCH OUT [CC AR]: libbpf.a (objects in OUT/obj) and its headers
build() {
	arch=$1 out=$2 cc=${3:-gcc} ar=${4:-ar}
	fetch
	mkdir -p "$out/obj" || exit 1
	say "building libbpf $LIBBPF_VERSION for $arch into $out"
	make -s -C "$src/src" BUILD_STATIC_ONLY=1 OBJDIR="$out/obj" DESTDIR="$out" \
		PREFIX=/ LIBDIR=/lib INCLUDEDIR=/include CC="$cc" AR="$ar" \
		install_headers install_uapi_headers "$out/obj/libbpf.a" >"$out/build.log" 2>&1 ||
		die "building libbpf failed (see $out/build.log)"
	mkdir -p "$out/lib" && cp "$out/obj/libbpf.a" "$out/lib/libbpf.a.tmp" &&
		mv "$out/lib/libbpf.a.tmp" "$out/lib/libbpf.a"
	echo "$LIBBPF_VERSION" > "$out/VERSION"
}

case ${1:-} in
fetch) fetch ;;
build) [ $# -ge 3 ] || die "usage: libbpf.sh build ARCH OUT [CC AR]"; shift; build "$@" ;;
version) echo "$LIBBPF_VERSION" ;;
*) die "usage: libbpf.sh fetch | build ARCH OUT [CC AR] | version" ;;
esac
