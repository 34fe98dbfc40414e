// SPDX-License-Identifier: GPL-2.0
/*
 * oomwatch: OOM kills with their context, and large allocations.
 *
 * The victim hook is mark_victim, which the kernel fires once per task it
 * marks as an OOM victim, in the task that ran into the OOM (the trigger).
 * Its prototype changed (upstream ~6.8, and in 6.1.y backports): it was
 * (int pid) and is (struct task_struct *task, uid_t uid), with the event
 * fields growing from pid alone to comm, total_vm, rss and oom_score_adj.
 * The layout is detected with CO-RE (does trace_event_raw_mark_victim have
 * total_vm?), so one program per mechanism serves both kernels.
 *
 * oom_kill_process (fentry, else kprobe), where it can be hooked, runs just
 * before in the same task and leaves its oom_control for the victim hook:
 * the OOM domain (oc->memcg, NULL for a global OOM), totalpages, points.
 * Without it, user space tells memcg from global OOMs by the kernel stack
 * the victim hook records, and the domain is the nearest memcg, from the
 * triggering task's upward, whose usage sits at its limit.
 *
 * Large allocations come from the raw syscall tracepoints: mmap and mremap
 * at entry (the size asked for), brk at exit (the growth it got).
 *
 * Memcg reclaim: vmscan's mm_vmscan_memcg_reclaim_begin fires when a
 * memcg's pages are reclaimed on its own behalf: a charge over memory.max
 * (v1 limit_in_bytes) before any OOM, memory.high on the way back to user
 * space, and writes to memory.reclaim or a lower limit. The event names no
 * memcg; the charge runs in the charging task (or under its active_memcg),
 * so the memcg is the nearest one from there up whose usage is at its max
 * or over its high. None such (proactive reclaim, a limit written from
 * another cgroup): nothing is sent. One event per memcg per
 * reclaim_window_ns, the rest counted.
 */
#include "aiscope.bpf.h"
#include "oomwatch.h"

/* unlimited page counters hold LONG_MAX / PAGE_SIZE: anything this large
 * (256 PiB of 4 KiB pages) is no limit */
#define LIMIT_NONE_PAGES	(1ULL << 46)
#define MEMCG_MAX_DEPTH		8

const volatile __u64 alloc_min = 512ULL << 20;
/* the window of a memcg user space has not yet timed: short, so that the
 * second event gives it the working set's rate */
const volatile __u64 reclaim_window_ns = 10000000ULL;

/* oom_kill_process's context for the victim hook, by trigger thread. LRU:
 * an entry whose victim hook never ran (filtered out, or the victim was
 * marked already) ages out instead of filling the map. */
#define CTX_MAX_AGE_NS	(10ULL * 1000000000ULL)

AISCOPE_MAP(oom_ctx, BPF_MAP_TYPE_LRU_HASH, __u32, struct oomwatch_ctx, 256);

/* brk: the break before a large request, by thread, until the syscall ends */
AISCOPE_MAP(brk_start, BPF_MAP_TYPE_LRU_HASH, __u32, __u64, 1024);

/* memcg reclaim: per memcg id, the last event sent and the window until
 * the next (user space sets it). LRU: a thousand memcgs reclaiming at
 * once push out the oldest, which then send at once (more events, none
 * missed). */
AISCOPE_MAP(reclaim_last, BPF_MAP_TYPE_LRU_HASH, __u64, struct oomwatch_reclaim_seen, 4096);

/* per memcg id, the window user space set from its working set's trend:
 * a map of its own, written by user space only, so that its update never
 * overwrites a reclaim_last entry BPF changed meanwhile (a held-back count
 * lost). Gone (LRU) or not set yet: reclaim_window_ns. */
AISCOPE_MAP(reclaim_windows, BPF_MAP_TYPE_LRU_HASH, __u64, __u64, 4096);

