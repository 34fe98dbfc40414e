// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* topograph's input: the JSON lines of the tools (docs/edges.md), read
 * from files and stdin or from the tools it runs, into the graph. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "topo.h"

#define MAX_WARN	5	/* bad input lines reported one by one */

static void min_str(char **dst, const char *s, bool max)
{
	if (!s)
		return;
	if (!*dst || (max ? strcmp(s, *dst) > 0 : strcmp(s, *dst) < 0))
		set_str(dst, s);
}

/* A side of an edge line, on its host: topograph's own lines read back
 * name each side's ("host" in the side), the tools' lines their own. */
static struct node *side_node_of(const struct jv *v, const char *side, const char *kind,
				 const char *channel)
{
	const char *host = jv_str(jv_get(jv_get(v, side), "host"));

	/* topograph's own lines: the envelope's host is topograph's */
	if (!host && strcmp(jv_str(jv_get(v, "tool")) ?: "", TOOL))
		host = jv_str(jv_get(v, "host"));
	line_host(host);
	return side_node(jv_get(v, side), kind, channel);
}

/* An "edge" line (docs/edges.md); the same edge in several lines (several
 * captures read together) adds up. */
static void add_edge(const struct jv *v, const char *tool)
{
	const char *kind = jv_str(jv_get(v, "kind")), *channel = jv_str(jv_get(v, "channel"));
	const struct jv *rb = jv_get(v, "read_bytes");
	struct node *src, *dst;
	struct gedge *e;
	uint64_t bytes = 0, msgs = 0, rbytes, readers;

	if (!kind || !channel || !jv_get(v, "src") || !jv_get(v, "dst") ||
	    !jv_u64(jv_get(v, "bytes"), &bytes)) {
		G.bad_lines++;
		return;
	}
	jv_u64(jv_get(v, "msgs"), &msgs);
	src = side_node_of(v, "src", kind, channel);
	dst = side_node_of(v, "dst", kind, channel);
	if (!edge_passes(src, dst)) {
		G.filtered++;
		return;
	}
	e = edge_get(kind, channel, src, dst);
	if (!e->tool) {
		/* topograph's own lines read back keep the tool they came from */
		e->tool = xstrdup(jv_str(jv_get(v, "source")) ?: tool);
		e->src_ep = xstrdup(jv_str(jv_get(jv_get(v, "src"), "endpoint")));
		e->dst_ep = xstrdup(jv_str(jv_get(jv_get(v, "dst"), "endpoint")));
	}
	sat_add(&e->bytes, bytes);
	sat_add(&e->msgs, msgs);
	if (jv_u64(rb, &rbytes)) {
		sat_add(&e->read_bytes, rbytes);
		e->read_known = true;
	} else {
		e->read_missing = true;
	}
	if (jv_u64(jv_get(v, "readers"), &readers) && readers > e->readers)
		e->readers = readers;
	min_str(&e->first_ts, jv_str(jv_get(v, "first_ts")), false);
	min_str(&e->last_ts, jv_str(jv_get(v, "last_ts")), true);
	source_of(tool)->edges++;
}

/* run-queue figures of a process: its worst p99, its waits summed (a
 * schedlat row, or topograph's own node line read back) */
static void add_runq(struct node *n, uint64_t p99, const struct jv *v, const char *wait_key,
		     const char *runs_key)
{
	uint64_t x;

	n->has_runq = true;
	if (p99 > n->runq_p99_ns)
		n->runq_p99_ns = p99;
	if (jv_u64(jv_get(v, wait_key), &x))
		sat_add(&n->runq_wait_ns, x);
	if (jv_u64(jv_get(v, runs_key), &x))
		sat_add(&n->runq_runs, x);
}

/*
 * The value of key, or of its schema 0 name: captures written before the
 * renames of docs/schema/README.md (schema 1) still read as they did.
 */
static const struct jv *jv_get_either(const struct jv *v, const char *key, const char *key0)
{
	const struct jv *x = jv_get(v, key);

	return x ? x : jv_get(v, key0);
}

/* schedlat "sample" rows by pid: the worst interval's p99, total wait */
static void add_schedlat(const struct jv *v)
{
	const char *by = jv_str(jv_get_either(v, "row", "by"));
	uint64_t pid, p99 = 0;
	struct node *n;

	if (by && !strcmp(by, "host")) {
		struct host_ctx *h = host_ctx_of(G.line_host);

		if (jv_u64(jv_get(v, "p99_ns"), &p99)) {
			if (p99 > G.host_p99_ns)
				G.host_p99_ns = p99;
			if (p99 > h->runq_p99_ns)
				h->runq_p99_ns = p99;
			h->has_runq = true;
		}
		G.has_host_p99 = true;
		return;
	}
	if ((by && strcmp(by, "pid")) || !jv_u64(jv_get(v, "pid"), &pid) || !pid ||
	    pid > UINT32_MAX || !jv_u64(jv_get(v, "p99_ns"), &p99))
		return;
	n = proc_node(pid);
	if (!n->comm)
		node_ident(n, v);
	add_runq(n, p99, v, "wait_ns", "runs");
}

