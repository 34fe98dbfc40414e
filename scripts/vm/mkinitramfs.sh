#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Builds the VM initramfs archives (cpio newc, gzip) for scripts/vm/run-matrix.sh:
#
#   scripts/vm/mkinitramfs.sh OUT.cpio.gz BUSYBOX TOOLS_DIR HELPERS_DIR
#
#   /init                     tests/vm/init
#   /bin/busybox              BUSYBOX (static; applet links made at boot)
#   /opt/aiscope/bin/         the static tools found in TOOLS_DIR ($TOOLS)
#   /opt/aiscope/helpers/     the static test helpers in HELPERS_DIR
#   /opt/aiscope/tests/       tests/vm/*.sh (the runner and one file per tool)
#   /dev/console              so that /init has a console before devtmpfs
#   /usr/sbin/runc            $RUNC, with the shared libraries and the
#                             dynamic loader ldd names at their paths, where
#                             a test file packed says "# vm-runc"; or the
#                             runc of $RUNC_ROOT, another architecture's
#                             tree, with its libraries whole (else
#                             /opt/aiscope/runc.missing holds $RUNC_WHY)
#   RDMA programs             $RDMA_BINS and $RDMA_PROVIDER with their
#                             libraries and a loader cache, where a test file
#                             says "# vm-rdma" (else /opt/aiscope/rdma.missing
#                             holds $RDMA_WHY); or, for a guest of another
#                             architecture, the same from $RDMA_ROOT, a tree
#                             of its packages (scripts/vm/fetch.sh), with its
#                             /sbin/ldconfig for the guest to make the cache
#
# That one is the same for every kernel of an architecture. The modules of
# one kernel are a second archive, appended to it (the kernel unpacks
# concatenated archives in turn):
#
#   scripts/vm/mkinitramfs.sh --modules OUT.cpio.gz MODULE_FILE...
#
#   /opt/aiscope/modules/<name>.ko   each MODULE_FILE (.ko, .ko.xz, .ko.zst or
#                                    .ko.gz; decompressed here)
#   /opt/aiscope/modules/order       their names, one a line, in the order
#                                    given (the load order)
#
# The archives are written by this script (no cpio or root needed), all
# files owned by root. TOOLS (default: every tool named in tests/vm/*.sh
# that exists in TOOLS_DIR) may be set to a list of names. A test file that
# is no tool's (tests/vm/containers.sh) names the tools it runs on a line
# "# vm-tools: NAME..."; they are packed with it, their own tests not.
set -eu
top=$(cd "$(dirname "$0")/../.." && pwd)
me=vm/mkinitramfs.sh
die() { printf '%s: %s\n' "$me" "$*" >&2; exit 1; }

# modules OUT MODULE_FILE...: the per-kernel archive's stage
modules() {
	mkdir -p "$stage/opt/aiscope/modules"
	: > "$stage/opt/aiscope/modules/order"
	for f in "$@"; do
		b=${f##*/}
		m=${b%%.ko*}
		case $b in
		*.ko) cp "$f" "$stage/opt/aiscope/modules/$m.ko" ;;
		*.ko.xz) xz -dc "$f" > "$stage/opt/aiscope/modules/$m.ko" ;;
		*.ko.zst) zstd -qdc "$f" > "$stage/opt/aiscope/modules/$m.ko" ;;
		*.ko.gz) gzip -dc "$f" > "$stage/opt/aiscope/modules/$m.ko" ;;
		*) die "not a kernel module: $f" ;;
		esac || die "cannot unpack $f"
		echo "$m" >> "$stage/opt/aiscope/modules/order"
	done
}

# runc_in: $RUNC at /usr/sbin/runc with what ldd says it loads (the
# libraries and the loader, at the paths it names; nothing for a static
# one), or $RUNC_ROOT's with its tree's libraries, or why there is none
# in /opt/aiscope/runc.missing (the container tests' skip reason)
runc_in() {
	if [ -z "${RUNC:-}" ] && [ -n "${RUNC_ROOT:-}" ]; then
		# another architecture's: its libraries whole, as rdma_root_in's
		[ -x "$RUNC_ROOT/usr/sbin/runc" ] || die "RUNC_ROOT: no usr/sbin/runc in $RUNC_ROOT"
		mkdir -p "$stage/usr/sbin"
		cp "$RUNC_ROOT/usr/sbin/runc" "$stage/usr/sbin/runc"
		root_libs_in "$RUNC_ROOT"
		return
	fi
	if [ -z "${RUNC:-}" ]; then
		echo "${RUNC_WHY:-no runc given to scripts/vm/mkinitramfs.sh (RUNC)}" > "$stage/opt/aiscope/runc.missing"
		return
	fi
	[ -x "$RUNC" ] || die "RUNC=$RUNC is not an executable"
	# (a static runc: ldd fails, nothing more to pack)
	libs=$(ldd "$RUNC" 2>/dev/null) || libs=
	mkdir -p "$stage/usr/sbin"
	cp "$RUNC" "$stage/usr/sbin/runc"
	for l in $(echo "$libs" | sed -n -e 's/.*=> \(\/[^ ]*\) .*/\1/p' -e 's/^[[:space:]]*\(\/[^ ]*\) .*/\1/p'); do
		mkdir -p "$stage${l%/*}"
		cp -L "$l" "$stage$l" || die "cannot copy $l (of $RUNC)"
	done
}

