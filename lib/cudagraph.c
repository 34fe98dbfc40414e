// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/cudagraph.c: see cudagraph.h */
#include <stdlib.h>
#include <string.h>
#include "cudagraph.h"

enum cg_type { CG_GRAPH, CG_EXEC, CG_CAPTURE, CG_JOINED };

struct cg_obj {
	struct cg_obj *next;
	uint32_t pid;
	uint8_t type;
	bool partial;		/* some nodes are not known or not kept */
	uint64_t handle;
	uint64_t ref;		/* capture: the graph captured into; joined: the origin */
	struct cg_node *nodes;
	size_t n, cap;
};

#define CG_BUCKETS 4096

struct cg_store {
	struct cg_obj *b[CG_BUCKETS];
	size_t entries, max_entries, objects;
	uint64_t dropped, unknown;
};

struct cg_store *cg_new(size_t max_entries)
{
	struct cg_store *s = calloc(1, sizeof(*s));

	if (s)
		s->max_entries = max_entries ? max_entries : 1 << 20;
	return s;
}

static unsigned int bucket(uint32_t pid, uint8_t type, uint64_t handle)
{
	uint64_t h = (handle ^ ((uint64_t)pid << 32) ^ type) * 0x9e3779b97f4a7c15ULL;

	return h >> 52;		/* 12 bits: CG_BUCKETS */
}

static struct cg_obj **slot(const struct cg_store *s, uint32_t pid, uint8_t type,
			    uint64_t handle)
{
	struct cg_obj **p = (struct cg_obj **)&s->b[bucket(pid, type, handle)];

	for (; *p; p = &(*p)->next)
		if ((*p)->pid == pid && (*p)->type == type && (*p)->handle == handle)
			break;
	return p;
}

static struct cg_obj *find(const struct cg_store *s, uint32_t pid, uint8_t type, uint64_t handle)
{
	return *slot(s, pid, type, handle);
}

/* the object, made empty if it was not there (*made says so); NULL only
 * without memory */
static struct cg_obj *get(struct cg_store *s, uint32_t pid, uint8_t type, uint64_t handle,
			  bool *made)
{
	struct cg_obj **p = slot(s, pid, type, handle);

	if (made)
		*made = !*p;
	if (*p)
		return *p;
	*p = calloc(1, sizeof(**p));
	if (!*p)
		return NULL;
	(*p)->pid = pid;
	(*p)->type = type;
	(*p)->handle = handle;
	s->objects++;
	return *p;
}

static void clear(struct cg_store *s, struct cg_obj *o)
{
	s->entries -= o->n;
	o->n = 0;
	o->partial = false;
}

static void unlink_obj(struct cg_store *s, struct cg_obj **p)
{
	struct cg_obj *o = *p;

	*p = o->next;
	s->entries -= o->n;
	s->objects--;
	free(o->nodes);
	free(o);
}

static bool same_node(const struct cg_node *a, const struct cg_node *b)
{
	return a->func == b->func && a->layer == b->layer && a->smem == b->smem &&
	       !memcmp(a->grid, b->grid, sizeof(a->grid)) &&
	       !memcmp(a->block, b->block, sizeof(a->block));
}

static void add(struct cg_store *s, struct cg_obj *o, const struct cg_node *n, uint64_t times)
{
	uint64_t c = (n->count ? n->count : 1) * times;
	struct cg_node *e;

	for (size_t i = 0; i < o->n; i++) {
		if (same_node(&o->nodes[i], n)) {
			o->nodes[i].count += c;
			return;
		}
	}
	if (s->entries >= s->max_entries)
		goto drop;
	if (o->n == o->cap) {
		size_t cap = o->cap ? o->cap * 2 : 8;

		e = realloc(o->nodes, cap * sizeof(*e));
		if (!e)
			goto drop;
		o->nodes = e;
		o->cap = cap;
	}
	o->nodes[o->n] = *n;
	o->nodes[o->n++].count = c;
	s->entries++;
	return;
drop:
	s->dropped++;
	o->partial = true;
}

/* dst gets src's nodes as they are now; an unknown src leaves dst partial */
static void add_all(struct cg_store *s, struct cg_obj *dst, const struct cg_obj *src)
{
	if (!dst)
		return;
	if (!src) {
		s->unknown++;
		dst->partial = true;
		return;
	}
	/* src's array may move when dst is src: never the case for CUDA's
	 * calls (no graph is its own child), but index, do not hold */
	for (size_t i = 0, n = src->n; i < n; i++) {
		struct cg_node copy = src->nodes[i];

		add(s, dst, &copy, 1);
	}
	dst->partial |= src->partial;
}

/* a graph or capture a call adds to: one made before the model saw it
 * (made now) lacks the nodes it had then */
static struct cg_obj *added_to(struct cg_store *s, uint32_t pid, uint8_t type, uint64_t handle)
{
	bool made;
	struct cg_obj *o = get(s, pid, type, handle, &made);

	if (o && made) {
		o->partial = true;
		s->unknown++;
	}
	return o;
}

static struct cg_obj *graph_of(struct cg_store *s, uint32_t pid, uint64_t graph)
{
	return added_to(s, pid, CG_GRAPH, graph);
}

void cg_create(struct cg_store *s, uint32_t pid, uint64_t graph)
{
	struct cg_obj *g = get(s, pid, CG_GRAPH, graph, NULL);

	if (g)
		clear(s, g);
}

