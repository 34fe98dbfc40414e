// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * topograph: which processes feed which, through what, and where does it
 * jam?
 *
 * It runs socketsnoop and ipcsnoop (and, with --with, schedlat, nclstat
 * and gpulaunch) with --json and the shared filters, or reads their JSON
 * lines from files or stdin, and merges their "edge" lines (docs/edges.md)
 * into one graph of processes and endpoints. Its own BPF side, in a live
 * capture, traces process fork, exec and exit: the nodes' parents and
 * lifetimes, the identity of processes gone before the capture ends.
 * Bottlenecks are marked with the evidence that made them one.
 */
#define _GNU_SOURCE
#include <argp.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cgroup.h"
#include "json.h"
#include "jsonp.h"
#include "kfeatures.h"
#include "mapdrain.h"
#include "opts.h"
#include "run.h"
#include "table.h"
#include "util.h"
#include "topograph.h"
#include "topograph.skel.h"

#define TOOL "topograph"

#define MAX_IDS		64
#define MAX_WARN	5	/* bad input lines reported one by one */
#define BUSY_PCT	10.0	/* an edge with this share of the bytes is busy */
#define NCCL_LAG_CALLS	2	/* a rank this many calls behind its leader lags */

static const char doc[] =
"The communication graph of a host: which processes feed which, through\n"
"what channel (TCP/UDP flow, pipe, FIFO, unix socket, message queue), how\n"
"much, and where it jams.\n"
"\n"
"Without FILE, runs socketsnoop and ipcsnoop (found next to topograph, then\n"
"in PATH) for -d DUR, or until Ctrl-C, with the filters given, and merges\n"
"their edge lines; --with adds schedlat (run-queue p99 per process), nclstat\n"
"(NCCL ranks) and gpulaunch (CUDA launches). Its own BPF programs trace\n"
"process fork, exec and exit meanwhile: parents, lifetimes, exit status.\n"
"With FILEs ('-': stdin), or when stdin is not a terminal and -d is not\n"
"given, reads their --json lines instead. Bottlenecks: edges carrying a\n"
"large share of the bytes, processes with a high run-queue p99 on a busy\n"
"edge, NCCL ranks lagging their communicator, readers falling behind (bytes\n"
"written minus read growing), processes that exited in error or restarted.\n"
"\n"
"USAGE: topograph [OPTIONS] [FILE...]"
"\v"
"EXAMPLES:\n"
"  topograph -d 10s                        # the graph of 10 s, as a table\n"
"  topograph -d 10s --with schedlat --dot | dot -Tsvg > graph.svg\n"
"  topograph -d 30s --tree -j | jq 'select(.type==\"spawn\")'   # who started whom\n"
"  socketsnoop -j -d 30s > s.jsonl & ipcsnoop -j -d 30s > i.jsonl; wait\n"
"  topograph s.jsonl i.jsonl --mermaid     # the same capture, later\n"
"  topograph --container 3f2a -d 30s -j | jq 'select(.type==\"bottleneck\")'\n"
"  topograph < capture.jsonl -j | jq -r 'select(.type==\"edge\") | [.kind,.channel,.bytes] | @tsv'\n"
"\n"
"Exit status: 0 done, 1 runtime error, 2 usage error, 77 cannot run here.";

enum {
	OPT_CONTAINER = 0x100,
	OPT_COMM,
	OPT_WIDE,
	OPT_USAGE,
	OPT_DOT,
	OPT_MERMAID,
	OPT_WITH,
	OPT_HOT,
	OPT_RUNQ,
	OPT_BACKLOG,
	OPT_TREE,
	OPT_LIST_PROBES,
	OPT_PROBE_MODE,
};

/* The shared options that make sense here: the filters (passed to the
 * tools it runs, and to its own BPF side), -j, -d, --wide, -v, and the
 * attach plan of its lifecycle hooks. */
static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "Filters (passed to the tools run; with FILEs, an edge is kept when either end matches):", 10 },
	{ "pid", 'p', "PID[,PID...]", 0, "Only these processes (thread-group ids)", 10 },
	{ "tid", 't', "TID[,TID...]", 0, "Only these threads (live capture only)", 10 },
	{ "cgroup", 'c', "PATH", 0, "Only tasks in this cgroup directory or below it (live capture only)", 10 },
	{ "container", OPT_CONTAINER, "ID", 0, "Only this container: full id or unique prefix (>= 4 hex)", 10 },
	{ "uid", 'u', "UID", 0, "Only this user (number or name)", 10 },
	{ "comm", OPT_COMM, "NAME", 0, "Only tasks whose comm is NAME (first 15 bytes)", 10 },
	{ NULL, 0, NULL, 0, "Output and lifetime:", 11 },
	{ "json", 'j', NULL, 0, "JSON lines on stdout: nodes, edges, bottlenecks, summary", 11 },
	{ "dot", OPT_DOT, NULL, 0, "Graphviz DOT on stdout (edge width by bytes, colour by kind)", 11 },
	{ "mermaid", OPT_MERMAID, NULL, 0, "Mermaid flowchart on stdout", 11 },
	{ "duration", 'd', "DUR", 0, "Capture for DUR (500ms, 10, 10s, 2m); default: until Ctrl-C", 11 },
	{ "with", OPT_WITH, "TOOL[,TOOL...]", 0, "Also run schedlat, nclstat, gpulaunch (live capture)", 11 },
	{ "wide", OPT_WIDE, NULL, 0, "Never truncate strings in tables", 11 },
	{ "tree", OPT_TREE, NULL, 0, "Also every process forked, exec'd or exited in the capture, and parent->child spawn links", 11 },
	{ "verbose", 'v', NULL, 0, "Commands run and every line the tools print on stderr", 11 },
	{ NULL, 0, NULL, 0, "Bottleneck thresholds:", 12 },
	{ "hot", OPT_HOT, "PCT", 0, "An edge with at least PCT% of all bytes is hot (default 25)", 12 },
	{ "runq", OPT_RUNQ, "DUR", 0, "Run-queue p99 that is high on a busy edge (default 10ms)", 12 },
	{ "backlog", OPT_BACKLOG, "SIZE", 0, "Bytes written but not read that mark a reader behind (default 1M)", 12 },
	{ NULL, 0, NULL, 0, "Kernel side (the process lifecycle hooks of a live capture):", 13 },
	{ "list-probes", OPT_LIST_PROBES, NULL, 0, "Print the attach plan and exit", 13 },
	{ "probe-mode", OPT_PROBE_MODE, "MECH[,MECH...]", 0, "Use only these mechanisms: fentry, kprobe, tp_btf, raw_tp, tracepoint", 13 },
	{ "help", 'h', NULL, 0, "Give this help list", -1 },
	{ "usage", OPT_USAGE, NULL, 0, "Give a short usage message", -1 },
	{ "version", 'V', NULL, 0, "Print program version", -1 },
	{},
};

enum out_fmt { OUT_TABLE, OUT_JSON, OUT_DOT, OUT_MERMAID };

static const char *const extra_tools[] = { "schedlat", "nclstat", "gpulaunch" };

static struct {
	/* filters, as given (for the tools) and parsed (for files) */
	const char *pid_arg, *tid_arg, *cgroup_arg, *container_arg, *uid_arg, *comm_arg;
	uint32_t pids[MAX_IDS];
	int npids;
	bool has_uid;
	uint32_t uid;
	char comm[16];
	enum out_fmt out;
	int nout;
	const char *duration_arg;
	uint64_t duration_ns;
	bool with[3];		/* extra_tools[] */
	bool wide, verbose, tree;
	double hot_pct;
	uint64_t runq_ns;
	uint64_t backlog_bytes;
	char **files;
	int nfiles;
	bool live;		/* running the tools, not reading lines */
	bool tty;
} cfg = { .hot_pct = 25.0, .runq_ns = 10 * NSEC_PER_MSEC, .backlog_bytes = 1 << 20 };

/* A fatal error: one stderr line, an "error" record with --json. */
static void __attribute__((noreturn, format(printf, 2, 3))) fail(int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (cfg.out == OUT_JSON) {
		struct jw w;

		jw_init(&w, stdout);
		jw_record_begin(&w, "error", TOOL, clock_ns(CLOCK_REALTIME));
		jw_kstr(&w, "message", msg);
		jw_ki64(&w, "exit_code", code);
		jw_record_end(&w);
	}
	fflush(stdout);
	fprintf(stderr, TOOL ": %s\n", msg);
	exit(code);
}

static ssize_t discard_write(void *cookie, const char *buf, size_t size)
{
	return size;
}

static void parse_pids(const char *arg, const char *what)
{
	int r = parse_u32_list(arg, cfg.pids, MAX_IDS);

	if (r == -E2BIG)
		usage_error("too many %ss (at most %d): '%s'", what, MAX_IDS, arg);
	if (r <= 0)
		usage_error("invalid %s list '%s': expected numbers separated by commas", what, arg);
	for (int i = 0; i < r; i++)
		if (!cfg.pids[i])
			usage_error("invalid %s 0", what);
	cfg.npids = r;
}

static void parse_with(char *arg)
{
	char *save = NULL, *tok;

	for (tok = strtok_r(arg, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(extra_tools); i++)
			if (!strcmp(tok, extra_tools[i]))
				break;
		if (i == ARRAY_SIZE(extra_tools))
			usage_error("invalid --with '%s': expected schedlat, nclstat or gpulaunch", tok);
		cfg.with[i] = true;
	}
}

static void parse_uid(const char *arg)
{
	uint64_t v;

	if (!parse_u64(arg, &v)) {
		if (v > UINT32_MAX - 1)
			usage_error("invalid uid '%s'", arg);
		cfg.uid = v;
	} else if (!user_uid(arg, &cfg.uid)) {
		usage_error("no such user '%s'", arg);
	}
	cfg.has_uid = true;
	cfg.uid_arg = arg;
}

static void set_out(enum out_fmt f)
{
	if (cfg.nout++ && cfg.out != f)
		usage_error("--json, --dot and --mermaid exclude each other");
	cfg.out = f;
}

