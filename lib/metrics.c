// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include "ctrmeta.h"
#include "fail.h"
#include "json.h"
#include "metrics.h"
#include "util.h"

static struct {
	struct prom_reg *reg;
	const char *file;
	struct prom_http http;
	bool listening;
	bool write_failed;		/* warned once per failing streak */
	struct prom_family *lost;
	struct prom_family *folded;
	uint64_t folded_seen;		/* what the last stderr line said */
	unsigned int max_series;	/* per family: PROM_DEFAULT_MAX_SERIES */
	const char *tool;
} M = { .http = { .lfd = -1, .ep = -1 } };

char aiscope_metric_xlabels[AISCOPE_METRIC_XLABELS][64];
const char *const aiscope_cgroup_labels[] AISCOPE_METRIC_LABELS_SECTION = {
	AISCOPE_CGROUP_LABEL_NAMES, NULL
};
_Static_assert(sizeof(aiscope_cgroup_labels) / sizeof(aiscope_cgroup_labels[0]) ==
	       AISCOPE_CGROUP_NLABELS + 1, "AISCOPE_CGROUP_NLABELS counts AISCOPE_CGROUP_LABEL_NAMES");

struct prom_reg *aiscope_metrics(void)
{
	return M.reg;
}

/* --metric-label: the container labels' keys, their metric label names
 * in aiscope_metric_xlabels */
static struct {
	const char *key[AISCOPE_METRIC_XLABELS];
	size_t n;
} X;

/* the linker's bounds of the AISCOPE_METRIC_LABELS tables */
extern const char *const __start_aiscope_metric_labels[];
extern const char *const __stop_aiscope_metric_labels[];

static bool is_xlabel(const char *p)
{
	return p >= aiscope_metric_xlabels[0] &&
	       p < aiscope_metric_xlabels[0] + sizeof(aiscope_metric_xlabels);
}

bool metrics_label_taken(const char *name)
{
	static const char *const scrape[] = { "instance", "job", "node" };

	/* NULLs: the tables' ends and any padding the linker put between them */
	for (const char *const *p = __start_aiscope_metric_labels;
	     p < __stop_aiscope_metric_labels; p++)
		if (*p && !is_xlabel(*p) && !strcmp(*p, name))
			return true;
	for (size_t i = 0; i < ARRAY_SIZE(scrape); i++)
		if (!strcmp(name, scrape[i]))
			return true;
	return prom_own_label(name);
}

/* KEY's label name when none is given: [^A-Za-z0-9_] -> _ ("ai.model.name"
 * -> ai_model_name), _ in front of a leading digit */
static void default_label_name(const char *key, char *name, size_t len)
{
	size_t o = 0;

	if (isdigit((unsigned char)*key))
		name[o++] = '_';
	for (; *key && o + 1 < len; key++)
		name[o++] = isalnum((unsigned char)*key) || *key == '_' ? *key : '_';
	name[o] = 0;
}

void metrics_label_option(const char *arg)
{
	const char *eq = strchr(arg, '=');
	size_t klen = eq ? (size_t)(eq - arg) : strlen(arg);
	char *name;

	if (X.n == AISCOPE_METRIC_XLABELS)
		usage_error("at most %d --metric-label", AISCOPE_METRIC_XLABELS);
	if (!klen || klen > 255)
		usage_error("invalid --metric-label '%s': expected KEY[=NAME], KEY of 1 to 255 bytes",
			    arg);
	for (size_t i = 0; i < klen; i++)
		if ((unsigned char)arg[i] < 0x21 || arg[i] == 0x7f)
			usage_error("invalid --metric-label '%s': a space or control character in KEY",
				    arg);
	name = aiscope_metric_xlabels[X.n];
	if (eq && strlen(eq + 1) >= sizeof(aiscope_metric_xlabels[0]))
		usage_error("invalid --metric-label '%s': NAME of more than %zu bytes", arg,
			    sizeof(aiscope_metric_xlabels[0]) - 1);
	if (eq)
		snprintf(name, sizeof(aiscope_metric_xlabels[0]), "%s", eq + 1);
	else
		default_label_name(arg, name, sizeof(aiscope_metric_xlabels[0]));
	if (!prom_valid_label_name(name))
		usage_error("invalid --metric-label '%s': '%s' is not a Prometheus label name "
			    "([a-zA-Z_][a-zA-Z0-9_]*, not starting with __)", arg, name);
	if (metrics_label_taken(name))
		usage_error("invalid --metric-label '%s': '%s' is a label of aiscope's own",
			    arg, name);
	for (size_t i = 0; i < X.n; i++)
		if (!strcmp(name, aiscope_metric_xlabels[i]))
			usage_error("invalid --metric-label '%s': label '%s' given twice", arg, name);
	X.key[X.n++] = strndup(arg, klen);
	if (!X.key[X.n - 1])
		aiscope_fail(EXIT_RUNTIME, "out of memory");
}

void metrics_labels_setup(void)
{
	ctrmeta_set_labels(X.key, X.n);
}

