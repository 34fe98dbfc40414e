// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/cgroup.c: container ids from cgroup paths (CONTRACT section 5,
 * research/conventions.md 3.1), and the hierarchy scan against a fake root. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "t.h"
#include "cgroup.h"
#include "util.h"

#define ID  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define ID2 "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"
#define UPPER "0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF0123456789ABCDEF"
#define ID63 "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde"
#define UID_DASH "1f2e3d4c-5b6a-4789-8abc-def012345678"
#define UID_UNDER "1f2e3d4c_5b6a_4789_8abc_def012345678"
#define UID_STATIC "0123456789abcdef0123456789abcdef"

static struct container_info ci;

/* parse path; expect a container with id, runtime (NULL allowed), pod uid ("" none) */
static void expect(const char *path, const char *id, const char *runtime, const char *pod)
{
	bool ok = cg_parse_container(path, &ci);

	if (!ok || strcmp(ci.id, id) || strcmp(ci.pod_uid, pod) ||
	    (runtime ? !ci.runtime || strcmp(ci.runtime, runtime) : ci.runtime != NULL))
		printf("# path %s: got ok=%d id=%s runtime=%s pod=%s\n", path, ok, ci.id,
		       ci.runtime ? ci.runtime : "(null)", ci.pod_uid);
	CHECK(ok);
	CHECK_STR(ci.id, id);
	if (runtime)
		CHECK_STR(ci.runtime, runtime);
	else
		CHECK(ci.runtime == NULL);
	CHECK_STR(ci.pod_uid, pod);
}

/* expect no container; pod uid as given */
static void expect_none(const char *path, const char *pod)
{
	bool ok = cg_parse_container(path, &ci);

	if (ok)
		printf("# path %s: unexpected container %s\n", path, ci.id);
	CHECK(!ok);
	CHECK_STR(ci.id, "");
	CHECK(ci.runtime == NULL);
	CHECK_STR(ci.pod_uid, pod);
}

static void test_docker_systemd(void)
{
	expect("/system.slice/docker-" ID ".scope", ID, "docker", "");
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_UNDER
	       ".slice/docker-" ID ".scope", ID, "docker", UID_DASH);
}

static void test_docker_cgroupfs(void)
{
	expect("/docker/" ID, ID, "docker", "");
	/* GitHub Actions' cgroup parent: an id, runtime unknown */
	CHECK(cg_parse_container("/actions_job/" ID, &ci));
	CHECK_STR(ci.id, ID);
}

static void test_containerd_systemd_burstable(void)
{
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_UNDER
	       ".slice/cri-containerd-" ID ".scope", ID, "containerd", UID_DASH);
}

static void test_containerd_systemd_guaranteed_and_besteffort(void)
{
	expect("/kubepods.slice/kubepods-pod" UID_UNDER ".slice/cri-containerd-" ID ".scope",
	       ID, "containerd", UID_DASH);
	expect("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_UNDER
	       ".slice/cri-containerd-" ID ".scope", ID, "containerd", UID_DASH);
}

static void test_kind_prefix(void)
{
	expect("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
	       "kubelet-kubepods-burstable-pod" UID_UNDER ".slice/cri-containerd-" ID ".scope",
	       ID, "containerd", UID_DASH);
}

static void test_containerd_cgroupfs(void)
{
	expect("/kubepods/burstable/pod" UID_DASH "/" ID, ID, NULL, UID_DASH);
	expect("/kubepods/pod" UID_DASH "/" ID, ID, NULL, UID_DASH);
	expect("/kubepods/besteffort/pod" UID_DASH "/" ID2, ID2, NULL, UID_DASH);
}

static void test_containerd_raw_runc(void)
{
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_UNDER
	       ".slice:cri-containerd:" ID, ID, "containerd", UID_DASH);
	expect("/system.slice:cri-containerd:" ID, ID, "containerd", "");
}

static void test_crio_systemd(void)
{
	const char *pod = "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod"
			  UID_UNDER ".slice/";
	char path[512];

	snprintf(path, sizeof(path), "%scrio-%s.scope", pod, ID);
	expect(path, ID, "crio", UID_DASH);
	/* crun's "container" child is the same container */
	snprintf(path, sizeof(path), "%scrio-%s.scope/container", pod, ID);
	expect(path, ID, "crio", UID_DASH);
}