static void parse_threshold(int key, const char *arg)
{
	char *end;
	double pct;

	switch (key) {
	case OPT_HOT:
		pct = strtod(arg, &end);
		if (end == arg || *end || !(pct > 0 && pct <= 100))
			usage_error("invalid --hot '%s': expected a percentage above 0, at most 100", arg);
		cfg.hot_pct = pct;
		break;
	case OPT_RUNQ:
		if (parse_duration(arg, &cfg.runq_ns) || !cfg.runq_ns)
			usage_error("invalid --runq '%s': expected a positive duration such as 10ms", arg);
		break;
	case OPT_BACKLOG:
		if (parse_size(arg, &cfg.backlog_bytes) || !cfg.backlog_bytes)
			usage_error("invalid --backlog '%s': expected a size such as 64K or 1M", arg);
		break;
	}
}

static bool is_hex(const char *s)
{
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case ARGP_KEY_INIT: {
		static FILE *discard;
		cookie_io_functions_t io = { .write = discard_write };

		/* one line per usage error: argp's "Try --help" goes nowhere */
		if (!discard)
			discard = fopencookie(NULL, "w", io);
		if (discard)
			state->err_stream = discard;
		break;
	}
	case 'p':
		parse_pids(arg, "pid");
		cfg.pid_arg = arg;
		break;
	case 't': {
		uint32_t tids[MAX_IDS];
		int r = parse_u32_list(arg, tids, MAX_IDS);

		if (r <= 0)
			usage_error("invalid tid list '%s': expected numbers separated by commas", arg);
		for (int i = 0; i < r; i++)
			if (!tids[i])
				usage_error("invalid tid 0");
		cfg.tid_arg = arg;
		break;
	}
	case 'c':
		if (!*arg)
			usage_error("invalid --cgroup: empty path");
		cfg.cgroup_arg = arg;
		break;
	case OPT_CONTAINER:
		if (strlen(arg) < 4 || strlen(arg) > 64 || !is_hex(arg))
			usage_error("invalid container id '%s': expected 4 to 64 lowercase hex digits", arg);
		cfg.container_arg = arg;
		break;
	case 'u':
		parse_uid(arg);
		break;
	case OPT_COMM:
		if (!*arg)
			usage_error("invalid --comm: empty name");
		snprintf(cfg.comm, sizeof(cfg.comm), "%s", arg);
		cfg.comm_arg = arg;
		break;
	case 'j':
		set_out(OUT_JSON);
		break;
	case OPT_DOT:
		set_out(OUT_DOT);
		break;
	case OPT_MERMAID:
		set_out(OUT_MERMAID);
		break;
	case 'd':
		if (parse_duration(arg, &cfg.duration_ns) || !cfg.duration_ns)
			usage_error("invalid --duration '%s': expected a positive duration such as 500ms, 10, 10s or 2m",
				    arg);
		cfg.duration_arg = arg;
		break;
	case OPT_WITH:
		parse_with(arg);
		break;
	case OPT_WIDE:
		cfg.wide = true;
		break;
	case 'v':
		cfg.verbose = true;
		break;
	case OPT_TREE:
		cfg.tree = true;
		break;
	case OPT_LIST_PROBES:
		env.list_probes = true;
		break;
	case OPT_PROBE_MODE:
		/* every mechanism, as in the other tools: one without a
		 * candidate here leaves the hooks unattachable (exit 77) */
		aiscope_probe_mode(arg);
		break;
	case OPT_HOT:
	case OPT_RUNQ:
	case OPT_BACKLOG:
		parse_threshold(key, arg);
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case 'V':
		printf(TOOL " %s (aiscope)\n", AISCOPE_VERSION);
		exit(0);
	case OPT_USAGE:
		argp_state_help(state, stdout, ARGP_HELP_USAGE | ARGP_HELP_EXIT_OK);
		break;
	case ARGP_KEY_ARG:
		cfg.files = realloc(cfg.files, (cfg.nfiles + 1) * sizeof(*cfg.files));
		if (!cfg.files)
			usage_error("out of memory");
		cfg.files[cfg.nfiles++] = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = {
	.options = opts,
	.parser = parse_arg,
	.args_doc = "[FILE...]",
	.doc = doc,
};

/* ---- the graph ------------------------------------------------------- */

enum node_kind { N_PROC, N_UNSEEN, N_ENDPOINT };
static const char *const node_kind_names[] = { "process", "unseen", "endpoint" };

/* bottleneck rules, also node and edge flags */
enum rule { R_HOT, R_RUNQ, R_NCCL, R_BACKLOG, R_EXIT, R_RESTART, R_NR };
static const char *const rule_names[] = {
	"hot_edge", "runq", "nccl_lag", "reader_behind", "exit_failed", "restarted",
};
static const char *const rule_titles[] = {
	"hot edge", "run queue", "NCCL lag", "reader behind", "exit failed", "restarted",
};

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

struct node {
	enum node_kind kind;
	char *key;
	uint32_t pid;
	char *comm, *cgroup, *container_id, *runtime, *pod_uid;
	bool has_uid, has_cgid;
	uint32_t uid;
	uint64_t cgroup_id;
	char *endpoint;		/* N_ENDPOINT: ADDR:PORT; N_UNSEEN: the channel */
	bool has_runq;
	uint64_t runq_p99_ns, runq_wait_ns, runq_runs;
	bool cuda;
	uint64_t cuda_launches;
	struct ncl_rank *ncl;
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

static struct {
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
} G;

static void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size);

	if (!p)
		fail(EXIT_RUNTIME, "out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *d;

	if (!s)
		return NULL;
	d = strdup(s);
	if (!d)
		fail(EXIT_RUNTIME, "out of memory");
	return d;
}

static char *__attribute__((format(printf, 1, 2))) xasprintf(const char *fmt, ...)
{
	va_list ap;
	char *s;
	int r;

	va_start(ap, fmt);
	r = vasprintf(&s, fmt, ap);
	va_end(ap);
	if (r < 0)
		fail(EXIT_RUNTIME, "out of memory");
	return s;
}

static void set_str(char **dst, const char *s)
{
	if (!s || (*dst && !strcmp(*dst, s)))
		return;
	free(*dst);
	*dst = xstrdup(s);
}

static void *grow(void *arr, size_t *cap, size_t n, size_t size)
{
	if (n < *cap)
		return arr;
	*cap = *cap ? *cap * 2 : 64;
	arr = realloc(arr, *cap * size);
	if (!arr)
		fail(EXIT_RUNTIME, "out of memory");
	return arr;
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
	G.nv = grow(G.nv, &G.nn_cap, G.nn, sizeof(*G.nv));
	G.nv[G.nn++] = n;
	return n;
}

static struct node *proc_node(uint32_t pid)
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
static void node_ident(struct node *n, const struct jv *o)
{
	uint64_t v;

	set_str(&n->comm, jv_str(jv_get(o, "comm")));
	set_str(&n->cgroup, jv_str(jv_get(o, "cgroup")));
	set_str(&n->container_id, jv_str(jv_get(o, "container_id")));
	set_str(&n->runtime, jv_str(jv_get(o, "runtime")));
	set_str(&n->pod_uid, jv_str(jv_get(o, "pod_uid")));
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
static struct node *side_node(const struct jv *o, const char *kind, const char *channel)
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
			fail(EXIT_RUNTIME, "out of memory");
		n = node_get(N_ENDPOINT, key);
		set_str(&n->endpoint, ep);
	} else {
		if (asprintf(&key, "u:%s:%s", kind, channel) < 0)
			fail(EXIT_RUNTIME, "out of memory");
		n = node_get(N_UNSEEN, key);
		set_str(&n->endpoint, channel);
	}
	free(key);
	return n;
}

static struct source *source_of(const char *tool)
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

static bool node_matches(const struct node *n)
{
	if (n->kind != N_PROC)
		return false;
	if (cfg.npids) {
		int i;

		for (i = 0; i < cfg.npids; i++)
			if (cfg.pids[i] == n->pid)
				break;
		if (i == cfg.npids)
			return false;
	}
	if (cfg.comm_arg && (!n->comm || strncmp(n->comm, cfg.comm, 15)))
		return false;
	if (cfg.container_arg && (!n->container_id ||
				  strncmp(n->container_id, cfg.container_arg, strlen(cfg.container_arg))))
		return false;
	if (cfg.has_uid && (!n->has_uid || n->uid != cfg.uid))
		return false;
	return true;
}

static bool is_self(const struct node *n);

/* Files only: the tools of a live capture filter in the kernel. A live
 * capture leaves out the pipes between topograph and its tools. */
static bool edge_passes(const struct node *a, const struct node *b)
{
	if (cfg.live && (is_self(a) || is_self(b)))
		return false;
	if (cfg.live || (!cfg.npids && !cfg.comm_arg && !cfg.container_arg && !cfg.has_uid))
		return true;
	return node_matches(a) || node_matches(b);
}

