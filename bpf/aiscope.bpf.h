/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every aiscope BPF program shares: the task filter (pid, tid, uid,
 * comm, cgroup subtrees), task identity, lost-event counters, the event
 * ring buffer and the clock. Include it once per BPF object.
 *
 * A program calls aiscope_task_pass(task) first, so that the filters run
 * before any map update; aiscope_task_ident() fills the identity (on
 * hybrid hosts with the v1 cgroup). Settings are const volatile globals
 * that user space sets before load. A hook has one program per candidate
 * mechanism, sharing an __always_inline body: SEC("tp_btf/x") x_btf,
 * SEC("raw_tp/x") x_raw, SEC("tracepoint/cat/x") x_tp, as lib/probe.h's
 * PROBE_TRACEPOINT names them.
 *
 * What schedlat taught: read only the fields a key needs per event and
 * build the identity when a row is created (plain loads under tp_btf, CO-RE
 * reads elsewhere); wake the reader per batch (aiscope_submit()), not per
 * event; a preallocated map for anything inserted in bursts from the hot
 * path; never let libbpf parse the kernel BTF twice (lib/kfeatures answers
 * from lib/btfscan.c).
 */
#ifndef AISCOPE_BPF_H
#define AISCOPE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>
#include "aiscope_common.h"
#include "core_fixes.bpf.h"

#ifndef EEXIST
#define EEXIST 17
#endif

const volatile struct aiscope_cfg aiscope_cfg = {
	.attr_ssid = -1,
};

/*
 * A map with a key and a value, the declaration every object repeats:
 *
 *	AISCOPE_MAP(stats, BPF_MAP_TYPE_HASH, struct x_key, struct x_stats, 4096);
 *
 * is the libbpf definition with those four fields (the same BTF); maps with
 * more (flags, a ring buffer) are written out.
 */
#define AISCOPE_MAP(name, type_, key_t, value_t, entries)			\
struct {									\
	__uint(type, type_);							\
	__uint(max_entries, entries);						\
	__type(key, key_t);							\
	__type(value, value_t);							\
} name SEC(".maps")

AISCOPE_MAP(aiscope_pids, BPF_MAP_TYPE_HASH, __u32, __u8, AISCOPE_MAX_IDS);
AISCOPE_MAP(aiscope_tids, BPF_MAP_TYPE_HASH, __u32, __u8, AISCOPE_MAX_IDS);
AISCOPE_MAP(aiscope_lost, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, __u64, AISCOPE_LOST_NR);
AISCOPE_MAP(aiscope_cgset, BPF_MAP_TYPE_HASH, struct aiscope_cgset_key, __u8, AISCOPE_MAX_CGSET);

/* Sized by user space from --buffer-size; a page when the tool streams nothing. */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4096);
} aiscope_events SEC(".maps");

/* Atomic although per-CPU: programs are preemptible on preemptible kernels
 * (uprobes, fentry, 6.13+'s syscall tracepoints), and another task's
 * program on this CPU may add between our load and our store. */
static __always_inline void aiscope_count_lost(__u32 kind)
{
	__u64 *cnt = bpf_map_lookup_elem(&aiscope_lost, &kind);

	if (cnt)
		__sync_fetch_and_add(cnt, 1);
}

static __always_inline void *aiscope_reserve(__u64 size)
{
	void *ev = bpf_ringbuf_reserve(&aiscope_events, size, 0);

	if (!ev)
		aiscope_count_lost(AISCOPE_LOST_RINGBUF);
	return ev;
}

/* Wake the reader only when a batch is queued: one wakeup per event costs
 * a context switch each, and user space polls the buffer anyway every
 * AISCOPE_POLL_MS. */
static __always_inline void aiscope_submit(void *ev)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (bpf_ringbuf_query(&aiscope_events, BPF_RB_AVAIL_DATA) >= aiscope_cfg.wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(ev, flags);
}

/* Boot-time clock where the kernel has it (5.8+), so that timestamps keep
 * counting across suspend; user space picks the matching offset. */
static __always_inline __u64 aiscope_now(void)
{
	if (bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_ktime_get_boot_ns))
		return bpf_ktime_get_boot_ns();
	return bpf_ktime_get_ns();
}

/* Lookup, or insert init and lookup; a failed insert counts as lost. */
static __always_inline void *aiscope_lookup_or_init(void *map, const void *key,
						    const void *init)
{
	void *val = bpf_map_lookup_elem(map, key);
	long err;

	if (val)
		return val;
	err = bpf_map_update_elem(map, key, init, BPF_NOEXIST);
	if (err && err != -EEXIST) {
		aiscope_count_lost(AISCOPE_LOST_MAP);
		return NULL;
	}
	return bpf_map_lookup_elem(map, key);
}

