#!/usr/bin/env bats
# gpulaunch: the command-line contract, and end-to-end checks against the
# real CUDA libraries without a GPU: test programs (tests/cuda/) call them
# with sentinel arguments and print what they passed and what each call
# returned; every field gpulaunch decodes must equal that, return codes
# included. Libraries: Debian's libcudart 11.8 and libcuda 535
# (scripts/fixtures.sh), the CUDA 13 tree when present, nvcc-built kernels
# when nvcc is present, and doubles of the runtime and driver with the exact
# C ABI (tests/cuda/double/) for what needs calls that succeed. Each missing
# library makes its tests skip.

bats_require_minimum_version 1.5.0
load lib

CUDA=$AISCOPE_BUILD/tests/cuda
DOUBLE=$CUDA/double

teardown() {
	aiscope_teardown
}

# calls NAME ARGS...: runs cudacall (its JSON truth in NAME.out)
calls() {
	local name=$1
	shift
	"$CUDA/cudacall" "$@" > "$BATS_TEST_TMPDIR/$name.out" 2> "$BATS_TEST_TMPDIR/$name.err"
}

out() {
	echo "$BATS_TEST_TMPDIR/$1.out"
}

# launches FILE: the launch events of a -e -j run, as the truth prints them
launches() {
	jq -c 'select(.type == "event") | {api, grid, block, smem: .shared_mem_bytes, stream, rc}' "$1"
}

# truth FILE: the launches a test program made
truth() {
	jq -c 'select(.grid) | {api, grid, block, smem, stream, rc}' "$1"
}

# sample_sum FILE KERNEL KEY: KEY summed over the launch samples of KERNEL
sample_sum() {
	jq -s --arg k "$2" --arg f "$3" \
		'[.[] | select(.type == "sample" and .row == "launch" and .kernel == $k) | .[$f]] | add // 0' "$1"
}

# ---- contract ----

@test "gpulaunch --help lists the shared and own options and ends with examples" {
	check_help gpulaunch "${SHARED_OPTS[@]}" \
		--events --latency --mem --lib --mangled --rescan --prometheus --listen --usage --version
}

@test "gpulaunch --usage and --version" {
	check_usage_version gpulaunch
}

@test "gpulaunch usage errors exit 2 with one line on stderr and nothing on stdout" {
	local bad=(
		"--bogus" "-p" "-p abc" "-p 999999999" "-i 0" "-d -1" "-n 0" "-r x" "-s nope"
		"-s p99" "-s errors" "-e --mem" "--lib /nonexistent/libcudart.so" "--lib /etc/hostname"
		"--rescan 5x" "--rescan -1" "1 2 3" "--probe-mode foo" "--buffer-size 1"
		"-e --listen 127.0.0.1:0" "--lib /bin/true" "--lib $DOUBLE/libcuda.so.1 --lib /bin/true"
	)
	mapfile -t -O "${#bad[@]}" bad < <(not_regular_args --lib)
	check_usage_errors gpulaunch "${bad[@]}"
}

@test "gpulaunch --metric-label refuses the label names its own series have" {
	check_own_metric_labels gpulaunch layer direction
}

@test "gpulaunch without privileges exits 77 and says what is missing" {
	check_no_privilege gpulaunch
}

@test "gpulaunch --list-probes: the hooks, and each symbol of a --lib, in JSON too" {
	run "$BIN/gpulaunch" --list-probes --lib "$DOUBLE/libcuda.so.1"
	[ "$status" -eq 0 ]
	[[ "${lines[0]}" == HOOK*MECHANISM*TARGET*STATUS ]]
	echo "$output" | grep -E '^exec +(tp_btf|raw_tp|tracepoint) .*chosen'
	echo "$output" | grep -E "^driver +uprobe +$DOUBLE/libcuda.so.1:cuLaunchKernel chosen"
	echo "$output" | grep -E "^driver +uprobe +$DOUBLE/libcuda.so.1:cuMemAlloc_v2 available: needs --mem"
	run "$BIN/gpulaunch" --list-probes --mem -j --lib "$DOUBLE/libcudart.so.12"
	[ "$status" -eq 0 ]
	echo "$output" > "$BATS_TEST_TMPDIR/plan"
	all_json "$BATS_TEST_TMPDIR/plan"
	# the double exports 53 of the probed runtime symbols, all chosen with
	# --mem: 8 launch, name, allocation, copy and sync calls, 34 of the
	# other --mem families (pinned, pitched, pools, memsets, 2D/3D/peer/symbol,
	# array-to-array and batch copies), and 11 of CUDA graphs (the graph
	# launch, its building and capture calls, event record and wait)
	[ "$(jq -s '[.[] | select(.mechanism == "uprobe" and .status == "chosen")] | length' \
		"$BATS_TEST_TMPDIR/plan")" -eq 53 ]
	for s in cudaMallocHost cudaHostAlloc cudaFreeHost cudaMallocPitch cudaMalloc3D \
		cudaMallocFromPoolAsync cudaFreeAsync cudaMemset3D cudaMemcpy2DToArray \
		cudaMemcpy3DPeer cudaMemcpyPeerAsync cudaMemcpyFromSymbol cudaMemcpyArrayToArray \
		cudaMemcpy2DArrayToArray cudaMemcpyBatchAsync cudaMemcpy3DBatchAsync; do
		jq -e -s --arg t "$DOUBLE/libcudart.so.12:$s" \
			'[.[] | select(.target == $t and .status == "chosen")] | length == 1' \
			"$BATS_TEST_TMPDIR/plan" > /dev/null || { echo "$s not chosen"; false; }
	done
	# the graph probes without --mem
	run "$BIN/gpulaunch" --list-probes --lib "$DOUBLE/libcudart.so.12"
	for s in cudaGraphLaunch cudaGraphCreate cudaGraphAddKernelNode cudaGraphAddNode \
		cudaGraphAddChildGraphNode cudaGraphClone cudaStreamBeginCapture cudaStreamEndCapture \
		cudaGraphInstantiate cudaEventRecord cudaStreamWaitEvent; do
		echo "$output" | grep -qE "^runtime +uprobe +$DOUBLE/libcudart.so.12:$s chosen" ||
			{ echo "$s not chosen"; false; }
	done
	run "$BIN/gpulaunch" --list-probes --lib "$DOUBLE/libcuda.so.1"
	for s in cuMemCreate cuMemRelease cuMemMap cuMemUnmap cuMemAddressReserve cuMemAddressFree \
		cuMemHostAlloc cuMemAllocHost_v2 cuMemFreeHost cuMemAllocPitch_v2 cuMemsetD2D32_v2 \
		cuMemcpyPeer cuMemcpy2D_v2 cuMemcpy2DAsync_v2 cuMemcpy3D_v2 cuMemcpy3DPeer; do
		echo "$output" | grep -qE "^driver +uprobe +$DOUBLE/libcuda.so.1:$s available: needs --mem" ||
			{ echo "$s not listed"; false; }
	done
	jq -e -s 'all(.[]; .type == "probe" and .tool == "gpulaunch" and has("hook") and
		has("target") and has("status") and has("reason"))' "$BATS_TEST_TMPDIR/plan"
}

# ---- end to end: decoded arguments equal the sentinels ----

