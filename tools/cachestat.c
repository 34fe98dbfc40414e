// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * cachestat: is the page cache serving my model and data loads, or is it
 * going to disk?
 *
 * Page-cache hits, misses and dirtied pages per interval, host-wide (the
 * columns of bcc's cachestat) or per process, container or file, counted in
 * the kernel. --llc shows CPU last-level-cache references and misses per
 * process from hardware counters instead.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "kfeatures.h"
#include "mapdrain.h"
#include "json.h"
#include "metrics.h"
#include "complete.h"
#include "opts.h"
#include "run.h"
#include "table.h"
#include "util.h"
#include "cachestat.h"
#include "cachestat.skel.h"

#define TOOL "cachestat"
#define BY_CONTAINER 100	/* user-space grouping of CACHESTAT_BY_CGROUP rows */
#define LLC_PERIOD 100		/* hardware events per sample, as bcc's llcstat */
#define FILE_NAMES_MAX 8192	/* --by file: paths remembered across intervals */

static const char doc[] =
"Page-cache hits, misses and dirtied pages: is the page cache serving reads,\n"
"or are they going to disk?\n"
"\n"
"Every interval, one line for the host with the columns of bcc's cachestat\n"
"(HITS MISSES DIRTIES HIT% BUFFERS(MiB) CACHED(MiB)); --by pid, container or\n"
"file shows a top-like table of who (or which file) reads from disk. --llc\n"
"shows CPU last-level-cache references and misses per process instead.\n"
"\n"
"USAGE: cachestat [OPTIONS] [interval [count]]"
"\v"
"EXAMPLES:\n"
"  cachestat                     # host hits and misses, each second\n"
"  cachestat --by file           # which files are read from disk\n"
"  cachestat --by pid -s misses  # processes by pages read from disk\n"
"  cachestat --by container 5    # containers, every 5 s\n"
"  cachestat --llc -p 1234       # CPU cache misses of one process\n"
"  cachestat --by file -j -d 30s | jq 'select(.type==\"sample\" and .misses > 0) | [.file, .misses]'\n"
"\n"
"Exit status: 0 done, 1 runtime error, 2 usage error, 77 cannot run here.";

enum { OPT_BY = 0x200, OPT_LLC };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "cachestat:", 1 },
	{ "by", OPT_BY, "KEY", 0, "Break down by pid, container or file (default: host only)", 1 },
	{ "llc", OPT_LLC, NULL, 0, "CPU last-level-cache references and misses per process (hardware counters)", 1 },
	{},
};

static const char *const sort_keys[] = { "misses", "hits", "accesses", "dirties", NULL };

static struct {
	int by;			/* CACHESTAT_BY_* or BY_CONTAINER */
	bool llc;
	const char *sort;
} cfg = { .by = CACHESTAT_BY_HOST, .sort = "misses" };

static const struct opt_key bys[] = {
	{ "pid", CACHESTAT_BY_PID }, { "container", BY_CONTAINER },
	{ "file", CACHESTAT_BY_FILE }, { "host", CACHESTAT_BY_HOST }, {},
};

/* what the shell completions offer after its options (lib/complete.h) */
const struct opt_value aiscope_opt_values[] = {
	{ .name = "sort", .kind = OV_WORDS, .words = sort_keys },
	{ .name = "by", .kind = OV_WORDS, .keys = bys },
	{},
};

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case OPT_BY:
		cfg.by = opt_key("--by", arg, bys);
		break;
	case OPT_LLC:
		cfg.llc = true;
		env.no_metrics = "--llc: --prometheus and --listen export the page-cache figures only";
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = AISCOPE_ARGP(opts, parse_arg, doc);

/* Function hooks first (the bcc heuristics, right since 5.16: the folio
 * names before their compat wrappers), tracepoints where no function hook
 * can attach. Insertions and dirtied pages mean the same in both; accesses
 * do not, so the access hooks of the two modes are separate hooks and
 * on_plan() keeps one mode. */
enum { H_ACCESS, H_READ, H_MAP, H_FAULT, H_ADD, H_DIRTY, H_DIRTY_SIZE, H_BUFDIRTY, H_NR };

