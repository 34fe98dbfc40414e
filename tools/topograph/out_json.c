// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* topograph --json: node, edge, spawn, bottleneck and summary records. */
#include <stdio.h>
#include "ctrmeta.h"
#include "json.h"
#include "run.h"
#include "topo.h"

static void copy(char *dst, size_t len, const char *s)
{
	snprintf(dst, len, "%s", s ? s : "");
}

/* The names the lines gave; in a live capture NULL when they gave none:
 * then this host's runtimes are asked (lifecycle-only nodes). */
static const struct ctr_meta *line_names(const struct node *n, struct ctr_meta *m)
{
	bool none = !n->ctr_name && !n->ctr_image && !n->pod_name && !n->pod_namespace &&
		    !n->k8s_container;

	/* FILEs: another host's capture, or an older one: never this host's */
	if (none && cfg.live)
		return NULL;
	*m = (struct ctr_meta){ .found = !none };
	copy(m->name, sizeof(m->name), n->ctr_name);
	copy(m->image, sizeof(m->image), n->ctr_image);
	copy(m->pod_name, sizeof(m->pod_name), n->pod_name);
	copy(m->pod_namespace, sizeof(m->pod_namespace), n->pod_namespace);
	copy(m->k8s_container, sizeof(m->k8s_container), n->k8s_container);
	return m;
}

/* the identity of a node, as edges.md writes a side; ep: its endpoint */
static void json_ident(struct jw *w, const struct node *n, const char *ep, bool side)
{
	bool p = n->kind == N_PROC;
	struct container_info ci = { 0 };
	struct aiscope_identity id = { 0 };
	struct ctr_meta names;

	if (p) {
		id = (struct aiscope_identity){
			.known = AISCOPE_ID_PID | (n->has_uid ? AISCOPE_ID_UID : 0) |
				 (n->has_cgid ? AISCOPE_ID_CGROUP_ID : 0),
			.pid = n->pid, .uid = n->uid, .comm = n->comm,
			.cgroup_id = n->cgroup_id, .cgroup = n->cgroup, .ci = &ci,
			.names = line_names(n, &names),
		};
		/* the container keys as the tools that saw the process wrote them */
		if (n->container_id)
			snprintf(ci.id, sizeof(ci.id), "%s", n->container_id);
		ci.runtime = n->runtime;
		if (n->pod_uid)
			snprintf(ci.pod_uid, sizeof(ci.pod_uid), "%s", n->pod_uid);
	}
	aiscope_identity_json(w, &id);
	jw_kstr(w, "endpoint", n->kind == N_ENDPOINT ? n->endpoint : ep);
	/* a node line's own "host" is the envelope's: the host of topograph */
	jw_kstr(w, side ? "host" : "node_host", n->host);
}

static void json_rules(struct jw *w, unsigned int flags)
{
	jw_key(w, "bottlenecks");
	jw_arr_begin(w);
	for (int r = 0; r < R_NR; r++)
		if (flags & (1u << r))
			jw_str(w, rule_names[r]);
	jw_arr_end(w);
}

/* what the lifecycle hooks saw (docs/edges.md: topograph's node lines) */
static void json_life(struct jw *w, const struct node *n)
{
	const struct node *p = n->has_ppid ? node_find_pid(n->host, n->ppid) : NULL;
	char id[16];

	jw_ku64_or_null(w, "ppid", n->has_ppid, n->ppid);
	snprintf(id, sizeof(id), "n%d", p ? p->id : 0);
	jw_kstr(w, "parent_id", p && p->id ? id : NULL);
	jw_kts(w, "started_ts", n->started_ns);
	jw_kts(w, "exited_ts", n->exited_ns);
	jw_ku64_or_null(w, "exit_code", n->exited_ns && !(n->status & 0x7f), (n->status >> 8) & 0xff);
	jw_ku64_or_null(w, "exit_signal", n->exited_ns && (n->status & 0x7f), n->status & 0x7f);
	jw_kbool_or_null(w, "core_dumped", n->exited_ns, n->status & 0x80);
	jw_ku64_or_null(w, "execs", n->has_life, n->execs);
	jw_ku64_or_null(w, "reexecs", n->has_life, n->reexecs);
	jw_kstr(w, "exec_filename", n->exec_file);
}

