// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* topograph's analysis: the nodes shown and their order, the edges by
 * bytes, the capture's window, and the bottleneck rules with their
 * evidence. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "topo.h"

#define BUSY_PCT	10.0	/* an edge with this share of the bytes is busy */
#define NCCL_LAG_CALLS	2	/* a rank this many calls behind its leader lags */

/* each rule's name (JSON, HTML), title (the table's evidence) and flag
 * (the table's FLAGS column), in enum rule's order: one entry each */
const char *const rule_names[] = {
	"hot_edge", "runq", "nccl_lag", "reader_behind", "exit_failed", "restarted", "numa_remote",
};
const char *const rule_titles[] = {
	"hot edge", "run queue", "NCCL lag", "reader behind", "exit failed", "restarted", "remote NUMA",
};
const char *const rule_flags[] = {
	"hot", "runq", "nccl", "behind", "exit", "restart", "numa",
};
_Static_assert(ARRAY_SIZE(rule_names) == R_NR && ARRAY_SIZE(rule_titles) == R_NR &&
	       ARRAY_SIZE(rule_flags) == R_NR, "a name, a title and a flag per rule");

/* the capture's length: measured live; from the tools' summaries for
 * files; else the span of the transfers seen */
static void find_window(void)
{
	uint64_t lo = UINT64_MAX, hi = 0, t;

	if (G.window_ns)
		return;
	for (struct source *s = G.sources; s; s = s->next)
		if (s->edges && s->duration_ns > G.window_ns)
			G.window_ns = s->duration_ns;
	if (G.window_ns)
		return;
	for (size_t i = 0; i < G.ne; i++) {
		if (rfc3339_ns(G.ev[i]->first_ts, &t) && t < lo)
			lo = t;
		if (rfc3339_ns(G.ev[i]->last_ts, &t) && t > hi)
			hi = t;
	}
	if (hi > lo)
		G.window_ns = hi - lo;
}

const char *group_of(const struct node *n)
{
	if (n->kind == N_ENDPOINT)
		return "\xff";	/* external endpoints last */
	return n->container_id ? n->container_id : "";
}

static int cmp_nodes(const void *a, const void *b)
{
	const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;
	int c;

	/* several hosts: each host's nodes together, in its name's order */
	if (many_hosts() && (x->kind == N_ENDPOINT) == (y->kind == N_ENDPOINT) &&
	    (c = strcmp(x->host ? x->host : "", y->host ? y->host : "")))
		return c;
	if ((c = strcmp(group_of(x), group_of(y))))
		return c;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (x->kind == N_PROC)
		return x->pid < y->pid ? -1 : x->pid > y->pid;
	return strcmp(x->endpoint ? x->endpoint : "", y->endpoint ? y->endpoint : "");
}

static int cmp_edges(const void *a, const void *b)
{
	const struct gedge *x = *(struct gedge *const *)a, *y = *(struct gedge *const *)b;
	int c;

	if (x->bytes != y->bytes)
		return x->bytes > y->bytes ? -1 : 1;
	if ((c = strcmp(x->kind, y->kind)) || (c = strcmp(x->channel, y->channel)))
		return c;
	if (x->src->id != y->src->id)
		return x->src->id - y->src->id;
	return x->dst->id - y->dst->id;
}

double share_pct(const struct gedge *e)
{
	return G.total_bytes ? 100.0 * e->bytes / G.total_bytes : 0;
}

bool unread_of(const struct gedge *e, uint64_t *unread)
{
	if (!e->read_known || e->read_missing)
		return false;
	*unread = e->bytes > e->read_bytes ? e->bytes - e->read_bytes : 0;
	return true;
}


static struct bottleneck *add_bn(enum rule r, struct node *n, struct gedge *e)
{
	struct bottleneck *b;

	G.bn = realloc(G.bn, (G.nbn + 1) * sizeof(*G.bn));
	if (!G.bn)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	b = &G.bn[G.nbn++];
	memset(b, 0, sizeof(*b));
	b->rule = r;
	b->node = n;
	b->edge = e;
	if (n)
		n->flags |= 1u << r;
	if (e)
		e->flags |= 1u << r;
	return b;
}

