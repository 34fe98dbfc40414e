// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lib/uprobe.c against a library built for the test (uargs_lib.c): symbol
 * offsets checked against where the dynamic loader really mapped each
 * function, versions, local symbols, names of addresses; and, as root,
 * bpf/uprobe_args.bpf.h end to end: uprobes on the library decode the
 * sentinel arguments this test passes, structs by value and stack
 * arguments included.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <bpf/libbpf.h>
#include "t.h"
#include "t_bpf.h"
#include "uprobe.h"
#include "util.h"
#include "aiscope_common.h"
#include "uargs_lib.h"
#include "kfeatures.h"
#include "t_child.h"
#include "uprobe_args.skel.h"

static char lib_path[PATH_MAX + 16];
static void *lib;

/* File offset of a loaded address, from our own maps: the truth that
 * elf_syms_offset() must match. */
struct off_ctx {
	uint64_t addr, off;
	bool found;
};

static int off_cb(const struct proc_map *m, void *ctx)
{
	struct off_ctx *c = ctx;

	if (c->addr < m->start || c->addr >= m->end)
		return 0;
	c->off = c->addr - m->start + m->pgoff;
	c->found = true;
	return 1;
}

static uint64_t true_off(const void *addr)
{
	struct off_ctx c = { (uint64_t)(uintptr_t)addr, 0, false };

	proc_maps_foreach(getpid(), off_cb, &c);
	return c.found ? c.off : (uint64_t)-1;
}

static void test_offsets(void)
{
	static const char *const names[] = {
		"uargs_launch", "uargs_launch_ptsz", "uargs_cu_launch", "uargs_init_rank",
		"uargs_split16", "uargs_call_local",
	};
	struct elf_syms *s = elf_syms_open(lib_path);
	uint64_t off, delta;

	CHECK(s);
	if (!s)
		return;
	CHECK(elf_syms_native(s));
	CHECK(elf_syms_count(s) >= 8);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *a = dlsym(lib, names[i]);

		CHECK(a);
		CHECK_EQ(elf_syms_offset(s, names[i], &off), 0);
		CHECK_EQ(off, true_off(a));
		CHECK_STR(elf_syms_at(s, off, &delta), names[i]);
		CHECK_EQ(delta, 0);
		/* inside the function: same name, the distance in delta */
		CHECK_STR(elf_syms_at(s, off + 1, &delta), names[i]);
		CHECK_EQ(delta, 1);
	}
	CHECK_EQ(elf_syms_offset(s, "uargs_nonexistent", &off), -ENOENT);
	/* the cluster of uargs_launch and uargs_launch_ptsz (next to each other) */
	{
		static const char *const pre[] = { "uargs_launch", NULL }, *const none[] = { "zz", NULL };
		uint64_t lo = 0, hi = 0, a = 0, b = 0;

		elf_syms_offset(s, "uargs_launch", &a);
		elf_syms_offset(s, "uargs_launch_ptsz", &b);
		/* each one twice: .dynsym and .symtab */
		CHECK_EQ(elf_syms_span(s, pre, 0, &lo, &hi), 4);
		CHECK_EQ(lo, a < b ? a : b);
		CHECK(hi > (a > b ? a : b));
		CHECK_EQ(elf_syms_span(s, none, 4, &lo, &hi), -ENOENT);
	}
	CHECK(!elf_syms_has(s, "uargs_launc"));
	CHECK(!elf_syms_has(s, "uargs_launch_"));
	elf_syms_free(s);
}

static void test_versions(void)
{
	struct elf_syms *s = elf_syms_open(lib_path);
	void *v0 = dlvsym(lib, "uargs_ver", "UARGS_0");
	void *v1 = dlvsym(lib, "uargs_ver", "UARGS_1");
	uint64_t off;

	CHECK(s && v0 && v1 && v0 != v1);
	if (!s || !v0 || !v1)
		return;
	CHECK_EQ(elf_syms_offset(s, "uargs_ver@UARGS_0", &off), 0);
	CHECK_EQ(off, true_off(v0));
	CHECK_EQ(elf_syms_offset(s, "uargs_ver@@UARGS_1", &off), 0);
	CHECK_EQ(off, true_off(v1));
	/* a plain name is the default version, as dlsym has it */
	CHECK_EQ(elf_syms_offset(s, "uargs_ver", &off), 0);
	CHECK_EQ(off, true_off(dlsym(lib, "uargs_ver")));
	CHECK_EQ(off, true_off(v1));
	CHECK_EQ(elf_syms_offset(s, "uargs_ver@UARGS_9", &off), -ENOENT);
	elf_syms_free(s);
}