static void min_str(char **dst, const char *s, bool max)
{
	if (!s)
		return;
	if (!*dst || (max ? strcmp(s, *dst) > 0 : strcmp(s, *dst) < 0))
		set_str(dst, s);
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
	char *key;
	uint32_t h;

	if (!kind || !channel || !jv_get(v, "src") || !jv_get(v, "dst") ||
	    !jv_u64(jv_get(v, "bytes"), &bytes)) {
		G.bad_lines++;
		return;
	}
	jv_u64(jv_get(v, "msgs"), &msgs);
	src = side_node(jv_get(v, "src"), kind, channel);
	dst = side_node(jv_get(v, "dst"), kind, channel);
	if (!edge_passes(src, dst)) {
		G.filtered++;
		return;
	}
	if (asprintf(&key, "%s\x1f%s\x1f%s\x1f%s", kind, channel, src->key, dst->key) < 0)
		fail(EXIT_RUNTIME, "out of memory");
	h = hash_str(key);
	for (e = G.edges[h]; e; e = e->hnext)
		if (!strcmp(e->key, key))
			break;
	if (!e) {
		e = xcalloc(1, sizeof(*e));
		e->key = key;
		e->kind = xstrdup(kind);
		e->channel = xstrdup(channel);
		/* topograph's own lines read back keep the tool they came from */
		e->tool = xstrdup(jv_str(jv_get(v, "source")) ?: tool);
		e->src = src;
		e->dst = dst;
		e->src_ep = xstrdup(jv_str(jv_get(jv_get(v, "src"), "endpoint")));
		e->dst_ep = xstrdup(jv_str(jv_get(jv_get(v, "dst"), "endpoint")));
		e->hnext = G.edges[h];
		G.edges[h] = e;
		G.ev = grow(G.ev, &G.ne_cap, G.ne, sizeof(*G.ev));
		G.ev[G.ne++] = e;
	} else {
		free(key);
	}
	e->bytes += bytes;
	e->msgs += msgs;
	if (jv_u64(rb, &rbytes)) {
		e->read_bytes += rbytes;
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

/* schedlat "sample" rows by pid: the worst interval's p99, total wait */
static void add_schedlat(const struct jv *v)
{
	const char *by = jv_str(jv_get(v, "by"));
	uint64_t pid, p99 = 0, x;
	struct node *n;

	if (by && !strcmp(by, "host")) {
		if (jv_u64(jv_get(v, "p99_ns"), &p99) && p99 > G.host_p99_ns)
			G.host_p99_ns = p99;
		G.has_host_p99 = true;
		return;
	}
	if ((by && strcmp(by, "pid")) || !jv_u64(jv_get(v, "pid"), &pid) || !pid ||
	    pid > UINT32_MAX || !jv_u64(jv_get(v, "p99_ns"), &p99))
		return;
	n = proc_node(pid);
	if (!n->comm)
		node_ident(n, v);
	n->has_runq = true;
	if (p99 > n->runq_p99_ns)
		n->runq_p99_ns = p99;
	if (jv_u64(jv_get(v, "wait_ns"), &x))
		n->runq_wait_ns += x;
	if (jv_u64(jv_get(v, "runs"), &x))
		n->runq_runs += x;
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

/* nclstat's "comm" row: per local rank its pid, rank and op sequence
 * number (the latest row wins) */
static void add_ncl_comm(const struct jv *v, const char *hash)
{
	const struct jv *a = jv_get(v, "ranks");
	int64_t nranks = -1;

	jv_i64(jv_get(v, "nranks"), &nranks);
	for (a = a && a->type == JV_ARR ? a->child : NULL; a; a = a->next) {
		uint64_t pid;
		struct ncl_rank *r;

		if (!jv_u64(jv_get(a, "pid"), &pid) || !pid || pid > UINT32_MAX)
			continue;
		r = ncl_rank_of(proc_node(pid), hash);
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

/* nclstat: its "comm" rows, and any record naming a process, a
 * communicator (comm_hash) and a rank: per-op samples ("calls" in the
 * interval), call events (one each). */
static void add_nclstat(const struct jv *v, const char *type)
{
	const char *hash = jv_str(jv_get(v, "comm_hash")), *row = jv_str(jv_get(v, "row"));
	const char *op = jv_str(jv_get(v, "op"));
	struct ncl_rank *r;
	struct node *n;
	uint64_t pid, calls;

	if (!hash)
		return;
	if (row && !strcmp(row, "comm")) {
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
		r->sample_calls += calls;
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
		n->cuda_launches += launches;
	else if (!strcmp(type, "event"))
		n->cuda_launches++;
}

static bool rfc3339_ns(const char *s, uint64_t *ns);

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
		n->execs += x;
		n->has_life = true;
	}
	if (jv_u64(jv_get(v, "reexecs"), &x))
		n->reexecs += x;
	set_str(&n->exec_file, jv_str(jv_get(v, "exec_filename")));
	if (rfc3339_ns(jv_str(jv_get(v, "started_ts")), &n->started_ns))
		n->has_life = true;
	if (!rfc3339_ns(jv_str(jv_get(v, "exited_ts")), &n->exited_ns))
		return;
	n->has_life = true;
	if (jv_u64(jv_get(v, "exit_signal"), &x))
		n->status = (x & 0x7f) | (core && core->type == JV_BOOL && core->b ? 0x80 : 0);
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
	n = proc_node(pid);
	node_ident(n, v);
	own_life(n, v);
	if (jv_u64(jv_get(v, "runq_p99_ns"), &x)) {
		n->has_runq = true;
		if (x > n->runq_p99_ns)
			n->runq_p99_ns = x;
		if (jv_u64(jv_get(v, "runq_wait_ns"), &x))
			n->runq_wait_ns += x;
		if (jv_u64(jv_get(v, "runq_runs"), &x))
			n->runq_runs += x;
	}
	if (jv_u64(jv_get(v, "cuda_launches"), &x)) {
		n->cuda = true;
		n->cuda_launches += x;
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
			s->lost_summary += x;
	} else if (!strcmp(type, "lost")) {
		if (jv_u64(jv_get(v, "lost_events"), &x))
			s->lost_lines += x;
	} else if (!strcmp(type, "error") && !cfg.live) {
		fprintf(stderr, TOOL ": the capture has an error from %s: %s\n", s->tool,
			jv_str(jv_get(v, "message")) ?: "(no message)");
	}
}

static struct jp parser;

static void bad_line(const char *name, uint64_t lineno, const char *why)
{
	G.bad_lines++;
	if (G.bad_lines <= MAX_WARN)
		fprintf(stderr, TOOL ": %s:%llu: skipped: %s\n", name, (unsigned long long)lineno, why);
	if (G.bad_lines == MAX_WARN + 1)
		fprintf(stderr, TOOL ": more lines skipped: their count is in the summary\n");
}

/* One JSON line of any aiscope tool. */
static void ingest(const char *name, uint64_t lineno, const char *line, size_t len)
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
	} else if (!strcmp(tool, "nclstat")) {
		add_nclstat(v, type);
	} else if (!strcmp(tool, "gpulaunch")) {
		add_gpulaunch(v, type);
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
		fail(EXIT_RUNTIME, "out of memory");
	while (!stop_reading()) {
		if (len == cap) {
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				fail(EXIT_RUNTIME, "out of memory");
		}
		n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			fail(EXIT_RUNTIME, "cannot read %s: %s", name, strerror(errno));
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

static void read_files(void)
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
			fail(EXIT_USAGE, "cannot open '%s': %s", name, strerror(errno));
		read_stream(fd, name);
		close(fd);
	}
	if (stop_reading())
		G.exit_reason = "signal";
}

/* Files: every one can be opened and none is a directory (usage errors
 * come before any output). */
static void check_files(void)
{
	struct stat st;

	for (int i = 0; i < cfg.nfiles; i++) {
		if (!strcmp(cfg.files[i], "-"))
			continue;
		if (access(cfg.files[i], R_OK))
			usage_error("cannot read '%s': %s", cfg.files[i], strerror(errno));
		if (!stat(cfg.files[i], &st) && S_ISDIR(st.st_mode))
			usage_error("'%s' is a directory", cfg.files[i]);
	}
}

/* ---- live capture: the tools as children ----------------------------- */

struct child {
	const char *tool;
	char path[PATH_MAX];
	pid_t pid;
	int out_fd, err_fd;
	char *out_buf, *err_buf;	/* partial lines */
	size_t out_len, err_len;
	char *held;			/* stderr before it traces */
	size_t held_len;
	uint64_t lineno;
	bool tracing, exited, killed;
	int code;			/* exit code, 128+signal */
};

static struct child kids[5];
static int nkids;

/* topograph itself or a tool it runs */
static bool is_self(const struct node *n)
{
	if (n->kind != N_PROC)
		return false;
	if (n->pid == (uint32_t)getpid())
		return true;
	for (int i = 0; i < nkids; i++)
		if (n->pid == (uint32_t)kids[i].pid)
			return true;
	return false;
}
static uint64_t traced_mono_ns;	/* when the last tool said it traces */

/* next to our own binary, then PATH */
static bool find_tool(const char *tool, char *out, size_t len, char *self_dir)
{
	const char *path = getenv("PATH");
	char *copy, *save = NULL, *dir;
	bool found = false;

	if (snprintf(out, len, "%s/%s", self_dir, tool) < (int)len && !access(out, X_OK))
		return true;
	if (!path)
		return false;
	copy = xstrdup(path);
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		if (snprintf(out, len, "%s/%s", *dir ? dir : ".", tool) < (int)len &&
		    !access(out, X_OK)) {
			found = true;
			break;
		}
	}
	free(copy);
	return found;
}

static void add_arg(char **argv, int *argc, const char *a, const char *b)
{
	argv[(*argc)++] = (char *)a;
	if (b)
		argv[(*argc)++] = (char *)b;
}

static void spawn(struct child *k, const sigset_t *oldmask)
{
	char *argv[24];
	int argc = 0, out[2], err[2];

	add_arg(argv, &argc, k->path, "--json");
	if (cfg.duration_arg)
		add_arg(argv, &argc, "--duration", cfg.duration_arg);
	if (cfg.pid_arg)
		add_arg(argv, &argc, "--pid", cfg.pid_arg);
	if (cfg.tid_arg)
		add_arg(argv, &argc, "--tid", cfg.tid_arg);
	if (cfg.cgroup_arg)
		add_arg(argv, &argc, "--cgroup", cfg.cgroup_arg);
	if (cfg.container_arg)
		add_arg(argv, &argc, "--container", cfg.container_arg);
	if (cfg.uid_arg)
		add_arg(argv, &argc, "--uid", cfg.uid_arg);
	if (cfg.comm_arg)
		add_arg(argv, &argc, "--comm", cfg.comm_arg);
	argv[argc] = NULL;
	if (cfg.verbose) {
		fprintf(stderr, TOOL ": running");
		for (int i = 0; i < argc; i++)
			fprintf(stderr, " %s", argv[i]);
		fputc('\n', stderr);
	}
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		fail(EXIT_RUNTIME, "pipe: %s", strerror(errno));
	k->pid = fork();
	if (k->pid < 0)
		fail(EXIT_RUNTIME, "fork: %s", strerror(errno));
	if (!k->pid) {
		/* its own process group: a terminal's Ctrl-C reaches topograph,
		 * which passes it on once; and it ends if we die */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sigprocmask(SIG_SETMASK, oldmask, NULL);
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		execv(k->path, argv);
		dprintf(STDERR_FILENO, "%s: cannot run %s: %s\n", k->tool, k->path, strerror(errno));
		_exit(EXIT_CANNOT_RUN);
	}
	close(out[1]);
	close(err[1]);
	k->out_fd = out[0];
	k->err_fd = err[0];
}

static void hold(struct child *k, const char *line, size_t len)
{
	char *p = realloc(k->held, k->held_len + len + 1);

	if (!p)
		fail(EXIT_RUNTIME, "out of memory");
	memcpy(p + k->held_len, line, len);
	p[k->held_len + len] = '\n';
	k->held = p;
	k->held_len += len + 1;
}

static bool all_tracing(void)
{
	for (int i = 0; i < nkids; i++)
		if (!kids[i].tracing)
			return false;
	return true;
}

static void announce(void)
{
	fprintf(stderr, "Tracing the communication graph with");
	for (int i = 0; i < nkids; i++)
		fprintf(stderr, "%s %s", i ? "," : "", kids[i].tool);
	if (cfg.duration_arg)
		fprintf(stderr, " for %s.\n", cfg.duration_arg);
	else
		fprintf(stderr, "... Ctrl-C to end.\n");
}

/* A child's stderr line: its "Tracing" line marks it attached; before
 * that, lines are held (a usage error is printed once, by the first tool
 * that fails); after it, forwarded (warnings about lost events). */
static void child_err_line(struct child *k, const char *line, size_t len)
{
	if (!k->tracing && memmem(line, len, "Tracing", 7)) {
		k->tracing = true;
		if (cfg.verbose)
			fprintf(stderr, "%.*s\n", (int)len, line);
		if (all_tracing()) {
			traced_mono_ns = clock_ns(CLOCK_MONOTONIC);
			announce();
		}
		return;
	}
	if (!k->tracing && !cfg.verbose) {
		hold(k, line, len);
		return;
	}
	fprintf(stderr, "%.*s\n", (int)len, line);
}

static void child_out_line(struct child *k, const char *line, size_t len)
{
	ingest(k->tool, ++k->lineno, line, len);
}

/* Reads what is there; calls fn per complete line. False at EOF (or, when
 * last, once nothing more is there). */
static bool drain(struct child *k, int *fd, char **buf, size_t *blen,
		  void (*fn)(struct child *, const char *, size_t), bool last)
{
	char chunk[65536];
	ssize_t n = read(*fd, chunk, sizeof(chunk));
	char *p, *nl, *start;

	if (n < 0 && (errno == EINTR || (errno == EAGAIN && !last)))
		return true;
	if (n <= 0) {
		if (*blen)
			fn(k, *buf, *blen);	/* a last line without its newline */
		*blen = 0;
		close(*fd);
		*fd = -1;
		return false;
	}
	p = realloc(*buf, *blen + n);
	if (!p)
		fail(EXIT_RUNTIME, "out of memory");
	*buf = p;
	memcpy(p + *blen, chunk, n);
	*blen += n;
	start = p;
	while ((nl = memchr(start, '\n', p + *blen - start))) {
		fn(k, start, nl - start);
		start = nl + 1;
	}
	*blen = p + *blen - start;
	memmove(p, start, *blen);
	return true;
}

static void stop_kids(int sig, struct child *except)
{
	for (int i = 0; i < nkids; i++) {
		struct child *k = &kids[i];

		if (k == except || k->exited)
			continue;
		if (sig == SIGTERM)
			k->killed = true;
		kill(k->pid, sig);
	}
}

static void reap(void)
{
	int status;

	for (int i = 0; i < nkids; i++) {
		struct child *k = &kids[i];

		if (k->exited || waitpid(k->pid, &status, WNOHANG) != k->pid)
			continue;
		k->exited = true;
		k->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
}

static bool all_exited(void)
{
	for (int i = 0; i < nkids; i++)
		if (!kids[i].exited)
			return false;
	return true;
}

static void final_drain(void)
{
	for (int i = 0; i < nkids; i++) {
		struct child *k = &kids[i];

		if (k->out_fd >= 0) {
			fcntl(k->out_fd, F_SETFL, O_NONBLOCK);
			while (drain(k, &k->out_fd, &k->out_buf, &k->out_len, child_out_line, true))
				;
		}
		if (k->err_fd >= 0) {
			fcntl(k->err_fd, F_SETFL, O_NONBLOCK);
			while (drain(k, &k->err_fd, &k->err_buf, &k->err_len, child_err_line, true))
				;
		}
	}
}

static struct child *first_failed(void)
{
	for (int i = 0; i < nkids; i++)
		if (kids[i].exited && kids[i].code && !kids[i].killed)
			return &kids[i];
	return NULL;
}

static void locate_kids(void)
{
	const char *want[5] = { "socketsnoop", "ipcsnoop" };
	char self[PATH_MAX], missing[256] = "";
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int nwant = 2;

	if (n <= 0)
		snprintf(self, sizeof(self), ".");
	else
		self[n] = 0;
	if (strrchr(self, '/'))
		*strrchr(self, '/') = 0;
	for (size_t i = 0; i < ARRAY_SIZE(extra_tools); i++)
		if (cfg.with[i])
			want[nwant++] = extra_tools[i];
	for (int i = 0; i < nwant; i++) {
		struct child *k = &kids[nkids];

		k->tool = want[i];
		if (!find_tool(want[i], k->path, sizeof(k->path), self)) {
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 "%s%s", *missing ? ", " : "", want[i]);
			continue;
		}
		nkids++;
	}
	if (*missing)
		fail(EXIT_CANNOT_RUN, "cannot run here: %s not found (looked in %s and PATH)",
		     missing, self);
}

/* The shared filters, checked before any tool starts, so that a bad
 * value gives one line (the tools would each print theirs). */
static void check_live_filters(void)
{
	char path[64];
	struct stat st;

	for (int i = 0; i < cfg.npids; i++) {
		snprintf(path, sizeof(path), "/proc/%u", cfg.pids[i]);
		if (access(path, F_OK))
			usage_error("no such process %u", cfg.pids[i]);
	}
	if (cfg.cgroup_arg && (stat(cfg.cgroup_arg, &st) || !S_ISDIR(st.st_mode)))
		usage_error("no such cgroup '%s'", cfg.cgroup_arg);
}

/* A tool ended in error: its last line before it traced is the one line
 * we print (a usage error, a missing privilege), with its exit code. */
static void __attribute__((noreturn)) child_failed(struct child *k)
{
	int code = k->code == EXIT_USAGE || k->code == EXIT_CANNOT_RUN ? k->code : EXIT_RUNTIME;
	char *end, *last;

	if (cfg.verbose || !k->held_len)
		fail(code, "%s exited with status %d: no graph", k->tool, k->code);
	end = k->held + k->held_len - 1;	/* the last newline */
	*end = 0;
	last = strrchr(k->held, '\n');
	fail(code, "%s", last ? last + 1 : k->held);
}


/* ---- live capture: the process lifecycle (bpf/topograph.bpf.c) ------- */

/* Tracepoints only: their arguments are a stable ABI, and each is one
 * place in the kernel (a function hook would need several). */
static struct probe_hook hooks[] = {
	{ .name = "sched_process_fork", .cand = {
		{ PM_TP_BTF, "sched_process_fork", "fork_btf" },
		{ PM_RAW_TP, "sched_process_fork", "fork_raw" },
		{ PM_TRACEPOINT, "sched/sched_process_fork", "fork_tp" } } },
	{ .name = "sched_process_exec", .cand = {
		{ PM_TP_BTF, "sched_process_exec", "exec_btf" },
		{ PM_RAW_TP, "sched_process_exec", "exec_raw" },
		{ PM_TRACEPOINT, "sched/sched_process_exec", "exec_tp" } } },
	{ .name = "sched_process_exit", .cand = {
		{ PM_TP_BTF, "sched_process_exit", "exit_btf" },
		{ PM_RAW_TP, "sched_process_exit", "exit_raw" },
		{ PM_TRACEPOINT, "sched/sched_process_exit", "exit_tp" } } },
};

static struct {
	struct topograph_bpf *skel;
	struct aiscope_bpf bpf;
	bool on;		/* loaded and attached */
	uint64_t records;	/* processes it saw */
} L;

/* The filters in lib/opts' env, for the BPF side, resolved as every tool
 * does (the tools run get the options as given). */
static void env_filters(void)
{
	env.json = cfg.out == OUT_JSON;
	env.verbose = false;	/* -v is about the tools here */
	env.npids = cfg.npids;
	memcpy(env.pids, cfg.pids, cfg.npids * sizeof(cfg.pids[0]));
	if (cfg.tid_arg)
		env.ntids = parse_u32_list(cfg.tid_arg, env.tids, AISCOPE_MAX_IDS);
	env.has_uid = cfg.has_uid;
	env.uid = cfg.uid;
	memcpy(env.comm, cfg.comm, sizeof(env.comm));
	env.cgroup_arg = cfg.cgroup_arg;
	env.container_arg = cfg.container_arg;
	aiscope_setup(TOOL);
}

/* Opens the object and resolves the plan: --list-probes ends here, and a
 * kernel without any candidate of a hook exits 77 naming them. */
static void lifecycle_open(void)
{
	env_filters();
	L.skel = topograph_bpf__open_opts(aiscope_open_opts());
	if (!L.skel)
		fail(EXIT_RUNTIME, "cannot open the BPF object: %s", strerror(errno));
	L.skel->rodata->self_tgid = getpid();
	L.bpf = (struct aiscope_bpf){ .hooks = hooks, .nhooks = ARRAY_SIZE(hooks) };
	aiscope_bpf_prepare(&L.bpf, L.skel->obj, &L.skel->rodata->aiscope_cfg);
}

/* Before the tools start: what they see, it has seen from the start. */
static void lifecycle_start(void)
{
	sigset_t mask;

	lifecycle_open();
	aiscope_bpf_load(&L.bpf, topograph_bpf__load(L.skel));
	sigprocmask(SIG_SETMASK, NULL, &mask);
	aiscope_bpf_attach(&L.bpf);
	/* attach blocks SIGINT and SIGTERM for lib/run's loop: capture()
	 * has its own signalfd, and the tools must not inherit them blocked */
	sigprocmask(SIG_SETMASK, &mask, NULL);
	L.on = true;
}

/* "/a/b/c" from the names read in BPF, leaf first; NULL when its depth
 * is more than they hold */
static char *record_cgroup(const struct topo_proc *r)
{
	char path[TOPO_CG_LEVELS * (TOPO_CG_NAME + 1) + 2] = "";
	size_t len = 0;

	if (r->cg_level > r->cg_levels)
		return NULL;
	if (!r->cg_levels)
		return xstrdup("/");
	for (int i = r->cg_levels - 1; i >= 0; i--)
		len += snprintf(path + len, sizeof(path) - len, "/%.*s", TOPO_CG_NAME,
				r->cg_name[i]);
	return xstrdup(path);
}

/* Classic tracepoints record new threads too: a pid never seen exec or
 * exit that /proc says is a thread is one. */
static bool is_thread(uint32_t pid)
{
	char path[64], line[128];
	unsigned int tgid = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %u", &tgid) == 1)
			break;
	fclose(f);
	return tgid != pid;
}

/* The identity a record knows fills what the edges did not say: a
 * process gone before the capture ended had its cgroup, whose directory
 * may be gone too (the tools then print it null). */
static void record_ident(struct node *n, const struct topo_proc *r)
{
	struct container_info ci;
	const char *live;
	char comm[AISCOPE_COMM_LEN + 1];

	snprintf(comm, sizeof(comm), "%.*s", AISCOPE_COMM_LEN, r->comm);
	if (!n->comm)
		set_str(&n->comm, comm);
	if (!n->has_uid) {
		n->uid = r->uid;
		n->has_uid = true;
	}
	if (n->has_cgid && n->cgroup_id != r->cgroup_id)
		return;		/* it moved: the edges' cgroup is the later one */
	n->cgroup_id = r->cgroup_id;
	n->has_cgid = true;
	if (!n->cgroup) {
		live = cg_path_of(r->cgroup_id, r->cgroup_v1);
		n->cgroup = live ? xstrdup(live) : record_cgroup(r);
	}
	if (!n->container_id && n->cgroup && cg_parse_container(n->cgroup, &ci) && ci.id[0]) {
		set_str(&n->container_id, ci.id);
		set_str(&n->runtime, ci.runtime);
		if (ci.pod_uid[0])
			set_str(&n->pod_uid, ci.pod_uid);
	}
}

static void take_record(const void *key, const void *value, void *ctx)
{
	const struct topo_proc *r = value;
	struct node *n;
	char file[TOPO_FILE_LEN + 1];

	if (!r->pid || ((r->flags & TOPO_MAYBE_THREAD) && is_thread(r->pid)))
		return;
	n = proc_node(r->pid);
	L.records++;
	n->has_life = true;
	n->has_ppid = true;
	n->ppid = r->ppid;
	if (r->flags & TOPO_FORKED)
		n->started_ns = aiscope_realtime(r->fork_ns);
	if (r->flags & TOPO_EXITED) {
		n->exited_ns = aiscope_realtime(r->exit_ns);
		n->status = r->exit_code;
	}
	n->execs = r->execs;
	n->reexecs = r->reexecs;
	if (r->filename[0]) {
		snprintf(file, sizeof(file), "%.*s", TOPO_FILE_LEN, r->filename);
		set_str(&n->exec_file, file);
	}
	record_ident(n, r);
}

/* Once the tools have ended: the records into the nodes. */
static void lifecycle_collect(void)
{
	if (!L.on)
		return;
	map_drain(bpf_map__fd(L.skel->maps.procs), sizeof(uint32_t), sizeof(struct topo_proc),
		  NULL, take_record, NULL);
	aiscope_lost_check(&L.bpf);
	aiscope_bpf_destroy(&L.bpf);
	topograph_bpf__destroy(L.skel);
	L.skel = NULL;
}

/* A live process's parent, from /proc (it forked before the capture). */
static void proc_parent(struct node *n)
{
	char path[64], buf[512], *p;
	unsigned int ppid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/stat", n->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	if (p && sscanf(p + 1, " %*c %u", &ppid) == 1) {
		n->ppid = ppid;
		n->has_ppid = true;
	}
	fclose(f);
}

/* ... and its name, for a parent that is a node only for --tree */
static void proc_comm(struct node *n)
{
	char path[64], buf[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", n->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = 0;
		set_str(&n->comm, buf);
	}
	fclose(f);
}

static int capture(void)
{
	sigset_t mask, old;
	struct pollfd pfd[11];
	struct child *failed;
	int sfd;
	bool stopping = false;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), stop_mono_ns = 0, start, end;

	check_live_filters();
	locate_kids();
	lifecycle_start();
	/* as lib/run does: a shell without job control starts "topograph &"
	 * with SIGINT ignored, which no signalfd would see (and the tools
	 * would inherit) */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &old);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		fail(EXIT_RUNTIME, "signalfd: %s", strerror(errno));
	for (int i = 0; i < nkids; i++)
		spawn(&kids[i], &old);

	for (;;) {
		int n = 0, map[11];

		pfd[n] = (struct pollfd){ .fd = sfd, .events = POLLIN };
		map[n++] = -1;
		for (int i = 0; i < nkids; i++) {
			if (kids[i].out_fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = kids[i].out_fd, .events = POLLIN };
				map[n++] = 2 * i;
			}
			if (kids[i].err_fd >= 0) {
				pfd[n] = (struct pollfd){ .fd = kids[i].err_fd, .events = POLLIN };
				map[n++] = 2 * i + 1;
			}
		}
		reap();
		if (all_exited()) {
			/* what they wrote is in the pipes: read it to the end, but
			 * not what a process they left behind may still write */
			final_drain();
			break;
		}
		if (poll(pfd, n, 200) < 0 && errno != EINTR)
			fail(EXIT_RUNTIME, "poll: %s", strerror(errno));
		for (int i = 0; i < n; i++) {
			struct child *k;

			if (!(pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (map[i] < 0) {
				struct signalfd_siginfo si;

				while (read(sfd, &si, sizeof(si)) == sizeof(si))
					if (si.ssi_signo != SIGCHLD && !stopping) {
						stopping = true;
						stop_mono_ns = clock_ns(CLOCK_MONOTONIC);
						G.exit_reason = "signal";
						stop_kids(SIGINT, NULL);
					}
				continue;
			}
			k = &kids[map[i] / 2];
			if (map[i] % 2 == 0)
				drain(k, &k->out_fd, &k->out_buf, &k->out_len, child_out_line, false);
			else
				drain(k, &k->err_fd, &k->err_buf, &k->err_len, child_err_line, false);
		}
		reap();
		failed = first_failed();
		if (failed && !stopping) {
			/* one tool cannot run: the others stop, quietly */
			stopping = true;
			stop_kids(SIGTERM, failed);
		}
	}
	close(sfd);
	sigprocmask(SIG_SETMASK, &old, NULL);
	failed = first_failed();
	if (failed)
		child_failed(failed);
	if (!G.exit_reason)
		G.exit_reason = "duration";
	/* the rates are over the time every tool traced: from the last one's
	 * "Tracing" line to Ctrl-C or the end of -d (not the tools' exit) */
	end = stop_mono_ns ? stop_mono_ns : clock_ns(CLOCK_MONOTONIC);
	if (cfg.duration_ns && t0 + cfg.duration_ns < end)
		end = t0 + cfg.duration_ns;
	start = traced_mono_ns ? traced_mono_ns : t0;
	G.window_ns = end > start ? end - start : 0;
	return 0;
}

