// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nclstat: are the NCCL collectives of this host balanced, and is a rank
 * stuck?
 *
 * Uprobes on libnccl's API (found in processes' mappings, or --lib): per
 * interval, per process, communicator and op, calls, issued bytes, message
 * sizes, datatypes, errors and enqueue latency, aggregated in the kernel;
 * a communicator registry joined across processes by a hash of the unique
 * id, rank skew between the local ranks of a communicator, and calls that
 * entered NCCL and have not returned after --hang.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <pthread.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "hist.h"
#include "json.h"
#include "kfeatures.h"
#include "mapdrain.h"
#include "metrics.h"
#include "complete.h"
#include "opts.h"
#include "run.h"
#include "table.h"
#include "text.h"
#include "uprobe.h"
#include "ustack.h"
#include "util.h"
#include "nclstat.h"
#include "ncclcomm.h"
#include "ncclras.h"
#include "nclstat.skel.h"

#define TOOL "nclstat"
#define MAX_LIBS 8
#define KIND_NCCL 1		/* a libnccl */
#define KIND_EXE 2		/* a process's executable: NCCL if its symbols say so */
#define RESCAN_NS (2 * NSEC_PER_SEC)	/* fallback rescan of every process */

static const char doc[] =
"NCCL communicators and collectives: rates, sizes, latency, hangs and rank skew.\n"
"\n"
"Uprobes on libnccl (found in every process that maps it, or --lib). Every\n"
"interval, per process, communicator and op: calls/s, issued bytes/s, message\n"
"size mean, stddev, p50, p99, datatypes, errors and enqueue latency, and\n"
"ncclGroupEnd latency; per communicator (ranks joined across processes by a\n"
"hash of the unique id): the op sequence of each local rank, the lagging rank\n"
"and its last op; calls that entered NCCL and have not returned after --hang.\n"
"-e streams one event per call instead.\n"
"\n"
"USAGE: nclstat [OPTIONS] [interval [count]]"
"\v"
"EXAMPLES:\n"
"  nclstat                       # every process using NCCL, each second\n"
"  nclstat --hang 30s            # also report calls stuck for 30 s\n"
"  nclstat -p 4242 -e            # each call of one rank, as it returns\n"
"  nclstat --lib /opt/venv/lib/python3.11/site-packages/nvidia/nccl/lib/libnccl.so.2\n"
"  nclstat -j | jq 'select(.row==\"communicator\") | {communicator_id, skew_ops, lagging_rank}'\n"
"  nclstat -j | jq 'select(.type==\"event\" and .event==\"hang\")'\n"
"  nclstat --listen :9464 -i 15s    # Prometheus scrapes /metrics\n"
"\n"
"Exit status: 0 done, 1 runtime error, 2 usage error, 77 cannot run here.";

enum { OPT_LIB = 0x200, OPT_HANG, OPT_BUSBW, OPT_NO_RETURN, OPT_HOLD, OPT_RAS, OPT_RAS_EVERY };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "nclstat:", 1 },
	{ "lib", OPT_LIB, "PATH", 0,
	  "Probe this libnccl (or an executable with NCCL linked in) instead of finding it in processes; repeatable", 1 },
	{ "events", 'e', NULL, 0, "Stream one event per call (at its return)", 1 },
	{ "hang", OPT_HANG, "DUR", 0, "Report calls not returned after DUR (default 10s)", 1 },
	{ "busbw", OPT_BUSBW, NULL, 0, "Add the bus-bandwidth estimate column (nccl-tests factors)", 1 },
	{ "no-return", OPT_NO_RETURN, NULL, 0,
	  "Entry probes only on collectives: half the cost per call, no rc, latency or hangs", 1 },
	UPROBE_HOLD_OPTION(OPT_HOLD),
	{ "ras", OPT_RAS, "HOST:PORT", 0,
	  "Ask NCCL's RAS service there for every communicator of the job, all its hosts (default localhost:28028; off: never)", 1 },
	{ "ras-every", OPT_RAS_EVERY, "DUR", 0, "Ask RAS every DUR (default 30s; it gathers from every host of the job)", 1 },
	{},
};

static const char *const sort_keys[] = { "bytes", "calls", "lat", "p99", "errors", NULL };

/* what the shell completions offer after its options (lib/complete.h) */
const struct opt_value aiscope_opt_values[] = {
	{ .name = "sort", .kind = OV_WORDS, .words = sort_keys },
	{ .name = "lib", .kind = OV_FILE },
	{},
};

static struct {
	const char *libs[MAX_LIBS];
	int nlibs;
	bool events;
	bool busbw;
	bool no_return;
	bool hold;
	uint64_t hang_ns;
	const char *sort;
	char ras_host[256], ras_port[16];	/* "" host: off */
	uint64_t ras_every_ns;
} cfg = { .hang_ns = 10 * NSEC_PER_SEC, .sort = "bytes", .ras_host = "localhost",
	  .ras_port = NCCLRAS_PORT, .ras_every_ns = 30 * NSEC_PER_SEC };

/* --ras HOST:PORT ([v6]:PORT), or off */
static void parse_ras(const char *arg)
{
	const char *colon = strrchr(arg, ':'), *host = arg;
	size_t hlen;

	if (!strcmp(arg, "off")) {
		cfg.ras_host[0] = 0;
		return;
	}
	if (!colon || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1) ||
	    strlen(colon + 1) >= sizeof(cfg.ras_port) || atoi(colon + 1) > 65535 || colon == arg)
		usage_error("invalid --ras '%s': expected HOST:PORT (e.g. localhost:28028) or off", arg);
	hlen = colon - arg;
	if (host[0] == '[' && colon[-1] == ']') {
		host++;
		hlen -= 2;
	}
	if (!hlen || hlen >= sizeof(cfg.ras_host))
		usage_error("invalid --ras '%s': expected HOST:PORT (e.g. localhost:28028) or off", arg);
	snprintf(cfg.ras_host, sizeof(cfg.ras_host), "%.*s", (int)hlen, host);
	snprintf(cfg.ras_port, sizeof(cfg.ras_port), "%s", colon + 1);
}

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case OPT_LIB:
		if (cfg.nlibs == MAX_LIBS)
			usage_error("at most %d --lib", MAX_LIBS);
		opt_input_file("--lib", arg);
		cfg.libs[cfg.nlibs++] = arg;
		break;
	case 'e':
		cfg.events = true;
		env.no_metrics = "-e streams single calls: --prometheus and --listen need the interval views";
		break;
	case OPT_HANG:
		if (parse_duration(arg, &cfg.hang_ns) || !cfg.hang_ns)
			usage_error("invalid --hang '%s': expected a positive duration such as 30s", arg);
		break;
	case OPT_BUSBW:
		cfg.busbw = true;
		break;
	case OPT_NO_RETURN:
		cfg.no_return = true;
		break;
	case OPT_HOLD:
		cfg.hold = true;
		break;
	case OPT_RAS:
		parse_ras(arg);
		break;
	case OPT_RAS_EVERY:
		if (parse_duration(arg, &cfg.ras_every_ns) || cfg.ras_every_ns < NSEC_PER_SEC)
			usage_error("invalid --ras-every '%s': expected a duration of 1s or more", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = AISCOPE_ARGP(opts, parse_arg, doc);

/* Kernel hooks: exits drop the calls a killed thread left in flight;
 * execs make the uprobe layer scan new programs at once. */
static struct probe_hook hooks[] = {
	PROBE_HOOK_TASK_EXIT,
	UPROBE_DISCOVER_HOOK,
};

/* The NCCL API probed: entry program, return program. ncclBcast is left
 * out: it calls ncclBroadcast through the PLT (one call, counted once);
 * so is ncclCommGetAsyncError: NCCL calls it through the PLT before every
 * collective (ncclCommEnsureReady), so a probe there would double the cost
 * of each collective. */
static const struct usym {
	const char *sym;
	const char *enter;
	const char *ret;
} usyms[] = {
	{ "ncclAllReduce", "allreduce_enter", "coll_return" },
	{ "ncclAllGather", "allgather_enter", "coll_return" },
	{ "ncclReduceScatter", "reducescatter_enter", "coll_return" },
	{ "ncclBroadcast", "broadcast_enter", "coll_return" },
	{ "ncclReduce", "reduce_enter", "coll_return" },
	{ "ncclSend", "send_enter", "coll_return" },
	{ "ncclRecv", "recv_enter", "coll_return" },
	{ "ncclAlltoAll", "alltoall_enter", "coll_return" },
	{ "ncclGather", "gather_enter", "coll_return" },
	{ "ncclScatter", "scatter_enter", "coll_return" },
	{ "ncclGroupEnd", "group_end_enter", "group_return" },
	{ "ncclCommInitRank", "init_rank_enter", "comm_return" },
	{ "ncclCommInitRankConfig", "init_rank_config_enter", "comm_return" },
	{ "ncclCommInitAll", "init_all_enter", "comm_return" },
	{ "ncclCommSplit", "split_enter", "comm_return" },
	{ "ncclCommDestroy", "destroy_enter", "comm_return" },
	{ "ncclCommAbort", "abort_enter", "comm_return" },
	{ "ncclCommShrink", "shrink_enter", "comm_return" },
	{ "ncclCommInitRankScalable", "init_scalable_enter", "comm_return" },
	{ "ncclCommCount", "count_enter", "query_return" },
	{ "ncclCommUserRank", "user_rank_enter", "query_return" },
};

/* usyms[i] is the call of enum ncl_op i (the stack walk names a call by it) */
_Static_assert(ARRAY_SIZE(usyms) == NCL_OP_NR, "one probed symbol per op, in its order");

/* ---- names ---- */

static const char *const op_names[NCL_OP_NR] = {
	[NCL_OP_ALLREDUCE] = "allreduce", [NCL_OP_ALLGATHER] = "allgather",
	[NCL_OP_REDUCESCATTER] = "reducescatter", [NCL_OP_BROADCAST] = "broadcast",
	[NCL_OP_REDUCE] = "reduce", [NCL_OP_SEND] = "send", [NCL_OP_RECV] = "recv",
	[NCL_OP_ALLTOALL] = "alltoall", [NCL_OP_GATHER] = "gather", [NCL_OP_SCATTER] = "scatter",
	[NCL_OP_GROUP_END] = "groupend", [NCL_OP_INIT_RANK] = "init_rank",
	[NCL_OP_INIT_RANK_CONFIG] = "init_rank_config", [NCL_OP_INIT_ALL] = "init_all",
	[NCL_OP_SPLIT] = "split", [NCL_OP_DESTROY] = "destroy", [NCL_OP_ABORT] = "abort",
	[NCL_OP_SHRINK] = "shrink", [NCL_OP_INIT_SCALABLE] = "init_rank_scalable",
	[NCL_OP_COUNT] = "count", [NCL_OP_USER_RANK] = "user_rank",
};

static const char *const dtype_names[NCL_DT_SLOTS] = {
	"int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32", "float64",
	"bfloat16", "float8e4m3", "float8e5m2", "unknown",
};

static const char *const dtype_short[NCL_DT_SLOTS] = {
	"i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2", "?",
};

static const char *const redop_names[] = { "sum", "prod", "max", "min", "avg", "dynamic" };

static const char *const result_names[] = {
	"success", "unhandled_cuda_error", "system_error", "internal_error", "invalid_argument",
	"invalid_usage", "remote_error", "in_progress",
};

static const char *op_name(uint32_t op)
{
	return op < NCL_OP_NR && op_names[op] ? op_names[op] : "unknown";
}

static const char *result_name(int rc)
{
	return rc >= 0 && rc < (int)ARRAY_SIZE(result_names) ? result_names[rc] : "unknown";
}

static const char *how_name(uint32_t how)
{
	static const char *const n[] = {
		"seen", "init_rank", "init_rank_config", "init_all", "split", "shrink",
		"init_rank_scalable",
	};

	return how < ARRAY_SIZE(n) ? n[how] : "unknown";
}

static const char *ident_name(const struct ncl_comm *c)
{
	static const char *const n[] = {
		[NCL_IDENT_ARGS] = "arguments", [NCL_IDENT_QUERY] = "queries",
		[NCL_IDENT_MEMORY] = "memory",
	};

	return c && c->ident < ARRAY_SIZE(n) ? n[c->ident] : NULL;
}

static bool is_collective(uint32_t op)
{
	return op < NCL_OP_COLL_NR;
}

/* --no-return leaves collectives and ncclGroupEnd without return probes */
static bool returns_seen(uint32_t op)
{
	return !cfg.no_return || op > NCL_OP_GROUP_END;
}

/* ---- state ---- */

struct comm_ent {
	struct ncl_comm_key k;
	struct ncl_comm v;
};

struct row {
	struct ncl_stats_key k;
	struct ncl_stats *s;
	const struct comm_ent *c;	/* registry entry, NULL if unknown */
};

struct hang {
	struct ncl_call call;
	bool reported;
};

/* A call found inside NCCL on a thread's stack when nclstat started: its
 * probes never saw it enter. */
struct stuck {
	uint32_t pid, tid;
	uint32_t op;			/* enum ncl_op */
	uint64_t slot, ret;		/* its return address and where on the stack */
	uint64_t found_ts;		/* boot clock, when found */
	uint64_t comm;			/* its communicator found on the stack, 0: none */
	struct ncl_comm cv;		/* and its identity read from it */
	bool reported, gone;
};

/* How far a rank's collective count of a communicator first met in a call
 * is behind the group's (decided once per communicator: align_group) */
struct rank_off {
	uint64_t id_hash, handle, off;
	uint64_t first;			/* its first arrival then, aligned: 0 if none */
	uint32_t pid;
};

/* an arrival read from BPF's table */
struct arrival {
	struct ncl_arrival_key k;
	struct ncl_arrival v;
	uint64_t seq;			/* k.seq aligned with the other ranks' */
};

/* What the arrivals of an interval say, per communicator entry of S.comms
 * (same index): of the rank, the collectives it entered last of the local
 * ranks and how far behind the one before it; of a group (at its first
 * entry), the sequence numbers every local rank entered, their arrival
 * skew, and the oldest one some local rank has not entered yet. */
struct arrive_acc {
	uint64_t last_arrivals, lag_ns;
	bool missing;			/* not in the group's waiting sequence */
	uint64_t seqs;
	struct hist skew;
	uint64_t waiting_seq, waiting_since;	/* 0: none */
};

static struct {
	struct nclstat_bpf *skel;
	struct aiscope_bpf bpf;
	struct aiscope_loop loop;
	struct jw jw;
	struct uprobe_set set;
	struct uprobe_scanner scan;
	bool discover;
	struct row *rows;
	size_t nrows, rcap;
	struct ncl_stats *st;		/* rows' statistics */
	size_t stcap;
	struct comm_ent *comms;
	size_t ncomms, ccap;
	struct hang *hangs;
	size_t nhangs, hcap;
	struct aiscope_ident *idents;	/* identity of processes seen, by pid */
	size_t nidents, icap;
	struct arrival *arr;		/* arrivals not paired yet */
	size_t narr, acap;
	struct arrive_acc *acc;		/* by S.comms index, this interval */
	size_t acc_cap;
	uint64_t arrivals_expired;	/* never paired: a rank gone, or 60 s old */
	uint64_t comms_dropped;		/* found at start, the registry full */
	struct stuck *stuck;		/* calls in NCCL before nclstat started */
	size_t nstuck, scap;
	struct ncl_comm_key *behind;	/* in a collective of it then: one uncounted */
	size_t nbehind, bcap;
	struct rank_off *offs;		/* sequence offsets of communicators met mid-job */
	size_t noffs, ocap;
	int libs;			/* libraries probed */
	struct ncclcomm_layout layout;	/* of the communicators, where known */
	bool layout_set, layout_conflict;
	/* the whole run */
	uint64_t calls, bytes, errors, hangs_seen, events;
} S;

static uint64_t now_bpf_clock(void)
{
	return clock_ns(feat_boot_clock() ? CLOCK_BOOTTIME : CLOCK_MONOTONIC);
}

/* ---- identities: from the statistics rows, else /proc ---- */

static void ident_remember(const struct aiscope_ident *id)
{
	for (size_t i = 0; i < S.nidents; i++) {
		if (S.idents[i].pid == id->pid) {
			S.idents[i] = *id;
			return;
		}
	}
	S.idents = aiscope_grow(S.idents, &S.icap, S.nidents, sizeof(*S.idents));
	S.idents[S.nidents++] = *id;
}

static void ident_of(uint32_t pid, uint32_t tid, struct aiscope_ident *id)
{
	char path[64];
	FILE *f;

	memset(id, 0, sizeof(*id));
	for (size_t i = 0; i < S.nidents; i++)
		if (S.idents[i].pid == pid)
			*id = S.idents[i];
	id->pid = pid;
	id->tid = tid;
	snprintf(path, sizeof(path), "/proc/%u/task/%u/comm", pid, tid);
	f = fopen(path, "r");
	if (f) {
		if (fgets(id->comm, sizeof(id->comm), f))
			id->comm[strcspn(id->comm, "\n")] = 0;
		fclose(f);
	}
}

/* ---- the registry ---- */

static void comm_visit(const void *key, const void *value, void *ctx)
{
	S.comms = aiscope_grow(S.comms, &S.ccap, S.ncomms, sizeof(*S.comms));
	memcpy(&S.comms[S.ncomms].k, key, sizeof(S.comms[0].k));
	memcpy(&S.comms[S.ncomms++].v, value, sizeof(S.comms[0].v));
}

static const struct rank_off *rank_off_of(uint32_t pid, uint64_t handle)
{
	for (size_t i = 0; i < S.noffs; i++)
		if (S.offs[i].pid == pid && S.offs[i].handle == handle)
			return &S.offs[i];
	return NULL;
}

/* the offsets of communicators no longer in the registry (destroyed, their
 * process gone): their handles may be reused */
static void prune_offs(void)
{
	size_t keep = 0;

	for (size_t i = 0; i < S.noffs; i++) {
		bool there = false;

		for (size_t j = 0; j < S.ncomms && !there; j++)
			there = S.comms[j].k.pid == S.offs[i].pid &&
				S.comms[j].k.handle == S.offs[i].handle;
		if (there)
			S.offs[keep++] = S.offs[i];
	}
	S.noffs = keep;
}

/* 1 when the rank was inside a collective of the communicator as nclstat
 * started (that call was never counted; see seq_base) */
static uint64_t behind_at_start(uint32_t pid, uint64_t handle)
{
	for (size_t j = 0; j < S.nbehind; j++)
		if (S.behind[j].pid == pid && S.behind[j].handle == handle)
			return 1;
	return 0;
}

/* the registry; a rank's collectives count those it was behind at start */
static void read_comms(void)
{
	S.ncomms = 0;
	map_walk(bpf_map__fd(S.skel->maps.comms), sizeof(struct ncl_comm_key),
		 sizeof(S.comms[0].v), comm_visit, NULL);
	for (size_t i = 0; i < S.ncomms; i++) {
		const struct rank_off *o = rank_off_of(S.comms[i].k.pid, S.comms[i].k.handle);

		S.comms[i].v.seq += o ? o->off : behind_at_start(S.comms[i].k.pid, S.comms[i].k.handle);
	}
	prune_offs();
}

static const struct comm_ent *comm_find(uint32_t pid, uint64_t handle)
{
	for (size_t i = 0; i < S.ncomms; i++)
		if (S.comms[i].k.pid == pid && S.comms[i].k.handle == handle)
			return &S.comms[i];
	return NULL;
}

/* A process that has exited, also while a zombie its parent has not
 * reaped yet (a killed rank of a launcher that waits for another). */
static bool proc_gone(uint32_t pid)
{
	char path[64], buf[256], *p;
	bool gone = true;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT;
	/* "pid (comm) S ...": the state follows the last ')' */
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')) && p[1] == ' ')
		gone = p[2] == 'Z' || p[2] == 'X';
	fclose(f);
	return gone;
}

/* After an interval: forget communicators destroyed, and those of
 * processes that are gone (the map must not grow with dead ranks). */
static void sweep_comms(void)
{
	int fd = bpf_map__fd(S.skel->maps.comms);

	for (size_t i = 0; i < S.ncomms; i++) {
		const struct comm_ent *c = &S.comms[i];

		if (c->v.destroyed_ts || proc_gone(c->k.pid))
			bpf_map_delete_elem(fd, &c->k);
	}
}

/* one of -p's processes */
static bool pid_in_list(pid_t pid)
{
	for (int i = 0; i < env.npids; i++)
		if ((pid_t)env.pids[i] == pid)
			return true;
	return false;
}

/* ---- calls in NCCL before nclstat started: found on the threads' stacks ---- */

#define STACK_SCAN_BYTES (256U << 10)
#define STACK_MAPS 8192

/* The code a blocked thread's return addresses can point into: a probed
 * NCCL library, the libraries NCCL calls down into (C runtime, CUDA), or
 * anything else (the application) */
enum xkind { X_APP, X_BELOW, X_NCCL };

struct xmaps {
	int n;
	bool nccl, full;
	struct {
		uint64_t start, end, pgoff;
		enum xkind kind;
		const struct uprobe_lib *lib;
	} m[STACK_MAPS];
};

static const struct uprobe_lib *probed_lib(const struct proc_map *m)
{
	for (int i = 0; i < S.set.n; i++) {
		const struct uprobe_lib *l = S.set.libs[i];

		if (l->attached && l->syms && (m->ino == l->ino || m->ino == l->map_ino) &&
		    (m->dev == l->dev || m->dev == l->map_dev))
			return l;
	}
	return NULL;
}

/* what NCCL calls down into: its frames lie below NCCL's on a stack */
static bool below_nccl(const char *path)
{
	static const char *const pre[] = {
		"libc.so", "libc-", "ld-linux", "ld-musl", "libpthread", "libstdc++", "libgcc_s",
		"libm.so", "libdl", "librt", "libcuda.so", "libcudart", "libnvidia-",
	};
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < ARRAY_SIZE(pre); i++)
		if (!strncmp(base, pre[i], strlen(pre[i])))
			return true;
	return false;
}