/* Before 6.2, mm->rss_stat was one struct of atomic counters; since, it is
 * an array of percpu_counters (whose .count is what get_mm_counter reads). */
struct mm_rss_stat___o {
	atomic_long_t count[4];
} __attribute__((preserve_access_index));

struct mm_struct___o {
	struct mm_rss_stat___o rss_stat;
} __attribute__((preserve_access_index));

struct mm_struct___pcpu {
	struct percpu_counter rss_stat[4];
} __attribute__((preserve_access_index));

/* ---- memory cgroups ---- */

static __always_inline struct mem_cgroup *task_memcg(struct task_struct *t)
{
	struct cgroup_subsys_state *css = NULL;
	struct css_set *cset;
	int id;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, memory_cgrp_id))
		return NULL;
	id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
	cset = BPF_CORE_READ(t, cgroups);
	if (!cset)
		return NULL;
	bpf_core_read(&css, sizeof(css), &cset->subsys[id & 15]);
	if (!css)
		return NULL;
	return (void *)css - bpf_core_field_offset(struct mem_cgroup, css);
}

static __always_inline void memcg_read(struct mem_cgroup *m, struct oomwatch_memcg *out)
{
	__u64 max = BPF_CORE_READ(m, memory.max);

	out->id = BPF_CORE_READ(m, css.cgroup, kn, id);
	out->max_pages = max >= LIMIT_NONE_PAGES ? OOMWATCH_NO_LIMIT : max;
	out->usage_pages = BPF_CORE_READ(m, memory.usage.counter);
}

static __always_inline struct mem_cgroup *memcg_parent(struct mem_cgroup *m)
{
	struct cgroup_subsys_state *p = BPF_CORE_READ(m, css.parent);

	if (!p)
		return NULL;
	return (void *)p - bpf_core_field_offset(struct mem_cgroup, css);
}

/* The memcg whose limit a charge from m ran into: the nearest one (m or an
 * ancestor) whose usage is within a charge batch or so of its limit; else
 * the nearest limited one. near_only: report nothing but a full one. */
static __always_inline bool memcg_domain(struct mem_cgroup *m, struct oomwatch_memcg *out,
					 bool near_only)
{
	struct oomwatch_memcg r;
	bool have = false;

	for (int i = 0; i < MEMCG_MAX_DEPTH && m; i++) {
		__u64 slack;

		memcg_read(m, &r);
		if (r.max_pages != OOMWATCH_NO_LIMIT) {
			slack = r.max_pages >> 6;
			if (slack < 512)
				slack = 512;
			if (r.usage_pages + slack >= r.max_pages) {
				*out = r;
				return true;
			}
			if (!have && !near_only) {
				*out = r;
				have = true;
			}
		}
		m = memcg_parent(m);
	}
	return have;
}

/* ---- kill events ---- */

/* Since 6.2 a counter is a percpu_counter: .count is the sum folded so
 * far, each CPU holds up to a batch (32 pages or more) of its own. The
 * exact figure adds them, as percpu_counter_sum() does (and the kernel's
 * own OOM report on 7.x): each CPU's s32 at counters + __per_cpu_offset[cpu],
 * the array's address from kallsyms (untyped: no BTF needed; absent, the
 * folded count alone). A CPU taken offline has had its share folded into
 * .count.
 *
 * This runs in the OOM path (mark_victim, under the victim's task_lock),
 * so it must never run long. One loop over the CPUs reads the three
 * counters; it is bounded three times over: by SUM_MAX_CPUS (a constant),
 * by nr_cpus (the possible CPUs user space counted: rodata, which the
 * verifier knows, so it walks that many iterations and no more) and by the
 * kernel's own nr_cpu_ids, read here (the entries of __per_cpu_offset
 * past it are not CPUs': on x86 they hold the boot offset, whose reads
 * would add garbage). Unreadable, the folded counts alone. Worst case
 * SUM_MAX_CPUS x 4 probe reads per kill; a host with more CPUs than that
 * gets the first SUM_MAX_CPUS CPUs' shares only. */
