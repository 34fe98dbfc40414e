// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The graph across hosts: a flow between two hosts is seen twice, once by
 * each host's socketsnoop, each time as a process and the other end's
 * endpoint. Host A's "a:p->b:q" (what A sent, process -> endpoint b:q) and
 * host B's "a:p->b:q" (what B received, endpoint a:p -> process) are the
 * same bytes: one edge from A's process to B's. An address that names a
 * different thing on every host (loopback, link-local) is never joined, nor
 * two halves seen at times further apart than the clocks' skew allows
 * (--max-skew): captures of different moments, whose ports were reused.
 *
 * RDMA is counted where it is posted: host A's rdmasnoop has all of what
 * A's queue pair sent to endpoint GID_B/QPN_B, and B's rdmasnoop names its
 * own queue pair GID_B/QPN_B as the source endpoint of B's edges. A's edge
 * goes to B's process when exactly one process of another host owns that
 * address in time.
 */
#include <stdlib.h>
#include <string.h>
#include "topo.h"

static bool is_flow(const struct gedge *e)
{
	return !strcmp(e->kind, "tcp") || !strcmp(e->kind, "udp");
}

/* a host's process sending to an endpoint, or receiving from one */
static bool sender(const struct gedge *e)
{
	return e->src->kind == N_PROC && e->dst->kind == N_ENDPOINT && e->src->host;
}

static bool receiver(const struct gedge *e)
{
	return e->src->kind == N_ENDPOINT && e->dst->kind == N_PROC && e->dst->host;
}

static int cmp_flow(const void *a, const void *b)
{
	const struct gedge *x = *(const struct gedge *const *)a, *y = *(const struct gedge *const *)b;
	int c = strcmp(x->kind, y->kind);

	return c ? c : strcmp(x->channel, y->channel);
}

static void min_ts(char **dst, const char *s, bool max)
{
	if (s && (!*dst || (max ? strcmp(s, *dst) > 0 : strcmp(s, *dst) < 0)))
		set_str(dst, s);
}

/* s's bytes as its sender counted them, r's reads as its reader did */
static void join(struct gedge *s, struct gedge *r)
{
	struct gedge *e = edge_get(s->kind, s->channel, s->src, r->dst);

	if (!e->tool) {
		e->tool = xstrdup(s->tool);
		e->src_ep = xstrdup(s->src_ep);
		e->dst_ep = xstrdup(r->dst_ep);
	}
	sat_add(&e->bytes, s->bytes);
	sat_add(&e->msgs, s->msgs);
	if (r->read_known) {
		sat_add(&e->read_bytes, r->read_bytes);
		e->read_known = true;
	}
	e->read_missing |= r->read_missing || !r->read_known;
	if (r->readers > e->readers)
		e->readers = r->readers;
	min_ts(&e->first_ts, s->first_ts, false);
	min_ts(&e->first_ts, r->first_ts, false);
	min_ts(&e->last_ts, s->last_ts, true);
	min_ts(&e->last_ts, r->last_ts, true);
	s->id = r->id = -1;	/* replaced */
	G.joined++;
}

/* Could s and r be the two halves of one flow in time: their transfers
 * [first_ts, last_ts] overlap, give or take --max-skew (the hosts' clocks
 * differ)? Unknown times do not keep them apart. */
static bool same_time(const struct gedge *s, const struct gedge *r)
{
	uint64_t s0, s1, r0, r1, skew = cfg.max_skew_ns;

	if (!rfc3339_ns(s->first_ts, &s0) || !rfc3339_ns(s->last_ts, &s1) ||
	    !rfc3339_ns(r->first_ts, &r0) || !rfc3339_ns(r->last_ts, &r1))
		return true;
	return s0 <= r1 + skew && r0 <= s1 + skew;
}

/* One channel's edges, [i, j): each sender joins the one receiver of
 * another host at the same time, if exactly one; several are counted, not
 * guessed, and so are halves of other times. */
static void join_channel(struct gedge **v, size_t i, size_t j)
{
	for (size_t a = i; a < j; a++) {
		struct gedge *s = v[a], *r = NULL;
		int found = 0, other_time = 0;

		if (!sender(s))
			continue;
		for (size_t b = i; b < j; b++) {
			if (v[b]->id == -1 || !receiver(v[b]) || v[b]->dst->host == s->src->host)
				continue;
			if (!same_time(s, v[b])) {
				other_time++;
				continue;
			}
			r = v[b];
			found++;
		}
		if (!found) {
			G.unjoined_time += other_time > 0;
			continue;
		}
		if (addr_local(s->src_ep) || addr_local(s->dst->endpoint)) {
			G.unjoined_local++;
			continue;
		}
		if (found > 1) {
			G.unjoined_ambiguous++;
			continue;
		}
		join(s, r);
	}
}

