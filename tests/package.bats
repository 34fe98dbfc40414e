#!/usr/bin/env bats
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The Debian package (make deb, debian/): built with dpkg-buildpackage,
# lintian-clean at its default level, and installed on this machine with
# apt-get beside Debian's libbpf-tools and bpfcc-tools (cachestat,
# cachestat-bpfcc...), with no file of theirs touched; the installed tools,
# man pages, completions, units and tmpfiles.d work; then every package the
# test installed is purged, so the machine's package set is as before.
# Slow (a full build and an apt-get install): about 3 minutes here.

bats_require_minimum_version 1.5.0
load lib

TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
APT=(apt-get -y -q -o DPkg::Lock::Timeout=300 -o Dpkg::Use-Pty=0)

setup_file() {
	export DEBIAN_FRONTEND=noninteractive
}

teardown() {
	aiscope_teardown
	# the packages this test installed, purged (dependencies included)
	if [ -n "${PKGS_BEFORE:-}" ]; then
		local added
		added=$(comm -13 "$PKGS_BEFORE" <(installed_pkgs))
		if [ -n "$added" ]; then
			# shellcheck disable=SC2086 # one word per package
			"${APT[@]}" purge $added > "$BATS_TEST_TMPDIR/purge.log" 2>&1 ||
				{ echo "purging $added failed:"; cat "$BATS_TEST_TMPDIR/purge.log"; }
		fi
	fi
}

# installed_pkgs: PACKAGE:ARCH of every installed package, sorted
installed_pkgs() {
	dpkg-query -W -f='${db:Status-Status} ${binary:Package}\n' | awk '$1 == "installed" { print $2 }' | LC_ALL=C sort
}

deb_version() {
	# shellcheck disable=SC2016 # make expands $(VERSION)
	printf 'v:\n\t@echo $(VERSION)\n' | make --no-print-directory -s -C "$TOP" -f Makefile -f - v
}

