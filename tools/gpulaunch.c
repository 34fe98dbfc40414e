// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * gpulaunch: what is each process launching on the GPU, how often, and is
 * the CPU side the bottleneck?
 *
 * Uprobes on the CUDA runtime (libcudart*.so*, or executables that carry a
 * static copy) and the driver (libcuda.so.1), found in processes' mappings
 * and attached once per library inode. Launches are counted per process
 * and kernel in the kernel; names come from kernel registration, CUDA 13's
 * handle map, driver function lookups and ELF symbols. -e streams each
 * launch; --latency adds return probes; --mem follows allocations, copies
 * and synchronization.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "demangle.h"
#include "hist.h"
#include "json.h"
#include "kfeatures.h"
#include "mapdrain.h"
#include "metrics.h"
#include "complete.h"
#include "opts.h"
#include "run.h"
#include "table.h"
#include "text.h"
#include "uprobe.h"
#include "util.h"
#include "gpulaunch.h"
#include "cudagraph.h"
#include "gpulaunch.skel.h"

#define TOOL "gpulaunch"
#define MAX_LIBS_ARG 16

static const char doc[] =
"CUDA kernel launches per process and kernel, from uprobes on the CUDA\n"
"runtime and driver libraries (no GPU access, no CUPTI, no restart).\n"
"\n"
"Finds libcudart, libcuda.so.1 and executables with a static CUDA runtime in\n"
"running and newly started processes. Every interval, a top table of kernels\n"
"by launches per second with their grid, block and shared memory. -e streams\n"
"each launch; --latency adds return probes (errors, call latency); --mem adds\n"
"allocations (device, pinned host and the driver's virtual memory), copies by\n"
"direction, memsets and synchronization waits.\n"
"\n"
"USAGE: gpulaunch [OPTIONS] [interval [count]]"
"\v"
"EXAMPLES:\n"
"  gpulaunch                     # top kernels by launches/s, each second\n"
"  gpulaunch -p 1234 --latency   # one process, with errors and call latency\n"
"  gpulaunch -e -j | jq -c '{pid, kernel, grid, block, rc}'\n"
"  gpulaunch --mem 5             # allocations, copies, syncs every 5 s\n"
"  gpulaunch --lib /opt/app/lib/libcudart.so.12 -d 30s -j > launches.jsonl\n"
"  gpulaunch -j -n 3 | jq 'select(.type==\"sample\" and .record==\"launch\") | .launches_per_sec'\n"
"  gpulaunch --mem --listen :9468 -i 15s   # Prometheus scrapes /metrics\n"
"\n"
"Exit status: 0 done, 1 runtime error, 2 usage error, 77 cannot run here.";

enum { OPT_LATENCY = 0x200, OPT_MEM, OPT_LIB, OPT_MANGLED, OPT_RESCAN, OPT_HOLD };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "gpulaunch:", 1 },
	{ "events", 'e', NULL, 0, "Stream one event per launch (with its return code)", 1 },
	{ "latency", OPT_LATENCY, NULL, 0, "Add return probes: errors and call latency", 1 },
	{ "mem", OPT_MEM, NULL, 0,
	  "Allocations (device, pinned, virtual memory), copies by direction, memsets, "
	  "synchronize waits", 1 },
	{ "lib", OPT_LIB, "PATH", 0, "Probe this library or executable only (repeatable)", 1 },
	{ "mangled", OPT_MANGLED, NULL, 0, "Keep kernel names mangled", 1 },
	UPROBE_RESCAN_OPTION(OPT_RESCAN),
	UPROBE_HOLD_OPTION(OPT_HOLD),
	{},
};

static const char *const sort_keys[] = { "launches", "errors", "p99", "smem", NULL };

/* what the shell completions offer after its options (lib/complete.h) */
const struct opt_value aiscope_opt_values[] = {
	{ .name = "sort", .kind = OV_WORDS, .words = sort_keys },
	{ .name = "lib", .kind = OV_FILE },
	{},
};

