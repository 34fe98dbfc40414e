// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "cgset.h"
#include "complete.h"
#include "ctrmeta.h"
#include "kfeatures.h"
#include "prom.h"
#include "json.h"
#include "metrics.h"
#include "opts.h"
#include "probe.h"
#include "util.h"

struct aiscope_env env = {
	.interval_ns = NSEC_PER_SEC,
	.buffer_size = AISCOPE_DEFAULT_BUFFER,
	.probe_mask = PM_ALL,
	.rows = AISCOPE_DEFAULT_ROWS,
};

static bool container_name_ok(const char *s);

enum {
	OPT_CONTAINER = AISCOPE_KEY_CONTAINER,
	OPT_COMM = AISCOPE_KEY_COMM,
	OPT_WIDE = AISCOPE_KEY_WIDE,
	OPT_LIST_PROBES = AISCOPE_KEY_LIST_PROBES,
	OPT_PROBE_MODE = AISCOPE_KEY_PROBE_MODE,
	OPT_USAGE = AISCOPE_KEY_USAGE,
	OPT_COMPLETE = AISCOPE_KEY_COMPLETE,
	OPT_POD = AISCOPE_KEY_POD,
	OPT_NAMESPACE = AISCOPE_KEY_NAMESPACE,
	OPT_BUFFER_SIZE,
	OPT_BTF,
	OPT_PROMETHEUS,
	OPT_LISTEN,
	OPT_METRIC_LABEL,
};

static const struct argp_option common_opts[] = {
	{ NULL, 0, NULL, 0, "Filters (applied in the kernel):", 10 },
	AISCOPE_OPTION_PID(10),
	AISCOPE_OPTION_TID("Only these threads", 10),
	AISCOPE_OPTION_CGROUP("Only tasks in this cgroup directory or below it", 10),
	AISCOPE_OPTION_CONTAINER(10),
	AISCOPE_OPTION_POD("Only this Kubernetes pod's containers, those started later too", 10),
	AISCOPE_OPTION_NAMESPACE("Only this Kubernetes namespace's containers (with --pod: the pod's)", 10),
	AISCOPE_OPTION_UID(10),
	AISCOPE_OPTION_COMM(10),
	{ NULL, 0, NULL, 0, "Output and lifetime:", 11 },
	{ "json", 'j', NULL, 0, "JSON lines on stdout", 11 },
	{ "interval", 'i', "DUR", 0, "Reporting interval (default 1s)", 11 },
	{ "duration", 'd', "DUR", 0, "Stop after DUR (500ms, 10, 10s, 2m)", 11 },
	{ "count", 'n', "N", 0, "Stop after N records (events, or intervals)", 11 },
	{ "timestamp", 'T', NULL, 0, "Add a TIME column to tables", 11 },
	{ "noclear", 'C', NULL, 0, "Never clear the screen between intervals", 11 },
	{ "rows", 'r', "N", 0, "Rows per interval (default 20, 0: all)", 11 },
	{ "sort", 's', "KEY", 0, "Sort key of top-like tables", 11 },
	AISCOPE_OPTION_WIDE(11),
	{ NULL, 0, NULL, 0, "Kernel side:", 12 },
	{ "buffer-size", OPT_BUFFER_SIZE, "SIZE", 0, "Ring buffer size (default 8M; 256K, 64M)", 12 },
	{ "btf", OPT_BTF, "FILE", 0, "External BTF for kernels without /sys/kernel/btf/vmlinux", 12 },
	AISCOPE_OPTION_LIST_PROBES(12),
	AISCOPE_OPTION_PROBE_MODE(12),
	{ "verbose", 'v', NULL, 0, "Attach decisions and libbpf debug output on stderr", 12 },
	AISCOPE_OPTIONS_HELP,
	{},
};

/* getopt's errors under argp ("unrecognized option") start with argv[0],
 * the path the tool was started by: the tool's name instead, as in every
 * other message. A constructor, so that every tool has it, topograph's own
 * parser too (all of them link this file); glibc passes main's arguments
 * to constructors. */
static void __attribute__((constructor)) short_argv0(int argc, char **argv, char **envp)
{
	if (argc > 0 && argv && argv[0])
		argv[0] = program_invocation_short_name;
}

static const char *file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISCHR(mode) || S_ISBLK(mode))
		return "a device";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISLNK(mode))
		return "a symbolic link";
	return "not a regular file";
}

