// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * numaplace: is each process on the NUMA node of its memory, its GPU and
 * its NIC?
 *
 * Per process (or thread): the share of its CPU time on each node (from
 * sched_switch, aggregated in BPF), its resident memory per node
 * (/proc/PID/numa_maps, read each interval for the rows shown), NUMA
 * balancing's moves of it and the pages moved between nodes in its context,
 * and the GPUs and RDMA devices it has open with their nodes (sysfs). A
 * process whose CPU time or memory is mostly off its device's node is
 * flagged REMOTE.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cgset.h"
#include "json.h"
#include "mapdrain.h"
#include "metrics.h"
#include "complete.h"
#include "numa.h"
#include "opts.h"
#include "prom.h"
#include "run.h"
#include "table.h"
#include "text.h"
#include "util.h"
#include "numaplace.h"
#include "numaplace.skel.h"

#define TOOL "numaplace"
#define MAXN NUMAPLACE_MAX_NODES
#define MAX_DEVS 16		/* devices kept per process; more are counted */
/* A device is remote for a process whose CPU time or memory has less than
 * this share on the device's node. */
#define LOCAL_PCT 50.0

static const char doc[] =
"NUMA placement per process: the nodes its threads ran on, its memory per\n"
"node, NUMA balancing's moves, and the GPUs and RDMA devices it uses.\n"
"\n"
"Every interval, a table per process (or thread) of CPU time per node (from\n"
"the scheduler, aggregated in the kernel), resident memory per node\n"
"(/proc/PID/numa_maps), pages moved between nodes in its context, NUMA\n"
"balancing's task moves, and its open GPUs (/dev/nvidiaN) and RDMA devices\n"
"(/dev/infiniband/uverbsN) with their nodes. A process whose CPU time or\n"
"memory sits mostly on another node than one of its devices is flagged\n"
"REMOTE. -p PID rows are shown every interval, also when the process slept.\n"
"\n"
"USAGE: numaplace [OPTIONS] [interval [count]]"
"\v"
"EXAMPLES:\n"
"  numaplace                     # processes by CPU time, each second\n"
"  numaplace -p 1234 -i 5s       # one rank's placement every 5 s\n"
"  numaplace --by tid -p 1234    # per thread: which node each ran on\n"
"  numaplace -s mem              # processes by resident memory\n"
"  numaplace -j -d 10s | jq 'select(.type==\"sample\" and .remote) | {pid, comm, devices}'\n"
"  numaplace --listen :9464 -i 15s   # Prometheus scrapes /metrics\n"
"\n"
"Exit status: 0 done, 1 runtime error, 2 usage error, 77 cannot run here.";

enum { OPT_BY = 0x200 };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "numaplace:", 1 },
	{ "by", OPT_BY, "KEY", 0, "Group by pid (default) or tid", 1 },
	{},
};

static const char *const sort_keys[] = { "cpu", "mem", "migrated", NULL };

static const struct opt_key bys[] = {
	{ "pid", NUMAPLACE_BY_PID }, { "tid", NUMAPLACE_BY_TID }, {},
};

const struct opt_value aiscope_opt_values[] = {
	{ .name = "sort", .kind = OV_WORDS, .words = sort_keys },
	{ .name = "by", .kind = OV_WORDS, .keys = bys },
	{},
};

static struct {
	int by;
	const char *sort;
} cfg = { .by = NUMAPLACE_BY_PID, .sort = "cpu" };

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case OPT_BY:
		cfg.by = opt_key("--by", arg, bys);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = AISCOPE_ARGP(opts, parse_arg, doc);

/* sched_switch is the one hook that cannot be missed; the NUMA balancing
 * and migration tracepoints add their counts where the kernel has them. */
static struct probe_hook hooks[] = {
	{ .name = "sched_switch", .cand = {
		PROBE_TRACEPOINT("sched", "sched_switch", "switch") } },
	{ .name = "sched_move_numa", .optional = true, .cand = {
		{ PM_TRACEPOINT, "sched/sched_move_numa", "move_tp" } } },
	{ .name = "sched_swap_numa", .optional = true, .cand = {
		{ PM_TRACEPOINT, "sched/sched_swap_numa", "swap_tp" } } },
	{ .name = "sched_stick_numa", .optional = true, .cand = {
		{ PM_TRACEPOINT, "sched/sched_stick_numa", "stick_tp" } } },
	{ .name = "mm_migrate_pages", .optional = true, .preemptible = true, .cand = {
		{ PM_TRACEPOINT, "migrate/mm_migrate_pages", "migrate_tp" } } },
};

