/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * topograph's parts (tools/topograph/): main.c (options), graph.c (the
 * model), ingest.c (JSON lines into it), capture.c (the tools run as
 * children), promsrc.c (the edges from a Prometheus server's API),
 * lifecycle.c (its BPF side), analyse.c (order, window,
 * bottlenecks), label.c (text several writers share) and one file per
 * writer: out_table.c, out_json.c, out_dot.c, out_mermaid.c.
 */
#ifndef TOPOGRAPH_TOPO_H
#define TOPOGRAPH_TOPO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "jsonp.h"
#include "opts.h"
#include "run.h"
#include "util.h"

#define TOOL "topograph"

/* the longest input line: the tools' records are a few KiB at most */
#define TOPO_MAX_LINE	(1 << 20)

enum out_fmt { OUT_TABLE, OUT_JSON, OUT_DOT, OUT_MERMAID };

/* --with: the tools a live capture can add */
extern const char *const extra_tools[];	/* ended by NULL */

struct topo_cfg {
	/* the filters as given, for the tools run (lib/opts' env has them
	 * parsed: for the files' edges and for its own BPF side) */
	const char *pid_arg, *tid_arg, *uid_arg, *comm_arg;
	enum out_fmt out;
	int nout;
	const char *duration_arg;
	uint32_t with;		/* 1 << index in extra_tools[] */
	bool verbose, tree;
	double hot_pct;
	uint64_t runq_ns;
	uint64_t backlog_bytes;
	uint64_t max_skew_ns;	/* two halves of a flow seen further apart are not one */
	const char *skew_arg;
	char **files;
	int nfiles;
	size_t files_cap;
	bool live;		/* running the tools, not reading lines */
	bool tty;
	const char *html_path;	/* --html: the page, opened at the start */
	FILE *html;
	const char *prom_url;	/* --prometheus: the graph from a server's API */
	uint64_t prom_range_ns;	/* --range: edges seen in this window, ending now */
	const char *range_arg;
};
extern struct topo_cfg cfg;

/* ---- the graph (graph.c) ---- */

enum node_kind { N_PROC, N_UNSEEN, N_ENDPOINT };
/* bottleneck rules, also node and edge flags */
enum rule { R_HOT, R_RUNQ, R_NCCL, R_BACKLOG, R_EXIT, R_RESTART, R_NUMA, R_NR };

struct ncl_rank {
	char *comm_hash;
	bool has_rank, has_nranks;
	int64_t rank, nranks;
	uint64_t calls;			/* the samples' calls, else the events */
	uint64_t sample_calls, event_calls;
	bool has_seq;
	uint64_t op_seq;		/* nclstat's op sequence number (latest) */
	char *last_op;
	struct ncl_rank *next;
};

/* a device of numaplace's row (its "devices"): -1 for a null node, a
 * negative ratio for a null one */
#define NUMA_MAX_DEV	8
struct topo_numa_dev {
	char name[32];
	int64_t node;
	double cpu_local, mem_local;
	bool remote;
};

/* numaplace's rows of a process: how many intervals, in how many it was
 * REMOTE, the last one's placement and devices, and those of the last
 * REMOTE one (the evidence) */
struct numa_place {
	uint64_t intervals, remote_intervals;
	uint64_t last_seq, remote_seq;
	int64_t cpu_node, mem_node;		/* -1: null */
	struct topo_numa_dev dev[NUMA_MAX_DEV];
	int ndev, more_dev;			/* more_dev: past NUMA_MAX_DEV */
	int64_t far_cpu_node, far_mem_node;	/* the last REMOTE interval's */
	struct topo_numa_dev far;			/* its remote device */
};

struct node {
	enum node_kind kind;
	char *key;
	uint32_t pid;
	char *comm, *cgroup, *container_id, *runtime, *pod_uid;
	/* the container's names as the tools' lines gave them (lib/ctrmeta's
	 * keys), NULL unknown: the graph of another host's capture keeps its
	 * names, never this host's */
	char *ctr_name, *ctr_image, *pod_name, *pod_namespace, *k8s_container;
	bool has_uid, has_cgid;
	uint32_t uid;
	uint64_t cgroup_id;
	char *endpoint;		/* N_ENDPOINT: ADDR:PORT; N_UNSEEN: the channel */
	/* the host whose capture has it (its lines' "host"); NULL: unknown,
	 * or an endpoint that names one address on every host; G.hosts' */
	const char *host;
	char *ukind;		/* N_UNSEEN: the channel's kind */
	bool has_runq;
	uint64_t runq_p99_ns, runq_wait_ns, runq_runs;
	bool has_cache, cache_hits_known;	/* cachestat --by pid rows */
	uint64_t cache_misses, cache_hits;
	bool cuda;
	uint64_t cuda_launches;
	struct ncl_rank *ncl;
	struct numa_place *numa;	/* numaplace's rows, NULL: none */
	/* its life in the capture: the lifecycle hooks, or own lines */
	bool has_life;		/* a record: fork, exec or exit seen */
	bool tree_parent;	/* --tree: the parent of one that has */
	bool has_ppid;
	uint32_t ppid;
	uint64_t started_ns;	/* realtime of its fork in the capture, 0: none */
	uint64_t exited_ns;	/* realtime of its exit in the capture, 0: none */
	uint32_t status;	/* wait(2) status, when exited_ns */
	uint64_t execs, reexecs;	/* reexecs: of the file it ran before */
	char *exec_file;
	uint64_t tx, rx;	/* bytes over its edges */
	int degree;
	int id;			/* n<id> in the output; 0: not in the graph */
	unsigned int flags;	/* 1 << rule */
	struct node *hnext;
};

struct gedge {
	char *key;
	char *kind, *channel, *tool;
	struct node *src, *dst;
	char *src_ep, *dst_ep;	/* the sides' endpoints (flows) */
	uint64_t bytes, msgs, read_bytes;
	bool read_known, read_missing;	/* some lines had read_bytes, some null */
	uint64_t readers;
	char *first_ts, *last_ts;
	int id;
	unsigned int flags;
	struct gedge *hnext;
};

struct bottleneck {
	enum rule rule;
	struct node *node;
	struct gedge *edge;
	double value, threshold;
	char *unit;
	char *evidence;
};

/* what a host's own rows say of the whole host (schedlat's and cachestat's
 * "host" rows; with --prometheus their series): context for the evidence
 * of a process that has no rows of its own */
struct host_ctx {
	char *host;		/* "" one host's lines that name none */
	bool has_runq, has_cache, hits_known;
	uint64_t runq_p99_ns, misses, hits;
};

/* what each tool contributed */
struct source {
	char *tool;
	uint64_t lines, edges;
	bool has_summary;
	uint64_t duration_ns, lost_summary, lost_lines;
	struct source *next;
};

#define HBITS 12
#define HSIZE (1u << HBITS)

struct graph {
	struct node *nodes[HSIZE];
	struct gedge *edges[HSIZE];
	struct node **nv;	/* every node, creation order */
	size_t nn, nn_cap;
	struct gedge **ev;
	size_t ne, ne_cap;
	struct source *sources;
	bool has_host_p99;
	uint64_t host_p99_ns;
	uint64_t lines, bad_lines, filtered;
	uint64_t capped;	/* sums held at 2^64 - 1 (sat_add) */
	/* the hosts the lines named ("host"), first seen first */
	char **hosts;
	size_t nhosts, hosts_cap;
	const char *line_host;	/* the host of the line read now */
	uint64_t joined;	/* flows of two hosts made one edge (join_hosts) */
	uint64_t unjoined_local;	/* ... left apart: loopback or link-local */
	uint64_t unjoined_ambiguous;	/* ... left apart: several hosts matched */
	uint64_t unjoined_time;	/* ... left apart: seen at times further apart than --max-skew */
	/* analysis */
	struct node **shown;	/* nodes in the graph, output order */
	size_t nshown;
	uint64_t total_bytes;
	uint64_t window_ns;	/* the capture's length: for rates */
	struct bottleneck *bn;
	size_t nbn;
	bool any_runq, any_ncl;
	const char *exit_reason;
	struct node **spawn;	/* parent, child pairs of shown nodes */
	size_t nspawn, spawn_cap;
	struct host_ctx *hctx;
	size_t nhctx, hctx_cap;
};
extern struct graph G;
extern const char *const node_kind_names[];
/* analyse.c: one entry per rule (checked there) */
extern const char *const rule_names[], *const rule_titles[], *const rule_flags[];

/* out of memory is fatal */
void *xcalloc(size_t n, size_t size);
char *xstrdup(const char *s);
char *__attribute__((format(printf, 1, 2))) xasprintf(const char *fmt, ...);
void set_str(char **dst, const char *s);
void sat_add(uint64_t *sum, uint64_t v);

struct node *proc_node(uint32_t pid);
struct node *proc_node_on(const char *host, uint32_t pid);
struct node *node_find_pid(const char *host, uint32_t pid);
void line_host(const char *host);
bool many_hosts(void);
bool addr_local(const char *endpoint);
void join_hosts(void);
void node_ident(struct node *n, const struct jv *o);
struct node *side_node(const struct jv *o, const char *kind, const char *channel);
struct gedge *edge_get(const char *kind, const char *channel, struct node *src, struct node *dst);
struct source *source_of(const char *tool);
bool edge_passes(const struct node *a, const struct node *b);
bool rfc3339_ns(const char *s, uint64_t *ns);
/* the context of host (NULL: the lines' that name none), made when new */
struct host_ctx *host_ctx_of(const char *host);
const struct host_ctx *host_ctx_find(const char *host);

/* ---- input (ingest.c) ---- */

void ingest(const char *name, uint64_t lineno, const char *line, size_t len);
void ingest_init(void);
void ingest_done(void);
void check_files(void);
void read_files(void);

/* ---- input: a Prometheus server's API (promsrc.c) ---- */

void prom_url_parse(const char *url);
void read_prometheus(void);

/* ---- live capture (capture.c, lifecycle.c) ---- */

int capture(void);
bool is_self(const struct node *n);

struct lifecycle {
	struct topograph_bpf *skel;
	struct aiscope_bpf bpf;
	bool on;		/* loaded and attached */
	uint64_t records;	/* processes it saw */
};
extern struct lifecycle L;

void lifecycle_open(void);
void lifecycle_start(void);
void lifecycle_collect(void);
/* the hooks off, the object closed (also when it ends early) */
void lifecycle_stop(void);
void proc_parent(struct node *n);
void proc_comm(struct node *n);
uint64_t lost_total(void);

/* ---- analysis (analyse.c) ---- */

void analyse(void);
const char *group_of(const struct node *n);
double share_pct(const struct gedge *e);
bool unread_of(const struct gedge *e, uint64_t *unread);

/* ---- output (label.c, out_*.c) ---- */

void node_label(const struct node *n, char *buf, size_t len);
char *edge_label(const struct gedge *e);
int node_lines(const struct node *n, char lines[][128]);
/* how DOT and Mermaid draw the nodes: a cluster's opening (printf of its
 * number, then its container id through str, then cluster_label_end), its
 * end, a node */
struct draw_style {
	const char *cluster, *cluster_label_end, *cluster_end;
	void (*str)(const char *s);
	void (*node)(const struct node *n, const char *indent);
};
void draw_nodes(const struct draw_style *s);
const char *colour_of(const char *kind);
double width_of(const struct gedge *e);
void human_bytes(uint64_t b, char *buf, size_t len);
bool put_non_ascii(const char **s);

void print_table(void);
void print_json(void);
void print_dot(void);
void print_mermaid(void);
void write_html(FILE *f, const char *path);

#endif
