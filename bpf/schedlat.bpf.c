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

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);		/* tid */
	__type(value, __u64);		/* enqueue time */
} enqueued SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, struct schedlat_key);
	__type(value, struct schedlat_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1);		/* sized by user space in classic mode */
	__type(key, __u32);
	__type(value, struct schedlat_task);
} tasks SEC(".maps");

static const struct schedlat_stats zero_stats;

static __always_inline void enqueue(__u32 tid)
{
	__u64 ts;

	/* the idle tasks (tid 0) are always runnable and never wait */
	if (!tid)
		return;
	ts = aiscope_now();

	if (bpf_map_update_elem(&enqueued, &tid, &ts, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
}

static __always_inline struct schedlat_stats *stats_for(const struct aiscope_ident *id)
{
	struct schedlat_key key = { .epoch = *(volatile __u32 *)&epoch };
	struct schedlat_stats *st;

	switch (key_by) {
	case SCHEDLAT_BY_PID:
		key.id = id->pid;
		break;
	case SCHEDLAT_BY_TID:
		key.id = id->tid;
		break;
	case SCHEDLAT_BY_CGROUP:
		key.id = id->cgroup_id;
		key.cgroup_v1 = id->cgroup_v1;
		break;
	default:
		break;
	}
	st = aiscope_lookup_or_init(&stats, &key, &zero_stats);
	if (st && !st->ident.tid)
		st->ident = *id;
	return st;
}

/* For --by pid the row is the process: name it after its leader. Streamed
 * waits name the thread that waited. */
static __always_inline void task_ident(struct task_struct *t, struct aiscope_ident *id)
{
	aiscope_task_ident(t, id);
	if (key_by == SCHEDLAT_BY_PID && !min_ns)
		BPF_CORE_READ_STR_INTO(&id->comm, t, group_leader, comm);
}

static __always_inline void emit_wait(const struct aiscope_ident *id, __u64 now, __u64 wait,
				      struct task_struct *prev)
{
	struct schedlat_event *ev = aiscope_reserve(sizeof(*ev));

	if (!ev)
		return;
	ev->ts = now;
	ev->wait_ns = wait;
	ev->task = *id;
	ev->prev_pid = BPF_CORE_READ(prev, tgid);
	ev->prev_tid = BPF_CORE_READ(prev, pid);
	BPF_CORE_READ_STR_INTO(&ev->prev_comm, prev, comm);
	ev->cpu = bpf_get_smp_processor_id();
	ev->pad = 0;
	aiscope_submit(ev);
}

static __always_inline void account_wait(const struct aiscope_ident *id, __u64 now, __u64 wait,
					 struct task_struct *prev)
{
	struct schedlat_stats *st;
	__u32 slot;

	if (min_ns) {
		if (wait >= min_ns)
			emit_wait(id, now, wait, prev);
		return;
	}
	st = stats_for(id);
	if (!st)
		return;
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

static __always_inline void count_event(const struct aiscope_ident *id, bool migration)
{
	struct schedlat_stats *st;

	if (min_ns)
		return;
	st = stats_for(id);
	if (!st)
		return;
	if (migration)
		__sync_fetch_and_add(&st->migrations, 1);
	else
		__sync_fetch_and_add(&st->preemptions, 1);
}

/* ---- task-pointer hooks: tp_btf and raw_tp ---- */

static __always_inline int on_wakeup(struct task_struct *p)
{
	if (aiscope_task_pass(p))
		enqueue(BPF_CORE_READ(p, pid));
	return 0;
}

/* A task leaving the CPU still runnable waits again from now. Like the
 * kernel's nivcsw, that is an involuntary switch whether it was preempted
 * or rescheduled on its way back to user space. */
static __always_inline void prev_leaves(struct task_struct *prev, bool runnable)
{
	struct aiscope_ident id;
	__u32 tid = BPF_CORE_READ(prev, pid);

	/* the idle tasks (tid 0) always leave runnable: not a preemption */
	if (!tid || !runnable || !aiscope_task_pass(prev))
		return;
	enqueue(tid);
	if (min_ns)
		return;
	task_ident(prev, &id);
	count_event(&id, false);
}

static __always_inline int on_switch(bool preempt, struct task_struct *prev,
				     struct task_struct *next)
{
	__u64 now, wait;
	struct aiscope_ident id;

	prev_leaves(prev, preempt || aiscope_task_state(prev) == TASK_RUNNING);
	now = aiscope_now();
	wait = dequeue(BPF_CORE_READ(next, pid), now);
	if (!wait)
		return 0;
	task_ident(next, &id);
	account_wait(&id, now, wait, prev);
	return 0;
}

static __always_inline int on_migrate(struct task_struct *p)
{
	struct aiscope_ident id;

	if (!aiscope_task_pass(p))
		return 0;
	task_ident(p, &id);
	count_event(&id, true);
	return 0;
}

static __always_inline int on_exit(__u32 tid)
{
	bpf_map_delete_elem(&enqueued, &tid);
	bpf_map_delete_elem(&tasks, &tid);
	return 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(wakeup_btf, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(wakeup_new_btf, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(switch_btf, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next);
}

SEC("tp_btf/sched_migrate_task")
int BPF_PROG(migrate_btf, struct task_struct *p)
{
	return on_migrate(p);
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_btf, struct task_struct *p)
{
	return on_exit(BPF_CORE_READ(p, pid));
}

SEC("raw_tp/sched_wakeup")
int BPF_PROG(wakeup_raw, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("raw_tp/sched_wakeup_new")
int BPF_PROG(wakeup_new_raw, struct task_struct *p)
{
	return on_wakeup(p);
}

SEC("raw_tp/sched_switch")
int BPF_PROG(switch_raw, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	return on_switch(preempt, prev, next);
}

SEC("raw_tp/sched_migrate_task")
int BPF_PROG(migrate_raw, struct task_struct *p)
{
	return on_migrate(p);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(exit_raw, struct task_struct *p)
{
	return on_exit(BPF_CORE_READ(p, pid));
}

/* ---- classic tracepoints: records carry pids, not tasks ---- */

static __always_inline struct schedlat_task *cached_task(__u32 tid)
{
	return bpf_map_lookup_elem(&tasks, &tid);
}

/* The task leaving the CPU is current: remember who it is for the moment
 * it is woken or switched in again, when only its pid is known. */
static __always_inline struct schedlat_task *cache_current(struct task_struct *cur)
{
	struct schedlat_task *c;
	__u32 tid = BPF_CORE_READ(cur, pid);
	static const struct schedlat_task zero_task;

	c = aiscope_lookup_or_init(&tasks, &tid, &zero_task);
	if (!c)
		return NULL;
	task_ident(cur, &c->ident);
	c->pass = aiscope_task_pass(cur);
	return c;
}

static __always_inline bool cached_pass(__u32 tid)
{
	struct schedlat_task *c;

	if (!have_filter)
		return true;
	c = cached_task(tid);
	return c && c->pass;
}

SEC("tracepoint/sched/sched_wakeup")
int wakeup_tp(struct trace_event_raw_sched_wakeup_template *ctx)
{
	__u32 tid = ctx->pid;

	if (cached_pass(tid))
		enqueue(tid);
	return 0;
}

SEC("tracepoint/sched/sched_wakeup_new")
int wakeup_new_tp(struct trace_event_raw_sched_wakeup_template *ctx)
{
	__u32 tid = ctx->pid;

	if (cached_pass(tid))
		enqueue(tid);
	return 0;
}

SEC("tracepoint/sched/sched_switch")
int switch_tp(struct trace_event_raw_sched_switch *ctx)
{
	struct task_struct *prev = (void *)bpf_get_current_task();
	struct schedlat_task *c, *next;
	struct aiscope_ident id = {};
	__u64 state = 0, now, wait;
	__u32 next_tid = ctx->next_pid;

	bpf_core_read(&state, bpf_core_field_size(ctx->prev_state), &ctx->prev_state);
	c = cache_current(prev);
	if (c && c->pass && c->ident.tid && !(state & TP_STATE_SLEEP_MASK)) {
		enqueue(c->ident.tid);
		count_event(&c->ident, false);
	}
	now = aiscope_now();
	wait = dequeue(next_tid, now);
	if (!wait)
		return 0;
	next = cached_task(next_tid);
	if (next) {
		id = next->ident;
	} else {
		/* first run of a new task: only its tid and comm are known */
		id.pid = next_tid;
		id.tid = next_tid;
		bpf_probe_read_kernel_str(&id.comm, sizeof(id.comm), ctx->next_comm);
	}
	account_wait(&id, now, wait, prev);
	return 0;
}

SEC("tracepoint/sched/sched_migrate_task")
int migrate_tp(struct trace_event_raw_sched_migrate_task *ctx)
{
	struct schedlat_task *c = cached_task(ctx->pid);

	if (c && c->pass)
		count_event(&c->ident, true);
	return 0;
}

SEC("tracepoint/sched/sched_process_exit")
int exit_tp(void *ctx)
{
	return on_exit((__u32)bpf_get_current_pid_tgid());
}

char LICENSE[] SEC("license") = "GPL";