/* ---- analysis -------------------------------------------------------- */

/* "2026-11-29T11:20:01.123456789Z" -> realtime ns */
static bool rfc3339_ns(const char *s, uint64_t *ns)
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

static const char *group_of(const struct node *n)
{
	if (n->kind == N_ENDPOINT)
		return "\xff";	/* external endpoints last */
	return n->container_id ? n->container_id : "";
}

static int cmp_nodes(const void *a, const void *b)
{
	const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;
	int c = strcmp(group_of(x), group_of(y));

	if (c)
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

static double share_pct(const struct gedge *e)
{
	return G.total_bytes ? 100.0 * e->bytes / G.total_bytes : 0;
}

static bool unread_of(const struct gedge *e, uint64_t *unread)
{
	if (!e->read_known || e->read_missing)
		return false;
	*unread = e->bytes > e->read_bytes ? e->bytes - e->read_bytes : 0;
	return true;
}

static void node_label(const struct node *n, char *buf, size_t len)
{
	switch (n->kind) {
	case N_PROC:
		snprintf(buf, len, "%u/%s", n->pid, n->comm ? n->comm : "?");
		break;
	case N_ENDPOINT:
		snprintf(buf, len, "%s", n->endpoint);
		break;
	default:
		snprintf(buf, len, "(unseen)");
	}
}

/* "fifo 4242/producer -> 4243/transformer (/tmp/x.fifo)", allocated */
static char *edge_label(const struct gedge *e)
{
	char a[128], b[128];

	node_label(e->src, a, sizeof(a));
	node_label(e->dst, b, sizeof(b));
	return xasprintf("%s %s -> %s (%s)", e->kind, a, b, e->channel);
}

static struct bottleneck *add_bn(enum rule r, struct node *n, struct gedge *e)
{
	struct bottleneck *b;

	G.bn = realloc(G.bn, (G.nbn + 1) * sizeof(*G.bn));
	if (!G.bn)
		fail(EXIT_RUNTIME, "out of memory");
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

static void lag_of_comm(const char *hash)
{
	struct node *lead = NULL, *low = NULL;
	struct ncl_rank *lr = NULL, *wr = NULL;
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
	b->evidence = xasprintf(
		 "rank %lld (%u/%s) of communicator %s lags: %s %llu against %llu of rank %lld (%u/%s); its last op %s",
		 (long long)wr->rank, low->pid, low->comm ? low->comm : "?", hash,
		 seq ? "op sequence" : "calls", (unsigned long long)progress(wr, seq),
		 (unsigned long long)progress(lr, seq), (long long)lr->rank, lead->pid,
		 lead->comm ? lead->comm : "?", wr->last_op ? wr->last_op : "unknown");
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

static struct node *node_find_pid(uint32_t pid)
{
	char key[32];
	struct node *n;

	snprintf(key, sizeof(key), "p:%u", pid);
	for (n = G.nodes[hash_str(key)]; n; n = n->hnext)
		if (!strcmp(n->key, key))
			return n;
	return NULL;
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
		p = proc_node(n->ppid);
		if (p->has_life || p->degree || p->tree_parent)
			continue;
		p->tree_parent = true;
		if (cfg.live && !p->comm)
			proc_comm(p);
		if (cfg.live && !p->has_ppid)
			proc_parent(p);
	}
}

static bool shown(const struct node *n)
{
	if (n->degree)
		return true;
	return cfg.tree && (n->has_life || n->tree_parent) && !is_self(n);
}

static void spawn_links(void)
{
	for (size_t i = 0; i < G.nshown; i++) {
		struct node *n = G.shown[i], *p;

		if (!n->has_ppid || !(p = node_find_pid(n->ppid)) || !p->id)
			continue;
		G.spawn = grow(G.spawn, &G.spawn_cap, G.nspawn + 2, sizeof(*G.spawn));
		G.spawn[G.nspawn++] = p;
		G.spawn[G.nspawn++] = n;
	}
}

static void analyse(void)
{
	size_t n = 0;

	for (size_t i = 0; i < G.ne; i++) {
		struct gedge *e = G.ev[i];

		G.total_bytes += e->bytes;
		e->src->tx += e->bytes;
		e->dst->rx += e->bytes;
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
	qsort(G.shown, n, sizeof(*G.shown), cmp_nodes);
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
	qsort(G.ev, G.ne, sizeof(*G.ev), cmp_edges);
	for (size_t i = 0; i < G.ne; i++)
		G.ev[i]->id = i + 1;
	find_window();
	rule_hot_edges();
	rule_runq();
	rule_nccl();
	rule_backlog();
	rule_exit();
	rule_restart();
}

/* ---- output: JSON ---------------------------------------------------- */

/* the identity of a node, as edges.md writes a side; ep: its endpoint */
static void json_ident(struct jw *w, const struct node *n, const char *ep)
{
	bool p = n->kind == N_PROC;

	if (p)
		jw_ku64(w, "pid", n->pid);
	else
		jw_knull(w, "pid");
	jw_knull(w, "tid");
	jw_kstr(w, "comm", p ? n->comm : NULL);
	if (p && n->has_uid)
		jw_ku64(w, "uid", n->uid);
	else
		jw_knull(w, "uid");
	if (p && n->has_cgid)
		jw_ku64(w, "cgroup_id", n->cgroup_id);
	else
		jw_knull(w, "cgroup_id");
	jw_kstr(w, "cgroup", p ? n->cgroup : NULL);
	jw_kstr(w, "container_id", p ? n->container_id : NULL);
	jw_kstr(w, "runtime", p ? n->runtime : NULL);
	jw_kstr(w, "pod_uid", p ? n->pod_uid : NULL);
	jw_kstr(w, "endpoint", n->kind == N_ENDPOINT ? n->endpoint : ep);
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

static void json_ts(struct jw *w, const char *key, uint64_t ns)
{
	char buf[64];

	if (!ns) {
		jw_knull(w, key);
		return;
	}
	fmt_rfc3339_ns(ns, buf, sizeof(buf));
	jw_kstr(w, key, buf);
}

/* what the lifecycle hooks saw (docs/edges.md: topograph's node lines) */
static void json_life(struct jw *w, const struct node *n)
{
	const struct node *p = n->has_ppid ? node_find_pid(n->ppid) : NULL;
	char id[16];

	if (n->has_ppid)
		jw_ku64(w, "ppid", n->ppid);
	else
		jw_knull(w, "ppid");
	snprintf(id, sizeof(id), "n%d", p ? p->id : 0);
	jw_kstr(w, "parent_id", p && p->id ? id : NULL);
	json_ts(w, "started_ts", n->started_ns);
	json_ts(w, "exited_ts", n->exited_ns);
	if (n->exited_ns && !(n->status & 0x7f))
		jw_ku64(w, "exit_code", (n->status >> 8) & 0xff);
	else
		jw_knull(w, "exit_code");
	if (n->exited_ns && (n->status & 0x7f))
		jw_ku64(w, "exit_signal", n->status & 0x7f);
	else
		jw_knull(w, "exit_signal");
	if (n->exited_ns)
		jw_kbool(w, "core_dumped", n->status & 0x80);
	else
		jw_knull(w, "core_dumped");
	if (n->has_life) {
		jw_ku64(w, "execs", n->execs);
		jw_ku64(w, "reexecs", n->reexecs);
	} else {
		jw_knull(w, "execs");
		jw_knull(w, "reexecs");
	}
	jw_kstr(w, "exec_filename", n->exec_file);
}

static void json_node(struct jw *w, const struct node *n, uint64_t now)
{
	char id[16];

	snprintf(id, sizeof(id), "n%d", n->id);
	jw_record_begin(w, "node", TOOL, now);
	jw_kstr(w, "id", id);
	jw_kstr(w, "kind", node_kind_names[n->kind]);
	json_ident(w, n, NULL);
	jw_kstr(w, "channel", n->kind == N_UNSEEN ? n->endpoint : NULL);
	jw_ku64(w, "tx_bytes", n->tx);
	jw_ku64(w, "rx_bytes", n->rx);
	if (n->has_runq) {
		jw_ku64(w, "runq_p99_ns", n->runq_p99_ns);
		jw_ku64(w, "runq_wait_ns", n->runq_wait_ns);
		jw_ku64(w, "runq_runs", n->runq_runs);
	} else {
		jw_knull(w, "runq_p99_ns");
		jw_knull(w, "runq_wait_ns");
		jw_knull(w, "runq_runs");
	}
	if (n->cuda)
		jw_ku64(w, "cuda_launches", n->cuda_launches);
	else
		jw_knull(w, "cuda_launches");
	jw_key(w, "nccl");
	if (!n->ncl) {
		jw_null(w);
	} else {
		jw_arr_begin(w);
		for (const struct ncl_rank *r = n->ncl; r; r = r->next) {
			jw_obj_begin(w);
			jw_kstr(w, "comm_hash", r->comm_hash);
			if (r->has_rank)
				jw_ki64(w, "rank", r->rank);
			else
				jw_knull(w, "rank");
			if (r->has_nranks)
				jw_ki64(w, "nranks", r->nranks);
			else
				jw_knull(w, "nranks");
			jw_ku64(w, "calls", r->calls);
			if (r->has_seq)
				jw_ku64(w, "op_seq", r->op_seq);
			else
				jw_knull(w, "op_seq");
			jw_kstr(w, "last_op", r->last_op);
			jw_obj_end(w);
		}
		jw_arr_end(w);
	}
	json_life(w, n);
	json_rules(w, n->flags);
	jw_record_end(w);
}

static void json_edge(struct jw *w, const struct gedge *e, uint64_t now)
{
	char id[16];
	uint64_t unread;

	snprintf(id, sizeof(id), "e%d", e->id);
	jw_record_begin(w, "edge", TOOL, now);
	jw_kstr(w, "kind", e->kind);
	jw_kstr(w, "channel", e->channel);
	jw_key(w, "src");
	jw_obj_begin(w);
	json_ident(w, e->src, e->src_ep);
	jw_obj_end(w);
	jw_key(w, "dst");
	jw_obj_begin(w);
	json_ident(w, e->dst, e->dst_ep);
	jw_obj_end(w);
	jw_ku64(w, "bytes", e->bytes);
	jw_ku64(w, "msgs", e->msgs);
	if (e->read_known && !e->read_missing)
		jw_ku64(w, "read_bytes", e->read_bytes);
	else
		jw_knull(w, "read_bytes");
	jw_kstr(w, "first_ts", e->first_ts);
	jw_kstr(w, "last_ts", e->last_ts);
	jw_kstr(w, "id", id);
	snprintf(id, sizeof(id), "n%d", e->src->id);
	jw_kstr(w, "src_id", id);
	snprintf(id, sizeof(id), "n%d", e->dst->id);
	jw_kstr(w, "dst_id", id);
	jw_kstr(w, "source", e->tool);
	if (e->readers)
		jw_ku64(w, "readers", e->readers);
	else
		jw_knull(w, "readers");
	if (G.window_ns)
		jw_kdouble(w, "rate_bytes_per_sec", e->bytes * 1e9 / G.window_ns, 1);
	else
		jw_knull(w, "rate_bytes_per_sec");
	jw_kdouble(w, "share_ratio", G.total_bytes ? (double)e->bytes / G.total_bytes : 0, 6);
	if (unread_of(e, &unread))
		jw_ku64(w, "unread_bytes", unread);
	else
		jw_knull(w, "unread_bytes");
	json_rules(w, e->flags);
	jw_record_end(w);
}

static void json_bottleneck(struct jw *w, const struct bottleneck *b, uint64_t now)
{
	char id[16];

	jw_record_begin(w, "bottleneck", TOOL, now);
	jw_kstr(w, "rule", rule_names[b->rule]);
	if (b->node) {
		snprintf(id, sizeof(id), "n%d", b->node->id);
		jw_kstr(w, "node", id);
	} else {
		jw_knull(w, "node");
	}
	if (b->edge) {
		snprintf(id, sizeof(id), "e%d", b->edge->id);
		jw_kstr(w, "edge", id);
	} else {
		jw_knull(w, "edge");
	}
	jw_kdouble(w, "value", b->value, b->rule == R_HOT ? 1 : 0);
	jw_kdouble(w, "threshold", b->threshold, b->rule == R_HOT ? 1 : 0);
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
	json_ts(w, "started_ts", c->started_ns);
	jw_record_end(w);
}

static uint64_t lost_total(void)
{
	uint64_t lost = aiscope_lost_total(&L.bpf);

	for (struct source *s = G.sources; s; s = s->next)
		lost += s->has_summary ? s->lost_summary : s->lost_lines;
	return lost;
}

static void print_json(void)
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
	if (G.window_ns)
		jw_ku64(&w, "duration_ns", G.window_ns);
	else
		jw_knull(&w, "duration_ns");
	jw_ku64(&w, "lines", G.lines);
	jw_ku64(&w, "bad_lines", G.bad_lines);
	jw_ku64(&w, "filtered_edges", G.filtered);
	jw_ku64(&w, "lost_events", lost_total());
	if (L.on)
		jw_ku64(&w, "processes_traced", L.records);
	else
		jw_knull(&w, "processes_traced");
	jw_key(&w, "sources");
	jw_obj_begin(&w);
	for (struct source *s = G.sources; s; s = s->next)
		jw_ku64(&w, s->tool, s->lines);
	jw_obj_end(&w);
	jw_kstr(&w, "exit_reason", G.exit_reason);
	jw_record_end(&w);
}

/* ---- output: the terminal view -------------------------------------- */

static const struct tcol node_cols[] = {
	{ "ID", 4, 0 }, { "PID", 7, 0 }, { "PPID", 7, 0 }, { "COMM", 16, TC_LEFT }, { "TX(KiB)", 10, 0 },
	{ "RX(KiB)", 10, 0 }, { "RUNQ_P99(us)", 12, 0 }, { "CUDA_LAUNCHES", 13, 0 },
	{ "NCCL", 14, TC_LEFT }, { "EXIT", 6, TC_LEFT },
	{ "FLAGS", 8, TC_LEFT },
};

static const struct tcol edge_cols[] = {
	{ "KIND", 7, TC_LEFT }, { "SRC", 22, TC_LEFT }, { "DST", 22, TC_LEFT },
	{ "BYTES", 12, 0 }, { "MSGS", 8, 0 }, { "RATE(KiB/s)", 11, 0 }, { "UNREAD", 10, 0 },
	{ "CHANNEL", 30, TC_LEFT },
};

static void flags_str(unsigned int flags, char *buf, size_t len)
{
	static const char *const short_names[] = {
		"hot", "runq", "nccl", "behind", "exit", "restart",
	};

	*buf = 0;
	for (int r = 0; r < R_NR; r++)
		if (flags & (1u << r))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", *buf ? "," : "",
				 short_names[r]);
	if (!*buf)
		snprintf(buf, len, "-");
}

/* "3", "SIG9", "-": still alive, or its end not seen */
static void exit_str(const struct node *n, char *buf, size_t len)
{
	if (!n->exited_ns)
		snprintf(buf, len, "-");
	else if (n->status & 0x7f)
		snprintf(buf, len, "SIG%d", n->status & 0x7f);
	else
		snprintf(buf, len, "%d", (n->status >> 8) & 0xff);
}

static void print_group_header(const struct node *n)
{
	char short_id[13];

	if (n->kind == N_ENDPOINT) {
		printf("[external]\n");
		return;
	}
	if (!n->container_id) {
		printf("[host]\n");
		return;
	}
	snprintf(short_id, sizeof(short_id), "%s", n->container_id);
	printf("[container %s]\n", short_id);
}

static void table_node(struct table *t, const struct node *n)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "n%d", n->id);
	table_str(t, buf);
	if (n->kind == N_PROC)
		table_u64(t, n->pid);
	else
		table_str(t, "-");
	if (n->has_ppid)
		table_u64(t, n->ppid);
	else
		table_str(t, "-");
	if (n->kind == N_PROC)
		table_str(t, n->comm ? n->comm : "?");
	else
		table_str(t, n->kind == N_ENDPOINT ? n->endpoint : "(unseen)");
	table_fixed(t, n->tx / 1024.0, 1);
	table_fixed(t, n->rx / 1024.0, 1);
	if (n->has_runq)
		table_fixed(t, n->runq_p99_ns / 1e3, 1);
	else
		table_str(t, "-");
	if (n->cuda)
		table_u64(t, n->cuda_launches);
	else
		table_str(t, "-");
	if (n->ncl)
		snprintf(buf, sizeof(buf), "rank %lld/%lld", (long long)n->ncl->rank,
			 (long long)n->ncl->nranks);
	else
		snprintf(buf, sizeof(buf), "-");
	table_str(t, buf);
	exit_str(n, buf, sizeof(buf));
	table_str(t, buf);
	flags_str(n->flags, buf, sizeof(buf));
	table_str(t, buf);
	table_end_row(t);
}

