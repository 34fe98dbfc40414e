// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rdmasnoop: RDMA verbs traffic per process, queue pair and peer.
 *
 * Uprobes on libibverbs (found in processes' mappings and in the loader
 * cache) for devices, connection setup and memory registration, and on
 * the provider's post_send, post_recv and poll_cq, which the return probe
 * of ibv_open_device reports from the context's ops table: providers are
 * stripped and ibv_post_send() is an inline wrapper, so there is no name
 * to look up. A provider is probed by file offset once per file, for all
 * processes; calls made by the first process to open a device with it,
 * between its ibv_open_device and the attach (milliseconds), are not seen.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "complete.h"
#include "edge.h"
#include "hist.h"
#include "json.h"
#include "kfeatures.h"
#include "mapdrain.h"
#include "metrics.h"
#include "opts.h"
#include "run.h"
#include "table.h"
#include "text.h"
#include "uprobe.h"
#include "util.h"
#include "rdmasnoop.h"
#include "rdmasnoop.skel.h"

#define TOOL "rdmasnoop"
#define SYSFS_IB "/sys/class/infiniband"

static const char doc[] =
"RDMA verbs traffic per process and queue pair: work requests and bytes by\n"
"opcode, receives, completions and their errors, post-to-completion latency,\n"
"the peer of each queue pair, and the memory each process registered. From\n"
"uprobes on libibverbs and on the provider (mlx5, rxe, ...) that each device\n"
"uses; no restart, no RDMA counters needed.\n"
"\n"
"USAGE: rdmasnoop [OPTIONS] [interval [count]]"
"\v"
"EXAMPLES:\n"
"  rdmasnoop                       # top queue pairs by bytes, each second\n"
"  rdmasnoop -p 1234 5             # one process, every 5 s\n"
"  rdmasnoop -e                    # connections, registrations, completion errors\n"
"  rdmasnoop -j -n 3 | jq 'select(.type==\"sample\" and .row==\"qp\") | {pid, qpn, peer_qpn, send_bytes}'\n"
"  rdmasnoop -j -d 60s | jq 'select(.type==\"edge\")'\n"
"  rdmasnoop --listen :9472 -i 15s   # Prometheus scrapes /metrics\n"
"  rdmasnoop --wait-device -j        # every node, with or without a device yet\n"
"\n"
"Exit status: 0 done, 1 runtime error, 2 usage error, 77 cannot run here.";

enum { OPT_RESCAN = 0x200, OPT_WAIT_DEVICE, OPT_HOLD };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "rdmasnoop:", 1 },
	{ "events", 'e', NULL, 0,
	  "Stream device opens, connections, memory registrations and completion errors", 1 },
	UPROBE_RESCAN_OPTION(OPT_RESCAN),
	{ "wait-device", OPT_WAIT_DEVICE, NULL, 0,
	  "Run on a host with no RDMA device yet (a DaemonSet on every node, a driver that loads "
	  "later) instead of exiting 77: processes that open one once it appears are traced", 1 },
	{ "hold", OPT_HOLD, NULL, 0,
	  "Stop each process that opens a device until its provider is probed, and each new "
	  "program and library load (within the filters) until libibverbs is, then continue "
	  "it: no call of a new provider's first opener is missed", 1 },
	{},
};

static const char *const sort_keys[] = { "bytes", "wrs", "errors", "p99", NULL };

/* what the shell completions offer after its options (lib/complete.h) */
const struct opt_value aiscope_opt_values[] = {
	{ .name = "sort", .kind = OV_WORDS, .words = sort_keys },
	{},
};

static struct {
	bool events;
	bool wait_device;
	bool hold;
	uint64_t rescan_ns;
	const char *sort;
} cfg = { .rescan_ns = 5 * NSEC_PER_SEC, .sort = "bytes" };

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'e':
		cfg.events = true;
		env.no_metrics = "-e streams events: --prometheus and --listen need the interval view";
		break;
	case OPT_RESCAN:
		cfg.rescan_ns = opt_duration_or_never("--rescan", arg);
		break;
	case OPT_WAIT_DEVICE:
		cfg.wait_device = true;
		break;
	case OPT_HOLD:
		cfg.hold = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = AISCOPE_ARGP(opts, parse_arg, doc);

/* --hold's openers that ran on unstopped (its table full, or the signal
 * refused): their calls before the provider is probed are not seen */
#define HOLDS_SKIPPED_TEXT " device openers --hold did not stop (their first calls may be missed)"

static struct probe_hook hooks[] = {
	UPROBE_DISCOVER_HOOK,
};

/* ---- probed functions ---- */

enum { K_VERBS, K_PROVIDER };

struct verb {
	const char *sym;
	int prog;		/* enum below */
	bool ret;
};

enum { P_OPEN_RET, P_MODIFY, P_REG_RET, P_DEREG, P_AH, P_AH_RET, P_AH_DESTROY };

static const struct verb verbs[] = {
	{ "ibv_open_device", P_OPEN_RET, true },
	{ "ibv_modify_qp", P_MODIFY, false },
	{ "ibv_reg_mr", P_REG_RET, true },
	{ "ibv_reg_mr_iova", P_REG_RET, true },
	{ "ibv_reg_mr_iova2", P_REG_RET, true },
	{ "ibv_reg_dmabuf_mr", P_REG_RET, true },
	{ "ibv_dereg_mr", P_DEREG, false },
	{ "ibv_create_ah", P_AH, false },
	{ "ibv_create_ah", P_AH_RET, true },
	{ "ibv_destroy_ah", P_AH_DESTROY, false },
};

static const char *const fn_names[RS_NFN] = {
	"post_send", "post_recv", "poll_cq", "post_srq_recv",
};

/* a provider's entry points as learned from an opened context */
struct provider {
	uint64_t dev, ino;		/* of the file (stat) */
	uint64_t off[RS_NFN];
	char path[PATH_MAX];
	char devname[RS_DEV_LEN];
	bool attached;
};

#define MAX_PROVIDERS 32

/* ---- per-QP rows ---- */

struct prev_qp {
	struct rs_qp_key key;
	struct rs_qp q;
	bool seen;		/* in this interval's walk */
	bool unnamed;		/* its own address could not be read: counted */
	char local[80];		/* its own address (local_str), read when first seen */
};

struct row {
	struct rs_qp_key key;
	struct rs_qp d;		/* this interval's counters (identity and peer as now) */
	struct hist h;
	uint64_t bytes, wrs, errors, cqes;
	int peer;		/* index of the local peer's QP in prevs, or -1 */
	size_t self;		/* index of its own QP in prevs */
};

struct prev_proc {
	uint32_t pid;
	struct rs_proc p;
};

static struct {
	struct rdmasnoop_bpf *skel;
	struct aiscope_bpf bpf;
	struct aiscope_loop loop;
	struct jw jw;
	struct uprobe_set set;
	struct uprobe_scanner scanner;
	struct provider prov[MAX_PROVIDERS];
	int nprov;
	struct prev_qp *prevs;
	size_t nprevs, pcap;
	struct prev_proc *pprocs;
	size_t npprocs, ppcap;
	struct row *rows;
	size_t nrows, rcap;
	struct edge_table *edges;
	/* totals */
	uint64_t wrs, bytes, cqes, errors, events, opens;
	uint64_t providers_unlocated;	/* ops pointers in no file mapping */
	uint64_t sources_unnamed;	/* QPs whose own GID or LID could not be read */
	int libs_seen;
} S;