static void test_crio_conmon_is_not_a_container(void)
{
	const char *pod = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
			  UID_UNDER ".slice/";
	char path[512];

	snprintf(path, sizeof(path), "%scrio-conmon-%s.scope", pod, ID);
	expect_none(path, UID_DASH);
	/* its sibling with the same id is the workload */
	snprintf(path, sizeof(path), "%scrio-%s.scope", pod, ID);
	expect(path, ID, "crio", UID_DASH);
	expect_none("/crio-conmon-" ID, "");
}

static void test_crio_cgroupfs(void)
{
	expect("/kubepods/besteffort/pod" UID_DASH "/crio-" ID, ID, "crio", UID_DASH);
	expect("/kubepods/besteffort/pod" UID_DASH "/crio-" ID "/container", ID, "crio", UID_DASH);
}

static void test_podman(void)
{
	expect("/machine.slice/libpod-" ID ".scope", ID, "podman", "");
	expect("/machine.slice/libpod-" ID ".scope/container", ID, "podman", "");
	expect("/libpod_parent/libpod-" ID, ID, "podman", "");
	expect_none("/machine.slice/libpod-conmon-" ID ".scope", "");
}

static void test_podman_rootless(void)
{
	expect("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID
	       ".scope/container", ID, "podman", "");
	expect("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope",
	       ID, "podman", "");
}

static void test_nerdctl(void)
{
	expect("/system.slice/nerdctl-" ID ".scope", ID, "containerd", "");
}

static void test_static_pod_uid(void)
{
	/* static pods: 32-hex md5 uid without dashes */
	expect("/kubepods/burstable/pod" UID_STATIC "/" ID, ID, NULL, UID_STATIC);
	expect("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_STATIC
	       ".slice/cri-containerd-" ID ".scope", ID, "containerd", UID_STATIC);
}

static void test_pod_without_container(void)
{
	/* the pod slice itself: a pod uid but no container */
	expect_none("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod"
		    UID_UNDER ".slice", UID_DASH);
	expect_none("/kubepods/burstable/pod" UID_DASH, UID_DASH);
	/* too short or too long to be a pod uid */
	expect_none("/kubepods/burstable/pod0123456789abcdef0123456789abcde", "");
	expect_none("/kubepods/burstable/pod" UID_DASH "0", "");
}

static void test_leaf_wins(void)
{
	/* docker in docker: the innermost id is the one the task runs in */
	expect("/docker/" ID "/docker/" ID2, ID2, "docker", "");
	/* a sub-cgroup below a container is still that container */
	expect("/system.slice/docker-" ID ".scope/init.scope", ID, "docker", "");
}

static void test_rejects_uppercase(void)
{
	expect_none("/docker/" UPPER, "");
	expect_none("/system.slice/docker-" UPPER ".scope", "");
	expect_none("/system.slice/cri-containerd-" UPPER ".scope", "");
}

static void test_rejects_wrong_length(void)
{
	expect_none("/docker/" ID63, "");
	expect_none("/docker/" ID "0", "");
	expect_none("/system.slice/docker-" ID63 ".scope", "");
	expect_none("/system.slice/docker-" ID "a.scope", "");
	expect_none("/system.slice/crio-" ID63 ".scope", "");
}

static void test_rejects_wrong_affixes(void)
{
	expect_none("/system.slice/docker-" ID ".service", "");
	expect_none("/system.slice/docker-" ID ".scopex", "");
	expect_none("/system.slice/podman-" ID ".scope", "");
	expect_none("/system.slice/xdocker-" ID ".scope", "");
	expect_none("/docker/g123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "");
}

static void test_host_paths(void)
{
	expect_none("/", "");
	expect_none("", "");
	expect_none("//", "");
	expect_none("/user.slice/user-1000.slice/session-1.scope", "");
	expect_none("/system.slice/docker.service", "");
	expect_none("/system.slice/containerd.service", "");
	expect_none("/init.scope", "");
	expect_none("/kubepods.slice/kubepods-burstable.slice", "");
}

static void test_no_slash_and_trailing_slash(void)
{
	expect("docker-" ID ".scope", ID, "docker", "");
	expect("/system.slice/docker-" ID ".scope/", ID, "docker", "");
	expect("//docker//" ID "//", ID, "docker", "");
}

static void test_reuses_info(void)
{
	/* a parse after a hit leaves nothing of the previous result */
	CHECK(cg_parse_container("/kubepods/burstable/pod" UID_DASH "/crio-" ID, &ci));
	CHECK(!cg_parse_container("/user.slice", &ci));
	CHECK_STR(ci.id, "");
	CHECK_STR(ci.pod_uid, "");
	CHECK(ci.runtime == NULL);
}

/* ---- cg_init against a fake root ---- */

static char root[64];

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

static void rm_root(void)
{
	if (root[0])
		nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	root[0] = 0;
}

static int mkdirs(const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	for (char *s = p + strlen(root) + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) && errno != EEXIST)
			return -1;
		*s = '/';
	}
	return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