/* numaplace's rows of the process (docs/edges.md: topograph's node lines) */
static void json_numa(struct jw *w, const struct numa_place *p)
{
	jw_key(w, "numa");
	if (!p) {
		jw_null(w);
		return;
	}
	jw_obj_begin(w);
	jw_ku64(w, "intervals", p->intervals);
	jw_ku64(w, "remote_intervals", p->remote_intervals);
	jw_ki64_or_null(w, "cpu_node", p->cpu_node >= 0, p->cpu_node);
	jw_ki64_or_null(w, "mem_node", p->mem_node >= 0, p->mem_node);
	jw_key(w, "devices");
	jw_arr_begin(w);
	for (int i = 0; i < p->ndev; i++) {
		const struct topo_numa_dev *d = &p->dev[i];

		jw_obj_begin(w);
		jw_kstr(w, "name", d->name);
		jw_ki64_or_null(w, "node", d->node >= 0, d->node);
		jw_kdouble_or_null(w, "cpu_local_ratio", d->cpu_local >= 0, d->cpu_local, 4);
		jw_kdouble_or_null(w, "mem_local_ratio", d->mem_local >= 0, d->mem_local, 4);
		jw_kbool(w, "remote", d->remote);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "devices_left_out", p->more_dev);
	jw_obj_end(w);
}