static void test_local_and_bad(void)
{
	struct elf_syms *s = elf_syms_open(lib_path);
	uint64_t off;

	CHECK(s);
	if (!s)
		return;
	/* only .symtab has it: found all the same (stubs of CUDA kernels) */
	CHECK_EQ(elf_syms_offset(s, "uargs_local_impl", &off), 0);
	CHECK(dlsym(lib, "uargs_local_impl") == NULL);
	elf_syms_free(s);
	errno = 0;
	CHECK(elf_syms_open("/proc/self/status") == NULL);
	CHECK_EQ(errno, ENOEXEC);
	CHECK(elf_syms_open("/nonexistent/lib.so") == NULL);
	CHECK_EQ(errno, ENOENT);
}

struct find_ctx {
	const char *base;
	int found;
	struct proc_map m;
	char path[PATH_MAX];
};

static int find_cb(const struct proc_map *m, void *ctx)
{
	struct find_ctx *c = ctx;
	char b[64];

	if (strcmp(uprobe_basename(m->path, b, sizeof(b)), c->base) || !m->exec)
		return 0;
	c->found++;
	c->m = *m;
	snprintf(c->path, sizeof(c->path), "%s", m->path);
	return 0;
}

static void test_maps_and_names(void)
{
	struct find_ctx c = { .base = "libuargs.so" };
	struct elf_cache *cache;
	char buf[128], mf[64];
	uint8_t *a = dlsym(lib, "uargs_split16");
	int r;

	CHECK_EQ(proc_maps_foreach(getpid(), find_cb, &c), 0);
	CHECK_EQ(c.found, 1);
	CHECK_STR(c.path, lib_path);
	proc_map_file(getpid(), &c.m, mf, sizeof(mf));
	/* following map_files links takes CAP_SYS_ADMIN */
	if (geteuid() != 0)
		SKIP("not root: map_files");
	CHECK(access(mf, R_OK) == 0);
	cache = elf_cache_new(2, 0);
	CHECK_EQ(uprobe_addr_name(cache, getpid(), (uint64_t)(uintptr_t)a, buf, sizeof(buf)), 1);
	CHECK_STR(buf, "uargs_split16");
	/* not a function start: the stable fallback, never the raw address */
	r = uprobe_addr_name(cache, getpid(), (uint64_t)(uintptr_t)a + 2, buf, sizeof(buf));
	CHECK_EQ(r, 0);
	snprintf(mf, sizeof(mf), "libuargs.so+0x%" PRIx64, true_off(a) + 2);
	CHECK_STR(buf, mf);
	CHECK_EQ(uprobe_addr_name(cache, getpid(), 16, buf, sizeof(buf)), -ENOENT);
	CHECK_EQ(proc_maps_foreach(INT_MAX, find_cb, &c), -ENOENT);
	/* a process gone, reaped or a zombie (its memory released, its maps
	 * empty), is told apart from an address in no file: -ESRCH */
	CHECK_EQ(uprobe_addr_name(cache, INT_MAX, (uint64_t)(uintptr_t)a, buf, sizeof(buf)), -ESRCH);
	{
		pid_t child = fork();
		siginfo_t si;

		if (child == 0)
			_exit(0);
		CHECK(child > 0);
		CHECK_EQ(waitid(P_PID, child, &si, WEXITED | WNOWAIT), 0);
		CHECK_EQ(uprobe_addr_name(cache, child, (uint64_t)(uintptr_t)a, buf, sizeof(buf)),
			 -ESRCH);
		CHECK_EQ(waitpid(child, NULL, 0), child);
		CHECK_EQ(uprobe_addr_name(cache, child, (uint64_t)(uintptr_t)a, buf, sizeof(buf)),
			 -ESRCH);
	}
	CHECK_STR(uprobe_basename("/x/libcudart.so.13 (deleted)", buf, sizeof(buf)),
		  "libcudart.so.13");
	elf_cache_free(cache);
}

/* The cache's byte cap: what each file's symbols hold, summed, and the
 * least recently used dropped to keep under it. */