static int xmap_visit(const struct proc_map *m, void *ctx)
{
	struct xmaps *w = ctx;
	const struct uprobe_lib *l;

	if (!m->exec)
		return 0;
	/* a return address in a mapping not listed would be read as no code */
	if (w->n == STACK_MAPS) {
		w->full = true;
		return 1;
	}
	l = probed_lib(m);
	w->m[w->n].start = m->start;
	w->m[w->n].end = m->end;
	w->m[w->n].pgoff = m->pgoff;
	w->m[w->n].lib = l;
	w->m[w->n++].kind = l ? X_NCCL : below_nccl(m->path) ? X_BELOW : X_APP;
	w->nccl |= l != NULL;
	return 0;
}

/* the mapping of code address addr, or -1 */
static int xmap_of(const struct xmaps *w, uint64_t addr)
{
	for (int i = 0; i < w->n; i++)
		if (addr >= w->m[i].start && addr < w->m[i].end)
			return i;
	return -1;
}

/* the probed NCCL function at addr of mapping i, or -1 (ncclX and its
 * alias pncclX alike) */
static int api_at(const struct xmaps *w, int i, uint64_t addr)
{
	const char *name = elf_syms_at(w->m[i].lib->syms, addr - w->m[i].start + w->m[i].pgoff,
				       NULL);

	if (!name)
		return -1;
	if (name[0] == 'p' && !strncmp(name + 1, "nccl", 4))
		name++;
	for (size_t u = 0; u < ARRAY_SIZE(usyms); u++)
		if (!strcmp(name, usyms[u].sym))
			return u;
	return -1;
}

/*
 * A probed NCCL function a blocked thread is inside: walking its stack up
 * from the stack pointer, the return addresses (words that point just past
 * a call instruction) run through what NCCL calls down into and NCCL's
 * own functions to a probed NCCL function, before any of the application:
 * a thread blocked in its own code (or below it) with an old NCCL return
 * address left in a frame is not inside NCCL.
 */
/* A communicator nclstat found itself (on a stack, in memory) enters the
 * registry as BPF's would; one that does not fit (the map is full) is
 * counted and said at the end, never dropped silently. */
static void register_found(uint32_t pid, uint64_t handle, const struct ncl_comm *c)
{
	struct ncl_comm_key k = { .handle = handle, .pid = pid };

	if (bpf_map_update_elem(bpf_map__fd(S.skel->maps.comms), &k, c, BPF_NOEXIST) &&
	    errno != EEXIST)
		S.comms_dropped++;
}

/*
 * The communicator of a call found on a stack: its registers are gone, but
 * the frames below the API function's (NCCL's own, deep) keep the comm
 * pointer in the callee-saved registers they push. Words from the API
 * frame down are tried, nearest first (a pointer of an earlier call lies
 * deeper, if at all); one reads as a live communicator of the layout or it
 * is not taken. It enters the registry, so the communicator it belongs to
 * has this rank.
 */
static void stack_comm(uint32_t pid, const uint64_t *words, ssize_t top, const struct xmaps *w,
		       struct stuck *out)
{
	struct ncclcomm_ident id;

	if (!S.layout_set || S.layout_conflict)
		return;
	for (ssize_t j = top - 1; j >= 0; j--) {
		uint64_t v = words[j];

		if (v < 0x10000 || (v & 7) || xmap_of(w, v) >= 0 ||
		    ncclcomm_read(pid, v, &S.layout, &id))
			continue;
		out->comm = v;
		out->cv = (struct ncl_comm){ .id_hash = id.hash, .rank = id.rank,
					     .nranks = id.nranks, .color = -1,
					     .how = NCL_HOW_SEEN, .ident = NCL_IDENT_MEMORY,
					     .last_op = out->op, .tid = out->tid };
		register_found(pid, v, &out->cv);
		return;
	}
}

static bool stack_call(uint32_t pid, uint32_t tid, const struct xmaps *w, struct stuck *out)
{
	static uint64_t words[STACK_SCAN_BYTES / 8];
	uint64_t sp;
	ssize_t n;

	if (ustack_blocked_sp(pid, tid, &sp))
		return false;
	n = ustack_read(pid, sp, words, sizeof(words));
	for (ssize_t i = 0; i < n / 8; i++) {
		int m = xmap_of(w, words[i]), op;

		if (m < 0 || !ustack_is_return(pid, words[i]))
			continue;
		if (w->m[m].kind == X_APP)
			return false;
		if (w->m[m].kind == X_BELOW || (op = api_at(w, m, words[i])) < 0)
			continue;
		*out = (struct stuck){ .pid = pid, .tid = tid, .op = op, .slot = sp + 8 * i,
				       .ret = words[i], .found_ts = now_bpf_clock() };
		stack_comm(pid, words, i, w, out);
		return true;
	}
	return false;
}

/* a communicator found in a process's memory at start: registered, used
 * or not (an idle rank, a rank stuck where its stack did not tell) */
static void scanned_comm(uint64_t handle, const struct ncclcomm_ident *id, void *ctx)
{
	struct ncl_comm c = { .id_hash = id->hash, .rank = id->rank, .nranks = id->nranks,
			      .color = -1, .how = NCL_HOW_SEEN, .ident = NCL_IDENT_MEMORY };

	register_found(*(pid_t *)ctx, handle, &c);
}

#define COMM_SCAN_MAX	(512ULL << 20)	/* bytes read per process */

static void scan_comms(pid_t pid)
{
	bool capped;
	int n;

	if (!S.layout_set || S.layout_conflict)
		return;
	n = ncclcomm_scan(pid, &S.layout, COMM_SCAN_MAX, &capped, scanned_comm, &pid);
	if (n >= 0 && capped)
		fprintf(stderr, "%s: pid %d: more than %llu MiB of anonymous memory: communicators "
			"past it found only where one fills a mapping\n", TOOL, pid,
			COMM_SCAN_MAX >> 20);
}

