#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# gpulaunch on a host with a GPU: one short prepared check (a few minutes).
#
#   scripts/gpu-check.sh [OUTDIR]        (as root; OUTDIR default build/gpu-check)
#
# 1. builds (make), with the nvcc test kernels (tests/cuda/kern.cu);
# 2. runs kern_shared (a 4 KiB cudaMalloc, copies both ways, N launches of two
#    <<<>>> kernels on a stream) under `gpulaunch -j --latency --mem` and under
#    `gpulaunch -e -j`, and compares launches, names, grid, block, shared
#    memory, return codes, allocation and copy sizes with what it did;
# 3. runs mem_shared, mem_ptds and mem_static (tests/cuda/mem.cu, also built
#    with the per-thread default stream and with the static runtime: every
#    --mem family: pinned host memory, pitched and 3D allocations,
#    stream-ordered pools, the driver's virtual memory (cuMemCreate/
#    AddressReserve/Map/Unmap/Release/AddressFree), memsets, 2D/3D/peer/symbol
#    copies) under `gpulaunch -j --mem` and compares the 49 keys of its mem
#    samples with the program's truth (tests/cuda/mem-check.jq);
# 4. runs graph_shared (tests/cuda/graph.cu: CUDA graphs built from nodes,
#    from a stream capture that forks to a second stream and joins back,
#    with a captured graph launch, a child graph, a clone, and the driver's
#    graph calls on a PTX kernel) under `gpulaunch -j`, `-j --latency` and
#    `-e -j`, and compares each kernel's launches through graphs and
#    directly with the program's truth; with PyTorch, a CUDA graph replayed;
# 5. if PyTorch with CUDA is importable, a matmul loop under `gpulaunch -j`:
#    which exports fire (runtime, driver, cuLaunchKernelEx ...), how many
#    launches, which kernel names; and a torch.distributed NCCL job (one rank
#    per GPU, two at most) that nclstat joins after it started: every
#    communicator named from its memory, with the commId NCCL's own log
#    prints, and all its ranks;
# 6. writes what it found to OUTDIR/report.md (and the raw JSON next to it),
#    for docs/gpulaunch.md. Exit 0 when every comparison held, 1 otherwise,
#    77 when there is no GPU (nvidia-smi finds none).
#
# Environment: N (launches of each kernel, default 200), CUDA (default
# /usr/local/cuda), PYTHON (default python3).
set -u -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
out=${1:-$top/build/gpu-check}
N=${N:-200}
CUDA=${CUDA:-/usr/local/cuda}
PYTHON=${PYTHON:-python3}
mkdir -p "$out"
report=$out/report.md
fails=0

say() { printf '%s\n' "$*" | tee -a "$report"; }
check() {	# check DESCRIPTION CMD...: a comparison, recorded
	if "${@:2}"; then say "- ok: $1"; else say "- FAILED: $1"; fails=$((fails + 1)); fi
}

: > "$report"
[ "$(id -u)" -eq 0 ] || { echo "gpu-check.sh: run as root" >&2; exit 1; }
if ! nvidia-smi -L > "$out/gpus.txt" 2>&1 || ! grep -q '^GPU ' "$out/gpus.txt"; then
	echo "gpu-check.sh: no GPU here (nvidia-smi -L: $(head -1 "$out/gpus.txt"))" >&2
	exit 77
fi
say "# gpulaunch GPU check, $(date -u +%Y-%m-%dT%H:%MZ)"
say ""
say "Host: $(uname -r) $(uname -m); $(head -1 "$out/gpus.txt");"
say "driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1);"
say "nvcc: $("$CUDA/bin/nvcc" --version 2>/dev/null | tail -1 || echo none)."
say ""

make -j"$(nproc)" NVCC="$CUDA/bin/nvcc" > "$out/build.log" 2>&1 ||
	{ tail -20 "$out/build.log"; echo "gpu-check.sh: the build failed" >&2; exit 1; }
