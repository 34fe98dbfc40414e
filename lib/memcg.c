// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "memcg.h"
#include "util.h"

static void armer_stop(struct memcg_set *s);

/* v1 reports "no limit" as PAGE_COUNTER_MAX pages in bytes (~2^63) */
#define V1_UNLIMITED	(1ULL << 62)
#define READ_BUF	4096
#define MAX_DEPTH	64

/* ---- parsers ---- */

int memcg_parse_limit(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	while (*s == ' ')
		s++;
	if (!strncmp(s, "max", 3) && (s[3] == 0 || s[3] == '\n')) {
		*v = MEMCG_NO_LIMIT;
		return 0;
	}
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || end == s || (*end && *end != '\n'))
		return -EINVAL;
	*v = x >= V1_UNLIMITED ? MEMCG_NO_LIMIT : x;
	return 0;
}

bool memcg_parse_key(const char *buf, const char *key, uint64_t *v)
{
	size_t n = strlen(key);
	const char *p = buf;

	while (p && *p) {
		if (!strncmp(p, key, n) && p[n] == ' ') {
			char *end;

			*v = strtoull(p + n + 1, &end, 10);
			return end != p + n + 1;
		}
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return false;
}

static double psi_avg10(const char *buf, const char *kind)
{
	size_t n = strlen(kind);
	const char *p = buf;

	while (p && *p) {
		if (!strncmp(p, kind, n) && !strncmp(p + n, " avg10=", 7))
			return strtod(p + n + 7, NULL);
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return -1;
}

void memcg_parse_psi(const char *buf, double *some10, double *full10)
{
	*some10 = psi_avg10(buf, "some");
	*full10 = psi_avg10(buf, "full");
}

uint64_t memcg_working_set(const struct memcg_reading *r)
{
	if (r->inactive_file == MEMCG_UNKNOWN)
		return MEMCG_UNKNOWN;
	return r->usage > r->inactive_file ? r->usage - r->inactive_file : 0;
}

/* ---- reading ---- */

/* A whole small file into buf (NUL-terminated); -errno. */
static int pread_all(int fd, char *buf, size_t len)
{
	ssize_t n;

	if (fd < 0)
		return -EBADF;
	n = pread(fd, buf, len - 1, 0);
	if (n < 0)
		return -errno;
	buf[n] = 0;
	return 0;
}

static int read_u64_file(int fd, uint64_t *v)
{
	char buf[64];
	int err = pread_all(fd, buf, sizeof(buf));

	return err ? err : memcg_parse_limit(buf, v);
}

static bool limited(const struct memcg_reading *r)
{
	return r->limit != MEMCG_NO_LIMIT && r->limit > 0;
}

/* The counters must be read now: no armed signal says when they move,
 * the caller wants them (hot, every), one fired, or this is the first. */
static bool counters_now(struct memcg *m, const struct memcg_sig *sig, int kind, bool hot,
			 bool every)
{
	bool armed = sig->fd >= 0 && sig->kind == kind;

	if (m->counters_due) {
		m->counters_due--;
		return true;
	}
	return !armed || hot || every || !m->reads;
}

static int read_v1_counters(struct memcg *m, bool hot, bool every)
{
	struct memcg_reading *r = &m->cur;
	char buf[READ_BUF];
	uint64_t kills = r->oom_kills;
	int err;

	r->ooms = MEMCG_UNKNOWN;
	r->psi_some10 = r->psi_full10 = -1;
	/* oom_control's count moves with an OOM, which its eventfd signals
	 * first: armed, it is read when near the limit or after one (half of
	 * a cold cgroup's reads each poll) */
	if (!counters_now(m, &m->sig[2], MEMCG_SIG_OOM, hot, every))
		return 0;
	err = pread_all(m->fd_oomctl, buf, sizeof(buf));
	if (err == -ENODEV)
		return err;
	if (err || !memcg_parse_key(buf, "oom_kill", &r->oom_kills))
		r->oom_kills = MEMCG_UNKNOWN;
	/* failcnt only moves at the limit: read it when near it, or when
	 * a kill says the limit was reached (a hit in between shows later,
	 * as the counter is cumulative) */
	if ((hot || every || r->oom_kills != kills || !m->reads) &&
	    read_u64_file(m->fd_events, &r->limit_hits))
		r->limit_hits = MEMCG_UNKNOWN;
	return 0;
}

static int read_v2_counters(struct memcg *m, bool hot, bool every)
{
	struct memcg_reading *r = &m->cur;
	char buf[READ_BUF];
	int err;

	/* memory.events signals its every change (POLLPRI): armed, read when
	 * near the limit or after a change */
	if (counters_now(m, &m->sig[0], MEMCG_SIG_EVENTS, hot, every)) {
		err = pread_all(m->fd_events, buf, sizeof(buf));
		if (err == -ENODEV)
			return err;
		if (err || !memcg_parse_key(buf, "max", &r->limit_hits))
			r->limit_hits = MEMCG_UNKNOWN;
		if (err || !memcg_parse_key(buf, "oom", &r->ooms))
			r->ooms = MEMCG_UNKNOWN;
		if (err || !memcg_parse_key(buf, "oom_kill", &r->oom_kills))
			r->oom_kills = MEMCG_UNKNOWN;
	}
	if (pread_all(m->fd_psi, buf, sizeof(buf)))
		r->psi_some10 = r->psi_full10 = -1;
	else
		memcg_parse_psi(buf, &r->psi_some10, &r->psi_full10);
	return 0;
}

int memcg_read(struct memcg *m, unsigned int what,
	       bool (*hot)(const struct memcg_reading *r, void *ctx), void *ctx)
{
	struct memcg_reading *r = &m->cur;
	bool all = what & MEMCG_ALL, is_hot = false;
	char buf[READ_BUF];
	int err;

	r->inactive_file = MEMCG_UNKNOWN;
	r->at_ns = clock_ns(CLOCK_MONOTONIC);
	if (all || (what & MEMCG_LIMIT) || !m->reads) {
		err = read_u64_file(m->fd_limit, &r->limit);
		if (err == -ENODEV)
			return err;
		if (err)
			r->limit = MEMCG_NO_LIMIT;
	}
	/* without a limit there is no ratio: the usage is not needed */
	r->usage = MEMCG_UNKNOWN;
	if (all || limited(r)) {
		err = read_u64_file(m->fd_usage, &r->usage);
		if (err) {
			r->usage = MEMCG_UNKNOWN;
			return err;
		}
		is_hot = !hot || hot(r, ctx);
	}
	err = m->v1 ? read_v1_counters(m, is_hot, what & (MEMCG_COUNTERS | MEMCG_ALL))
		    : read_v2_counters(m, is_hot, what & (MEMCG_COUNTERS | MEMCG_ALL));
	if (err)
		return err;
	m->reads++;
	if (!is_hot)
		return 0;
	if (!pread_all(m->fd_stat, buf, sizeof(buf)) &&
	    !memcg_parse_key(buf, m->v1 ? "total_inactive_file" : "inactive_file", &r->inactive_file))
		r->inactive_file = MEMCG_UNKNOWN;
	return 0;
}

/* ---- the set ---- */

static int cmp_memcg(const void *a, const void *b)
{
	const struct memcg *x = *(struct memcg *const *)a, *y = *(struct memcg *const *)b;

	if (x->v1 != y->v1)
		return x->v1 ? 1 : -1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static struct memcg *find(struct memcg_set *s, uint64_t id, bool v1)
{
	struct memcg key = { .id = id, .v1 = v1 }, *kp = &key, **hit;

	hit = search_array(&kp, s->cg, s->nsorted, sizeof(*s->cg), cmp_memcg);
	return hit ? *hit : NULL;
}

struct memcg *memcg_set_find(struct memcg_set *s, uint64_t id, bool v1)
{
	return find(s, id, v1);
}

static int open_at(struct memcg_set *s, int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_CLOEXEC);

	if (fd < 0 && errno != ENOENT)
		s->open_errors++;
	return fd;
}

static void sig_close(struct memcg_sig *sig)
{
	/* closing the eventfd unregisters it (the kernel sees EPOLLHUP);
	 * closing a fd takes it out of epoll */
	if (sig->fd >= 0)
		close(sig->fd);
	sig->fd = -1;
}

static void memcg_close(struct memcg *m)
{
	int *fds[] = { &m->fd_usage, &m->fd_limit, &m->fd_stat, &m->fd_events, &m->fd_oomctl,
		       &m->fd_psi, &m->fd_ctl };

	for (size_t i = 0; i < MEMCG_NSIG; i++)
		sig_close(&m->sig[i]);
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (*fds[i] >= 0)
			close(*fds[i]);
	free(m->path);
	free(m);
}

static struct memcg *memcg_open(struct memcg_set *s, int dfd, uint64_t id, bool v1,
				const char *path)
{
	struct memcg *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->id = id;
	m->v1 = v1;
	m->path = strdup(*path ? path : "/");
	m->fd_oomctl = m->fd_psi = m->fd_ctl = -1;
	for (size_t i = 0; i < MEMCG_NSIG; i++)
		m->sig[i] = (struct memcg_sig){ .m = m, .fd = -1 };
	m->armed_limit = MEMCG_NO_LIMIT;
	m->cur.usage = MEMCG_UNKNOWN;
	if (v1) {
		m->fd_usage = open_at(s, dfd, "memory.usage_in_bytes");
		m->fd_limit = open_at(s, dfd, "memory.limit_in_bytes");
		m->fd_events = open_at(s, dfd, "memory.failcnt");
		m->fd_oomctl = open_at(s, dfd, "memory.oom_control");
	} else {
		m->fd_usage = open_at(s, dfd, "memory.current");
		m->fd_limit = open_at(s, dfd, "memory.max");
		m->fd_events = open_at(s, dfd, "memory.events");
		m->fd_psi = open_at(s, dfd, "memory.pressure");
	}
	m->fd_stat = open_at(s, dfd, "memory.stat");
	if (!m->path || m->fd_usage < 0) {
		memcg_close(m);
		return NULL;
	}
	if (v1 && s->epoll_fd >= 0) {
		/* without it, each v1 signal counts its own arm error */
		m->fd_ctl = openat(dfd, "cgroup.event_control", O_WRONLY | O_CLOEXEC);
	}
	if (s->epoll_fd >= 0)
		memcg_rearm(s, m);
	return m;
}

static void add(struct memcg_set *s, struct memcg *m)
{
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct memcg **n = realloc(s->cg, cap * sizeof(*n));

		if (!n) {
			memcg_close(m);
			return;
		}
		s->cg = n;
		s->cap = cap;
	}
	s->cg[s->n++] = m;
}

/* ---- inotify: which directory a watch descriptor is ---- */

static struct memcg_watch *watch_find(struct memcg_set *s, int wd)
{
	size_t lo = 0, hi = s->nwatch;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (s->watch[mid].wd == wd)
			return &s->watch[mid];
		if (s->watch[mid].wd < wd)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static int cmp_watch(const void *a, const void *b)
{
	return ((const struct memcg_watch *)a)->wd - ((const struct memcg_watch *)b)->wd;
}

static void watch_add(struct memcg_set *s, const char *abs, const char *path, bool v1)
{
	/* IN_MODIFY: a limit written (thresholds follow it) */
	int wd = inotify_add_watch(s->inotify_fd, abs, IN_CREATE | IN_MODIFY | IN_ONLYDIR);
	struct memcg_watch *w;

	if (wd < 0 || watch_find(s, wd))
		return;
	if (s->nwatch == s->capwatch) {
		size_t cap = s->capwatch ? s->capwatch * 2 : 256;

		w = realloc(s->watch, cap * sizeof(*w));
		if (!w)
			return;
		s->watch = w;
		s->capwatch = cap;
	}
	w = &s->watch[s->nwatch++];
	w->wd = wd;
	w->v1 = v1;
	w->path = strdup(*path ? path : "");
	/* wds grow, so this is an append, but for a wrap-around */
	if (s->nwatch > 1 && w[-1].wd > wd)
		sort_array(s->watch, s->nwatch, sizeof(*s->watch), cmp_watch);
}

static void watch_forget(struct memcg_set *s, int wd)
{
	struct memcg_watch *w = watch_find(s, wd);

	if (!w)
		return;
	free(w->path);
	memmove(w, w + 1, (s->watch + s->nwatch - (w + 1)) * sizeof(*w));
	s->nwatch--;
}

static bool under_prefix(const struct memcg_set *s, const char *path)
{
	size_t n;

	if (!s->prefix || !strcmp(s->prefix, "/"))
		return true;
	n = strlen(s->prefix);
	return !strncmp(path, s->prefix, n) && (path[n] == 0 || path[n] == '/');
}

static bool in_prefix(const struct memcg_set *s, const char *path)
{
	return under_prefix(s, path) && (!s->keep || s->keep(path));
}

/* Could a cgroup below path be in the prefix? (walk pruning; one keep
 * refuses may have some below it that it keeps) */
static bool toward_prefix(const struct memcg_set *s, const char *path)
{
	size_t n = strlen(path);

	if (!s->prefix || under_prefix(s, path))
		return true;
	return !strncmp(s->prefix, path, n) && s->prefix[n] == '/';
}

static void visit(struct memcg_set *s, int dfd, const char *abs, char *path, size_t plen,
		  bool v1, int depth)
{
	struct stat st;
	struct memcg *m;
	bool known = false;
	DIR *d;
	struct dirent *de;

	if (fstat(dfd, &st)) {
		close(dfd);
		return;
	}
	/* the roots are the host: /proc/pressure/memory speaks for them */
	m = NULL;
	if (depth > 0 && in_prefix(s, path))
		m = find(s, st.st_ino, v1);
	known = m != NULL;
	/* a new directory, or one that is no cgroup we read (a root, a v2
	 * cgroup without the memory controller): watch it for new children
	 * and limit writes, before its limit is read (a write in between
	 * would be seen by neither) */
	if (s->inotify_fd >= 0 && !known)
		watch_add(s, abs, path, v1);
	if (depth > 0 && in_prefix(s, path) && !m && (m = memcg_open(s, dfd, st.st_ino, v1, path)))
		add(s, m);
	if (m)
		m->scan_gen = s->scan_gen;
	if (depth >= MAX_DEPTH || !(d = fdopendir(dfd))) {
		if (depth >= MAX_DEPTH)
			close(dfd);
		return;
	}
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char sub[PATH_MAX];
		int fd;

		if (de->d_type != DT_DIR || de->d_name[0] == '.' || plen + 1 + n >= PATH_MAX)
			continue;
		path[plen] = '/';
		memcpy(path + plen + 1, de->d_name, n + 1);
		if (toward_prefix(s, path)) {
			fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			snprintf(sub, sizeof(sub), "%s/%s", abs, de->d_name);
			if (fd >= 0)
				visit(s, fd, sub, path, plen + 1 + n, v1, depth + 1);
		}
		path[plen] = 0;
	}
	closedir(d);
}

static void walk(struct memcg_set *s, const char *root, bool v1)
{
	char path[PATH_MAX] = "";
	int fd;

	if (!*root)
		return;
	fd = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		visit(s, fd, root, path, 0, v1, 0);
}

void memcg_set_rescan(struct memcg_set *s)
{
	size_t w = 0;

	s->scan_gen++;
	s->dirty = false;
	s->nsorted = s->n;
	s->last_scan_ns = clock_ns(CLOCK_MONOTONIC);
	/* new entries are appended unsorted during the walk; find() must
	 * only see the sorted part */
	walk(s, s->v1_root, true);
	walk(s, s->v2_root, false);
	for (size_t i = 0; i < s->n; i++) {
		if (s->cg[i]->scan_gen != s->scan_gen) {
			memcg_close(s->cg[i]);
			continue;
		}
		s->cg[w++] = s->cg[i];
	}
	s->n = w;
	sort_array(s->cg, s->n, sizeof(*s->cg), cmp_memcg);
	s->nsorted = s->n;
}

static int depth_of(const char *path)
{
	int d = 0;

	for (; *path; path++)
		d += *path == '/';
	return d;
}

/* A directory made under a watched one: open it and what is below it. */
static void created(struct memcg_set *s, const struct inotify_event *ev)
{
	struct memcg_watch *w = watch_find(s, ev->wd);
	char path[PATH_MAX], abs[PATH_MAX];
	int fd;

	if (!w || snprintf(path, sizeof(path), "%s/%s", w->path, ev->name) >= (int)sizeof(path))
		return;
	if (snprintf(abs, sizeof(abs), "%s%s", w->v1 ? s->v1_root : s->v2_root, path) >=
	    (int)sizeof(abs) || !toward_prefix(s, path))
		return;
	fd = open(abs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	/* visit() appends: find() must see them all sorted */
	s->nsorted = s->n;
	visit(s, fd, abs, path, strlen(path), w->v1, depth_of(path));
	for (size_t i = s->nsorted; i < s->n; i++)
		s->cg[i]->born = true;
	sort_array(s->cg, s->n, sizeof(*s->cg), cmp_memcg);
	s->nsorted = s->n;
}

static bool is_limit_file(const char *name)
{
	return !strcmp(name, "memory.limit_in_bytes") || !strcmp(name, "memory.max");
}

/* A file written in a watched cgroup: a new limit moves the thresholds. */
static void modified(struct memcg_set *s, const struct inotify_event *ev)
{
	struct memcg_watch *w = watch_find(s, ev->wd);
	char abs[PATH_MAX];
	struct memcg *m;
	struct stat st;

	if (!w || !is_limit_file(ev->name))
		return;
	if (snprintf(abs, sizeof(abs), "%s%s", w->v1 ? s->v1_root : s->v2_root, w->path) >=
	    (int)sizeof(abs) || stat(abs, &st))
		return;
	m = find(s, st.st_ino, w->v1);
	if (!m)
		return;
	m->limit_changed = true;
	if (read_u64_file(m->fd_limit, &m->cur.limit))
		m->cur.limit = MEMCG_NO_LIMIT;
	if (s->epoll_fd >= 0)
		memcg_rearm(s, m);
}

void memcg_set_refresh(struct memcg_set *s)
{
	char buf[8192] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	while (s->inotify_fd >= 0 && (n = read(s->inotify_fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;

			if (ev->mask & IN_Q_OVERFLOW)
				s->dirty = true;
			else if (ev->mask & IN_IGNORED)
				watch_forget(s, ev->wd);
			else if ((ev->mask & IN_CREATE) && (ev->mask & IN_ISDIR) && ev->len)
				created(s, ev);
			else if ((ev->mask & IN_MODIFY) && ev->len)
				modified(s, ev);
			p += sizeof(*ev) + ev->len;
		}
	}
	if (s->rescan_ns && clock_ns(CLOCK_MONOTONIC) - s->last_scan_ns >= s->rescan_ns)
		s->dirty = true;
	if (s->dirty)
		memcg_set_rescan(s);
}

void memcg_set_drop(struct memcg_set *s, size_t i)
{
	if (i >= s->n)
		return;
	memcg_close(s->cg[i]);
	memmove(&s->cg[i], &s->cg[i + 1], (s->n - i - 1) * sizeof(*s->cg));
	s->n--;
	s->nsorted = s->n;
}

int memcg_set_init(struct memcg_set *s, const char *v1_root, const char *v2_root,
		   const char *prefix, bool (*keep)(const char *path), bool watch)
{
	memset(s, 0, sizeof(*s));
	s->keep = keep;
	s->epoll_fd = -1;
	snprintf(s->v1_root, sizeof(s->v1_root), "%s", v1_root ? v1_root : "");
	snprintf(s->v2_root, sizeof(s->v2_root), "%s", v2_root ? v2_root : "");
	s->prefix = prefix;
	s->inotify_fd = watch ? inotify_init1(IN_NONBLOCK | IN_CLOEXEC) : -1;
	s->rescan_ns = 60 * NSEC_PER_SEC;
	memcg_set_rescan(s);
	return 0;
}

void memcg_set_free(struct memcg_set *s)
{
	armer_stop(s);
	for (size_t i = 0; i < s->n; i++)
		memcg_close(s->cg[i]);
	free(s->cg);
	for (size_t i = 0; i < s->nwatch; i++)
		free(s->watch[i].path);
	free(s->watch);
	if (s->inotify_fd >= 0)
		close(s->inotify_fd);
	if (s->epoll_fd >= 0)
		close(s->epoll_fd);
	memset(s, 0, sizeof(*s));
	s->inotify_fd = s->epoll_fd = -1;
}

/* ---- kernel signals ---- */

uint64_t memcg_threshold_bytes(uint64_t limit, double pct)
{
	if (limit == MEMCG_NO_LIMIT || !limit || !(pct > 0))
		return 0;
	return (uint64_t)(limit * (pct / 100.0));
}

int memcg_psi_trigger(char *buf, size_t len, double pct, uint64_t window_us)
{
	uint64_t stall = (uint64_t)(window_us * (pct / 100.0));

	/* the kernel wants a stall of at least 1 us, at most the window */
	if (!stall)
		stall = 1;
	return snprintf(buf, len, "full %llu %llu", (unsigned long long)stall,
			(unsigned long long)window_us);
}

static int sig_add(struct memcg_set *s, struct memcg_sig *sig, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = sig };

	if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, sig->fd, &ev)) {
		s->arm_errors++;
		sig_close(sig);
		return -1;
	}
	return 0;
}