static int stuck_pid(pid_t pid, void *ctx)
{
	static struct xmaps w;
	char path[64];
	struct dirent *d;
	DIR *dir;

	if ((env.npids && !pid_in_list(pid)) || pid == getpid())
		return 0;
	w.n = 0;
	w.nccl = w.full = false;
	proc_maps_foreach(pid, xmap_visit, &w);
	if (w.full)
		fprintf(stderr, "%s: pid %d: more than %d code mappings: its threads' stacks not "
			"read for calls begun before nclstat started\n", TOOL, pid, STACK_MAPS);
	if (w.full || !w.nccl)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		struct stuck c;
		uint32_t tid = strtoul(d->d_name, NULL, 10);

		if (!tid || !stack_call(pid, tid, &w, &c))
			continue;
		S.stuck = aiscope_grow(S.stuck, &S.scap, S.nstuck, sizeof(*S.stuck));
		S.stuck[S.nstuck++] = c;
	}
	closedir(dir);
	scan_comms(pid);
	return 0;
}

/* at start: every thread of every process that maps a probed library */
static void find_stuck(void)
{
	proc_pids_foreach(stuck_pid, NULL);
	for (size_t i = 0; i < S.nstuck; i++) {
		const struct stuck *c = &S.stuck[i];
		uint64_t key = (uint64_t)c->tid << 8 | ncl_op_class(c->op);
		struct ncl_call call;

		/* a call entered since the probes were attached was counted */
		if (!c->comm || !is_collective(c->op) ||
		    !bpf_map_lookup_elem(bpf_map__fd(S.skel->maps.calls), &key, &call))
			continue;
		S.behind = aiscope_grow(S.behind, &S.bcap, S.nbehind, sizeof(*S.behind));
		S.behind[S.nbehind++] = (struct ncl_comm_key){ .handle = c->comm, .pid = c->pid };
	}
}

/* a probed call of that thread in progress now: the hang check has it */
static bool thread_in_probed_call(uint32_t tid)
{
	for (size_t i = 0; i < S.nhangs; i++)
		if (S.hangs[i].call.tid == tid)
			return true;
	return false;
}

/* Still in that call: blocked, its stack pointer below the frame, the
 * return address still in its slot, and no probed call begun since. */
static bool still_stuck(const struct stuck *c)
{
	uint64_t sp, v = 0;

	if (ustack_blocked_sp(c->pid, c->tid, &sp) || sp > c->slot)
		return false;
	if (ustack_read(c->pid, c->slot, &v, sizeof(v)) != sizeof(v) || v != c->ret)
		return false;
	return !thread_in_probed_call(c->tid);
}

static void check_stuck(void)
{
	size_t keep = 0;

	for (size_t i = 0; i < S.nstuck; i++)
		if (still_stuck(&S.stuck[i]))
			S.stuck[keep++] = S.stuck[i];
	S.nstuck = keep;
}

/* found for --hang at least */
static bool stuck_due(const struct stuck *c, uint64_t now)
{
	return now > c->found_ts && now - c->found_ts >= cfg.hang_ns;
}

/* ---- hangs: calls entered and not returned after --hang ---- */

static bool hang_was_reported(const struct ncl_call *c, struct hang *old, size_t nold)
{
	for (size_t i = 0; i < nold; i++)
		if (old[i].call.tid == c->tid && old[i].call.ts == c->ts)
			return old[i].reported;
	return false;
}

struct hang_walk {
	uint64_t now;
	struct hang *old;
	size_t nold, cap;
};

static void hang_visit(const void *key, const void *value, void *ctx)
{
	struct hang_walk *w = ctx;
	const struct ncl_call *c = value;

	if (w->now < c->ts || w->now - c->ts < cfg.hang_ns)
		return;
	S.hangs = aiscope_grow(S.hangs, &w->cap, S.nhangs, sizeof(*S.hangs));
	S.hangs[S.nhangs].call = *c;
	S.hangs[S.nhangs].reported = hang_was_reported(c, w->old, w->nold);
	S.nhangs++;
}

static void read_hangs(void)
{
	struct hang_walk w = { .now = now_bpf_clock(), .old = S.hangs, .nold = S.nhangs };

	S.hangs = NULL;
	S.nhangs = 0;
	map_walk(bpf_map__fd(S.skel->maps.calls), sizeof(uint64_t), sizeof(struct ncl_call),
		 hang_visit, &w);
	S.hcap = w.cap;
	free(w.old);
}

/* ---- Prometheus metrics: by cgroup and op; hangs and skew host-wide ---- */

AISCOPE_METRIC_LABELS(op_labels, AISCOPE_CGROUP_LABEL_NAMES, "op", NULL);
/* each local rank's progress in its communicator: what joins a job's
 * ranks across hosts (topograph --prometheus) */
AISCOPE_METRIC_LABELS(rank_labels, "host", "communicator_id", "rank", "nranks", "pid", "comm", NULL);

static struct {
	struct prom_family *calls, *bytes, *errors, *latency, *sizes, *hung, *skew, *libs;
	struct prom_family *rank_seq, *rank_last;
} P;

static void metrics_init(void)
{
	AISCOPE_METRIC_LABELS(none, NULL);

	if (!aiscope_metrics())
		return;
	P.calls = aiscope_metric_counter("aiscope_nclstat_calls_total",
		"NCCL calls that returned (entered, with --no-return).", op_labels);
	P.bytes = aiscope_metric_counter("aiscope_nclstat_issued_bytes_total",
		"Bytes of the collectives and point-to-point calls issued: count x datatype size.",
		op_labels);
	P.errors = aiscope_metric_counter("aiscope_nclstat_errors_total",
		"NCCL calls that returned an error (not success, not in progress).", op_labels);
	P.latency = aiscope_metric_latency("aiscope_nclstat_enqueue_latency_seconds",
		"Time from entry to return of NCCL calls (the CPU side; not the GPU's).", op_labels);
	P.sizes = aiscope_metric_bytes("aiscope_nclstat_message_size_bytes",
		"Bytes of each collective and point-to-point call issued (count x datatype size): the distribution of message sizes.",
		op_labels);
	P.hung = aiscope_metric_gauge("aiscope_nclstat_hung_calls",
		"NCCL calls entered and not returned after --hang, now.", none);
	P.skew = aiscope_metric_gauge("aiscope_nclstat_rank_skew_ops",
		"Largest collective-sequence skew between the local ranks of a communicator, now.",
		none);
	P.libs = aiscope_metric_gauge("aiscope_nclstat_libraries",
		"Files probed for the NCCL API.", none);
	P.rank_seq = aiscope_metric_gauge("aiscope_nclstat_rank_op_seq",
		"Collective calls a local rank entered in its communicator since nclstat started (the JSON communicator row's ranks[].op_seq), by host, communicator (the unique id's hash), rank, nranks, pid and comm.",
		rank_labels);
	P.rank_last = aiscope_metric_gauge("aiscope_nclstat_rank_last_enqueue_timestamp_seconds",
		"When a local rank last entered a collective in its communicator (Unix time).",
		rank_labels);
}

static void metrics_add(const struct ncl_stats_key *k, const struct ncl_stats *st)
{
	const char *vals[AISCOPE_CGROUP_NLABELS + 1];
	struct container_info ci;
	struct hist h;

	if (!P.calls)
		return;
	aiscope_cgroup_values(&st->ident, vals, &ci);
	vals[AISCOPE_CGROUP_NLABELS] = op_name(k->op);
	prom_counter_add(P.calls, vals, st->calls);
	if (is_collective(k->op))
		prom_counter_add(P.bytes, vals, st->bytes);
	if (is_collective(k->op) && st->calls) {
		hist_reset(&h);
		hist_add_counts(&h, st->size_hist, st->bytes, st->size_max);
		prom_hist_add(P.sizes, vals, &h);
	}
	prom_counter_add(P.errors, vals, st->errors);
	if (st->lat_n) {
		hist_reset(&h);
		hist_add_counts(&h, st->lat_hist, st->lat_sum, st->lat_max);
		prom_hist_add(P.latency, vals, &h);
	}
}

/* ---- statistics rows ---- */

static bool in_epoch(const void *key, void *ctx)
{
	return ((const struct ncl_stats_key *)key)->epoch == *(uint32_t *)ctx;
}

static void take_stats(const void *key, const void *value, void *ctx)
{
	const struct ncl_stats_key *k = key;
	const struct ncl_stats *st = value;

	S.rows = aiscope_grow(S.rows, &S.rcap, S.nrows, sizeof(*S.rows));
	S.st = aiscope_grow(S.st, &S.stcap, S.nrows, sizeof(*S.st));
	S.rows[S.nrows].k = *k;
	S.st[S.nrows++] = *st;
	ident_remember(&st->ident);
	metrics_add(k, st);
	S.calls += st->calls;
	S.bytes += st->bytes;
	S.errors += st->errors;
}

static void collect(void)
{
	/* returns once no call still adds to the closed epoch's rows */
	uint32_t closed = map_epoch_close(&S.skel->bss->epoch, NULL);

	S.nrows = 0;
	map_drain(bpf_map__fd(S.skel->maps.stats), sizeof(struct ncl_stats_key),
		  sizeof(struct ncl_stats), in_epoch, take_stats, &closed);
	/* S.st may have moved while it grew */
	for (size_t i = 0; i < S.nrows; i++)
		S.rows[i].s = &S.st[i];
}

static void link_rows(void)
{
	for (size_t i = 0; i < S.nrows; i++)
		S.rows[i].c = S.rows[i].k.handle ? comm_find(S.rows[i].k.pid, S.rows[i].k.handle)
						 : NULL;
}

/* Message sizes: exact from the distinct-size slots when every call found
 * one, else from the log-linear histogram (within 6.25%). */
static bool sizes_exact(const struct ncl_stats *s)
{
	return !s->sizes_other;
}

static int cmp_slot(const void *a, const void *b)
{
	const struct ncl_size_slot *x = a, *y = b;

	return cmp_u64(x->bytes, y->bytes);
}

static uint64_t size_pct(const struct ncl_stats *s, double p)
{
	struct ncl_size_slot sl[NCL_SIZE_SLOTS];
	uint64_t need, seen = 0;
	struct hist h;
	int n = 0;

	if (!s->calls)
		return 0;
	if (!sizes_exact(s)) {
		hist_reset(&h);
		hist_add_counts(&h, s->size_hist, s->bytes, s->size_max);
		return hist_percentile(&h, p);
	}
	for (int i = 0; i < NCL_SIZE_SLOTS; i++)
		if (s->sizes[i].calls)
			sl[n++] = s->sizes[i];
	sort_array(sl, n, sizeof(sl[0]), cmp_slot);
	/* nearest rank */
	need = (uint64_t)ceil(p / 100.0 * (double)s->calls);
	if (need < 1)
		need = 1;
	for (int i = 0; i < n; i++) {
		seen += sl[i].calls;
		if (seen >= need)
			return sl[i].bytes;
	}
	return s->size_max;
}

static double size_mean(const struct ncl_stats *s)
{
	return s->calls ? (double)s->bytes / s->calls : 0;
}

/* population standard deviation */
static double size_stddev(const struct ncl_stats *s)
{
	long double mean = size_mean(s), var = 0, sq;

	if (!s->calls)
		return 0;
	if (sizes_exact(s)) {
		for (int i = 0; i < NCL_SIZE_SLOTS; i++) {
			long double d = (long double)s->sizes[i].bytes - mean;

			var += d * d * s->sizes[i].calls;
		}
		var /= s->calls;
	} else {
		sq = ldexpl((long double)s->sq_hi, 64) + (long double)s->sq_lo;
		var = sq / s->calls - mean * mean;
	}
	return var > 0 ? (double)sqrtl(var) : 0;
}

static void lat_hist(const struct ncl_stats *s, struct hist *h)
{
	hist_reset(h);
	hist_add_counts(h, s->lat_hist, s->lat_sum, s->lat_max);
}

/* nccl-tests' bus bandwidth from issued bytes/s: only an estimate, since a
 * uprobe sees when a collective is queued, not when the GPU ends it. */
static double busbw_estimate(const struct row *r, double bytes_per_sec)
{
	double n;

	if (!r->c || r->c->v.nranks < 1)
		return NAN;
	n = r->c->v.nranks;
	switch (r->k.op) {
	case NCL_OP_ALLREDUCE:
		return bytes_per_sec * 2 * (n - 1) / n;
	case NCL_OP_ALLGATHER:
	case NCL_OP_REDUCESCATTER:
	case NCL_OP_ALLTOALL:
	case NCL_OP_GATHER:
	case NCL_OP_SCATTER:
		/* S = count x size x n, factor (n - 1) / n */
		return bytes_per_sec * (n - 1);
	case NCL_OP_BROADCAST:
	case NCL_OP_REDUCE:
	case NCL_OP_SEND:
	case NCL_OP_RECV:
		return bytes_per_sec;
	default:
		return NAN;
	}
}

static double per_sec(uint64_t v, uint64_t interval)
{
	return interval ? v * 1e9 / interval : 0;
}

static uint64_t sort_value(const struct row *r)
{
	struct hist h;

	switch (cfg.sort[0]) {
	case 'c': return r->s->calls;
	case 'l': return r->s->lat_n ? r->s->lat_sum / r->s->lat_n : 0;
	case 'p': lat_hist(r->s, &h); return hist_percentile(&h, 99);
	case 'e': return r->s->errors;
	default: return r->s->bytes;
	}
}

static int cmp_rows(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	uint64_t va = sort_value(x), vb = sort_value(y);

	return cmp_u64(vb, va) ?: cmp_u64(x->k.pid, y->k.pid) ?: cmp_u64(x->k.op, y->k.op);
}

/* ---- communicators: ranks joined by unique-id hash, skew ---- */

struct group {
	size_t first, n;		/* into S.comms, sorted */
	uint64_t seq_min, seq_max;
	const struct comm_ent *lag;	/* NULL when every rank is level */
	int hung;
};

static int cmp_comms(const void *a, const void *b)
{
	const struct comm_ent *x = a, *y = b;

	if (x->v.id_hash != y->v.id_hash)
		return x->v.id_hash < y->v.id_hash ? -1 : 1;
	if (x->v.rank != y->v.rank)
		return x->v.rank < y->v.rank ? -1 : 1;
	if (x->k.pid != y->k.pid)
		return x->k.pid < y->k.pid ? -1 : 1;
	return x->k.handle < y->k.handle ? -1 : x->k.handle > y->k.handle;
}

