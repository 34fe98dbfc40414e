#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Turns the VM matrix's logs into docs/KERNELS.md (on stdout):
#
#   scripts/vm/kernels-md.sh [DIR]      (DIR: build/vm, what run-matrix.sh left)
#   make kernels-md                     (writes docs/KERNELS.md)
#
# Reads, per kernel NAME of scripts/vm/kernels that ran: DIR/NAME.info (the
# package, boot and test time) and DIR/NAME.log (the serial console: the
# "AISCOPE-PLAN TOOL HOOK MECHANISM TARGET STATUS" lines of each tool's
# default plan, the TAP lines of its tests). Writes per kernel its package,
# page size and counts, per tool and kernel the mechanism each hook chose
# and the tests' results, and every skip with its reason. Exits 1 when no
# kernel has a log.
set -u
top=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-$top/build/vm}
names=
for k in $(awk '!/^#/ && NF {print $1}' "$top/scripts/vm/kernels"); do
	[ -f "$dir/$k.info" ] && [ -f "$dir/$k.log" ] && names="$names $k"
done
[ -n "$names" ] || { echo "kernels-md.sh: no kernel logs in $dir (run make test-vm)" >&2; exit 1; }

# the lines of one VM between its markers, escape sequences dropped
tap_of() {
	sed -e 's/\r//' -e 's/^.*AISCOPE-VM-/AISCOPE-VM-/' -e 's/^.*AISCOPE-PLAN /AISCOPE-PLAN /' "$dir/$1.log" |
		sed -n '/^AISCOPE-VM-BEGIN/,/^AISCOPE-VM-END/p'
}
info() { sed -n "s/^$2=//p" "$dir/$1.info"; }