static struct ncl_rank *ncl_rank_of(struct node *n, const char *hash)
{
	struct ncl_rank *r;

	for (r = n->ncl; r; r = r->next)
		if (!strcmp(r->comm_hash, hash))
			return r;
	r = xcalloc(1, sizeof(*r));
	r->comm_hash = xstrdup(hash);
	r->next = n->ncl;
	n->ncl = r;
	return r;
}

/* a ratio of numaplace's, -1 for null */
static double ratio_or(const struct jv *v)
{
	double d;

	return jv_num(v, &d) && d >= 0 ? d : -1;
}

static int64_t node_or(const struct jv *v)
{
	int64_t x;

	return jv_i64(v, &x) && x >= 0 ? x : -1;
}

static void numa_dev_of(struct topo_numa_dev *d, const struct jv *o)
{
	snprintf(d->name, sizeof(d->name), "%s", jv_str(jv_get(o, "name")) ?: "?");
	d->node = node_or(jv_get(o, "node"));
	d->cpu_local = ratio_or(jv_get(o, "cpu_local_ratio"));
	d->mem_local = ratio_or(jv_get(o, "mem_local_ratio"));
	d->remote = jv_true(jv_get(o, "remote"));
}

/* the devices of a row: all, or its first remote one (NULL: none) */
static const struct jv *numa_devices(const struct jv *v)
{
	const struct jv *devs = jv_get(v, "devices");

	return devs && devs->type == JV_ARR ? devs->child : NULL;
}

static void numa_latest(struct numa_place *p, const struct jv *v)
{
	p->cpu_node = node_or(jv_get(v, "cpu_node"));
	p->mem_node = node_or(jv_get(v, "mem_node"));
	p->ndev = p->more_dev = 0;
	for (const struct jv *d = numa_devices(v); d; d = d->next) {
		if (p->ndev == NUMA_MAX_DEV)
			p->more_dev++;
		else
			numa_dev_of(&p->dev[p->ndev++], d);
	}
}

static void numa_far(struct numa_place *p, const struct jv *v)
{
	p->far_cpu_node = node_or(jv_get(v, "cpu_node"));
	p->far_mem_node = node_or(jv_get(v, "mem_node"));
	/* a row REMOTE with no remote device in its list: said as unknown,
	 * never as another row's device or node 0 */
	p->far = (struct topo_numa_dev){ .name = "?", .node = -1, .cpu_local = -1, .mem_local = -1 };
	for (const struct jv *d = numa_devices(v); d; d = d->next)
		if (jv_true(jv_get(d, "remote"))) {
			numa_dev_of(&p->far, d);
			return;
		}
}

/* numaplace's rows by pid: the intervals it saw the process in, those it
 * flagged it REMOTE in, the latest placement and devices, and the latest
 * REMOTE interval's (the rule's evidence; analyse.c). Files may come in
 * any order: the latest is the highest seq. */
static void add_numaplace(const struct jv *v)
{
	const char *row = jv_str(jv_get(v, "row"));
	const struct jv *remote = jv_get(v, "remote");
	struct numa_place *p;
	uint64_t pid, seq = 0;
	struct node *n;

	if (!row || strcmp(row, "pid") || !jv_u64(jv_get(v, "pid"), &pid) || !pid ||
	    pid > UINT32_MAX || !remote || remote->type != JV_BOOL)
		return;
	jv_u64(jv_get(v, "seq"), &seq);
	n = proc_node(pid);
	if (!n->comm)
		node_ident(n, v);
	if (!n->numa)
		n->numa = xcalloc(1, sizeof(*n->numa));
	p = n->numa;
	if (!p->intervals++ || seq >= p->last_seq) {
		p->last_seq = seq;
		numa_latest(p, v);
	}
	if (remote->b && (!p->remote_intervals++ || seq >= p->remote_seq)) {
		p->remote_seq = seq;
		numa_far(p, v);
	}
}

/* cachestat's rows by pid (--by pid): the process's page-cache misses and
 * hits, summed over the intervals; its host rows: the host's */
