// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/cgset.c: --pod and --namespace, the cgroups of the containers whose
 * names match, from containerd task bundles of a fixture tree as CRI
 * leaves them; a container whose state comes later joins when it is read. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "t.h"
#include "cgroup.h"
#include "cgset.h"
#include "ctrmeta.h"

#define A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define D "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
#define E "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"	/* never written */
#define UA "0a1b2c3d-0000-4000-8000-00000000000a"
#define UC "0a1b2c3d-0000-4000-8000-00000000000c"

static char root[] = "/tmp/cgset-XXXXXX";
static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

/* a CRI container's bundle: pod, namespace */
static void bundle(const char *id, const char *pod, const char *ns)
{
	char dir[4096], cmd[8300], path[4200];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/run/containerd/io.containerd.runtime.v2.task/k8s.io/%s",
		 root, id);
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dir);
	if (system(cmd))
		abort();
	snprintf(path, sizeof(path), "%s/config.json", dir);
	f = fopen(path, "w");
	if (!f)
		abort();
	fprintf(f, "{\"annotations\":{\"io.kubernetes.cri.container-name\":\"c\","
		"\"io.kubernetes.cri.sandbox-name\":\"%s\","
		"\"io.kubernetes.cri.sandbox-namespace\":\"%s\"}}", pod, ns);
	fclose(f);
}

/* what the BPF map was given */
static struct aiscope_cgset_key got[16];
static int ngot, fail_next;

static int sink(const struct aiscope_cgset_key *k, void *ctx)
{
	(void)ctx;
	if (fail_next) {
		fail_next--;
		return -E2BIG;
	}
	got[ngot++] = *k;
	return 0;
}

static bool given(uint64_t id, uint32_t v1)
{
	for (int i = 0; i < ngot; i++)
		if (got[i].id == id && got[i].v1 == v1)
			return true;
	return false;
}

/* id's cgroup in kubelet's cgroupfs layout, as the watcher reports it */
static void made(const char *id, const char *pod_uid, uint64_t cgid, bool v1)
{
	char path[256];
	struct container_info ci;

	snprintf(path, sizeof(path), "/kubepods/besteffort/pod%s/%s", pod_uid, id);
	CHECK(cg_parse_container(path, &ci));
	cgset_made(&ci, cgid, v1);
}

static void start(const char *pod, const char *ns)
{
	cgset_reset();
	ngot = fail_next = 0;
	ctrmeta_set_root(root);
	cgset_want(pod, ns);
}

static void test_namespace(void)
{
	start(NULL, "ml");
	CHECK(cgset_active());
	cgset_attach(sink, NULL);
	made(A, UA, 10, false);
	made(B, UA, 11, false);
	made(C, UC, 12, false);
	made(A, UA, 20, true);		/* the attribution hierarchy's */
	made(A, UA, 10, false);		/* seen twice: at start and by the watcher */
	CHECK_EQ(cgset_members(), 3);
	CHECK_EQ(ngot, 3);
	CHECK(given(10, 0) && given(11, 0) && given(20, 1));
	CHECK(!given(12, 0));
	CHECK_EQ(cgset_dropped(), 0);
}

static void test_pod(void)
{
	start("job-0", NULL);
	cgset_attach(sink, NULL);
	made(A, UA, 10, false);
	made(B, UA, 11, false);
	made(C, UC, 12, false);
	CHECK_EQ(ngot, 2);
	CHECK(given(10, 0) && given(12, 0));
	start("job-0", "ml");
	cgset_attach(sink, NULL);
	made(A, UA, 10, false);
	made(C, UC, 12, false);
	CHECK_EQ(ngot, 1);
	CHECK(given(10, 0));
	CHECK(!cgset_names_match(C, NULL));
	CHECK(cgset_names_match(A, NULL));
}

/* members found before the map exists (opts, at start) go to it at
 * attach; one it refuses is counted and is no member */
static void test_attach_later(void)
{
	start(NULL, "ml");
	made(A, UA, 10, false);
	made(B, UA, 11, false);
	CHECK_EQ(cgset_members(), 2);
	fail_next = 1;
	cgset_attach(sink, NULL);
	CHECK_EQ(ngot, 1);
	CHECK(given(11, 0));
	CHECK_EQ(cgset_members(), 1);
	CHECK_EQ(cgset_dropped(), 1);
}

/* a container whose state is written after its cgroup: it waits, and
 * joins once ctrmeta reads it */
static void test_names_later(void)
{
	start(NULL, "ml");
	cgset_attach(sink, NULL);
	made(D, UA, 13, false);
	CHECK_EQ(ngot, 0);
	bundle(D, "job-2", "ml");
	cgset_poll();
	CHECK_EQ(ngot, 0);		/* ctrmeta reads a miss again after a second */
	fake_now += 2000000000ULL;
	cgset_poll();
	CHECK_EQ(ngot, 1);
	CHECK(given(13, 0));
	cgset_poll();
	CHECK_EQ(ngot, 1);
}

/* a container whose names never become readable: after the wait it
 * leaves the queue, untraced, and is counted */
static void test_names_never(void)
{
	start(NULL, "ml");
	cgset_attach(sink, NULL);
	made(E, UA, 14, false);
	cgset_poll();
	CHECK_EQ(cgset_dropped(), 0);
	fake_now += 7000000000ULL;
	cgset_poll();
	CHECK_EQ(ngot, 0);
	CHECK_EQ(cgset_dropped(), 1);
	cgset_poll();
	CHECK_EQ(cgset_dropped(), 1);
}

/* oomwatch's memory cgroups: a matching container's, one below it, the pod
 * cgroup of a member; not another pod's, nor one of no container */
static void test_paths(void)
{
	start(NULL, "ml");
	made(A, UA, 10, false);
	CHECK(cgset_path_wanted("/kubepods/besteffort/pod" UA "/" A));
	CHECK(cgset_path_wanted("/kubepods/besteffort/pod" UA "/" A "/sub"));
	CHECK(cgset_path_wanted("/kubepods/besteffort/pod" UA));
	CHECK(!cgset_path_wanted("/kubepods/besteffort/pod" UC "/" C));
	CHECK(!cgset_path_wanted("/kubepods/besteffort/pod" UC));
	CHECK(!cgset_path_wanted("/system.slice/cron.service"));
	CHECK(!cgset_path_wanted(NULL));
}

int main(void)
{
	char cmd[64];

	if (!mkdtemp(root))
		return 1;
	ctrmeta_set_clock(fake_clock);
	fake_now = 1000000000ULL;
	bundle(A, "job-0", "ml");
	bundle(B, "job-1", "ml");
	bundle(C, "job-0", "dev");
	RUN(test_namespace);
	RUN(test_pod);
	RUN(test_attach_later);
	RUN(test_names_later);
	RUN(test_names_never);
	RUN(test_paths);
	ctrmeta_cleanup();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	if (system(cmd))
		return 1;
	return t_done();
}