/* ---- the armer: v1 registrations off the event loop ---- */

/* One registration, on fds of its own (dups): the cgroup may be closed
 * before it is written. check: the usage already above bytes is
 * signalled at once (the kernel signals crossings only). */
struct arm_req {
	struct arm_req *next;
	int ctl, efd, target;
	uint64_t bytes;
	bool check;
	char args[24];
};

struct memcg_armer {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	struct arm_req *head, *tail;
	struct arm_req *last_new;	/* the last of those queued ahead of the start's */
	bool stop;
	atomic_int errors, pending;
};

static void req_free(struct arm_req *r)
{
	int fds[] = { r->ctl, r->efd, r->target };

	/* the eventfd's last close, when oomwatch closed its own: the
	 * kernel unregisters it */
	for (size_t i = 0; i < ARRAY_SIZE(fds); i++)
		if (fds[i] >= 0)
			close(fds[i]);
	free(r);
}

static void req_write(struct memcg_armer *a, struct arm_req *r)
{
	char line[96];
	uint64_t usage;
	int n = snprintf(line, sizeof(line), "%d %d%s%s", r->efd, r->target, *r->args ? " " : "",
			 r->args);

	if (write(r->ctl, line, n) != n) {
		atomic_fetch_add(&a->errors, 1);
		return;
	}
	if (r->check && !read_u64_file(r->target, &usage) && usage >= r->bytes)
		eventfd_write(r->efd, 1);
}

