// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <libelf.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include <bpf/libbpf.h>
#include "kfeatures.h"
#include "uprobe.h"
#include "uprobe_discover.h"
#include "util.h"

/* ---- ELF symbols ---- */

struct esym {
	const char *name;
	const char *ver;	/* NULL: unversioned */
	uint64_t value, size;
	bool hidden;		/* a non-default version (name@VER) */
};

struct elf_seg {
	uint64_t vaddr, memsz, off, filesz;
};

struct elf_syms {
	int fd;
	Elf *elf;
	bool native;
	struct esym *syms;	/* sorted by value */
	int n, cap;
	struct esym **by_name;	/* sorted by name */
	struct elf_seg *segs;
	int nsegs;
	size_t bytes;		/* what it holds: see elf_syms_bytes */
};

#if defined(__x86_64__)
#define NATIVE_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define NATIVE_MACHINE EM_AARCH64
#else
#define NATIVE_MACHINE EM_NONE
#endif

/* The array arr of n elements of size bytes with room for one more (its
 * capacity *cap doubles, from first): arr, maybe moved, or NULL (out of
 * memory; arr and *cap unchanged) */
static void *room(void *arr, int n, int *cap, int first, size_t size)
{
	int want = *cap ? *cap * 2 : first;
	void *p;

	if (n < *cap)
		return arr;
	p = realloc(arr, (size_t)want * size);
	if (p)
		*cap = want;
	return p;
}

static int push_sym(struct elf_syms *s, const struct esym *e)
{
	struct esym *syms = room(s->syms, s->n, &s->cap, 256, sizeof(*syms));

	if (!syms)
		return -ENOMEM;
	s->syms = syms;
	s->syms[s->n++] = *e;
	return 0;
}

/* Version names of .gnu.version_d, indexed by version index. */
static int read_verdefs(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, const char **names, int max)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t off = 0;
	GElf_Verdef vd;
	GElf_Verdaux va;

	if (!d)
		return -EINVAL;
	for (size_t i = 0; i < sh->sh_info; i++) {
		if (!gelf_getverdef(d, off, &vd))
			break;
		if (gelf_getverdaux(d, off + vd.vd_aux, &va) && vd.vd_ndx < max)
			names[vd.vd_ndx] = elf_strptr(elf, sh->sh_link, va.vda_name);
		if (!vd.vd_next)
			break;
		off += vd.vd_next;
	}
	return 0;
}

static bool is_func(const GElf_Sym *sym)
{
	int t = GELF_ST_TYPE(sym->st_info);

	return (t == STT_FUNC || t == STT_GNU_IFUNC) && sym->st_shndx != SHN_UNDEF;
}

static int read_symtab(struct elf_syms *s, Elf_Scn *scn, GElf_Shdr *sh, Elf_Data *versym,
		       const char **vernames, int nver)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t count = sh->sh_entsize ? sh->sh_size / sh->sh_entsize : 0;
	GElf_Sym sym;
	GElf_Versym vs;

	if (!d)
		return 0;
	for (size_t i = 1; i < count; i++) {
		struct esym e = { 0 };

		if (!gelf_getsym(d, i, &sym) || !is_func(&sym))
			continue;
		e.name = elf_strptr(s->elf, sh->sh_link, sym.st_name);
		if (!e.name || !*e.name)
			continue;
		e.value = sym.st_value;
		e.size = sym.st_size;
		if (versym && gelf_getversym(versym, i, &vs)) {
			int idx = vs & 0x7fff;

			e.hidden = vs & 0x8000;
			if (idx > 1 && idx < nver)
				e.ver = vernames[idx];
		}
		if (push_sym(s, &e))
			return -ENOMEM;
	}
	return 0;
}

static int cmp_value(const void *a, const void *b)
{
	const struct esym *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	/* the sized one first, so that lookups by offset find it */
	return x->size > y->size ? -1 : x->size < y->size;
}

static int cmp_name(const void *a, const void *b)
{
	const struct esym *x = *(struct esym *const *)a, *y = *(struct esym *const *)b;

	return strcmp(x->name, y->name);
}