/* /proc/vmstat's NUMA counters, host-wide; the host row has their deltas */
static const char *const vm_names[] = {
	"numa_hit", "numa_miss", "numa_foreign", "numa_interleave", "numa_local",
	"numa_other", "numa_pte_updates", "numa_hint_faults", "numa_hint_faults_local",
	"numa_pages_migrated", "pgmigrate_success", "pgmigrate_fail",
};
#define NVM ARRAY_SIZE(vm_names)
enum { VM_HINT = 7, VM_HINT_LOCAL = 8 };

struct vmstat {
	bool known[NVM];
	uint64_t v[NVM];
};

struct row {
	struct aiscope_ident ident;
	struct container_info ci;
	bool from_proc;			/* a -p process that did not run: no BPF row */
	uint64_t cpu_ns[MAXN + 1], cpu_total;
	uint64_t moves, swaps, sticks, migrated, migrate_failed;
	bool mem_known;
	uint64_t mem[MAXN + 1], mem_total;
	struct numa_dev devs[MAX_DEVS];
	int ndevs;
	bool remote;
};

static struct {
	struct numaplace_bpf *skel;
	struct aiscope_bpf bpf;
	struct aiscope_loop loop;
	struct jw jw;
	struct row *rows;
	size_t nrows, cap;
	struct row host, total;
	uint32_t nodes[MAXN];		/* online node ids, ascending */
	int nnodes;
	bool node_past_max;		/* a node id >= MAXN: its CPUs unknown */
	uint32_t *cpus;			/* online CPUs */
	int ncpus;
	bool flush_ok;
	uint64_t flush_failed;		/* CPUs whose flush failed, whole run */
	uint64_t devs_dropped;		/* devices past MAX_DEVS, whole run */
	uint64_t mem_unread;		/* numa_maps that could not be read */
	struct vmstat vm_prev, vm_delta;
	uint64_t vm_total[NVM];
} S;

/* ---- topology ---- */

static char *read_file(const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return NULL;
	if (getline(&line, &cap, f) < 0) {
		free(line);
		line = NULL;
	}
	fclose(f);
	return line;
}

/* "0-3,8" into a new array; NULL when unreadable or not such a list */
static uint32_t *read_list(const char *path, int *n)
{
	char *s = read_file(path);
	uint32_t *ids = NULL;

	*n = s ? numa_list_parse(s, NULL, 0) : -1;
	if (*n > 0) {
		ids = calloc(*n, sizeof(*ids));
		if (!ids)
			aiscope_fail(EXIT_RUNTIME, "out of memory");
		numa_list_parse(s, ids, *n);
	}
	free(s);
	return ids;
}

/* cpu_node[] of every possible CPU: its node, or unknown. A kernel
 * without NUMA has no node directory: all its CPUs are node 0's. */
static void topology_load(int map_fd)
{
	uint32_t unknown = NUMAPLACE_NODE_UNKNOWN, *nodes, *cpus;
	int ncpu = libbpf_num_possible_cpus(), n, nc;
	char path[96];

	for (uint32_t c = 0; c < (uint32_t)ncpu; c++)
		bpf_map_update_elem(map_fd, &c, &unknown, BPF_ANY);
	S.cpus = read_list("/sys/devices/system/cpu/online", &S.ncpus);
	if (!S.cpus)
		aiscope_fail(EXIT_RUNTIME, "cannot read /sys/devices/system/cpu/online");
	nodes = read_list("/sys/devices/system/node/online", &n);
	if (!nodes) {
		S.nodes[S.nnodes++] = 0;
		for (int i = 0; i < S.ncpus; i++)
			bpf_map_update_elem(map_fd, &S.cpus[i], &S.nodes[0], BPF_ANY);
		return;
	}
	for (int i = 0; i < n; i++) {
		if (nodes[i] >= MAXN) {
			S.node_past_max = true;
			continue;
		}
		S.nodes[S.nnodes++] = nodes[i];
		snprintf(path, sizeof(path), "/sys/devices/system/node/node%u/cpulist", nodes[i]);
		cpus = read_list(path, &nc);
		for (int j = 0; cpus && j < nc; j++)
			if (cpus[j] < (uint32_t)ncpu)
				bpf_map_update_elem(map_fd, &cpus[j], &nodes[i], BPF_ANY);
		free(cpus);
	}
	free(nodes);
	if (S.node_past_max)
		fprintf(stderr, "%s: nodes from %d up are not told apart: their CPU time is counted under an unknown node\n",
			TOOL, MAXN);
}

/* ---- /proc ---- */

