/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Prometheus metrics: a small registry, the text exposition format
 * (version 0.0.4, what node_exporter's textfile collector and every
 * Prometheus server read), an atomic textfile writer and a tiny HTTP
 * server for GET /metrics that runs inside the tools' epoll loop.
 *
 * Values accumulate for the whole run: counters and histograms add each
 * interval's deltas, gauges are set. Names follow
 * aiscope_<tool>_<thing>_<base unit> (_total for counters). Labels carry
 * cgroup, container and kind, never pid or comm (but for lib/edge's series
 * of a run's top edges, bounded by their number): each family keeps at most
 * max_series label sets; past that a series idle for longer than the
 * registry's idle time makes room, and otherwise the values go to one
 * overflow series (every label empty, overflow="true").
 *
 *	struct prom_reg *r = prom_reg_new();
 *	static const char *const lbl[] = { "cgroup", NULL };
 *	struct prom_family *runs = prom_counter(r, "aiscope_x_runs_total", "Runs.", lbl);
 *	prom_counter_add(runs, (const char *[]){ "/a" }, 3);
 *	prom_write(r, stdout);
 */
#ifndef AISCOPE_PROM_H
#define AISCOPE_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "hist.h"

#define PROM_MAX_LABELS		14
#define PROM_MAX_BOUNDS		64
#define PROM_DEFAULT_MAX_SERIES	1000
#define PROM_CONTENT_TYPE	"text/plain; version=0.0.4; charset=utf-8"

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM };

struct prom_reg;
struct prom_family;

struct prom_reg *prom_reg_new(void);
void prom_reg_free(struct prom_reg *r);
/* The clock series are stamped with (for idle eviction), and how long a
 * series may stay untouched before a new label set may take its place
 * (0: never). */
void prom_reg_set_time(struct prom_reg *r, uint64_t now_ns);
void prom_reg_set_idle(struct prom_reg *r, uint64_t idle_ns);

/* labels: NULL-terminated label names (at most PROM_MAX_LABELS, never
 * "le" or "overflow"). An empty name is a slot the family leaves out: the
 * value at that place in every values array is not read (a label that
 * exists only when an option names it). NULL with errno EINVAL for an
 * invalid or repeated name. */
struct prom_family *prom_counter(struct prom_reg *r, const char *name, const char *help,
				 const char *const *labels);
/* A counter fed in 10^-digits of its base unit and written in it (ns into
 * seconds: 9), exactly: integer adds, no float drift over a long run. */
struct prom_family *prom_counter_scaled(struct prom_reg *r, const char *name, const char *help,
					const char *const *labels, unsigned int digits);
struct prom_family *prom_gauge(struct prom_reg *r, const char *name, const char *help,
			       const char *const *labels);
/* A cumulative histogram fed from lib/hist.h: values are in 10^-digits of
 * the base unit (ns into seconds: 9); bounds are inclusive upper bounds in
 * that unit, ascending, each the largest value of a log-linear bucket, so
 * every _bucket count is exact. */
struct prom_family *prom_histogram(struct prom_reg *r, const char *name, const char *help,
				   const char *const *labels, const uint64_t *bounds, int nbounds,
				   unsigned int digits);
void prom_set_max_series(struct prom_family *f, unsigned int max);
/* Updates of a label set that found its family full (max_series, none
 * idle long enough to make room) and went to the overflow series: of
 * one family, and of every family of r (*name, when not NULL: the first
 * such family's name, or NULL). */
uint64_t prom_family_folded(const struct prom_family *f);
uint64_t prom_reg_folded(const struct prom_reg *r, const char **name);
/* Number of series (the overflow series included). */
unsigned int prom_series_count(const struct prom_family *f);
/* Drops every series, the overflow one too: for families a tool sets in
 * full each interval from what exists now (gauges of cgroups, totals the
 * kernel keeps per cgroup), so that a cgroup gone is no longer exported. */
void prom_family_clear(struct prom_family *f);

/* values: one per label name; NULL means "". */
void prom_counter_add(struct prom_family *f, const char *const *values, uint64_t v);
/* For totals kept elsewhere (e.g. the BPF lost counters). */
void prom_counter_set(struct prom_family *f, const char *const *values, uint64_t v);
void prom_gauge_set(struct prom_family *f, const char *const *values, double v);
void prom_hist_add(struct prom_family *f, const char *const *values, const struct hist *h);

/* Bounds 2^k - 1 for k = lo..hi, the power-of-two edges of the log-linear
 * buckets (2^10 - 1 ns is about 1 us). Returns how many were written. */
