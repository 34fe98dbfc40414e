/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The attach resolver. Each hook lists candidates, richest first; the first
 * one that this kernel supports (and --probe-mode allows) is chosen, every
 * other program is left unloaded. Support is decided by probing (BTF, a
 * trial fentry load, tracefs), never by kernel version. The probes sit
 * behind struct feat_ops so that tests can run the resolver against fake
 * kernels.
 */
#ifndef AISCOPE_PROBE_H
#define AISCOPE_PROBE_H

#include <stdbool.h>
#include <stdio.h>

struct bpf_object;
struct bpf_link;
struct jw;

enum probe_mech {
	PM_FENTRY,
	PM_FEXIT,
	PM_TP_BTF,
	PM_RAW_TP,
	PM_TRACEPOINT,		/* classic, target "category/name" */
	PM_KPROBE,
	PM_KRETPROBE,
	PM_NR,
};

#define PM_BIT(m)	(1U << (m))
#define PM_ALL		((1U << PM_NR) - 1)
/* the function hooks, as opposed to the tracepoint mechanisms */
#define PM_FUNCTION	(PM_BIT(PM_FENTRY) | PM_BIT(PM_FEXIT) | PM_BIT(PM_KPROBE) | PM_BIT(PM_KRETPROBE))

#define PROBE_MAX_CANDS	12
#define PROBE_WHY_LEN	96
#define PROBE_SYM_LEN	128

/* What a candidate's program needs beyond its attach point, checked by
 * feat_ops.needs: helpers that older kernels lack */
#define PROBE_NEEDS_FUNC_RET	(1U << 0)	/* bpf_get_func_ret() in fexit (5.17) */

struct probe_cand {
	enum probe_mech mech;
	const char *target;	/* function or tracepoint */
	const char *prog;	/* program name in the BPF object */
	unsigned int needs;	/* PROBE_NEEDS_*: 0 for most */
};

/*
 * One tracepoint by its three mechanisms, richest first: tp_btf, raw_tp,
 * then the classic one under its category; the programs are named
 * prog_btf, prog_raw and prog_tp.
 *
 *	{ .name = "sched_switch", .cand = { PROBE_TRACEPOINT("sched", "sched_switch", "switch") } }
 */
#define PROBE_TRACEPOINT(cat, tp, prog)						\
	PROBE_BTF_RAW(tp, prog), { PM_TRACEPOINT, cat "/" tp, prog "_tp" }
/* The same without the classic tracepoint (one that has no tracefs event,
 * such as sock_send_length on older kernels) */
#define PROBE_BTF_RAW(tp, prog)							\
	{ PM_TP_BTF, tp, prog "_btf" }, { PM_RAW_TP, tp, prog "_raw" }
/* A kernel function at entry: fentry, then kprobe (prog_fentry, prog_kprobe) */
#define PROBE_FUNC(fn, prog)							\
	{ PM_FENTRY, fn, prog "_fentry" }, { PM_KPROBE, fn, prog "_kprobe" }
/* ... at return: fexit (with its PROBE_NEEDS_*), then kretprobe
 * (prog_fexit, prog_kret) */
#define PROBE_FUNC_RET(fn, prog, needs)						\
	{ PM_FEXIT, fn, prog "_fexit", needs }, { PM_KRETPROBE, fn, prog "_kret" }
/* An optional hook of one fexit program, prog_fexit */
#define PROBE_HOOK_FEXIT(hname, fn, prog)					\
	{ .name = hname, .optional = true, .cand = { { PM_FEXIT, fn, prog "_fexit" } } }
/* The end of a task, for tools that forget its state: sched_process_exit,
 * do_exit where no tracepoint mechanism works (programs exit_btf,
 * exit_raw, exit_tp, exit_fentry, exit_kprobe) */
#define PROBE_HOOK_TASK_EXIT							\
	{ .name = "sched_process_exit", .preemptible = true, .cand = {		\
		PROBE_TRACEPOINT("sched", "sched_process_exit", "exit"),	\
		PROBE_FUNC("do_exit", "exit") } }

enum probe_status { PS_UNTRIED, PS_CHOSEN, PS_AVAILABLE, PS_UNAVAILABLE, PS_EXCLUDED };

struct probe_hook {
	const char *name;
	bool optional;		/* the tool runs without it, with less output */
	/* it fires where the task can be preempted (a syscall, the task's
	 * own fork, exec or exit, a socket or page-cache call): where
	 * tp_btf and raw_tp programs run preemptibly, its classic
	 * tracepoint is tried before them (see feat_ops.tp_preemptible) */
	bool preemptible;
	struct probe_cand cand[PROBE_MAX_CANDS];
	/* filled by probe_resolve() */
	int chosen;		/* index into cand, -1: none */
	enum probe_status status[PROBE_MAX_CANDS];
	char why[PROBE_MAX_CANDS][PROBE_WHY_LEN];
	/* kprobes: the kernel's name of the target, e.g. with a ".isra.0"
	 * suffix the compiler gave it; empty: the target itself */
	char symbol[PROBE_MAX_CANDS][PROBE_SYM_LEN];
	struct bpf_link *link;
};