static bool same_group(const struct comm_ent *a, const struct comm_ent *b)
{
	if (a->v.id_hash || b->v.id_hash)
		return a->v.id_hash == b->v.id_hash;
	return a->k.pid == b->k.pid && a->k.handle == b->k.handle;
}

static void group_fill(struct group *g)
{
	g->seq_min = UINT64_MAX;
	g->seq_max = 0;
	g->lag = NULL;
	g->hung = 0;
	for (size_t i = g->first; i < g->first + g->n; i++) {
		const struct comm_ent *c = &S.comms[i];

		if (c->v.seq < g->seq_min) {
			g->seq_min = c->v.seq;
			g->lag = c;
		}
		if (c->v.seq > g->seq_max)
			g->seq_max = c->v.seq;
		for (size_t h = 0; h < S.nhangs; h++)
			if (S.hangs[h].call.pid == c->k.pid && S.hangs[h].call.comm == c->k.handle)
				g->hung++;
	}
	if (g->seq_min == g->seq_max)
		g->lag = NULL;
}

/* next group starting at *i; false at the end */
static bool next_group(size_t *i, struct group *g)
{
	if (*i >= S.ncomms)
		return false;
	g->first = *i;
	g->n = 1;
	while (g->first + g->n < S.ncomms &&
	       same_group(&S.comms[g->first], &S.comms[g->first + g->n]))
		g->n++;
	*i += g->n;
	group_fill(g);
	return true;
}

/* a group's communicator size: the registry's, else unknown */
static int group_nranks(const struct group *g)
{
	for (size_t i = g->first; i < g->first + g->n; i++)
		if (S.comms[i].v.nranks > 0)
			return S.comms[i].v.nranks;
	return -1;
}

/* ---- arrivals: the local ranks of each collective sequence number ---- */

/* an arrival not paired after this long: its rank will not come */
#define ARRIVAL_EXPIRE_NS	(60ULL * NSEC_PER_SEC)

static bool group_decided(const struct group *g)
{
	const struct comm_ent *c = &S.comms[g->first];

	for (size_t i = 0; i < S.noffs; i++)
		if (S.offs[i].id_hash == c->v.id_hash)
			return true;
	return false;
}

/* the offset of an arrival's rank (process and rank in its communicator) */
static uint64_t seq_off(const struct ncl_arrival_key *k)
{
	if (!S.noffs)
		return 0;
	for (size_t i = 0; i < S.ncomms; i++) {
		const struct comm_ent *c = &S.comms[i];
		const struct rank_off *o;

		if (c->k.pid != k->pid || c->v.id_hash != k->id_hash || c->v.rank != k->rank)
			continue;
		o = rank_off_of(c->k.pid, c->k.handle);
		return o ? o->off : 0;
	}
	return 0;
}

/*
 * Ranks of a communicator nclstat first met in a call count its collectives
 * from then, and were not all at the same collective then. Each rank's
 * first collectives (op and count) are matched against those of the rank
 * with the most: the shift (at most ALIGN_SHIFT) under which they are the
 * same is how far apart they were; a shift that the stacks read at start
 * also say (a rank inside a collective then has it uncounted) is preferred,
 * then the smallest. A rank with too few to compare takes the stacks'.
 */
#define ALIGN_SIGS	12	/* collectives compared per rank */
#define ALIGN_SHIFT	4
#define ALIGN_MIN	4	/* fewer in common: not compared */

struct sig {
	uint64_t count;
	uint32_t op;
};

static bool arrival_of(const struct arrival *a, const struct comm_ent *c)
{
	return a->k.id_hash == c->v.id_hash && a->k.pid == c->k.pid && a->k.rank == c->v.rank;
}

/* Rank c's first collectives in the arrival table, from its first (*first:
 * its sequence number; its arrivals may not start at 1, the communicator's
 * identity read after its first calls), up to the first missing. */
static size_t rank_sigs(const struct comm_ent *c, struct sig *sig, uint64_t *first,
			uint64_t *oldest)
{
	bool have[ALIGN_SIGS] = { false };
	size_t n = 0;

	*first = UINT64_MAX;
	for (size_t i = 0; i < S.narr; i++) {
		if (!arrival_of(&S.arr[i], c))
			continue;
		if (S.arr[i].k.seq < *first)
			*first = S.arr[i].k.seq;
		if (S.arr[i].v.ts < *oldest)
			*oldest = S.arr[i].v.ts;
	}
	for (size_t i = 0; i < S.narr; i++) {
		const struct arrival *a = &S.arr[i];

		if (!arrival_of(a, c) || a->k.seq >= *first + ALIGN_SIGS)
			continue;
		sig[a->k.seq - *first] = (struct sig){ .count = a->v.count, .op = a->v.op };
		have[a->k.seq - *first] = true;
	}
	while (n < ALIGN_SIGS && have[n])
		n++;
	return n;
}

static bool shift_fits(const struct sig *a, size_t na, const struct sig *r, size_t nr, int64_t d)
{
	size_t overlap = 0;

	for (size_t j = 0; j < na; j++) {
		int64_t k = (int64_t)j + d;

		if (k < 0 || k >= (int64_t)nr)
			continue;
		if (a[j].op != r[k].op || a[j].count != r[k].count)
			return false;
		overlap++;
	}
	return overlap >= ALIGN_MIN;
}

static int64_t best_shift(const struct sig *a, size_t na, const struct sig *r, size_t nr,
			  int64_t guess)
{
	int64_t best = 0;
	bool found = false;

	if (na < ALIGN_MIN)
		return guess;
	if (shift_fits(a, na, r, nr, guess))
		return guess;
	for (int64_t d = -ALIGN_SHIFT; d <= ALIGN_SHIFT; d++) {
		if (!shift_fits(a, na, r, nr, d) || (found && llabs(d) >= llabs(best)))
			continue;
		best = d;
		found = true;
	}
	return found ? best : guess;
}

/* Decides group g's offsets once every rank has ALIGN_SIGS collectives in
 * the table, or its oldest is --hang old (a rank stopped: decided with what
 * there is). False while undecided (its arrivals wait). */
static bool align_group(const struct group *g, uint64_t now)
{
	struct sig (*sig)[ALIGN_SIGS] = calloc(g->n, sizeof(*sig));
	size_t *n = calloc(g->n, sizeof(*n)), ref = 0;
	int64_t *off = calloc(g->n, sizeof(*off)), min = INT64_MAX;
	uint64_t *first = calloc(g->n, sizeof(*first)), oldest = UINT64_MAX;
	bool all = true, done = false;

	if (!sig || !n || !off || !first)
		aiscope_fail(EXIT_FAILURE, "out of memory");
	for (size_t i = 0; i < g->n; i++) {
		n[i] = rank_sigs(&S.comms[g->first + i], sig[i], &first[i], &oldest);
		all &= n[i] == ALIGN_SIGS;
		if (n[i] > n[ref])
			ref = i;
	}
	if (!all && (oldest == UINT64_MAX || now < oldest || now - oldest < cfg.hang_ns))
		goto out;
	for (size_t i = 0; i < g->n; i++) {
		const struct comm_ent *c = &S.comms[g->first + i], *r = &S.comms[g->first + ref];
		/* rank i's sequence number s is the reference's s + off[i] */
		int64_t guess = (int64_t)behind_at_start(c->k.pid, c->k.handle) -
				(int64_t)behind_at_start(r->k.pid, r->k.handle);
		int64_t base = n[i] ? (int64_t)first[ref] - (int64_t)first[i] : 0;

		off[i] = base + best_shift(sig[i], n[i], sig[ref], n[ref], guess - base);
		if (off[i] < min)
			min = off[i];
	}
	for (size_t i = 0; i < g->n; i++) {
		const struct comm_ent *c = &S.comms[g->first + i];

		S.offs = aiscope_grow(S.offs, &S.ocap, S.noffs, sizeof(*S.offs));
		S.offs[S.noffs++] = (struct rank_off){
			.id_hash = c->v.id_hash, .handle = c->k.handle, .off = off[i] - min,
			.first = n[i] ? first[i] + off[i] - min : 0, .pid = c->k.pid,
		};
	}
	done = true;
out:
	free(sig);
	free(n);
	free(off);
	free(first);
	return done;
}

/* every local rank's sequence numbers count from the communicator's
 * creation (nclstat saw it made), not from when nclstat attached */
static bool group_aligned(const struct group *g)
{
	for (size_t i = g->first; i < g->first + g->n; i++)
		if (S.comms[i].v.how == NCL_HOW_SEEN)
			return false;
	return true;
}

/* waits for its offsets before it is paired */
static bool group_unpaired(const struct group *g)
{
	return g->n >= 2 && !group_aligned(g) && !group_decided(g);
}

static void arrival_visit(const void *key, const void *value, void *ctx)
{
	struct arrival *a;

	S.arr = aiscope_grow(S.arr, &S.acap, S.narr, sizeof(*S.arr));
	a = &S.arr[S.narr++];
	memcpy(&a->k, key, sizeof(a->k));
	memcpy(&a->v, value, sizeof(a->v));
	a->seq = a->k.seq;
}

static int cmp_arrivals(const void *a, const void *b)
{
	const struct arrival *x = a, *y = b;

	if (x->k.id_hash != y->k.id_hash)
		return x->k.id_hash < y->k.id_hash ? -1 : 1;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	if (x->k.pid != y->k.pid)
		return x->k.pid < y->k.pid ? -1 : 1;
	return x->k.rank < y->k.rank ? -1 : x->k.rank > y->k.rank;
}

/* the group (first entry, size) of a unique-id hash in the sorted S.comms */
static bool group_of_hash(uint64_t id_hash, struct group *g)
{
	size_t i = 0;

	while (next_group(&i, g))
		if (S.comms[g->first].v.id_hash == id_hash)
			return true;
	return false;
}

/* the S.comms index of an arrival's rank (process and rank) in group g,
 * or -1 */
static ssize_t comm_member(const struct group *g, const struct ncl_arrival_key *k)
{
	for (size_t i = g->first; i < g->first + g->n; i++)
		if (S.comms[i].k.pid == k->pid && S.comms[i].v.rank == k->rank)
			return i;
	return -1;
}

/*
 * One sequence number's arrivals a[0..n): complete when every local rank
 * of the group entered it (then the skew is the last arrival less the
 * first, and the last rank is behind the one before it by last less
 * second-to-last); else the group's oldest open one names the ranks it
 * waits for. Returns whether the entries are done with (paired, or
 * expired).
 */
static bool pair_seq(const struct arrival *a, size_t n, const struct group *g, uint64_t now)
{
	struct arrive_acc *ga = &S.acc[g->first];
	size_t last = 0, second = SIZE_MAX;
	uint64_t first_ts = a[0].v.ts;
	ssize_t li;

	/* a lone local rank has nothing to be paired with: no skew here */
	if (g->n < 2)
		return true;
	if (n < g->n) {
		if (now > first_ts && now - first_ts > ARRIVAL_EXPIRE_NS) {
			S.arrivals_expired += n;
			return true;
		}
		if (!ga->waiting_seq || a[0].seq < ga->waiting_seq) {
			ga->waiting_seq = a[0].seq;
			ga->waiting_since = first_ts;
		}
		return false;
	}
	for (size_t i = 1; i < n; i++) {
		if (a[i].v.ts < first_ts)
			first_ts = a[i].v.ts;
		if (a[i].v.ts > a[last].v.ts) {
			second = last;
			last = i;
		} else if (second == SIZE_MAX || a[i].v.ts > a[second].v.ts) {
			second = i;
		}
	}
	ga->seqs++;
	hist_add_value(&ga->skew, a[last].v.ts - first_ts);
	li = comm_member(g, &a[last].k);
	if (li >= 0) {
		S.acc[li].last_arrivals++;
		S.acc[li].lag_ns += a[last].v.ts - a[second].v.ts;
	}
	return true;
}

/* A collective before some rank's first arrival when its offset was
 * decided (it was past it when nclstat started, or its communicator not
 * read yet): nothing to pair it with. */
static bool uncounted_seq(const struct arrival *a, const struct group *g)
{
	for (size_t i = g->first; i < g->first + g->n; i++) {
		const struct rank_off *o = rank_off_of(S.comms[i].k.pid, S.comms[i].k.handle);

		if (o && a->seq < o->first)
			return true;
	}
	return false;
}

/* the ranks of group g that have not entered its waiting sequence */
static void mark_missing(const struct arrival *a, size_t n, const struct group *g)
{
	for (size_t i = g->first; i < g->first + g->n; i++) {
		bool there = false;

		for (size_t j = 0; j < n; j++)
			there |= comm_member(g, &a[j].k) == (ssize_t)i;
		S.acc[i].missing = !there;
	}
}

/*
 * Reads the arrivals, pairs each sequence number every local rank has
 * entered, deletes those (and those of communicators no longer there, or
 * 60 s old: counted), keeps the rest for the next interval.
 */
static void read_arrivals(void)
{
	int fd = bpf_map__fd(S.skel->maps.arrivals);
	uint64_t now = now_bpf_clock();
	struct group g;

	S.acc = aiscope_grow(S.acc, &S.acc_cap, S.ncomms, sizeof(*S.acc));
	for (size_t i = 0; i < S.ncomms; i++) {
		hist_reset(&S.acc[i].skew);
		S.acc[i].last_arrivals = S.acc[i].lag_ns = S.acc[i].seqs = 0;
		S.acc[i].waiting_seq = S.acc[i].waiting_since = 0;
		S.acc[i].missing = false;
	}
	S.narr = 0;
	map_walk(fd, sizeof(struct ncl_arrival_key), sizeof(struct ncl_arrival), arrival_visit,
		 NULL);
	for (size_t i = 0; next_group(&i, &g);)
		if (group_unpaired(&g))
			align_group(&g, now);
	for (size_t i = 0; i < S.narr; i++)
		S.arr[i].seq = S.arr[i].k.seq + seq_off(&S.arr[i].k);
	sort_array(S.arr, S.narr, sizeof(*S.arr), cmp_arrivals);
	for (size_t i = 0, n; i < S.narr; i += n) {
		bool known, done;

		for (n = 1; i + n < S.narr && S.arr[i + n].k.id_hash == S.arr[i].k.id_hash &&
			    S.arr[i + n].seq == S.arr[i].seq; n++)
			;
		known = group_of_hash(S.arr[i].k.id_hash, &g);
		if (known && group_unpaired(&g))
			continue;
		if (!known)
			S.arrivals_expired += n;
		done = !known || uncounted_seq(&S.arr[i], &g) || pair_seq(&S.arr[i], n, &g, now);
		if (done) {
			for (size_t j = i; j < i + n; j++)
				bpf_map_delete_elem(fd, &S.arr[j].k);
		} else if (S.acc[g.first].waiting_seq == S.arr[i].seq) {
			mark_missing(&S.arr[i], n, &g);
		}
	}
}

