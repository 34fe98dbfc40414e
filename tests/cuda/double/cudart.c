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