static struct {
	bool events, latency, mem, mangled, hold;
	const char *libs[MAX_LIBS_ARG];
	int nlibs;
	uint64_t rescan_ns;
	const char *sort;
} cfg = { .rescan_ns = 5 * NSEC_PER_SEC, .sort = "launches" };

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'e':
		cfg.events = true;
		env.no_metrics = "-e streams single launches: --prometheus and --listen need the interval view";
		break;
	case OPT_LATENCY:
		cfg.latency = true;
		break;
	case OPT_MEM:
		cfg.mem = true;
		break;
	case OPT_MANGLED:
		cfg.mangled = true;
		break;
	case OPT_HOLD:
		cfg.hold = true;
		break;
	case OPT_LIB:
		if (cfg.nlibs == MAX_LIBS_ARG)
			usage_error("too many --lib (at most %d)", MAX_LIBS_ARG);
		opt_input_file("--lib", arg);
		cfg.libs[cfg.nlibs++] = arg;
		break;
	case OPT_RESCAN:
		cfg.rescan_ns = opt_duration_or_never("--rescan", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = AISCOPE_ARGP(opts, parse_arg, doc);

static struct probe_hook hooks[] = {
	UPROBE_DISCOVER_HOOK,
	{ .name = "sched_process_exit", .optional = true, .preemptible = true, .cand = {
		PROBE_TRACEPOINT("sched", "sched_process_exit", "exit") } },
};

/* ---- the probed symbols ---- */

enum need { N_ALWAYS, N_MEM };

struct api {
	const char *sym;
	uint8_t cls, layer, shape, kind;
	enum need need;
};

#define RT GL_RUNTIME
#define DRV GL_DRIVER
#define L(s, layer, shape) { s, GL_LAUNCH, layer, shape, 0, N_ALWAYS }
#define NM(s, layer, shape) { s, GL_NAME, layer, shape, 0, N_ALWAYS }
#define AL(s, layer) { s, GL_ALLOC, layer, GL_SH_ALLOC, GL_POOL_DEVICE, N_MEM }
#define FR(s, layer) { s, GL_FREE, layer, 0, GL_POOL_DEVICE, N_MEM }
/* an allocation of another pool or shape, and its free */
#define ALP(s, layer, pool, shape) { s, GL_ALLOC, layer, shape, pool, N_MEM }
#define FRP(s, layer, pool) { s, GL_FREE, layer, 0, pool, N_MEM }
#define CPR(s) { s, GL_COPY, RT, GL_SH_COPY_RT, 0, N_MEM }
#define CPD(s, kind) { s, GL_COPY, DRV, GL_SH_COPY_DRV, kind, N_MEM }
/* copies and memsets of other shapes (kind: the element size's log2 of
 * the driver's memsets) */
#define CPS(s, layer, shape, kind) { s, GL_COPY, layer, shape, kind, N_MEM }
#define MSR(s, shape) CPS(s, RT, shape, 0)
#define SY(s, layer) { s, GL_SYNC, layer, 0, 0, N_MEM }
/* CUDA graphs: what each graph launch runs */
#define GR(s, layer, shape) { s, GL_GRAPH, layer, shape, 0, N_ALWAYS }
#define JN(s, layer, shape) { s, GL_JOIN, layer, shape, 0, N_ALWAYS }

static const struct api apis[] = {
	/* launches: runtime */
	L("cudaLaunchKernel", RT, GL_SH_RT),
	L("cudaLaunchKernel_ptsz", RT, GL_SH_RT),
	L("__cudaLaunchKernel", RT, GL_SH_RT),
	L("__cudaLaunchKernel_ptsz", RT, GL_SH_RT),
	L("cudaLaunchCooperativeKernel", RT, GL_SH_RT),
	L("cudaLaunchCooperativeKernel_ptsz", RT, GL_SH_RT),
	L("cudaLaunchKernelExC", RT, GL_SH_RT_EX),
	L("cudaLaunchKernelExC_ptsz", RT, GL_SH_RT_EX),
	L("cudaGraphLaunch", RT, GL_SH_GRAPH),
	L("cudaGraphLaunch_ptsz", RT, GL_SH_GRAPH),
	/* launches: driver */
	L("cuLaunchKernel", DRV, GL_SH_DRV),
	L("cuLaunchKernel_ptsz", DRV, GL_SH_DRV),
	L("cuLaunchCooperativeKernel", DRV, GL_SH_DRV),
	L("cuLaunchCooperativeKernel_ptsz", DRV, GL_SH_DRV),
	L("cuLaunchKernelEx", DRV, GL_SH_DRV_EX),
	L("cuLaunchKernelEx_ptsz", DRV, GL_SH_DRV_EX),
	L("cuGraphLaunch", DRV, GL_SH_GRAPH),
	L("cuGraphLaunch_ptsz", DRV, GL_SH_GRAPH),
	/* names */
	NM("__cudaRegisterFunction", RT, GL_SH_REGISTER),
	NM("__cudaGetKernel", RT, GL_SH_GETKERNEL),
	NM("cuModuleGetFunction", DRV, GL_SH_GETFUNC),
	NM("cuLibraryGetKernel", DRV, GL_SH_GETFUNC),
	NM("cuKernelGetFunction", DRV, GL_SH_KFUNC),
	/* --mem */
	AL("cudaMalloc", RT), AL("cudaMallocAsync", RT), AL("cudaMallocAsync_ptsz", RT),
	AL("cudaMallocManaged", RT),
	AL("cuMemAlloc_v2", DRV), AL("cuMemAllocAsync", DRV), AL("cuMemAllocAsync_ptsz", DRV),
	AL("cuMemAllocManaged", DRV),
	FR("cudaFree", RT), FR("cudaFreeAsync", RT), FR("cudaFreeAsync_ptsz", RT),
	FR("cuMemFree_v2", DRV), FR("cuMemFreeAsync", DRV), FR("cuMemFreeAsync_ptsz", DRV),
	/* --mem: stream-ordered allocations from a pool */
	AL("cudaMallocFromPoolAsync", RT), AL("cudaMallocFromPoolAsync_ptsz", RT),
	AL("cuMemAllocFromPoolAsync", DRV), AL("cuMemAllocFromPoolAsync_ptsz", DRV),
	/* --mem: pitched and 3D device allocations (pitch x rows bytes) */
	ALP("cudaMallocPitch", RT, GL_POOL_DEVICE, GL_SH_PITCH),
	ALP("cuMemAllocPitch_v2", DRV, GL_POOL_DEVICE, GL_SH_PITCH),
	ALP("cudaMalloc3D", RT, GL_POOL_DEVICE, GL_SH_3D),
	/* --mem: pinned host memory */
	ALP("cudaMallocHost", RT, GL_POOL_PINNED, GL_SH_ALLOC),
	ALP("cudaHostAlloc", RT, GL_POOL_PINNED, GL_SH_ALLOC),
	ALP("cuMemHostAlloc", DRV, GL_POOL_PINNED, GL_SH_ALLOC),
	ALP("cuMemAllocHost_v2", DRV, GL_POOL_PINNED, GL_SH_ALLOC),
	FRP("cudaFreeHost", RT, GL_POOL_PINNED), FRP("cuMemFreeHost", DRV, GL_POOL_PINNED),
	/* --mem: the driver's virtual memory management (PyTorch's
	 * expandable segments): physical handles, their mappings, and the
	 * address ranges reserved for them */
	ALP("cuMemCreate", DRV, GL_POOL_VMM_PHYS, GL_SH_ALLOC),
	FRP("cuMemRelease", DRV, GL_POOL_VMM_PHYS),
	ALP("cuMemMap", DRV, GL_POOL_VMM_MAP, GL_SH_MAP),
	FRP("cuMemUnmap", DRV, GL_POOL_VMM_MAP),
	ALP("cuMemAddressReserve", DRV, GL_POOL_VMM_VA, GL_SH_ALLOC),
	FRP("cuMemAddressFree", DRV, GL_POOL_VMM_VA),
	CPR("cudaMemcpy"), CPR("cudaMemcpy_ptds"), CPR("cudaMemcpyAsync"),
	CPR("cudaMemcpyAsync_ptsz"),
	CPD("cuMemcpyHtoD_v2", GL_H2D), CPD("cuMemcpyHtoD_v2_ptds", GL_H2D),
	CPD("cuMemcpyDtoH_v2", GL_D2H), CPD("cuMemcpyDtoH_v2_ptds", GL_D2H),
	CPD("cuMemcpyDtoD_v2", GL_D2D), CPD("cuMemcpyDtoD_v2_ptds", GL_D2D),
	CPD("cuMemcpyHtoDAsync_v2", GL_H2D), CPD("cuMemcpyHtoDAsync_v2_ptsz", GL_H2D),
	CPD("cuMemcpyDtoHAsync_v2", GL_D2H), CPD("cuMemcpyDtoHAsync_v2_ptsz", GL_D2H),
	CPD("cuMemcpyDtoDAsync_v2", GL_D2D), CPD("cuMemcpyDtoDAsync_v2_ptsz", GL_D2D),
	CPD("cuMemcpy", GL_DEFAULT), CPD("cuMemcpy_ptds", GL_DEFAULT),
	CPD("cuMemcpyAsync", GL_DEFAULT), CPD("cuMemcpyAsync_ptsz", GL_DEFAULT),
	/* 2D, 3D, peer and symbol copies */
	CPS("cudaMemcpy2D", RT, GL_SH_COPY_2D, 0), CPS("cudaMemcpy2D_ptds", RT, GL_SH_COPY_2D, 0),
	CPS("cudaMemcpy2DAsync", RT, GL_SH_COPY_2D, 0),
	CPS("cudaMemcpy2DAsync_ptsz", RT, GL_SH_COPY_2D, 0),
	CPS("cudaMemcpy2DToArray", RT, GL_SH_COPY_2D_ARRAY, 0),
	CPS("cudaMemcpy2DToArray_ptds", RT, GL_SH_COPY_2D_ARRAY, 0),
	CPS("cudaMemcpy2DToArrayAsync", RT, GL_SH_COPY_2D_ARRAY, 0),
	CPS("cudaMemcpy2DToArrayAsync_ptsz", RT, GL_SH_COPY_2D_ARRAY, 0),
	CPS("cudaMemcpy2DFromArray", RT, GL_SH_COPY_2D_ARRAY, 0),
	CPS("cudaMemcpy2DFromArray_ptds", RT, GL_SH_COPY_2D_ARRAY, 0),
	CPS("cudaMemcpy2DFromArrayAsync", RT, GL_SH_COPY_2D_ARRAY, 0),
	CPS("cudaMemcpy2DFromArrayAsync_ptsz", RT, GL_SH_COPY_2D_ARRAY, 0),
	CPS("cudaMemcpy3D", RT, GL_SH_COPY_3D, 0), CPS("cudaMemcpy3D_ptds", RT, GL_SH_COPY_3D, 0),
	CPS("cudaMemcpy3DAsync", RT, GL_SH_COPY_3D, 0),
	CPS("cudaMemcpy3DAsync_ptsz", RT, GL_SH_COPY_3D, 0),
	CPS("cudaMemcpy3DPeer", RT, GL_SH_COPY_3D_PEER, 0),
	CPS("cudaMemcpy3DPeer_ptds", RT, GL_SH_COPY_3D_PEER, 0),
	CPS("cudaMemcpy3DPeerAsync", RT, GL_SH_COPY_3D_PEER, 0),
	CPS("cudaMemcpy3DPeerAsync_ptsz", RT, GL_SH_COPY_3D_PEER, 0),
	/* between arrays, and batches (CUDA 12.8+; the driver's v1 exports
	 * take a failIdx after the arguments read) */
	CPS("cudaMemcpyArrayToArray", RT, GL_SH_COPY_A2A, 0),
	CPS("cudaMemcpyArrayToArray_ptds", RT, GL_SH_COPY_A2A, 0),
	CPS("cudaMemcpy2DArrayToArray", RT, GL_SH_COPY_A2A, GL_A2A_2D),
	CPS("cudaMemcpy2DArrayToArray_ptds", RT, GL_SH_COPY_A2A, GL_A2A_2D),
	CPS("cudaMemcpyBatchAsync", RT, GL_SH_COPY_BATCH, 0),
	CPS("cudaMemcpyBatchAsync_ptsz", RT, GL_SH_COPY_BATCH, 0),
	CPS("cudaMemcpy3DBatchAsync", RT, GL_SH_COPY_BATCH, GL_BATCH_3D),
	CPS("cudaMemcpy3DBatchAsync_ptsz", RT, GL_SH_COPY_BATCH, GL_BATCH_3D),
	CPS("cuMemcpyBatchAsync", DRV, GL_SH_COPY_BATCH, 0),
	CPS("cuMemcpyBatchAsync_ptsz", DRV, GL_SH_COPY_BATCH, 0),
	CPS("cuMemcpyBatchAsync_v2", DRV, GL_SH_COPY_BATCH, 0),
	CPS("cuMemcpyBatchAsync_v2_ptsz", DRV, GL_SH_COPY_BATCH, 0),
	CPS("cuMemcpy3DBatchAsync", DRV, GL_SH_COPY_BATCH, GL_BATCH_3D),
	CPS("cuMemcpy3DBatchAsync_ptsz", DRV, GL_SH_COPY_BATCH, GL_BATCH_3D),
	CPS("cuMemcpy3DBatchAsync_v2", DRV, GL_SH_COPY_BATCH, GL_BATCH_3D),
	CPS("cuMemcpy3DBatchAsync_v2_ptsz", DRV, GL_SH_COPY_BATCH, GL_BATCH_3D),
	CPS("cudaMemcpyPeer", RT, GL_SH_COPY_PEER, 0),
	CPS("cudaMemcpyPeerAsync", RT, GL_SH_COPY_PEER, 0),
	CPS("cuMemcpyPeer", DRV, GL_SH_COPY_PEER, 0), CPS("cuMemcpyPeer_ptds", DRV, GL_SH_COPY_PEER, 0),
	CPS("cuMemcpyPeerAsync", DRV, GL_SH_COPY_PEER, 0),
	CPS("cuMemcpyPeerAsync_ptsz", DRV, GL_SH_COPY_PEER, 0),
	CPS("cuMemcpy2D_v2", DRV, GL_SH_COPY_DRV_2D, 0),
	CPS("cuMemcpy2D_v2_ptds", DRV, GL_SH_COPY_DRV_2D, 0),
	CPS("cuMemcpy2DUnaligned_v2", DRV, GL_SH_COPY_DRV_2D, 0),
	CPS("cuMemcpy2DUnaligned_v2_ptds", DRV, GL_SH_COPY_DRV_2D, 0),
	CPS("cuMemcpy2DAsync_v2", DRV, GL_SH_COPY_DRV_2D, 0),
	CPS("cuMemcpy2DAsync_v2_ptsz", DRV, GL_SH_COPY_DRV_2D, 0),
	CPS("cuMemcpy3D_v2", DRV, GL_SH_COPY_DRV_3D, 0),
	CPS("cuMemcpy3D_v2_ptds", DRV, GL_SH_COPY_DRV_3D, 0),
	CPS("cuMemcpy3DAsync_v2", DRV, GL_SH_COPY_DRV_3D, 0),
	CPS("cuMemcpy3DAsync_v2_ptsz", DRV, GL_SH_COPY_DRV_3D, 0),
	CPS("cuMemcpy3DPeer", DRV, GL_SH_COPY_DRV_3D_PEER, 0),
	CPS("cuMemcpy3DPeer_ptds", DRV, GL_SH_COPY_DRV_3D_PEER, 0),
	CPS("cuMemcpy3DPeerAsync", DRV, GL_SH_COPY_DRV_3D_PEER, 0),
	CPS("cuMemcpy3DPeerAsync_ptsz", DRV, GL_SH_COPY_DRV_3D_PEER, 0),
	CPS("cudaMemcpyToSymbol", RT, GL_SH_COPY_SYMBOL, 0),
	CPS("cudaMemcpyToSymbol_ptds", RT, GL_SH_COPY_SYMBOL, 0),
	CPS("cudaMemcpyToSymbolAsync", RT, GL_SH_COPY_SYMBOL, 0),
	CPS("cudaMemcpyToSymbolAsync_ptsz", RT, GL_SH_COPY_SYMBOL, 0),
	CPS("cudaMemcpyFromSymbol", RT, GL_SH_COPY_SYMBOL, 0),
	CPS("cudaMemcpyFromSymbol_ptds", RT, GL_SH_COPY_SYMBOL, 0),
	CPS("cudaMemcpyFromSymbolAsync", RT, GL_SH_COPY_SYMBOL, 0),
	CPS("cudaMemcpyFromSymbolAsync_ptsz", RT, GL_SH_COPY_SYMBOL, 0),
	/* memsets */
	MSR("cudaMemset", GL_SH_MEMSET), MSR("cudaMemset_ptds", GL_SH_MEMSET),
	MSR("cudaMemsetAsync", GL_SH_MEMSET), MSR("cudaMemsetAsync_ptsz", GL_SH_MEMSET),
	MSR("cudaMemset2D", GL_SH_MEMSET_2D), MSR("cudaMemset2D_ptds", GL_SH_MEMSET_2D),
	MSR("cudaMemset2DAsync", GL_SH_MEMSET_2D), MSR("cudaMemset2DAsync_ptsz", GL_SH_MEMSET_2D),
	MSR("cudaMemset3D", GL_SH_MEMSET_3D), MSR("cudaMemset3D_ptds", GL_SH_MEMSET_3D),
	MSR("cudaMemset3DAsync", GL_SH_MEMSET_3D), MSR("cudaMemset3DAsync_ptsz", GL_SH_MEMSET_3D),
	CPS("cuMemsetD8_v2", DRV, GL_SH_MEMSET, 0), CPS("cuMemsetD8_v2_ptds", DRV, GL_SH_MEMSET, 0),
	CPS("cuMemsetD16_v2", DRV, GL_SH_MEMSET, 1), CPS("cuMemsetD16_v2_ptds", DRV, GL_SH_MEMSET, 1),
	CPS("cuMemsetD32_v2", DRV, GL_SH_MEMSET, 2), CPS("cuMemsetD32_v2_ptds", DRV, GL_SH_MEMSET, 2),
	CPS("cuMemsetD8Async", DRV, GL_SH_MEMSET, 0), CPS("cuMemsetD8Async_ptsz", DRV, GL_SH_MEMSET, 0),
	CPS("cuMemsetD16Async", DRV, GL_SH_MEMSET, 1),
	CPS("cuMemsetD16Async_ptsz", DRV, GL_SH_MEMSET, 1),
	CPS("cuMemsetD32Async", DRV, GL_SH_MEMSET, 2),
	CPS("cuMemsetD32Async_ptsz", DRV, GL_SH_MEMSET, 2),
	CPS("cuMemsetD2D8_v2", DRV, GL_SH_MEMSET_2D, 0),
	CPS("cuMemsetD2D8_v2_ptds", DRV, GL_SH_MEMSET_2D, 0),
	CPS("cuMemsetD2D16_v2", DRV, GL_SH_MEMSET_2D, 1),
	CPS("cuMemsetD2D16_v2_ptds", DRV, GL_SH_MEMSET_2D, 1),
	CPS("cuMemsetD2D32_v2", DRV, GL_SH_MEMSET_2D, 2),
	CPS("cuMemsetD2D32_v2_ptds", DRV, GL_SH_MEMSET_2D, 2),
	CPS("cuMemsetD2D8Async", DRV, GL_SH_MEMSET_2D, 0),
	CPS("cuMemsetD2D8Async_ptsz", DRV, GL_SH_MEMSET_2D, 0),
	CPS("cuMemsetD2D16Async", DRV, GL_SH_MEMSET_2D, 1),
	CPS("cuMemsetD2D16Async_ptsz", DRV, GL_SH_MEMSET_2D, 1),
	CPS("cuMemsetD2D32Async", DRV, GL_SH_MEMSET_2D, 2),
	CPS("cuMemsetD2D32Async_ptsz", DRV, GL_SH_MEMSET_2D, 2),
	SY("cudaStreamSynchronize", RT), SY("cudaStreamSynchronize_ptsz", RT),
	SY("cudaDeviceSynchronize", RT), SY("cudaEventSynchronize", RT),
	SY("cuStreamSynchronize", DRV), SY("cuStreamSynchronize_ptsz", DRV),
	SY("cuCtxSynchronize", DRV), SY("cuEventSynchronize", DRV),
	/* graphs: made, given kernel nodes and child graphs, cloned,
	 * captured from streams, instantiated */
	GR("cudaGraphCreate", RT, GL_SH_G_CREATE), GR("cuGraphCreate", DRV, GL_SH_G_CREATE),
	GR("cudaGraphAddKernelNode", RT, GL_SH_G_KNODE),
	GR("cuGraphAddKernelNode", DRV, GL_SH_G_KNODE),
	GR("cuGraphAddKernelNode_v2", DRV, GL_SH_G_KNODE),
	GR("cudaGraphAddNode", RT, GL_SH_G_NODE), GR("cudaGraphAddNode_v2", RT, GL_SH_G_NODE),
	GR("cuGraphAddNode", DRV, GL_SH_G_NODE), GR("cuGraphAddNode_v2", DRV, GL_SH_G_NODE),
	GR("cudaGraphAddChildGraphNode", RT, GL_SH_G_CHILD),
	GR("cuGraphAddChildGraphNode", DRV, GL_SH_G_CHILD),
	GR("cudaGraphClone", RT, GL_SH_G_CLONE), GR("cuGraphClone", DRV, GL_SH_G_CLONE),
	GR("cudaStreamBeginCapture", RT, GL_SH_G_BEGIN),
	GR("cudaStreamBeginCapture_ptsz", RT, GL_SH_G_BEGIN),
	GR("cuStreamBeginCapture", DRV, GL_SH_G_BEGIN),
	GR("cuStreamBeginCapture_ptsz", DRV, GL_SH_G_BEGIN),
	GR("cuStreamBeginCapture_v2", DRV, GL_SH_G_BEGIN),
	GR("cuStreamBeginCapture_v2_ptsz", DRV, GL_SH_G_BEGIN),
	GR("cudaStreamBeginCaptureToGraph", RT, GL_SH_G_BEGIN_TO),
	GR("cudaStreamBeginCaptureToGraph_ptsz", RT, GL_SH_G_BEGIN_TO),
	GR("cuStreamBeginCaptureToGraph", DRV, GL_SH_G_BEGIN_TO),
	GR("cuStreamBeginCaptureToGraph_ptsz", DRV, GL_SH_G_BEGIN_TO),
	GR("cudaStreamEndCapture", RT, GL_SH_G_END),
	GR("cudaStreamEndCapture_ptsz", RT, GL_SH_G_END),
	GR("cuStreamEndCapture", DRV, GL_SH_G_END), GR("cuStreamEndCapture_ptsz", DRV, GL_SH_G_END),
	GR("cudaGraphInstantiate", RT, GL_SH_G_INST),
	GR("cudaGraphInstantiateWithFlags", RT, GL_SH_G_INST),
	GR("cudaGraphInstantiateWithParams", RT, GL_SH_G_INST),
	GR("cudaGraphInstantiateWithParams_ptsz", RT, GL_SH_G_INST),
	GR("cuGraphInstantiate", DRV, GL_SH_G_INST), GR("cuGraphInstantiate_v2", DRV, GL_SH_G_INST),
	GR("cuGraphInstantiateWithFlags", DRV, GL_SH_G_INST),
	GR("cuGraphInstantiateWithParams", DRV, GL_SH_G_INST),
	GR("cuGraphInstantiateWithParams_ptsz", DRV, GL_SH_G_INST),
	/* streams joining a capture: an event recorded on a capturing stream,
	 * waited for on another */
	JN("cudaEventRecord", RT, GL_SH_J_RECORD), JN("cudaEventRecord_ptsz", RT, GL_SH_J_RECORD),
	JN("cudaEventRecordWithFlags", RT, GL_SH_J_RECORD),
	JN("cudaEventRecordWithFlags_ptsz", RT, GL_SH_J_RECORD),
	JN("cuEventRecord", DRV, GL_SH_J_RECORD), JN("cuEventRecord_ptsz", DRV, GL_SH_J_RECORD),
	JN("cuEventRecordWithFlags", DRV, GL_SH_J_RECORD),
	JN("cuEventRecordWithFlags_ptsz", DRV, GL_SH_J_RECORD),
	JN("cudaStreamWaitEvent", RT, GL_SH_J_WAIT), JN("cudaStreamWaitEvent_ptsz", RT, GL_SH_J_WAIT),
	JN("cuStreamWaitEvent", DRV, GL_SH_J_WAIT), JN("cuStreamWaitEvent_ptsz", DRV, GL_SH_J_WAIT),
};

/* the cookie has 8 bits for the API's index */
_Static_assert(ARRAY_SIZE(apis) <= 256, "too many APIs for GL_API");

enum lib_kind { K_RUNTIME, K_DRIVER, K_EXE, K_USER };

static const char *const kind_names[] = { "runtime", "driver", "executable", "library" };

/* copy directions (cudaMemcpyKind, then peer copies) as metric labels,
 * and with them memsets, as the JSON keys' stem */
static const char *const kind_keys[GL_NKINDS] = {
	"h2h", "h2d", "d2h", "d2d", "default", "peer", "memset",
};

static const char *kind_stem(int k, char *buf, size_t len)
{
	if (k == GL_MEMSET)
		return "memset";
	snprintf(buf, len, "copy_%s", kind_keys[k]);
	return buf;
}

/* each pool's JSON keys: <alloc>_calls, <alloc>_bytes, <alloc>_failures,
 * <free>_calls, <free>_bytes, <free>_unknown and its bytes outstanding */
static const struct {
	const char *alloc, *free, *outstanding;
} pool_keys[GL_NPOOLS] = {
	[GL_POOL_DEVICE] = { "alloc", "free", "outstanding_bytes" },
	[GL_POOL_PINNED] = { "pinned_alloc", "pinned_free", "pinned_outstanding_bytes" },
	[GL_POOL_VMM_PHYS] = { "vmm_create", "vmm_release", "vmm_outstanding_bytes" },
	[GL_POOL_VMM_MAP] = { "vmm_map", "vmm_unmap", "vmm_mapped_bytes" },
	[GL_POOL_VMM_VA] = { "vmm_reserve", "vmm_address_free", "vmm_reserved_bytes" },
};

/* ---- state ---- */

/* a kernel's name where the name table is full: demangled names of
 * templates run to hundreds of bytes */
#define KNAME_SPILL 1024

struct row {
	struct gl_key key;
	struct gl_stats st;
	struct gl_lat lat;
	bool has_lat;
	struct hist h;
	const char *name;	/* from the name cache, or own_name */
	char *own_name;		/* the name while the cache is full (rare) */
	struct container_info ci;
	uint64_t graph;		/* a kernel of this graph exec's launches; 0: launched itself */
	uint64_t graph_launches;	/* that graph's launches */
	bool expanded;		/* a graph launch's row, replaced by its kernels' */
	bool lat_copy;		/* its latency is the graph launch's, counted by a sibling */
};

struct mem_prev {
	uint32_t pid;
	struct gl_mem m;
	bool dead;
};

struct name_ent {
	struct name_ent *next;
	uint32_t pid, src;
	uint64_t addr, alias;
	char *name;		/* NULL: alias only */
};

#define NAME_BUCKETS 4096

static struct {
	struct gpulaunch_bpf *skel;
	struct aiscope_bpf bpf;
	struct aiscope_loop loop;
	struct jw jw;
	struct uprobe_set set;
	struct uprobe_scanner scanner;
	struct elf_cache *elf;
	bool with_ret;
	bool addr_map;		/* APIs told by address: no attach cookies */
	struct row *rows;
	size_t nrows, cap;
	struct mem_prev *mem;
	size_t nmem, mcap;
	struct name_ent *names[NAME_BUCKETS];
	size_t nnames;
	/* totals */
	uint64_t launches, errors, returns, events;
	/* kernels named by ELF symbols whose process was gone before its
	 * maps were read: "[unknown]", counted once each */
	uint64_t names_unread;
	/* registration and lookup names (and handle aliases) not kept: the
	 * table was full */
	uint64_t names_dropped;
	/* CUDA graphs: the model of each process's graphs; graph launches,
	 * those whose kernels were not known (instantiated before gpulaunch
	 * saw the graph made) and those known in part */
	struct cg_store *graphs;
	uint64_t graph_launches, graph_launches_unknown, graph_launches_partial;
	size_t max_names;
	int probes, libs_seen;
} S;

/* ---- names ---- */

static unsigned int name_hash(uint32_t pid, uint32_t src, uint64_t addr)
{
	uint64_t h = addr * 0x9e3779b97f4a7c15ULL ^ ((uint64_t)pid << 8 | src);

	return (unsigned int)(h >> 40) % NAME_BUCKETS;
}

static struct name_ent *name_find(uint32_t pid, uint32_t src, uint64_t addr)
{
	struct name_ent *e = S.names[name_hash(pid, src, addr)];

	for (; e; e = e->next)
		if (e->pid == pid && e->src == src && e->addr == addr)
			return e;
	return NULL;
}

/* The symbols of the files kernel names are looked up in, kept for the
 * next lookups: at most 32 MiB of them (least recently used dropped and
 * read again when needed), within the unit's MemoryMax with the rest. */
#define ELF_CACHE_BYTES (32U << 20)

/* At most this many names are kept; past it, names of processes that
 * exited go first (prune at rescan), then new names are dropped (counted
 * in names_dropped where they were data; kernel_name's own cache entries
 * only cost a lookup again). AISCOPE_TEST_MAX_NAMES sets it for tests. */
#define MAX_NAMES 262144

static void names_cap_init(void)
{
	const char *v = getenv("AISCOPE_TEST_MAX_NAMES");

	S.max_names = v && *v ? strtoul(v, NULL, 10) : MAX_NAMES;
}

/* false: not kept, the table being full (or no memory) */
static bool name_put(uint32_t pid, uint32_t src, uint64_t addr, uint64_t alias, const char *name)
{
	struct name_ent *e = name_find(pid, src, addr);
	unsigned int b;

	if (e) {
		e->alias = alias;
		if (name) {
			free(e->name);
			e->name = strdup(name);
		}
		return true;
	}
	if (S.nnames >= S.max_names)
		return false;
	e = calloc(1, sizeof(*e));
	if (!e)
		return false;
	e->pid = pid;
	e->src = src;
	e->addr = addr;
	e->alias = alias;
	e->name = name ? strdup(name) : NULL;
	b = name_hash(pid, src, addr);
	e->next = S.names[b];
	S.names[b] = e;
	S.nnames++;
	return true;
}

static bool pid_alive(uint32_t pid)
{
	return !kill((pid_t)pid, 0) || errno != ESRCH;
}

static void names_prune(void)
{
	for (int b = 0; b < NAME_BUCKETS; b++) {
		struct name_ent **pp = &S.names[b];

		while (*pp) {
			struct name_ent *e = *pp;

			if (pid_alive(e->pid)) {
				pp = &e->next;
				continue;
			}
			*pp = e->next;
			free(e->name);
			free(e);
			S.nnames--;
		}
	}
}

static void names_free(void)
{
	for (int b = 0; b < NAME_BUCKETS; b++) {
		while (S.names[b]) {
			struct name_ent *e = S.names[b];

			S.names[b] = e->next;
			free(e->name);
			free(e);
		}
	}
}

/* A string of another process, read through /proc/PID/mem. */
static int read_remote_str(uint32_t pid, uint64_t addr, char *buf, size_t len)
{
	char fn[64];
	ssize_t n;
	int fd;

	snprintf(fn, sizeof(fn), "/proc/%u/mem", pid);
	fd = open(fn, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = pread(fd, buf, len - 1, (off_t)addr);
	close(fd);
	if (n <= 0)
		return -EFAULT;
	buf[n] = 0;
	return strnlen(buf, n) < (size_t)n || n == (ssize_t)len - 1 ? 0 : -EFAULT;
}

static void on_name(const struct gl_name_ev *ev)
{
	char buf[GL_NAME_LEN];
	const char *name = NULL;

	if (ev->name_ok) {
		snprintf(buf, sizeof(buf), "%.*s", (int)sizeof(ev->name), ev->name);
		name = buf;
	} else if (ev->name_ptr && !read_remote_str(ev->pid, ev->name_ptr, buf, sizeof(buf)) &&
		   buf[0]) {
		name = buf;
	}
	switch (ev->src) {
	case GL_SRC_REGISTER:
	case GL_SRC_GETFUNC:
		if (name && !name_put(ev->pid, ev->src, ev->addr, 0, name))
			S.names_dropped++;
		break;
	case GL_SRC_GETKERNEL:
	case GL_SRC_KFUNC:
		if (!name_put(ev->pid, ev->src, ev->addr, ev->alias, NULL))
			S.names_dropped++;
		break;
	}
}

static const char *named(uint32_t pid, uint32_t src, uint64_t addr)
{
	struct name_ent *e = name_find(pid, src, addr);

	return e ? e->name : NULL;
}

/*
 * The kernel's name, in preference order: registration (runtime hostFun,
 * through CUDA 13's handle map), driver lookups (CUfunction, through
 * cuKernelGetFunction), ELF symbols of the address, module+offset. The
 * result is cached as a name entry of source 100 + layer so that it
 * survives the process; while the table is full it is copied to spill
 * (KNAME_SPILL bytes), which the caller keeps as long as the name.
 */
static const char *kernel_name(uint32_t pid, uint8_t layer, uint32_t api, uint64_t func,
			       char *spill)
{
	uint32_t cache_src = 100 + layer;
	const char *raw = NULL;
	struct name_ent *e;
	char buf[512], *dm;
	int r;

	if (apis[api].shape == GL_SH_GRAPH && apis[api].cls == GL_LAUNCH)
		return "[graph]";
	e = name_find(pid, cache_src, func);
	if (e && e->name)
		return e->name;
	if (layer == GL_RUNTIME) {
		struct name_ent *h = name_find(pid, GL_SRC_GETKERNEL, func);
		uint64_t host = h ? h->alias : func;

		raw = named(pid, GL_SRC_REGISTER, host);
		if (!raw) {
			r = uprobe_addr_name(S.elf, pid, host, buf, sizeof(buf));
			if (r == 1 || r == 0)
				raw = buf;
			/* the process exited before its first launch of this
			 * kernel was read: the name is lost, counted once (the
			 * [unknown] kept answers the next lookups; with the
			 * table full each lookup counts, never none) */
			if (r == -ESRCH) {
				S.names_unread++;
				name_put(pid, cache_src, func, 0, "[unknown]");
			}
		}
	} else {
		struct name_ent *k = name_find(pid, GL_SRC_KFUNC, func);

		raw = named(pid, GL_SRC_GETFUNC, func);
		if (!raw && k)
			raw = named(pid, GL_SRC_GETFUNC, k->alias);
	}
	if (!raw)
		return layer == GL_RUNTIME ? "[unknown]" : "[unnamed CUfunction]";
	dm = cfg.mangled ? NULL : demangle(raw);
	if (!name_put(pid, cache_src, func, 0, dm ? dm : raw)) {
		/* a longer (demangled) name is cut there */
		size_t n = strnlen(dm ? dm : raw, KNAME_SPILL - 1);

		memcpy(spill, dm ? dm : raw, n);
		spill[n] = 0;
	}
	free(dm);
	e = name_find(pid, cache_src, func);
	return e && e->name ? e->name : spill;
}

/* ---- discovery and attaching ---- */

/* libcudart.so.13, libcudart-80664282.so.10.2, libcuda.so.1; -1 else */
static int kind_of(const char *path)
{
	char base[64];

	uprobe_basename(path, base, sizeof(base));
	if (str_has_prefix(base, "libcudart") && strstr(base, ".so") &&
	    (base[9] == '.' || base[9] == '-'))
		return K_RUNTIME;
	if (!strcmp(base, "libcuda.so.1") || !strcmp(base, "libcuda.so"))
		return K_DRIVER;
	return -1;
}

static int classify(const struct proc_map *m, void *ctx)
{
	int kind = kind_of(m->path);

	/* --lib: those files only (they are in the set already) */
	if (cfg.nlibs)
		return -1;
	/* an executable with a static runtime: its symbols decide */
	if (kind < 0 && m->main_exe)
		return K_EXE;
	return kind;
}

/* The loader cache's libcuda.so.1 and libcudart: attached at start, so
 * that processes started later are traced from their first call. */
static int ldcache_cb(const char *soname, const char *path, void *ctx)
{
	int kind = kind_of(soname);

	if (kind >= 0 && !access(path, R_OK))
		uprobe_scan_add_path(&S.scanner, path, kind);
	return 0;
}

static bool api_wanted(const struct api *a)
{
	return a->need == N_ALWAYS || cfg.mem;
}

/* A launch shape's two programs: with bpf_find_vma, and the address
 * map's variant without it (_am). */
static struct bpf_program **launch_progs(int shape)
{
	static struct bpf_program *p[2];
	struct gpulaunch_bpf *k = S.skel;

	switch (shape) {
	case GL_SH_RT: p[0] = k->progs.launch_rt; p[1] = k->progs.launch_rt_am; break;
	case GL_SH_RT_EX: p[0] = k->progs.launch_rt_ex; p[1] = k->progs.launch_rt_ex_am; break;
	case GL_SH_DRV: p[0] = k->progs.launch_drv; p[1] = k->progs.launch_drv_am; break;
	case GL_SH_DRV_EX: p[0] = k->progs.launch_drv_ex; p[1] = k->progs.launch_drv_ex_am; break;
	default: p[0] = k->progs.launch_graph; p[1] = k->progs.launch_graph_am; break;
	}
	return p;
}

static struct bpf_program *entry_prog(const struct api *a)
{
	struct gpulaunch_bpf *k = S.skel;

	switch (a->cls) {
	case GL_LAUNCH:
		return S.addr_map ? launch_progs(a->shape)[1] : launch_progs(a->shape)[0];
	case GL_ALLOC: return k->progs.mem_alloc;
	case GL_FREE: return k->progs.mem_free;
	case GL_COPY: return k->progs.mem_copy;
	case GL_SYNC: return k->progs.sync_entry;
	case GL_GRAPH: return k->progs.graph_entry;
	case GL_JOIN: return k->progs.graph_join;
	default:
		if (a->shape == GL_SH_REGISTER)
			return feat_sleepable_uprobe() ? k->progs.name_register_s :
							 k->progs.name_register;
		return k->progs.name_lookup;
	}
}

static struct bpf_program *ret_prog(const struct api *a)
{
	struct gpulaunch_bpf *k = S.skel;

	switch (a->cls) {
	case GL_LAUNCH: return S.with_ret ? k->progs.launch_ret : NULL;
	case GL_ALLOC: return k->progs.mem_alloc_ret;
	case GL_FREE: return k->progs.mem_free_ret;
	case GL_COPY: return k->progs.mem_copy_ret;
	case GL_SYNC: return k->progs.sync_ret;
	case GL_GRAPH: return k->progs.graph_ret;
	case GL_JOIN: return NULL;
	default: return a->shape == GL_SH_REGISTER ? NULL : k->progs.name_lookup_ret;
	}
}

/* uprobe_lib.tool_flags */
#define TF_RUNTIME	0x1	/* runtime launch probes attached */
#define TF_RT_INODE	0x2	/* its inode in map rt_inodes */
#define TF_OFFS		0x4	/* its probed offsets in map api_offs */

static struct gl_inode lib_inode(const struct uprobe_lib *lib)
{
	return (struct gl_inode){ .ino = lib->ino, .dev = kernel_dev(lib->dev) };
}

/* the address map's entries of a library's probed offsets */
static void offs_release(struct uprobe_lib *lib)
{
	struct gl_off_key k = { .f = lib_inode(lib) };
	uint64_t off;

	for (size_t i = 0; lib->syms && i < ARRAY_SIZE(apis); i++) {
		if (elf_syms_offset(lib->syms, apis[i].sym, &off))
			continue;
		k.off = off;
		bpf_map_delete_elem(bpf_map__fd(S.skel->maps.api_offs), &k);
	}
}

/* A library leaves the set (no process maps it now): its rt_inodes entry
 * goes too, or a churn of CUDA runtimes (each job its own copy) would fill
 * the map's 256 for good. */
static void release_lib(struct uprobe_lib *lib, void *ctx)
{
	struct gl_inode k = {
		.ino = lib->ino,
		.dev = kernel_dev(lib->dev),
	};

	if (lib->tool_flags & TF_RT_INODE && S.skel)
		bpf_map_delete_elem(bpf_map__fd(S.skel->maps.rt_inodes), &k);
	if (lib->tool_flags & TF_OFFS && S.skel)
		offs_release(lib);
}

/* the runtime code ranges of the process being scanned (map rt_text) */
static struct {
	struct gl_text t;
	int n;
	struct gl_maps maps;	/* addr_map: the probed files' code */
} scan_text;

static void scan_begin(pid_t pid, void *ctx)
{
	memset(&scan_text, 0, sizeof(scan_text));
}

/* The runtime's code in this mapping: all of it for a libcudart, the
 * static runtime's part (tool_range, file offsets) in another file. */
static void scan_map(pid_t pid, const struct proc_map *m, struct uprobe_lib *lib, void *ctx)
{
	uint64_t lo = m->pgoff, hi = m->pgoff + (m->end - m->start);
	struct gl_maps *am = &scan_text.maps;

	/* a ninth mapping of probed code: its calls count as unscanned */
	if (lib->tool_flags & TF_OFFS && m->exec && am->n < GL_MAPS_MAX)
		am->m[am->n++] = (struct gl_map){ .start = m->start, .end = m->end,
						  .pgoff = m->pgoff, .f = lib_inode(lib) };
	if (!(lib->tool_flags & TF_RUNTIME) || !m->exec || scan_text.n == GL_TEXT_MAX)
		return;
	if (lib->tool_range[1]) {
		lo = lo > lib->tool_range[0] ? lo : lib->tool_range[0];
		hi = hi < lib->tool_range[1] ? hi : lib->tool_range[1];
		if (lo >= hi)
			return;
	}
	scan_text.t.start[scan_text.n] = m->start + (lo - m->pgoff);
	scan_text.t.end[scan_text.n] = m->start + (hi - m->pgoff);
	scan_text.n++;
}

/* Where the probed files' code is in this process, for addr_cookie(); a
 * failed update leaves its calls counted as unscanned. */
static void proc_maps_put(pid_t pid)
{
	int fd = bpf_map__fd(S.skel->maps.proc_maps);
	uint32_t key = pid;

	if (!scan_text.maps.n)
		bpf_map_delete_elem(fd, &key);
	else if (bpf_map_update_elem(fd, &key, &scan_text.maps, BPF_ANY))
		S.scanner.failed++;
}

static void scan_end(pid_t pid, int err, void *ctx)
{
	int fd = bpf_map__fd(S.skel->maps.rt_text);
	uint32_t key = pid;

	if (err)
		return;
	if (!scan_text.n)
		bpf_map_delete_elem(fd, &key);
	else if (bpf_map_update_elem(fd, &key, &scan_text.t, BPF_ANY))
		S.scanner.failed++;
	/* after rt_text: a process in proc_maps is one whose runtime code
	 * ranges are known (in_runtime_text() trusts a missing entry) */
	if (S.addr_map)
		proc_maps_put(pid);
}

/*
 * A static runtime inside another file (nvcc links it into executables by
 * default): only its own code makes a driver launch nested, not the
 * program's direct driver calls. Its functions are cuda*, __cuda*,
 * cudart::* and __cudart*, placed together by the linker.
 */
static void runtime_span(struct uprobe_lib *lib)
{
	static const char *const prefixes[] = { "cuda", "__cuda", "_ZN6cudart", "__cudart", NULL };
	char base[64];

	uprobe_basename(lib->path, base, sizeof(base));
	if (kind_of(base) == K_RUNTIME)
		return;
	if (elf_syms_span(lib->syms, prefixes, 32, &lib->tool_range[0], &lib->tool_range[1]) < 0)
		lib->tool_range[0] = lib->tool_range[1] = 0;
}

/* the uprobe_multi links of the probes attach_lib noted */
static void flush_lib(struct uprobe_lib *lib)
{
	int err, failed = uprobe_lib_flush(lib, &err);

	if (!failed)
		return;
	S.scanner.failed += failed;
	if (env.verbose)
		fprintf(stderr, "%s: cannot attach %d probes in %s: %s\n", TOOL, failed, lib->path,
			strerror(-err));
}

/* addr_map: the cookie of the probe at this file offset */
static int offs_put(struct uprobe_lib *lib, uint64_t off, uint64_t cookie)
{
	struct gl_off_key k = { .f = lib_inode(lib), .off = off };

	if (bpf_map_update_elem(bpf_map__fd(S.skel->maps.api_offs), &k, &cookie, BPF_ANY))
		return -errno;
	lib->tool_flags |= TF_OFFS;
	return 0;
}

static void attach_lib(struct uprobe_lib *lib, void *ctx)
{
	uint64_t offs[ARRAY_SIZE(apis)];
	int noffs = 0, found = 0;

	if (!elf_syms_native(lib->syms))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(apis); i++) {
		const struct api *a = &apis[i];
		uint64_t cookie = GL_COOKIE(i, a->cls, a->layer, a->kind, a->shape), off;

		if (str_has_prefix(a->sym, "__cudaLaunchKernel"))
			cookie |= GL_TAIL_SRC;
		else if (str_has_prefix(a->sym, "cudaLaunchKernel") && a->shape == GL_SH_RT)
			cookie |= GL_TAIL_DST;
		struct bpf_program *rp;
		bool dup = false;
		int err;

		if (elf_syms_offset(lib->syms, a->sym, &off))
			continue;
		found++;
		if (!api_wanted(a))
			continue;
		/* two exported names at one address are one function */
		for (int j = 0; j < noffs; j++)
			dup |= offs[j] == off;
		if (dup)
			continue;
		offs[noffs++] = off;
		/* no cookie at all for the address map: libbpf refuses one where
		 * the kernel cannot take it (5.10: no perf_event BPF links) */
		err = uprobe_lib_attach_cookie(lib, entry_prog(a), off, false, -1,
					       S.addr_map ? 0 : cookie);
		if (!err && S.addr_map)
			err = offs_put(lib, off, cookie);
		if (!err && a->cls == GL_LAUNCH && a->layer == GL_RUNTIME &&
		    !(lib->tool_flags & TF_RUNTIME)) {
			struct gl_inode k = {
				.ino = lib->ino,
				.dev = kernel_dev(lib->dev),
			};
			struct gl_span span = { 0, ~0ULL };

			lib->tool_flags |= TF_RUNTIME;
			runtime_span(lib);
			if (lib->tool_range[1]) {
				span.lo = lib->tool_range[0];
				span.hi = lib->tool_range[1];
			}
			/* full (256 runtimes mapped at once): a driver launch
			 * of a process not scanned yet would not be told
			 * nested; counted */
			if (bpf_map_update_elem(bpf_map__fd(S.skel->maps.rt_inodes), &k, &span,
						BPF_ANY))
				S.scanner.failed++;
			else
				lib->tool_flags |= TF_RT_INODE;
		}
		rp = err ? NULL : ret_prog(a);
		if (!err && rp)
			err = uprobe_lib_attach_cookie(lib, rp, off, true, -1,
						       S.addr_map ? 0 : cookie);
		if (err) {
			S.scanner.failed++;
			if (env.verbose)
				fprintf(stderr, "%s: cannot attach %s in %s: %s\n", TOOL, a->sym,
					lib->path, strerror(-err));
		}
	}
	flush_lib(lib);
	S.probes += lib->attached;
	S.libs_seen += found > 0;
	/* no CUDA symbol: kept in the set only so that it is not read again */
	if (!found)
		uprobe_lib_drop_syms(lib);
	if (env.verbose && (found || lib->kind != K_EXE))
		fprintf(stderr, "%s: %s %s: %d symbols, %d probes\n", TOOL, kind_names[lib->kind],
			lib->path, found, lib->attached);
}

/* A capture's stream out of BPF's table: one that had joined it (when BPF
 * did not drop it itself: more than GL_JOINED_MAX joined), or one of a
 * process that exited while capturing (then the count of captures open
 * goes down with it). Only while it still belongs to that capture. */
static void capture_forget(uint32_t pid, uint64_t stream, bool origin, void *ctx)
{
	const uint64_t *of = ctx;
	struct gl_cap_key k = { .handle = stream, .pid = pid };
	int fd = bpf_map__fd(S.skel->maps.captures);
	uint64_t cur;

	if (bpf_map_lookup_elem(fd, &k, &cur) || (of && cur != *of))
		return;
	if (!bpf_map_delete_elem(fd, &k) && origin)
		__atomic_fetch_sub(&S.skel->bss->capturing, 1, __ATOMIC_SEQ_CST);
}

static void unjoin(uint32_t pid, uint64_t stream, void *ctx)
{
	capture_forget(pid, stream, false, ctx);
}

/* the events recorded on a capture's streams, once it ended (origin) or
 * its process is gone (origin 0): BPF's table would keep them */
struct ev_sweep {
	uint32_t pid;
	uint64_t origin;
	struct gl_cap_key *keys;
	size_t n, cap;
};

static void ev_sweep_visit(const void *key, const void *value, void *ctx)
{
	const struct gl_cap_key *k = key;
	struct ev_sweep *w = ctx;

	if (w->origin ? k->pid != w->pid || *(const uint64_t *)value != w->origin :
			pid_alive(k->pid))
		return;
	w->keys = aiscope_grow(w->keys, &w->cap, w->n, sizeof(*w->keys));
	w->keys[w->n++] = *k;
}

static void cap_events_sweep(uint32_t pid, uint64_t origin)
{
	int fd = bpf_map__fd(S.skel->maps.cap_events);
	struct ev_sweep w = { .pid = pid, .origin = origin };

	map_walk(fd, sizeof(struct gl_cap_key), sizeof(uint64_t), ev_sweep_visit, &w);
	for (size_t i = 0; i < w.n; i++)
		bpf_map_delete_elem(fd, &w.keys[i]);
	free(w.keys);
}

static void rescan(void)
{
	names_prune();
	cg_prune(S.graphs, pid_alive, capture_forget, NULL);
	cap_events_sweep(0, 0);
	uprobe_scan_all(&S.scanner, env.pids, env.npids);
}

/* --list-probes: the symbols of each file found, and the loader hook */
static void plan_mech_line(struct jw *w, uint64_t now, const char *hook, const char *mech,
			   const char *target, const char *status, const char *why)
{
	char safe[PATH_MAX + 64];

	if (w) {
		jw_record_begin(w, "probe", TOOL, now);
		jw_kstr(w, "hook", hook);
		jw_kbool(w, "optional", true);
		jw_kstr(w, "mechanism", mech);
		jw_kstr(w, "target", target);
		jw_kstr(w, "status", status);
		jw_kstr(w, "reason", why);
		jw_knull(w, "symbol");
		jw_record_end(w);
		return;
	}
	/* a library path is any file name a process mapped */
	printf("%-22s %-11s %-34s %s%s%s\n", hook, mech, text_safe(safe, sizeof(safe), target),
	       status, why ? ": " : "", why ? why : "");
}

static void plan_line(struct jw *w, uint64_t now, const char *hook, const char *target,
		      const char *status, const char *why)
{
	plan_mech_line(w, now, hook, "uprobe", target, status, why);
}

static void list_uprobes(struct jw *w)
{
	uint64_t now = aiscope_now_realtime();
	char ldso[256], target[PATH_MAX + 64];
	int files = 0;

	/* how a program shared by many symbols tells which API fired */
	if (S.addr_map)
		plan_mech_line(w, now, "api", "address-map", "proc_maps+api_offs", "chosen",
			       "no bpf_get_attach_cookie or bpf_find_vma in uprobes here: "
			       "the probed address says the API");
	else
		plan_mech_line(w, now, "api", "cookie", "bpf_get_attach_cookie", "chosen", NULL);
	if (!cfg.nlibs && !uprobe_ldso_path(getpid(), ldso, sizeof(ldso))) {
		snprintf(target, sizeof(target), "%s:_dl_debug_state", ldso);
		plan_line(w, now, "dlopen", target, "chosen", NULL);
	}
	for (int l = 0; l < S.set.n; l++) {
		struct uprobe_lib *lib = S.set.libs[l];
		int found = 0;

		/* symbols dropped: attach_lib found none */
		for (size_t i = 0; lib->syms && i < ARRAY_SIZE(apis); i++) {
			const struct api *a = &apis[i];

			if (!elf_syms_has(lib->syms, a->sym))
				continue;
			found++;
			snprintf(target, sizeof(target), "%s:%s", lib->path, a->sym);
			plan_line(w, now, kind_names[lib->kind], target,
				  api_wanted(a) ? "chosen" : "available",
				  api_wanted(a) ? uprobe_link_kind() : "needs --mem");
		}
		if (!found && lib->kind != K_EXE)
			plan_line(w, now, kind_names[lib->kind], lib->path, "unavailable",
				  "no CUDA symbol in this file");
		files += found > 0;
	}
	if (!files && !cfg.nlibs)
		plan_line(w, now, "cuda", "-", "unavailable",
			  "no CUDA library mapped now; new ones are found at run time");
}

static void list_probes(void)
{
	struct jw w;

	jw_init(&w, stdout);
	probe_resolve(hooks, ARRAY_SIZE(hooks), features_ops(), env.probe_mask);
	probe_print_plan(stdout, hooks, ARRAY_SIZE(hooks), env.json ? &w : NULL, TOOL,
			 aiscope_now_realtime());
	/* symbols only: nothing is attached */
	for (int i = 0; i < cfg.nlibs; i++) {
		bool created;

		int kind = kind_of(cfg.libs[i]);

		uprobe_set_add(&S.set, cfg.libs[i], cfg.libs[i], kind < 0 ? K_USER : kind,
			       &created);
	}
	if (!cfg.nlibs) {
		uprobe_ldcache_foreach(NULL, ldcache_cb, NULL);
		uprobe_scan_all(&S.scanner, env.pids, env.npids);
	}
	list_uprobes(env.json ? &w : NULL);
	fflush(stdout);
	exit(0);
}

/* ---- Prometheus metrics: by cgroup; launches by layer, copies by
 * direction; the interval's deltas, as the JSON samples say them ---- */

AISCOPE_METRIC_LABELS(layer_labels, AISCOPE_CGROUP_LABEL_NAMES, "layer", NULL);
AISCOPE_METRIC_LABELS(dir_labels, AISCOPE_CGROUP_LABEL_NAMES, "direction", NULL);
AISCOPE_METRIC_LABELS(no_labels, NULL);

/* a cgroup's allocations outstanding in each pool, summed over its processes */
struct outstanding {
	char *cgroup;
	int64_t bytes[GL_NPOOLS];
	bool seen;
};

static struct {
	struct prom_family *launches, *errors, *latency, *libs;
	struct prom_family *allocs, *alloc_fails, *alloc_bytes, *held[GL_NPOOLS];
	struct prom_family *copies, *copy_bytes, *memsets, *memset_bytes, *sync;
	struct outstanding *og;
	size_t nog;
} P;

static void metrics_init(void)
{
	if (!aiscope_metrics())
		return;
	P.launches = aiscope_metric_counter("aiscope_gpulaunch_launches_total",
		"CUDA kernel and graph launches (JSON launch samples' launches), by the process's cgroup and the API layer (runtime or driver, JSON layer).",
		layer_labels);
	if (cfg.latency) {
		P.errors = aiscope_metric_counter("aiscope_gpulaunch_launch_errors_total",
			"Launches that returned an error (JSON launch samples' errors).", layer_labels);
		P.latency = aiscope_metric_latency("aiscope_gpulaunch_launch_latency_seconds",
			"Time from entry to return of the launch calls, the CPU side (JSON latency_p50_ns and latency_p99_ns are its percentiles; _count is JSON returns).",
			layer_labels);
	}
	if (cfg.mem) {
		P.allocs = aiscope_metric_counter("aiscope_gpulaunch_allocations_total",
			"Device memory allocation calls, failed ones included (JSON mem samples' alloc_calls).",
			aiscope_cgroup_labels);
		P.alloc_fails = aiscope_metric_counter("aiscope_gpulaunch_allocation_failures_total",
			"Allocation calls that returned an error (JSON alloc_failures).",
			aiscope_cgroup_labels);
		P.alloc_bytes = aiscope_metric_counter("aiscope_gpulaunch_allocated_bytes_total",
			"Bytes of the allocations that succeeded (JSON alloc_bytes).", aiscope_cgroup_labels);
		P.held[GL_POOL_DEVICE] = aiscope_metric_gauge("aiscope_gpulaunch_outstanding_bytes",
			"Bytes allocated and not freed by the cgroup's processes at the last interval (JSON outstanding_bytes summed over the interval's mem samples).",
			aiscope_cgroup_labels);
		P.held[GL_POOL_PINNED] = aiscope_metric_gauge("aiscope_gpulaunch_pinned_outstanding_bytes",
			"Pinned host memory allocated and not freed, as aiscope_gpulaunch_outstanding_bytes (JSON pinned_outstanding_bytes).",
			aiscope_cgroup_labels);
		P.held[GL_POOL_VMM_PHYS] = aiscope_metric_gauge("aiscope_gpulaunch_vmm_outstanding_bytes",
			"Physical memory of the driver's virtual memory management created (cuMemCreate) and not released (JSON vmm_outstanding_bytes).",
			aiscope_cgroup_labels);
		P.held[GL_POOL_VMM_MAP] = aiscope_metric_gauge("aiscope_gpulaunch_vmm_mapped_bytes",
			"Of it, bytes mapped (cuMemMap) and not unmapped (JSON vmm_mapped_bytes).",
			aiscope_cgroup_labels);
		P.held[GL_POOL_VMM_VA] = aiscope_metric_gauge("aiscope_gpulaunch_vmm_reserved_bytes",
			"Address ranges reserved (cuMemAddressReserve) and not freed (JSON vmm_reserved_bytes).",
			aiscope_cgroup_labels);
		P.memsets = aiscope_metric_counter("aiscope_gpulaunch_memsets_total",
			"memset calls (JSON memset_calls).", aiscope_cgroup_labels);
		P.memset_bytes = aiscope_metric_counter("aiscope_gpulaunch_memset_bytes_total",
			"Bytes set by memsets (JSON memset_bytes).", aiscope_cgroup_labels);
		P.copies = aiscope_metric_counter("aiscope_gpulaunch_copies_total",
			"memcpy calls (1D, 2D, 3D, peer and symbol copies) by direction h2h, h2d, d2h, d2d, default or peer (JSON copy_<direction>_calls).",
			dir_labels);
		P.copy_bytes = aiscope_metric_counter("aiscope_gpulaunch_copied_bytes_total",
			"Bytes copied by direction h2h, h2d, d2h, d2d, default or peer (JSON copy_<direction>_bytes).",
			dir_labels);
		P.sync = aiscope_metric_latency("aiscope_gpulaunch_sync_wait_seconds",
			"Time spent in stream, device, context and event synchronize calls (_count is JSON sync_calls, _sum JSON sync_wait_ns).",
			aiscope_cgroup_labels);
	}
	P.libs = aiscope_metric_gauge("aiscope_gpulaunch_libraries",
		"Files probed for the CUDA runtime or driver API (JSON summary's libraries).", no_labels);
}

static void metrics_launch(const struct row *r)
{
	const char *vals[AISCOPE_CGROUP_NLABELS + 1];
	struct container_info ci;

	if (!P.launches)
		return;
	aiscope_cgroup_values(&r->st.ident, vals, &ci);
	vals[AISCOPE_CGROUP_NLABELS] = r->key.layer == GL_RUNTIME ? "runtime" : "driver";
	prom_counter_add(P.launches, vals, r->st.launches);
	if (P.errors)
		prom_counter_add(P.errors, vals, r->st.errors);
	/* a graph's launch calls once, not once per kernel of it */
	if (P.latency && r->has_lat && r->h.total && !r->lat_copy)
		prom_hist_add(P.latency, vals, &r->h);
}

static void metrics_libs(void)
{
	prom_gauge_set(P.libs, no_labels, S.libs_seen);
}

static struct outstanding *outstanding_of(const char *cgroup)
{
	struct outstanding *o;

	for (size_t i = 0; i < P.nog; i++)
		if (!strcmp(P.og[i].cgroup, cgroup))
			return &P.og[i];
	o = realloc(P.og, (P.nog + 1) * sizeof(*o));
	if (!o)
		return NULL;
	P.og = o;
	o = &P.og[P.nog];
	o->cgroup = strdup(cgroup);
	if (!o->cgroup)
		return NULL;
	memset(o->bytes, 0, sizeof(o->bytes));
	P.nog++;
	return o;
}

/* Each interval: every cgroup with a process in the mem map is set; one
 * none of whose processes is left reads 0 once, then is forgotten. */
static void outstanding_begin(void)
{
	for (size_t i = 0; i < P.nog; i++) {
		memset(P.og[i].bytes, 0, sizeof(P.og[i].bytes));
		P.og[i].seen = false;
	}
}

static void outstanding_add(const char *cgroup, const struct gl_mem *cur)
{
	struct outstanding *o = outstanding_of(cgroup);

	if (!o)
		return;
	for (int p = 0; p < GL_NPOOLS; p++)
		o->bytes[p] += cur->pool[p].outstanding;
	o->seen = true;
}

static void outstanding_end(void)
{
	const char *vals[AISCOPE_CGROUP_NLABELS];
	struct container_info ci;
	size_t j = 0;

	if (!P.held[GL_POOL_DEVICE])
		return;
	for (size_t i = 0; i < P.nog; i++) {
		aiscope_cgroup_path_values(P.og[i].cgroup[0] ? P.og[i].cgroup : NULL, vals, &ci);
		for (int p = 0; p < GL_NPOOLS; p++)
			prom_gauge_set(P.held[p], vals, (double)P.og[i].bytes[p]);
		if (!P.og[i].seen) {
			free(P.og[i].cgroup);
			continue;
		}
		P.og[j++] = P.og[i];
	}
	P.nog = j;
}

/* The BPF side's power-of-two buckets as a log-linear histogram: bucket k
 * (2^k to 2^(k+1) - 1 ns) goes to the bucket of 2^k, which lies under the
 * same Prometheus edges (2^j - 1), so every _bucket count stays exact. */
static void sync_hist(const struct gl_mem *d, struct hist *h)
{
	hist_reset(h);
	for (int k = 0; k < GL_SYNC_BUCKETS; k++) {
		h->counts[hist_bucket(1ULL << k)] += d->sync_log2[k];
		h->total += d->sync_log2[k];
	}
	h->sum = d->sync_ns;
}

/* d: the interval's part of the process's running totals cur */
static void metrics_mem(const struct gl_mem *d, const struct gl_mem *cur)
{
	const char *vals[AISCOPE_CGROUP_NLABELS + 1];
	struct container_info ci;
	struct hist h;

	if (!P.allocs)
		return;
	aiscope_cgroup_values(&cur->ident, vals, &ci);
	outstanding_add(vals[0], cur);
	prom_counter_add(P.allocs, vals, d->pool[GL_POOL_DEVICE].alloc_calls);
	prom_counter_add(P.alloc_fails, vals, d->pool[GL_POOL_DEVICE].alloc_fail);
	prom_counter_add(P.alloc_bytes, vals, d->pool[GL_POOL_DEVICE].alloc_bytes);
	if (d->sync_calls) {
		sync_hist(d, &h);
		prom_hist_add(P.sync, vals, &h);
	}
	prom_counter_add(P.memsets, vals, d->copy_calls[GL_MEMSET]);
	prom_counter_add(P.memset_bytes, vals, d->copy_bytes[GL_MEMSET]);
	/* memsets are not copies: no direction */
	for (int k = 0; k < GL_NKINDS; k++) {
		if (k == GL_MEMSET || (!d->copy_calls[k] && !d->copy_bytes[k]))
			continue;
		vals[AISCOPE_CGROUP_NLABELS] = kind_keys[k];
		prom_counter_add(P.copies, vals, d->copy_calls[k]);
		prom_counter_add(P.copy_bytes, vals, d->copy_bytes[k]);
	}
}

static void metrics_free(void)
{
	for (size_t i = 0; i < P.nog; i++)
		free(P.og[i].cgroup);
	free(P.og);
}

/* ---- intervals ---- */

static struct row *new_row(void)
{
	S.rows = aiscope_grow(S.rows, &S.cap, S.nrows, sizeof(*S.rows));
	memset(&S.rows[S.nrows], 0, sizeof(S.rows[0]));
	return &S.rows[S.nrows++];
}

/* rows are reused each interval: names they own go with them */
static void rows_reset(void)
{
	for (size_t i = 0; i < S.nrows; i++)
		free(S.rows[i].own_name);
	S.nrows = 0;
}

static bool graph_launch_api(uint32_t api)
{
	return api < ARRAY_SIZE(apis) && apis[api].cls == GL_LAUNCH &&
	       apis[api].shape == GL_SH_GRAPH;
}

/* the name of a row's kernel; a row whose name is not in the cache (full)
 * keeps its own copy */
static void row_name(struct row *r, uint32_t api)
{
	char spill[KNAME_SPILL];

	r->name = kernel_name(r->key.pid, r->key.layer, api, r->key.func, spill);
	if (r->name != spill)
		return;
	r->own_name = strdup(spill);
	r->name = r->own_name ? r->own_name : "[unknown]";
	if (!r->own_name)
		S.names_dropped++;
}

static bool in_epoch(const void *key, void *ctx)
{
	return ((const struct gl_key *)key)->epoch == *(uint32_t *)ctx;
}

static void take_stats(const void *key, const void *value, void *ctx)
{
	int lfd = bpf_map__fd(S.skel->maps.lat);
	struct row *r = new_row();

	r->key = *(const struct gl_key *)key;
	r->st = *(const struct gl_stats *)value;
	/* the latency entry of the key goes with it */
	if (cfg.latency && !bpf_map_lookup_elem(lfd, key, &r->lat)) {
		bpf_map_delete_elem(lfd, key);
		r->has_lat = true;
		hist_add_counts(&r->h, r->lat.hist, r->lat.sum, r->lat.max);
	}
	row_name(r, r->st.api);
	aiscope_ident_cgroup(&r->st.ident, &r->ci);
}

/* a kernel of graph row g's instance: g's launches (returns, errors) times
 * the kernel's count in it, with the node's configuration, and the graph
 * launch calls' latency (the first kernel's row carries it for the metrics) */
static void graph_row(size_t gi, const struct cg_node *n, bool first)
{
	struct row *r = new_row(), *g = &S.rows[gi];

	r->key = g->key;
	r->key.func = n->func;
	r->key.layer = n->layer;
	r->st = g->st;
	r->st.launches = g->st.launches * n->count;
	r->st.returns = g->st.returns * n->count;
	r->st.errors = g->st.errors * n->count;
	memcpy(r->st.grid, n->grid, sizeof(r->st.grid));
	memcpy(r->st.block, n->block, sizeof(r->st.block));
	r->st.smem = n->smem;
	r->ci = g->ci;
	r->graph = g->key.func;
	r->graph_launches = g->st.launches;
	r->lat = g->lat;
	r->has_lat = g->has_lat;
	r->h = g->h;
	r->lat_copy = !first;
	row_name(r, n->api);
}

/*
 * A graph launch's row becomes one row per kernel its instance runs; a
 * graph whose instance is not known (made before gpulaunch saw it) stays
 * one [graph] row, counted in graph_launches_unknown.
 */
static void expand_graphs(void)
{
	size_t n0 = S.nrows, keep = 0;

	for (size_t i = 0; i < n0; i++) {
		const struct cg_node *v;
		bool partial = false;
		size_t nn = 0;

		if (!graph_launch_api(S.rows[i].st.api))
			continue;
		S.graph_launches += S.rows[i].st.launches;
		v = cg_exec_nodes(S.graphs, S.rows[i].key.pid, S.rows[i].key.func, &nn, &partial);
		if (!v) {
			S.graph_launches_unknown += S.rows[i].st.launches;
			S.rows[i].graph = S.rows[i].key.func;
			S.rows[i].graph_launches = S.rows[i].st.launches;
			continue;
		}
		if (partial)
			S.graph_launches_partial += S.rows[i].st.launches;
		S.rows[i].expanded = true;
		for (size_t j = 0; j < nn; j++)
			graph_row(i, &v[j], j == 0);
	}
	for (size_t i = 0; i < S.nrows; i++) {
		if (S.rows[i].expanded) {
			free(S.rows[i].own_name);
			continue;
		}
		S.rows[keep++] = S.rows[i];
	}
	S.nrows = keep;
}

static void collect(void)
{
	uint32_t closed;

	/* graph events first: a graph launched in the interval was made
	 * and instantiated before it */
	ring_buffer__consume(S.bpf.rb);
	/* returns once no call still adds to the closed epoch's rows */
	closed = map_epoch_close(&S.skel->bss->epoch, NULL);
	rows_reset();
	map_drain(bpf_map__fd(S.skel->maps.stats), sizeof(struct gl_key),
		  sizeof(struct gl_stats), in_epoch, take_stats, &closed);
	expand_graphs();
	for (size_t i = 0; i < S.nrows; i++) {
		const struct row *r = &S.rows[i];

		metrics_launch(r);
		S.launches += r->st.launches;
		S.errors += r->st.errors;
		S.returns += r->st.returns;
	}
}

static uint64_t sort_value(const struct row *r)
{
	switch (cfg.sort[0]) {
	case 'e': return r->st.errors;
	case 'p': return hist_percentile(&r->h, 99);
	case 's': return r->st.smem;
	default: return r->st.launches;
	}
}

static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	uint64_t va = sort_value(x), vb = sort_value(y);

	return cmp_u64(vb, va) ?: cmp_u64(x->key.pid, y->key.pid) ?: strcmp(x->name, y->name);
}