static int read_segments(struct elf_syms *s)
{
	size_t n;
	GElf_Phdr ph;

	if (elf_getphdrnum(s->elf, &n))
		return -EINVAL;
	s->segs = calloc(n ? n : 1, sizeof(*s->segs));
	if (!s->segs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!gelf_getphdr(s->elf, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		s->segs[s->nsegs++] = (struct elf_seg){ ph.p_vaddr, ph.p_memsz, ph.p_offset,
							ph.p_filesz };
	}
	return 0;
}

static int read_all_syms(struct elf_syms *s)
{
	Elf_Scn *scn = NULL, *dynsym = NULL, *symtab = NULL, *verdef = NULL, *versym = NULL;
	GElf_Shdr sh, dsh = { 0 }, ssh = { 0 }, vsh = { 0 };
	const char *vernames[256] = { 0 };
	int err;

	while ((scn = elf_nextscn(s->elf, scn))) {
		if (!gelf_getshdr(scn, &sh))
			continue;
		switch (sh.sh_type) {
		case SHT_DYNSYM: dynsym = scn; dsh = sh; break;
		case SHT_SYMTAB: symtab = scn; ssh = sh; break;
		case SHT_GNU_verdef: verdef = scn; vsh = sh; break;
		case SHT_GNU_versym: versym = scn; break;
		}
	}
	/* the symbol and string tables are read whole through the mapping:
	 * resident as long as s is */
	for (int i = 0; i < 2; i++) {
		GElf_Shdr *h = i ? &ssh : &dsh, str;
		Elf_Scn *t = (i ? symtab : dynsym) ? elf_getscn(s->elf, h->sh_link) : NULL;

		if (!(i ? symtab : dynsym))
			continue;
		s->bytes += h->sh_size;
		if (t && gelf_getshdr(t, &str))
			s->bytes += str.sh_size;
	}
	if (verdef)
		read_verdefs(s->elf, verdef, &vsh, vernames, 256);
	if (dynsym) {
		err = read_symtab(s, dynsym, &dsh, versym ? elf_getdata(versym, NULL) : NULL,
				  vernames, 256);
		if (err)
			return err;
	}
	if (symtab) {
		err = read_symtab(s, symtab, &ssh, NULL, NULL, 0);
		if (err)
			return err;
	}
	sort_array(s->syms, s->n, sizeof(*s->syms), cmp_value);
	s->by_name = malloc((s->n ? s->n : 1) * sizeof(*s->by_name));
	if (!s->by_name)
		return -ENOMEM;
	for (int i = 0; i < s->n; i++)
		s->by_name[i] = &s->syms[i];
	sort_array(s->by_name, s->n, sizeof(*s->by_name), cmp_name);
	s->bytes += (size_t)s->cap * sizeof(*s->syms) + (size_t)s->n * sizeof(*s->by_name);
	return 0;
}

struct elf_syms *elf_syms_open(const char *path)
{
	struct elf_syms *s;
	GElf_Ehdr eh;
	int err;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		errno = EINVAL;
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0) {
		err = errno;
		free(s);
		errno = err;
		return NULL;
	}
	s->elf = elf_begin(s->fd, ELF_C_READ_MMAP, NULL);
	if (!s->elf || elf_kind(s->elf) != ELF_K_ELF || !gelf_getehdr(s->elf, &eh)) {
		elf_syms_free(s);
		errno = ENOEXEC;
		return NULL;
	}
	s->native = eh.e_machine == NATIVE_MACHINE;
	err = read_segments(s);
	if (!err)
		err = read_all_syms(s);
	if (err) {
		elf_syms_free(s);
		errno = -err;
		return NULL;
	}
	return s;
}

void elf_syms_free(struct elf_syms *s)
{
	if (!s)
		return;
	if (s->elf)
		elf_end(s->elf);
	if (s->fd >= 0)
		close(s->fd);
	free(s->syms);
	free(s->by_name);
	free(s->segs);
	free(s);
}

size_t elf_syms_bytes(const struct elf_syms *s)
{
	return s ? s->bytes : 0;
}

int elf_syms_count(const struct elf_syms *s)
{
	return s->n;
}

bool elf_syms_native(const struct elf_syms *s)
{
	return s->native;
}

int elf_syms_vaddr_to_off(const struct elf_syms *s, uint64_t vaddr, uint64_t *off)
{
	for (int i = 0; i < s->nsegs; i++) {
		const struct elf_seg *g = &s->segs[i];

		if (vaddr >= g->vaddr && vaddr < g->vaddr + g->filesz) {
			*off = vaddr - g->vaddr + g->off;
			return 0;
		}
	}
	return -ERANGE;
}

int elf_syms_off_to_vaddr(const struct elf_syms *s, uint64_t off, uint64_t *vaddr)
{
	for (int i = 0; i < s->nsegs; i++) {
		const struct elf_seg *g = &s->segs[i];

		if (off >= g->off && off < g->off + g->filesz) {
			*vaddr = off - g->off + g->vaddr;
			return 0;
		}
	}
	return -ERANGE;
}

static bool has_any_prefix(const char *name, const char *const *prefixes)
{
	for (; *prefixes; prefixes++)
		if (!strncmp(name, *prefixes, strlen(*prefixes)))
			return true;
	return false;
}

int elf_syms_span(const struct elf_syms *s, const char *const *prefixes, int max_gap,
		  uint64_t *lo, uint64_t *hi)
{
	int best = 0, count = 0, gap = 0, first = -1, last = -1, bfirst = -1, blast = -1;

	for (int i = 0; i < s->n; i++) {
		if (!has_any_prefix(s->syms[i].name, prefixes)) {
			if (first >= 0 && ++gap > max_gap) {
				first = -1;
				count = 0;
			}
			continue;
		}
		if (first < 0)
			first = i;
		last = i;
		gap = 0;
		if (++count > best) {
			best = count;
			bfirst = first;
			blast = last;
		}
	}
	if (!best || elf_syms_vaddr_to_off(s, s->syms[bfirst].value, lo) ||
	    elf_syms_vaddr_to_off(s, s->syms[blast].value, hi))
		return -ENOENT;
	*hi += s->syms[blast].size ? s->syms[blast].size : 1;
	return best;
}

/* The first by_name index whose name equals name, or -1. */
static int first_named(const struct elf_syms *s, const char *name, size_t len)
{
	int lo = 0, hi = s->n;

	while (lo < hi) {
		int mid = (lo + hi) / 2;
		int c = strncmp(s->by_name[mid]->name, name, len);

		if (c == 0 && s->by_name[mid]->name[len])
			c = 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < s->n && !strncmp(s->by_name[lo]->name, name, len) && !s->by_name[lo]->name[len])
		return lo;
	return -1;
}