{
	for k in $names; do
		printf 'K\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "$(info "$k" package)" "$(info "$k" kver)" \
			"$(info "$k" accel)" "$(info "$k" seconds)" "$(info "$k" depth)" "$(info "$k" not_run)"
		tap_of "$k" | awk -v k="$k" -F'\n' '
			/^# kernel .* [0-9]+-byte pages/ { p = $0; sub(/-byte pages.*/, "", p); sub(/.* /, "", p); print "P\t" k "\t" p }
			/^AISCOPE-PLAN / { split($0, f, " "); print "H\t" k "\t" f[2] "\t" f[3] "\t" f[4] "\t" f[5] "\t" f[6] }
			/^not ok [0-9]+ - / { t = $0; sub(/^not ok [0-9]+ - /, "", t); sub(/ \(exit .*/, "", t); print "T\t" k "\tfail\t" t "\t" }
			/^ok [0-9]+ - / { t = $0; sub(/^ok [0-9]+ - /, "", t)
				if (t ~ / # skip /) { r = t; sub(/.* # skip /, "", r); sub(/ # skip .*/, "", t); print "T\t" k "\tskip\t" t "\t" r }
				else if (t ~ /; passed on a second run/) { r = t; sub(/.*; passed on a second run, /, "passed on a second run: ", r); sub(/\)$/, "", r); sub(/ \([0-9]+ s; passed on a second run.*/, "", t); print "T\t" k "\tpass\t" t "\t" r }
				else { sub(/ \([0-9]+ s\)$/, "", t); print "T\t" k "\tpass\t" t "\t" } }'
	done
} | awk -F'\t' -v names="$names" '
	# the tool a test is of: its first word ("gpulaunch:", "schedlat"); a
	# test of none (the leftovers check) is "all tools"
	function tool_of(t,  w) { w = t; sub(/[^a-z0-9_].*$/, "", w); return (w in plan) ? w : "all tools" }
	$1 == "K" { pkg[$2] = $3; kver[$2] = $4; accel[$2] = $5; secs[$2] = $6; depth[$2] = $7 ? $7 : "full"; notrun[$2] = $8 + 0 }
	$1 == "P" { page[$2] = $3 }
	$1 == "H" {
		tool = $3; hook = $4; plan[tool] = 1; ran[$2, tool] = 1
		if (!((tool, hook) in seen)) { seen[tool, hook] = 1; hooks[tool] = hooks[tool] SUBSEP hook; tools[tool] = 1 }
		if ($7 == "chosen") chosen[$2, tool, hook] = $5 ":" $6
	}
	$1 == "T" {
		tool = tool_of($4); tools[tool] = 1
		res[$2, tool, $3]++; tot[$2, $3]++
		if ($3 != "pass" || $5 != "") { nbad++; bad[nbad] = "| " $2 " | " $3 " | " $4 " | " $5 " |" }
	}
	END {
		nk = split(names, ks, " ")
		print "# Kernels: what each tool uses and how its tests end, per kernel"
		print ""
		print "Written by `scripts/vm/kernels-md.sh` from the logs of the VM matrix (`make test-vm`,"
		print "`scripts/vm/run-matrix.sh`; `make kernels-md` rewrites this file). Do not edit by hand."
		print "The kernels are Debian'"'"'s own packages (scripts/vm/kernels), booted in qemu; each tool'"'"'s"
		print "end-to-end subset is `tests/vm/TOOL.sh`. A hook'"'"'s cell is the mechanism and target its"
		print "default plan (`--list-probes`) chose on that kernel, `-` when no candidate could attach"
		print "(the hook is optional there, or the tool exits 77 saying why). At the full depth the"
		print "tests also force each other mechanism the kernel has (`--probe-mode`); at the default"
		print "depth (VM_DEPTH=default) a question asked through several mechanisms is asked through"
		print "those up to the first that passes, the one this kernel gives the tool, and the rest"
		print "are counted as not run."
		print ""
		print "| kernel | package | version | page size | qemu | depth | passed | failed | skipped | not run | boot+tests |"
		print "|---|---|---|---|---|---|---|---|---|---|---|"
		for (i = 1; i <= nk; i++) {
			k = ks[i]; split(pkg[k], pv, " ")
			printf "| %s | `%s` | %s | %s | %s | %s | %d | %d | %d | %d | %s s |\n", k, pv[1], pv[2],
				page[k] ? page[k] / 1024 " KiB" : "?", accel[k], depth[k], tot[k, "pass"], tot[k, "fail"], tot[k, "skip"],
				notrun[k], secs[k]
		}
		n = 0
		for (t in tools) tl[++n] = t
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (tl[j] < tl[i]) { x = tl[i]; tl[i] = tl[j]; tl[j] = x }
		for (ti = 1; ti <= n; ti++) {
			t = tl[ti]
			print ""
			print "## " t
			print ""
			head = "| hook |"; sep = "|---|"
			for (i = 1; i <= nk; i++) { head = head " " ks[i] " |"; sep = sep "---|" }
			print head; print sep
			nh = split(substr(hooks[t], 2), hl, SUBSEP)
			for (h = 1; h <= nh; h++) {
				row = "| " hl[h] " |"
				for (i = 1; i <= nk; i++) {
					c = ((ks[i], t, hl[h]) in chosen) ? chosen[ks[i], t, hl[h]] : "-"
					if (!((ks[i], t) in ran)) c = "not run"
					row = row " " c " |"
				}
				print row
			}
			row = "| **tests** (passed/failed/skipped) |"
			for (i = 1; i <= nk; i++)
				row = row (((ks[i], t) in ran) || t == "all tools" ? sprintf(" %d/%d/%d |", res[ks[i], t, "pass"], \
					res[ks[i], t, "fail"], res[ks[i], t, "skip"]) : " not run |")
			print row
		}
		print ""
		print "## Tests that did not pass, or passed only when run again"
		print ""
		if (!nbad) { print "None."; exit }
		print "| kernel | result | test | reason |"
		print "|---|---|---|---|"
		for (i = 1; i <= nbad; i++) print bad[i]
	}'