static void *armer_main(void *arg)
{
	struct memcg_armer *a = arg;

	pthread_mutex_lock(&a->lock);
	for (;;) {
		struct arm_req *r;

		while (!a->head && !a->stop)
			pthread_cond_wait(&a->wake, &a->lock);
		if (a->stop)
			break;
		r = a->head;
		a->head = r->next;
		if (!a->head)
			a->tail = NULL;
		if (a->last_new == r)
			a->last_new = NULL;
		pthread_mutex_unlock(&a->lock);
		req_write(a, r);
		req_free(r);
		atomic_fetch_sub(&a->pending, 1);
		pthread_mutex_lock(&a->lock);
	}
	pthread_mutex_unlock(&a->lock);
	return NULL;
}

static struct memcg_armer *armer_start(void)
{
	struct memcg_armer *a = calloc(1, sizeof(*a));

	if (!a)
		return NULL;
	pthread_mutex_init(&a->lock, NULL);
	pthread_cond_init(&a->wake, NULL);
	if (pthread_create(&a->thread, NULL, armer_main, a)) {
		free(a);
		return NULL;
	}
	return a;
}

/* Ends the thread after the registration it is writing, if any; what is
 * still queued is dropped (counted as not armed). */
static void armer_stop(struct memcg_set *s)
{
	struct memcg_armer *a = s->armer;

	if (!a)
		return;
	pthread_mutex_lock(&a->lock);
	a->stop = true;
	pthread_cond_signal(&a->wake);
	pthread_mutex_unlock(&a->lock);
	pthread_join(a->thread, NULL);
	while (a->head) {
		struct arm_req *r = a->head;

		a->head = r->next;
		req_free(r);
	}
	free(a);
	s->armer = NULL;
}

