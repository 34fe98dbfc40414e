# gpulaunch --mem against what tests/cuda/mem.cu did: one line per JSON key
# of the mem samples, {"key", "want", "got"}, want from the program's truth
# lines ($truth), got from gpulaunch's output ($got): counters summed over
# the process's mem samples, bytes outstanding from its last one.
#   jq -n -c --slurpfile truth T --slurpfile got G -f tests/cuda/mem-check.jq
# Used by tests/gpulaunch.bats and scripts/gpu-check.sh.

def pools: [
	["alloc", "free", "outstanding_bytes"],
	["pinned_alloc", "pinned_free", "pinned_outstanding_bytes"],
	["vmm_create", "vmm_release", "vmm_outstanding_bytes"],
	["vmm_map", "vmm_unmap", "vmm_mapped_bytes"],
	["vmm_reserve", "vmm_address_free", "vmm_reserved_bytes"]
];
def transfers: ["copy_h2h", "copy_h2d", "copy_d2h", "copy_d2d", "copy_default", "copy_peer", "memset"];

($truth | map(select(.pid)) | first | .pid) as $pid |
($truth | map(select(.stem))) as $t |
def of($s): $t | map(select(.stem == $s));
def sum(f): map(f) | add // 0;
([$got[] | select(.type == "sample" and .row == "mem" and .pid == $pid)]) as $m |
def total($k): $m | map(.[$k]) | add // 0;
(
	(pools[] | . as [$a, $f, $o] |
		[$a + "_calls", (of($a) | length)],
		[$a + "_bytes", (of($a) | map(select(.rc == 0)) | sum(.bytes))],
		[$a + "_failures", (of($a) | map(select(.rc != 0)) | length)],
		[$f + "_calls", (of($f) | length)],
		[$f + "_bytes", (of($f) | map(select(.known)) | sum(.bytes))],
		[$f + "_unknown", (of($f) | map(select(.known | not)) | length)],
		[$o, ((of($a) | map(select(.rc == 0)) | sum(.bytes)) -
		      (of($f) | map(select(.known)) | sum(.bytes))), "last"]),
	(transfers[] | . as $x |
		[$x + "_calls", (of($x) | length)],
		[$x + "_bytes", (of($x) | sum(.bytes))])
) | .[0] as $k |
{key: $k, want: .[1], got: (if .[2] == "last" then ($m | last | .[$k]) else total($k) end)}