static struct probe_hook hooks[] = {
	[H_ACCESS] = { .name = "page_accessed", .optional = true, .cand = {
		{ PM_FENTRY, "folio_mark_accessed", "accessed_fentry" },
		{ PM_FENTRY, "mark_page_accessed", "page_accessed_fentry" },
		{ PM_KPROBE, "folio_mark_accessed", "accessed_kprobe" },
		{ PM_KPROBE, "mark_page_accessed", "page_accessed_kprobe" } } },
	[H_READ] = { .name = "read_pages", .optional = true, .preemptible = true, .cand = {
		PROBE_TRACEPOINT("filemap", "mm_filemap_get_pages", "read") } },
	[H_MAP] = { .name = "map_pages", .optional = true, .preemptible = true, .cand = {
		PROBE_TRACEPOINT("filemap", "mm_filemap_map_pages", "map") } },
	[H_FAULT] = { .name = "fault", .optional = true, .preemptible = true, .cand = {
		PROBE_TRACEPOINT("filemap", "mm_filemap_fault", "fault") } },
	[H_ADD] = { .name = "page_added", .cand = {
		{ PM_FENTRY, "filemap_add_folio", "add_fentry" },
		{ PM_FENTRY, "add_to_page_cache_lru", "add_page_fentry" },
		PROBE_TRACEPOINT("filemap", "mm_filemap_add_to_page_cache", "add"),
		{ PM_KPROBE, "filemap_add_folio", "add_kprobe" },
		{ PM_KPROBE, "add_to_page_cache_lru", "add_page_kprobe" } } },
	[H_DIRTY] = { .name = "page_dirtied", .cand = {
		{ PM_FENTRY, "__folio_mark_dirty", "dirty_fentry" },
		{ PM_FENTRY, "account_page_dirtied", "dirty_page_fentry" },
		{ PM_TP_BTF, "writeback_dirty_folio", "dirty_btf" },
		{ PM_TP_BTF, "writeback_dirty_page", "dirty_page_btf" },
		{ PM_RAW_TP, "writeback_dirty_folio", "dirty_raw" },
		{ PM_RAW_TP, "writeback_dirty_page", "dirty_page_raw" },
		{ PM_TRACEPOINT, "writeback/writeback_dirty_folio", "dirty_tp" },
		{ PM_TRACEPOINT, "writeback/writeback_dirty_page", "dirty_page_tp" },
		{ PM_KPROBE, "__folio_mark_dirty", "dirty_kprobe" },
		{ PM_KPROBE, "account_page_dirtied", "dirty_page_kprobe" } } },
	/* the classic writeback_dirty_folio has no folio size: the pages the
	 * kernel accounted for it are read when it marks the inode dirty */
	[H_DIRTY_SIZE] = { .name = "dirtied_size", .optional = true, .cand = {
		{ PM_TRACEPOINT, "writeback/writeback_mark_inode_dirty", "mark_inode_tp" } } },
	[H_BUFDIRTY] = { .name = "buffer_dirtied", .optional = true, .cand = {
		PROBE_FUNC("mark_buffer_dirty", "bufdirty") } },
};

static const char *const mode_names[] = {
	[CACHESTAT_ACC_NONE] = "none",
	[CACHESTAT_ACC_FUNCTION] = "function",
	[CACHESTAT_ACC_TRACEPOINT] = "tracepoint",
};

/* ---- per-interval figures ---- */

struct figures {
	struct cachestat_counts c;
	/* derived by derive() */
	uint64_t hits, misses;
	bool known;			/* accesses are counted in this mode */
};

struct row {
	struct cachestat_key key;
	struct aiscope_ident ident;
	struct container_info ci;
	char *cgroup;			/* a copy: the path cache may rescan */
	char *file;			/* --by file: path or name */
	uint64_t size;
	bool size_known;
	struct figures f;
};

static struct {
	struct cachestat_bpf *skel;
	struct aiscope_bpf bpf;
	struct aiscope_loop loop;
	struct jw jw;
	int mode;			/* CACHESTAT_ACC_* */
	long page_size;
	struct row *rows;
	size_t nrows, cap;
	struct figures host;		/* this interval */
	struct figures total;		/* the whole run */
	struct cachestat_counts last;	/* cumulative totals at the last tick */
	bool header_done;
	/* --llc */
	struct bpf_link **llc_links;
	int nllc;
} S;

/* Misses are insertions less those made to be written (a page written
 * anew is inserted and dirtied: not a read miss); hits are the accesses
 * less the misses (in function mode also less buffer dirties, as bcc's
 * cachestat), and a miss count above the accesses (read-ahead for the next
 * interval) is capped to them, as bcc does. */
static void derive(struct figures *f)
{
	const struct cachestat_counts *c = &f->c;
	int64_t total = (int64_t)c->accesses, misses = (int64_t)c->added - (int64_t)c->write_added;

	f->known = S.mode != CACHESTAT_ACC_NONE;
	if (S.mode == CACHESTAT_ACC_FUNCTION)
		total -= (int64_t)c->buf_dirtied;
	if (misses < 0)
		misses = 0;
	if (total < 0)
		total = 0;
	if (!f->known) {
		f->misses = misses;
		f->hits = 0;
		return;
	}
	if (misses > total)
		misses = total;
	f->misses = misses;
	f->hits = total - misses;
}

/* ---- Prometheus metrics: by cgroup with --by pid or container, one
 * series with empty labels otherwise (a host or file row has no cgroup) ---- */

static struct {
	struct prom_family *pages, *buffers, *cached;
} P;

static void metrics_init(void)
{
	AISCOPE_METRIC_LABELS(lbl, AISCOPE_CGROUP_LABEL_NAMES, "kind", NULL);

	if (!aiscope_metrics())
		return;
	P.pages = aiscope_metric_counter("aiscope_cachestat_pages_total",
		"Page-cache pages: kind hit (read from the cache; absent when the kernel gives no access hook), miss (read from disk) or dirty (written).",
		lbl);
	P.buffers = aiscope_metric_gauge("aiscope_cachestat_buffers_bytes",
		"Buffers of /proc/meminfo at the end of the interval.", NULL);
	P.cached = aiscope_metric_gauge("aiscope_cachestat_cached_bytes",
		"Cached of /proc/meminfo at the end of the interval.", NULL);
}

/* One interval's figures (derived) into the series of path's cgroup. */
static void metrics_add(const char *path, bool has_path, const struct figures *f)
{
	const char *v[AISCOPE_CGROUP_NLABELS + 1] = { AISCOPE_CGROUP_NO_VALUES };
	struct container_info ci;

	if (!P.pages)
		return;
	if (has_path)
		aiscope_cgroup_path_values(path, v, &ci);
	if (f->known) {
		v[AISCOPE_CGROUP_NLABELS] = "hit";
		prom_counter_add(P.pages, v, f->hits);
	}
	v[AISCOPE_CGROUP_NLABELS] = "miss";
	prom_counter_add(P.pages, v, f->misses);
	v[AISCOPE_CGROUP_NLABELS] = "dirty";
	prom_counter_add(P.pages, v, f->c.dirtied);
}