/* Each returns 0 when supported, else a negative errno, with a short
 * reason in why ("not in kernel BTF", "kprobes not supported"). */
struct feat_ops {
	void *ctx;
	int (*fentry)(void *ctx, const char *func, char *why, size_t len);
	int (*tp_btf)(void *ctx, const char *tp, char *why, size_t len);
	int (*raw_tp)(void *ctx, const char *tp, char *why, size_t len);
	int (*tracepoint)(void *ctx, const char *cat_name, char *why, size_t len);
	int (*kprobe)(void *ctx, const char *func, char *why, size_t len);
	/* optional: the kernel symbol a kprobe on func attaches to */
	const char *(*kprobe_symbol)(void *ctx, const char *func);
	/* optional: whether a program of mechanism m on target can have
	 * what needs (PROBE_NEEDS_*) asks for; NULL: always */
	int (*needs)(void *ctx, enum probe_mech m, const char *target, unsigned int needs,
		     char *why, size_t len);
	/* optional: tp_btf and raw_tp programs run with preemption on
	 * (7.x): a task preempted in one and another entering it on that
	 * CPU make the kernel skip the second run (recursion_misses); the
	 * classic tracepoint runs its programs with preemption off. NULL:
	 * never. Asked once per resolve, only for a preemptible hook. */
	bool (*tp_preemptible)(void *ctx);
};

const char *probe_mech_name(enum probe_mech m);
/* "fentry,tp_btf" -> mask; "fentry" covers fexit, "kprobe" kretprobe.
 * Returns 0 or -EINVAL. */
int probe_parse_mode(const char *s, unsigned int *mask);

/* Probes every candidate (for --list-probes). Returns 0, or -ENOENT when
 * a required hook has no candidate. */
int probe_resolve(struct probe_hook *hooks, int n, const struct feat_ops *ops,
		  unsigned int allowed);
/* The same, but stops at each hook's first usable candidate: the later
 * ones stay PS_UNTRIED (a trial fentry load costs time). */
int probe_resolve_first(struct probe_hook *hooks, int n, const struct feat_ops *ops,
			unsigned int allowed);
/* "tried tp_btf:sched_switch (not in kernel BTF), raw_tp:... (...)" */
void probe_explain(const struct probe_hook *h, char *buf, size_t len);
/* The first required hook without a candidate, NULL if none. */
const struct probe_hook *probe_first_missing(const struct probe_hook *hooks, int n);
/* Disables every program but the chosen ones; retargets renamed functions. */
int probe_prepare(struct bpf_object *obj, struct probe_hook *hooks, int n);
/* Attaches the chosen programs; -errno with err_hook set on failure. */
int probe_attach(struct bpf_object *obj, struct probe_hook *hooks, int n,
		 const struct probe_hook **err_hook);
void probe_detach(struct probe_hook *hooks, int n);
/*
 * Plan edits, for hooks that depend on each other: after probe_resolve*(),
 * from aiscope_bpf's on_plan (before --list-probes and probe_prepare) or
 * after aiscope_bpf_prepare (then pass the object, whose programs
 * probe_prepare has already marked for loading).
 */
/* The chosen candidate, NULL when there is none. */
const struct probe_cand *probe_chosen(const struct probe_hook *h);
/* Chosen, by one of the mechanisms in mask (PM_BIT()s, PM_FUNCTION). */
bool probe_chosen_by(const struct probe_hook *h, unsigned int mask);
/* Leaves the hook out of this plan: its chosen candidate is still usable
 * (PS_AVAILABLE) but not attached. obj: its program is not loaded either;
 * NULL before probe_prepare, which leaves it unloaded anyway. */
void probe_drop(struct probe_hook *h, struct bpf_object *obj);
/* The same for every usable candidate, shown as PS_EXCLUDED with why by
 * --list-probes (e.g. "function mode: accesses from page_accessed"). */
void probe_exclude(struct probe_hook *h, const char *why);
/*
 * Hooks that stand in for others only together: per-syscall tracepoints
 * (syscalls/sys_enter_mmap, ...), each fired by its own syscall, for the
 * raw sys_enter/sys_exit hooks that run on every syscall of the host. When
 * each of the n in set has a candidate, the m in alt are excluded ("per-
 * syscall tracepoints chosen"); else the set is ("without NAME: raw
 * syscall hooks instead", NAME the first set hook missing), and alt stays
 * as resolved. Returns whether the set was chosen.
 */
bool probe_choose_set(struct probe_hook *set, int n, struct probe_hook *alt, int m);
/* Hooks cut from the plan before resolving (hooks + n not passed to
 * aiscope_bpf): none of their candidates' programs is loaded. */
void probe_unload(struct bpf_object *obj, const struct probe_hook *hooks, int n);

/* --list-probes */
void probe_print_plan(FILE *f, const struct probe_hook *hooks, int n, struct jw *jw,
		      const char *tool, unsigned long long realtime_ns);
/* "tp_btf" when every chosen candidate uses it, else "mixed" */
const char *probe_summary(const struct probe_hook *hooks, int n);

#endif