# libs_in BIN: the shared libraries and the loader ldd names for BIN, at
# their paths (nothing for a static one)
libs_in() {
	libs=$(ldd "$1" 2>/dev/null) || libs=
	for l in $(echo "$libs" | sed -n -e 's/.*=> \(\/[^ ]*\) .*/\1/p' -e 's/^[[:space:]]*\(\/[^ ]*\) .*/\1/p'); do
		mkdir -p "$stage${l%/*}"
		cp -L "$l" "$stage$l" || die "cannot copy $l (of $1)"
	done
}

# rdma_in: the RDMA user space of tests/vm/rdmasnoop.sh ("# vm-rdma"): the
# programs in $RDMA_BINS at their paths with their libraries, the Soft-RoCE
# provider ($RDMA_PROVIDER, dlopened by libibverbs) with its .driver file,
# and a loader cache (ldconfig), or why there is none in
# /opt/aiscope/rdma.missing (the tests' skip reason)
rdma_in() {
	if [ -z "${RDMA_BINS:-}" ]; then
		echo "${RDMA_WHY:-no RDMA programs given to scripts/vm/mkinitramfs.sh (RDMA_BINS)}" > "$stage/opt/aiscope/rdma.missing"
		return
	fi
	for b in $RDMA_BINS; do
		[ -x "$b" ] || die "RDMA_BINS: $b is not an executable"
		mkdir -p "$stage${b%/*}"
		cp "$b" "$stage$b"
		libs_in "$b"
	done
	for f in $RDMA_PROVIDER; do
		mkdir -p "$stage${f%/*}"
		cp -L "$f" "$stage$f"
		case $f in *.so) libs_in "$f" ;; esac
	done
	mkdir -p "$stage/etc"
	for d in $(cd "$stage" && find usr/lib lib -name '*.so*' 2>/dev/null | sed 's|/[^/]*$||' | sort -u); do
		echo "/$d"
	done > "$stage/etc/ld.so.conf"
	ldconfig -r "$stage" 2>/dev/null || die "ldconfig -r failed for the RDMA programs"
}