@test "gpulaunch --list-probes shows a library of a hostile file name sanitised" {
	local lib=$BATS_TEST_TMPDIR/$HOSTILE_NAME.so
	cp "$DOUBLE/libcuda.so.1" "$lib"
	"$BIN/gpulaunch" --list-probes --lib "$lib" > "$BATS_TEST_TMPDIR/plan"
	cat -v "$BATS_TEST_TMPDIR/plan"
	check_sanitised "$BATS_TEST_TMPDIR/plan"
	grep -qF "$BATS_TEST_TMPDIR/$HOSTILE_SHOWN.so:cuLaunchKernel chosen" "$BATS_TEST_TMPDIR/plan"
}

@test "libcudart 11.8 (Debian): every runtime launch decoded as passed, rc 100 included" {
	need_root
	need_debian
	start_tool g gpulaunch -e -j --lib "$FIX/libcudart.so.11.0"
	LD_LIBRARY_PATH=$FIX calls c --rt "$FIX/libcudart.so.11.0" \
		launch launch_ptsz launch_ex coop launch sleep:200
	stop_tool "$TOOL_PID"
	all_json "$(out g)"
	launches "$(out g)" > "$BATS_TEST_TMPDIR/got"
	truth "$(out c)" > "$BATS_TEST_TMPDIR/want"
	cat "$BATS_TEST_TMPDIR/want"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/want")" -eq 5 ]
	diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
	# no driver, no device: cudaErrorNoDevice
	[ "$(jq -s '[.[] | select(.rc == 100)] | length' "$(out c)")" -eq 5 ]
	pid=$(jq -s 'first(.[] | select(.type == "event")) | .pid' "$(out g)")
	jq -e -s --argjson p "$pid" 'all(.[] | select(.type == "event");
		.pid == $p and .comm == "cudacall" and .layer == "runtime" and
		.kernel == "vecAdd(float*, float*, float*, int)" and .latency_ns == null)' "$(out g)"
}

@test "libcuda 535 (Debian): driver launches, arguments past the sixth from the stack, rc 3" {
	need_root
	need_debian
	start_tool g gpulaunch -e -j --latency --lib "$FIX/libcuda.so.1"
	calls c --drv "$FIX/libcuda.so.1" cu_launch cu_launch_ptsz cu_launch_ex sleep:200
	stop_tool "$TOOL_PID"
	all_json "$(out g)"
	launches "$(out g)" > "$BATS_TEST_TMPDIR/got"
	truth "$(out c)" > "$BATS_TEST_TMPDIR/want"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/want")" -eq 3 ]
	diff "$BATS_TEST_TMPDIR/want" "$BATS_TEST_TMPDIR/got"
	jq -e -s 'all(.[] | select(.type == "event"); .rc == 3 and .layer == "driver" and
		.kernel == "[unnamed CUfunction]" and .latency_ns > 0)' "$(out g)"
}

@test "libcudart 13: __cudaLaunchKernel and its tail call into cudaLaunchKernel count once" {
	need_root
	need_cuda13
	for mode in "" --latency; do
		# a new file name each time: wait_for must not see the last run's line
		g=g$mode
		start_tool "$g" gpulaunch -j -i 10 $mode --lib "$CUDA13"
		calls c --rt "$CUDA13" launch13 launch13_ptsz launch launch13 launch launch_ptsz sleep:200
		stop_tool "$TOOL_PID"
		all_json "$(out "$g")"
		[ "$(truth "$(out c)" | wc -l)" -eq 6 ]
		n=$(sample_sum "$(out "$g")" "vecAdd(float*, float*, float*, int)" launches)
		echo "mode '$mode': $n launches"
		[ "$n" -eq 6 ]
		if [ -n "$mode" ]; then
			# cudaErrorInsufficientDriver, seen by the return probes
			[ "$(sample_sum "$(out "$g")" "vecAdd(float*, float*, float*, int)" errors)" -eq 6 ]
			jq -e -s 'all(.[] | select(.type == "sample"); .last_rc == 35)' "$(out "$g")"
		fi
	done
}

@test "nvcc <<<>>> launches: names demangled (stripped too), configuration as written, counts exact" {
	need_root
	need_nvcc_kernels
	for prog in kern_shared kern_static kern_stripped; do
		lib=$CUDA13
		[ "$prog" = kern_static ] && lib=$CUDA/kern_static
		# a new file name each time: wait_for must not see the last run's line
		start_tool "g-$prog" gpulaunch -j -i 10 --latency --lib "$lib"
		LD_LIBRARY_PATH=$(dirname "$CUDA13") "$CUDA/$prog" 3 > "$(out k)"
		stop_tool "$TOOL_PID"
		all_json "$(out "g-$prog")"
		echo "== $prog"
		jq -c 'select(.type == "sample") | {kernel, launches, grid, block, shared_mem_bytes, stream, errors, last_rc}' "$(out "g-$prog")"
		while read -r want; do
			k=$(jq -r .kernel <<< "$want")
			jq -e -s --argjson w "$want" '[.[] | select(.type == "sample" and .kernel == $w.kernel)] |
				length == 1 and .[0].launches == $w.launches and .[0].grid == $w.grid and
				.[0].block == $w.block and .[0].shared_mem_bytes == $w.smem and
				.[0].stream == $w.stream and .[0].errors == $w.launches and
				.[0].last_rc == $w.rc' "$(out "g-$prog")" || { echo "$prog: $k differs from $want"; false; }
		done < <(jq -c 'select(.kernel)' "$(out k)")
	done
}

@test "--hold: new executables with a static runtime, launching at once, lose no launch; each stopped and continued within milliseconds" {
	need_root
	local i cs=$AISCOPE_BUILD/tests/helpers/cudastatic
	# three copies: three inodes, none probed before its process runs, each
	# a static executable whose main launches at once (without --hold the
	# first launches of each are gone before the exec's scan attaches)
	for i in 1 2 3; do
		mkdir -p "$BATS_TEST_TMPDIR/bin$i"
		cp "$cs" "$BATS_TEST_TMPDIR/bin$i/cudastatic"
	done
	start_tool g gpulaunch -j -i 10 --hold --comm cudastatic
	for i in 1 2 3; do
		# a process left stopped would hang here: the timeout fails it
		timeout 20 "$BATS_TEST_TMPDIR/bin$i/cudastatic" launch launch cu_launch > "$(out "c$i")"
	done
	sleep 0.3
	stop_tool "$TOOL_PID"
	all_json "$(out g)"
	jq -c 'select(.type == "sample") | {pid, kernel, layer, launches}' "$(out g)"
	tail -1 "$(out g)"
	# every launch of every process: two runtime and one driver launch each
	jq -e -s '[.[] | select(.type == "sample" and .layer == "runtime") | .launches] | add == 6' "$(out g)"
	jq -e -s '[.[] | select(.type == "sample" and .layer == "driver") | .launches] | add == 3' "$(out g)"
	jq -e -s '[.[] | select(.type == "sample") | .pid] | unique | length == 3' "$(out g)"
	# each stopped at its exec (a static executable: no loader), all
	# continued (they finished), the longest hold under a second
	jq -e -s '.[-1] | .type == "summary" and .held == 3 and .hold_max_ns > 0 and
		.hold_max_ns < 1000000000' "$(out g)"
	# without --hold nobody is stopped
	start_tool n gpulaunch -j -i 10 --comm cudastatic
	"$BATS_TEST_TMPDIR/bin1/cudastatic" launch > /dev/null
	stop_tool "$TOOL_PID"
	jq -e -s '.[-1] | .held == 0 and .hold_max_ns == 0' "$(out n)"
}

# ---- nesting, names and memory, through the doubles ----