static __always_inline struct cgroup *aiscope_task_cgroup(struct task_struct *t, __s32 ssid)
{
	struct cgroup_subsys_state *css = NULL;
	struct css_set *cset;

	if (ssid < 0)
		return BPF_CORE_READ(t, cgroups, dfl_cgrp);
	cset = BPF_CORE_READ(t, cgroups);
	if (!cset)
		return NULL;
	bpf_core_read(&css, sizeof(css), &cset->subsys[ssid & 31]);
	if (!css)
		return NULL;
	return BPF_CORE_READ(css, cgroup);
}

static __always_inline bool aiscope_cg_match(struct task_struct *t,
					     const volatile struct aiscope_cg_filter *f)
{
	struct cgroup *cg = aiscope_task_cgroup(t, f->ssid);
	__u32 level;

	if (!cg)
		return false;
	level = BPF_CORE_READ(cg, level);
	if (level < f->level)
		return false;
	return aiscope_cgroup_ancestor_id(cg, f->level) == f->id;
}

/* The task's cgroup in hierarchy ssid, or one above it up to level
 * AISCOPE_CGSET_DEPTH, is in the set: a container's cgroup covers the
 * cgroups made below it (from the top, so a task deep inside still finds
 * its container's). */
static __always_inline bool aiscope_cgset_has(struct task_struct *t, __s32 ssid, __u32 v1)
{
	struct aiscope_cgset_key k = { .v1 = v1 };
	struct cgroup *cg = aiscope_task_cgroup(t, ssid);
	__u32 level;

	if (!cg)
		return false;
	level = BPF_CORE_READ(cg, level);
	for (__u32 l = 1; l <= AISCOPE_CGSET_DEPTH; l++) {
		if (l > level)
			break;
		k.id = aiscope_cgroup_ancestor_id(cg, l);
		if (bpf_map_lookup_elem(&aiscope_cgset, &k))
			return true;
	}
	return false;
}

/* --pod, --namespace: the v2 cgroup, else (hybrid hosts) the v1
 * attribution controller's */
static __always_inline bool aiscope_cgset_pass(struct task_struct *t)
{
	if (aiscope_cgset_has(t, -1, 0))
		return true;
	return aiscope_cfg.attr_ssid >= 0 && aiscope_cgset_has(t, aiscope_cfg.attr_ssid, 1);
}

static __always_inline bool aiscope_comm_eq(const char *comm)
{
	for (int i = 0; i < AISCOPE_COMM_LEN; i++) {
		if (comm[i] != aiscope_cfg.comm[i])
			return false;
		if (!comm[i])
			break;
	}
	return true;
}

/* The filter of CONTRACT section 2, applied before any other work. */
static __always_inline bool aiscope_task_pass(struct task_struct *t)
{
	__u32 id;

	if (aiscope_cfg.by_pid) {
		id = BPF_CORE_READ(t, tgid);
		if (!bpf_map_lookup_elem(&aiscope_pids, &id))
			return false;
	}
	if (aiscope_cfg.by_tid) {
		id = BPF_CORE_READ(t, pid);
		if (!bpf_map_lookup_elem(&aiscope_tids, &id))
			return false;
	}
	if (aiscope_cfg.by_uid && BPF_CORE_READ(t, real_cred, uid.val) != aiscope_cfg.uid)
		return false;
	if (aiscope_cfg.by_comm) {
		char comm[AISCOPE_COMM_LEN];

		BPF_CORE_READ_STR_INTO(&comm, t, comm);
		if (!aiscope_comm_eq(comm))
			return false;
	}
	if (aiscope_cfg.ncg > 0 && !aiscope_cg_match(t, &aiscope_cfg.cg[0]))
		return false;
	if (aiscope_cfg.ncg > 1 && !aiscope_cg_match(t, &aiscope_cfg.cg[1]))
		return false;
	if (aiscope_cfg.by_cgset && !aiscope_cgset_pass(t))
		return false;
	return true;
}

/* Filter for tracepoints that only know pids (classic tracepoints). */
static __always_inline bool aiscope_ids_pass(__u32 tgid, __u32 tid)
{
	if (aiscope_cfg.by_pid && !bpf_map_lookup_elem(&aiscope_pids, &tgid))
		return false;
	if (aiscope_cfg.by_tid && !bpf_map_lookup_elem(&aiscope_tids, &tid))
		return false;
	return true;
}

/* The v2 cgroup; on hybrid hosts, where the v2 cgroup of most tasks is the
 * root and says nothing, the cgroup of the attribution controller (*v1). */
