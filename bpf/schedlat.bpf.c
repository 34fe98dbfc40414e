// SPDX-License-Identifier: GPL-2.0
/*
 * schedlat: run-queue latency per task, aggregated in the kernel.
 *
 * A task is enqueued when it is woken (sched_wakeup, sched_wakeup_new) or
 * when it leaves the CPU still runnable (preempted, or yielding); its wait
 * ends when sched_switch puts it on a CPU. Three program families cover the
 * same hooks: tp_btf (BTF-typed task pointers), raw_tp (the same pointers as
 * raw arguments, read with CO-RE) and classic tracepoints (pids only; the
 * woken task's identity comes from the last time it left a CPU).
 */
#include "aiscope.bpf.h"
#include "aiscope_hist.h"
#include "schedlat.h"

#define TASK_RUNNING	0
/* Classic sched_switch reports prev_state TASK_REPORT-encoded: the low
 * byte holds the sleep states, a higher bit marks a preempted task. */
#define TP_STATE_SLEEP_MASK	0xff

const volatile __u32 key_by = SCHEDLAT_BY_PID;
const volatile __u64 min_ns;		/* > 0: stream waits longer than this */
const volatile bool have_filter;	/* classic mode: filters need the task cache */

__u32 epoch;				/* written by user space each interval */

AISCOPE_MAP(enqueued, BPF_MAP_TYPE_HASH, __u32,		/* tid */
	    __u64,					/* enqueue time */
	    16384);					/* tasks runnable at once */

/* rows of two intervals. Preallocated: every key is inserted anew at
 * each interval, and an on-demand allocation in this context can fail
 * in such a burst */
AISCOPE_MAP(stats, BPF_MAP_TYPE_HASH, struct schedlat_key, struct schedlat_stats, 4096);

AISCOPE_MAP(tasks, BPF_MAP_TYPE_HASH, __u32, struct schedlat_task,
	    1);				/* sized by user space in classic mode */

AISCOPE_MAP(pending, BPF_MAP_TYPE_HASH, __u32, struct schedlat_pending,
	    1);				/* sized by user space in classic mode */

static const struct schedlat_stats zero_stats;

/* A task as the hooks see it: pid and tid already read, and where the rest
 * of its identity comes from (its task_struct, or the classic-tracepoint
 * cache). Only the cheap fields are read per event; the identity is built
 * when a stats row is created. */
struct who {
	struct task_struct *task;
	const struct aiscope_ident *cached;
	__u32 pid;
	__u32 tid;
};

