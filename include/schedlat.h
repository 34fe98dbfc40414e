/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SCHEDLAT_H
#define SCHEDLAT_H

#include "aiscope_common.h"
#include "aiscope_hist.h"

enum schedlat_by {
	SCHEDLAT_BY_PID,
	SCHEDLAT_BY_TID,
	SCHEDLAT_BY_CGROUP,	/* --by container aggregates cgroups in user space */
	SCHEDLAT_BY_HOST,
};

/* epoch alternates every interval, so that user space drains the keys of
 * the closed interval while BPF fills those of the open one. */
struct schedlat_key {
	__u64 id;		/* tgid, tid, cgroup id or 0, per schedlat_by */
	__u32 epoch;
	__u32 cgroup_v1;
};

struct schedlat_stats {
	struct aiscope_ident ident;	/* the first task seen under the key */
	__u64 runs;
	__u64 wait_ns;
	__u64 max_ns;
	__u64 preemptions;
	__u64 migrations;
	__u32 hist[HIST_BUCKETS];	/* run-queue waits in ns, log-linear */
};

/* --min: one wait longer than min_ns */
struct schedlat_event {
	__u64 ts;			/* boot clock, ns */
	__u64 wait_ns;
	struct aiscope_ident task;
	__u32 prev_pid;
	__u32 prev_tid;
	char prev_comm[AISCOPE_COMM_LEN];
	__u32 cpu;
	__u32 pad;
};

/* Classic-tracepoint mode only: a wait that ended before its task was ever
 * seen leaving a CPU, kept until then, when its identity (and whether the
 * filters pass it) becomes known. */
struct schedlat_pending {
	__u64 ts;
	__u64 wait_ns;
	__u32 prev_pid;
	__u32 prev_tid;
	char prev_comm[AISCOPE_COMM_LEN];
	__u32 cpu;
	__u32 pad;
};

/* Classic-tracepoint mode only: identity of tasks seen leaving a CPU. */
struct schedlat_task {
	struct aiscope_ident ident;
	__u8 pass;
	__u8 pad[7];
};

#endif