static int make_root(const char *mountinfo)
{
	char p[256];
	FILE *f;

	snprintf(root, sizeof(root), "/tmp/aiscope-test-cg.XXXXXX");
	if (!mkdtemp(root)) {
		root[0] = 0;
		return -1;
	}
	if (mkdirs("proc/self"))
		return -1;
	snprintf(p, sizeof(p), "%s/proc/self/mountinfo", root);
	f = fopen(p, "w");
	if (!f)
		return -1;
	fputs(mountinfo, f);
	fclose(f);
	return 0;
}

/* kernel ids, as in enum cgroup_subsys_id of a 6.x kernel */
static int fake_ssid(const char *ctrl)
{
	static const char *const ids[] = {
		"cpuset", "cpu", "cpuacct", "io", "memory", "devices", "freezer", "net_cls",
		"perf_event", "net_prio", "hugetlb", "pids", "rdma", "misc",
	};

	for (size_t i = 0; i < ARRAY_SIZE(ids); i++)
		if (!strcmp(ctrl, ids[i]))
			return (int)i;
	return -1;
}

static int no_memory_ssid(const char *ctrl)
{
	return strcmp(ctrl, "memory") ? fake_ssid(ctrl) : -1;
}

#define TMPFS "25 1 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
#define UNIFIED "26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 cgroup2 rw,nsdelegate\n"
#define SYSTEMD "27 25 0:25 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:11 - cgroup cgroup rw,xattr,name=systemd\n"
#define CPU "30 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,cpu,cpuacct\n"
#define MEMORY "31 25 0:29 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,memory\n"
#define PIDS "32 25 0:30 / /sys/fs/cgroup/pids rw,nosuid,nodev,noexec,relatime shared:16 - cgroup cgroup rw,pids\n"
#define V2ONLY "25 1 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n"
#define PROC "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"

/* a mount table and what cg_init makes of it */
static void test_init_modes(void)
{
	static const struct {
		const char *what, *mounts;
		enum cg_mode mode;
		const char *mode_name;
		int attr_ssid;
	} c[] = {
		/* memory first */
		{ "hybrid", PROC TMPFS UNIFIED SYSTEMD CPU MEMORY PIDS, CG_MODE_HYBRID, "hybrid", 4 },
		/* then cpu, before pids */
		{ "hybrid without memory", TMPFS UNIFIED SYSTEMD PIDS CPU, CG_MODE_HYBRID, "hybrid", 1 },
		{ "v2", PROC V2ONLY, CG_MODE_V2, "v2", -1 },
		{ "v1", TMPFS SYSTEMD CPU MEMORY PIDS, CG_MODE_V1, "v1", 4 },
		{ "none", PROC TMPFS, CG_MODE_NONE, "none", -1 },
	};

	for (size_t i = 0; i < T_ROWS(c); i++) {
		CHECK_CASE(make_root(c[i].mounts) == 0, "%s", c[i].what);
		CHECK_CASE(cg_init(root, fake_ssid) == 0, "%s", c[i].what);
		CHECK_CASE(cg_mode() == c[i].mode, "%s: mode %d", c[i].what, cg_mode());
		CHECK_CASE(!strcmp(cg_mode_name(cg_mode()), c[i].mode_name), "%s", c[i].what);
		CHECK_CASE(cg_attr_ssid() == c[i].attr_ssid, "%s: attr ssid %d", c[i].what,
			   cg_attr_ssid());
		cg_cleanup();
		rm_root();
	}
}
static void test_init_hybrid_unknown_ssid(void)
{
	CHECK_EQ(make_root(TMPFS UNIFIED MEMORY PIDS), 0);
	/* memory's id unknown to the kernel BTF: fall back to pids */
	CHECK_EQ(cg_init(root, no_memory_ssid), 0);
	CHECK_EQ(cg_attr_ssid(), 11);
	/* no lookup at all: no attribution hierarchy */
	CHECK_EQ(cg_init(root, NULL), 0);
	CHECK_EQ(cg_mode(), CG_MODE_HYBRID);
	CHECK_EQ(cg_attr_ssid(), -1);
	cg_cleanup();
	rm_root();
}