static void add_counts(struct cachestat_counts *a, const struct cachestat_counts *b)
{
	a->accesses += b->accesses;
	a->added += b->added;
	a->dirtied += b->dirtied;
	a->buf_dirtied += b->buf_dirtied;
	a->write_added += b->write_added;
}

/* ---- files: inode and device to the path the user knows ---- */

struct file_name {
	uint32_t dev;			/* kernel dev_t */
	uint64_t ino;
	char *path;
	uint64_t size;
};

static struct {
	struct file_name *v;
	size_t n, cap;
	uint32_t *scanned;		/* pids whose fds and maps were read this tick */
	size_t nscanned, scap;
} F;

static struct file_name *file_find(uint32_t dev, uint64_t ino)
{
	for (size_t i = 0; i < F.n; i++)
		if (F.v[i].ino == ino && (F.v[i].dev == dev || !dev))
			return &F.v[i];
	return NULL;
}

static void file_remember(uint32_t dev, uint64_t ino, const char *path, uint64_t size)
{
	struct file_name *f = file_find(dev, ino);

	if (f)
		return;
	if (F.n == F.cap) {
		size_t cap = F.cap ? F.cap * 2 : 64;
		struct file_name *n = realloc(F.v, cap * sizeof(*n));

		if (!n)
			return;
		F.v = n;
		F.cap = cap;
	}
	F.v[F.n++] = (struct file_name){ dev, ino, strdup(path), size };
}

/* Every regular file a process has open or mapped, by device and inode. */
static void scan_pid(uint32_t pid)
{
	char dir[64], p[PATH_MAX + 64], target[PATH_MAX], line[PATH_MAX + 128];
	struct dirent *de;
	struct stat st;
	FILE *maps;
	DIR *d;

	for (size_t i = 0; i < F.nscanned; i++)
		if (F.scanned[i] == pid)
			return;
	if (F.nscanned == F.scap) {
		size_t cap = F.scap ? F.scap * 2 : 32;
		uint32_t *n = realloc(F.scanned, cap * sizeof(*n));

		if (!n)
			return;
		F.scanned = n;
		F.scap = cap;
	}
	F.scanned[F.nscanned++] = pid;
	snprintf(dir, sizeof(dir), "/proc/%u/fd", pid);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		n = readlink(p, target, sizeof(target) - 1);
		if (n <= 0 || target[0] != '/' || stat(p, &st) || !S_ISREG(st.st_mode))
			continue;
		target[n] = 0;
		file_remember(kernel_dev(st.st_dev), st.st_ino, target, st.st_size);
	}
	if (d)
		closedir(d);
	snprintf(p, sizeof(p), "/proc/%u/maps", pid);
	maps = fopen(p, "r");
	while (maps && fgets(line, sizeof(line), maps)) {
		unsigned int maj, min;
		unsigned long long ino;
		int off = 0;

		if (sscanf(line, "%*s %*s %*s %x:%x %llu %n", &maj, &min, &ino, &off) < 3 || !ino ||
		    !off || line[off] != '/')
			continue;
		line[strcspn(line, "\n")] = 0;
		if (stat(line + off, &st) || st.st_ino != ino)
			continue;
		file_remember(kernel_dev(makedev(maj, min)), ino, line + off, st.st_size);
	}
	if (maps)
		fclose(maps);
}

/* The path of a row's file from the fds and maps of the task that touched
 * it first; else the name the kernel has for it. */
static void name_file(struct row *r, const struct cachestat_row *v)
{
	struct file_name *f = file_find(r->key.dev, r->key.id);
	char buf[CACHESTAT_NAME_LEN + 64];

	if (!f && r->ident.pid) {
		scan_pid(r->ident.pid);
		f = file_find(r->key.dev, r->key.id);
	}
	if (f) {
		r->file = strdup(f->path);
		r->size = f->size;
		r->size_known = true;
		return;
	}
	if (v->name[0])
		snprintf(buf, sizeof(buf), "%.*s", CACHESTAT_NAME_LEN, v->name);
	else
		snprintf(buf, sizeof(buf), "[dev %u:%u ino %llu]", KDEV_MAJOR(r->key.dev),
			 KDEV_MINOR(r->key.dev), (unsigned long long)r->key.id);
	r->file = strdup(buf);
	/* classic tracepoints know neither the name nor the size */
	r->size = v->size;
	r->size_known = v->name[0] != 0;
}

/* ---- collecting an interval ---- */

static void free_rows(void)
{
	for (size_t i = 0; i < S.nrows; i++) {
		free(S.rows[i].cgroup);
		free(S.rows[i].file);
	}
	S.nrows = 0;
}

static struct row *new_row(void)
{
	struct row *r;

	S.rows = aiscope_grow(S.rows, &S.cap, S.nrows, sizeof(*S.rows));
	r = &S.rows[S.nrows++];
	memset(r, 0, sizeof(*r));
	return r;
}

static struct row *row_for(const struct cachestat_key *k, const struct cachestat_row *v)
{
	struct container_info ci;
	const char *cgroup = NULL;
	struct row *r;

	if (cfg.by == BY_CONTAINER || cfg.by == CACHESTAT_BY_CGROUP)
		cgroup = aiscope_ident_cgroup(&v->ident, &ci);
	for (size_t i = 0; i < S.nrows; i++) {
		r = &S.rows[i];
		/* every task outside containers folds into one row */
		if (cfg.by == BY_CONTAINER && !strcmp(r->ci.id, ci.id))
			return r;
		/* classic tracepoints name no device for dirtied pages */
		if (cfg.by == CACHESTAT_BY_FILE && r->key.id == k->id &&
		    (r->key.dev == k->dev || !k->dev || !r->key.dev)) {
			if (!r->key.dev && k->dev) {
				r->key.dev = k->dev;
				free(r->file);
				name_file(r, v);
			}
			return r;
		}
	}
	r = new_row();
	r->key = *k;
	r->ident = v->ident;
	if (cgroup || cfg.by == BY_CONTAINER) {
		r->ci = ci;
		r->cgroup = cgroup ? strdup(cgroup) : NULL;
	} else {
		aiscope_ident_cgroup(&v->ident, &r->ci);
	}
	if (cfg.by == CACHESTAT_BY_FILE)
		name_file(r, v);
	return r;
}

