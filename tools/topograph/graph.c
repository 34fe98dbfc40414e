// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* topograph's graph: processes and endpoints (nodes), the channels between
 * them (edges), the tools that contributed, in hash tables keyed by name. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "topo.h"

const char *const node_kind_names[] = { "process", "unseen", "endpoint" };
struct graph G;

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	return p;
}

char *xstrdup(const char *s)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	return d;
}

char *xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	return s;
}

void set_str(char **dst, const char *s)
{
	if (!s || (*dst && !strcmp(*dst, s)))
		return;
	free(*dst);
	*dst = xstrdup(s);
}

static uint32_t hash_str(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h >> (32 - HBITS);
}

static struct node *node_get(enum node_kind kind, const char *key)
{
	uint32_t h = hash_str(key);
	struct node *n;

	for (n = G.nodes[h]; n; n = n->hnext)
		if (!strcmp(n->key, key))
			return n;
	n = xcalloc(1, sizeof(*n));
	n->kind = kind;
	n->key = xstrdup(key);
	n->hnext = G.nodes[h];
	G.nodes[h] = n;
	G.nv = aiscope_grow(G.nv, &G.nn_cap, G.nn, sizeof(*G.nv));
	G.nv[G.nn++] = n;
	return n;
}

struct node *proc_node(uint32_t pid)
{
	char key[32];
	struct node *n;

	snprintf(key, sizeof(key), "p:%u", pid);
	n = node_get(N_PROC, key);
	n->pid = pid;
	return n;
}

/* identity fields of a record (an edge side, a schedlat row): the latest
 * seen wins, as in lib/edge.c */
void node_ident(struct node *n, const struct jv *o)
{
	uint64_t v;

	set_str(&n->comm, jv_str(jv_get(o, "comm")));
	set_str(&n->cgroup, jv_str(jv_get(o, "cgroup")));
	set_str(&n->container_id, jv_str(jv_get(o, "container_id")));
	set_str(&n->runtime, jv_str(jv_get(o, "runtime")));
	set_str(&n->pod_uid, jv_str(jv_get(o, "pod_uid")));
	set_str(&n->ctr_name, jv_str(jv_get(o, "container_name")));
	set_str(&n->ctr_image, jv_str(jv_get(o, "container_image")));
	set_str(&n->pod_name, jv_str(jv_get(o, "pod_name")));
	set_str(&n->pod_namespace, jv_str(jv_get(o, "pod_namespace")));
	set_str(&n->k8s_container, jv_str(jv_get(o, "k8s_container")));
	if (jv_u64(jv_get(o, "cgroup_id"), &v)) {
		n->cgroup_id = v;
		n->has_cgid = true;
	}
	if (jv_u64(jv_get(o, "uid"), &v) && v <= UINT32_MAX) {
		n->uid = v;
		n->has_uid = true;
	}
}

/* An edge side: a process (pid), else an endpoint, else a reader never
 * seen of that channel (one node per channel). */
struct node *side_node(const struct jv *o, const char *kind, const char *channel)
{
	const char *ep = jv_str(jv_get(o, "endpoint"));
	char *key;
	struct node *n;
	uint64_t pid;

	if (jv_u64(jv_get(o, "pid"), &pid) && pid && pid <= UINT32_MAX) {
		n = proc_node(pid);
		node_ident(n, o);
		return n;
	}
	if (ep && *ep) {
		if (asprintf(&key, "e:%s", ep) < 0)
			aiscope_fail(EXIT_RUNTIME, "out of memory");
		n = node_get(N_ENDPOINT, key);
		set_str(&n->endpoint, ep);
	} else {
		if (asprintf(&key, "u:%s:%s", kind, channel) < 0)
			aiscope_fail(EXIT_RUNTIME, "out of memory");
		n = node_get(N_UNSEEN, key);
		set_str(&n->endpoint, channel);
	}
	free(key);
	return n;
}

struct source *source_of(const char *tool)
{
	struct source *s, **tail = &G.sources;

	for (s = G.sources; s; s = s->next) {
		if (!strcmp(s->tool, tool))
			return s;
		tail = &s->next;
	}
	s = xcalloc(1, sizeof(*s));
	s->tool = xstrdup(tool);
	*tail = s;
	return s;
}