static __always_inline void enqueue(__u32 tid, __u64 now)
{
	if (bpf_map_update_elem(&enqueued, &tid, &now, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
}

/* For --by pid the row is the process: name it after its leader. Streamed
 * waits name the thread that waited. */
static __always_inline void fill_ident(const struct who *w, struct aiscope_ident *id)
{
	struct task_struct *t = w->task;	/* CO-RE macros want a plain pointer */

	if (w->cached) {
		*id = *w->cached;
		return;
	}
	aiscope_task_ident(t, id);
	if (key_by == SCHEDLAT_BY_PID && !min_ns)
		BPF_CORE_READ_STR_INTO(&id->comm, t, group_leader, comm);
}

static __always_inline struct schedlat_stats *stats_of(const struct who *w)
{
	struct schedlat_key key = { .epoch = *(volatile __u32 *)&epoch };
	struct aiscope_ident id;
	struct schedlat_stats *st;

	switch (key_by) {
	case SCHEDLAT_BY_PID:
		key.id = w->pid;
		break;
	case SCHEDLAT_BY_TID:
		key.id = w->tid;
		break;
	case SCHEDLAT_BY_CGROUP:
		if (w->cached) {
			id.cgroup_id = w->cached->cgroup_id;
			id.cgroup_v1 = w->cached->cgroup_v1;
		} else {
			aiscope_task_cgroup_id(w->task, &id);
		}
		key.id = id.cgroup_id;
		key.cgroup_v1 = id.cgroup_v1;
		break;
	default:
		break;
	}
	st = bpf_map_lookup_elem(&stats, &key);
	if (st)
		return st;
	fill_ident(w, &id);
	st = aiscope_lookup_or_init(&stats, &key, &zero_stats);
	if (st && !st->ident.tid)
		st->ident = id;
	return st;
}

static __always_inline void emit_wait(const struct who *w, __u64 now, __u64 wait,
				      struct task_struct *prev)
{
	struct schedlat_event *ev = aiscope_reserve(sizeof(*ev));

	if (!ev)
		return;
	ev->ts = now;
	ev->wait_ns = wait;
	fill_ident(w, &ev->task);
	ev->prev_pid = BPF_CORE_READ(prev, tgid);
	ev->prev_tid = BPF_CORE_READ(prev, pid);
	BPF_CORE_READ_STR_INTO(&ev->prev_comm, prev, comm);
	ev->cpu = bpf_get_smp_processor_id();
	ev->pad = 0;
	aiscope_submit(ev);
}

static __always_inline void add_wait(struct schedlat_stats *st, __u64 wait);

static __always_inline void account_wait(const struct who *w, __u64 now, __u64 wait,
					 struct task_struct *prev)
{
	struct schedlat_stats *st;

	if (min_ns) {
		if (wait >= min_ns)
			emit_wait(w, now, wait, prev);
		return;
	}
	st = stats_of(w);
	if (!st)
		return;
	add_wait(st, wait);
}

static __always_inline void add_wait(struct schedlat_stats *st, __u64 wait)
{
	__u32 slot;

	slot = hist_bucket(wait);
	/* keep the bound check and the index in one register for the verifier */
	asm volatile("" : "+r"(slot));
	if (slot >= HIST_BUCKETS)
		return;
	__sync_fetch_and_add(&st->hist[slot], 1);
	__sync_fetch_and_add(&st->runs, 1);
	__sync_fetch_and_add(&st->wait_ns, wait);
	if (wait > st->max_ns)
		st->max_ns = wait;
}

/* The wait of tid ends now; 0 when it was not enqueued (filtered out, or
 * enqueued before we attached). */
static __always_inline __u64 dequeue(__u32 tid, __u64 now)
{
	__u64 *tsp = bpf_map_lookup_elem(&enqueued, &tid);
	__u64 ts;

	if (!tsp)
		return 0;
	ts = *tsp;
	bpf_map_delete_elem(&enqueued, &tid);
	return now > ts ? now - ts : 0;
}

static __always_inline void count_event(const struct who *w, bool migration)
{
	struct schedlat_stats *st;

	if (min_ns)
		return;
	st = stats_of(w);
	if (!st)
		return;
	if (migration)
		__sync_fetch_and_add(&st->migrations, 1);
	else
		__sync_fetch_and_add(&st->preemptions, 1);
}

/* A task leaving the CPU still runnable waits again from now. Like the
 * kernel's nivcsw, that is an involuntary switch whether it was preempted
 * or rescheduled on its way back to user space. The idle tasks (tid 0)
 * always leave runnable and never wait. */
static __always_inline int on_switch(const struct who *prev, bool runnable,
				     const struct who *next, struct task_struct *prev_task)
{
	__u64 now = aiscope_now(), wait;

	if (runnable && prev->tid && (prev->cached || aiscope_task_pass(prev->task))) {
		enqueue(prev->tid, now);
		count_event(prev, false);
	}
	wait = dequeue(next->tid, now);
	if (wait)
		account_wait(next, now, wait, prev_task);
	return 0;
}

static __always_inline int on_wakeup(struct task_struct *p, __u32 tid)
{
	if (tid && aiscope_task_pass(p))
		enqueue(tid, aiscope_now());
	return 0;
}

static __always_inline int on_migrate(const struct who *w)
{
	if (w->cached || aiscope_task_pass(w->task))
		count_event(w, true);
	return 0;
}

static __always_inline int on_exit(__u32 tid)
{
	bpf_map_delete_elem(&enqueued, &tid);
	bpf_map_delete_elem(&tasks, &tid);
	bpf_map_delete_elem(&pending, &tid);
	return 0;
}

/* ---- tp_btf: task pointers the verifier knows, read with plain loads ---- */

static __always_inline long task_state_btf(struct task_struct *t)
{
	if (bpf_core_field_exists(t->__state))
		return t->__state;
	return ((struct task_struct___o *)t)->state;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(wakeup_btf, struct task_struct *p)
{
	return on_wakeup(p, p->pid);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(wakeup_new_btf, struct task_struct *p)
{
	return on_wakeup(p, p->pid);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct who p = { .task = prev, .pid = prev->tgid, .tid = prev->pid };
	struct who n = { .task = next, .pid = next->tgid, .tid = next->pid };

	return on_switch(&p, preempt || task_state_btf(prev) == TASK_RUNNING, &n, prev);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(migrate_btf, struct task_struct *t)
{
	struct who w = { .task = t, .pid = t->tgid, .tid = t->pid };

	return on_migrate(&w);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_btf, struct task_struct *t)
{
	return on_exit(t->pid);
}

/* ---- raw_tp: the same pointers as raw arguments, read with CO-RE ---- */

static __always_inline void who_raw(struct who *w, struct task_struct *t)
{
	w->task = t;
	w->cached = NULL;
	w->pid = BPF_CORE_READ(t, tgid);
	w->tid = BPF_CORE_READ(t, pid);
}

static __always_inline int migrate_raw_task(struct task_struct *t)
{
	struct who w;

	who_raw(&w, t);
	return on_migrate(&w);
}

/* sched_process_exit and do_exit run in the exiting task */
static __always_inline int exit_current(void)
{
	return on_exit((__u32)bpf_get_current_pid_tgid());
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(wakeup_raw, struct task_struct *p)
{
	return on_wakeup(p, BPF_CORE_READ(p, pid));
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(wakeup_new_raw, struct task_struct *p)
{
	return on_wakeup(p, BPF_CORE_READ(p, pid));
}

SEC("raw_tp/sched_switch")
int BPF_PROG(switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct who p, n;

	who_raw(&p, prev);
	who_raw(&n, next);
	return on_switch(&p, preempt || aiscope_task_state(prev) == TASK_RUNNING, &n, prev);
}

SEC("raw_tp/sched_migrate_task")
int BPF_PROG(migrate_raw, struct task_struct *t)
{
	return migrate_raw_task(t);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(exit_raw, struct task_struct *t)
{
	return on_exit(BPF_CORE_READ(t, pid));
}

/* ---- function hooks, for kernels whose tracepoints cannot be used ----
 *
 * ttwu_do_activate() puts a woken task on a run queue (a wakeup of a task
 * still queued does not reach it, and needs no new timestamp);
 * finish_task_switch(prev) runs on the next task, which is current. */

SEC("fentry/ttwu_do_activate")
int BPF_PROG(wakeup_fentry, struct rq *rq, struct task_struct *p)
{
	return on_wakeup(p, p->pid);
}

SEC("fentry/wake_up_new_task")
int BPF_PROG(wakeup_new_fentry, struct task_struct *p)
{
	return on_wakeup(p, p->pid);
}

SEC("fentry/finish_task_switch")
int BPF_PROG(switch_fentry, struct task_struct *prev)
{
	struct who p = { .task = prev, .pid = prev->tgid, .tid = prev->pid }, n;

	who_raw(&n, (struct task_struct *)bpf_get_current_task());
	return on_switch(&p, task_state_btf(prev) == TASK_RUNNING, &n, prev);
}

SEC("fentry/set_task_cpu")
int BPF_PROG(migrate_fentry, struct task_struct *t)
{
	struct who w = { .task = t, .pid = t->tgid, .tid = t->pid };

	return on_migrate(&w);
}

AISCOPE_FENTRY_KPROBE(do_exit, exit)
{
	return exit_current();
}

SEC("kprobe/ttwu_do_activate")
int BPF_KPROBE(wakeup_kprobe, struct rq *rq, struct task_struct *p)
{
	return on_wakeup(p, BPF_CORE_READ(p, pid));
}

SEC("kprobe/wake_up_new_task")
int BPF_KPROBE(wakeup_new_kprobe, struct task_struct *p)
{
	return on_wakeup(p, BPF_CORE_READ(p, pid));
}

SEC("kprobe/finish_task_switch")
int BPF_KPROBE(switch_kprobe, struct task_struct *prev)
{
	struct who p, n;

	who_raw(&p, prev);
	who_raw(&n, (struct task_struct *)bpf_get_current_task());
	return on_switch(&p, aiscope_task_state(prev) == TASK_RUNNING, &n, prev);
}

SEC("kprobe/set_task_cpu")
int BPF_KPROBE(migrate_kprobe, struct task_struct *t)
{
	return migrate_raw_task(t);
}


/* ---- classic tracepoints: records carry pids, not tasks ---- */

/* A wait that ended before its task was known: account it now. */
static __always_inline void settle_pending(const struct schedlat_task *c,
					   const struct schedlat_pending *pd)
{
	struct who w = { .cached = &c->ident, .pid = c->ident.pid, .tid = c->ident.tid };
	struct schedlat_stats *st;
	struct schedlat_event *ev;

	if (!min_ns) {
		st = stats_of(&w);
		if (st)
			add_wait(st, pd->wait_ns);
		return;
	}
	if (pd->wait_ns < min_ns || !(ev = aiscope_reserve(sizeof(*ev))))
		return;
	ev->ts = pd->ts;
	ev->wait_ns = pd->wait_ns;
	ev->task = c->ident;
	ev->prev_pid = pd->prev_pid;
	ev->prev_tid = pd->prev_tid;
	__builtin_memcpy(ev->prev_comm, pd->prev_comm, sizeof(ev->prev_comm));
	ev->cpu = pd->cpu;
	ev->pad = 0;
	aiscope_submit(ev);
}

/* The task leaving the CPU is current: remember who it is for the moment
 * it is woken or switched in again, when only its pid is known. */
static __always_inline struct schedlat_task *cache_current(struct task_struct *cur, __u32 tid)
{
	static const struct schedlat_task zero_task;
	struct schedlat_pending *pd;
	struct schedlat_task *c;
	struct who w = { .task = cur };

	if (!tid)
		return NULL;
	c = aiscope_lookup_or_init(&tasks, &tid, &zero_task);
	if (!c)
		return NULL;
	fill_ident(&w, &c->ident);
	c->pass = aiscope_task_pass(cur);
	pd = bpf_map_lookup_elem(&pending, &tid);
	if (pd) {
		if (c->pass)
			settle_pending(c, pd);
		bpf_map_delete_elem(&pending, &tid);
	}
	return c;
}

/* A task never seen leaving a CPU since we attached is enqueued: whether
 * the filters pass it is decided when its wait is settled. */
static __always_inline bool maybe_pass(__u32 tid)
{
	struct schedlat_task *c;

	if (!have_filter)
		return true;
	c = bpf_map_lookup_elem(&tasks, &tid);
	return !c || c->pass;
}

static __always_inline int wakeup_pid(__u32 tid)
{
	if (tid && maybe_pass(tid))
		enqueue(tid, aiscope_now());
	return 0;
}

SEC("tracepoint/sched/sched_wakeup")
int wakeup_tp(struct trace_event_raw_sched_wakeup_template *ctx)
{
	return wakeup_pid(ctx->pid);
}

SEC("tracepoint/sched/sched_wakeup_new")
int wakeup_new_tp(struct trace_event_raw_sched_wakeup_template *ctx)
{
	return wakeup_pid(ctx->pid);
}

/* next has not been seen leaving a CPU: keep its wait for that moment */
static __always_inline void defer_wait(__u32 tid, struct task_struct *cur, __u32 cpu)
{
	struct schedlat_pending pd = {};
	__u64 now = aiscope_now();

	pd.wait_ns = dequeue(tid, now);
	if (!pd.wait_ns)
		return;
	pd.ts = now;
	pd.prev_pid = BPF_CORE_READ(cur, tgid);
	pd.prev_tid = BPF_CORE_READ(cur, pid);
	BPF_CORE_READ_STR_INTO(&pd.prev_comm, cur, comm);
	pd.cpu = cpu;
	if (bpf_map_update_elem(&pending, &tid, &pd, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
}

SEC("tracepoint/sched/sched_switch")
int switch_tp(struct trace_event_raw_sched_switch *ctx)
{
	struct task_struct *cur = (void *)bpf_get_current_task();
	struct schedlat_task *c, *nc;
	struct who p = {}, n = {};
	__u64 state = 0;
	__u32 next_tid = ctx->next_pid;

	bpf_core_read(&state, bpf_core_field_size(ctx->prev_state), &ctx->prev_state);
	c = cache_current(cur, ctx->prev_pid);
	if (c) {
		p.cached = &c->ident;
		p.pid = c->ident.pid;
		p.tid = c->ident.tid;
	}
	nc = bpf_map_lookup_elem(&tasks, &next_tid);
	if (nc && nc->pass) {
		n.cached = &nc->ident;
		n.pid = nc->ident.pid;
		n.tid = next_tid;
	} else if (nc) {
		/* filtered out, but enqueued while it was not known yet */
		bpf_map_delete_elem(&enqueued, &next_tid);
	}
	/* without next's identity, on_switch only handles prev (tid 0 never waits) */
	on_switch(&p, c && c->pass && !(state & TP_STATE_SLEEP_MASK), &n, cur);
	if (!nc && next_tid)
		defer_wait(next_tid, cur, bpf_get_smp_processor_id());
	return 0;
}

SEC("tracepoint/sched/sched_migrate_task")
int migrate_tp(struct trace_event_raw_sched_migrate_task *ctx)
{
	__u32 tid = ctx->pid;
	struct schedlat_task *c = bpf_map_lookup_elem(&tasks, &tid);
	struct who w = {};

	if (!c || !c->pass)
		return 0;
	w.cached = &c->ident;
	w.pid = c->ident.pid;
	w.tid = c->ident.tid;
	return on_migrate(&w);
}

SEC("tracepoint/sched/sched_process_exit")
int exit_tp(void *ctx)
{
	return exit_current();
}

char LICENSE[] SEC("license") = "GPL";