static const struct esym *find_sym(const struct elf_syms *s, const char *name)
{
	const char *at = strchr(name, '@');
	size_t len = at ? (size_t)(at - name) : strlen(name);
	const char *ver = at ? at + 1 + (at[1] == '@') : NULL;
	const struct esym *best = NULL;
	int i = first_named(s, name, len);

	for (; i >= 0 && i < s->n; i++) {
		const struct esym *e = s->by_name[i];

		if (strncmp(e->name, name, len) || e->name[len])
			break;
		if (ver) {
			if (e->ver && !strcmp(e->ver, ver))
				return e;
			continue;
		}
		/* a plain name: the default version wins over hidden ones */
		if (!best || (best->hidden && !e->hidden))
			best = e;
	}
	return best;
}

int elf_syms_offset(const struct elf_syms *s, const char *name, uint64_t *off)
{
	const struct esym *e = find_sym(s, name);

	if (!e)
		return -ENOENT;
	return elf_syms_vaddr_to_off(s, e->value, off);
}

bool elf_syms_has(const struct elf_syms *s, const char *name)
{
	return find_sym(s, name) != NULL;
}

const char *elf_syms_at(const struct elf_syms *s, uint64_t off, uint64_t *delta)
{
	uint64_t v;
	int lo = 0, hi = s->n;

	if (elf_syms_off_to_vaddr(s, off, &v))
		return NULL;
	/* the last symbol starting at or below v */
	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (s->syms[mid].value <= v)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* nested or overlapping symbols: walk back while one could cover v */
	for (int i = lo - 1; i >= 0 && i >= lo - 64; i--) {
		const struct esym *e = &s->syms[i];

		if (v == e->value || v < e->value + e->size) {
			/* the first of equal values is the sized one */
			while (i > 0 && s->syms[i - 1].value == e->value)
				e = &s->syms[--i];
			if (delta)
				*delta = v - e->value;
			return e->name;
		}
	}
	return NULL;
}

/* ---- process mappings ---- */

int proc_maps_foreach(pid_t pid, int (*cb)(const struct proc_map *m, void *ctx), void *ctx)
{
	char fn[64], line[4096 + 256];
	FILE *f;
	int ret = 0;

	snprintf(fn, sizeof(fn), "/proc/%d/maps", (int)pid);
	f = fopen(fn, "re");
	if (!f)
		return -errno;
	while (!ret && fgets(line, sizeof(line), f)) {
		struct proc_map m = { 0 };
		unsigned int maj, min;
		unsigned long long start, end, pgoff, ino;
		char perms[8];
		int pos = 0;
		size_t l;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %llu %n", &start, &end, perms, &pgoff,
			   &maj, &min, &ino, &pos) < 7 || !ino)
			continue;
		l = strlen(line);
		if (l && line[l - 1] == '\n')
			line[l - 1] = 0;
		m.start = start;
		m.end = end;
		m.pgoff = pgoff;
		m.dev = makedev(maj, min);
		m.ino = ino;
		m.exec = perms[2] == 'x';
		m.path = pos ? line + pos : "";
		ret = cb(&m, ctx);
	}
	fclose(f);
	return ret;
}

int proc_pids_foreach(int (*cb)(pid_t pid, void *ctx), void *ctx)
{
	DIR *d = opendir("/proc");
	struct dirent *de;
	int ret = 0;

	if (!d)
		return -errno;
	while (!ret && (de = readdir(d))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		ret = cb((pid_t)pid, ctx);
	}
	closedir(d);
	return ret;
}

void proc_map_file(pid_t pid, const struct proc_map *m, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, (int)pid, m->start, m->end);
}

const char *uprobe_basename(const char *path, char *buf, size_t len)
{
	const char *b = strrchr(path, '/');
	size_t n;

	b = b ? b + 1 : path;
	snprintf(buf, len, "%s", b);
	n = strlen(buf);
	if (n > 10 && !strcmp(buf + n - 10, " (deleted)"))
		buf[n - 10] = 0;
	return buf;
}

/* ---- uprobe bookkeeping ---- */

struct uprobe_lib *uprobe_set_find(struct uprobe_set *set, uint64_t dev, uint64_t ino)
{
	for (int i = 0; i < set->n; i++)
		if (set->libs[i]->dev == dev && set->libs[i]->ino == ino)
			return set->libs[i];
	return NULL;
}

