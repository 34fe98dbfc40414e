// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A test double of libcuda.so.1 with the exact C ABI of cuda.h for the
 * calls gpulaunch probes: every call succeeds, allocations hand out fake
 * device pointers, and cuModuleGetFunction returns a fake CUfunction.
 * Built with -Wl,-soname,libcuda.so.1 next to the runtime double, so that
 * gpulaunch's tests see a runtime call that calls the driver (nesting) and
 * successful allocations (outstanding bytes), which the real libraries
 * cannot give without a GPU.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;

struct CUlaunchConfig {
	unsigned int gx, gy, gz, bx, by, bz, smem;
	void *stream;
	void *attrs;
	unsigned int nattrs;
};

static uint64_t next_ptr = 0x7f0000000000ULL;

#define USE(x) __asm__ volatile("" : : "r"(x) : "memory")

CUresult cuInit(unsigned int flags)
{
	USE(flags);
	return 0;
}

CUresult cuLaunchKernel(void *f, unsigned int gx, unsigned int gy, unsigned int gz,
			unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
			void *stream, void **params, void **extra)
{
	USE(f); USE(stream); USE(params); USE(extra);
	return gx && gy && gz && bx && by && bz ? 0 + (int)(smem & 0) : 1;
}

CUresult cuLaunchKernel_ptsz(void *f, unsigned int gx, unsigned int gy, unsigned int gz,
			     unsigned int bx, unsigned int by, unsigned int bz, unsigned int smem,
			     void *stream, void **params, void **extra)
{
	return cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra);
}

CUresult cuLaunchKernelEx(const struct CUlaunchConfig *c, void *f, void **params, void **extra)
{
	USE(c); USE(f); USE(params); USE(extra);
	return 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t size)
{
	if (!size)
		return 1;		/* CUDA_ERROR_INVALID_VALUE */
	if (size > (1ULL << 40))
		return 2;		/* CUDA_ERROR_OUT_OF_MEMORY */
	*p = next_ptr;
	next_ptr += (size + 0xfff) & ~0xfffULL;
	return 0;
}

CUresult cuMemFree_v2(CUdeviceptr p)
{
	return p ? 0 : 1;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void *src, size_t n)
{
	USE(dst); USE(src); USE(n);
	return 0;
}

CUresult cuMemcpyDtoH_v2(void *dst, CUdeviceptr src, size_t n)
{
	USE(dst); USE(src); USE(n);
	return 0;
}

CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	USE(dst); USE(src); USE(n);
	return 0;
}

/* waits (stream & 0xfffff) microseconds: the tests know the wait */
CUresult cuStreamSynchronize(void *stream)
{
	usleep((uintptr_t)stream & 0xfffff);
	return 0;
}

CUresult cuModuleGetFunction(void **f, void *mod, const char *name)
{
	USE(mod);
	*f = (void *)(0xc0f00000ULL + (strlen(name) << 4));
	return 0;
}

/* ---- --mem's other families: pinned host memory, pitched allocations,
 * pools, virtual memory management, memsets, peer copies ---- */

static char pinned[1 << 20];
static size_t pinned_used;

/* host memory from a static arena: the pointers are real and distinct */
static CUresult host_alloc(void **pp, size_t size)
{
	size = (size + 0xfff) & ~(size_t)0xfff;
	if (!size || size > sizeof(pinned) - pinned_used)
		return 2;
	*pp = pinned + pinned_used;
	pinned_used += size;
	return 0;
}

CUresult cuMemHostAlloc(void **pp, size_t size, unsigned int flags)
{
	USE(flags);
	return host_alloc(pp, size);
}

CUresult cuMemAllocHost_v2(void **pp, size_t size)
{
	return host_alloc(pp, size);
}

CUresult cuMemFreeHost(void *p)
{
	return p ? 0 : 1;
}

/* rows padded to 512 bytes, as a device's texture alignment might */
CUresult cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width, size_t height,
			    unsigned int elt)
{
	if (elt != 4 && elt != 8 && elt != 16)
		return 1;
	*pitch = (width + 511) & ~(size_t)511;
	return cuMemAlloc_v2(p, *pitch * height);
}

