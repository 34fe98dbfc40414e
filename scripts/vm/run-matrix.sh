#!/bin/sh
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Layer 4 of spec/TESTING.md: the end-to-end subset of every tool on Debian's
# own kernels, x86_64 and arm64, in qemu (software emulation).
#
#   scripts/vm/run-matrix.sh          (make test-vm; tests/run.sh with AISCOPE_TEST_VM=1)
#
# For each VM: fetches the kernel and busybox-static (scripts/vm/fetch.sh,
# cached in build/cache/), builds the static tools and test helpers for that
# arch (make STATIC=1 [ARCH=arm64]), an initramfs (scripts/vm/mkinitramfs.sh)
# holding them and tests/vm/, boots it under `timeout`, and reads the TAP
# lines back from the serial console. Prints them renumbered and labelled
# "[vm ARCH KERNEL]", ends with "N passed, N failed, N skipped" and exits 1
# when something failed. What cannot run here (no kernel package and no
# network, no qemu, no cross compiler) is a skip line with the reason.
# Serial logs: build/vm/<arch>-<kernel>.log.
#
# Environment: VM_ARCHES (default "x86 arm64"), VM_TIMEOUT_x86 (default 600 s),
# VM_TIMEOUT_arm64 (900 s), VM_MEM (1024 MiB), VM_SMP (2), and those of fetch.sh.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
out=$top/build/vm
mkdir -p "$out" || exit 1

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