static void json_dim3(struct jw *w, const char *key, const uint32_t *d)
{
	jw_key(w, key);
	jw_arr_begin(w);
	for (int i = 0; i < 3; i++)
		jw_u64(w, d[i]);
	jw_arr_end(w);
}

/* "graph": the graph exec a kernel was launched by, as a handle; null
 * for a kernel launched itself */
static void json_graph(struct jw *w, uint64_t graph)
{
	jw_key(w, "graph");
	if (graph)
		jw_hex(w, graph);
	else
		jw_null(w);
}

static double per_sec(uint64_t n, uint64_t interval)
{
	return interval ? n * 1e9 / interval : 0;
}

static void json_launch_row(const struct row *r, uint64_t now, uint64_t interval)
{
	struct jw *w = &S.jw;
	struct aiscope_ident id = r->st.ident;
	bool lat = r->has_lat && r->h.total;

	jw_record_begin(w, "sample", TOOL, now);
	jw_ku64(w, "seq", S.loop.ticks);
	jw_ku64(w, "interval_ns", interval);
	jw_kstr(w, "row", "launch");
	id.pid = r->key.pid;
	aiscope_ident_json(w, &id, false);
	jw_kstr(w, "kernel", r->name);
	jw_kstr(w, "api", apis[r->st.api].sym);
	jw_kstr(w, "layer", r->key.layer == GL_RUNTIME ? "runtime" : "driver");
	jw_ku64(w, "launches", r->st.launches);
	jw_kdouble(w, "launches_per_sec", per_sec(r->st.launches, interval), 1);
	json_dim3(w, "grid", r->st.grid);
	json_dim3(w, "block", r->st.block);
	jw_ku64(w, "shared_mem_bytes", r->st.smem);
	jw_key(w, "stream");
	jw_hex(w, r->st.stream);
	jw_ku64_or_null(w, "errors", S.with_ret, r->st.errors);
	jw_ku64_or_null(w, "returns", S.with_ret, r->st.returns);
	jw_ki64_or_null(w, "last_rc", S.with_ret && r->st.errors, (int32_t)r->st.last_rc);
	jw_ku64_or_null(w, "latency_p50_ns", lat, hist_percentile(&r->h, 50));
	jw_ku64_or_null(w, "latency_p99_ns", lat, hist_percentile(&r->h, 99));
	jw_ku64_or_null(w, "latency_max_ns", lat, r->h.max);
	json_graph(w, r->graph);
	jw_ku64_or_null(w, "graph_launches", r->graph, r->graph_launches);
	jw_record_end(w);
}

