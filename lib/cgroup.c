// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/perf_event.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>
#include "cgroup.h"
#include "util.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif

#define MAX_HIER 24
/* Removed cgroups stay named for the rest of the run: a line written at
 * exit names a container gone an hour before. Only a cache of more than
 * this many entries forgets the ones removed longest ago, down to three
 * quarters of it, each counted (cg_paths_evicted); live ones are never
 * forgotten (AISCOPE_TEST_CAP_CGROUP_PATHS lowers it for the tests). */
#define CACHE_MAX 32768
#define FILEID_KERNFS 0xfe	/* include/linux/exportfs.h: a kernfs node's u64 id */

struct hier {
	char mnt[PATH_MAX];
	bool v2;
	bool named;		/* v1 hierarchy without controllers (name=systemd) */
	int ssid;		/* first controller's id, -1 for v2 or unknown */
	char controllers[128];
	int handles;		/* open_by_handle_at: 0 untried, 1 works, -1 not here */
	int mnt_fd;		/* O_PATH fd of mnt while handles == 1 */
};

struct cg_entry {
	uint64_t id;		/* 0: free slot */
	bool v1;
	bool gone;		/* removed: a scan or its handle said so */
	uint64_t seen_ns;	/* last scan that found it */
	char *path;
};

static struct {
	struct hier hier[MAX_HIER];
	int nhier;
	int v2;			/* index of the v2 hierarchy, -1 none */
	int attr;		/* index of the v1 attribution hierarchy, -1 none */
	enum cg_mode mode;
	struct cg_entry *tab;
	size_t cap, used;
	uint64_t last_scan_ns;
	size_t scans;		/* walks of the hierarchies, for the tests */
	size_t max;		/* entries before removed ones are forgotten */
	size_t trim_at;		/* entries at which to try again (max, or more
				 * when the last try found too few removed) */
	uint64_t evicted;	/* removed cgroups forgotten at that cap */
	cg_clock_fn clock;	/* NULL: CLOCK_MONOTONIC */
} cg = { .v2 = -1, .attr = -1, .max = CACHE_MAX, .trim_at = CACHE_MAX };

static uint64_t cg_now(void)
{
	return cg.clock ? cg.clock() : clock_ns(CLOCK_MONOTONIC);
}

void cg_set_clock(cg_clock_fn clock)
{
	cg.clock = clock;
}

static void unescape_mount(char *s)
{
	char *r = s, *w = s;

	while (*r) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] && r[3]) {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else {
			*w++ = *r++;
		}
	}
	*w = 0;
}

static void add_hier(const char *mnt, const char *fstype, const char *opts, cg_ssid_fn ssid_of)
{
	struct hier *h;
	static const char *const known[] = {
		"cpuset", "cpu", "cpuacct", "blkio", "memory", "devices", "freezer",
		"net_cls", "perf_event", "net_prio", "hugetlb", "pids", "rdma", "misc",
	};
	char buf[256], *tok, *save;

	if (cg.nhier >= MAX_HIER)
		return;
	h = &cg.hier[cg.nhier++];
	memset(h, 0, sizeof(*h));
	snprintf(h->mnt, sizeof(h->mnt), "%s", mnt);
	h->v2 = !strcmp(fstype, "cgroup2");
	h->ssid = -1;
	if (h->v2)
		return;
	snprintf(buf, sizeof(buf), "%s", opts);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		for (size_t i = 0; i < ARRAY_SIZE(known); i++) {
			if (strcmp(tok, known[i]))
				continue;
			if (h->controllers[0])
				strncat(h->controllers, ",", sizeof(h->controllers) - strlen(h->controllers) - 1);
			strncat(h->controllers, tok, sizeof(h->controllers) - strlen(h->controllers) - 1);
			if (h->ssid < 0 && ssid_of)
				h->ssid = ssid_of(tok);
		}
	}
	h->named = !h->controllers[0];
}

static bool has_controller(const struct hier *h, const char *name)
{
	char buf[128], *tok, *save;

	snprintf(buf, sizeof(buf), "%s", h->controllers);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
		if (!strcmp(tok, name))
			return true;
	return false;
}

static void mk_start(void);
static void mk_stop(void);

