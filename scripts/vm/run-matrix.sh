#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Layer 4 of spec/TESTING.md: the end-to-end subset of every tool on every
# Debian kernel line, x86_64 and arm64, in qemu.
#
#   scripts/vm/run-matrix.sh [NAME|ARCH|VERSION...]   (make test-vm [KERNELS=...];
#                                                     tests/run.sh with AISCOPE_TEST_VM=1)
#
# The kernels are those of scripts/vm/kernels: x86-5.10 x86-6.1 x86-6.12
# x86-7.2 arm64-5.10 arm64-6.1 arm64-6.12 arm64-6.12-16k arm64-7.2. The
# arguments (or $KERNELS) pick some: a NAME, an ARCH (x86, arm64: all of its
# kernels) or a VERSION (6.12: x86-6.12 and arm64-6.12); default all.
#
# 1. fetches each kernel and busybox-static (scripts/vm/fetch.sh, cached in
#    build/cache/), printing the package and version of each;
# 2. builds, once per architecture, the static tools and test helpers
#    (make STATIC=1 [ARCH=arm64]) and one initramfs
#    (scripts/vm/mkinitramfs.sh) holding them and tests/vm/; each kernel's
#    modules (tests/vm/*.modules with what they need) are a small archive
#    appended to it;
# 3. boots the kernels, VM_JOBS (default 2) at a time, in the order named
#    or else longest first (the arm64 ones, emulated), each under `timeout`, with KVM for x86 guests
#    when qemu can use it here (tried: qemu -accel kvm) and software
#    emulation otherwise, and reads the TAP lines back from the serial
#    console. They are printed renumbered and labelled "[vm NAME]" as each
#    VM ends, then "N passed, N failed, N skipped"; exits 1 when something
#    failed. What cannot run here (no kernel and no network, no qemu, no
#    cross compiler) is a skip line with the reason.
# 4. writes build/vm/KERNELS.md from the logs (scripts/vm/kernels-md.sh;
#    `make kernels-md` puts it in docs/).
# Logs: build/vm/NAME.log (serial console), NAME.info (package, timings).
#
# Depth: every kernel runs every test of tests/vm/ (VM_DEPTH=full, the
# default), or with VM_DEPTH=default, of each group of tests that asks one
# question through each mechanism a tool has (run_in in tests/vm/lib.sh),
# those up to the first that passes: the mechanism that kernel gives the
# tool by default, as a user gets it. The kernels named in VM_FULL (names
# of scripts/vm/kernels) run at the full depth either way (.ci/run: the
# whole matrix at the default depth, the 6.1 pair at the full depth).
#
# Environment: KERNELS, VM_DEPTH (full), VM_FULL (none), VM_TOOLS (the tools whose tests/vm/TOOL.sh run;
# default all, e.g. VM_TOOLS=socketsnoop while working on one), VM_JOBS (2), VM_TIMEOUT_x86 (1200 s), VM_TIMEOUT_arm64
# (2400 s; the limits of one VM's boot and tests on a loaded machine), VM_MEM (1024 MiB), VM_SMP (2), VM_NUMA_NODES (2: the guests' NUMA nodes), VM_APPEND (more kernel parameters,
# e.g. preempt=none to see whether a failure needs a preemptible kernel, or aiscope.only=t_rc|t_ud: only the tests whose function matches), VM_ACCEL (kvm or tcg: skips the
# trial), VM_TCG_THREAD_x86 and VM_TCG_THREAD_arm64 (single: one host thread per emulated guest; multi: one per vCPU), VM_BOOTS (3: boots of a VM that hangs or crashes before the end of its tests), VM_STALL (420 s: a
# guest whose tests print no line that long, or with a CPU in a soft lockup for 2 minutes, hung and is booted again), VM_RERUN (1: a failed test is run once
# more in its VM, and one that then passes is counted and named at the end; 0: never), VM_DEADLINE (below, at the boots), VM_GO, VM_GO_PID and VM_EARLY_JOBS (1) (tests/run.sh: steps 1 and 2 run beside
# the native tests, and VM_EARLY_JOBS VMs of step 3 until VM_GO; before step 3), and those of fetch.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
out=$top/build/vm
mkdir -p "$out" || exit 1
list=scripts/vm/kernels

passed=0 failed=0 skipped=0 n=0
t_start=$(date +%s)
host_arch=$(uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

tap() {	# tap ok|not_ok|skip TEXT [REASON]
	n=$((n + 1))
	case $1 in
	ok) echo "ok $n - $2"; passed=$((passed + 1)) ;;
	not_ok) echo "not ok $n - $2"; failed=$((failed + 1)) ;;
	skip) echo "ok $n - $2 # skip $3"; skipped=$((skipped + 1)) ;;
	esac
}
diag() { printf '# %s\n' "$*"; }

# ---- which kernels ----
all=$(awk '!/^#/ && NF {print $1}' "$list" | xargs)	# one line: " $all " is matched below
[ $# -gt 0 ] || set -- ${KERNELS:-}
[ $# -gt 0 ] || set -- all
picked=
for w in "$@"; do
	hit=
	for k in $all; do
		if [ "$w" = "$k" ] || [ "$w" = "${k%%-*}" ] || [ "$w" = "${k#*-}" ] || [ "$w" = all ]; then
			case " $picked " in *" $k "*) ;; *) picked="$picked $k" ;; esac
			hit=1
		fi
	done
	[ -n "$hit" ] || { echo "run-matrix.sh: no kernel '$w' (names: $(echo $all); or x86, arm64, a version such as 6.12)" >&2; exit 2; }
