// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/probe.c: the attach resolver against fake kernels. */
#include <errno.h>
#include <stdlib.h>
#include "t.h"
#include "probe.h"
#include "util.h"
#include <bpf/libbpf.h>
#include "aiscope_common.h"
#include "uprobe.h"
#include "uargs_lib.h"
#include "uprobe_args.skel.h"

/* A fake kernel, driven by a table. */
struct fake {
	const char *const *fentry_ok;	/* functions fentry can attach to; NULL: none */
	const char *fentry_why;		/* reason for the others */
	const char *const *btf_tps;	/* tracepoints in kernel BTF; NULL: tp_btf missing */
	bool tracefs;			/* classic tracepoints readable */
	const char *const *no_events;	/* classic tracepoints tracefs lacks */
	bool kprobes;
	bool silent_raw_tp;		/* raw_tp fails without a reason */
	bool tp_preemptible;		/* tp_btf and raw_tp run preemptibly */
	int preempt_asked;
	int calls[PM_NR];
};

static bool in_list(const char *const *l, const char *s)
{
	for (; l && *l; l++)
		if (!strcmp(*l, s))
			return true;
	return false;
}

static int f_fentry(void *ctx, const char *func, char *why, size_t len)
{
	struct fake *k = ctx;

	k->calls[PM_FENTRY]++;
	if (in_list(k->fentry_ok, func))
		return 0;
	snprintf(why, len, "%s", k->fentry_why ? k->fentry_why : "not permitted");
	return -EPERM;
}

static int f_tp_btf(void *ctx, const char *tp, char *why, size_t len)
{
	struct fake *k = ctx;

	k->calls[PM_TP_BTF]++;
	if (in_list(k->btf_tps, tp))
		return 0;
	snprintf(why, len, "not in kernel BTF");
	return -ENOENT;
}

static int f_raw_tp(void *ctx, const char *tp, char *why, size_t len)
{
	struct fake *k = ctx;

	k->calls[PM_RAW_TP]++;
	if (k->silent_raw_tp)
		return -EINVAL;
	return 0;
}

static int f_tracepoint(void *ctx, const char *cat_name, char *why, size_t len)
{
	struct fake *k = ctx;

	k->calls[PM_TRACEPOINT]++;
	if (k->tracefs && !in_list(k->no_events, cat_name))
		return 0;
	if (k->tracefs) {
		snprintf(why, len, "not in tracefs");
		return -ENOENT;
	}
	snprintf(why, len, "tracefs not mounted");
	return -ENOENT;
}

static int f_kprobe(void *ctx, const char *func, char *why, size_t len)
{
	struct fake *k = ctx;

	k->calls[PM_KPROBE]++;
	if (k->kprobes)
		return 0;
	snprintf(why, len, "kprobes not supported");
	return -EOPNOTSUPP;
}

static bool f_tp_preemptible(void *ctx)
{
	struct fake *k = ctx;

	k->preempt_asked++;
	return k->tp_preemptible;
}

static struct feat_ops ops_for(struct fake *k)
{
	struct feat_ops o = {
		.ctx = k, .fentry = f_fentry, .tp_btf = f_tp_btf, .raw_tp = f_raw_tp,
		.tracepoint = f_tracepoint, .kprobe = f_kprobe, .tp_preemptible = f_tp_preemptible,
	};

	return o;
}

static const char *const sched_tps[] = { "sched_switch", "sched_wakeup", NULL };

/* The test machines: tp_btf, raw_tp; no kprobes, fentry EPERM, no tracefs. */
static struct fake test_host(void)
{
	struct fake k = { .btf_tps = sched_tps };

	return k;
}

static struct probe_hook sched_hook(void)
{
	struct probe_hook h = {
		.name = "sched_switch",
		.cand = {
			{ PM_TP_BTF, "sched_switch", "tp_btf_switch" },
			{ PM_RAW_TP, "sched_switch", "raw_tp_switch" },
			{ PM_TRACEPOINT, "sched/sched_switch", "tp_switch" },
		},
	};

	return h;
}

static struct probe_hook page_hook(bool optional)
{
	struct probe_hook h = {
		.name = "page_access",
		.optional = optional,
		.cand = {
			{ PM_FENTRY, "folio_mark_accessed", "fentry_fma" },
			{ PM_FENTRY, "mark_page_accessed", "fentry_mpa" },
			{ PM_KPROBE, "folio_mark_accessed", "kprobe_fma" },
			{ PM_KPROBE, "mark_page_accessed", "kprobe_mpa" },
		},
	};

	return h;
}

