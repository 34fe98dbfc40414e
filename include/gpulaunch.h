/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef GPULAUNCH_H
#define GPULAUNCH_H

#include "aiscope_common.h"
#include "aiscope_hist.h"

/*
 * Every probed symbol carries a 64-bit BPF cookie that says what it is:
 * bits 0..7 the API (user space's table index), 8..11 its class, 12 its
 * layer (runtime or driver), 16..19 its kind (the copy direction of copies
 * whose name or shape says it, the element size's log2 of memsets, the
 * memory pool of allocations and frees), 20..23 the argument shape.
 */
#define GL_COOKIE(api, cls, layer, kind, shape)					\
	((__u64)(api) | ((__u64)(cls) << 8) | ((__u64)(layer) << 12) |		\
	 ((__u64)(kind) << 16) | ((__u64)(shape) << 20))
#define GL_API(c)	((__u32)(c) & 0xff)
#define GL_CLASS(c)	(((__u32)(c) >> 8) & 0xf)
#define GL_LAYER(c)	(((__u32)(c) >> 12) & 0x1)
#define GL_KIND(c)	(((__u32)(c) >> 16) & 0xf)
#define GL_SHAPE(c)	(((__u32)(c) >> 20) & 0xf)
/* tail calls: CUDA 13's __cudaLaunchKernel* may jump to cudaLaunchKernel*
 * (same stack pointer, same return address) */
#define GL_TAIL_SRC	(1ULL << 24)
#define GL_TAIL_DST	(1ULL << 25)

enum gl_class {
	GL_LAUNCH,	/* kernel launches and graph launches */
	GL_ALLOC,	/* allocations of every pool (enum gl_pool) */
	GL_FREE,
	GL_COPY,	/* memcpy and memset */
	GL_SYNC,	/* stream, device, context and event synchronization */
	GL_NAME,	/* where kernel names come from */
	GL_GRAPH,	/* CUDA graphs built, captured and instantiated */
	GL_JOIN,	/* event record and wait: streams joining a capture */
	GL_NCLASS,
};

enum gl_layer { GL_RUNTIME, GL_DRIVER };