done
# kernels named one by one boot in the order given (with VM_DEADLINE, the
# first are the ones sure to run); otherwise longest first: the emulated
# arm64 kernels, then x86
order=
named=1
for w in "$@"; do case " $all " in *" $w "*) ;; *) named= ;; esac; done
if [ -n "$named" ]; then
	order=$picked
else
	for k in $all; do case " $picked " in *" $k "*) [ "${k%%-*}" = "$host_arch" ] || order="$order $k" ;; esac; done
	for k in $all; do case " $picked " in *" $k "*) [ "${k%%-*}" = "$host_arch" ] && order="$order $k" ;; esac; done
fi
diag "vm matrix: $(echo $order)"

# ---- 1. fetch ----
declare -A KERNEL KVER KPKG KMOD BUSYBOX RDMA_ROOT
ready=
t0=$(date +%s)
for k in $order; do
	if ! info=$(scripts/vm/fetch.sh "$k" 2> "$out/$k-fetch.log"); then
		sed "s/^/# [vm $k] /" "$out/$k-fetch.log"
		tap skip "[vm $k] end-to-end" "$(tail -1 "$out/$k-fetch.log")"
		continue
	fi
	sed "s/^/# [vm $k] /" "$out/$k-fetch.log"
	KERNEL[$k]=$(sed -n 's/^KERNEL=//p' <<< "$info")
	KVER[$k]=$(sed -n 's/^KVER=//p' <<< "$info")
	KPKG[$k]=$(sed -n 's/^KPKG=//p' <<< "$info")
	KMOD[$k]=$(sed -n 's/^KMODULES=//p' <<< "$info")
	BUSYBOX[$k]=$(sed -n 's/^BUSYBOX=//p' <<< "$info")
	# another architecture's Soft-RoCE user space: the same for its kernels
	RDMA_ROOT[${k%%-*}]=$(sed -n 's/^RDMA_ROOT=//p' <<< "$info")
	diag "[vm $k] kernel ${KPKG[$k]} (${KVER[$k]})"
	ready="$ready $k"
done
diag "vm matrix: kernels fetched in $(($(date +%s) - t0)) s"

