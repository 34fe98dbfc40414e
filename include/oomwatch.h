/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef OOMWATCH_H
#define OOMWATCH_H

#include "aiscope_common.h"

#define OOMWATCH_STACK_DEPTH	24

enum oomwatch_kind {
	OOMWATCH_EV_KILL = 1,
	OOMWATCH_EV_ALLOC,
	OOMWATCH_EV_RECLAIM,
};

/* Where the OOM came from: set from oom_kill_process's oc->memcg when that
 * hook runs, else left to user space, which reads the kernel stack. */
enum oomwatch_scope {
	OOMWATCH_SCOPE_UNKNOWN,
	OOMWATCH_SCOPE_GLOBAL,
	OOMWATCH_SCOPE_MEMCG,
};

/* What the victim record knows (the old mark_victim carries a pid only). */
#define OOMWATCH_F_TASK		0x1	/* victim identity beyond its pid */
#define OOMWATCH_F_MM		0x2	/* total_vm, rss, pgtables */
#define OOMWATCH_F_ADJ		0x4	/* oom_score_adj */
#define OOMWATCH_F_CONTEXT	0x8	/* oom_kill_process ran: totalpages, points, order */
#define OOMWATCH_F_MEMCG	0x10	/* memcg_* fields are set */
#define OOMWATCH_F_UID		0x20
#define OOMWATCH_F_KB		0x40	/* sizes in kB (classic event), not pages */

/* A memory cgroup as BPF read it: page counters in pages. max ==
 * OOMWATCH_NO_LIMIT when unlimited. */
#define OOMWATCH_NO_LIMIT	(~0ULL)

struct oomwatch_memcg {
	__u64 id;		/* kernfs id of the memcg's cgroup directory */
	__u64 max_pages;
	__u64 usage_pages;
};

struct oomwatch_kill {
	__u32 kind;		/* OOMWATCH_EV_KILL */
	__u32 flags;
	__u64 ts;		/* boot clock, ns */
	struct aiscope_ident victim;
	struct aiscope_ident trigger;	/* the task that ran into the OOM */
	struct oomwatch_memcg memcg;	/* the OOM domain (OOMWATCH_F_MEMCG) */
	struct oomwatch_memcg own;	/* the victim's memcg */
	__u64 total_vm_pages;
	__u64 anon_pages;
	__u64 file_pages;
	__u64 shmem_pages;
	__u64 pgtables_bytes;
	__u64 totalpages;	/* oc->totalpages: size of the OOM domain */
	__s64 points;		/* oc->chosen_points */
	__s32 order;		/* oc->order, -1 unknown */
	__s16 oom_score_adj;
	__u8 scope;		/* enum oomwatch_scope */
	__u8 source;		/* enum probe_mech of the victim hook */
	__u32 nframes;		/* kernel stack of the victim hook */
	__u32 pad;
	__u64 stack[OOMWATCH_STACK_DEPTH];
};

enum oomwatch_syscall {
	OOMWATCH_SYS_MMAP,
	OOMWATCH_SYS_MREMAP,
	OOMWATCH_SYS_BRK,
};

struct oomwatch_alloc {
	__u32 kind;		/* OOMWATCH_EV_ALLOC */
	__u32 syscall;		/* enum oomwatch_syscall */
	__u64 ts;
	struct aiscope_ident task;
	struct oomwatch_memcg memcg;	/* the nearest limited memcg, else the task's */
	__u64 size;		/* bytes asked for (mremap, brk: the growth) */
	__u64 prot;
	__u64 flags;
	__s64 fd;
};

/* A memcg began reclaiming because a charge ran into its limit
 * (memory.max, v1 limit_in_bytes) or memory.high: the earliest sign of an
 * OOM that BPF sees. One per memcg per reclaim_window_ns. */
#define OOMWATCH_RF_HIGH	0x1	/* usage over memory.high, below max */

struct oomwatch_reclaim {
	__u32 kind;		/* OOMWATCH_EV_RECLAIM */
	__u32 flags;
	__u64 ts;
	struct aiscope_ident task;	/* the task that reclaims */
	struct oomwatch_memcg memcg;	/* the memcg at its limit */
	__u64 high_pages;	/* memory.high, OOMWATCH_NO_LIMIT */
	__u64 skipped;		/* its reclaims since the last event, not sent */
	__s32 order;
	__u32 pad;
};

/* Per memcg, in BPF's rate-limit map (BPF's alone): the last event sent
 * and the reclaims held back since. The window until the next may be sent
 * is in reclaim_windows, which user space sets from the working set's
 * trend. */
struct oomwatch_reclaim_seen {
	__u64 ts;
	__u64 skipped;
};

/* Written by oom_kill_process (fentry/kprobe), read by the victim hook that
 * runs in the same task a moment later. */
struct oomwatch_ctx {
	__u64 ts;		/* boot clock, ns */
	struct oomwatch_memcg memcg;
	__u64 totalpages;
	__s64 points;
	__s32 order;
	__u8 scope;
	__u8 pad[3];
	__u64 chosen;		/* oc->chosen: the victim's task_struct */
};

#endif