static void test_first_supported_chosen(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = sched_hook();

	CHECK_EQ(probe_resolve(&h, 1, &o, PM_ALL), 0);
	CHECK_EQ(h.chosen, 0);
	CHECK_EQ(h.status[0], PS_CHOSEN);
	CHECK_EQ(h.status[1], PS_AVAILABLE);
	CHECK_EQ(h.status[2], PS_UNAVAILABLE);
	CHECK_STR(h.why[0], "");
	CHECK_STR(h.why[1], "");
	CHECK_STR(h.why[2], "tracefs not mounted");
	CHECK(probe_first_missing(&h, 1) == NULL);
}

static void test_fallback_when_tp_btf_missing(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = sched_hook();

	k.btf_tps = NULL;
	k.tracefs = true;
	CHECK_EQ(probe_resolve(&h, 1, &o, PM_ALL), 0);
	CHECK_EQ(h.chosen, 1);
	CHECK_EQ(h.status[0], PS_UNAVAILABLE);
	CHECK_STR(h.why[0], "not in kernel BTF");
	CHECK_EQ(h.status[1], PS_CHOSEN);
	CHECK_EQ(h.status[2], PS_AVAILABLE);
}

static void test_renamed_function_candidate(void)
{
	static const char *const fentry_ok[] = { "mark_page_accessed", NULL };
	struct fake k = { .fentry_ok = fentry_ok, .kprobes = true };
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = page_hook(false);

	CHECK_EQ(probe_resolve(&h, 1, &o, PM_ALL), 0);
	CHECK_EQ(h.chosen, 1);
	CHECK_EQ(h.status[0], PS_UNAVAILABLE);
	CHECK_STR(h.why[0], "not permitted");
	CHECK_EQ(h.status[1], PS_CHOSEN);
	CHECK_EQ(h.status[2], PS_AVAILABLE);
	CHECK_EQ(h.status[3], PS_AVAILABLE);
}

static void test_required_hook_missing(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook hooks[2] = { sched_hook(), page_hook(false) };

	CHECK_EQ(probe_resolve(hooks, 2, &o, PM_ALL), -ENOENT);
	CHECK_EQ(hooks[0].chosen, 0);
	CHECK_EQ(hooks[1].chosen, -1);
	for (int j = 0; j < 4; j++)
		CHECK_EQ(hooks[1].status[j], PS_UNAVAILABLE);
	CHECK(probe_first_missing(hooks, 2) == &hooks[1]);
	/* every candidate was really tried */
	CHECK_EQ(k.calls[PM_FENTRY], 2);
	CHECK_EQ(k.calls[PM_KPROBE], 2);
}

static void test_optional_hook_missing(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook hooks[2] = { page_hook(true), sched_hook() };

	CHECK_EQ(probe_resolve(hooks, 2, &o, PM_ALL), 0);
	CHECK_EQ(hooks[0].chosen, -1);
	CHECK_EQ(hooks[1].chosen, 0);
	CHECK(probe_first_missing(hooks, 2) == NULL);
}

static void test_first_missing_is_first(void)
{
	struct fake k = { .fentry_why = "not permitted" };
	struct feat_ops o = ops_for(&k);
	struct probe_hook hooks[3] = { page_hook(true), sched_hook(), page_hook(false) };

	/* no tp_btf, no tracefs: sched_switch falls to raw_tp */
	CHECK_EQ(probe_resolve(hooks, 3, &o, PM_ALL), -ENOENT);
	CHECK_EQ(hooks[1].chosen, 1);
	CHECK(probe_first_missing(hooks, 3) == &hooks[2]);
	CHECK(probe_first_missing(hooks, 2) == NULL);
	hooks[0].optional = false;
	CHECK(probe_first_missing(hooks, 3) == &hooks[0]);
}

static void test_mode_mask_excludes(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = sched_hook();

	k.tracefs = true;
	CHECK_EQ(probe_resolve(&h, 1, &o, PM_BIT(PM_RAW_TP) | PM_BIT(PM_TRACEPOINT)), 0);
	CHECK_EQ(h.chosen, 1);
	CHECK_EQ(h.status[0], PS_EXCLUDED);
	CHECK_STR(h.why[0], "excluded by --probe-mode");
	CHECK_EQ(h.status[1], PS_CHOSEN);
	CHECK_EQ(h.status[2], PS_AVAILABLE);
	/* an excluded mechanism is never probed */
	CHECK_EQ(k.calls[PM_TP_BTF], 0);
}