int cg_init(const char *root, cg_ssid_fn ssid_of)
{
	static const char *const attr_pref[] = { "memory", "cpu", "pids", "cpuset", "blkio" };
	char path[PATH_MAX], line[8192];
	bool any_v1 = false;
	FILE *f;

	cg_cleanup();
	cg.max = cg.trim_at = aiscope_test_cap("CGROUP_PATHS", CACHE_MAX);
	snprintf(path, sizeof(path), "%s/proc/self/mountinfo", root ? root : "");
	f = fopen(path, "r");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		char *sepp = strstr(line, " - "), mnt[PATH_MAX], fstype[64], src[256], opts[1024];

		if (!sepp)
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		if (sscanf(sepp + 3, "%63s %255s %1023s", fstype, src, opts) != 3)
			continue;
		if (strcmp(fstype, "cgroup") && strcmp(fstype, "cgroup2"))
			continue;
		unescape_mount(mnt);
		if (root && *root) {
			char full[PATH_MAX];

			snprintf(full, sizeof(full), "%s%s", root, mnt);
			add_hier(full, fstype, opts, ssid_of);
		} else {
			add_hier(mnt, fstype, opts, ssid_of);
		}
	}
	fclose(f);
	for (int i = 0; i < cg.nhier; i++) {
		if (cg.hier[i].v2 && cg.v2 < 0)
			cg.v2 = i;
		if (!cg.hier[i].v2)
			any_v1 = true;
	}
	if (cg.v2 >= 0)
		cg.mode = any_v1 ? CG_MODE_HYBRID : CG_MODE_V2;
	else
		cg.mode = any_v1 ? CG_MODE_V1 : CG_MODE_NONE;
	if (cg.mode == CG_MODE_HYBRID || cg.mode == CG_MODE_V1) {
		for (size_t p = 0; p < ARRAY_SIZE(attr_pref) && cg.attr < 0; p++)
			for (int i = 0; i < cg.nhier; i++)
				if (!cg.hier[i].v2 && cg.hier[i].ssid >= 0 &&
				    has_controller(&cg.hier[i], attr_pref[p])) {
					cg.attr = i;
					break;
				}
	}
	if (!root || !*root)
		mk_start();
	return 0;
}

enum cg_mode cg_mode(void)
{
	return cg.mode;
}

const char *cg_mode_name(enum cg_mode m)
{
	switch (m) {
	case CG_MODE_V2: return "v2";
	case CG_MODE_HYBRID: return "hybrid";
	case CG_MODE_V1: return "v1";
	default: return "none";
	}
}

int cg_attr_ssid(void)
{
	return cg.attr >= 0 ? cg.hier[cg.attr].ssid : -1;
}

const char *cg_v2_mount(void)
{
	return cg.v2 >= 0 ? cg.hier[cg.v2].mnt : NULL;
}

const char *cg_v1_mount(const char *controller)
{
	for (int i = 0; i < cg.nhier; i++)
		if (!cg.hier[i].v2 && has_controller(&cg.hier[i], controller))
			return cg.hier[i].mnt;
	return NULL;
}

/* The hierarchy whose mount point is the longest prefix of path. */
static int hier_of_path(const char *path)
{
	size_t best_len = 0;
	int best = -1;

	for (int i = 0; i < cg.nhier; i++) {
		size_t n = strlen(cg.hier[i].mnt);

		if (strncmp(path, cg.hier[i].mnt, n) || (path[n] && path[n] != '/'))
			continue;
		if (n >= best_len) {
			best_len = n;
			best = i;
		}
	}
	return best;
}

