// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A test double of libcudart with the exact C ABI of cuda_runtime_api.h
 * (and crt/host_runtime.h for registration) for the calls gpulaunch
 * probes. Like the real runtime, it reaches the driver through exported
 * libcuda.so.1 entry points: cudaLaunchKernel calls cuLaunchKernel,
 * cudaMalloc cuMemAlloc_v2, and so on, so a runtime call nests a driver
 * call that gpulaunch must count once. __cudaGetKernel hands out a handle
 * that is not the host function, as CUDA 13's does.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct dim3 {
	unsigned int x, y, z;
};

typedef int (*cu_launch_fn)(void *, unsigned int, unsigned int, unsigned int, unsigned int,
			    unsigned int, unsigned int, unsigned int, void *, void **, void **);
typedef int (*cu_alloc_fn)(unsigned long long *, size_t);
typedef int (*cu_free_fn)(unsigned long long);
typedef int (*cu_copy_fn)(unsigned long long, const void *, size_t);
typedef int (*cu_sync_fn)(void *);

#ifdef GL_STATIC_DOUBLE
/* linked into one static executable with the driver double
 * (tests/helpers/cudastatic.c): the driver's functions by name */
struct drv_fn {
	const char *name;
	void *fn;
};
extern const struct drv_fn gl_driver_fns[];

static void *drv(const char *name)
{
	for (const struct drv_fn *f = gl_driver_fns; f->name; f++)
		if (!strcmp(f->name, name))
			return f->fn;
	return NULL;
}
#else
static void *drv(const char *name)
{
	static void *h;

	if (!h)
		h = dlopen("libcuda.so.1", RTLD_NOW);
	return h ? dlsym(h, name) : NULL;
}
#endif

#define HANDLE_XOR 0x5a5a0000ULL
#define USE_RT(x) __asm__ volatile("" : : "r"(x) : "memory")

int cudaLaunchKernel(const void *func, struct dim3 grid, struct dim3 block, void **args,
		     size_t smem, void *stream)
{
	cu_launch_fn f = (cu_launch_fn)drv("cuLaunchKernel");

	if (!f)
		return 35;
	/* the runtime's CUfunction of a host function: any stable value */
	return f((void *)((uintptr_t)func | 1), grid.x, grid.y, grid.z, block.x, block.y, block.z,
		 (unsigned int)smem, stream, args, NULL);
}

/* handles handed out by __cudaGetKernel and their host functions */
static struct {
	const void *handle, *host;
} handles[64];
static int nhandles;

/* as libcudart.so.13 does without a driver: the launch goes on through the
 * exported cudaLaunchKernel with the host function */
int __cudaLaunchKernel(const void *kernel, struct dim3 grid, struct dim3 block, void **args,
		       size_t smem, void *stream)
{
	const void *host = kernel;

	for (int i = 0; i < nhandles; i++)
		if (handles[i].handle == kernel)
			host = handles[i].host;
	return cudaLaunchKernel(host, grid, block, args, smem, stream);
}

int __cudaGetKernel(void **kernel, const void *host)
{
	*kernel = (void *)((uintptr_t)host ^ HANDLE_XOR);
	if (nhandles < 64)
		handles[nhandles++] = (typeof(handles[0])){ *kernel, host };
	return 0;
}

void __cudaRegisterFunction(void **handle, const char *host, char *dev, const char *name,
			    int limit, void *tid, void *bid, void *bdim, void *gdim, int *wsize)
{
	__asm__ volatile("" : : "r"(handle), "r"(host), "r"(dev), "r"(name) : "memory");
}

int cudaMalloc(void **p, size_t size)
{
	cu_alloc_fn f = (cu_alloc_fn)drv("cuMemAlloc_v2");
	unsigned long long d = 0;
	int rc;

	if (!f)
		return 35;
	rc = f(&d, size);
	if (rc)
		return rc == 2 ? 2 : 1;	/* cudaErrorMemoryAllocation, InvalidValue */
	*p = (void *)(uintptr_t)d;
	return 0;
}

int cudaFree(void *p)
{
	cu_free_fn f = (cu_free_fn)drv("cuMemFree_v2");

	if (!p)
		return 0;
	return f ? f((uintptr_t)p) : 35;
}

