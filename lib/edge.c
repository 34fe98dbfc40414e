// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include "edge.h"
#include "metrics.h"
#include "run.h"
#include "util.h"

#define EDGE_DEFAULT_MAX	(1U << 20)
#define EDGE_MIN_BUCKETS	64

struct edge_table {
	struct edge **b;	/* chained buckets */
	uint32_t nb;		/* power of two */
	uint32_t n;
	uint32_t max;
	uint64_t dropped;
};

struct edge_table *edges_new(uint32_t max_edges)
{
	struct edge_table *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->nb = EDGE_MIN_BUCKETS;
	t->b = calloc(t->nb, sizeof(*t->b));
	if (!t->b) {
		free(t);
		return NULL;
	}
	t->max = max_edges ? max_edges : EDGE_DEFAULT_MAX;
	return t;
}

static void edge_free(struct edge *e)
{
	free(e->kind);
	free(e->channel);
	free(e->src_endpoint);
	free(e->dst_endpoint);
	free(e);
}

void edges_free(struct edge_table *t)
{
	struct edge *e, *next;
	uint32_t i;

	if (!t)
		return;
	for (i = 0; i < t->nb; i++) {
		for (e = t->b[i]; e; e = next) {
			next = e->next;
			edge_free(e);
		}
	}
	free(t->b);
	free(t);
}

/* FNV-1a, with a separator so that ("ab","c") and ("a","bc") differ */
static uint64_t fnv_str(uint64_t h, const char *s)
{
	if (s)
		h = fnv1a(h, s, strlen(s) + 1);
	else
		h = fnv1a(h, "\xff", 1);	/* NULL differs from "" */
	return h;
}

/* A side is keyed by whether it is a process, its pid and its endpoint. */
static uint64_t side_hash(uint64_t h, const struct edge_side *s)
{
	uint32_t pid = s->id ? s->id->pid : 0;
	unsigned char proc = s->id != NULL;

	h = fnv1a(h, &proc, 1);
	h = fnv1a(h, &pid, sizeof(pid));
	return fnv_str(h, s->endpoint);
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return !strcmp(a, b);
}

static bool side_eq(bool proc, const struct aiscope_ident *id, const char *ep,
		    const struct edge_side *s)
{
	if (proc != (s->id != NULL))
		return false;
	if (proc && id->pid != s->id->pid)
		return false;
	return str_eq(ep, s->endpoint);
}

static bool edge_match(const struct edge *e, uint64_t h, const char *kind, const char *channel,
		       const struct edge_side *src, const struct edge_side *dst)
{
	return e->hash == h && str_eq(e->kind, kind) && str_eq(e->channel, channel) &&
	       side_eq(e->src_proc, &e->src_id, e->src_endpoint, src) &&
	       side_eq(e->dst_proc, &e->dst_id, e->dst_endpoint, dst);
}

static int grow(struct edge_table *t)
{
	uint32_t nb = t->nb * 2, i;
	struct edge **b = calloc(nb, sizeof(*b));
	struct edge *e, *next;

	if (!b)
		return -ENOMEM;
	for (i = 0; i < t->nb; i++) {
		for (e = t->b[i]; e; e = next) {
			next = e->next;
			e->next = b[e->hash & (nb - 1)];
			b[e->hash & (nb - 1)] = e;
		}
	}
	free(t->b);
	t->b = b;
	t->nb = nb;
	return 0;
}

static char *dup_or_null(const char *s, bool *fail)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		*fail = true;
	return d;
}

static struct edge *edge_new(uint64_t h, const char *kind, const char *channel,
			     const struct edge_side *src, const struct edge_side *dst)
{
	struct edge *e = calloc(1, sizeof(*e));
	bool fail = false;

	if (!e)
		return NULL;
	e->hash = h;
	e->kind = dup_or_null(kind ? kind : "", &fail);
	e->channel = dup_or_null(channel ? channel : "", &fail);
	e->src_endpoint = dup_or_null(src->endpoint, &fail);
	e->dst_endpoint = dup_or_null(dst->endpoint, &fail);
	if (fail) {
		edge_free(e);
		return NULL;
	}
	e->src_proc = src->id != NULL;
	e->dst_proc = dst->id != NULL;
	return e;
}

struct edge *edge_get(struct edge_table *t, const char *kind, const char *channel,
		      const struct edge_side *src, const struct edge_side *dst)
{
	uint64_t h = FNV1A_INIT;
	struct edge *e;

	kind = kind ? kind : "";
	channel = channel ? channel : "";
	h = fnv_str(h, kind);
	h = fnv_str(h, channel);
	h = side_hash(h, src);
	h = side_hash(h, dst);
	for (e = t->b[h & (t->nb - 1)]; e; e = e->next) {
		if (edge_match(e, h, kind, channel, src, dst))
			goto found;
	}
	if (t->n >= t->max) {
		t->dropped++;
		return NULL;
	}
	if (t->n >= t->nb && grow(t))
		return NULL;
	e = edge_new(h, kind, channel, src, dst);
	if (!e)
		return NULL;
	e->next = t->b[h & (t->nb - 1)];
	t->b[h & (t->nb - 1)] = e;
	t->n++;
found:
	/* the latest identity wins: a comm changed by exec or prctl */
	if (src->id)
		e->src_id = *src->id;
	if (dst->id)
		e->dst_id = *dst->id;
	return e;
}