static void test_mode_mask_excludes_all(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = sched_hook();
	char buf[256];

	CHECK_EQ(probe_resolve(&h, 1, &o, PM_BIT(PM_KPROBE) | PM_BIT(PM_KRETPROBE)), -ENOENT);
	CHECK_EQ(h.chosen, -1);
	for (int j = 0; j < 3; j++)
		CHECK_EQ(h.status[j], PS_EXCLUDED);
	CHECK(probe_first_missing(&h, 1) == &h);
	probe_explain(&h, buf, sizeof(buf));
	CHECK_STR(buf, "tried tp_btf:sched_switch (excluded by --probe-mode), "
		  "raw_tp:sched_switch (excluded by --probe-mode), "
		  "tracepoint:sched/sched_switch (excluded by --probe-mode)");
}

static void test_silent_failure_gets_reason(void)
{
	struct fake k = { .silent_raw_tp = true };
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = sched_hook();

	CHECK_EQ(probe_resolve(&h, 1, &o, PM_ALL), -ENOENT);
	CHECK_EQ(h.status[1], PS_UNAVAILABLE);
	CHECK_STR(h.why[1], "not supported");
}

static void test_resolve_is_repeatable(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = sched_hook();

	/* a second run with another mask leaves no stale status or reason */
	CHECK_EQ(probe_resolve(&h, 1, &o, PM_BIT(PM_RAW_TP)), 0);
	CHECK_EQ(h.chosen, 1);
	CHECK_EQ(probe_resolve(&h, 1, &o, PM_ALL), 0);
	CHECK_EQ(h.chosen, 0);
	CHECK_EQ(h.status[0], PS_CHOSEN);
	CHECK_STR(h.why[0], "");
	CHECK_EQ(h.status[1], PS_AVAILABLE);
}

static void test_fexit_and_kretprobe_use_same_probes(void)
{
	static const char *const fentry_ok[] = { "tcp_sendmsg", NULL };
	struct fake k = { .fentry_ok = fentry_ok };
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = {
		.name = "send_ret",
		.cand = {
			{ PM_FEXIT, "tcp_sendmsg", "fexit_send" },
			{ PM_KRETPROBE, "tcp_sendmsg", "kretprobe_send" },
		},
	};

	CHECK_EQ(probe_resolve(&h, 1, &o, PM_ALL), 0);
	CHECK_EQ(h.chosen, 0);
	CHECK_EQ(k.calls[PM_FENTRY], 1);
	CHECK_EQ(h.status[1], PS_UNAVAILABLE);
	CHECK_STR(h.why[1], "kprobes not supported");
	CHECK_EQ(k.calls[PM_KPROBE], 1);
	/* "fentry" in --probe-mode covers fexit */
	CHECK_EQ(probe_resolve(&h, 1, &o, PM_BIT(PM_FENTRY)), -ENOENT);
	CHECK_EQ(h.status[0], PS_EXCLUDED);
}

static void test_explain_names_every_candidate(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = page_hook(false);
	char buf[512];

	probe_resolve(&h, 1, &o, PM_ALL);
	probe_explain(&h, buf, sizeof(buf));
	CHECK_STR(buf, "tried fentry:folio_mark_accessed (not permitted), "
		  "fentry:mark_page_accessed (not permitted), "
		  "kprobe:folio_mark_accessed (kprobes not supported), "
		  "kprobe:mark_page_accessed (kprobes not supported)");
}

static void test_explain_two_candidates(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = {
		.name = "f",
		.cand = { { PM_FENTRY, "f", "p1" }, { PM_KPROBE, "f", "p2" } },
	};
	char buf[256];

	CHECK_EQ(probe_resolve(&h, 1, &o, PM_ALL), -ENOENT);
	probe_explain(&h, buf, sizeof(buf));
	CHECK_STR(buf, "tried fentry:f (not permitted), kprobe:f (kprobes not supported)");
}

static void test_explain_truncates_safely(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = page_hook(false);
	struct { char buf[24]; char canary[8]; } s;

	memset(s.canary, 'Z', sizeof(s.canary));
	probe_resolve(&h, 1, &o, PM_ALL);
	probe_explain(&h, s.buf, sizeof(s.buf));
	CHECK_STR(s.buf, "tried fentry:folio_mark");
	CHECK(!memcmp(s.canary, "ZZZZZZZZ", 8));
	/* the cut falls exactly after "tried" */
	probe_explain(&h, s.buf, 6);
	CHECK_STR(s.buf, "tried");
	CHECK(!memcmp(s.canary, "ZZZZZZZZ", 8));
}