# ---- 2. one build and initramfs per architecture ----
declare -A INITRD
build_arch() {	# build_arch ARCH BUSYBOX: sets INITRD[ARCH], or why not on stdout
	local arch=$1 bdir mk cc helpers
	if [ "$arch" = "$host_arch" ]; then
		bdir=build/static mk="STATIC=1"
	else
		bdir=build/$arch-static mk="STATIC=1 ARCH=$arch"
		cc=$([ "$arch" = arm64 ] && echo aarch64-linux-gnu-gcc || echo x86_64-linux-gnu-gcc)
		command -v "$cc" > /dev/null 2>&1 || { echo "skip:$cc missing (make deps ARCH=$arch)"; return 1; }
	fi
	helpers=$(ls tests/helpers/*.c | sed "s|^tests/helpers/\(.*\)\.c\$|$bdir/tests/helpers/\1|")
	# (not the options of a calling make: this build is its own)
	# shellcheck disable=SC2086
	if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory $mk tools $helpers > "$out/$arch-build.log" 2>&1; then
		tail -20 "$out/$arch-build.log" | sed "s/^/# [vm $arch] /"
		echo "fail:build (make $mk tools test helpers; log $out/$arch-build.log)"
		return 1
	fi
	# rsverbs (tests/rdma/), dynamic, against this architecture's
	# libibverbs: the host's, or the fetched tree's; its test skips
	# without it, pointing at the build's log
	local vroot=
	[ "$arch" = "$host_arch" ] || vroot=${RDMA_ROOT[$arch]:-}
	rm -f "$bdir/tests/helpers/rsverbs"
	if [ "$arch" = "$host_arch" ] || [ -n "$vroot" ]; then
		# shellcheck disable=SC2086
		env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory $mk VERBS_ROOT="$vroot" \
			"$bdir/tests/helpers/rsverbs" >> "$out/$arch-build.log" 2>&1 || rm -f "$bdir/tests/helpers/rsverbs"
	fi
	# runc for tests/vm/containers.sh: the host's, for its own
	# architecture (with its libraries); for the other, bookworm's runc
	# of it in the tree fetch.sh unpacked (RDMA_ROOT; the host's cannot
	# be installed beside it: runc is not Multi-Arch: same)
	local runc= runc_why= runc_root=
	if [ "$arch" != "$host_arch" ]; then
		runc_root=${RDMA_ROOT[$arch]:-}
		[ -n "$runc_root" ] && [ -x "$runc_root/usr/sbin/runc" ] ||
			runc_root= runc_why="no runc for $arch: bookworm's $arch runc could not be fetched (scripts/vm/fetch.sh; the host's runc is $host_arch's)"
	elif ! runc=$(command -v runc); then
		runc_why="no runc on the host that builds the initramfs (Debian's package runc)"
	fi
	# Soft-RoCE user space for tests/vm/rdmasnoop.sh: the host's rdma-core
	# (ibverbs-utils, ibverbs-providers, iproute2's rdma) for its own
	# architecture; for the other, bookworm's packages of it, fetched and
	# unpacked apart (fetch.sh: RDMA_ROOT; they are not installable beside
	# the host's)
	local rdma= rdma_prov= rdma_why= rdma_root= ml
	ml=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
	if [ "$arch" != "$host_arch" ]; then
		rdma_root=${RDMA_ROOT[$arch]:-}
		[ -n "$rdma_root" ] ||
			rdma_why="no RDMA user space for $arch: bookworm's $arch packages could not be fetched (scripts/vm/fetch.sh; the host's rdma-core is $host_arch's)"
	elif ! rdma=$(command -v ibv_rc_pingpong ibv_ud_pingpong ibv_devinfo rdma) ||
		[ "$(echo "$rdma" | wc -l)" -lt 4 ] || [ ! -r /etc/libibverbs.d/rxe.driver ] ||
		! rdma_prov=$(ls /usr/lib/"$ml"/libibverbs/librxe-rdmav*.so 2>/dev/null); then
		rdma= rdma_why="no Soft-RoCE user space on the host that builds the initramfs (Debian's ibverbs-utils, ibverbs-providers, iproute2: make deps)"
	else
		# perftest's programs when the host has them (the tests that
		# use them skip without, saying so)
		rdma=$(echo "$rdma" $(command -v ib_send_bw ib_write_bw ib_read_bw ib_atomic_bw) | tr '\n' ' ')
		rdma_prov="$rdma_prov /etc/libibverbs.d/rxe.driver"
	fi
	if ! RDMA_BINS=$rdma RDMA_PROVIDER=$rdma_prov RDMA_WHY=$rdma_why RDMA_ROOT=$rdma_root RUNC=$runc RUNC_ROOT=$runc_root RUNC_WHY=$runc_why TOOLS=${VM_TOOLS:-} scripts/vm/mkinitramfs.sh "$out/$arch-initramfs.cpio.gz" "$2" "$bdir" "$bdir/tests/helpers" > "$out/$arch-initramfs.log" 2>&1; then
		sed "s/^/# [vm $arch] /" "$out/$arch-initramfs.log"
		echo "fail:initramfs (log $out/$arch-initramfs.log)"
		return 1
	fi
}
t0=$(date +%s)
runnable=
for k in $ready; do
	arch=${k%%-*}
	case $arch in x86) qemu=qemu-system-x86_64 ;; arm64) qemu=qemu-system-aarch64 ;; esac
	if ! command -v "$qemu" > /dev/null 2>&1; then
		tap skip "[vm $k] end-to-end" "$qemu missing (scripts/vm/deps.sh installs it)"
		continue
	fi
	if [ -z "${INITRD[$arch]:-}" ]; then
		if why=$(build_arch "$arch" "${BUSYBOX[$k]}"); then
			INITRD[$arch]=$out/$arch-initramfs.cpio.gz
			diag "[vm $arch] tools, helpers and initramfs built in $(($(date +%s) - t0)) s"
		else
			INITRD[$arch]="-$why"
		fi
	fi
	case ${INITRD[$arch]} in
	-skip:*) tap skip "[vm $k] end-to-end" "${INITRD[$arch]#-skip:}"; continue ;;
	-fail:*) tap not_ok "[vm $k] ${INITRD[$arch]#-fail:}"; continue ;;
	esac
	runnable="$runnable $k"
done

# VM_GO=FILE (tests/run.sh): the kernels and images are ready while other
# tests still run. Until FILE exists, VM_EARLY_JOBS (default 1) VMs run
# beside those tests, then VM_JOBS; no VM boots any more if VM_GO_PID (the
# process that will make FILE) ends first. One emulated guest beside the
# native tests: those use 0.8 of this machine's two CPUs on average (its
# /proc/stat over 600 s of them) and one guest about 0.66 of one; two
# guests beside them would take the CPUs their timings assume.
go_early=${VM_EARLY_JOBS:-1}
[ -n "${VM_GO:-}" ] && [ -n "$runnable" ] && diag "vm matrix: $go_early VM(s) at a time until VM_GO, then ${VM_JOBS:-2}"

# ---- 3. the VMs ----
# modules_of MODDIR NAME...: the module files NAMEs need, in load order
# (modules.dep and the softdeps depmod wrote for them; an alias stands for
# every module that has it, e.g. crc32c for crc32c-intel and crc32c_generic;
# a softdep that is neither a module nor an alias of one is skipped, a NAME
# built into the kernel needs nothing, and so does NAME? where the kernel has
# no such module); fails naming a NAME it cannot find
modules_of() {
	local dir=$1
	shift
	awk -v dir="$dir" -v want="$*" '
	function base(p,  b) { b = p; sub(/.*\//, "", b); sub(/\.ko.*/, "", b); gsub(/-/, "_", b); return b }
	function load(m, soft,  i, n, d, s, a) {
		gsub(/-/, "_", m)
		if (m in done) return 1
		if (!(m in path)) {
			if (m in alias) {	# every module of that alias: those this machine cannot use fail to load, harmlessly
				n = split(alias[m], a, " "); r = 0
				for (i = 1; i <= n; i++) r += load(a[i], soft)
				return r > 0
			}
			if (m in builtin) { done[m] = 1; return 1 }
			if (!soft) { printf "module %s: not in %s\n", m, dir > "/dev/stderr"; bad = 1 }
			return 0
		}
		done[m] = 1
		n = split(softdep[m], s, " ")
		for (i = 1; i <= n; i++) load(s[i], 1)
		n = split(deps[m], d, " ")
		for (i = n; i >= 1; i--) load(base(d[i]), 0)
		print dir "/" path[m]
		return 1
	}
	FILENAME ~ /modules\.dep$/ { p = $1; sub(/:$/, "", p); m = base(p); path[m] = p
		$1 = ""; deps[m] = $0; next }
	FILENAME ~ /modules\.alias$/ && $1 == "alias" { a = $2; gsub(/-/, "_", a); alias[a] = alias[a] " " $3; next }
	FILENAME ~ /modules\.softdep$/ && $1 == "softdep" { m = $2; gsub(/-/, "_", m)
		for (i = 3; i <= NF; i++) { if ($i == "pre:") pre = 1; else if ($i == "post:") pre = 0; else if (pre) softdep[m] = softdep[m] " " $i } next }
	FILENAME ~ /modules\.builtin$/ { builtin[base($0)] = 1; next }
	END { n = split(want, w, " "); for (i = 1; i <= n; i++) { o = w[i] ~ /\?$/; sub(/\?$/, "", w[i]); load(w[i], o) }; exit bad }
	' "$dir/modules.dep" $(for f in modules.alias modules.softdep modules.builtin; do [ -f "$dir/$f" ] && echo "$dir/$f"; done)
}

