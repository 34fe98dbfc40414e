/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The process-to-process graph of docs/edges.md: an in-memory table of
 * edges keyed by (kind, channel, src, dst) that accumulates what moved
 * during a run, and edges_json() that prints one "edge" line per entry.
 *
 *	struct edge_table *t = edges_new(0);
 *	struct edge_side a = { .id = &writer, .endpoint = "127.0.0.1:41234" };
 *	struct edge_side b = { .id = &reader, .endpoint = "127.0.0.1:5000" };
 *	edge_add(t, "tcp", "127.0.0.1:41234->127.0.0.1:5000", &a, &b, 4096, 1, ts);
 *	edge_add_read(t, "tcp", "127.0.0.1:41234->127.0.0.1:5000", &a, &b, 4096, ts);
 *	edges_json(t, &w, "socketsnoop", NULL, NULL);
 *
 * A side is a process on this host (id != NULL) or not (id == NULL: a
 * remote peer, a reader never seen); endpoint is "ADDR:PORT" for flows and
 * NULL for IPC channels. Two process sides are the same side when their
 * pid and endpoint are equal; the identity printed is the latest given.
 */
#ifndef AISCOPE_EDGE_H
#define AISCOPE_EDGE_H

#include <stdbool.h>
#include <stdint.h>
#include "aiscope_common.h"
#include "json.h"

struct edge_side {
	const struct aiscope_ident *id;	/* NULL: not a process on this host */
	const char *endpoint;		/* NULL: none (IPC) */
};

struct edge {
	char *kind;
	char *channel;
	bool src_proc, dst_proc;
	struct aiscope_ident src_id, dst_id;
	char *src_endpoint, *dst_endpoint;	/* NULL: none */
	uint64_t bytes;		/* src sent or wrote towards dst */
	uint64_t msgs;		/* the calls that carried them */
	uint64_t read_bytes;	/* dst read; valid when read_known */
	bool read_known;
	uint32_t readers;	/* >0: printed as "readers" (several readers) */
	uint64_t first_ns, last_ns;	/* realtime ns of the first/last transfer */
	void *user;		/* the tool's own data, for its extra keys */
	/* table internals */
	uint64_t hash;
	struct edge *next;
};

struct edge_table;

/* max_edges: entries kept at most (0: 1<<20); beyond it new edges are
 * counted in edges_dropped() and not stored. NULL on ENOMEM. */
struct edge_table *edges_new(uint32_t max_edges);
void edges_free(struct edge_table *t);

/* The edge of (kind, channel, src, dst), created with zero counts when it
 * is new. NULL when the table is full (counted) or memory ran out. */
struct edge *edge_get(struct edge_table *t, const char *kind, const char *channel,
		      const struct edge_side *src, const struct edge_side *dst);

/* src sent bytes in msgs calls to dst at realtime ns ts. */
struct edge *edge_add(struct edge_table *t, const char *kind, const char *channel,
		      const struct edge_side *src, const struct edge_side *dst,
		      uint64_t bytes, uint64_t msgs, uint64_t ts);
/* dst read bytes from what src sent, at realtime ns ts: read_bytes becomes
 * known (a number rather than null). */
struct edge *edge_add_read(struct edge_table *t, const char *kind, const char *channel,
			   const struct edge_side *src, const struct edge_side *dst,
			   uint64_t bytes, uint64_t ts);

uint32_t edges_count(const struct edge_table *t);
uint64_t edges_dropped(const struct edge_table *t);

/* Calls fn for each edge, most bytes first (then kind, channel). */
void edges_each(struct edge_table *t, void (*fn)(struct edge *e, void *ctx), void *ctx);

/* Writes one "edge" record per edge (docs/edges.md), most bytes first.
 * extra, if given, adds the tool's own keys to each record before it ends.
 * Returns the number of lines written. */
typedef void (*edge_extra_fn)(struct jw *w, const struct edge *e, void *ctx);
uint32_t edges_json(struct edge_table *t, struct jw *w, const char *tool,
		    edge_extra_fn extra, void *ctx);

/* One side as edges.md shows it: the identity fields of
 * aiscope_ident_json() (all null for a non-process side) and endpoint. */
void edge_side_json(struct jw *w, bool proc, const struct aiscope_ident *id,
		    const char *endpoint);

/*
 * Prometheus series of a tool's edges (docs/fleet.md "Edges"): each
 * interval the run's EDGE_METRICS_TOP edges with the most bytes, one series
 * each in aiscope_<tool>_edge_bytes_total, _edge_messages_total and
 * _edge_read_bytes_total (when the reads are known), labelled with the host,
 * kind, channel and each side's pid, comm, container and endpoint ("" for
 * what a side has not); aiscope_<tool>_edges counts the run's edges and
 * aiscope_<tool>_edges_omitted those left out of the series (past the top,
 * or not kept by the table). The values are the run's totals: an edge that
 * leaves the top and comes back keeps counting from where it was.
 *
 *	struct edge_metrics em;
 *	edge_metrics_init(&em, "socketsnoop");	// nothing without --prometheus/--listen
 *	... each interval, the run's edges in t:
 *	edge_metrics_set(&em, t);
 */
#define EDGE_METRICS_TOP	100

struct prom_family;

struct edge_metrics {
	struct prom_family *bytes, *msgs, *read_bytes, *edges, *omitted;
	uint32_t top;		/* EDGE_METRICS_TOP, or a test's AISCOPE_TEST_CAP_EDGE_METRICS_TOP */
};

void edge_metrics_init(struct edge_metrics *m, const char *tool);
bool edge_metrics_on(const struct edge_metrics *m);
void edge_metrics_set(struct edge_metrics *m, struct edge_table *t);
/* The same from the table build() makes (and this frees): nothing is
 * built without --prometheus/--listen. */
void edge_metrics_of(struct edge_metrics *m, struct edge_table *(*build)(void));

#endif