int cudaMemcpy(void *dst, const void *src, size_t n, int kind)
{
	const char *name = kind == 1 ? "cuMemcpyHtoD_v2" : kind == 2 ? "cuMemcpyDtoH_v2" :
			   "cuMemcpyDtoD_v2";
	cu_copy_fn f = (cu_copy_fn)drv(name);

	return f ? f((uintptr_t)dst, src, n) : 35;
}

int cudaStreamSynchronize(void *stream)
{
	cu_sync_fn f = (cu_sync_fn)drv("cuStreamSynchronize");

	return f ? f(stream) : 35;
}

/* ---- --mem's other families, as the runtime reaches the driver: pinned
 * host memory, pitched and 3D allocations, pools, memsets; the copies
 * only return (gpulaunch counts a copy from its arguments) ---- */

typedef int (*cu_host_alloc_fn)(void **, size_t, unsigned int);
typedef int (*cu_alloc_host_fn)(void **, size_t);
typedef int (*cu_free_host_fn)(void *);
typedef int (*cu_pitch_fn)(unsigned long long *, size_t *, size_t, size_t, unsigned int);
typedef int (*cu_alloc_async_fn)(unsigned long long *, size_t, void *);
typedef int (*cu_pool_fn)(unsigned long long *, size_t, void *, void *);
typedef int (*cu_free_async_fn)(unsigned long long, void *);
typedef int (*cu_memset_fn)(unsigned long long, unsigned char, size_t);
typedef int (*cu_memset2d_fn)(unsigned long long, size_t, unsigned char, size_t, size_t);

/* a driver call's result as the runtime's (1: cudaErrorInvalidValue) */
#define DRV_CALL(type, name, ...) ({						\
	type __f = (type)drv(name);						\
	int __rc = __f ? __f(__VA_ARGS__) : 35;				\
	__rc == 0 || __rc == 35 ? __rc : __rc == 2 ? 2 : 1;			\
})

struct pitched_ptr {
	void *ptr;
	size_t pitch, xsize, ysize;
};

struct extent {
	size_t width, height, depth;
};

int cudaMallocHost(void **p, size_t size)
{
	return DRV_CALL(cu_alloc_host_fn, "cuMemAllocHost_v2", p, size);
}

int cudaHostAlloc(void **p, size_t size, unsigned int flags)
{
	return DRV_CALL(cu_host_alloc_fn, "cuMemHostAlloc", p, size, flags);
}

int cudaFreeHost(void *p)
{
	return DRV_CALL(cu_free_host_fn, "cuMemFreeHost", p);
}

int cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height)
{
	unsigned long long d = 0;
	int rc = DRV_CALL(cu_pitch_fn, "cuMemAllocPitch_v2", &d, pitch, width, height, 4);

	if (!rc)
		*p = (void *)(uintptr_t)d;
	return rc;
}

int cudaMalloc3D(struct pitched_ptr *pp, struct extent e)
{
	unsigned long long d = 0;
	size_t pitch = 0;
	int rc = DRV_CALL(cu_pitch_fn, "cuMemAllocPitch_v2", &d, &pitch, e.width,
			  e.height * e.depth, 4);

	if (!rc)
		*pp = (struct pitched_ptr){ (void *)(uintptr_t)d, pitch, e.width, e.height };
	return rc;
}

int cudaMallocAsync(void **p, size_t size, void *stream)
{
	unsigned long long d = 0;
	int rc = DRV_CALL(cu_alloc_async_fn, "cuMemAllocAsync", &d, size, stream);

	if (!rc)
		*p = (void *)(uintptr_t)d;
	return rc;
}

int cudaMallocFromPoolAsync(void **p, size_t size, void *pool, void *stream)
{
	unsigned long long d = 0;
	int rc = DRV_CALL(cu_pool_fn, "cuMemAllocFromPoolAsync", &d, size, pool, stream);

	if (!rc)
		*p = (void *)(uintptr_t)d;
	return rc;
}

int cudaFreeAsync(void *p, void *stream)
{
	return DRV_CALL(cu_free_async_fn, "cuMemFreeAsync", (uintptr_t)p, stream);
}