static void vmstat_read(struct vmstat *vm)
{
	FILE *f = fopen("/proc/vmstat", "re");
	char name[64];
	unsigned long long v;

	memset(vm, 0, sizeof(*vm));
	if (!f)
		return;
	while (fscanf(f, "%63s %llu", name, &v) == 2)
		for (size_t i = 0; i < NVM; i++)
			if (!strcmp(name, vm_names[i])) {
				vm->known[i] = true;
				vm->v[i] = v;
			}
	fclose(f);
}

static void vmstat_step(void)
{
	struct vmstat now;

	vmstat_read(&now);
	for (size_t i = 0; i < NVM; i++) {
		S.vm_delta.known[i] = now.known[i] && S.vm_prev.known[i];
		S.vm_delta.v[i] = S.vm_delta.known[i] && now.v[i] >= S.vm_prev.v[i] ?
				  now.v[i] - S.vm_prev.v[i] : 0;
		S.vm_total[i] += S.vm_delta.v[i];
	}
	S.vm_prev = now;
}

/* Resident memory per node of the row's process */
static void read_mem(struct row *r)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%u/numa_maps", r->ident.pid);
	memset(r->mem, 0, sizeof(r->mem));
	r->mem_known = !numa_maps_read(path, r->mem, MAXN);
	if (!r->mem_known) {
		S.mem_unread++;
		return;
	}
	r->mem_total = 0;
	for (int i = 0; i <= MAXN; i++)
		r->mem_total += r->mem[i];
}

static bool has_dev(const struct row *r, enum numa_dev_kind kind, unsigned int num)
{
	for (int i = 0; i < r->ndevs; i++)
		if (r->devs[i].kind == kind && r->devs[i].num == num)
			return true;
	return false;
}

/* The GPUs and RDMA devices among the process's open files */
static void read_devs(struct row *r)
{
	const char *root = numa_sysroot();
	char path[320], link[PATH_MAX];
	struct dirent *e;
	DIR *dir;

	r->ndevs = 0;
	snprintf(path, sizeof(path), "/proc/%u/fd", r->ident.pid);
	dir = opendir(path);
	if (!dir)
		return;
	while ((e = readdir(dir))) {
		struct numa_dev d = {};
		ssize_t n;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%u/fd/%s", r->ident.pid, e->d_name);
		n = readlink(path, link, sizeof(link) - 1);
		if (n <= 0)
			continue;
		link[n] = 0;
		d.kind = numa_dev_classify(link, root, &d.num);
		if (d.kind == NUMA_DEV_NONE || has_dev(r, d.kind, d.num))
			continue;
		if (r->ndevs == MAX_DEVS) {
			S.devs_dropped++;
			continue;
		}
		numa_dev_resolve(&d, root);
		r->devs[r->ndevs++] = d;
	}
	closedir(dir);
}

static double share(const uint64_t *per_node, uint64_t total, int node)
{
	return total ? 100.0 * per_node[node] / total : 0;
}

/* REMOTE: a device on a known node, and the process's CPU time or its
 * memory mostly elsewhere */
static bool dev_remote(const struct row *r, const struct numa_dev *d)
{
	if (d->node < 0 || d->node >= MAXN)
		return false;
	return (r->cpu_total && share(r->cpu_ns, r->cpu_total, d->node) < LOCAL_PCT) ||
	       (r->mem_known && r->mem_total && share(r->mem, r->mem_total, d->node) < LOCAL_PCT);
}

static void place(struct row *r)
{
	read_mem(r);
	read_devs(r);
	r->remote = false;
	for (int i = 0; i < r->ndevs; i++)
		r->remote |= dev_remote(r, &r->devs[i]);
}

/* the node with most of per_node, -1 when total is 0 */
static int major_node(const uint64_t *per_node, uint64_t total)
{
	int best = -1;

	for (int i = 0; total && i < S.nnodes; i++)
		if (best < 0 || per_node[S.nodes[i]] > per_node[best])
			best = S.nodes[i];
	return best;
}

/* ---- Prometheus metrics, by cgroup ---- */

static struct {
	struct prom_family *cpu, *migrated, *placements, *remote;
} P;

