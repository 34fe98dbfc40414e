#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Installs the Debian packages aiscope needs, only those that are missing.
#
#   scripts/deps.sh            build, test and benchmark packages (native)
#   scripts/deps.sh --arm64    the same, plus the arm64 cross toolchain and
#                              arm64 libraries (adds the arm64 architecture)
#   scripts/deps.sh --build    only what building needs (deploy/Dockerfile)
#
# Then fetches the pinned libbpf source package (scripts/libbpf.sh fetch,
# into build/cache/libbpf/; the build compiles it per arch).
# Needs root (apt-get). Does nothing, quickly, when everything is installed.
# `apt-get update` runs only when something must be installed: first when the
# package lists are absent or the arm64 architecture was just added, otherwise
# only after a failed install (stale lists), which is then retried once.
set -eu

# build: the tools, BPF objects and skeletons (libstdc++: lib/demangle.c);
# libbpf itself is built from the source package scripts/libbpf.sh pins
# (fetched below; dpkg-dev has dpkg-source, which unpacks it)
BUILD_PKGS="dpkg-dev bpftool clang llvm libelf-dev zlib1g-dev libc6-dev make gcc pkg-config libstdc++-12-dev"
# make deb: dpkg-buildpackage with debhelper, and lintian to check the result
# (tests/package.bats)
DEB_PKGS="debhelper dpkg-dev fakeroot lintian"
# tests and benchmarks: bats, jq, setpriv/runuser (util-linux), ps/pgrep (procps),
# file (build checks), and the peers the benchmarks compare against
# graphviz: topograph's DOT output is checked with dot -Tsvg
# python3-yaml: the Grafana provisioning files are parsed; chromium-headless-shell:
# topograph --html's page is opened, drawn and screenshot in a real browser
# rsyslog, rsyslog-relp, logrotate: tests/shipping.bats ships --json through two
# private rsyslogd (imfile -> omrelp -> imrelp, and omfwd -> imtcp) across a rotation
# podman, containerd, runc: tests/containers.bats runs real containers (a
# local root filesystem, no registry; its own containerd, stopped after)
# libibverbs-dev: tests/unit/test_rdma_abi.c checks rdmasnoop's offsets of the
# verbs structures against <infiniband/verbs.h>; ibverbs-utils,
# ibverbs-providers (and iproute2's rdma): the Soft-RoCE user space that
# scripts/vm/run-matrix.sh packs for tests/vm/rdmasnoop.sh; perftest: its
# ib_send_bw, ib_write_bw, ib_read_bw and ib_atomic_bw, the opcodes counted there
TEST_PKGS="bats jq util-linux procps file libbpf-tools bpftrace linux-perf bsdutils zsh fish bash-completion groff-base man-db time curl iproute2 prometheus prometheus-node-exporter python3-yaml chromium-headless-shell graphviz rsyslog rsyslog-relp logrotate podman containerd runc libibverbs-dev ibverbs-utils ibverbs-providers perftest"
# cross build for arm64 (libelf-dev and zlib1g-dev are Multi-Arch: same;
# libbpf is built from source with the cross compiler; libstdc++6:arm64:
# dpkg-shlibdeps reads its symbols for make deb ARCH=arm64)
ARM64_PKGS="gcc-aarch64-linux-gnu libc6-dev-arm64-cross libstdc++-12-dev-arm64-cross libelf-dev:arm64 zlib1g-dev:arm64 libstdc++6:arm64"

me=deps.sh
say() { printf '%s: %s\n' "$me" "$*" >&2; }

arm64=0
build_only=0
for a in "$@"; do
	case $a in
	--arm64) arm64=1 ;;
	--build) build_only=1 ;;
	-h|--help) sed -n '3,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
	*) say "unknown argument '$a' (usage: deps.sh [--arm64] [--build])"; exit 2 ;;
	esac
done

if ! command -v dpkg-query >/dev/null 2>&1 || ! command -v apt-get >/dev/null 2>&1; then
	say "this is not a Debian-like system (no dpkg-query/apt-get): install by hand:"
	say "  $BUILD_PKGS $DEB_PKGS $TEST_PKGS"
	exit 1
fi

native=$(dpkg --print-architecture)

# Mermaid's own parser for topograph's tests: the npm packages mermaid and
# jsdom in build/npm, when npm is there. Optional: without them the tests
# check topograph's Mermaid text with a strict grammar check of their own.
NPM_DIR=${AISCOPE_NPM_DIR:-$(cd "$(dirname "$0")/.." && pwd)/build/npm}
NPM_PKGS="mermaid@11.17.2 jsdom@29.1.1"
npm_deps() {
	if [ -d "$NPM_DIR/node_modules/mermaid" ] && [ -d "$NPM_DIR/node_modules/jsdom" ]; then
		return 0
	fi
	if ! command -v npm >/dev/null 2>&1; then
		say "npm not found: topograph's Mermaid output is checked by grammar only"
		return 0
	fi
	say "npm install $NPM_PKGS (into $NPM_DIR)"
	# shellcheck disable=SC2086 # word splitting of the package list is intended
	mkdir -p "$NPM_DIR" && npm install --prefix "$NPM_DIR" --no-audit --no-fund \
		--loglevel=error $NPM_PKGS </dev/null >/dev/null 2>&1 ||
		say "npm install failed: topograph's Mermaid output is checked by grammar only"
}
npm_deps