static void add_cachestat(const struct jv *v)
{
	const char *row = jv_str(jv_get(v, "row"));
	uint64_t pid, x;
	struct node *n;

	if (row && !strcmp(row, "host") && jv_u64(jv_get(v, "misses"), &x)) {
		struct host_ctx *h = host_ctx_of(G.line_host);

		h->has_cache = true;
		sat_add(&h->misses, x);
		if (jv_u64(jv_get(v, "hits"), &x)) {
			sat_add(&h->hits, x);
			h->hits_known = true;
		}
		return;
	}
	if (!row || strcmp(row, "pid") || !jv_u64(jv_get(v, "pid"), &pid) || !pid || pid > UINT32_MAX ||
	    !jv_u64(jv_get(v, "misses"), &x))
		return;
	n = proc_node(pid);
	if (!n->comm)
		node_ident(n, v);
	n->has_cache = true;
	sat_add(&n->cache_misses, x);
	if (jv_u64(jv_get(v, "hits"), &x)) {
		sat_add(&n->cache_hits, x);
		n->cache_hits_known = true;
	}
}

/* nclstat's "communicator" row (schema 0: "comm"): per local rank its pid,
 * rank and op sequence number (the latest row wins), and its comm where
 * the row has it (topograph --prometheus: the series' comm label) */
static void add_ncl_comm(const struct jv *v, const char *hash)
{
	const struct jv *a = jv_get(v, "ranks");
	int64_t nranks = -1;
	struct node *n;

	jv_i64(jv_get(v, "nranks"), &nranks);
	for (a = a && a->type == JV_ARR ? a->child : NULL; a; a = a->next) {
		uint64_t pid;
		struct ncl_rank *r;

		if (!jv_u64(jv_get(a, "pid"), &pid) || !pid || pid > UINT32_MAX)
			continue;
		n = proc_node(pid);
		if (!n->comm)
			set_str(&n->comm, jv_str(jv_get(a, "comm")));
		r = ncl_rank_of(n, hash);
		if (jv_i64(jv_get(a, "rank"), &r->rank))
			r->has_rank = true;
		if (nranks >= 0) {
			r->nranks = nranks;
			r->has_nranks = true;
		}
		if (jv_u64(jv_get(a, "op_seq"), &r->op_seq))
			r->has_seq = true;
		set_str(&r->last_op, jv_str(jv_get(a, "last_op")));
	}
}

/* nclstat: its "communicator" rows, and any record naming a process, a
 * communicator (communicator_id) and a rank: per-op samples ("calls" in the
 * interval), call events (one each). */
static void add_nclstat(const struct jv *v, const char *type)
{
	const char *hash = jv_str(jv_get_either(v, "communicator_id", "comm_hash"));
	const char *row = jv_str(jv_get(v, "row"));
	const char *op = jv_str(jv_get_either(v, "nccl_op", "op"));
	struct ncl_rank *r;
	struct node *n;
	uint64_t pid, calls;

	if (!hash)
		return;
	if (row && (!strcmp(row, "communicator") || !strcmp(row, "comm"))) {
		add_ncl_comm(v, hash);
		return;
	}
	if (!op)
		op = jv_str(jv_get(v, "last_op"));	/* topograph's own lines */
	if (!jv_u64(jv_get(v, "pid"), &pid) || !pid || pid > UINT32_MAX)
		return;
	n = proc_node(pid);
	if (!n->comm)
		node_ident(n, v);
	r = ncl_rank_of(n, hash);
	if (jv_i64(jv_get(v, "rank"), &r->rank))
		r->has_rank = true;
	if (jv_i64(jv_get(v, "nranks"), &r->nranks))
		r->has_nranks = true;
	if (jv_u64(jv_get(v, "op_seq"), &r->op_seq))
		r->has_seq = true;		/* topograph's own lines */
	/* a capture with both (-e and intervals) must not count twice */
	if (jv_u64(jv_get(v, "calls"), &calls))
		sat_add(&r->sample_calls, calls);
	else if (!strcmp(type, "event"))
		r->event_calls++;
	r->calls = r->sample_calls ? r->sample_calls : r->event_calls;
	set_str(&r->last_op, op);
}

static void add_gpulaunch(const struct jv *v, const char *type)
{
	uint64_t pid, launches;
	struct node *n;

	if (!jv_u64(jv_get(v, "pid"), &pid) || !pid || pid > UINT32_MAX)
		return;
	if (strcmp(type, "sample") && strcmp(type, "event"))
		return;
	n = proc_node(pid);
	if (!n->comm)
		node_ident(n, v);
	n->cuda = true;
	if (jv_u64(jv_get(v, "launches"), &launches))
		sat_add(&n->cuda_launches, launches);
	else if (!strcmp(type, "event"))
		n->cuda_launches++;
}

