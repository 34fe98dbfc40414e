// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * oomwatch: who got OOM-killed, why, and who is about to be?
 *
 * Streams OOM kills as the kernel marks each victim (BPF), alerts polled
 * every interval from the memory cgroups' own files (working set against
 * the limit, limit hits and OOM counts, pressure), and allocations of at
 * least --alloc-min seen at the syscalls. --check scans every cgroup once
 * and exits with a code a runbook can branch on.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cgset.h"
#include "kfeatures.h"
#include "json.h"
#include "memcg.h"
#include "metrics.h"
#include "complete.h"
#include "opts.h"
#include "run.h"
#include "table.h"
#include "util.h"
#include "oomwatch.h"
#include "oomwatch.skel.h"

#define TOOL "oomwatch"

/* --check exit codes: outside CONTRACT section 3 (0, 1, 2, 77) */
#define EXIT_CHECK_WARN	3
#define EXIT_CHECK_CRIT	4

/* a level drops (and can alert again) this many points below its threshold */
#define HYSTERESIS_PCT	2.0
/* a cgroup's limit is read again every this many intervals */
#define LIMIT_EVERY	10
/* PSI triggers: a full stall of --psi-warn/--psi-crit of this window */
#define PSI_WINDOW_US	2000000ULL

static const char doc[] =
"OOM kills with their context, and warnings before they happen.\n"
"\n"
"Streams each OOM kill (victim, memcg or global, the memcg's limit and usage,\n"
"RSS, oom_score_adj, the task that triggered it), alerts polled every interval\n"
"from the memory cgroups (working set against the limit, limit hits, OOM\n"
"counts, pressure), and allocations of at least --alloc-min. --check scans\n"
"every memory cgroup once and exits 0 (all below --warn), 3 (warn) or 4 (crit).\n"
"\n"
"USAGE: oomwatch [OPTIONS]"
"\v"
"EXAMPLES:\n"
"  oomwatch                      # kills, alerts and large allocations\n"
"  oomwatch --warn 80 --crit 90 -i 5s   # earlier alerts, polled every 5 s\n"
"  oomwatch -j | jq 'select(.event==\"oom_kill\") | [.pid,.comm,.limit_bytes]'\n"
"  oomwatch --check; echo $?     # 0 ok, 3 warn, 4 crit\n"
"  oomwatch --check -j | jq 'select(.type==\"sample\" and .level!=\"ok\")'\n"
"  oomwatch --container 3f2a --alloc-min 1G\n"
"  oomwatch --alloc-min 0 --listen :9469   # Prometheus scrapes /metrics\n"
"\n"
"Exit status: 0 done, 1 runtime error, 2 usage error, 77 cannot run here;\n"
"--check: 0 ok, 3 warn, 4 crit.";

enum { OPT_WARN = 0x200, OPT_CRIT, OPT_PSI_WARN, OPT_PSI_CRIT, OPT_ALLOC_MIN, OPT_CHECK };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "oomwatch:", 1 },
	{ "warn", OPT_WARN, "PCT", 0, "Alert when a working set reaches PCT% of its limit (default 85)", 1 },
	{ "crit", OPT_CRIT, "PCT", 0, "Critical from PCT% (default 95)", 1 },
	{ "psi-warn", OPT_PSI_WARN, "PCT", 0, "Alert when memory pressure (full avg10) reaches PCT% (default 10)", 1 },
	{ "psi-crit", OPT_PSI_CRIT, "PCT", 0, "Critical pressure from PCT% (default 40)", 1 },
	{ "alloc-min", OPT_ALLOC_MIN, "SIZE", 0, "Report mmap/mremap/brk of at least SIZE (default 512M, 0: off)", 1 },
	{ "check", OPT_CHECK, NULL, 0, "Scan every memory cgroup once; exit 0 ok, 3 warn, 4 crit", 1 },
	{},
};

enum level { LVL_OK, LVL_WARN, LVL_CRIT };

static const char *const level_names[] = { "ok", "warn", "crit" };
static const char *const sort_keys[] = { "pct", "ws", "usage", "limit", NULL };

/* what the shell completions offer after its options (lib/complete.h) */
const struct opt_value aiscope_opt_values[] = {
	{ .name = "sort", .kind = OV_WORDS, .words = sort_keys },
	{},
};

static struct {
	double warn, crit, psi_warn, psi_crit;
	uint64_t alloc_min;
	bool check;
} cfg = { .warn = 85, .crit = 95, .psi_warn = 10, .psi_crit = 40, .alloc_min = 512ULL << 20 };