static void rule_hot_edges(void)
{
	char *el;

	for (size_t i = 0; i < G.ne; i++) {
		struct gedge *e = G.ev[i];
		struct bottleneck *b;

		if (!G.total_bytes || share_pct(e) < cfg.hot_pct)
			continue;
		b = add_bn(R_HOT, NULL, e);
		b->value = share_pct(e);
		b->threshold = cfg.hot_pct;
		b->unit = "pct";
		el = edge_label(e);
		b->evidence = xasprintf(
			 "%s carries %llu of %llu bytes (%.1f%% >= %.0f%%) in %llu messages",
			 el, (unsigned long long)e->bytes, (unsigned long long)G.total_bytes,
			 b->value, cfg.hot_pct, (unsigned long long)e->msgs);
		free(el);
	}
}

/* the busiest edge a node is on */
static struct gedge *busiest_edge(const struct node *n)
{
	for (size_t i = 0; i < G.ne; i++)	/* sorted by bytes */
		if (G.ev[i]->src == n || G.ev[i]->dst == n)
			return G.ev[i];
	return NULL;
}

static void rule_runq(void)
{
	char *el, host[64] = "";

	if (G.has_host_p99)
		snprintf(host, sizeof(host), "; host p99 %.1f ms", G.host_p99_ns / 1e6);
	for (size_t i = 0; i < G.nshown; i++) {
		struct node *n = G.shown[i];
		struct gedge *e;
		struct bottleneck *b;

		if (!n->has_runq || n->runq_p99_ns < cfg.runq_ns)
			continue;
		e = busiest_edge(n);
		if (!e || share_pct(e) < BUSY_PCT)
			continue;
		b = add_bn(R_RUNQ, n, e);
		b->value = n->runq_p99_ns;
		b->threshold = cfg.runq_ns;
		b->unit = "ns";
		el = edge_label(e);
		b->evidence = xasprintf(
			 "%u/%s waits for a CPU: run-queue p99 %.1f ms (>= %.1f ms), %llu runs waited %.1f ms in all%s; it is on %s, %.1f%% of the bytes",
			 n->pid, n->comm ? n->comm : "?", n->runq_p99_ns / 1e6, cfg.runq_ns / 1e6,
			 (unsigned long long)n->runq_runs, n->runq_wait_ns / 1e6, host, el, share_pct(e));
		free(el);
	}
}

/* "node 1" or "node ?" */
static const char *node_str(int64_t node, char *buf, size_t len)
{
	if (node < 0)
		snprintf(buf, len, "node ?");
	else
		snprintf(buf, len, "node %lld", (long long)node);
	return buf;
}

/* "CPU time on node 0, 2.0% of it on node 1" */
static void local_str(char *buf, size_t len, const char *what, int64_t on, double local,
		      const char *dev_node)
{
	char nb[32];

	if (local < 0)
		snprintf(buf, len, "%s not measured", what);
	else
		snprintf(buf, len, "%s mostly on %s, %.1f%% of it on %s", what,
			 node_str(on, nb, sizeof(nb)), local * 100, dev_node);
}

/* numaplace flagged the process REMOTE: its CPU time or its memory sits
 * mostly off the node of a GPU or NIC it has open */
static void rule_numa(void)
{
	for (size_t i = 0; i < G.nshown; i++) {
		struct node *n = G.shown[i];
		const struct numa_place *p = n->numa;
		char dn[32], cpu[128], mem[128];
		struct bottleneck *b;
		double low;

		if (!p || !p->remote_intervals)
			continue;
		b = add_bn(R_NUMA, n, busiest_edge(n));
		low = p->far.cpu_local;
		if (low < 0 || (p->far.mem_local >= 0 && p->far.mem_local < low))
			low = p->far.mem_local;
		b->value = low < 0 ? 0 : low;
		b->threshold = 0.5;
		b->unit = "ratio";
		node_str(p->far.node, dn, sizeof(dn));
		local_str(cpu, sizeof(cpu), "CPU time", p->far_cpu_node, p->far.cpu_local, dn);
		local_str(mem, sizeof(mem), "memory", p->far_mem_node, p->far.mem_local, dn);
		b->evidence = xasprintf(
			 "%u/%s is far from %s on %s: %s; %s; REMOTE in %llu of %llu intervals",
			 n->pid, n->comm ? n->comm : "?", p->far.name, dn, cpu, mem,
			 (unsigned long long)p->remote_intervals, (unsigned long long)p->intervals);
	}
}