static unsigned int mode(const char *s)
{
	unsigned int m = 0xdead;

	return probe_parse_mode(s, &m) ? 0xdead : m;
}

static void test_parse_mode(void)
{
	CHECK_EQ(mode("fentry"), PM_BIT(PM_FENTRY) | PM_BIT(PM_FEXIT));
	CHECK_EQ(mode("fexit"), PM_BIT(PM_FENTRY) | PM_BIT(PM_FEXIT));
	CHECK_EQ(mode("kprobe"), PM_BIT(PM_KPROBE) | PM_BIT(PM_KRETPROBE));
	CHECK_EQ(mode("kretprobe"), PM_BIT(PM_KPROBE) | PM_BIT(PM_KRETPROBE));
	CHECK_EQ(mode("tp_btf,raw_tp"), PM_BIT(PM_TP_BTF) | PM_BIT(PM_RAW_TP));
	CHECK_EQ(mode("tracepoint"), PM_BIT(PM_TRACEPOINT));
	CHECK_EQ(mode("fentry,tp_btf,raw_tp,tracepoint,kprobe"), PM_ALL);
	CHECK_EQ(mode("raw_tp,raw_tp"), PM_BIT(PM_RAW_TP));
}

static void test_parse_mode_rejects(void)
{
	static const char *const bad[] = {
		"", NULL, "bogus", "fentry,,x", "fentry,bogus", "FENTRY", "fentry ",
		"fentry,,tp_btf", ",fentry", "fentry,", ",",
	};
	unsigned int m = 7;

	for (size_t i = 0; i < T_ROWS(bad); i++)
		CHECK_CASE(probe_parse_mode(bad[i], &m) == -EINVAL, "\"%s\"",
			   bad[i] ? bad[i] : "(null)");
	CHECK_EQ(m, 7);
}

static void test_mech_names(void)
{
	CHECK_STR(probe_mech_name(PM_FENTRY), "fentry");
	CHECK_STR(probe_mech_name(PM_FEXIT), "fexit");
	CHECK_STR(probe_mech_name(PM_TP_BTF), "tp_btf");
	CHECK_STR(probe_mech_name(PM_RAW_TP), "raw_tp");
	CHECK_STR(probe_mech_name(PM_TRACEPOINT), "tracepoint");
	CHECK_STR(probe_mech_name(PM_KPROBE), "kprobe");
	CHECK_STR(probe_mech_name(PM_KRETPROBE), "kretprobe");
	CHECK_STR(probe_mech_name(PM_NR), "?");
}

static void test_summary(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook hooks[3] = { sched_hook(), sched_hook(), page_hook(true) };

	hooks[1].name = "sched_wakeup";
	hooks[1].cand[0].target = "sched_wakeup";
	probe_resolve(hooks, 3, &o, PM_ALL);
	/* the optional hook without a candidate does not count */
	CHECK_STR(probe_summary(hooks, 3), "tp_btf");
	probe_resolve(hooks, 3, &o, PM_BIT(PM_RAW_TP));
	CHECK_STR(probe_summary(hooks, 3), "raw_tp");
	hooks[1].cand[0].target = "sched_stat_runtime";	/* not in BTF */
	probe_resolve(hooks, 3, &o, PM_ALL);
	CHECK_EQ(hooks[1].chosen, 1);
	CHECK_STR(probe_summary(hooks, 3), "mixed");
	probe_resolve(hooks, 3, &o, PM_BIT(PM_KPROBE));
	CHECK_STR(probe_summary(hooks, 3), "none");
	CHECK_STR(probe_summary(hooks, 0), "none");
}

static const char *f_kprobe_symbol(void *ctx, const char *func)
{
	/* the compiler cloned folio_mark_accessed; mark_page_accessed is plain */
	if (!strcmp(func, "folio_mark_accessed"))
		return "folio_mark_accessed.isra.0";
	return func;
}

static void test_resolve_first_stops_at_chosen(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = sched_hook();

	CHECK_EQ(probe_resolve_first(&h, 1, &o, PM_ALL), 0);
	CHECK_EQ(h.chosen, 0);
	CHECK_EQ(h.status[1], PS_UNTRIED);
	CHECK_EQ(h.status[2], PS_UNTRIED);
	/* the later candidates were not probed at all */
	CHECK_EQ(k.calls[PM_RAW_TP], 0);
	CHECK_EQ(k.calls[PM_TRACEPOINT], 0);
	CHECK_EQ(probe_resolve(&h, 1, &o, PM_ALL), 0);
	CHECK_EQ(h.status[1], PS_AVAILABLE);
}