want_modules=$(cat tests/vm/*.modules 2>/dev/null | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | awk '!seen[$0]++')

# accel ARCH NAME: "kvm" when qemu boots kernel NAME with KVM here as far as
# its /init (tried with the architecture's initramfs and aiscope.probe on
# the command line, 30 s at most: an emulated boot takes about that long,
# so a KVM boot slower than that gains nothing), else "tcg"
declare -A ACCEL
accel() {
	local arch=$1 k=$2 qemu=qemu-system-x86_64 console=ttyS0 t=$(date +%s)
	[ -n "${ACCEL[$arch]:-}" ] && return
	[ "$arch" = arm64 ] && qemu=qemu-system-aarch64 console=ttyAMA0
	if [ -n "${VM_ACCEL:-}" ]; then
		ACCEL[$arch]=$VM_ACCEL
	elif [ "$arch" = "$host_arch" ] && [ -c /dev/kvm ] &&
		timeout -k 5 30 "$qemu" -accel kvm $([ "$arch" = arm64 ] && echo "-M virt -cpu host") -m 256 \
			-nographic -no-reboot -nic none -kernel "${KERNEL[$k]}" -initrd "${INITRD[$arch]}" \
			-append "console=$console quiet panic=-1 aiscope.probe" < /dev/null > "$out/$arch-kvm.log" 2>&1 &&
		grep -q AISCOPE-VM-PROBE "$out/$arch-kvm.log"; then
		ACCEL[$arch]=kvm
	else
		ACCEL[$arch]=tcg
	fi
	diag "[vm $arch] accelerator: ${ACCEL[$arch]}$([ "${ACCEL[$arch]}" = tcg ] && [ "$arch" = "$host_arch" ] &&
		[ -z "${VM_ACCEL:-}" ] && echo " (a KVM boot of $k did not reach /init within 30 s: $(($(date +%s) - t)) s tried)")"
}

# depth_of NAME: the depth kernel NAME runs its tests at
depth_of() {
	case " ${VM_FULL:-} " in *" $1 "*) echo full; return ;; esac
	echo "${VM_DEPTH:-full}"
}
case ${VM_DEPTH:-full} in full|default) ;; *) echo "run-matrix.sh: VM_DEPTH must be full or default, not '$VM_DEPTH'" >&2; exit 2 ;; esac

# numa_args: every guest has VM_NUMA_NODES (2) NUMA nodes, the CPUs and the
# memory split evenly between them, so that numaplace's tests (tests/vm/
# numaplace.sh) see a real two-node kernel without a boot of their own; the
# other tests run as before (their workloads are pinned or node-blind).
# VM_NUMA_NODES=1, or CPUs or memory that do not split evenly: one node.
numa_args() {
	local n=${VM_NUMA_NODES:-2} mem=${VM_MEM:-1024} smp=${VM_SMP:-2} i
	[ "$n" -gt 1 ] && [ $((smp % n)) -eq 0 ] && [ $((mem % n)) -eq 0 ] || return 0
	for i in $(seq 0 $((n - 1))); do
		printf -- '-object memory-backend-ram,id=m%d,size=%dM -numa node,nodeid=%d,cpus=%d-%d,memdev=m%d ' \
			"$i" $((mem / n)) "$i" $((i * smp / n)) $(((i + 1) * smp / n - 1)) "$i"
	done
}

# nic_args ARCH: on x86 guests of two nodes or more, an e1000 NIC on a PCI
# expander bridge of the last node (qemu's pxb, its _PXM in the ACPI
# tables), for numaplace's test of a NIC's node (tests/vm/numaplace.sh);
# its network is qemu's user mode, restricted (nothing outside the guest).
# qemu's arm64 virt machine describes no expander bridge to a kernel
# booted without firmware (device tree): none there.
nic_args() {
	local n=${VM_NUMA_NODES:-2}
	[ "$1" = x86 ] && [ -n "$(numa_args)" ] || return 0
	printf -- '-device pxb,id=pxb1,bus=pci.0,numa_node=%d,bus_nr=4 -netdev user,id=nd1,restrict=on -device e1000,bus=pxb1,addr=0x4,netdev=nd1 ' $((n - 1))
}

# watched LIMIT LOG CMD...: runs qemu for LIMIT s at most, its console in
# LOG, and stops it early when LOG has no new line of the tests (the
# kernel's own lines not counted) for VM_STALL s (420): a guest prints a
# line at least at the end of each test, and no test may run longer than
# 240 s (tests/vm/lib.sh run_once kills it then), so a console silent that
# long is a guest hung in its kernel (x86 6.1 in CI on 2026-12-06, after
# "# ---- topograph.sh", nothing from the kernel); or at once when the
# kernel reports a CPU in a soft lockup for 2 minutes. Waiting out the
# whole LIMIT (1200 s, 2400 s) only makes it dearer for every kernel after
# it. Exit: qemu's, 124 at LIMIT, STALLED when stopped early.
STALLED=200
watched() {
	local limit=$1 log=$2 stall=${VM_STALL:-420} pid size last=-1 since rc
	shift 2
	since=$(date +%s)
	timeout -k 10 "$limit" "$@" < /dev/null > "$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2> /dev/null; do
		sleep 5
		# the tests' own lines: the kernel's ("[  12.345678] ...") go on
		# while a guest hangs, a soft lockup reported every 30 s
		size=$(grep -cv '^\[ *[0-9]*\.[0-9]*\]' "$log" 2> /dev/null) || size=0
		if [ "$size" != "$last" ]; then
			last=$size since=$(date +%s)
		fi
		# a CPU stuck two minutes is no test's doing (the kernel-log
		# guard's own lockup lasts 20 s): the guest hung, in its text
		# patching under TCG (x86 6.1 in CI on 2026-12-07: oomwatch's
		# fentry attach and a shell stuck on both CPUs for 775 s)
		if ! grep -Eq 'soft lockup - CPU#[0-9]+ stuck for ([2-9][0-9]{2}|1[2-9][0-9]|[0-9]{4,})s' "$log" &&
			[ $(($(date +%s) - since)) -lt "$stall" ]; then
			continue
		fi
		# timeout passes the signal on to qemu; one that does not
		# stop within 15 s is killed
		kill -TERM "$pid" 2> /dev/null
		for _ in $(seq 15); do
			kill -0 "$pid" 2> /dev/null || break
			sleep 1
		done
		pkill -KILL -P "$pid" 2> /dev/null
		kill -KILL "$pid" 2> /dev/null
		wait "$pid" 2> /dev/null
		return "$STALLED"
	done
	wait "$pid"
	rc=$?
	return $rc
}

# stopped_why RC: how watched's qemu ended, in words ($limit: run_vm's)
stopped_why() {
	case $1 in
	124) echo "timed out after ${limit}s" ;;
	"$STALLED") echo "stopped: a CPU in a soft lockup for 2 minutes, or no line of its tests for ${VM_STALL:-420} s" ;;
	*) echo "qemu exit $1" ;;
	esac
}

# tcg_of ARCH: qemu's -accel value for software emulation of ARCH's guests.
# One host thread for all of a guest's vCPUs (VM_TCG_THREAD_<ARCH>, default
# single; multi is qemu's default, a thread per vCPU): two guests at a time
# on two CPUs have then a thread each, not four threads that preempt each
# other's spinlock holders and IPI waits, and each vCPU sees the other's
# code patches between its translation blocks. Measured here on 2026-12-07,
# two guests at a time, default depth: x86-6.1 393 s multi, 329 s single;
# x86-6.12 571 s multi (an "Oops: int3" in get_page_from_freelist, a jump
# label being patched, crashed its first boot at 208 s), 299 s single in one
# boot; arm64-6.1 249 s and arm64-7.2 350 s single (279 and 408 s multi in
# the CI run of 2026-12-06).
tcg_of() {
	local thread
	eval "thread=\${VM_TCG_THREAD_$1:-single}"
	echo "tcg,thread=$thread"
}

# accel_of ARCH: how ARCH's guests run here (kvm, or tcg_of's value)
accel_of() {
	if [ "${ACCEL[$1]}" = kvm ]; then echo kvm; else tcg_of "$1"; fi
}

# run_vm NAME: boots it; results in $out/NAME.result ("ok|TEXT",
# "not_ok|TEXT", "skip|TEXT|WHY", "diag|TEXT"), timings in $out/NAME.info
run_vm() {
	local k=$1 arch=${1%%-*} qemu console limit cut log res rc mods initrd t1 t2 attempt begin got plan line text
	res=$out/$k.result
	: > "$res"
	case $arch in
	x86) qemu=qemu-system-x86_64 console=ttyS0 ;;
	arm64) qemu=qemu-system-aarch64 console=ttyAMA0 ;;
	esac
	# this kernel's modules, appended to the architecture's initramfs
	initrd=$out/$k.initrd
	if [ -n "$want_modules" ]; then
		# shellcheck disable=SC2086
		if ! mods=$(modules_of "${KMOD[$k]}" $want_modules 2> "$out/$k-modules.log") ||
			! scripts/vm/mkinitramfs.sh --modules "$out/$k-modules.cpio.gz" $mods >> "$out/$k-modules.log" 2>&1; then
			echo "not_ok|[vm $k] kernel modules: $(tail -1 "$out/$k-modules.log")" >> "$res"
			return
		fi
		cat "${INITRD[$arch]}" "$out/$k-modules.cpio.gz" > "$initrd"
	else
		cp "${INITRD[$arch]}" "$initrd"
	fi

	log=$out/$k.log
	eval "limit=\${VM_TIMEOUT_$arch:-}"
	[ -n "$limit" ] || limit=$([ "$arch" = x86 ] && echo 1200 || echo 2400)
	cut=
	if [ -n "${VM_DEADLINE:-}" ] && [ $((VM_DEADLINE + 60 - $(date +%s))) -lt "$limit" ]; then
		limit=$((VM_DEADLINE + 60 - $(date +%s)))
		cut=1
	fi
	set -- -m "${VM_MEM:-1024}" -smp "${VM_SMP:-2}" $(numa_args) $(nic_args "$arch") -nographic -no-reboot -nic none \
		-kernel "${KERNEL[$k]}" -initrd "$initrd" -append "console=$console quiet panic=-1 aiscope.depth=$(depth_of "$k") aiscope.rerun=${VM_RERUN:-1}${VM_APPEND:+ $VM_APPEND}"
	if [ "$arch" = arm64 ]; then
		[ "${ACCEL[$arch]}" = kvm ] && set -- -accel kvm -M virt -cpu host "$@"
		[ "${ACCEL[$arch]}" = kvm ] || set -- -accel "$(tcg_of "$arch")" -M virt -cpu max,pauth-impdef=on "$@"
	elif [ "${ACCEL[$arch]}" = kvm ]; then
		set -- -accel kvm "$@"
	else
		set -- -accel "$(tcg_of "$arch")" "$@"
	fi
	echo "diag|[vm $k] $qemu $* (timeout ${limit}s)" >> "$res"
	t1=$(date +%s)
	# A run that never reaches its END marker hung or crashed inside the
	# emulated kernel, in its own text patching under TCG (soft lockups
	# in kprobe patching on x86 5.10; on x86 6.12 an "Oops: int3" in
	# __schedule, in the first boot of both CI runs of 2026-12-06): boot
	# again, VM_BOOTS (3) in all, and say so. (A test that fails is run
	# once more inside its VM: tests/vm/lib.sh run_test, VM_RERUN.)
	boots=${VM_BOOTS:-3}
	for attempt in $(seq 1 "$boots"); do
		watched "$limit" "$log" "$qemu" "$@"
		rc=$?
		tr -d '\r' < "$log" > "$log.txt" && mv "$log.txt" "$log"
		grep -q 'AISCOPE-VM-END' "$log" && break
		[ "$attempt" -lt "$boots" ] || break
		[ -n "$cut" ] && [ $rc -eq 124 ] && break	# no time for another boot
		tail -5 "$log" | sed "s/^/diag|[vm $k] | /" >> "$res"
		# another boot has what is left before the deadline
		if [ -n "${VM_DEADLINE:-}" ] && [ $((VM_DEADLINE + 60 - $(date +%s))) -lt "$limit" ]; then
			limit=$((VM_DEADLINE + 60 - $(date +%s)))
			cut=1
		fi
		if [ -n "$cut" ] && [ "$limit" -le 30 ]; then
			echo "diag|[vm $k] the VM did not finish ($(stopped_why $rc)), and the run's time budget leaves no time to boot it again" >> "$res"
			rc=124
			break
		fi
		echo "diag|[vm $k] the VM did not finish ($(stopped_why $rc)): booting it once more" >> "$res"
		cp "$log" "$log.attempt$attempt"
	done
	t2=$(date +%s)

	# (the console may put escape sequences before the first marker)
	sed -e 's/^.*AISCOPE-VM-/AISCOPE-VM-/' "$log" | sed -n '/^AISCOPE-VM-BEGIN/,/^AISCOPE-VM-END/p' > "$log.tap"
	begin=$(grep -m1 '^AISCOPE-VM-BEGIN' "$log.tap")
	got=0
	while IFS= read -r line; do
		case $line in
		"not ok "*) echo "not_ok|[vm $k] $(sed 's/^not ok [0-9]* - //' <<< "$line")"; got=$((got + 1)) ;;
		"ok "*"# skip "*)
			text=$(sed -e 's/^ok [0-9]* - //' -e 's/ # skip .*//' <<< "$line")
			echo "skip|[vm $k] $text|$(sed 's/.* # skip //' <<< "$line")"; got=$((got + 1)) ;;
		"ok "*) echo "ok|[vm $k] $(sed 's/^ok [0-9]* - //' <<< "$line")"; got=$((got + 1)) ;;
		"#"*) echo "diag|[vm $k] ${line#"# "}" ;;
		esac
	done < "$log.tap" >> "$res"
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$log.tap")
	if ! grep -q '^AISCOPE-VM-END' "$log.tap" && [ -n "$cut" ] && [ $rc -eq 124 ]; then
		# stopped by the budget: what ran is counted above
		echo "skip|[vm $k] the rest of its tests|stopped at the run's time budget (VM_DEADLINE, ${limit} s for this VM) after $got test(s)${plan:+ of $plan}" >> "$res"
	elif [ -z "$begin" ]; then
		tail -30 "$log" | sed "s/^/diag|[vm $k] | /" >> "$res"
		echo "not_ok|[vm $k] the VM did not start the tests (qemu exit $rc; log $log)" >> "$res"
	elif ! grep -q '^AISCOPE-VM-END' "$log.tap"; then
		tail -30 "$log" | sed "s/^/diag|[vm $k] | /" >> "$res"
		echo "not_ok|[vm $k] the VM did not finish the tests ($(stopped_why $rc); log $log)" >> "$res"
	elif [ "${plan:-x}" != "$got" ]; then
		echo "not_ok|[vm $k] the VM planned ${plan:-no} tests, $got reported" >> "$res"
	fi
	rm -f "$log.tap"
	[ -n "$begin" ] && vm_json "$k" "$log" >> "$res"
	echo "diag|[vm $k] ${begin#AISCOPE-VM-BEGIN }: boot+tests $((t2 - t1)) s ($attempt boot(s), $(accel_of "$arch"))" >> "$res"
	{
		echo "name=$k"
		echo "package=${KPKG[$k]}"
		echo "kver=${KVER[$k]}"
		echo "accel=$(accel_of "$arch")"
		echo "seconds=$((t2 - t1))"
		echo "boots=$attempt"
		echo "depth=$(depth_of "$k")"
		echo "not_run=$(sed -n 's/^.*AISCOPE-DEPTH [a-z]* \([0-9]*\).*$/\1/p' "$log" | head -1)"
	} > "$out/$k.info"
}

