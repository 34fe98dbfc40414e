#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Installs what `make test-vm` needs on the host, only what is missing:
#   qemu-system-x86 (qemu-system-x86_64) and qemu-system-arm (qemu-system-aarch64),
#   and the arm64 dpkg architecture (for `apt-get download ...:arm64`).
# The kernels and busybox-static (both arches) are not installed: the matrix
# fetches them with `apt-get download` into build/cache/ (scripts/vm/fetch.sh).
# The cross toolchain for the arm64 static build comes from `make deps ARCH=arm64`.
#
#   scripts/vm/deps.sh          install (root)
#   scripts/vm/deps.sh --check  exit 0 when nothing is missing, 1 otherwise
#
# Exits 0 when everything is present afterwards, 1 when something could not
# be installed (no network): the matrix then reports skips, not failures.
set -u

PKGS="qemu-system-x86 qemu-system-arm"
me=vm/deps.sh
say() { printf '%s: %s\n' "$me" "$*" >&2; }

check=0
case ${1:-} in
--check) check=1 ;;
-h|--help) sed -n '3,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
'') ;;
*) say "unknown argument '$1' (usage: deps.sh [--check])"; exit 2 ;;
esac

command -v dpkg-query >/dev/null 2>&1 && command -v apt-get >/dev/null 2>&1 || {
	say "not a Debian-like system: install qemu-system-x86_64 and qemu-system-aarch64 by hand"
	exit 1
}

native=$(dpkg --print-architecture)
installed() {
	dpkg-query -W -f='${db:Status-Status} ${Architecture}\n' "$1" 2>/dev/null |
		grep -Eq "^installed ($native|all)\$"
}

missing=
for p in $PKGS; do
	installed "$p" || missing="$missing $p"
done
missing=${missing# }
need_arch=0
[ "$native" = arm64 ] || dpkg --print-foreign-architectures | grep -qx arm64 || need_arch=1

if [ -z "$missing" ] && [ $need_arch -eq 0 ]; then
	say "all present"
	exit 0
fi
[ $check -eq 1 ] && { say "missing: $missing$([ $need_arch -eq 1 ] && echo ' (arm64 architecture)')"; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
	say "missing: $missing; run as root"
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
APT="apt-get -q -y -o Dpkg::Use-Pty=0 -o APT::Color=0"
updated=0
update() {
	say "apt-get update"
	$APT -qq update </dev/null || say "apt-get update reported errors; going on"
	updated=1
}

if [ $need_arch -eq 1 ]; then
	say "adding the arm64 architecture (dpkg --add-architecture arm64)"
	dpkg --add-architecture arm64 && update
fi
if [ -n "$missing" ]; then
	say "installing: $missing"
	# shellcheck disable=SC2086
	if ! $APT -qq install --no-install-recommends $missing </dev/null; then
		[ $updated -eq 1 ] && { say "apt-get install failed"; exit 1; }
		update
		# shellcheck disable=SC2086
		$APT -qq install --no-install-recommends $missing </dev/null || {
			say "apt-get install failed again"; exit 1; }
	fi
fi
for p in $PKGS; do
	installed "$p" || { say "still missing: $p"; exit 1; }
done
say "done"