int cg_target_of_dir(const char *dir, struct cg_target *t)
{
	char real[PATH_MAX];
	struct statfs sfs;
	struct stat st;
	const char *rel;
	int h;

	if (!realpath(dir, real))
		return -errno;
	if (stat(real, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (statfs(real, &sfs))
		return -errno;
	if (sfs.f_type != CGROUP2_SUPER_MAGIC && sfs.f_type != CGROUP_SUPER_MAGIC)
		return -EXDEV;
	h = hier_of_path(real);
	if (h < 0)
		return -EXDEV;
	if (cg.hier[h].named || (!cg.hier[h].v2 && cg.hier[h].ssid < 0))
		return -EOPNOTSUPP;
	rel = real + strlen(cg.hier[h].mnt);
	t->ssid = cg.hier[h].v2 ? -1 : cg.hier[h].ssid;
	t->id = st.st_ino;
	t->level = 0;
	for (const char *p = rel; *p; p++)
		if (*p == '/' && p[1])
			t->level++;
	snprintf(t->path, sizeof(t->path), "%s", *rel ? rel : "/");
	return 0;
}

/* ---- container ids in paths ---- */

static bool is_hex_n(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

/* component == prefix + 64 hex + suffix */
static bool match_id(const char *comp, size_t len, const char *prefix, const char *suffix,
		     char *id)
{
	size_t pl = strlen(prefix), sl = strlen(suffix);

	if (len != pl + CONTAINER_ID_LEN + sl)
		return false;
	if (strncmp(comp, prefix, pl) || strncmp(comp + pl + CONTAINER_ID_LEN, suffix, sl))
		return false;
	if (!is_hex_n(comp + pl, CONTAINER_ID_LEN))
		return false;
	memcpy(id, comp + pl, CONTAINER_ID_LEN);
	id[CONTAINER_ID_LEN] = 0;
	return true;
}

/* "pod<uid>" or "kubepods-<qos>-pod<uid_with_underscores>.slice" */
static bool match_pod(const char *comp, size_t len, char *uid)
{
	const char *p = NULL, *colon = memchr(comp, ':', len);
	size_t n;

	/* containerd's raw form "<pod slice>:cri-containerd:<id>" */
	if (colon)
		len = colon - comp;
	for (size_t i = 0; i + 3 <= len; i++)
		if (!strncmp(comp + i, "pod", 3) && (i == 0 || comp[i - 1] == '-'))
			p = comp + i + 3;
	if (!p)
		return false;
	n = len - (p - comp);
	if (n > 6 && !strncmp(comp + len - 6, ".slice", 6))
		n -= 6;
	if (n < 32 || n > 36)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = p[i];

		if (!(isxdigit((unsigned char)c) || c == '-' || c == '_'))
			return false;
		uid[i] = c == '_' ? '-' : (char)tolower((unsigned char)c);
	}
	uid[n] = 0;
	return true;
}

static bool match_container(const char *comp, size_t len, const char *parent, size_t plen,
			    struct container_info *ci)
{
	static const struct { const char *prefix, *suffix, *runtime; } forms[] = {
		{ "docker-", ".scope", "docker" },
		{ "cri-containerd-", ".scope", "containerd" },
		{ "nerdctl-", ".scope", "containerd" },
		{ "crio-", ".scope", "crio" },
		{ "crio-", "", "crio" },
		{ "libpod-", ".scope", "podman" },
		{ "libpod-", "", "podman" },
	};
	const char *colon;

	for (size_t i = 0; i < ARRAY_SIZE(forms); i++) {
		if (match_id(comp, len, forms[i].prefix, forms[i].suffix, ci->id)) {
			ci->runtime = forms[i].runtime;
			return true;
		}
	}
	/* containerd's raw runc form "<slice>:cri-containerd:<id>" */
	colon = memmem(comp, len, ":cri-containerd:", 16);
	if (colon && match_id(colon + 16, len - (colon + 16 - comp), "", "", ci->id)) {
		ci->runtime = "containerd";
		return true;
	}
	/* cgroupfs driver: /docker/<id>, /actions_job/<id>, /kubepods/.../pod<uid>/<id> */
	if (match_id(comp, len, "", "", ci->id)) {
		if ((plen == 6 && !strncmp(parent, "docker", 6)) ||
		    (plen == 11 && !strncmp(parent, "actions_job", 11)))
			ci->runtime = "docker";
		else
			ci->runtime = NULL;
		return true;
	}
	return false;
}

bool cg_parse_container(const char *path, struct container_info *ci)
{
	const char *comps[256];
	size_t lens[256];
	int n = 0;
	const char *p = path;

	memset(ci, 0, sizeof(*ci));
	while (p && *p && n < 256) {
		const char *end;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchr(p, '/');
		comps[n] = p;
		lens[n] = end ? (size_t)(end - p) : strlen(p);
		n++;
		p = end;
	}
	for (int i = n - 1; i >= 0 && !ci->id[0]; i--) {
		/* crun's "container" sub-cgroup and conmon scopes are not the workload */
		if ((lens[i] == 9 && !strncmp(comps[i], "container", 9)) ||
		    !strncmp(comps[i], "crio-conmon-", 12) || !strncmp(comps[i], "libpod-conmon-", 14))
			continue;
		if (match_container(comps[i], lens[i], i ? comps[i - 1] : "", i ? lens[i - 1] : 0, ci))
			break;
	}
	for (int i = n - 1; i >= 0; i--)
		if (match_pod(comps[i], lens[i], ci->pod_uid))
			break;
	return ci->id[0] != 0;
}

/* ---- id -> path cache ---- */

static size_t slot_for(uint64_t id, bool v1)
{
	uint64_t h = (id ^ (v1 ? 0x9e3779b97f4a7c15ULL : 0)) * 0x9e3779b97f4a7c15ULL;
	size_t i = h & (cg.cap - 1);

	while (cg.tab[i].id && (cg.tab[i].id != id || cg.tab[i].v1 != v1))
		i = (i + 1) & (cg.cap - 1);
	return i;
}

static void cache_put(uint64_t id, bool v1, const char *path, uint64_t now);
static void cache_trim(void);
static void cache_find_gone(void);

static int cache_grow(void)
{
	struct cg_entry *old = cg.tab;
	size_t oldcap = cg.cap;

	cg.cap = oldcap ? oldcap * 2 : 1024;
	cg.tab = calloc(cg.cap, sizeof(*cg.tab));
	if (!cg.tab) {
		cg.tab = old;
		cg.cap = oldcap;
		return -ENOMEM;
	}
	cg.used = 0;
	for (size_t i = 0; i < oldcap; i++) {
		if (!old[i].id)
			continue;
		size_t s = slot_for(old[i].id, old[i].v1);

		cg.tab[s] = old[i];
		cg.used++;
	}
	free(old);
	return 0;
}

static void cache_put(uint64_t id, bool v1, const char *path, uint64_t now)
{
	size_t s;

	if ((cg.used + 1) * 2 > cg.cap && cache_grow())
		return;
	s = slot_for(id, v1);
	if (cg.tab[s].id) {
		if (strcmp(cg.tab[s].path, path)) {
			char *p = strdup(path);

			/* out of memory: the old name stays, never a NULL path */
			if (p) {
				free(cg.tab[s].path);
				cg.tab[s].path = p;
			}
		}
		cg.tab[s].seen_ns = now;
		cg.tab[s].gone = false;
		return;
	}
	cg.tab[s].path = strdup(path);
	if (!cg.tab[s].path)
		return;
	cg.tab[s].id = id;
	cg.tab[s].v1 = v1;
	cg.tab[s].gone = false;
	cg.tab[s].seen_ns = now;
	cg.used++;
	if (cg.used > cg.trim_at)
		cache_trim();
}

static void container_found(uint64_t id, bool v1, const char *path, uint64_t now);

/* each cgroup below dir_fd into the cache; containers: only containers'
 * cgroups, each passed to mk.made */
static void scan_dir(int dir_fd, char *path, size_t plen, bool v1, uint64_t now, int depth,
		     bool containers)
{
	DIR *d;
	struct dirent *de;

	if (depth > 64)
		return;
	d = fdopendir(dir_fd);
	if (!d) {
		close(dir_fd);
		return;
	}
	while ((de = readdir(d))) {
		size_t n;
		int fd;
		struct stat st;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		n = strlen(de->d_name);
		if (plen + 1 + n >= PATH_MAX)
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st)) {
			close(fd);
			continue;
		}
		path[plen] = '/';
		memcpy(path + plen + 1, de->d_name, n + 1);
		if (!containers)
			cache_put(st.st_ino, v1, path, now);
		else
			container_found(st.st_ino, v1, path, now);
		scan_dir(fd, path, plen + 1 + n, v1, now, depth + 1, containers);
		path[plen] = 0;
	}
	closedir(d);
}