G=$top/build/gpulaunch
K=$top/build/tests/cuda/kern_shared
[ -x "$K" ] || { echo "gpu-check.sh: no nvcc: $K not built" >&2; exit 1; }
export LD_LIBRARY_PATH=$CUDA/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# run_under NAME ARGS...: gpulaunch ARGS (discovery: no --lib) while $PROG
# (default kern_shared N) runs
run_under() {
	local name=$1 pid
	shift
	"$G" "$@" > "$out/$name.json" 2> "$out/$name.err" &
	pid=$!
	for _ in $(seq 100); do grep -q Tracing "$out/$name.err" && break; sleep 0.1; done
	${PROG:-"$K" "$N"} > "$out/$name.truth"
	sleep 1.5
	kill -INT "$pid"
	wait "$pid"
}

# torch_under NAME SCRIPT: `gpulaunch -j` while PYTHON runs SCRIPT
torch_under() {
	local name=$1 pid
	"$G" -j > "$out/$name.json" 2> "$out/$name.err" &
	pid=$!
	for _ in $(seq 100); do grep -q Tracing "$out/$name.err" && break; sleep 0.1; done
	"$PYTHON" "$2" > "$out/$name.out" 2>&1
	kill -INT "$pid"
	wait "$pid"
}

# ---- 1. a CUDA program: launches, names, configuration, memory ----
say "## kern_shared ($N launches of each kernel)"
run_under agg -j --latency --mem
vec='void vecAdd<float>(float const*, float const*, float*, int)'
sc='scale(float*, float)'
stream=$(jq -r 'select(.stream_real) | .stream_real' "$out/agg.truth")
mrc=$(jq -r 'select(.api == "cudaMalloc") | .rc' "$out/agg.truth")
say "cudaMalloc returned $mrc; the stream is $stream."
launches() { jq -s --arg k "$1" '[.[] | select(.type == "sample" and .row == "launch" and .kernel == $k) | .launches] | add // 0' "$out/agg.json"; }
check "vecAdd launches: $(launches "$vec") of $N" [ "$(launches "$vec")" -eq "$N" ]
check "scale launches: $(launches "$sc") of $N" [ "$(launches "$sc")" -eq "$N" ]
check "no launch failed (errors)" jq -e -s '[.[] | select(.type == "sample" and .row == "launch") | .errors] | add == 0' "$out/agg.json"
check "vecAdd grid 4,2,1, block 256,1,1, 1024 B, on its stream" jq -e -s --arg k "$vec" --arg s "$stream" \
	'all(.[] | select(.type == "sample" and .kernel == $k); .grid == [4,2,1] and .block == [256,1,1] and .shared_mem_bytes == 1024 and .stream == $s)' "$out/agg.json"
check "scale grid 3,1,1, block 64,1,1" jq -e -s --arg k "$sc" \
	'all(.[] | select(.type == "sample" and .kernel == $k); .grid == [3,1,1] and .block == [64,1,1])' "$out/agg.json"
check "memory: one 4096 B allocation, freed; 4096 B each way" jq -e -s '
	[.[] | select(.type == "sample" and .row == "mem")] as $m |
	($m | map(.alloc_bytes) | add) == 4096 and ($m | map(.free_bytes) | add) == 4096 and
	($m | map(.copy_h2d_bytes) | add) == 4096 and ($m | map(.copy_d2h_bytes) | add) == 4096' "$out/agg.json"
say ""
say "Which export saw the launches, per kernel (api, layer):"
jq -r -s '[.[] | select(.type == "sample" and .row == "launch")] | group_by(.kernel + .api)[] |
	"- \(.[0].kernel): \(.[0].api) (\(.[0].layer)), \(map(.launches) | add) launches"' "$out/agg.json" | tee -a "$report"

run_under ev -e -j
check "-e: $(jq -s '[.[] | select(.type == "event")] | length' "$out/ev.json") events for $((2 * N)) launches, all rc 0" \
	jq -e -s --argjson n $((2 * N)) '[.[] | select(.type == "event")] | length == $n and all(.rc == 0)' "$out/ev.json"
say ""