@test "a runtime launch that calls the driver counts once; names from registration, handles, lookups" {
	need_root
	for mode in "" --latency; do
		# a new file name each time: wait_for must not see the last run's line
		g=g$mode
		start_tool "$g" gpulaunch -j -i 10 $mode --lib "$DOUBLE/libcudart.so.12" --lib "$DOUBLE/libcuda.so.1"
		LD_LIBRARY_PATH=$DOUBLE calls c --rt "$DOUBLE/libcudart.so.12" --drv "$DOUBLE/libcuda.so.1" \
			launch launch reg getkernel getkernel cu_getfunc cu_launch sleep:200
		stop_tool "$TOOL_PID"
		all_json "$(out "$g")"
		echo "== mode '$mode'"
		jq -c 'select(.type == "sample") | {kernel, api, layer, launches, errors}' "$(out "$g")"
		[ "$(sample_sum "$(out "$g")" "vecAdd(float*, float*, float*, int)" launches)" -eq 2 ]
		# registered name of a host function without a symbol, through the
		# CUDA 13 handle map: two runtime launches, counted once each
		jq -e -s '[.[] | select(.type == "sample" and .kernel == "reduceSum(float*, int)" and
			.layer == "runtime")] | map(.launches) | add == 2' "$(out "$g")"
		# cuModuleGetFunction names the driver's CUfunction
		jq -e -s '[.[] | select(.type == "sample" and .kernel == "reduceSum(float*, int)" and
			.layer == "driver")] | map(.launches) | add == 1' "$(out "$g")"
		[ "$(sample_sum "$(out "$g")" "[unnamed CUfunction]" launches)" -eq 1 ]
		total=$(jq -s '[.[] | select(.type == "sample") | .launches] | add' "$(out "$g")")
		[ "$total" -eq 6 ]
		[ "$(jq -s '[.[] | select(.type == "summary")] | .[0].launches' "$(out "$g")")" -eq 6 ]
	done
}

@test "--mangled keeps the names raw" {
	need_root
	start_tool g gpulaunch -j -i 10 --mangled --lib "$DOUBLE/libcudart.so.12"
	LD_LIBRARY_PATH=$DOUBLE calls c --rt "$DOUBLE/libcudart.so.12" reg getkernel launch sleep:200
	stop_tool "$TOOL_PID"
	jq -e -s '[.[] | select(.type == "sample") | .kernel] | sort == ["_Z6vecAddPfS_S_i", "_Z9reduceSumPfi"]' "$(out g)"
}

@test "--mem: allocations outstanding, frees, copies by direction and sync waits are exact" {
	need_root
	start_tool g gpulaunch -j -i 10 --mem --lib "$DOUBLE/libcudart.so.12" --lib "$DOUBLE/libcuda.so.1"
	LD_LIBRARY_PATH=$DOUBLE calls c --rt "$DOUBLE/libcudart.so.12" --drv "$DOUBLE/libcuda.so.1" \
		malloc:4096 malloc:10000 free malloc:0 cu_malloc:8192 memcpy:1:512 memcpy:1:100 \
		memcpy:2:300 memcpy:3:7 cu_htod:64 sync_us:200000 sleep:200
	stop_tool "$TOOL_PID"
	all_json "$(out g)"
	cat "$(out c)"
	jq -c 'select(.type == "sample" and .row == "mem")' "$(out g)"
	m=$(jq -s -c '[.[] | select(.type == "sample" and .row == "mem")] | .[-1]' "$(out g)")
	# malloc:0 fails (the double says CUDA_ERROR_INVALID_VALUE), the free
	# releases the 10000 bytes; cudaMalloc -> cuMemAlloc_v2 counts once
	jq -e '.alloc_calls == 4 and .alloc_bytes == 4096 + 10000 + 8192 and .alloc_failures == 1 and
		.free_calls == 1 and .free_bytes == 10000 and .free_unknown == 0 and
		.outstanding_bytes == 4096 + 8192 and .alloc_p99_ns > 0' <<< "$m"
	jq -e '.copy_h2d_calls == 3 and .copy_h2d_bytes == 512 + 100 + 64 and
		.copy_d2h_calls == 1 and .copy_d2h_bytes == 300 and
		.copy_d2d_calls == 1 and .copy_d2d_bytes == 7' <<< "$m"
	jq -e '.sync_calls == 1 and .sync_wait_ns >= 200000000 and .sync_wait_ns < 2000000000' <<< "$m"
}

@test "--mem with libcudart 11.8: failed allocations, copies and syncs with rc 100" {
	need_root
	need_debian
	start_tool g gpulaunch -j -i 10 --mem --lib "$FIX/libcudart.so.11.0"
	LD_LIBRARY_PATH=$FIX calls c --rt "$FIX/libcudart.so.11.0" malloc:4096 malloc:65536 \
		memcpy:1:512 memcpy_async:2:256 sync_stream sync_device sleep:200
	stop_tool "$TOOL_PID"
	all_json "$(out g)"
	[ "$(jq -s '[.[] | select(.rc == 100)] | length' "$(out c)")" -eq 6 ]
	m=$(jq -s -c '[.[] | select(.type == "sample" and .row == "mem")] | .[-1]' "$(out g)")
	echo "$m"
	jq -e '.alloc_calls == 2 and .alloc_failures == 2 and .alloc_bytes == 0 and
		.outstanding_bytes == 0 and .copy_h2d_bytes == 512 and .copy_d2h_bytes == 256 and
		.sync_calls == 2' <<< "$m"
}

# ---- --mem: every family, from an nvcc program (tests/cuda/mem.cu) ----

# mem_run NAME LIB... -- LDPATH: $MEM_PROG (default mem_shared) under
# gpulaunch --mem -j with --lib LIB..., LD_LIBRARY_PATH=LDPATH; truth in
# NAME.out, gpulaunch's in g-NAME.out, the comparison in NAME.cmp and the
# keys that differ in NAME.diff
mem_run() {
	local name=$1 libs=()
	shift
	while [ "$1" != -- ]; do
		libs+=(--lib "$1")
		shift
	done
	shift
	start_tool "g-$name" gpulaunch -j -i 10 --mem "${libs[@]}"
	LD_LIBRARY_PATH=$1 "$CUDA/${MEM_PROG:-mem_shared}" > "$(out "$name")"
	sleep 0.2
	stop_tool "$TOOL_PID"
	all_json "$(out "g-$name")"
	jq -n -c --slurpfile truth "$(out "$name")" --slurpfile got "$(out "g-$name")" \
		-f "$BATS_TEST_DIRNAME/cuda/mem-check.jq" > "$BATS_TEST_TMPDIR/$name.cmp"
	jq -c 'select(.want != .got)' "$BATS_TEST_TMPDIR/$name.cmp" > "$BATS_TEST_TMPDIR/$name.diff"
	echo "== $name: $(wc -l < "$BATS_TEST_TMPDIR/$name.cmp") keys compared, differing:"
	cat "$BATS_TEST_TMPDIR/$name.diff"
}

need_mem_prog() {
	[ -x "$CUDA/mem_shared" ] || skip "no nvcc: tests/cuda/mem.cu not built"
}