static void test_init_missing(void)
{
	CHECK_EQ(cg_init("/nonexistent/aiscope-test", fake_ssid), -ENOENT);
	CHECK_EQ(cg_mode(), CG_MODE_NONE);
	cg_cleanup();
}

static void test_cleanup_resets(void)
{
	CHECK_EQ(make_root(TMPFS UNIFIED MEMORY), 0);
	CHECK_EQ(cg_init(root, fake_ssid), 0);
	CHECK_EQ(cg_mode(), CG_MODE_HYBRID);
	cg_cleanup();
	CHECK_EQ(cg_mode(), CG_MODE_NONE);
	CHECK_EQ(cg_attr_ssid(), -1);
	rm_root();
}

static uint64_t ino_of(const char *rel)
{
	char p[512];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	return stat(p, &st) ? 0 : st.st_ino;
}

static void test_path_of_fake_tree(void)
{
	CHECK_EQ(make_root(TMPFS UNIFIED SYSTEMD MEMORY), 0);
	CHECK_EQ(mkdirs("sys/fs/cgroup/unified/system.slice/docker-" ID ".scope"), 0);
	CHECK_EQ(mkdirs("sys/fs/cgroup/memory/system.slice/docker-" ID ".scope"), 0);
	CHECK_EQ(mkdirs("sys/fs/cgroup/systemd/user.slice"), 0);
	CHECK_EQ(cg_init(root, fake_ssid), 0);
	CHECK_STR(cg_path_of(ino_of("sys/fs/cgroup/unified/system.slice/docker-" ID ".scope"), false),
		  "/system.slice/docker-" ID ".scope");
	CHECK_STR(cg_path_of(ino_of("sys/fs/cgroup/unified/system.slice"), false), "/system.slice");
	CHECK_STR(cg_path_of(ino_of("sys/fs/cgroup/unified"), false), "/");
	CHECK_STR(cg_path_of(ino_of("sys/fs/cgroup/memory/system.slice/docker-" ID ".scope"), true),
		  "/system.slice/docker-" ID ".scope");
	/* the named systemd hierarchy is not scanned */
	CHECK(cg_path_of(ino_of("sys/fs/cgroup/systemd/user.slice"), false) == NULL);
	CHECK(cg_path_of(ino_of("sys/fs/cgroup/systemd/user.slice"), true) == NULL);
	CHECK(cg_path_of(0, false) == NULL);
	cg_cleanup();
	rm_root();
}

static void test_find_container_fake_tree(void)
{
	char dir[4096], full[CONTAINER_ID_LEN + 1], want[4096];

	CHECK_EQ(make_root(TMPFS UNIFIED MEMORY), 0);
	CHECK_EQ(mkdirs("sys/fs/cgroup/unified/system.slice/docker-" ID ".scope"), 0);
	CHECK_EQ(mkdirs("sys/fs/cgroup/memory/system.slice/docker-" ID ".scope"), 0);
	CHECK_EQ(mkdirs("sys/fs/cgroup/memory/docker/" ID2), 0);
	CHECK_EQ(mkdirs("sys/fs/cgroup/unified/machine.slice/libpod-conmon-"
			"0123aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.scope"), 0);
	CHECK_EQ(cg_init(root, fake_ssid), 0);
	/* found in both hierarchies: one container, the v2 directory */
	CHECK_EQ(cg_find_container("0123", dir, sizeof(dir), full), 0);
	CHECK_STR(full, ID);
	snprintf(want, sizeof(want), "%s/sys/fs/cgroup/unified/system.slice/docker-%s.scope", root, ID);
	CHECK_STR(dir, want);
	/* only in the v1 memory hierarchy */
	CHECK_EQ(cg_find_container("fedcba98", dir, sizeof(dir), full), 0);
	CHECK_STR(full, ID2);
	snprintf(want, sizeof(want), "%s/sys/fs/cgroup/memory/docker/%s", root, ID2);
	CHECK_STR(dir, want);
	CHECK_EQ(cg_find_container(ID, dir, sizeof(dir), full), 0);
	CHECK_EQ(cg_find_container("abcd", dir, sizeof(dir), full), -ENOENT);
	CHECK_EQ(cg_find_container("012", dir, sizeof(dir), full), -EINVAL);
	CHECK_EQ(cg_find_container("0123ABCD", dir, sizeof(dir), full), -EINVAL);
	CHECK_EQ(cg_find_container("xyzw", dir, sizeof(dir), full), -EINVAL);
	CHECK_EQ(cg_find_container(ID "0", dir, sizeof(dir), full), -EINVAL);
	cg_cleanup();
	rm_root();
}