# ---- 2. every --mem family ----
# mem_shared, mem_ptds (the same, built with the per-thread default stream:
# the _ptds and _ptsz exports) and mem_static (the static runtime)
say "## --mem families (tests/cuda/mem.cu)"
for prog in mem_shared mem_ptds mem_static; do
	M=$top/build/tests/cuda/$prog
	if [ ! -x "$M" ]; then
		say "$prog not built: skipped."
		continue
	fi
	PROG=$M run_under "$prog" -j --mem
	jq -n -c --slurpfile truth "$out/$prog.truth" --slurpfile got "$out/$prog.json" \
		-f "$top/tests/cuda/mem-check.jq" > "$out/$prog.cmp"
	say "$prog: $(jq -s '[.[] | select(.stem and .rc != 0)] | length' "$out/$prog.truth") of $(jq -s '[.[] | select(.stem)] | length' "$out/$prog.truth") calls failed:"
	jq -r 'select(.stem and .rc != 0) | "- \(.api): \(.rc)"' "$out/$prog.truth" | tee -a "$report"
	grep -q '"driver":null' "$out/$prog.truth" && say "no libcuda.so.1 to dlopen: the driver part was left out."
	jq -r 'select(.want != .got) | "- differs: \(.key): want \(.want), got \(.got)"' "$out/$prog.cmp" | tee -a "$report"
	check "$prog --mem: all $(wc -l < "$out/$prog.cmp") keys equal the program's truth" \
		jq -e -s 'length == 49 and all(.want == .got)' "$out/$prog.cmp"
done
say ""

# ---- 3. CUDA graphs ----
say "## CUDA graphs (tests/cuda/graph.cu)"
GR=$top/build/tests/cuda/graph_shared
graph_counts() {
	jq -s -c -f "$top/tests/cuda/graph-counts.jq" "$1"
}
if [ -x "$GR" ]; then
	for mode in agg lat ev; do
		case $mode in
		agg) args=(-j) ;;
		lat) args=(-j --latency) ;;
		ev) args=(-e -j) ;;
		esac
		PROG="$GR sleep:1000" run_under "graph-$mode" "${args[@]}"
		grep '^{' "$out/graph-$mode.truth" | jq -s -c '[.[] | select(.kernel)] | sort_by([.kernel, .via])' \
			> "$out/graph-$mode.want"
		graph_counts "$out/graph-$mode.json" > "$out/graph-$mode.got"
		say "gpulaunch ${args[*]}: $(cat "$out/graph-$mode.got")"
		check "graphs (${args[*]}): the program's calls all succeeded" \
			jq -e -s '.[-1].failed_calls == 0' "$out/graph-$mode.truth"
		check "graphs (${args[*]}): launches by kernel, through graphs and directly, equal the truth" \
			cmp -s "$out/graph-$mode.want" "$out/graph-$mode.got"
	done
else
	say "graph_shared not built: skipped."
fi
if "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	cat > "$out/cg.py" <<-'EOF'
	import torch, time
	x = torch.randn(256, 256, device="cuda"); w = torch.randn(256, 256, device="cuda")
	s = torch.cuda.Stream()
	s.wait_stream(torch.cuda.current_stream())
	with torch.cuda.stream(s):
	    for _ in range(3):
	        y = torch.relu(x @ w)
	torch.cuda.current_stream().wait_stream(s)
	g = torch.cuda.CUDAGraph()
	time.sleep(2)
	with torch.cuda.graph(g):
	    y = torch.relu(x @ w)
	for _ in range(50):
	    g.replay()
	torch.cuda.synchronize(); time.sleep(1.5)
	print("done")
	EOF
	torch_under torch-graph "$out/cg.py"
	say "PyTorch: a CUDA graph of relu(x @ w) captured, replayed 50 times:"
	jq -r -s '[.[] | select(.type == "sample" and .row == "launch" and .graph != null)] | group_by(.kernel)[] |
		"- \(map(.launches) | add) x \(.[0].kernel) (graph launches \(map(.graph_launches) | add))"' \
		"$out/torch-graph.json" | tee -a "$report"
	check "PyTorch graph: every replay's kernels by name, none [graph]" jq -e -s '
		[.[] | select(.type == "sample" and .row == "launch" and .graph != null)] as $g |
		($g | length) > 0 and all($g[]; .kernel != "[graph]" and .launches % 50 == 0)' "$out/torch-graph.json"
fi
say ""