@test "--mem families through the doubles: pinned, pitched/3D, pools, VMM mapped and outstanding, memsets, copies by direction" {
	need_root
	need_mem_prog
	# the runtime double under libcudart.so.13, which calls the driver
	# double (nesting: one call each); every call succeeds
	mem_run d "$DOUBLE/13/libcudart.so.13" "$DOUBLE/libcuda.so.1" -- "$DOUBLE/13:$DOUBLE"
	[ "$(jq -s '[.[] | select(.stem)] | length' "$(out d)")" -eq 81 ]
	[ "$(jq -s '[.[] | select(.stem and .rc != 0)] | length' "$(out d)")" -eq 0 ]
	[ "$(wc -l < "$BATS_TEST_TMPDIR/d.cmp")" -eq 49 ]
	[ ! -s "$BATS_TEST_TMPDIR/d.diff" ]
	# the figures the truth makes: pitch x rows, granules of 2 MiB; one
	# cuMemUnmap of a range of two mappings releases both
	jq -e -s '[.[] | select(.row == "mem")] | last |
		.alloc_calls == 8 and .free_calls == 3 and
		.alloc_bytes == 1048576 + 1024 * 7 + 512 * 15 + 65536 + 131072 + 1048576 + 1024 * 11 + 262144 and
		.pinned_alloc_bytes == 4096 + 8192 + 16384 + 32768 and .pinned_outstanding_bytes == 8192 + 32768 and
		.vmm_create_calls == 4 and .vmm_create_bytes == 10 * 1048576 and
		.vmm_outstanding_bytes == 6 * 1048576 and .vmm_mapped_bytes == 2 * 1048576 and
		.vmm_map_calls == 4 and .vmm_unmap_calls == 2 and .vmm_unmap_bytes == 8 * 1048576 and
		.vmm_reserve_calls == 2 and .vmm_address_free_bytes == 4 * 1048576 and
		.vmm_reserved_bytes == 16 * 1048576 and
		.copy_peer_calls == 7 and .copy_peer_bytes == 128 + 144 + 4096 + 5000 + 144 + 2048 + 3000 and
		.copy_d2d_calls == 4 and .copy_d2d_bytes == 768 + 100 + 48 + 44 * 2 and
		.copy_default_calls == 6 and .copy_default_bytes == 288 + 600 + 67 + 80 + 1024 + 128 and
		.memset_calls == 18 and .memset_bytes == 1000 + 2000 + 900 + 600 + 512 + 480 +
			333 + 200 + 360 + 77 + 110 + 280 + 60 + 72 + 320 + 81 + 56 + 120' \
		"$(out g-d)"
}

need_graph_prog() {
	[ -x "$CUDA/graph_shared" ] || skip "no nvcc: tests/cuda/graph.cu not built"
}

# graph_counts FILE: launches by kernel and by way (graph or direct) of a
# -j run's launch rows, or of its events with -e, as graph.cu's truth prints them
graph_counts() {
	jq -s -c -f "$BATS_TEST_DIRNAME/cuda/graph-counts.jq" "$1"
}

graph_truth() {
	grep '^{' "$1" | jq -s -c '[.[] | select(.kernel)] | sort_by([.kernel, .via])'
}

@test "CUDA graphs: each graph launch counts its kernels by name, however the graph was built" {
	need_root
	need_graph_prog
	local mode name
	# nodes added (cudaGraphAddKernelNode, cudaGraphAddNode), a capture that
	# forks to a second stream and joins back, a graph launch captured,
	# a child graph, a clone, the driver's graph calls; the runtime double
	# calls the driver's for each (nested: once); with entry probes only,
	# with return probes (--latency), as events (-e), and with the address
	# map of kernels without attach cookies (5.10)
	for mode in "" --latency -e addr_map; do
		name=g${mode//-/}
		export AISCOPE_TEST_ADDR_MAP=$([ "$mode" = addr_map ] && echo 1 || echo 0)
		[ "$mode" = addr_map ] && mode=
		start_tool "$name" gpulaunch -j -i 10 $mode --lib "$DOUBLE/13/libcudart.so.13" \
			--lib "$DOUBLE/libcuda.so.1"
		LD_LIBRARY_PATH=$DOUBLE/13:$DOUBLE "$CUDA/graph_shared" sleep:200 > "$(out t)"
		stop_tool "$TOOL_PID"
		all_json "$(out "$name")"
		echo "== mode '$mode'"
		graph_counts "$(out "$name")"
		graph_truth "$(out t)"
		jq -e -s '.[-1].failed_calls == 0' "$(out t)"
		[ "$(graph_counts "$(out "$name")")" = "$(graph_truth "$(out t)")" ]
		# the summary: kernel launches, graph launches, nothing unknown
		jq -e -s --slurpfile t "$(out t)" '.[-1] | .type == "summary" and
			.launches == ([$t[] | select(.kernel) | .launches] | add) and
			.graph_launches == $t[-1].graph_launches and .graph_launches_unknown == 0 and
			.graph_launches_partial == 0 and .graph_nodes_dropped == 0' "$(out "$name")"
		# with return probes, a graph's kernel rows carry its launch calls' latency
		if [ "$mode" = --latency ]; then
			jq -e -s '[.[] | select(.row == "launch" and .graph != null)] | length > 0 and
				all(.latency_p50_ns > 0 and .returns == .launches)' "$(out "$name")"
		fi
	done
	unset AISCOPE_TEST_ADDR_MAP
	# the address map was in use there (registration calls made before the
	# process was scanned are counted in unscanned_calls, never lost silently)
	jq -e -s '.[-1].unscanned_calls | type == "number"' "$(out gaddr_map)"
	# rows: a graph kernel's launches are its graph's times its count there,
	# with the node's configuration (gk_add of cudaGraphAddNode: 16 x 64, 256 B)
	jq -e -s '[.[] | select(.row == "launch" and .kernel == "gk_add(float*, int)" and
		.shared_mem_bytes == 256)] | length > 0 and
		all(.grid == [16, 1, 1] and .block == [64, 1, 1] and .graph != null and
		    .launches == .graph_launches and .api == "cudaGraphLaunch")' "$(out g)"
	jq -e -s '[.[] | select(.row == "launch" and .kernel == "gk_drv")] |
		(map(.launches) | add) == 15 and all(.layer == "driver" and .api == "cuGraphLaunch")' "$(out g)"
}

@test "CUDA graphs: a graph made before gpulaunch started is one [graph] row per launch, counted and said" {
	need_root
	need_graph_prog
	LD_LIBRARY_PATH=$DOUBLE/13:$DOUBLE "$CUDA/graph_shared" --wait sleep:200 > "$(out t)" &
	local pid=$!
	wait_for "$(out t)" '^ready'
	start_tool g gpulaunch -j -i 10 --lib "$DOUBLE/13/libcudart.so.13" --lib "$DOUBLE/libcuda.so.1"
	kill -USR1 "$pid"
	wait "$pid"
	stop_tool "$TOOL_PID"
	all_json "$(out g)"
	graph_counts "$(out g)"
	# the truth's kernels exactly, and the unknown graph's 2 launches as [graph]
	[ "$(graph_counts "$(out g)" | jq -c 'map(select(.kernel != "[graph]"))')" = \
		"$(graph_truth "$(out t)")" ]
	jq -e -s '[.[] | select(.row == "launch" and .kernel == "[graph]")] |
		(map(.launches) | add) == 2 and all(.graph != null and .graph_launches == .launches)' "$(out g)"
	grep '^{' "$(out t)" | jq -e -s '.[-1].graph_launches == 16 and .[-1].unknown_graph_launches == 2'
	jq -e -s '.[-1] | .graph_launches == 16 and .graph_launches_unknown == 2' "$(out g)"
	grep -q '^gpulaunch: 2 graph launches of graphs made before gpulaunch started: counted as \[graph\], their kernels not known$' \
		"$BATS_TEST_TMPDIR/g.err"
}