int cudaDeviceGetDefaultMemPool(void **pool, int dev)
{
	*pool = (void *)(uintptr_t)(0x9000 + dev);
	return 0;
}

int cudaMemset(void *p, int v, size_t n)
{
	return DRV_CALL(cu_memset_fn, "cuMemsetD8_v2", (uintptr_t)p, (unsigned char)v, n);
}

int cudaMemsetAsync(void *p, int v, size_t n, void *stream)
{
	USE_RT(stream);
	return cudaMemset(p, v, n);
}

int cudaMemset2D(void *p, size_t pitch, int v, size_t w, size_t h)
{
	return DRV_CALL(cu_memset2d_fn, "cuMemsetD2D8_v2", (uintptr_t)p, pitch, (unsigned char)v,
			w, h);
}

int cudaMemset2DAsync(void *p, size_t pitch, int v, size_t w, size_t h, void *stream)
{
	USE_RT(stream);
	return cudaMemset2D(p, pitch, v, w, h);
}

int cudaMemset3D(struct pitched_ptr pp, int v, struct extent e)
{
	return cudaMemset2D(pp.ptr, pp.pitch, v, e.width, e.height * e.depth);
}

int cudaMemset3DAsync(struct pitched_ptr pp, int v, struct extent e, void *stream)
{
	USE_RT(stream);
	return cudaMemset3D(pp, v, e);
}

/* copies: the arguments are what gpulaunch reads; nothing is copied */
#define RT_COPY(decl, ...)							\
int decl								\
{									\
	__asm__ volatile("" : : __VA_ARGS__ : "memory");		\
	return 0;							\
}
RT_COPY(cudaMemcpy2D(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h, int k),
	"r"(d), "r"(s), "r"(w + h + dp + sp + k))
RT_COPY(cudaMemcpy2DAsync(void *d, size_t dp, const void *s, size_t sp, size_t w, size_t h,
			  int k, void *st), "r"(d), "r"(s), "r"(w + h + dp + sp + k), "r"(st))
RT_COPY(cudaMemcpy2DToArray(void *a, size_t wo, size_t ho, const void *s, size_t sp, size_t w,
			    size_t h, int k), "r"(a), "r"(s), "r"(w + h + wo + ho + sp + k))
RT_COPY(cudaMemcpy2DFromArray(void *d, size_t dp, const void *a, size_t wo, size_t ho, size_t w,
			      size_t h, int k), "r"(a), "r"(d), "r"(w + h + wo + ho + dp + k))
RT_COPY(cudaMemcpy2DToArrayAsync(void *a, size_t wo, size_t ho, const void *s, size_t sp,
				 size_t w, size_t h, int k, void *st),
	"r"(a), "r"(s), "r"(w + h + wo + ho + sp + k), "r"(st))
RT_COPY(cudaMemcpy2DFromArrayAsync(void *d, size_t dp, const void *a, size_t wo, size_t ho,
				   size_t w, size_t h, int k, void *st),
	"r"(a), "r"(d), "r"(w + h + wo + ho + dp + k), "r"(st))
RT_COPY(cudaMemcpy3D(const void *parms), "r"(parms))
RT_COPY(cudaMemcpy3DPeerAsync(const void *parms, void *st), "r"(parms), "r"(st))
RT_COPY(cudaMemcpyFromSymbolAsync(void *d, const void *sym, size_t n, size_t o, int k, void *st),
	"r"(sym), "r"(d), "r"(n + o + k), "r"(st))
RT_COPY(cudaMemcpy3DAsync(const void *parms, void *st), "r"(parms), "r"(st))
RT_COPY(cudaMemcpy3DPeer(const void *parms), "r"(parms))
RT_COPY(cudaMemcpyPeer(void *d, int dd, const void *s, int sd, size_t n), "r"(d), "r"(s),
	"r"(n + dd + sd))
RT_COPY(cudaMemcpyPeerAsync(void *d, int dd, const void *s, int sd, size_t n, void *st),
	"r"(d), "r"(s), "r"(n + dd + sd), "r"(st))
RT_COPY(cudaMemcpyToSymbol(const void *sym, const void *s, size_t n, size_t o, int k),
	"r"(sym), "r"(s), "r"(n + o + k))