/* ---- discovery ---- */

/* libibverbs.so.1; a provider: .../libibverbs/libNAME-rdmavNN.so */
static int kind_of(const char *path)
{
	char base[64];

	uprobe_basename(path, base, sizeof(base));
	if (str_has_prefix(base, "libibverbs.so"))
		return K_VERBS;
	if (strstr(base, "-rdmav") && strstr(base, ".so"))
		return K_PROVIDER;
	return -1;
}

static int classify(const struct proc_map *m, void *ctx)
{
	return kind_of(m->path);
}

static int ldcache_cb(const char *soname, const char *path, void *ctx)
{
	if (!strcmp(soname, "libibverbs.so.1") && !access(path, R_OK))
		uprobe_scan_add_path(&S.scanner, path, K_VERBS);
	return 0;
}

static struct bpf_program *verb_prog(int p)
{
	struct rdmasnoop_bpf *k = S.skel;

	switch (p) {
	case P_OPEN_RET: return k->progs.open_device_ret;
	case P_MODIFY: return k->progs.modify_qp;
	case P_REG_RET: return k->progs.reg_mr_ret;
	case P_DEREG: return k->progs.dereg_mr;
	case P_AH: return k->progs.create_ah;
	case P_AH_DESTROY: return k->progs.destroy_ah;
	default: return k->progs.create_ah_ret;
	}
}

static struct bpf_program *fn_prog(int fn, bool ret)
{
	struct rdmasnoop_bpf *k = S.skel;

	switch (fn) {
	case RS_FN_POST_SEND: return ret ? NULL : k->progs.post_send;
	case RS_FN_POST_RECV: return ret ? NULL : k->progs.post_recv;
	case RS_FN_POLL_CQ: return ret ? k->progs.poll_cq_ret : k->progs.poll_cq;
	default: return NULL;	/* SRQ receives: not counted (no QP) */
	}
}

static void flush_lib(struct uprobe_lib *lib)
{
	int err, failed = uprobe_lib_flush(lib, &err);

	if (!failed)
		return;
	S.scanner.failed += failed;
	if (env.verbose)
		fprintf(stderr, "%s: cannot attach %d probes in %s: %s\n", TOOL, failed, lib->path,
			strerror(-err));
}

static void attach_verbs(struct uprobe_lib *lib)
{
	int found = 0;

	for (size_t i = 0; i < ARRAY_SIZE(verbs); i++) {
		int err = uprobe_lib_attach(lib, verb_prog(verbs[i].prog), verbs[i].sym,
					    verbs[i].ret, -1);

		if (err == -ENOENT)
			continue;
		found++;
		if (err) {
			S.scanner.failed++;
			if (env.verbose)
				fprintf(stderr, "%s: cannot attach %s in %s: %s\n", TOOL,
					verbs[i].sym, lib->path, strerror(-err));
		}
	}
	flush_lib(lib);
	S.libs_seen += found > 0;
}

static struct provider *provider_of(uint64_t dev, uint64_t ino)
{
	for (int i = 0; i < S.nprov; i++)
		if (S.prov[i].dev == dev && S.prov[i].ino == ino)
			return &S.prov[i];
	return NULL;
}

/*
 * Attach through a path that outlives the process the file was found in: a
 * provider is often first seen in a process that exits at once (ibv_devinfo;
 * the scanner's entry then names /proc/PID/map_files/...), and its probes
 * are attached one link after another. The path the maps name when it is
 * the same file here, else a descriptor of ours, kept open for the run.
 */
static void stable_open_path(struct uprobe_lib *lib)
{
	struct stat st;
	int fd;

	if (strncmp(lib->open_path, "/proc/", 6) || !strncmp(lib->open_path, "/proc/self/", 11))
		return;
	if (!stat(lib->path, &st) && st.st_ino == lib->ino && st.st_dev == lib->dev) {
		snprintf(lib->open_path, sizeof(lib->open_path), "%s", lib->path);
		return;
	}
	fd = open(lib->open_path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		snprintf(lib->open_path, sizeof(lib->open_path), "/proc/self/fd/%d", fd);
}

/*
 * One probe of a provider, tried again a few times: the process whose open
 * told us the provider (ibv_devinfo) may be exiting meanwhile, and the
 * kernel fails a probe while it installs it in an address space that is
 * being torn down (-ENOENT seen on 6.12).
 */
static void attach_provider_fn(struct uprobe_lib *lib, struct bpf_program *p, uint64_t off,
			       bool ret, const char *what)
{
	int err = 0, failed = 1;

	for (int t = 0; t < 5 && failed; t++) {
		if (t)
			usleep(20000);
		err = uprobe_lib_attach_off(lib, p, off, ret, -1);
		failed = err ? 1 : uprobe_lib_flush(lib, &err);
	}
	if (!failed)
		return;
	S.scanner.failed++;
	if (env.verbose)
		fprintf(stderr, "%s: cannot attach %s in %s: %s\n", TOOL, what, lib->path,
			strerror(-err));
}

/* the learned entry points of a provider file, probed for all processes */
static void attach_provider(struct uprobe_lib *lib, struct provider *pv)
{
	stable_open_path(lib);
	for (int fn = 0; fn < RS_NFN; fn++) {
		for (int ret = 0; ret < 2; ret++) {
			struct bpf_program *p = fn_prog(fn, ret);

			if (p && pv->off[fn])
				attach_provider_fn(lib, p, pv->off[fn], ret, fn_names[fn]);
		}
	}
	pv->attached = true;
	if (env.verbose)
		fprintf(stderr, "%s: provider %s (%s): post_send +0x%" PRIx64 " post_recv +0x%"
			PRIx64 " poll_cq +0x%" PRIx64 "\n", TOOL, lib->path, pv->devname,
			pv->off[RS_FN_POST_SEND], pv->off[RS_FN_POST_RECV], pv->off[RS_FN_POLL_CQ]);
}

static void attach_lib(struct uprobe_lib *lib, void *ctx)
{
	struct provider *pv;

	if (!elf_syms_native(lib->syms))
		return;
	if (lib->kind == K_VERBS) {
		attach_verbs(lib);
		return;
	}
	/* a provider mapped again after it was pruned: its offsets are known */
	pv = provider_of(lib->dev, lib->ino);
	if (pv) {
		pv->attached = false;
		attach_provider(lib, pv);
	}
}

/* A provider file seen for the first time: the offsets of its functions
 * (those in its own file: a function of another file is not probed) */
static struct provider *provider_new(const struct uprobe_lib *lib, const struct rs_event *e,
				     const struct addr_loc *loc)
{
	struct provider *pv;

	if (S.nprov == MAX_PROVIDERS)
		return NULL;
	pv = &S.prov[S.nprov++];
	pv->dev = lib->dev;
	pv->ino = lib->ino;
	snprintf(pv->path, sizeof(pv->path), "%s", lib->path);
	memcpy(pv->devname, e->dev, sizeof(pv->devname));
	pv->devname[RS_DEV_LEN - 1] = 0;
	for (int fn = 0; fn < RS_NFN; fn++)
		if (e->fn[fn] && loc[fn].dev == loc[RS_FN_POST_SEND].dev &&
		    loc[fn].ino == loc[RS_FN_POST_SEND].ino)
			pv->off[fn] = loc[fn].off;
	return pv;
}

/* the provider file of post_send, in the set; NULL when it cannot be */
static struct uprobe_lib *provider_lib(const struct addr_loc *loc)
{
	char shown[PATH_MAX];
	ssize_t n = readlink(loc->open_path, shown, sizeof(shown) - 1);
	bool created;

	if (n <= 0)
		return NULL;
	shown[n] = 0;
	return uprobe_set_add(&S.set, loc->open_path, shown, K_PROVIDER, &created);
}

/* An opened device: where its provider's functions are, probed if new. */
static void on_open(const struct rs_event *e)
{
	struct addr_loc loc[RS_NFN] = {};
	struct uprobe_lib *lib;
	struct provider *pv;

	S.opens++;
	for (int fn = 0; fn < RS_NFN; fn++) {
		if (e->fn[fn] && uprobe_addr_locate(e->ident.pid, e->fn[fn], &loc[fn])) {
			/* the opener exited before its maps were read: the
			 * next open tells it again */
			S.providers_unlocated++;
			if (env.verbose)
				fprintf(stderr, "%s: the provider of %s (pid %u) not found: "
					"its process is gone\n", TOOL, e->dev, e->ident.pid);
			return;
		}
	}
	/* known already (the inode alone: maps and stat() may name the
	 * device differently, as on overlayfs) */
	for (int i = 0; i < S.nprov; i++)
		if (S.prov[i].attached && S.prov[i].ino == loc[RS_FN_POST_SEND].ino)
			return;
	lib = provider_lib(&loc[RS_FN_POST_SEND]);
	if (!lib) {
		S.providers_unlocated++;
		return;
	}
	pv = provider_of(lib->dev, lib->ino);
	if (!pv)
		pv = provider_new(lib, e, loc);
	if (!pv) {
		S.scanner.failed++;
		return;
	}
	if (!pv->attached)
		attach_provider(lib, pv);
}

/* a provider file no process maps any more: its probes are gone with it */
static void release_lib(struct uprobe_lib *lib, void *ctx)
{
	struct provider *pv = provider_of(lib->dev, lib->ino);

	if (pv)
		pv->attached = false;
}

static void rescan(void)
{
	uprobe_scan_all(&S.scanner, env.pids, env.npids);
}

/* ---- RDMA devices ---- */

/* the names in /sys/class/infiniband, space-separated; 0 when none */
static int ib_devices(char *buf, size_t len)
{
	DIR *d = opendir(SYSFS_IB);
	struct dirent *de;
	size_t used = 0;
	int n = 0;

	buf[0] = 0;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		used += snprintf(buf + used, used < len ? len - used : 0, "%s%s", n ? " " : "",
				 de->d_name);
		n++;
	}
	closedir(d);
	if (used >= len && len > 4)
		strcpy(buf + len - 4, "...");
	return n;
}

