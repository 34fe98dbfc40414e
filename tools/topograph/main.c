// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * topograph: which processes feed which, through what, and where does it
 * jam?
 *
 * It runs socketsnoop and ipcsnoop (and, with --with, schedlat, nclstat,
 * gpulaunch and rdmasnoop) with --json and the shared filters, or reads their JSON
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
#include "complete.h"
#include "topo.h"

static const char doc[] =
"The communication graph of a host: which processes feed which, through\n"
"what channel (TCP/UDP flow, pipe, FIFO, unix socket, message queue), how\n"
"much, and where it jams.\n"
"\n"
"Without FILE, runs socketsnoop and ipcsnoop (found next to topograph, then\n"
"in PATH) for -d DUR, or until Ctrl-C, with the filters given, and merges\n"
"their edge lines; --with adds schedlat (run-queue p99 per process), nclstat\n"
"(NCCL ranks), gpulaunch (CUDA launches), rdmasnoop (RDMA verbs traffic\n"
"between queue pairs) and numaplace (NUMA placement against the GPUs and\n"
"NICs in use). Its own BPF programs trace\n"
"process fork, exec and exit meanwhile: parents, lifetimes, exit status.\n"
"With FILEs ('-': stdin), or when stdin is not a terminal and -d is not\n"
"given, reads their --json lines instead; with --prometheus, the edges that\n"
"the hosts' socketsnoop and ipcsnoop export, from a Prometheus server, as\n"
"one graph across hosts. Bottlenecks: edges carrying a\n"
"large share of the bytes, processes with a high run-queue p99 on a busy\n"
"edge, NCCL ranks lagging their communicator, readers falling behind (bytes\n"
"written minus read growing), processes that exited in error or restarted,\n"
"processes whose CPU time or memory sits off the node of their GPU or NIC.\n"
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
"  topograph --prometheus http://prom:9090 --range 2h   # the cluster's graph\n"
"\n"
"Exit status: 0 done, 1 runtime error, 2 usage error, 77 cannot run here.";

enum {
	OPT_DOT = AISCOPE_KEY_TOOL,
	OPT_MERMAID,
	OPT_WITH,
	OPT_HOT,
	OPT_RUNQ,
	OPT_BACKLOG,
	OPT_TREE,
	OPT_PROMETHEUS,
	OPT_RANGE,
	OPT_HTML,
	OPT_MAX_SKEW,
};

/* The shared options that make sense here: the filters (passed to the
 * tools it runs, and to its own BPF side), -j, -d, --wide, -v, and the
 * attach plan of its lifecycle hooks. */
