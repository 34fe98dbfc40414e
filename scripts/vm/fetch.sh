#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Fetches one kernel of the VM matrix (a NAME of scripts/vm/kernels) and
# busybox-static for its architecture into build/cache/ (never committed;
# reused when present) and prints where they are:
#
#   scripts/vm/fetch.sh NAME            e.g. arm64-6.12-16k
#   KERNEL=/abs/path/boot/vmlinuz-6.12.117+deb13-arm64-16k
#   KVER=6.12.117+deb13-arm64-16k
#   KPKG=linux-image-6.12.117+deb13-arm64-16k 6.12.117-1
#   KMODULES=/abs/path/lib/modules/6.12.117+deb13-arm64-16k  (depmod run there)
#   BUSYBOX=/abs/path/busybox
#   RDMA_ROOT=/abs/path      (a kernel of another architecture than the
#                            host's: bookworm's rdma-core of it, unpacked;
#                            empty for the host's own, or when unavailable)
#
# The packages come from Debian's archive through a private apt
# configuration per suite (scripts/apt-private.sh: build/cache/apt/SUITE/,
# the suite and its -security updates, amd64 and arm64); the system's
# sources are left alone. The kernel is the package the suite's meta
# package (linux-image-amd64, linux-image-arm64-16k, ...) depends on;
# busybox-static is bookworm's. A suite's lists are refreshed when older
# than VM_APT_MAX_AGE seconds (default 21600); when that fails (offline)
# the lists there are used, and without lists the kernel this NAME
# resolved to last time (build/cache/kernels/NAME.resolved).
# Environment: VM_MIRROR (http://deb.debian.org/debian), VM_SECURITY_MIRROR
# (http://deb.debian.org/debian-security), VM_CACHE_DIR (build/cache).
# Exits 1 with one line on stderr when nothing usable is there.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
CACHE=${VM_CACHE_DIR:-$top/build/cache}
MIRROR=${VM_MIRROR:-http://deb.debian.org/debian}
SECMIRROR=${VM_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
MAX_AGE=${VM_APT_MAX_AGE:-21600}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
me=vm/fetch.sh
say() { printf '%s: %s\n' "$me" "$*" >&2; }
die() { say "$*"; exit 1; }
. "$top/scripts/apt-private.sh"

[ $# -eq 1 ] || die "usage: fetch.sh NAME (one of: $(awk '!/^#/ && NF {printf "%s ", $1}' "$top/scripts/vm/kernels"))"
name=$1
set -- $(awk -v n="$name" '!/^#/ && $1 == n {print $2, $3, $4}' "$top/scripts/vm/kernels")
[ $# -eq 3 ] || die "no kernel '$name' in scripts/vm/kernels"
suite=$1 darch=$2 meta=$3
mkdir -p "$CACHE/kernels" "$CACHE/busybox" || die "cannot create $CACHE"
CACHE=$(cd "$CACHE" && pwd)
kdir=$CACHE/kernels

# suite_apt SUITE: APT_PRIVATE for SUITE, its lists refreshed when stale;
# fails when there are no lists at all
suite_apt() {
	_s=$1 _d=$CACHE/apt/$1
	_opt="[arch=amd64,arm64 signed-by=$KEYRING]"
	[ -r "$KEYRING" ] || _opt="[arch=amd64,arm64]"
	set -- "deb $_opt $MIRROR $_s main"
	# sid has no security suite: its fixes arrive in sid itself
	[ "$_s" = sid ] || set -- "$@" "deb $_opt $SECMIRROR $_s-security main"
	apt_private "$_d" "amd64 arm64" "$@" || return 1
	_stamp=$_d/updated
	_age=$MAX_AGE
	[ -e "$_stamp" ] && _age=$(($(date +%s) - $(stat -c %Y "$_stamp")))
	if [ "$_age" -ge "$MAX_AGE" ]; then
		_t=$(date +%s)
		# shellcheck disable=SC2086
		if apt-get $APT_PRIVATE update > "$_d/update.log" 2>&1 && ! grep -q '^[EW]:' "$_d/update.log"; then
			touch "$_stamp"
			say "apt-get update $_s: $(($(date +%s) - _t)) s"
		else
			say "apt-get update $_s failed ($(grep -m1 '^[EW]:' "$_d/update.log")); using the lists there"
		fi
	fi
	ls "$_d"/lists/*_Packages* > /dev/null 2>&1
}

# field PKG FIELD: a field of PKG:$darch as the private lists have it
field() {
	# shellcheck disable=SC2086
	apt-cache $APT_PRIVATE show "$1:$darch" 2>/dev/null | sed -n "s/^$2: //p" | sort -V | tail -1
}

# fetch_deb PKG VERSION DIR: DIR/PKG_VERSION_$darch.deb, downloaded once;
# prints its path
fetch_deb() {
	_f=$3/$1_$2_$darch.deb
	if [ ! -s "$_f" ]; then
		_t=$(date +%s)
		# shellcheck disable=SC2086
		(cd "$3" && apt-get $APT_PRIVATE download "$1:$darch=$2" > "$3/download.log" 2>&1) || {
			say "apt-get download $1:$darch=$2 failed: $(grep -m1 '^E:' "$3/download.log")"; return 1; }
		_got=$(ls -t "$3/$1_"*"_$darch.deb" 2>/dev/null | head -1)
		[ -n "$_got" ] && [ "$_got" != "$_f" ] && mv "$_got" "$_f"
		[ -s "$_f" ] || { say "apt-get download $1 wrote no .deb"; return 1; }
		say "downloaded $1 $2 ($(($(stat -c %s "$_f") / 1048576)) MiB, $(($(date +%s) - _t)) s)"
	fi
	echo "$_f"
}

# ---- kernel ----
# what unpack() takes out of a kernel package; raised when that changes
# (3: the RDMA modules of tests/vm/rdmasnoop.modules; 4: e1000, of
# tests/vm/numaplace.modules), so that trees unpacked before are
# unpacked again from the cached packages
UNPACK_REV=4

# unpack PKG VER DIR: the kernel of PKG (and of the parts it depends on)
# into DIR, depmod run there; fails when a package cannot be downloaded
unpack() {
	# where a suite splits the image (sid: linux-binary-* has the
	# vmlinuz, linux-modules-* the modules), the parts it depends on
	_parts=$(apt-cache $APT_PRIVATE show "$1:$darch=$2" 2>/dev/null | sed -n 's/^Depends: //p' |
		tr ',' '\n' | sed -n "s/^ *\(linux-\(binary\|modules\)-[^ ]*\) (= $2)\$/\1/p")
	rm -rf "$3.tmp"
	mkdir -p "$3.tmp"
	for _p in $1 $_parts; do
		_deb=$(fetch_deb "$_p" "$2" "$kdir") || _deb=$(fetch_deb "$_p-unsigned" "$2" "$kdir") ||
			{ rm -rf "$3.tmp"; return 1; }
		# /boot, and the modules the tests may load (file systems, block
		# devices, the libraries and crypto they need), not all 4000
		dpkg-deb --fsys-tarfile "$_deb" | tar -x -C "$3.tmp" --wildcards \
			'./boot/*' './*lib/modules/*/vmlinuz' \
			'./*lib/modules/*/modules.builtin' './*lib/modules/*/modules.order' \
			'./*lib/modules/*/kernel/fs/*' './*lib/modules/*/kernel/lib/*' \
			'./*lib/modules/*/kernel/crypto/*' './*lib/modules/*/kernel/arch/*/crypto/*' \
			'./*lib/modules/*/kernel/drivers/block/*' \
			'./*lib/modules/*/kernel/drivers/infiniband/core/*' \
			'./*lib/modules/*/kernel/drivers/infiniband/sw/rxe/*' \
			'./*lib/modules/*/kernel/net/ipv4/udp_tunnel*' \
			'./*lib/modules/*/kernel/net/ipv6/ip6_udp_tunnel*' \
			'./*lib/modules/*/kernel/drivers/net/dummy*' \
			'./*lib/modules/*/kernel/drivers/net/ethernet/intel/e1000/*' 2>/dev/null
	done
	# merged /usr (trixie on): depmod -b wants BASE/lib/modules
	[ -d "$3.tmp/lib/modules" ] || { [ -d "$3.tmp/usr/lib/modules" ] && ln -s usr/lib "$3.tmp/lib"; }
	for _v in "$3.tmp"/lib/modules/*/vmlinuz; do
		[ -f "$_v" ] || continue
		_kv=${_v%/vmlinuz}
		mkdir -p "$3.tmp/boot" && mv "$_v" "$3.tmp/boot/vmlinuz-${_kv##*/}"
	done
	_kv=$(ls "$3.tmp"/boot/vmlinuz-* 2>/dev/null | head -1)
	[ -n "$_kv" ] || { rm -rf "$3.tmp"; die "no vmlinuz in $1 $_parts"; }
	_kv=${_kv##*/vmlinuz-}
	if [ -d "$3.tmp/lib/modules/$_kv" ]; then
		depmod -b "$3.tmp" "$_kv" 2> "$3.tmp/depmod.log" || say "depmod for $_kv failed: $(head -1 "$3.tmp/depmod.log")"
	fi
	echo "$UNPACK_REV" > "$3.tmp/.unpack-rev"
	mv "$3.tmp" "$3"
}

# the kernels the meta package named, newest first: its current one, then
# those of older versions the lists still have (a mirror may list a build
# its pool does not serve yet)
pkg='' ver='' dir=''
if suite_apt "$suite"; then
	# (any entry of Depends: sid's meta package names linux-base-* first)
	cands=$(apt-cache $APT_PRIVATE show "$meta:$darch" 2>/dev/null | sed -n 's/^Depends: //p' | tr ',|' '\n\n' |
		sed -n 's/^ *\(linux-image-[^ :]*\).*/\1/p' | sort -ruV)
	[ -n "$cands" ] || say "$meta ($suite, $darch) names no kernel package in the lists"
	for p in $cands; do
		v=$(field "$p" Version)
		[ -n "$v" ] || continue
		d=$kdir/${p}_${v}_$darch
		# (a tree without modules.dep was cut short, one of an older
		# UNPACK_REV lacks modules the tests now load: unpacked again)
		if { [ -d "$d/boot" ] && ls "$d"/lib/modules/*/modules.dep > /dev/null 2>&1 &&
			[ "$(cat "$d/.unpack-rev" 2>/dev/null)" = "$UNPACK_REV" ]; } ||
			{ rm -rf "$d" && unpack "$p" "$v" "$d"; }; then
			pkg=$p ver=$v dir=$d
			break
		fi
		say "$p $v is listed but cannot be fetched: trying the one before"
	done
fi
if [ -z "$dir" ] && [ -r "$kdir/$name.resolved" ]; then
	read -r pkg ver < "$kdir/$name.resolved"
	dir=$kdir/${pkg}_${ver}_$darch
	say "using the kernel $name resolved to last time: $pkg $ver"
fi
[ -n "$dir" ] && [ -d "$dir/boot" ] || die "no kernel for $name: none of the $suite kernels can be fetched (no network?) and none is cached in $kdir"
echo "$pkg $ver" > "$kdir/$name.resolved"
kernel=$(ls "$dir"/boot/vmlinuz-* | head -1)

# ---- busybox-static (bookworm's, for both arches) ----
bb=$(ls "$CACHE"/busybox/*_"$darch"/bin/busybox 2>/dev/null | sort -V | tail -1)
if [ -z "$bb" ]; then
	suite_apt bookworm || die "no busybox-static for $darch: the bookworm lists are unavailable (no network?)"
	bver=$(field busybox-static Version)
	[ -n "$bver" ] || die "no busybox-static for $darch in the bookworm lists"
	bdeb=$(fetch_deb busybox-static "$bver" "$CACHE/busybox") || die "cannot fetch busybox-static $bver"
	bx=$CACHE/busybox/$(printf '%s' "$bver" | tr : _)_$darch
	rm -rf "$bx.tmp"
	dpkg -x "$bdeb" "$bx.tmp" && mv "$bx.tmp" "$bx" || die "cannot unpack $bdeb"
	bb=$bx/bin/busybox
fi
[ -x "$bb" ] || die "no busybox in $bb"

# ---- the user space of tests/vm/rdmasnoop.sh (Soft-RoCE: rdma-core,
# perftest) and tests/vm/containers.sh (runc), for a guest architecture
# that is not the host's (the host's own serves its own): bookworm's
# packages of that architecture, unpacked into one tree under
# build/cache/userspace/ (reused); RDMA_ROOT empty when they cannot be
# fetched (the tests then skip, saying so) ----
RDMA_PKGS="ibverbs-utils libibverbs1 ibverbs-providers libnl-3-200 libnl-route-3-200 libc6 libc-bin
	iproute2 libmnl0 libbsd0 libcap2 libmd0 perftest libibumad3 librdmacm1 libpci3 libudev1 zlib1g
	runc libseccomp2"
rdma_tree() {
	_r=$CACHE/userspace/rdma_$darch
	# a tree of another package list is made again
	[ "$(cat "$_r/.complete" 2>/dev/null)" = "$(echo $RDMA_PKGS)" ] && { echo "$_r"; return 0; }
	suite_apt bookworm || { say "no RDMA user space for $darch: the bookworm lists are unavailable"; return 1; }
	mkdir -p "$CACHE/userspace/debs_$darch" || return 1
	rm -rf "$_r.tmp"
	for _p in $RDMA_PKGS; do
		_v=$(field "$_p" Version)
		[ -n "$_v" ] || { say "no $_p for $darch in the bookworm lists"; return 1; }
		_deb=$(fetch_deb "$_p" "$_v" "$CACHE/userspace/debs_$darch") &&
			dpkg -x "$_deb" "$_r.tmp" || { say "cannot fetch or unpack $_p $_v ($darch)"; return 1; }
	done
	echo $RDMA_PKGS > "$_r.tmp/.complete" && rm -rf "$_r" && mv "$_r.tmp" "$_r" && echo "$_r"
}
rdma_root=
[ "$darch" = "$(dpkg --print-architecture)" ] || rdma_root=$(rdma_tree) || rdma_root=

echo "KERNEL=$kernel"
echo "KVER=${kernel##*/vmlinuz-}"
echo "KPKG=$pkg $ver"
echo "KMODULES=$dir/lib/modules/${kernel##*/vmlinuz-}"
echo "BUSYBOX=$bb"
echo "RDMA_ROOT=$rdma_root"