static void test_cache_bytes(void)
{
	struct elf_syms *a = elf_syms_open(lib_path), *b = elf_syms_open("/proc/self/exe");
	struct stat sa, sb;
	struct elf_cache *c;
	const struct elf_syms *got;

	CHECK(a && b);
	CHECK_EQ(stat(lib_path, &sa), 0);
	CHECK_EQ(stat("/proc/self/exe", &sb), 0);
	/* at least the arrays of its symbols, at most the file */
	CHECK(elf_syms_bytes(a) >= (size_t)elf_syms_count(a) * 8);
	CHECK(elf_syms_bytes(a) <= (size_t)sa.st_size + (size_t)elf_syms_count(a) * 64);
	/* room for either, not both */
	c = elf_cache_new(8, elf_syms_bytes(a) + elf_syms_bytes(b) - 1);
	got = elf_cache_get(c, sa.st_dev, sa.st_ino, lib_path);
	CHECK(got && elf_syms_has(got, "uargs_split16"));
	CHECK_EQ(elf_cache_count(c), 1);
	CHECK_EQ(elf_cache_bytes(c), elf_syms_bytes(a));
	got = elf_cache_get(c, sb.st_dev, sb.st_ino, "/proc/self/exe");
	CHECK(got && elf_syms_has(got, "main"));
	CHECK_EQ(elf_cache_count(c), 1);
	CHECK_EQ(elf_cache_bytes(c), elf_syms_bytes(b));
	/* the first one again: read again, the second dropped */
	CHECK(elf_cache_get(c, sa.st_dev, sa.st_ino, lib_path) != NULL);
	CHECK_EQ(elf_cache_bytes(c), elf_syms_bytes(a));
	elf_cache_free(c);
	/* no byte cap: both */
	c = elf_cache_new(8, 0);
	CHECK(elf_cache_get(c, sa.st_dev, sa.st_ino, lib_path) != NULL);
	CHECK(elf_cache_get(c, sb.st_dev, sb.st_ino, "/proc/self/exe") != NULL);
	CHECK_EQ(elf_cache_count(c), 2);
	CHECK_EQ(elf_cache_bytes(c), elf_syms_bytes(a) + elf_syms_bytes(b));
	elf_cache_free(c);
	elf_syms_free(a);
	elf_syms_free(b);
}

static void count_release(struct uprobe_lib *lib, void *ctx)
{
	CHECK_EQ(lib->kind, 7);
	(*(int *)ctx)++;
}

static void test_set(void)
{
	int released = 0;
	struct uprobe_set set = { 0 };
	struct find_ctx c = { .base = "libuargs.so" };
	struct uprobe_lib *a, *b;
	char mf[64];
	bool created;

	if (geteuid() != 0)
		SKIP("not root: map_files");
	proc_maps_foreach(getpid(), find_cb, &c);
	proc_map_file(getpid(), &c.m, mf, sizeof(mf));
	uprobe_set_begin_scan(&set);
	a = uprobe_set_add(&set, lib_path, lib_path, 7, &created);
	CHECK(a && created);
	/* the same inode through map_files: one entry */
	b = uprobe_set_add(&set, mf, "other", 0, &created);
	CHECK(b == a && !created);
	CHECK_EQ(set.n, 1);
	CHECK(a && a->kind == 7);
	CHECK(uprobe_set_find(&set, a->dev, a->ino) == a);
	CHECK(uprobe_set_add(&set, "/nonexistent", "x", 0, &created) == NULL);
	/* a path longer than what /proc/PID/map_files needs is kept whole */
	{
		char longp[PATH_MAX];
		struct uprobe_lib *l;
		int n = snprintf(longp, sizeof(longp), "/tmp/%0200d-test_uprobe.so", getpid());

		CHECK(n > 200);
		CHECK_EQ(symlink(lib_path, longp), 0);
		l = uprobe_set_add(&set, longp, longp, 0, &created);
		CHECK(l == a && !created);
		unlink(longp);
		memset(longp, 'x', sizeof(longp) - 1);
		longp[0] = '/';
		longp[sizeof(longp) - 1] = 0;
		errno = 0;
		CHECK(uprobe_set_add(&set, longp, "x", 0, &created) == NULL);
		CHECK_EQ(errno, ENAMETOOLONG);
	}
	/* its symbols dropped: still the set's entry for that inode, not read
	 * again, and freed with it (ASan) */
	{
		int fds = 0;
		struct dirent *de;
		DIR *d = opendir("/proc/self/fd");

		uprobe_lib_drop_syms(a);
		CHECK(a->syms == NULL);
		CHECK(uprobe_set_add(&set, lib_path, lib_path, 7, &created) == a && !created);
		CHECK(a->syms == NULL);
		/* the file's fd went with the symbols: none left open on it */
		while (d && (de = readdir(d))) {
			char l[PATH_MAX], fn[PATH_MAX + 32];
			ssize_t n;

			snprintf(fn, sizeof(fn), "/proc/self/fd/%s", de->d_name);
			n = readlink(fn, l, sizeof(l) - 1);
			if (n > 0) {
				l[n] = 0;
				fds += !strcmp(l, lib_path);
			}
		}
		if (d)
			closedir(d);
		CHECK_EQ(fds, 0);
	}
	/* a scan that does not find it removes it, and says so (release) */
	set.release = count_release;
	set.release_ctx = &released;
	uprobe_set_begin_scan(&set);
	CHECK_EQ(uprobe_set_prune(&set), 1);
	CHECK_EQ(set.n, 0);
	CHECK_EQ(released, 1);
	/* freeing the set releases what is left */
	CHECK(uprobe_set_add(&set, lib_path, lib_path, 7, &created) && created);
	CHECK(uprobe_set_add(&set, "/proc/self/exe", "exe", 7, &created) && created);
	uprobe_set_free(&set);
	CHECK_EQ(released, 3);
}