/* the rank behind the others the longest in the interval, or NULL */
static const struct comm_ent *straggler(const struct group *g)
{
	const struct comm_ent *best = NULL;
	uint64_t lag = 0;

	for (size_t i = g->first; i < g->first + g->n; i++) {
		if (!S.acc[i].last_arrivals || S.acc[i].lag_ns < lag)
			continue;
		if (best && S.acc[i].lag_ns == lag &&
		    S.acc[i].last_arrivals <= S.acc[best - S.comms].last_arrivals)
			continue;
		best = &S.comms[i];
		lag = S.acc[i].lag_ns;
	}
	return best;
}

/* ---- JSON ---- */

static void jw_hash(struct jw *w, const char *key, uint64_t h)
{
	jw_key(w, key);
	if (h)
		jw_hex(w, h);
	else
		jw_null(w);
}

static void json_stats(const struct row *r, uint64_t interval)
{
	struct jw *w = &S.jw;
	const struct ncl_stats *s = r->s;
	bool coll = is_collective(r->k.op);
	double bps = per_sec(s->bytes, interval), bus;
	struct hist h;

	jw_ku64(w, "calls", s->calls);
	jw_kdouble(w, "calls_per_sec", per_sec(s->calls, interval), 3);
	if (coll) {
		jw_ku64(w, "bytes", s->bytes);
		jw_kdouble(w, "bytes_per_sec", bps, 3);
		jw_kdouble(w, "size_mean_bytes", size_mean(s), 3);
		jw_kdouble(w, "size_stddev_bytes", size_stddev(s), 3);
		jw_ku64(w, "size_p50_bytes", size_pct(s, 50));
		jw_ku64(w, "size_p99_bytes", size_pct(s, 99));
		jw_ku64(w, "size_max_bytes", s->size_max);
		jw_kbool(w, "size_exact", sizes_exact(s));
	} else {
		for (const char *const *k = (const char *const[]){ "bytes", "bytes_per_sec",
			"size_mean_bytes", "size_stddev_bytes", "size_p50_bytes", "size_p99_bytes",
			"size_max_bytes", "size_exact", NULL }; *k; k++)
			jw_knull(w, *k);
	}
	jw_key(w, "datatypes");
	jw_obj_begin(w);
	for (int d = 0; d < NCL_DT_SLOTS; d++)
		if (s->dtype_calls[d])
			jw_ku64(w, dtype_names[d], s->dtype_calls[d]);
	jw_obj_end(w);
	jw_key(w, "redops");
	jw_arr_begin(w);
	for (int o = 0; o <= NCL_REDOP_DYNAMIC_BIT; o++)
		if (s->redops & (1U << o))
			jw_str(w, redop_names[o]);
	jw_arr_end(w);
	jw_ku64_or_null(w, "errors", returns_seen(r->k.op), s->errors);
	jw_ku64_or_null(w, "in_progress", returns_seen(r->k.op), s->in_progress);
	jw_kstr(w, "last_error", s->errors ? result_name(s->last_error) : NULL);
	lat_hist(s, &h);
	jw_ku64_or_null(w, "latency_avg_ns", s->lat_n, s->lat_n ? s->lat_sum / s->lat_n : 0);
	jw_ku64_or_null(w, "latency_p50_ns", s->lat_n, hist_percentile(&h, 50));
	jw_ku64_or_null(w, "latency_p99_ns", s->lat_n, hist_percentile(&h, 99));
	jw_ku64_or_null(w, "latency_max_ns", s->lat_n, s->lat_max);
	bus = coll ? busbw_estimate(r, bps) : NAN;
	jw_kdouble(w, "busbw_estimate_bytes_per_sec", bus, 3);
}

static void json_row(const struct row *r, uint64_t now, uint64_t interval)
{
	struct jw *w = &S.jw;
	const struct ncl_comm *c = r->c ? &r->c->v : NULL;

	jw_record_begin(w, "sample", TOOL, now);
	jw_ku64(w, "seq", S.loop.ticks);
	jw_ku64(w, "interval_ns", interval);
	jw_kstr(w, "row", "op");
	aiscope_ident_json(w, &r->s->ident, false);
	jw_kstr(w, "nccl_op", op_name(r->k.op));
	jw_key(w, "communicator_handle");
	if (r->k.handle)
		jw_hex(w, r->k.handle);
	else
		jw_null(w);
	jw_hash(w, "communicator_id", c ? c->id_hash : 0);
	jw_ki64_or_null(w, "rank", c && c->rank >= 0, c ? c->rank : 0);
	jw_ki64_or_null(w, "nranks", c && c->nranks >= 0, c ? c->nranks : 0);
	json_stats(r, interval);
	jw_record_end(w);
}

/* the group's arrivals in the interval: skew, straggler, the sequence
 * number waited for */
static void json_arrivals(const struct group *g, uint64_t t)
{
	struct jw *w = &S.jw;
	const struct arrive_acc *ga = &S.acc[g->first];
	const struct comm_ent *st = straggler(g);
	bool any = ga->seqs > 0;
	bool waiting = ga->waiting_seq && t > ga->waiting_since &&
		       t - ga->waiting_since >= cfg.hang_ns;

	jw_ku64(w, "arrival_seqs", ga->seqs);
	jw_kbool(w, "arrival_aligned", group_aligned(g));
	jw_ku64_or_null(w, "arrival_skew_p50_ns", any, hist_percentile(&ga->skew, 50));
	jw_ku64_or_null(w, "arrival_skew_p99_ns", any, hist_percentile(&ga->skew, 99));
	jw_ku64_or_null(w, "arrival_skew_max_ns", any, ga->skew.max);
	jw_ki64_or_null(w, "straggler_rank", st != NULL, st ? st->v.rank : 0);
	jw_ku64_or_null(w, "straggler_pid", st != NULL, st ? st->k.pid : 0);
	jw_ku64_or_null(w, "straggler_last_arrivals", st != NULL,
			st ? S.acc[st - S.comms].last_arrivals : 0);
	jw_ku64_or_null(w, "straggler_lag_ns", st != NULL, st ? S.acc[st - S.comms].lag_ns : 0);
	jw_ku64_or_null(w, "waiting_seq", waiting, ga->waiting_seq);
	jw_ku64_or_null(w, "waiting_ns", waiting, t - ga->waiting_since);
	if (!waiting) {
		jw_knull(w, "waiting_ranks");
		jw_knull(w, "waiting_pids");
		return;
	}
	jw_key(w, "waiting_ranks");
	jw_arr_begin(w);
	for (size_t i = g->first; i < g->first + g->n; i++) {
		if (!S.acc[i].missing)
			continue;
		if (S.comms[i].v.rank >= 0)
			jw_i64(w, S.comms[i].v.rank);
		else
			jw_null(w);
	}
	jw_arr_end(w);
	jw_key(w, "waiting_pids");
	jw_arr_begin(w);
	for (size_t i = g->first; i < g->first + g->n; i++)
		if (S.acc[i].missing)
			jw_u64(w, S.comms[i].k.pid);
	jw_arr_end(w);
}

/* some rank's identity was read from its communicator */
static bool group_from_memory(const struct group *g)
{
	for (size_t i = g->first; i < g->first + g->n; i++)
		if (S.comms[i].v.ident == NCL_IDENT_MEMORY)
			return true;
	return false;
}

static void json_group(const struct group *g, uint64_t now, uint64_t interval)
{
	struct jw *w = &S.jw;
	const struct comm_ent *first = &S.comms[g->first], *lag = g->lag;
	uint64_t t = now_bpf_clock();
	bool destroyed = true;

	jw_record_begin(w, "sample", TOOL, now);
	jw_ku64(w, "seq", S.loop.ticks);
	jw_ku64(w, "interval_ns", interval);
	jw_kstr(w, "row", "communicator");
	jw_hash(w, "communicator_id", first->v.id_hash);
	jw_kstr(w, "created_by", how_name(first->v.how));
	jw_kstr(w, "nccl_version", group_from_memory(g) && S.layout.version[0] ?
		S.layout.version : NULL);
	jw_ki64_or_null(w, "nranks", group_nranks(g) >= 0, group_nranks(g));
	jw_ku64(w, "local_ranks", g->n);
	jw_key(w, "ranks");
	jw_arr_begin(w);
	for (size_t i = g->first; i < g->first + g->n; i++) {
		const struct comm_ent *c = &S.comms[i];

		jw_obj_begin(w);
		jw_ki64_or_null(w, "rank", c->v.rank >= 0, c->v.rank);
		jw_kstr(w, "identity", ident_name(&c->v));
		jw_ku64(w, "pid", c->k.pid);
		jw_key(w, "communicator_handle");
		jw_hex(w, c->k.handle);
		jw_ku64(w, "op_seq", c->v.seq);
		jw_kstr(w, "last_op", c->v.seq ? op_name(c->v.last_op) : NULL);
		jw_kbool(w, "destroyed", c->v.destroyed_ts != 0);
		jw_ku64(w, "last_arrivals", S.acc[i].last_arrivals);
		jw_ku64(w, "lag_ns", S.acc[i].lag_ns);
		jw_obj_end(w);
		destroyed &= c->v.destroyed_ts != 0;
	}
	jw_arr_end(w);
	jw_ku64(w, "seq_min", g->seq_min);
	jw_ku64(w, "seq_max", g->seq_max);
	jw_ku64(w, "skew_ops", g->seq_max - g->seq_min);
	jw_ki64_or_null(w, "lagging_rank", lag && lag->v.rank >= 0, lag ? lag->v.rank : 0);
	if (lag) {
		jw_ku64(w, "lagging_pid", lag->k.pid);
		jw_ku64(w, "lagging_tid", lag->v.tid);
		jw_kstr(w, "lagging_last_op", lag->v.seq ? op_name(lag->v.last_op) : NULL);
		jw_ku64(w, "lagging_last_count", lag->v.last_count);
		jw_kstr(w, "lagging_last_datatype",
			dtype_names[lag->v.last_datatype < NCL_NUM_TYPES ? lag->v.last_datatype
									: NCL_DT_UNKNOWN]);
		jw_ku64(w, "lagging_idle_ns", lag->v.last_ts && t > lag->v.last_ts ?
					      t - lag->v.last_ts : 0);
	} else {
		for (const char *const *k = (const char *const[]){ "lagging_pid", "lagging_tid",
			"lagging_last_op", "lagging_last_count", "lagging_last_datatype",
			"lagging_idle_ns", NULL }; *k; k++)
			jw_knull(w, *k);
	}
	jw_ku64(w, "hung_calls", g->hung);
	jw_kbool(w, "destroyed", destroyed);
	json_arrivals(g, t);
	jw_record_end(w);
}

/* the keys of a call event (-e) and of a hang event */
/* args: the call's arguments are known (false for a call found on a
 * stack: null); found_by: for a hang, "probe" or "stack" */
static void json_call(const char *event, const struct aiscope_ident *id, uint32_t op,
		      uint64_t handle, uint64_t count, uint32_t dt, uint32_t redop, int root_or_peer,
		      uint64_t stream, const struct ncl_comm *c, bool returned, int rc,
		      uint64_t latency, int64_t waiting, uint64_t ts, bool args,
		      const char *found_by)
{
	struct jw *w = &S.jw;
	bool coll = args && is_collective(op);
	uint32_t d = dt < NCL_NUM_TYPES ? dt : NCL_DT_UNKNOWN;

	jw_record_begin(w, "event", TOOL, ts);
	jw_kstr(w, "event", event);
	aiscope_ident_json(w, id, true);
	jw_kstr(w, "nccl_op", op_name(op));
	jw_ku64_or_null(w, "count", coll, count);
	jw_kstr(w, "datatype", coll ? dtype_names[d] : NULL);
	jw_ku64_or_null(w, "datatype_id", coll, dt);
	jw_ku64_or_null(w, "bytes", coll, count * ncl_dtype_size(d));
	jw_kstr(w, "redop", !args || (op != NCL_OP_ALLREDUCE && op != NCL_OP_REDUCE &&
				     op != NCL_OP_REDUCESCATTER) ?
		NULL : redop < NCL_NUM_OPS ? redop_names[redop] : "dynamic");
	jw_ki64_or_null(w, "root_or_peer", coll && root_or_peer >= 0, root_or_peer);
	jw_key(w, "communicator_handle");
	if (handle || coll)
		jw_hex(w, handle);
	else
		jw_null(w);
	jw_key(w, "stream");
	if (coll && cfg.events)	/* read only for -e */
		jw_hex(w, stream);
	else
		jw_null(w);
	jw_hash(w, "communicator_id", c ? c->id_hash : 0);
	jw_ki64_or_null(w, "rank", c && c->rank >= 0, c ? c->rank : 0);
	jw_ki64_or_null(w, "nranks", c && c->nranks >= 0, c ? c->nranks : 0);
	jw_kstr(w, "identity", ident_name(c));
	jw_ki64_or_null(w, "rc", returned, rc);
	jw_ku64_or_null(w, "latency_ns", returned, latency);
	jw_ku64_or_null(w, "waiting_ns", waiting >= 0, waiting);
	if (found_by)
		jw_kstr(w, "found_by", found_by);
	jw_record_end(w);
}

/* ---- tables ---- */

static void fmt_hash(uint64_t h, char *buf, size_t len)
{
	if (h)
		snprintf(buf, len, "%016llx", (unsigned long long)h);
	else
		snprintf(buf, len, "-");
}