int prom_log2_bounds(uint64_t *out, int max, unsigned int lo, unsigned int hi);

/* The exposition text: HELP and TYPE once per family, its samples
 * together, families in registration order. */
int prom_write(const struct prom_reg *r, FILE *f);
/* The same into a malloc'd buffer (NULL on ENOMEM). */
char *prom_render(const struct prom_reg *r, size_t *len);
/* Writes a new path.tmp.XXXXXX (O_EXCL, mode 0644) in the same directory,
 * then renames it over path, so a reader (node_exporter) never sees half a
 * file and no planted link is followed. 0 or -errno. */
#define PROM_TMP_SUFFIX	".tmp.XXXXXX"
int prom_write_file(const char *path, const char *text, size_t len);

/* Escapes, exposed for the tests: label values escape \ " and newline,
 * HELP text \ and newline; invalid UTF-8 bytes become U+FFFD. */
void prom_write_label_value(FILE *f, const char *s);
void prom_write_help(FILE *f, const char *s);
bool prom_valid_metric_name(const char *s);
bool prom_valid_label_name(const char *s);
/* The label names this file writes itself: a histogram's le, an overflow
 * series' overflow; no family may have them. */
bool prom_own_label(const char *s);
/* "0.000001023" for 1023 with 9 digits: exact, no trailing zeros */
void prom_fmt_scaled(char *buf, size_t len, uint64_t v, unsigned int digits);

/* ---- GET /metrics over HTTP/1.1, without threads ---- */

/*
 * Slow and idle clients cannot starve a scrape: the kernel hands a
 * connection to accept() only once it sent its first bytes or after
 * PROM_HTTP_REQ_TIMEOUT_NS (TCP_DEFER_ACCEPT); its request must then be
 * complete PROM_HTTP_REQ_TIMEOUT_NS after it was accepted, its answer sent
 * within PROM_HTTP_TIMEOUT_NS; a request there at accept is answered at
 * once; and when every slot is taken a new connection takes the slot of
 * the oldest one that is done or still has no complete request (one whose
 * answer is being sent only after those). PROM_HTTP_BACKLOG bounds the
 * kernel's queues of connections not yet accepted.
 */
#define PROM_HTTP_MAX_CONNS	32
#define PROM_HTTP_BACKLOG	1024
#define PROM_HTTP_REQ_MAX	4096
#define PROM_HTTP_REQ_TIMEOUT_NS	(2ULL * 1000000000ULL)
#define PROM_HTTP_TIMEOUT_NS	(10ULL * 1000000000ULL)
/* how often the tool's loop calls prom_http_sweep() */
#define PROM_HTTP_SWEEP_NS	(250ULL * 1000000ULL)

struct prom_http_conn {
	int fd;				/* -1: free slot */
	uint64_t accepted_ns;
	uint64_t deadline_ns;
	size_t rlen;
	char req[PROM_HTTP_REQ_MAX];
	char *out;			/* response being sent; after it, a 1-byte marker */
	size_t olen, ooff;
};

struct prom_http {
	int lfd;
	int ep;
	uint64_t tag;			/* epoll tags: tag (listen), tag + 1 + slot */
	char addr[80];			/* "127.0.0.1:9100", "[::1]:9100" as bound */
	char *body;			/* the latest exposition */
	size_t blen;
	struct prom_http_conn conns[PROM_HTTP_MAX_CONNS];
	uint64_t now_ns;		/* of the event being handled */
	uint64_t served;		/* 200 answers */
	uint64_t evicted;		/* connections closed to make room */
	uint64_t timed_out;		/* closed at their deadline */
};

/* ADDR:PORT, [V6]:PORT, :PORT or PORT (loopback); port 0 picks a free one
 * (s->addr tells which). 0, or -errno with a message in err. */
int prom_http_listen(struct prom_http *s, const char *spec, char *err, size_t errlen);
/* Registers the listening socket with ep; connections come and go under
 * tags above tag. */
int prom_http_attach(struct prom_http *s, int ep, uint64_t tag);
bool prom_http_owns(const struct prom_http *s, uint64_t tag);
/* One epoll event for a tag it owns; now_ns for deadlines. */
void prom_http_event(struct prom_http *s, uint64_t tag, uint32_t events, uint64_t now_ns);
/* Closes connections past their deadline (slow or stuck clients). */
void prom_http_sweep(struct prom_http *s, uint64_t now_ns);
/* The body served from now on (copied). */
int prom_http_set_body(struct prom_http *s, const char *body, size_t len);
void prom_http_close(struct prom_http *s);
/* Open connections, for tests. */
int prom_http_nconns(const struct prom_http *s);

#endif