#define SUM_MAX_CPUS	1024

const volatile __u32 nr_cpus = 1;
extern const void __per_cpu_offset __ksym __weak;
extern const void nr_cpu_ids __ksym __weak;

/* how many CPUs' shares to add: min(nr_cpu_ids, nr_cpus, SUM_MAX_CPUS) */
static __always_inline __u32 sum_cpus(void)
{
	const unsigned int *kn = &nr_cpu_ids;
	unsigned int n = 0;

	if (!kn || bpf_probe_read_kernel(&n, sizeof(n), kn))
		return 0;
	if (n > nr_cpus)
		n = nr_cpus;
	return n < SUM_MAX_CPUS ? n : SUM_MAX_CPUS;
}

static __always_inline void rss_percpu(struct mm_struct *mm, long v[3])
{
	struct mm_struct___pcpu *pcpu = (void *)mm;
	const unsigned long *offs = &__per_cpu_offset;
	__s32 *ctr[3];
	__u32 n;

	v[0] = BPF_CORE_READ(pcpu, rss_stat[MM_ANONPAGES].count);
	v[1] = BPF_CORE_READ(pcpu, rss_stat[MM_FILEPAGES].count);
	v[2] = BPF_CORE_READ(pcpu, rss_stat[MM_SHMEMPAGES].count);
	if (!offs)
		return;
	n = sum_cpus();
	ctr[0] = BPF_CORE_READ(pcpu, rss_stat[MM_ANONPAGES].counters);
	ctr[1] = BPF_CORE_READ(pcpu, rss_stat[MM_FILEPAGES].counters);
	ctr[2] = BPF_CORE_READ(pcpu, rss_stat[MM_SHMEMPAGES].counters);
	if (!ctr[0] || !ctr[1] || !ctr[2])
		return;
	for (__u32 cpu = 0; cpu < SUM_MAX_CPUS && cpu < nr_cpus; cpu++) {
		unsigned long off;
		__s32 c;

		if (cpu >= n || bpf_probe_read_kernel(&off, sizeof(off), &offs[cpu]))
			break;
		/* a failed read leaves c zeroed: no branch, nothing added */
		bpf_probe_read_kernel(&c, sizeof(c), (void *)ctr[0] + off);
		v[0] += c;
		bpf_probe_read_kernel(&c, sizeof(c), (void *)ctr[1] + off);
		v[1] += c;
		bpf_probe_read_kernel(&c, sizeof(c), (void *)ctr[2] + off);
		v[2] += c;
	}
}

static __always_inline void victim_mm(struct task_struct *t, struct oomwatch_kill *e)
{
	struct mm_struct *mm = BPF_CORE_READ(t, mm);
	struct mm_struct___o *old;
	long v[3];

	e->oom_score_adj = BPF_CORE_READ(t, signal, oom_score_adj);
	e->flags |= OOMWATCH_F_ADJ;
	if (!mm)
		return;
	e->total_vm_pages = BPF_CORE_READ(mm, total_vm);
	if (bpf_core_type_exists(struct mm_rss_stat___o)) {
		old = (void *)mm;
		v[0] = BPF_CORE_READ(old, rss_stat.count[MM_ANONPAGES].counter);
		v[1] = BPF_CORE_READ(old, rss_stat.count[MM_FILEPAGES].counter);
		v[2] = BPF_CORE_READ(old, rss_stat.count[MM_SHMEMPAGES].counter);
	} else {
		rss_percpu(mm, v);
	}
	e->anon_pages = v[0] > 0 ? v[0] : 0;
	e->file_pages = v[1] > 0 ? v[1] : 0;
	e->shmem_pages = v[2] > 0 ? v[2] : 0;
	e->pgtables_bytes = BPF_CORE_READ(mm, pgtables_bytes.counter);
	e->flags |= OOMWATCH_F_MM;
}

