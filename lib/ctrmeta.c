// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Container names from the runtimes' on-disk state (ctrmeta.h). */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "ctrmeta.h"
#include "jsonp.h"
#include "util.h"

#define MAX_FILE (64u << 20)	/* a state file larger than this is not read */
#define RETRY_NS 1000000000ULL
#define NBUCKET 1024
/* a container just made: its state read again after 10 ms, doubling to
 * 100 ms, for 5 s (runc writes state.json once its init runs; podman's
 * containers.json is there before its cgroup) */
#define EARLY_FIRST_NS 10000000ULL
#define EARLY_MAX_NS 100000000ULL
#define EARLY_FOR_NS 5000000000ULL

struct entry {
	char id[129];
	uint64_t miss_at;	/* !meta.found: when it was looked up */
	struct ctr_meta meta;
	struct entry *next;	/* bucket chain */
	bool used;
};

static struct {
	char root[4096];
	uint64_t (*clock)(void);
	struct entry *ring;	/* CTRMETA_CAP entries, replaced oldest first */
	size_t next, count;
	struct entry *bucket[NBUCKET];
	uint64_t evicted, reads;
	const char *labels[CTRMETA_LABELS];	/* ctrmeta_set_labels' keys */
	size_t nlabels;
	struct ctr_meta scratch;
	struct waiting {	/* ctrmeta_expect's ids not found yet */
		char id[129];
		const char *runtime;
		uint64_t next_ns, until_ns, delay_ns;
		int wd;		/* its runc state directory's watch, or -1 */
	} wait[CTRMETA_WAITING];
	size_t nwait;
	int inotify_fd;		/* when inotify_open */
	bool inotify_open;
	size_t nwatch;		/* watches whose IN_IGNORED is not read yet */
	uint64_t wait_dropped;
	const char *warned[16];	/* the kinds of state file warned about */
} cm;

static const char *const containerd_states[] = {
	"/run/containerd/io.containerd.runtime.v2.task",
	"/run/k3s/containerd/io.containerd.runtime.v2.task",
	"/var/run/docker/containerd/io.containerd.runtime.v2.task",
};

uint64_t ctrmeta_now(void)
{
	struct timespec ts;

	if (cm.clock)
		return cm.clock();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

void ctrmeta_set_clock(uint64_t (*clock)(void))
{
	cm.clock = clock;
}

static void unwait(size_t i)
{
	if (cm.wait[i].wd >= 0)
		inotify_rm_watch(cm.inotify_fd, cm.wait[i].wd);
	cm.wait[i] = cm.wait[--cm.nwait];
}

void ctrmeta_cleanup(void)
{
	free(cm.ring);
	cm.ring = NULL;
	memset(cm.bucket, 0, sizeof(cm.bucket));
	cm.next = cm.count = 0;
	cm.evicted = cm.reads = 0;
	while (cm.nwait)
		unwait(0);
	cm.wait_dropped = 0;
	memset(cm.warned, 0, sizeof(cm.warned));
}

void ctrmeta_set_labels(const char *const *keys, size_t n)
{
	ctrmeta_cleanup();
	cm.nlabels = n < CTRMETA_LABELS ? n : CTRMETA_LABELS;
	for (size_t i = 0; i < cm.nlabels; i++)
		cm.labels[i] = keys[i];
}

void ctrmeta_set_root(const char *root)
{
	ctrmeta_cleanup();
	snprintf(cm.root, sizeof(cm.root), "%s", root ? root : "");
}

size_t ctrmeta_cache_size(void)
{
	return cm.count;
}

uint64_t ctrmeta_evicted(void)
{
	return cm.evicted;
}

uint64_t ctrmeta_reads(void)
{
	return cm.reads;
}

uint64_t ctrmeta_expect_dropped(void)
{
	return cm.wait_dropped;
}

size_t ctrmeta_waiting(void)
{
	return cm.nwait;
}

/* ---- files ---- */

/* A runtime's state that exists but cannot be read (permissions, a file
 * too big or not a file, bad JSON) leaves its containers with ids only:
 * said once per kind of file (fmt), not per container. */
/* once per kind of state file (its format string) and run */
static void warn_once(const char *fmt, const char *path, const char *why)
{
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cm.warned) && cm.warned[i]; i++)
		if (cm.warned[i] == fmt)
			return;
	if (i < ARRAY_SIZE(cm.warned))
		cm.warned[i] = fmt;
	fprintf(stderr, "%s: cannot read %s: %s; its containers are shown by id only\n",
		program_invocation_short_name, path, why);
}