void cg_node(struct cg_store *s, uint32_t pid, uint64_t graph, const struct cg_node *n)
{
	struct cg_obj *g = graph_of(s, pid, graph);

	if (g)
		add(s, g, n, 1);
}

void cg_child(struct cg_store *s, uint32_t pid, uint64_t graph, uint64_t child)
{
	add_all(s, graph_of(s, pid, graph), find(s, pid, CG_GRAPH, child));
}

void cg_clone(struct cg_store *s, uint32_t pid, uint64_t clone, uint64_t orig)
{
	struct cg_obj *c = get(s, pid, CG_GRAPH, clone, NULL);

	if (!c)
		return;
	clear(s, c);
	add_all(s, c, find(s, pid, CG_GRAPH, orig));
}

void cg_begin(struct cg_store *s, uint32_t pid, uint64_t stream, uint64_t into)
{
	struct cg_obj *c = get(s, pid, CG_CAPTURE, stream, NULL);

	if (!c)
		return;
	clear(s, c);
	c->ref = into;
}

/* a capture the model did not see begin is partial */
static struct cg_obj *capture_of(struct cg_store *s, uint32_t pid, uint64_t origin)
{
	return added_to(s, pid, CG_CAPTURE, origin);
}

void cg_captured(struct cg_store *s, uint32_t pid, uint64_t origin, const struct cg_node *n)
{
	struct cg_obj *c = capture_of(s, pid, origin);

	if (c)
		add(s, c, n, 1);
}

void cg_captured_exec(struct cg_store *s, uint32_t pid, uint64_t origin, uint64_t exec)
{
	add_all(s, capture_of(s, pid, origin), find(s, pid, CG_EXEC, exec));
}

void cg_join(struct cg_store *s, uint32_t pid, uint64_t stream, uint64_t origin)
{
	struct cg_obj *j = get(s, pid, CG_JOINED, stream, NULL);

	if (j)
		j->ref = origin;
}

void cg_end(struct cg_store *s, uint32_t pid, uint64_t origin, uint64_t graph,
	    void (*unjoin)(uint32_t pid, uint64_t stream, void *ctx), void *ctx)
{
	struct cg_obj **cp = slot(s, pid, CG_CAPTURE, origin);
	struct cg_obj *c = *cp, *g;

	if (graph) {
		bool into = c && c->ref == graph;

		/* a new graph, unless the capture was into this one */
		g = into ? graph_of(s, pid, graph) : get(s, pid, CG_GRAPH, graph, NULL);
		if (g && !into)
			clear(s, g);
		add_all(s, g, c);
	}
	if (c)
		unlink_obj(s, cp);
	for (size_t b = 0; b < CG_BUCKETS; b++) {
		for (struct cg_obj **p = &s->b[b]; *p;) {
			if ((*p)->pid != pid || (*p)->type != CG_JOINED || (*p)->ref != origin) {
				p = &(*p)->next;
				continue;
			}
			if (unjoin)
				unjoin(pid, (*p)->handle, ctx);
			unlink_obj(s, p);
		}
	}
}

void cg_instantiate(struct cg_store *s, uint32_t pid, uint64_t graph, uint64_t exec)
{
	struct cg_obj *g = find(s, pid, CG_GRAPH, graph), *x;
	struct cg_obj **xp = slot(s, pid, CG_EXEC, exec);

	/* an instance of a graph made before the model: not known, so that
	 * its launches are not counted as kernels they may not be */
	if (!g) {
		s->unknown++;
		if (*xp)
			unlink_obj(s, xp);
		return;
	}
	x = get(s, pid, CG_EXEC, exec, NULL);
	if (!x)
		return;
	clear(s, x);
	add_all(s, x, g);
}

const struct cg_node *cg_exec_nodes(const struct cg_store *s, uint32_t pid, uint64_t exec,
				    size_t *n, bool *partial)
{
	const struct cg_obj *x = find(s, pid, CG_EXEC, exec);

	if (!x)
		return NULL;
	*n = x->n;
	if (partial)
		*partial = x->partial;
	return x->nodes ? x->nodes : (const struct cg_node *)"";
}

void cg_prune(struct cg_store *s, bool (*alive)(uint32_t pid),
	      void (*gone_capture)(uint32_t pid, uint64_t stream, bool origin, void *ctx),
	      void *ctx)
{
	for (size_t b = 0; b < CG_BUCKETS; b++) {
		for (struct cg_obj **p = &s->b[b]; *p;) {
			struct cg_obj *o = *p;

			if (alive(o->pid)) {
				p = &o->next;
				continue;
			}
			if (gone_capture && (o->type == CG_CAPTURE || o->type == CG_JOINED))
				gone_capture(o->pid, o->handle, o->type == CG_CAPTURE, ctx);
			unlink_obj(s, p);
		}
	}
}

void cg_free(struct cg_store *s)
{
	if (!s)
		return;
	for (size_t b = 0; b < CG_BUCKETS; b++)
		while (s->b[b])
			unlink_obj(s, &s->b[b]);
	free(s);
}

uint64_t cg_dropped(const struct cg_store *s)
{
	return s->dropped;
}

uint64_t cg_unknown(const struct cg_store *s)
{
	return s->unknown;
}

size_t cg_objects(const struct cg_store *s)
{
	return s->objects;
}