CUresult cuMemAllocAsync(CUdeviceptr *p, size_t size, void *stream)
{
	USE(stream);
	return cuMemAlloc_v2(p, size);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *p, size_t size, void *pool, void *stream)
{
	USE(pool); USE(stream);
	return cuMemAlloc_v2(p, size);
}

CUresult cuMemFreeAsync(CUdeviceptr p, void *stream)
{
	USE(stream);
	return cuMemFree_v2(p);
}

/* the granule of the virtual memory calls: sizes must be multiples */
#define GRANULE (2ULL << 20)

static uint64_t next_handle = 0x4a000000ULL, next_va = 0x7e0000000000ULL;

CUresult cuMemGetAllocationGranularity(size_t *g, const void *prop, int option)
{
	USE(prop); USE(option);
	*g = GRANULE;
	return 0;
}

CUresult cuMemCreate(unsigned long long *h, size_t size, const void *prop,
		     unsigned long long flags)
{
	USE(prop); USE(flags);
	if (!size || size % GRANULE)
		return 1;
	*h = next_handle++;
	return 0;
}

CUresult cuMemRelease(unsigned long long h)
{
	return h ? 0 : 1;
}

CUresult cuMemAddressReserve(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr,
			     unsigned long long flags)
{
	USE(align); USE(addr); USE(flags);
	if (!size || size % GRANULE)
		return 1;
	*p = next_va;
	next_va += size;
	return 0;
}

CUresult cuMemAddressFree(CUdeviceptr p, size_t size)
{
	return p && size ? 0 : 1;
}

CUresult cuMemMap(CUdeviceptr p, size_t size, size_t offset, unsigned long long h,
		  unsigned long long flags)
{
	USE(offset); USE(flags);
	return p && h && size && !(size % GRANULE) ? 0 : 1;
}

CUresult cuMemUnmap(CUdeviceptr p, size_t size)
{
	return p && size ? 0 : 1;
}

/* memsets: nothing to set; gpulaunch reads the arguments */
#define MEMSET_FNS(bits, type)							\
CUresult cuMemsetD##bits##_v2(CUdeviceptr p, type v, size_t n)		\
{									\
	USE(p); USE(v); USE(n);						\
	return 0;							\
}									\
CUresult cuMemsetD##bits##Async(CUdeviceptr p, type v, size_t n, void *stream) \
{									\
	USE(stream);							\
	return cuMemsetD##bits##_v2(p, v, n);				\
}									\
CUresult cuMemsetD2D##bits##_v2(CUdeviceptr p, size_t pitch, type v, size_t w, size_t h) \
{									\
	USE(p); USE(pitch); USE(v); USE(w); USE(h);			\
	return 0;							\
}									\
CUresult cuMemsetD2D##bits##Async(CUdeviceptr p, size_t pitch, type v, size_t w, size_t h, \
				  void *stream)				\
{									\
	USE(stream);							\
	return cuMemsetD2D##bits##_v2(p, pitch, v, w, h);		\
}
MEMSET_FNS(8, unsigned char)
MEMSET_FNS(16, unsigned short)
MEMSET_FNS(32, unsigned int)

CUresult cuMemcpyPeer(CUdeviceptr dst, void *dctx, CUdeviceptr src, void *sctx, size_t n)
{
	USE(dst); USE(dctx); USE(src); USE(sctx); USE(n);
	return 0;
}

CUresult cuMemcpyPeerAsync(CUdeviceptr dst, void *dctx, CUdeviceptr src, void *sctx, size_t n,
			   void *stream)
{
	USE(stream);
	return cuMemcpyPeer(dst, dctx, src, sctx, n);
}