static double parse_pct(const char *arg, const char *opt)
{
	char *end;
	double v = strtod(arg, &end);

	if (end == arg || *end || !(v > 0 && v <= 100))
		usage_error("invalid %s '%s': expected a percentage above 0, at most 100", opt, arg);
	return v;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case OPT_WARN:
		cfg.warn = parse_pct(arg, "--warn");
		break;
	case OPT_CRIT:
		cfg.crit = parse_pct(arg, "--crit");
		break;
	case OPT_PSI_WARN:
		cfg.psi_warn = parse_pct(arg, "--psi-warn");
		break;
	case OPT_PSI_CRIT:
		cfg.psi_crit = parse_pct(arg, "--psi-crit");
		break;
	case OPT_ALLOC_MIN:
		if (parse_size(arg, &cfg.alloc_min))
			usage_error("invalid --alloc-min '%s': expected a size such as 512M or 1G (0: off)",
				    arg);
		break;
	case OPT_CHECK:
		cfg.check = true;
		break;
	case ARGP_KEY_END:
		/* before the address is bound and announced: one line */
		if (cfg.check && env.listen)
			usage_error("--check is one scan: --listen would serve it to nobody (--prometheus FILE writes it)");
		return ARGP_ERR_UNKNOWN;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = AISCOPE_ARGP(opts, parse_arg, doc);

/* The victim hook first: mark_victim fires once per victim, in every
 * mechanism. oom_kill_process adds the OOM's context where a function hook
 * works. memcg reclaim is the earliest alert BPF has: a charge at the
 * limit reclaims before any memcg OOM. The allocation hooks come last so
 * that --alloc-min 0 drops them: the calls' own tracepoints, or where one
 * is missing the raw sys_enter/sys_exit (on_plan), which run for every
 * syscall of the host. */
#define SYSCALL_HOOK(hname, tp, prog) \
	{ .name = hname, .optional = true, .cand = { { PM_TRACEPOINT, "syscalls/" tp, prog } } }

static struct probe_hook hooks[] = {
	{ .name = "mark_victim", .preemptible = true, .cand = {
		PROBE_TRACEPOINT("oom", "mark_victim", "victim") } },
	{ .name = "oom_kill_process", .optional = true, .cand = {
		PROBE_FUNC("oom_kill_process", "oomkill") } },
	{ .name = "memcg_reclaim", .optional = true, .preemptible = true, .cand = {
		PROBE_TRACEPOINT("vmscan", "mm_vmscan_memcg_reclaim_begin", "reclaim") } },
	SYSCALL_HOOK("mmap", "sys_enter_mmap", "mmap_enter"),
	SYSCALL_HOOK("mremap", "sys_enter_mremap", "mremap_enter"),
	SYSCALL_HOOK("brk", "sys_enter_brk", "brk_enter"),
	SYSCALL_HOOK("brk_exit", "sys_exit_brk", "brk_exit"),
	{ .name = "sys_enter", .optional = true, .preemptible = true, .cand = {
		PROBE_TRACEPOINT("raw_syscalls", "sys_enter", "sysenter") } },
	{ .name = "sys_exit", .optional = true, .preemptible = true, .cand = {
		PROBE_TRACEPOINT("raw_syscalls", "sys_exit", "sysexit") } },
};
#define NHOOKS_KILL 2
#define HOOK_RECLAIM 2
#define NHOOKS_ALERT 3
#define NHOOKS_SYSCALL 4	/* the per-syscall ones, then the raw pair */

static struct {
	struct oomwatch_bpf *skel;
	struct aiscope_bpf bpf;
	struct aiscope_loop loop;
	struct jw jw;
	struct table t;
	struct memcg_set set;
	const char *sysroot;
	char host_psi[4096];
	int host_psi_fd;
	int host_level;
	bool memcg_v1;		/* the kernel's memcgs are in a v1 hierarchy */
	long page_size;
	uint64_t events, kills, alerts, allocs, reclaims;
	/* kernel symbols that tell memcg from global OOMs, loaded at start
	 * when oom_kill_process cannot be hooked (else at a kill that needs
	 * them) */
	bool ksyms_loaded;
	uint64_t memcg_oom[2], global_oom[2][2];
} S = { .host_psi_fd = -1 };

/* ---- Prometheus metrics: kills and allocations from BPF, per-cgroup
 * gauges and the kernel's own counters from the poller ---- */

AISCOPE_METRIC_LABELS(kill_labels, AISCOPE_CGROUP_LABEL_NAMES, "scope", NULL);
AISCOPE_METRIC_LABELS(alloc_labels, AISCOPE_CGROUP_LABEL_NAMES, "syscall", NULL);
AISCOPE_METRIC_LABELS(event_labels, AISCOPE_CGROUP_LABEL_NAMES, "event", NULL);

static struct {
	struct prom_family *kills, *allocs, *alloc_bytes;
	/* set in full each poll: a cgroup gone leaves them */
	struct prom_family *usage, *ws, *limit, *level, *psi, *events;
} P;

static void metrics_init(void)
{
	if (!aiscope_metrics())
		return;
	P.kills = aiscope_metric_counter("aiscope_oomwatch_oom_kills_total",
		"OOM kills seen by BPF: the JSON oom_kill events, by the memcg key (else cgroup) and scope (memcg, global, unknown).",
		kill_labels);
	P.allocs = aiscope_metric_counter("aiscope_oomwatch_large_allocations_total",
		"Allocations of at least --alloc-min: the JSON alloc events, by cgroup and syscall.",
		alloc_labels);
	P.alloc_bytes = aiscope_metric_counter("aiscope_oomwatch_large_allocation_bytes_total",
		"Bytes asked for by those allocations: the sum of the JSON alloc events' size_bytes.",
		alloc_labels);
	P.usage = aiscope_metric_gauge("aiscope_oomwatch_memory_usage_bytes",
		"Memory cgroup usage at the last poll (memory.current, v1 memory.usage_in_bytes): the JSON usage_bytes.",
		aiscope_cgroup_labels);
	P.ws = aiscope_metric_gauge("aiscope_oomwatch_memory_working_set_bytes",
		"Usage less inactive_file of memory.stat at the last poll: the JSON working_set_bytes.",
		aiscope_cgroup_labels);
	P.limit = aiscope_metric_gauge("aiscope_oomwatch_memory_limit_bytes",
		"Memory cgroup limit (memory.max, v1 memory.limit_in_bytes): the JSON limit_bytes.",
		aiscope_cgroup_labels);
	P.level = aiscope_metric_gauge("aiscope_oomwatch_memory_alert_level",
		"Alert level held now: 0 ok, 1 warn, 2 crit, from the working set and pressure (the JSON level).",
		aiscope_cgroup_labels);
	P.psi = aiscope_metric_gauge("aiscope_oomwatch_psi_memory_full_avg10_ratio",
		"Memory pressure, full avg10 of memory.pressure, 0 to 1: the JSON psi_full_avg10_pct / 100.",
		aiscope_cgroup_labels);
	P.events = aiscope_metric_counter("aiscope_oomwatch_memory_events_total",
		"The kernel's memory cgroup counters as it counts them: max (limit hits: memory.events max, v1 memory.failcnt; JSON limit_hits), oom (JSON ooms), oom_kill (memory.events, v1 memory.oom_control; JSON oom_kills).",
		event_labels);
}

static bool limited(const struct memcg_reading *r);

static const char *const kill_scopes[] = { "memcg", "global", "unknown" };
static const char *const sys_names[] = { "mmap", "mremap", "brk" };

/* A counter exists at 0 for every label set it will have, from the moment
 * the set is known, so that rate() and increase() see its first kill. */
static void kills_zero(const char **vals)
{
	for (size_t i = 0; i < ARRAY_SIZE(kill_scopes); i++) {
		vals[AISCOPE_CGROUP_NLABELS] = kill_scopes[i];
		prom_counter_add(P.kills, vals, 0);
	}
}

/* The cgroups --check reports: a limit, or pressure at a level. */
static void metrics_cgroup(const struct memcg *m)
{
	static const char *const ev_names[] = { "max", "oom", "oom_kill" };
	const struct memcg_reading *r = &m->cur;
	const uint64_t ev[] = { r->limit_hits, r->ooms, r->oom_kills };
	const char *vals[AISCOPE_CGROUP_NLABELS + 1];
	struct container_info ci;

	if (!limited(r) && m->psi_level == LVL_OK)
		return;
	aiscope_cgroup_path_values(m->path, vals, &ci);
	kills_zero(vals);
	if (limited(r)) {
		prom_gauge_set(P.limit, vals, r->limit);
		if (r->usage != MEMCG_UNKNOWN)
			prom_gauge_set(P.usage, vals, r->usage);
		if (memcg_working_set(r) != MEMCG_UNKNOWN)
			prom_gauge_set(P.ws, vals, memcg_working_set(r));
	}
	prom_gauge_set(P.level, vals, m->level > m->psi_level ? m->level : m->psi_level);
	if (r->psi_full10 >= 0)
		prom_gauge_set(P.psi, vals, r->psi_full10 / 100);
	for (size_t i = 0; i < ARRAY_SIZE(ev); i++) {
		if (ev[i] == MEMCG_UNKNOWN)
			continue;
		vals[AISCOPE_CGROUP_NLABELS] = ev_names[i];
		prom_counter_set(P.events, vals, ev[i]);
	}
}

static void metrics_cgroups(void)
{
	struct prom_family *const rebuilt[] = { P.usage, P.ws, P.limit, P.level, P.psi, P.events };

	if (!aiscope_metrics())
		return;
	for (size_t i = 0; i < ARRAY_SIZE(rebuilt); i++)
		prom_family_clear(rebuilt[i]);
	for (size_t i = 0; i < S.set.n; i++)
		metrics_cgroup(S.set.cg[i]);
}

/* ---- output helpers ---- */

static const struct tcol cols_stream[] = {
	{ "TIME", 8, TC_LEFT }, { "EVENT", 8, TC_LEFT }, { "LEVEL", 5, TC_LEFT },
	{ "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "CONTAINER", 12, TC_LEFT },
	{ "CGROUP", 32, TC_LEFT }, { "USED(MiB)", 9, 0 }, { "LIMIT(MiB)", 10, 0 },
	{ "USE(%)", 6, 0 }, { "DETAIL", 0, TC_LEFT },
};

static void stream_row_begin(uint64_t rt)
{
	char hms[16];

	table_init_time(&S.t, stdout, cols_stream, ARRAY_SIZE(cols_stream), env.timestamp,
			env.tty && !env.wide);
	if (env.timestamp) {
		fmt_hms(rt, hms, sizeof(hms));
		table_str(&S.t, hms);
	}
}

/* An event line's start: the JSON record with its event and level (NULL:
 * none), or the stream row with both ("-" for none) */
static void event_begin(uint64_t rt, const char *event, const char *level)
{
	if (env.json) {
		jw_record_begin(&S.jw, "event", TOOL, rt);
		jw_kstr(&S.jw, "event", event);
		if (level)
			jw_kstr(&S.jw, "level", level);
	} else {
		stream_row_begin(rt);
		table_str(&S.t, event);
		table_str(&S.t, level ? level : "-");
	}
}

static void table_mib(struct table *t, uint64_t bytes)
{
	if (bytes == MEMCG_UNKNOWN)
		table_str(t, "-");
	else
		table_fixed(t, bytes / 1048576.0, 1);
}

static void table_pct(struct table *t, uint64_t part, uint64_t whole)
{
	if (part == MEMCG_UNKNOWN || whole == MEMCG_NO_LIMIT || !whole)
		table_str(t, "-");
	else
		table_fixed(t, 100.0 * part / whole, 1);
}

static void jw_kbytes(struct jw *w, const char *key, uint64_t v)
{
	if (v == MEMCG_UNKNOWN)
		jw_knull(w, key);
	else
		jw_ku64(w, key, v);
}

/* Fractions in JSON are 0-1 *_ratio keys in every tool (docs/schema/);
 * four decimals keep the two of the percentage the tables show. */
static void jw_kratio(struct jw *w, const char *key, uint64_t part, uint64_t whole)
{
	if (part == MEMCG_UNKNOWN || whole == MEMCG_NO_LIMIT || !whole)
		jw_knull(w, key);
	else
		jw_kdouble(w, key, (double)part / whole, 4);
}

/* PSI's avg10 is a percentage with two decimals: as a ratio, four */
static void jw_kpsi(struct jw *w, const char *key, double pct)
{
	if (pct < 0)
		jw_knull(w, key);
	else
		jw_kdouble(w, key, pct / 100.0, 4);
}

static int count_event(void)
{
	S.events++;
	if (env.count && S.events >= env.count)
		return aiscope_loop_stop(&S.loop, AISCOPE_EXIT_COUNT);
	return 0;
}

static uint64_t pages(uint64_t n)
{
	return n == OOMWATCH_NO_LIMIT ? MEMCG_NO_LIMIT : n * S.page_size;
}

/* A memcg's path: the watched set knows a cgroup as soon as inotify
 * reported it (the path cache rescans at most once a second) */
static const char *memcg_path(uint64_t id)
{
	struct memcg *m = memcg_set_find(&S.set, id, S.memcg_v1);

	return m ? m->path : cg_path_of(id, S.memcg_v1);
}

static const char *short_path(const char *p)
{
	return p ? p : "?";
}

/* ---- memcg vs global from the kernel stack ---- */

static void load_ksyms(void)
{
	static const char *const names[] = {
		"mem_cgroup_out_of_memory", "out_of_memory", "pagefault_out_of_memory",
	};
	uint64_t start[3] = {}, end[3];
	char line[512], name[256], type;
	unsigned long long addr;
	FILE *f;

	S.ksyms_loaded = true;
	for (int pass = 0; pass < 2; pass++) {
		f = fopen("/proc/kallsyms", "r");
		if (!f)
			return;
		for (int i = 0; i < 3; i++)
			end[i] = pass ? UINT64_MAX : 0;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "%llx %c %255s", &addr, &type, name) != 3 || !addr)
				continue;
			for (int i = 0; i < 3; i++) {
				if (!pass && !strcmp(name, names[i]))
					start[i] = addr;
				/* a function ends where the next symbol starts */
				if (pass && start[i] && addr > start[i] && addr < end[i])
					end[i] = addr;
			}
		}
		fclose(f);
	}
	if (start[0] && end[0] != UINT64_MAX) {
		S.memcg_oom[0] = start[0];
		S.memcg_oom[1] = end[0];
	}
	for (int i = 1; i < 3; i++) {
		if (start[i] && end[i] != UINT64_MAX) {
			S.global_oom[i - 1][0] = start[i];
			S.global_oom[i - 1][1] = end[i];
		}
	}
}