@test "--mem batch copies: sizes read up to 1024 copies a call, the rest counted in batch_copies_unread, never silent" {
	need_root
	need_mem_prog
	local n unread
	for n in 1024 1100 3; do
		start_tool "g$n" gpulaunch -j -i 10 --mem --lib "$DOUBLE/13/libcudart.so.13"
		LD_LIBRARY_PATH=$DOUBLE/13:$DOUBLE "$CUDA/mem_shared" "batch:$n" > "$(out "b$n")"
		sleep 0.2
		stop_tool "$TOOL_PID"
		all_json "$(out "g$n")"
		# the program's truth: n copies of 10 bytes in one call
		jq -e -s --argjson n "$n" '.[1].bytes == 10 * $n' "$(out "b$n")"
		unread=$((n > 1024 ? n - 1024 : 0))
		jq -e -s --argjson n "$n" --argjson u "$unread" '
			([.[] | select(.row == "mem")] | (map(.copy_default_calls) | add) == 1 and
				(map(.copy_default_bytes) | add) == 10 * ($n - $u)) and
			(.[-1].type == "summary" and .[-1].batch_copies_unread == $u)' "$(out "g$n")"
	done
	# said on stderr too
	grep -q '^gpulaunch: 76 copies of batch calls not counted in bytes: past 1024 in one call, or unreadable$' "$BATS_TEST_TMPDIR/g1100.err"
	[ "$(grep -c 'batch calls' "$BATS_TEST_TMPDIR/g1024.err")" -eq 0 ]
}

@test "--mem families with libcudart 13 (no GPU): failures counted, memsets and copies by direction from the sentinels" {
	need_root
	need_mem_prog
	need_cuda13
	# no driver: every runtime call fails (35), the driver part is left out
	mem_run r "$CUDA13" -- "$(dirname "$CUDA13")"
	grep -q '"driver":null' "$(out r)"
	[ "$(jq -s '[.[] | select(.stem and .rc == 0)] | length' "$(out r)")" -eq 0 ]
	[ "$(wc -l < "$BATS_TEST_TMPDIR/r.cmp")" -eq 49 ]
	[ ! -s "$BATS_TEST_TMPDIR/r.diff" ]
	jq -e -s '[.[] | select(.row == "mem")] | last |
		.alloc_calls == 5 and .alloc_failures == 5 and .pinned_alloc_failures == 2 and
		.pinned_free_unknown == 1 and .free_unknown == 2 and .copy_h2d_bytes == 1200 + 120 + 80 + 512 + 64 + 48 and
		.copy_d2h_bytes == 768 + 168 + 24 + 32 + 40 and .copy_d2d_bytes == 768 + 100 + 48 and
		.copy_default_bytes == 288 + 600 + 67 and
		.copy_peer_bytes == 128 + 144 + 4096 + 5000 and .memset_bytes == 1000 + 2000 + 900 + 600 + 512 + 480' \
		"$(out g-r)"
}

@test "--mem families with libcuda 535 (Debian) and libcudart 13: the driver's pinned, pitched, VMM, memset and peer calls fail (rc 3) as counted" {
	need_root
	need_mem_prog
	need_cuda13
	need_debian
	mem_run v "$CUDA13" "$FIX/libcuda.so.1" -- "$(dirname "$CUDA13"):$FIX"
	# CUDA_ERROR_NOT_INITIALIZED from every driver call, 35 from the runtime's
	[ "$(jq -s '[.[] | select(.stem and (.api | startswith("cu")) and .rc == 3)] | length' "$(out v)")" -eq 42 ]
	[ "$(wc -l < "$BATS_TEST_TMPDIR/v.cmp")" -eq 49 ]
	[ ! -s "$BATS_TEST_TMPDIR/v.diff" ]
	jq -e -s '[.[] | select(.row == "mem")] | last |
		.vmm_create_calls == 4 and .vmm_create_failures == 4 and .vmm_map_failures == 4 and
		.vmm_reserve_failures == 2 and .vmm_unmap_unknown == 2 and .vmm_release_unknown == 2 and
		.vmm_address_free_unknown == 1 and
		.vmm_mapped_bytes == 0 and .pinned_alloc_failures == 4 and
		.copy_peer_bytes == 128 + 144 + 4096 + 5000 + 144 + 2048 + 3000 and .memset_calls == 18 and
		.copy_default_bytes == 288 + 600 + 67 + 80' "$(out g-v)"
}

@test "--mem families built with the per-thread default stream: the _ptds and _ptsz exports of libcudart 13 and libcuda 535" {
	need_root
	need_cuda13
	[ -x "$CUDA/mem_ptds" ] || skip "no nvcc: mem_ptds not built"
	nm -D --undefined-only "$CUDA/mem_ptds" | grep -q 'cudaMemset2DAsync_ptsz@' || {
		echo "mem_ptds calls no _ptsz export"; false; }
	local ldp=$(dirname "$CUDA13") libs=("$CUDA13") n=37
	if [ -e "$(fixture_dir)/libcuda.so.1" ]; then
		ldp=$ldp:$(fixture_dir)
		libs+=("$(fixture_dir)/libcuda.so.1")
		n=79
	fi
	MEM_PROG=mem_ptds mem_run p "${libs[@]}" -- "$ldp"
	[ "$(jq -s '[.[] | select(.stem)] | length' "$(out p)")" -eq "$n" ]
	[ "$(wc -l < "$BATS_TEST_TMPDIR/p.cmp")" -eq 49 ]
	[ ! -s "$BATS_TEST_TMPDIR/p.diff" ]
}

@test "--mem families with the static runtime inside an nvcc executable (no GPU): every key as the truth" {
	need_root
	[ -x "$CUDA/mem_static" ] || skip "no nvcc: mem_static not built"
	# the executable's own cuda* functions are the probes; the driver is
	# Debian's 535 when there (its calls fail with 3), else left out
	local ldp=/nonexistent libs=("$CUDA/mem_static") n=37
	if [ -e "$(fixture_dir)/libcuda.so.1" ]; then
		ldp=$(fixture_dir)
		libs+=("$(fixture_dir)/libcuda.so.1")
		n=79
	fi
	MEM_PROG=mem_static mem_run s "${libs[@]}" -- "$ldp"
	[ "$(jq -s '[.[] | select(.stem)] | length' "$(out s)")" -eq "$n" ]
	[ "$(jq -s '[.[] | select(.stem and .rc == 0)] | length' "$(out s)")" -eq 0 ]
	[ "$(wc -l < "$BATS_TEST_TMPDIR/s.cmp")" -eq 49 ]
	[ ! -s "$BATS_TEST_TMPDIR/s.diff" ]
}