struct uprobe_lib *uprobe_set_add(struct uprobe_set *set, const char *open_path,
				  const char *path, int kind, bool *created)
{
	struct uprobe_lib *lib;
	struct stat st;

	*created = false;
	if (strlen(open_path) >= sizeof(lib->open_path)) {
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (stat(open_path, &st))
		return NULL;
	lib = uprobe_set_find(set, st.st_dev, st.st_ino);
	if (lib) {
		lib->seen = set->gen;
		return lib;
	}
	if (set->max_libs && set->n >= set->max_libs) {
		errno = ENOSPC;
		return NULL;
	}
	if (set->n == set->cap) {
		int cap = set->cap ? set->cap * 2 : 8;
		struct uprobe_lib **n = realloc(set->libs, cap * sizeof(*n));

		if (!n)
			return NULL;
		set->libs = n;
		set->cap = cap;
	}
	lib = calloc(1, sizeof(*lib));
	if (!lib)
		return NULL;
	lib->syms = elf_syms_open(open_path);
	if (!lib->syms) {
		int err = errno;

		free(lib);
		errno = err;
		return NULL;
	}
	lib->dev = st.st_dev;
	lib->ino = st.st_ino;
	/* what maps will show, until a scan says otherwise (overlayfs) */
	lib->map_dev = makedev(major(st.st_dev), minor(st.st_dev));
	lib->map_ino = st.st_ino;
	lib->kind = kind;
	lib->seen = set->gen;
	snprintf(lib->path, sizeof(lib->path), "%s", path);
	snprintf(lib->open_path, sizeof(lib->open_path), "%s", open_path);
	set->libs[set->n++] = lib;
	*created = true;
	return lib;
}

static bool prog_is_multi(const struct bpf_program *prog)
{
	return bpf_program__expected_attach_type(prog) == BPF_TRACE_UPROBE_MULTI;
}

bool uprobe_prog_multi(struct bpf_program *prog)
{
	if (!feat_uprobe_multi())
		return false;
	return !bpf_program__set_expected_attach_type(prog, BPF_TRACE_UPROBE_MULTI);
}

bool uprobe_obj_multi(struct bpf_object *obj)
{
	struct bpf_program *prog;
	bool any = false;

	if (!feat_uprobe_multi())
		return false;
	bpf_object__for_each_program(prog, obj) {
		const char *sec = bpf_program__section_name(prog);

		if (strncmp(sec, "uprobe", 6) && strncmp(sec, "uretprobe", 9))
			continue;
		any |= uprobe_prog_multi(prog);
	}
	return any;
}

const char *uprobe_link_kind(void)
{
	return feat_uprobe_multi() ? "uprobe_multi link" : "single uprobes";
}

static int push_link(struct uprobe_lib *lib, struct bpf_link *link)
{
	struct bpf_link **links = room(lib->links, lib->nlinks, &lib->cap, 16, sizeof(*links));

	if (!links) {
		bpf_link__destroy(link);
		return -ENOMEM;
	}
	lib->links = links;
	lib->links[lib->nlinks++] = link;
	return 0;
}

/* link, an attach's result, kept in lib with the probes it holds */
static int keep_link(struct uprobe_lib *lib, struct bpf_link *link, int probes)
{
	long err = libbpf_get_error(link);

	if (err)
		return (int)err;
	err = push_link(lib, link);
	if (err)
		return (int)err;
	lib->attached += probes;
	return 0;
}

static int note_pending(struct uprobe_lib *lib, struct bpf_program *prog, uint64_t off,
			bool retprobe, pid_t pid, uint64_t cookie)
{
	struct uprobe_pending *pending = room(lib->pending, lib->npending, &lib->pending_cap, 32,
					      sizeof(*pending));

	if (!pending)
		return -ENOMEM;
	lib->pending = pending;
	lib->pending[lib->npending++] = (struct uprobe_pending){
		.prog = prog, .off = off, .cookie = cookie, .pid = pid, .retprobe = retprobe,
	};
	return 0;
}

static bool same_link(const struct uprobe_pending *a, const struct uprobe_pending *b)
{
	return a->prog == b->prog && a->retprobe == b->retprobe && a->pid == b->pid;
}

/* One uprobe_multi link for the n notes from first on that share its
 * program, direction and pid (marked done by a NULL prog). */
static int flush_one(struct uprobe_lib *lib, int first, unsigned long *offs, __u64 *cookies,
		     int *n)
{
	struct uprobe_pending key = lib->pending[first];
	struct bpf_link *link;

	*n = 0;
	for (int i = first; i < lib->npending; i++) {
		if (!lib->pending[i].prog || !same_link(&lib->pending[i], &key))
			continue;
		offs[*n] = lib->pending[i].off;
		cookies[*n] = lib->pending[i].cookie;
		(*n)++;
		lib->pending[i].prog = NULL;
	}
	LIBBPF_OPTS(bpf_uprobe_multi_opts, opts, .offsets = offs, .cookies = cookies,
		    .cnt = *n, .retprobe = key.retprobe);
	link = bpf_program__attach_uprobe_multi(key.prog, key.pid, lib->open_path, NULL, &opts);
	return keep_link(lib, link, *n);
}

int uprobe_lib_flush(struct uprobe_lib *lib, int *err)
{
	unsigned long *offs;
	__u64 *cookies;
	int failed = 0;

	*err = 0;
	if (!lib->npending)
		return 0;
	offs = calloc(lib->npending, sizeof(*offs));
	cookies = calloc(lib->npending, sizeof(*cookies));
	if (!offs || !cookies) {
		failed = lib->npending;
		*err = -ENOMEM;
	}
	/* a link that fails does not keep the others from attaching */
	for (int i = 0; offs && cookies && i < lib->npending; i++) {
		int n, e;

		if (!lib->pending[i].prog)
			continue;
		e = flush_one(lib, i, offs, cookies, &n);
		if (!e)
			continue;
		failed += n;
		if (!*err)
			*err = e;
	}
	free(offs);
	free(cookies);
	lib->npending = 0;
	return failed;
}

int uprobe_lib_attach_cookie(struct uprobe_lib *lib, struct bpf_program *prog, uint64_t off,
			     bool retprobe, pid_t pid, uint64_t cookie)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe, .bpf_cookie = cookie);
	struct bpf_link *link;

	if (prog_is_multi(prog))
		return note_pending(lib, prog, off, retprobe, pid, cookie);
	link = bpf_program__attach_uprobe_opts(prog, pid, lib->open_path, off, &opts);
	return keep_link(lib, link, 1);
}