static const struct tcol cols_launch[] = {
	{ "TIME", 8, TC_LEFT }, { "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "CONTAINER", 12, TC_LEFT },
	{ "KERNEL", 40, TC_LEFT }, { "LAUNCHES/s", 10, 0 }, { "GRID", 14, TC_LEFT },
	{ "BLOCK", 12, TC_LEFT }, { "SMEM(B)", 8, 0 }, { "ERRORS", 6, 0 },
	{ "P50(us)", 8, 0 }, { "P99(us)", 8, 0 },
};

static void fmt_dim3(const uint32_t *d, char *buf, size_t len)
{
	snprintf(buf, len, "%u,%u,%u", d[0], d[1], d[2]);
}

static void table_launch_row(struct table *t, const struct row *r, const char *hms,
			     uint64_t interval)
{
	char g[40], b[40], ctr[16];

	if (env.timestamp)
		table_str(t, hms);
	table_u64(t, r->key.pid);
	table_str(t, r->st.ident.comm);
	table_str(t, aiscope_container_short(&r->ci, ctr));
	table_str(t, r->name);
	table_fixed(t, per_sec(r->st.launches, interval), 1);
	fmt_dim3(r->st.grid, g, sizeof(g));
	fmt_dim3(r->st.block, b, sizeof(b));
	table_str(t, g);
	table_str(t, b);
	table_u64(t, r->st.smem);
	table_u64_or_dash(t, S.with_ret, r->st.errors);
	if (cfg.latency) {
		table_fixed(t, hist_percentile(&r->h, 50) / 1e3, 1);
		table_fixed(t, hist_percentile(&r->h, 99) / 1e3, 1);
	}
	table_end_row(t);
}

/* ---- --mem ---- */

static struct mem_prev *mem_prev_of(uint32_t pid)
{
	for (size_t i = 0; i < S.nmem; i++)
		if (S.mem[i].pid == pid)
			return &S.mem[i];
	if (S.nmem == S.mcap) {
		size_t cap = S.mcap ? S.mcap * 2 : 16;
		struct mem_prev *n = realloc(S.mem, cap * sizeof(*n));

		if (!n)
			return NULL;
		S.mem = n;
		S.mcap = cap;
	}
	memset(&S.mem[S.nmem], 0, sizeof(S.mem[0]));
	S.mem[S.nmem].pid = pid;
	return &S.mem[S.nmem++];
}

struct mem_row {
	uint32_t pid;
	struct gl_mem cur, d;		/* running totals, this interval's part */
	struct hist h;			/* allocation latency, this interval */
};

static void mem_delta(const struct gl_mem *cur, const struct gl_mem *old, struct gl_mem *d)
{
	for (int p = 0; p < GL_NPOOLS; p++) {
		const struct gl_pool_stats *c = &cur->pool[p], *o = &old->pool[p];
		struct gl_pool_stats *x = &d->pool[p];

		x->alloc_calls = c->alloc_calls - o->alloc_calls;
		x->alloc_bytes = c->alloc_bytes - o->alloc_bytes;
		x->alloc_fail = c->alloc_fail - o->alloc_fail;
		x->free_calls = c->free_calls - o->free_calls;
		x->free_bytes = c->free_bytes - o->free_bytes;
		x->free_unknown = c->free_unknown - o->free_unknown;
		x->outstanding = c->outstanding;
	}
	for (int k = 0; k < GL_NKINDS; k++) {
		d->copy_calls[k] = cur->copy_calls[k] - old->copy_calls[k];
		d->copy_bytes[k] = cur->copy_bytes[k] - old->copy_bytes[k];
	}
	d->sync_calls = cur->sync_calls - old->sync_calls;
	d->sync_ns = cur->sync_ns - old->sync_ns;
	for (unsigned int b = 0; b < HIST_BUCKETS; b++)
		d->alloc_hist[b] = cur->alloc_hist[b] - old->alloc_hist[b];
	for (int b = 0; b < GL_SYNC_BUCKETS; b++)
		d->sync_log2[b] = cur->sync_log2[b] - old->sync_log2[b];
	d->alloc_lat_sum = cur->alloc_lat_sum - old->alloc_lat_sum;
	d->alloc_lat_max = cur->alloc_lat_max;
}

/* a pool's keys: the interval's calls and bytes, its bytes outstanding */
static void json_pool(struct jw *w, int p, const struct gl_pool_stats *d,
		      const struct gl_pool_stats *cur, const struct hist *lat)
{
	char key[48];

	snprintf(key, sizeof(key), "%s_calls", pool_keys[p].alloc);
	jw_ku64(w, key, d->alloc_calls);
	snprintf(key, sizeof(key), "%s_bytes", pool_keys[p].alloc);
	jw_ku64(w, key, d->alloc_bytes);
	snprintf(key, sizeof(key), "%s_failures", pool_keys[p].alloc);
	jw_ku64(w, key, d->alloc_fail);
	if (lat)
		jw_ku64_or_null(w, "alloc_p99_ns", lat->total, hist_percentile(lat, 99));
	snprintf(key, sizeof(key), "%s_calls", pool_keys[p].free);
	jw_ku64(w, key, d->free_calls);
	snprintf(key, sizeof(key), "%s_bytes", pool_keys[p].free);
	jw_ku64(w, key, d->free_bytes);
	snprintf(key, sizeof(key), "%s_unknown", pool_keys[p].free);
	jw_ku64(w, key, d->free_unknown);
	jw_ki64(w, pool_keys[p].outstanding, cur->outstanding);
}

static void json_mem_row(const struct mem_row *r, uint64_t now, uint64_t interval)
{
	struct jw *w = &S.jw;
	struct aiscope_ident id = r->cur.ident;
	char key[48], buf[24];
	const char *stem;

	jw_record_begin(w, "sample", TOOL, now);
	jw_ku64(w, "seq", S.loop.ticks);
	jw_ku64(w, "interval_ns", interval);
	jw_kstr(w, "row", "mem");
	id.pid = r->pid;
	aiscope_ident_json(w, &id, false);
	json_pool(w, GL_POOL_DEVICE, &r->d.pool[GL_POOL_DEVICE], &r->cur.pool[GL_POOL_DEVICE],
		  &r->h);
	for (int k = 0; k < GL_NKINDS; k++) {
		stem = kind_stem(k, buf, sizeof(buf));
		snprintf(key, sizeof(key), "%s_calls", stem);
		jw_ku64(w, key, r->d.copy_calls[k]);
		snprintf(key, sizeof(key), "%s_bytes", stem);
		jw_ku64(w, key, r->d.copy_bytes[k]);
	}
	jw_ku64(w, "sync_calls", r->d.sync_calls);
	jw_ku64(w, "sync_wait_ns", r->d.sync_ns);
	/* the other pools after the keys of the first schema */
	for (int p = GL_POOL_DEVICE + 1; p < GL_NPOOLS; p++)
		json_pool(w, p, &r->d.pool[p], &r->cur.pool[p], NULL);
	jw_record_end(w);
}

static const struct tcol cols_mem[] = {
	{ "TIME", 8, TC_LEFT }, { "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "CONTAINER", 12, TC_LEFT },
	{ "ALLOCS", 7, 0 },
	{ "ALLOC(B)", 12, 0 }, { "FAILS", 5, 0 }, { "ALLOC_P99(us)", 13, 0 }, { "FREES", 6, 0 },
	{ "OUTSTANDING(B)", 14, 0 }, { "PINNED(B)", 12, 0 }, { "VMM(B)", 12, 0 },
	{ "MAPPED(B)", 12, 0 }, { "H2D(B)", 12, 0 }, { "D2H(B)", 12, 0 },
	{ "D2D(B)", 12, 0 }, { "PEER(B)", 12, 0 }, { "MEMSET(B)", 12, 0 }, { "SYNCS", 6, 0 },
	{ "SYNC(ms)", 9, 0 },
};

static void table_bytes_held(struct table *t, int64_t v)
{
	table_u64(t, v > 0 ? (uint64_t)v : 0);
}

static void table_mem_row(struct table *t, const struct mem_row *r, const char *hms)
{
	const struct gl_pool_stats *dev = &r->d.pool[GL_POOL_DEVICE];
	char ctr[CONTAINER_ID_LEN + 1];

	if (env.timestamp)
		table_str(t, hms);
	table_u64(t, r->pid);
	table_str(t, r->cur.ident.comm);
	table_str(t, aiscope_ident_container_short(&r->cur.ident, ctr, sizeof(ctr)));
	table_u64(t, dev->alloc_calls);
	table_u64(t, dev->alloc_bytes);
	table_u64(t, dev->alloc_fail);
	table_fixed_or_dash(t, r->h.total, hist_percentile(&r->h, 99) / 1e3, 1);
	table_u64(t, dev->free_calls);
	table_bytes_held(t, r->cur.pool[GL_POOL_DEVICE].outstanding);
	table_bytes_held(t, r->cur.pool[GL_POOL_PINNED].outstanding);
	table_bytes_held(t, r->cur.pool[GL_POOL_VMM_PHYS].outstanding);
	table_bytes_held(t, r->cur.pool[GL_POOL_VMM_MAP].outstanding);
	table_u64(t, r->d.copy_bytes[GL_H2D]);
	table_u64(t, r->d.copy_bytes[GL_D2H]);
	table_u64(t, r->d.copy_bytes[GL_D2D]);
	table_u64(t, r->d.copy_bytes[GL_PEER]);
	table_u64(t, r->d.copy_bytes[GL_MEMSET]);
	table_u64(t, r->d.sync_calls);
	table_fixed(t, r->d.sync_ns / 1e6, 1);
	table_end_row(t);
}

/* Freed allocations of processes that exited: drop their keys. */
static bool alloc_of_gone(const void *key, void *ctx)
{
	return !pid_alive(((const struct gl_alloc_key *)key)->pid);
}

static void allocs_prune(void)
{
	struct bpf_map *m = S.skel->maps.allocs;

	map_drain(bpf_map__fd(m), sizeof(struct gl_alloc_key), bpf_map__value_size(m),
		  alloc_of_gone, NULL, NULL);
}

/* this interval's allocation rows, and the processes gone since */
struct mem_walk {
	struct mem_row *rows;
	size_t n, cap;
	uint32_t *gone;
	size_t ngone, gcap;
};

/* One process's running totals: this interval's part of them (a process
 * not yet seen has no baseline: no row). */
static void mem_visit(const void *key, const void *value, void *ctx)
{
	uint32_t pid = *(const uint32_t *)key;
	struct mem_prev *old = mem_prev_of(pid);
	struct mem_walk *w = ctx;
	struct mem_row *r;

	if (!old)
		return;
	w->rows = aiscope_grow(w->rows, &w->cap, w->n, sizeof(*w->rows));
	r = &w->rows[w->n++];
	memset(r, 0, sizeof(*r));
	r->pid = pid;
	memcpy(&r->cur, value, sizeof(r->cur));
	mem_delta(&r->cur, &old->m, &r->d);
	hist_add_counts(&r->h, r->d.alloc_hist, r->d.alloc_lat_sum, r->d.alloc_lat_max);
	old->m = r->cur;
	metrics_mem(&r->d, &r->cur);
	if (!pid_alive(pid)) {
		w->gone = aiscope_grow(w->gone, &w->gcap, w->ngone, sizeof(*w->gone));
		w->gone[w->ngone++] = pid;
	}
}

static void print_mem(uint64_t now, uint64_t interval, const char *hms)
{
	int fd = bpf_map__fd(S.skel->maps.mem);
	struct mem_walk w = { 0 };
	struct table t;

	outstanding_begin();
	map_walk(fd, sizeof(uint32_t), sizeof(struct gl_mem), mem_visit, &w);
	outstanding_end();
	if (env.json) {
		for (size_t i = 0; i < w.n; i++)
			json_mem_row(&w.rows[i], now, interval);
	} else {
		printf("\n");
		table_init_time(&t, stdout, cols_mem, ARRAY_SIZE(cols_mem), env.timestamp,
				env.tty && !env.wide);
		table_header(&t);
		for (size_t i = 0; i < w.n; i++)
			table_mem_row(&t, &w.rows[i], hms);
	}
	/* a process that exited was reported one last time */
	for (size_t i = 0; i < w.ngone; i++) {
		bpf_map_delete_elem(fd, &w.gone[i]);
		for (size_t j = 0; j < S.nmem; j++)
			if (S.mem[j].pid == w.gone[i])
				S.mem[j] = S.mem[--S.nmem];
	}
	if (w.ngone)
		allocs_prune();
	free(w.gone);
	free(w.rows);
}

static void print_interval(uint64_t interval)
{
	uint64_t now = aiscope_now_realtime();
	size_t shown = table_shown(S.nrows, env.rows);
	int ncols = ARRAY_SIZE(cols_launch) - (cfg.latency ? 0 : 2);
	char hms[16];
	struct table t;

	sort_array(S.rows, S.nrows, sizeof(*S.rows), cmp_rows);
	fmt_hms(now, hms, sizeof(hms));
	if (env.json) {
		for (size_t i = 0; i < shown; i++)
			json_launch_row(&S.rows[i], now, interval);
	} else {
		table_block_begin(stdout, env.tty && !env.noclear, now, interval, TOOL);
		table_init_time(&t, stdout, cols_launch, ncols, env.timestamp, env.tty && !env.wide);
		table_header(&t);
		for (size_t i = 0; i < shown; i++)
			table_launch_row(&t, &S.rows[i], hms, interval);
		table_more(stdout, shown, S.nrows);
	}
	if (cfg.mem)
		print_mem(now, interval, hms);
	if (P.libs)
		metrics_libs();
}

static int on_tick(void *ctx)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	int ret = 0;

	if (!cfg.events) {
		collect();
		print_interval(aiscope_loop_interval(&S.loop));
		fflush(stdout);
		if (env.count && S.loop.ticks >= env.count)
			ret = AISCOPE_STOP;
	}
	/* after the interval: names of processes that exited in it are
	 * still needed there */
	if (uprobe_rescan_due(&S.scanner, now))
		rescan();
	return ret;
}

/* the interval cut short still counts */
static int on_final(void *ctx)
{
	ring_buffer__consume(S.bpf.rb);
	collect();
	print_interval(aiscope_loop_interval(&S.loop));
	return 0;
}

/* ---- -e: one event per launch ---- */

static const struct tcol cols_event[] = {
	{ "TIME", 8, TC_LEFT }, { "PID", 7, 0 }, { "TID", 7, 0 }, { "COMM", 15, TC_LEFT },
	{ "API", 24, TC_LEFT }, { "KERNEL", 40, TC_LEFT }, { "GRID", 14, TC_LEFT },
	{ "BLOCK", 12, TC_LEFT }, { "SMEM(B)", 8, 0 }, { "STREAM", 14, TC_LEFT }, { "RC", 4, 0 },
	{ "LAT(us)", 9, 0 },
};

/* graph: the graph exec whose launch made this kernel launch (0: none),
 * node_api: then the call that put the kernel in the graph */
static void print_launch_event(const struct gl_launch_ev *e, uint64_t graph, uint32_t node_api)
{
	uint64_t rt = aiscope_realtime(e->ts);
	char spill[KNAME_SPILL];
	const char *name = kernel_name(e->ident.pid, e->layer, graph ? node_api : e->api, e->func,
				       spill);
	char hms[16], g[40], b[40], s[24];
	struct table t;

	if (env.json) {
		struct jw *w = &S.jw;

		jw_record_begin(w, "event", TOOL, rt);
		jw_kstr(w, "event", "launch");
		aiscope_ident_json(w, &e->ident, true);
		jw_kstr(w, "api", apis[e->api].sym);
		jw_kstr(w, "layer", e->layer == GL_RUNTIME ? "runtime" : "driver");
		jw_kstr(w, "kernel", name);
		json_dim3(w, "grid", e->grid);
		json_dim3(w, "block", e->block);
		jw_ku64(w, "shared_mem_bytes", e->smem);
		jw_key(w, "stream");
		jw_hex(w, e->stream);
		jw_ki64_or_null(w, "rc", e->has_rc, e->rc);
		jw_ku64_or_null(w, "latency_ns", e->has_latency, e->latency_ns);
		json_graph(w, graph);
		jw_record_end(w);
		return;
	}
	table_init_time(&t, stdout, cols_event, ARRAY_SIZE(cols_event) - !cfg.latency,
			env.timestamp, env.tty && !env.wide);
	if (env.timestamp) {
		fmt_hms(rt, hms, sizeof(hms));
		table_str(&t, hms);
	}
	table_u64(&t, e->ident.pid);
	table_u64(&t, e->ident.tid);
	table_str(&t, e->ident.comm);
	table_str(&t, apis[e->api].sym);
	table_str(&t, name);
	fmt_dim3(e->grid, g, sizeof(g));
	fmt_dim3(e->block, b, sizeof(b));
	table_str(&t, g);
	table_str(&t, b);
	table_u64(&t, e->smem);
	snprintf(s, sizeof(s), "0x%" PRIx64, (uint64_t)e->stream);
	table_str(&t, s);
	if (e->has_rc) {
		snprintf(s, sizeof(s), "%d", e->rc);
		table_str(&t, s);
	} else {
		table_str(&t, "-");
	}
	if (cfg.latency)
		table_fixed(&t, e->latency_ns / 1e3, 1);
	table_end_row(&t);
}

/* ---- CUDA graphs: the model, from the graph probes' events ---- */

static void on_graph(const struct gl_graph_ev *ev)
{
	struct cg_node n = {
		.func = ev->func, .api = ev->api, .smem = ev->smem, .layer = ev->layer,
	};
	char spill[KNAME_SPILL];

	if (ev->api >= ARRAY_SIZE(apis))
		return;
	memcpy(n.grid, ev->grid, sizeof(n.grid));
	memcpy(n.block, ev->block, sizeof(n.block));
	switch (ev->op) {
	case GL_G_CREATE:
		cg_create(S.graphs, ev->pid, ev->graph);
		break;
	case GL_G_NODE:
		cg_node(S.graphs, ev->pid, ev->graph, &n);
		/* named now, while the process is there */
		kernel_name(ev->pid, ev->layer, ev->api, ev->func, spill);
		break;
	case GL_G_CHILD:
		cg_child(S.graphs, ev->pid, ev->graph, ev->aux);
		break;
	case GL_G_CLONE:
		cg_clone(S.graphs, ev->pid, ev->graph, ev->aux);
		break;
	case GL_G_BEGIN:
		cg_begin(S.graphs, ev->pid, ev->aux, ev->graph);
		break;
	case GL_G_CAPTURED:
		if (graph_launch_api(ev->api)) {
			cg_captured_exec(S.graphs, ev->pid, ev->aux, ev->func);
			break;
		}
		cg_captured(S.graphs, ev->pid, ev->aux, &n);
		kernel_name(ev->pid, ev->layer, ev->api, ev->func, spill);
		break;
	case GL_G_JOIN:
		cg_join(S.graphs, ev->pid, ev->aux, ev->func);
		break;
	case GL_G_END:
		cg_end(S.graphs, ev->pid, ev->aux, ev->graph, unjoin, (void *)&ev->aux);
		cap_events_sweep(ev->pid, ev->aux);
		break;
	case GL_G_INST:
		cg_instantiate(S.graphs, ev->pid, ev->graph, ev->aux);
		break;
	}
}

/* -e: a graph launch is an event per kernel launch it makes (its graph
 * named); one whose instance is not known stays one [graph] event */
static uint64_t graph_launch_events(const struct gl_launch_ev *e)
{
	struct gl_launch_ev k = *e;
	const struct cg_node *v;
	bool partial = false;
	uint64_t printed = 0;
	size_t nn = 0;

	S.graph_launches++;
	v = cg_exec_nodes(S.graphs, e->ident.pid, e->func, &nn, &partial);
	if (!v) {
		S.graph_launches_unknown++;
		print_launch_event(e, 0, 0);
		return 1;
	}
	if (partial)
		S.graph_launches_partial++;
	for (size_t i = 0; i < nn; i++) {
		k.func = v[i].func;
		k.layer = v[i].layer;
		memcpy(k.grid, v[i].grid, sizeof(k.grid));
		memcpy(k.block, v[i].block, sizeof(k.block));
		k.smem = v[i].smem;
		for (uint64_t c = 0; c < v[i].count; c++, printed++)
			print_launch_event(&k, e->func, v[i].api);
	}
	return printed;
}

static int on_event(void *ctx, void *data, size_t len)
{
	const struct gl_launch_ev *e = data;

	if (len < sizeof(uint32_t))
		return 0;
	if (e->type == GL_EV_NAME) {
		if (len >= sizeof(struct gl_name_ev))
			on_name(data);
		return 0;
	}
	if (e->type == GL_EV_SEEN) {
		const struct gl_seen_ev *s = data;

		char spill[KNAME_SPILL];

		if (len >= sizeof(*s) && s->api < ARRAY_SIZE(apis))
			kernel_name(s->pid, s->layer, s->api, s->func, spill);
		return 0;
	}
	if (e->type == GL_EV_GRAPH) {
		if (len >= sizeof(struct gl_graph_ev))
			on_graph(data);
		return 0;
	}
	if (e->type != GL_EV_LAUNCH || len < sizeof(*e) || e->api >= ARRAY_SIZE(apis))
		return 0;
	if (graph_launch_api(e->api)) {
		uint64_t n = graph_launch_events(e);

		S.events += n;
		S.launches += n;
		if (e->has_rc && e->rc)
			S.errors += n;
	} else {
		S.events++;
		S.launches++;
		if (e->has_rc && e->rc)
			S.errors++;
		print_launch_event(e, 0, 0);
	}
	if (env.count && S.events >= env.count)
		return aiscope_loop_stop(&S.loop, AISCOPE_EXIT_COUNT);
	return 0;
}

/* ---- summary ---- */

/* addr_map: calls whose API was unknown (a process or file not scanned
 * yet), not counted */
static uint64_t unscanned(void)
{
	return S.skel->bss->unscanned_calls;
}

/* copies of batch calls whose sizes were not read (mem_copy) */
static uint64_t batch_unread(void)
{
	return S.skel->bss->batch_copies_unread;
}

#define STR_(x) #x
#define STR(x) STR_(x)
#define BATCH_UNREAD_TEXT \
	" copies of batch calls not counted in bytes: past " STR(GL_BATCH_MAX) " in one call, or unreadable"
#define NAMES_UNREAD_TEXT " kernels [unknown]: their process exited before its maps were read"
#define NAMES_DROPPED_TEXT " kernel names not kept: the name table was full"

/* what the graph model could not tell, on its own line */
static void graph_losses_line(void)
{
	if (S.graph_launches_unknown)
		fprintf(stderr, "%s: %llu graph launches of graphs made before gpulaunch started: "
			"counted as [graph], their kernels not known\n", TOOL,
			(unsigned long long)S.graph_launches_unknown);
	if (S.graph_launches_partial)
		fprintf(stderr, "%s: %llu graph launches of graphs known in part (changed before "
			"gpulaunch started, or nodes not kept)\n", TOOL,
			(unsigned long long)S.graph_launches_partial);
	if (cg_dropped(S.graphs))
		fprintf(stderr, "%s: %llu graph kernel nodes not kept: the graph table was full\n",
			TOOL, (unsigned long long)cg_dropped(S.graphs));
}

static void print_summary(void)
{
	if (env.json) {
		aiscope_summary_begin(&S.jw, &S.bpf, &S.loop, cfg.events ? S.events : S.launches);
		jw_ku64(&S.jw, "launches", S.launches);
		jw_ku64_or_null(&S.jw, "errors", S.with_ret, S.errors);
		jw_ku64(&S.jw, "libraries", S.libs_seen);
		jw_ku64(&S.jw, "uprobes", S.probes);
		jw_ku64(&S.jw, "attach_failures", S.scanner.failed);
		jw_ku64_or_null(&S.jw, "unscanned_calls", S.addr_map, unscanned());
		jw_ku64(&S.jw, "names_unread", S.names_unread);
		jw_ku64(&S.jw, "names_dropped", S.names_dropped);
		jw_ku64(&S.jw, "batch_copies_unread", batch_unread());
		jw_ku64(&S.jw, "graph_launches", S.graph_launches);
		jw_ku64(&S.jw, "graph_launches_unknown", S.graph_launches_unknown);
		jw_ku64(&S.jw, "graph_launches_partial", S.graph_launches_partial);
		jw_ku64(&S.jw, "graph_nodes_dropped", cg_dropped(S.graphs));
		jw_ku64(&S.jw, "held", S.skel->bss->uprobe_held);
		jw_ku64(&S.jw, "hold_max_ns", S.scanner.hold_max_ns);
		jw_record_end(&S.jw);
		if (batch_unread())
			fprintf(stderr, "%s: %llu" BATCH_UNREAD_TEXT "\n", TOOL,
				(unsigned long long)batch_unread());
		if (S.names_unread)
			fprintf(stderr, "%s: %llu" NAMES_UNREAD_TEXT "\n", TOOL,
				(unsigned long long)S.names_unread);
		if (S.names_dropped)
			fprintf(stderr, "%s: %llu" NAMES_DROPPED_TEXT "\n", TOOL,
				(unsigned long long)S.names_dropped);
		graph_losses_line();
		return;
	}
	fprintf(stderr, "%s: %llu launches", TOOL, (unsigned long long)S.launches);
	if (S.with_ret)
		fprintf(stderr, ", %llu errors", (unsigned long long)S.errors);
	fprintf(stderr, ", %d probes in %d files, %llu lost events", S.probes, S.libs_seen,
		(unsigned long long)aiscope_lost_total(&S.bpf));
	if (S.addr_map)
		fprintf(stderr, ", %llu calls of processes not scanned yet",
			(unsigned long long)unscanned());
	if (S.names_unread)
		fprintf(stderr, ", %llu" NAMES_UNREAD_TEXT, (unsigned long long)S.names_unread);
	if (S.names_dropped)
		fprintf(stderr, ", %llu" NAMES_DROPPED_TEXT, (unsigned long long)S.names_dropped);
	if (batch_unread())
		fprintf(stderr, ", %llu" BATCH_UNREAD_TEXT, (unsigned long long)batch_unread());
	if (S.graph_launches)
		fprintf(stderr, ", %llu graph launches", (unsigned long long)S.graph_launches);
	fputc('\n', stderr);
	graph_losses_line();
}

/* before any BPF work, as nclstat does: a --lib without a CUDA API would
 * run with "0 probes in 0 files" */
static void check_lib(const char *path)
{
	struct elf_syms *es = elf_syms_open(path);
	bool any = false;

	if (!es)
		usage_error("cannot read --lib '%s': %s", path,
			    errno == ENOEXEC ? "not an ELF file" : strerror(errno));
	for (size_t i = 0; i < ARRAY_SIZE(apis) && !any; i++)
		any = elf_syms_has(es, apis[i].sym);
	elf_syms_free(es);
	if (!any)
		usage_error("no CUDA API (cudaLaunchKernel, cuLaunchKernel...) in --lib '%s'", path);
}

static void validate(void)
{
	if (env.sort)
		cfg.sort = sort_keys[opt_word("--sort", env.sort, sort_keys)];
	for (int l = 0; l < cfg.nlibs; l++)
		check_lib(cfg.libs[l]);
	if (cfg.events && cfg.mem)
		usage_error("-e streams launches: it cannot be combined with --mem");
	if (!strcmp(cfg.sort, "p99") && !cfg.latency)
		usage_error("--sort p99 needs --latency");
	if (!strcmp(cfg.sort, "errors") && !cfg.latency)
		usage_error("--sort errors needs --latency (errors come from return probes)");
}

static void setup_bpf(void)
{
	struct gpulaunch_bpf *k;
	bool sleepable;

	k = S.skel = gpulaunch_bpf__open_opts(aiscope_open_opts());
	if (!k)
		aiscope_fail(EXIT_RUNTIME, "cannot open the BPF object: %s", strerror(errno));
	k->rodata->with_ret = S.with_ret;
	k->rodata->uprobe_hold = cfg.hold;
	k->rodata->with_latency = cfg.latency;
	k->rodata->stream_events = cfg.events;
	S.bpf = (struct aiscope_bpf){
		.hooks = hooks, .nhooks = ARRAY_SIZE(hooks),
		.streaming = true, .on_event = on_event,
	};
	aiscope_bpf_prepare(&S.bpf, k->obj, &k->rodata->aiscope_cfg);
	k->rodata->addr_map = S.addr_map;
	k->rodata->page_shift = __builtin_ctzl(sysconf(_SC_PAGESIZE));
	for (int sh = GL_SH_RT; sh <= GL_SH_GRAPH; sh++) {
		bpf_program__set_autoload(launch_progs(sh)[0], !S.addr_map);
		bpf_program__set_autoload(launch_progs(sh)[1], S.addr_map);
	}
	if (!S.addr_map) {
		aiscope_map_resize(k->obj, "proc_maps", 1);
		aiscope_map_resize(k->obj, "api_offs", 1);
	}
	sleepable = feat_sleepable_uprobe();
	bpf_program__set_autoload(k->progs.name_register_s, sleepable);
	bpf_program__set_autoload(k->progs.name_register, !sleepable);
	if (cfg.latency)
		aiscope_map_resize(k->obj, "lat", 8192);
	if (cfg.mem) {
		aiscope_map_resize(k->obj, "mem", 4096);
		aiscope_map_resize(k->obj, "allocs", 262144);
	}
	if (cfg.events)
		aiscope_map_resize(k->obj, "stats", 1);
	/* a file's probes in a few links, detached at exit in one go */
	uprobe_obj_multi(k->obj);
	aiscope_bpf_load(&S.bpf, gpulaunch_bpf__load(k));
	aiscope_bpf_attach(&S.bpf);
}

static void start_discovery(void)
{
	struct ring_buffer *rb;

	S.scanner.dlopen_prog = S.skel->progs.uprobe_disc_dlopen;
	S.scanner.attach = attach_lib;
	S.scanner.scan_begin = scan_begin;
	S.scanner.on_map = scan_map;
	S.scanner.scan_end = scan_end;
	for (int i = 0; i < cfg.nlibs; i++)
		if (!uprobe_scan_add_path(&S.scanner, cfg.libs[i],
					  kind_of(cfg.libs[i]) < 0 ? K_USER : kind_of(cfg.libs[i])))
			aiscope_fail(EXIT_USAGE, "cannot probe --lib '%s': %s", cfg.libs[i],
				     errno == ENOEXEC ? "not an ELF file" : strerror(errno));
	/* with --lib, processes are still scanned and followed: for where
	 * the runtime's code is mapped in each (nesting), not for files */
	rb = uprobe_discover_open(S.skel->obj, &S.scanner);
	if (!rb)
		aiscope_fail(EXIT_RUNTIME, "cannot open the discovery ring buffer: %s",
			     strerror(errno));
	S.loop.aux_rb = rb;
	if (!cfg.nlibs)
		uprobe_ldcache_foreach(NULL, ldcache_cb, NULL);
	uprobe_scan_all(&S.scanner, env.pids, env.npids);
}

int main(int argc, char **argv)
{
	int code;

	aiscope_parse(&argp, argc, argv, TOOL,
		      AISCOPE_AGGREGATING | AISCOPE_STREAMING | AISCOPE_METRICS);
	validate();
	metrics_init();
	jw_init(&S.jw, stdout);
	S.with_ret = cfg.latency || cfg.events;
	/* kernel names from the symbols of the files they are in: a large
	 * library (libtorch_cuda) alone is tens of MiB of symbol tables */
	S.elf = elf_cache_new(64, ELF_CACHE_BYTES);
	names_cap_init();
	S.graphs = cg_new(0);
	if (!S.graphs)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	S.scanner = (struct uprobe_scanner){ .set = &S.set, .classify = classify,
					     .rescan_ns = cfg.rescan_ns };
	S.set.release = release_lib;
	/* chosen by a trial load of each helper, not by the kernel's version */
	S.addr_map = !feat_uprobe_cookie();
	if (env.list_probes)
		list_probes();

	setup_bpf();
	S.loop = (struct aiscope_loop){
		.bpf = &S.bpf,
		.on_tick = on_tick,
		.on_final = cfg.events ? NULL : on_final,
		.tick_ns = cfg.events ? (cfg.rescan_ns ? cfg.rescan_ns : 0) : env.interval_ns,
	};
	start_discovery();
	if (cfg.events && !env.json)
		table_header_time(stdout, cols_event, ARRAY_SIZE(cols_event) - !cfg.latency,
				  env.timestamp);
	aiscope_tracing("CUDA launches (%d probes in %d files%s)", S.probes, S.libs_seen,
			cfg.nlibs ? "" : "; new processes are followed");

	if (P.libs)
		metrics_libs();
	code = aiscope_run(&S.loop, print_summary);
	uprobe_set_free(&S.set);
	uprobe_discover_close(S.loop.aux_rb, &S.scanner);
	gpulaunch_bpf__destroy(S.skel);
	elf_cache_free(S.elf);
	names_free();
	cg_free(S.graphs);
	metrics_free();
	rows_reset();
	free(S.rows);
	free(S.mem);
	return code;
}
