// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * schedlat: are my threads waiting for a CPU, and whose?
 *
 * Run-queue latency per process, thread, cgroup, container or host,
 * aggregated in the kernel in log-linear histograms; --min streams single
 * long waits with the task that held the CPU.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cgset.h"
#include "kfeatures.h"
#include "hist.h"
#include "json.h"
#include "mapdrain.h"
#include "metrics.h"
#include "complete.h"
#include "opts.h"
#include "run.h"
#include "table.h"
#include "text.h"
#include "util.h"
#include "schedlat.h"
#include "schedlat.skel.h"

#define TOOL "schedlat"
#define BY_CONTAINER 100	/* user-space grouping of SCHEDLAT_BY_CGROUP rows */

static const char doc[] =
"Run-queue latency: how long runnable tasks wait for a CPU, and whose.\n"
"\n"
"Every interval, a top-like table per process (or thread, cgroup, container,\n"
"host) of waits, percentiles, preemptions and migrations, aggregated in the\n"
"kernel. -H prints histograms instead; --min DUR streams each wait longer than\n"
"DUR with the task that held the CPU.\n"
"\n"
"USAGE: schedlat [OPTIONS] [interval [count]]"
"\v"
"EXAMPLES:\n"
"  schedlat                      # processes that waited most, each second\n"
"  schedlat -H                   # host-wide histogram, like runqlat\n"
"  schedlat --by container -s p99  # containers by p99 wait\n"
"  schedlat --min 10ms           # each wait over 10 ms and who held the CPU\n"
"  schedlat -p 1234 -j -d 30s | jq 'select(.type==\"sample\") | .p99_ns'\n"
"  schedlat -c /sys/fs/cgroup/unified/train.slice 5 3   # 3 intervals of 5 s\n"
"  schedlat --by cgroup --listen :9464 -i 15s   # Prometheus scrapes /metrics\n"
"\n"
"Exit status: 0 done, 1 runtime error, 2 usage error, 77 cannot run here.";

enum { OPT_BY = 0x200, OPT_MIN };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "schedlat:", 1 },
	{ "by", OPT_BY, "KEY", 0, "Group by pid (default), tid, cgroup, container, host", 1 },
	{ "hist", 'H', NULL, 0, "Print log2 histograms (host-wide unless --by)", 1 },
	{ "min", OPT_MIN, "DUR", 0, "Stream each wait longer than DUR (e.g. 10ms)", 1 },
	{},
};

static const char *const sort_keys[] = { "wait", "p99", "max", "runs", "avg", NULL };

static struct {
	int by;			/* SCHEDLAT_BY_* or BY_CONTAINER */
	bool by_set;
	bool hist;
	uint64_t min_ns;
	const char *sort;
} cfg = { .by = SCHEDLAT_BY_PID, .sort = "wait" };

static const struct opt_key bys[] = {
	{ "pid", SCHEDLAT_BY_PID }, { "tid", SCHEDLAT_BY_TID },
	{ "cgroup", SCHEDLAT_BY_CGROUP }, { "container", BY_CONTAINER },
	{ "host", SCHEDLAT_BY_HOST }, {},
};