/* The parts every victim record has. The caller reserved e and checked it
 * once: a NULL check here, after inlining, would be a second one, which
 * older verifiers (6.1) follow as if the reservation could have failed in
 * between, and reject the program for a reference never released. */
static __always_inline void kill_fill(void *ctx, struct oomwatch_kill *e)
{
	struct task_struct *cur = (void *)bpf_get_current_task();
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct oomwatch_ctx *c;
	long n;

	__builtin_memset(e, 0, sizeof(*e));
	e->kind = OOMWATCH_EV_KILL;
	e->ts = aiscope_now();
	e->order = -1;
	aiscope_task_ident(cur, &e->trigger);
	c = bpf_map_lookup_elem(&oom_ctx, &tid);
	/* oom_kill_process runs just before, dump_header's printing in
	 * between: an older entry is another OOM's */
	if (c && e->ts - c->ts > CTX_MAX_AGE_NS) {
		bpf_map_delete_elem(&oom_ctx, &tid);
		c = NULL;
	}
	if (c) {
		e->memcg = c->memcg;
		e->totalpages = c->totalpages;
		e->points = c->points;
		e->order = c->order;
		e->scope = c->scope;
		e->flags |= OOMWATCH_F_CONTEXT;
		if (c->memcg.id)
			e->flags |= OOMWATCH_F_MEMCG;
		bpf_map_delete_elem(&oom_ctx, &tid);
	} else {
		/* a memcg OOM is the limit of the charging task's memcg or of
		 * one of its ancestors: the nearest full one */
		struct mem_cgroup *m = task_memcg(cur);

		if (m && memcg_domain(m, &e->memcg, true))
			e->flags |= OOMWATCH_F_MEMCG;
	}
	n = bpf_get_stack(ctx, e->stack, sizeof(e->stack), 0);
	e->nframes = n > 0 ? n / sizeof(__u64) : 0;
}

/* The victim's own memcg. */
static __always_inline void victim_memcg(struct task_struct *t, struct oomwatch_kill *e)
{
	struct mem_cgroup *m = task_memcg(t);

	if (m)
		memcg_read(m, &e->own);
}

/* A victim known by its task_struct (tp_btf, raw_tp on the new layout). */
static __always_inline int victim_task(void *ctx, struct task_struct *t, __u32 uid, bool has_uid)
{
	struct oomwatch_kill *e;

	if (!aiscope_task_pass(t))
		return 0;
	e = aiscope_reserve(sizeof(*e));
	if (!e)
		return 0;
	kill_fill(ctx, e);
	aiscope_task_ident(t, &e->victim);
	if (has_uid)
		e->victim.uid = uid;	/* the event's: the task's real uid */
	e->flags |= OOMWATCH_F_TASK | OOMWATCH_F_UID;
	victim_mm(t, e);
	victim_memcg(t, e);
	aiscope_submit(e);
	return 0;
}

/*
 * The victim task oom_kill_process chose, by the context it left for this
 * thread, when it is PID's: mark_victim runs inside that call, which holds
 * a reference on it. Else NULL.
 */
static __always_inline struct task_struct *chosen_task(__u32 pid)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct oomwatch_ctx *c = bpf_map_lookup_elem(&oom_ctx, &tid);
	struct task_struct *t;

	if (!c || !c->chosen || aiscope_now() - c->ts > CTX_MAX_AGE_NS)
		return NULL;
	t = (struct task_struct *)c->chosen;
	return (__u32)BPF_CORE_READ(t, pid) == pid ? t : NULL;
}

/* The old layout (5.10, and 6.1 before the backport): a pid, nothing
 * else. The OOM's trigger is most often its victim too (a memcg OOM kills
 * the task charging): then its task is at hand, for its cgroups, uid and
 * mm, as under the new layout; else oom_kill_process's choice is, where
 * that hook runs (one child of a container's killed for another's charge:
 * /proc would be read after it is gone). */