int uprobe_lib_attach_off(struct uprobe_lib *lib, struct bpf_program *prog, uint64_t off,
			  bool retprobe, pid_t pid)
{
	return uprobe_lib_attach_cookie(lib, prog, off, retprobe, pid, 0);
}

int uprobe_lib_attach(struct uprobe_lib *lib, struct bpf_program *prog, const char *sym,
		      bool retprobe, pid_t pid)
{
	uint64_t off;
	int err = elf_syms_offset(lib->syms, sym, &off);

	if (err) {
		lib->missing++;
		return err;
	}
	return uprobe_lib_attach_off(lib, prog, off, retprobe, pid);
}

void uprobe_set_begin_scan(struct uprobe_set *set)
{
	set->gen++;
}

/*
 * Detaching a uprobe waits for the kernel to be sure no CPU still runs
 * its handler (a grace period, about 0.1 s here), one link after the
 * other: a tool with 80 probes would take 8 s to exit. The links are
 * destroyed from several threads at once, whose waits overlap.
 */
#define DETACH_THREADS 16

struct detach_job {
	struct bpf_link **links;
	int n;
};

static void *detach_thread(void *arg)
{
	struct detach_job *j = arg;

	for (int i = 0; i < j->n; i++)
		bpf_link__destroy(j->links[i]);
	return NULL;
}

static void links_destroy(struct bpf_link **links, int n)
{
	struct detach_job jobs[DETACH_THREADS];
	pthread_t tids[DETACH_THREADS];
	bool started[DETACH_THREADS] = { false };
	int nt = n < DETACH_THREADS ? n : DETACH_THREADS, per, at = 0;

	if (n <= 1) {
		for (int i = 0; i < n; i++)
			bpf_link__destroy(links[i]);
		return;
	}
	per = (n + nt - 1) / nt;
	for (int t = 0; t < nt && at < n; t++) {
		jobs[t] = (struct detach_job){ links + at, at + per <= n ? per : n - at };
		at += jobs[t].n;
		started[t] = !pthread_create(&tids[t], NULL, detach_thread, &jobs[t]);
		if (!started[t])
			detach_thread(&jobs[t]);	/* no thread: do it here */
	}
	for (int t = 0; t < nt; t++)
		if (started[t])
			pthread_join(tids[t], NULL);
}

void uprobe_lib_drop_syms(struct uprobe_lib *lib)
{
	elf_syms_free(lib->syms);
	lib->syms = NULL;
}

static void lib_free(struct uprobe_lib *lib, bool links_done)
{
	if (!links_done)
		links_destroy(lib->links, lib->nlinks);
	free(lib->links);
	free(lib->pending);
	elf_syms_free(lib->syms);
	free(lib);
}

int uprobe_set_prune(struct uprobe_set *set)
{
	int kept = 0, removed = 0;

	for (int i = 0; i < set->n; i++) {
		struct uprobe_lib *lib = set->libs[i];

		if (lib->seen == set->gen || lib->pinned) {
			set->libs[kept++] = lib;
			continue;
		}
		if (set->release)
			set->release(lib, set->release_ctx);
		lib_free(lib, false);
		removed++;
	}
	set->n = kept;
	/* a library's symbols and links are many small blocks among those of
	 * the libraries still kept: glibc keeps the freed pages unless asked,
	 * and under library churn the heap's RSS crept up by what was freed */
	if (removed)
		malloc_trim(0);
	return removed;
}

void uprobe_set_free(struct uprobe_set *set)
{
	struct bpf_link **all = NULL;
	int n = 0, cap = 0;

	/* every library's links at once */
	for (int i = 0; i < set->n; i++)
		cap += set->libs[i]->nlinks;
	all = cap ? malloc(cap * sizeof(*all)) : NULL;
	for (int i = 0; all && i < set->n; i++)
		for (int j = 0; j < set->libs[i]->nlinks; j++)
			all[n++] = set->libs[i]->links[j];
	if (all)
		links_destroy(all, n);
	free(all);
	for (int i = 0; i < set->n; i++) {
		if (set->release)
			set->release(set->libs[i], set->release_ctx);
		lib_free(set->libs[i], all != NULL || !cap);
	}
	free(set->libs);
	set->libs = NULL;
	set->n = set->cap = 0;
}

struct ldso_ctx {
	char *buf;
	size_t len;
	bool found;
};

static int ldso_cb(const struct proc_map *m, void *ctx)
{
	struct ldso_ctx *c = ctx;
	char base[64];

	uprobe_basename(m->path, base, sizeof(base));
	if (strncmp(base, "ld-linux", 8) && strncmp(base, "ld-musl", 7))
		return 0;
	snprintf(c->buf, c->len, "%s", m->path);
	c->found = true;
	return 1;
}