/* the lifecycle keys of topograph's own node lines */
static void own_life(struct node *n, const struct jv *v)
{
	const struct jv *core = jv_get(v, "core_dumped");
	uint64_t x;

	if (jv_u64(jv_get(v, "ppid"), &x) && x <= UINT32_MAX) {
		n->ppid = x;
		n->has_ppid = true;
	}
	if (jv_u64(jv_get(v, "execs"), &x)) {
		sat_add(&n->execs, x);
		n->has_life = true;
	}
	if (jv_u64(jv_get(v, "reexecs"), &x))
		sat_add(&n->reexecs, x);
	set_str(&n->exec_file, jv_str(jv_get(v, "exec_filename")));
	if (rfc3339_ns(jv_str(jv_get(v, "started_ts")), &n->started_ns))
		n->has_life = true;
	if (!rfc3339_ns(jv_str(jv_get(v, "exited_ts")), &n->exited_ns))
		return;
	n->has_life = true;
	if (jv_u64(jv_get(v, "exit_signal"), &x))
		n->status = (x & 0x7f) | (jv_true(core) ? 0x80 : 0);
	else if (jv_u64(jv_get(v, "exit_code"), &x))
		n->status = (x & 0xff) << 8;
}

/* topograph's own "node" lines, read back: what the other tools knew */
static void add_own_node(const struct jv *v)
{
	const struct jv *a;
	uint64_t pid, x;
	struct node *n;

	if (!jv_u64(jv_get(v, "pid"), &pid) || !pid || pid > UINT32_MAX)
		return;
	/* the node's host, not the one that wrote the graph */
	line_host(jv_str(jv_get(v, "node_host")));
	n = proc_node(pid);
	node_ident(n, v);
	own_life(n, v);
	if (jv_u64(jv_get(v, "runq_p99_ns"), &x))
		add_runq(n, x, v, "runq_wait_ns", "runq_runs");
	if (jv_u64(jv_get(v, "cuda_launches"), &x)) {
		n->cuda = true;
		sat_add(&n->cuda_launches, x);
	}
	a = jv_get(v, "nccl");
	for (a = a && a->type == JV_ARR ? a->child : NULL; a; a = a->next) {
		/* each rank as an nclstat sample of this process: its keys
		 * with "pid" in front */
		struct jv pidm = { .type = JV_NUM, .is_u64 = true, .u = pid, .key = "pid",
				   .next = a->child };
		struct jv obj = *a;

		obj.child = &pidm;
		add_nclstat(&obj, "sample");
	}
}

static void add_accounting(const struct jv *v, const char *type, struct source *s)
{
	uint64_t x;

	if (!strcmp(type, "summary")) {
		s->has_summary = true;
		if (jv_u64(jv_get(v, "duration_ns"), &x) && x > s->duration_ns)
			s->duration_ns = x;
		if (jv_u64(jv_get(v, "lost_events"), &x))
			sat_add(&s->lost_summary, x);
	} else if (!strcmp(type, "lost")) {
		if (jv_u64(jv_get(v, "lost_events"), &x))
			sat_add(&s->lost_lines, x);
	} else if (!strcmp(type, "error") && !cfg.live) {
		fprintf(stderr, TOOL ": the capture has an error from %s: %s\n", s->tool,
			jv_str(jv_get(v, "message")) ?: "(no message)");
	}
}

static struct jp parser;

void ingest_init(void)
{
	jp_init(&parser);
}

void ingest_done(void)
{
	jp_free(&parser);
}

static void bad_line(const char *name, uint64_t lineno, const char *why)
{
	G.bad_lines++;
	if (G.bad_lines <= MAX_WARN)
		fprintf(stderr, TOOL ": %s:%llu: skipped: %s\n", name, (unsigned long long)lineno, why);
	if (G.bad_lines == MAX_WARN + 1)
		fprintf(stderr, TOOL ": more lines skipped: their count is in the summary\n");
}