static void print_nodes(bool elide)
{
	struct table t;
	const char *group = NULL;

	printf("NODES\n");
	table_init(&t, stdout, node_cols, ARRAY_SIZE(node_cols), elide);
	for (size_t i = 0; i < G.nshown; i++) {
		const struct node *n = G.shown[i];

		if (!group || strcmp(group, group_of(n))) {
			group = group_of(n);
			print_group_header(n);
			table_header(&t);
		}
		table_node(&t, n);
	}
}

static void print_edges(bool elide)
{
	struct table t;
	char a[128];
	uint64_t unread;

	printf("\nEDGES\n");
	table_init(&t, stdout, edge_cols, ARRAY_SIZE(edge_cols), elide);
	table_header(&t);
	for (size_t i = 0; i < G.ne; i++) {
		const struct gedge *e = G.ev[i];

		table_str(&t, e->kind);
		node_label(e->src, a, sizeof(a));
		table_str(&t, a);
		node_label(e->dst, a, sizeof(a));
		table_str(&t, a);
		table_u64(&t, e->bytes);
		table_u64(&t, e->msgs);
		if (G.window_ns)
			table_fixed(&t, e->bytes * 1e9 / G.window_ns / 1024.0, 1);
		else
			table_str(&t, "-");
		if (unread_of(e, &unread))
			table_u64(&t, unread);
		else
			table_str(&t, "-");
		table_str(&t, e->channel);
		table_end_row(&t);
	}
}