static void test_find_container_ambiguous(void)
{
	char dir[4096], full[CONTAINER_ID_LEN + 1];

	CHECK_EQ(make_root(UNIFIED), 0);
	CHECK_EQ(mkdirs("sys/fs/cgroup/unified/system.slice/docker-" ID ".scope"), 0);
	CHECK_EQ(mkdirs("sys/fs/cgroup/unified/system.slice/docker-"
			"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdee.scope"), 0);
	CHECK_EQ(cg_init(root, fake_ssid), 0);
	CHECK_EQ(cg_find_container("0123", dir, sizeof(dir), full), -EEXIST);
	CHECK_EQ(cg_find_container(ID, dir, sizeof(dir), full), 0);
	CHECK_STR(full, ID);
	cg_cleanup();
	rm_root();
}

static void test_target_of_dir_outside_cgroupfs(void)
{
	struct cg_target t;
	char p[256];
	FILE *f;

	CHECK_EQ(make_root(UNIFIED), 0);
	CHECK_EQ(cg_init(root, fake_ssid), 0);
	CHECK_EQ(cg_target_of_dir(root, &t), -EXDEV);
	snprintf(p, sizeof(p), "%s/nope", root);
	CHECK_EQ(cg_target_of_dir(p, &t), -ENOENT);
	snprintf(p, sizeof(p), "%s/proc/self/mountinfo", root);
	f = fopen(p, "r");
	CHECK(f != NULL);
	if (f)
		fclose(f);
	CHECK_EQ(cg_target_of_dir(p, &t), -ENOTDIR);
	cg_cleanup();
	rm_root();
}

/* ---- the id -> path cache under churn ---- */

static uint64_t fake_ns = 1000 * NSEC_PER_SEC;

static uint64_t fake_clock(void)
{
	return fake_ns;
}

#define CHURN_DIR "sys/fs/cgroup/unified/churn"

#define CHURN_ROUNDS 3
#define CHURN_MADE 1500		/* per round */
#define CHURN_KEPT 300		/* per round, the rest removed */

static uint64_t churn_ino[CHURN_ROUNDS * CHURN_MADE];

static void churn_make(int from, int to)
{
	char rel[128];

	for (int i = from; i < to; i++) {
		snprintf(rel, sizeof(rel), CHURN_DIR "/c%d", i);
		CHECK_EQ(mkdirs(rel), 0);
		churn_ino[i] = ino_of(rel);
	}
}

/* "removed": moved out of the hierarchy, not rmdir()ed, because a plain
 * file system hands a removed directory's inode number to the next one made
 * (the fake tree's ids), while the kernel never gives a cgroup id again */
static void churn_remove(int from, int to)
{
	char p[512], out[512];

	snprintf(out, sizeof(out), "%s/removed", root);
	if (mkdir(out, 0755) && errno != EEXIST)
		CHECK(0);
	for (int i = from; i < to; i++) {
		snprintf(p, sizeof(p), "%s/" CHURN_DIR "/c%d", root, i);
		snprintf(out, sizeof(out), "%s/removed/c%d", root, i);
		CHECK_EQ(rename(p, out), 0);
	}
}

/* how many of from..to the cache names by their own name */
static int churn_named(int from, int to)
{
	char want[64];
	int good = 0;

	for (int i = from; i < to; i++) {
		const char *got = cg_path_of(churn_ino[i], false);

		snprintf(want, sizeof(want), "/churn/c%d", i);
		good += got && !strcmp(got, want);
	}
	return good;
}

/* the kept cgroups of rounds 0..r-1 */
static int churn_kept(int r)
{
	int good = 0;

	for (int k = 0; k < r; k++)
		good += churn_named(k * CHURN_MADE, k * CHURN_MADE + CHURN_KEPT);
	return good;
}