/* argument shapes */
enum gl_shape {
	/* launches */
	GL_SH_RT,	/* (func, dim3 grid, dim3 block, args, smem, stream) */
	GL_SH_RT_EX,	/* (const cudaLaunchConfig_t *, func, args) */
	GL_SH_DRV,	/* (f, gx, gy, gz, bx, by, bz, smem, stream, params, ...) */
	GL_SH_DRV_EX,	/* (const CUlaunchConfig *, f, params, extra) */
	GL_SH_GRAPH,	/* (graphExec, stream) */
	/* allocations */
	GL_SH_ALLOC = 0,	/* (void **ptr, size_t size, ...) */
	GL_SH_PITCH = 1,	/* (void **ptr, size_t *pitch, width, height): pitch x height */
	GL_SH_3D = 2,		/* (cudaPitchedPtr *, cudaExtent): pitch x height x depth */
	GL_SH_MAP = 3,		/* (ptr, size, ...): the address is the argument */
	/* frees: (ptr, ...) */
	GL_SH_FREE = 0,
	/* copies and memsets: bytes and direction */
	GL_SH_COPY_RT = 0,	/* (dst, src, count, kind[, stream]) */
	GL_SH_COPY_DRV = 1,	/* (dst, src, size[, stream]): kind from the name */
	GL_SH_COPY_2D = 2,	/* (dst, dpitch, src, spitch, width, height, kind[, stream]) */
	GL_SH_COPY_2D_ARRAY = 3, /* (5 args, width, height, kind[, stream]) */
	GL_SH_COPY_3D = 4,	/* (const cudaMemcpy3DParms *[, stream]) */
	GL_SH_COPY_3D_PEER = 5,	/* (const cudaMemcpy3DPeerParms *[, stream]) */
	GL_SH_COPY_PEER = 6,	/* (dst, dstDevice, src, srcDevice, count[, stream]) */
	GL_SH_COPY_SYMBOL = 7,	/* (to, from, count, offset, kind[, stream]) */
	GL_SH_MEMSET = 8,	/* (ptr, value, count[, stream]): count elements */
	GL_SH_MEMSET_2D = 9,	/* (ptr, pitch, value, width, height[, stream]) */
	GL_SH_MEMSET_3D = 10,	/* (cudaPitchedPtr, int value, cudaExtent[, stream]) */
	GL_SH_COPY_DRV_2D = 11,	/* (const CUDA_MEMCPY2D *[, stream]) */
	GL_SH_COPY_DRV_3D = 12,	/* (const CUDA_MEMCPY3D *[, stream]) */
	GL_SH_COPY_DRV_3D_PEER = 13, /* (const CUDA_MEMCPY3D_PEER *[, stream]) */
	GL_SH_COPY_A2A = 14,	/* between arrays: (dst, 2 offsets, src, 2 offsets,
				 * count, kind) or, kind field GL_A2A_2D, (...,
				 * width, height, kind) */
	GL_SH_COPY_BATCH = 15,	/* (dsts, srcs, const size_t *sizes, count, ...) or,
				 * kind field GL_BATCH_3D, (numOps, opList, ...) */
	/* names */
	GL_SH_REGISTER = 0,	/* __cudaRegisterFunction(handle, hostFun, deviceFun, ...) */
	GL_SH_GETKERNEL = 1,	/* __cudaGetKernel(cudaKernel_t *out, hostFun) */
	GL_SH_GETFUNC = 2,	/* cuModuleGetFunction/cuLibraryGetKernel(out, mod, name) */
	GL_SH_KFUNC = 3,	/* cuKernelGetFunction(CUfunction *out, CUkernel) */
	/* graphs (GL_GRAPH) */
	GL_SH_G_CREATE = 0,	/* (graph *out, ...) */
	GL_SH_G_KNODE = 1,	/* (node *out, graph, deps, n, kernel node params *) */
	GL_SH_G_NODE = 2,	/* (node *out, graph, deps, [edges,] n, node params *) */
	GL_SH_G_CHILD = 3,	/* (node *out, graph, deps, n, child graph) */
	GL_SH_G_CLONE = 4,	/* (graph *out, original) */
	GL_SH_G_BEGIN = 5,	/* (stream, ...) */
	GL_SH_G_BEGIN_TO = 6,	/* (stream, graph, ...): capture into a graph */
	GL_SH_G_END = 7,	/* (stream, graph *out) */
	GL_SH_G_INST = 8,	/* (exec *out, graph, ...) */
	/* joins (GL_JOIN) */
	GL_SH_J_RECORD = 0,	/* (event, stream, ...) */
	GL_SH_J_WAIT = 1,	/* (stream, event, ...) */
};

/* the kind field of the shapes that do not take their direction from it */
#define GL_A2A_2D	1
#define GL_BATCH_3D	1
/* the copies of one batch call whose sizes are read; more are counted in
 * batch_copies_unread, their bytes unknown */
#define GL_BATCH_MAX	1024
/* struct cudaMemcpy3DBatchOp and CUDA_MEMCPY3D_BATCH_OP (CUDA 12.8+, the
 * same layout): two 40-byte operands, then the extent (width, height,
 * depth as size_t) */
#define GL_BATCH_OP_SIZE	112
#define GL_BATCH_OP_EXTENT	80

/* cudaMemcpyKind (driver copies map to the same values), then peer copies
 * (between devices) and memsets: the slots of gl_mem's copy counters */
enum gl_copy_kind {
	GL_H2H, GL_H2D, GL_D2H, GL_D2D, GL_DEFAULT, GL_PEER, GL_MEMSET, GL_NKINDS,
};

/* Where an allocation lives: each pool its own allocate/free pair, its
 * own counters and its bytes outstanding. */
enum gl_pool {
	GL_POOL_DEVICE,		/* cudaMalloc*, cuMemAlloc*: device memory */
	GL_POOL_PINNED,		/* cudaMallocHost, cudaHostAlloc, cuMemHostAlloc ...: page-locked host memory */
	GL_POOL_VMM_PHYS,	/* cuMemCreate / cuMemRelease: physical memory handles */
	GL_POOL_VMM_MAP,	/* cuMemMap / cuMemUnmap: physical memory mapped at addresses */
	GL_POOL_VMM_VA,		/* cuMemAddressReserve / cuMemAddressFree: address ranges */
	GL_NPOOLS,
};