static void print_spawns(void)
{
	char a[128], b[128], when[64];

	printf("\nSPAWNS\n");
	if (!G.nspawn)
		printf("  none\n");
	for (size_t i = 0; i < G.nspawn; i += 2) {
		node_label(G.spawn[i], a, sizeof(a));
		node_label(G.spawn[i + 1], b, sizeof(b));
		if (G.spawn[i + 1]->started_ns)
			fmt_rfc3339_ns(G.spawn[i + 1]->started_ns, when, sizeof(when));
		else
			snprintf(when, sizeof(when), "before the capture");
		printf("  n%d %s -> n%d %s (%s)\n", G.spawn[i]->id, a, G.spawn[i + 1]->id, b, when);
	}
}

static void print_table(void)
{
	bool elide = cfg.tty && !cfg.wide;
	char dur[32] = "?";
	uint64_t lost = lost_total();

	if (G.window_ns)
		fmt_duration(G.window_ns, dur, sizeof(dur));
	printf("# topograph: %zu nodes, %zu edges, %llu bytes in %s\n", G.nshown, G.ne,
	       (unsigned long long)G.total_bytes, dur);
	if (!G.ne && !G.nshown) {
		printf("(no edges: nothing moved between the processes seen)\n");
		return;
	}
	print_nodes(elide);
	if (G.ne)
		print_edges(elide);
	else
		printf("\n(no edges: nothing moved between the processes seen)\n");
	if (cfg.tree)
		print_spawns();
	printf("\nBOTTLENECKS\n");
	if (!G.nbn)
		printf("  none\n");
	for (size_t i = 0; i < G.nbn; i++) {
		printf("  %-13s ", rule_titles[G.bn[i].rule]);
		for (const char *c = G.bn[i].evidence; *c; c++)	/* a comm cannot move the cursor */
			putchar((unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c);
		putchar('\n');
	}
	if (!G.any_runq)
		printf("  (no run-queue data: add --with schedlat, or schedlat's --json lines)\n");
	if (lost)
		fprintf(stderr, TOOL ": %llu events were lost by the tools: the graph is incomplete (--buffer-size, a filter)\n",
			(unsigned long long)lost);
}

/* ---- output: DOT and Mermaid ---------------------------------------- */

static const struct { const char *kind, *colour; } kind_colours[] = {
	{ "tcp", "#1f77b4" }, { "udp", "#17becf" }, { "pipe", "#2ca02c" }, { "fifo", "#8c564b" },
	{ "unix", "#ff7f0e" }, { "msq", "#9467bd" }, { "mq", "#e377c2" }, { "eventfd", "#7f7f7f" },
	{ "shm", "#bcbd22" },
};

static const char *colour_of(const char *kind)
{
	for (size_t i = 0; i < ARRAY_SIZE(kind_colours); i++)
		if (!strcmp(kind, kind_colours[i].kind))
			return kind_colours[i].colour;
	return "#000000";
}

/* 1 to 8: proportional to the bytes, the biggest edge widest */
static double width_of(const struct gedge *e)
{
	uint64_t max = G.ne ? G.ev[0]->bytes : 0;

	return max ? 1.0 + 7.0 * e->bytes / max : 1.0;
}

static void human_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= 1ULL << 30)
		snprintf(buf, len, "%.1f GiB", b / 1073741824.0);
	else if (b >= 1ULL << 20)
		snprintf(buf, len, "%.1f MiB", b / 1048576.0);
	else if (b >= 1ULL << 10)
		snprintf(buf, len, "%.1f KiB", b / 1024.0);
	else
		snprintf(buf, len, "%llu B", (unsigned long long)b);
}