static void scan_hier(int h, bool v1, uint64_t now, bool containers)
{
	char path[PATH_MAX] = "";
	struct stat st;
	int fd = open(cg.hier[h].mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (!fstat(fd, &st) && !containers)
		cache_put(st.st_ino, v1, "/", now);
	scan_dir(fd, path, 0, v1, now, 0, containers);
}

/*
 * Deletion from the linear-probing table: the entries after the hole are
 * taken out whole and put back where their probe chain now leads, so each
 * path is owned by exactly one slot (a moved entry's old slot is zeroed,
 * path included: cg_cleanup() frees every path once).
 */
static void cache_del(size_t i)
{
	size_t mask = cg.cap - 1;

	free(cg.tab[i].path);
	memset(&cg.tab[i], 0, sizeof(cg.tab[i]));
	cg.used--;
	for (size_t j = (i + 1) & mask; cg.tab[j].id; j = (j + 1) & mask) {
		struct cg_entry e = cg.tab[j];

		memset(&cg.tab[j], 0, sizeof(cg.tab[j]));
		cg.tab[slot_for(e.id, e.v1)] = e;
	}
}

static int by_u64(const void *a, const void *b)
{
	return cmp_u64(*(const uint64_t *)a, *(const uint64_t *)b);
}

/* Over the cap: the removed cgroups last seen longest ago are forgotten
 * until three quarters of it are left (or no removed one is), each counted;
 * a cache of more live ones than that tries again a quarter of the cap
 * later, not at each new entry. A deletion can move a later entry into
 * slot i, so slot i is looked at again. */
static void cache_trim(void)
{
	size_t ngone = 0, want, n = 0;
	uint64_t *seen, cut;

	cache_find_gone();
	cg.trim_at = cg.used + cg.max / 4;
	for (size_t i = 0; i < cg.cap; i++)
		ngone += cg.tab[i].id && cg.tab[i].gone;
	want = cg.used - cg.max * 3 / 4;
	if (!ngone || !(seen = malloc(ngone * sizeof(*seen))))
		return;
	for (size_t i = 0; i < cg.cap; i++)
		if (cg.tab[i].id && cg.tab[i].gone)
			seen[n++] = cg.tab[i].seen_ns;
	qsort(seen, n, sizeof(*seen), by_u64);
	cut = seen[(want < n ? want : n) - 1];
	free(seen);
	for (size_t i = 0; i < cg.cap;) {
		if (cg.tab[i].id && cg.tab[i].gone && cg.tab[i].seen_ns <= cut) {
			cache_del(i);
			cg.evicted++;
		} else {
			i++;
		}
	}
	cg.trim_at = cg.used + cg.max / 4 > cg.max ? cg.used + cg.max / 4 : cg.max;
}

/* after a whole walk: what it did not find is gone */
static void cache_mark_gone(uint64_t now)
{
	for (size_t i = 0; i < cg.cap; i++)
		if (cg.tab[i].id && cg.tab[i].seen_ns != now)
			cg.tab[i].gone = true;
}

static void rescan(void)
{
	uint64_t now = cg_now();

	cg.last_scan_ns = now;
	cg.scans++;
	if (cg.v2 >= 0)
		scan_hier(cg.v2, false, now, false);
	if (cg.attr >= 0)
		scan_hier(cg.attr, true, now, false);
	cache_mark_gone(now);
}

/*
 * One cgroup's path from its id, without walking the hierarchy: cgroupfs is
 * kernfs, whose file handles carry the node's 64-bit id, the id BPF reports
 * (bpf_get_current_cgroup_id) and the directory's inode number, so
 * open_by_handle_at() opens the directory at once and /proc/self/fd names
 * it. A walk of a host with 1000 memory cgroups is ~2000 getdents64 and
 * 1000 opens; this is three syscalls. It needs CAP_DAC_READ_SEARCH and a
 * real cgroupfs (the tests' fake trees are plain directories): where the
 * first try fails with anything but ESTALE, the hierarchy is walked as
 * before, for the rest of the run.
 * Returns 0 with path set, -ESTALE for an id that is gone, -ENOTSUP to walk.
 */
static int path_by_handle(struct hier *h, uint64_t id, char *path, size_t len)
{
	struct {
		struct file_handle fh;
		uint64_t id;
	} fh = { .fh = { .handle_bytes = sizeof(uint64_t), .handle_type = FILEID_KERNFS } };
	char link[64], full[PATH_MAX];
	size_t mlen = strlen(h->mnt);
	ssize_t n;
	int fd, err;

	if (h->handles < 0)
		return -ENOTSUP;
	if (!h->handles) {
		struct statfs sf;

		/* an O_PATH fd is no mount_fd for open_by_handle_at (EBADF) */
		h->mnt_fd = open(h->mnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (h->mnt_fd < 0 || fstatfs(h->mnt_fd, &sf) ||
		    (sf.f_type != CGROUP2_SUPER_MAGIC && sf.f_type != CGROUP_SUPER_MAGIC))
			goto unusable;
	}
	memcpy(fh.fh.f_handle, &id, sizeof(id));
	fd = open_by_handle_at(h->mnt_fd, &fh.fh, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		if (err == -ESTALE && h->handles)
			return err;
		goto unusable;
	}
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, full, sizeof(full) - 1);
	close(fd);
	if (n < 0)
		goto unusable;
	full[n] = 0;
	/* a directory of this mount, named from this mount namespace */
	if ((size_t)n < mlen || memcmp(full, h->mnt, mlen) || (full[mlen] && full[mlen] != '/'))
		goto unusable;
	snprintf(path, len, "%s", full[mlen] ? full + mlen : "/");
	h->handles = 1;
	return 0;
unusable:
	if (h->mnt_fd > 0)
		close(h->mnt_fd);
	h->mnt_fd = -1;
	h->handles = -1;
	return -ENOTSUP;
}

static struct hier *hier_of_ids(bool v1)
{
	int i = v1 ? cg.attr : cg.v2;

	return i >= 0 ? &cg.hier[i] : NULL;
}

/*
 * Which cached cgroups are gone, where ids open by file handle (no walks:
 * rescan() marks them otherwise): asked only when the cache is over its
 * cap, never on a lookup. Gone ones stay named; cgroup ids are not reused,
 * so one found gone is not asked for again.
 */
static void cache_find_gone(void)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < cg.cap; i++) {
		struct cg_entry *e = &cg.tab[i];
		struct hier *h = e->id && !e->gone ? hier_of_ids(e->v1) : NULL;

		if (h && h->handles > 0 && path_by_handle(h, e->id, path, sizeof(path)) == -ESTALE)
			e->gone = true;
	}
}