# vm_json NAME LOG: the JSON lines the VM's tests got from the tools (tests/vm/
# lib.sh json_out: gzip and base64 between markers on the console), back
# in $out/NAME.json, and checked against docs/schema/ with the suites' ajv
# (tests/schema/validate.js): one result line
vm_json() {
	local k=$1 log=$2 dir=$out/$1.json.d f t lines=0 garbled= rc=0 check
	rm -rf "$dir" "$out/$k.json"
	mkdir -p "$dir" || return
	sed -e 's/^.*AISCOPE-VM-J/AISCOPE-VM-J/' "$log" | awk -v dir="$dir" '
		/^AISCOPE-VM-JSON-BEGIN / { f = dir "/" $2 ".b64"; printf "" > f; next }
		/^AISCOPE-VM-J / { if (f) print $2 >> f; next }
		/^AISCOPE-VM-JSON-END / { if (f) { close(f); print $3 > (dir "/" $2 ".md5"); close(dir "/" $2 ".md5") } f = ""; next }'
	: > "$out/$k.json"
	for f in "$dir"/*.b64; do
		[ -e "$f" ] || continue
		t=${f##*/}
		t=${t%.b64}
		# a console line cut by a kernel message shows here, as a failure
		if ! base64 -d < "$f" > "$dir/$t.gz" 2> /dev/null ||
			[ "$(md5sum < "$dir/$t.gz" | cut -d' ' -f1)" != "$(cat "$dir/$t.md5" 2> /dev/null)" ] ||
			! zcat "$dir/$t.gz" >> "$out/$k.json"; then
			garbled="$garbled $t"
		fi
	done
	rm -rf "$dir"
	lines=$(wc -l < "$out/$k.json")
	if [ -n "$garbled" ]; then
		echo "not_ok|[vm $k] the JSON lines of test(s)$garbled came back from the console garbled (log $log)"
		return
	fi
	check=$top/build/npm/schema-check/node_modules
	if ! command -v node > /dev/null || [ ! -e "$check/ajv/package.json" ]; then
		echo "skip|[vm $k] its tests' $lines JSON lines against docs/schema/|no node or ajv here (make deps installs them)"
		return
	fi
	NODE_PATH=$check node tests/schema/validate.js docs/schema "$out/$k.json" > "$out/$k.json.check" 2>&1 || rc=$?
	if [ $rc -eq 0 ] && [ "$lines" -gt 0 ]; then
		echo "ok|[vm $k] its tests' JSON lines valid against docs/schema/ ($(tail -1 "$out/$k.json.check"))"
	else
		head -20 "$out/$k.json.check" | sed "s/^/diag|[vm $k] /"
		echo "not_ok|[vm $k] its tests' JSON lines against docs/schema/: $(tail -1 "$out/$k.json.check") (all: $out/$k.json.check)"
	fi
}