static int main_exe_seen;

static int classify_uargs(const struct proc_map *m, void *ctx)
{
	char b[64];

	uprobe_basename(m->path, b, sizeof(b));
	/* the scanner tells the process's executable from its libraries */
	if (m->main_exe)
		main_exe_seen += !strcmp(b, "test_uprobe") ? 1 : 1000;
	return strcmp(b, "libuargs.so") ? -1 : 3;
}

static void count_attach(struct uprobe_lib *lib, void *ctx)
{
	(*(int *)ctx)++;
	CHECK_EQ(lib->kind, 3);
}

/* count_attach's counter first: it casts the context to an int */
struct scan_test {
	int calls;
	int begins, ends, exec_maps, all_maps;
	uint64_t lo, hi;
};

static void on_begin(pid_t pid, void *ctx)
{
	((struct scan_test *)ctx)->begins++;
}

static void on_map(pid_t pid, const struct proc_map *m, struct uprobe_lib *lib, void *ctx)
{
	struct scan_test *ms = ctx;

	ms->all_maps++;
	if (m->exec) {
		ms->exec_maps++;
		ms->lo = m->start;
		ms->hi = m->end;
	}
}

static void on_end(pid_t pid, int err, void *ctx)
{
	((struct scan_test *)ctx)->ends++;
}

static void test_scanner(void)
{
	struct uprobe_set set = { 0 };
	struct scan_test st = { 0 };
	struct uprobe_scanner sc = {
		.set = &set, .classify = classify_uargs, .attach = count_attach, .ctx = &st,
		.scan_begin = on_begin, .on_map = on_map, .scan_end = on_end,
	};
	int *calls_p = &st.calls;
	void *self_fn = dlsym(lib, "uargs_split16");
	uint32_t me = getpid();
	bool created;

	if (geteuid() != 0)
		SKIP("not root: map_files");
	CHECK_EQ(uprobe_scan_pid(&sc, getpid()), 0);
	CHECK_EQ(*calls_p, 1);
	CHECK_EQ(set.n, 1);
	CHECK_EQ(main_exe_seen, 1);
	/* every mapping of the library, the executable one with its code */
	CHECK_EQ(st.begins, 1);
	CHECK_EQ(st.ends, 1);
	CHECK_EQ(st.exec_maps, 1);
	CHECK(st.all_maps >= 2);
	CHECK((uintptr_t)self_fn >= st.lo && (uintptr_t)self_fn < st.hi);
	/* a second scan finds the same inode: nothing attached again */
	CHECK_EQ(uprobe_scan_pid(&sc, getpid()), 0);
	CHECK_EQ(*calls_p, 1);
	CHECK_EQ(uprobe_scan_pid(&sc, INT_MAX), -ENOENT);
	CHECK(uprobe_set_add(&set, lib_path, lib_path, 3, &created) && !created);
	CHECK_EQ(uprobe_scan_all(&sc, &me, 1), 0);
	CHECK_EQ(set.n, 1);
	CHECK(uprobe_scan_add_path(&sc, "/nonexistent/libcudart.so", 3) == NULL);
	/* a pinned library stays although no process maps it */
	CHECK(uprobe_scan_add_path(&sc, "/proc/self/exe", 3) != NULL);
	CHECK_EQ(*calls_p, 2);
	CHECK_EQ(uprobe_scan_all(&sc, &me, 1), 0);
	CHECK_EQ(set.n, 2);
	/* unpinned: kept while a scan finds it mapped (our executable is,
	 * and an entry knows its inode from the start, even though
	 * classify() would not have taken it) */
	set.libs[1]->pinned = false;
	CHECK_EQ(uprobe_scan_all(&sc, &me, 1), 0);
	CHECK_EQ(set.n, 2);
	/* a scan that sees no process maps nothing */
	uprobe_set_begin_scan(&set);
	CHECK_EQ(uprobe_set_prune(&set), 2);
	CHECK_EQ(set.n, 0);
	uprobe_set_free(&set);
}