/* One JSON line of any aiscope tool. */
void ingest(const char *name, uint64_t lineno, const char *line, size_t len)
{
	const struct jv *v;
	const char *type, *tool;
	struct source *s;
	size_t i;

	for (i = 0; i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'); i++)
		;
	if (i == len)
		return;		/* blank */
	G.lines++;
	if (jp_parse(&parser, line, len, &v)) {
		bad_line(name, lineno, jp_error(&parser));
		return;
	}
	type = jv_str(jv_get(v, "type"));
	tool = jv_str(jv_get(v, "tool"));
	if (!type || !tool) {
		bad_line(name, lineno, "not an aiscope record (no \"type\" or \"tool\")");
		return;
	}
	line_host(strcmp(tool, TOOL) ? jv_str(jv_get(v, "host")) : NULL);
	s = source_of(tool);
	s->lines++;
	if (!strcmp(type, "edge")) {
		uint64_t before = G.bad_lines;

		add_edge(v, tool);
		if (G.bad_lines != before) {
			G.bad_lines--;
			bad_line(name, lineno, "edge line without kind, channel, src, dst or bytes");
		}
	} else if (!strcmp(tool, "schedlat") && !strcmp(type, "sample")) {
		add_schedlat(v);
	} else if (!strcmp(tool, "cachestat") && !strcmp(type, "sample")) {
		add_cachestat(v);
	} else if (!strcmp(tool, "nclstat")) {
		add_nclstat(v, type);
	} else if (!strcmp(tool, "gpulaunch")) {
		add_gpulaunch(v, type);
	} else if (!strcmp(tool, "numaplace") && !strcmp(type, "sample")) {
		add_numaplace(v);
	} else if (!strcmp(tool, TOOL) && !strcmp(type, "node")) {
		add_own_node(v);
	}
	add_accounting(v, type, s);
}

/* ---- input: files and stdin ----------------------------------------- */

/* Reading lines: a first SIGINT is the one a terminal sends to a whole
 * pipeline ("socketsnoop -j | topograph"): the tool before us prints its
 * edges and ends, so we read on to the end. A second SIGINT, or SIGTERM,
 * stops reading: the graph of what was read is printed. */
static volatile sig_atomic_t interrupts;

static void on_signal(int sig)
{
	interrupts += sig == SIGTERM ? 2 : 1;
}

static bool stop_reading(void)
{
	return interrupts >= 2;
}

/* Lines of fd, read with read(2) so that an interrupted read loses
 * nothing (stdio's getline would drop a partial line). */
static void read_stream(int fd, const char *name)
{
	size_t len = 0, cap = 1 << 16, start;
	char *buf = malloc(cap), *nl;
	uint64_t lineno = 0;
	ssize_t n;

	if (!buf)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	while (!stop_reading()) {
		if (len == cap) {
			/* the buffer holds one partial line: /dev/zero, or a
			 * file of no newlines, is not read until memory ends */
			if (cap >= TOPO_MAX_LINE)
				aiscope_fail(EXIT_RUNTIME, "%s:%llu: a line longer than %d MiB: not the --json lines of an aiscope tool",
				     name, (unsigned long long)lineno + 1, TOPO_MAX_LINE >> 20);
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				aiscope_fail(EXIT_RUNTIME, "out of memory");
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			aiscope_fail(EXIT_RUNTIME, "cannot read %s: %s", name, strerror(errno));
		if (!n)
			break;
		len += n;
		for (start = 0; (nl = memchr(buf + start, '\n', len - start)); start = nl - buf + 1)
			ingest(name, ++lineno, buf + start, nl - (buf + start));
		len -= start;
		memmove(buf, buf + start, len);
	}
	if (len && !stop_reading())
		ingest(name, ++lineno, buf, len);	/* a last line without its newline */
	free(buf);
}

void read_files(void)
{
	struct sigaction sa = { .sa_handler = on_signal };	/* no SA_RESTART */

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	G.exit_reason = "input";
	for (int i = 0; i < cfg.nfiles && !stop_reading(); i++) {
		const char *name = cfg.files[i];
		int fd;

		if (!strcmp(name, "-")) {
			read_stream(STDIN_FILENO, "<stdin>");
			continue;
		}
		fd = open(name, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			aiscope_fail(EXIT_USAGE, "cannot open '%s': %s", name, strerror(errno));
		read_stream(fd, name);
		close(fd);
	}
	if (stop_reading())
		G.exit_reason = "signal";
}

/* Files: every one can be opened and is a capture, a regular file or a
 * FIFO that a tool writes into as a pipe would (usage errors come before
 * any output): a device such as /dev/zero is no capture. */
void check_files(void)
{
	struct stat st;

	for (int i = 0; i < cfg.nfiles; i++) {
		if (!strcmp(cfg.files[i], "-"))
			continue;
		if (access(cfg.files[i], R_OK) || stat(cfg.files[i], &st))
			usage_error("cannot read '%s': %s", cfg.files[i], strerror(errno));
		if (S_ISDIR(st.st_mode))
			usage_error("'%s' is a directory", cfg.files[i]);
		if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode))
			usage_error("'%s' is not a regular file or a FIFO: expected the --json lines of the tools",
				    cfg.files[i]);
	}
}