@test "make deb: lintian-clean; installed with libbpf-tools and bpfcc-tools, no file shared; tools, pages, completions, units work; purged" {
	need_root
	command -v dpkg-buildpackage > /dev/null || skip "dpkg-dev is not installed (make deps)"
	command -v dh > /dev/null || skip "debhelper is not installed (make deps)"
	command -v lintian > /dev/null || skip "lintian is not installed (make deps)"
	if dpkg-query -W -f='${db:Status-Status}' aiscope 2> /dev/null | grep -qx installed; then
		skip "an aiscope package is installed on this machine: the test leaves it alone"
	fi
	local v deb arch f t out sbin
	v=$(deb_version)
	arch=$(dpkg --print-architecture)
	deb=$TOP/build/deb/aiscope_${v}_$arch.deb
	rm -f "$deb"
	run make -s -C "$TOP" deb
	echo "$output"
	[ "$status" -eq 0 ]
	[ -f "$deb" ]
	# lintian at its default level: no error, no warning (and no override)
	run lintian --fail-on error,warning "$TOP/build/deb/aiscope_${v}_$arch.changes"
	echo "lintian: $output"
	[ "$status" -eq 0 ]
	[ -z "$(printf '%s\n' "$output" | grep -v '^running with root privileges')" ]
	[ ! -e "$TOP/debian/aiscope.lintian-overrides" ]
	# on $PATH only aiscope; the tools in /usr/libexec/aiscope
	dpkg-deb -c "$deb" | awk '{ print $6 }' | sed 's|^\./|/|' | grep -v '/$' | LC_ALL=C sort > "$BATS_TEST_TMPDIR/files"
	sbin=$(grep -E '^/(usr/)?s?bin/' "$BATS_TEST_TMPDIR/files")
	[ "$sbin" = /usr/sbin/aiscope ]
	for t in $("$BIN/aiscope" list); do
		grep -qx "/usr/libexec/aiscope/$t" "$BATS_TEST_TMPDIR/files"
		grep -qx "/usr/share/man/man8/aiscope-$t.8.gz" "$BATS_TEST_TMPDIR/files"
	done

	# the machine's packages now: what the teardown restores
	PKGS_BEFORE=$BATS_TEST_TMPDIR/pkgs.before
	installed_pkgs > "$PKGS_BEFORE"
	if ! "${APT[@]}" install --download-only bpfcc-tools libbpf-tools > "$BATS_TEST_TMPDIR/dl.log" 2>&1; then
		cat "$BATS_TEST_TMPDIR/dl.log"
		skip "bpfcc-tools and libbpf-tools cannot be downloaded here (no Debian mirror)"
	fi
	# all three at once: dpkg refuses a file that another package owns
	run "${APT[@]}" install "$deb" libbpf-tools bpfcc-tools
	echo "$output" | tail -n 20
	[ "$status" -eq 0 ]
	[[ "$output" != *"trying to overwrite"* ]]
	[ "$(dpkg-query -W -f='${db:Status-Status}\n' aiscope libbpf-tools bpfcc-tools | sort -u)" = installed ]
	# no path of the package is also one of theirs, and theirs are intact
	for f in $(dpkg -L libbpf-tools bpfcc-tools | LC_ALL=C sort -u); do
		[ -d "$f" ] && continue
		if grep -qxF "$f" "$BATS_TEST_TMPDIR/files"; then echo "shared: $f"; false; fi
	done
	[ "$(dpkg -S /usr/sbin/cachestat)" = "libbpf-tools: /usr/sbin/cachestat" ]
	dpkg --verify libbpf-tools bpfcc-tools
	[ -x /usr/sbin/cachestat-bpfcc ]

	# the installed tools run from aiscope, with no help from this tree
	run -0 env -u AISCOPE_LIBEXECDIR /usr/sbin/aiscope list
	[ "$output" = "$("$BIN/aiscope" list)" ]
	env -u AISCOPE_LIBEXECDIR /usr/sbin/aiscope schedlat -j -i 1 -n 1 > "$BATS_TEST_TMPDIR/s.json" 2> "$BATS_TEST_TMPDIR/s.err" ||
		{ cat "$BATS_TEST_TMPDIR/s.err"; false; }
	all_json "$BATS_TEST_TMPDIR/s.json"
	tail -n 1 "$BATS_TEST_TMPDIR/s.json" | jq -e '.type == "summary" and .tool == "schedlat" and .exit_reason == "count"'
	[ "$(env -u AISCOPE_LIBEXECDIR /usr/sbin/aiscope schedlat --version)" = "$("$BIN/schedlat" --version)" ]
	# man pages: aiscope's and bpfcc-tools', side by side
	[ "$(man -w aiscope-schedlat)" = /usr/share/man/man8/aiscope-schedlat.8.gz ]
	[ "$(man -w 8 aiscope)" = /usr/share/man/man8/aiscope.8.gz ]
	[ "$(man -w 7 aiscope)" = /usr/share/man/man7/aiscope.7.gz ]
	[ "$(man -w cachestat-bpfcc)" = /usr/share/man/man8/cachestat-bpfcc.8.gz ]
	# bash-completion loads aiscope's on demand, which completes a tool's options
	out=$(bash --norc --noprofile -c '. /usr/share/bash-completion/bash_completion
		_completion_loader aiscope
		COMP_WORDS=(aiscope schedlat --b) COMP_CWORD=2 COMP_LINE="aiscope schedlat --b" COMP_POINT=20
		_aiscope aiscope --b schedlat
		printf "%s\n" "${COMPREPLY[@]}"
		if complete -p schedlat > /dev/null 2>&1; then echo "schedlat registered"; fi')
	echo "bash: $out"
	[[ $'\n'"$out"$'\n' == *$'\n--by\n'* ]]
	[[ "$out" != *registered* ]]
	# the units name the installed command, verify, and are not enabled
	for f in /lib/systemd/system/aiscope-*.service; do
		t=${f##*/aiscope-}
		t=${t%.service}
		[[ "$(sed -n 's/^ExecStart=//p' "$f")" == "/usr/sbin/aiscope $t "* ]]
		[ ! -e "/etc/systemd/system/multi-user.target.wants/${f##*/}" ]
	done
	if command -v systemd-analyze > /dev/null; then
		run systemd-analyze verify /lib/systemd/system/aiscope-schedlat.service
		echo "$output"
		[ "$status" -eq 0 ]
	fi
	# tmpfiles.d ran at install: the units' log directory
	if command -v systemd-tmpfiles > /dev/null; then
		[ "$(stat -c '%a %U %G' /var/log/aiscope)" = "750 root adm" ]
	fi

	# purged, the package leaves nothing, and theirs are still intact
	run "${APT[@]}" purge aiscope
	[ "$status" -eq 0 ]
	[ ! -e /usr/sbin/aiscope ]
	[ ! -e /usr/libexec/aiscope ]
	[ ! -e /usr/share/aiscope ]
	[ ! -e /var/log/aiscope ]
	dpkg --verify libbpf-tools bpfcc-tools
}

@test "make deb ARCH=arm64: the cross-built package is lintian-clean and holds the amd64 package's files, as arm64 binaries" {
	command -v dpkg-buildpackage > /dev/null || skip "dpkg-dev is not installed (make deps)"
	command -v lintian > /dev/null || skip "lintian is not installed (make deps)"
	command -v aarch64-linux-gnu-gcc > /dev/null || skip "no arm64 cross compiler (make deps ARCH=arm64)"
	dpkg-query -W -f='${db:Status-Status}' libbpf-dev:arm64 2> /dev/null | grep -qx installed ||
		skip "no libbpf-dev:arm64 (make deps ARCH=arm64)"
	local v deb t f
	v=$(deb_version)
	deb=$TOP/build/deb/aiscope_${v}_arm64.deb
	rm -f "$deb"
	run make -s -C "$TOP" deb ARCH=arm64
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(dpkg-deb -f "$deb" Architecture)" = arm64 ]
	run lintian --fail-on error,warning "$TOP/build/deb/aiscope_${v}_arm64.changes"
	echo "lintian: $output"
	[ "$status" -eq 0 ]
	[ -z "$(printf '%s\n' "$output" | grep -v '^running with root privileges')" ]
	# the same paths as a native package (built here if the first test did not)
	[ -f "$TOP/build/deb/aiscope_${v}_amd64.deb" ] || make -s -C "$TOP" deb
	diff <(dpkg-deb -c "$TOP/build/deb/aiscope_${v}_amd64.deb" | awk '{ print $6 }' | LC_ALL=C sort) \
		<(dpkg-deb -c "$deb" | awk '{ print $6 }' | LC_ALL=C sort)
	dpkg-deb -x "$deb" "$BATS_TEST_TMPDIR/root"
	for t in aiscope $("$BIN/aiscope" list); do
		f=$BATS_TEST_TMPDIR/root/usr/libexec/aiscope/$t
		[ "$t" = aiscope ] && f=$BATS_TEST_TMPDIR/root/usr/sbin/aiscope
		file "$f" | grep -q 'ARM aarch64'
	done
}
