// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tests/unit/test_uprobe.c's BPF side: decodes the arguments of
 * tests/unit/uargs_lib.c's functions with bpf/uprobe_args.bpf.h into
 * globals that the test compares with what it passed.
 */
#include "aiscope.bpf.h"
#include "uprobe_args.bpf.h"
#include "uprobe_discover.bpf.h"
#include "../unit/uargs_lib.h"

const volatile __u32 target_tgid;

struct launch_args launch, launch_ptsz;
struct cu_args cu;
struct init_args init;
struct split_args split;
__u64 nth7;

static __always_inline bool mine(void)
{
	return (bpf_get_current_pid_tgid() >> 32) == target_tgid;
}

static __always_inline void decode_launch(struct pt_regs *ctx, struct launch_args *l)
{
	struct uarg c = {};

	l->func = uarg_int(ctx, &c);
	uarg_struct(ctx, &c, &l->grid, sizeof(l->grid));
	uarg_struct(ctx, &c, &l->block, sizeof(l->block));
	l->args = uarg_int(ctx, &c);
	l->smem = uarg_int(ctx, &c);
	l->stream = uarg_int(ctx, &c);
	l->hits++;
}

SEC("uprobe")
int BPF_KPROBE(t_launch)
{
	if (mine())
		decode_launch(ctx, &launch);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(t_launch_ret, long rc)
{
	if (mine())
		launch.rc = (int)rc;
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(t_launch_ptsz)
{
	if (mine())
		decode_launch(ctx, &launch_ptsz);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(t_cu_launch)
{
	struct uarg c = {};

	if (!mine())
		return 0;
	cu.f = uarg_int(ctx, &c);
	for (int i = 0; i < 3; i++)
		cu.g[i] = uarg_int(ctx, &c);
	for (int i = 0; i < 3; i++)
		cu.b[i] = uarg_int(ctx, &c);
	cu.smem = uarg_int(ctx, &c);
	cu.stream = uarg_int(ctx, &c);
	cu.params = uarg_int(ctx, &c);
	cu.extra = uarg_int(ctx, &c);
	nth7 = uarg_nth(ctx, 7);
	cu.hits++;
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(t_init_rank)
{
	struct uarg c = {};

	if (!mine())
		return 0;
	init.comm = uarg_int(ctx, &c);
	init.nranks = uarg_int(ctx, &c);
	uarg_struct(ctx, &c, &init.id, sizeof(init.id));
	init.rank = uarg_int(ctx, &c);
	init.hits++;
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(t_split16)
{
	struct uarg c = {};

	if (!mine())
		return 0;
	split.a = uarg_int(ctx, &c);
	uarg_skip(ctx, &c, 3);
	split.e = uarg_int(ctx, &c);
	uarg_struct(ctx, &c, &split.s, sizeof(split.s));
	split.g = uarg_int(ctx, &c);
	split.hits++;
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
