/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef NUMAPLACE_H
#define NUMAPLACE_H

#include "aiscope_common.h"

/* CPU time is kept per node up to this many nodes; a CPU of a node past
 * it (or of no node) is counted under NUMAPLACE_NODE_UNKNOWN. */
#define NUMAPLACE_MAX_NODES	64
#define NUMAPLACE_NODE_UNKNOWN	NUMAPLACE_MAX_NODES

enum numaplace_by {
	NUMAPLACE_BY_PID,
	NUMAPLACE_BY_TID,
};

/* epoch alternates every interval, as in schedlat: user space drains the
 * closed interval's keys while BPF fills the open one's. */
struct numaplace_key {
	__u64 id;		/* tgid or tid, per numaplace_by */
	__u32 epoch;
	__u32 pad;
};

struct numaplace_stats {
	struct aiscope_ident ident;	/* the first task seen under the key */
	__u64 cpu_ns[NUMAPLACE_MAX_NODES + 1];	/* on-CPU time per node */
	__u64 numa_moves;		/* sched_move_numa: balancing moved the task */
	__u64 numa_swaps;		/* sched_swap_numa: swapped with another task */
	__u64 numa_sticks;		/* sched_stick_numa: a move that failed */
	__u64 pages_migrated;		/* mm_migrate_pages in its context, node moves */
	__u64 pages_migrate_failed;
};

/* the switch-in time of the task on a CPU (per-CPU) */
struct numaplace_oncpu {
	__u64 ts;
};

#endif
