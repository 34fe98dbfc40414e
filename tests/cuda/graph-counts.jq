# Launches by kernel name and by way (a graph launch's, or its own) of
# gpulaunch's -j launch rows, or of its -e -j events: what tests/cuda/graph.cu's
# truth lines say. Used by tests/gpulaunch.bats and scripts/gpu-check.sh.
[.[] | select((.type == "sample" and .row == "launch") or .type == "event")] |
	group_by([.kernel, .graph != null]) |
	map({kernel: .[0].kernel, via: (if .[0].graph then "graph" else "direct" end),
		launches: (if .[0].type == "event" then length else map(.launches) | add end)}) |
	sort_by([.kernel, .via])