static __always_inline int victim_pid(void *ctx, __u32 pid)
{
	struct oomwatch_kill *e;
	struct task_struct *t;

	if (pid == (__u32)bpf_get_current_pid_tgid())
		return victim_task(ctx, (struct task_struct *)bpf_get_current_task(), 0, false);
	t = chosen_task(pid);
	if (t)
		return victim_task(ctx, t, 0, false);
	if (!aiscope_ids_pass(pid, pid))
		return 0;
	e = aiscope_reserve(sizeof(*e));
	if (!e)
		return 0;
	kill_fill(ctx, e);
	e->victim.pid = pid;
	e->victim.tid = pid;
	aiscope_submit(e);
	return 0;
}

static __always_inline bool victim_has_task(void)
{
	return bpf_core_field_exists(struct trace_event_raw_mark_victim, total_vm);
}

SEC("tp_btf/mark_victim")
int victim_btf(__u64 *ctx)
{
	if (victim_has_task())
		return victim_task(ctx, (struct task_struct *)ctx[0], (__u32)ctx[1], true);
	return victim_pid(ctx, (__u32)ctx[0]);
}

SEC("raw_tp/mark_victim")
int victim_raw(struct bpf_raw_tracepoint_args *ctx)
{
	if (victim_has_task())
		return victim_task(ctx, (struct task_struct *)ctx->args[0], (__u32)ctx->args[1], true);
	return victim_pid(ctx, (__u32)ctx->args[0]);
}

/* Classic: the fields the event carries (a __data_loc comm on the new
 * layout; the old one has the pid alone). */
SEC("tracepoint/oom/mark_victim")
int victim_tp(struct trace_event_raw_mark_victim *tp)
{
	struct oomwatch_kill *e;
	__u32 pid = BPF_CORE_READ(tp, pid);
	struct task_struct *t;

	/* the trigger is often the victim itself: then its task is at hand;
	 * else oom_kill_process's choice, where that hook runs */
	if (pid == (__u32)bpf_get_current_pid_tgid())
		t = (struct task_struct *)bpf_get_current_task();
	else
		t = chosen_task(pid);
	if (t)
		return victim_task(tp, t, victim_has_task() ? BPF_CORE_READ(tp, uid) : 0,
				   victim_has_task());
	if (!aiscope_ids_pass(pid, pid))
		return 0;
	if (aiscope_cfg.by_uid && victim_has_task() && BPF_CORE_READ(tp, uid) != aiscope_cfg.uid)
		return 0;
	e = aiscope_reserve(sizeof(*e));
	if (!e)
		return 0;
	kill_fill(tp, e);
	e->victim.pid = pid;
	e->victim.tid = pid;
	if (bpf_core_field_exists(tp->__data_loc_comm)) {
		__u32 loc = BPF_CORE_READ(tp, __data_loc_comm);

		bpf_probe_read_kernel_str(e->victim.comm, sizeof(e->victim.comm),
					  (void *)tp + (loc & 0xffff));
	}
	if (victim_has_task()) {
		/* the event's sizes are in kB */
		e->victim.uid = BPF_CORE_READ(tp, uid);
		e->total_vm_pages = BPF_CORE_READ(tp, total_vm);
		e->anon_pages = BPF_CORE_READ(tp, anon_rss);
		e->file_pages = BPF_CORE_READ(tp, file_rss);
		e->shmem_pages = BPF_CORE_READ(tp, shmem_rss);
		e->pgtables_bytes = BPF_CORE_READ(tp, pgtables) << 10;
		e->oom_score_adj = BPF_CORE_READ(tp, oom_score_adj);
		e->flags |= OOMWATCH_F_MM | OOMWATCH_F_ADJ | OOMWATCH_F_UID |
			    OOMWATCH_F_KB;
	}
	aiscope_submit(e);
	return 0;
}