static void read_totals(struct cachestat_counts *out)
{
	int ncpu = libbpf_num_possible_cpus();
	struct cachestat_counts vals[ncpu > 0 ? ncpu : 1];
	uint32_t zero = 0;

	memset(out, 0, sizeof(*out));
	if (ncpu <= 0 || bpf_map__lookup_elem(S.skel->maps.totals, &zero, sizeof(zero), vals,
					      sizeof(vals), 0))
		return;
	for (int c = 0; c < ncpu; c++)
		add_counts(out, &vals[c]);
}

static bool in_epoch(const void *key, void *ctx)
{
	return ((const struct cachestat_key *)key)->epoch == *(uint32_t *)ctx;
}

static void take_row(const void *key, const void *value, void *ctx)
{
	const struct cachestat_row *v = value;

	add_counts(&row_for(key, v)->f.c, &v->c);
	/* per key, as the JSON's pid rows: a key is one process or cgroup */
	if (P.pages && cfg.by != CACHESTAT_BY_FILE) {
		struct figures f = { .c = v->c };

		derive(&f);
		metrics_add(cg_path_of(v->ident.cgroup_id, v->ident.cgroup_v1), true, &f);
	}
}

/* Drain the keys of the interval that just closed. */
static void collect_rows(void)
{
	/* returns once no program still adds to the closed epoch's rows */
	uint32_t closed = map_epoch_close(&S.skel->bss->epoch, NULL);

	F.nscanned = 0;
	/* names of files seen long ago: forget them rather than grow */
	if (F.n > FILE_NAMES_MAX) {
		for (size_t i = 0; i < F.n; i++)
			free(F.v[i].path);
		F.n = 0;
	}
	map_drain(bpf_map__fd(S.skel->maps.rows), sizeof(struct cachestat_key),
		  sizeof(struct cachestat_row), in_epoch, take_row, &closed);
	for (size_t i = 0; i < S.nrows; i++)
		derive(&S.rows[i].f);
}

static void collect(void)
{
	struct cachestat_counts now, d;

	free_rows();
	if (cfg.by != CACHESTAT_BY_HOST)
		collect_rows();
	read_totals(&now);
	d.accesses = now.accesses - S.last.accesses;
	d.added = now.added - S.last.added;
	d.dirtied = now.dirtied - S.last.dirtied;
	d.buf_dirtied = now.buf_dirtied - S.last.buf_dirtied;
	d.write_added = now.write_added - S.last.write_added;
	S.last = now;
	S.host.c = d;
	derive(&S.host);
	add_counts(&S.total.c, &d);
	if (cfg.by == CACHESTAT_BY_HOST || cfg.by == CACHESTAT_BY_FILE)
		metrics_add(NULL, false, &S.host);
}

/* Buffers and Cached of /proc/meminfo, bytes; false when unreadable */
static bool meminfo(uint64_t *buffers, uint64_t *cached)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	unsigned long long kb;
	int found = 0;

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "Buffers: %llu kB", &kb) == 1) {
			*buffers = kb * 1024;
			found |= 1;
		} else if (sscanf(line, "Cached: %llu kB", &kb) == 1) {
			*cached = kb * 1024;
			found |= 2;
		}
	}
	fclose(f);
	return found == 3;
}

/* ---- sorting ---- */

static uint64_t sort_value(const struct row *r)
{
	switch (cfg.sort[0]) {
	case 'h': return r->f.hits;
	case 'a': return r->f.c.accesses;
	case 'd': return r->f.c.dirtied;
	default: return r->f.misses;
	}
}

static int cmp_rows(const void *a, const void *b)
{
	const struct row *ra = a, *rb = b;
	uint64_t va = sort_value(ra), vb = sort_value(rb);

	return cmp_u64(vb, va) ?: cmp_u64(rb->f.c.added, ra->f.c.added) ?:
	       cmp_u64(ra->key.id, rb->key.id);
}

static double hit_ratio(const struct figures *f)
{
	return (double)f->hits / (double)(f->hits + f->misses);
}

/* ---- JSON ---- */

static void json_identity(const struct row *r)
{
	struct jw *w = &S.jw;
	bool pid = r && cfg.by == CACHESTAT_BY_PID;
	bool file = r && cfg.by == CACHESTAT_BY_FILE;
	bool container = r && cfg.by == BY_CONTAINER;
	struct aiscope_identity id = { .ci = r ? &r->ci : NULL };
	char dev[32];

	/* the row kind is the --by key */
	jw_kstr(w, "row", r ? opt_key_name(bys, cfg.by) : "host");
	if (pid || file) {
		/* a file row names the first task that touched it */
		id.known = AISCOPE_ID_TASK | AISCOPE_ID_CGROUP_ID;
		id.pid = r->ident.pid;
		id.uid = r->ident.uid;
		id.comm = r->ident.comm;
		id.comm_len = sizeof(r->ident.comm);
		id.cgroup_id = r->ident.cgroup_id;
		id.cgroup = cg_path_of(r->ident.cgroup_id, r->ident.cgroup_v1);
	} else if (container) {
		id.cgroup = r->cgroup;
	}
	aiscope_identity_json(w, &id);
	if (file) {
		jw_kstr(w, "file", r->file);
		jw_ku64(w, "inode", r->key.id);
		snprintf(dev, sizeof(dev), "%u:%u", KDEV_MAJOR(r->key.dev), KDEV_MINOR(r->key.dev));
		jw_kstr(w, "dev", r->key.dev ? dev : NULL);
		jw_ku64_or_null(w, "size_bytes", r->size_known, r->size);
	} else {
		jw_knull(w, "file");
		jw_knull(w, "inode");
		jw_knull(w, "dev");
		jw_knull(w, "size_bytes");
	}
}