/* The lines of a node's label: "pid comm", then what is known of it. */
static int node_lines(const struct node *n, char lines[][128])
{
	int k = 0;

	if (n->kind == N_PROC)
		snprintf(lines[k++], 128, "%u %s", n->pid, n->comm ? n->comm : "?");
	else if (n->kind == N_ENDPOINT)
		snprintf(lines[k++], 128, "%s", n->endpoint);
	else
		snprintf(lines[k++], 128, "reader not seen: %s", n->endpoint);
	if (n->has_runq)
		snprintf(lines[k++], 128, "runq p99 %.1f ms", n->runq_p99_ns / 1e6);
	if (n->ncl)
		snprintf(lines[k++], 128, "nccl rank %lld/%lld", (long long)n->ncl->rank,
			 (long long)n->ncl->nranks);
	if (n->cuda)
		snprintf(lines[k++], 128, "cuda %llu launches", (unsigned long long)n->cuda_launches);
	if (n->exited_ns && (n->status & 0x7f))
		snprintf(lines[k++], 128, "killed by signal %d", n->status & 0x7f);
	else if (n->exited_ns)
		snprintf(lines[k++], 128, "exit %d", (n->status >> 8) & 0xff);
	if (n->execs >= 2)
		snprintf(lines[k++], 128, "exec'd %llu times", (unsigned long long)n->execs);
	return k;
}