static void rule_backlog(void)
{
	char *el;
	uint64_t unread;

	for (size_t i = 0; i < G.ne; i++) {
		struct gedge *e = G.ev[i];
		struct bottleneck *b;

		if (!unread_of(e, &unread) || unread < cfg.backlog_bytes)
			continue;
		b = add_bn(R_BACKLOG, e->dst, e);
		b->value = unread;
		b->threshold = cfg.backlog_bytes;
		b->unit = "bytes";
		el = edge_label(e);
		b->evidence = xasprintf(
			 "the reader falls behind on %s: %llu bytes written, %llu read: the backlog grew by %llu bytes during the capture (>= %llu)",
			 el, (unsigned long long)e->bytes, (unsigned long long)e->read_bytes,
			 (unsigned long long)unread, (unsigned long long)cfg.backlog_bytes);
		free(el);
	}
}

/* NCCL: per communicator, its local ranks' progress: nclstat's op sequence
 * numbers where every rank has one (its "comm" rows), else the calls
 * counted; the rank furthest behind the leader lags when it is
 * NCCL_LAG_CALLS or more behind. */
static uint64_t progress(const struct ncl_rank *r, bool seq)
{
	return seq ? r->op_seq : r->calls;
}

/* what the lagging rank's own host says of it: schedlat's and cachestat's
 * rows of its pid there, else those of the whole host (marked host-wide),
 * and numaplace's flag: "; on HOST: run-queue p99 ..., page-cache misses
 * ..., far from nvidia0 on node 1 (NUMA)", or "" */
static const char *host_evidence(const struct node *n)
{
	const struct host_ctx *h = host_ctx_find(n->host);
	bool hrunq = !n->has_runq && h && h->has_runq, hcache = !n->has_cache && h && h->has_cache;
	bool far = n->numa && n->numa->remote_intervals;
	static char buf[320];
	char dn[32];
	size_t k;

	buf[0] = 0;
	if (!n->has_runq && !n->has_cache && !hrunq && !hcache && !far)
		return buf;
	k = snprintf(buf, sizeof(buf), "; on %s:", n->host ? n->host : "its host");
	if (n->has_runq || hrunq)
		k += snprintf(buf + k, sizeof(buf) - k, " run-queue p99 %.1f ms%s,",
			      (hrunq ? h->runq_p99_ns : n->runq_p99_ns) / 1e6, hrunq ? " (host-wide)" : "");
	if (n->has_cache || hcache) {
		uint64_t misses = hcache ? h->misses : n->cache_misses;
		uint64_t hits = hcache ? h->hits : n->cache_hits;

		k += snprintf(buf + k, sizeof(buf) - k, " page-cache misses %llu", (unsigned long long)misses);
		if (hcache ? h->hits_known : n->cache_hits_known)
			k += snprintf(buf + k, sizeof(buf) - k, ", hits %llu", (unsigned long long)hits);
		k += snprintf(buf + k, sizeof(buf) - k, "%s,", hcache ? " (host-wide)" : "");
	}
	if (far && k < sizeof(buf))
		k += snprintf(buf + k, sizeof(buf) - k, " far from %s on %s (NUMA),", n->numa->far.name,
			      node_str(n->numa->far.node, dn, sizeof(dn)));
	if (k < sizeof(buf))
		buf[k - 1] = 0;		/* the last comma */
	return buf;
}