/* ---- cgroups made while a tool runs: the cgroup/cgroup_mkdir tracepoint ----
 *
 * A container that starts and ends within one interval has its cgroup gone
 * before the interval's lines ask for its path. A perf event on the
 * tracepoint (one per CPU, no BPF) records every cgroup made, with its id,
 * hierarchy and path; the records are read into the cache on a miss, so
 * that a removed cgroup the tool never saw alive still has its path (and so
 * its container). Silently absent where perf events or tracefs are not. */

#define MK_PAGES 16		/* data pages per CPU */

static struct {
	int n;
	int fd[1024];
	void *base[1024];
	size_t page, size;
	int v1_hier;		/* /proc/cgroups hierarchy of the attribution controller */
	uint64_t lost;
	int ep;			/* epoll set of fd[]: readable once a cgroup is made */
	void (*made)(const struct container_info *ci, uint64_t id, bool v1);
} mk = { .v1_hier = -1, .ep = -1 };

static int mk_tp_id(void)
{
	static const char *const dirs[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char path[256];
	FILE *f;
	int id = -1;

	for (size_t i = 0; i < ARRAY_SIZE(dirs) && id < 0; i++) {
		snprintf(path, sizeof(path), "%s/events/cgroup/cgroup_mkdir/id", dirs[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%d", &id) != 1)
			id = -1;
		fclose(f);
	}
	return id;
}

static int mk_v1_hier(void)
{
	char line[256], first[64], name[64];
	int hier, n;
	FILE *f;

	if (cg.attr < 0)
		return -1;
	n = sscanf(cg.hier[cg.attr].controllers, "%63[^,]", first);
	if (n != 1 || !(f = fopen("/proc/cgroups", "r")))
		return -1;
	hier = -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "%63s %d", name, &n) == 2 && !strcmp(name, first)) {
			hier = n;
			break;
		}
	fclose(f);
	return hier;
}

static void mk_start(void)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_TRACEPOINT,
		.size = sizeof(a),
		.sample_type = PERF_SAMPLE_RAW,
		.sample_period = 1,
		/* a wakeup per record: a container's names are read while
		 * it runs (cg_watch_fd) */
		.wakeup_events = 1,
	};
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	int id = mk_tp_id();

	if (id < 0 || ncpu <= 0)
		return;
	a.config = (uint64_t)id;
	mk.page = (size_t)sysconf(_SC_PAGESIZE);
	mk.size = mk.page * (1 + MK_PAGES);
	mk.v1_hier = mk_v1_hier();
	mk.ep = epoll_create1(EPOLL_CLOEXEC);
	for (long cpu = 0; cpu < ncpu && mk.n < (int)ARRAY_SIZE(mk.fd); cpu++) {
		int fd = (int)syscall(SYS_perf_event_open, &a, -1, (int)cpu, -1, PERF_FLAG_FD_CLOEXEC);
		void *b;

		if (fd < 0)
			continue;	/* an offline CPU, or no permission */
		b = mmap(NULL, mk.size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (b == MAP_FAILED) {
			close(fd);
			continue;
		}
		mk.fd[mk.n] = fd;
		mk.base[mk.n] = b;
		mk.n++;
		if (mk.ep >= 0) {
			struct epoll_event ev = { .events = EPOLLIN };

			epoll_ctl(mk.ep, EPOLL_CTL_ADD, fd, &ev);
		}
	}
}