int uprobe_ldso_path(pid_t pid, char *buf, size_t len)
{
	struct ldso_ctx c = { buf, len, false };
	int err = proc_maps_foreach(pid, ldso_cb, &c);

	if (err < 0)
		return err;
	return c.found ? 0 : -ENOENT;
}

/* ---- discovery ---- */

static struct uprobe_lib *set_find_map(struct uprobe_set *set, uint64_t dev, uint64_t ino)
{
	for (int i = 0; i < set->n; i++)
		if (set->libs[i]->map_dev == dev && set->libs[i]->map_ino == ino)
			return set->libs[i];
	return NULL;
}

static bool is_ldso(const struct proc_map *m)
{
	char base[64];

	/* ld-linux-x86-64.so.2, ld-linux-aarch64.so.1, ld-musl-x86_64.so.1;
	 * not /etc/ld.so.cache, which ld.so maps too */
	uprobe_basename(m->path, base, sizeof(base));
	return !strncmp(base, "ld-linux", 8) || !strncmp(base, "ld-musl", 7);
}

struct scan_ctx {
	struct uprobe_scanner *s;
	pid_t pid;
	uint64_t last_dev, last_ino;
	uint64_t exe_dev, exe_ino;	/* of /proc/PID/exe, as maps shows them */
	struct uprobe_lib *last_lib;
	bool looked_up;		/* last_lib is the set's answer for last_dev/ino */
};

static void scan_new(struct uprobe_scanner *s, struct uprobe_lib *lib)
{
	int err;

	if (lib->kind == UPROBE_KIND_LDSO) {
		if (uprobe_lib_attach(lib, s->dlopen_prog, "_dl_debug_state", false, -1) ||
		    uprobe_lib_flush(lib, &err))
			s->failed++;
		return;
	}
	if (s->attach)
		s->attach(lib, s->ctx);
}

static struct uprobe_lib *scan_lookup(struct scan_ctx *c, const struct proc_map *m)
{
	struct uprobe_scanner *s = c->s;
	struct uprobe_lib *lib = set_find_map(s->set, m->dev, m->ino);
	char open_path[64];
	bool created;
	int kind;

	if (lib)
		return lib;
	if (s->dlopen_prog && is_ldso(m)) {
		kind = UPROBE_KIND_LDSO;
	} else {
		struct proc_map mm = *m;

		mm.main_exe = m->dev == c->exe_dev && m->ino == c->exe_ino;
		kind = s->classify(&mm, s->ctx);
	}
	if (kind < 0)
		return NULL;
	proc_map_file(c->pid, m, open_path, sizeof(open_path));
	lib = uprobe_set_add(s->set, open_path, m->path, kind, &created);
	if (!lib) {
		/* a process that exited meanwhile is no failure */
		if (errno != ENOENT)
			s->failed++;
		return NULL;
	}
	lib->map_dev = m->dev;
	lib->map_ino = m->ino;
	if (created)
		scan_new(s, lib);
	return lib;
}

/*
 * A file counts as used by a process only where the process maps it for
 * execution: that is the code a uprobe fires in. A read-only mapping is
 * data: another aiscope tool reading the file's symbols (elf_syms_open
 * mmaps it), which would otherwise keep the library in every tool's set
 * after its last user exited (two tools kept each other's files for ever).
 */
static int scan_cb(const struct proc_map *m, void *ctx)
{
	struct scan_ctx *c = ctx;
	struct uprobe_scanner *s = c->s;

	/* a file is mapped several times in a row (r--p, r-xp, ...): it is
	 * looked up once, and added at its first executable mapping */
	if (m->dev != c->last_dev || m->ino != c->last_ino) {
		c->last_dev = m->dev;
		c->last_ino = m->ino;
		c->last_lib = set_find_map(s->set, m->dev, m->ino);
		c->looked_up = c->last_lib != NULL;
	}
	if (!c->looked_up && m->exec) {
		c->looked_up = true;
		c->last_lib = scan_lookup(c, m);
	}
	if (c->last_lib && m->exec)
		c->last_lib->seen = s->set->gen;
	if (c->last_lib && s->on_map)
		s->on_map(c->pid, m, c->last_lib, s->ctx);
	return 0;
}

int uprobe_scan_pid(struct uprobe_scanner *s, pid_t pid)
{
	struct scan_ctx c = { .s = s, .pid = pid };
	char exe[64];
	struct stat st;
	int err;

	/* maps shows the device numbers of the file's own superblock, which
	 * stat() of the exe link gives too */
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
	if (!stat(exe, &st)) {
		c.exe_dev = makedev(major(st.st_dev), minor(st.st_dev));
		c.exe_ino = st.st_ino;
	}
	if (s->scan_begin)
		s->scan_begin(pid, s->ctx);
	err = proc_maps_foreach(pid, scan_cb, &c);
	if (s->scan_end)
		s->scan_end(pid, err < 0 ? err : 0, s->ctx);

	s->scans++;
	return err < 0 ? err : 0;
}

/*
 * A full scan leaves this process out: it maps every file of the set
 * itself (elf_syms_open reads the symbols through mmap), so its maps would
 * show each library still mapped and none would ever be pruned: every CUDA
 * or NCCL library that processes loaded and then went away was kept, with
 * its links, fd and symbols, for the whole run (about 0.3 MiB each).
 */
static int scan_all_cb(pid_t pid, void *ctx)
{
	if (pid != getpid())
		uprobe_scan_pid(ctx, pid);
	return 0;
}