static void stamp(struct edge *e, uint64_t ts)
{
	if (!e->first_ns || ts < e->first_ns)
		e->first_ns = ts;
	if (ts > e->last_ns)
		e->last_ns = ts;
}

struct edge *edge_add(struct edge_table *t, const char *kind, const char *channel,
		      const struct edge_side *src, const struct edge_side *dst,
		      uint64_t bytes, uint64_t msgs, uint64_t ts)
{
	struct edge *e = edge_get(t, kind, channel, src, dst);

	if (!e)
		return NULL;
	e->bytes += bytes;
	e->msgs += msgs;
	stamp(e, ts);
	return e;
}

struct edge *edge_add_read(struct edge_table *t, const char *kind, const char *channel,
			   const struct edge_side *src, const struct edge_side *dst,
			   uint64_t bytes, uint64_t ts)
{
	struct edge *e = edge_get(t, kind, channel, src, dst);

	if (!e)
		return NULL;
	e->read_bytes += bytes;
	e->read_known = true;
	stamp(e, ts);
	return e;
}

uint32_t edges_count(const struct edge_table *t)
{
	return t->n;
}

uint64_t edges_dropped(const struct edge_table *t)
{
	return t->dropped;
}

static int edge_cmp(const void *pa, const void *pb)
{
	const struct edge *a = *(const struct edge * const *)pa;
	const struct edge *b = *(const struct edge * const *)pb;
	int c;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	c = strcmp(a->kind, b->kind);
	if (c)
		return c;
	c = strcmp(a->channel, b->channel);
	if (c)
		return c;
	if (a->first_ns != b->first_ns)
		return a->first_ns < b->first_ns ? -1 : 1;
	return 0;
}

void edges_each(struct edge_table *t, void (*fn)(struct edge *e, void *ctx), void *ctx)
{
	struct edge **v, *e;
	uint32_t i, n = 0;

	if (!t->n)
		return;
	v = malloc(t->n * sizeof(*v));
	if (!v) {
		/* unsorted rather than nothing */
		for (i = 0; i < t->nb; i++)
			for (e = t->b[i]; e; e = e->next)
				fn(e, ctx);
		return;
	}
	for (i = 0; i < t->nb; i++)
		for (e = t->b[i]; e; e = e->next)
			v[n++] = e;
	sort_array(v, n, sizeof(*v), edge_cmp);
	for (i = 0; i < n; i++)
		fn(v[i], ctx);
	free(v);
}

void edge_side_json(struct jw *w, bool proc, const struct aiscope_ident *id,
		    const char *endpoint)
{
	jw_obj_begin(w);
	if (proc)
		aiscope_ident_json(w, id, false);
	else	/* an endpoint: the identity block, all null */
		aiscope_identity_json(w, &(struct aiscope_identity){ 0 });
	jw_kstr(w, "endpoint", endpoint);
	jw_obj_end(w);
}

struct json_ctx {
	struct jw *w;
	const char *tool;
	edge_extra_fn extra;
	void *ctx;
	uint32_t lines;
};

static void edge_json(struct edge *e, void *p)
{
	struct json_ctx *c = p;
	struct jw *w = c->w;

	jw_record_begin(w, "edge", c->tool, aiscope_now_realtime());	/* written at exit */
	jw_kstr(w, "kind", e->kind);
	jw_kstr(w, "channel", e->channel);
	jw_key(w, "src");
	edge_side_json(w, e->src_proc, &e->src_id, e->src_endpoint);
	jw_key(w, "dst");
	edge_side_json(w, e->dst_proc, &e->dst_id, e->dst_endpoint);
	jw_ku64(w, "bytes", e->bytes);
	jw_ku64(w, "msgs", e->msgs);
	jw_ku64_or_null(w, "read_bytes", e->read_known, e->read_bytes);
	jw_kts(w, "first_ts", e->first_ns);
	jw_kts(w, "last_ts", e->last_ns);
	if (e->readers)
		jw_ku64(w, "readers", e->readers);
	if (c->extra)
		c->extra(w, e, c->ctx);
	jw_record_end(w);
	c->lines++;
}

uint32_t edges_json(struct edge_table *t, struct jw *w, const char *tool,
		    edge_extra_fn extra, void *ctx)
{
	struct json_ctx c = { .w = w, .tool = tool, .extra = extra, .ctx = ctx };

	edges_each(t, edge_json, &c);
	return c.lines;
}

/* ---- Prometheus: the run's top edges by bytes ---- */

enum { EL_HOST, EL_KIND, EL_CHANNEL, EL_SRC, EL_DST = EL_SRC + 4, EL_N = EL_DST + 4 };