# ajv for the check of every JSON line the tests produce against
# docs/schema/ (tests/lib.bash schema_teardown, tests/schema.bats): npm ci
# of tests/schema's lock file in build/npm/schema-check. tests/lib.bash
# installs it too when it is missing.
SCHEMA_SRC=$(cd "$(dirname "$0")/.." && pwd)/tests/schema
schema_deps() {
	d=$NPM_DIR/schema-check
	if [ -e "$d/node_modules/ajv/package.json" ] && cmp -s "$SCHEMA_SRC/package-lock.json" "$d/package-lock.json"; then
		return 0
	fi
	if ! command -v npm >/dev/null 2>&1; then
		say "npm not found: tests/schema.bats cannot check the JSON lines against docs/schema/"
		return 0
	fi
	say "npm ci in $d (ajv, for docs/schema/)"
	mkdir -p "$d" && cp "$SCHEMA_SRC/package.json" "$SCHEMA_SRC/package-lock.json" "$d/" &&
		(cd "$d" && npm ci --no-audit --no-fund --loglevel=error </dev/null >/dev/null 2>&1) ||
		say "npm ci failed in $d: the tests install ajv when they start"
}
schema_deps

# installed PKG: true when PKG (optionally PKG:ARCH) is installed; an
# unqualified name must be installed for the native architecture (or be
# Architecture: all), so that libbpf-dev:arm64 alone does not count as libbpf-dev.
installed() {
	case $1 in
	*:*)
		[ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
		;;
	*)
		dpkg-query -W -f='${db:Status-Status} ${Architecture}\n' "$1" 2>/dev/null |
			grep -Eq "^installed ($native|all)\$"
		;;
	esac
}

want="$BUILD_PKGS $DEB_PKGS $TEST_PKGS"
[ $build_only -eq 1 ] && want=$BUILD_PKGS
# node and npm for the Kubernetes schema check (tests/fleet.bats), unless
# a node is already installed some other way
[ $build_only -eq 0 ] && ! command -v npm >/dev/null 2>&1 && want="$want nodejs npm"
[ $arm64 -eq 1 ] && want="$want $ARM64_PKGS"

need_update=0
if [ $arm64 -eq 1 ] && ! dpkg --print-foreign-architectures | grep -qx arm64; then
	if [ "$(id -u)" -ne 0 ]; then
		say "the arm64 architecture must be added (dpkg --add-architecture arm64): run as root"
		exit 1
	fi
	say "adding the arm64 architecture (dpkg --add-architecture arm64)"
	dpkg --add-architecture arm64
	need_update=1
fi

missing=
for p in $want; do
	installed "$p" || missing="$missing $p"
done
missing=${missing# }

# the libbpf source, once the packages that fetch it are there
libbpf_src() {
	"$(dirname "$0")/libbpf.sh" fetch
}

if [ -z "$missing" ]; then
	libbpf_src
	if [ $arm64 -eq 1 ]; then say "all packages present (arm64 cross build included)"
	else say "all packages present"; fi
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	say "missing packages: $missing"
	say "run as root (make deps) to install them"
	exit 1
fi

export DEBIAN_FRONTEND=noninteractive
APT="apt-get -q -y -o Dpkg::Use-Pty=0 -o APT::Color=0"

update() {
	say "apt-get update"
	# a failing third-party source must not stop us: the install decides
	$APT -qq update </dev/null || say "apt-get update reported errors; trying the install anyway"
}

install() {
	# shellcheck disable=SC2086 # word splitting of the package list is intended
	$APT -qq install $missing </dev/null
}

# no package lists at all (fresh container image): update first
have_lists=0
for f in /var/lib/apt/lists/*_Packages*; do
	[ -e "$f" ] && have_lists=1 && break
done
[ $have_lists -eq 1 ] || need_update=1

say "installing: $missing"
[ $need_update -eq 1 ] && update
if ! install; then
	if [ $need_update -eq 1 ]; then
		say "apt-get install failed"
		exit 1
	fi
	say "apt-get install failed: package lists may be stale; updating and retrying once"
	update
	if ! install; then
		say "apt-get install failed again"
		exit 1
	fi
fi

still=
for p in $missing; do
	installed "$p" || still="$still $p"
done
if [ -n "$still" ]; then
	say "still missing after install:$still"
	exit 1
fi
libbpf_src
say "done"