void opt_input_file(const char *what, const char *arg)
{
	struct stat st;

	if (!*arg)
		usage_error("invalid %s '': expected a path", what);
	if (stat(arg, &st) || access(arg, R_OK))
		usage_error("cannot read %s '%s': %s", what, arg, strerror(errno));
	if (!S_ISREG(st.st_mode))
		usage_error("invalid %s '%s': %s, not a regular file", what, arg,
			    file_kind(st.st_mode));
}

#define OPT_MAX_WORDS	32

/* "a", "a or b", "a, b or c" */
static void join_words(char *buf, size_t size, const char *const *names)
{
	size_t len = 0;

	buf[0] = 0;
	for (int i = 0; names[i] && len < size; i++) {
		const char *sep = !i ? "" : names[i + 1] ? ", " : " or ";

		len += snprintf(buf + len, size - len, "%s%s", sep, names[i]);
	}
}

static void __attribute__((noreturn)) bad_word(const char *opt, const char *arg,
					      const char *const *names)
{
	char list[512];

	join_words(list, sizeof(list), names);
	usage_error("invalid %s '%s': expected %s", opt, arg, list);
}

static int word_index(const char *arg, const char *const *names)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(arg, names[i]))
			return i;
	return -1;
}

uint64_t opt_duration_or_never(const char *opt, const char *arg)
{
	uint64_t ns;

	if (!strcmp(arg, "0"))
		return 0;
	if (parse_duration(arg, &ns) || !ns)
		usage_error("invalid %s '%s': expected a duration such as 5s, or 0", opt, arg);
	return ns;
}

int opt_word(const char *opt, const char *arg, const char *const *names)
{
	int i = word_index(arg, names);

	if (i < 0)
		bad_word(opt, arg, names);
	return i;
}

uint32_t opt_words(const char *opt, const char *arg, const char *const *names)
{
	char *s = strdup(arg), *tok, *save = NULL;
	uint32_t bits = 0;

	if (!s)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	for (tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		int i = word_index(tok, names);

		if (i < 0 || i >= OPT_MAX_WORDS)
			bad_word(opt, tok, names);
		bits |= 1U << i;
	}
	free(s);
	if (!bits)
		bad_word(opt, arg, names);
	return bits;
}

int opt_key(const char *opt, const char *arg, const struct opt_key *keys)
{
	const char *names[OPT_MAX_WORDS + 1];
	int n;

	for (n = 0; keys[n].name && n < OPT_MAX_WORDS; n++)
		names[n] = keys[n].name;
	names[n] = NULL;
	return keys[opt_word(opt, arg, names)].value;
}

const char *opt_key_name(const struct opt_key *keys, int value)
{
	for (; keys->name; keys++)
		if (keys->value == value)
			return keys->name;
	return NULL;
}

void *aiscope_grow(void *p, size_t *cap, size_t n, size_t size)
{
	size_t c;

	if (n < *cap)
		return p;
	c = *cap ? *cap * 2 : 64;
	if (c < n + 1)
		c = n + 1;
	if (c > SIZE_MAX / size || !(p = realloc(p, c * size)))
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	*cap = c;
	return p;
}

void aiscope_print_version(const char *tool)
{
	printf("%s %s (aiscope, libbpf %s)\n", tool, AISCOPE_VERSION, libbpf_version_string());
	exit(0);
}

static ssize_t discard_write(void *cookie, const char *buf, size_t size)
{
	return size;
}

static void parse_ids(const char *arg, uint32_t *ids, int *n, const char *what)
{
	int r = parse_u32_list(arg, ids, AISCOPE_MAX_IDS);

	if (r == -E2BIG)
		usage_error("too many %ss (at most %d): '%s'", what, AISCOPE_MAX_IDS, arg);
	if (r <= 0)
		usage_error("invalid %s list '%s': expected numbers separated by commas", what, arg);
	for (int i = 0; i < r; i++)
		if (!ids[i])
			usage_error("invalid %s 0", what);
	*n = r;
}

static uint64_t parse_dur_arg(const char *arg, const char *opt)
{
	uint64_t ns;

	if (parse_duration(arg, &ns) || !ns)
		usage_error("invalid %s '%s': expected a positive duration such as 500ms, 10, 10s or 2m",
			    opt, arg);
	return ns;
}

/* Below a millisecond an interval is all overhead: -i 1ns ran 53110
 * intervals in 2 s, each one a full drain, table and publish. */