static void mk_stop(void)
{
	for (int i = 0; i < mk.n; i++) {
		munmap(mk.base[i], mk.size);
		close(mk.fd[i]);
	}
	mk.n = 0;
	mk.lost = 0;
	mk.v1_hier = -1;
	if (mk.ep >= 0)
		close(mk.ep);
	mk.ep = -1;
}

/* one raw record of cgroup_mkdir: root, level, id, __data_loc path */
static void mk_record(const unsigned char *raw, uint32_t len, uint64_t now)
{
	int32_t root;
	uint64_t id;
	uint32_t loc, off, plen;
	char path[PATH_MAX];

	if (len < 28)
		return;
	memcpy(&root, raw + 8, 4);
	memcpy(&id, raw + 16, 8);
	memcpy(&loc, raw + 24, 4);
	off = loc & 0xffff;
	plen = loc >> 16;
	if (!id || !plen || off + plen > len || plen >= sizeof(path))
		return;
	memcpy(path, raw + off, plen);
	path[plen] = 0;
	bool v1 = root > 0;

	if (root == 0 && cg.v2 >= 0)
		cache_put(id, false, path, now);
	else if (root > 0 && root == mk.v1_hier)
		cache_put(id, true, path, now);
	else
		return;
	if (mk.made) {
		struct container_info ci;

		if (cg_parse_container(path, &ci))
			mk.made(&ci, id, v1);
	}
}