/*
 * Each round makes 1500 cgroups and removes 1200 of them, which stay named
 * past a minute (a line at exit names what was removed long before). The
 * cache's cap is 2000 here: the next round's walk goes over it, and the
 * removed ones last seen longest ago are forgotten, each counted, while the
 * rest still resolve; the forgetting compacts a dense table. Before, a
 * moved entry's old slot kept its path pointer, so two slots shared one
 * string: a freed name returned for a live cgroup, and cg_cleanup() freed
 * it twice (ASan: double-free).
 */
static void test_path_cache_churn(void)
{
	const int gone = CHURN_MADE - CHURN_KEPT;

	cg_set_clock(fake_clock);
	CHECK_EQ(make_root(TMPFS UNIFIED), 0);
	CHECK_EQ(mkdirs(CHURN_DIR), 0);
	CHECK_EQ(cg_init(root, fake_ssid), 0);
	CHECK_EQ(cg_mode(), CG_MODE_V2);
	cg_set_cache_max(2000);
	for (int r = 0; r < CHURN_ROUNDS; r++) {
		int base = r * CHURN_MADE;
		size_t before = 2 + (size_t)r * CHURN_KEPT;	/* "/", churn, kept */

		churn_make(base, base + CHURN_MADE);
		fake_ns += 2 * NSEC_PER_SEC;			/* the first miss rescans */
		CHECK_EQ(churn_named(base, base + CHURN_MADE), CHURN_MADE);
		/* the walk went over the cap: the last round's removed ones
		 * are forgotten and counted, nothing else */
		CHECK_EQ(cg_cache_size(), before + CHURN_MADE);
		CHECK_EQ(cg_paths_evicted(), (uint64_t)r * gone);
		if (r)
			CHECK_EQ(churn_named(base - gone, base), 0);
		churn_remove(base + CHURN_KEPT, base + CHURN_MADE);
		/* a minute on, a rescan finds them gone: still named */
		fake_ns += 65 * NSEC_PER_SEC;
		CHECK(cg_path_of(1, false) == NULL);
		CHECK_EQ(cg_cache_size(), before + CHURN_MADE);
		CHECK_EQ(churn_named(base + CHURN_KEPT, base + CHURN_MADE), gone);
		CHECK_EQ(churn_kept(r + 1), (r + 1) * CHURN_KEPT);
		CHECK_STR(cg_path_of(ino_of(CHURN_DIR), false), "/churn");
	}
	cg_cleanup();			/* each path freed once */
	CHECK_EQ(cg_cache_size(), 0);
	CHECK_EQ(cg_paths_evicted(), 0);
	cg_set_clock(NULL);
	rm_root();
}

/* ---- the live cgroupfs: paths by file handle, no walk ---- */

static uint64_t ino_at(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : st.st_ino;
}

/* dir/name made (and, with gone, removed again); its id */
static uint64_t real_cg(const char *dir, const char *name, bool gone)
{
	char p[512];
	uint64_t id;

	snprintf(p, sizeof(p), "%s%s", dir, name);
	if (mkdir(p, 0755) && errno != EEXIST)
		return 0;
	id = ino_at(p);
	if (gone)
		rmdir(p);
	return id;
}