static void test_kprobe_symbol_of_a_clone(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = page_hook(false);
	char buf[512];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	k.kprobes = true;
	o.kprobe_symbol = f_kprobe_symbol;
	CHECK_EQ(probe_resolve(&h, 1, &o, PM_BIT(PM_KPROBE)), 0);
	CHECK_EQ(h.chosen, 2);
	CHECK_STR(h.symbol[2], "folio_mark_accessed.isra.0");
	CHECK_STR(h.symbol[3], "");	/* the name itself: nothing to record */
	probe_print_plan(f, &h, 1, NULL, "t", 0);
	fclose(f);
	CHECK(strstr(buf, "chosen as folio_mark_accessed.isra.0") != NULL);
}

static void test_tracepoint_macro(void)
{
	struct probe_hook m = { .name = "sched_switch",
		.cand = { PROBE_TRACEPOINT("sched", "sched_switch", "switch") } };
	struct probe_hook two = { .name = "send", .cand = { PROBE_BTF_RAW("sock_send_length", "send") } };
	struct probe_hook h = sched_hook();
	const char *progs[] = { "switch_btf", "switch_raw", "switch_tp" };

	for (int j = 0; j < 3; j++) {
		CHECK_EQ(m.cand[j].mech, h.cand[j].mech);
		CHECK_STR(m.cand[j].target, h.cand[j].target);
		CHECK_STR(m.cand[j].prog, progs[j]);
	}
	CHECK(m.cand[3].target == NULL);
	CHECK_EQ(two.cand[0].mech, PM_TP_BTF);
	CHECK_STR(two.cand[0].prog, "send_btf");
	CHECK_EQ(two.cand[1].mech, PM_RAW_TP);
	CHECK_STR(two.cand[1].target, "sock_send_length");
	CHECK_STR(two.cand[1].prog, "send_raw");
	CHECK(two.cand[2].target == NULL);
}

static void test_chosen_by(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook hs[2] = { sched_hook(), page_hook(true) };

	k.kprobes = true;
	CHECK_EQ(probe_resolve(hs, 2, &o, PM_ALL), 0);
	CHECK(probe_chosen(&hs[0]) == &hs[0].cand[0]);
	CHECK(probe_chosen_by(&hs[0], PM_BIT(PM_TP_BTF)));
	CHECK(!probe_chosen_by(&hs[0], PM_FUNCTION));
	/* fentry EPERM: the kprobe on folio_mark_accessed */
	CHECK_EQ(hs[1].chosen, 2);
	CHECK(probe_chosen_by(&hs[1], PM_FUNCTION));
	CHECK(probe_chosen_by(&hs[1], PM_BIT(PM_FENTRY) | PM_BIT(PM_KPROBE)));
	CHECK(!probe_chosen_by(&hs[1], PM_BIT(PM_FEXIT)));
	k.kprobes = false;
	CHECK_EQ(probe_resolve(hs, 2, &o, PM_ALL), 0);
	CHECK(probe_chosen(&hs[1]) == NULL);
	CHECK(!probe_chosen_by(&hs[1], PM_ALL));
}

/* A dropped hook is supported but not attached: --list-probes says
 * "available", the resolver's summary leaves it out, a required one is
 * missing. */
static void test_drop(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook hs[2] = { sched_hook(), sched_hook() };
	char buf[1024];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	hs[1].name = "sched_switch_raw";
	hs[1].optional = true;
	CHECK_EQ(probe_resolve(hs, 2, &o, PM_BIT(PM_RAW_TP) | PM_BIT(PM_TRACEPOINT)), 0);
	CHECK_STR(probe_summary(hs, 2), "raw_tp");
	probe_drop(&hs[1], NULL);
	CHECK_EQ(hs[1].chosen, -1);
	CHECK_EQ(hs[1].status[1], PS_AVAILABLE);
	CHECK_EQ(hs[1].status[2], PS_UNAVAILABLE);
	CHECK_STR(hs[1].why[2], "tracefs not mounted");
	probe_drop(&hs[1], NULL);	/* nothing chosen: nothing changes */
	CHECK_EQ(hs[1].status[1], PS_AVAILABLE);
	probe_print_plan(f, hs, 2, NULL, "t", 0);
	fclose(f);
	CHECK(strstr(buf, "raw_tp      sched_switch                       available\n") != NULL);
	CHECK(strstr(buf, "none: optional, output without it") != NULL);
	probe_drop(&hs[0], NULL);
	CHECK(probe_first_missing(hs, 2) == &hs[0]);
	CHECK_STR(probe_summary(hs, 2), "none");
}