/* The length of the valid UTF-8 sequence at s, 0 when it is not one:
 * DOT and Mermaid text must be valid UTF-8, whatever a comm holds. */
static int utf8_len(const unsigned char *s)
{
	int n = s[0] < 0x80 ? 1 : s[0] >= 0xc2 && s[0] <= 0xdf ? 2 :
		s[0] >= 0xe0 && s[0] <= 0xef ? 3 : s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : 0;

	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if ((n == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (n == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
	    (n == 4 && s[0] == 0xf0 && s[1] < 0x90) || (n == 4 && s[0] == 0xf4 && s[1] >= 0x90))
		return 0;	/* overlong, surrogate, beyond U+10FFFF */
	return n;
}

/* Writes the multi-byte sequence at *s (or '?' for an invalid byte) and
 * moves *s past it; false for a plain ASCII byte, left to the caller. */
static bool put_non_ascii(const char **s)
{
	const unsigned char *u = (const unsigned char *)*s;
	int n;

	if (u[0] < 0x80)
		return false;
	n = utf8_len(u);
	if (n)
		fwrite(u, 1, n, stdout);
	else
		putchar('?');
	*s += n ? n - 1 : 0;
	return true;
}

/* DOT string contents: quotes and backslashes escaped, control bytes
 * shown as '?' (a label's own line breaks are written by the caller) */
static void dot_str(const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (put_non_ascii(&s))
			continue;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else
			putchar(c < 0x20 || c == 0x7f ? '?' : c);
	}
}

static void dot_node(const struct node *n, const char *indent)
{
	char lines[6][128];
	int k = node_lines(n, lines);

	printf("%sn%d [label=\"", indent, n->id);
	for (int i = 0; i < k; i++) {
		dot_str(lines[i]);
		if (i + 1 < k)
			printf("\\n");
	}
	printf("\"");
	if (n->kind != N_PROC)
		printf(", shape=ellipse, style=dashed");
	if (n->flags)
		printf(", color=\"#d62728\", penwidth=3");
	printf("];\n");
}

static void print_dot(void)
{
	const char *group = NULL;
	bool open = false;
	int cluster = 0;
	char b[32];

	printf("digraph topograph {\n");
	printf("  graph [rankdir=LR, fontname=\"Helvetica\", label=\"topograph: %zu nodes, %zu edges\"];\n",
	       G.nshown, G.ne);
	printf("  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n");
	printf("  edge [fontname=\"Helvetica\", fontsize=10];\n");
	for (size_t i = 0; i < G.nshown; i++) {
		const struct node *n = G.shown[i];

		if (!group || strcmp(group, group_of(n))) {
			if (open)
				printf("  }\n");
			group = group_of(n);
			open = n->container_id && n->kind != N_ENDPOINT;
			if (open) {
				printf("  subgraph cluster_%d {\n    label=\"container ", ++cluster);
				dot_str(n->container_id);
				printf("\";\n");
			}
		}
		dot_node(n, open ? "    " : "  ");
	}
	if (open)
		printf("  }\n");
	for (size_t i = 0; i < G.ne; i++) {
		const struct gedge *e = G.ev[i];

		human_bytes(e->bytes, b, sizeof(b));
		printf("  n%d -> n%d [label=\"%s %s\", tooltip=\"", e->src->id, e->dst->id, e->kind, b);
		dot_str(e->channel);
		printf("\", color=\"%s\", penwidth=%.2f%s];\n", colour_of(e->kind), width_of(e),
		       e->flags ? ", style=bold" : "");
	}
	for (size_t i = 0; cfg.tree && i < G.nspawn; i += 2)
		printf("  n%d -> n%d [label=\"spawn\", style=dashed, color=\"#999999\", arrowhead=empty];\n",
		       G.spawn[i]->id, G.spawn[i + 1]->id);
	printf("}\n");
}

/* Mermaid label text inside "...": entity codes for what its parser or
 * the HTML it renders would take as syntax */
static void mm_str(const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (put_non_ascii(&s))
			continue;
		switch (c) {
		case '"': printf("#quot;"); break;
		case '#': printf("#35;"); break;
		case '<': printf("#lt;"); break;
		case '>': printf("#gt;"); break;
		case '&': printf("#amp;"); break;
		default:
			putchar(c < 0x20 || c == 0x7f ? '?' : c);
		}
	}
}

static void mm_node(const struct node *n, const char *indent)
{
	char lines[6][128];
	int k = node_lines(n, lines);

	printf("%sn%d%s\"", indent, n->id, n->kind == N_PROC ? "[" : "([");
	for (int i = 0; i < k; i++) {
		mm_str(lines[i]);
		if (i + 1 < k)
			printf("<br/>");
	}
	printf("\"%s\n", n->kind == N_PROC ? "]" : "])");
}

static void print_mermaid(void)
{
	const char *group = NULL;
	bool open = false, any_flag = false;
	int cluster = 0;
	char b[32];

	printf("flowchart LR\n");
	for (size_t i = 0; i < G.nshown; i++) {
		const struct node *n = G.shown[i];

		if (!group || strcmp(group, group_of(n))) {
			if (open)
				printf("  end\n");
			group = group_of(n);
			open = n->container_id && n->kind != N_ENDPOINT;
			if (open) {
				printf("  subgraph c%d[\"container ", ++cluster);
				mm_str(n->container_id);
				printf("\"]\n");
			}
		}
		mm_node(n, open ? "    " : "  ");
		any_flag |= n->flags != 0;
	}
	if (open)
		printf("  end\n");
	for (size_t i = 0; i < G.ne; i++) {
		const struct gedge *e = G.ev[i];

		human_bytes(e->bytes, b, sizeof(b));
		printf("  n%d -->|\"", e->src->id);
		mm_str(e->kind);
		printf(" %s\"| n%d\n", b, e->dst->id);
	}
	/* after the edges: linkStyle numbers them from 0 */
	for (size_t i = 0; cfg.tree && i < G.nspawn; i += 2)
		printf("  n%d -.->|\"spawn\"| n%d\n", G.spawn[i]->id, G.spawn[i + 1]->id);
	for (size_t i = 0; i < G.ne; i++)
		printf("  linkStyle %zu stroke:%s,stroke-width:%.1fpx\n", i, colour_of(G.ev[i]->kind),
		       width_of(G.ev[i]));
	if (!any_flag)
		return;
	printf("  classDef bottleneck stroke:#d62728,stroke-width:3px\n");
	for (size_t i = 0; i < G.nshown; i++)
		if (G.shown[i]->flags)
			printf("  class n%d bottleneck\n", G.shown[i]->id);
}

/* ---- main ------------------------------------------------------------ */

static void check_output(void)
{
	if (fflush(stdout) || ferror(stdout)) {
		if (errno == EPIPE)
			exit(0);	/* the reader went away (topograph | head) */
		fprintf(stderr, TOOL ": cannot write the output: %s\n", strerror(errno));
		exit(EXIT_RUNTIME);
	}
}

int main(int argc, char **argv)
{
	env.tool = TOOL;
	argp_err_exit_status = EXIT_USAGE;
	if (argp_parse(&argp, argc, argv, ARGP_NO_HELP, NULL, NULL))
		return EXIT_USAGE;
	signal(SIGPIPE, SIG_IGN);
	cfg.tty = isatty(STDOUT_FILENO);
	/* no FILE: live unless stdin is a file or a pipe and -d is not given */
	cfg.live = !cfg.nfiles && (cfg.duration_arg || isatty(STDIN_FILENO));
	if (env.list_probes) {
		if (cfg.nfiles)
			usage_error("--list-probes shows the hooks of a live capture: not with FILEs");
		lifecycle_open();	/* prints the plan and exits */
	}
	if (!cfg.nfiles && !cfg.live) {
		static char *dash[] = { "-" };

		cfg.files = dash;
		cfg.nfiles = 1;
	}
	if (!cfg.live) {
		if (cfg.tid_arg || cfg.cgroup_arg)
			usage_error("%s filters a live capture only: edge lines carry no %s",
				    cfg.tid_arg ? "--tid" : "--cgroup",
				    cfg.tid_arg ? "thread id" : "cgroup directory");
		if (cfg.duration_arg)
			usage_error("--duration is for a live capture: not with FILEs");
		if (env.probe_mask != PM_ALL)
			usage_error("--probe-mode is for a live capture: not with FILEs");
		for (size_t i = 0; i < ARRAY_SIZE(extra_tools); i++)
			if (cfg.with[i])
				usage_error("--with is for a live capture: with FILEs, give the tools' lines");
		check_files();
	}
	jp_init(&parser);
	if (cfg.live) {
		capture();
		lifecycle_collect();
	} else {
		read_files();
	}
	analyse();
	switch (cfg.out) {
	case OUT_JSON: print_json(); break;
	case OUT_DOT: print_dot(); break;
	case OUT_MERMAID: print_mermaid(); break;
	default: print_table();
	}
	check_output();
	if (G.bad_lines && cfg.out != OUT_TABLE)
		fprintf(stderr, TOOL ": %llu input lines skipped\n", (unsigned long long)G.bad_lines);
	jp_free(&parser);
	return 0;
}