static void real_hier(const char *mnt, bool v1)
{
	char dir[PATH_MAX], want[PATH_MAX + 8];
	uint64_t a, b, c, d;
	size_t scans, kept;

	snprintf(dir, sizeof(dir), "%s/aiscope-unit-%d", mnt, (int)getpid());
	if (mkdir(dir, 0755)) {
		t_skip_why = "cannot make a cgroup here";
		return;
	}
	a = real_cg(dir, "/a", false);
	b = real_cg(dir, "/a/b", false);
	c = real_cg(dir, "/c", true);	/* removed before it is asked for */
	CHECK(a && b && c);
	scans = cg_scan_count();
	CHECK_STR(cg_path_of(ino_at(mnt), v1), "/");
	snprintf(want, sizeof(want), "/aiscope-unit-%d/a/b", (int)getpid());
	CHECK_STR(cg_path_of(b, v1), want);
	snprintf(want, sizeof(want), "/aiscope-unit-%d/a", (int)getpid());
	CHECK_STR(cg_path_of(a, v1), want);
	if (cg_watch_cpus()) {
		/* made while we ran: the cgroup_mkdir tracepoint has its path */
		snprintf(want, sizeof(want), "/aiscope-unit-%d/c", (int)getpid());
		CHECK_STR(cg_path_of(c, v1), want);
	} else {
		CHECK(cg_path_of(c, v1) == NULL);
	}
	CHECK_EQ(cg_scan_count(), scans);	/* not one walk */

	/* b removed: it stays named for the rest of the run (no lookup asks
	 * its handle again); a stays */
	snprintf(want, sizeof(want), "%s/a/b", dir);
	CHECK_EQ(rmdir(want), 0);
	kept = cg_cache_size();
	fake_ns += 31 * NSEC_PER_SEC;
	CHECK(cg_path_of(b, v1) != NULL);
	fake_ns += 31 * NSEC_PER_SEC;
	CHECK(cg_path_of(a, v1) != NULL);
	fake_ns += 3600 * NSEC_PER_SEC;
	CHECK(cg_path_of(a, v1) != NULL);
	CHECK_EQ(cg_cache_size(), kept);
	snprintf(want, sizeof(want), "/aiscope-unit-%d/a/b", (int)getpid());
	CHECK_STR(cg_path_of(b, v1), want);
	CHECK_EQ(cg_scan_count(), scans);

	/* over the cache's cap the removed ones (b, and c where the watcher
	 * named it), found gone by their handles then, are forgotten, counted;
	 * the live ones and a new one stay */
	cg_set_cache_max(cg_cache_size());
	d = real_cg(dir, "/d", false);
	snprintf(want, sizeof(want), "/aiscope-unit-%d/d", (int)getpid());
	CHECK_STR(cg_path_of(d, v1), want);
	CHECK_EQ(cg_paths_evicted(), cg_watch_cpus() ? 2 : 1);
	CHECK_EQ(cg_cache_size(), kept + 1 - (cg_watch_cpus() ? 2 : 1));
	CHECK(cg_path_of(b, v1) == NULL);
	CHECK(cg_path_of(c, v1) == NULL);
	CHECK(cg_path_of(a, v1) != NULL);
	CHECK_EQ(cg_scan_count(), scans);

	snprintf(want, sizeof(want), "%s/d", dir);
	rmdir(want);
	snprintf(want, sizeof(want), "%s/a", dir);
	rmdir(want);
	rmdir(dir);
}

/* each hierarchy from a fresh cache, so that only its own entries count */
static void test_path_of_real_cgroupfs(void)
{
	char v2[PATH_MAX] = "", mem[PATH_MAX] = "";
	bool v1_attr;

	if (geteuid())
		SKIP("not root (open_by_handle_at needs CAP_DAC_READ_SEARCH)");
	CHECK_EQ(cg_init(NULL, fake_ssid), 0);
	if (cg_v2_mount())
		snprintf(v2, sizeof(v2), "%s", cg_v2_mount());
	if (cg_v1_mount("memory"))
		snprintf(mem, sizeof(mem), "%s", cg_v1_mount("memory"));
	/* the v1 ids are the attribution hierarchy's: memory's when it has one */
	v1_attr = cg_attr_ssid() >= 0 && cg_mode() != CG_MODE_V2;
	cg_cleanup();
	if (!v2[0] && !mem[0])
		SKIP("no cgroupfs mounted");
	cg_set_clock(fake_clock);
	if (v2[0] && !cg_init(NULL, fake_ssid)) {
		real_hier(v2, false);
		cg_cleanup();
	}
	if (mem[0] && v1_attr && !cg_init(NULL, fake_ssid)) {
		real_hier(mem, true);
		cg_cleanup();
	}
	cg_set_clock(NULL);
}

/* ---- the cgroup_mkdir watcher wakes its reader and names containers ---- */

static const char *made_want;	/* the test's container (others may run here) */
static int made_calls;
static uint64_t made_id;	/* and the cgroup it was given, */
static bool made_v1;		/* of this hierarchy */

static void on_made(const struct container_info *c, uint64_t id, bool v1)
{
	if (made_want && !strcmp(c->id, made_want)) {
		made_calls++;
		made_id = id;
		made_v1 = v1;
	}
}