static void armer_queue(struct memcg_set *s, struct arm_req *r)
{
	struct memcg_armer *a = s->armer;

	atomic_fetch_add(&a->pending, 1);
	pthread_mutex_lock(&a->lock);
	if (s->arm_front) {
		/* ahead of the start's backlog, behind the others queued so:
		 * first come, first registered */
		struct arm_req **at = a->last_new ? &a->last_new->next : &a->head;

		r->next = *at;
		*at = r;
		if (!r->next)
			a->tail = r;
		a->last_new = r;
	} else {
		if (a->tail)
			a->tail->next = r;
		else
			a->head = r;
		a->tail = r;
	}
	pthread_cond_signal(&a->wake);
	pthread_mutex_unlock(&a->lock);
}

int memcg_arm_errors(const struct memcg_set *s)
{
	return s->arm_errors + (s->armer ? atomic_load(&s->armer->errors) : 0);
}

int memcg_arm_pending(const struct memcg_set *s)
{
	return s->armer ? atomic_load(&s->armer->pending) : 0;
}

/* v1: "<eventfd> <fd of the file> [args]" to cgroup.event_control; the
 * eventfd is in epoll at once. A threshold is registered by the armer
 * (the kernel waits for a grace period in it), oom_control here (it
 * takes a spinlock only). */