bool uprobe_rescan_due(const struct uprobe_scanner *s, uint64_t now)
{
	return s->rescan_ns && now - s->last_full_mono >= s->rescan_ns;
}

int uprobe_scan_all(struct uprobe_scanner *s, const uint32_t *pids, int npids)
{
	s->last_full_mono = clock_ns(CLOCK_MONOTONIC);
	uprobe_set_begin_scan(s->set);
	if (npids > 0) {
		for (int i = 0; i < npids; i++)
			uprobe_scan_pid(s, (pid_t)pids[i]);
	} else {
		proc_pids_foreach(scan_all_cb, s);
	}
	return uprobe_set_prune(s->set);
}

struct uprobe_lib *uprobe_scan_add_path(struct uprobe_scanner *s, const char *path, int kind)
{
	struct uprobe_lib *lib;
	bool created;

	lib = uprobe_set_add(s->set, path, path, kind, &created);
	if (!lib)
		return NULL;
	lib->pinned = true;
	if (created)
		scan_new(s, lib);
	return lib;
}

/* AISCOPE_TEST_NO_EXEC_SCAN=1, a hidden knob for the tests: an exec is
 * not scanned, so that a new process stays unscanned (until a rescan) and
 * the BPF side's paths for such a process are the ones that run */
/* --hold: the process BPF stopped continues, scanned and attached. A
 * process that exited meanwhile, or whose pid now names another process
 * (it would have to exit and the pid be reused within the scan), is
 * counted apart; a SIGCONT to a process nobody stopped does nothing. */
void uprobe_hold_release(struct uprobe_scanner *s, pid_t pid, uint64_t held_ns)
{
	uint64_t held = clock_ns(CLOCK_MONOTONIC) - held_ns;

	if (kill(pid, SIGCONT)) {
		s->hold_gone++;
		return;
	}
	s->hold_released++;
	if (held > s->hold_max_ns)
		s->hold_max_ns = held;
}

static int discover_event(void *ctx, void *data, size_t len)
{
	const struct uprobe_discover_ev *ev = data;
	struct uprobe_scanner *s = ctx;
	static int no_scan = -1;

	if (no_scan < 0) {
		const char *v = getenv("AISCOPE_TEST_NO_EXEC_SCAN");

		no_scan = v && !strcmp(v, "1");
	}
	if (len < sizeof(*ev))
		return 0;
	if (!no_scan && !s->closing)
		uprobe_scan_pid(s, (pid_t)ev->pid);
	if (ev->held_ns)
		uprobe_hold_release(s, (pid_t)ev->pid, ev->held_ns);
	return 0;
}

void uprobe_discover_close(struct ring_buffer *rb, struct uprobe_scanner *s)
{
	if (!rb)
		return;
	/* the programs are gone: what is left only needs continuing */
	s->closing = true;
	ring_buffer__consume(rb);
	ring_buffer__free(rb);
}

struct ring_buffer *uprobe_discover_open(struct bpf_object *obj, struct uprobe_scanner *s)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, "uprobe_discover_rb");

	if (!m) {
		errno = ENOENT;
		return NULL;
	}
	return ring_buffer__new(bpf_map__fd(m), discover_event, s, NULL);
}

/* ---- the dynamic loader's cache ---- */

#define LDCACHE_MAGIC "glibc-ld.so.cache1.1"
#define LDCACHE_OLD_MAGIC "ld.so-1.7.0"

struct ldcache_head {
	char magic[20];
	uint32_t nlibs;
	uint32_t len_strings;
	uint8_t flags;
	uint8_t pad[3];
	uint32_t extension_offset;
	uint32_t unused[3];
};

struct ldcache_entry {
	int32_t flags;
	uint32_t key, value;	/* string offsets from the new header */
	uint32_t osversion;
	uint64_t hwcap;
};

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "re");
	char *buf = NULL;
	size_t cap = 0, n = 0, r;

	if (!f)
		return NULL;
	do {
		if (n == cap) {
			char *nb = realloc(buf, cap ? cap * 2 : 65536);

			if (!nb) {
				free(buf);
				fclose(f);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
			cap = cap ? cap * 2 : 65536;
		}
		r = fread(buf + n, 1, cap - n, f);
		n += r;
	} while (r > 0 && n < (64U << 20));
	fclose(f);
	*len = n;
	return buf;
}

/* Offset of the new-format header: 0, or after an old-format part. */
static long ldcache_new_offset(const char *buf, size_t len)
{
	uint32_t nold;

	if (len >= sizeof(struct ldcache_head) && !memcmp(buf, LDCACHE_MAGIC, 20))
		return 0;
	if (len < 16 || memcmp(buf, LDCACHE_OLD_MAGIC, 11))
		return -1;
	/* old header: magic[11] + pad, nlibs; old entries are 12 bytes */
	memcpy(&nold, buf + 12, sizeof(nold));
	return (16 + (long)nold * 12 + 7) & ~7L;
}