static void lag_of_comm(const char *hash)
{
	struct node *lead = NULL, *low = NULL;
	struct ncl_rank *lr = NULL, *wr = NULL;
	char lw[192], ld[192];
	struct bottleneck *b;
	bool seq = true;
	int ranks = 0;

	for (size_t i = 0; i < G.nshown; i++)
		for (struct ncl_rank *r = G.shown[i]->ncl; r; r = r->next)
			if (!strcmp(r->comm_hash, hash))
				seq &= r->has_seq;
	for (size_t i = 0; i < G.nshown; i++)
		for (struct ncl_rank *r = G.shown[i]->ncl; r; r = r->next) {
			if (strcmp(r->comm_hash, hash))
				continue;
			ranks++;
			if (!lr || progress(r, seq) > progress(lr, seq)) {
				lr = r;
				lead = G.shown[i];
			}
			if (!wr || progress(r, seq) < progress(wr, seq)) {
				wr = r;
				low = G.shown[i];
			}
		}
	if (ranks < 2 || progress(lr, seq) - progress(wr, seq) < NCCL_LAG_CALLS ||
	    (low->flags & (1u << R_NCCL)))
		return;
	b = add_bn(R_NCCL, low, NULL);
	b->value = progress(lr, seq) - progress(wr, seq);
	b->threshold = NCCL_LAG_CALLS;
	b->unit = "calls";
	/* "pid/comm", on several hosts "pid/comm@host" */
	node_label(low, lw, sizeof(lw));
	node_label(lead, ld, sizeof(ld));
	b->evidence = xasprintf(
		 "rank %lld (%s) of communicator %s lags: %s %llu against %llu of rank %lld (%s); its last op %s%s",
		 (long long)wr->rank, lw, hash, seq ? "op sequence" : "calls",
		 (unsigned long long)progress(wr, seq), (unsigned long long)progress(lr, seq),
		 (long long)lr->rank, ld, wr->last_op ? wr->last_op : "unknown", host_evidence(low));
}

static void rule_nccl(void)
{
	for (size_t i = 0; i < G.nshown; i++)
		for (struct ncl_rank *r = G.shown[i]->ncl; r; r = r->next)
			lag_of_comm(r->comm_hash);
}


/* ---- the lifecycle rules ---- */

static const char *comm_of(const struct node *n)
{
	return n->comm ? n->comm : "?";
}

/* " (lived 1.234 s)", or "" when it did not start in the capture */
static void lived(const struct node *n, char *buf, size_t len)
{
	*buf = 0;
	if (n->started_ns && n->exited_ns >= n->started_ns)
		snprintf(buf, len, ", %.3f s after its fork", (n->exited_ns - n->started_ns) / 1e9);
}

static void rule_exit(void)
{
	char when[64], life[64];

	for (size_t i = 0; i < G.nshown; i++) {
		struct node *n = G.shown[i];
		struct bottleneck *b;
		int sig = n->status & 0x7f;

		/* a stage of the graph: one that moved data */
		if (!n->degree || !n->exited_ns || !n->status)
			continue;
		b = add_bn(R_EXIT, n, busiest_edge(n));
		fmt_rfc3339_ns(n->exited_ns, when, sizeof(when));
		lived(n, life, sizeof(life));
		if (sig) {
			b->value = sig;
			b->unit = "signal";
			b->evidence = xasprintf("%u/%s was killed by signal %d (%s)%s at %s%s",
						n->pid, comm_of(n), sig, strsignal(sig),
						n->status & 0x80 ? ", core dumped," : "", when, life);
		} else {
			b->value = (n->status >> 8) & 0xff;
			b->unit = "exit_code";
			b->evidence = xasprintf("%u/%s exited with code %d at %s%s", n->pid,
						comm_of(n), (int)b->value, when, life);
		}
	}
}

/* An earlier child of n's parent with n's name that failed (exit code or
 * signal) before n was forked: n replaced it, as a supervisor restarts a
 * crashed worker (a shell running the same command twice is no restart).
 * The latest such one, and how many there were. */
static struct node *respawned(const struct node *n, int *count)
{
	struct node *last = NULL;

	*count = 0;
	if (!n->started_ns || !n->has_ppid || !n->comm)
		return NULL;
	for (size_t i = 0; i < G.nn; i++) {
		struct node *m = G.nv[i];

		if (m == n || !m->has_life || !m->has_ppid || m->ppid != n->ppid || !m->comm ||
		    strcmp(m->comm, n->comm) || !m->exited_ns || !m->status ||
		    m->exited_ns > n->started_ns)
			continue;
		(*count)++;
		if (!last || m->exited_ns > last->exited_ns)
			last = m;
	}
	return last;
}

