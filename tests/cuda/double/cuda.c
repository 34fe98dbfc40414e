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
