/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Tells user space when a process may have mapped new code, so that a tool
 * that uprobes libraries scans it at once instead of at its next periodic
 * rescan: at exec (the new executable may carry a static CUDA runtime) and
 * whenever the dynamic loader has loaded or unloaded libraries (its
 * debugger hook _dl_debug_state runs after each dlopen and after the
 * libraries of a new program are mapped, before their constructors and
 * main run). Include after aiscope.bpf.h, once per object. User space:
 * lib/uprobe.h (uprobe_discover_open(), UPROBE_DISCOVER_HOOK).
 *
 * The events go through their own small ring buffer, with a wakeup each:
 * they are rare, and a late one means missed calls.
 */
#ifndef AISCOPE_UPROBE_DISCOVER_BPF_H
#define AISCOPE_UPROBE_DISCOVER_BPF_H

#include "uprobe_discover.h"
#include "uprobe_stack.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 * 1024);
} uprobe_discover_rb SEC(".maps");

/* --hold: a new program, or a process whose loader just mapped libraries,
 * is stopped (SIGSTOP, as it returns to user space: before its first
 * instruction, or before the new libraries' constructors run) until user
 * space has scanned it and attached, then continued (lib/uprobe.c). Only
 * when its event is in the ring buffer: a stop nobody would undo is never
 * sent. */
const volatile bool uprobe_hold;
__u64 uprobe_held;			/* stops sent */

#define UPROBE_SIGSTOP 19		/* the same on x86 and arm64 */

static __always_inline void uprobe_discover_notify(__u32 pid, __u32 why)
{
	struct uprobe_discover_ev *ev;

	ev = bpf_ringbuf_reserve(&uprobe_discover_rb, sizeof(*ev), 0);
	if (!ev) {
		aiscope_count_lost(AISCOPE_LOST_RINGBUF);
		return;
	}
	ev->pid = pid;
	ev->why = why;
	ev->held_ns = 0;
	if (uprobe_hold && !bpf_send_signal(UPROBE_SIGSTOP)) {
		ev->held_ns = bpf_ktime_get_ns();
		__sync_fetch_and_add(&uprobe_held, 1);
	}
	bpf_ringbuf_submit(ev, 0);
}

static __always_inline int uprobe_discover_exec(struct task_struct *p)
{
	if (!aiscope_task_pass(p))
		return 0;
	uprobe_discover_notify(BPF_CORE_READ(p, tgid), UPROBE_DISC_EXEC);
	return 0;
}

AISCOPE_BTF_RAW(sched_process_exec, uprobe_disc_exec, struct task_struct *p)
{
	return uprobe_discover_exec(p);
}

SEC("tracepoint/sched/sched_process_exec")
int uprobe_disc_exec_tp(void *ctx)
{
	return uprobe_discover_exec((struct task_struct *)bpf_get_current_task());
}

SEC("uprobe")
int uprobe_disc_dlopen(struct pt_regs *ctx)
{
	struct task_struct *t = (struct task_struct *)bpf_get_current_task();

	AISCOPE_OWN_STACK(ctx);
	if (!aiscope_task_pass(t))
		return 0;
	uprobe_discover_notify(bpf_get_current_pid_tgid() >> 32, UPROBE_DISC_DLOPEN);
	return 0;
}

#endif