/* Launch rows: epoch alternates every interval so that user space drains
 * the closed interval's keys while BPF fills the open one's. */
struct gl_key {
	__u64 func;		/* hostFun, cudaKernel_t, CUfunction or graph */
	__u32 pid;
	__u8 layer;
	__u8 epoch;
	__u16 pad;
};

struct gl_stats {
	struct aiscope_ident ident;	/* the first thread seen */
	__u64 launches;
	__u64 returns;			/* launches whose return was seen */
	__u64 errors;			/* of those, rc != 0 */
	__u64 stream;			/* the last launch's */
	__u32 grid[3], block[3];	/* the last launch's */
	__u32 smem;
	__u32 api;
	__u32 last_rc;
	__u32 pad;
};

/* --latency: per row */
struct gl_lat {
	__u64 sum, max;
	__u32 hist[HIST_BUCKETS];
};

/* Sync waits in power-of-two buckets (bucket k: 2^k to 2^(k+1) - 1 ns):
 * exact at the Prometheus histogram's edges, a seventh of the log-linear
 * histogram's size in a map preallocated for 4096 processes. */
#define GL_SYNC_BUCKETS 64

/* one pool's allocations and frees */
struct gl_pool_stats {
	__u64 alloc_calls, alloc_bytes, alloc_fail;
	__u64 free_calls, free_bytes, free_unknown;
	__s64 outstanding;
};

/* --mem: per process, running totals (user space takes differences);
 * the allocation latency is the device pool's */
struct gl_mem {
	struct aiscope_ident ident;
	struct gl_pool_stats pool[GL_NPOOLS];
	__u64 copy_calls[GL_NKINDS], copy_bytes[GL_NKINDS];
	__u64 sync_calls, sync_ns;
	__u64 alloc_lat_sum, alloc_lat_max;
	__u32 alloc_hist[HIST_BUCKETS];
	__u32 sync_log2[GL_SYNC_BUCKETS];
};

/* a live allocation: pointer, VMM handle or mapped address, by pool */
struct gl_alloc_key {
	__u64 ptr;
	__u32 pid;
	__u32 pool;
};

/* A call in progress (return probes), per thread and class. */
struct gl_entry_key {
	__u32 tid;
	__u32 cls;
};

struct gl_entry {
	__u64 ts;
	__u64 sp;		/* stack pointer at entry */
	__u64 func;		/* launch: as gl_key; alloc: the out pointer */
	__u64 stream;
	__u64 aux;		/* alloc: size; names: hostFun, kernel or name pointer */
	__u32 grid[3], block[3];
	__u32 smem;
	__u32 api;
	__u32 depth;		/* nested calls of the class still open */
	__u8 layer;
	__u8 shape;
	__u8 kind;		/* alloc, free: the pool */
	__u8 pad;
};

/* Where the code of the probed runtimes is mapped in a process (libcudart,
 * or an executable with a static runtime): a driver launch whose return
 * address is in there was called by a runtime launch (nesting), in
 * entry-only mode. Filled by user space when it scans the process. */
#define GL_TEXT_MAX 4
struct gl_text {
	__u64 start[GL_TEXT_MAX];
	__u64 end[GL_TEXT_MAX];
};

/* The inodes of the probed runtimes (kernel dev_t, as sb->s_dev), for the
 * processes that user space has not scanned yet: the driver launch's return
 * address is then looked up in the process's VMAs (bpf_find_vma). */
struct gl_inode {
	__u64 ino;
	__u32 dev;
	__u32 pad;
};

/* A file's runtime code, in file offsets (map rt_inodes): all of a CUDA
 * runtime library (0 to ~0), a static runtime's part of an executable */
struct gl_span {
	__u64 lo;
	__u64 hi;
};

/*
 * Without attach cookies or bpf_find_vma (5.10), a probe is told by its
 * address: the entry probe's IP is the probed function's address in the
 * process. User space fills, as it scans a process, where the probed files'
 * code is mapped in it (map proc_maps), and per file the cookie of each
 * probed offset (map api_offs).
 */
