// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A test library for lib/uprobe.c and bpf/uprobe_args.bpf.h: functions with
 * the calling shapes of the CUDA and NCCL entry points (structs by value,
 * arguments past the sixth), a _ptsz twin, two versions of one symbol and a
 * local function only .symtab names. Built as libuargs.so with
 * uargs_lib.map (test_uprobe.c checks symbols and decoded arguments).
 */
#include <stdint.h>
#include "uargs_lib.h"

/* keep the calls real: the compiler must not see through them */
#define USE(x) __asm__ volatile("" : : "r"(x) : "memory")

int uargs_launch(const void *func, struct uargs_dim3 grid, struct uargs_dim3 block, void **args,
		 size_t smem, void *stream)
{
	USE(func); USE(args); USE(stream);
	return (int)(grid.x + grid.y + grid.z + block.x + block.y + block.z + smem) & 0x7f;
}

int uargs_launch_ptsz(const void *func, struct uargs_dim3 grid, struct uargs_dim3 block,
		      void **args, size_t smem, void *stream)
{
	USE(func); USE(args); USE(stream);
	return 100 + ((int)(grid.x + block.x + smem) & 0x7f);
}

int uargs_cu_launch(void *f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
		    unsigned int by, unsigned int bz, unsigned int smem, void *stream,
		    void **params, void **extra)
{
	USE(f); USE(stream); USE(params); USE(extra);
	return (int)(gx + gy + gz + bx + by + bz + smem) & 0x7f;
}

int uargs_init_rank(void **comm, int nranks, struct uargs_id128 id, int rank)
{
	USE(comm);
	return (id.internal[0] + nranks + rank) & 0x7f;
}

int uargs_split16(long a, long b, long c, long d, long e, struct uargs_pair16 s, long g)
{
	return (int)(a + b + c + d + e + s.lo + s.hi + g) & 0x7f;
}

static __attribute__((noinline)) int uargs_local_impl(int v)
{
	USE(v);
	return v + 1;
}

int uargs_call_local(int v)
{
	return uargs_local_impl(v);
}

/* two versions of one name: the old one hidden, the new one default */
int uargs_ver_old(void)
{
	return 1;
}

int uargs_ver_new(void)
{
	return 2;
}
__asm__(".symver uargs_ver_old, uargs_ver@UARGS_0");
__asm__(".symver uargs_ver_new, uargs_ver@@UARGS_1");