static void mk_drain(uint64_t now)
{
	for (int i = 0; i < mk.n; i++) {
		struct perf_event_mmap_page *h = mk.base[i];
		unsigned char *data = (unsigned char *)mk.base[i] + mk.page;
		uint64_t size = mk.size - mk.page;
		uint64_t head = __atomic_load_n(&h->data_head, __ATOMIC_ACQUIRE);
		uint64_t tail = h->data_tail;

		while (tail < head) {
			unsigned char rec[PATH_MAX + 256];
			struct perf_event_header eh;
			uint64_t o = tail % size;

			for (size_t k = 0; k < sizeof(eh); k++)
				((unsigned char *)&eh)[k] = data[(o + k) % size];
			if (eh.size < sizeof(eh) || eh.size > head - tail)
				break;
			if (eh.size <= sizeof(rec)) {
				for (size_t k = 0; k < eh.size; k++)
					rec[k] = data[(o + k) % size];
				if (eh.type == PERF_RECORD_SAMPLE && eh.size >= sizeof(eh) + 4) {
					uint32_t rlen;

					memcpy(&rlen, rec + sizeof(eh), 4);
					if (sizeof(eh) + 4 + rlen <= eh.size)
						mk_record(rec + sizeof(eh) + 4, rlen, now);
				} else if (eh.type == PERF_RECORD_LOST && eh.size >= sizeof(eh) + 16) {
					uint64_t lost;

					memcpy(&lost, rec + sizeof(eh) + 8, 8);
					mk.lost += lost;
				}
			}
			tail += eh.size;
		}
		__atomic_store_n(&h->data_tail, tail, __ATOMIC_RELEASE);
	}
}

static void container_found(uint64_t id, bool v1, const char *path, uint64_t now)
{
	struct container_info ci;

	if (!cg_parse_container(path, &ci))
		return;
	cache_put(id, v1, path, now);
	if (mk.made)
		mk.made(&ci, id, v1);
}

/*
 * The containers that run as a tool starts: the cgroup_mkdir watcher never
 * saw them made, so their cgroups (and names, through mk.made) are taken
 * from one walk, for one that ends before its first line (its cgroup's
 * handle is stale by then). Only containers' cgroups are kept.
 */
void cg_watch_existing(void)
{
	uint64_t now = cg_now();

	if (cg.v2 >= 0)
		scan_hier(cg.v2, false, now, true);
	if (cg.attr >= 0)
		scan_hier(cg.attr, true, now, true);
}

size_t cg_watch_cpus(void)
{
	return (size_t)mk.n;
}

uint64_t cg_watch_lost(void)
{
	return mk.lost;
}

int cg_watch_fd(void)
{
	return mk.n ? mk.ep : -1;
}

void cg_watch_on_made(void (*made)(const struct container_info *ci, uint64_t id, bool v1))
{
	mk.made = made;
}

void cg_watch_drain(void)
{
	struct epoll_event evs[64];

	if (!mk.n)
		return;
	/* empties the set's ready list; every CPU's buffer is read below */
	while (mk.ep >= 0 && epoll_wait(mk.ep, evs, 64, 0) == 64)
		;
	mk_drain(cg_now());
}

const char *cg_path_of(uint64_t id, bool v1)
{
	char path[PATH_MAX];
	struct hier *h = hier_of_ids(v1);
	uint64_t now;
	size_t s;
	int err;

	if (!id)
		return NULL;
	if (!cg.cap && cache_grow())
		return NULL;
	now = cg_now();
	s = slot_for(id, v1);
	if (cg.tab[s].id)
		return cg.tab[s].path;
	if (mk.n) {
		/* made while we run, perhaps gone already */
		mk_drain(now);
		s = slot_for(id, v1);
		if (cg.tab[s].id)
			return cg.tab[s].path;
	}
	err = h ? path_by_handle(h, id, path, sizeof(path)) : -ENOTSUP;
	if (!err) {
		cache_put(id, v1, path, now);
		s = slot_for(id, v1);
		return cg.tab[s].id ? cg.tab[s].path : NULL;
	}
	if (err == -ESTALE)
		return NULL;	/* gone before it was first asked for */
	if (now - cg.last_scan_ns < NSEC_PER_SEC && cg.last_scan_ns)
		return NULL;
	rescan();
	s = slot_for(id, v1);
	return cg.tab[s].id ? cg.tab[s].path : NULL;
}

/* the cgroup of hierarchy h in a /proc/PID/cgroup file, as an id */
static bool proc_cgroup_id(const char *file, int h, uint64_t *id, unsigned int *level)
{
	char line[PATH_MAX + 256], dir[2 * PATH_MAX];
	const char *want = cg.hier[h].v2 ? "" : cg.hier[h].controllers;
	bool found = false;
	struct stat st;
	FILE *f = fopen(file, "r");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *ctrl = strchr(line, ':'), *path = ctrl ? strchr(ctrl + 1, ':') : NULL;

		if (!path)
			continue;
		*ctrl = 0;	/* line: the hierarchy's number, ctrl + 1: its controllers */
		*path++ = 0;
		path[strcspn(path, "\n")] = 0;
		if (strcmp(ctrl + 1, want) || (cg.hier[h].v2 && strcmp(line, "0")))
			continue;
		found = true;
		*level = 0;
		for (const char *p = path; *p; p++)
			if (*p == '/' && p[1])
				(*level)++;
		snprintf(dir, sizeof(dir), "%s%s", cg.hier[h].mnt, path);
		if (stat(dir, &st))
			found = false;
		else
			*id = st.st_ino;
	}
	fclose(f);
	return found;
}

