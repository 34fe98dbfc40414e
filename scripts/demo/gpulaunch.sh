# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by scripts/demo.sh: helpers header/show/show_sh/start_bg/stop_bg, $B.

# ---- gpulaunch: CUDA launches from uprobes on the CUDA libraries ----------
demo_gpulaunch() {
	local fix pid arch

	header "gpulaunch: CUDA kernel launches per process, from uprobes on libcudart and libcuda"
	arch=$(dpkg --print-architecture 2>/dev/null || echo amd64)
	fix=$B/fixtures/$arch/lib
	scripts/fixtures.sh "$B/fixtures" ||
		{ echo "(no CUDA fixture libraries: gpulaunch demo skipped)"; return 0; }
	[[ -e $fix/libcudart.so.11.0 && -e $fix/libcuda.so.1 ]] ||
		{ echo "(Debian's libcudart11.0/libcuda1 could not be fetched: gpulaunch demo skipped)"; return 0; }
	echo "Workload: tests/cuda/cudacall calls Debian's real libcudart 11.8 (with libcuda 535),"
	echo "200 cudaLaunchKernel a second (grid 4,2,1, block 256,1,1, 1024 B shared memory) and"
	echo "a cudaMalloc and a 1 MiB cudaMemcpy every tenth launch. There is no GPU: each call"
	echo "fails (cudaErrorNoDevice, 100), but the probes fire all the same."
	start_bg cudacall '^ready [0-9]+' env LD_LIBRARY_PATH="$fix" \
		"$B/tests/cuda/cudacall" --rt "$fix/libcudart.so.11.0" --ready rate:200:40
	pid=$BG_PID
	echo "cudacall is PID $pid; gpulaunch finds libcudart in its /proc maps by itself"

	header "What would be probed in that library (--list-probes --lib)"
	show_sh "$B/gpulaunch --list-probes --lib $fix/libcudart.so.11.0 | grep -E 'HOOK|runtime' | head -6"

	header "Top kernels every second for 3 s, appended (-C)"
	show "$B/gpulaunch" -p "$pid" -C -d 3s

	header "With return probes (--latency): errors and the CPU time of each launch call"
	show "$B/gpulaunch" -p "$pid" --latency -C -d 2s

	header "Each launch as it happens, with its return code (-e), first 5 (-n)"
	show "$B/gpulaunch" -p "$pid" -e -n 5 -d 5s

	header "Allocations, copies by direction and syncs (--mem), 2 s"
	show "$B/gpulaunch" -p "$pid" --mem -C -d 2s

	header "JSON lines (-j) for one interval, through jq"
	show_sh "$B/gpulaunch -p $pid -j -n 1 | jq -c 'select(.type==\"sample\") | {pid, kernel, api, launches_per_sec, grid, block, shared_mem_bytes}'"

	stop_bg
}
