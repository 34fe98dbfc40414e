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
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "topo.h"

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

struct topo_cfg cfg = { .hot_pct = 25.0, .runq_ns = 10 * NSEC_PER_MSEC, .backlog_bytes = 1 << 20 };

/* A fatal error: one stderr line, an "error" record with --json. */
void fail(int code, const char *fmt, ...)
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
		aiscope_print_version(TOOL);
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
	ingest_init();
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
	if (G.capped)
		fprintf(stderr, TOOL ": %llu sums passed 2^64 - 1 and were held at 18446744073709551615: the input's counters are out of range\n",
			(unsigned long long)G.capped);
	ingest_done();
	return 0;
}