/* ---- --list-probes ---- */

static void plan_line(struct jw *w, uint64_t now, const char *hook, const char *target,
		      const char *status, const char *why)
{
	char safe[PATH_MAX + 64];

	if (w) {
		jw_record_begin(w, "probe", TOOL, now);
		jw_kstr(w, "hook", hook);
		jw_kbool(w, "optional", true);
		jw_kstr(w, "mechanism", "uprobe");
		jw_kstr(w, "target", target);
		jw_kstr(w, "status", status);
		jw_kstr(w, "reason", why);
		jw_knull(w, "symbol");
		jw_record_end(w);
		return;
	}
	printf("%-22s %-11s %-40s %s%s%s\n", hook, "uprobe", text_safe(safe, sizeof(safe), target),
	       status, why ? ": " : "", why ? why : "");
}

static void list_uprobes(struct jw *w)
{
	uint64_t now = aiscope_now_realtime();
	char target[PATH_MAX + 64], devs[256];
	int files = 0;

	for (int l = 0; l < S.set.n; l++) {
		struct uprobe_lib *lib = S.set.libs[l];

		if (lib->kind != K_VERBS || !lib->syms)
			continue;
		for (size_t i = 0; i < ARRAY_SIZE(verbs); i++) {
			if (!elf_syms_has(lib->syms, verbs[i].sym))
				continue;
			snprintf(target, sizeof(target), "%s:%s%s", lib->path, verbs[i].sym,
				 verbs[i].ret ? " (return)" : "");
			plan_line(w, now, "libibverbs", target, "chosen", uprobe_link_kind());
			files++;
		}
	}
	if (!files)
		plan_line(w, now, "libibverbs", "libibverbs.so.1", "unavailable",
			  "not in the loader cache and mapped by no process now; "
			  "new processes are followed");
	/* the provider is known only once a device is opened while tracing */
	for (int fn = 0; fn < RS_NFN; fn++) {
		/* SRQ receives have no QP to count them under */
		bool used = fn != RS_FN_POST_SRQ_RECV;

		snprintf(target, sizeof(target), "<provider>:ops.%s", fn_names[fn]);
		plan_line(w, now, "provider", target, used ? "chosen" : "unavailable",
			  used ? "found at run time: ibv_open_device's context ops, probed by "
				 "file offset" : "shared receive queues are not counted");
	}
	if (!ib_devices(devs, sizeof(devs)))
		plan_line(w, now, "device", SYSFS_IB, "unavailable", "no RDMA device on this host");
	else
		plan_line(w, now, "device", devs, "chosen", NULL);
}

static void list_probes(void)
{
	struct jw w;

	jw_init(&w, stdout);
	probe_resolve(hooks, ARRAY_SIZE(hooks), features_ops(), env.probe_mask);
	probe_print_plan(stdout, hooks, ARRAY_SIZE(hooks), env.json ? &w : NULL, TOOL,
			 aiscope_now_realtime());
	uprobe_ldcache_foreach(NULL, ldcache_cb, NULL);
	uprobe_scan_all(&S.scanner, env.pids, env.npids);
	list_uprobes(env.json ? &w : NULL);
	fflush(stdout);
	exit(0);
}

/* ---- names ---- */

static const char *const status_names[RS_NSTATUS] = {
	"success", "local_len_err", "local_qp_op_err", "local_eec_op_err", "local_prot_err",
	"wr_flush_err", "mw_bind_err", "bad_resp_err", "local_access_err", "rem_inv_req_err",
	"rem_access_err", "rem_op_err", "retry_exc_err", "rnr_retry_exc_err",
	"loc_rdd_viol_err", "rem_inv_rd_req_err", "rem_abort_err", "inv_eecn_err",
	"inv_eec_state_err", "fatal_err", "resp_timeout_err", "general_err", "tm_err",
	"tm_rndv_incomplete", "other_err",
};

static const char *transport(uint32_t t)
{
	switch (t) {
	case RS_QPT_RC: return "rc";
	case RS_QPT_UC: return "uc";
	case RS_QPT_UD: return "ud";
	default: return NULL;
	}
}

/* a GID as IPv6 text (RoCE GIDs are IPv4-mapped or IPv6 addresses) */
static const char *gid_str(const uint8_t *gid, char *buf, size_t len)
{
	if (!inet_ntop(AF_INET6, gid, buf, len))
		snprintf(buf, len, "?");
	return buf;
}

/* The QP's own address as its peer names it, "GID/QPN" (the GID at the
 * source index its connection set, in its port's table) or "lidL/QPN";
 * NULL when its address vector was not seen (UD; connected before the
 * start) or the port's table cannot be read. */
