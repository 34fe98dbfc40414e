// SPDX-License-Identifier: GPL-2.0
/*
 * numaplace: on which NUMA nodes do a process's threads run, and how does
 * NUMA balancing move them and their pages?
 *
 * CPU time per node: sched_switch charges the task leaving a CPU with the
 * time since it came on, to the node of that CPU (cpu_node, filled by user
 * space from sysfs). A task that never leaves its CPU (a spinning rank on a
 * tickless CPU) would be charged only when it does, so user space runs
 * flush_cpu on every CPU at the end of each interval (BPF_PROG_TEST_RUN
 * with a CPU: an IPI there, in which current is the interrupted task).
 * NUMA balancing: sched_move_numa, sched_swap_numa and sched_stick_numa
 * fire in the context of the task being placed; mm_migrate_pages in the
 * context of the task whose fault or system call moved the pages.
 */
#include "aiscope.bpf.h"
#include "numaplace.h"

const volatile __u32 key_by = NUMAPLACE_BY_PID;

__u32 epoch;				/* written by user space each interval */

/* sized by user space to the possible CPUs */
AISCOPE_MAP(cpu_node, BPF_MAP_TYPE_ARRAY, __u32, __u32, 1);

AISCOPE_MAP(oncpu, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct numaplace_oncpu, 1);

/* rows of two intervals; preallocated, as every key is inserted anew at
 * each interval from the scheduler's hot path */
AISCOPE_MAP(stats, BPF_MAP_TYPE_HASH, struct numaplace_key, struct numaplace_stats, 8192);

/* too big for the BPF stack: the zero row a new key starts from */
AISCOPE_MAP(zero, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct numaplace_stats, 1);

static __always_inline struct numaplace_stats *stats_of(struct task_struct *t)
{
	struct numaplace_key key = { .epoch = *(volatile __u32 *)&epoch };
	struct numaplace_stats *st, *z;
	__u32 zero_key = 0;

	key.id = key_by == NUMAPLACE_BY_TID ? BPF_CORE_READ(t, pid) : BPF_CORE_READ(t, tgid);
	st = bpf_map_lookup_elem(&stats, &key);
	if (st)
		return st;
	z = bpf_map_lookup_elem(&zero, &zero_key);
	if (!z)
		return NULL;
	__builtin_memset(&z->ident, 0, sizeof(z->ident));
	st = aiscope_lookup_or_init(&stats, &key, z);
	if (st && !st->ident.tid) {
		aiscope_task_ident(t, &st->ident);
		/* a process row is named after its leader */
		if (key_by == NUMAPLACE_BY_PID)
			BPF_CORE_READ_STR_INTO(&st->ident.comm, t, group_leader, comm);
	}
	return st;
}

/* Charge current, about to leave this CPU or interrupted on it, with its
 * time on the CPU so far; the CPU's clock restarts now. */
static __always_inline void charge_current(void)
{
	struct task_struct *t = (void *)bpf_get_current_task();
	struct numaplace_stats *st;
	struct numaplace_oncpu *oc;
	__u32 zero_key = 0, cpu = bpf_get_smp_processor_id(), node = NUMAPLACE_NODE_UNKNOWN;
	__u32 *np;
	__u64 now = aiscope_now(), since;

	oc = bpf_map_lookup_elem(&oncpu, &zero_key);
	if (!oc)
		return;
	since = oc->ts;
	oc->ts = now;
	/* the first switch after attach: no start time yet; tid 0: idle */
	if (!since || now <= since || !BPF_CORE_READ(t, pid) || !aiscope_task_pass(t))
		return;
	np = bpf_map_lookup_elem(&cpu_node, &cpu);
	if (np && *np < NUMAPLACE_MAX_NODES)
		node = *np;
	st = stats_of(t);
	if (!st)
		return;
	asm volatile("" : "+r"(node));
	if (node > NUMAPLACE_NODE_UNKNOWN)
		return;
	__sync_fetch_and_add(&st->cpu_ns[node], now - since);
}

/* sched_switch fires before the switch: current is prev. */
AISCOPE_BTF_RAW(sched_switch, switch, bool preempt)
{
	charge_current();
	return 0;
}

SEC("tracepoint/sched/sched_switch")
int switch_tp(void *ctx)
{
	charge_current();
	return 0;
}

/* Run by user space on each CPU at the end of an interval. */
SEC("raw_tp")
int flush_cpu(void *ctx)
{
	charge_current();
	return 0;
}

enum { EV_MOVE, EV_SWAP, EV_STICK };

static __always_inline int on_numa(int what)
{
	struct task_struct *t = (void *)bpf_get_current_task();
	struct numaplace_stats *st;

	if (!aiscope_task_pass(t))
		return 0;
	st = stats_of(t);
	if (!st)
		return 0;
	if (what == EV_MOVE)
		__sync_fetch_and_add(&st->numa_moves, 1);
	else if (what == EV_SWAP)
		__sync_fetch_and_add(&st->numa_swaps, 1);
	else
		__sync_fetch_and_add(&st->numa_sticks, 1);
	return 0;
}

/* The three NUMA placement tracepoints name their task in arguments that
 * changed over the years; they run in that task's context (task_numa_migrate
 * from its own task_numa_fault), so current is all they need. */
SEC("tracepoint/sched/sched_move_numa")
int move_tp(void *ctx)
{
	return on_numa(EV_MOVE);
}

SEC("tracepoint/sched/sched_swap_numa")
int swap_tp(void *ctx)
{
	return on_numa(EV_SWAP);
}

SEC("tracepoint/sched/sched_stick_numa")
int stick_tp(void *ctx)
{
	return on_numa(EV_STICK);
}

/* Page moves between nodes: migrate_pages(2)/move_pages(2), mbind(2) with
 * MPOL_MF_MOVE and NUMA balancing's misplaced pages. Compaction and the
 * other reasons move pages within a node, or for other ends: not counted.
 * The reason is the tracepoint's last argument, whose position changed: the
 * classic record's field, relocated with CO-RE, is the stable way to it. */
SEC("tracepoint/migrate/mm_migrate_pages")
int migrate_tp(struct trace_event_raw_mm_migrate_pages *ctx)
{
	struct task_struct *t = (void *)bpf_get_current_task();
	struct numaplace_stats *st;
	int reason = BPF_CORE_READ(ctx, reason);

	if (reason != bpf_core_enum_value(enum migrate_reason, MR_SYSCALL) &&
	    reason != bpf_core_enum_value(enum migrate_reason, MR_MEMPOLICY_MBIND) &&
	    reason != bpf_core_enum_value(enum migrate_reason, MR_NUMA_MISPLACED))
		return 0;
	if (!aiscope_task_pass(t))
		return 0;
	st = stats_of(t);
	if (!st)
		return 0;
	__sync_fetch_and_add(&st->pages_migrated, BPF_CORE_READ(ctx, succeeded));
	__sync_fetch_and_add(&st->pages_migrate_failed, BPF_CORE_READ(ctx, failed));
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