static void test_watch_made_real(void)
{
	static const char id[] = "abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789";
	char dir[PATH_MAX], sub[PATH_MAX + 80];
	struct pollfd p;

	if (geteuid())
		SKIP("not root");
	if (cg_init(NULL, fake_ssid) || !cg_v2_mount() || !cg_watch_cpus()) {
		cg_cleanup();
		SKIP("no cgroup2 or no cgroup_mkdir perf events here");
	}
	cg_watch_on_made(on_made);
	snprintf(dir, sizeof(dir), "%s/aiscope-unit-made-%d", cg_v2_mount(), (int)getpid());
	snprintf(sub, sizeof(sub), "%s/libpod-%s", dir, id);
	CHECK_EQ(mkdir(dir, 0755), 0);
	CHECK_EQ(mkdir(sub, 0755), 0);
	/* the record wakes the fd at once, not at a half-full buffer */
	p.fd = cg_watch_fd();
	p.events = POLLIN;
	CHECK(p.fd >= 0);
	CHECK_EQ(poll(&p, 1, 2000), 1);
	made_want = id;
	made_calls = 0;
	cg_watch_drain();
	CHECK_EQ(made_calls, 1);	/* once, though the parent was made too */
	CHECK_EQ(made_id, ino_at(sub));
	CHECK(!made_v1);
	/* read: the fd is quiet again */
	CHECK_EQ(poll(&p, 1, 0), 0);
	rmdir(sub);
	rmdir(dir);
	cg_watch_on_made(NULL);
	cg_cleanup();
}

/* a container's cgroup made before the tool: one walk keeps its path and
 * names it, though it is removed before its first lookup */
static void test_watch_existing_real(void)
{
	static const char id[] = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char dir[PATH_MAX], sub[PATH_MAX + 80], want[PATH_MAX + 80];
	uint64_t ino;

	if (geteuid())
		SKIP("not root");
	if (cg_init(NULL, fake_ssid) || !cg_v2_mount()) {
		cg_cleanup();
		SKIP("no cgroup2 here");
	}
	snprintf(dir, sizeof(dir), "%s/aiscope-unit-pre-%d", cg_v2_mount(), (int)getpid());
	snprintf(sub, sizeof(sub), "%s/libpod-%s", dir, id);
	CHECK_EQ(mkdir(dir, 0755), 0);
	CHECK_EQ(mkdir(sub, 0755), 0);
	ino = ino_at(sub);
	cg_cleanup();
	CHECK_EQ(cg_init(NULL, fake_ssid), 0);	/* made before this "tool" */
	cg_watch_on_made(on_made);
	made_want = id;
	made_calls = 0;
	cg_watch_existing();
	CHECK_EQ(made_calls, 1);
	CHECK_EQ(made_id, ino);
	CHECK(!made_v1);
	rmdir(sub);
	rmdir(dir);
	snprintf(want, sizeof(want), "/aiscope-unit-pre-%d/libpod-%s", (int)getpid(), id);
	CHECK_STR(cg_path_of(ino, false), want);
	cg_watch_on_made(NULL);
	cg_cleanup();
}

int main(void)
{
	RUN(test_docker_systemd);
	RUN(test_docker_cgroupfs);
	RUN(test_containerd_systemd_burstable);
	RUN(test_containerd_systemd_guaranteed_and_besteffort);
	RUN(test_kind_prefix);
	RUN(test_containerd_cgroupfs);
	RUN(test_containerd_raw_runc);
	RUN(test_crio_systemd);
	RUN(test_crio_conmon_is_not_a_container);
	RUN(test_crio_cgroupfs);
	RUN(test_podman);
	RUN(test_podman_rootless);
	RUN(test_nerdctl);
	RUN(test_static_pod_uid);
	RUN(test_pod_without_container);
	RUN(test_leaf_wins);
	RUN(test_rejects_uppercase);
	RUN(test_rejects_wrong_length);
	RUN(test_rejects_wrong_affixes);
	RUN(test_host_paths);
	RUN(test_no_slash_and_trailing_slash);
	RUN(test_reuses_info);
	RUN(test_init_modes);
	RUN(test_init_hybrid_unknown_ssid);
	RUN(test_init_missing);
	RUN(test_cleanup_resets);
	RUN(test_path_of_fake_tree);
	RUN(test_find_container_fake_tree);
	RUN(test_find_container_ambiguous);
	RUN(test_target_of_dir_outside_cgroupfs);
	RUN(test_path_cache_churn);
	RUN(test_path_of_real_cgroupfs);
	RUN(test_watch_made_real);
	RUN(test_watch_existing_real);
	return t_done();
}