static const char *local_str(const struct rs_qp *q, uint32_t qpn, char *buf, size_t len)
{
	char path[PATH_MAX], txt[64] = "", g[64];
	unsigned int lid;
	uint8_t gid[16];
	FILE *f;

	if (!q->has_sgid || !q->dev[0] || !q->port)
		return NULL;
	if (q->is_global)
		snprintf(path, sizeof(path), SYSFS_IB "/%.*s/ports/%u/gids/%u", RS_DEV_LEN, q->dev,
			 q->port, q->sgid_index);
	else
		snprintf(path, sizeof(path), SYSFS_IB "/%.*s/ports/%u/lid", RS_DEV_LEN, q->dev, q->port);
	f = fopen(path, "re");
	if (!f)
		return NULL;
	if (fscanf(f, "%63s", txt) != 1)
		txt[0] = 0;
	fclose(f);
	if (q->is_global) {
		if (inet_pton(AF_INET6, txt, gid) != 1)
			return NULL;
		snprintf(buf, len, "%s/%u", gid_str(gid, g, sizeof(g)), qpn);
	} else {
		if (sscanf(txt, "%x", &lid) != 1)
			return NULL;
		snprintf(buf, len, "lid%u/%u", lid, qpn);
	}
	return buf;
}

/* A QP's own address as read when first seen (read again if it could
 * not be then); NULL when its connection named none, or when its port's
 * table cannot be read: counted once per QP (sources_unnamed) */
static const char *local_of(struct prev_qp *p)
{
	if (p->local[0])
		return p->local;
	if (!p->q.has_sgid)
		return NULL;
	if (local_str(&p->q, p->key.qpn, p->local, sizeof(p->local)))
		return p->local;
	if (!p->unnamed) {
		p->unnamed = true;
		S.sources_unnamed++;
	}
	return NULL;
}

/* "GID qpn N" or "lid L qpn N"; NULL without a peer */
static const char *peer_str(const struct rs_qp *q, char *buf, size_t len)
{
	char g[64];

	if (q->has_peer == RS_PEER_NONE)
		return NULL;
	if (q->has_peer == RS_PEER_QPN)
		snprintf(buf, len, "?/%u", q->dest_qpn);
	else if (q->is_global)
		snprintf(buf, len, "%s/%u", gid_str(q->dgid, g, sizeof(g)), q->dest_qpn);
	else
		snprintf(buf, len, "lid%u/%u", q->dlid, q->dest_qpn);
	return buf;
}

/* ---- Prometheus metrics: by cgroup and opcode or status; the
 * interval's deltas, as the JSON samples say them ---- */

static const char *const op_names[RS_NOPS] = {
	"send", "write", "read", "atomic", "other", "recv",
};

AISCOPE_METRIC_LABELS(op_labels, AISCOPE_CGROUP_LABEL_NAMES, "opcode", NULL);
AISCOPE_METRIC_LABELS(status_labels, AISCOPE_CGROUP_LABEL_NAMES, "status", NULL);
AISCOPE_METRIC_LABELS(cg_labels, AISCOPE_CGROUP_LABEL_NAMES, NULL);

static struct {
	struct prom_family *wrs, *bytes, *cqes, *cqe_bytes, *errors, *latency, *mr_bytes;
} P;

static void metrics_init(void)
{
	if (!aiscope_metrics())
		return;
	P.wrs = aiscope_metric_counter("aiscope_rdmasnoop_work_requests_total",
		"Work requests posted, by opcode (send, write, read, atomic, other; recv: receives posted).",
		op_labels);
	P.bytes = aiscope_metric_counter("aiscope_rdmasnoop_posted_bytes_total",
		"Bytes of the scatter/gather lists of the work requests posted, by opcode.", op_labels);
	P.cqes = aiscope_metric_counter("aiscope_rdmasnoop_completions_total",
		"Successful completions polled, by opcode.", op_labels);
	P.cqe_bytes = aiscope_metric_counter("aiscope_rdmasnoop_completed_bytes_total",
		"byte_len of successful completions, by opcode (recv: bytes received).", op_labels);
	P.errors = aiscope_metric_counter("aiscope_rdmasnoop_completion_errors_total",
		"Completions with an error status, by ibv_wc_status name.", status_labels);
	P.latency = aiscope_metric_latency("aiscope_rdmasnoop_completion_latency_seconds",
		"Post-to-completion latency of send-queue work requests.", cg_labels);
	P.mr_bytes = aiscope_metric_counter("aiscope_rdmasnoop_registered_bytes_total",
		"Bytes of memory regions registered (ibv_reg_mr and the like).", cg_labels);
}

static void metrics_qp(const struct rs_qp *d, const struct hist *h)
{
	const char *vals[AISCOPE_CGROUP_NLABELS + 1];
	struct container_info ci;

	if (!P.wrs)
		return;
	aiscope_cgroup_values(&d->ident, vals, &ci);
	for (int i = 0; i < RS_NOPS; i++) {
		vals[AISCOPE_CGROUP_NLABELS] = op_names[i];
		prom_counter_add(P.wrs, vals, d->wrs[i]);
		prom_counter_add(P.bytes, vals, d->bytes[i]);
		prom_counter_add(P.cqes, vals, d->cqes[i]);
		prom_counter_add(P.cqe_bytes, vals, d->cqe_bytes[i]);
	}
	for (int i = 1; i < RS_NSTATUS; i++) {
		if (!d->errors[i])
			continue;
		vals[AISCOPE_CGROUP_NLABELS] = status_names[i];
		prom_counter_add(P.errors, vals, d->errors[i]);
	}
	if (h->total)
		prom_hist_add(P.latency, vals, h);
}

static void metrics_mr(const struct rs_proc *p, uint64_t bytes)
{
	const char *vals[AISCOPE_CGROUP_NLABELS];
	struct container_info ci;

	if (!P.mr_bytes)
		return;
	aiscope_cgroup_values(&p->ident, vals, &ci);
	prom_counter_add(P.mr_bytes, vals, bytes);
}

/* ---- intervals ---- */

static struct prev_qp *prev_of(const struct rs_qp_key *k)
{
	for (size_t i = 0; i < S.nprevs; i++)
		if (S.prevs[i].key.pid == k->pid && S.prevs[i].key.qpn == k->qpn)
			return &S.prevs[i];
	S.prevs = aiscope_grow(S.prevs, &S.pcap, S.nprevs, sizeof(*S.prevs));
	memset(&S.prevs[S.nprevs], 0, sizeof(S.prevs[0]));
	S.prevs[S.nprevs].key = *k;
	return &S.prevs[S.nprevs++];
}

static uint64_t sum(const __u64 *v, int n)
{
	uint64_t s = 0;

	for (int i = 0; i < n; i++)
		s += v[i];
	return s;
}

static void qp_delta(const struct rs_qp *cur, const struct rs_qp *old, struct row *r)
{
	struct rs_qp *d = &r->d;

	*d = *cur;
	for (int i = 0; i < RS_NOPS; i++) {
		d->wrs[i] -= old->wrs[i];
		d->bytes[i] -= old->bytes[i];
		d->cqes[i] -= old->cqes[i];
		d->cqe_bytes[i] -= old->cqe_bytes[i];
	}
	for (int i = 0; i < RS_NSTATUS; i++)
		d->errors[i] -= old->errors[i];
	d->truncated -= old->truncated;
	d->lat_unmatched -= old->lat_unmatched;
	d->peer_unknown -= old->peer_unknown;
	hist_reset(&r->h);
	for (unsigned int i = 0; i < HIST_BUCKETS; i++)
		r->h.counts[i] = cur->lat[i] - old->lat[i];
	r->h.total = cur->lat_count - old->lat_count;
	r->h.sum = cur->lat_sum - old->lat_sum;
	r->h.max = cur->lat_max;	/* the largest so far: the interval's is not kept */
	r->wrs = sum(d->wrs, RS_OP_RECV);
	r->bytes = sum(d->bytes, RS_OP_RECV) + d->cqe_bytes[RS_OP_RECV];
	r->cqes = sum(d->cqes, RS_NOPS);
	r->errors = sum(d->errors, RS_NSTATUS);
}