static void metrics_init(void)
{
	AISCOPE_METRIC_LABELS(node_lbl, AISCOPE_CGROUP_LABEL_NAMES, "node", NULL);
	AISCOPE_METRIC_LABELS(kind_lbl, AISCOPE_CGROUP_LABEL_NAMES, "kind", NULL);

	if (!aiscope_metrics())
		return;
	P.cpu = aiscope_metric_seconds("aiscope_numaplace_cpu_seconds_total",
		"CPU time of the cgroup's tasks on the CPUs of each NUMA node.", node_lbl);
	P.migrated = aiscope_metric_counter("aiscope_numaplace_pages_migrated_total",
		"Pages moved between nodes in the context of the cgroup's tasks (migrate_pages, move_pages, mbind, NUMA balancing).",
		aiscope_cgroup_labels);
	P.placements = aiscope_metric_counter("aiscope_numaplace_numa_placements_total",
		"NUMA balancing's placements of the cgroup's tasks: kind move, swap or stick (a move that failed).",
		kind_lbl);
	P.remote = aiscope_metric_counter("aiscope_numaplace_remote_intervals_total",
		"Intervals in which a process of the cgroup was flagged REMOTE (CPU time or memory mostly off its GPU's or NIC's node); of the rows shown (-r).",
		aiscope_cgroup_labels);
}

static void metrics_add(const struct row *r)
{
	const char *v[AISCOPE_CGROUP_NLABELS + 1];
	struct container_info ci;
	char node[16];

	if (!P.cpu)
		return;
	aiscope_cgroup_values(&r->ident, v, &ci);
	for (int i = 0; i < S.nnodes; i++) {
		snprintf(node, sizeof(node), "%u", S.nodes[i]);
		v[AISCOPE_CGROUP_NLABELS] = node;
		prom_counter_add(P.cpu, v, r->cpu_ns[S.nodes[i]]);
	}
	prom_counter_add(P.migrated, v, r->migrated);
	v[AISCOPE_CGROUP_NLABELS] = "move";
	prom_counter_add(P.placements, v, r->moves);
	v[AISCOPE_CGROUP_NLABELS] = "swap";
	prom_counter_add(P.placements, v, r->swaps);
	v[AISCOPE_CGROUP_NLABELS] = "stick";
	prom_counter_add(P.placements, v, r->sticks);
	prom_counter_add(P.remote, v, r->remote);
}

/* ---- one interval's rows ---- */

static void add_stats(struct row *r, const struct numaplace_stats *st)
{
	for (int i = 0; i <= MAXN; i++) {
		r->cpu_ns[i] += st->cpu_ns[i];
		r->cpu_total += st->cpu_ns[i];
	}
	r->moves += st->numa_moves;
	r->swaps += st->numa_swaps;
	r->sticks += st->numa_sticks;
	r->migrated += st->pages_migrated;
	r->migrate_failed += st->pages_migrate_failed;
}

static void add_row(struct row *sum, const struct row *r)
{
	struct numaplace_stats st = {
		.numa_moves = r->moves, .numa_swaps = r->swaps, .numa_sticks = r->sticks,
		.pages_migrated = r->migrated, .pages_migrate_failed = r->migrate_failed,
	};

	memcpy(st.cpu_ns, r->cpu_ns, sizeof(st.cpu_ns));
	add_stats(sum, &st);
}

static struct row *new_row(void)
{
	struct row *r;

	S.rows = aiscope_grow(S.rows, &S.cap, S.nrows, sizeof(*S.rows));
	r = &S.rows[S.nrows++];
	memset(r, 0, sizeof(*r));
	return r;
}

static bool in_epoch(const void *key, void *ctx)
{
	return ((const struct numaplace_key *)key)->epoch == *(uint32_t *)ctx;
}

static void take_stats(const void *key, const void *value, void *ctx)
{
	const struct numaplace_stats *st = value;
	struct row *r = new_row();

	r->ident = st->ident;
	aiscope_ident_cgroup(&st->ident, &r->ci);
	add_stats(r, st);
}

static bool pid_has_row(uint32_t pid)
{
	for (size_t i = 0; i < S.nrows; i++)
		if (S.rows[i].ident.pid == pid)
			return true;
	return false;
}

/* A -p process that did not run in the interval still has its memory and
 * devices: a row from /proc. */
static void add_idle_pids(void)
{
	char path[64], *comm;

	for (int i = 0; i < env.npids; i++) {
		struct row *r;

		if (pid_has_row(env.pids[i]))
			continue;
		snprintf(path, sizeof(path), "/proc/%u/comm", env.pids[i]);
		comm = read_file(path);
		if (!comm)
			continue;		/* gone */
		r = new_row();
		r->from_proc = true;
		r->ident.pid = r->ident.tid = env.pids[i];
		comm[strcspn(comm, "\n")] = 0;
		snprintf(r->ident.comm, sizeof(r->ident.comm), "%s", comm);
		free(comm);
	}
}

/* Charge what the tasks on CPUs now have run so far to this interval: a
 * task that has not switched since would be charged only when it does. */