static void rule_restart(void)
{
	char when[64];

	for (size_t i = 0; i < G.nshown; i++) {
		struct node *n = G.shown[i];
		struct bottleneck *b;
		struct node *m;
		int count;

		if (!n->degree)
			continue;
		if (n->reexecs) {
			b = add_bn(R_RESTART, n, busiest_edge(n));
			b->value = n->reexecs;
			b->threshold = 1;
			b->unit = "reexecs";
			b->evidence = xasprintf("%u/%s exec'd %s again %llu times during the capture (%llu execs in all)",
						n->pid, comm_of(n), n->exec_file ? n->exec_file : "?",
						(unsigned long long)n->reexecs,
						(unsigned long long)n->execs);
			continue;
		}
		m = respawned(n, &count);
		if (!m)
			continue;
		b = add_bn(R_RESTART, n, busiest_edge(n));
		b->value = count;
		b->threshold = 1;
		b->unit = "respawns";
		fmt_rfc3339_ns(m->exited_ns, when, sizeof(when));
		b->evidence = xasprintf("%u/%s was respawned by its parent %u: %d earlier %s failed during the capture, the last %u with %s %d at %s",
					n->pid, comm_of(n), n->ppid, count, comm_of(n), m->pid,
					m->status & 0x7f ? "signal" : "exit code",
					m->status & 0x7f ? m->status & 0x7f : (m->status >> 8) & 0xff, when);
	}
}


/* --tree: the parents of the processes seen are nodes too (alive, they
 * had no lifecycle event; their name and parent come from /proc) */
static void tree_parents(void)
{
	size_t nn = G.nn;

	for (size_t i = 0; i < nn; i++) {
		struct node *n = G.nv[i], *p;

		if (!n->has_life || !n->has_ppid || !n->ppid)
			continue;
		p = proc_node_on(n->host, n->ppid);
		if (p->has_life || p->degree || p->tree_parent)
			continue;
		p->tree_parent = true;
		if (cfg.live && !p->comm)
			proc_comm(p);
		if (cfg.live && !p->has_ppid)
			proc_parent(p);
	}
}

/* a node with an edge, an NCCL rank (a job whose ranks talk over RDMA,
 * which no socket sees, still shows its ranks and their lag), a process
 * numaplace flagged REMOTE (a rank whose traffic no tool saw is still far
 * from its GPU), or with --tree a life in the capture */
static bool shown(const struct node *n)
{
	if (n->degree || n->ncl || (n->numa && n->numa->remote_intervals))
		return true;
	return cfg.tree && (n->has_life || n->tree_parent) && !is_self(n);
}

static void spawn_links(void)
{
	for (size_t i = 0; i < G.nshown; i++) {
		struct node *n = G.shown[i], *p;

		if (!n->has_ppid || !(p = node_find_pid(n->host, n->ppid)) || !p->id)
			continue;
		G.spawn = aiscope_grow(G.spawn, &G.spawn_cap, G.nspawn + 1, sizeof(*G.spawn));
		G.spawn[G.nspawn++] = p;
		G.spawn[G.nspawn++] = n;
	}
}

void analyse(void)
{
	size_t n = 0;

	for (size_t i = 0; i < G.ne; i++) {
		struct gedge *e = G.ev[i];

		sat_add(&G.total_bytes, e->bytes);
		sat_add(&e->src->tx, e->bytes);
		sat_add(&e->dst->rx, e->bytes);
		e->src->degree++;
		e->dst->degree++;
	}
	if (cfg.tree)
		tree_parents();
	G.shown = xcalloc(G.nn, sizeof(*G.shown));
	for (size_t i = 0; i < G.nn; i++)
		if (shown(G.nv[i]))
			G.shown[n++] = G.nv[i];
	G.nshown = n;
	sort_array(G.shown, n, sizeof(*G.shown), cmp_nodes);
	for (size_t i = 0; i < n; i++) {
		struct node *x = G.shown[i];

		x->id = i + 1;
		G.any_runq |= x->has_runq;
		G.any_ncl |= x->ncl != NULL;
		/* a live process forked before the capture: its parent now */
		if (cfg.live && x->kind == N_PROC && !x->has_ppid)
			proc_parent(x);
	}
	spawn_links();
	sort_array(G.ev, G.ne, sizeof(*G.ev), cmp_edges);
	for (size_t i = 0; i < G.ne; i++)
		G.ev[i]->id = i + 1;
	find_window();
	rule_hot_edges();
	rule_runq();
	rule_nccl();
	rule_backlog();
	rule_exit();
	rule_restart();
	rule_numa();
}