int uprobe_ldcache_foreach(const char *file, int (*cb)(const char *soname, const char *path,
						       void *ctx), void *ctx)
{
	const struct ldcache_head *h;
	size_t len = 0;
	long base;
	int ret = 0;
	char *buf = read_file(file ? file : "/etc/ld.so.cache", &len);

	if (!buf)
		return -errno;
	base = ldcache_new_offset(buf, len);
	if (base < 0 || (size_t)base + sizeof(*h) > len ||
	    memcmp(buf + base, LDCACHE_MAGIC, 20)) {
		free(buf);
		return -EINVAL;
	}
	h = (const struct ldcache_head *)(buf + base);
	for (uint32_t i = 0; i < h->nlibs && !ret; i++) {
		size_t at = base + sizeof(*h) + (size_t)i * sizeof(struct ldcache_entry);
		struct ldcache_entry e;
		const char *key, *val;

		if (at + sizeof(e) > len)
			break;
		memcpy(&e, buf + at, sizeof(e));
		if ((size_t)base + e.key >= len || (size_t)base + e.value >= len)
			continue;
		key = buf + base + e.key;
		val = buf + base + e.value;
		/* the strings must end inside the file */
		if (!memchr(key, 0, len - (key - buf)) || !memchr(val, 0, len - (val - buf)))
			continue;
		ret = cb(key, val, ctx);
	}
	free(buf);
	return ret < 0 ? ret : 0;
}

/* ---- names of addresses ---- */

struct cache_ent {
	uint64_t dev, ino, used;
	struct elf_syms *syms;
};

struct elf_cache {
	struct cache_ent *e;
	int n, max;
	size_t bytes, max_bytes;	/* elf_syms_bytes of the files kept */
	uint64_t clock;
};

struct elf_cache *elf_cache_new(int max, size_t max_bytes)
{
	struct elf_cache *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->max = max > 0 ? max : 1;
	c->max_bytes = max_bytes;
	c->e = calloc(c->max, sizeof(*c->e));
	if (!c->e) {
		free(c);
		return NULL;
	}
	return c;
}

void elf_cache_free(struct elf_cache *c)
{
	if (!c)
		return;
	for (int i = 0; i < c->n; i++)
		elf_syms_free(c->e[i].syms);
	free(c->e);
	free(c);
}

const struct elf_syms *elf_cache_get(struct elf_cache *c, uint64_t dev, uint64_t ino,
				     const char *path)
{
	struct cache_ent *slot;
	struct elf_syms *s;

	for (int i = 0; i < c->n; i++) {
		if (c->e[i].dev == dev && c->e[i].ino == ino) {
			c->e[i].used = ++c->clock;
			return c->e[i].syms;
		}
	}
	s = elf_syms_open(path);
	if (!s)
		return NULL;
	/* least recently used first, until the new one fits both caps (a
	 * file larger than max_bytes alone is kept alone) */
	while (c->n && (c->n >= c->max ||
			(c->max_bytes && c->bytes + elf_syms_bytes(s) > c->max_bytes))) {
		slot = &c->e[0];
		for (int i = 1; i < c->n; i++)
			if (c->e[i].used < slot->used)
				slot = &c->e[i];
		c->bytes -= elf_syms_bytes(slot->syms);
		elf_syms_free(slot->syms);
		*slot = c->e[--c->n];
	}
	slot = &c->e[c->n++];
	*slot = (struct cache_ent){ dev, ino, ++c->clock, s };
	c->bytes += elf_syms_bytes(s);
	return s;
}

size_t elf_cache_bytes(const struct elf_cache *c)
{
	return c->bytes;
}

int elf_cache_count(const struct elf_cache *c)
{
	return c->n;
}

struct locate_ctx {
	pid_t pid;
	uint64_t addr;
	struct addr_loc *loc;
	bool any;		/* a file mapping was seen */
};

static int locate_cb(const struct proc_map *m, void *ctx)
{
	struct locate_ctx *c = ctx;

	c->any = true;
	if (c->addr < m->start || c->addr >= m->end)
		return 0;
	c->loc->dev = m->dev;
	c->loc->ino = m->ino;
	c->loc->off = c->addr - m->start + m->pgoff;
	uprobe_basename(m->path, c->loc->module, sizeof(c->loc->module));
	proc_map_file(c->pid, m, c->loc->open_path, sizeof(c->loc->open_path));
	return 1;
}

/* A live process maps at least its executable: no file mapping at all, or
 * no maps file, is a process gone (reaped, or a zombie whose memory is
 * released): -ESRCH, which a caller can count apart from -ENOENT. */
int uprobe_addr_locate(pid_t pid, uint64_t addr, struct addr_loc *loc)
{
	struct locate_ctx c = { pid, addr, loc, false };
	int ret = proc_maps_foreach(pid, locate_cb, &c);

	if (ret == -ENOENT || ret == -ESRCH || (!ret && !c.any))
		return -ESRCH;
	if (ret < 0)
		return ret;
	return ret ? 0 : -ENOENT;
}

int uprobe_addr_name(struct elf_cache *c, pid_t pid, uint64_t addr, char *buf, size_t len)
{
	struct addr_loc loc;
	const struct elf_syms *s;
	const char *name;
	uint64_t delta;
	int err = uprobe_addr_locate(pid, addr, &loc);

	if (err)
		return err;
	s = elf_cache_get(c, loc.dev, loc.ino, loc.open_path);
	name = s ? elf_syms_at(s, loc.off, &delta) : NULL;
	if (name && !delta) {
		snprintf(buf, len, "%s", name);
		return 1;
	}
	snprintf(buf, len, "%s+0x%" PRIx64, loc.module, loc.off);
	return 0;
}