static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "Filters (passed to the tools run; with FILEs, an edge is kept when either end matches):", 10 },
	AISCOPE_OPTION_PID(10),
	AISCOPE_OPTION_TID("Only these threads (live capture only)", 10),
	AISCOPE_OPTION_CGROUP("Only tasks in this cgroup directory or below it (live capture only)", 10),
	AISCOPE_OPTION_CONTAINER(10),
	AISCOPE_OPTION_POD("Only this Kubernetes pod's containers (live: as the tools; with FILEs: the lines' pod_name)", 10),
	AISCOPE_OPTION_NAMESPACE("Only this namespace's containers, or with --pod the pod's (with FILEs: the lines' pod_namespace)", 10),
	AISCOPE_OPTION_UID(10),
	AISCOPE_OPTION_COMM(10),
	{ NULL, 0, NULL, 0, "Output and lifetime:", 11 },
	{ "json", 'j', NULL, 0, "JSON lines on stdout: nodes, edges, bottlenecks, summary", 11 },
	{ "dot", OPT_DOT, NULL, 0, "Graphviz DOT on stdout (edge width by bytes, colour by kind)", 11 },
	{ "mermaid", OPT_MERMAID, NULL, 0, "Mermaid flowchart on stdout", 11 },
	{ "html", OPT_HTML, "FILE", 0, "Also write the graph as one self-contained HTML page (SVG, no script) to FILE", 11 },
	{ "duration", 'd', "DUR", 0, "Capture for DUR (500ms, 10, 10s, 2m); default: until Ctrl-C", 11 },
	{ "with", OPT_WITH, "TOOL[,TOOL...]", 0, "Also run schedlat, nclstat, gpulaunch, rdmasnoop, numaplace (live capture)", 11 },
	AISCOPE_OPTION_WIDE(11),
	{ "tree", OPT_TREE, NULL, 0, "Also every process forked, exec'd or exited in the capture, and parent->child spawn links", 11 },
	{ "verbose", 'v', NULL, 0, "Commands run and every line the tools print on stderr", 11 },
	{ NULL, 0, NULL, 0, "Input from Prometheus (instead of a capture or FILEs):", 12 },
	{ "prometheus", OPT_PROMETHEUS, "URL", 0, "Every host's graph from the Prometheus server at URL (http://HOST[:PORT][/PATH]): the edges their socketsnoop and ipcsnoop export", 12 },
	{ "range", OPT_RANGE, "DUR", 0, "With --prometheus: the edges scraped in the last DUR (default 1h), with their run totals as last scraped", 12 },
	{ NULL, 0, NULL, 0, "Bottleneck thresholds:", 13 },
	{ "hot", OPT_HOT, "PCT", 0, "An edge with at least PCT% of all bytes is hot (default 25)", 13 },
	{ "runq", OPT_RUNQ, "DUR", 0, "Run-queue p99 that is high on a busy edge (default 10ms)", 13 },
	{ "backlog", OPT_BACKLOG, "SIZE", 0, "Bytes written but not read that mark a reader behind (default 1M)", 13 },
	{ "max-skew", OPT_MAX_SKEW, "DUR", 0, "Hosts' clocks differ by at most DUR: the two halves of a flow seen further apart are not joined (default 10s)", 13 },
	{ NULL, 0, NULL, 0, "Kernel side (the process lifecycle hooks of a live capture):", 14 },
	AISCOPE_OPTION_LIST_PROBES(14),
	/* every mechanism, as in the other tools: one without a candidate
	 * here leaves the hooks unattachable (exit 77) */
	AISCOPE_OPTION_PROBE_MODE(14),
	AISCOPE_OPTIONS_HELP,
	{},
};

/* what the shell completions offer after its options (lib/complete.h) */
const struct opt_value aiscope_opt_values[] = {
	{ .name = "with", .kind = OV_LIST, .words = extra_tools },
	/* a URL, not the metrics FILE of the other tools' --prometheus */
	{ .name = "prometheus", .kind = OV_FREE },
	{},
};

struct topo_cfg cfg = { .hot_pct = 25.0, .runq_ns = 10 * NSEC_PER_MSEC, .backlog_bytes = 1 << 20,
			 .max_skew_ns = 10 * NSEC_PER_SEC };

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
	case OPT_MAX_SKEW:
		if (parse_duration(arg, &cfg.max_skew_ns))
			usage_error("invalid --max-skew '%s': expected a duration such as 500ms or 10s", arg);
		cfg.skew_arg = arg;
		break;
	}
}

/* The filters as given, for the tools it runs (lib/opts parses them into
 * env, for its own BPF side and for the files' edges). */