void aiscope_cgroup_path_values(const char *path, const char *vals[AISCOPE_CGROUP_NLABELS],
				struct container_info *ci)
{
	/* ctrmeta's strings last until its next lookup: these until ours */
	static char ns[256], pod[256], ctr[256], xl[AISCOPE_METRIC_XLABELS][CTRMETA_LABEL_LEN];
	const struct ctr_meta *m = NULL;

	if (!path || !cg_parse_container(path, ci))
		memset(ci, 0, sizeof(*ci));
	if (ci->id[0])
		m = ctrmeta_lookup(ci->id, ci->runtime);
	snprintf(ns, sizeof(ns), "%s", m && m->found ? m->pod_namespace : "");
	snprintf(pod, sizeof(pod), "%s", m && m->found ? m->pod_name : "");
	snprintf(ctr, sizeof(ctr), "%s", !m || !m->found ? "" :
		 m->k8s_container[0] ? m->k8s_container : m->name);
	vals[0] = path ? path : "";
	vals[1] = ci->id;
	vals[2] = ci->pod_uid;
	vals[3] = ns;
	vals[4] = pod;
	vals[5] = ctr;
	for (size_t i = 0; i < AISCOPE_METRIC_XLABELS; i++) {
		snprintf(xl[i], sizeof(xl[i]), "%s", m && m->found && i < X.n ? m->labels[i] : "");
		vals[6 + i] = xl[i];
	}
}

void aiscope_cgroup_values(const struct aiscope_ident *id, const char *vals[AISCOPE_CGROUP_NLABELS],
			   struct container_info *ci)
{
	aiscope_cgroup_path_values(cg_path_of(id->cgroup_id, id->cgroup_v1), vals, ci);
}

static const char *const *declared(const char *const *labels, const char *name)
{
	if (labels && (labels < __start_aiscope_metric_labels ||
		       labels >= __stop_aiscope_metric_labels))
		aiscope_fail(EXIT_RUNTIME, "cannot register metric %s: its labels are not declared with AISCOPE_METRIC_LABELS",
			     name);
	return labels;
}

static struct prom_family *check(struct prom_family *f, const char *name)
{
	if (!f)
		aiscope_fail(EXIT_RUNTIME, "cannot register metric %s: %s", name, strerror(errno));
	prom_set_max_series(f, M.max_series);
	return f;
}

struct prom_family *aiscope_metric_counter(const char *name, const char *help,
					   const char *const *labels)
{
	return check(prom_counter(M.reg, name, help, declared(labels, name)), name);
}

struct prom_family *aiscope_metric_seconds(const char *name, const char *help,
					   const char *const *labels)
{
	return check(prom_counter_scaled(M.reg, name, help, declared(labels, name), 9), name);
}

struct prom_family *aiscope_metric_gauge(const char *name, const char *help,
					 const char *const *labels)
{
	return check(prom_gauge(M.reg, name, help, declared(labels, name)), name);
}

struct prom_family *aiscope_metric_latency(const char *name, const char *help,
					   const char *const *labels)
{
	uint64_t b[PROM_MAX_BOUNDS];
	int n = prom_log2_bounds(b, PROM_MAX_BOUNDS, 10, 36);

	return check(prom_histogram(M.reg, name, help, declared(labels, name), b, n, 9), name);
}

struct prom_family *aiscope_metric_bytes(const char *name, const char *help,
					 const char *const *labels)
{
	uint64_t b[PROM_MAX_BOUNDS];
	int n = prom_log2_bounds(b, PROM_MAX_BOUNDS, 6, 36);

	return check(prom_histogram(M.reg, name, help, declared(labels, name), b, n, 0), name);
}

static void shared_families(const char *tool)
{
	AISCOPE_METRIC_LABELS(build_labels, "tool", "version", "kernel", "host", NULL);
	AISCOPE_METRIC_LABELS(lost_labels, "tool", "kind", NULL);
	AISCOPE_METRIC_LABELS(tool_labels, "tool", NULL);
	struct prom_family *build;
	struct utsname u;

	/* host: what the JSON lines name, so that a server's series of one
	 * host's tools (each its own instance) are joined by it */
	build = aiscope_metric_gauge("aiscope_build_info",
		"aiscope tool, version, the kernel it runs on and the host (uname's nodename, the JSON lines' host); always 1.",
		build_labels);
	if (uname(&u))
		snprintf(u.release, sizeof(u.release), "unknown");
	prom_gauge_set(build, (const char *[]){ tool, AISCOPE_VERSION, u.release, jw_host() ?: "" }, 1);
	/* HELP must be the same in every tool: node_exporter merges the files */
	M.lost = aiscope_metric_counter("aiscope_lost_events_total",
		"Events lost: ring buffer full (ringbuf_full), map full (map_full), runs of the programs the kernel skipped (recursion_misses), cgroup creation records the watcher lost (cgroup_events_lost).",
		lost_labels);
	/* its kinds are fixed, no label sets of cgroups: never at a test's
	 * lowered cap (AISCOPE_TEST_CAP_METRIC_SERIES) */
	prom_set_max_series(M.lost, PROM_DEFAULT_MAX_SERIES);
	prom_counter_set(M.lost, (const char *[]){ tool, "ringbuf_full" }, 0);
	prom_counter_set(M.lost, (const char *[]){ tool, "map_full" }, 0);
	prom_counter_set(M.lost, (const char *[]){ tool, "recursion_misses" }, 0);
	prom_counter_set(M.lost, (const char *[]){ tool, "cgroup_events_lost" }, 0);
	M.folded = aiscope_metric_counter("aiscope_metric_overflow_total",
		"Updates of a label set that found its metric family at its series cap, no series idle long enough to make room, and went to the family's overflow=\"true\" series.",
		tool_labels);
	prom_counter_set(M.folded, (const char *[]){ tool }, 0);
}

