// SPDX-License-Identifier: GPL-2.0
/*
 * topograph: the life of the processes on the graph, during a capture.
 *
 * Process fork, exec and exit, aggregated per thread group in one hash
 * map: parent, start, exec count and the last exec'd comm and file,
 * exit time and wait status, cgroup (id and names, read while it lives).
 * Nothing is streamed: user space reads the map once, when the capture
 * ends. Three program families cover the same hooks: tp_btf, raw_tp (the
 * same task pointers as raw arguments) and classic tracepoints (pids;
 * the task is current, except the new one of a fork).
 */
#include "aiscope.bpf.h"
#include "topograph.h"

/* topograph itself: the tools it forks are not part of the graph */
const volatile __u32 self_tgid;

/* preallocated (~6 MB): before 6.1 a tracing program's run-time
 * allocation in a hash map warns in the kernel log */
AISCOPE_MAP(procs, BPF_MAP_TYPE_HASH, __u32,		/* tgid */
	    struct topo_proc, 8192);

static const struct topo_proc zero_proc;

/* task_struct::real_start_time became start_boottime in 5.5. */
struct task_struct___st {
	__u64 real_start_time;
} __attribute__((preserve_access_index));

static __always_inline bool is_self(struct task_struct *t)
{
	return self_tgid && (BPF_CORE_READ(t, tgid) == self_tgid ||
			     BPF_CORE_READ(t, real_parent, tgid) == self_tgid);
}

/* The start time on the clock aiscope_now() reads. */
static __always_inline __u64 task_start_ns(struct task_struct *t)
{
	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_ktime_get_boot_ns))
		return BPF_CORE_READ(t, start_time);
	if (bpf_core_field_exists(t->start_boottime))
		return BPF_CORE_READ(t, start_boottime);
	return BPF_CORE_READ((struct task_struct___st *)t, real_start_time);
}

/* The cgroup's name and its ancestors', leaf first: enough to find the
 * container once the cgroup is gone. */
static __always_inline void cgroup_names(struct cgroup *cg, struct topo_proc *r)
{
	const char *name;

	r->cg_level = BPF_CORE_READ(cg, level);
	for (int i = 0; i < TOPO_CG_LEVELS; i++) {
		if (!cg || BPF_CORE_READ(cg, level) == 0)
			break;
		name = BPF_CORE_READ(cg, kn, name);
		bpf_probe_read_kernel_str(r->cg_name[i], TOPO_CG_NAME, name);
		r->cg_levels = i + 1;
		cg = BPF_CORE_READ(cg, self.parent, cgroup);
	}
}

/* A new record's uid, comm and cgroup: t's own, or (classic fork) those
 * of the parent, which the child inherits. */
static __always_inline void fill_ident(struct topo_proc *r, struct task_struct *t)
{
	struct cgroup *cg = aiscope_ident_cgroup(t, &r->cgroup_v1);

	r->uid = BPF_CORE_READ(t, real_cred, uid.val);
	BPF_CORE_READ_STR_INTO(&r->comm, t, group_leader, comm);
	r->cgroup_id = BPF_CORE_READ(cg, kn, id);
	cgroup_names(cg, r);
}

/* The record of t's process, created with its identity when new. */
static __always_inline struct topo_proc *proc_of(struct task_struct *t, __u32 tgid)
{
	struct topo_proc *r = bpf_map_lookup_elem(&procs, &tgid);

	if (r)
		return r;
	r = aiscope_lookup_or_init(&procs, &tgid, &zero_proc);
	if (!r || r->pid)
		return r;
	r->pid = tgid;
	r->ppid = BPF_CORE_READ(t, real_parent, tgid);
	r->start_ns = task_start_ns(t);
	fill_ident(r, t);
	return r;
}

static __always_inline int on_fork(struct task_struct *child)
{
	struct topo_proc *r;
	__u32 tgid = BPF_CORE_READ(child, tgid);

	/* a new thread is no new process */
	if (BPF_CORE_READ(child, pid) != tgid || is_self(child) || !aiscope_task_pass(child))
		return 0;
	r = proc_of(child, tgid);
	if (!r)
		return 0;
	r->fork_ns = aiscope_now();
	r->flags |= TOPO_FORKED;
	return 0;
}

static __always_inline bool same_file(const char *a, const char *b)
{
	for (int i = 0; i < TOPO_FILE_LEN; i++) {
		if (a[i] != b[i])
			return false;
		if (!a[i])
			break;
	}
	return true;
}

