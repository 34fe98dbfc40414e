// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tests/unit/test_mapdrain.c's BPF side: one run of slow_add (raw_tp, run
 * by the test with BPF_PROG_TEST_RUN in a thread of its own) does what a
 * tool's program does with an epoch row, slowly: it puts the current epoch
 * in its key, looks the row up, says so (started), spins for tens of
 * milliseconds and only then adds 1. A drain after map_epoch_close must see
 * that 1; a drain right after a plain flip sees 0, and the add then goes to
 * a deleted element.
 */
#include "aiscope.bpf.h"

struct epoch_key {
	__u32 id;
	__u32 epoch;
};

AISCOPE_MAP(rows, BPF_MAP_TYPE_HASH, struct epoch_key, __u64, 16);

__u32 epoch;
__u32 started;
__u32 spins;

static long spin(__u64 i, void *ctx)
{
	return 0;
}

SEC("raw_tp")
int slow_add(void *ctx)
{
	struct epoch_key k = { .id = 1, .epoch = *(volatile __u32 *)&epoch };
	__u64 zero = 0, *v;

	bpf_map_update_elem(&rows, &k, &zero, BPF_NOEXIST);
	v = bpf_map_lookup_elem(&rows, &k);
	if (!v)
		return 0;
	*(volatile __u32 *)&started = 1;
	bpf_loop(spins, spin, NULL, 0);
	__sync_fetch_and_add(v, 1);
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