#define GL_MAPS_MAX 8
struct gl_map {
	__u64 start, end;	/* the mapping's addresses */
	__u64 pgoff;		/* its file offset, bytes */
	struct gl_inode f;
};

struct gl_maps {
	__u32 n;
	__u32 pad;
	struct gl_map m[GL_MAPS_MAX];
};

struct gl_off_key {
	struct gl_inode f;
	__u64 off;		/* the probed symbol's file offset */
};

/* Entry-only mode: the outermost call of a class per thread, to tell a
 * runtime call's own driver call from a new one (nesting). */
struct gl_outer {
	__u64 sp;		/* stack pointer at its entry */
	__u64 ret;		/* its return address */
	__u32 api;
	__u32 pad;
};

enum gl_ev_type { GL_EV_LAUNCH = 1, GL_EV_NAME, GL_EV_SEEN, GL_EV_GRAPH };

/*
 * CUDA graphs: what user space needs to know which kernels each graph
 * launch runs. A kernel node (added, or a launch captured from a stream)
 * carries the kernel and its configuration; a graph launch captured into a
 * graph is a node whose func is that graph exec (its api a graph launch's).
 */
enum gl_graph_op {
	GL_G_CREATE = 1,	/* graph: a new, empty graph */
	GL_G_NODE,		/* graph: a kernel node added (func, config) */
	GL_G_CHILD,		/* graph: aux's nodes added (a child graph node) */
	GL_G_CLONE,		/* graph: a copy of aux */
	GL_G_BEGIN,		/* aux: a stream that began capturing (into graph, or a new one) */
	GL_G_CAPTURED,		/* aux: the capture's first stream; a launch captured */
	GL_G_JOIN,		/* aux: a stream joined the capture of func's stream */
	GL_G_END,		/* aux: the capture's first stream; graph: its result, 0 if none */
	GL_G_INST,		/* graph instantiated as exec aux */
};

/* a capturing stream or an event recorded on one, per process */
struct gl_cap_key {
	__u64 handle;
	__u32 pid;
	__u32 pad;
};

/* the streams that joined a capture, ended with it (more are counted lost
 * and stay until user space takes them out) */
#define GL_JOINED_MAX 16
struct gl_joined {
	__u64 stream[GL_JOINED_MAX];
	__u32 n;
	__u32 pad;
};

struct gl_graph_ev {
	__u32 type;
	__u32 op;
	__u32 pid;
	__u32 api;		/* the call's (a node's: how it was added) */
	__u64 graph;
	__u64 aux;
	__u64 func;
	__u32 grid[3], block[3];
	__u32 smem;
	__u8 layer;
	__u8 pad[3];
};

struct gl_launch_ev {
	__u32 type;
	__u32 api;
	__u64 ts;		/* boot clock, ns: the call's return (its entry without it) */
	struct aiscope_ident ident;
	__u64 func;
	__u64 stream;
	__u64 latency_ns;
	__u32 grid[3], block[3];
	__u32 smem;
	__s32 rc;
	__u8 layer;
	__u8 has_rc;
	__u8 has_latency;
	__u8 pad[5];
};

/* A kernel seen for the first time in a process: user space names it at
 * once, while the process (and its mappings) are still there. */
struct gl_seen_ev {
	__u32 type;
	__u32 pid;
	__u64 func;
	__u32 api;
	__u32 layer;
};

#define GL_NAME_LEN 256

enum gl_name_src {
	GL_SRC_REGISTER = 1,	/* addr = hostFun, name = device function */
	GL_SRC_GETKERNEL,	/* addr = cudaKernel_t, alias = hostFun */
	GL_SRC_GETFUNC,		/* addr = CUfunction or CUkernel, name */
	GL_SRC_KFUNC,		/* addr = CUfunction, alias = CUkernel */
};

struct gl_name_ev {
	__u32 type;
	__u32 pid;
	__u32 src;
	__u32 name_ok;		/* name[] holds the string; else read name_ptr */
	__u64 addr;
	__u64 alias;
	__u64 name_ptr;
	char name[GL_NAME_LEN];
};

#endif