static void json_figures(const struct figures *f)
{
	struct jw *w = &S.jw;

	jw_ku64_or_null(w, "hits", f->known, f->hits);
	jw_ku64_or_null(w, "accesses", f->known, f->c.accesses);
	jw_ku64(w, "misses", f->misses);
	jw_ku64(w, "dirties", f->c.dirtied);
	jw_kdouble_or_null(w, "hit_ratio", f->known && f->hits + f->misses, hit_ratio(f), 4);
	jw_ku64(w, "miss_bytes", f->misses * S.page_size);
	jw_ku64(w, "added_pages", f->c.added);
	jw_ku64(w, "write_added_pages", f->c.write_added);
	jw_ku64_or_null(w, "buffer_dirties", S.mode == CACHESTAT_ACC_FUNCTION, f->c.buf_dirtied);
}

static void json_row(const struct row *r, uint64_t now, uint64_t interval)
{
	struct jw *w = &S.jw;
	uint64_t buffers = 0, cached = 0;
	bool mi;

	jw_record_begin(w, "sample", TOOL, now);
	jw_ku64(w, "seq", S.loop.ticks);
	jw_ku64(w, "interval_ns", interval);
	json_identity(r);
	json_figures(r ? &r->f : &S.host);
	mi = !r && meminfo(&buffers, &cached);
	jw_ku64_or_null(w, "buffers_bytes", mi, buffers);
	jw_ku64_or_null(w, "cached_bytes", mi, cached);
	jw_record_end(w);
}

/* ---- tables ---- */

