// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Every memory API family of gpulaunch --mem, called by an nvcc-built
 * program with sizes, pitches and flags chosen here: pinned host memory,
 * pitched and 3D allocations, stream-ordered pools, memsets, 2D/3D/peer/
 * symbol copies, and (through libcuda.so.1, dlopened: absent, that part is
 * left out) the driver's pinned, pitched, memset and peer calls and its
 * virtual memory management (cuMemCreate, cuMemAddressReserve, cuMemMap,
 * cuMemUnmap, cuMemRelease, cuMemAddressFree).
 *
 * Without a GPU the runtime's calls fail (cudaErrorInsufficientDriver 35,
 * or cudaErrorNoDevice) but the probes see their arguments; against the
 * test doubles (tests/cuda/double/) and on a GPU (scripts/gpu-check.sh)
 * they succeed. Either way each call prints one JSON line, the truth that
 * tests/cuda/mem-expect.jq turns into the counts and bytes gpulaunch must
 * report:
 *
 *	{"api":"cudaMallocPitch","stem":"alloc","bytes":7168,"rc":0}
 *
 * stem: the JSON keys' stem of the call (alloc, pinned_alloc, vmm_map,
 * copy_h2d, memset, ...); bytes: of an allocation, what it got (pitch x
 * rows; 0 when it failed), of a free, what the allocation it frees got
 * ("known":false when that allocation failed: a sentinel pointer is freed
 * instead, which gpulaunch counts as unknown), of a copy or memset, what
 * it was asked to do.
 * The first line is {"pid":PID}.
 * Usage: mem_shared [done] [sleep:MS]   (after the calls: print
 * {"done":true}, then stay MS milliseconds, for a tool's last interval)
 *        mem_shared batch:N              (only one cudaMemcpyBatchAsync of N
 *                                         copies of 10 bytes)
 */
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>
#include <dlfcn.h>
#include <unistd.h>
#include <cuda.h>
#include <cuda_runtime.h>

__device__ char sym[256];

static void truth(const char *api, const char *stem, unsigned long long bytes, int rc)
{
	printf("{\"api\":\"%s\",\"stem\":\"%s\",\"bytes\":%llu,\"rc\":%d}\n", api, stem, bytes, rc);
}

/* a free of an allocation that got bytes (0: it failed, the sentinel is freed) */
static void truth_free(const char *api, const char *stem, unsigned long long bytes, int rc)
{
	printf("{\"api\":\"%s\",\"stem\":\"%s\",\"bytes\":%llu,\"known\":%s,\"rc\":%d}\n", api,
	       stem, bytes, bytes ? "true" : "false", rc);
}

#define FREED(p, ok) ((ok) ? (p) : (std::remove_reference<decltype(p)>::type)0x5e11)

static char hbuf[1 << 20];

static void runtime_calls(void)
{
	cudaStream_t s = 0;
	cudaMemPool_t pool = (cudaMemPool_t)0x9001;
	void *buf = nullptr, *p1 = nullptr, *p2 = nullptr, *pd = nullptr, *a1 = nullptr,
	     *a2 = nullptr;
	size_t pitch = 0;
	cudaPitchedPtr pp = {};
	cudaArray_t arr = nullptr, arr2 = nullptr;
	cudaChannelFormatDesc desc = cudaCreateChannelDesc<unsigned char>();
	int rc, okb, ok1, okd;

	/* a scratch buffer for the memsets and copies */
	rc = cudaMalloc(&buf, 1 << 20);
	okb = !rc;
	truth("cudaMalloc", "alloc", okb ? 1 << 20 : 0, rc);
	if (!okb)
		buf = (void *)0x7000;
	/* pinned host memory: one freed, one left */
	rc = cudaMallocHost(&p1, 1 << 12);
	ok1 = !rc;
	truth("cudaMallocHost", "pinned_alloc", ok1 ? 1 << 12 : 0, rc);
	rc = cudaHostAlloc(&p2, 1 << 13, cudaHostAllocPortable | cudaHostAllocMapped);
	truth("cudaHostAlloc", "pinned_alloc", rc ? 0 : 1 << 13, rc);
	rc = cudaFreeHost(FREED(p1, ok1));
	truth_free("cudaFreeHost", "pinned_free", ok1 ? 1 << 12 : 0, rc);
	/* pitched and 3D: pitch x rows, the pitch the runtime chose */
	rc = cudaMallocPitch(&pd, &pitch, 1000, 7);
	okd = !rc;
	truth("cudaMallocPitch", "alloc", okd ? pitch * 7 : 0, rc);
	rc = cudaMalloc3D(&pp, make_cudaExtent(300, 5, 3));
	truth("cudaMalloc3D", "alloc", rc ? 0 : pp.pitch * 5 * 3, rc);
	rc = cudaFree(FREED(pd, okd));
	truth_free("cudaFree", "free", okd ? pitch * 7 : 0, rc);
	/* stream-ordered: one freed, one left */
	if (cudaDeviceGetDefaultMemPool(&pool, 0))
		pool = (cudaMemPool_t)0x9001;
	rc = cudaMallocAsync(&a1, 1 << 16, s);
	ok1 = !rc;
	truth("cudaMallocAsync", "alloc", ok1 ? 1 << 16 : 0, rc);
	rc = cudaMallocFromPoolAsync(&a2, 1 << 17, pool, s);
	truth("cudaMallocFromPoolAsync", "alloc", rc ? 0 : 1 << 17, rc);
	rc = cudaFreeAsync(FREED(a1, ok1), s);
	truth_free("cudaFreeAsync", "free", ok1 ? 1 << 16 : 0, rc);
	cudaStreamSynchronize(s);
	/* memsets */
	truth("cudaMemset", "memset", 1000, cudaMemset(buf, 1, 1000));
	truth("cudaMemsetAsync", "memset", 2000, cudaMemsetAsync(buf, 2, 2000, s));
	truth("cudaMemset2D", "memset", 100 * 9, cudaMemset2D(buf, 512, 3, 100, 9));
	truth("cudaMemset2DAsync", "memset", 200 * 3, cudaMemset2DAsync(buf, 512, 4, 200, 3, s));
	truth("cudaMemset3D", "memset", 64 * 4 * 2,
	      cudaMemset3D(make_cudaPitchedPtr(buf, 512, 512, 8), 5, make_cudaExtent(64, 4, 2)));
	truth("cudaMemset3DAsync", "memset", 32 * 3 * 5,
	      cudaMemset3DAsync(make_cudaPitchedPtr(buf, 512, 512, 16), 6,
				make_cudaExtent(32, 3, 5), s));
	/* 2D and 3D copies by direction */
	truth("cudaMemcpy2D", "copy_h2d", 300 * 4,
	      cudaMemcpy2D(buf, 512, hbuf, 512, 300, 4, cudaMemcpyHostToDevice));
	truth("cudaMemcpy2DAsync", "copy_d2h", 256 * 3,
	      cudaMemcpy2DAsync(hbuf, 512, buf, 512, 256, 3, cudaMemcpyDeviceToHost, s));
	truth("cudaMemcpy2D", "copy_d2d", 128 * 6,
	      cudaMemcpy2D(buf, 512, (char *)buf + 65536, 512, 128, 6, cudaMemcpyDeviceToDevice));
	if (cudaMallocArray(&arr, &desc, 64, 8))
		arr = nullptr;
	truth("cudaMemcpy2DToArray", "copy_h2d", 40 * 3,
	      cudaMemcpy2DToArray(arr, 0, 0, hbuf, 512, 40, 3, cudaMemcpyHostToDevice));
	truth("cudaMemcpy2DFromArray", "copy_d2h", 24 * 7,
	      cudaMemcpy2DFromArray(hbuf, 512, arr, 0, 0, 24, 7, cudaMemcpyDeviceToHost));
	truth("cudaMemcpy2DToArrayAsync", "copy_h2d", 16 * 5,
	      cudaMemcpy2DToArrayAsync(arr, 0, 0, hbuf, 512, 16, 5, cudaMemcpyHostToDevice, s));
	truth("cudaMemcpy2DFromArrayAsync", "copy_d2h", 8 * 3,
	      cudaMemcpy2DFromArrayAsync(hbuf, 512, arr, 0, 0, 8, 3, cudaMemcpyDeviceToHost, s));
	{
		cudaMemcpy3DParms c = {};

		c.srcPtr = make_cudaPitchedPtr(hbuf, 512, 512, 64);
		c.dstPtr = make_cudaPitchedPtr(buf, 512, 512, 64);
		c.extent = make_cudaExtent(128, 2, 2);
		c.kind = cudaMemcpyHostToDevice;
		truth("cudaMemcpy3D", "copy_h2d", 128 * 2 * 2, cudaMemcpy3D(&c));
		c.extent = make_cudaExtent(96, 3, 1);
		c.kind = cudaMemcpyDefault;
		truth("cudaMemcpy3DAsync", "copy_default", 96 * 3, cudaMemcpy3DAsync(&c, s));
	}
	{
		cudaMemcpy3DPeerParms c = {};

		c.srcPtr = make_cudaPitchedPtr(buf, 512, 512, 64);
		c.dstPtr = make_cudaPitchedPtr((char *)buf + 131072, 512, 512, 64);
		c.extent = make_cudaExtent(64, 2, 1);
		truth("cudaMemcpy3DPeer", "copy_peer", 64 * 2, cudaMemcpy3DPeer(&c));
		c.extent = make_cudaExtent(16, 3, 3);
		truth("cudaMemcpy3DPeerAsync", "copy_peer", 16 * 3 * 3, cudaMemcpy3DPeerAsync(&c, s));
	}
	/* peer and symbol copies */
	truth("cudaMemcpyPeer", "copy_peer", 4096,
	      cudaMemcpyPeer((char *)buf + 262144, 0, buf, 0, 4096));
	truth("cudaMemcpyPeerAsync", "copy_peer", 5000,
	      cudaMemcpyPeerAsync((char *)buf + 262144, 0, buf, 0, 5000, s));
	truth("cudaMemcpyToSymbol", "copy_h2d", 64, cudaMemcpyToSymbol(sym, hbuf, 64, 0));
	truth("cudaMemcpyFromSymbol", "copy_d2h", 32, cudaMemcpyFromSymbol(hbuf, sym, 32, 16));
	truth("cudaMemcpyToSymbolAsync", "copy_h2d", 48,
	      cudaMemcpyToSymbolAsync(sym, hbuf, 48, 8, cudaMemcpyHostToDevice, s));
	truth("cudaMemcpyFromSymbolAsync", "copy_d2h", 40,
	      cudaMemcpyFromSymbolAsync(hbuf, sym, 40, 4, cudaMemcpyDeviceToHost, s));
	/* between arrays (the 1D one is deprecated, still exported) */
	if (cudaMallocArray(&arr2, &desc, 64, 8))
		arr2 = nullptr;
#pragma nv_diag_suppress 1444
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	truth("cudaMemcpyArrayToArray", "copy_d2d", 100,
	      cudaMemcpyArrayToArray(arr2, 0, 0, arr, 0, 0, 100, cudaMemcpyDeviceToDevice));
#pragma GCC diagnostic pop
	truth("cudaMemcpy2DArrayToArray", "copy_d2d", 12 * 4,
	      cudaMemcpy2DArrayToArray(arr2, 0, 0, arr, 0, 0, 12, 4, cudaMemcpyDeviceToDevice));
	/* batches (CUDA 12.8+): the runtime infers each copy's direction */
	{
		void *dsts[3] = { buf, (char *)buf + 4096, hbuf };
		const void *srcs[3] = { hbuf, buf, buf };
		size_t sizes[3] = { 100, 200, 300 }, idx = 0;
		cudaMemcpyAttributes attr = {};
		cudaMemcpy3DBatchOp ops[2] = {};

		attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
		truth("cudaMemcpyBatchAsync", "copy_default", 100 + 200 + 300,
		      cudaMemcpyBatchAsync(dsts, srcs, sizes, 3, &attr, &idx, 1, s));
		for (int i = 0; i < 2; i++) {
			ops[i].src.type = cudaMemcpyOperandTypePointer;
			ops[i].src.op.ptr.ptr = hbuf;
			ops[i].dst.type = cudaMemcpyOperandTypePointer;
			ops[i].dst.op.ptr.ptr = buf;
			ops[i].srcAccessOrder = cudaMemcpySrcAccessOrderStream;
		}
		ops[0].extent = make_cudaExtent(10, 2, 3);
		ops[1].extent = make_cudaExtent(7, 1, 1);
		truth("cudaMemcpy3DBatchAsync", "copy_default", 10 * 2 * 3 + 7,
		      cudaMemcpy3DBatchAsync(2, ops, 0, s));
	}
	cudaStreamSynchronize(s);
	if (arr)
		cudaFreeArray(arr);
	if (arr2)
		cudaFreeArray(arr2);
	fflush(stdout);
}

/* one cudaMemcpyBatchAsync of n copies of 10 bytes each (gpulaunch reads
 * the sizes of the first 1024, and counts the rest in its summary) */
static void big_batch(size_t n)
{
	void **dsts = (void **)calloc(n, sizeof(*dsts));
	const void **srcs = (const void **)calloc(n, sizeof(*srcs));
	size_t *sizes = (size_t *)calloc(n, sizeof(*sizes)), idx = 0;
	cudaMemcpyAttributes attr = {};

	if (!dsts || !srcs || !sizes)
		exit(1);
	for (size_t i = 0; i < n; i++) {
		dsts[i] = hbuf + 16 * (i % 1024);
		srcs[i] = hbuf;
		sizes[i] = 10;
	}
	attr.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
	truth("cudaMemcpyBatchAsync", "copy_default", 10 * n,
	      cudaMemcpyBatchAsync(dsts, srcs, sizes, n, &attr, &idx, 1, 0));
	fflush(stdout);
	free(dsts);
	free(srcs);
	free(sizes);
}

/* ---- the driver, if there is one ---- */

/* built with --default-stream per-thread (mem_ptds), the driver's stream
 * calls are their _ptds and _ptsz exports, as cuda.h would name them */
#ifdef CUDA_API_PER_THREAD_DEFAULT_STREAM
#define PTDS "_ptds"
#define PTSZ "_ptsz"
#else
#define PTDS ""
#define PTSZ ""
#endif

/* the driver's function of this name with the type of that API; a name
 * the library lacks ends the program (exit 3) */
#define DRV(name, type) ((decltype(&type))drv_sym(drv, name))

static void *drv_sym(void *drv, const char *name)
{
	void *f = dlsym(drv, name);

	if (!f) {
		fprintf(stderr, "mem: %s not in libcuda.so.1\n", name);
		exit(3);
	}
	return f;
}

static void driver_calls(void *drv)
{
	CUdeviceptr buf = 0, pd = 0, va = 0, va2 = 0, pa = 0;
	CUmemoryPool pool;
	CUmemGenericAllocationHandle h[4] = {};
	const size_t gr[4] = { 1, 2, 1, 1 };	/* granules of each handle */
	int okh[4], okm[4];
	CUmemAllocationProp prop = {};
	CUcontext ctx = nullptr;
	void *p1 = nullptr, *p2 = nullptr;
	size_t pitch = 0, g = 2 << 20;
	int rc, ok;
	auto get_gran = DRV("cuMemGetAllocationGranularity", cuMemGetAllocationGranularity);
	auto get_ctx = DRV("cuCtxGetCurrent", cuCtxGetCurrent);

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	if (!get_gran || get_gran(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) || !g)
		g = 2 << 20;
	if (!get_ctx || get_ctx(&ctx))
		ctx = nullptr;
	rc = DRV("cuMemAlloc_v2", cuMemAlloc)(&buf, 1 << 20);
	truth("cuMemAlloc_v2", "alloc", rc ? 0 : 1 << 20, rc);
	if (rc)
		buf = 0x7000;
	/* pinned */
	rc = DRV("cuMemHostAlloc", cuMemHostAlloc)(&p1, 1 << 14, CU_MEMHOSTALLOC_PORTABLE);
	ok = !rc;
	truth("cuMemHostAlloc", "pinned_alloc", ok ? 1 << 14 : 0, rc);
	rc = DRV("cuMemAllocHost_v2", cuMemAllocHost)(&p2, 1 << 15);
	truth("cuMemAllocHost_v2", "pinned_alloc", rc ? 0 : 1 << 15, rc);
	rc = DRV("cuMemFreeHost", cuMemFreeHost)(FREED(p1, ok));
	truth_free("cuMemFreeHost", "pinned_free", ok ? 1 << 14 : 0, rc);
	/* pitched, left allocated */
	rc = DRV("cuMemAllocPitch_v2", cuMemAllocPitch)(&pd, &pitch, 700, 11, 4);
	truth("cuMemAllocPitch_v2", "alloc", rc ? 0 : pitch * 11, rc);
	/* virtual memory: 8 granules reserved; handles of 1, 2, 1 and 1
	 * granules mapped end to end; the first unmapped alone, the second
	 * and third in one call (a range of two mappings); the first and
	 * third released: the second and fourth stay, the fourth mapped */
	rc = DRV("cuMemAddressReserve", cuMemAddressReserve)(&va, 8 * g, 0, 0, 0);
	truth("cuMemAddressReserve", "vmm_reserve", rc ? 0 : 8 * g, rc);
	if (rc)
		va = 0x10000000;
	/* and a range given back at once */
	rc = DRV("cuMemAddressReserve", cuMemAddressReserve)(&va2, 2 * g, 0, 0, 0);
	ok = !rc;
	truth("cuMemAddressReserve", "vmm_reserve", ok ? 2 * g : 0, rc);
	rc = DRV("cuMemAddressFree", cuMemAddressFree)(ok ? va2 : 0x5e11, 2 * g);
	truth_free("cuMemAddressFree", "vmm_address_free", ok ? 2 * g : 0, rc);
	for (int i = 0; i < 4; i++) {
		rc = DRV("cuMemCreate", cuMemCreate)(&h[i], gr[i] * g, &prop, 0);
		okh[i] = !rc;
		truth("cuMemCreate", "vmm_create", okh[i] ? gr[i] * g : 0, rc);
	}
	for (int i = 0, at = 0; i < 4; at += gr[i], i++) {
		rc = DRV("cuMemMap", cuMemMap)(va + at * g, gr[i] * g, 0, FREED(h[i], okh[i]), 0);
		okm[i] = !rc;
		truth("cuMemMap", "vmm_map", okm[i] ? gr[i] * g : 0, rc);
	}
	rc = DRV("cuMemUnmap", cuMemUnmap)(okm[0] ? va : 0x5e11, g);
	truth_free("cuMemUnmap", "vmm_unmap", okm[0] ? g : 0, rc);
	rc = DRV("cuMemUnmap", cuMemUnmap)(okm[1] ? va + g : 0x5e11, 3 * g);
	truth_free("cuMemUnmap", "vmm_unmap", okm[1] ? 2 * g + (okm[2] ? g : 0) : 0, rc);
	for (int i = 0; i < 3; i += 2) {
		rc = DRV("cuMemRelease", cuMemRelease)(FREED(h[i], okh[i]));
		truth_free("cuMemRelease", "vmm_release", okh[i] ? gr[i] * g : 0, rc);
	}
	/* stream-ordered, from the device's default pool (a sentinel without one) */
	if (DRV("cuDeviceGetDefaultMemPool", cuDeviceGetDefaultMemPool)(&pool, 0))
		pool = (CUmemoryPool)0x9002;
	rc = DRV("cuMemAllocFromPoolAsync" PTSZ, cuMemAllocFromPoolAsync)(&pa, 1 << 18, pool, 0);
	ok = !rc;
	truth("cuMemAllocFromPoolAsync" PTSZ, "alloc", ok ? 1 << 18 : 0, rc);
	rc = DRV("cuMemFreeAsync" PTSZ, cuMemFreeAsync)(ok ? pa : 0x5e11, 0);
	truth_free("cuMemFreeAsync" PTSZ, "free", ok ? 1 << 18 : 0, rc);
	/* memsets: elements of 1, 2 and 4 bytes, 1D and 2D, each also Async */
	truth("cuMemsetD8_v2" PTDS, "memset", 333,
	      DRV("cuMemsetD8_v2" PTDS, cuMemsetD8)(buf, 1, 333));
	truth("cuMemsetD16_v2" PTDS, "memset", 100 * 2,
	      DRV("cuMemsetD16_v2" PTDS, cuMemsetD16)(buf, 1, 100));
	truth("cuMemsetD32_v2" PTDS, "memset", 90 * 4,
	      DRV("cuMemsetD32_v2" PTDS, cuMemsetD32)(buf, 1, 90));
	truth("cuMemsetD8Async" PTSZ, "memset", 77,
	      DRV("cuMemsetD8Async" PTSZ, cuMemsetD8Async)(buf, 1, 77, 0));
	truth("cuMemsetD16Async" PTSZ, "memset", 55 * 2,
	      DRV("cuMemsetD16Async" PTSZ, cuMemsetD16Async)(buf, 1, 55, 0));
	truth("cuMemsetD32Async" PTSZ, "memset", 70 * 4,
	      DRV("cuMemsetD32Async" PTSZ, cuMemsetD32Async)(buf, 1, 70, 0));
	truth("cuMemsetD2D8_v2" PTDS, "memset", 30 * 2,
	      DRV("cuMemsetD2D8_v2" PTDS, cuMemsetD2D8)(buf, 512, 1, 30, 2));
	truth("cuMemsetD2D16_v2" PTDS, "memset", 12 * 3 * 2,
	      DRV("cuMemsetD2D16_v2" PTDS, cuMemsetD2D16)(buf, 512, 1, 12, 3));
	truth("cuMemsetD2D32_v2" PTDS, "memset", 16 * 5 * 4,
	      DRV("cuMemsetD2D32_v2" PTDS, cuMemsetD2D32)(buf, 512, 1, 16, 5));
	truth("cuMemsetD2D8Async" PTSZ, "memset", 9 * 9,
	      DRV("cuMemsetD2D8Async" PTSZ, cuMemsetD2D8Async)(buf, 512, 1, 9, 9, 0));
	truth("cuMemsetD2D16Async" PTSZ, "memset", 7 * 4 * 2,
	      DRV("cuMemsetD2D16Async" PTSZ, cuMemsetD2D16Async)(buf, 512, 1, 7, 4, 0));
	truth("cuMemsetD2D32Async" PTSZ, "memset", 5 * 6 * 4,
	      DRV("cuMemsetD2D32Async" PTSZ, cuMemsetD2D32Async)(buf, 512, 1, 5, 6, 0));
	/* 2D and 3D copies that describe themselves: direction from the
	 * memory types (unified: default) */
	{
		CUDA_MEMCPY2D c = {};
		CUDA_MEMCPY3D d = {};
		CUDA_MEMCPY3D_PEER e = {};

		c.srcMemoryType = CU_MEMORYTYPE_HOST;
		c.srcHost = hbuf;
		c.srcPitch = 512;
		c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		c.dstDevice = buf;
		c.dstPitch = 512;
		c.WidthInBytes = 100;
		c.Height = 3;
		truth("cuMemcpy2D_v2" PTDS, "copy_h2d", 100 * 3,
		      DRV("cuMemcpy2D_v2" PTDS, cuMemcpy2D)(&c));
		c.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		c.srcDevice = buf;
		c.dstMemoryType = CU_MEMORYTYPE_HOST;
		c.dstHost = hbuf;
		c.WidthInBytes = 60;
		c.Height = 7;
		truth("cuMemcpy2DAsync_v2" PTSZ, "copy_d2h", 60 * 7,
		      DRV("cuMemcpy2DAsync_v2" PTSZ, cuMemcpy2DAsync)(&c, 0));
		c.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		c.dstDevice = buf + 65536;
		c.WidthInBytes = 44;
		c.Height = 2;
		truth("cuMemcpy2DUnaligned_v2" PTDS, "copy_d2d", 44 * 2,
		      DRV("cuMemcpy2DUnaligned_v2" PTDS, cuMemcpy2DUnaligned)(&c));
		d.srcMemoryType = CU_MEMORYTYPE_HOST;
		d.srcHost = hbuf;
		d.srcPitch = 512;
		d.srcHeight = 8;
		d.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		d.dstDevice = buf;
		d.dstPitch = 512;
		d.dstHeight = 8;
		d.WidthInBytes = 32;
		d.Height = 4;
		d.Depth = 3;
		truth("cuMemcpy3D_v2" PTDS, "copy_h2d", 32 * 4 * 3,
		      DRV("cuMemcpy3D_v2" PTDS, cuMemcpy3D)(&d));
		d.srcMemoryType = CU_MEMORYTYPE_UNIFIED;
		d.srcDevice = (CUdeviceptr)hbuf;
		d.WidthInBytes = 20;
		d.Height = 2;
		d.Depth = 2;
		truth("cuMemcpy3DAsync_v2" PTSZ, "copy_default", 20 * 2 * 2,
		      DRV("cuMemcpy3DAsync_v2" PTSZ, cuMemcpy3DAsync)(&d, 0));
		e.srcMemoryType = CU_MEMORYTYPE_DEVICE;
		e.srcDevice = buf;
		e.srcPitch = 512;
		e.srcHeight = 8;
		e.srcContext = ctx;
		e.dstMemoryType = CU_MEMORYTYPE_DEVICE;
		e.dstDevice = buf + 131072;
		e.dstPitch = 512;
		e.dstHeight = 8;
		e.dstContext = ctx;
		e.WidthInBytes = 24;
		e.Height = 3;
		e.Depth = 2;
		truth("cuMemcpy3DPeer" PTDS, "copy_peer", 24 * 3 * 2,
		      DRV("cuMemcpy3DPeer" PTDS, cuMemcpy3DPeer)(&e));
	}
	/* peer copies (one device: the same context on both sides) */
	truth("cuMemcpyPeer" PTDS, "copy_peer", 2048,
	      DRV("cuMemcpyPeer" PTDS, cuMemcpyPeer)(buf + 8192, ctx, buf, ctx, 2048));
	truth("cuMemcpyPeerAsync" PTSZ, "copy_peer", 3000,
	      DRV("cuMemcpyPeerAsync" PTSZ, cuMemcpyPeerAsync)(buf + 16384, ctx, buf, ctx, 3000,
							     0));
	/* batches (a driver older than 12.8 has none: left out) */
	if (dlsym(drv, "cuMemcpyBatchAsync_v2" PTSZ)) {
		CUdeviceptr dsts[2] = { buf, buf + 4096 }, srcs[2] = { buf + 8192, buf + 16384 };
		size_t sizes[2] = { 1000, 24 }, idx = 0;
		CUmemcpyAttributes attr = {};
		CUDA_MEMCPY3D_BATCH_OP op = {};

		attr.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
		truth("cuMemcpyBatchAsync_v2" PTSZ, "copy_default", 1000 + 24,
		      DRV("cuMemcpyBatchAsync_v2" PTSZ, cuMemcpyBatchAsync)(dsts, srcs, sizes, 2,
									     &attr, &idx, 1, 0));
		op.src.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
		op.src.op.ptr.ptr = buf;
		op.dst.type = CU_MEMCPY_OPERAND_TYPE_POINTER;
		op.dst.op.ptr.ptr = buf + 65536;
		op.extent.width = 8;
		op.extent.height = 8;
		op.extent.depth = 2;
		op.srcAccessOrder = CU_MEMCPY_SRC_ACCESS_ORDER_STREAM;
		truth("cuMemcpy3DBatchAsync_v2" PTSZ, "copy_default", 8 * 8 * 2,
		      DRV("cuMemcpy3DBatchAsync_v2" PTSZ, cuMemcpy3DBatchAsync)(1, &op, 0, 0));
	}
	DRV("cuCtxSynchronize", cuCtxSynchronize)();
	fflush(stdout);
}

int main(int argc, char **argv)
{
	void *drv;
	long ms;

	printf("{\"pid\":%d}\n", (int)getpid());
	if (argc == 2 && !strncmp(argv[1], "batch:", 6)) {
		big_batch(strtoul(argv[1] + 6, nullptr, 10));
		return 0;
	}
	/* the runtime's context, current on this thread for the driver's calls */
	cudaSetDevice(0);
	cudaFree(0);
	runtime_calls();
	drv = dlopen("libcuda.so.1", RTLD_NOW);
	if (drv)
		driver_calls(drv);
	else
		printf("{\"driver\":null}\n");
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "done"))
			printf("{\"done\":true}\n");
		else if (sscanf(argv[i], "sleep:%ld", &ms) == 1)
			usleep(ms * 1000);
		fflush(stdout);
	}
	return 0;
}
