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

static char *node_key(const struct node *n);

/* a process's key: its pid, on its host when the lines named one (pids
 * of two hosts are two processes) */
static void proc_key(const char *host, uint32_t pid, char *key, size_t len)
{
	if (host && many_hosts())
		snprintf(key, len, "p:%u@%s", pid, host);
	else
		snprintf(key, len, "p:%u", pid);
}

struct node *proc_node_on(const char *host, uint32_t pid)
{
	char key[128];
	struct node *n;

	proc_key(host, pid, key, sizeof(key));
	n = node_get(N_PROC, key);
	n->pid = pid;
	if (host)
		n->host = host;	/* a line that named none leaves it */
	return n;
}

struct node *proc_node(uint32_t pid)
{
	return proc_node_on(G.line_host, pid);
}

/* a node's key in G.nodes: a process's as proc_key, an endpoint's or an
 * unseen reader's on its host once there are several */
static char *node_key(const struct node *n)
{
	const char *h = many_hosts() ? n->host : NULL;
	char key[128];

	switch (n->kind) {
	case N_PROC:
		proc_key(n->host, n->pid, key, sizeof(key));
		return xstrdup(key);
	case N_ENDPOINT:
		return h ? xasprintf("e:%s@%s", n->endpoint, h) : xasprintf("e:%s", n->endpoint);
	default:
		return h ? xasprintf("u:%s:%s@%s", n->ukind, n->endpoint, h) :
			   xasprintf("u:%s:%s", n->ukind, n->endpoint);
	}
}

static char *edge_key(const char *kind, const char *channel, const struct node *src,
		      const struct node *dst)
{
	return xasprintf("%s\x1f%s\x1f%s\x1f%s", kind, channel, src->key, dst->key);
}

/* A second host: the keys so far named none (one host's graph keys its
 * processes by pid alone), now each node's names its host, and the edges'
 * keys follow their nodes'. Lines that named no host stay host-less. */
static void rekey(void)
{
	memset(G.nodes, 0, sizeof(G.nodes));
	memset(G.edges, 0, sizeof(G.edges));
	for (size_t i = 0; i < G.nn; i++) {
		struct node *n = G.nv[i];
		uint32_t h;

		free(n->key);
		n->key = node_key(n);
		h = hash_str(n->key);
		n->hnext = G.nodes[h];
		G.nodes[h] = n;
	}
	for (size_t i = 0; i < G.ne; i++) {
		struct gedge *e = G.ev[i];
		uint32_t h;

		free(e->key);
		e->key = edge_key(e->kind, e->channel, e->src, e->dst);
		h = hash_str(e->key);
		e->hnext = G.edges[h];
		G.edges[h] = e;
	}
}

/* The host of the line read now: its "host", kept once in G.hosts. A live
 * capture is this host's alone, its nodes keyed as they always were. */
void line_host(const char *host)
{
	size_t i;

	G.line_host = NULL;
	if (!host || !*host || cfg.live)
		return;
	for (i = 0; i < G.nhosts; i++)
		if (!strcmp(G.hosts[i], host))
			break;
	if (i == G.nhosts) {
		G.hosts = aiscope_grow(G.hosts, &G.hosts_cap, G.nhosts, sizeof(*G.hosts));
		G.hosts[G.nhosts++] = xstrdup(host);
		if (G.nhosts == 2)
			rekey();
	}
	G.line_host = G.hosts[i];
}

/* the outputs name the hosts only when there are several: one host's
 * graph reads as it always did */
bool many_hosts(void)
{
	return G.nhosts > 1;
}

/*
 * ADDR:PORT of an address that names a different thing on every host:
 * loopback (127.0.0.0/8, ::1), link-local (169.254.0.0/16, fe80::/10),
 * the wildcard, or no address ("*"). Never joined across hosts.
 */
bool addr_local(const char *ep)
{
	static const char *const local[] = { "127.", "[::1]", "169.254.", "[fe8", "[fe9", "[fea",
					     "[feb", "[FE8", "[FE9", "[FEA", "[FEB", "0.0.0.0:",
					     "[::]", "*" };

	if (!ep)
		return true;
	for (size_t i = 0; i < ARRAY_SIZE(local); i++)
		if (!strncmp(ep, local[i], strlen(local[i])))
			return true;
	return false;
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
	/* a remote address is one node whichever host saw it; a loopback
	 * one, or a reader never seen, is its host's */
	struct node proto = { .kind = ep && *ep ? N_ENDPOINT : N_UNSEEN, .host = G.line_host,
			      .endpoint = (char *)(ep && *ep ? ep : channel), .ukind = (char *)kind };

	if (proto.kind == N_ENDPOINT && !addr_local(ep))
		proto.host = NULL;
	key = node_key(&proto);
	n = node_get(proto.kind, key);
	set_str(&n->endpoint, proto.endpoint);
	if (proto.kind == N_UNSEEN)
		set_str(&n->ukind, kind);
	if (proto.host)
		n->host = proto.host;
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
	char *key = edge_key(kind, channel, src, dst);
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

struct node *node_find_pid(const char *host, uint32_t pid)
{
	char key[128];
	struct node *n;

	proc_key(host, pid, key, sizeof(key));
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

/* ---- what a host's rows say of the host ---- */

const struct host_ctx *host_ctx_find(const char *host)
{
	for (size_t i = 0; i < G.nhctx; i++)
		if (!strcmp(G.hctx[i].host, host ? host : ""))
			return &G.hctx[i];
	return NULL;
}

struct host_ctx *host_ctx_of(const char *host)
{
	struct host_ctx *h = (struct host_ctx *)host_ctx_find(host);

	if (h)
		return h;
	G.hctx = aiscope_grow(G.hctx, &G.hctx_cap, G.nhctx, sizeof(*G.hctx));
	h = &G.hctx[G.nhctx++];
	memset(h, 0, sizeof(*h));
	h->host = xstrdup(host ? host : "");
	return h;
}