static bool stack_has(const struct oomwatch_kill *e, const uint64_t range[2])
{
	uint32_t n = e->nframes < OOMWATCH_STACK_DEPTH ? e->nframes : OOMWATCH_STACK_DEPTH;

	for (uint32_t i = 0; i < n && range[0]; i++)
		if (e->stack[i] >= range[0] && e->stack[i] < range[1])
			return true;
	return false;
}

/* mem_cgroup_out_of_memory() calls out_of_memory(): look for it first */
static int stack_scope(const struct oomwatch_kill *e)
{
	if (!S.ksyms_loaded)
		load_ksyms();
	if (stack_has(e, S.memcg_oom))
		return OOMWATCH_SCOPE_MEMCG;
	if (stack_has(e, S.global_oom[0]) || stack_has(e, S.global_oom[1]))
		return OOMWATCH_SCOPE_GLOBAL;
	return OOMWATCH_SCOPE_UNKNOWN;
}

/* ---- kill events ---- */

/* The old mark_victim names a pid only: the rest from /proc, while the
 * victim is still there. */
static void proc_enrich(struct aiscope_ident *id, char *cgpath, size_t len)
{
	char path[64], line[4096];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", id->pid);
	if ((f = fopen(path, "r"))) {
		if (fgets(line, sizeof(line), f)) {
			line[strcspn(line, "\n")] = 0;
			snprintf(id->comm, sizeof(id->comm), "%.15s", line);
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%u/cgroup", id->pid);
	if (!(f = fopen(path, "r")))
		return;
	while (fgets(line, sizeof(line), f)) {
		char *ctrl = strchr(line, ':'), *p = ctrl ? strchr(ctrl + 1, ':') : NULL;

		if (!p)
			continue;
		line[strcspn(line, "\n")] = 0;
		*p = 0;
		/* the memory controller's path names its memcg */
		if (strstr(ctrl + 1, "memory") || (!S.memcg_v1 && !strcmp(line, "0")))
			snprintf(cgpath, len, "%s", p + 1);
	}
	fclose(f);
}

struct kill_view {
	int scope;
	const char *scope_source;
	const struct oomwatch_memcg *memcg;
	const char *memcg_path;
	const char *victim_cgroup;
	struct container_info ci;
	uint64_t limit, usage;
	uint64_t unit;		/* bytes per size unit of the event */
	char proc_cgroup[4096];
};

static void kill_view(const struct oomwatch_kill *e, struct aiscope_ident *victim,
		      struct kill_view *v)
{
	memset(v, 0, sizeof(*v));
	v->scope = e->scope;
	v->scope_source = "oom_kill_process";
	if (!(e->flags & OOMWATCH_F_CONTEXT)) {
		v->scope = stack_scope(e);
		v->scope_source = v->scope ? "stack" : NULL;
	}
	/* a global OOM, or no full memcg found: the victim's own memcg */
	v->memcg = (e->flags & OOMWATCH_F_MEMCG) && v->scope != OOMWATCH_SCOPE_GLOBAL ? &e->memcg
										       : &e->own;
	v->memcg_path = v->memcg->id ? memcg_path(v->memcg->id) : NULL;
	v->limit = v->memcg->id ? pages(v->memcg->max_pages) : MEMCG_UNKNOWN;
	v->usage = v->memcg->id ? pages(v->memcg->usage_pages) : MEMCG_UNKNOWN;
	v->unit = e->flags & OOMWATCH_F_KB ? 1024 : S.page_size;
	if (e->flags & OOMWATCH_F_TASK) {
		v->victim_cgroup = aiscope_ident_cgroup(victim, &v->ci);
		return;
	}
	proc_enrich(victim, v->proc_cgroup, sizeof(v->proc_cgroup));
	if (v->proc_cgroup[0]) {
		v->victim_cgroup = v->proc_cgroup;
		cg_parse_container(v->proc_cgroup, &v->ci);
	}
}

static const char *scope_name(int scope)
{
	return scope == OOMWATCH_SCOPE_MEMCG ? "memcg" : scope == OOMWATCH_SCOPE_GLOBAL ? "global" : NULL;
}

static void kill_json(const struct oomwatch_kill *e, const struct aiscope_ident *victim,
		      const struct kill_view *v)
{
	struct jw *w = &S.jw;
	bool mm = e->flags & OOMWATCH_F_MM;

	event_begin(aiscope_realtime(e->ts), "oom_kill", NULL);
	aiscope_identity_json(w, &(struct aiscope_identity){
		.known = AISCOPE_ID_PID | (e->flags & OOMWATCH_F_UID ? AISCOPE_ID_UID : 0) |
			 (e->flags & OOMWATCH_F_TASK ? AISCOPE_ID_CGROUP_ID : 0),
		.pid = victim->pid, .uid = victim->uid,
		.comm = victim->comm[0] ? victim->comm : NULL, .comm_len = sizeof(victim->comm),
		.cgroup_id = victim->cgroup_id, .cgroup = v->victim_cgroup, .ci = &v->ci,
	});
	jw_kstr(w, "scope", scope_name(v->scope));
	jw_kstr(w, "scope_source", v->scope_source);
	jw_ku64_or_null(w, "memcg_id", v->memcg->id, v->memcg->id);
	jw_kstr(w, "memcg", v->memcg_path);
	jw_kbytes(w, "limit_bytes", v->limit == MEMCG_NO_LIMIT ? MEMCG_UNKNOWN : v->limit);
	jw_kbytes(w, "usage_bytes", v->usage);
	jw_kbytes(w, "total_vm_bytes", mm ? e->total_vm_pages * v->unit : MEMCG_UNKNOWN);
	jw_kbytes(w, "anon_rss_bytes", mm ? e->anon_pages * v->unit : MEMCG_UNKNOWN);
	jw_kbytes(w, "file_rss_bytes", mm ? e->file_pages * v->unit : MEMCG_UNKNOWN);
	jw_kbytes(w, "shmem_rss_bytes", mm ? e->shmem_pages * v->unit : MEMCG_UNKNOWN);
	jw_kbytes(w, "pgtables_bytes", mm ? e->pgtables_bytes : MEMCG_UNKNOWN);
	jw_ki64_or_null(w, "oom_score_adj", e->flags & OOMWATCH_F_ADJ, e->oom_score_adj);
	jw_ki64_or_null(w, "points", e->flags & OOMWATCH_F_CONTEXT, e->points);
	jw_kbytes(w, "domain_bytes", e->flags & OOMWATCH_F_CONTEXT ? pages(e->totalpages) : MEMCG_UNKNOWN);
	jw_ki64_or_null(w, "order", e->flags & OOMWATCH_F_CONTEXT, e->order);
	jw_ku64(w, "trigger_pid", e->trigger.pid);
	jw_ku64(w, "trigger_tid", e->trigger.tid);
	jw_kstrn(w, "trigger_comm", e->trigger.comm, sizeof(e->trigger.comm));
	jw_kstr(w, "source", probe_mech_name(probe_chosen(&hooks[0])->mech));
	jw_record_end(w);
}

static void kill_table(const struct oomwatch_kill *e, const struct aiscope_ident *victim,
		       const struct kill_view *v)
{
	char detail[512], buf[16];
	int n;

	event_begin(aiscope_realtime(e->ts), "oom_kill", NULL);
	table_u64(&S.t, victim->pid);
	table_str(&S.t, victim->comm[0] ? victim->comm : "?");
	table_str(&S.t, aiscope_container_short(&v->ci, buf));
	table_str(&S.t, short_path(v->memcg_path ? v->memcg_path : v->victim_cgroup));
	table_mib(&S.t, v->usage);
	table_mib(&S.t, v->limit == MEMCG_NO_LIMIT ? MEMCG_UNKNOWN : v->limit);
	table_pct(&S.t, v->usage, v->limit);
	n = snprintf(detail, sizeof(detail), "%s", scope_name(v->scope) ? scope_name(v->scope) : "oom");
	if (e->flags & OOMWATCH_F_MM)
		n += snprintf(detail + n, sizeof(detail) - n,
			      " anon=%.1fM file=%.1fM shmem=%.1fM vm=%.1fM",
			      e->anon_pages * v->unit / 1048576.0, e->file_pages * v->unit / 1048576.0,
			      e->shmem_pages * v->unit / 1048576.0,
			      e->total_vm_pages * v->unit / 1048576.0);
	if (e->flags & OOMWATCH_F_ADJ)
		n += snprintf(detail + n, sizeof(detail) - n, " adj=%d", e->oom_score_adj);
	snprintf(detail + n, sizeof(detail) - n, " trigger=%u/%.16s", e->trigger.pid,
		 e->trigger.comm);
	table_str(&S.t, detail);
	table_end_row(&S.t);
}

static void on_sig(struct memcg_sig *sig, void *ctx);
static int poll_one(struct memcg *m, size_t idx);

static int on_kill(const struct oomwatch_kill *e)
{
	struct aiscope_ident victim = e->victim;
	struct kill_view v;

	/* what the kernel signalled before this kill is reported before it */
	memcg_set_serve(&S.set, on_sig, NULL);
	kill_view(e, &victim, &v);
	S.kills++;
	if (v.memcg->id) {
		struct memcg *m = memcg_set_find(&S.set, v.memcg->id, S.memcg_v1);

		/* The kernel counted this OOM (memory.events oom, v1
		 * oom_control) before it chose the victim, but tells us
		 * through a work item, rate-limited per file, that can come
		 * after the kill (the likely cause of a full-speed allocator
		 * killed once with no alert before it, on an emulated 6.12).
		 * Its counters are read now: what the kernel counted comes
		 * before its kill, and for a cgroup made while we watched,
		 * everything since its birth. The next read reads them
		 * again: the kill counter may move after this. */
		if (m) {
			m->counters_due = 1;
			poll_one(m, 0);
			m->counters_due = 1;
		}
	}
	if (P.kills) {
		const char *vals[AISCOPE_CGROUP_NLABELS + 1];
		struct container_info ci;

		aiscope_cgroup_path_values(v.memcg_path ? v.memcg_path : v.victim_cgroup, vals, &ci);
		kills_zero(vals);
		vals[AISCOPE_CGROUP_NLABELS] = scope_name(v.scope) ? scope_name(v.scope) : "unknown";
		prom_counter_add(P.kills, vals, 1);
	}
	if (env.json)
		kill_json(e, &victim, &v);
	else
		kill_table(e, &victim, &v);
	return count_event();
}

/* ---- allocations ---- */

static const char *sys_name(uint32_t sys)
{
	return sys < ARRAY_SIZE(sys_names) ? sys_names[sys] : "?";
}

static void prot_str(const struct oomwatch_alloc *e, char *buf)
{
	bool has = e->syscall == OOMWATCH_SYS_MMAP;

	buf[0] = !has || (e->prot & PROT_READ) ? 'r' : '-';
	buf[1] = !has || (e->prot & PROT_WRITE) ? 'w' : '-';
	buf[2] = has && (e->prot & PROT_EXEC) ? 'x' : '-';
	buf[3] = 0;
}

static int on_alloc(const struct oomwatch_alloc *e)
{
	uint64_t limit = e->memcg.id ? pages(e->memcg.max_pages) : MEMCG_NO_LIMIT;
	uint64_t usage = e->memcg.id ? pages(e->memcg.usage_pages) : MEMCG_UNKNOWN;
	uint64_t headroom = limit == MEMCG_NO_LIMIT ? MEMCG_UNKNOWN
				: limit > usage ? limit - usage : 0;
	bool exceeds = headroom != MEMCG_UNKNOWN && e->size > headroom;
	bool anon = e->syscall != OOMWATCH_SYS_MMAP || (e->flags & MAP_ANONYMOUS);
	const char *memcg = e->memcg.id ? memcg_path(e->memcg.id) : NULL;
	uint64_t rt = aiscope_realtime(e->ts);
	char prot[4];

	S.allocs++;
	prot_str(e, prot);
	if (env.json) {
		struct jw *w = &S.jw;

		event_begin(rt, "alloc", exceeds ? "crit" : "warn");
		aiscope_ident_json(w, &e->task, true);
		jw_kstr(w, "syscall", sys_name(e->syscall));
		jw_ku64(w, "size_bytes", e->size);
		jw_kstr(w, "prot", prot);
		jw_kbool(w, "anonymous", anon);
		jw_ki64_or_null(w, "fd", e->syscall == OOMWATCH_SYS_MMAP && !anon, e->fd);
		jw_ku64_or_null(w, "memcg_id", e->memcg.id, e->memcg.id);
		jw_kstr(w, "memcg", memcg);
		jw_kbytes(w, "limit_bytes", limit == MEMCG_NO_LIMIT ? MEMCG_UNKNOWN : limit);
		jw_kbytes(w, "usage_bytes", usage);
		jw_kbytes(w, "headroom_bytes", headroom);
		jw_kbool_or_null(w, "exceeds_headroom", headroom != MEMCG_UNKNOWN, exceeds);
		jw_record_end(w);
	} else {
		char detail[256], ctr[CONTAINER_ID_LEN + 1];

		event_begin(rt, "alloc", exceeds ? "crit" : "warn");
		table_u64(&S.t, e->task.pid);
		table_str(&S.t, e->task.comm);
		table_str(&S.t, aiscope_ident_container_short(&e->task, ctr, sizeof(ctr)));
		table_str(&S.t, short_path(memcg));
		table_mib(&S.t, usage);
		table_mib(&S.t, limit == MEMCG_NO_LIMIT ? MEMCG_UNKNOWN : limit);
		table_pct(&S.t, usage, limit);
		if (headroom == MEMCG_UNKNOWN)
			snprintf(detail, sizeof(detail), "%s %.1fM %s%s no limit", sys_name(e->syscall),
				 e->size / 1048576.0, prot, anon ? " anon" : " file");
		else
			snprintf(detail, sizeof(detail), "%s %.1fM %s%s headroom=%.1fM%s",
				 sys_name(e->syscall), e->size / 1048576.0, prot,
				 anon ? " anon" : " file", headroom / 1048576.0,
				 exceeds ? " EXCEEDS" : "");
		table_str(&S.t, detail);
		table_end_row(&S.t);
	}
	/* last: a cgroup lookup may move the memcg path used above */
	if (P.allocs) {
		const char *vals[AISCOPE_CGROUP_NLABELS + 1];
		struct container_info ci;

		aiscope_cgroup_values(&e->task, vals, &ci);
		/* a cgroup's first allocation makes its every syscall's series */
		for (size_t i = 0; i < ARRAY_SIZE(sys_names); i++) {
			vals[AISCOPE_CGROUP_NLABELS] = sys_names[i];
			prom_counter_add(P.allocs, vals, 0);
			prom_counter_add(P.alloc_bytes, vals, 0);
		}
		vals[AISCOPE_CGROUP_NLABELS] = sys_name(e->syscall);
		prom_counter_add(P.allocs, vals, 1);
		prom_counter_add(P.alloc_bytes, vals, e->size);
	}
	return count_event();
}

static int on_reclaim(const struct oomwatch_reclaim *e);

static int on_event(void *ctx, void *data, size_t len)
{
	const uint32_t *kind = data;

	if (len >= sizeof(struct oomwatch_reclaim) && *kind == OOMWATCH_EV_RECLAIM)
		return on_reclaim(data);
	if (len >= sizeof(struct oomwatch_kill) && *kind == OOMWATCH_EV_KILL)
		return on_kill(data);
	if (len >= sizeof(struct oomwatch_alloc) && *kind == OOMWATCH_EV_ALLOC)
		return on_alloc(data);
	return 0;
}

/* ---- polling the memory cgroups ---- */

static bool limited(const struct memcg_reading *r)
{
	return r->limit != MEMCG_NO_LIMIT && r->limit > 0;
}

/* The working set is at most the usage: below the warn level, memory.stat
 * (the expensive file) cannot change the verdict. The metrics export every
 * limited cgroup's working set as of this poll: read it each time. */
static bool want_stat_poll(const struct memcg_reading *r, void *ctx)
{
	return limited(r) && (aiscope_metrics() || r->usage * 100.0 >= cfg.warn * r->limit);
}

static bool want_stat_check(const struct memcg_reading *r, void *ctx)
{
	return limited(r);
}

static double ws_pct(const struct memcg_reading *r)
{
	uint64_t ws = memcg_working_set(r);

	if (!limited(r))
		return -1;
	/* memory.stat unread: the usage was below warn, and so is the working set */
	return 100.0 * (ws == MEMCG_UNKNOWN ? r->usage : ws) / r->limit;
}

static enum level level_of(double v, double warn, double crit)
{
	return v >= crit ? LVL_CRIT : v >= warn ? LVL_WARN : LVL_OK;
}

/* The level to hold: rise at once, fall only below threshold - hysteresis. */
static int next_level(int cur, double v, double warn, double crit)
{
	int now = level_of(v, warn, crit), held = cur;

	if (now >= held)
		return now;
	if (held == LVL_CRIT && v >= crit - HYSTERESIS_PCT)
		return LVL_CRIT;
	if (held >= LVL_WARN && v >= warn - HYSTERESIS_PCT)
		return LVL_WARN;
	return now;
}

static uint64_t delta(uint64_t cur, uint64_t prev)
{
	if (cur == MEMCG_UNKNOWN || prev == MEMCG_UNKNOWN || cur < prev)
		return cur == MEMCG_UNKNOWN ? MEMCG_UNKNOWN : 0;
	return cur - prev;
}

/* signal: which of the kernel's signals raised it (memcg_sig_kind), or
 * the poll, or the growth projection between polls */
struct alert {
	enum level level;
	char reason[96];
	const char *signal;
	const char *detail;	/* more for the table's DETAIL, or NULL */
	uint64_t limit_hits, ooms, oom_kills;
};

/* an alert raised by the memcg reclaim hook (BPF), beside memcg_sig_kind */
#define SIG_RECLAIM	0x100

static void add_reason(struct alert *a, int l, const char *why)
{
	size_t n = strlen(a->reason);

	if (l > (int)a->level)
		a->level = l;
	snprintf(a->reason + n, sizeof(a->reason) - n, "%s%s", n ? "," : "", why);
}

static void cgroup_ident_json(struct jw *w, const struct memcg *m)
{
	struct container_info ci;

	cg_parse_container(m->path, &ci);
	aiscope_identity_json(w, &(struct aiscope_identity){
		.known = AISCOPE_ID_CGROUP_ID, .cgroup_id = m->id, .cgroup = m->path, .ci = &ci,
	});
	jw_ku64(w, "cgroup_version", m->v1 ? 1 : 2);
}

static void reading_json(struct jw *w, const struct memcg_reading *r)
{
	uint64_t ws = memcg_working_set(r);

	jw_kbytes(w, "usage_bytes", r->usage);
	jw_kbytes(w, "working_set_bytes", ws);
	jw_kbytes(w, "inactive_file_bytes", r->inactive_file);
	jw_kbytes(w, "limit_bytes", limited(r) ? r->limit : MEMCG_UNKNOWN);
	jw_kratio(w, "working_set_ratio", ws, limited(r) ? r->limit : MEMCG_NO_LIMIT);
	jw_kpsi(w, "psi_some_avg10_ratio", r->psi_some10);
	jw_kpsi(w, "psi_full_avg10_ratio", r->psi_full10);
}

static void alert_emit(const struct memcg *m, const struct alert *a)
{
	const struct memcg_reading *r = &m->cur;
	uint64_t rt = aiscope_now_realtime();

	S.alerts++;
	if (env.json) {
		struct jw *w = &S.jw;

		event_begin(rt, "alert", level_names[a->level]);
		jw_kstr(w, "reason", a->reason);
		jw_kstr(w, "signal", a->signal);
		cgroup_ident_json(w, m);
		reading_json(w, r);
		jw_kbytes(w, "limit_hits", a->limit_hits);
		jw_kbytes(w, "ooms", a->ooms);
		jw_kbytes(w, "oom_kills", a->oom_kills);
		jw_record_end(w);
	} else {
		struct container_info ci;
		char detail[256], buf[16];
		uint64_t ws = memcg_working_set(r);
		int n;

		cg_parse_container(m->path, &ci);
		event_begin(rt, "alert", level_names[a->level]);
		table_dashes(&S.t, 2);
		table_str(&S.t, aiscope_container_short(&ci, buf));
		table_str(&S.t, m->path);
		table_mib(&S.t, ws == MEMCG_UNKNOWN ? r->usage : ws);
		table_mib(&S.t, limited(r) ? r->limit : MEMCG_UNKNOWN);
		table_pct(&S.t, ws == MEMCG_UNKNOWN ? r->usage : ws, r->limit);
		n = snprintf(detail, sizeof(detail), "%s signal=%s", a->reason, a->signal);
		if (a->detail)
			n += snprintf(detail + n, sizeof(detail) - n, " %s", a->detail);
		if (a->limit_hits && a->limit_hits != MEMCG_UNKNOWN)
			n += snprintf(detail + n, sizeof(detail) - n, " limit_hits=+%llu",
				      (unsigned long long)a->limit_hits);
		if (a->ooms && a->ooms != MEMCG_UNKNOWN)
			n += snprintf(detail + n, sizeof(detail) - n, " ooms=+%llu",
				      (unsigned long long)a->ooms);
		if (a->oom_kills && a->oom_kills != MEMCG_UNKNOWN)
			n += snprintf(detail + n, sizeof(detail) - n, " oom_kills=+%llu",
				      (unsigned long long)a->oom_kills);
		if (r->psi_full10 >= 0)
			snprintf(detail + n, sizeof(detail) - n, " psi_full=%.2f%%", r->psi_full10);
		table_str(&S.t, detail);
		table_end_row(&S.t);
	}
	count_event();
}

/* The kernel's counters against those last checked: limit hits (unless
 * with_hits is false: a signal-driven check leaves them to the poll, once
 * an interval), OOMs and kills. The first reading of a cgroup that was
 * there before us only sets the base; one made while we watched counts
 * from 0, its value at birth (a cgroup made and OOM-killed before we
 * read it has had its kill). */
static void counter_alerts(struct memcg *m, struct alert *a, bool with_hits)
{
	const struct memcg_reading *r = &m->cur;
	bool base = !m->seen && !m->born;

	m->seen = true;
	if (base) {
		m->seen_hits = r->limit_hits;
		m->seen_ooms = r->ooms;
		m->seen_kills = r->oom_kills;
		return;
	}
	a->ooms = delta(r->ooms, m->seen_ooms);
	a->oom_kills = delta(r->oom_kills, m->seen_kills);
	m->seen_ooms = r->ooms;
	m->seen_kills = r->oom_kills;
	if (with_hits) {
		a->limit_hits = delta(r->limit_hits, m->seen_hits);
		m->seen_hits = r->limit_hits;
	}
	if (a->limit_hits && a->limit_hits != MEMCG_UNKNOWN)
		add_reason(a, LVL_WARN, "limit_hit");
	if (a->ooms && a->ooms != MEMCG_UNKNOWN)
		add_reason(a, LVL_CRIT, "oom");
	if (a->oom_kills && a->oom_kills != MEMCG_UNKNOWN)
		add_reason(a, LVL_CRIT, "oom_kill");
}

/* The working set's level, held with hysteresis: an alert when it rises. */
static void ws_alert(struct memcg *m, struct alert *a)
{
	const struct memcg_reading *r = &m->cur;
	int l = limited(r) ? next_level(m->level, ws_pct(r), cfg.warn, cfg.crit) : LVL_OK;

	if (l > m->level)
		add_reason(a, l, "working_set");
	m->level = l;
}

/* Pressure from avg10; a PSI trigger's level holds for its window, as
 * avg10 lags behind the stall the trigger saw. */
static void psi_alert(struct memcg *m, struct alert *a)
{
	const struct memcg_reading *r = &m->cur;
	int l;

	if (r->psi_full10 < 0)
		return;
	l = next_level(m->psi_level, r->psi_full10, cfg.psi_warn, cfg.psi_crit);
	if (l < m->psi_level && r->at_ns < m->psi_hold_ns)
		l = m->psi_level;
	if (l > m->psi_level)
		add_reason(a, l, "pressure");
	m->psi_level = l;
}

/* At the rate since the last tick, the usage reaches the limit before the
 * next one: warn now, once until the growth stops. */
static void growth_alert(struct memcg *m, struct alert *a)
{
	const struct memcg_reading *r = &m->cur;
	bool grows = m->proj_ns && r->usage != MEMCG_UNKNOWN && r->usage > m->proj_usage &&
		     r->at_ns > m->proj_ns;

	if (!limited(r) || r->usage == MEMCG_UNKNOWN) {
		m->proj_ns = 0;
		return;
	}
	if (!grows) {
		m->proj_alerted = false;
	} else if (m->level < LVL_WARN && !m->proj_alerted) {
		double rate = (double)(r->usage - m->proj_usage) / (r->at_ns - m->proj_ns);

		if (r->usage + rate * env.interval_ns >= r->limit) {
			add_reason(a, LVL_WARN, "growth");
			m->level = LVL_WARN;
			m->proj_alerted = true;
		}
	}
	m->proj_usage = r->usage;
	m->proj_ns = r->at_ns;
}

/* One cgroup's alert for this interval, if it has one; -errno when the
 * cgroup is gone. */
static int poll_one(struct memcg *m, size_t idx)
{
	struct alert a = { .level = LVL_OK, .signal = "poll" };
	/* limits rarely change (and a write of one is seen by inotify):
	 * each cgroup re-reads its own every LIMIT_EVERY ticks, spread over
	 * the ticks; the metrics export the kernel's counters as of this poll */
	unsigned int what = (S.loop.ticks + idx) % LIMIT_EVERY ? 0 : MEMCG_LIMIT;
	int err = memcg_read(m, what | (aiscope_metrics() ? MEMCG_COUNTERS : 0), want_stat_poll, NULL);

	if (err)
		return err;
	if (m->cur.limit != m->armed_limit)
		memcg_rearm(&S.set, m);
	ws_alert(m, &a);
	psi_alert(m, &a);
	counter_alerts(m, &a, true);
	growth_alert(m, &a);
	if (!strcmp(a.reason, "growth"))
		a.signal = "projection";
	if (a.reason[0])
		alert_emit(m, &a);
	return 0;
}

static const char *sig_name(int kind)
{
	switch (kind) {
	case MEMCG_SIG_THRESHOLD: return "threshold";
	case MEMCG_SIG_OOM: return "oom_control";
	case MEMCG_SIG_EVENTS: return "memory_events";
	case MEMCG_SIG_PSI: return "psi";
	case SIG_RECLAIM: return "memcg_reclaim";
	default: return "poll";
	}
}

/* A v1 usage threshold fired: the usage crossed it, up or down. Above it
 * now: the working set says the level (page cache above a threshold is
 * no alarm). Below it now, having been below, or with crossings since:
 * it went up and back (a kill or a free came first): the kernel saw the
 * usage at the threshold, and that is the alert; unless the cgroup holds
 * more inactive page cache than the room above the threshold: then
 * reclaim at the limit, which frees a batch at a time, may be all that
 * took it back below (a cgroup reading files at its limit crosses its
 * thresholds up and down all day). */
static void threshold_alert(struct memcg *m, struct memcg_sig *sig, struct alert *a)
{
	const struct memcg_reading *r = &m->cur;
	bool above = r->usage != MEMCG_UNKNOWN && r->usage >= sig->bytes;
	bool was = sig->above;
	bool cache = r->inactive_file != MEMCG_UNKNOWN && limited(r) &&
		     r->inactive_file >= r->limit - sig->bytes;

	sig->above = above;
	if (above) {
		ws_alert(m, a);
		return;
	}
	if ((!was || sig->count >= 2) && sig->level > m->level && !cache) {
		add_reason(a, sig->level, "usage");
		m->level = sig->level;
	}
}

static void on_sig(struct memcg_sig *sig, void *ctx)
{
	struct memcg *m = sig->m;
	struct alert a = { .level = LVL_OK, .signal = sig_name(sig->kind) };

	/* a cgroup gone: the poll drops it (not here: the batch names it) */
	if (memcg_read(m, MEMCG_LIMIT, want_stat_check, NULL))
		return;
	switch (sig->kind) {
	case MEMCG_SIG_THRESHOLD:
		threshold_alert(m, sig, &a);
		break;
	case MEMCG_SIG_OOM:
		add_reason(&a, LVL_CRIT, "oom");
		break;
	case MEMCG_SIG_EVENTS:
		ws_alert(m, &a);
		counter_alerts(m, &a, false);
		break;
	case MEMCG_SIG_PSI:
		m->psi_hold_ns = m->cur.at_ns + PSI_WINDOW_US * 1000ULL;
		if (sig->level > m->psi_level) {
			add_reason(&a, sig->level, "pressure");
			m->psi_level = sig->level;
		}
		break;
	}
	if (a.reason[0])
		alert_emit(m, &a);
	/* a new limit moves the thresholds (after the alert: this may
	 * close the eventfd that fired) */
	if (m->cur.limit != m->armed_limit)
		memcg_rearm(&S.set, m);
}

/* The next reclaim event of a memcg is held back for a window set from
 * its working set's trend between the last two: a quarter of the time it
 * takes at that rate to reach the next level, so that the event that
 * finds it there comes soon after (100 MiB/s in 64 MiB: ws from 47% to
 * 84% in one window of 250 ms, and the kill before the next). Flat or
 * falling, or at crit already: the longest window, the cost of a cgroup
 * that sits at its limit on page cache (ten reads a second). */
#define RECLAIM_WINDOW_MIN_NS	(2 * NSEC_PER_MSEC)
#define RECLAIM_WINDOW_MAX_NS	(100 * NSEC_PER_MSEC)

static uint64_t reclaim_window(struct memcg *m, uint64_t ts)
{
	double ws = ws_pct(&m->cur), target, rate, eta;
	uint64_t prev = m->reclaim_ns;
	double prev_ws = m->reclaim_ws_pct;

	m->reclaim_ns = ts;
	m->reclaim_ws_pct = ws;
	if (ws < 0 || m->level >= LVL_CRIT || !prev || ts <= prev || ws <= prev_ws)
		return RECLAIM_WINDOW_MAX_NS;
	target = m->level >= LVL_WARN ? cfg.crit : cfg.warn;
	rate = (ws - prev_ws) / (ts - prev);
	eta = (target - ws) / rate / 4;
	if (eta < RECLAIM_WINDOW_MIN_NS)
		return RECLAIM_WINDOW_MIN_NS;
	return eta > RECLAIM_WINDOW_MAX_NS ? RECLAIM_WINDOW_MAX_NS : (uint64_t)eta;
}

/* BPF reads it at the memcg's next reclaim; pushed out (LRU, 4096
 * memcgs): BPF's default window, so more events, none missed */
static void reclaim_set_window(uint64_t id, uint64_t window)
{
	bpf_map_update_elem(bpf_map__fd(S.skel->maps.reclaim_windows), &id, &window, BPF_ANY);
}

/* A memcg reclaims at its limit (or memory.high): the working set at
 * this moment says the level, as the poll would (a cgroup full of page
 * cache reclaims at its limit all day, and is no alarm). */
static int on_reclaim(const struct oomwatch_reclaim *e)
{
	struct alert a = { .level = LVL_OK, .signal = sig_name(SIG_RECLAIM) };
	struct memcg *m = memcg_set_find(&S.set, e->memcg.id, S.memcg_v1);
	char detail[64];

	S.reclaims++;
	/* made a moment ago: inotify has it, not yet read */
	if (!m) {
		memcg_set_refresh(&S.set);
		m = memcg_set_find(&S.set, e->memcg.id, S.memcg_v1);
	}
	/* outside the watched set (-c), or gone already */
	if (!m || memcg_read(m, MEMCG_LIMIT, want_stat_check, NULL))
		return 0;
	snprintf(detail, sizeof(detail), "reclaim=%s reclaims=+%llu",
		 e->flags & OOMWATCH_RF_HIGH ? "high" : "max", (unsigned long long)e->skipped + 1);
	a.detail = detail;
	ws_alert(m, &a);
	if (a.reason[0])
		alert_emit(m, &a);
	reclaim_set_window(e->memcg.id, reclaim_window(m, e->ts));
	if (m->cur.limit != m->armed_limit)
		memcg_rearm(&S.set, m);
	return 0;
}

static int on_watch(void *ctx)
{
	uint64_t alerts = S.alerts;

	memcg_set_serve(&S.set, on_sig, NULL);
	/* the gauges of an alert a signal raised: out at once, not at the
	 * next tick */
	if (S.alerts != alerts) {
		metrics_cgroups();
		metrics_publish(S.bpf.lost);
	}
	return aiscope_loop_running(&S.loop) ? 0 : AISCOPE_STOP;
}

static bool read_host_psi(double *some, double *full)
{
	char buf[512];
	ssize_t n;

	*some = *full = -1;
	if (S.host_psi_fd < 0)
		return false;
	n = pread(S.host_psi_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = 0;
	memcg_parse_psi(buf, some, full);
	return *full >= 0;
}

static void host_alert(double some, double full, int l)
{
	uint64_t rt = aiscope_now_realtime();

	S.alerts++;
	if (env.json) {
		struct jw *w = &S.jw;

		event_begin(rt, "alert", level_names[l]);
		jw_kstr(w, "reason", "host_pressure");
		jw_kstr(w, "signal", "poll");
		aiscope_identity_json(w, &(struct aiscope_identity){ 0 });
		jw_knull(w, "cgroup_version");
		jw_kpsi(w, "psi_some_avg10_ratio", some);
		jw_kpsi(w, "psi_full_avg10_ratio", full);
		jw_record_end(w);
	} else {
		char detail[128];

		event_begin(rt, "alert", level_names[l]);
		table_dashes(&S.t, 3);
		table_str(&S.t, "[host]");
		table_dashes(&S.t, 3);
		snprintf(detail, sizeof(detail), "host_pressure signal=poll psi_some=%.2f%% psi_full=%.2f%%",
			 some, full);
		table_str(&S.t, detail);
		table_end_row(&S.t);
	}
	count_event();
}

static void poll_host(void)
{
	double some, full;
	int l;

	if (!read_host_psi(&some, &full))
		return;
	l = next_level(S.host_level, full, cfg.psi_warn, cfg.psi_crit);
	if (l > S.host_level)
		host_alert(some, full, l);
	S.host_level = l;
}

static void poll_all(void)
{
	memcg_set_refresh(&S.set);
	for (size_t i = 0; i < S.set.n && aiscope_loop_running(&S.loop); i++) {
		if (poll_one(S.set.cg[i], i))
			memcg_set_drop(&S.set, i--);
	}
	if (aiscope_loop_running(&S.loop))
		poll_host();
	metrics_cgroups();
}

static int on_tick(void *ctx)
{
	poll_all();
	return 0;
}

/* ---- setup ---- */

static size_t signals_armed(void)
{
	size_t n = 0;

	for (size_t i = 0; i < S.set.n; i++)
		for (int j = 0; j < MEMCG_NSIG; j++)
			n += S.set.cg[i]->sig[j].fd >= 0;
	return n;
}

static void raise_nofile(void)
{
	struct rlimit rl;

	/* a thousand cgroups keep five thousand files open */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static void open_cgroups(bool watch)
{
	const char *prefix = env.ncg ? env.cg[env.ncg - 1].path : NULL;
	char path[4096];

	raise_nofile();
	S.memcg_v1 = cg_v1_mount("memory") != NULL;
	/* --pod, --namespace: their containers' cgroups and pod cgroups */
	memcg_set_init(&S.set, cg_v1_mount("memory"), cg_v2_mount(), prefix,
		       cgset_active() ? cgset_path_wanted : NULL, watch);
	/* the kernel's own signals; a fake tree (OOMWATCH_SYSROOT) has
	 * plain files, which signal nothing: polled alone */
	if (watch && !S.sysroot) {
		struct memcg_arm arm = {
			.warn_pct = cfg.warn, .crit_pct = cfg.crit, .psi_warn_pct = cfg.psi_warn,
			.psi_crit_pct = cfg.psi_crit, .psi_window_us = PSI_WINDOW_US,
		};

		if (memcg_set_arm(&S.set, &arm))
			aiscope_fail(EXIT_RUNTIME, "cannot set up the cgroup signals: %s", strerror(errno));
	}
	if (S.set.open_errors)
		fprintf(stderr, "%s: %d cgroup files could not be opened (%s): raise the open-file limit\n",
			TOOL, S.set.open_errors, strerror(EMFILE));
	snprintf(path, sizeof(path), "%s/proc/pressure/memory", S.sysroot ? S.sysroot : "");
	S.host_psi_fd = open(path, O_RDONLY | O_CLOEXEC);
}

/* ---- --check ---- */

static const struct tcol cols_check[] = {
	{ "LEVEL", 5, TC_LEFT }, { "CGROUP", 40, TC_LEFT }, { "CONTAINER", 12, TC_LEFT },
	{ "USAGE(MiB)", 10, 0 }, { "WS(MiB)", 9, 0 }, { "LIMIT(MiB)", 10, 0 }, { "WS(%)", 6, 0 },
	{ "PSI_FULL(%)", 11, 0 }, { "OOM_KILLS", 9, 0 },
};

struct check_row {
	struct memcg *m;
	enum level level;
	double pct;
};

static double check_sort_value(const struct check_row *c)
{
	const struct memcg_reading *r = &c->m->cur;
	uint64_t ws = memcg_working_set(r);

	switch (env.sort ? env.sort[0] : 'p') {
	case 'w': return ws == MEMCG_UNKNOWN ? 0 : ws;
	case 'u': return r->usage;
	case 'l': return limited(r) ? r->limit : 0;
	default: return c->pct;
	}
}

static int cmp_check(const void *a, const void *b)
{
	double x = check_sort_value(a), y = check_sort_value(b);

	if (x != y)
		return x < y ? 1 : -1;
	return strcmp(((const struct check_row *)a)->m->path, ((const struct check_row *)b)->m->path);
}

static void check_row_json(const struct check_row *c, uint64_t now)
{
	struct jw *w = &S.jw;
	const struct memcg_reading *r = &c->m->cur;

	jw_record_begin(w, "sample", TOOL, now);
	jw_ku64(w, "seq", 1);
	jw_knull(w, "interval_ns");
	jw_kstr(w, "row", "cgroup");
	jw_kstr(w, "level", level_names[c->level]);
	cgroup_ident_json(w, c->m);
	reading_json(w, r);
	jw_kbytes(w, "limit_hits", r->limit_hits);
	jw_kbytes(w, "ooms", r->ooms);
	jw_kbytes(w, "oom_kills", r->oom_kills);
	jw_record_end(w);
}

static void check_row_table(struct table *t, const struct check_row *c)
{
	const struct memcg_reading *r = &c->m->cur;
	struct container_info ci;
	char buf[16];
	uint64_t ws = memcg_working_set(r);

	cg_parse_container(c->m->path, &ci);
	table_str(t, level_names[c->level]);
	table_str(t, c->m->path);
	table_str(t, aiscope_container_short(&ci, buf));
	table_mib(t, r->usage);
	table_mib(t, ws);
	table_mib(t, limited(r) ? r->limit : MEMCG_UNKNOWN);
	table_pct(t, ws, r->limit);
	table_fixed_or_dash(t, r->psi_full10 >= 0, r->psi_full10, 2);
	if (r->oom_kills == MEMCG_UNKNOWN)
		table_str(t, "-");
	else
		table_u64(t, r->oom_kills);
	table_end_row(t);
}

static int run_check(void)
{
	struct check_row *rows = calloc(S.set.n ? S.set.n : 1, sizeof(*rows));
	size_t n = 0, shown, nwarn = 0, ncrit = 0;
	uint64_t now = aiscope_now_realtime();
	enum level worst = LVL_OK, hl = LVL_OK;
	double some, full;
	struct table t;
	int code;

	if (!rows)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	for (size_t i = 0; i < S.set.n; i++) {
		struct memcg *m = S.set.cg[i];
		const struct memcg_reading *r = &m->cur;
		struct check_row *c = &rows[n];

		if (memcg_read(m, MEMCG_ALL, want_stat_check, NULL))
			continue;
		if (!limited(r) && r->psi_full10 < 0)
			continue;
		c->m = m;
		c->pct = limited(r) ? ws_pct(r) : 0;
		c->level = limited(r) ? level_of(c->pct, cfg.warn, cfg.crit) : LVL_OK;
		if (r->psi_full10 >= 0 && level_of(r->psi_full10, cfg.psi_warn, cfg.psi_crit) > c->level)
			c->level = level_of(r->psi_full10, cfg.psi_warn, cfg.psi_crit);
		if (!limited(r) && c->level == LVL_OK)
			continue;	/* neither a limit nor pressure: nothing to say */
		/* what the metrics export: the levels of this scan */
		m->level = limited(r) ? level_of(c->pct, cfg.warn, cfg.crit) : LVL_OK;
		m->psi_level = r->psi_full10 >= 0 ? level_of(r->psi_full10, cfg.psi_warn, cfg.psi_crit)
						  : LVL_OK;
		nwarn += c->level == LVL_WARN;
		ncrit += c->level == LVL_CRIT;
		if (c->level > worst)
			worst = c->level;
		n++;
	}
	if (read_host_psi(&some, &full)) {
		hl = level_of(full, cfg.psi_warn, cfg.psi_crit);
		if (hl > worst)
			worst = hl;
	}
	metrics_cgroups();
	metrics_publish(NULL);
	sort_array(rows, n, sizeof(*rows), cmp_check);
	shown = table_shown(n, env.rows);
	code = worst == LVL_CRIT ? EXIT_CHECK_CRIT : worst == LVL_WARN ? EXIT_CHECK_WARN : 0;
	if (env.json) {
		for (size_t i = 0; i < shown; i++)
			check_row_json(&rows[i], now);
		jw_record_begin(&S.jw, "summary", TOOL, now);
		jw_ku64(&S.jw, "duration_ns", clock_ns(CLOCK_MONOTONIC) - env.start_mono_ns);
		jw_ku64(&S.jw, "events", 0);
		jw_ku64(&S.jw, "lost_events", 0);
		jw_ku64(&S.jw, "metrics_overflow", metrics_folded());
		jw_kstr(&S.jw, "exit_reason", "check");
		aiscope_summary_losses(&S.jw);
		jw_kstr(&S.jw, "level", level_names[worst]);
		jw_ki64(&S.jw, "exit_code", code);
		jw_ku64(&S.jw, "cgroups", S.set.n);
		jw_ku64(&S.jw, "limited", n);
		jw_ku64(&S.jw, "warn", nwarn);
		jw_ku64(&S.jw, "crit", ncrit);
		jw_kstr(&S.jw, "host_level", full >= 0 ? level_names[hl] : NULL);
		jw_kpsi(&S.jw, "host_psi_some_avg10_ratio", some);
		jw_kpsi(&S.jw, "host_psi_full_avg10_ratio", full);
		jw_kdouble(&S.jw, "warn_ratio", cfg.warn / 100.0, 4);
		jw_kdouble(&S.jw, "crit_ratio", cfg.crit / 100.0, 4);
		jw_record_end(&S.jw);
	} else {
		table_init(&t, stdout, cols_check, ARRAY_SIZE(cols_check), env.tty && !env.wide);
		table_header(&t);
		for (size_t i = 0; i < shown; i++)
			check_row_table(&t, &rows[i]);
		table_more(stdout, shown, n);
		printf("# %s: %zu memory cgroups, %zu with a limit or pressure, %zu warn, %zu crit",
		       level_names[worst], S.set.n, n, nwarn, ncrit);
		if (full >= 0)
			printf("; host pressure some %.2f%% full %.2f%% (%s)", some, full, level_names[hl]);
		printf("\n");
	}
	fflush(stdout);
	free(rows);
	return code;
}

/* ---- summary ---- */

static void print_summary(void)
{
	/* the armer's failures come after the start line */
	if (memcg_arm_errors(&S.set) > S.set.arm_errors)
		fprintf(stderr, "%s: %d more cgroup signals could not be registered: those cgroups were polled\n",
			TOOL, memcg_arm_errors(&S.set) - S.set.arm_errors);
	if (env.json) {
		aiscope_summary_begin(&S.jw, &S.bpf, &S.loop, S.events);
		jw_ku64(&S.jw, "oom_kills", S.kills);
		jw_ku64(&S.jw, "alerts", S.alerts);
		jw_ku64(&S.jw, "allocs", S.allocs);
		jw_ku64(&S.jw, "memcg_reclaims", S.reclaims);
		jw_ku64(&S.jw, "cgroups", S.set.n);
		jw_record_end(&S.jw);
		return;
	}
	fprintf(stderr, "%s: %llu OOM kills, %llu alerts, %llu large allocations, %zu memory cgroups watched, %llu lost\n",
		TOOL, (unsigned long long)S.kills, (unsigned long long)S.alerts,
		(unsigned long long)S.allocs, S.set.n,
		(unsigned long long)aiscope_lost_total(&S.bpf));
}

static void validate(void)
{
	if (cfg.warn > cfg.crit)
		usage_error("--warn %.4g is above --crit %.4g", cfg.warn, cfg.crit);
	if (cfg.psi_warn > cfg.psi_crit)
		usage_error("--psi-warn %.4g is above --psi-crit %.4g", cfg.psi_warn, cfg.psi_crit);
	if (env.sort) {
		opt_word("--sort", env.sort, sort_keys);
		if (!cfg.check)
			usage_error("--sort orders the --check table: use it with --check");
	}
	if (cfg.check && (env.list_probes || env.duration_ns || env.count))
		usage_error("--check is one scan: it takes no --list-probes, --duration or --count");
}

/* OOMWATCH_SYSROOT (tests): cgroup mounts, cgroup trees and
 * /proc/pressure/memory under this directory */
static void use_sysroot(void)
{
	S.sysroot = getenv("OOMWATCH_SYSROOT");
	if (!S.sysroot || !*S.sysroot) {
		S.sysroot = NULL;
		return;
	}
	if (env.ncg)
		usage_error("-c and --container cannot be combined with OOMWATCH_SYSROOT");
	if (cg_init(S.sysroot, feat_cgroup_ssid))
		usage_error("OOMWATCH_SYSROOT '%s': cannot read %s/proc/self/mountinfo", S.sysroot,
			    S.sysroot);
}

/* the allocation syscalls' own tracepoints, all four, or the raw pair */
static void on_plan(struct aiscope_bpf *b)
{
	if (b->nhooks > NHOOKS_ALERT)
		probe_choose_set(b->hooks + NHOOKS_ALERT, NHOOKS_SYSCALL,
				 b->hooks + NHOOKS_ALERT + NHOOKS_SYSCALL, 2);
}

int main(int argc, char **argv)
{
	int nhooks = ARRAY_SIZE(hooks), code;

	aiscope_parse(&argp, argc, argv, TOOL, AISCOPE_STREAMING | AISCOPE_METRICS);
	validate();
	use_sysroot();
	jw_init(&S.jw, stdout);
	S.page_size = sysconf(_SC_PAGESIZE);
	metrics_init();

	if (cfg.check) {
		open_cgroups(false);
		code = run_check();
		memcg_set_free(&S.set);
		aiscope_teardown(NULL, NULL);
		return code;
	}

	S.skel = oomwatch_bpf__open_opts(aiscope_open_opts());
	if (!S.skel)
		aiscope_fail(EXIT_RUNTIME, "cannot open the BPF object: %s", strerror(errno));
	S.skel->rodata->alloc_min = cfg.alloc_min;
	/* the rss sum's bound as BPF is told it; AISCOPE_TEST_CAP_SUM_CPUS
	 * (tests) sets it, e.g. to 1024: the verifier's worst case, with the
	 * kernel's nr_cpu_ids the bound that holds at run time */
	S.skel->rodata->nr_cpus = aiscope_test_cap("SUM_CPUS",
		libbpf_num_possible_cpus() > 0 ? libbpf_num_possible_cpus() : 1);
	if (!cfg.alloc_min) {
		/* no allocation hooks: leave their programs unloaded */
		probe_unload(S.skel->obj, hooks + NHOOKS_ALERT, nhooks - NHOOKS_ALERT);
		nhooks = NHOOKS_ALERT;
	}
	S.bpf = (struct aiscope_bpf){
		.hooks = hooks, .nhooks = nhooks, .streaming = true, .on_event = on_event,
		.on_plan = on_plan,
	};
	aiscope_bpf_prepare(&S.bpf, S.skel->obj, &S.skel->rodata->aiscope_cfg);
	aiscope_bpf_load(&S.bpf, oomwatch_bpf__load(S.skel));
	aiscope_bpf_attach(&S.bpf);

	/* without oom_kill_process, memcg or global comes from the kernel
	 * stack: the symbols now (0.2 s and more under load), not at the
	 * first kill, which would hold the loop while new cgroups are made,
	 * armed late and filled (a 64 MiB cgroup at 100 MiB/s: 0.6 s) */
	if (!probe_chosen(&hooks[1]))
		load_ksyms();
	open_cgroups(true);
	if (!env.json) {
		table_init_time(&S.t, stdout, cols_stream, ARRAY_SIZE(cols_stream), env.timestamp,
				false);
		table_header(&S.t);
	}
	aiscope_tracing("OOM kills (%s) and memcg reclaim (%s), polling %zu memory cgroups every %.3g s, %zu kernel signals armed (%d being registered)",
			probe_summary(hooks, NHOOKS_KILL), probe_summary(hooks + HOOK_RECLAIM, 1), S.set.n,
			env.interval_ns / 1e9, signals_armed(), memcg_arm_pending(&S.set));
	if (S.set.arm_errors)
		fprintf(stderr, "%s: %d cgroup signals could not be armed: those cgroups are polled\n",
			TOOL, S.set.arm_errors);
	S.loop = (struct aiscope_loop){
		.bpf = &S.bpf, .on_tick = on_tick, .tick_ns = env.interval_ns,
		.watch_fd = S.set.epoll_fd, .on_watch = S.set.epoll_fd >= 0 ? on_watch : NULL,
	};
	/* a cgroup already above a level says so at once */
	poll_all();
	fflush(stdout);
	code = aiscope_run(&S.loop, print_summary);
	oomwatch_bpf__destroy(S.skel);
	memcg_set_free(&S.set);
	if (S.host_psi_fd >= 0)
		close(S.host_psi_fd);
	return code;
}