/* fmt's file (with a and b) under the root */
static void state_path(char path[8192], const char *fmt, const char *a, const char *b)
{
	size_t n = (size_t)snprintf(path, 8192, "%s", cm.root);

	snprintf(path + n, 8192 - n, fmt, a, b);
}

static char *read_file(const char *fmt, const char *a, const char *b, size_t *len)
{
	char path[8192];
	struct stat st;
	char *buf;
	ssize_t n;
	size_t got = 0;
	int fd;

	state_path(path, fmt, a, b);
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		/* absent: not this runtime's container, or not yet */
		if (errno != ENOENT && errno != ENOTDIR)
			warn_once(fmt, path, strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > MAX_FILE) {
		warn_once(fmt, path, "not a regular file of at most 64 MiB");
		close(fd);
		return NULL;
	}
	buf = malloc((size_t)st.st_size + 1);
	while (buf && got < (size_t)st.st_size &&
	       (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	if (!buf)
		return NULL;
	buf[got] = 0;
	*len = got;
	return buf;
}

static int parse_file(struct jp *p, const struct jv **v, const char *fmt, const char *a,
		      const char *b)
{
	size_t len;
	char *text = read_file(fmt, a, b, &len);
	char path[8192];
	int err;

	if (!text)
		return -ENOENT;
	err = jp_parse(p, text, len, v);
	/* the tree's strings live in the arena, not in text */
	free(text);
	if (err) {
		state_path(path, fmt, a, b);
		warn_once(fmt, path, "not valid JSON");
	}
	return err;
}

static bool id_ok(const char *id)
{
	size_t n = strlen(id);

	if (!n || n > 128 || !strcmp(id, ".") || !strcmp(id, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if (id[i] == '/' || (unsigned char)id[i] < 0x20)
			return false;
	return true;
}

static void put(char *dst, size_t len, const char *s)
{
	if (s && *s && !*dst)
		snprintf(dst, len, "%s", s);
}
#define PUT(field, s) put(m->field, sizeof(m->field), (s))

/* one annotation (or label) key=value */
static void k8s_key(struct ctr_meta *m, const char *k, const char *v, size_t klen)
{
	for (size_t i = 0; i < cm.nlabels; i++)
		if (strlen(cm.labels[i]) == klen && !strncmp(cm.labels[i], k, klen))
			put(m->labels[i], sizeof(m->labels[i]), v);
	static const struct { const char *key; size_t off, len; } map[] = {
#define F(key, f) { key, offsetof(struct ctr_meta, f), sizeof(((struct ctr_meta *)0)->f) }
		F("io.kubernetes.cri.container-name", k8s_container),
		F("io.kubernetes.cri.sandbox-name", pod_name),
		F("io.kubernetes.cri.sandbox-namespace", pod_namespace),
		F("io.kubernetes.cri.image-name", image),
		F("io.kubernetes.container.name", k8s_container),
		F("io.kubernetes.pod.name", pod_name),
		F("io.kubernetes.pod.namespace", pod_namespace),
		F("io.kubernetes.cri-o.ImageName", image),
		F("io.kubernetes.cri-o.Name", name),
		F("nerdctl/name", name),
#undef F
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strlen(map[i].key) == klen && !strncmp(map[i].key, k, klen))
			put((char *)m + map[i].off, map[i].len, v);
}

static void annotations(struct ctr_meta *m, const struct jv *obj)
{
	if (!obj || obj->type != JV_OBJ)
		return;
	for (const struct jv *c = obj->child; c; c = c->next) {
		if (c->type != JV_STR)
			continue;
		k8s_key(m, c->key, c->s, strlen(c->key));
		/* CRI-O keeps kubelet's labels as one JSON object in a string */
		if (!strcmp(c->key, "io.kubernetes.cri-o.Labels")) {
			struct jp q;
			const struct jv *l;

			jp_init(&q);
			if (!jp_parse(&q, c->s, c->len, &l))
				annotations(m, l);
			jp_free(&q);
		}
	}
}

/* ---- runtimes ---- */

#define STORAGE "/var/lib/containers/storage/overlay-containers"

/* storage's record of a container: its names and image */
static void storage_names(const struct jv *c, struct ctr_meta *m)
{
	const struct jv *names = jv_get(c, "names");
	const char *s = jv_str(jv_get(c, "metadata"));
	const struct jv *md;
	struct jp q;

	if (names && names->type == JV_ARR)
		PUT(name, jv_str(names->child));
	if (!s)
		return;
	/* metadata is a JSON object in a string */
	jp_init(&q);
	if (!jp_parse(&q, s, strlen(s), &md)) {
		PUT(name, jv_str(jv_get(md, "name")));
		PUT(image, jv_str(jv_get(md, "image-name")));
	}
	jp_free(&q);
}

/* id's entry in storage's containers.json; false when it has none */
static bool storage_record(const char *id, struct ctr_meta *m)
{
	const struct jv *v, *c = NULL;
	struct jp p;

	jp_init(&p);
	if (!parse_file(&p, &v, STORAGE "/containers.json", "", "") && v->type == JV_ARR)
		for (c = v->child; c; c = c->next)
			if (jv_str(jv_get(c, "id")) && !strcmp(jv_str(jv_get(c, "id")), id))
				break;
	if (c)
		storage_names(c, m);
	jp_free(&p);
	return c != NULL;
}

/*
 * CRI-O keeps its containers in podman's containers/storage layout; the
 * spec says which made one. Each names itself in io.container.manager
 * (CRI-O "cri-o" since 1.16, podman "libpod" since 1.6, both in 2019).
 * Without it, keys only CRI-O writes: podman writes CRI-O's SandboxID on
 * pod containers, and up to 4.3 its ContainerType and TTY, not these.
 */
static bool made_by_crio(const struct jv *ann)
{
	static const char *const own[] = {
		"io.kubernetes.cri-o.Name", "io.kubernetes.cri-o.SandboxName",
		"io.kubernetes.cri-o.ImageName", "io.kubernetes.cri-o.Labels",
		"io.kubernetes.cri-o.Metadata",
	};
	const char *manager = jv_str(jv_get(ann, "io.container.manager"));

	if (manager)
		return !strcmp(manager, "cri-o");
	for (size_t i = 0; i < ARRAY_SIZE(own); i++)
		if (jv_get(ann, own[i]))
			return true;
	return false;
}

/*
 * podman's and CRI-O's containers. CRI-O's spec goes first: storage's
 * image-name is the image as kubelet asked for it (often by id), the
 * spec's io.kubernetes.cri-o.ImageName its name. podman's record goes
 * first: the rest of its spec's annotations are --annotation's.
 */
static bool storage_meta(const char *id, struct ctr_meta *m)
{
	const struct jv *spec, *ann = NULL;
	bool has_spec, crio, found;
	struct jp p;

	jp_init(&p);
	has_spec = !parse_file(&p, &spec, STORAGE "/%s/userdata/config.json%s", id, "");
	if (has_spec)
		ann = jv_get(spec, "annotations");
	crio = made_by_crio(ann);
	if (crio)
		annotations(m, ann);
	found = storage_record(id, m) || has_spec;
	if (!crio)
		annotations(m, ann);
	jp_free(&p);
	if (found)
		m->runtime = crio ? "crio" : "podman";
	return found;
}

static bool docker_meta(const char *id, struct ctr_meta *m)
{
	struct jp p;
	const struct jv *v;
	bool found = false;

	jp_init(&p);
	if (!parse_file(&p, &v, "/var/lib/docker/containers/%s/config.v2.json%s", id, "")) {
		const char *n = jv_str(jv_get(v, "Name"));

		found = true;
		m->runtime = "docker";
		PUT(name, n && *n == '/' ? n + 1 : n);
		annotations(m, jv_get(jv_get(v, "Config"), "Labels"));
		PUT(image, jv_str(jv_get(jv_get(v, "Config"), "Image")));
	}
	jp_free(&p);
	return found;
}

/* cb(NSDIR, ctx) for each containerd namespace directory (NSDIR under
 * cm.root, as parse_file and scan_dir take it) of every state root, until
 * cb returns true; true when one did */
static bool containerd_ns_foreach(bool (*cb)(const char *nsdir, void *ctx), void *ctx)
{
	char path[4096], nsdir[4096];
	bool stop = false;

	for (size_t r = 0; r < sizeof(containerd_states) / sizeof(containerd_states[0]) && !stop; r++) {
		struct dirent *de;
		DIR *d;

		snprintf(path, sizeof(path), "%s%s", cm.root, containerd_states[r]);
		d = opendir(path);
		if (!d)
			continue;
		while (!stop && (de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(nsdir, sizeof(nsdir), "%.200s/%.128s", containerd_states[r], de->d_name);
			stop = cb(nsdir, ctx);
		}
		closedir(d);
	}
	return stop;
}

struct containerd_find {
	const char *id;
	struct ctr_meta *m;
};

static bool containerd_bundle(const char *nsdir, void *ctx)
{
	struct containerd_find *c = ctx;
	struct jp p;
	const struct jv *v;
	bool found = false;

	jp_init(&p);
	if (!parse_file(&p, &v, "%s/%s/config.json", nsdir, c->id)) {
		found = true;
		c->m->runtime = "containerd";
		annotations(c->m, jv_get(v, "annotations"));
	}
	jp_free(&p);
	return found;
}

static bool containerd_meta(const char *id, struct ctr_meta *m)
{
	struct containerd_find c = { id, m };

	return containerd_ns_foreach(containerd_bundle, &c);
}

static bool runc_meta(const char *id, struct ctr_meta *m)
{
	struct jp p;
	const struct jv *v, *labels;
	bool found = false;

	jp_init(&p);
	if (!parse_file(&p, &v, "/run/runc/%s/state.json%s", id, "")) {
		found = true;
		m->runtime = "runc";
		PUT(name, jv_str(jv_get(v, "id")));
		labels = jv_get(jv_get(v, "config"), "labels");
		for (const struct jv *l = labels ? labels->child : NULL; l; l = l->next) {
			const char *s = jv_str(l), *eq = s ? strchr(s, '=') : NULL;

			if (eq)
				k8s_key(m, s, eq + 1, (size_t)(eq - s));
		}
	}
	jp_free(&p);
	return found;
}

static void resolve(const char *id, const char *runtime, struct ctr_meta *m)
{
	typedef bool (*fn)(const char *, struct ctr_meta *);
	static const struct { const char *runtime; fn f; } rt[] = {
		{ "podman", storage_meta }, { "containerd", containerd_meta },
		{ "docker", docker_meta }, { "runc", runc_meta },
	};

	memset(m, 0, sizeof(*m));
	cm.reads++;
	/* the runtime the cgroup named first, then the others (a cgroupfs
	 * driver path names none; crio's state is podman's layout) */
	for (size_t i = 0; i < sizeof(rt) / sizeof(rt[0]); i++)
		if (runtime && !strcmp(runtime, rt[i].runtime) && rt[i].f(id, m))
			break;
	for (size_t i = 0; i < sizeof(rt) / sizeof(rt[0]) && !m->found; i++) {
		if (runtime && !strcmp(runtime, rt[i].runtime))
			continue;
		if (rt[i].f(id, m))
			break;
	}
	if (m->runtime)
		m->found = true;
}

/* ---- cache ---- */

static size_t hash(const char *s)
{
	uint64_t h = 1469598103934665603ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
	return h % NBUCKET;
}

static void unlink_entry(struct entry *e)
{
	struct entry **pp = &cm.bucket[hash(e->id)];

	while (*pp && *pp != e)
		pp = &(*pp)->next;
	if (*pp)
		*pp = e->next;
	e->used = false;
	cm.count--;
}

static struct entry *find_entry(const char *id)
{
	struct entry *e;

	for (e = cm.bucket[hash(id)]; e; e = e->next)
		if (!strcmp(e->id, id))
			return e;
	return NULL;
}

/* id's entry, read now when new or when force (or its miss is a second
 * old); NULL when there is no cache (read into cm.scratch) */
static struct entry *lookup_entry(const char *id, const char *runtime, bool force)
{
	struct entry *e = find_entry(id);
	size_t h;

	if (e) {
		if (!e->meta.found && (force || ctrmeta_now() - e->miss_at >= RETRY_NS)) {
			resolve(id, runtime, &e->meta);
			e->miss_at = ctrmeta_now();
		}
		return e;
	}
	if (!cm.ring) {
		cm.ring = calloc(CTRMETA_CAP, sizeof(*cm.ring));
		if (!cm.ring) {
			resolve(id, runtime, &cm.scratch);
			return NULL;
		}
	}
	e = &cm.ring[cm.next];
	cm.next = (cm.next + 1) % CTRMETA_CAP;
	if (e->used) {
		unlink_entry(e);
		cm.evicted++;
	}
	h = hash(id);
	snprintf(e->id, sizeof(e->id), "%s", id);
	resolve(id, runtime, &e->meta);
	e->miss_at = ctrmeta_now();
	e->used = true;
	e->next = cm.bucket[h];
	cm.bucket[h] = e;
	cm.count++;
	return e;
}

const struct ctr_meta *ctrmeta_lookup(const char *id, const char *runtime)
{
	struct entry *e;

	if (!id || !id_ok(id)) {
		memset(&cm.scratch, 0, sizeof(cm.scratch));
		return &cm.scratch;
	}
	e = lookup_entry(id, runtime, false);
	return e ? &e->meta : &cm.scratch;
}

/* ---- containers just made ---- */

static bool found_now(const char *id, const char *runtime)
{
	struct entry *e = lookup_entry(id, runtime, true);

	return e ? e->meta.found : cm.scratch.found;
}

int ctrmeta_watch_fd(void)
{
	if (!cm.inotify_open) {
		cm.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
		cm.inotify_open = true;
	}
	return cm.inotify_fd;
}

/*
 * runc alone makes /run/runc/ID before the cgroup and state.json in it
 * after (its rename, 40 ms later here), and removes both a few ms after
 * the container's process ends: too short for a timer, so its rename
 * wakes ctrmeta_poll through ctrmeta_watch_fd.
 */
static int watch_runc(const char *id)
{
	char path[8192];
	int wd;

	if (ctrmeta_watch_fd() < 0)
		return -1;
	snprintf(path, sizeof(path), "%s/run/runc/%s", cm.root, id);
	wd = inotify_add_watch(cm.inotify_fd, path, IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR);
	if (wd >= 0)
		cm.nwatch++;
	return wd;
}

/* the waiting ids whose state directory changed are due now */
static void read_watches(uint64_t now)
{
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	ssize_t n;

	/* no syscall per wakeup of the loop while nothing is watched */
	if (!cm.nwatch)
		return;
	while ((n = read(cm.inotify_fd, buf, sizeof(buf))) > 0) {
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const void *)p;

			if ((ev->mask & IN_IGNORED) && cm.nwatch)
				cm.nwatch--;	/* removed, or its directory was */
			for (size_t i = 0; i < cm.nwait; i++)
				if (cm.wait[i].wd == ev->wd)
					cm.wait[i].next_ns = now;
			p += sizeof(*ev) + ev->len;
		}
	}
}

void ctrmeta_expect(const char *id, const char *runtime)
{
	struct entry *e;
	struct waiting *w;
	uint64_t now;

	if (!id || !id_ok(id))
		return;
	e = find_entry(id);
	if (e && e->meta.found)
		return;
	for (size_t i = 0; i < cm.nwait; i++)
		if (!strcmp(cm.wait[i].id, id))
			return;
	if (found_now(id, runtime))
		return;
	if (cm.nwait == CTRMETA_WAITING) {
		cm.wait_dropped++;
		return;
	}
	now = ctrmeta_now();
	w = &cm.wait[cm.nwait++];
	snprintf(w->id, sizeof(w->id), "%s", id);
	w->runtime = runtime;
	w->delay_ns = EARLY_FIRST_NS;
	w->next_ns = now + w->delay_ns;
	w->until_ns = now + EARLY_FOR_NS;
	w->wd = watch_runc(id);
	if (w->wd >= 0 && !runtime)
		w->runtime = "runc";
}

int ctrmeta_poll(void)
{
	uint64_t now = ctrmeta_now(), next = UINT64_MAX;

	read_watches(now);
	for (size_t i = 0; i < cm.nwait;) {
		struct waiting *w = &cm.wait[i];

		if (now < w->next_ns) {
			next = w->next_ns < next ? w->next_ns : next;
			i++;
			continue;
		}
		if (found_now(w->id, w->runtime) || now >= w->until_ns) {
			unwait(i);
			continue;
		}
		w->delay_ns = w->delay_ns * 2 < EARLY_MAX_NS ? w->delay_ns * 2 : EARLY_MAX_NS;
		w->next_ns = now + w->delay_ns;
		next = w->next_ns < next ? w->next_ns : next;
		i++;
	}
	if (next == UINT64_MAX)
		return -1;
	/* rounded up: a wakeup before it is due would read nothing */
	return (int)((next - now + 999999) / 1000000);
}

/* ---- by name ---- */

struct find {
	const char *name;
	const char *ns;		/* pods: the namespace, NULL any */
	bool pod;		/* match pod names, keep every id */
	char id[129];
	int matches;
	char (*ids)[129];	/* pods: the ids found */
	size_t max;
};

static void found_id(struct find *f, const char *id)
{
	if (f->matches && !strcmp(f->id, id))
		return;
	if (!f->matches)
		snprintf(f->id, sizeof(f->id), "%.128s", id);
	f->matches++;
}

static void check_id(struct find *f, const char *id, const char *runtime)
{
	const struct ctr_meta *m = ctrmeta_lookup(id, runtime);

	if (f->pod) {
		if (m->found && (!f->name || !strcmp(m->pod_name, f->name)) &&
		    (!f->ns || !strcmp(m->pod_namespace, f->ns))) {
			if ((size_t)f->matches < f->max)
				snprintf(f->ids[f->matches], sizeof(f->ids[0]), "%.128s", id);
			f->matches++;
		}
		return;
	}
	if (!strcmp(id, f->name) || (m->found && (!strcmp(m->name, f->name) ||
						  !strcmp(m->k8s_container, f->name))))
		found_id(f, id);
}

static void scan_dir(struct find *f, const char *dir, const char *runtime)
{
	char path[4096];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s%s", cm.root, dir);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d)))
		if (de->d_name[0] != '.' && id_ok(de->d_name) && strcmp(de->d_name, "containers.json") &&
		    strcmp(de->d_name, "containers.lock"))
			check_id(f, de->d_name, runtime);
	closedir(d);
}

static void scan_all(struct find *f);

int ctrmeta_find_name(const char *name, char *id, size_t len)
{
	struct find f = { .name = name };

	if (!name || !*name)
		return -EINVAL;
	scan_all(&f);
	if (!f.matches)
		return -ENOENT;
	if (f.matches > 1)
		return -EEXIST;
	snprintf(id, len, "%s", f.id);
	return 0;
}

int ctrmeta_find_pod(const char *pod, const char *ns, char (*ids)[129], size_t max)
{
	struct find f = { .name = pod, .ns = ns, .pod = true, .ids = ids, .max = max };

	if ((!pod || !*pod) && (!ns || !*ns))
		return -EINVAL;
	f.name = pod && *pod ? pod : NULL;
	f.ns = ns && *ns ? ns : NULL;
	scan_all(&f);
	return f.matches;
}

static bool scan_containerd_ns(const char *nsdir, void *ctx)
{
	scan_dir(ctx, nsdir, "containerd");
	return false;
}

static void scan_all(struct find *f)
{
	scan_dir(f, STORAGE, "podman");
	scan_dir(f, "/var/lib/docker/containers", "docker");
	scan_dir(f, "/run/runc", "runc");
	containerd_ns_foreach(scan_containerd_ns, f);
}
