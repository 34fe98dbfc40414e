/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The options every tool shares (CONTRACT section 2), parsed by one argp
 * child parser into the global env. A tool adds its own argp on top:
 *
 *	static const struct argp argp = {
 *		.options = opts, .parser = parse_arg, .doc = doc,
 *		.children = aiscope_argp_children,
 *	};
 *	aiscope_parse(&argp, argc, argv, "schedlat", AISCOPE_AGGREGATING);
 */
#ifndef AISCOPE_OPTS_H
#define AISCOPE_OPTS_H

#include <argp.h>
#include <stdbool.h>
#include <stdint.h>
#include "aiscope_common.h"
#include "cgroup.h"
#include "fail.h"

#define AISCOPE_DEFAULT_BUFFER	(8ULL << 20)
#define AISCOPE_DEFAULT_ROWS	20
/* -i below this is a usage error (man aiscope(7)) */
#define AISCOPE_MIN_INTERVAL_NS	1000000ULL

/* What a tool is, for defaults and for validation. */
#define AISCOPE_AGGREGATING	0x1	/* prints intervals: -i, positional interval count */
#define AISCOPE_STREAMING	0x2	/* prints events */
/* offers --prometheus and --listen (lib/metrics.h): published every interval,
 * so for aggregating tools and streaming tools that poll every -i */
#define AISCOPE_METRICS		0x4

struct aiscope_env {
	const char *tool;
	unsigned int kind;
	/* filters */
	uint32_t pids[AISCOPE_MAX_IDS];
	int npids;
	uint32_t tids[AISCOPE_MAX_IDS];
	int ntids;
	bool has_uid;
	uint32_t uid;
	char comm[AISCOPE_COMM_LEN];
	const char *cgroup_arg;
	const char *container_arg;
	const char *pod_arg;		/* --pod: a Kubernetes pod's name */
	const char *namespace_arg;	/* --namespace: its namespace */
	/* output and lifetime */
	bool json;
	bool timestamp;
	bool noclear;
	bool wide;
	uint64_t interval_ns;
	uint64_t duration_ns;
	uint64_t count;
	int rows;		/* 0: all */
	bool rows_set;
	const char *sort;
	uint64_t buffer_size;
	const char *btf_path;
	bool list_probes;
	bool verbose;
	/* what the kernel refused at load for being newer than it (from the
	 * verifier log: "helper #181" for "invalid func unknown#181", or BPF
	 * callback functions), "" none; and the program that needed it */
	char bpf_missing[64];
	char bpf_missing_prog[64];
	unsigned int probe_mask;
	/* metrics (AISCOPE_METRICS tools) */
	const char *prom_file;
	const char *listen;
	bool metric_labels;		/* --metric-label given */
	/* set by a tool's parser for a mode without intervals (-e, --min):
	 * the usage error when --prometheus or --listen come with it */
	const char *no_metrics;
	/* resolved by aiscope_parse() */
	struct cg_target cg[AISCOPE_MAX_CG_FILTERS];
	int ncg;
	char container_id[CONTAINER_ID_LEN + 1];
	bool tty;		/* stdout is a terminal */
	uint64_t start_mono_ns;
};

extern struct aiscope_env env;

/* The shared options' keys and --help entries, for a tool with a table of
 * its own (topograph): the names, letters, arguments and texts of every
 * tool's. Its own keys start at AISCOPE_KEY_TOOL. */
enum {
	AISCOPE_KEY_CONTAINER = 0x100,
	AISCOPE_KEY_COMM,
	AISCOPE_KEY_WIDE,
	AISCOPE_KEY_LIST_PROBES,
	AISCOPE_KEY_PROBE_MODE,
	AISCOPE_KEY_USAGE,
	AISCOPE_KEY_COMPLETE,
	AISCOPE_KEY_POD,
	AISCOPE_KEY_NAMESPACE,
	AISCOPE_KEY_TOOL = 0x200,
};
#define AISCOPE_OPTION_PID(group)						\
	{ "pid", 'p', "PID[,PID...]", 0, "Only these processes (thread-group ids)", group }
#define AISCOPE_OPTION_TID(doc, group) { "tid", 't', "TID[,TID...]", 0, doc, group }
#define AISCOPE_OPTION_CGROUP(doc, group) { "cgroup", 'c', "PATH", 0, doc, group }
#define AISCOPE_OPTION_CONTAINER(group)						\
	{ "container", AISCOPE_KEY_CONTAINER, "NAME|ID", 0,			\
	  "Only this container: its name, full id or unique prefix (>= 4 hex)", group }
#define AISCOPE_OPTION_POD(doc, group) { "pod", AISCOPE_KEY_POD, "NAME", 0, doc, group }
#define AISCOPE_OPTION_NAMESPACE(doc, group) { "namespace", AISCOPE_KEY_NAMESPACE, "NS", 0, doc, group }
#define AISCOPE_OPTION_UID(group)						\
	{ "uid", 'u', "UID", 0, "Only this user (number or name)", group }