static void flush_cpus(void)
{
	int fd = bpf_program__fd(S.skel->progs.flush_cpu);

	for (int i = 0; S.flush_ok && i < S.ncpus; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .flags = BPF_F_TEST_RUN_ON_CPU, .cpu = S.cpus[i]);

		if (!bpf_prog_test_run_opts(fd, &o))
			continue;
		if (errno == ENXIO) {		/* went offline */
			S.flush_failed++;
			continue;
		}
		/* a kernel that cannot run it anywhere: switches alone */
		S.flush_ok = false;
		if (env.verbose)
			fprintf(stderr, "%s: cannot run flush_cpu on CPU %u (%s): CPU time is charged at context switches only\n",
				TOOL, S.cpus[i], strerror(errno));
	}
}

static void skip_stats(const void *key, const void *value, void *ctx)
{
}

/* What ran between the attach and the first interval's start is no
 * interval's: charged now, and dropped. */
static void start_clean(void)
{
	uint32_t closed;

	flush_cpus();
	closed = map_epoch_close(&S.skel->bss->epoch, NULL);
	map_drain(bpf_map__fd(S.skel->maps.stats), sizeof(struct numaplace_key),
		  sizeof(struct numaplace_stats), in_epoch, skip_stats, &closed);
}

static void collect(void)
{
	uint32_t closed;

	flush_cpus();
	closed = map_epoch_close(&S.skel->bss->epoch, NULL);
	S.nrows = 0;
	memset(&S.host, 0, sizeof(S.host));
	map_drain(bpf_map__fd(S.skel->maps.stats), sizeof(struct numaplace_key),
		  sizeof(struct numaplace_stats), in_epoch, take_stats, &closed);
	for (size_t i = 0; i < S.nrows; i++)
		add_row(&S.host, &S.rows[i]);
	add_row(&S.total, &S.host);
	add_idle_pids();
	vmstat_step();
}

static uint64_t sort_value(const struct row *r)
{
	switch (cfg.sort[0]) {
	case 'm': return cfg.sort[1] == 'e' ? r->mem_total : r->migrated;
	default: return r->cpu_total;
	}
}

static int cmp_rows(const void *a, const void *b)
{
	const struct row *ra = a, *rb = b;

	return cmp_u64(sort_value(rb), sort_value(ra)) ?: (ra->ident.tid < rb->ident.tid ? -1 : 1);
}

/* Sorting by memory needs every row's; otherwise only the rows shown are
 * read (numa_maps walks the page tables). */
static size_t place_rows(void)
{
	size_t shown;

	if (cfg.sort[0] == 'm' && cfg.sort[1] == 'e')
		for (size_t i = 0; i < S.nrows; i++)
			place(&S.rows[i]);
	sort_array(S.rows, S.nrows, sizeof(*S.rows), cmp_rows);
	shown = table_shown(S.nrows, env.rows);
	if (!(cfg.sort[0] == 'm' && cfg.sort[1] == 'e'))
		for (size_t i = 0; i < shown; i++)
			place(&S.rows[i]);
	/* every row's CPU time and counts; REMOTE is known for those read */
	for (size_t i = 0; i < S.nrows; i++)
		if (!S.rows[i].from_proc)
			metrics_add(&S.rows[i]);
	return shown;
}

/* ---- JSON ---- */