/* ---- oom_kill_process: the OOM's context ---- */

static __always_inline int on_oom_kill(struct oom_control *oc)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct oomwatch_ctx c = {};
	struct mem_cgroup *m = BPF_CORE_READ(oc, memcg);

	c.ts = aiscope_now();
	c.totalpages = BPF_CORE_READ(oc, totalpages);
	c.points = BPF_CORE_READ(oc, chosen_points);
	c.order = BPF_CORE_READ(oc, order);
	c.scope = m ? OOMWATCH_SCOPE_MEMCG : OOMWATCH_SCOPE_GLOBAL;
	c.chosen = (__u64)BPF_CORE_READ(oc, chosen);
	if (m)
		memcg_read(m, &c.memcg);
	if (bpf_map_update_elem(&oom_ctx, &tid, &c, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
	return 0;
}

AISCOPE_FENTRY_KPROBE(oom_kill_process, oomkill, struct oom_control *oc)
{
	return on_oom_kill(oc);
}

/* ---- memcg reclaim: a charge at the limit ---- */

struct page_counter___high {
	unsigned long high;
} __attribute__((preserve_access_index));

static __always_inline __u64 memcg_high(struct mem_cgroup *m)
{
	struct page_counter___high *pc = (void *)&m->memory;
	__u64 high;

	/* page_counter.high since 5.8; before, memcg->high (not read:
	 * memory.max reclaim still is) */
	if (!bpf_core_field_exists(pc->high))
		return OOMWATCH_NO_LIMIT;
	high = BPF_CORE_READ(pc, high);
	return high >= LIMIT_NONE_PAGES ? OOMWATCH_NO_LIMIT : high;
}

/* The memcg a reclaim is for: the nearest from m up at its max (within a
 * charge batch, as memcg_domain) or over its high. */
static __always_inline bool reclaim_domain(struct mem_cgroup *m, struct oomwatch_reclaim *e)
{
	for (int i = 0; i < MEMCG_MAX_DEPTH && m; i++) {
		struct oomwatch_memcg r;
		__u64 high = memcg_high(m), slack;

		memcg_read(m, &r);
		slack = r.max_pages >> 6;
		if (slack < 512)
			slack = 512;
		if (r.max_pages != OOMWATCH_NO_LIMIT && r.usage_pages + slack >= r.max_pages) {
			e->memcg = r;
			e->high_pages = high;
			return true;
		}
		if (high != OOMWATCH_NO_LIMIT && r.usage_pages > high) {
			e->memcg = r;
			e->high_pages = high;
			e->flags |= OOMWATCH_RF_HIGH;
			return true;
		}
		m = memcg_parent(m);
	}
	return false;
}

static __always_inline int on_reclaim(__s32 order)
{
	struct task_struct *t = (void *)bpf_get_current_task();
	struct oomwatch_reclaim_seen *seen, init = {};
	struct oomwatch_reclaim r = {}, *e;
	struct mem_cgroup *m = NULL;
	__u64 now, skipped, window, *set;

	if (!aiscope_task_pass(t))
		return 0;
	/* a kernel charge on another memcg's behalf names it here */
	if (bpf_core_field_exists(t->active_memcg))
		m = BPF_CORE_READ(t, active_memcg);
	if (!m)
		m = task_memcg(t);
	if (!m || !reclaim_domain(m, &r))
		return 0;
	now = aiscope_now();
	seen = aiscope_lookup_or_init(&reclaim_last, &r.memcg.id, &init);
	if (!seen)
		return 0;
	set = bpf_map_lookup_elem(&reclaim_windows, &r.memcg.id);
	window = set && *set ? *set : reclaim_window_ns;
	if (seen->ts && now - seen->ts < window) {
		__sync_fetch_and_add(&seen->skipped, 1);
		return 0;
	}
	seen->ts = now;
	skipped = seen->skipped;
	seen->skipped = 0;
	e = aiscope_reserve(sizeof(*e));
	if (!e)
		return 0;
	__builtin_memcpy(e, &r, sizeof(*e));
	e->kind = OOMWATCH_EV_RECLAIM;
	e->ts = now;
	e->order = order;
	e->skipped = skipped;
	aiscope_task_ident(t, &e->task);
	/* the kill may follow within milliseconds: wake the reader now
	 * (one event per memcg per window keeps the wakeups few) */
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

AISCOPE_BTF_RAW(mm_vmscan_memcg_reclaim_begin, reclaim, int order)
{
	return on_reclaim(order);
}

SEC("tracepoint/vmscan/mm_vmscan_memcg_reclaim_begin")
int reclaim_tp(struct trace_event_raw_mm_vmscan_direct_reclaim_begin_template *tp)
{
	return on_reclaim(BPF_CORE_READ(tp, order));
}

/* ---- large allocations ---- */

static __always_inline int alloc_event(__u32 sys, __u64 size, __u64 prot, __u64 flags, __s64 fd)
{
	struct task_struct *t = (void *)bpf_get_current_task();
	struct oomwatch_alloc *e;
	struct mem_cgroup *m;

	if (!aiscope_task_pass(t))
		return 0;
	e = aiscope_reserve(sizeof(*e));
	if (!e)
		return 0;
	__builtin_memset(e, 0, sizeof(*e));
	e->kind = OOMWATCH_EV_ALLOC;
	e->syscall = sys;
	e->ts = aiscope_now();
	e->size = size;
	e->prot = prot;
	e->flags = flags;
	e->fd = fd;
	aiscope_task_ident(t, &e->task);
	m = task_memcg(t);
	if (m && !memcg_domain(m, &e->memcg, false))
		memcg_read(m, &e->memcg);
	aiscope_submit(e);
	return 0;
}

/* Each call's own tracepoint first (syscalls/sys_enter_mmap, ...): the
 * kernel tests the syscall's bit in its enabled set and runs nothing for
 * any other syscall, where a program on the raw sys_enter/sys_exit runs
 * for every syscall of every task. The raw ones, with the number tested
 * here, where the per-syscall events are missing (no CONFIG_FTRACE_SYSCALLS). */
#if defined(__TARGET_ARCH_x86)
#define NR_MMAP		9
#define NR_MREMAP	25
#define NR_BRK		12
#define SYSCALL_NR(regs)	BPF_CORE_READ(regs, orig_ax)
#elif defined(__TARGET_ARCH_arm64)
#define NR_MMAP		222
#define NR_MREMAP	216
#define NR_BRK		214
#define SYSCALL_NR(regs)	BPF_CORE_READ(regs, syscallno)
#endif

/* A 32-bit task's syscall numbers are another table's (x86: TS_COMPAT in
 * thread_info.status while it runs one; arm64: TIF_32BIT). */
static __always_inline bool compat_task(void)
{
	struct task_struct *t = (void *)bpf_get_current_task();

#if defined(__TARGET_ARCH_x86)
	return BPF_CORE_READ(t, thread_info.status) & 0x0002;
#else
	return BPF_CORE_READ(t, thread_info.flags) & (1UL << 22);
#endif
}

static __always_inline bool alloc_nr(long id)
{
	return id == NR_MMAP || id == NR_MREMAP || id == NR_BRK;
}

/* args: the syscall's first five arguments */
static __always_inline int alloc_enter(long id, const __u64 *a)
{
	struct task_struct *t;
	__u64 cur;
	__u32 tid;

	if (compat_task())
		return 0;
	switch (id) {
	case NR_MMAP:	/* mmap(addr, len, prot, flags, fd, off) */
		if (a[1] < alloc_min)
			return 0;
		return alloc_event(OOMWATCH_SYS_MMAP, a[1], a[2], a[3], (int)a[4]);
	case NR_MREMAP:	/* mremap(old_addr, old_len, new_len, flags, new_addr): the growth */
		if (a[2] <= a[1] || a[2] - a[1] < alloc_min)
			return 0;
		return alloc_event(OOMWATCH_SYS_MREMAP, a[2] - a[1], 0, a[3], -1);
	default:	/* brk(brk): remember where the break was, until the exit */
		t = (void *)bpf_get_current_task();
		cur = BPF_CORE_READ(t, mm, brk);
		if (a[0] <= cur || a[0] - cur < alloc_min)
			return 0;
		tid = (__u32)bpf_get_current_pid_tgid();
		if (bpf_map_update_elem(&brk_start, &tid, &cur, BPF_ANY))
			aiscope_count_lost(AISCOPE_LOST_MAP);
		return 0;
	}
}

/* brk returns the new break, or the old one when it could not move it */
static __always_inline int alloc_exit(long id, __u64 ret)
{
	__u32 tid;
	__u64 *start, from;

	if (id != NR_BRK)
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	start = bpf_map_lookup_elem(&brk_start, &tid);
	if (!start)
		return 0;
	from = *start;
	bpf_map_delete_elem(&brk_start, &tid);
	if (ret <= from || ret - from < alloc_min)
		return 0;
	return alloc_event(OOMWATCH_SYS_BRK, ret - from, 0, 0, -1);
}

static __always_inline int alloc_enter_regs(struct pt_regs *regs, long id)
{
	__u64 a[5];

	if (!alloc_nr(id))
		return 0;
	AISCOPE_SYS_ARGS(a, AISCOPE_SYS_ARG_CORE, regs);
	return alloc_enter(id, a);
}

AISCOPE_BTF_RAW(sys_enter, sysenter, struct pt_regs *regs, long id)
{
	return alloc_enter_regs(regs, id);
}

SEC("tracepoint/raw_syscalls/sys_enter")
int sysenter_tp(struct trace_event_raw_sys_enter *ctx)
{
	__u64 a[5];
	long id = ctx->id;

	if (!alloc_nr(id))
		return 0;
	AISCOPE_SYS_ARGS(a, AISCOPE_SYS_ARG_TP, ctx);
	return alloc_enter(id, a);
}

AISCOPE_BTF_RAW(sys_exit, sysexit, struct pt_regs *regs, long ret)
{
	return alloc_exit(SYSCALL_NR(regs), ret);
}

SEC("tracepoint/raw_syscalls/sys_exit")
int sysexit_tp(struct trace_event_raw_sys_exit *ctx)
{
	return alloc_exit(ctx->id, ctx->ret);
}

/* The per-syscall records: the arguments after the syscall number, as in
 * raw_syscalls/sys_enter; a program reads only the ones its syscall has
 * (the kernel refuses to attach one that reads past its record). */
SEC("tracepoint/syscalls/sys_enter_mmap")
int mmap_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 a[5] = { ctx->args[0], ctx->args[1], ctx->args[2], ctx->args[3], ctx->args[4] };

	return alloc_enter(NR_MMAP, a);
}

SEC("tracepoint/syscalls/sys_enter_mremap")
int mremap_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 a[5] = { ctx->args[0], ctx->args[1], ctx->args[2], ctx->args[3], ctx->args[4] };

	return alloc_enter(NR_MREMAP, a);
}

SEC("tracepoint/syscalls/sys_enter_brk")
int brk_enter(struct trace_event_raw_sys_enter *ctx)
{
	__u64 a[5] = { ctx->args[0] };

	return alloc_enter(NR_BRK, a);
}

SEC("tracepoint/syscalls/sys_exit_brk")
int brk_exit(struct trace_event_raw_sys_exit *ctx)
{
	return alloc_exit(NR_BRK, ctx->ret);
}

char LICENSE[] SEC("license") = "GPL";