static uint64_t parse_interval_arg(const char *arg, const char *opt)
{
	uint64_t ns = parse_dur_arg(arg, opt);

	if (ns < AISCOPE_MIN_INTERVAL_NS)
		usage_error("invalid %s '%s': the shortest interval is 1ms", opt, arg);
	return ns;
}

static uint64_t parse_count_arg(const char *arg, const char *opt)
{
	uint64_t v;

	if (parse_u64(arg, &v) || !v)
		usage_error("invalid %s '%s': expected a positive integer", opt, arg);
	return v;
}

static void parse_uid(const char *arg)
{
	uint64_t v;

	if (!parse_u64(arg, &v)) {
		if (v > UINT32_MAX - 1)
			usage_error("invalid uid '%s'", arg);
		env.uid = v;
	} else if (!user_uid(arg, &env.uid)) {
		usage_error("no such user '%s'", arg);
	}
	env.has_uid = true;
}

static void parse_buffer_size(const char *arg)
{
	uint64_t v;

	if (parse_size(arg, &v) || v < 4096 || v > (1ULL << 30))
		usage_error("invalid --buffer-size '%s': expected 4K to 1G, e.g. 256K or 64M", arg);
	/* the ring buffer: a power of two and whole pages (16 KiB or 64 KiB
	 * on some arm64 kernels) */
	env.buffer_size = ringbuf_size(v, sysconf(_SC_PAGESIZE));
}

void aiscope_probe_mode(const char *arg)
{
	if (probe_parse_mode(arg, &env.probe_mask))
		usage_error("invalid --probe-mode '%s': expected a list of fentry, kprobe, tp_btf, raw_tp, tracepoint",
			    arg);
}

static int positional;