static int v1_register(struct memcg_set *s, struct memcg *m, struct memcg_sig *sig, int fd,
		       const char *args, bool threshold)
{
	struct arm_req *r;

	if (m->fd_ctl < 0 || (threshold && !s->armer)) {
		s->arm_errors++;
		return -1;
	}
	sig->fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (sig->fd < 0) {
		s->arm_errors++;
		return -1;
	}
	if (sig_add(s, sig, EPOLLIN))
		return -1;	/* counted, closed */
	if (!threshold) {
		char line[64];
		int n = snprintf(line, sizeof(line), "%d %d", sig->fd, fd);

		if (write(m->fd_ctl, line, n) == n)
			return 0;
		s->arm_errors++;
		sig_close(sig);
		return -1;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		s->arm_errors++;
		sig_close(sig);
		return -1;
	}
	r->ctl = dup(m->fd_ctl);
	r->efd = dup(sig->fd);
	r->target = dup(fd);
	r->bytes = sig->bytes;
	r->check = true;
	snprintf(r->args, sizeof(r->args), "%s", args);
	if (r->ctl < 0 || r->efd < 0 || r->target < 0) {
		s->arm_errors++;
		req_free(r);
		sig_close(sig);
		return -1;
	}
	armer_queue(s, r);
	return 0;
}