/* the 2D and 3D copies: their struct is what gpulaunch reads */
#define STRUCT_COPY(name, ...)							\
CUresult name(const void *p, ##__VA_ARGS__)				\
{									\
	USE(p);								\
	return 0;							\
}
STRUCT_COPY(cuMemcpy2D_v2)
STRUCT_COPY(cuMemcpy2DUnaligned_v2)
STRUCT_COPY(cuMemcpy2DAsync_v2, void *stream)
STRUCT_COPY(cuMemcpy3D_v2)
STRUCT_COPY(cuMemcpy3DAsync_v2, void *stream)
STRUCT_COPY(cuMemcpy3DPeer)

/* batches (CUDA 12.8+, the v2 signatures of 13): the arrays are what
 * gpulaunch reads */
CUresult cuMemcpyBatchAsync_v2(CUdeviceptr *d, CUdeviceptr *s, size_t *sizes, size_t n,
			       void *attrs, size_t *idxs, size_t nattrs, void *stream)
{
	USE(d); USE(s); USE(sizes); USE(n); USE(attrs); USE(idxs); USE(nattrs); USE(stream);
	return 0;
}

CUresult cuMemcpy3DBatchAsync_v2(size_t n, void *ops, unsigned long long flags, void *stream)
{
	USE(n); USE(ops); USE(flags); USE(stream);
	return 0;
}

CUresult cuDeviceGetDefaultMemPool(void **pool, int dev)
{
	*pool = (void *)(uintptr_t)(0x9100 + dev);
	return 0;
}

CUresult cuCtxGetCurrent(void **ctx)
{
	*ctx = (void *)0xc7c7;
	return 0;
}

CUresult cuCtxSynchronize(void)
{
	return 0;
}

/* not in the static double (tests/helpers/cudastatic): its probes stay
 * the launch, name and memory calls the VM tests use */
#ifndef GL_STATIC_DOUBLE

/* ---- streams, events, modules and graphs: handles only (gpulaunch
 * models what a graph holds from the calls that build it) ---- */

static uint64_t next_obj = 0x6a0000000000ULL;

static void *new_handle(void)
{
	next_obj += 0x40;
	return (void *)(uintptr_t)next_obj;
}

#define HANDLE_OUT(name, ...)						\
CUresult name(void **out, ##__VA_ARGS__)					\
{									\
	*out = new_handle();						\
	return 0;							\
}

HANDLE_OUT(cuStreamCreate, unsigned int flags)
HANDLE_OUT(cuEventCreate, unsigned int flags)
HANDLE_OUT(cuModuleLoadData, const void *image)
HANDLE_OUT(cuGraphCreate, unsigned int flags)
HANDLE_OUT(cuGraphClone, void *orig)
HANDLE_OUT(cuGraphAddKernelNode_v2, void *g, const void *deps, size_t n, const void *params)
HANDLE_OUT(cuGraphAddKernelNode, void *g, const void *deps, size_t n, const void *params)
HANDLE_OUT(cuGraphAddNode_v2, void *g, const void *deps, const void *edges, size_t n,
	   void *params)
HANDLE_OUT(cuGraphAddChildGraphNode, void *g, const void *deps, size_t n, void *child)
HANDLE_OUT(cuGraphInstantiateWithFlags, void *g, unsigned long long flags)

CUresult cuStreamEndCapture(void *stream, void **graph)
{
	USE(stream);
	*graph = new_handle();
	return 0;
}

/* a NULL stream cannot capture (CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED) */
CUresult cuStreamBeginCapture_v2(void *stream, int mode)
{
	USE(mode);
	return stream ? 0 : 900;
}

CUresult cuEventRecord(void *event, void *stream)
{
	USE(event); USE(stream);
	return 0;
}

CUresult cuStreamWaitEvent(void *stream, void *event, unsigned int flags)
{
	USE(stream); USE(event); USE(flags);
	return 0;
}

CUresult cuGraphLaunch(void *exec, void *stream)
{
	USE(stream);
	return exec ? 0 : 1;
}

CUresult cuGraphDestroy(void *g)
{
	USE(g);
	return 0;
}

CUresult cuGraphExecDestroy(void *x)
{
	USE(x);
	return 0;
}

#endif