static const struct tcol cols_host[] = {
	{ "HITS", 10, 0 }, { "MISSES", 10, 0 }, { "DIRTIES", 10, 0 }, { "HIT%", 7, 0 },
	{ "BUFFERS(MiB)", 12, 0 }, { "CACHED(MiB)", 11, 0 },
};
static const struct tcol cols_pid[] = {
	{ "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "CONTAINER", 12, TC_LEFT },
};
static const struct tcol cols_container[] = {
	{ "CONTAINER", 12, TC_LEFT }, { "RUNTIME", 10, TC_LEFT }, { "POD", 36, TC_LEFT },
};
static const struct tcol cols_file[] = {
	{ "FILE", 40, TC_LEFT }, { "SIZE(MiB)", 10, 0 },
};
static const struct tcol cols_stats[] = {
	{ "ACCESSES", 10, 0 }, { "HITS", 10, 0 }, { "MISSES", 10, 0 }, { "MISS(MiB)", 10, 0 },
	{ "DIRTIES", 10, 0 }, { "HIT%", 7, 0 },
};

static struct tcol table_cols[16];
static int table_ncols, key_ncols;

static void build_columns(void)
{
	const struct tcol *key = NULL, *stats = cols_stats;
	int nkey = 0, nstats = ARRAY_SIZE(cols_stats);

	switch (cfg.by) {
	case CACHESTAT_BY_PID: key = cols_pid; nkey = ARRAY_SIZE(cols_pid); break;
	case BY_CONTAINER: key = cols_container; nkey = ARRAY_SIZE(cols_container); break;
	case CACHESTAT_BY_FILE: key = cols_file; nkey = ARRAY_SIZE(cols_file); break;
	default: stats = cols_host; nstats = ARRAY_SIZE(cols_host); break;
	}
	table_ncols = 0;
	if (env.timestamp)
		table_cols[table_ncols++] = (struct tcol){ "TIME", 8, TC_LEFT };
	for (int i = 0; i < nkey; i++)
		table_cols[table_ncols++] = key[i];
	key_ncols = table_ncols;
	for (int i = 0; i < nstats; i++)
		table_cols[table_ncols++] = stats[i];
}

static void table_ratio(struct table *t, const struct figures *f)
{
	table_fixed_or_dash(t, f->known && f->hits + f->misses, 100.0 * hit_ratio(f), 2);
}

static void table_key(struct table *t, const struct row *r, const char *hms)
{
	char buf[16], pod[520];

	if (env.timestamp)
		table_str(t, hms);
	if (!r) {
		/* the host line fills the key columns with its name */
		for (int i = env.timestamp; i < key_ncols; i++)
			table_str(t, i == env.timestamp ? "[host]" : "");
		return;
	}
	switch (cfg.by) {
	case CACHESTAT_BY_PID:
		table_u64(t, r->ident.pid);
		table_str(t, r->ident.comm);
		table_str(t, aiscope_container_short(&r->ci, buf));
		break;
	case BY_CONTAINER:
		table_str(t, r->ci.id[0] ? aiscope_container_short(&r->ci, buf) : "(none)");
		table_str(t, aiscope_container_runtime(&r->ci));
		table_str(t, aiscope_container_pod(&r->ci, pod, sizeof(pod)));
		break;
	case CACHESTAT_BY_FILE:
		table_str(t, r->file);
		table_fixed_or_dash(t, r->size_known, r->size / 1048576.0, 1);
		break;
	}
}

static void table_row(struct table *t, const struct row *r, const char *hms)
{
	const struct figures *f = r ? &r->f : &S.host;

	table_key(t, r, hms);
	table_u64_or_dash(t, f->known, f->c.accesses);
	table_u64_or_dash(t, f->known, f->hits);
	table_u64(t, f->misses);
	table_fixed(t, f->misses * (double)S.page_size / 1048576.0, 1);
	table_u64(t, f->c.dirtied);
	table_ratio(t, f);
	table_end_row(t);
}

/* bcc's layout: one header, then one line per interval */
static void print_host_line(uint64_t now)
{
	uint64_t buffers = 0, cached = 0;
	bool mi = meminfo(&buffers, &cached);
	char hms[16];
	struct table t;

	table_init(&t, stdout, table_cols, table_ncols, false);
	if (!S.header_done) {
		table_header(&t);
		S.header_done = true;
	}
	if (env.timestamp) {
		fmt_hms(now, hms, sizeof(hms));
		table_str(&t, hms);
	}
	table_u64_or_dash(&t, S.host.known, S.host.hits);
	table_u64(&t, S.host.misses);
	table_u64(&t, S.host.c.dirtied);
	table_ratio(&t, &S.host);
	if (mi) {
		table_fixed(&t, buffers / 1048576.0, 1);
		table_fixed(&t, cached / 1048576.0, 1);
	} else {
		table_dashes(&t, 2);
	}
	table_end_row(&t);
}

static void print_interval(uint64_t interval)
{
	uint64_t now = aiscope_now_realtime();
	size_t shown = table_shown(S.nrows, env.rows);
	char hms[16];
	struct table t;

	sort_array(S.rows, S.nrows, sizeof(*S.rows), cmp_rows);
	if (env.json) {
		for (size_t i = 0; i < shown; i++)
			json_row(&S.rows[i], now, interval);
		json_row(NULL, now, interval);
		return;
	}
	if (cfg.by == CACHESTAT_BY_HOST) {
		print_host_line(now);
		return;
	}
	table_block_begin(stdout, env.tty && !env.noclear, now, interval, "cachestat");
	fmt_hms(now, hms, sizeof(hms));
	table_init(&t, stdout, table_cols, table_ncols, env.tty && !env.wide);
	table_header(&t);
	table_row(&t, NULL, hms);
	for (size_t i = 0; i < shown; i++)
		table_row(&t, &S.rows[i], hms);
	table_more(stdout, shown, S.nrows);
}

static int on_tick(void *ctx)
{
	uint64_t interval = aiscope_loop_interval(&S.loop);

	collect();
	if (P.buffers) {
		uint64_t buffers, cached;

		if (meminfo(&buffers, &cached)) {
			prom_gauge_set(P.buffers, NULL, buffers);
			prom_gauge_set(P.cached, NULL, cached);
		}
	}
	print_interval(interval);
	if (env.count && S.loop.ticks >= env.count)
		return AISCOPE_STOP;
	return 0;
}

/* ---- the attach plan: one access mode ---- */

/* Accesses come from the function hook when it attaches, else from the
 * three tracepoints; the hooks of the other mode are left out (attached
 * together they would count the same reads twice). */
static void on_plan(struct aiscope_bpf *b)
{
	const struct probe_cand *dirty = probe_chosen(&hooks[H_DIRTY]);

	if (!dirty || strcmp(dirty->prog, "dirty_tp"))
		probe_exclude(&hooks[H_DIRTY_SIZE], "page_dirtied counts the pages itself");
	if (probe_chosen_by(&hooks[H_ACCESS], PM_BIT(PM_FENTRY) | PM_BIT(PM_KPROBE))) {
		S.mode = CACHESTAT_ACC_FUNCTION;
		probe_exclude(&hooks[H_READ], "function mode: accesses from page_accessed");
		probe_exclude(&hooks[H_MAP], "function mode: accesses from page_accessed");
		probe_exclude(&hooks[H_FAULT], "function mode: accesses from page_accessed");
		return;
	}
	/* mark_buffer_dirty only corrects folio_mark_accessed counts */
	probe_exclude(&hooks[H_BUFDIRTY], "used in function mode only");
	S.mode = probe_chosen(&hooks[H_READ]) ? CACHESTAT_ACC_TRACEPOINT : CACHESTAT_ACC_NONE;
}

static const char *mode_text(void)
{
	switch (S.mode) {
	case CACHESTAT_ACC_FUNCTION:
		return "function mode: accesses are pages marked accessed (folio_mark_accessed), "
		       "as bcc's cachestat";
	case CACHESTAT_ACC_TRACEPOINT:
		return "tracepoint mode: accesses are the pages of each read(2) and the pages "
		       "mapped by mmap faults";
	default:
		return "no access hook: misses and dirties only, hits unknown";
	}
}

static void list_extra(struct aiscope_bpf *b, FILE *f, struct jw *jw)
{
	if (!jw) {
		fprintf(f, "access mode: %s (%s)\n", mode_names[S.mode], mode_text());
		return;
	}
	jw_record_begin(jw, "mode", TOOL, aiscope_now_realtime());
	jw_kstr(jw, "access_mode", mode_names[S.mode]);
	jw_kstr(jw, "description", mode_text());
	jw_record_end(jw);
}

/* ---- --llc ---- */

static int perf_open(uint32_t type, uint64_t config, int cpu)
{
	struct perf_event_attr a = {
		.type = type, .size = sizeof(a), .config = config,
		.sample_period = LLC_PERIOD, .inherit = 0, .disabled = 0,
	};

	return syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* Before anything is loaded: a machine without the counters exits 77. */
static void llc_check(void)
{
	char why[256];
	int fd;

	if (!feat_privileged(why, sizeof(why)))
		aiscope_fail(EXIT_CANNOT_RUN, "%s", why);
	fd = perf_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, 0);
	if (fd < 0)
		aiscope_fail(EXIT_CANNOT_RUN,
			     "--llc: this machine has no hardware cache counters (perf_event_open of "
			     "PERF_COUNT_HW_CACHE_REFERENCES: %s)", strerror(errno));
	close(fd);
}

static void llc_attach(void)
{
	int ncpu = libbpf_num_possible_cpus();
	static const uint64_t configs[2] = { PERF_COUNT_HW_CACHE_REFERENCES, PERF_COUNT_HW_CACHE_MISSES };
	struct bpf_program *progs[2] = { S.skel->progs.llc_ref, S.skel->progs.llc_miss };

	S.llc_links = calloc(2 * (ncpu > 0 ? ncpu : 1), sizeof(*S.llc_links));
	if (!S.llc_links)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	for (int cpu = 0; cpu < ncpu; cpu++) {
		for (int e = 0; e < 2; e++) {
			int fd = perf_open(PERF_TYPE_HARDWARE, configs[e], cpu);
			struct bpf_link *l;

			if (fd < 0) {
				/* an offline CPU has no counters */
				if (errno == ENODEV)
					continue;
				aiscope_fail(EXIT_RUNTIME, "perf_event_open on CPU %d: %s", cpu, strerror(errno));
			}
			l = bpf_program__attach_perf_event(progs[e], fd);
			if (!l) {
				close(fd);
				aiscope_fail(EXIT_RUNTIME, "cannot attach to the counters of CPU %d: %s", cpu,
					     strerror(errno));
			}
			S.llc_links[S.nllc++] = l;
		}
	}
}

struct llc_row {
	struct aiscope_ident ident;
	uint64_t refs, misses;
};

static struct {
	struct llc_row *v;
	size_t n, cap;
	uint64_t refs, misses;		/* the whole run */
} L;

static bool llc_in_epoch(const void *key, void *ctx)
{
	return ((const struct cachestat_llc_key *)key)->epoch == *(uint32_t *)ctx;
}

static void llc_take(const void *key, const void *value, void *ctx)
{
	const struct cachestat_llc *v = value;

	L.v = aiscope_grow(L.v, &L.cap, L.n, sizeof(*L.v));
	L.v[L.n++] = (struct llc_row){ v->ident, v->refs, v->misses };
	L.refs += v->refs;
	L.misses += v->misses;
}

static void llc_collect(void)
{
	uint32_t closed = map_epoch_close(&S.skel->bss->epoch, NULL);

	L.n = 0;
	map_drain(bpf_map__fd(S.skel->maps.llc), sizeof(struct cachestat_llc_key),
		  sizeof(struct cachestat_llc), llc_in_epoch, llc_take, &closed);
}

static int cmp_llc(const void *a, const void *b)
{
	const struct llc_row *x = a, *y = b;

	return cmp_u64(y->misses, x->misses) ?: (x->ident.pid < y->ident.pid ? -1 : 1);
}

static const struct tcol cols_llc[] = {
	{ "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "CONTAINER", 12, TC_LEFT },
	{ "REFS", 12, 0 }, { "MISSES", 12, 0 }, { "HIT%", 7, 0 },
};

static int on_llc_tick(void *ctx)
{
	uint64_t interval = aiscope_loop_interval(&S.loop);
	uint64_t rt = aiscope_now_realtime();
	size_t shown;
	struct table t;
	char ctr[CONTAINER_ID_LEN + 1];

	llc_collect();
	sort_array(L.v, L.n, sizeof(*L.v), cmp_llc);
	shown = table_shown(L.n, env.rows);
	if (!env.json) {
		table_block_begin(stdout, env.tty && !env.noclear, rt, interval, "cachestat --llc");
		table_init(&t, stdout, cols_llc, ARRAY_SIZE(cols_llc), env.tty && !env.wide);
		table_header(&t);
	}
	for (size_t i = 0; i < shown; i++) {
		const struct llc_row *r = &L.v[i];
		double hit = r->refs ? 100.0 * (1.0 - (double)r->misses / r->refs) : 0;

		if (env.json) {
			jw_record_begin(&S.jw, "sample", TOOL, rt);
			jw_ku64(&S.jw, "seq", S.loop.ticks);
			jw_ku64(&S.jw, "interval_ns", interval);
			jw_kstr(&S.jw, "row", "pid");
			aiscope_ident_json(&S.jw, &r->ident, false);
			jw_ku64(&S.jw, "llc_references", r->refs);
			jw_ku64(&S.jw, "llc_misses", r->misses);
			jw_kdouble_or_null(&S.jw, "llc_hit_ratio", r->refs && r->misses <= r->refs, hit / 100.0, 4);
			jw_record_end(&S.jw);
			continue;
		}
		table_u64(&t, r->ident.pid);
		table_str(&t, r->ident.comm);
		table_str(&t, aiscope_ident_container_short(&r->ident, ctr, sizeof(ctr)));
		table_u64(&t, r->refs);
		table_u64(&t, r->misses);
		table_fixed_or_dash(&t, r->refs && r->misses <= r->refs, hit, 2);
		table_end_row(&t);
	}
	if (!env.json)
		table_more(stdout, shown, L.n);
	if (env.count && S.loop.ticks >= env.count)
		return AISCOPE_STOP;
	return 0;
}

/* ---- summary ---- */

static void print_summary(void)
{
	struct figures *t = &S.total;

	derive(t);
	if (cfg.llc) {
		if (env.json) {
			aiscope_summary_begin(&S.jw, &S.bpf, &S.loop, L.refs + L.misses);
			jw_ku64(&S.jw, "intervals", S.loop.ticks);
			jw_ku64(&S.jw, "llc_references", L.refs);
			jw_ku64(&S.jw, "llc_misses", L.misses);
			jw_record_end(&S.jw);
		} else {
			printf("# summary: %llu LLC references, %llu misses (sampled every %d), %llu lost events\n",
			       (unsigned long long)L.refs, (unsigned long long)L.misses, LLC_PERIOD,
			       (unsigned long long)aiscope_lost_total(&S.bpf));
		}
		return;
	}
	if (env.json) {
		aiscope_summary_begin(&S.jw, &S.bpf, &S.loop,
				      t->c.accesses + t->c.added + t->c.dirtied + t->c.buf_dirtied);
		jw_kstr(&S.jw, "access_mode", mode_names[S.mode]);
		jw_ku64(&S.jw, "intervals", S.loop.ticks);
		jw_ku64(&S.jw, "page_size_bytes", S.page_size);
		json_figures(t);
		jw_record_end(&S.jw);
		return;
	}
	printf("# summary: ");
	if (t->known)
		printf("%llu hits, ", (unsigned long long)t->hits);
	else
		printf("hits unknown, ");
	printf("%llu misses, %llu dirties", (unsigned long long)t->misses,
	       (unsigned long long)t->c.dirtied);
	if (t->known && t->hits + t->misses)
		printf(", hit ratio %.2f%%", 100.0 * hit_ratio(t));
	printf(", access mode %s, %llu lost events\n", mode_names[S.mode],
	       (unsigned long long)aiscope_lost_total(&S.bpf));
}

static void validate(void)
{
	if (env.sort)
		cfg.sort = sort_keys[opt_word("--sort", env.sort, sort_keys)];
	if (cfg.llc && cfg.by != CACHESTAT_BY_HOST)
		usage_error("--llc counts per process: it cannot be combined with --by");
	if (cfg.llc && env.sort)
		usage_error("--llc sorts by misses: it cannot be combined with -s");
}

/* --llc loads only the perf_event programs, the page-cache view only the
 * hooks of its plan. */
static void disable_programs(bool llc)
{
	struct bpf_program *p;

	bpf_object__for_each_program(p, S.skel->obj) {
		bool perf = bpf_program__type(p) == BPF_PROG_TYPE_PERF_EVENT;

		if (llc)
			bpf_program__set_autoload(p, perf);
		else if (perf)
			bpf_program__set_autoload(p, false);
	}
}

int main(int argc, char **argv)
{
	int code;

	aiscope_parse(&argp, argc, argv, TOOL, AISCOPE_AGGREGATING | AISCOPE_METRICS);
	validate();
	metrics_init();
	jw_init(&S.jw, stdout);
	S.page_size = sysconf(_SC_PAGESIZE);
	if (cfg.llc && !env.list_probes)
		llc_check();

	S.skel = cachestat_bpf__open_opts(aiscope_open_opts());
	if (!S.skel)
		aiscope_fail(EXIT_RUNTIME, "cannot open the BPF object: %s", strerror(errno));
	S.skel->rodata->key_by = cfg.by == BY_CONTAINER ? CACHESTAT_BY_CGROUP : cfg.by;
	S.skel->rodata->page_shift = __builtin_ctzl(S.page_size);

	S.bpf = (struct aiscope_bpf){
		.hooks = hooks, .nhooks = cfg.llc ? 0 : ARRAY_SIZE(hooks),
		.on_plan = cfg.llc ? NULL : on_plan, .list_extra = cfg.llc ? NULL : list_extra,
	};
	aiscope_bpf_prepare(&S.bpf, S.skel->obj, &S.skel->rodata->aiscope_cfg);
	if (cfg.llc) {
		disable_programs(true);
		aiscope_map_resize(S.skel->obj, "llc", 8192);
	} else {
		/* the perf_event programs are not in the plan */
		disable_programs(false);
		if (cfg.by != CACHESTAT_BY_HOST)
			aiscope_map_resize(S.skel->obj, "rows", cfg.by == CACHESTAT_BY_FILE ? 16384 : 8192);
	}
	aiscope_bpf_load(&S.bpf, cachestat_bpf__load(S.skel));
	if (cfg.llc)
		llc_attach();
	else
		aiscope_bpf_attach(&S.bpf);
	S.skel->bss->dirty_sized = probe_chosen(&hooks[H_DIRTY_SIZE]) != NULL;

	build_columns();
	if (cfg.llc)
		aiscope_tracing("last-level-cache references and misses (hardware counters, "
				"sampled every %d)", LLC_PERIOD);
	else
		aiscope_tracing("page cache (%s, access mode %s)",
				probe_summary(hooks, ARRAY_SIZE(hooks)), mode_names[S.mode]);

	read_totals(&S.last);
	S.loop = (struct aiscope_loop){
		.bpf = &S.bpf,
		.on_tick = cfg.llc ? on_llc_tick : on_tick,
		.on_final = cfg.llc ? on_llc_tick : on_tick,
		.tick_ns = env.interval_ns,
	};
	code = aiscope_run(&S.loop, print_summary);
	for (int i = 0; i < S.nllc; i++)
		bpf_link__destroy(S.llc_links[i]);
	free(S.llc_links);
	cachestat_bpf__destroy(S.skel);
	free_rows();
	free(S.rows);
	for (size_t i = 0; i < F.n; i++)
		free(F.v[i].path);
	free(F.v);
	free(F.scanned);
	free(L.v);
	return code;
}