static void take_qp(const void *key, const void *value, void *ctx)
{
	const struct rs_qp *cur = value;
	struct prev_qp *p = prev_of(key);
	struct row *r;

	/* a key returned again (a walk restarts where the key before it was
	 * deleted meanwhile): counted once */
	if (p->seen)
		return;
	p->seen = true;
	S.rows = aiscope_grow(S.rows, &S.rcap, S.nrows, sizeof(*S.rows));
	r = &S.rows[S.nrows];
	memset(r, 0, sizeof(*r));
	r->key = p->key;
	r->self = p - S.prevs;
	qp_delta(cur, &p->q, r);
	p->q = *cur;
	/* its own address, from its port's table, as soon as its connection
	 * names its index: the device may be gone by the edges' time */
	if (cur->has_sgid && !p->local[0])
		local_str(cur, p->key.qpn, p->local, sizeof(p->local));
	metrics_qp(&r->d, &r->h);
	if (!r->wrs && !r->cqes && !r->errors && !r->d.wrs[RS_OP_RECV])
		return;
	S.nrows++;
	S.wrs += r->wrs;
	S.bytes += sum(r->d.bytes, RS_OP_RECV);
	S.cqes += r->cqes;
	S.errors += r->errors;
}

/* the local QP at the other end: it names us as its peer */
static int local_peer(const struct rs_qp_key *k, const struct rs_qp *q)
{
	if (!q->has_peer || q->qp_type == RS_QPT_UD)
		return -1;
	for (size_t i = 0; i < S.nprevs; i++) {
		const struct prev_qp *o = &S.prevs[i];

		if (o->key.qpn == q->dest_qpn && o->q.has_peer && o->q.dest_qpn == k->qpn &&
		    (o->key.pid != k->pid || o->key.qpn != k->qpn) && !strcmp(o->q.dev, q->dev))
			return i;
	}
	return -1;
}

static uint64_t sort_value(const struct row *r)
{
	switch (cfg.sort[0]) {
	case 'w': return r->wrs;
	case 'e': return r->errors;
	case 'p': return r->h.total ? hist_percentile(&r->h, 99) : 0;
	default: return r->bytes;
	}
}

static int cmp_rows(const void *a, const void *b)
{
	uint64_t x = sort_value(a), y = sort_value(b);

	return x < y ? 1 : x > y ? -1 : 0;
}

static void json_ops(struct jw *w, const struct rs_qp *d)
{
	const char *const *names = op_names;
	char k[48];

	for (int i = 0; i < RS_NOPS; i++) {
		snprintf(k, sizeof(k), "%s_wrs", names[i]);
		jw_ku64(w, k, d->wrs[i]);
		snprintf(k, sizeof(k), i == RS_OP_RECV ? "%s_posted_bytes" : "%s_bytes", names[i]);
		jw_ku64(w, k, d->bytes[i]);
		snprintf(k, sizeof(k), "%s_completions", names[i]);
		jw_ku64(w, k, d->cqes[i]);
	}
	jw_ku64(w, "recv_bytes", d->cqe_bytes[RS_OP_RECV]);
}

static void json_errors(struct jw *w, const struct rs_qp *d)
{
	jw_key(w, "errors_by_status");
	jw_obj_begin(w);
	for (int i = 1; i < RS_NSTATUS; i++)
		if (d->errors[i])
			jw_ku64(w, status_names[i], d->errors[i]);
	jw_obj_end(w);
}

static void json_qp_row(const struct row *r, uint64_t now, uint64_t interval)
{
	struct jw *w = &S.jw;
	const struct rs_qp *d = &r->d;
	struct aiscope_ident id = d->ident;
	bool lat = r->h.total > 0, addr;
	char g[64];

	jw_record_begin(w, "sample", TOOL, now);
	jw_ku64(w, "seq", S.loop.ticks);
	jw_ku64(w, "interval_ns", interval);
	jw_kstr(w, "row", "qp");
	id.pid = r->key.pid;
	aiscope_ident_json(w, &id, false);
	jw_kstr(w, "device", d->dev[0] ? d->dev : NULL);
	jw_ku64_or_null(w, "port", d->port, d->port);
	jw_ku64(w, "qpn", r->key.qpn);
	jw_kstr(w, "transport", transport(d->qp_type));
	addr = d->has_peer == RS_PEER_ADDR;
	jw_kstr(w, "peer_gid", addr && d->is_global ? gid_str(d->dgid, g, sizeof(g)) : NULL);
	jw_ku64_or_null(w, "peer_lid", addr && !d->is_global, d->dlid);
	jw_ku64_or_null(w, "peer_qpn", d->has_peer, d->dest_qpn);
	if (r->peer >= 0) {
		jw_ku64(w, "peer_pid", S.prevs[r->peer].key.pid);
		jw_kstr(w, "peer_comm", S.prevs[r->peer].q.ident.comm);
	} else {
		jw_knull(w, "peer_pid");
		jw_knull(w, "peer_comm");
	}
	jw_ku64(w, "wrs", r->wrs);
	json_ops(w, d);
	jw_ku64(w, "completions", r->cqes);
	jw_ku64(w, "errors", r->errors);
	json_errors(w, d);
	jw_ku64(w, "latency_count", r->h.total);
	jw_ku64_or_null(w, "latency_p50_ns", lat, hist_percentile(&r->h, 50));
	jw_ku64_or_null(w, "latency_p99_ns", lat, hist_percentile(&r->h, 99));
	jw_ku64_or_null(w, "latency_max_ns", lat, r->h.max);
	jw_ku64(w, "latency_unmatched", d->lat_unmatched);
	jw_ku64(w, "peer_unknown", d->peer_unknown);
	jw_ku64(w, "truncated", d->truncated);
	jw_record_end(w);
}

