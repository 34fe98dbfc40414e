/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Types and constants shared by every tool's BPF side and user side.
 * Plain C: it is compiled both by clang -target bpf and by the host compiler.
 */
#ifndef AISCOPE_COMMON_H
#define AISCOPE_COMMON_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

#define AISCOPE_COMM_LEN	16
#define AISCOPE_MAX_CG_FILTERS	2
#define AISCOPE_MAX_IDS		1024	/* -p / -t list entries */
/* --pod and --namespace: the containers' cgroups in the set (map
 * aiscope_cgset), and how deep below a hierarchy's root one is looked for */
#define AISCOPE_MAX_CGSET	4096
#define AISCOPE_CGSET_DEPTH	16

enum aiscope_lost_kind {
	AISCOPE_LOST_RINGBUF,	/* bpf_ringbuf_reserve() failed: buffer full */
	AISCOPE_LOST_MAP,	/* a map insert failed: map full */
	AISCOPE_LOST_NR,	/* the programs' counters: map aiscope_lost */
	/* user space's: the runs of the tool's programs that the kernel
	 * skipped (bpf_prog_info.recursion_misses: the program was already
	 * running on that CPU, a hook hit from inside another BPF program or
	 * a preempted run), each an event the tool never saw */
	AISCOPE_LOST_SKIPPED = AISCOPE_LOST_NR,
	/* user space's: cgroup_mkdir records lib/cgroup's watcher lost (its
	 * perf buffer was full), each a cgroup that has no path if it is
	 * removed before a lookup */
	AISCOPE_LOST_CGROUP,
	AISCOPE_LOST_ALL,
};

/* Who did it. cgroup_v1 says that cgroup_id names a cgroup of the v1
 * attribution hierarchy (filter.attr_ssid), not of the v2 hierarchy. */
struct aiscope_ident {
	__u64 cgroup_id;
	__u32 pid;
	__u32 tid;
	__u32 uid;
	__u8 cgroup_v1;
	__u8 pad[3];
	char comm[AISCOPE_COMM_LEN];
};

/* A cgroup subtree: tasks whose cgroup in hierarchy ssid (-1: the v2
 * default hierarchy) has the cgroup with this id as ancestor at level. */
struct aiscope_cg_filter {
	__s32 ssid;
	__u32 level;
	__u64 id;
};

/* A cgroup of the set: its id in the v2 hierarchy (v1 0) or in the v1
 * attribution hierarchy (v1 1, aiscope_cfg.attr_ssid): kernfs ids are per
 * hierarchy. */
struct aiscope_cgset_key {
	__u64 id;
	__u32 v1;
	__u32 pad;
};

/* Shared settings, one read-only global (aiscope_cfg) per BPF object,
 * filled by aiscope_bpf_prepare() before load: the filter, and when the
 * ring buffer wakes its reader. */
struct aiscope_cfg {
	__u8 by_pid;		/* consult map aiscope_pids */
	__u8 by_tid;		/* consult map aiscope_tids */
	__u8 by_uid;
	__u8 by_comm;
	__u8 by_cgset;		/* the task's cgroup, or one above it, in map aiscope_cgset */
	__u8 pad[3];
	__u32 ncg;		/* entries of cg[] in use; all must match */
	__u32 uid;
	__s32 attr_ssid;	/* v1 controller for identity on hybrid hosts, -1: none */
	char comm[AISCOPE_COMM_LEN];
	struct aiscope_cg_filter cg[AISCOPE_MAX_CG_FILTERS];
	__u64 wakeup_bytes;	/* wake the reader once this much is queued */
};

#endif