static bool same(const char *s, const char *want)
{
	return s && !strcmp(s, want);
}

/* --container with FILEs: an id prefix, else a name the lines gave */
static bool container_matches(const struct node *n, const char *want)
{
	if (n->container_id && !strncmp(n->container_id, want, strlen(want)))
		return true;
	return same(n->ctr_name, want) || same(n->k8s_container, want);
}

/* --pod and --namespace with FILEs: the pod the lines named */
static bool pod_matches(const struct node *n)
{
	if (env.pod_arg && !same(n->pod_name, env.pod_arg))
		return false;
	return !env.namespace_arg || same(n->pod_namespace, env.namespace_arg);
}

static bool node_matches(const struct node *n)
{
	if (n->kind != N_PROC)
		return false;
	if (env.npids) {
		int i;

		for (i = 0; i < env.npids; i++)
			if (env.pids[i] == n->pid)
				break;
		if (i == env.npids)
			return false;
	}
	if (cfg.comm_arg && (!n->comm || strncmp(n->comm, env.comm, 15)))
		return false;
	if (env.container_arg && !container_matches(n, env.container_arg))
		return false;
	if (!pod_matches(n))
		return false;
	if (env.has_uid && (!n->has_uid || n->uid != env.uid))
		return false;
	return true;
}

/* Files only: the tools of a live capture filter in the kernel. A live
 * capture leaves out the pipes between topograph and its tools. */
bool edge_passes(const struct node *a, const struct node *b)
{
	if (cfg.live && (is_self(a) || is_self(b)))
		return false;
	if (cfg.live || (!env.npids && !cfg.comm_arg && !env.container_arg && !env.has_uid &&
			 !env.pod_arg && !env.namespace_arg))
		return true;
	return node_matches(a) || node_matches(b);
}

/* The edge of that kind and channel from src to dst, new (tool NULL)
 * when there was none. */
struct gedge *edge_get(const char *kind, const char *channel, struct node *src, struct node *dst)
{
	char *key = xasprintf("%s\x1f%s\x1f%s\x1f%s", kind, channel, src->key, dst->key);
	uint32_t h = hash_str(key);
	struct gedge *e;

	for (e = G.edges[h]; e; e = e->hnext)
		if (!strcmp(e->key, key)) {
			free(key);
			return e;
		}
	e = xcalloc(1, sizeof(*e));
	e->key = key;
	e->kind = xstrdup(kind);
	e->channel = xstrdup(channel);
	e->src = src;
	e->dst = dst;
	e->hnext = G.edges[h];
	G.edges[h] = e;
	G.ev = aiscope_grow(G.ev, &G.ne_cap, G.ne, sizeof(*G.ev));
	G.ev[G.ne++] = e;
	return e;
}

/* A sum of the lines' counters (bytes, messages, lost events): one that
 * would pass 2^64 - 1 stays there, and is counted in G.capped, where
 * wrapping would show a small number as if it were true. */
void sat_add(uint64_t *sum, uint64_t v)
{
	if (!__builtin_add_overflow(*sum, v, sum))
		return;
	*sum = UINT64_MAX;
	G.capped++;
}

struct node *node_find_pid(uint32_t pid)
{
	char key[32];
	struct node *n;

	snprintf(key, sizeof(key), "p:%u", pid);
	for (n = G.nodes[hash_str(key)]; n; n = n->hnext)
		if (!strcmp(n->key, key))
			return n;
	return NULL;
}

/* "2026-11-29T11:20:01.123456789Z" -> realtime ns */
bool rfc3339_ns(const char *s, uint64_t *ns)
{
	struct tm tm = { 0 };
	const char *p;
	uint64_t frac = 0, scale = NSEC_PER_SEC;
	time_t t;

	if (!s || !(p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)))
		return false;
	if (*p == '.')
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (scale > 1) {
				scale /= 10;
				frac += (*p - '0') * scale;
			}
	if (*p != 'Z')
		return false;
	t = timegm(&tm);
	if (t < 0)
		return false;
	*ns = (uint64_t)t * NSEC_PER_SEC + frac;
	return true;
}