static const struct tcol cols_qp[] = {
	{ "TIME", 8, TC_LEFT }, { "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "DEV:PORT", 10, TC_LEFT },
	{ "QPN", 6, 0 }, { "T", 2, TC_LEFT }, { "PEER(GID/QPN)", 24, TC_LEFT },
	{ "WRS", 8, 0 }, { "SEND(KiB)", 10, 0 }, { "WRITE(KiB)", 10, 0 }, { "READ(KiB)", 10, 0 },
	{ "RECV(KiB)", 10, 0 }, { "CQES", 8, 0 }, { "ERRS", 5, 0 },
	{ "P50(us)", 8, 0 }, { "P99(us)", 8, 0 },
};

static void table_qp_row(struct table *t, const struct row *r, const char *hms)
{
	const struct rs_qp *d = &r->d;
	char dp[48], peer[96];
	const char *tr = transport(d->qp_type);

	if (env.timestamp)
		table_str(t, hms);
	table_u64(t, r->key.pid);
	table_str(t, d->ident.comm);
	snprintf(dp, sizeof(dp), "%s:%u", d->dev[0] ? d->dev : "?", d->port);
	table_str(t, dp);
	table_u64(t, r->key.qpn);
	table_str(t, tr ? tr : "-");
	table_str(t, peer_str(d, peer, sizeof(peer)) ?: "-");
	table_u64(t, r->wrs);
	table_fixed(t, d->bytes[RS_OP_SEND] / 1024.0, 1);
	table_fixed(t, d->bytes[RS_OP_WRITE] / 1024.0, 1);
	table_fixed(t, d->bytes[RS_OP_READ] / 1024.0, 1);
	table_fixed(t, d->cqe_bytes[RS_OP_RECV] / 1024.0, 1);
	table_u64(t, r->cqes);
	table_u64(t, r->errors);
	table_fixed_or_dash(t, r->h.total, hist_percentile(&r->h, 50) / 1e3, 1);
	table_fixed_or_dash(t, r->h.total, hist_percentile(&r->h, 99) / 1e3, 1);
	table_end_row(t);
}

/* ---- processes: registered memory ---- */

static struct prev_proc *pprev_of(uint32_t pid)
{
	for (size_t i = 0; i < S.npprocs; i++)
		if (S.pprocs[i].pid == pid)
			return &S.pprocs[i];
	S.pprocs = aiscope_grow(S.pprocs, &S.ppcap, S.npprocs, sizeof(*S.pprocs));
	memset(&S.pprocs[S.npprocs], 0, sizeof(S.pprocs[0]));
	S.pprocs[S.npprocs].pid = pid;
	return &S.pprocs[S.npprocs++];
}

struct proc_walk {
	uint64_t now, interval;
	struct table *t;
	const char *hms;
};

static const struct tcol cols_proc[] = {
	{ "TIME", 8, TC_LEFT }, { "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "OPENS", 5, 0 },
	{ "MR_REGS", 7, 0 }, { "MR_DEREGS", 9, 0 }, { "MR_NOW(KiB)", 11, 0 },
};

static void proc_visit(const void *key, const void *value, void *ctx)
{
	struct proc_walk *pw = ctx;
	const struct rs_proc *cur = value;
	struct prev_proc *pp = pprev_of(*(const uint32_t *)key);
	struct rs_proc d = *cur;
	struct aiscope_ident id = cur->ident;
	struct jw *w = &S.jw;

	d.mr_regs -= pp->p.mr_regs;
	d.mr_deregs -= pp->p.mr_deregs;
	d.mr_reg_bytes -= pp->p.mr_reg_bytes;
	d.opens -= pp->p.opens;
	pp->p = *cur;
	metrics_mr(cur, d.mr_reg_bytes);
	if (!d.mr_regs && !d.mr_deregs && !d.opens && !cur->mr_bytes)
		return;
	if (env.json) {
		jw_record_begin(w, "sample", TOOL, pw->now);
		jw_ku64(w, "seq", S.loop.ticks);
		jw_ku64(w, "interval_ns", pw->interval);
		jw_kstr(w, "row", "process");
		id.pid = pp->pid;
		aiscope_ident_json(w, &id, false);
		jw_ku64(w, "device_opens", d.opens);
		jw_ku64(w, "mr_regs", d.mr_regs);
		jw_ku64(w, "mr_deregs", d.mr_deregs);
		jw_ku64(w, "mr_reg_bytes", d.mr_reg_bytes);
		jw_ki64(w, "mr_registered_bytes", cur->mr_bytes);
		jw_record_end(w);
		return;
	}
	if (env.timestamp)
		table_str(pw->t, pw->hms);
	table_u64(pw->t, pp->pid);
	table_str(pw->t, cur->ident.comm);
	table_u64(pw->t, d.opens);
	table_u64(pw->t, d.mr_regs);
	table_u64(pw->t, d.mr_deregs);
	table_fixed(pw->t, cur->mr_bytes / 1024.0, 1);
	table_end_row(pw->t);
}

static void print_procs(uint64_t now, uint64_t interval, const char *hms)
{
	struct table t;
	struct proc_walk pw = { now, interval, &t, hms };

	if (!env.json) {
		fputc('\n', stdout);
		table_init_time(&t, stdout, cols_proc, ARRAY_SIZE(cols_proc), env.timestamp,
				env.tty && !env.wide);
		table_header(&t);
	}
	map_walk(bpf_map__fd(S.skel->maps.procs), sizeof(uint32_t), sizeof(struct rs_proc),
		 proc_visit, &pw);
}

/* the run's edges: what each QP sent (send and write payload) to its peer */
static void add_edges(const struct row *r, uint64_t now)
{
	const struct rs_qp *d = &r->d;
	char ch[160], peer[96], ep[96];
	struct edge_side src = { .id = &d->ident }, dst = { 0 };
	struct aiscope_ident pid_id;
	uint64_t bytes = d->bytes[RS_OP_SEND] + d->bytes[RS_OP_WRITE];
	uint64_t msgs = d->wrs[RS_OP_SEND] + d->wrs[RS_OP_WRITE];

	if (!S.edges || !peer_str(d, peer, sizeof(peer)) || !msgs)
		return;
	snprintf(ch, sizeof(ch), "%s:%u/%u->%s", d->dev, d->port, r->key.qpn, peer);
	snprintf(ep, sizeof(ep), "%s", peer);
	pid_id = d->ident;
	pid_id.pid = r->key.pid;
	src.id = &pid_id;
	/* what the peer's host names this QP: topograph joins hosts by it */
	src.endpoint = local_of(&S.prevs[r->self]);
	dst.endpoint = ep;
	if (r->peer >= 0) {
		dst.id = &S.prevs[r->peer].q.ident;
		dst.endpoint = NULL;
	}
	edge_add(S.edges, "rdma", ch, &src, &dst, bytes, msgs, now);
}

static void collect(void)
{
	S.nrows = 0;
	for (size_t i = 0; i < S.nprevs; i++)
		S.prevs[i].seen = false;
	map_walk(bpf_map__fd(S.skel->maps.qps), sizeof(struct rs_qp_key), sizeof(struct rs_qp),
		 take_qp, NULL);
	for (size_t i = 0; i < S.nrows; i++)
		S.rows[i].peer = local_peer(&S.rows[i].key, &S.rows[i].d);
}

static bool mr_of_gone(const void *key, void *ctx)
{
	const struct rs_mr_key *k = key;

	return kill(k->pid, 0) && errno == ESRCH;
}

/* QPs, processes and regions of processes that are gone: after they were
 * reported (a process that exits keeps its regions registered to the end) */
static void prune(void)
{
	int fd = bpf_map__fd(S.skel->maps.qps), sqs = bpf_map__fd(S.skel->maps.sqs);
	size_t j = 0;

	for (size_t i = 0; i < S.nprevs; i++) {
		if (!kill(S.prevs[i].key.pid, 0) || errno != ESRCH) {
			S.prevs[j++] = S.prevs[i];
			continue;
		}
		bpf_map_delete_elem(fd, &S.prevs[i].key);
		bpf_map_delete_elem(sqs, &S.prevs[i].key);
	}
	S.nprevs = j;
	fd = bpf_map__fd(S.skel->maps.procs);
	j = 0;
	for (size_t i = 0; i < S.npprocs; i++) {
		if (!kill(S.pprocs[i].pid, 0) || errno != ESRCH) {
			S.pprocs[j++] = S.pprocs[i];
			continue;
		}
		bpf_map_delete_elem(fd, &S.pprocs[i].pid);
	}
	if (j < S.npprocs)
		map_drain(bpf_map__fd(S.skel->maps.mrs), sizeof(struct rs_mr_key),
			  sizeof(uint64_t), mr_of_gone, NULL, NULL);
	S.npprocs = j;
}

static void print_interval(uint64_t interval)
{
	uint64_t now = aiscope_now_realtime();
	size_t shown = table_shown(S.nrows, env.rows);
	char hms[16];
	struct table t;

	sort_array(S.rows, S.nrows, sizeof(*S.rows), cmp_rows);
	fmt_hms(now, hms, sizeof(hms));
	for (size_t i = 0; i < S.nrows; i++)
		add_edges(&S.rows[i], now);
	if (env.json) {
		for (size_t i = 0; i < shown; i++)
			json_qp_row(&S.rows[i], now, interval);
	} else {
		table_block_begin(stdout, env.tty && !env.noclear, now, interval, TOOL);
		table_init_time(&t, stdout, cols_qp, ARRAY_SIZE(cols_qp), env.timestamp,
				env.tty && !env.wide);
		table_header(&t);
		for (size_t i = 0; i < shown; i++)
			table_qp_row(&t, &S.rows[i], hms);
		table_more(stdout, shown, S.nrows);
	}
	print_procs(now, interval, hms);
}

static int on_tick(void *ctx)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	int ret = 0;

	if (!cfg.events) {
		collect();
		print_interval(aiscope_loop_interval(&S.loop));
		fflush(stdout);
		prune();
		if (env.count && S.loop.ticks >= env.count)
			ret = AISCOPE_STOP;
	}
	if (uprobe_rescan_due(&S.scanner, now))
		rescan();
	return ret;
}

static int on_final(void *ctx)
{
	ring_buffer__consume(S.bpf.rb);
	collect();
	print_interval(aiscope_loop_interval(&S.loop));
	return 0;
}

/* ---- -e ---- */

static const char *const ev_names[] = {
	[RS_EV_OPEN] = "open", [RS_EV_CONNECT] = "connect", [RS_EV_REG_MR] = "reg_mr",
	[RS_EV_DEREG_MR] = "dereg_mr", [RS_EV_CQ_ERROR] = "cq_error",
};

static const struct tcol cols_event[] = {
	{ "TIME", 8, TC_LEFT }, { "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "EVENT", 8, TC_LEFT },
	{ "DEV", 8, TC_LEFT }, { "QPN", 6, 0 }, { "DETAIL", 30, TC_LEFT },
};

static void event_detail(const struct rs_event *e, char *buf, size_t len)
{
	struct rs_qp q = { .has_peer = RS_PEER_ADDR, .is_global = e->is_global, .dlid = e->dlid,
			   .dest_qpn = e->dest_qpn };
	char peer[96];
	const char *tr = transport(e->qp_type);

	memcpy(q.dgid, e->dgid, sizeof(q.dgid));
	switch (e->type) {
	case RS_EV_CONNECT:
		snprintf(buf, len, "%s peer %s port %u", tr ? tr : "?",
			 peer_str(&q, peer, sizeof(peer)), e->port);
		break;
	case RS_EV_REG_MR:
	case RS_EV_DEREG_MR:
		snprintf(buf, len, "%" PRIu64 " bytes", (uint64_t)e->bytes);
		break;
	case RS_EV_CQ_ERROR:
		snprintf(buf, len, "%s wr_id 0x%" PRIx64,
			 status_names[e->status < RS_NSTATUS ? e->status : RS_NSTATUS - 1],
			 (uint64_t)e->bytes);
		break;
	default:
		buf[0] = 0;
	}
}

static void json_event(const struct rs_event *e)
{
	struct jw *w = &S.jw;
	char g[64];
	bool conn = e->type == RS_EV_CONNECT, err = e->type == RS_EV_CQ_ERROR;
	bool mr = e->type == RS_EV_REG_MR || e->type == RS_EV_DEREG_MR;

	jw_record_begin(w, "event", TOOL, aiscope_realtime(e->ts));
	jw_kstr(w, "event", ev_names[e->type]);
	aiscope_ident_json(w, &e->ident, true);
	jw_kstr(w, "device", e->dev[0] ? e->dev : NULL);
	jw_ku64_or_null(w, "qpn", conn || err, e->qpn);
	jw_kstr(w, "transport", conn ? transport(e->qp_type) : NULL);
	jw_ku64_or_null(w, "port", conn && e->port, e->port);
	jw_kstr(w, "peer_gid", conn && e->is_global ? gid_str(e->dgid, g, sizeof(g)) : NULL);
	jw_ku64_or_null(w, "peer_lid", conn && !e->is_global, e->dlid);
	jw_ku64_or_null(w, "peer_qpn", conn, e->dest_qpn);
	jw_ku64_or_null(w, "bytes", mr, e->bytes);
	jw_kstr(w, "status", err ? status_names[e->status < RS_NSTATUS ? e->status :
					  RS_NSTATUS - 1] : NULL);
	jw_key(w, "wr_id");
	if (err)
		jw_hex(w, e->bytes);
	else
		jw_null(w);
	jw_record_end(w);
}

static void print_event(const struct rs_event *e)
{
	char hms[16], detail[160];
	struct table t;

	if (env.json) {
		json_event(e);
		return;
	}
	fmt_hms(aiscope_realtime(e->ts), hms, sizeof(hms));
	event_detail(e, detail, sizeof(detail));
	table_init_time(&t, stdout, cols_event, ARRAY_SIZE(cols_event), env.timestamp,
			env.tty && !env.wide);
	if (env.timestamp)
		table_str(&t, hms);
	table_u64(&t, e->ident.pid);
	table_str(&t, e->ident.comm);
	table_str(&t, ev_names[e->type]);
	table_str(&t, e->dev[0] ? e->dev : "-");
	table_u64_or_dash(&t, e->type == RS_EV_CONNECT || e->type == RS_EV_CQ_ERROR, e->qpn);
	table_str(&t, detail);
	table_end_row(&t);
}

/* --hold: an opener continues once its provider is probed (or could not
 * be), forgotten by BPF's table first. Not when another open of its
 * process was held since (two threads opening devices at once: BPF's
 * table has the later one's time): that open's event, further on in the
 * ring, continues it once its own provider is probed too. */
static void hold_continue(uint32_t pid, uint64_t held_ns)
{
	int fd = bpf_map__fd(S.skel->maps.held_opens);
	uint64_t latest;

	if (!bpf_map_lookup_elem(fd, &pid, &latest) && latest > held_ns)
		return;
	bpf_map_delete_elem(fd, &pid);
	uprobe_hold_release(&S.scanner, (pid_t)pid, held_ns);
}

/* At exit, the probes detached: the openers whose events were not read
 * (stopped after the last drain, or a run ended by -n or a closed pipe)
 * continue too. */
static void hold_continue_all(void)
{
	int fd = bpf_map__fd(S.skel->maps.held_opens);
	uint32_t pid, next;
	uint64_t held_ns;

	while (!bpf_map_get_next_key(fd, NULL, &next)) {
		pid = next;
		if (!bpf_map_lookup_elem(fd, &pid, &held_ns))
			uprobe_hold_release(&S.scanner, (pid_t)pid, held_ns);
		if (bpf_map_delete_elem(fd, &pid))
			break;
	}
}

static int on_event(void *ctx, void *data, size_t len)
{
	const struct rs_event *e = data;

	if (len < sizeof(*e) || !e->type || e->type > RS_EV_CQ_ERROR)
		return 0;
	if (e->type == RS_EV_OPEN) {
		on_open(e);
		if (e->held_ns)
			hold_continue(e->ident.pid, e->held_ns);
	}
	if (!cfg.events)
		return 0;
	S.events++;
	print_event(e);
	if (env.count && S.events >= env.count)
		return aiscope_loop_stop(&S.loop, AISCOPE_EXIT_COUNT);
	return 0;
}

/* ---- summary ---- */

static void print_summary(void)
{
	uint64_t unread = S.skel->bss->wcs_unread;
	int unattached = 0;

	for (int i = 0; i < S.nprov; i++)
		unattached += !S.prov[i].attached;
	if (env.json) {
		if (S.edges)
			edges_json(S.edges, &S.jw, TOOL, NULL, NULL);
		aiscope_summary_begin(&S.jw, &S.bpf, &S.loop, cfg.events ? S.events : S.wrs);
		jw_ku64(&S.jw, "wrs", S.wrs);
		jw_ku64(&S.jw, "bytes", S.bytes);
		jw_ku64(&S.jw, "completions", S.cqes);
		jw_ku64(&S.jw, "completion_errors", S.errors);
		jw_ku64(&S.jw, "completions_unread", unread);
		jw_ku64(&S.jw, "device_opens", S.opens);
		jw_ku64(&S.jw, "providers", S.nprov);
		jw_ku64(&S.jw, "providers_unlocated", S.providers_unlocated);
		jw_ku64(&S.jw, "libraries", S.libs_seen);
		jw_ku64(&S.jw, "attach_failures", S.scanner.failed);
		jw_ku64(&S.jw, "edges_dropped", S.edges ? edges_dropped(S.edges) : 0);
		jw_ku64(&S.jw, "edge_sources_unnamed", S.sources_unnamed);
		jw_ku64(&S.jw, "held", S.skel->bss->uprobe_held);
		jw_ku64(&S.jw, "hold_max_ns", S.scanner.hold_max_ns);
		jw_ku64(&S.jw, "holds_skipped", S.skel->bss->holds_skipped);
		jw_record_end(&S.jw);
		if (S.skel->bss->holds_skipped)
			fprintf(stderr, "%s: %llu" HOLDS_SKIPPED_TEXT "\n", TOOL,
				(unsigned long long)S.skel->bss->holds_skipped);
		return;
	}
	fprintf(stderr, "%s: %llu work requests, %llu bytes, %llu completions, %llu errors, "
		"%d providers, %llu lost events", TOOL, (unsigned long long)S.wrs,
		(unsigned long long)S.bytes, (unsigned long long)S.cqes,
		(unsigned long long)S.errors, S.nprov,
		(unsigned long long)aiscope_lost_total(&S.bpf));
	if (unread)
		fprintf(stderr, ", %llu completions past %d per poll not read",
			(unsigned long long)unread, RS_MAX_WCS);
	if (S.providers_unlocated)
		fprintf(stderr, ", %llu devices whose provider was not found",
			(unsigned long long)S.providers_unlocated);
	if (unattached)
		fprintf(stderr, ", %d providers not attached", unattached);
	if (S.skel->bss->holds_skipped)
		fprintf(stderr, ", %llu" HOLDS_SKIPPED_TEXT,
			(unsigned long long)S.skel->bss->holds_skipped);
	fputc('\n', stderr);
}

static void validate(void)
{
	char devs[256];

	if (env.sort)
		cfg.sort = sort_keys[opt_word("--sort", env.sort, sort_keys)];
	if (env.list_probes)
		return;
	/* verbs need a device: without one no process can move RDMA data
	 * (the probes need none: a device that appears later is opened
	 * through the same libibverbs, its provider learned then) */
	if (ib_devices(devs, sizeof(devs)))
		return;
	if (!cfg.wait_device)
		aiscope_fail(EXIT_CANNOT_RUN, "no RDMA device on this host (%s is empty or "
			     "absent): nothing to trace (--wait-device runs anyway)", SYSFS_IB);
	fprintf(stderr, "rdmasnoop: no RDMA device on this host yet (%s): tracing the "
		"processes that open one once it appears\n", SYSFS_IB);
}

static void setup_bpf(void)
{
	struct rdmasnoop_bpf *k;

	k = S.skel = rdmasnoop_bpf__open_opts(aiscope_open_opts());
	if (!k)
		aiscope_fail(EXIT_RUNTIME, "cannot open the BPF object: %s", strerror(errno));
	k->rodata->stream_events = cfg.events;
	k->rodata->uprobe_hold = cfg.hold;
	S.bpf = (struct aiscope_bpf){
		.hooks = hooks, .nhooks = ARRAY_SIZE(hooks),
		.streaming = true, .on_event = on_event,
	};
	aiscope_bpf_prepare(&S.bpf, k->obj, &k->rodata->aiscope_cfg);
	uprobe_obj_multi(k->obj);
	aiscope_bpf_load(&S.bpf, rdmasnoop_bpf__load(k));
	aiscope_bpf_attach(&S.bpf);
}

static void start_discovery(void)
{
	struct ring_buffer *rb;

	S.scanner.dlopen_prog = S.skel->progs.uprobe_disc_dlopen;
	S.scanner.attach = attach_lib;
	rb = uprobe_discover_open(S.skel->obj, &S.scanner);
	if (!rb)
		aiscope_fail(EXIT_RUNTIME, "cannot open the discovery ring buffer: %s",
			     strerror(errno));
	S.loop.aux_rb = rb;
	uprobe_ldcache_foreach(NULL, ldcache_cb, NULL);
	uprobe_scan_all(&S.scanner, env.pids, env.npids);
}

int main(int argc, char **argv)
{
	int code;

	aiscope_parse(&argp, argc, argv, TOOL,
		      AISCOPE_AGGREGATING | AISCOPE_STREAMING | AISCOPE_METRICS);
	validate();
	metrics_init();
	jw_init(&S.jw, stdout);
	S.scanner = (struct uprobe_scanner){ .set = &S.set, .classify = classify,
					     .rescan_ns = cfg.rescan_ns };
	S.set.release = release_lib;
	if (env.list_probes)
		list_probes();
	if (env.json && !cfg.events)
		S.edges = edges_new(0);
	setup_bpf();
	S.loop = (struct aiscope_loop){
		.bpf = &S.bpf,
		.on_tick = on_tick,
		.on_final = cfg.events ? NULL : on_final,
		.tick_ns = cfg.events ? (cfg.rescan_ns ? cfg.rescan_ns : 0) : env.interval_ns,
	};
	start_discovery();
	if (cfg.events && !env.json)
		table_header_time(stdout, cols_event, ARRAY_SIZE(cols_event), env.timestamp);
	aiscope_tracing("RDMA verbs (libibverbs in %d files; providers probed as devices "
			"are opened)", S.libs_seen);
	code = aiscope_run(&S.loop, print_summary);
	uprobe_set_free(&S.set);
	uprobe_discover_close(S.loop.aux_rb, &S.scanner);
	hold_continue_all();
	rdmasnoop_bpf__destroy(S.skel);
	if (S.edges)
		edges_free(S.edges);
	free(S.prevs);
	free(S.pprocs);
	free(S.rows);
	return code;
}