static void v1_threshold(struct memcg_set *s, struct memcg *m, struct memcg_sig *sig, int level,
			 double pct)
{
	char arg[24];

	sig->kind = MEMCG_SIG_THRESHOLD;
	sig->level = level;
	sig->bytes = memcg_threshold_bytes(m->cur.limit, pct);
	sig->above = false;
	if (!sig->bytes)
		return;
	snprintf(arg, sizeof(arg), "%llu", (unsigned long long)sig->bytes);
	v1_register(s, m, sig, m->fd_usage, arg, true);
}

static void v1_arm(struct memcg_set *s, struct memcg *m)
{
	const struct memcg_arm *a = &s->arm;

	sig_close(&m->sig[0]);
	sig_close(&m->sig[1]);
	v1_threshold(s, m, &m->sig[0], 1, a->warn_pct);
	v1_threshold(s, m, &m->sig[1], 2, a->crit_pct);
	if (m->sig[2].fd < 0 && m->fd_oomctl >= 0) {
		m->sig[2].kind = MEMCG_SIG_OOM;
		m->sig[2].level = 2;
		v1_register(s, m, &m->sig[2], m->fd_oomctl, "", false);
	}
}

static void v2_psi(struct memcg_set *s, struct memcg *m, struct memcg_sig *sig, int level,
		   double pct)
{
	char path[32], line[64];
	int n;

	sig->kind = MEMCG_SIG_PSI;
	sig->level = level;
	/* one trigger per open file: its own fd */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", m->fd_psi);
	sig->fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (sig->fd < 0) {
		s->arm_errors++;
		return;
	}
	n = memcg_psi_trigger(line, sizeof(line), pct, s->arm.psi_window_us);
	if (write(sig->fd, line, n + 1) != n + 1) {
		s->arm_errors++;
		sig_close(sig);
		return;
	}
	sig_add(s, sig, EPOLLPRI);
}