error_t aiscope_parse_shared(int key, char *arg, struct argp_state *state)
{
	uint64_t v;

	switch (key) {
	case ARGP_KEY_INIT: {
		static FILE *discard;
		cookie_io_functions_t io = { .write = discard_write };

		/* argp would add "Try --help" to every error: one line is the contract */
		if (!discard)
			discard = fopencookie(NULL, "w", io);
		if (discard)
			state->err_stream = discard;
		break;
	}
	case 'p':
		parse_ids(arg, env.pids, &env.npids, "pid");
		break;
	case 't':
		parse_ids(arg, env.tids, &env.ntids, "tid");
		break;
	case 'c':
		if (!*arg)
			usage_error("invalid --cgroup: empty path");
		env.cgroup_arg = arg;
		break;
	case OPT_CONTAINER:
		/* at once: a tool that reads files (topograph) resolves none */
		if (!cg_container_prefix_ok(arg) && !container_name_ok(arg))
			usage_error("invalid container '%s': expected its name or 4 to 64 lowercase hex digits of its id",
				    arg);
		env.container_arg = arg;
		break;
	case AISCOPE_KEY_POD:
		if (!container_name_ok(arg))
			usage_error("invalid pod name '%s'", arg);
		env.pod_arg = arg;
		break;
	case AISCOPE_KEY_NAMESPACE:
		if (!container_name_ok(arg))
			usage_error("invalid namespace '%s'", arg);
		env.namespace_arg = arg;
		break;
	case 'u':
		parse_uid(arg);
		break;
	case OPT_COMM:
		if (!*arg)
			usage_error("invalid --comm: empty name");
		/* the kernel keeps 15 bytes of a task's name */
		snprintf(env.comm, sizeof(env.comm), "%s", arg);
		break;
	case 'j':
		env.json = true;
		fail_setup(env.tool, true);
		break;
	case 'i':
		env.interval_ns = parse_interval_arg(arg, "--interval");
		break;
	case 'd':
		env.duration_ns = parse_dur_arg(arg, "--duration");
		break;
	case 'n':
		env.count = parse_count_arg(arg, "--count");
		break;
	case 'T':
		env.timestamp = true;
		break;
	case 'C':
		env.noclear = true;
		break;
	case 'r':
		if (parse_u64(arg, &v) || v > 1000000)
			usage_error("invalid --rows '%s': expected a number (0: all)", arg);
		env.rows = v;
		env.rows_set = true;
		break;
	case 's':
		env.sort = arg;
		break;
	case OPT_WIDE:
		env.wide = true;
		break;
	case OPT_BUFFER_SIZE:
		parse_buffer_size(arg);
		break;
	case OPT_BTF:
		opt_input_file("BTF file", arg);
		env.btf_path = arg;
		break;
	case OPT_LIST_PROBES:
		env.list_probes = true;
		break;
	case OPT_PROBE_MODE:
		aiscope_probe_mode(arg);
		break;
	case 'v':
		env.verbose = true;
		break;
	case 'h':
		argp_state_help(state, stdout, ARGP_HELP_STD_HELP);
		break;
	case 'V':
		aiscope_print_version(env.tool);
	case OPT_USAGE:
		argp_state_help(state, stdout, ARGP_HELP_USAGE | ARGP_HELP_EXIT_OK);
		break;
	case OPT_COMPLETE:
		aiscope_complete(state->root_argp, arg);
	case ARGP_KEY_ARG:
		if (!(env.kind & AISCOPE_AGGREGATING) || positional >= 2)
			usage_error("unexpected argument '%s'", arg);
		if (positional++ == 0)
			env.interval_ns = parse_interval_arg(arg, "interval");
		else
			env.count = parse_count_arg(arg, "count");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp aiscope_common_argp = {
	.options = common_opts,
	.parser = aiscope_parse_shared,
};

const struct argp_child aiscope_argp_children[] = {
	{ &aiscope_common_argp, 0, NULL, 0 },
	{},
};

/* Only in tools that pass AISCOPE_METRICS (tools with an interval that
 * export their figures: aggregating ones, and streaming ones that poll
 * every -i): aiscope_parse() adds this child to the tool's argp. */
static const struct argp_option metrics_opts[] = {
	{ NULL, 0, NULL, 0, "Metrics (Prometheus):", 13 },
	{ "prometheus", OPT_PROMETHEUS, "FILE", 0,
	  "Write metrics to FILE each interval (node_exporter textfile format: a new FILE.tmp.XXXXXX, then rename)", 13 },
	{ "listen", OPT_LISTEN, "ADDR:PORT", 0,
	  "Serve metrics at http://ADDR:PORT/metrics (ADDR defaults to 127.0.0.1; port 0: any free one)", 13 },
	{ "metric-label", OPT_METRIC_LABEL, "KEY[=NAME]", 0,
	  "Copy the container label (or annotation) KEY into metric label NAME (default: KEY with [^A-Za-z0-9_] as _); at most 4", 13 },
	{},
};

/*
 * FILE is replaced by rename() of a new FILE.tmp.XXXXXX (lib/prom.c): both
 * names must fit (one 5000-character name was accepted, then failed every
 * interval), the directory must exist and be writable, and a FILE that is
 * there already must be a regular file: a link, FIFO, device or directory
 * at that name is refused, never followed or replaced.
 */
static void check_prom_file(const char *arg)
{
	size_t len = strlen(arg), suffix = strlen(PROM_TMP_SUFFIX);
	const char *slash = strrchr(arg, '/'), *base = slash ? slash + 1 : arg;
	char dir[PATH_MAX];
	struct stat st;

	if (!*arg || arg[len - 1] == '/')
		usage_error("invalid --prometheus '%s': expected a file name", arg);
	if (len + suffix >= PATH_MAX)
		usage_error("invalid --prometheus: a path of %zu bytes, at most %zu", len,
			    (size_t)PATH_MAX - 1 - suffix);
	if (strlen(base) + suffix > NAME_MAX)
		usage_error("invalid --prometheus: a file name of %zu bytes, at most %zu",
			    strlen(base), (size_t)NAME_MAX - suffix);
	if (!lstat(arg, &st) && !S_ISREG(st.st_mode))
		usage_error("invalid --prometheus '%s': is %s, not a regular file", arg,
			    file_kind(st.st_mode));
	if (!slash)
		snprintf(dir, sizeof(dir), ".");
	else if (slash == arg)
		snprintf(dir, sizeof(dir), "/");
	else
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - arg), arg);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		usage_error("invalid --prometheus '%s': no such directory '%s'", arg, dir);
	if (access(dir, W_OK | X_OK))
		usage_error("invalid --prometheus '%s': cannot write in '%s': %s", arg, dir,
			    strerror(errno));
}