static const struct tcol cols_comm[] = {
	{ "COMM_HASH", 16, TC_LEFT }, { "NRANKS", 6, 0 }, { "LOCAL", 5, 0 }, { "SEQ_MIN", 8, 0 },
	{ "SEQ_MAX", 8, 0 }, { "SKEW", 6, 0 }, { "LAG_RANK", 8, 0 }, { "LAG_PID", 7, 0 },
	{ "LAG_LAST_OP", 22, TC_LEFT }, { "HUNG", 4, 0 }, { "ARR_P99(us)", 11, 0 },
	{ "STRAGGLER", 9, 0 }, { "LAST/SEQS", 9, TC_LEFT },
};

/* arrival skew p99, the straggler and how many of the sequence numbers
 * it came last to */
static void table_arrivals(struct table *t, const struct group *g)
{
	const struct arrive_acc *ga = &S.acc[g->first];
	const struct comm_ent *st = straggler(g);
	char buf[48];

	if (!ga->seqs) {
		table_dashes(t, 3);
		return;
	}
	table_fixed(t, hist_percentile(&ga->skew, 99) / 1e3, 1);
	table_u64_or_dash(t, st && st->v.rank >= 0, st ? st->v.rank : 0);
	snprintf(buf, sizeof(buf), "%llu/%llu",
		 (unsigned long long)(st ? S.acc[st - S.comms].last_arrivals : 0),
		 (unsigned long long)ga->seqs);
	table_str(t, buf);
}

static void table_groups(void)
{
	struct table t;
	struct group g;
	size_t i = 0;
	char buf[48];

	table_init(&t, stdout, cols_comm, ARRAY_SIZE(cols_comm), env.tty && !env.wide);
	table_header(&t);
	while (next_group(&i, &g)) {
		fmt_hash(S.comms[g.first].v.id_hash, buf, sizeof(buf));
		table_str(&t, buf);
		table_u64_or_dash(&t, group_nranks(&g) >= 0, group_nranks(&g));
		table_u64(&t, g.n);
		table_u64(&t, g.seq_min);
		table_u64(&t, g.seq_max);
		table_u64(&t, g.seq_max - g.seq_min);
		if (g.lag) {
			table_u64_or_dash(&t, g.lag->v.rank >= 0, g.lag->v.rank);
			table_u64(&t, g.lag->k.pid);
			snprintf(buf, sizeof(buf), "%s(%llu %s)", op_name(g.lag->v.last_op),
				 (unsigned long long)g.lag->v.last_count,
				 dtype_short[g.lag->v.last_datatype < NCL_NUM_TYPES ?
					     g.lag->v.last_datatype : NCL_DT_UNKNOWN]);
			table_str(&t, g.lag->v.seq ? buf : "-");
		} else {
			table_dashes(&t, 3);
		}
		table_u64(&t, g.hung);
		table_arrivals(&t, &g);
		table_end_row(&t);
	}
}