# report NAME: its results, numbered here
report() {
	local kind text why
	while IFS='|' read -r kind text why; do
		case $kind in
		diag) diag "$text" ;;
		ok|not_ok) tap "$kind" "$text" ;;
		skip) tap skip "$text" "$why" ;;
		esac
	done < "$out/$1.result"
}

for k in $runnable; do accel "${k%%-*}" "$k"; done
t0=$(date +%s)
jobs_max=${VM_JOBS:-2}
declare -A PID_OF EARLY
running=0
pending=$runnable
# wait_one: reports the first VM that ends (wait -p: bash 5.1)
wait_one() {
	local p='' k
	wait -n -p p
	for k in "${!PID_OF[@]}"; do
		[ "${PID_OF[$k]}" = "$p" ] || continue
		unset "PID_OF[$k]"
		running=$((running - 1))
		TOOK[$k]=$(sed -n 's/^seconds=//p' "$out/$k.info" 2> /dev/null)
		# a VM booted again took its crashed boot's time too: not a
		# measure of how fast this machine runs that kernel
		[ "$(sed -n 's/^boots=//p' "$out/$k.info" 2> /dev/null)" = 1 ] || TOOK[$k]=
		# nor one that booted beside the native tests (VM_GO)
		[ -z "${EARLY[$k]:-}" ] || TOOK[$k]=
		[ -n "${TOOK[$k]}" ] || unset "TOOK[$k]"
		report "$k"
		return
	done
}
# VM_DEADLINE (seconds since the epoch; .ci/run sets it from its time
# budget): a kernel is booted only if it can end before it. Its estimate:
# its boot+tests time in docs/KERNELS.md (the last matrix that landed) at
# the same depth, times the largest ratio of this run's time to that one
# of the VMs that have ended (how much slower this machine is now, never
# taken below 1); a kernel the file has no time for at that depth takes the
# longest a VM of its depth has taken so far in this run (VM_ESTIMATE_full,
# 500 s, and VM_ESTIMATE_default, 400 s, before any has ended). One that
# cannot end is a skip line that says so, and a booted one's timeout ends
# at the deadline (plus 60 s): a kernel left out for time is counted,
# never a silent gap.
declare -A TOOK REF
while IFS='|' read -r _ k _ _ _ _ d _ _ _ _ t _; do
	k=${k// /} d=${d// /} t=${t//[ s]/}
	[[ $t =~ ^[0-9]+$ ]] && [ "$t" -gt 0 ] && REF[$k@$d]=$t
done < <(grep -E '^\| (x86|arm64)-' "$top/docs/KERNELS.md" 2> /dev/null)
estimate_of() {
	local k=$1 d e=0 r n ratio=100
	d=$(depth_of "$k")
	for n in "${!TOOK[@]}"; do
		[ "$(depth_of "$n")" = "$d" ] || continue
		[ "${TOOK[$n]}" -gt "$e" ] && e=${TOOK[$n]}
		r=${REF[$n@$d]:-}
		[ -n "$r" ] && [ $((TOOK[$n] * 100 / r)) -gt $ratio ] && ratio=$((TOOK[$n] * 100 / r))
	done
	r=${REF[$k@$d]:-}
	if [ -n "$r" ]; then
		echo $((r * ratio / 100))
		return
	fi
	if [ "$e" -eq 0 ]; then
		case $d in full) e=${VM_ESTIMATE_full:-500} ;; *) e=${VM_ESTIMATE_default:-400} ;; esac
	fi
	echo "$e"
}
# go_pending: VM_GO is named and not made yet
go_pending() { [ -n "${VM_GO:-}" ] && [ ! -e "$VM_GO" ]; }
# slots: how many VMs may run now
slots() { if go_pending; then echo "$go_early"; else echo "$jobs_max"; fi; }
# stop_all: VM_GO_PID ended before VM_GO (its tests were stopped): the
# VMs running end with it, none more boots
stop_all() {
	local p
	diag "vm matrix: VM_GO_PID $VM_GO_PID ended before VM_GO: no more VM booted"
	for p in "${PID_OF[@]}"; do pkill -TERM -P "$p"; kill "$p"; done 2> /dev/null
	pkill -TERM -f "$out/.*\.initrd" 2> /dev/null
	exit 1
}
# wait_slot: returns once one more VM may boot
wait_slot() {
	while [ $running -ge "$(slots)" ]; do
		if ! go_pending; then
			wait_one
			continue
		fi
		[ -z "${VM_GO_PID:-}" ] || kill -0 "$VM_GO_PID" 2> /dev/null || stop_all
		# one ended (bash reaped it): report it; else look again
		if [ "$(jobs -rp | wc -l)" -lt $running ]; then
			wait_one
		else
			sleep 1
		fi
	done
}
for k in $pending; do
	wait_slot
	if go_pending; then
		diag "vm matrix: $k boots before VM_GO, beside the native tests"
		EARLY[$k]=1
	fi
	rm -f "$out/$k.info"
	if [ -n "${VM_DEADLINE:-}" ]; then
		left=$((VM_DEADLINE - $(date +%s)))
		est=$(estimate_of "$k")
		if [ "$left" -lt "$est" ]; then
			tap skip "[vm $k] end-to-end" "not booted: the run's time budget (VM_DEADLINE) leaves $left s, its VM at the $(depth_of "$k") depth would take about $est s here"
			continue
		fi
	fi
	run_vm "$k" &
	PID_OF[$k]=$!
	booted="${booted:-} $k"
	running=$((running + 1))
done
while [ $running -gt 0 ]; do wait_one; done
diag "vm matrix: VMs $(($(date +%s) - t0)) s, $jobs_max at a time${VM_GO:+ ($go_early before VM_GO)}"
# the tests that failed once and passed when run again (tests/vm/lib.sh
# run_test): passes, and named here, so that a flaky test is seen
reran=$(for k in ${booted:-}; do cat "$out/$k.result"; done |
	grep '^ok|.*passed on a second run' | cut -d'|' -f2-)
if [ -n "$reran" ]; then
	diag "vm matrix: $(echo "$reran" | wc -l) test(s) failed once and passed when run again:"
	echo "$reran" | sed 's/^/#   /'
fi

# ---- 4. docs/KERNELS.md's data ----
if [ -n "$runnable" ] && [ -x scripts/vm/kernels-md.sh ]; then
	scripts/vm/kernels-md.sh "$out" > "$out/KERNELS.md" 2> "$out/kernels-md.log" ||
		diag "scripts/vm/kernels-md.sh failed: $(tail -1 "$out/kernels-md.log")"
fi

diag "vm matrix: $(($(date +%s) - t_start)) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