static void keep_filter_arg(int key, const char *arg)
{
	switch (key) {
	case 'p': cfg.pid_arg = arg; break;
	case 't': cfg.tid_arg = arg; break;
	case 'u': cfg.uid_arg = arg; break;
	case AISCOPE_KEY_COMM: cfg.comm_arg = arg; break;
	}
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'j':
		set_out(OUT_JSON);
		/* lib/opts: env.json, the error record of aiscope_fail */
		return aiscope_parse_shared(key, arg, state);
	case OPT_DOT:
		set_out(OUT_DOT);
		break;
	case OPT_MERMAID:
		set_out(OUT_MERMAID);
		break;
	case OPT_HTML:
		if (!*arg)
			usage_error("invalid --html '': expected a file name");
		cfg.html_path = arg;
		break;
	case 'd':
		cfg.duration_arg = arg;
		return aiscope_parse_shared(key, arg, state);
	case OPT_WITH:
		cfg.with |= opt_words("--with", arg, extra_tools);
		break;
	case 'v':
		cfg.verbose = true;	/* the tools' lines; libbpf's stay quiet */
		break;
	case OPT_TREE:
		cfg.tree = true;
		break;
	case OPT_PROMETHEUS:
		prom_url_parse(arg);
		cfg.prom_url = arg;
		break;
	case OPT_RANGE:
		if (parse_duration(arg, &cfg.prom_range_ns) || cfg.prom_range_ns < NSEC_PER_MSEC)
			usage_error("invalid --range '%s': expected a duration of 1ms or more, such as 30m or 2h", arg);
		cfg.range_arg = arg;
		break;
	case OPT_HOT:
	case OPT_RUNQ:
	case OPT_BACKLOG:
	case OPT_MAX_SKEW:
		parse_threshold(key, arg);
		break;
	case ARGP_KEY_ARG:
		cfg.files = aiscope_grow(cfg.files, &cfg.files_cap, cfg.nfiles, sizeof(*cfg.files));
		cfg.files[cfg.nfiles++] = arg;
		break;
	default:
		keep_filter_arg(key, arg);
		return aiscope_parse_shared(key, arg, state);
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

/* --prometheus is the input: not with FILEs or a live capture's options */
static void check_prometheus_args(void)
{
	if (!cfg.prom_url) {
		if (cfg.range_arg)
			usage_error("--range is for --prometheus");
		return;
	}
	if (cfg.nfiles)
		usage_error("--prometheus and FILEs exclude each other: the graph comes from one input");
	if (env.list_probes)
		usage_error("--list-probes shows the hooks of a live capture: not with --prometheus");
	if (!cfg.prom_range_ns)
		cfg.prom_range_ns = 3600ULL * NSEC_PER_SEC;
}

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
	check_prometheus_args();
	/* before any output: a page that cannot be written is a usage error */
	if (cfg.html_path && !(cfg.html = fopen(cfg.html_path, "w")))
		usage_error("cannot write '%s': %s", cfg.html_path, strerror(errno));
	/* no FILE: live unless stdin is a file or a pipe and -d is not given */
	cfg.live = !cfg.nfiles && !cfg.prom_url && (cfg.duration_arg || isatty(STDIN_FILENO));
	if (env.list_probes) {
		if (cfg.nfiles)
			usage_error("--list-probes shows the hooks of a live capture: not with FILEs");
		aiscope_setup(TOOL);
		lifecycle_open();	/* prints the plan and exits */
	}
	if (!cfg.nfiles && !cfg.live && !cfg.prom_url) {
		static char *dash[] = { "-" };

		cfg.files = dash;
		cfg.nfiles = 1;
	}
	if (!cfg.live) {
		if (cfg.tid_arg || env.cgroup_arg)
			usage_error("%s filters a live capture only: edge lines carry no %s",
				    cfg.tid_arg ? "--tid" : "--cgroup",
				    cfg.tid_arg ? "thread id" : "cgroup directory");
		if (cfg.duration_arg)
			usage_error("--duration is for a live capture: not with FILEs or --prometheus");
		if (env.probe_mask != PM_ALL)
			usage_error("--probe-mode is for a live capture: not with FILEs or --prometheus");
		if (cfg.with)
			usage_error("--with is for a live capture: not with FILEs or --prometheus");
		if (!cfg.prom_url)
			check_files();
	}
	ingest_init();
	if (cfg.live) {
		capture();
		lifecycle_collect();
	} else if (cfg.prom_url) {
		read_prometheus();
	} else {
		read_files();
	}
	join_hosts();
	analyse();
	if (cfg.html)
		write_html(cfg.html, cfg.html_path);
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
	if (G.unjoined_local || G.unjoined_ambiguous)
		fprintf(stderr, TOOL ": %llu flows not joined across hosts: %llu of a loopback or link-local address, %llu matched on several hosts\n",
			(unsigned long long)(G.unjoined_local + G.unjoined_ambiguous),
			(unsigned long long)G.unjoined_local, (unsigned long long)G.unjoined_ambiguous);
	if (G.unjoined_time)
		fprintf(stderr, TOOL ": a partial graph: %llu flows not joined across hosts, their two hosts saw them more than %s apart (captures of different moments, or clocks further apart than --max-skew)\n",
			(unsigned long long)G.unjoined_time, cfg.skew_arg ? cfg.skew_arg : "10s");
	ingest_done();
	return 0;
}