bool cg_of_pid(uint32_t pid, uint64_t *id, bool *v1)
{
	char file[64];
	unsigned int level = 0;

	snprintf(file, sizeof(file), "/proc/%u/cgroup", pid);
	/* as the BPF side names a task: v2, unless that is the root where an
	 * attribution controller says more */
	if (cg.v2 >= 0 && proc_cgroup_id(file, cg.v2, id, &level) && (level || cg.attr < 0)) {
		*v1 = false;
		return true;
	}
	if (cg.attr >= 0 && proc_cgroup_id(file, cg.attr, id, &level)) {
		*v1 = true;
		return true;
	}
	return false;
}

size_t cg_scan_count(void)
{
	return cg.scans;
}

/* ---- --container ---- */

struct find_ctx {
	const char *prefix;
	size_t plen;
	char full[CONTAINER_ID_LEN + 1];
	char dir[PATH_MAX];
	int hier_pref;		/* rank of the hierarchy where dir was found */
	int matches;		/* distinct ids */
};

static void find_in(const char *dir, int rank, struct find_ctx *fc, int depth)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	if (!d || depth > 32) {
		if (d)
			closedir(d);
		return;
	}
	while ((de = readdir(d))) {
		char sub[PATH_MAX];
		struct container_info ci;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= (int)sizeof(sub))
			continue;
		if (cg_parse_container(de->d_name, &ci) &&
		    !strncmp(ci.id, fc->prefix, fc->plen)) {
			if (!fc->matches) {
				fc->matches = 1;
				memcpy(fc->full, ci.id, sizeof(fc->full));
				snprintf(fc->dir, sizeof(fc->dir), "%s", sub);
				fc->hier_pref = rank;
			} else if (strcmp(fc->full, ci.id)) {
				fc->matches++;
			} else if (rank < fc->hier_pref) {
				snprintf(fc->dir, sizeof(fc->dir), "%s", sub);
				fc->hier_pref = rank;
			}
			continue;
		}
		find_in(sub, rank, fc, depth + 1);
	}
	closedir(d);
}

bool cg_container_prefix_ok(const char *prefix)
{
	size_t n = strlen(prefix);

	return n >= 4 && n <= CONTAINER_ID_LEN && is_hex_n(prefix, n);
}

int cg_find_container(const char *prefix, char *dir, size_t len, char *full_id)
{
	struct find_ctx fc = { .prefix = prefix, .hier_pref = 1 << 30 };
	size_t n = strlen(prefix);

	if (!cg_container_prefix_ok(prefix))
		return -EINVAL;
	fc.plen = n;
	/* v2 first: where it holds the container, filtering there is exact */
	if (cg.v2 >= 0)
		find_in(cg.hier[cg.v2].mnt, 0, &fc, 0);
	if (cg.attr >= 0)
		find_in(cg.hier[cg.attr].mnt, 1, &fc, 0);
	for (int i = 0; i < cg.nhier; i++)
		if (i != cg.v2 && i != cg.attr && !cg.hier[i].named && cg.hier[i].ssid >= 0)
			find_in(cg.hier[i].mnt, 2, &fc, 0);
	if (!fc.matches)
		return -ENOENT;
	if (fc.matches > 1)
		return -EEXIST;
	snprintf(dir, len, "%s", fc.dir);
	memcpy(full_id, fc.full, CONTAINER_ID_LEN + 1);
	return 0;
}

void cg_cleanup(void)
{
	cg_clock_fn clock = cg.clock;

	mk_stop();
	for (int i = 0; i < cg.nhier; i++)
		if (cg.hier[i].handles > 0)
			close(cg.hier[i].mnt_fd);
	for (size_t i = 0; i < cg.cap; i++)
		if (cg.tab[i].id)
			free(cg.tab[i].path);
	free(cg.tab);
	memset(&cg, 0, sizeof(cg));
	cg.v2 = -1;
	cg.attr = -1;
	cg.max = cg.trim_at = CACHE_MAX;
	cg.clock = clock;
}

size_t cg_cache_size(void)
{
	return cg.used;
}

uint64_t cg_paths_evicted(void)
{
	return cg.evicted;
}

void cg_set_cache_max(size_t max)
{
	cg.max = cg.trim_at = max;
}