static void json_nodes(const char *key, const uint64_t *per_node, uint64_t total, bool known,
		       const char *vkey)
{
	struct jw *w = &S.jw;

	jw_key(w, key);
	if (!known) {
		jw_null(w);
		return;
	}
	jw_arr_begin(w);
	for (int i = 0; i < S.nnodes; i++) {
		jw_obj_begin(w);
		jw_ku64(w, "node", S.nodes[i]);
		jw_ku64(w, vkey, per_node[S.nodes[i]]);
		jw_kdouble_or_null(w, "ratio", total, share(per_node, total, S.nodes[i]) / 100, 4);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static void json_devs(const struct row *r)
{
	struct jw *w = &S.jw;

	jw_key(w, "devices");
	jw_arr_begin(w);
	for (int i = 0; i < r->ndevs; i++) {
		const struct numa_dev *d = &r->devs[i];
		bool node = d->node >= 0 && d->node < MAXN;

		jw_obj_begin(w);
		jw_kstr(w, "kind", d->kind == NUMA_DEV_GPU ? "gpu" : "rdma");
		jw_kstr(w, "name", d->name);
		jw_kstr(w, "pci", d->pci[0] ? d->pci : NULL);
		jw_ki64_or_null(w, "node", d->node >= 0, d->node);
		jw_kdouble_or_null(w, "cpu_local_ratio", node && r->cpu_total,
				   node ? share(r->cpu_ns, r->cpu_total, d->node) / 100 : 0, 4);
		jw_kdouble_or_null(w, "mem_local_ratio", node && r->mem_known && r->mem_total,
				   node ? share(r->mem, r->mem_total, d->node) / 100 : 0, 4);
		jw_kbool(w, "remote", dev_remote(r, d));
		jw_obj_end(w);
	}
	jw_arr_end(w);
}

static void json_counts(const struct row *r)
{
	struct jw *w = &S.jw;

	jw_ku64(w, "pages_migrated", r->migrated);
	jw_ku64(w, "pages_migrate_failed", r->migrate_failed);
	jw_ku64(w, "numa_moves", r->moves);
	jw_ku64(w, "numa_swaps", r->swaps);
	jw_ku64(w, "numa_sticks", r->sticks);
}

static void json_identity(const struct row *r)
{
	struct aiscope_identity id = { .ci = &r->ci };

	if (r->from_proc) {
		aiscope_pid_identity_json_as(&S.jw, "", r->ident.pid);
		return;
	}
	id.known = AISCOPE_ID_TASK | AISCOPE_ID_CGROUP_ID |
		   (cfg.by == NUMAPLACE_BY_TID ? AISCOPE_ID_TID : 0);
	id.pid = r->ident.pid;
	id.tid = r->ident.tid;
	id.uid = r->ident.uid;
	id.comm = r->ident.comm;
	id.comm_len = sizeof(r->ident.comm);
	id.cgroup_id = r->ident.cgroup_id;
	id.cgroup = cg_path_of(r->ident.cgroup_id, r->ident.cgroup_v1);
	aiscope_identity_json(&S.jw, &id);
}

static void json_row(const struct row *r, uint64_t now, uint64_t interval)
{
	struct jw *w = &S.jw;
	int cn = major_node(r->cpu_ns, r->cpu_total);
	int mn = r->mem_known ? major_node(r->mem, r->mem_total) : -1;

	jw_record_begin(w, "sample", TOOL, now);
	jw_ku64(w, "seq", S.loop.ticks);
	jw_ku64(w, "interval_ns", interval);
	jw_kstr(w, "row", opt_key_name(bys, cfg.by));
	json_identity(r);
	jw_ku64(w, "cpu_ns", r->cpu_total);
	jw_ku64(w, "cpu_unknown_node_ns", r->cpu_ns[MAXN]);
	json_nodes("cpu_nodes", r->cpu_ns, r->cpu_total, true, "cpu_ns");
	jw_ki64_or_null(w, "cpu_node", cn >= 0, cn);
	jw_ku64_or_null(w, "mem_bytes", r->mem_known, r->mem_total);
	json_nodes("mem_nodes", r->mem, r->mem_total, r->mem_known, "bytes");
	jw_ki64_or_null(w, "mem_node", mn >= 0, mn);
	json_counts(r);
	json_devs(r);
	jw_kbool(w, "remote", r->remote);
	jw_record_end(w);
}

static void json_vmstat(const uint64_t *v, const bool *known)
{
	struct jw *w = &S.jw;

	for (size_t i = 0; i < NVM; i++)
		jw_ku64_or_null(w, vm_names[i], known[i], v[i]);
	/* the faults the kernel does not count itself */
	jw_ku64_or_null(w, "numa_hint_faults_remote", known[VM_HINT] && known[VM_HINT_LOCAL],
			v[VM_HINT] >= v[VM_HINT_LOCAL] ? v[VM_HINT] - v[VM_HINT_LOCAL] : 0);
}

static void json_host(uint64_t now, uint64_t interval)
{
	struct jw *w = &S.jw;

	jw_record_begin(w, "sample", TOOL, now);
	jw_ku64(w, "seq", S.loop.ticks);
	jw_ku64(w, "interval_ns", interval);
	jw_kstr(w, "row", "host");
	aiscope_identity_json(w, &(struct aiscope_identity){});
	jw_ku64(w, "nodes", S.nnodes);
	jw_ku64(w, "cpu_ns", S.host.cpu_total);
	jw_ku64(w, "cpu_unknown_node_ns", S.host.cpu_ns[MAXN]);
	json_nodes("cpu_nodes", S.host.cpu_ns, S.host.cpu_total, true, "cpu_ns");
	json_counts(&S.host);
	json_vmstat(S.vm_delta.v, S.vm_delta.known);
	jw_record_end(w);
}

/* ---- tables ---- */

static const struct tcol cols_pid[] = {
	{ "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "CONTAINER", 12, TC_LEFT },
};
static const struct tcol cols_tid[] = {
	{ "TID", 7, 0 }, { "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "CONTAINER", 12, TC_LEFT },
};
static const struct tcol cols_stats[] = {
	{ "CPU(ms)", 9, 0 }, { "CPU_NODES", 14, TC_LEFT }, { "MEM(MiB)", 9, 0 },
	{ "MEM_NODES", 14, TC_LEFT }, { "MIGR(pages)", 11, 0 }, { "NUMA_MOVES", 10, 0 },
	{ "DEVICES", 20, TC_LEFT }, { "FLAG", 6, TC_LEFT },
};

static struct tcol table_cols[16];
static int table_ncols, key_ncols;

static void build_columns(void)
{
	const struct tcol *key = cfg.by == NUMAPLACE_BY_TID ? cols_tid : cols_pid;
	int nkey = cfg.by == NUMAPLACE_BY_TID ? ARRAY_SIZE(cols_tid) : ARRAY_SIZE(cols_pid);

	table_ncols = 0;
	if (env.timestamp)
		table_cols[table_ncols++] = (struct tcol){ "TIME", 8, TC_LEFT };
	for (int i = 0; i < nkey; i++)
		table_cols[table_ncols++] = key[i];
	key_ncols = table_ncols;
	for (size_t i = 0; i < ARRAY_SIZE(cols_stats); i++)
		table_cols[table_ncols++] = cols_stats[i];
}

/* "0:75%,1:25%": the nodes with a share, "-" for none */
static const char *fmt_nodes(char *buf, size_t len, const uint64_t *per_node, uint64_t total)
{
	size_t off = 0;

	buf[0] = 0;
	for (int i = 0; total && i < S.nnodes && off < len; i++) {
		uint32_t n = S.nodes[i];

		if (per_node[n])
			off += snprintf(buf + off, len - off, "%s%u:%.0f%%", off ? "," : "", n,
					share(per_node, total, n));
	}
	return buf[0] ? buf : "-";
}

/* "nvidia0@1,mlx5_0@0": each device at its node ("?": unknown) */
static const char *fmt_devs(char *buf, size_t len, const struct row *r)
{
	size_t off = 0;

	buf[0] = 0;
	for (int i = 0; i < r->ndevs && off < len; i++) {
		const struct numa_dev *d = &r->devs[i];

		if (d->node >= 0)
			off += snprintf(buf + off, len - off, "%s%s@%d", off ? "," : "", d->name, d->node);
		else
			off += snprintf(buf + off, len - off, "%s%s@?", off ? "," : "", d->name);
	}
	return buf[0] ? buf : "-";
}

static void table_row(struct table *t, const struct row *r, bool host, const char *hms)
{
	char nodes[256], devs[512], buf[CONTAINER_ID_LEN + 1];

	if (env.timestamp)
		table_str(t, hms);
	if (host) {
		for (int i = env.timestamp; i < key_ncols; i++)
			table_str(t, i == env.timestamp ? "[host]" : "");
	} else {
		if (cfg.by == NUMAPLACE_BY_TID)
			table_u64(t, r->ident.tid);
		table_u64(t, r->ident.pid);
		table_str(t, r->ident.comm);
		table_str(t, aiscope_container_short(&r->ci, buf));
	}
	table_fixed(t, r->cpu_total / 1e6, 1);
	table_str(t, fmt_nodes(nodes, sizeof(nodes), r->cpu_ns, r->cpu_total));
	table_fixed_or_dash(t, !host && r->mem_known, r->mem_total / 1048576.0, 1);
	table_str(t, host || !r->mem_known ? "-" : fmt_nodes(nodes, sizeof(nodes), r->mem, r->mem_total));
	table_u64(t, r->migrated);
	table_u64(t, r->moves + r->swaps);
	table_str(t, host ? "-" : fmt_devs(devs, sizeof(devs), r));
	table_str(t, r->remote ? "REMOTE" : "-");
	table_end_row(t);
}

/* The host's NUMA counters of /proc/vmstat, as a comment line under the
 * table: they have no per-process column. */
static void print_vmstat(void)
{
	const struct vmstat *d = &S.vm_delta;

	if (!d->known[VM_HINT] && !d->known[0])
		return;
	printf("# vmstat:");
	for (size_t i = 0; i < NVM; i++)
		if (d->known[i])
			printf(" %s=%llu", vm_names[i], (unsigned long long)d->v[i]);
	putchar('\n');
}

static void print_interval(uint64_t interval)
{
	uint64_t now = aiscope_now_realtime();
	size_t shown = place_rows();
	char hms[16];
	struct table t;

	if (env.json) {
		for (size_t i = 0; i < shown; i++)
			json_row(&S.rows[i], now, interval);
		json_host(now, interval);
		return;
	}
	table_block_begin(stdout, env.tty && !env.noclear, now, interval, TOOL);
	fmt_hms(now, hms, sizeof(hms));
	table_init(&t, stdout, table_cols, table_ncols, env.tty && !env.wide);
	table_header(&t);
	table_row(&t, &S.host, true, hms);
	for (size_t i = 0; i < shown; i++)
		table_row(&t, &S.rows[i], false, hms);
	table_more(stdout, shown, S.nrows);
	print_vmstat();
}

static int on_tick(void *ctx)
{
	uint64_t interval = aiscope_loop_interval(&S.loop);

	collect();
	print_interval(interval);
	if (env.count && S.loop.ticks >= env.count)
		return AISCOPE_STOP;
	return 0;
}

/* ---- summary ---- */

static void print_summary(void)
{
	const struct row *t = &S.total;

	if (env.json) {
		aiscope_summary_begin(&S.jw, &S.bpf, &S.loop, 0);
		jw_ku64(&S.jw, "intervals", S.loop.ticks);
		jw_ku64(&S.jw, "nodes", S.nnodes);
		jw_ku64(&S.jw, "cpu_ns", t->cpu_total);
		json_nodes("cpu_nodes", t->cpu_ns, t->cpu_total, true, "cpu_ns");
		json_counts(t);
		json_vmstat(S.vm_total, S.vm_delta.known);
		jw_kbool(&S.jw, "cpu_flush", S.flush_ok);
		jw_ku64(&S.jw, "cpu_flush_failed", S.flush_failed);
		jw_ku64(&S.jw, "devices_dropped", S.devs_dropped);
		jw_ku64(&S.jw, "numa_maps_unread", S.mem_unread);
		jw_record_end(&S.jw);
		return;
	}
	printf("# summary: %d node(s), CPU %.1f ms (%s), %llu pages migrated, %llu failed, %llu NUMA moves, %llu swaps, %llu lost events\n",
	       S.nnodes, t->cpu_total / 1e6,
	       fmt_nodes((char[256]){}, 256, t->cpu_ns, t->cpu_total),
	       (unsigned long long)t->migrated, (unsigned long long)t->migrate_failed,
	       (unsigned long long)t->moves, (unsigned long long)t->swaps,
	       (unsigned long long)aiscope_lost_total(&S.bpf));
	if (S.devs_dropped)
		fprintf(stderr, "%s: %llu devices past %d per process were not shown\n", TOOL,
			(unsigned long long)S.devs_dropped, MAX_DEVS);
}

static void validate(void)
{
	if (env.sort)
		cfg.sort = sort_keys[opt_word("--sort", env.sort, sort_keys)];
}

int main(int argc, char **argv)
{
	int code;

	aiscope_parse(&argp, argc, argv, TOOL, AISCOPE_AGGREGATING | AISCOPE_METRICS);
	validate();
	metrics_init();
	jw_init(&S.jw, stdout);

	S.skel = numaplace_bpf__open_opts(aiscope_open_opts());
	if (!S.skel)
		aiscope_fail(EXIT_RUNTIME, "cannot open the BPF object: %s", strerror(errno));
	S.skel->rodata->key_by = cfg.by;
	S.bpf = (struct aiscope_bpf){ .hooks = hooks, .nhooks = ARRAY_SIZE(hooks) };
	aiscope_bpf_prepare(&S.bpf, S.skel->obj, &S.skel->rodata->aiscope_cfg);
	aiscope_map_resize(S.skel->obj, "cpu_node", libbpf_num_possible_cpus());
	aiscope_bpf_load(&S.bpf, numaplace_bpf__load(S.skel));
	topology_load(bpf_map__fd(S.skel->maps.cpu_node));
	S.flush_ok = true;
	vmstat_read(&S.vm_prev);
	aiscope_bpf_attach(&S.bpf);

	if (S.nnodes == 1)
		fprintf(stderr, "%s: this host has one NUMA node (node%u): every CPU and page is on it; devices and placement are still shown\n",
			TOOL, S.nodes[0]);
	build_columns();
	start_clean();
	aiscope_tracing("NUMA placement (%s)", probe_summary(hooks, ARRAY_SIZE(hooks)));

	S.loop = (struct aiscope_loop){
		.bpf = &S.bpf, .on_tick = on_tick, .on_final = on_tick, .tick_ns = env.interval_ns,
	};
	code = aiscope_run(&S.loop, print_summary);
	numaplace_bpf__destroy(S.skel);
	free(S.rows);
	free(S.cpus);
	return code;
}