static __always_inline struct cgroup *aiscope_ident_cgroup(struct task_struct *t, __u8 *v1)
{
	struct cgroup *cg = BPF_CORE_READ(t, cgroups, dfl_cgrp), *acg;

	*v1 = 0;
	if (aiscope_cfg.attr_ssid < 0 || BPF_CORE_READ(cg, level) > 0)
		return cg;
	acg = aiscope_task_cgroup(t, aiscope_cfg.attr_ssid);
	if (!acg || BPF_CORE_READ(acg, level) == 0)
		return cg;
	*v1 = 1;
	return acg;
}

static __always_inline void aiscope_task_cgroup_id(struct task_struct *t,
						   struct aiscope_ident *id)
{
	struct cgroup *cg = aiscope_ident_cgroup(t, &id->cgroup_v1);

	id->cgroup_id = BPF_CORE_READ(cg, kn, id);
}

static __always_inline void aiscope_task_ident(struct task_struct *t, struct aiscope_ident *id)
{
	id->pid = BPF_CORE_READ(t, tgid);
	id->tid = BPF_CORE_READ(t, pid);
	id->uid = BPF_CORE_READ(t, real_cred, uid.val);
	BPF_CORE_READ_STR_INTO(&id->comm, t, comm);
	aiscope_task_cgroup_id(t, id);
}

/* A syscall's first five arguments into a[], each read by get(src, n), n
 * 1 to 5 (one load each: a loop makes an offset ctx pointer the verifier
 * refuses) */
#define AISCOPE_SYS_ARGS(a, get, src) do {					\
	(a)[0] = get(src, 1);							\
	(a)[1] = get(src, 2);							\
	(a)[2] = get(src, 3);							\
	(a)[3] = get(src, 4);							\
	(a)[4] = get(src, 5);							\
} while (0)
/* from the classic raw_syscalls/sys_enter record */
#define AISCOPE_SYS_ARG_TP(ctx, n)	((ctx)->args[(n) - 1])
/* from the registers tp_btf and raw_tp sys_enter pass, read with CO-RE */
#define AISCOPE_SYS_ARG_CORE(regs, n)	PT_REGS_PARM##n##_CORE_SYSCALL(regs)

/*
 * A tracepoint's tp_btf and raw_tp programs, prog_btf and prog_raw, with
 * one body, for hooks whose body reads its arguments with CO-RE (which
 * both allow) or only passes them on:
 *
 *	AISCOPE_BTF_RAW(sched_process_exit, exit, struct task_struct *p)
 *	{
 *		return on_exit(p);
 *	}
 *
 * The body is BPF_PROG's, in an __always_inline prog_hook that both
 * programs call: the same instructions as the two written out.
 */
#define AISCOPE_BTF_RAW(tp, prog, args...)					\
static __always_inline int prog##_hook(unsigned long long *ctx);		\
SEC("tp_btf/" #tp)								\
int prog##_btf(unsigned long long *ctx)						\
{										\
	return prog##_hook(ctx);						\
}										\
SEC("raw_tp/" #tp)								\
int prog##_raw(unsigned long long *ctx)						\
{										\
	return prog##_hook(ctx);						\
}										\
static __always_inline int BPF_PROG(prog##_hook, ##args)

/*
 * A kernel function's fentry and kprobe programs, prog_fentry and
 * prog_kprobe, with one body, for hooks whose body reads its arguments with
 * CO-RE (which both allow) or only passes them on:
 *
 *	AISCOPE_FENTRY_KPROBE(oom_kill_process, oomkill, struct oom_control *oc)
 *	{
 *		return on_oom_kill(oc);
 *	}
 *
 * The arguments are taken as BPF_PROG and BPF_KPROBE take them (ctx is
 * passed too), into an __always_inline prog_fk that both programs call: the
 * same instructions as the two written out.
 */
#define AISCOPE_FENTRY_KPROBE(fn, prog, args...)				\
static __always_inline int prog##_fk(void *ctx, ##args);			\
SEC("fentry/" #fn)								\
int prog##_fentry(unsigned long long *ctx)					\
{										\
	_Pragma("GCC diagnostic push")						\
	_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")			\
	return prog##_fk(___bpf_ctx_cast(args));				\
	_Pragma("GCC diagnostic pop")						\
}										\
SEC("kprobe/" #fn)								\
int prog##_kprobe(struct pt_regs *ctx)						\
{										\
	_Pragma("GCC diagnostic push")						\
	_Pragma("GCC diagnostic ignored \"-Wint-conversion\"")			\
	return prog##_fk(___bpf_kprobe_args(args));				\
	_Pragma("GCC diagnostic pop")						\
}										\
static __always_inline int prog##_fk(void *ctx, ##args)

#endif