/* what the shell completions offer after its options (lib/complete.h) */
const struct opt_value aiscope_opt_values[] = {
	{ .name = "sort", .kind = OV_WORDS, .words = sort_keys },
	{ .name = "by", .kind = OV_WORDS, .keys = bys },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case OPT_BY:
		cfg.by = opt_key("--by", arg, bys);
		cfg.by_set = true;
		break;
	case 'H':
		cfg.hist = true;
		break;
	case OPT_MIN:
		if (parse_duration(arg, &cfg.min_ns) || !cfg.min_ns)
			usage_error("invalid --min '%s': expected a positive duration such as 10ms", arg);
		env.no_metrics = "--min streams single waits: --prometheus and --listen need the interval views";
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = AISCOPE_ARGP(opts, parse_arg, doc);

/* Tracepoints first: their arguments are a stable ABI and they cannot be
 * inlined away. The function hooks are for kernels where no tracepoint
 * mechanism works (or --probe-mode asks for them). */
static struct probe_hook hooks[] = {
	{ .name = "sched_wakeup", .cand = {
		PROBE_TRACEPOINT("sched", "sched_wakeup", "wakeup"),
		PROBE_FUNC("ttwu_do_activate", "wakeup") } },
	{ .name = "sched_wakeup_new", .cand = {
		PROBE_TRACEPOINT("sched", "sched_wakeup_new", "wakeup_new"),
		PROBE_FUNC("wake_up_new_task", "wakeup_new") } },
	{ .name = "sched_switch", .cand = {
		PROBE_TRACEPOINT("sched", "sched_switch", "switch"),
		PROBE_FUNC("finish_task_switch", "switch") } },
	{ .name = "sched_migrate_task", .optional = true, .cand = {
		PROBE_TRACEPOINT("sched", "sched_migrate_task", "migrate"),
		PROBE_FUNC("set_task_cpu", "migrate") } },
	PROBE_HOOK_TASK_EXIT,
};

/* ---- Prometheus metrics, by cgroup whatever --by says ---- */

static struct {
	struct prom_family *wait, *runs, *preemptions, *migrations;
} P;

static void metrics_init(void)
{
	const char *const *lbl = aiscope_cgroup_labels;

	if (!aiscope_metrics())
		return;
	P.wait = aiscope_metric_latency("aiscope_schedlat_wait_seconds",
		"Run-queue waits: from wakeup or preemption until the task runs on a CPU.", lbl);
	P.runs = aiscope_metric_counter("aiscope_schedlat_runs_total",
		"Times a task got a CPU after waiting in a run queue.", lbl);
	P.preemptions = aiscope_metric_counter("aiscope_schedlat_preemptions_total",
		"Involuntary context switches: a running task put back on the run queue.", lbl);
	P.migrations = aiscope_metric_counter("aiscope_schedlat_migrations_total",
		"Moves of a task to another CPU.", lbl);
}

/* One BPF key's interval, added to the series of its cgroup. With --by
 * host the key's identity is just the first task seen: no labels. */
static void metrics_add(const struct schedlat_stats *st)
{
	static const char *const none[AISCOPE_CGROUP_NLABELS] = { AISCOPE_CGROUP_NO_VALUES };
	const char *vals[AISCOPE_CGROUP_NLABELS];
	const char *const *v = none;
	struct container_info ci;
	struct hist h;

	if (!P.wait)
		return;
	if (cfg.by != SCHEDLAT_BY_HOST) {
		aiscope_cgroup_values(&st->ident, vals, &ci);
		v = vals;
	}
	hist_reset(&h);
	hist_add_counts(&h, st->hist, st->wait_ns, st->max_ns);
	prom_hist_add(P.wait, v, &h);
	prom_counter_add(P.runs, v, h.total);
	prom_counter_add(P.preemptions, v, st->preemptions);
	prom_counter_add(P.migrations, v, st->migrations);
}

/* ---- one interval's rows ---- */

struct row {
	struct aiscope_ident ident;
	struct container_info ci;
	char *cgroup;			/* a copy: the path cache may rescan */
	struct hist h;
	uint64_t preemptions;
	uint64_t migrations;
};

static struct {
	struct schedlat_bpf *skel;
	struct aiscope_bpf bpf;
	struct aiscope_loop loop;
	struct jw jw;
	struct row *rows;
	size_t nrows, cap;
	struct row host;		/* this interval */
	struct row total;		/* the whole run */
	uint64_t events;		/* --min events printed */
} S;

static struct row *row_for(const struct schedlat_stats *st)
{
	struct row *r;
	struct container_info ci;
	const char *cgroup = NULL;

	if (cfg.by == SCHEDLAT_BY_CGROUP || cfg.by == BY_CONTAINER)
		cgroup = aiscope_ident_cgroup(&st->ident, &ci);
	if (cfg.by == BY_CONTAINER) {
		/* every task outside containers folds into one row */
		for (size_t i = 0; i < S.nrows; i++)
			if (!strcmp(S.rows[i].ci.id, ci.id))
				return &S.rows[i];
	}
	S.rows = aiscope_grow(S.rows, &S.cap, S.nrows, sizeof(*S.rows));
	r = &S.rows[S.nrows++];
	memset(r, 0, sizeof(*r));
	r->ident = st->ident;
	if (cfg.by == SCHEDLAT_BY_CGROUP || cfg.by == BY_CONTAINER) {
		r->ci = ci;
		r->cgroup = cgroup ? strdup(cgroup) : NULL;
	} else {
		aiscope_ident_cgroup(&st->ident, &r->ci);
	}
	return r;
}

static void add_stats(struct row *r, const struct schedlat_stats *st)
{
	hist_add_counts(&r->h, st->hist, st->wait_ns, st->max_ns);
	r->preemptions += st->preemptions;
	r->migrations += st->migrations;
}

static bool in_epoch(const void *key, void *ctx)
{
	return ((const struct schedlat_key *)key)->epoch == *(uint32_t *)ctx;
}

static void take_stats(const void *key, const void *value, void *ctx)
{
	const struct schedlat_stats *st = value;

	metrics_add(st);
	add_stats(row_for(st), st);
	add_stats(&S.host, st);
}

/* Drain the keys of the interval that just closed. */
static void collect(void)
{
	/* returns once no program still adds to the closed epoch's rows */
	uint32_t closed = map_epoch_close(&S.skel->bss->epoch, NULL);

	for (size_t i = 0; i < S.nrows; i++)
		free(S.rows[i].cgroup);
	S.nrows = 0;
	memset(&S.host, 0, sizeof(S.host));
	map_drain(bpf_map__fd(S.skel->maps.stats), sizeof(struct schedlat_key),
		  sizeof(struct schedlat_stats), in_epoch, take_stats, &closed);
	hist_merge(&S.total.h, &S.host.h);
	S.total.preemptions += S.host.preemptions;
	S.total.migrations += S.host.migrations;
}

static uint64_t sort_value(const struct row *r)
{
	switch (cfg.sort[0]) {
	case 'p': return hist_percentile(&r->h, 99);
	case 'm': return r->h.max;
	case 'r': return r->h.total;
	case 'a': return r->h.total ? r->h.sum / r->h.total : 0;
	default: return r->h.sum;
	}
}

static int cmp_rows(const void *a, const void *b)
{
	uint64_t va = sort_value(a), vb = sort_value(b);

	return cmp_u64(vb, va) ?:
	       (((const struct row *)a)->ident.tid < ((const struct row *)b)->ident.tid ? -1 : 1);
}

/* ---- JSON ---- */

static void json_identity(const struct row *r, bool host)
{
	struct jw *w = &S.jw;
	bool task = !host && (cfg.by == SCHEDLAT_BY_PID || cfg.by == SCHEDLAT_BY_TID);
	bool cgroup = !host && cfg.by == SCHEDLAT_BY_CGROUP;
	bool container = !host && (cgroup || cfg.by == BY_CONTAINER || task);
	struct aiscope_identity id = { .ci = container ? &r->ci : NULL };

	/* the row kind is the --by key */
	jw_kstr(w, "row", host ? "host" : opt_key_name(bys, cfg.by));
	if (task) {
		id.known = AISCOPE_ID_TASK | (cfg.by == SCHEDLAT_BY_TID ? AISCOPE_ID_TID : 0);
		id.pid = r->ident.pid;
		id.tid = r->ident.tid;
		id.uid = r->ident.uid;
		id.comm = r->ident.comm;
		id.comm_len = sizeof(r->ident.comm);
	}
	if (task || cgroup) {
		id.known |= AISCOPE_ID_CGROUP_ID;
		id.cgroup_id = r->ident.cgroup_id;
		id.cgroup = task ? cg_path_of(r->ident.cgroup_id, r->ident.cgroup_v1) : r->cgroup;
	}
	aiscope_identity_json(w, &id);
}

static void json_stats(const struct row *r)
{
	struct jw *w = &S.jw;
	const struct hist *h = &r->h;

	jw_ku64(w, "runs", h->total);
	jw_ku64(w, "wait_ns", h->sum);
	jw_ku64(w, "avg_ns", h->total ? h->sum / h->total : 0);
	jw_ku64(w, "p50_ns", hist_percentile(h, 50));
	jw_ku64(w, "p99_ns", hist_percentile(h, 99));
	jw_ku64(w, "max_ns", h->max);
	jw_ku64(w, "preemptions", r->preemptions);
	jw_ku64(w, "migrations", r->migrations);
}

static void json_row(const struct row *r, bool host, uint64_t now, uint64_t interval)
{
	struct jw *w = &S.jw;

	jw_record_begin(w, cfg.hist ? "hist" : "sample", TOOL, now);
	jw_ku64(w, "seq", S.loop.ticks);
	jw_ku64(w, "interval_ns", interval);
	json_identity(r, host);
	if (cfg.hist) {
		jw_kstr(w, "name", "runq_latency");
		jw_kstr(w, "unit", "ns");
		jw_ku64(w, "count", r->h.total);
		jw_ku64(w, "sum_ns", r->h.sum);
		hist_json_buckets(w, &r->h);
	} else {
		json_stats(r);
	}
	jw_record_end(w);
}

/* ---- tables ---- */

static const struct tcol cols_pid[] = {
	{ "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "CONTAINER", 12, TC_LEFT },
};
static const struct tcol cols_tid[] = {
	{ "TID", 7, 0 }, { "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "CONTAINER", 12, TC_LEFT },
};
static const struct tcol cols_cgroup[] = {
	{ "CGROUP", 40, TC_LEFT }, { "CONTAINER", 12, TC_LEFT },
};
static const struct tcol cols_container[] = {
	{ "CONTAINER", 12, TC_LEFT }, { "RUNTIME", 10, TC_LEFT }, { "POD", 36, TC_LEFT },
};
static const struct tcol cols_stats[] = {
	{ "RUNS", 8, 0 }, { "AVG(us)", 9, 0 }, { "P50(us)", 9, 0 }, { "P99(us)", 9, 0 },
	{ "MAX(us)", 10, 0 }, { "WAIT(ms)", 10, 0 }, { "PREEMPT", 7, 0 }, { "MIGR", 6, 0 },
};

static struct tcol table_cols[16];
static int table_ncols;
static int key_ncols;

static void build_columns(void)
{
	const struct tcol *key = cols_pid;
	int nkey = ARRAY_SIZE(cols_pid);

	switch (cfg.by) {
	case SCHEDLAT_BY_TID: key = cols_tid; nkey = ARRAY_SIZE(cols_tid); break;
	case SCHEDLAT_BY_CGROUP: key = cols_cgroup; nkey = ARRAY_SIZE(cols_cgroup); break;
	case BY_CONTAINER: key = cols_container; nkey = ARRAY_SIZE(cols_container); break;
	case SCHEDLAT_BY_HOST: key = NULL; nkey = 0; break;
	}
	table_ncols = 0;
	if (env.timestamp)
		table_cols[table_ncols++] = (struct tcol){ "TIME", 8, TC_LEFT };
	if (!key)
		table_cols[table_ncols++] = (struct tcol){ "SCOPE", 5, TC_LEFT };
	for (int i = 0; i < nkey; i++)
		table_cols[table_ncols++] = key[i];
	key_ncols = table_ncols;
	for (size_t i = 0; i < ARRAY_SIZE(cols_stats); i++)
		table_cols[table_ncols++] = cols_stats[i];
}

static void table_key(struct table *t, const struct row *r, bool host, const char *hms)
{
	char buf[16], pod[520];

	if (env.timestamp)
		table_str(t, hms);
	if (host) {
		/* the host line fills the key columns with its name */
		for (int i = env.timestamp; i < key_ncols; i++)
			table_str(t, i == env.timestamp ? "[host]" : "");
		return;
	}
	switch (cfg.by) {
	case SCHEDLAT_BY_TID:
		table_u64(t, r->ident.tid);
		/* fallthrough */
	case SCHEDLAT_BY_PID:
		table_u64(t, r->ident.pid);
		table_str(t, r->ident.comm);
		table_str(t, aiscope_container_short(&r->ci, buf));
		break;
	case SCHEDLAT_BY_CGROUP:
		table_str(t, r->cgroup ? r->cgroup : "?");
		table_str(t, aiscope_container_short(&r->ci, buf));
		break;
	case BY_CONTAINER:
		table_str(t, r->ci.id[0] ? aiscope_container_short(&r->ci, buf) : "(none)");
		table_str(t, aiscope_container_runtime(&r->ci));
		table_str(t, aiscope_container_pod(&r->ci, pod, sizeof(pod)));
		break;
	}
}

static void table_row(struct table *t, const struct row *r, bool host, const char *hms)
{
	const struct hist *h = &r->h;

	table_key(t, r, host, hms);
	table_u64(t, h->total);
	table_fixed(t, h->total ? (double)h->sum / h->total / 1e3 : 0, 1);
	table_fixed(t, hist_percentile(h, 50) / 1e3, 1);
	table_fixed(t, hist_percentile(h, 99) / 1e3, 1);
	table_fixed(t, h->max / 1e3, 1);
	table_fixed(t, h->sum / 1e6, 1);
	table_u64(t, r->preemptions);
	table_u64(t, r->migrations);
	table_end_row(t);
}

static void print_hist_block(const struct row *r, bool host)
{
	uint64_t slots[LOG2_SLOTS];
	int n = hist_log2(&r->h, NSEC_PER_USEC, slots);
	char buf[16], name[PATH_MAX];

	/* names through lib/text, as the tables show them: a comm or a
	 * cgroup name with a newline or an escape stays on its line */
	if (host)
		printf("host");
	else if (cfg.by == SCHEDLAT_BY_PID || cfg.by == SCHEDLAT_BY_TID)
		printf("%s = %u %s", cfg.by == SCHEDLAT_BY_TID ? "tid" : "pid",
		       cfg.by == SCHEDLAT_BY_TID ? r->ident.tid : r->ident.pid,
		       text_safe(name, sizeof(name), r->ident.comm));
	else if (cfg.by == SCHEDLAT_BY_CGROUP)
		printf("cgroup = %s", r->cgroup ? text_safe(name, sizeof(name), r->cgroup) : "?");
	else
		printf("container = %s", r->ci.id[0] ? aiscope_container_short(&r->ci, buf) : "(none)");
	printf("  runs=%llu avg=%.1fus p50=%.1fus p99=%.1fus max=%.1fus\n",
	       (unsigned long long)r->h.total,
	       r->h.total ? (double)r->h.sum / r->h.total / 1e3 : 0,
	       hist_percentile(&r->h, 50) / 1e3, hist_percentile(&r->h, 99) / 1e3, r->h.max / 1e3);
	hist_print_log2(stdout, slots, n, "usecs");
	putchar('\n');
}

static void print_interval(uint64_t interval)
{
	uint64_t now = aiscope_now_realtime();
	size_t shown = table_shown(S.nrows, env.rows);
	bool host_only = cfg.by == SCHEDLAT_BY_HOST;
	char hms[16];
	struct table t;

	sort_array(S.rows, S.nrows, sizeof(*S.rows), cmp_rows);
	if (env.json) {
		for (size_t i = 0; !host_only && i < shown; i++)
			json_row(&S.rows[i], false, now, interval);
		json_row(&S.host, true, now, interval);
		return;
	}
	table_block_begin(stdout, env.tty && !env.noclear, now, interval, "schedlat");
	if (cfg.hist) {
		print_hist_block(&S.host, true);
		for (size_t i = 0; !host_only && i < shown; i++)
			print_hist_block(&S.rows[i], false);
		return;
	}
	fmt_hms(now, hms, sizeof(hms));
	table_init(&t, stdout, table_cols, table_ncols, env.tty && !env.wide);
	table_header(&t);
	table_row(&t, &S.host, true, hms);
	for (size_t i = 0; !host_only && i < shown; i++)
		table_row(&t, &S.rows[i], false, hms);
	table_more(stdout, shown, S.nrows);
}

static int on_tick(void *ctx)
{
	uint64_t interval = aiscope_loop_interval(&S.loop);

	collect();
	print_interval(interval);
	if (env.count && S.loop.ticks >= env.count)
		return AISCOPE_STOP;
	return 0;
}

/* ---- --min: streamed waits ---- */

static const struct tcol cols_event[] = {
	{ "TIME", 8, TC_LEFT }, { "PID", 7, 0 }, { "TID", 7, 0 }, { "COMM", 15, TC_LEFT },
	{ "CONTAINER", 12, TC_LEFT }, { "CPU", 3, 0 }, { "LAT(us)", 10, 0 },
	{ "PREV_PID", 8, 0 }, { "PREV_COMM", 15, TC_LEFT },
};

static int on_event(void *ctx, void *data, size_t len)
{
	const struct schedlat_event *e = data;
	uint64_t rt = aiscope_realtime(e->ts);
	struct container_info ci;
	struct table t;
	char hms[16], buf[16];

	if (len < sizeof(*e))
		return 0;
	S.events++;
	if (env.json) {
		struct jw *w = &S.jw;

		jw_record_begin(w, "event", TOOL, rt);
		jw_kstr(w, "event", "wait");
		aiscope_ident_json(w, &e->task, true);
		jw_ku64(w, "cpu", e->cpu);
		jw_ku64(w, "wait_ns", e->wait_ns);
		jw_ku64(w, "prev_pid", e->prev_pid);
		jw_ku64(w, "prev_tid", e->prev_tid);
		jw_kstrn(w, "prev_comm", e->prev_comm, sizeof(e->prev_comm));
		jw_record_end(w);
	} else {
		aiscope_ident_cgroup(&e->task, &ci);
		table_init_time(&t, stdout, cols_event, ARRAY_SIZE(cols_event), env.timestamp,
				env.tty && !env.wide);
		if (env.timestamp) {
			fmt_hms(rt, hms, sizeof(hms));
			table_str(&t, hms);
		}
		table_u64(&t, e->task.pid);
		table_u64(&t, e->task.tid);
		table_str(&t, e->task.comm);
		table_str(&t, aiscope_container_short(&ci, buf));
		table_u64(&t, e->cpu);
		table_fixed(&t, e->wait_ns / 1e3, 1);
		table_u64(&t, e->prev_pid);
		table_str(&t, e->prev_comm);
		table_end_row(&t);
	}
	if (env.count && S.events >= env.count)
		return aiscope_loop_stop(&S.loop, AISCOPE_EXIT_COUNT);
	return 0;
}

/* ---- summary ---- */

static void print_summary(void)
{
	const struct hist *h = &S.total.h;
	uint64_t events = cfg.min_ns ? S.events : h->total;

	if (env.json) {
		aiscope_summary_begin(&S.jw, &S.bpf, &S.loop, events);
		if (!cfg.min_ns) {
			jw_ku64(&S.jw, "intervals", S.loop.ticks);
			json_stats(&S.total);
		}
		jw_record_end(&S.jw);
		return;
	}
	if (cfg.min_ns) {
		fprintf(stderr, "%s: %llu waits over the threshold, %llu lost\n", TOOL,
			(unsigned long long)S.events, (unsigned long long)aiscope_lost_total(&S.bpf));
		return;
	}
	printf("# summary: %llu runs, wait %.1f ms, avg %.1f us, p50 %.1f us, p99 %.1f us, max %.1f us, %llu preemptions, %llu migrations, %llu lost events\n",
	       (unsigned long long)h->total, h->sum / 1e6,
	       h->total ? (double)h->sum / h->total / 1e3 : 0, hist_percentile(h, 50) / 1e3,
	       hist_percentile(h, 99) / 1e3, h->max / 1e3,
	       (unsigned long long)S.total.preemptions, (unsigned long long)S.total.migrations,
	       (unsigned long long)aiscope_lost_total(&S.bpf));
}

/* Classic tracepoints name tasks by pid: they need the identity cache. */
static bool uses_classic_tracepoints(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(hooks); i++)
		if (probe_chosen_by(&hooks[i], PM_BIT(PM_TRACEPOINT)))
			return true;
	return false;
}

static void validate(void)
{
	if (env.sort)
		cfg.sort = sort_keys[opt_word("--sort", env.sort, sort_keys)];
	if (cfg.min_ns && (cfg.hist || cfg.by_set))
		usage_error("--min streams single waits: it cannot be combined with -H or --by");
	if (cfg.hist && !cfg.by_set)
		cfg.by = SCHEDLAT_BY_HOST;
}

int main(int argc, char **argv)
{
	int code;

	int by;

	aiscope_parse(&argp, argc, argv, TOOL,
		      AISCOPE_AGGREGATING | AISCOPE_STREAMING | AISCOPE_METRICS);
	validate();
	metrics_init();
	jw_init(&S.jw, stdout);

	S.skel = schedlat_bpf__open_opts(aiscope_open_opts());
	if (!S.skel)
		aiscope_fail(EXIT_RUNTIME, "cannot open the BPF object: %s", strerror(errno));
	by = cfg.by == BY_CONTAINER ? SCHEDLAT_BY_CGROUP : cfg.by;
	S.skel->rodata->key_by = by;
	S.skel->rodata->min_ns = cfg.min_ns;
	S.skel->rodata->have_filter = env.npids || env.ntids || env.has_uid || env.comm[0] || env.ncg ||
				      cgset_active();

	S.bpf = (struct aiscope_bpf){
		.hooks = hooks, .nhooks = ARRAY_SIZE(hooks),
		.streaming = cfg.min_ns > 0, .on_event = on_event,
	};
	aiscope_bpf_prepare(&S.bpf, S.skel->obj, &S.skel->rodata->aiscope_cfg);
	if (uses_classic_tracepoints()) {
		aiscope_map_resize(S.skel->obj, "tasks", 65536);
		aiscope_map_resize(S.skel->obj, "pending", 16384);
	}
	if (cfg.min_ns)
		aiscope_map_resize(S.skel->obj, "stats", 1);
	aiscope_bpf_load(&S.bpf, schedlat_bpf__load(S.skel));
	aiscope_bpf_attach(&S.bpf);

	build_columns();
	if (cfg.min_ns && !env.json)
		table_header_time(stdout, cols_event, ARRAY_SIZE(cols_event), env.timestamp);
	aiscope_tracing("run-queue latency (%s)", probe_summary(hooks, ARRAY_SIZE(hooks)));

	S.loop = (struct aiscope_loop){
		.bpf = &S.bpf,
		.on_tick = cfg.min_ns ? NULL : on_tick,
		.on_final = cfg.min_ns ? NULL : on_tick,
		.tick_ns = cfg.min_ns ? 0 : env.interval_ns,
	};
	code = aiscope_run(&S.loop, print_summary);
	schedlat_bpf__destroy(S.skel);
	for (size_t i = 0; i < S.nrows; i++)
		free(S.rows[i].cgroup);
	free(S.rows);
	return code;
}
