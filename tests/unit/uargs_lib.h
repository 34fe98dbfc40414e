/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The types of uargs_lib.c, shared with its test and its BPF object. */
#ifndef UARGS_LIB_H
#define UARGS_LIB_H

#ifndef __VMLINUX_H__
#include <stddef.h>
#include <linux/types.h>
#endif

struct uargs_dim3 {
	unsigned int x, y, z;
};

/* the shape of ncclUniqueId: 128 bytes by value */
struct uargs_id128 {
	char internal[128];
};

struct uargs_pair16 {
	long lo, hi;
};

/* what the BPF side decoded (tests/bpf/uprobe_args.bpf.c) */
struct launch_args {
	__u64 func, args, smem, stream;
	struct uargs_dim3 grid, block;
	__u64 hits;
	__s64 rc;
};

struct cu_args {
	__u64 f, stream, params, extra;
	__u32 g[3], b[3], smem;
	__u64 hits;
};

struct init_args {
	__u64 comm;
	__s32 nranks, rank;
	struct uargs_id128 id;
	__u64 hits;
};

struct split_args {
	__u64 a, e, g;
	struct uargs_pair16 s;
	__u64 hits;
};

#ifndef __VMLINUX_H__
int uargs_launch(const void *func, struct uargs_dim3 grid, struct uargs_dim3 block, void **args,
		 size_t smem, void *stream);
int uargs_launch_ptsz(const void *func, struct uargs_dim3 grid, struct uargs_dim3 block,
		      void **args, size_t smem, void *stream);
int uargs_cu_launch(void *f, unsigned int gx, unsigned int gy, unsigned int gz, unsigned int bx,
		    unsigned int by, unsigned int bz, unsigned int smem, void *stream,
		    void **params, void **extra);
int uargs_init_rank(void **comm, int nranks, struct uargs_id128 id, int rank);
int uargs_split16(long a, long b, long c, long d, long e, struct uargs_pair16 s, long g);
int uargs_call_local(int v);
#endif

#endif