static __always_inline int on_exec(struct task_struct *t, const char *filename)
{
	char file[TOPO_FILE_LEN] = {};
	struct topo_proc *r;

	if (is_self(t) || !aiscope_task_pass(t))
		return 0;
	r = proc_of(t, BPF_CORE_READ(t, tgid));
	if (!r)
		return 0;
	__sync_fetch_and_add(&r->execs, 1);
	r->exec_ns = aiscope_now();
	r->flags |= TOPO_EXECED;
	r->flags &= ~TOPO_MAYBE_THREAD;
	/* the new comm: exec set it before the tracepoint */
	BPF_CORE_READ_STR_INTO(&r->comm, t, comm);
	bpf_probe_read_kernel_str(file, sizeof(file), filename);
	if (r->filename[0] && same_file(file, r->filename))
		__sync_fetch_and_add(&r->reexecs, 1);
	__builtin_memcpy(r->filename, file, sizeof(file));
	return 0;
}

/* Every thread passes here; the process ends with its last one, and its
 * status is the one wait(2) reports: the group's exit code when the
 * group exits (exit_group, a fatal signal), else the thread's own. */
static __always_inline int on_exit(struct task_struct *t)
{
	struct signal_struct *sig = BPF_CORE_READ(t, signal);
	struct topo_proc *r;
	__u32 code;

	if (BPF_CORE_READ(sig, live.counter) > 0 || is_self(t) || !aiscope_task_pass(t))
		return 0;
	r = proc_of(t, BPF_CORE_READ(t, tgid));
	if (!r)
		return 0;
	code = BPF_CORE_READ(sig, group_exit_code);
	if (!code)
		code = BPF_CORE_READ(t, exit_code);
	r->exit_code = code;
	r->exit_ns = aiscope_now();
	/* a name set since (prctl, pthread_setname_np) is the last one */
	BPF_CORE_READ_STR_INTO(&r->comm, t, group_leader, comm);
	r->flags |= TOPO_EXITED;
	r->flags &= ~TOPO_MAYBE_THREAD;
	return 0;
}

/* ---- tp_btf and raw_tp: the same arguments, read with CO-RE ---- */

AISCOPE_BTF_RAW(sched_process_fork, fork, struct task_struct *parent, struct task_struct *child)
{
	return on_fork(child);
}

AISCOPE_BTF_RAW(sched_process_exec, exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	return on_exec(p, BPF_CORE_READ(bprm, filename));
}

AISCOPE_BTF_RAW(sched_process_exit, exit, struct task_struct *p)
{
	return on_exit(p);
}

/* ---- classic tracepoints: the record carries pids; current is the
 * parent of a fork, the task of an exec or exit ---- */

SEC("tracepoint/sched/sched_process_fork")
int fork_tp(struct trace_event_raw_sched_process_fork *ctx)
{
	struct task_struct *cur = (void *)bpf_get_current_task();
	__u32 pid = ctx->child_pid;
	struct topo_proc *r;

	/* the child is not at hand: its identity is its parent's, which
	 * it inherits; whether it is a thread is known later */
	if (is_self(cur) || !aiscope_task_pass(cur))
		return 0;
	r = aiscope_lookup_or_init(&procs, &pid, &zero_proc);
	if (!r || r->pid)
		return 0;
	r->pid = pid;
	r->ppid = BPF_CORE_READ(cur, tgid);
	r->fork_ns = r->start_ns = aiscope_now();
	fill_ident(r, cur);
	r->flags = TOPO_FORKED | TOPO_MAYBE_THREAD;
	return 0;
}

SEC("tracepoint/sched/sched_process_exec")
int exec_tp(struct trace_event_raw_sched_process_exec *ctx)
{
	struct task_struct *cur = (void *)bpf_get_current_task();

	return on_exec(cur, (void *)ctx + (ctx->__data_loc_filename & 0xffff));
}

SEC("tracepoint/sched/sched_process_exit")
int exit_tp(void *ctx)
{
	struct task_struct *cur = (void *)bpf_get_current_task();
	__u32 tid = BPF_CORE_READ(cur, pid);
	struct topo_proc *r;

	/* a thread that fork_tp took for a process */
	if (tid != BPF_CORE_READ(cur, tgid)) {
		r = bpf_map_lookup_elem(&procs, &tid);
		if (r && (r->flags & TOPO_MAYBE_THREAD))
			bpf_map_delete_elem(&procs, &tid);
	}
	return on_exit(cur);
}

char LICENSE[] SEC("license") = "GPL";