AISCOPE_METRIC_LABELS(edge_labels, "host", "kind", "channel",
		      "src_pid", "src_comm", "src_container", "src_endpoint",
		      "dst_pid", "dst_comm", "dst_container", "dst_endpoint", NULL);
AISCOPE_METRIC_LABELS(edge_no_labels, NULL);

static struct prom_family *edge_family(const char *tool, const char *what, bool counter,
				       const char *help, const char *const *labels)
{
	char name[128];

	snprintf(name, sizeof(name), "aiscope_%s_%s", tool, what);
	return counter ? aiscope_metric_counter(name, help, labels)
		       : aiscope_metric_gauge(name, help, labels);
}

void edge_metrics_init(struct edge_metrics *m, const char *tool)
{
	memset(m, 0, sizeof(*m));
	if (!aiscope_metrics())
		return;
	m->top = aiscope_test_cap("EDGE_METRICS_TOP", EDGE_METRICS_TOP);
	m->bytes = edge_family(tool, "edge_bytes_total", true,
		"Bytes the source process sent or wrote towards the destination during the run, per edge of the run's graph (the JSON edge line's bytes); the edges with the most bytes only.",
		edge_labels);
	m->msgs = edge_family(tool, "edge_messages_total", true,
		"Calls that carried an edge's bytes during the run (the edge line's msgs).",
		edge_labels);
	m->read_bytes = edge_family(tool, "edge_read_bytes_total", true,
		"Bytes the destination process read of an edge during the run (the edge line's read_bytes), where they are known.",
		edge_labels);
	m->edges = edge_family(tool, "edges", false,
		"Edges of the run's graph now, exported or not.", edge_no_labels);
	m->omitted = edge_family(tool, "edges_omitted", false,
		"Edges of the run left out of the edge series: past the edges with the most bytes, or not kept by the edge table.",
		edge_no_labels);
}

bool edge_metrics_on(const struct edge_metrics *m)
{
	return m->bytes != NULL;
}

struct edge_series {
	struct edge_metrics *m;
	uint32_t i;
	const char *host;
};

/* pid, comm, container, endpoint of a side; "" for what it has not */
static void side_values(const char **v, bool proc, const struct aiscope_ident *id,
			const char *endpoint, char *pid, size_t pidlen, char *ctr, size_t ctrlen)
{
	const char *cv[AISCOPE_CGROUP_NLABELS];
	struct container_info ci;

	*pid = *ctr = 0;
	v[0] = v[1] = v[2] = "";
	v[3] = endpoint ? endpoint : "";
	if (!proc)
		return;
	snprintf(pid, pidlen, "%u", id->pid);
	v[0] = pid;
	v[1] = id->comm;
	/* the container's name, as the cgroup labels have it: copied, the
	 * next lookup reuses its strings */
	aiscope_cgroup_values(id, cv, &ci);
	snprintf(ctr, ctrlen, "%s", cv[5] ? cv[5] : "");
	v[2] = ctr;
}

static void edge_series_set(struct edge *e, void *ctx)
{
	struct edge_series *c = ctx;
	const char *v[EL_N];
	char spid[16], dpid[16], sctr[256], dctr[256];

	if (c->i++ >= c->m->top)
		return;
	v[EL_HOST] = c->host;
	v[EL_KIND] = e->kind;
	v[EL_CHANNEL] = e->channel;
	side_values(v + EL_SRC, e->src_proc, &e->src_id, e->src_endpoint, spid, sizeof(spid),
		    sctr, sizeof(sctr));
	side_values(v + EL_DST, e->dst_proc, &e->dst_id, e->dst_endpoint, dpid, sizeof(dpid),
		    dctr, sizeof(dctr));
	prom_counter_set(c->m->bytes, v, e->bytes);
	prom_counter_set(c->m->msgs, v, e->msgs);
	if (e->read_known)
		prom_counter_set(c->m->read_bytes, v, e->read_bytes);
}

void edge_metrics_set(struct edge_metrics *m, struct edge_table *t)
{
	struct edge_series c = { .m = m, .host = jw_host() ? jw_host() : "" };
	uint64_t all = edges_count(t) + edges_dropped(t);

	if (!edge_metrics_on(m))
		return;
	/* the series are this interval's top: an edge that left it (or the
	 * run's table) is no longer exported */
	prom_family_clear(m->bytes);
	prom_family_clear(m->msgs);
	prom_family_clear(m->read_bytes);
	edges_each(t, edge_series_set, &c);
	prom_gauge_set(m->edges, edge_no_labels, all);
	prom_gauge_set(m->omitted, edge_no_labels, all - (c.i < m->top ? c.i : m->top));
}

void edge_metrics_of(struct edge_metrics *m, struct edge_table *(*build)(void))
{
	struct edge_table *t;

	if (!edge_metrics_on(m))
		return;
	t = build();
	edge_metrics_set(m, t);
	edges_free(t);
}