static error_t parse_metrics(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case OPT_PROMETHEUS:
		check_prom_file(arg);
		env.prom_file = arg;
		break;
	case OPT_LISTEN:
		if (!*arg)
			usage_error("invalid --listen: empty address");
		env.listen = arg;
		break;
	case OPT_METRIC_LABEL:
		metrics_label_option(arg);
		env.metric_labels = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp aiscope_metrics_argp = {
	.options = metrics_opts,
	.parser = parse_metrics,
};

/* The tool's argp with the metrics child next to its own children. */
static const struct argp *with_metrics(const struct argp *argp)
{
	static struct argp_child kids[8];
	static struct argp top;
	int n = 0;

	for (const struct argp_child *c = argp->children; c && c->argp && n < 6; c++)
		kids[n++] = *c;
	kids[n++] = (struct argp_child){ &aiscope_metrics_argp, 0, NULL, 0 };
	kids[n] = (struct argp_child){};
	top = *argp;
	top.children = kids;
	return &top;
}

static void check_ids_exist(const uint32_t *ids, int n, const char *what)
{
	char path[64];

	for (int i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "/proc/%u", ids[i]);
		if (access(path, F_OK))
			usage_error("no such %s %u", what, ids[i]);
	}
}

static void resolve_cgroup(const char *dir, const char *what)
{
	struct cg_target *t = &env.cg[env.ncg];
	int err;

	if (env.ncg >= AISCOPE_MAX_CG_FILTERS)
		usage_error("at most %d of --cgroup and --container", AISCOPE_MAX_CG_FILTERS);
	err = cg_target_of_dir(dir, t);

	switch (err) {
	case 0:
		env.ncg++;
		return;
	case -ENOENT:
		usage_error("no such cgroup '%s'", dir);
	case -ENOTDIR:
	case -EXDEV:
		usage_error("%s '%s' is not a cgroup directory", what, dir);
	case -EOPNOTSUPP:
		usage_error("%s '%s' is in a named v1 hierarchy: use the cgroup2 or a controller's directory",
			    what, dir);
	default:
		usage_error("cannot use cgroup '%s': %s", dir, strerror(-err));
	}
}

/* A container name as podman, docker and Kubernetes allow them */
static bool container_name_ok(const char *s)
{
	size_t n = strlen(s);

	if (!n || n > 253 || !isalnum((unsigned char)s[0]))
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("_.-", s[i]))
			return false;
	return true;
}

/* --pod, --namespace: at least one container of theirs runs now (else a
 * usage error, as for --container); its cgroups are the set's first
 * members, and those of the containers that start later join them
 * (lib/cgset.h). A pod name of pods in several namespaces needs one. */
static void resolve_names(void)
{
	static char ids[1024][129];
	const char *ns = env.namespace_arg, *pod = env.pod_arg;
	char what[600], dir[4096], full[CONTAINER_ID_LEN + 1], first_ns[256] = "";
	int n = ctrmeta_find_pod(pod, ns, ids, 1024), running = 0;

	if (pod)
		snprintf(what, sizeof(what), "pod '%s'%s%s", pod, ns ? " in namespace " : "",
			 ns ? ns : "");
	else
		snprintf(what, sizeof(what), "namespace '%s'", ns);
	if (n <= 0)
		usage_error("no such %s", what);
	cgset_want(pod, ns);
	for (int i = 0; i < n && i < 1024; i++) {
		const struct ctr_meta *m;
		struct container_info ci;
		struct cg_target t;

		if (!cg_container_prefix_ok(ids[i]) ||
		    cg_find_container(ids[i], dir, sizeof(dir), full) ||
		    cg_target_of_dir(dir, &t))
			continue;	/* not running */
		running++;
		m = ctrmeta_lookup(ids[i], NULL);
		if (!first_ns[0])
			snprintf(first_ns, sizeof(first_ns), "%s", m->pod_namespace);
		else if (!ns && strcmp(first_ns, m->pod_namespace))
			usage_error("pod name '%s' is in several pods: give --namespace", pod);
		cg_parse_container(dir, &ci);
		if (t.ssid < 0 || t.ssid == cg_attr_ssid())
			cgset_made(&ci, t.id, t.ssid >= 0);
	}
	if (!running)
		usage_error("%s has no running container", what);
}