/* v2's signals do not depend on the limit: armed once */
static void v2_arm(struct memcg_set *s, struct memcg *m)
{
	struct memcg_sig *ev = &m->sig[0];

	if (ev->fd >= 0 || ev->kind)
		return;
	ev->kind = MEMCG_SIG_EVENTS;
	ev->level = 0;
	ev->fd = m->fd_events >= 0 ? dup(m->fd_events) : -1;
	if (ev->fd < 0)
		s->arm_errors++;
	else
		sig_add(s, ev, EPOLLPRI | EPOLLET);
	if (m->fd_psi < 0)
		return;
	v2_psi(s, m, &m->sig[1], 1, s->arm.psi_warn_pct);
	v2_psi(s, m, &m->sig[2], 2, s->arm.psi_crit_pct);
}

void memcg_rearm(struct memcg_set *s, struct memcg *m)
{
	if (s->epoll_fd < 0)
		return;
	if (!m->reads && read_u64_file(m->fd_limit, &m->cur.limit))
		m->cur.limit = MEMCG_NO_LIMIT;
	if (!m->v1) {
		v2_arm(s, m);
		return;
	}
	if (m->sig[2].kind && m->armed_limit == m->cur.limit)
		return;
	m->armed_limit = m->cur.limit;
	v1_arm(s, m);
}