/*
 * A library that a process loaded is dropped by the full scan after that
 * process exits, although this process still maps the file itself (its
 * symbols are read through mmap) and so does another (an observer, as
 * another aiscope tool reading its symbols): read-only mappings are not
 * uses. The truth: a child that dlopens a copy, killed in between.
 */
static pid_t spawn(const char *path, bool load, int *ready)
{
	int fds[2];
	pid_t pid;
	char c;

	if (pipe(fds))
		return -1;
	pid = fork();
	if (!pid) {
		int fd = open(path, O_RDONLY);
		struct stat sb;

		close(fds[0]);
		if (load ? !dlopen(path, RTLD_NOW) :
			   fd < 0 || fstat(fd, &sb) ||
			   mmap(NULL, sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED)
			_exit(1);
		if (write(fds[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(fds[1]);
	*ready = read(fds[0], &c, 1) == 1;
	close(fds[0]);
	return pid;
}

static void test_scan_prunes_gone(void)
{
	struct uprobe_set set = { 0 };
	struct scan_test st = { 0 };
	struct uprobe_scanner sc = {
		.set = &set, .classify = classify_uargs, .attach = count_attach, .ctx = &st,
	};
	char dir[] = "/tmp/aiscope-uargs.XXXXXX", copy[PATH_MAX], cmd[PATH_MAX * 3];
	pid_t user, observer;
	int status, ready;
	struct stat sb;

	if (geteuid() != 0)
		SKIP("not root: map_files of another process");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(copy, sizeof(copy), "%s/libuargs.so", dir);
	snprintf(cmd, sizeof(cmd), "cp %s %s", lib_path, copy);
	CHECK_EQ(system(cmd), 0);
	CHECK_EQ(stat(copy, &sb), 0);
	user = spawn(copy, true, &ready);
	CHECK(user > 0 && ready);
	observer = spawn(copy, false, &ready);
	CHECK(observer > 0 && ready);
	CHECK_EQ(uprobe_scan_all(&sc, NULL, 0), 0);
	CHECK(uprobe_set_find(&set, sb.st_dev, sb.st_ino) != NULL);
	kill(user, SIGKILL);
	CHECK_EQ(waitpid(user, &status, 0), user);
	/* mapped read-only now, by the observer and by the set: dropped */
	CHECK(uprobe_scan_all(&sc, NULL, 0) >= 1);
	CHECK(uprobe_set_find(&set, sb.st_dev, sb.st_ino) == NULL);
	kill(observer, SIGKILL);
	CHECK_EQ(waitpid(observer, &status, 0), observer);
	uprobe_set_free(&set);
	unlink(copy);
	rmdir(dir);
}

struct ldc {
	int n, libc;
	char libc_path[PATH_MAX];
};

static int ldc_cb(const char *soname, const char *path, void *ctx)
{
	struct ldc *c = ctx;

	c->n++;
	if (!strcmp(soname, "libc.so.6") && !c->libc++)
		snprintf(c->libc_path, sizeof(c->libc_path), "%s", path);
	return 0;
}

/* The loader's own cache against what ldconfig -p prints, and bad files. */
static void test_ldcache(void)
{
	struct ldc c = { 0 };
	char line[PATH_MAX + 256], tmp[] = "/tmp/test_ldcache.XXXXXX";
	FILE *p;
	int fd, want = -1;

	if (access("/etc/ld.so.cache", R_OK))
		SKIP("no /etc/ld.so.cache");
	CHECK_EQ(uprobe_ldcache_foreach(NULL, ldc_cb, &c), 0);
	/* "N libs found in cache `/etc/ld.so.cache'" */
	p = popen("ldconfig -p 2>/dev/null || /sbin/ldconfig -p", "r");
	if (p && fgets(line, sizeof(line), p))
		sscanf(line, "%d", &want);
	if (p)
		pclose(p);
	CHECK_EQ(c.n, want);
	CHECK(c.libc >= 1);
	CHECK(c.libc && access(c.libc_path, R_OK) == 0);
	fd = mkstemp(tmp);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(write(fd, "not a cache at all, but long enough to be read", 47) == 47);
		close(fd);
	}
	CHECK_EQ(uprobe_ldcache_foreach(tmp, ldc_cb, &c), -EINVAL);
	unlink(tmp);
	CHECK_EQ(uprobe_ldcache_foreach("/nonexistent/ld.so.cache", ldc_cb, &c), -ENOENT);
}

/* ---- end to end, as root ---- */

static struct uprobe_args_bpf *skel;
static struct uprobe_set bset;
static const char *bpf_skip_why;

/* Not root: skipped. Root and no BPF: a failure. */
#define NEED_BPF() do {							\
	if (!skel && bpf_skip_why)						\
		SKIP(bpf_skip_why);						\
	if (!skel) {								\
		CHECK(!"BPF setup failed");					\
		return;								\
	}									\
} while (0)

static int attach(struct uprobe_lib *l, struct bpf_program *p, const char *sym, bool ret)
{
	int err = uprobe_lib_attach(l, p, sym, ret, -1);

	if (err)
		printf("# attach %s: %s\n", sym, strerror(-err));
	return err;
}

static bool setup_bpf(void)
{
	struct uprobe_lib *l;
	bool created;
	int err = 0;

	if ((bpf_skip_why = t_bpf_begin()))
		return false;
	skel = uprobe_args_bpf__open();
	if (!skel) {
		printf("# cannot open the BPF object\n");
		return false;
	}
	skel->rodata->target_tgid = getpid();
	if (uprobe_args_bpf__load(skel)) {
		printf("# cannot load the BPF object (T_VERBOSE=1 shows why)\n");
		uprobe_args_bpf__destroy(skel);
		skel = NULL;
		return false;
	}
	l = uprobe_set_add(&bset, lib_path, lib_path, 0, &created);
	if (!l)
		return false;
	err |= attach(l, skel->progs.t_launch, "uargs_launch", false);
	err |= attach(l, skel->progs.t_launch_ret, "uargs_launch", true);
	err |= attach(l, skel->progs.t_launch_ptsz, "uargs_launch_ptsz", false);
	err |= attach(l, skel->progs.t_cu_launch, "uargs_cu_launch", false);
	err |= attach(l, skel->progs.t_init_rank, "uargs_init_rank", false);
	err |= attach(l, skel->progs.t_split16, "uargs_split16", false);
	CHECK_EQ(err, 0);
	CHECK_EQ(l->attached, 6);
	return !err;
}

/* one launch, as the BPF side decoded it: its function, dimensions, shared
 * memory and stream */
static void check_launch(const struct launch_args *l, uint64_t func, struct uargs_dim3 g,
			 struct uargs_dim3 b, uint64_t smem, uint64_t stream)
{
	CHECK_EQ(l->hits, 1);
	CHECK_EQ(l->func, func);
	CHECK_EQ(l->grid.x, g.x);
	CHECK_EQ(l->grid.y, g.y);
	CHECK_EQ(l->grid.z, g.z);
	CHECK_EQ(l->block.x, b.x);
	CHECK_EQ(l->block.y, b.y);
	CHECK_EQ(l->block.z, b.z);
	CHECK_EQ(l->smem, smem);
	CHECK_EQ(l->stream, stream);
}

static void test_decode_launch(void)
{
	int (*f)(const void *, struct uargs_dim3, struct uargs_dim3, void **, size_t, void *) =
		dlsym(lib, "uargs_launch");
	int (*fp)(const void *, struct uargs_dim3, struct uargs_dim3, void **, size_t, void *) =
		dlsym(lib, "uargs_launch_ptsz");
	struct uargs_dim3 g = { 4, 2, 1 }, b = { 256, 1, 1 };
	void *args[1];
	int rc;

	NEED_BPF();
	rc = f((void *)0x1111, g, b, args, 1024, (void *)0x1234);
	check_launch(&skel->bss->launch, 0x1111, g, b, 1024, 0x1234);
	CHECK_EQ(skel->bss->launch.args, (uintptr_t)args);
	CHECK_EQ(skel->bss->launch.rc, rc);
	CHECK(rc != 0);
	g = (struct uargs_dim3){ 7, 8, 9 };
	b = (struct uargs_dim3){ 32, 4, 2 };
	fp((void *)0x2222, g, b, NULL, 4096, (void *)0x5678);
	check_launch(&skel->bss->launch_ptsz, 0x2222, g, b, 4096, 0x5678);
	CHECK_EQ(skel->bss->launch.hits, 1);
}

static void test_decode_stack_args(void)
{
	int (*cu)(void *, unsigned int, unsigned int, unsigned int, unsigned int, unsigned int,
		  unsigned int, unsigned int, void *, void **, void **) =
		dlsym(lib, "uargs_cu_launch");

	NEED_BPF();
	cu((void *)0xf00d, 4, 2, 1, 256, 3, 5, 1024, (void *)0x1234, (void **)0xaaa0,
	   (void **)0xbbb0);
	CHECK_EQ(skel->bss->cu.hits, 1);
	CHECK_EQ(skel->bss->cu.f, 0xf00d);
	CHECK_EQ(skel->bss->cu.g[0], 4);
	CHECK_EQ(skel->bss->cu.g[1], 2);
	CHECK_EQ(skel->bss->cu.g[2], 1);
	CHECK_EQ(skel->bss->cu.b[0], 256);
	CHECK_EQ(skel->bss->cu.b[1], 3);
	CHECK_EQ(skel->bss->cu.b[2], 5);
	CHECK_EQ(skel->bss->cu.smem, 1024);
	CHECK_EQ(skel->bss->cu.stream, 0x1234);
	CHECK_EQ(skel->bss->cu.params, 0xaaa0);
	CHECK_EQ(skel->bss->cu.extra, 0xbbb0);
	CHECK_EQ((unsigned int)skel->bss->nth7, 5);
}

static void test_decode_big_struct(void)
{
	int (*ir)(void **, int, struct uargs_id128, int) = dlsym(lib, "uargs_init_rank");
	int (*sp)(long, long, long, long, long, struct uargs_pair16, long) =
		dlsym(lib, "uargs_split16");
	struct uargs_id128 id;
	void *comm;

	NEED_BPF();
	for (int i = 0; i < 128; i++)
		id.internal[i] = (char)(i * 7 + 3);
	ir(&comm, 8, id, 3);
	CHECK_EQ(skel->bss->init.hits, 1);
	CHECK_EQ(skel->bss->init.comm, (uintptr_t)&comm);
	CHECK_EQ(skel->bss->init.nranks, 8);
	CHECK_EQ(skel->bss->init.rank, 3);
	CHECK(!memcmp(skel->bss->init.id.internal, id.internal, 128));
	/* a 16-byte struct when one register is left: all of it on the
	 * stack, and the next argument takes the free register (x86-64) or
	 * the stack (arm64) */
	sp(11, 12, 13, 14, 15, (struct uargs_pair16){ 0x1616, 0x1717 }, 0x1818);
	CHECK_EQ(skel->bss->split.hits, 1);
	CHECK_EQ(skel->bss->split.a, 11);
	CHECK_EQ(skel->bss->split.e, 15);
	CHECK_EQ(skel->bss->split.s.lo, 0x1616);
	CHECK_EQ(skel->bss->split.s.hi, 0x1717);
	CHECK_EQ(skel->bss->split.g, 0x1818);
}

static int count_scan_attach(const struct proc_map *m, void *ctx)
{
	return -1;
}

/* bpf/uprobe_discover.bpf.h: a dlopen of a new library reports us, the
 * scanner probes our ld.so */
/* bpftool's own probe: how many of bpf_get_attach_cookie and bpf_find_vma
 * a kprobe-type program (a uprobe's) may call on this kernel; -1 without
 * bpftool */
static int bpftool_uprobe_helpers(void)
{
	FILE *p = popen("command -v bpftool >/dev/null && bpftool feature probe kernel 2>/dev/null | "
			"awk '/helpers supported for program type/ { k = /type kprobe:/ } "
			"k && /- (bpf_get_attach_cookie|bpf_find_vma)$/ { n++ } END { print n + 0 }' || echo -1",
			"r");
	int n = -1;

	if (!p)
		return -1;
	if (fscanf(p, "%d", &n) != 1)
		n = -1;
	pclose(p);
	return n;
}

static void cookie_with_knob(const char *value)
{
	setenv("AISCOPE_TEST_ADDR_MAP", value, 1);
	_exit(feat_uprobe_cookie() ? 1 : 0);
}

/* lib/kfeatures' trial loads agree with bpftool's; the test knob says no
 * without trying (in a child each: the answer is kept per process) */
static void test_feat_uprobe_cookie(void)
{
	int n = bpftool_uprobe_helpers();
	char err[256];

	NEED_BPF();
	SKIP_IF(n < 0 ? "no bpftool" : NULL);
	/* the children first: a fork after the parent's call would keep its answer */
	CHECK_EQ(child_err(cookie_with_knob, "1", err, sizeof(err)), 0);
	CHECK_EQ(child_err(cookie_with_knob, "0", err, sizeof(err)), n == 2);
	CHECK_STR(err, "");
	CHECK_EQ(feat_uprobe_cookie(), n == 2);
}

static void test_discover_dlopen(void)
{
	struct uprobe_set set = { 0 };
	struct uprobe_scanner sc = { .set = &set, .classify = count_scan_attach };
	struct ring_buffer *rb;
	char copy[] = "/tmp/libuargs-copy.XXXXXX", cmd[PATH_MAX * 2 + 64];
	uint64_t before;
	void *h;
	int fd;

	NEED_BPF();
	sc.dlopen_prog = skel->progs.uprobe_disc_dlopen;
	rb = uprobe_discover_open(skel->obj, &sc);
	CHECK(rb);
	CHECK_EQ(uprobe_scan_pid(&sc, getpid()), 0);
	CHECK_EQ(set.n, 1);
	CHECK(set.n && set.libs[0]->kind == UPROBE_KIND_LDSO && set.libs[0]->attached == 1);
	fd = mkstemp(copy);
	CHECK(fd >= 0);
	close(fd);
	snprintf(cmd, sizeof(cmd), "cp %s %s", lib_path, copy);
	CHECK_EQ(system(cmd), 0);
	before = sc.scans;
	h = dlopen(copy, RTLD_NOW);
	CHECK(h);
	/* ld.so reports the change twice (adding, consistent) */
	CHECK(ring_buffer__consume(rb) >= 1);
	CHECK(sc.scans >= before + 1);
	if (h)
		dlclose(h);
	unlink(copy);
	ring_buffer__free(rb);
	uprobe_set_free(&set);
}

/* the periodic full scan: due rescan_ns after the last, never with 0 */
static void test_rescan_due(void)
{
	struct uprobe_scanner s = { .rescan_ns = 5 * NSEC_PER_SEC, .last_full_mono = 1000 };

	CHECK(!uprobe_rescan_due(&s, 1000));
	CHECK(!uprobe_rescan_due(&s, 1000 + 5 * NSEC_PER_SEC - 1));
	CHECK(uprobe_rescan_due(&s, 1000 + 5 * NSEC_PER_SEC));
	s.rescan_ns = 0;
	CHECK(!uprobe_rescan_due(&s, 1000 + 60 * NSEC_PER_SEC));
}

int main(void)
{
	char self[PATH_MAX - 16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	if (n <= 0)
		return 1;
	self[n] = 0;
	*strrchr(self, '/') = 0;
	snprintf(lib_path, sizeof(lib_path), "%s/libuargs.so", self);
	lib = dlopen(lib_path, RTLD_NOW);
	if (!lib) {
		printf("Bail out! cannot load %s: %s\n", lib_path, dlerror());
		return 1;
	}
	RUN(test_rescan_due);
	RUN(test_offsets);
	RUN(test_versions);
	RUN(test_local_and_bad);
	RUN(test_maps_and_names);
	RUN(test_cache_bytes);
	RUN(test_set);
	RUN(test_scanner);
	RUN(test_scan_prunes_gone);
	RUN(test_ldcache);
	setup_bpf();
	RUN(test_decode_launch);
	RUN(test_decode_stack_args);
	RUN(test_decode_big_struct);
	RUN(test_discover_dlopen);
	RUN(test_feat_uprobe_cookie);
	uprobe_set_free(&bset);
	uprobe_args_bpf__destroy(skel);
	return t_done();
}