# vm_modules KROOT: a directory of the <name>.ko files that tests/vm/*.modules
# name, extracted from KROOT.deb (the package fetch.sh unpacked to KROOT) into
# KROOT/modules once; prints it, or why not (exit 1)
vm_modules() {
	want=$(cat tests/vm/*.modules 2>/dev/null | sed 's/#.*//' | tr -s ' \t' '\n' | grep -v '^$' | sort -u)
	dir=$1/modules
	missing=
	for m in $want; do [ -f "$dir/$m.ko" ] || missing="$missing $m"; done
	if [ -n "$missing" ]; then
		[ -f "$1.deb" ] || { echo "no $1.deb to take$missing from"; return 1; }
		tmp=$dir.tmp
		rm -rf "$tmp"
		mkdir -p "$tmp" "$dir"
		pats=
		for m in $missing; do pats="$pats */$m.ko"; done
		# shellcheck disable=SC2086
		dpkg-deb --fsys-tarfile "$1.deb" | tar -x -C "$tmp" --wildcards $pats 2>/dev/null
		find "$tmp" -name '*.ko' -exec mv {} "$dir/" \;
		rm -rf "$tmp"
		for m in $missing; do [ -f "$dir/$m.ko" ] || { echo "$m.ko is not in $1.deb"; return 1; }; done
	fi
	echo "$dir"
}

run_vm() {
	arch=$1
	case $arch in
	x86) qarch=x86_64 qemu=qemu-system-x86_64 console=ttyS0 ;;
	arm64) qarch=aarch64 qemu=qemu-system-aarch64 console=ttyAMA0 ;;
	*) tap not_ok "[vm $arch] unknown architecture in VM_ARCHES"; return ;;
	esac
	label="vm $qarch"
	t0=$(date +%s)

	# kernel and busybox
	if ! info=$(scripts/vm/fetch.sh "$arch" 2> "$out/$arch-fetch.log"); then
		tap skip "[$label] schedlat end-to-end" "$(tail -1 "$out/$arch-fetch.log")"
		return
	fi
	kernel=$(echo "$info" | sed -n 's/^KERNEL=//p')
	kver=$(echo "$info" | sed -n 's/^KVER=//p')
	busybox=$(echo "$info" | sed -n 's/^BUSYBOX=//p')
	label="vm $qarch ${kver%-*}"
	diag "[$label] kernel $(echo "$info" | sed -n 's/^KPKG=//p'), $kernel"

	if ! command -v "$qemu" > /dev/null 2>&1; then
		tap skip "[$label] schedlat end-to-end" "$qemu missing (scripts/vm/deps.sh installs it)"
		return
	fi

	# static tools and helpers for that arch
	if [ "$arch" = "$host_arch" ]; then
		bdir=build/static mk="STATIC=1"
	else
		bdir=build/$arch-static mk="STATIC=1 ARCH=$arch"
		cc=$([ "$arch" = arm64 ] && echo aarch64-linux-gnu-gcc || echo x86_64-linux-gnu-gcc)
		if ! command -v "$cc" > /dev/null 2>&1; then
			tap skip "[$label] schedlat end-to-end" "$cc missing (make deps ARCH=$arch)"
			return
		fi
	fi
	helpers=$(ls tests/helpers/*.c | sed "s|^tests/helpers/\(.*\)\.c\$|$bdir/tests/helpers/\1|")
	# (not the options of a calling make: this build is its own)
	# shellcheck disable=SC2086
	if ! env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make --no-print-directory $mk tools $helpers > "$out/$arch-build.log" 2>&1; then
		tail -20 "$out/$arch-build.log" | sed "s/^/# [$label] /"
		tap not_ok "[$label] build (make $mk tools test helpers; log $out/$arch-build.log)"
		return
	fi
	# kernel modules the tests load (tests/vm/*.modules), taken once from
	# the kernel's package next to its unpacked /boot
	kroot=$(dirname "$(dirname "$kernel")")
	if ! modules=$(vm_modules "$kroot"); then
		tap not_ok "[$label] kernel modules: $modules"
		return
	fi
	initrd=$out/$arch-initramfs.cpio.gz
	if ! MODULES_DIR=$modules scripts/vm/mkinitramfs.sh "$initrd" "$busybox" "$bdir" "$bdir/tests/helpers" > "$out/$arch-initramfs.log" 2>&1; then
		sed "s/^/# [$label] /" "$out/$arch-initramfs.log"
		tap not_ok "[$label] initramfs"
		return
	fi
	t1=$(date +%s)

	# boot
	log=$out/$arch-$kver.log
	eval "limit=\${VM_TIMEOUT_$arch:-}"
	[ -n "$limit" ] || limit=$([ "$arch" = x86 ] && echo 600 || echo 900)
	set -- -m "${VM_MEM:-1024}" -smp "${VM_SMP:-2}" -nographic -no-reboot -nic none \
		-kernel "$kernel" -initrd "$initrd" -append "console=$console quiet panic=-1"
	[ "$arch" = arm64 ] && set -- -M virt -cpu max,pauth-impdef=on "$@"
	diag "[$label] $qemu $* (timeout ${limit}s)"
	# A run that never reaches its END marker hung inside the emulated
	# kernel (seen once in x86 TCG while trampolines were attached to
	# scheduler functions): boot once more, and say so. A test that fails
	# is never retried.
	for attempt in 1 2; do
		timeout -k 10 "$limit" "$qemu" "$@" < /dev/null > "$log" 2>&1
		rc=$?
		tr -d '\r' < "$log" > "$log.txt" && mv "$log.txt" "$log"
		grep -q 'AISCOPE-VM-END' "$log" && break
		[ $attempt = 1 ] || break
		tail -5 "$log" | sed "s/^/# [$label] | /"
		diag "[$label] the VM did not finish (qemu exit $rc): booting it once more"
		cp "$log" "$log.attempt1"
	done
	t2=$(date +%s)

	# results
	# (the console may put escape sequences before the first marker)
	sed -e 's/^.*AISCOPE-VM-/AISCOPE-VM-/' "$log" | sed -n '/^AISCOPE-VM-BEGIN/,/^AISCOPE-VM-END/p' > "$log.tap"
	begin=$(grep -m1 '^AISCOPE-VM-BEGIN' "$log.tap")
	got=0
	while IFS= read -r line; do
		case $line in
		"not ok "*) tap not_ok "[$label] $(echo "$line" | sed 's/^not ok [0-9]* - //')"; got=$((got + 1)) ;;
		"ok "*"# skip "*)
			text=$(echo "$line" | sed -e 's/^ok [0-9]* - //' -e 's/ # skip .*//')
			tap skip "[$label] $text" "$(echo "$line" | sed 's/.* # skip //')"; got=$((got + 1)) ;;
		"ok "*) tap ok "[$label] $(echo "$line" | sed 's/^ok [0-9]* - //')"; got=$((got + 1)) ;;
		"#"*) printf '# [%s] %s\n' "$label" "${line#"# "}" ;;
		esac
	done < "$log.tap"
	plan=$(sed -n 's/^1\.\.\([0-9]*\)$/\1/p' "$log.tap")
	if [ -z "$begin" ]; then
		tail -30 "$log" | sed "s/^/# [$label] | /"
		tap not_ok "[$label] the VM did not start the tests (qemu exit $rc; log $log)"
	elif ! grep -q '^AISCOPE-VM-END' "$log.tap"; then
		tail -30 "$log" | sed "s/^/# [$label] | /"
		tap not_ok "[$label] the VM did not finish the tests ($([ $rc -eq 124 ] && echo "timed out after ${limit}s" || echo "qemu exit $rc"); log $log)"
	elif [ "${plan:-x}" != "$got" ]; then
		tap not_ok "[$label] the VM planned ${plan:-no} tests, $got reported"
	fi
	rm -f "$log.tap"
	diag "[$label] ${begin#AISCOPE-VM-BEGIN }: build+initramfs $((t1 - t0)) s, boot+tests $((t2 - t1)) s"
}

for arch in ${VM_ARCHES:-x86 arm64}; do
	run_vm "$arch"
done
diag "vm matrix: $(($(date +%s) - t_start)) s"
echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