# rdma_root_in: the same from RDMA_ROOT, a tree of another architecture's
# packages: ldd cannot read its programs here, so the libraries come whole
# (the top of its library directories, the loader, libibverbs' rxe
# provider; no gconv), and so does its ldconfig: the host's makes no cache
# of another architecture's libraries, the guest's own does at boot
# (tests/vm/rdmasnoop.sh)
rdma_root_in() {
	r=$RDMA_ROOT
	for b in usr/bin/ibv_rc_pingpong usr/bin/ibv_ud_pingpong usr/bin/ibv_devinfo usr/bin/rdma sbin/ldconfig \
		etc/libibverbs.d/rxe.driver; do
		[ -e "$r/$b" ] || die "RDMA_ROOT: no $b in $r"
		mkdir -p "$stage/${b%/*}"
		cp -P "$r/$b" "$stage/$b"
	done
	# perftest's, when the tree has them (tests/vm/rdmasnoop.sh skips
	# without)
	for b in usr/bin/ib_send_bw usr/bin/ib_write_bw usr/bin/ib_read_bw usr/bin/ib_atomic_bw; do
		[ ! -e "$r/$b" ] || cp -P "$r/$b" "$stage/$b"
	done
	root_libs_in "$r"
	for d in $(cd "$r" && ls -d lib/*-linux-gnu usr/lib/*-linux-gnu 2>/dev/null); do
		if [ -d "$r/$d/libibverbs" ]; then
			mkdir -p "$stage/$d/libibverbs"
			cp -P "$r/$d"/libibverbs/librxe-* "$stage/$d/libibverbs/"
		fi
	done
}

# root_libs_in ROOT: the top of ROOT's library directories whole, its
# loader, its ldconfig and an ld.so.conf naming them: the guest's ldconfig
# makes the loader cache at boot (tests/vm/run.sh), the host's makes none
# for another architecture's libraries
root_libs_in() {
	for d in $(cd "$1" && ls -d lib/*-linux-gnu usr/lib/*-linux-gnu 2>/dev/null); do
		mkdir -p "$stage/$d"
		find "$1/$d" -maxdepth 1 -name '*.so*' \( -type f -o -type l \) -exec cp -P {} "$stage/$d/" \;
	done
	for l in "$1"/lib/ld-linux-*; do
		[ -e "$l" ] || [ -L "$l" ] || die "no dynamic loader in $1/lib"
		mkdir -p "$stage/lib"
		cp -P "$l" "$stage/lib/"
	done
	[ -x "$1/sbin/ldconfig" ] || die "no sbin/ldconfig in $1"
	mkdir -p "$stage/sbin" "$stage/etc"
	cp -P "$1/sbin/ldconfig" "$stage/sbin/ldconfig"
	for d in $(cd "$1" && ls -d lib/*-linux-gnu usr/lib/*-linux-gnu); do
		echo "/$d"
	done > "$stage/etc/ld.so.conf"
}

if [ "${1:-}" = --modules ]; then
	[ $# -ge 2 ] || die "usage: mkinitramfs.sh --modules OUT.cpio.gz MODULE_FILE..."
	out=$2
	shift 2
	stage=$out.d
	rm -rf "$stage"
	modules "$@"
	console=0
else
	[ $# -eq 4 ] || die "usage: mkinitramfs.sh OUT.cpio.gz BUSYBOX TOOLS_DIR HELPERS_DIR"
	out=$1 busybox=$2 tools=$3 helpers=$4
	[ -x "$busybox" ] || die "no busybox at $busybox"
	stage=$out.d
	rm -rf "$stage"
	console=1
	mkdir -p "$stage/bin" "$stage/dev" "$stage/proc" "$stage/sys" "$stage/tmp" "$stage/run" \
		"$stage/opt/aiscope/bin" "$stage/opt/aiscope/helpers" "$stage/opt/aiscope/tests"
	cp "$busybox" "$stage/bin/busybox"
	ln -s busybox "$stage/bin/sh"
	cp "$top/tests/vm/init" "$stage/init"
	# the runner, its helpers, and the test file of each tool packed
	cp "$top/tests/vm/run.sh" "$top/tests/vm/lib.sh" "$stage/opt/aiscope/tests/"
	chmod 0755 "$stage/init" "$stage"/opt/aiscope/tests/*.sh
	n=0
	for f in "$helpers"/*; do
		case $f in *.d|*.o) continue ;; esac
		[ -f "$f" ] && [ -x "$f" ] || continue
		cp "$f" "$stage/opt/aiscope/helpers/"
		n=$((n + 1))
	done
	[ $n -gt 0 ] || die "no test helpers in $helpers"
	if [ -z "${TOOLS:-}" ]; then
		TOOLS=$(cd "$top/tests/vm" && ls *.sh | sed 's/\.sh$//' | grep -vx -e run -e lib || true)
	fi
	n=0
	want_runc=
	want_rdma=
	for t in $TOOLS; do
		f=$top/tests/vm/$t.sh
		[ -f "$f" ] || die "no tests/vm/$t.sh"
		uses=$(sed -n 's/^# vm-tools://p' "$f")
		for u in ${uses:-$t}; do
			[ -x "$tools/$u" ] || die "tool $u not built in $tools"
			cp "$tools/$u" "$stage/opt/aiscope/bin/"
		done
		! grep -q '^# vm-runc' "$f" || want_runc=1
		! grep -q '^# vm-rdma' "$f" || want_rdma=1
		cp "$f" "$stage/opt/aiscope/tests/"
		n=$((n + 1))
	done
	[ $n -gt 0 ] || die "no tools to test"
	[ -z "$want_runc" ] || runc_in
	if [ -n "$want_rdma" ] && [ -n "${RDMA_ROOT:-}" ]; then
		rdma_root_in
	elif [ -n "$want_rdma" ]; then
		rdma_in
	fi
fi

# ---- cpio newc writer ----
# (inode numbers apart from the base archive's, for the archive appended to it)
ino=$([ $console = 1 ] && echo 1000 || echo 900000)
# hdr NAME MODE_HEX SIZE [RDEVMAJ RDEVMIN]
hdr() {
	nsz=$((${#1} + 1))
	printf '070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X' \
		"$ino" "$((0x$2))" 0 0 1 0 "$3" 0 0 "${4:-0}" "${5:-0}" "$nsz" 0
	printf '%s\0' "$1"
	pad $(((110 + nsz) % 4))
	ino=$((ino + 1))
}
pad() {
	[ "$1" -eq 0 ] || head -c $((4 - $1)) /dev/zero
}
emit() {
	(cd "$stage" && find . -mindepth 1 | sed 's|^\./||' | LC_ALL=C sort) | while read -r p; do
		f=$stage/$p
		if [ -L "$f" ]; then
			t=$(readlink "$f")
			hdr "$p" A1FF ${#t}
			printf '%s' "$t"
			pad $((${#t} % 4))
		elif [ -d "$f" ]; then
			hdr "$p" 41ED 0
		else
			mode=$(stat -c %a "$f")
			case $mode in *[1357]?? ) m=81ED ;; *) m=81A4 ;; esac
			sz=$(stat -c %s "$f")
			hdr "$p" $m "$sz"
			cat "$f"
			pad $((sz % 4))
		fi
	done
	[ $console = 0 ] || hdr dev/console 2180 0 5 1
	hdr TRAILER!!! 0 0
}
emit | gzip -9 > "$out.tmp"
mv "$out.tmp" "$out"
rm -rf "$stage"