static void test_exclude(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook h = sched_hook();
	char buf[1024];

	CHECK_EQ(probe_resolve(&h, 1, &o, PM_ALL), 0);
	probe_exclude(&h, "function mode: accesses from page_accessed");
	CHECK_EQ(h.chosen, -1);
	CHECK_EQ(h.status[0], PS_EXCLUDED);
	CHECK_EQ(h.status[1], PS_EXCLUDED);
	CHECK_STR(h.why[0], "function mode: accesses from page_accessed");
	CHECK_STR(h.why[1], "function mode: accesses from page_accessed");
	/* what did not work keeps its own reason */
	CHECK_EQ(h.status[2], PS_UNAVAILABLE);
	CHECK_STR(h.why[2], "tracefs not mounted");
	probe_explain(&h, buf, sizeof(buf));
	CHECK_STR(buf, "tried tp_btf:sched_switch (function mode: accesses from page_accessed), "
		       "raw_tp:sched_switch (function mode: accesses from page_accessed), "
		       "tracepoint:sched/sched_switch (tracefs not mounted)");
}

#define SYS_HOOK(tp) { .name = tp, .optional = true, .cand = { { PM_TRACEPOINT, "syscalls/" tp, tp } } }
#define RAW_HOOK(tp) { .name = tp, .optional = true, .cand = { PROBE_TRACEPOINT("raw_syscalls", tp, tp) } }

/* per-syscall tracepoints for the raw syscall hooks: all of them or none */
static void test_choose_set(void)
{
	static const char *const raw_tps[] = { "sys_enter", "sys_exit", NULL };
	static const char *const no_brk[] = { "syscalls/sys_exit_brk", NULL };
	struct fake k = { .btf_tps = raw_tps, .tracefs = true };
	struct feat_ops o = ops_for(&k);
	char buf[4096];
	FILE *f;
	struct probe_hook hs[] = {
		SYS_HOOK("sys_enter_mmap"), SYS_HOOK("sys_exit_brk"),
		RAW_HOOK("sys_enter"), RAW_HOOK("sys_exit"),
	};

	CHECK_EQ(probe_resolve(hs, 4, &o, PM_ALL), 0);
	CHECK(probe_choose_set(hs, 2, hs + 2, 2));
	CHECK_EQ(hs[0].chosen, 0);
	CHECK_EQ(hs[1].chosen, 0);
	CHECK_EQ(hs[2].chosen, -1);
	CHECK_EQ(hs[3].status[1], PS_EXCLUDED);
	CHECK_STR(hs[3].why[0], "per-syscall tracepoints chosen");
	CHECK_STR(probe_summary(hs, 4), "tracepoint");
	/* the raw hooks are not missing: the set chosen answers */
	f = fmemopen(buf, sizeof(buf), "w");
	probe_print_plan(f, hs, 4, NULL, "t", 0);
	fclose(f);
	CHECK(strstr(buf, "none: not needed, per-syscall tracepoints chosen\n") != NULL);
	CHECK(strstr(buf, "output without it") == NULL);

	/* one event missing: the raw hooks, tp_btf first */
	k.no_events = no_brk;
	CHECK_EQ(probe_resolve(hs, 4, &o, PM_ALL), 0);
	CHECK(!probe_choose_set(hs, 2, hs + 2, 2));
	CHECK_EQ(hs[0].chosen, -1);
	CHECK_EQ(hs[0].status[0], PS_EXCLUDED);
	CHECK_STR(hs[0].why[0], "without sys_exit_brk: raw syscall hooks instead");
	CHECK_EQ(hs[1].status[0], PS_UNAVAILABLE);
	CHECK_STR(hs[1].why[0], "not in tracefs");
	f = fmemopen(buf, sizeof(buf), "w");
	probe_print_plan(f, hs, 4, NULL, "t", 0);
	fclose(f);
	CHECK(strstr(buf, "none: not needed, without sys_exit_brk: raw syscall hooks instead\n") != NULL);
	/* sys_exit_brk itself is missing (not in tracefs), and optional */
	CHECK(strstr(buf, "none: optional, output without it\n") != NULL);
	CHECK_EQ(hs[2].chosen, 0);
	CHECK_EQ(hs[3].chosen, 0);
	CHECK_STR(probe_summary(hs, 4), "tp_btf");

	/* --probe-mode raw_tp leaves the tracepoints out */
	k.no_events = NULL;
	CHECK_EQ(probe_resolve(hs, 4, &o, PM_BIT(PM_RAW_TP)), 0);
	CHECK(!probe_choose_set(hs, 2, hs + 2, 2));
	CHECK_STR(probe_summary(hs, 4), "raw_tp");
}