static void resolve_filters(void)
{
	check_ids_exist(env.pids, env.npids, "process");
	check_ids_exist(env.tids, env.ntids, "thread");
	if (env.cgroup_arg)
		resolve_cgroup(env.cgroup_arg, "--cgroup");
	if (env.container_arg) {
		const char *want = env.container_arg;
		char dir[4096], id[129];
		int err = -ENOENT, nerr;

		/* an id or its prefix first, then a name (podman's, docker's,
		 * nerdctl's, a pod spec's container name, runc's id) */
		if (cg_container_prefix_ok(want))
			err = cg_find_container(want, dir, sizeof(dir), env.container_id);
		if (err == -ENOENT && (nerr = ctrmeta_find_name(want, id, sizeof(id))) != -ENOENT) {
			if (nerr == -EEXIST)
				usage_error("container name '%s' is ambiguous: several containers have it; give its id",
					    want);
			if (nerr || !cg_container_prefix_ok(id))
				usage_error("container '%s' has no cgroup aiscope can name (id '%s')", want, id);
			err = cg_find_container(id, dir, sizeof(dir), env.container_id);
			if (err == -ENOENT)
				usage_error("container '%s' (%.12s) is not running", want, id);
		}
		if (err == -EINVAL)
			usage_error("invalid container id '%s': expected 4 to 64 lowercase hex digits",
				    env.container_arg);
		if (err == -EEXIST)
			usage_error("container id prefix '%s' is ambiguous: give more digits",
				    env.container_arg);
		if (err)
			usage_error("no such container '%s'", env.container_arg);
		resolve_cgroup(dir, "container cgroup");
	}
	if (env.pod_arg || env.namespace_arg)
		resolve_names();
}

/* A verifier log line naming what this kernel's BPF does not have yet, and
 * the program that needed it: aiscope_bpf_load() then says so and exits 77. */
static void note_bpf_missing(const char *fmt, va_list ap)
{
	char *line, *p;
	int id;

	/* one message may hold a whole verifier log */
	if (env.bpf_missing[0] || vasprintf(&line, fmt, ap) < 0)
		return;
	p = strstr(line, "prog '");
	if (p && strstr(line, "BPF program load failed"))
		sscanf(p + 6, "%63[^']", env.bpf_missing_prog);
	p = strstr(line, "invalid func unknown#");
	if (p && sscanf(p + 21, "%d", &id) == 1)
		snprintf(env.bpf_missing, sizeof(env.bpf_missing), "helper #%d", id);
	/* a callback (bpf_loop, bpf_find_vma: 5.13+) is a subprogram that a
	 * kernel without BPF_PSEUDO_FUNC does not count */
	if (strstr(line, "number of funcs in func_info doesn't match number of subprogs"))
		snprintf(env.bpf_missing, sizeof(env.bpf_missing), "callback functions (bpf_loop, bpf_find_vma)");
	free(line);
}

/* libbpf speaks on stderr only when asked to (-v): the tools say what went
 * wrong in their own words. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	va_list copy;

	if (level == LIBBPF_WARN) {
		va_copy(copy, ap);
		note_bpf_missing(fmt, copy);
		va_end(copy);
	}
	if (!env.verbose)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

void aiscope_setup(const char *tool)
{
	int err;

	env.tool = tool;
	fail_setup(tool, env.json);
	if (!env.start_mono_ns)
		env.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
	libbpf_set_print(libbpf_print);
	err = features_init(env.btf_path);
	if (err) {
		char msg[128];

		libbpf_strerror(err, msg, sizeof(msg));
		usage_error("cannot parse BTF file '%s': %s", env.btf_path, msg);
	}
	cg_init(NULL, feat_cgroup_ssid);
	resolve_filters();
}

void aiscope_parse(const struct argp *argp, int argc, char **argv, const char *tool,
		   unsigned int kind)
{
	env.tool = tool;
	fail_setup(tool, env.json);
	env.kind = kind;
	env.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
	argp_err_exit_status = EXIT_USAGE;
	if (kind & AISCOPE_METRICS)
		argp = with_metrics(argp);
	if (argp_parse(argp, argc, argv, ARGP_NO_HELP, NULL, NULL))
		exit(EXIT_USAGE);
	env.tty = isatty(STDOUT_FILENO);
	if (!env.rows_set && (env.json || !env.tty))
		env.rows = 0;
	if (env.metric_labels && !env.prom_file && !env.listen)
		usage_error("--metric-label needs --prometheus or --listen");
	metrics_labels_setup();	/* before --container's names are read */
	aiscope_setup(tool);
	/* before the address is bound and announced: one line */
	if (env.no_metrics && (env.prom_file || env.listen))
		usage_error("%s", env.no_metrics);
	metrics_setup(tool, env.prom_file, env.listen);
}