/* The share of its limit a v1 cgroup uses now (0: none, or unknown). */
static double fullness(struct memcg *m)
{
	uint64_t usage, limit;

	if (read_u64_file(m->fd_limit, &limit) || limit == MEMCG_NO_LIMIT || !limit ||
	    read_u64_file(m->fd_usage, &usage))
		return 0;
	return (double)usage / limit;
}

struct by_fullness {
	struct memcg *m;
	double full;
};

static int cmp_fullness(const void *a, const void *b)
{
	double x = ((const struct by_fullness *)a)->full, y = ((const struct by_fullness *)b)->full;

	return x < y ? 1 : x > y ? -1 : 0;
}

static void v1_ctl_open(struct memcg_set *s, struct memcg *m)
{
	char path[PATH_MAX];
	int n = snprintf(path, sizeof(path), "%s%s/cgroup.event_control", s->v1_root,
			 strcmp(m->path, "/") ? m->path : "");

	if (m->v1 && m->fd_ctl < 0)
		m->fd_ctl = n < (int)sizeof(path) ? open(path, O_WRONLY | O_CLOEXEC) : -1;
}

int memcg_set_arm(struct memcg_set *s, const struct memcg_arm *arm)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &s->inotify_tag };
	struct by_fullness *order;

	s->arm = *arm;
	s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epoll_fd < 0)
		return -errno;
	if (s->inotify_fd >= 0)
		epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, s->inotify_fd, &ev);
	s->armer = armer_start();
	/* the fullest first: the armer takes a while for a thousand */
	order = calloc(s->n ? s->n : 1, sizeof(*order));
	if (!order)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		order[i].m = s->cg[i];
		order[i].full = s->cg[i]->v1 ? fullness(s->cg[i]) : 0;
	}
	qsort(order, s->n, sizeof(*order), cmp_fullness);
	for (size_t i = 0; i < s->n; i++) {
		v1_ctl_open(s, order[i].m);
		memcg_rearm(s, order[i].m);
	}
	free(order);
	s->arm_front = true;
	return 0;
}

static void sig_drain(struct memcg_sig *sig)
{
	eventfd_t n = 0;

	sig->count = 1;
	if (sig->kind == MEMCG_SIG_THRESHOLD || sig->kind == MEMCG_SIG_OOM)
		sig->count = eventfd_read(sig->fd, &n) ? 0 : n;
}

int memcg_set_serve(struct memcg_set *s, void (*on_sig)(struct memcg_sig *sig, void *ctx),
		    void *ctx)
{
	struct epoll_event evs[64];
	bool inotify = false;
	int n, nsig = 0;

	if (s->epoll_fd < 0)
		return 0;
	do {
		n = epoll_wait(s->epoll_fd, evs, ARRAY_SIZE(evs), 0);
		for (int i = 0; i < n; i++) {
			struct memcg_sig *sig = evs[i].data.ptr;

			if (evs[i].data.ptr == &s->inotify_tag) {
				inotify = true;
				continue;
			}
			sig_drain(sig);
			/* the handler's read and the next poll's see the
			 * counters the signal moved */
			if (sig->kind == MEMCG_SIG_OOM || sig->kind == MEMCG_SIG_EVENTS)
				sig->m->counters_due = 2;
			if (sig->count) {
				on_sig(sig, ctx);
				nsig++;
			}
		}
	} while (n == ARRAY_SIZE(evs));
	/* last: a rescan frees gone cgroups the events above may name */
	if (inotify)
		memcg_set_refresh(s);
	return nsig;
}