/* Against a real object (opened, never loaded): the dropped program and
 * the unloaded hooks' programs are not loaded, the others are. */
static void test_drop_unloads_programs(void)
{
	struct uprobe_args_bpf *skel = uprobe_args_bpf__open();
	struct probe_hook hs[2] = {
		{ .name = "launch", .chosen = 1, .cand = {
			{ PM_KPROBE, "f", "t_launch_ptsz" }, { PM_KPROBE, "f", "t_launch" } } },
		{ .name = "rank", .chosen = -1, .cand = {
			{ PM_KPROBE, "f", "t_init_rank" }, { PM_KRETPROBE, "f", "t_launch_ret" } } },
	};

	if (!skel)
		SKIP("cannot open the test BPF object");
	hs[0].status[1] = PS_CHOSEN;
	probe_drop(&hs[0], skel->obj);
	CHECK(!bpf_program__autoload(skel->progs.t_launch));
	CHECK(bpf_program__autoload(skel->progs.t_launch_ptsz));
	CHECK_EQ(hs[0].status[1], PS_AVAILABLE);
	probe_unload(skel->obj, &hs[1], 1);
	CHECK(!bpf_program__autoload(skel->progs.t_init_rank));
	CHECK(!bpf_program__autoload(skel->progs.t_launch_ret));
	CHECK(bpf_program__autoload(skel->progs.t_cu_launch));
	uprobe_args_bpf__destroy(skel);
}

/* fexit without bpf_get_func_ret (5.10 has trampolines, not the helper) */
static int f_needs_no_func_ret(void *ctx, enum probe_mech m, const char *target, unsigned int needs,
			       char *why, size_t len)
{
	if (!(needs & PROBE_NEEDS_FUNC_RET))
		return 0;
	snprintf(why, len, "no bpf_get_func_ret() in fexit here");
	return -EINVAL;
}

/* A candidate whose program needs a helper the kernel lacks is unavailable,
 * with that reason, and the next one is chosen; without the needs op, or
 * when the helper is there, it is chosen as before. */
static void test_needs(void)
{
	static const char *const ok[] = { "tcp_recvmsg", "tcp_sendmsg", NULL };
	struct fake k = { .fentry_ok = ok, .kprobes = true };
	struct feat_ops o = ops_for(&k);
	struct probe_hook hooks[2] = {
		{ .name = "recv", .cand = {
			{ PM_FEXIT, "tcp_recvmsg", "recv_fexit", PROBE_NEEDS_FUNC_RET },
			{ PM_KRETPROBE, "tcp_recvmsg", "recv_kret" } } },
		{ .name = "send", .cand = {
			{ PM_FEXIT, "tcp_sendmsg", "send_fexit" },
			{ PM_KRETPROBE, "tcp_sendmsg", "send_kret" } } },
	};
	char buf[256];

	CHECK_EQ(probe_resolve(hooks, 2, &o, PM_ALL), 0);
	CHECK_EQ(hooks[0].chosen, 0);
	o.needs = f_needs_no_func_ret;
	CHECK_EQ(probe_resolve(hooks, 2, &o, PM_ALL), 0);
	CHECK_EQ(hooks[0].chosen, 1);
	CHECK_EQ(hooks[0].status[0], PS_UNAVAILABLE);
	CHECK_STR(hooks[0].why[0], "no bpf_get_func_ret() in fexit here");
	CHECK_EQ(hooks[1].chosen, 0);
	probe_explain(&hooks[0], buf, sizeof(buf));
	CHECK_STR(buf, "tried fexit:tcp_recvmsg (no bpf_get_func_ret() in fexit here), kretprobe:tcp_recvmsg (not tried)");
	/* the attach point is checked first: its reason wins */
	k.fentry_ok = NULL;
	CHECK_EQ(probe_resolve(hooks, 2, &o, PM_ALL), 0);
	CHECK_STR(hooks[0].why[0], "not permitted");
}

/*
 * Where tp_btf and raw_tp programs run preemptibly, a preemptible hook
 * tries its classic tracepoint first; a hook in a non-preemptible place
 * (sched_switch) keeps tp_btf; the kernel is asked once per resolve and
 * only for a preemptible hook; --probe-mode still rules.
 */