#define AISCOPE_OPTION_COMM(group)						\
	{ "comm", AISCOPE_KEY_COMM, "NAME", 0,					\
	  "Only tasks whose comm is NAME (first 15 bytes)", group }
#define AISCOPE_OPTION_WIDE(group)						\
	{ "wide", AISCOPE_KEY_WIDE, NULL, 0, "Never truncate strings in tables", group }
#define AISCOPE_OPTION_LIST_PROBES(group)					\
	{ "list-probes", AISCOPE_KEY_LIST_PROBES, NULL, 0, "Print the attach plan and exit", group }
#define AISCOPE_OPTION_PROBE_MODE(group)					\
	{ "probe-mode", AISCOPE_KEY_PROBE_MODE, "MECH[,MECH...]", 0,		\
	  "Use only these mechanisms: fentry, kprobe, tp_btf, raw_tp, tracepoint", group }
#define AISCOPE_OPTIONS_HELP							\
	{ "help", 'h', NULL, 0, "Give this help list", -1 },			\
	{ "usage", AISCOPE_KEY_USAGE, NULL, 0, "Give a short usage message", -1 }, \
	{ "version", 'V', NULL, 0, "Print program version", -1 },		\
	/* make's way to the shell completions (lib/complete.h) */		\
	{ "complete", AISCOPE_KEY_COMPLETE, "SHELL", OPTION_HIDDEN,		\
	  "The completion for bash, zsh or fish on stdout", -1 }

/* The parser of the shared options, for a tool's own parser to hand them
 * on to (topograph): into env, with the same checks and messages. */
error_t aiscope_parse_shared(int key, char *arg, struct argp_state *state);
extern const struct argp_child aiscope_argp_children[];
/* lib's options as argp trees: those of every tool (the child above) and
 * those of AISCOPE_METRICS, which the completions of every tool share
 * (lib/complete.c) */
extern const struct argp aiscope_common_argp, aiscope_metrics_argp;
/* A tool's argp: its own options and parser, the shared options as the
 * child every tool has. */
#define AISCOPE_ARGP(options_, parser_, doc_)					\
	{ .options = (options_), .parser = (parser_), .doc = (doc_),		\
	  .children = aiscope_argp_children }

/* Parses argv (usage errors exit 2 with one line) and resolves the
 * filters: pids exist, cgroup and container directories found. */
void aiscope_parse(const struct argp *argp, int argc, char **argv, const char *tool,
		   unsigned int kind);

/* A keyword an option accepts, and what it stands for. */
struct opt_key {
	const char *name;
	int value;
};

/* An option naming an input file (what: "BTF file", "--lib"): readable and
 * a regular file, else a usage error; a FIFO, device or directory would
 * block the tool or be read without end. */
void opt_input_file(const char *what, const char *arg);

/* The index of ARG in NAMES (ended by NULL). Anything else is a usage
 * error naming them in their order: "invalid --sort 'x': expected a, b or c". */
int opt_word(const char *opt, const char *arg, const char *const *names);
/* A duration option where 0 means never (--rescan): the nanoseconds, 0 for
 * "0"; anything else not a positive duration is a usage error. */
uint64_t opt_duration_or_never(const char *opt, const char *arg);
/* A comma-separated list of NAMES: the bit 1 << index of each; a word not
 * in NAMES, or a list without words, is the same usage error. */
uint32_t opt_words(const char *opt, const char *arg, const char *const *names);
/* The value of ARG among KEYS (ended by { NULL }), or that usage error. */
int opt_key(const char *opt, const char *arg, const struct opt_key *keys);
/* The name of VALUE in KEYS; NULL when no key has it. */
const char *opt_key_name(const struct opt_key *keys, int value);

/* What aiscope_parse() does after argp, for a tool with its own parser
 * that fills env itself (topograph): libbpf's messages, kernel features,
 * cgroups, and the filters in env resolved (pids exist, cgroup and
 * container directories found). */
void aiscope_setup(const char *tool);
/* --probe-mode ARG into env.probe_mask, or a usage error. */
void aiscope_probe_mode(const char *arg);

/* --version: "TOOL VERSION (aiscope, libbpf vMAJOR.MINOR)" on stdout,
 * the libbpf linked in (scripts/libbpf.sh pins it); exit 0. */
void __attribute__((noreturn)) aiscope_print_version(const char *tool);
/* Room for element n of the array p of *cap elements of size bytes (the
 * capacity doubles, from 64): the array, maybe moved. Out of memory is
 * fatal (aiscope_fail, exit 1). */
void *aiscope_grow(void *p, size_t *cap, size_t n, size_t size);

#endif