RT_COPY(cudaMemcpyFromSymbol(void *d, const void *sym, size_t n, size_t o, int k),
	"r"(sym), "r"(d), "r"(n + o + k))
RT_COPY(cudaMemcpyToSymbolAsync(const void *sym, const void *s, size_t n, size_t o, int k,
				void *st), "r"(sym), "r"(s), "r"(n + o + k), "r"(st))
RT_COPY(cudaMemcpyArrayToArray(void *d, size_t wod, size_t hod, const void *s, size_t wos,
			       size_t hos, size_t n, int k),
	"r"(d), "r"(s), "r"(n + wod + hod + wos + hos + k))
RT_COPY(cudaMemcpy2DArrayToArray(void *d, size_t wod, size_t hod, const void *s, size_t wos,
				 size_t hos, size_t w, size_t h, int k),
	"r"(d), "r"(s), "r"(w + h + wod + hod + wos + hos + k))
RT_COPY(cudaMemcpyBatchAsync(void *const *d, const void *const *s, const size_t *sizes,
			     size_t n, void *attrs, size_t *idxs, size_t nattrs, void *st),
	"r"(d), "r"(s), "r"(sizes), "r"(n + nattrs), "r"(attrs), "r"(idxs), "r"(st))
RT_COPY(cudaMemcpy3DBatchAsync(size_t n, void *ops, unsigned long long flags, void *st),
	"r"(n + flags), "r"(ops), "r"(st))

/* ---- what an nvcc-built program calls besides (tests/cuda/mem.cu runs
 * on this double under the name libcudart.so.13) ---- */

struct channel_desc {
	int x, y, z, w, f;
};

void **__cudaRegisterFatBinary(void *fatbin)
{
	static void *handle;

	USE_RT(fatbin);
	return &handle;
}

void __cudaRegisterFatBinaryEnd(void **h)
{
	USE_RT(h);
}

void __cudaUnregisterFatBinary(void **h)
{
	USE_RT(h);
}

char __cudaInitModule(void **h)
{
	USE_RT(h);
	return 1;
}

void __cudaRegisterVar(void **h, char *host, char *dev, const char *name, int ext, size_t size,
		       int constant, int global)
{
	__asm__ volatile("" : : "r"(h), "r"(host), "r"(dev), "r"(name),
			 "r"(ext + size + constant + global) : "memory");
}

struct channel_desc cudaCreateChannelDesc(int x, int y, int z, int w, int f)
{
	return (struct channel_desc){ x, y, z, w, f };
}

int cudaSetDevice(int dev)
{
	return dev ? 101 : 0;		/* cudaErrorInvalidDevice */
}

/* no arrays here: the array copies get NULL, as without a GPU */
int cudaMallocArray(void **a, const void *desc, size_t w, size_t h, unsigned int flags)
{
	USE_RT(desc);
	USE_RT(w + h + flags);
	*a = NULL;
	return 2;
}

int cudaFreeArray(void *a)
{
	USE_RT(a);
	return 0;
}

/* not in the static double (tests/helpers/cudastatic): its probes stay
 * the launch, name and memory calls the VM tests use */
#ifndef GL_STATIC_DOUBLE

/* ---- nvcc's <<<>>>, streams, events and graphs: each through the
 * driver's call, as the runtime does ---- */

static __thread struct {
	struct dim3 grid, block;
	size_t smem;
	void *stream;
} callcfg;

unsigned int __cudaPushCallConfiguration(struct dim3 grid, struct dim3 block, size_t smem,
					 void *stream)
{
	callcfg.grid = grid;
	callcfg.block = block;
	callcfg.smem = smem;
	callcfg.stream = stream;
	return 0;
}

int __cudaPopCallConfiguration(struct dim3 *grid, struct dim3 *block, size_t *smem, void *stream)
{
	*grid = callcfg.grid;
	*block = callcfg.block;
	*smem = callcfg.smem;
	*(void **)stream = callcfg.stream;
	return 0;
}

int cudaGetLastError(void)
{
	return 0;
}

typedef int (*drv2_fn)(void *, void *);
typedef int (*drv3_fn)(void *, void *, void *);
typedef int (*drv5_fn)(void *, void *, void *, void *, void *);
typedef int (*drv6_fn)(void *, void *, void *, void *, void *, void *);