@test "--mem table: pinned, VMM physical and mapped bytes outstanding, peer and memset bytes" {
	need_root
	need_mem_prog
	start_tool g gpulaunch -i 10 --mem --lib "$DOUBLE/13/libcudart.so.13" --lib "$DOUBLE/libcuda.so.1"
	LD_LIBRARY_PATH=$DOUBLE/13:$DOUBLE "$CUDA/mem_shared" > "$(out m)"
	sleep 0.2
	stop_tool "$TOOL_PID"
	cat "$(out g)"
	grep -E '^ +PID COMM +CONTAINER +ALLOCS +ALLOC\(B\) FAILS ALLOC_P99\(us\) +FREES OUTSTANDING\(B\) +PINNED\(B\) +VMM\(B\) +MAPPED\(B\) +H2D\(B\) +D2H\(B\) +D2D\(B\) +PEER\(B\) +MEMSET\(B\) +SYNCS +SYNC\(ms\)$' "$(out g)"
	# allocations 8, 2582016 B, no failure, 3 frees, 2247168 B outstanding;
	# pinned 40960, VMM 6291456 held, 2097152 mapped; copies 2708, 1452, 1004
	# (856 and the arrays' 100 and 48), peer 14560; memsets 7561; 3 syncs
	grep -E '^ +[0-9]+ mem_shared +- +8 +2582016 +0 +[0-9.]+ +3 +2247168 +40960 +6291456 +2097152 +2708 +1452 +1004 +14560 +7561 +3 +[0-9.]+$' "$(out g)"
}

# ---- discovery ----

@test "a running process is found in /proc maps, once per library inode, and -p narrows" {
	need_root
	need_debian
	LD_LIBRARY_PATH=$FIX start_bg a "$CUDA/cudacall" --rt "$FIX/libcudart.so.11.0" --wait launch launch
	a=$BG_PID
	LD_LIBRARY_PATH=$FIX start_bg b "$CUDA/cudacall" --rt "$FIX/libcudart.so.11.0" --wait launch
	b=$BG_PID
	wait_for "$(out a)" '^ready'
	wait_for "$(out b)" '^ready'
	start_tool g gpulaunch -j -i 10 -v
	gpid=$TOOL_PID
	start_tool p gpulaunch -j -i 10 -p "$b"
	kill -USR1 "$a" "$b"
	wait_for "$(out a)" '"rc"'
	wait_for "$(out b)" '"rc"'
	sleep 0.3
	stop_tool "$TOOL_PID"
	stop_tool "$gpid"
	all_json "$(out g)"
	all_json "$(out p)"
	# one attach for the one inode that both processes map
	[ "$(grep -c 'runtime .*libcudart.so.11.8.89: ' "$BATS_TEST_TMPDIR/g.err")" -eq 1 ]
	jq -e -s --argjson a "$a" --argjson b "$b" '
		([.[] | select(.type == "sample" and .pid == $a) | .launches] | add) == 2 and
		([.[] | select(.type == "sample" and .pid == $b) | .launches] | add) == 1' "$(out g)"
	jq -e -s --argjson b "$b" '[.[] | select(.type == "sample")] |
		length > 0 and all(.pid == $b) and (map(.launches) | add) == 1' "$(out p)"
}

@test "a process started later is found when it loads the library (dlopen hook)" {
	need_root
	need_debian
	# no periodic rescan: only the loader hook can find the new library
	start_tool g gpulaunch -j -i 10 --rescan 0 -v
	# the attach takes a moment after the load (launches before it are not
	# seen): the program waits until gpulaunch says it attached
	# (alive until gpulaunch has ended: the kernel's name comes from the
	# program's ELF symbols, read while it still exists; on a loaded host,
	# or under ASan, the reader may come to it seconds after the launches)
	LD_LIBRARY_PATH=$FIX start_bg c "$CUDA/cudacall" --rt "$FIX/libcudart.so.11.0" --wait \
		launch launch launch sleep:120000
	cpid=$BG_PID
	wait_for "$(out c)" '^ready'
	wait_for "$BATS_TEST_TMPDIR/g.err" 'runtime .*libcudart.so.11.8.89: ' 30
	kill -USR1 "$cpid"
	# the three launches returned; gpulaunch drains their events at SIGINT
	local i
	for ((i = 0; i < 300; i++)); do
		[ "$(grep -c '"rc"' "$(out c)")" -ge 3 ] && break
		sleep 0.1
	done
	cat "$(out c)"
	[ "$(grep -c '"rc"' "$(out c)")" -eq 3 ]
	stop_tool "$TOOL_PID"
	kill "$cpid"
	wait "$cpid" || true
	all_json "$(out g)"
	pid=$(jq -s 'first(.[] | select(.type == "sample")) | .pid' "$(out g)")
	[ "$pid" -eq "$cpid" ]
	[ "$(sample_sum "$(out g)" "vecAdd(float*, float*, float*, int)" launches)" -eq 3 ]
	[ "$(jq -s --argjson p "$pid" '[.[] | select(.type == "sample") | .pid == $p] | all' "$(out g)")" = true ]
}

@test "a process started later is traced from its first launch when the loader cache has its library" {
	need_root
	need_nvcc_kernels
	ldconfig -p | grep -q 'libcudart.so.13 ' || skip "libcudart.so.13 not in the loader cache"
	start_tool g gpulaunch -j -i 10
	"$CUDA/kern_shared" 2 > "$(out k)"
	sleep 0.3
	stop_tool "$TOOL_PID"
	[ "$(sample_sum "$(out g)" "void vecAdd<float>(float const*, float const*, float*, int)" launches)" -eq 2 ]
	[ "$(sample_sum "$(out g)" "scale(float*, float)" launches)" -eq 2 ]
}

# ---- output ----

@test "the default table: one row per kernel with grid, block and shared memory" {
	need_root
	start_tool g gpulaunch -i 10 --lib "$DOUBLE/libcudart.so.12" --lib "$DOUBLE/libcuda.so.1"
	LD_LIBRARY_PATH=$DOUBLE calls c --rt "$DOUBLE/libcudart.so.12" --drv "$DOUBLE/libcuda.so.1" \
		launch launch cu_launch sleep:200
	stop_tool "$TOOL_PID"
	cat "$(out g)"
	grep -E '^ +PID COMM +CONTAINER +KERNEL +LAUNCHES/s GRID +BLOCK +SMEM\(B\) ERRORS$' "$(out g)"
	grep -E '^ +[0-9]+ cudacall +- +vecAdd\(float\*, float\*, float\*, int\) +[0-9.]+ 4,2,1 +256,1,1 +1024 +-$' "$(out g)"
	grep -E '^ +[0-9]+ cudacall +- +\[unnamed CUfunction\] +[0-9.]+ 4,2,1 +256,1,1 +1024 +-$' "$(out g)"
	grep -E '^# 20[0-9-]+T[0-9:.]+Z interval=' "$(out g)"
}

@test "gpulaunch tables show a hostile comm sanitised, on its own line" {
	need_root
	hostile_exe "$CUDA/cudacall"
	start_tool g gpulaunch -i 10 --lib "$DOUBLE/libcudart.so.12"
	LD_LIBRARY_PATH=$DOUBLE "$HOSTILE_EXE" --rt "$DOUBLE/libcudart.so.12" launch launch sleep:200 \
		> "$BATS_TEST_TMPDIR/c.out"
	stop_tool "$TOOL_PID"
	start_tool e gpulaunch -e --lib "$DOUBLE/libcudart.so.12"
	LD_LIBRARY_PATH=$DOUBLE "$HOSTILE_EXE" --rt "$DOUBLE/libcudart.so.12" launch sleep:200 \
		> "$BATS_TEST_TMPDIR/c.out"
	stop_tool "$TOOL_PID"
	cat -v "$(out g)" "$(out e)"
	check_sanitised "$(out g)"
	grep -qE '^ +[0-9]+ h\?x\?\[31m\?\?z +- +vecAdd' "$(out g)"
	check_sanitised "$(out e)"
	grep -qE '^ +[0-9]+ +[0-9]+ h\?x\?\[31m\?\?z +cudaLaunchKernel ' "$(out e)"
}

