/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef TOPOGRAPH_H
#define TOPOGRAPH_H

#include "aiscope_common.h"

#define TOPO_FILE_LEN	64	/* the last exec'd file name, its first 63 bytes */
#define TOPO_CG_LEVELS	6	/* cgroup names kept, leaf first */
#define TOPO_CG_NAME	96	/* "cri-containerd-<64 hex>.scope" is 86 */

enum topo_flags {
	TOPO_FORKED = 1,	/* forked during the capture */
	TOPO_EXECED = 2,
	TOPO_EXITED = 4,	/* its last thread exited */
	/* classic tracepoints: sched_process_fork does not say whether the
	 * new task is a process or a thread; user space checks those never
	 * seen exec or exit */
	TOPO_MAYBE_THREAD = 8,
};

/* One process (thread group), aggregated in the kernel over the capture.
 * Times are on the BPF clock (aiscope_now()). */
struct topo_proc {
	__u64 cgroup_id;
	__u64 start_ns;		/* the task's start, whenever that was */
	__u64 fork_ns;		/* TOPO_FORKED */
	__u64 exec_ns;		/* the last exec */
	__u64 exit_ns;		/* TOPO_EXITED */
	__u32 pid;
	__u32 ppid;		/* real parent's tgid when first seen */
	__u32 uid;
	__u32 execs;
	__u32 reexecs;		/* execs of the file it ran before: a restart in place */
	__u32 exit_code;	/* wait(2) status: code << 8, or the signal (| 0x80: core) */
	__u32 flags;
	__u8 cgroup_v1;
	__u8 cg_levels;		/* names in cg_name[] */
	__u8 cg_level;		/* the cgroup's depth (more than cg_levels: cut) */
	__u8 pad[1];
	char comm[AISCOPE_COMM_LEN];
	char filename[TOPO_FILE_LEN];
	/* the names of the cgroup and its ancestors, read while it lives:
	 * the cgroup of a short job is often gone when the capture ends */
	char cg_name[TOPO_CG_LEVELS][TOPO_CG_NAME];
};

#endif
