/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --prometheus FILE and --listen ADDR:PORT for tools with an interval
 * (aggregating ones, streaming ones that poll every -i): the
 * tool's own metric families live in one registry next to the shared
 * aiscope_build_info and aiscope_lost_events_total; the event loop
 * (lib/run.c) publishes it after every interval: FILE is rewritten
 * (a new FILE.tmp.XXXXXX, then rename) and GET /metrics serves the same text.
 *
 * A tool offers the options by passing AISCOPE_METRICS to aiscope_parse()
 * and adds its families when aiscope_metrics() is not NULL:
 *
 *	AISCOPE_METRIC_LABELS(lbl, AISCOPE_CGROUP_LABEL_NAMES, "kind", NULL);
 *	if (aiscope_metrics())
 *		runs = aiscope_metric_counter("aiscope_x_runs_total", "Runs.", lbl);
 *	... each interval, per row:
 *	aiscope_cgroup_values(&row->ident, vals, &ci);
 *	prom_counter_add(runs, vals, row->runs);
 */
#ifndef AISCOPE_METRICS_H
#define AISCOPE_METRICS_H

#include <stdbool.h>
#include <stdint.h>
#include "aiscope_common.h"
#include "cgroup.h"
#include "prom.h"

/* A series untouched this long may give its place to a new label set. */
#define AISCOPE_METRICS_IDLE_NS	(600ULL * 1000000000ULL)

/* The registry, or NULL when neither --prometheus nor --listen was given. */
struct prom_reg *aiscope_metrics(void);

/* cgroup (path), container_id, pod_uid, and kube-state-metrics' names for
 * the container's: namespace, pod, container (the container's name in its
 * pod, else the runtime's name for it; lib/ctrmeta.c): what metrics are
 * keyed by. A tool whose series have labels of their own puts them after
 * these names:
 *	AISCOPE_METRIC_LABELS(lbl, AISCOPE_CGROUP_LABEL_NAMES, "kind", NULL);
 * and their values after aiscope_cgroup_values()'. */
/* then the container labels that --metric-label copies (lib/ctrmeta.c's
 * ctr_meta.labels), "" for a slot no option filled: lib/prom leaves it out */
#define AISCOPE_METRIC_XLABELS 4
extern char aiscope_metric_xlabels[AISCOPE_METRIC_XLABELS][64];
#define AISCOPE_CGROUP_LABEL_NAMES "cgroup", "container_id", "pod_uid", "namespace", "pod", "container", \
	aiscope_metric_xlabels[0], aiscope_metric_xlabels[1], aiscope_metric_xlabels[2], \
	aiscope_metric_xlabels[3]
#define AISCOPE_CGROUP_NLABELS (6 + AISCOPE_METRIC_XLABELS)
/* the values of a series of no cgroup (e.g. the host's) */
#define AISCOPE_CGROUP_NO_VALUES "", "", "", "", "", "", "", "", "", ""
extern const char *const aiscope_cgroup_labels[];

/*
 * A family's label names, NULL-terminated, declared once for two readers:
 * the family's registration and --metric-label, which parses before any
 * family exists and must refuse a NAME a series of the tool's already has
 * (a usage error, not a registration that fails at start). The tables are
 * gathered in one section that lib/metrics.c walks; aiscope_metric_*()
 * take no table declared otherwise (exit 1 at the first start).
 */
#define AISCOPE_METRIC_LABELS_SECTION \
	__attribute__((used, section("aiscope_metric_labels"), aligned(sizeof(char *))))
#define AISCOPE_METRIC_LABELS(var, ...) \
	static const char *const var[] AISCOPE_METRIC_LABELS_SECTION = { __VA_ARGS__ }
/* NAME is a label name of a series of this program's: in a declared table
 * (the --metric-label slots aside), lib/prom's own, or one a Prometheus
 * scrape adds (instance, job, deploy/'s node). */
bool metrics_label_taken(const char *name);
/* Values for aiscope_cgroup_labels; unknown ones are "". The strings live
 * in ci and the cgroup path cache: use them before the next lookup. */
void aiscope_cgroup_values(const struct aiscope_ident *id, const char *vals[AISCOPE_CGROUP_NLABELS],
			   struct container_info *ci);
/* The same from a cgroup path already known (NULL: none). */
void aiscope_cgroup_path_values(const char *path, const char *vals[AISCOPE_CGROUP_NLABELS],
				struct container_info *ci);

/* Registration that cannot fail at run time: a bad name exits 1. */
struct prom_family *aiscope_metric_counter(const char *name, const char *help,
					   const char *const *labels);
/* A counter of seconds fed in ns (prom_counter_add of ns), written in
 * seconds with 9 decimals: a time total such as CPU time per node. */
struct prom_family *aiscope_metric_seconds(const char *name, const char *help,
					   const char *const *labels);
struct prom_family *aiscope_metric_gauge(const char *name, const char *help,
					 const char *const *labels);
/* A latency histogram in seconds from ns values: power-of-two buckets
 * from 2^10 - 1 ns (about 1 us) to 2^36 - 1 ns (about 69 s), then +Inf. */
struct prom_family *aiscope_metric_latency(const char *name, const char *help,
					   const char *const *labels);

/* A size histogram in bytes: power-of-two buckets from 2^6 - 1 (63 bytes)
 * to 2^36 - 1 (64 GiB), then +Inf. */
struct prom_family *aiscope_metric_bytes(const char *name, const char *help,
					 const char *const *labels);
/* Updates that went to an overflow series so far (every family at its
 * series cap): the summary's metrics_overflow, aiscope_metric_overflow_total. */
uint64_t metrics_folded(void);

/* ---- for lib/opts.c and lib/run.c ---- */

/* After the options: the registry, the shared families, the listening
 * socket (a bad address or a busy port is a usage error). */
void metrics_setup(const char *tool, const char *file, const char *listen);
/* --metric-label KEY[=NAME]: a usage error when bad; after it,
 * metrics_labels_setup() hands the keys to lib/ctrmeta. */
void metrics_label_option(const char *arg);
void metrics_labels_setup(void);
/* Lost counters (the AISCOPE_LOST_ALL totals so far, NULL: none), render,
 * FILE and the HTTP body. */
void metrics_publish(const uint64_t *lost);
int metrics_attach(int ep, uint64_t tag);
bool metrics_owns(uint64_t tag);
void metrics_event(uint64_t tag, uint32_t events);
void metrics_sweep(void);
bool metrics_listening(void);
/* Stops serving (the registry stays for a last publish). */
void metrics_stop(void);

#endif