@test "-e: a table row per launch; -n stops after N events" {
	need_root
	need_debian
	start_tool g gpulaunch -e -n 2 --lib "$FIX/libcuda.so.1"
	calls c --drv "$FIX/libcuda.so.1" cu_launch cu_launch_ptsz cu_launch_ex sleep:200
	wait "$TOOL_PID"
	cat "$(out g)"
	[ "$(wc -l < "$(out g)")" -eq 3 ]
	grep -E '^ +PID +TID COMM +API +KERNEL +GRID +BLOCK +SMEM\(B\) STREAM +RC$' "$(out g)"
	grep -E '^ +[0-9]+ +[0-9]+ cudacall +cuLaunchKernel +\[unnamed CUfunction\] +4,2,1 +256,1,1 +1024 0x1234 +3$' "$(out g)"
}

# bpf_gone prog|link ID: the object is gone within 5 s
bpf_gone() {
	local i
	for ((i = 0; i < 50; i++)); do
		bpftool "$1" show id "$2" > /dev/null 2>&1 || return 0
		sleep 0.1
	done
	echo "$1 $2 still there 5 s after exit" >&2
	return 1
}

@test "nothing stays attached after exit; the summary counts launches and probes" {
	need_root
	command -v bpftool > /dev/null || skip "bpftool missing"
	start_tool g gpulaunch -j --lib "$DOUBLE/libcudart.so.12" --lib "$DOUBLE/libcuda.so.1"
	LD_LIBRARY_PATH=$DOUBLE calls c --rt "$DOUBLE/libcudart.so.12" --drv "$DOUBLE/libcuda.so.1" \
		launch sleep:100
	# this gpulaunch's own programs and links (by ID, from its fdinfo: other
	# gpulaunch processes on the host have programs of the same names)
	local progs links id i
	progs=$(awk '$1 == "prog_id:" {print $2}' /proc/"$TOOL_PID"/fdinfo/* 2>/dev/null | sort -u)
	links=$(awk '$1 == "link_id:" {print $2}' /proc/"$TOOL_PID"/fdinfo/* 2>/dev/null | sort -u)
	echo "programs: $(echo $progs); links: $(echo $links)"
	[ -n "$links" ]
	for id in $progs; do
		bpftool prog show id "$id"
	done | grep -q 'name launch_rt' || { echo "not attached while running"; false; }
	stop_tool "$TOOL_PID"
	# none of them is left (a link's release can be deferred a grace period)
	for id in $progs; do bpf_gone prog "$id"; done
	for id in $links; do bpf_gone link "$id"; done
	jq -e -s '[.[] | select(.type == "summary")] | length == 1 and .[0].launches == 1 and
		.[0].uprobes > 0 and .[0].libraries == 2 and .[0].exit_reason == "signal" and
		.[0].lost_events == 0' "$(out g)"
}

# ---- uprobe_multi links, and single uprobes as the fallback ----

@test "gpulaunch --mem --latency exits within 0.3 s of the end of -d and of SIGINT" {
	need_root
	need_uprobe_multi
	run "$BIN/gpulaunch" --list-probes --lib "$DOUBLE/libcuda.so.1"
	[[ "$output" == *"cuLaunchKernel chosen: uprobe_multi link"* ]]
	ms=$(wall_ms "$BIN/gpulaunch" --mem --latency -d 1s --lib "$DOUBLE/libcudart.so.12" \
		--lib "$DOUBLE/libcuda.so.1")
	echo "-d 1s: exec to exit $ms ms"
	grep -q 'probes in 2 files' "$BATS_TEST_TMPDIR/wall.err"
	[ "$ms" -le 1300 ]
	start_tool g gpulaunch --mem --latency --lib "$DOUBLE/libcudart.so.12" --lib "$DOUBLE/libcuda.so.1"
	[ "$(link_fds "$TOOL_PID" "u(ret)?probe_multi")" -gt 0 ]
	sigint_ms "$TOOL_PID"
	echo "SIGINT to exit $SIGINT_MS ms"
	[ "$SIGINT_MS" -le 300 ]
	grep -q 'probes in 2 files' "$BATS_TEST_TMPDIR/g.err"
}

@test "single uprobes (AISCOPE_TEST_SINGLE_UPROBES=1): the same launches and allocations counted" {
	need_root
	export AISCOPE_TEST_SINGLE_UPROBES=1
	run "$BIN/gpulaunch" --list-probes --lib "$DOUBLE/libcuda.so.1"
	echo "$output" | grep -E "^driver +uprobe +$DOUBLE/libcuda.so.1:cuLaunchKernel chosen: single uprobes"
	# a single uprobe's perf event can take seconds to open while others close theirs
	start_bg g "$BIN/gpulaunch" -j --mem --latency --lib "$DOUBLE/libcudart.so.12" --lib "$DOUBLE/libcuda.so.1"
	TOOL_PID=$BG_PID
	wait_for "$BATS_TEST_TMPDIR/g.err" Tracing 120
	# single uprobes are perf events: the tool holds no uprobe_multi link
	[ "$(link_fds "$TOOL_PID" "u(ret)?probe_multi")" -eq 0 ]
	[ "$(perf_fds "$TOOL_PID")" -gt 0 ]
	LD_LIBRARY_PATH=$DOUBLE calls c --rt "$DOUBLE/libcudart.so.12" --drv "$DOUBLE/libcuda.so.1" \
		launch malloc:4096 sleep:100
	stop_tool "$TOOL_PID"
	jq -e -s '[.[] | select(.type == "summary")] | length == 1 and .[0].launches == 1 and
		.[0].uprobes > 0' "$(out g)"
	jq -e -s '[.[] | select(.type == "sample" and .row == "mem")] | .[-1] |
		.alloc_calls == 1 and .alloc_bytes == 4096' "$(out g)"
}

# ---- the address map: the API from the probed address (Linux 5.10: no
# attach cookies, no bpf_find_vma), forced here by the hidden knob ----

@test "address map (AISCOPE_TEST_ADDR_MAP=1): --list-probes says it; launches, names and --mem exact" {
	need_root
	run env -u AISCOPE_TEST_ADDR_MAP "$BIN/gpulaunch" --list-probes --lib "$DOUBLE/libcuda.so.1"
	# this kernel has both helpers: cookies unless told otherwise
	echo "$output" | grep -E "^api +cookie +bpf_get_attach_cookie +chosen$"
	export AISCOPE_TEST_ADDR_MAP=1
	run "$BIN/gpulaunch" --list-probes --lib "$DOUBLE/libcuda.so.1"
	echo "$output" | grep -E "^api +address-map +proc_maps\+api_offs +chosen: no bpf_get_attach_cookie"
	# scanned before its first call: it waits until the tool is tracing;
	# it stays 300 ms after its calls, for vecAdd's name from its ELF
	# symbols (a process gone first: the next test)
	LD_LIBRARY_PATH=$DOUBLE start_bg c "$CUDA/cudacall" --rt "$DOUBLE/libcudart.so.12" \
		--drv "$DOUBLE/libcuda.so.1" --wait reg getkernel launch launch13 cu_launch \
		malloc:4096 malloc:8192 free memcpy:1:100 memcpy:2:50 sync_us:1000 sleep:300
	cpid=$BG_PID
	wait_for "$(out c)" '^ready'
	start_tool g gpulaunch -j -i 10 --mem --lib "$DOUBLE/libcudart.so.12" --lib "$DOUBLE/libcuda.so.1"
	kill -USR1 "$cpid"
	wait_for "$(out c)" cudaStreamSynchronize
	sleep 0.3
	stop_tool "$TOOL_PID"
	all_json "$(out g)"
	cat "$(out c)"
	jq -c 'select(.type == "sample" and .row != "mem") | {api, kernel, layer, launches}' "$(out g)"
	jq -c 'select(.type == "summary") | {launches, unscanned_calls, attach_failures}' "$(out g)"
	# launch13 is __cudaLaunchKernel tail-calling cudaLaunchKernel: one
	# launch; the registered and the __cudaGetKernel handle's names
	jq -e -s '[.[] | select(.type == "sample" and .row != "mem")] |
		(map(select(.kernel == "vecAdd(float*, float*, float*, int)" and .layer == "runtime") |
		  .launches) | add) == 2 and
		(map(select(.kernel == "reduceSum(float*, int)" and .layer == "runtime") | .launches) | add) == 1 and
		(map(select(.layer == "driver") | .launches) | add) == 1' "$(out g)"
	jq -e -s '[.[] | select(.type == "sample" and .row == "mem")] | .[-1] |
		.alloc_calls == 2 and .alloc_bytes == 12288 and .free_calls == 1 and
		.free_bytes == 8192 and .outstanding_bytes == 4096 and .copy_h2d_bytes == 100 and
		.copy_d2h_bytes == 50 and .sync_calls == 1' "$(out g)"
	jq -e -s '[.[] | select(.type == "summary")] | length == 1 and .[0].launches == 4 and
		.[0].unscanned_calls == 0 and .[0].attach_failures == 0 and
		.[0].names_unread == 0 and .[0].names_dropped == 0' "$(out g)"
}

# The name table's cap (262144) set to 2 for the test: the registration
# and the handle link are kept, the driver lookup's name is not: its
# launch is counted under [unnamed CUfunction], the loss in names_dropped
@test "a full name table: names not kept are counted in names_dropped, their launches still counted" {
	need_root
	export AISCOPE_TEST_MAX_NAMES=2
	start_tool g gpulaunch -j -i 10 --lib "$DOUBLE/libcudart.so.12" --lib "$DOUBLE/libcuda.so.1"
	LD_LIBRARY_PATH=$DOUBLE calls c --rt "$DOUBLE/libcudart.so.12" --drv "$DOUBLE/libcuda.so.1" \
		reg getkernel getkernel cu_getfunc sleep:200
	stop_tool "$TOOL_PID"
	all_json "$(out g)"
	jq -c 'select(.type == "sample") | {api, kernel, layer, launches}' "$(out g)"
	jq -c 'select(.type == "summary") | {launches, names_dropped}' "$(out g)"
	jq -e -s '[.[] | select(.type == "sample" and .kernel == "reduceSum(float*, int)")] |
		length > 0 and all(.layer == "runtime") and (map(.launches) | add) == 2' "$(out g)"
	jq -e -s '[.[] | select(.type == "sample" and .layer == "driver")] |
		length == 1 and .[0].kernel == "[unnamed CUfunction]" and .[0].launches == 1' "$(out g)"
	jq -e -s '[.[] | select(.type == "summary")] | length == 1 and .[0].launches == 3 and
		.[0].names_dropped == 1 and .[0].names_unread == 0' "$(out g)"
	grep -F '1 kernel names not kept: the name table was full' "$BATS_TEST_TMPDIR/g.err"
}

# A name from ELF symbols is read from the process's maps when its first
# launch is reported: a stopped gpulaunch reads it after the process is
# reaped (what a starved one does with a process that exits at once)
@test "a kernel only ELF symbols name, its process gone before gpulaunch reads them: [unknown], counted in names_unread" {
	need_root
	start_tool g gpulaunch -j -i 10 --lib "$DOUBLE/libcudart.so.12"
	kill -STOP "$TOOL_PID"
	LD_LIBRARY_PATH=$DOUBLE calls c --rt "$DOUBLE/libcudart.so.12" launch launch
	kill -CONT "$TOOL_PID"
	sleep 0.3
	stop_tool "$TOOL_PID"
	all_json "$(out g)"
	jq -c 'select(.type == "sample") | {api, kernel, layer, launches}' "$(out g)"
	jq -c 'select(.type == "summary") | {launches, names_unread}' "$(out g)"
	jq -e -s '[.[] | select(.type == "sample" and .layer == "runtime")] | length == 1 and
		.[0].kernel == "[unknown]" and .[0].launches == 2' "$(out g)"
	jq -e -s '[.[] | select(.type == "summary")] | length == 1 and .[0].launches == 2 and
		.[0].names_unread == 1' "$(out g)"
	grep -F '1 kernels [unknown]: their process exited before its maps were read' \
		"$BATS_TEST_TMPDIR/g.err"
}

@test "address map: a process's calls before its scan are counted in unscanned_calls, none lost silently" {
	need_root
	export AISCOPE_TEST_ADDR_MAP=1
	start_tool g gpulaunch -j -i 10 --lib "$DOUBLE/libcuda.so.1"
	# no wait: its launches race the scan that its library load asks for;
	# each direct driver launch is one probed call, counted or unscanned
	LD_LIBRARY_PATH=$DOUBLE calls c --drv "$DOUBLE/libcuda.so.1" cu_launch cu_launch cu_launch \
		cu_launch sleep:200
	stop_tool "$TOOL_PID"
	all_json "$(out g)"
	jq -c 'select(.type == "summary") | {launches, unscanned_calls}' "$(out g)"
	jq -e -s '[.[] | select(.type == "summary")] | length == 1 and
		.[0].launches + .[0].unscanned_calls == 4' "$(out g)"
	# and without the knob none is unscanned: cookies need no scan
	export AISCOPE_TEST_ADDR_MAP=0
	start_tool h gpulaunch -j -i 10 --lib "$DOUBLE/libcuda.so.1"
	LD_LIBRARY_PATH=$DOUBLE calls d --drv "$DOUBLE/libcuda.so.1" cu_launch cu_launch sleep:200
	stop_tool "$TOOL_PID"
	jq -e -s '[.[] | select(.type == "summary")] | .[0].launches == 2 and
		.[0].unscanned_calls == null' "$(out h)"
}

# cudastatic (tests/helpers): a static runtime in an executable, its
# launches calling the driver inside it. Never scanned (the hidden knob,
# no rescan): what tells its launches apart is the BPF side alone, the
# caller's file offset inside the runtime's part of the executable by
# bpf_find_vma
@test "a process never scanned: each launch once, the static runtime's driver calls nested" {
	need_root
	local cs=$AISCOPE_BUILD/tests/helpers/cudastatic
	export AISCOPE_TEST_NO_EXEC_SCAN=1
	start_tool g gpulaunch -j -i 10 --rescan 0 --lib "$cs"
	"$cs" launch launch cu_launch launch13 > "$BATS_TEST_TMPDIR/cs.out"
	stop_tool "$TOOL_PID"
	all_json "$(out g)"
	jq -c 'select(.type == "sample") | {api, layer, launches}' "$(out g)"
	# three runtime launches (one through __cudaLaunchKernel's tail call)
	# and one direct driver launch: the runtime's driver calls not again
	jq -e -s '[.[] | select(.type == "sample" and .layer == "runtime") | .launches] | add == 3' "$(out g)"
	jq -e -s '[.[] | select(.type == "sample") | .launches] | add == 4' "$(out g)"
	jq -e -s '[.[] | select(.type == "summary")] | length == 1 and .[0].unscanned_calls == null' "$(out g)"
}