static void test_preemptible_hooks_prefer_tracepoint(void)
{
	struct fake k = test_host();
	struct feat_ops o = ops_for(&k);
	struct probe_hook h[3] = { sched_hook(), sched_hook(), { .name = "sched_process_exit",
		.preemptible = true, .cand = { PROBE_TRACEPOINT("sched", "sched_process_exit", "exit"),
					       PROBE_FUNC("do_exit", "exit") } } };

	h[1].preemptible = true;
	k.tracefs = true;
	k.kprobes = true;
	/* not preemptible: the order as listed */
	CHECK_EQ(probe_resolve(h, 3, &o, PM_ALL), 0);
	CHECK_EQ(k.preempt_asked, 1);
	CHECK_EQ(h[1].chosen, 0);
	CHECK_EQ(h[2].chosen, 1);	/* exit: raw_tp (tp_btf not in the fake BTF) */
	CHECK_STR(h[1].why[0], "");
	k.tp_preemptible = true;
	k.preempt_asked = 0;
	k.btf_tps = (const char *const[]){ "sched_switch", "sched_process_exit", NULL };
	CHECK_EQ(probe_resolve(h, 3, &o, PM_ALL), 0);
	CHECK_EQ(k.preempt_asked, 1);
	CHECK_EQ(h[0].chosen, 0);	/* sched_switch: not a preemptible place */
	CHECK_STR(h[0].why[0], "");
	CHECK_EQ(h[1].chosen, 2);
	CHECK_EQ(h[1].status[0], PS_AVAILABLE);
	CHECK_EQ(h[1].status[1], PS_AVAILABLE);
	CHECK_STR(h[1].why[0], "preemptible here, so the kernel can skip runs");
	CHECK_EQ(h[2].chosen, 2);
	CHECK_EQ(h[2].status[4], PS_AVAILABLE);	/* kprobe do_exit after them */
	/* without the tracepoint, tp_btf after all */
	k.tracefs = false;
	CHECK_EQ(probe_resolve(h, 3, &o, PM_ALL), 0);
	CHECK_EQ(h[1].chosen, 0);
	CHECK_STR(h[1].why[0], "");
	CHECK_STR(h[1].why[1], "preemptible here, so the kernel can skip runs");
	CHECK_EQ(h[1].status[2], PS_UNAVAILABLE);
	/* --probe-mode tp_btf: tp_btf, as asked */
	k.tracefs = true;
	CHECK_EQ(probe_resolve(h, 3, &o, PM_BIT(PM_TP_BTF)), 0);
	CHECK_EQ(h[1].chosen, 0);
	CHECK_EQ(h[1].status[2], PS_EXCLUDED);
	/* resolve_first: the tracepoint, and tp_btf and raw_tp untried */
	CHECK_EQ(probe_resolve_first(h, 3, &o, PM_ALL), 0);
	CHECK_EQ(h[1].chosen, 2);
	CHECK_EQ(h[1].status[0], PS_UNTRIED);
	CHECK_EQ(h[1].status[1], PS_UNTRIED);
	/* a hook without a classic tracepoint keeps its order */
	struct probe_hook send = { .name = "send", .preemptible = true,
				   .cand = { PROBE_BTF_RAW("sched_switch", "send") } };
	CHECK_EQ(probe_resolve(&send, 1, &o, PM_ALL), 0);
	CHECK_EQ(send.chosen, 0);
	CHECK_STR(send.why[0], "");
}

int main(void)
{
	RUN(test_first_supported_chosen);
	RUN(test_fallback_when_tp_btf_missing);
	RUN(test_renamed_function_candidate);
	RUN(test_required_hook_missing);
	RUN(test_optional_hook_missing);
	RUN(test_first_missing_is_first);
	RUN(test_mode_mask_excludes);
	RUN(test_mode_mask_excludes_all);
	RUN(test_silent_failure_gets_reason);
	RUN(test_resolve_is_repeatable);
	RUN(test_fexit_and_kretprobe_use_same_probes);
	RUN(test_explain_names_every_candidate);
	RUN(test_explain_two_candidates);
	RUN(test_explain_truncates_safely);
	RUN(test_parse_mode);
	RUN(test_parse_mode_rejects);
	RUN(test_mech_names);
	RUN(test_summary);
	RUN(test_resolve_first_stops_at_chosen);
	RUN(test_kprobe_symbol_of_a_clone);
	RUN(test_tracepoint_macro);
	RUN(test_chosen_by);
	RUN(test_drop);
	RUN(test_exclude);
	RUN(test_choose_set);
	RUN(test_drop_unloads_programs);
	RUN(test_needs);
	RUN(test_preemptible_hooks_prefer_tracepoint);
	return t_done();
}