static bool is_rdma(const struct gedge *e)
{
	return !strcmp(e->kind, "rdma");
}

/* s, an rdma edge to an endpoint, now ends at owner, the process of
 * another host whose queue pair that endpoint is */
static void join_rdma_edge(struct gedge *s, struct node *owner)
{
	struct gedge *e = edge_get(s->kind, s->channel, s->src, owner);

	if (!e->tool) {
		e->tool = xstrdup(s->tool);
		e->src_ep = xstrdup(s->src_ep);
		e->dst_ep = xstrdup(s->dst->endpoint);
	}
	sat_add(&e->bytes, s->bytes);
	sat_add(&e->msgs, s->msgs);
	min_ts(&e->first_ts, s->first_ts, false);
	min_ts(&e->last_ts, s->last_ts, true);
	s->id = -1;	/* replaced */
	G.joined++;
}

static int cmp_src_ep(const void *a, const void *b)
{
	const struct gedge *x = *(const struct gedge *const *)a, *y = *(const struct gedge *const *)b;

	return strcmp(x->src_ep, y->src_ep);
}

/* the first of by[0..n) (sorted by src_ep) whose src_ep is ep, or n */
static size_t first_of(struct gedge **by, size_t n, const char *ep)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t m = lo + (hi - lo) / 2;

		if (strcmp(by[m]->src_ep, ep) < 0)
			lo = m + 1;
		else
			hi = m;
	}
	return lo;
}

/* v[0..n): the rdma edges that a process of some host sends; each
 * endpoint's owners are found among those named by their source endpoint,
 * sorted (n log n: a cluster's capture has a few edges per queue pair) */
static void join_rdma(struct gedge **v, size_t n)
{
	struct gedge **by = xcalloc(n ? n : 1, sizeof(*by));
	size_t nby = 0;

	for (size_t a = 0; a < n; a++)
		if (v[a]->src_ep)
			by[nby++] = v[a];
	qsort(by, nby, sizeof(*by), cmp_src_ep);
	for (size_t a = 0; a < n; a++) {
		struct gedge *s = v[a];
		struct node *owner = NULL;
		int found = 0, other_time = 0;

		if (s->id == -1 || s->dst->kind != N_ENDPOINT || !s->dst->endpoint)
			continue;
		for (size_t b = first_of(by, nby, s->dst->endpoint);
		     b < nby && !strcmp(by[b]->src_ep, s->dst->endpoint); b++) {
			const struct gedge *o = by[b];

			if (o->src->host == s->src->host || o->src == owner)
				continue;
			if (!same_time(s, o)) {
				other_time++;
				continue;
			}
			owner = o->src;
			found++;
		}
		if (!found) {
			G.unjoined_time += other_time > 0;
			continue;
		}
		if (found > 1) {
			G.unjoined_ambiguous++;
			continue;
		}
		join_rdma_edge(s, owner);
	}
	free(by);
}

void join_hosts(void)
{
	struct gedge **v;
	size_t n = 0, i, j;

	if (!many_hosts())
		return;
	v = xcalloc(G.ne, sizeof(*v));
	for (i = 0; i < G.ne; i++)
		if (is_flow(G.ev[i]) && (sender(G.ev[i]) || receiver(G.ev[i])))
			v[n++] = G.ev[i];
	qsort(v, n, sizeof(*v), cmp_flow);
	for (i = 0; i < n; i = j) {
		for (j = i + 1; j < n && !cmp_flow(&v[i], &v[j]); j++)
			;
		join_channel(v, i, j);
	}
	for (i = n = 0; i < G.ne; i++)
		if (is_rdma(G.ev[i]) && G.ev[i]->src->kind == N_PROC && G.ev[i]->src->host)
			v[n++] = G.ev[i];
	join_rdma(v, n);
	free(v);
	/* the joined halves leave the graph (ids are given in analyse) */
	for (i = j = 0; i < G.ne; i++)
		if (G.ev[i]->id != -1)
			G.ev[j++] = G.ev[i];
	G.ne = j;
}