/* a call, not a jump: the runtime maps the driver's result to its own
 * codes after the call, so its frame is live under the driver's */
#define DRV(name, type, ...) ({						\
	type _f = (type)drv(name);					\
	int _r = _f ? _f(__VA_ARGS__) : 35;				\
	USE_RT(_r);							\
	_r;								\
})
#define P(x) ((void *)(uintptr_t)(x))

int cudaStreamCreate(void **s)
{
	return DRV("cuStreamCreate", drv2_fn, s, P(0));
}

int cudaEventCreate(void **e)
{
	return DRV("cuEventCreate", drv2_fn, e, P(0));
}

int cudaEventRecord(void *e, void *s)
{
	return DRV("cuEventRecord", drv2_fn, e, s);
}

int cudaStreamWaitEvent(void *s, void *e, unsigned int flags)
{
	return DRV("cuStreamWaitEvent", drv3_fn, s, e, P(flags));
}

int cudaGraphCreate(void **g, unsigned int flags)
{
	return DRV("cuGraphCreate", drv2_fn, g, P(flags));
}

/* cudaKernelNodeParams, and the driver's CUDA_KERNEL_NODE_PARAMS_v2 the
 * runtime gives the driver: its CUfunction for the host function */
struct rt_knode {
	const void *func;
	struct dim3 grid, block;
	unsigned int smem;
	void **args, **extra;
};

struct drv_knode {
	void *func;
	unsigned int gx, gy, gz, bx, by, bz, smem;
	void **args, **extra;
	void *kern, *ctx;
};

static struct drv_knode drv_knode(const struct rt_knode *p)
{
	return (struct drv_knode){
		(void *)((uintptr_t)p->func | 1), p->grid.x, p->grid.y, p->grid.z,
		p->block.x, p->block.y, p->block.z, p->smem, p->args, p->extra, NULL, NULL,
	};
}

int cudaGraphAddKernelNode(void **node, void *g, const void *deps, size_t n,
			   const struct rt_knode *p)
{
	struct drv_knode d = drv_knode(p);

	return DRV("cuGraphAddKernelNode_v2", drv5_fn, node, g, (void *)deps, P(n), &d);
}

/* cudaGraphNodeParams / CUgraphNodeParams: type, 3 reserved ints, then the
 * union (232 bytes) and a reserved long long */
struct node_params {
	int type, reserved0[3];
	union {
		long long reserved1[29];
		struct rt_knode kernel;
		struct drv_knode dkernel;
		void *child;
	};
	long long reserved2;
};

int cudaGraphAddNode(void **node, void *g, const void *deps, const void *edges, size_t n,
		     struct node_params *p)
{
	struct node_params d = *p;

	if (p->type == 0)
		d.dkernel = drv_knode(&p->kernel);
	return DRV("cuGraphAddNode_v2", drv6_fn, node, g, (void *)deps, (void *)edges, P(n), &d);
}

int cudaGraphAddChildGraphNode(void **node, void *g, const void *deps, size_t n, void *child)
{
	return DRV("cuGraphAddChildGraphNode", drv5_fn, node, g, (void *)deps, P(n), child);
}

int cudaGraphClone(void **clone, void *orig)
{
	return DRV("cuGraphClone", drv2_fn, clone, orig);
}

int cudaStreamBeginCapture(void *s, int mode)
{
	return DRV("cuStreamBeginCapture_v2", drv2_fn, s, P(mode));
}

int cudaStreamEndCapture(void *s, void **g)
{
	return DRV("cuStreamEndCapture", drv2_fn, s, g);
}

int cudaGraphInstantiate(void **x, void *g, unsigned long long flags)
{
	return DRV("cuGraphInstantiateWithFlags", drv3_fn, x, g, P(flags));
}

int cudaGraphLaunch(void *x, void *s)
{
	return DRV("cuGraphLaunch", drv2_fn, x, s);
}

int cudaGraphDestroy(void *g)
{
	USE_RT(g);
	return 0;
}

int cudaGraphExecDestroy(void *x)
{
	USE_RT(x);
	return 0;
}

#endif