# ---- 4. PyTorch, if there ----
say "## PyTorch"
if "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
	cat > "$out/mm.py" <<-'EOF'
	import torch, time
	a = torch.randn(1024, 1024, device="cuda"); b = torch.randn(1024, 1024, device="cuda")
	torch.cuda.synchronize(); time.sleep(2)
	for _ in range(100):
	    c = a @ b
	torch.cuda.synchronize(); time.sleep(1.5)
	print("done")
	EOF
	torch_under torch "$out/mm.py"
	say "100 matmuls of 1024x1024 (torch $("$PYTHON" -c 'import torch; print(torch.__version__)')):"
	jq -r -s '[.[] | select(.type == "sample" and .row == "launch")] | group_by(.kernel + .api)[] |
		"- \(map(.launches) | add) x \(.[0].kernel) via \(.[0].api) (\(.[0].layer))"' "$out/torch.json" |
		sort -rn | head -20 | tee -a "$report"
	check "PyTorch: at least 100 launches seen" jq -e -s '[.[] | select(.type == "sample") | .launches] | add >= 100' "$out/torch.json"
else
	say "not importable with CUDA here: skipped."
fi

say ""

# ---- 5. nclstat on a running PyTorch job, if there ----
say "## nclstat started in the middle of a PyTorch NCCL job"
ngpu=$(grep -c '^GPU ' "$out/gpus.txt")
ws=$((ngpu < 2 ? ngpu : 2))
if "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() and torch.distributed.is_nccl_available() else 1)' 2>/dev/null; then
	cat > "$out/ddp.py" <<-'EOF'
	import os, sys, time, torch, torch.distributed as dist, torch.multiprocessing as mp
	def rank_main(rank, ws):
	    torch.cuda.set_device(rank)
	    dist.init_process_group("nccl", init_method="tcp://127.0.0.1:29533", rank=rank, world_size=ws)
	    x = torch.ones(1 << 20, device="cuda")
	    dist.all_reduce(x)
	    torch.cuda.synchronize()
	    print(f"ready {rank} {os.getpid()}", flush=True)
	    end = time.time() + 8
	    while time.time() < end:
	        dist.all_reduce(x); torch.cuda.synchronize(); time.sleep(0.01)
	    dist.barrier(); dist.destroy_process_group()
	if __name__ == "__main__":
	    mp.spawn(rank_main, args=(int(sys.argv[1]),), nprocs=int(sys.argv[1]))
	EOF
	NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT "$PYTHON" "$out/ddp.py" "$ws" > "$out/ddp.out" 2>&1 &
	job=$!
	for _ in $(seq 300); do [ "$(grep -c '^ready ' "$out/ddp.out")" -ge "$ws" ] && break; sleep 0.1; done
	"$top/build/nclstat" -j -i 1s -d 3s > "$out/ncl.json" 2> "$out/ncl.err"
	wait "$job"
	# NCCL's own log names each communicator: "... commId 0x<commHash> - Init START"
	sed -n 's/.*commId 0x\([0-9a-f]*\) - Init START.*/\1/p' "$out/ddp.out" | sort -u > "$out/ncl.commids"
	say "$ws rank(s); NCCL logged commIds: $(tr '\n' ' ' < "$out/ncl.commids")"
	grep -h 'communicators read at\|communicators not read' "$out/ncl.err" | tee -a "$report"
	check "nclstat read the communicators' layout from the library" grep -q 'communicators read at' "$out/ncl.err"
	check "every communicator row of the job named from memory, its id one NCCL logged, all $ws ranks" \
		jq -e -s --rawfile ids "$out/ncl.commids" '
		[.[] | select(.type == "sample" and .row == "communicator")] as $c |
		($ids | split("\n") | map(select(. != ""))) as $ids |
		($c | length) > 0 and all($c[]; all(.ranks[]; .identity == "memory") and
			(.communicator_id | ltrimstr("0x")) as $h |
			($ids | any(. == $h)) and .nranks == '"$ws"' and
			([.ranks[].rank] | sort) == [range(0; '"$ws"')])' "$out/ncl.json"
else
	say "PyTorch with NCCL not importable here: skipped."
fi

say ""
say "Result: $fails comparison(s) failed. Raw JSON: $out/."
[ "$fails" -eq 0 ]