static void json_node(struct jw *w, const struct node *n, uint64_t now)
{
	char id[16];

	snprintf(id, sizeof(id), "n%d", n->id);
	jw_record_begin(w, "node", TOOL, now);
	jw_kstr(w, "id", id);
	jw_kstr(w, "kind", node_kind_names[n->kind]);
	json_ident(w, n, NULL, false);
	jw_kstr(w, "channel", n->kind == N_UNSEEN ? n->endpoint : NULL);
	jw_ku64(w, "tx_bytes", n->tx);
	jw_ku64(w, "rx_bytes", n->rx);
	jw_ku64_or_null(w, "runq_p99_ns", n->has_runq, n->runq_p99_ns);
	jw_ku64_or_null(w, "runq_wait_ns", n->has_runq, n->runq_wait_ns);
	jw_ku64_or_null(w, "runq_runs", n->has_runq, n->runq_runs);
	jw_ku64_or_null(w, "cuda_launches", n->cuda, n->cuda_launches);
	jw_key(w, "nccl");
	if (!n->ncl) {
		jw_null(w);
	} else {
		jw_arr_begin(w);
		for (const struct ncl_rank *r = n->ncl; r; r = r->next) {
			jw_obj_begin(w);
			jw_kstr(w, "communicator_id", r->comm_hash);
			jw_ki64_or_null(w, "rank", r->has_rank, r->rank);
			jw_ki64_or_null(w, "nranks", r->has_nranks, r->nranks);
			jw_ku64(w, "calls", r->calls);
			jw_ku64_or_null(w, "op_seq", r->has_seq, r->op_seq);
			jw_kstr(w, "last_op", r->last_op);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	}
	json_numa(w, n->numa);
	json_life(w, n);
	json_rules(w, n->flags);
	jw_record_end(w);
}

static void json_edge(struct jw *w, const struct gedge *e, uint64_t now)
{
	char id[16];
	uint64_t unread = 0;
	bool unread_known;

	snprintf(id, sizeof(id), "e%d", e->id);
	jw_record_begin(w, "edge", TOOL, now);
	jw_kstr(w, "kind", e->kind);
	jw_kstr(w, "channel", e->channel);
	jw_key(w, "src");
	jw_obj_begin(w);
	json_ident(w, e->src, e->src_ep, true);
	jw_obj_end(w);
	jw_key(w, "dst");
	jw_obj_begin(w);
	json_ident(w, e->dst, e->dst_ep, true);
	jw_obj_end(w);
	jw_ku64(w, "bytes", e->bytes);
	jw_ku64(w, "msgs", e->msgs);
	jw_ku64_or_null(w, "read_bytes", e->read_known && !e->read_missing, e->read_bytes);
	jw_kstr(w, "first_ts", e->first_ts);
	jw_kstr(w, "last_ts", e->last_ts);
	jw_kstr(w, "id", id);
	snprintf(id, sizeof(id), "n%d", e->src->id);
	jw_kstr(w, "src_id", id);
	snprintf(id, sizeof(id), "n%d", e->dst->id);
	jw_kstr(w, "dst_id", id);
	jw_kstr(w, "source", e->tool);
	jw_ku64_or_null(w, "readers", e->readers, e->readers);
	jw_kdouble_or_null(w, "rate_bytes_per_sec", G.window_ns,
			   G.window_ns ? e->bytes * 1e9 / G.window_ns : 0, 1);
	jw_kdouble(w, "share_ratio", G.total_bytes ? (double)e->bytes / G.total_bytes : 0, 6);
	unread_known = unread_of(e, &unread);
	jw_ku64_or_null(w, "unread_bytes", unread_known, unread);
	json_rules(w, e->flags);
	jw_record_end(w);
}

/* the digits of each rule's value: a share in percent, a ratio, counts */
static const int value_digits[R_NR] = { [R_HOT] = 1, [R_NUMA] = 4 };

static void json_bottleneck(struct jw *w, const struct bottleneck *b, uint64_t now)
{
	char id[16];

	jw_record_begin(w, "bottleneck", TOOL, now);
	jw_kstr(w, "rule", rule_names[b->rule]);
	snprintf(id, sizeof(id), "n%d", b->node ? b->node->id : 0);
	jw_kstr(w, "node", b->node ? id : NULL);
	snprintf(id, sizeof(id), "e%d", b->edge ? b->edge->id : 0);
	jw_kstr(w, "edge", b->edge ? id : NULL);
	jw_kdouble(w, "value", b->value, value_digits[b->rule]);
	jw_kdouble(w, "threshold", b->threshold, value_digits[b->rule]);
	jw_kstr(w, "unit", b->unit);
	jw_kstr(w, "evidence", b->evidence);
	jw_record_end(w);
}

/* --tree: parent -> child */
static void json_spawn(struct jw *w, const struct node *p, const struct node *c, uint64_t now)
{
	char id[16];

	jw_record_begin(w, "spawn", TOOL, now);
	snprintf(id, sizeof(id), "n%d", p->id);
	jw_kstr(w, "parent_id", id);
	snprintf(id, sizeof(id), "n%d", c->id);
	jw_kstr(w, "child_id", id);
	jw_ku64(w, "ppid", p->pid);
	jw_ku64(w, "pid", c->pid);
	jw_kts(w, "started_ts", c->started_ns);
	jw_record_end(w);
}

void print_json(void)
{
	uint64_t now = clock_ns(CLOCK_REALTIME);
	struct jw w;

	jw_init(&w, stdout);
	for (size_t i = 0; i < G.nshown; i++)
		json_node(&w, G.shown[i], now);
	for (size_t i = 0; i < G.ne; i++)
		json_edge(&w, G.ev[i], now);
	for (size_t i = 0; cfg.tree && i < G.nspawn; i += 2)
		json_spawn(&w, G.spawn[i], G.spawn[i + 1], now);
	for (size_t i = 0; i < G.nbn; i++)
		json_bottleneck(&w, &G.bn[i], now);
	jw_record_begin(&w, "summary", TOOL, now);
	jw_ku64(&w, "nodes", G.nshown);
	jw_ku64(&w, "edges", G.ne);
	jw_ku64(&w, "bytes", G.total_bytes);
	jw_ku64(&w, "bottlenecks", G.nbn);
	jw_ku64_or_null(&w, "duration_ns", G.window_ns, G.window_ns);
	jw_ku64(&w, "lines", G.lines);
	jw_ku64(&w, "bad_lines", G.bad_lines);
	jw_ku64(&w, "filtered_edges", G.filtered);
	jw_key(&w, "hosts");
	jw_arr_begin(&w);
	for (size_t i = 0; i < G.nhosts; i++)
		jw_str(&w, G.hosts[i]);
	jw_arr_end(&w);
	jw_ku64(&w, "joined_flows", G.joined);
	jw_ku64(&w, "unjoined_local_flows", G.unjoined_local);
	jw_ku64(&w, "unjoined_ambiguous_flows", G.unjoined_ambiguous);
	jw_ku64(&w, "unjoined_time_flows", G.unjoined_time);
	/* a flow two hosts saw at different times: captures of different
	 * moments, or clocks further apart than --max-skew */
	jw_kbool(&w, "partial", G.unjoined_time > 0);
	jw_ku64(&w, "lost_events", lost_total());
	aiscope_summary_losses(&w);
	jw_ku64_or_null(&w, "processes_traced", L.on, L.records);
	jw_key(&w, "sources");
	jw_obj_begin(&w);
	for (struct source *s = G.sources; s; s = s->next)
		jw_ku64(&w, s->tool, s->lines);
	jw_obj_end(&w);
	jw_kstr(&w, "exit_reason", G.exit_reason);
	jw_record_end(&w);
}