static const struct tcol cols_ops[] = {
	{ "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "CONTAINER", 12, TC_LEFT },
	{ "COMM_HASH", 16, TC_LEFT }, { "RANK", 4, 0 }, { "OP", 13, TC_LEFT }, { "CALLS/s", 9, 0 }, { "MiB/s", 9, 0 }, { "AVG(KiB)", 9, 0 },
	{ "SD(KiB)", 8, 0 }, { "P50(KiB)", 9, 0 }, { "P99(KiB)", 9, 0 }, { "DTYPES", 10, TC_LEFT },
	{ "ERR", 4, 0 }, { "LAT(us)", 8, 0 }, { "P99LAT(us)", 10, 0 }, { "BUSBW_EST(MiB/s)", 16, 0 },
};

static void dtypes_str(const struct ncl_stats *s, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = 0;
	for (int d = 0; d < NCL_DT_SLOTS && off < len; d++)
		if (s->dtype_calls[d])
			off += snprintf(buf + off, len - off, "%s%s", off ? "," : "", dtype_short[d]);
	if (!off)
		snprintf(buf, len, "-");
}

static void table_ops(uint64_t interval, size_t shown)
{
	struct tcol cols[ARRAY_SIZE(cols_ops) + 1];
	int ncols = 0;
	char buf[64], hms[16], ctr[CONTAINER_ID_LEN + 1];
	struct table t;
	struct hist h;

	if (env.timestamp)
		cols[ncols++] = (struct tcol){ "TIME", 8, TC_LEFT };
	for (size_t c = 0; c < ARRAY_SIZE(cols_ops) - !cfg.busbw; c++)
		cols[ncols++] = cols_ops[c];
	fmt_hms(aiscope_now_realtime(), hms, sizeof(hms));
	table_init(&t, stdout, cols, ncols, env.tty && !env.wide);
	table_header(&t);
	for (size_t i = 0; i < shown; i++) {
		const struct row *r = &S.rows[i];
		const struct ncl_stats *s = r->s;
		bool coll = is_collective(r->k.op);

		if (env.timestamp)
			table_str(&t, hms);
		table_u64(&t, r->k.pid);
		table_str(&t, s->ident.comm);
		table_str(&t, aiscope_ident_container_short(&s->ident, ctr, sizeof(ctr)));
		fmt_hash(r->c ? r->c->v.id_hash : 0, buf, sizeof(buf));
		table_str(&t, buf);
		table_u64_or_dash(&t, r->c && r->c->v.rank >= 0, r->c ? r->c->v.rank : 0);
		table_str(&t, op_name(r->k.op));
		table_fixed(&t, per_sec(s->calls, interval), 1);
		if (coll) {
			table_fixed(&t, per_sec(s->bytes, interval) / 1048576.0, 3);
			table_fixed(&t, size_mean(s) / 1024, 2);
			table_fixed(&t, size_stddev(s) / 1024, 2);
			table_fixed(&t, size_pct(s, 50) / 1024.0, 2);
			table_fixed(&t, size_pct(s, 99) / 1024.0, 2);
		} else {
			table_dashes(&t, 5);
		}
		dtypes_str(s, buf, sizeof(buf));
		table_str(&t, buf);
		table_u64_or_dash(&t, returns_seen(r->k.op), s->errors);
		lat_hist(s, &h);
		if (s->lat_n) {
			table_fixed(&t, (double)s->lat_sum / s->lat_n / 1e3, 1);
			table_fixed(&t, hist_percentile(&h, 99) / 1e3, 1);
		} else {
			table_dashes(&t, 2);
		}
		if (cfg.busbw) {
			double b = coll ? busbw_estimate(r, per_sec(s->bytes, interval)) : NAN;

			if (isnan(b))
				table_str(&t, "-");
			else
				table_fixed(&t, b / 1048576.0, 3);
		}
		table_end_row(&t);
	}
	table_more(stdout, shown, S.nrows);
}

static const struct tcol cols_hang[] = {
	{ "PID", 7, 0 }, { "TID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "OP", 13, TC_LEFT },
	{ "COUNT", 10, 0 }, { "DTYPE", 6, TC_LEFT }, { "COMM_HASH", 16, TC_LEFT }, { "RANK", 4, 0 },
	{ "WAITING(s)", 10, 0 },
};

static void table_hangs(void)
{
	uint64_t now = now_bpf_clock();
	struct aiscope_ident id;
	struct table t;
	char buf[32];

	printf("calls in NCCL for more than %.1f s (OP*: entered before nclstat started, found on the thread's stack; WAIT counts from then):\n",
	       cfg.hang_ns / 1e9);
	table_init(&t, stdout, cols_hang, ARRAY_SIZE(cols_hang), env.tty && !env.wide);
	table_header(&t);
	for (size_t i = 0; i < S.nhangs; i++) {
		const struct ncl_call *c = &S.hangs[i].call;
		const struct comm_ent *ce = comm_find(c->pid, c->comm);

		ident_of(c->pid, c->tid, &id);
		table_u64(&t, c->pid);
		table_u64(&t, c->tid);
		table_str(&t, id.comm);
		table_str(&t, op_name(c->op));
		table_u64_or_dash(&t, is_collective(c->op), c->count);
		table_str(&t, is_collective(c->op) ?
			  dtype_short[c->datatype < NCL_NUM_TYPES ? c->datatype : NCL_DT_UNKNOWN] : "-");
		fmt_hash(ce ? ce->v.id_hash : 0, buf, sizeof(buf));
		table_str(&t, buf);
		table_u64_or_dash(&t, ce && ce->v.rank >= 0, ce ? ce->v.rank : 0);
		table_fixed(&t, (now - c->ts) / 1e9, 1);
		table_end_row(&t);
	}
	/* found on a stack: in since before nclstat started, arguments not known */
	for (size_t i = 0; i < S.nstuck; i++) {
		const struct stuck *c = &S.stuck[i];

		if (!stuck_due(c, now))
			continue;
		ident_of(c->pid, c->tid, &id);
		table_u64(&t, c->pid);
		table_u64(&t, c->tid);
		table_str(&t, id.comm);
		snprintf(buf, sizeof(buf), "%s*", op_name(c->op));
		table_str(&t, buf);
		table_dashes(&t, 2);
		fmt_hash(c->comm ? c->cv.id_hash : 0, buf, sizeof(buf));
		table_str(&t, buf);
		table_u64_or_dash(&t, c->comm, c->cv.rank);
		table_fixed(&t, (now - c->found_ts) / 1e9, 1);
		table_end_row(&t);
	}
}

/* calls stuck past --hang, of either kind */
static bool any_hang(void)
{
	uint64_t now = now_bpf_clock();

	if (S.nhangs)
		return true;
	for (size_t i = 0; i < S.nstuck; i++)
		if (stuck_due(&S.stuck[i], now))
			return true;
	return false;
}

/* hang events: once per call, when it crosses --hang */
static void report_new_stuck(uint64_t now);

static void report_new_hangs(void)
{
	uint64_t now = now_bpf_clock();
	struct aiscope_ident id;

	for (size_t i = 0; i < S.nhangs; i++) {
		struct hang *h = &S.hangs[i];
		const struct ncl_call *c = &h->call;
		const struct comm_ent *ce;

		if (h->reported)
			continue;
		h->reported = true;
		S.hangs_seen++;
		if (!env.json) {
			if (cfg.events)
				fprintf(stderr, "%s: pid %u tid %u in %s for %.1f s\n", TOOL, c->pid,
					c->tid, op_name(c->op), (now - c->ts) / 1e9);
			continue;
		}
		ce = comm_find(c->pid, c->comm);
		ident_of(c->pid, c->tid, &id);
		json_call("hang", &id, c->op, c->comm, c->count, c->datatype, c->redop,
			  c->root_or_peer, c->stream, ce ? &ce->v : NULL, false, 0, 0, now - c->ts,
			  aiscope_now_realtime(), true, "probe");
	}
	report_new_stuck(now);
}

/* a call found on a stack, once it has been there --hang since found: a
 * hang event with its op and thread (arguments and communicator not
 * known), waiting_ns counting from when nclstat found it */
static void report_new_stuck(uint64_t now)
{
	struct aiscope_ident id;

	for (size_t i = 0; i < S.nstuck; i++) {
		struct stuck *c = &S.stuck[i];

		if (c->reported || !stuck_due(c, now))
			continue;
		c->reported = true;
		S.hangs_seen++;
		if (!env.json) {
			if (cfg.events)
				fprintf(stderr, "%s: pid %u tid %u in %s since before nclstat started, "
					"%.1f s at least\n", TOOL, c->pid, c->tid, op_name(c->op),
					(now - c->found_ts) / 1e9);
			continue;
		}
		ident_of(c->pid, c->tid, &id);
		json_call("hang", &id, c->op, c->comm, 0, 0, 0, -1, 0, c->comm ? &c->cv : NULL,
			  false, 0, 0, now - c->found_ts, aiscope_now_realtime(), false, "stack");
	}
}

/* ---- NCCL's RAS service: the whole job, every host ---- */

/*
 * A thread asks RAS (a query can take seconds: RAS gathers from every host
 * of the job) and leaves the newest status for the next interval to print.
 * It is never joined: at exit it may be waiting on RAS.
 */
static struct {
	pthread_mutex_t lock;
	struct ncclras_status st;	/* the newest, not printed yet */
	bool fresh;
	int err, said;			/* the last query's result; the last said */
	uint64_t answers;
} R = { .lock = PTHREAD_MUTEX_INITIALIZER, .said = 1 /* nothing said yet */ };

static void *ras_thread(void *arg)
{
	for (;;) {
		struct ncclras_status st;
		char *doc = NULL;
		size_t len;
		int err = ncclras_query(cfg.ras_host, cfg.ras_port, 5, &doc, &len);

		if (!err)
			err = ncclras_parse(doc, len, &st);
		free(doc);
		pthread_mutex_lock(&R.lock);
		if (!err) {
			ncclras_status_free(&R.st);
			R.st = st;
			R.fresh = true;
			R.answers++;
		}
		R.err = err;
		pthread_mutex_unlock(&R.lock);
		nanosleep(&(struct timespec){ .tv_sec = cfg.ras_every_ns / NSEC_PER_SEC,
					      .tv_nsec = cfg.ras_every_ns % NSEC_PER_SEC }, NULL);
	}
	return NULL;
}

static void ras_start(void)
{
	pthread_t t;

	if (!cfg.ras_host[0] || cfg.events)
		return;
	if (pthread_create(&t, NULL, ras_thread, NULL))
		fprintf(stderr, "%s: NCCL RAS not asked: cannot start a thread\n", TOOL);
	else
		pthread_detach(t);
}

/* a change of what RAS answers, said once: no RAS (no NCCL job here, or
 * RAS off in it) is the usual case and is not said */
static void ras_say(int err)
{
	if (err == R.said)
		return;
	R.said = err;
	if (!err)
		fprintf(stderr, "%s: NCCL RAS at %s:%s answers\n", TOOL, cfg.ras_host, cfg.ras_port);
	else if (err == -EPROTO)
		fprintf(stderr, "%s: NCCL RAS at %s:%s does not answer in JSON (NCCL before 2.28.7)\n",
			TOOL, cfg.ras_host, cfg.ras_port);
	else if (err != -ECONNREFUSED)
		fprintf(stderr, "%s: NCCL RAS at %s:%s: %s\n", TOOL, cfg.ras_host, cfg.ras_port,
			err == -EINVAL ? "not a status document" : strerror(-err));
}

static void json_ras_comm(const struct ncclras_status *st, const struct ncclras_comm *c,
			  uint64_t now)
{
	struct jw *w = &S.jw;
	uint64_t min, max;
	int b = ncclras_behind(c, &min, &max);

	jw_record_begin(w, "sample", TOOL, now);
	jw_ku64(w, "seq", S.loop.ticks);
	jw_kstr(w, "row", "ras_communicator");
	jw_hash(w, "communicator_id", c->hash);
	jw_kstr(w, "nccl_version", st->version[0] ? st->version : NULL);
	jw_ki64_or_null(w, "nranks", c->size >= 0, c->size);
	jw_key(w, "ranks");
	jw_arr_begin(w);
	for (size_t i = 0; i < c->nranks; i++) {
		const struct ncclras_rank *r = &c->ranks[i];

		jw_obj_begin(w);
		jw_ki64(w, "rank", r->rank);
		jw_kstr(w, "host", r->host);
		jw_ki64(w, "pid", r->pid);
		jw_ku64(w, "collectives", r->colls);
		jw_ki64(w, "init_state", r->init_state);
		jw_ki64(w, "async_error", r->async_error);
		jw_kbool(w, "finalize_called", r->finalize_called);
		jw_kbool(w, "destroy_flag", r->destroy_flag);
		jw_kbool(w, "abort_flag", r->abort_flag);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_key(w, "missing_ranks");
	jw_arr_begin(w);
	for (size_t i = 0; i < c->nmissing; i++) {
		jw_obj_begin(w);
		jw_ki64(w, "rank", c->missing[i].rank);
		jw_kstr(w, "host", c->missing[i].host);
		jw_ki64(w, "pid", c->missing[i].pid);
		jw_kbool(w, "unresponsive", c->missing[i].unresponsive);
		jw_kbool(w, "considered_dead", c->missing[i].dead);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	jw_ku64(w, "collectives_min", min);
	jw_ku64(w, "collectives_max", max);
	/* the rank with the fewest collectives launched, when they differ */
	jw_ki64_or_null(w, "behind_rank", b >= 0 && min < max, b >= 0 ? c->ranks[b].rank : 0);
	jw_kstr(w, "behind_host", b >= 0 && min < max ? c->ranks[b].host : NULL);
	jw_ki64_or_null(w, "behind_pid", b >= 0 && min < max, b >= 0 ? c->ranks[b].pid : 0);
	jw_record_end(w);
}

static void table_ras(const struct ncclras_status *st)
{
	printf("NCCL RAS (%s, every host of the job): %zu communicators\n",
	       st->version[0] ? st->version : "version unknown", st->ncomms);
	for (size_t i = 0; i < st->ncomms; i++) {
		const struct ncclras_comm *c = &st->comms[i];
		uint64_t min, max;
		int b = ncclras_behind(c, &min, &max);

		printf("  %016llx %d ranks, %zu answered, %zu missing", (unsigned long long)c->hash,
		       c->size, c->nranks, c->nmissing);
		if (b >= 0 && min < max)
			printf("; rank %d (pid %d on %s) behind: %llu collectives against %llu",
			       c->ranks[b].rank, c->ranks[b].pid, c->ranks[b].host,
			       (unsigned long long)min, (unsigned long long)max);
		for (size_t m = 0; m < c->nmissing; m++)
			printf("; rank %d (pid %d on %s) %s", c->missing[m].rank, c->missing[m].pid,
			       c->missing[m].host, c->missing[m].dead ? "dead" :
			       c->missing[m].unresponsive ? "unresponsive" : "missing");
		putchar('\n');
	}
}

/* the status RAS gave since the last interval, if any */
static void print_ras(uint64_t now)
{
	struct ncclras_status st = {};
	bool fresh;

	if (!cfg.ras_host[0] || cfg.events)
		return;
	pthread_mutex_lock(&R.lock);
	fresh = R.fresh;
	if (fresh) {
		st = R.st;
		memset(&R.st, 0, sizeof(R.st));
		R.fresh = false;
	}
	ras_say(R.err);
	pthread_mutex_unlock(&R.lock);
	if (!fresh)
		return;
	if (env.json) {
		for (size_t i = 0; i < st.ncomms; i++)
			json_ras_comm(&st, &st.comms[i], now);
	} else {
		table_ras(&st);
		putchar('\n');
	}
	ncclras_status_free(&st);
}

static void print_interval(uint64_t interval)
{
	uint64_t now = aiscope_now_realtime();
	size_t shown = table_shown(S.nrows, env.rows);
	struct group g;
	size_t i = 0;

	sort_array(S.rows, S.nrows, sizeof(*S.rows), cmp_rows);
	if (env.json) {
		while (next_group(&i, &g))
			json_group(&g, now, interval);
		print_ras(now);
		for (i = 0; i < shown; i++)
			json_row(&S.rows[i], now, interval);
		report_new_hangs();
		return;
	}
	table_block_begin(stdout, env.tty && !env.noclear, now, interval, TOOL);
	print_ras(now);
	if (S.ncomms) {
		table_groups();
		putchar('\n');
	}
	table_ops(interval, shown);
	if (any_hang()) {
		putchar('\n');
		table_hangs();
	}
	report_new_hangs();
}

/* every local rank of a known communicator, as it is now: a communicator
 * gone from the registry is no longer exported */
static void metrics_ranks(void)
{
	prom_family_clear(P.rank_seq);
	prom_family_clear(P.rank_last);
	for (size_t i = 0; i < S.ncomms; i++) {
		const struct comm_ent *c = &S.comms[i];
		char id[24], rank[16], nranks[16], pid[16];
		struct aiscope_ident who;
		const char *v[] = { jw_host() ?: "", id, rank, nranks, pid, who.comm };

		if (!c->v.id_hash || c->v.rank < 0)
			continue;
		snprintf(id, sizeof(id), "0x%llx", (unsigned long long)c->v.id_hash);
		snprintf(rank, sizeof(rank), "%d", c->v.rank);
		if (c->v.nranks > 0)
			snprintf(nranks, sizeof(nranks), "%d", c->v.nranks);
		else
			nranks[0] = 0;
		snprintf(pid, sizeof(pid), "%u", c->k.pid);
		/* the thread of its last collective, as its samples name it */
		ident_of(c->k.pid, c->v.tid ? c->v.tid : c->k.pid, &who);
		prom_gauge_set(P.rank_seq, v, c->v.seq);
		if (c->v.last_ts)
			prom_gauge_set(P.rank_last, v, aiscope_realtime(c->v.last_ts) / 1e9);
	}
}

static void metrics_gauges(void)
{
	static const char *const none[] = { NULL };
	uint64_t skew = 0;
	struct group g;
	size_t i = 0;

	if (!P.calls)
		return;
	while (next_group(&i, &g))
		if (g.seq_max - g.seq_min > skew)
			skew = g.seq_max - g.seq_min;
	prom_gauge_set(P.hung, none, S.nhangs);
	prom_gauge_set(P.skew, none, skew);
	prom_gauge_set(P.libs, none, S.libs);
	metrics_ranks();
}

static void rescan(bool force)
{
	if (!S.discover || (!force && !uprobe_rescan_due(&S.scan, clock_ns(CLOCK_MONOTONIC))))
		return;
	uprobe_scan_all(&S.scan, env.npids ? env.pids : NULL, env.npids);
}

static int on_tick(void *ctx)
{
	uint64_t interval = aiscope_loop_interval(&S.loop);

	rescan(false);
	read_comms();
	sort_array(S.comms, S.ncomms, sizeof(*S.comms), cmp_comms);
	read_hangs();
	check_stuck();
	if (cfg.events) {
		report_new_hangs();
	} else {
		read_arrivals();
		collect();
		link_rows();
		print_interval(interval);
		metrics_gauges();
	}
	sweep_comms();
	if (!cfg.events && env.count && S.loop.ticks >= env.count)
		return AISCOPE_STOP;
	return 0;
}

/* ---- -e: one event per call ---- */

static const struct tcol cols_event[] = {
	{ "TIME", 8, TC_LEFT }, { "PID", 7, 0 }, { "TID", 7, 0 }, { "COMM", 15, TC_LEFT },
	{ "OP", 16, TC_LEFT }, { "COUNT", 10, 0 }, { "DTYPE", 6, TC_LEFT }, { "BYTES", 11, 0 },
	{ "REDOP", 5, TC_LEFT }, { "PEER", 4, 0 }, { "COMM_HASH", 16, TC_LEFT }, { "RANK", 4, 0 },
	{ "NRANKS", 6, 0 }, { "RC", 3, 0 }, { "LAT(us)", 9, 0 },
};

static bool event_comm(const struct ncl_event *e, struct ncl_comm *out)
{
	struct ncl_comm_key k = { .pid = e->task.pid };
	uint64_t handle = e->new_comm ? e->new_comm : e->comm;

	/* a call that makes a communicator carries what it registered, or
	 * (failed) its own arguments' */
	if (e->new_comm || e->op == NCL_OP_INIT_RANK || e->op == NCL_OP_INIT_RANK_CONFIG ||
	    e->op == NCL_OP_INIT_SCALABLE || e->op == NCL_OP_SHRINK) {
		memset(out, 0, sizeof(*out));
		out->id_hash = e->id_hash;
		out->nranks = e->nranks;
		out->rank = e->rank;
		out->ident = e->ident;
		return true;
	}
	if (!handle)
		return false;
	k.handle = handle;
	return !bpf_map_lookup_elem(bpf_map__fd(S.skel->maps.comms), &k, out);
}

static int on_event(void *ctx, void *data, size_t len)
{
	const struct ncl_event *e = data;
	uint64_t rt = aiscope_realtime(e->ts);
	struct ncl_comm c;
	bool have = event_comm(e, &c), coll = is_collective(e->op);
	uint32_t d = e->datatype < NCL_NUM_TYPES ? e->datatype : NCL_DT_UNKNOWN;
	struct table t;
	char hms[16], buf[32];

	if (len < sizeof(*e))
		return 0;
	S.events++;
	S.calls++;
	if (coll)
		S.bytes += e->count * ncl_dtype_size(d);
	if (e->returned && e->rc && e->rc != NCL_IN_PROGRESS)
		S.errors++;
	if (env.json) {
		json_call("call", &e->task, e->op, e->comm, e->count, e->datatype, e->redop,
			  e->root_or_peer, e->stream, have ? &c : NULL, e->returned, e->rc,
			  e->latency_ns, -1, rt, true, NULL);
	} else {
		table_init_time(&t, stdout, cols_event, ARRAY_SIZE(cols_event), env.timestamp,
				env.tty && !env.wide);
		if (env.timestamp) {
			fmt_hms(rt, hms, sizeof(hms));
			table_str(&t, hms);
		}
		table_u64(&t, e->task.pid);
		table_u64(&t, e->task.tid);
		table_str(&t, e->task.comm);
		table_str(&t, op_name(e->op));
		if (coll) {
			table_u64(&t, e->count);
			table_str(&t, dtype_short[d]);
			table_u64(&t, e->count * ncl_dtype_size(d));
		} else {
			table_dashes(&t, 3);
		}
		table_str(&t, e->op == NCL_OP_ALLREDUCE || e->op == NCL_OP_REDUCE ||
			      e->op == NCL_OP_REDUCESCATTER ?
			      redop_names[e->redop < NCL_NUM_OPS ? e->redop : NCL_REDOP_DYNAMIC_BIT] : "-");
		table_u64_or_dash(&t, coll && e->root_or_peer >= 0, coll ? e->root_or_peer : 0);
		fmt_hash(have ? c.id_hash : 0, buf, sizeof(buf));
		table_str(&t, buf);
		table_u64_or_dash(&t, have && c.rank >= 0, have ? c.rank : 0);
		table_u64_or_dash(&t, have && c.nranks >= 0, have ? c.nranks : 0);
		snprintf(buf, sizeof(buf), "%d", e->rc);
		table_str(&t, e->returned ? buf : "-");
		table_fixed_or_dash(&t, e->returned, e->latency_ns / 1e3, 1);
		table_end_row(&t);
	}
	if (env.count && S.events >= env.count)
		return aiscope_loop_stop(&S.loop, AISCOPE_EXIT_COUNT);
	return 0;
}

/* ---- libraries ---- */

static int classify(const struct proc_map *m, void *ctx)
{
	char buf[256];
	const char *base = uprobe_basename(m->path, buf, sizeof(buf));

	if (!strncmp(base, "libnccl.so", 10) || !strncmp(base, "libnccl-", 8))
		return KIND_NCCL;
	/* an executable with NCCL linked in (conda builds): its symbols
	 * decide, once per file */
	return m->main_exe ? KIND_EXE : -1;
}

/* the uprobe_multi links of the probes attach_lib noted */
static void flush_lib(struct uprobe_lib *lib)
{
	int err, failed = uprobe_lib_flush(lib, &err);

	if (failed)
		fprintf(stderr, "%s: cannot attach %d probes in %s: %s\n", TOOL, failed, lib->path,
			strerror(-err));
}

/*
 * Where this library's communicators keep their identity, from its code:
 * one layout for all the libraries probed (BPF reads with one); libraries
 * that disagree leave it unknown, said once.
 */
static void learn_layout(const struct uprobe_lib *lib)
{
	struct ncclcomm_layout l;
	int err = ncclcomm_layout_of(lib->open_path, &l);

	if (err) {
		fprintf(stderr, "%s: %s: communicators not read (%s): their identity from the calls "
			"that make them\n", TOOL, lib->path,
			err == -ENOENT ? "no known accessor code" :
			err == -EPROTO ? "unknown layout" : strerror(-err));
		return;
	}
	if (S.layout_conflict)
		return;
	if (S.layout_set && (l.hash_off != S.layout.hash_off)) {
		S.layout_conflict = true;
		S.skel->bss->comm_hash_off = 0;
		fprintf(stderr, "%s: %s keeps its communicators unlike an earlier library: none read "
			"from now on\n", TOOL, lib->path);
		return;
	}
	if (!S.layout_set)
		fprintf(stderr, "%s: communicators read at 0x%llx (commHash, rank, nRanks) as NCCL %s "
			"keeps them\n", TOOL, (unsigned long long)l.hash_off,
			l.version[0] ? l.version : "(version unknown)");
	S.layout = l;
	S.layout_set = true;
	S.skel->bss->comm_hash_off = l.hash_off;
}

static void attach_lib(struct uprobe_lib *lib, void *ctx)
{
	struct bpf_object *obj = S.skel->obj;
	int n = 0;

	/* before the probes: their first calls read the communicators */
	if (lib->syms && elf_syms_has(lib->syms, "ncclAllReduce"))
		learn_layout(lib);

	for (size_t i = 0; i < ARRAY_SIZE(usyms); i++) {
		struct bpf_program *enter = bpf_object__find_program_by_name(obj, usyms[i].enter);
		struct bpf_program *ret = bpf_object__find_program_by_name(obj, usyms[i].ret);
		int err = uprobe_lib_attach(lib, enter, usyms[i].sym, false, -1);

		if (err) {
			if (err != -ENOENT)
				fprintf(stderr, "%s: cannot attach to %s in %s: %s\n", TOOL,
					usyms[i].sym, lib->path, strerror(-err));
			continue;
		}
		n++;
		if (cfg.no_return && (!strcmp(usyms[i].ret, "coll_return") ||
				      !strcmp(usyms[i].ret, "group_return")))
			continue;
		err = uprobe_lib_attach(lib, ret, usyms[i].sym, true, -1);
		if (err)
			fprintf(stderr, "%s: cannot attach a return probe to %s in %s: %s\n", TOOL,
				usyms[i].sym, lib->path, strerror(-err));
	}
	flush_lib(lib);
	if (!n) {
		/* kept in the set only so that it is not read again */
		uprobe_lib_drop_syms(lib);
		if (lib->kind == KIND_NCCL)
			fprintf(stderr, "%s: no NCCL API in %s\n", TOOL, lib->path);
		return;
	}
	S.libs++;
	fprintf(stderr, "%s: probing %d NCCL functions in %s\n", TOOL, n, lib->path);
}

static void add_libs(void)
{
	for (int i = 0; i < cfg.nlibs; i++) {
		struct uprobe_lib *lib = uprobe_scan_add_path(&S.scan, cfg.libs[i], KIND_NCCL);

		if (!lib)
			aiscope_fail(EXIT_USAGE, "cannot read --lib %s: %s", cfg.libs[i], strerror(errno));
		if (!lib->attached)
			aiscope_fail(EXIT_USAGE, "no NCCL API (ncclAllReduce, ...) in --lib %s",
				     cfg.libs[i]);
	}
}

/* --list-probes: the kernel hooks, then each NCCL function of each library
 * found now (or given) and where it is */
struct found {
	char path[256];
	char open_path[64];
	uint64_t dev, ino;
};

static struct found found_libs[MAX_LIBS];
static int nfound;

static int list_map_cb(const struct proc_map *m, void *ctx)
{
	pid_t pid = *(pid_t *)ctx;

	if (nfound == MAX_LIBS || classify(m, NULL) < 0)
		return 0;
	for (int i = 0; i < nfound; i++)
		if (found_libs[i].dev == m->dev && found_libs[i].ino == m->ino)
			return 0;
	snprintf(found_libs[nfound].path, sizeof(found_libs[nfound].path), "%s", m->path);
	proc_map_file(pid, m, found_libs[nfound].open_path, sizeof(found_libs[nfound].open_path));
	found_libs[nfound].dev = m->dev;
	found_libs[nfound].ino = m->ino;
	nfound++;
	return 0;
}

static int list_pid_cb(pid_t pid, void *ctx)
{
	if (env.npids && !pid_in_list(pid))
		return 0;
	proc_maps_foreach(pid, list_map_cb, &pid);
	return 0;
}

static void list_uprobes(void)
{
	struct jw w;

	jw_init(&w, stdout);
	if (cfg.nlibs) {
		for (int i = 0; i < cfg.nlibs; i++) {
			snprintf(found_libs[i].path, sizeof(found_libs[i].path), "%s", cfg.libs[i]);
			snprintf(found_libs[i].open_path, sizeof(found_libs[i].open_path), "%s",
				 cfg.libs[i]);
		}
		nfound = cfg.nlibs;
	} else {
		proc_pids_foreach(list_pid_cb, NULL);
	}
	for (int l = 0; l < nfound; l++) {
		/* a discovered library is opened through /proc/PID/map_files */
		struct elf_syms *s = elf_syms_open(found_libs[l].open_path);

		for (size_t i = 0; i < ARRAY_SIZE(usyms); i++) {
			uint64_t off = 0;
			bool ok = s && !elf_syms_offset(s, usyms[i].sym, &off);
			char target[320], safe[320];

			snprintf(target, sizeof(target), "%s+0x%llx", found_libs[l].path,
				 (unsigned long long)off);
			if (env.json) {
				jw_record_begin(&w, "probe", TOOL, aiscope_now_realtime());
				jw_kstr(&w, "hook", usyms[i].sym);
				jw_kbool(&w, "optional", i > 0);
				jw_kstr(&w, "mechanism", "uprobe");
				jw_kstr(&w, "target", ok ? target : found_libs[l].path);
				jw_kstr(&w, "status", ok ? "chosen" : "unavailable");
				jw_kstr(&w, "reason", ok ? uprobe_link_kind() :
						      s ? "not in the library" : "cannot read the library");
				jw_kstr(&w, "symbol", ok ? usyms[i].sym : NULL);
				jw_record_end(&w);
			} else {
				/* a library path is any file name a process mapped */
				printf("%-22s %-11s %-34s %s%s\n", usyms[i].sym, "uprobe",
				       text_safe(safe, sizeof(safe), ok ? target : found_libs[l].path),
				       ok ? "chosen: " : s ? "unavailable: not in the library" :
				       "unavailable: cannot read the library", ok ? uprobe_link_kind() : "");
			}
		}
		elf_syms_free(s);
	}
	if (!nfound && !env.json)
		printf("%-22s %-11s %-34s %s\n", "libnccl", "uprobe", "-",
		       "none yet: no process maps libnccl.so (attached when one does; or --lib)");
	if (!nfound && env.json) {
		jw_record_begin(&w, "probe", TOOL, aiscope_now_realtime());
		jw_kstr(&w, "hook", "libnccl");
		jw_kbool(&w, "optional", false);
		jw_kstr(&w, "mechanism", "uprobe");
		jw_knull(&w, "target");
		jw_kstr(&w, "status", "waiting");
		jw_kstr(&w, "reason", "no process maps libnccl.so yet");
		jw_knull(&w, "symbol");
		jw_record_end(&w);
	}
}

static void list_probes(void)
{
	struct jw w;

	jw_init(&w, stdout);
	probe_resolve(hooks, ARRAY_SIZE(hooks) - (cfg.nlibs > 0), features_ops(), env.probe_mask);
	probe_print_plan(stdout, hooks, ARRAY_SIZE(hooks) - (cfg.nlibs > 0), env.json ? &w : NULL, TOOL,
			 aiscope_now_realtime());
	list_uprobes();
	fflush(stdout);
	exit(0);
}

/* ---- summary ---- */

static void arrivals_expired_line(void)
{
	if (S.comms_dropped)
		fprintf(stderr, "%s: %llu communicators found at start not registered (the registry "
			"of %u is full): not in the communicator rows\n", TOOL,
			(unsigned long long)S.comms_dropped, bpf_map__max_entries(S.skel->maps.comms));
	if (S.arrivals_expired)
		fprintf(stderr, "%s: %llu collective arrivals never paired with every local rank's "
			"(a rank exited or stopped calling for 60 s): in no arrival skew\n", TOOL,
			(unsigned long long)S.arrivals_expired);
}

static void print_summary(void)
{
	if (env.json) {
		aiscope_summary_begin(&S.jw, &S.bpf, &S.loop, cfg.events ? S.events : S.calls);
		jw_ku64(&S.jw, "intervals", S.loop.ticks);
		jw_ku64(&S.jw, "calls", S.calls);
		jw_ku64(&S.jw, "bytes", S.bytes);
		jw_ku64(&S.jw, "errors", S.errors);
		jw_ku64(&S.jw, "hangs", S.hangs_seen);
		jw_ku64(&S.jw, "libraries", S.libs);
		jw_ku64(&S.jw, "held", S.skel->bss->uprobe_held);
		jw_ku64(&S.jw, "hold_max_ns", S.scan.hold_max_ns);
		jw_ku64(&S.jw, "arrivals_expired", S.arrivals_expired);
		jw_ku64(&S.jw, "communicators_dropped", S.comms_dropped);
		pthread_mutex_lock(&R.lock);
		jw_ku64(&S.jw, "ras_answers", R.answers);
		pthread_mutex_unlock(&R.lock);
		jw_record_end(&S.jw);
		arrivals_expired_line();
		return;
	}
	if (cfg.events) {
		fprintf(stderr, "%s: %llu calls, %llu hangs, %llu lost\n", TOOL,
			(unsigned long long)S.events, (unsigned long long)S.hangs_seen,
			(unsigned long long)aiscope_lost_total(&S.bpf));
		return;
	}
	printf("# summary: %llu calls, %llu bytes issued, %llu errors, %llu hangs, %d libraries, %llu lost events\n",
	       (unsigned long long)S.calls, (unsigned long long)S.bytes,
	       (unsigned long long)S.errors, (unsigned long long)S.hangs_seen, S.libs,
	       (unsigned long long)aiscope_lost_total(&S.bpf));
	arrivals_expired_line();
}

static void validate(void)
{
	if (env.sort)
		cfg.sort = sort_keys[opt_word("--sort", env.sort, sort_keys)];
	if (cfg.events && cfg.busbw)
		usage_error("--busbw is a column of the interval table: it cannot be combined with -e");
	/* before any BPF work, so that a wrong path is a usage error for anyone */
	for (int l = 0; l < cfg.nlibs; l++) {
		struct elf_syms *es = elf_syms_open(cfg.libs[l]);

		if (!es)
			usage_error("cannot read --lib %s: %s", cfg.libs[l],
				    errno == ENOEXEC ? "not an ELF file" : strerror(errno));
		if (!elf_syms_has(es, "ncclAllReduce")) {
			elf_syms_free(es);
			usage_error("no NCCL API (ncclAllReduce) in --lib %s", cfg.libs[l]);
		}
		elf_syms_free(es);
	}
}

static void setup_scanner(void)
{
	S.scan = (struct uprobe_scanner){
		.set = &S.set, .classify = classify, .attach = attach_lib,
		.rescan_ns = RESCAN_NS,
	};
	if (cfg.nlibs) {
		add_libs();
		return;
	}
	S.discover = true;
	S.scan.dlopen_prog = S.skel->progs.uprobe_disc_dlopen;
	S.loop.aux_rb = uprobe_discover_open(S.skel->obj, &S.scan);
	if (!S.loop.aux_rb)
		aiscope_fail(EXIT_RUNTIME, "cannot open the discovery ring buffer: %s", strerror(errno));
	rescan(true);
	if (!S.libs)
		fprintf(stderr, "%s: no process maps libnccl.so yet: waiting for one\n", TOOL);
}

int main(int argc, char **argv)
{
	int code;

	aiscope_parse(&argp, argc, argv, TOOL,
		      AISCOPE_AGGREGATING | AISCOPE_STREAMING | AISCOPE_METRICS);
	validate();
	metrics_init();
	jw_init(&S.jw, stdout);
	if (env.list_probes)
		list_probes();

	S.skel = nclstat_bpf__open_opts(aiscope_open_opts());
	if (!S.skel)
		aiscope_fail(EXIT_RUNTIME, "cannot open the BPF object: %s", strerror(errno));
	S.skel->rodata->stream_events = cfg.events;
	S.skel->rodata->entry_only = cfg.no_return;
	S.skel->rodata->pair_arrivals = !cfg.events;
	S.skel->rodata->uprobe_hold = cfg.hold;
	S.bpf = (struct aiscope_bpf){
		/* with --lib, no discovery: the exec hook (last) stays off */
		.hooks = hooks, .nhooks = ARRAY_SIZE(hooks) - (cfg.nlibs > 0),
		.streaming = cfg.events, .on_event = on_event,
	};
	aiscope_bpf_prepare(&S.bpf, S.skel->obj, &S.skel->rodata->aiscope_cfg);
	if (cfg.nlibs) {
		bpf_program__set_autoload(S.skel->progs.uprobe_disc_exec_btf, false);
		bpf_program__set_autoload(S.skel->progs.uprobe_disc_exec_raw, false);
		bpf_program__set_autoload(S.skel->progs.uprobe_disc_exec_tp, false);
		bpf_program__set_autoload(S.skel->progs.uprobe_disc_dlopen, false);
	}
	/* a library's probes in a few links, detached at exit in one go */
	uprobe_obj_multi(S.skel->obj);
	aiscope_bpf_load(&S.bpf, nclstat_bpf__load(S.skel));
	aiscope_bpf_attach(&S.bpf);
	setup_scanner();
	find_stuck();
	ras_start();

	if (cfg.events && !env.json)
		table_header_time(stdout, cols_event, ARRAY_SIZE(cols_event), env.timestamp);
	aiscope_tracing("NCCL calls (%d %s)", S.libs, S.libs == 1 ? "library" : "libraries");

	S.loop.bpf = &S.bpf;
	S.loop.on_tick = on_tick;
	S.loop.on_final = on_tick;
	S.loop.tick_ns = env.interval_ns;
	code = aiscope_run(&S.loop, print_summary);
	uprobe_set_free(&S.set);
	uprobe_discover_close(S.loop.aux_rb, &S.scan);
	nclstat_bpf__destroy(S.skel);
	free(S.rows);
	free(S.st);
	free(S.comms);
	free(S.arr);
	free(S.acc);
	free(S.stuck);
	free(S.hangs);
	free(S.idents);
	return code;
}
