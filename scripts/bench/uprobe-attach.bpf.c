// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* scripts/bench/uprobe-attach.sh: one counting program, attached as N single
 * uprobes or as one uprobe_multi link, so that both ways are timed on the
 * same functions. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

__u64 hits;

SEC("uprobe")
int count_single(void *ctx)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}

SEC("uprobe.multi")
int count_multi(void *ctx)
{
	__sync_fetch_and_add(&hits, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
