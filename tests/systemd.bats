#!/usr/bin/env bats
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# deploy/systemd/: the units that run the tools on a host without
# Kubernetes. systemd-analyze verify checks them offline (no running systemd
# needed), and each unit's ExecStart runs for real inside the sandbox its
# unit asks for, rebuilt by hand: the capability bounding set and
# NoNewPrivileges through setpriv, ProtectSystem=strict, ReadWritePaths= and
# ProtectControlGroups= as read-only mounts in a private mount namespace,
# stdout opened beforehand as systemd opens StandardOutput=append:. This
# machine's PID 1 is not systemd, so the units themselves never start here.

bats_require_minimum_version 1.5.0
load lib

TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
UNITS=$TOP/deploy/systemd

teardown() {
	aiscope_teardown
}

# unit_key UNIT KEY: the value of KEY= in UNIT (the last one)
unit_key() {
	sed -n "s/^$2=//p" "$1" | tail -1
}

# bounding_set CMD...: the capability bounding set CMD's setpriv --dump shows,
# sorted, comma-separated
bounding_set() {
	"$@" | sed -n 's/^Capability bounding set: //p' | tr , '\n' | sort | paste -sd,
}

@test "deploy/systemd: one unit per tool of the DaemonSet, with its options; systemd-analyze verify passes them, and catches a typo" {
	local d=$BATS_TEST_TMPDIR u t want got n=0
	for u in "$UNITS"/aiscope-*.service; do
		t=${u##*/aiscope-}
		t=${t%.service}
		[ -f "$TOP/tools/$t.c" ] || [ -d "$TOP/tools/$t" ] || { echo "$u: no tool $t"; false; }
		[ -f "$TOP/man/$t.8" ]
		grep -qx "Documentation=man:aiscope-$t(8) man:aiscope(7)" "$u"
		grep -qx "StandardOutput=append:/var/log/aiscope/$t.json" "$u"
		[[ "$(unit_key "$u" ExecStart)" == "/usr/local/sbin/aiscope $t "*" --prometheus /var/lib/prometheus/node-exporter/aiscope-$t.prom" ]]
		# the options of the tool's DaemonSet container, less --listen
		want=$(awk -v c="command: [\"/usr/sbin/aiscope\", \"$t\"]" '$0 ~ /^ *command:/ { hit = (substr($0, index($0, "command:")) == c) }
			hit && /^ *args:/ { sub(/^ *args: */, ""); print; exit }' "$TOP/deploy/aiscope-daemonset.yaml" |
			jq -r '.[]' | sed '/^--listen$/,+1d' | paste -sd' ')
		got=$(unit_key "$u" ExecStart | cut -d' ' -f3- | sed 's| --prometheus [^ ]*$||')
		echo "$t: unit '$got', DaemonSet '$want'"
		[ -n "$want" ]
		[ "$got" = "$want" ]
		n=$((n + 1))
	done
	# every tool the DaemonSet runs has its unit, with the same options
	diff <(sed -n 's|^ *command: \["/usr/sbin/aiscope", "\([a-z]*\)"\]$|\1|p' "$TOP/deploy/aiscope-daemonset.yaml" | sort) \
		<(for u in "$UNITS"/aiscope-*.service; do t=${u##*/aiscope-}; echo "${t%.service}"; done | sort)
	[ "$n" -ge 7 ]
	# the directories the units write to are made at boot
	grep -qx 'd /var/log/aiscope 0750 root adm -' "$UNITS/aiscope-tmpfiles.conf"
	grep -qx 'd /var/lib/prometheus/node-exporter - - - -' "$UNITS/aiscope-tmpfiles.conf"
	if command -v systemd-tmpfiles > /dev/null; then
		# the names of the users and groups come from the root's /etc
		mkdir -p "$d/root/etc"
		cp /etc/passwd /etc/group "$d/root/etc/"
		run systemd-tmpfiles --root="$d/root" --create "$UNITS/aiscope-tmpfiles.conf"
		echo "$output"
		[ "$status" -eq 0 ]
		[ "$(stat -c '%a %U %G' "$d/root/var/log/aiscope")" = "750 root adm" ]
		[ -d "$d/root/var/lib/prometheus/node-exporter" ]
	fi
	command -v systemd-analyze > /dev/null || skip "systemd-analyze is not installed"
	# verify wants the ExecStart binary to exist, and man to find the
	# Documentation= pages: this tree's tools and pages stand in for the
	# installed ones
	mkdir -p "$d/units" "$d/man/man8" "$d/man/man7"
	# (installed as aiscope-TOOL.8, as make install names them)
	ln -s "$TOP/man/aiscope.8" "$d/man/man8/"
	for t in $(ls "$TOP"/deploy/systemd/aiscope-*.service | sed 's|.*/aiscope-||; s|\.service$||'); do
		ln -s "$TOP/man/$t.8" "$d/man/man8/aiscope-$t.8"
	done
	ln -s "$TOP/man/aiscope.7" "$d/man/man7/"
	for u in "$UNITS"/aiscope-*.service; do
		sed "s|^ExecStart=/usr/local/sbin/|ExecStart=$BIN/|" "$u" > "$d/units/${u##*/}"
	done
	run env MANPATH="$d/man" systemd-analyze verify "$d"/units/*.service
	echo "$output"
	[ "$status" -eq 0 ]
	[ -z "$output" ]
	# not a no-op: a misspelt key and a missing binary are reported
	sed 's/^ProtectSystem=/ProtectSytem=/; s|/aiscope schedlat |/aiscope-none schedlat |' "$d/units/aiscope-schedlat.service" \
		> "$d/units/aiscope-bad.service"
	run env MANPATH="$d/man" systemd-analyze verify "$d/units/aiscope-bad.service"
	echo "$output"
	[ "$status" -ne 0 ]
	[[ "$output" == *"Unknown key 'ProtectSytem'"* ]]
	[[ "$output" == *"aiscope-none is not executable"* ]]
}

@test "deploy/systemd: each unit's command traces, writes JSON lines and its .prom file, inside the unit's sandbox" {
	need_root
	command -v unshare > /dev/null && command -v setpriv > /dev/null || skip "unshare and setpriv (util-linux) are needed"
	local d=$BATS_TEST_TMPDIR u t caps rw out argv rc own want got
	mkdir -p "$d/textfile" "$d/log"
	for u in "$UNITS"/aiscope-*.service; do
		t=${u##*/aiscope-}
		t=${t%.service}
		# setpriv's spelling of the bounding set: -all,+bpf,+perfmon,...
		caps=$(unit_key "$u" CapabilityBoundingSet | tr 'A-Z' 'a-z' | sed 's/cap_/+/g; s/ /,/g')
		caps=-all,$caps
		[ "$(unit_key "$u" NoNewPrivileges)" = yes ]
		[ "$(unit_key "$u" ProtectSystem)" = strict ]
		[ "$(unit_key "$u" ProtectControlGroups)" = yes ]
		rw=$(unit_key "$u" ReadWritePaths)
		[ "$rw" = /var/lib/prometheus/node-exporter ]
		out=$(unit_key "$u" StandardOutput)
		out=${out#append:}
		[ "$out" = "/var/log/aiscope/$t.json" ]
		# the unit's command, with this tree's binary, the test's
		# directories, 1 s intervals and an end after 3 s
		read -r -a argv <<< "$(unit_key "$u" ExecStart | sed -e "s|^/usr/local/sbin/|$BIN/|" \
			-e "s|$rw/|$d/textfile/|" -e 's/ -i 15s / -i 1s /')"
		[ "${argv[0]}" = "$BIN/aiscope" ]
		[ "${argv[1]}" = "$t" ]
		printf '%s\n' "${argv[@]}" | grep -qx -- "$d/textfile/aiscope-$t.prom"
		rc=0
		unshare --mount --propagation private -- bash -c '
			set -e
			rw=$1 caps=$2
			shift 2
			mount --bind "$rw" "$rw"
			mount -o remount,bind,ro /
			# the sandbox holds: / and every cgroup mount read-only,
			# the textfile directory writable
			if touch "$rw/../ro-probe" 2> /dev/null; then exit 98; fi
			for m in $(awk '\''$2 ~ "^/sys/fs/cgroup" {print $2}'\'' /proc/self/mounts); do
				mount -o remount,bind,ro "$m"
				if mkdir "$m/aiscope-ro-probe" 2> /dev/null; then
					rmdir "$m/aiscope-ro-probe"
					exit 98
				fi
			done
			touch "$rw/rw-probe"
			rm "$rw/rw-probe"
			exec setpriv --no-new-privs --bounding-set "$caps" --inh-caps -all -- "$@"' \
			_ "$d/textfile" "$caps" "${argv[@]}" -d 3s > "$d/log/$t.json" 2> "$d/log/$t.err" || rc=$?
		echo "$t: exit $rc, $(wc -l < "$d/log/$t.json") records"
		cat "$d/log/$t.err"
		if [ "$rc" -eq 77 ]; then
			# a tool this host cannot run says so and exits 77, which
			# the unit does not restart (RestartPreventExitStatus)
			echo "$t cannot run on this host (exit 77)"
			grep -qx 'RestartPreventExitStatus=2 77' "$u"
			continue
		fi
		[ "$rc" -eq 0 ]
		all_json "$d/log/$t.json"
		tail -1 "$d/log/$t.json" | jq -e --arg t "$t" '.type == "summary" and .tool == $t and .exit_reason == "duration"'
		grep -q "^aiscope_build_info{tool=\"$t\"," "$d/textfile/aiscope-$t.prom"
		[ -z "$(compgen -G "$d/textfile/aiscope-$t.prom.tmp*")" ]
	done
	# the same bounding set leaves a process exactly those capabilities
	# (less any this test's own shell lacks: a container's root may have
	# no CAP_SYS_RESOURCE)
	caps=$(unit_key "$UNITS/aiscope-schedlat.service" CapabilityBoundingSet | tr 'A-Z' 'a-z' | sed 's/cap_//g')
	own=$(bounding_set setpriv --dump)
	want=$(for c in $caps; do [[ ",$own," == *",$c,"* ]] && echo "$c"; done | sort | paste -sd,)
	got=$(bounding_set setpriv --no-new-privs --bounding-set "-all,$(echo "$caps" | sed 's/^/+/; s/ /,+/g')" \
		--inh-caps -all -- setpriv --dump)
	echo "unit: $caps; this shell: $own; in the sandbox: $got"
	[ -n "$got" ]
	[ "$got" = "$want" ]
}

@test "make install puts the units and tmpfiles.d where systemd looks, naming the installed tools" {
	local d=$BATS_TEST_TMPDIR/inst u t
	make -s -C "$TOP" O="$AISCOPE_BUILD" install DESTDIR="$d" PREFIX=/usr > /dev/null
	[ -f "$d/usr/lib/tmpfiles.d/aiscope.conf" ]
	for u in "$UNITS"/aiscope-*.service; do
		t=${u##*/aiscope-}
		t=${t%.service}
		u=$d/usr/lib/systemd/system/${u##*/}
		[ -f "$u" ]
		[ "$(stat -c %a "$u")" = 644 ]
		[[ "$(unit_key "$u" ExecStart)" == "/usr/sbin/aiscope $t "* ]]
		[ -x "$d/usr/sbin/aiscope" ]
		[ -x "$d/usr/libexec/aiscope/$t" ]
	done
	# the installed front command finds the installed tools, not this tree's
	[ "$(env -u AISCOPE_LIBEXECDIR "$d/usr/sbin/aiscope" schedlat --version)" = "$("$BIN/schedlat" --version)" ]
	# /usr/sbin holds the front command alone (libbpf-tools owns /usr/sbin/cachestat)
	[ "$(ls "$d/usr/sbin")" = aiscope ]
	make -s -C "$TOP" O="$AISCOPE_BUILD" uninstall DESTDIR="$d" PREFIX=/usr
	[ -z "$(find "$d" -type f)" ]
}