uint64_t metrics_folded(void)
{
	return M.reg ? prom_reg_folded(M.reg, NULL) : 0;
}

/*
 * Each family keeps at most PROM_DEFAULT_MAX_SERIES label sets (cgroups,
 * containers): past that, and with none idle for AISCOPE_METRICS_IDLE_NS,
 * a new one's values go to the overflow series. Said on stderr when it
 * starts, and again each time the count has doubled since, so that a
 * long run does not write a line every interval.
 */
static void folded_check(void)
{
	const char *name;
	uint64_t n = prom_reg_folded(M.reg, &name);

	prom_counter_set(M.folded, (const char *[]){ M.tool }, n);
	if (!n || n < 2 * M.folded_seen)
		return;
	fprintf(stderr, "%s: metric %s is at its %u series, none idle for %llu s: %llu updates of new label sets (cgroups, containers) went to its overflow=\"true\" series\n",
		M.tool, name, M.max_series,
		(unsigned long long)(AISCOPE_METRICS_IDLE_NS / 1000000000ULL), (unsigned long long)n);
	M.folded_seen = n;
}

void metrics_setup(const char *tool, const char *file, const char *listen)
{
	char err[256];

	if (!file && !listen)
		return;
	M.reg = prom_reg_new();
	if (!M.reg)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	prom_reg_set_idle(M.reg, AISCOPE_METRICS_IDLE_NS);
	/* tests reach the cap with a few cgroups */
	M.max_series = aiscope_test_cap("METRIC_SERIES", PROM_DEFAULT_MAX_SERIES);
	M.tool = tool;
	M.file = file;
	shared_families(tool);
	if (listen) {
		if (prom_http_listen(&M.http, listen, err, sizeof(err)))
			usage_error("cannot listen on '%s': %s", listen, err);
		M.listening = true;
		fprintf(stderr, "%s: serving metrics at http://%s/metrics\n", tool, M.http.addr);
	}
}

void metrics_publish(const uint64_t *lost)
{
	size_t len = 0;
	char *text;
	int err;

	if (!M.reg)
		return;
	prom_reg_set_time(M.reg, clock_ns(CLOCK_MONOTONIC));
	if (lost) {
		prom_counter_set(M.lost, (const char *[]){ M.tool, "ringbuf_full" },
				 lost[AISCOPE_LOST_RINGBUF]);
		prom_counter_set(M.lost, (const char *[]){ M.tool, "map_full" },
				 lost[AISCOPE_LOST_MAP]);
		prom_counter_set(M.lost, (const char *[]){ M.tool, "recursion_misses" },
				 lost[AISCOPE_LOST_SKIPPED]);
		prom_counter_set(M.lost, (const char *[]){ M.tool, "cgroup_events_lost" },
				 lost[AISCOPE_LOST_CGROUP]);
	}
	folded_check();
	text = prom_render(M.reg, &len);
	if (!text) {
		fprintf(stderr, "%s: cannot render metrics: out of memory\n", M.tool);
		return;
	}
	if (M.file) {
		err = prom_write_file(M.file, text, len);
		if (err && !M.write_failed)
			fprintf(stderr, "%s: cannot write metrics to %s: %s (will retry each interval)\n",
				M.tool, M.file, strerror(-err));
		M.write_failed = err != 0;
	}
	if (M.listening)
		prom_http_set_body(&M.http, text, len);
	free(text);
}

int metrics_attach(int ep, uint64_t tag)
{
	if (!M.listening)
		return 0;
	return prom_http_attach(&M.http, ep, tag);
}

bool metrics_listening(void)
{
	return M.listening;
}

bool metrics_owns(uint64_t tag)
{
	return M.listening && prom_http_owns(&M.http, tag);
}

void metrics_event(uint64_t tag, uint32_t events)
{
	prom_http_event(&M.http, tag, events, clock_ns(CLOCK_MONOTONIC));
}

void metrics_sweep(void)
{
	if (M.listening)
		prom_http_sweep(&M.http, clock_ns(CLOCK_MONOTONIC));
}

void metrics_stop(void)
{
	if (!M.listening)
		return;
	prom_http_close(&M.http);
	M.listening = false;
}
