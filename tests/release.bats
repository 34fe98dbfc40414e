#!/usr/bin/env bats
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make release: one static tarball per arch, whose files are exactly the
# static tools of build/static and build/arm64-static (byte for byte: the
# binaries make test-vm runs), the front command, man pages, completions,
# units and tmpfiles.d, with a SHA256SUMS that verifies; build/release/SHA256SUMS
# verifies the tarballs. The amd64 tarball, unpacked anywhere, runs.

bats_require_minimum_version 1.5.0
load lib

TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
REL=$TOP/build/release

# mk VAR: a variable of the Makefile
mk() {
	printf 'v:\n\t@echo $(%s)\n' "$1" | make --no-print-directory -s -C "$TOP" -f Makefile -f - v
}

# want_files: the files a tarball must hold, sorted
want_files() {
	local t u
	echo SHA256SUMS
	echo sbin/aiscope
	for t in $(mk TOOLS); do
		echo "libexec/aiscope/$t"
		echo "share/man/man8/aiscope-$t.8"
		echo "share/aiscope/completions/bash/$t"
		echo "share/aiscope/completions/zsh/_$t"
	done
	echo share/man/man8/aiscope.8
	echo share/man/man7/aiscope.7
	echo share/bash-completion/completions/aiscope
	echo share/zsh/site-functions/_aiscope
	# the helpers the tools' completions load
	echo share/aiscope/completions/bash/aiscope-tool
	echo share/aiscope/completions/bash/aiscope-options
	echo share/zsh/site-functions/_aiscope_tids
	echo share/zsh/site-functions/_aiscope_comms
	echo share/zsh/site-functions/_aiscope_options
	echo share/fish/vendor_completions.d/aiscope.fish
	for u in "$TOP"/deploy/systemd/*.service; do
		echo "lib/systemd/system/${u##*/}"
	done
	echo lib/tmpfiles.d/aiscope.conf
}

@test "make release: a static tarball per arch, exactly the tools make test-vm runs, with verified SHA256SUMS" {
	local v a d dir t static
	# the release is the static tools, which an ASan build cannot be
	# (libasan is linked dynamically): the native layer tests it
	[ "${AISCOPE_SANITIZE:-0}" = 1 ] && skip "make test SANITIZE=1: a static release cannot be sanitized"
	v=$(mk VERSION)
	run make -s -C "$TOP" release
	echo "$output"
	[ "$status" -eq 0 ]
	cd "$REL"
	sha256sum -c SHA256SUMS
	[ "$(wc -l < SHA256SUMS)" -eq 2 ]
	for a in amd64 arm64; do
		d=aiscope-$v-$a
		[ -f "$d.tar.gz" ]
		# every entry under one top directory, owned by root
		tar -tvzf "$d.tar.gz" | awk '{ print $2 }' | sort -u | grep -qx 0/0
		[ -z "$(tar -tzf "$d.tar.gz" | grep -v "^$d/")" ]
		# exactly the expected files
		diff <(want_files | LC_ALL=C sort) \
			<(tar -tzf "$d.tar.gz" | grep -v '/$' | sed "s|^$d/||" | LC_ALL=C sort)
		dir=$BATS_TEST_TMPDIR/$a
		mkdir -p "$dir"
		tar -C "$dir" -xzf "$d.tar.gz"
		(cd "$dir/$d" && sha256sum --quiet -c SHA256SUMS)
		[ "$(wc -l < "$dir/$d/SHA256SUMS")" -eq $(($(want_files | wc -l) - 1)) ]
		# the binaries are build/static's (build/arm64-static's), statically linked
		static=$TOP/build/static
		[ $a = amd64 ] || static=$TOP/build/$a-static
		for t in $(mk TOOLS); do
			cmp "$static/$t" "$dir/$d/libexec/aiscope/$t"
			file "$dir/$d/libexec/aiscope/$t" | grep -q 'statically linked'
		done
		cmp "$static/aiscope" "$dir/$d/sbin/aiscope"
		if [ $a = arm64 ]; then
			file "$dir/$d/sbin/aiscope" | grep -q 'ARM aarch64'
		else
			file "$dir/$d/sbin/aiscope" | grep -q 'x86-64'
		fi
		# units name where the tarball unpacks (/usr/local)
		grep -q '^ExecStart=/usr/local/sbin/aiscope schedlat ' "$dir/$d/lib/systemd/system/aiscope-schedlat.service"
	done
	# unpacked anywhere, the front command finds its tools
	run -0 env -u AISCOPE_LIBEXECDIR "$BATS_TEST_TMPDIR/amd64/aiscope-$v-amd64/sbin/aiscope" schedlat --version
	[ "$output" = "$("$TOP/build/static/schedlat" --version)" ]
	# the same tree, the same bytes
	cp "$REL/aiscope-$v-amd64.tar.gz" "$BATS_TEST_TMPDIR/first.tar.gz"
	make -s -C "$TOP" release > /dev/null
	cmp "$BATS_TEST_TMPDIR/first.tar.gz" "$REL/aiscope-$v-amd64.tar.gz"
}
