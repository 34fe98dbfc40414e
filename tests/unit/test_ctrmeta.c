// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/ctrmeta.c: container names from a fixture tree laid out as podman,
 * CRI-O, containerd (CRI and plain ctr), runc and docker leave their state. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "t.h"
#include "ctrmeta.h"

#define PODMAN "1111111111111111111111111111111111111111111111111111111111111111"
#define CRI    "2222222222222222222222222222222222222222222222222222222222222222"
#define CTR    "3333333333333333333333333333333333333333333333333333333333333333"
#define RUNC   "4444444444444444444444444444444444444444444444444444444444444444"
#define DOCKER "5555555555555555555555555555555555555555555555555555555555555555"
#define CRIO   "6666666666666666666666666666666666666666666666666666666666666666"
#define NONE   "7777777777777777777777777777777777777777777777777777777777777777"
#define CRIO_OLD "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define POD_CTR  "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define POD_OLD  "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"
#define MIMIC    "dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd"
/* CRI-O's: a pod's uid, its sandbox's id, the image's and the layer's */
#define UID      "5f3c0d2e-8a41-4c6b-9e7d-1b2a3c4d5e6f"
#define SANDBOX  "0a1b2c3d0a1b2c3d0a1b2c3d0a1b2c3d0a1b2c3d0a1b2c3d0a1b2c3d0a1b2c3d"
#define IMG      "9c1d0e2f9c1d0e2f9c1d0e2f9c1d0e2f9c1d0e2f9c1d0e2f9c1d0e2f9c1d0e2f"
#define LAYER    "4e5f6a7b4e5f6a7b4e5f6a7b4e5f6a7b4e5f6a7b4e5f6a7b4e5f6a7b4e5f6a7b"
#define CRIO_NAME "k8s_api_api-7_prod_" UID "_0"
/* a quote in a JSON string in the JSON (metadata, CRI-O's Labels) */
#define IQ "\\\""
#define ISTR(k, v) IQ k IQ ":" IQ v IQ

static char root[] = "/tmp/ctrmeta-XXXXXX";
static uint64_t fake_now;

static uint64_t fake_clock(void)
{
	return fake_now;
}

static void mkfile(const char *rel, const char *text)
{
	char path[4096], cmd[8300];
	FILE *f;

	snprintf(path, sizeof(path), "%s%s", root, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	if (system(cmd))
		abort();
	f = fopen(path, "w");
	if (!f)
		abort();
	fputs(text, f);
	fclose(f);
}

#define STORAGE "/var/lib/containers/storage/overlay-containers"

/*
 * containers/storage's records, podman's and CRI-O's, as they write them:
 * names, and metadata as a JSON string (CRI-O's image-name is the image
 * as kubelet asked for it, here by id)
 */
static const char storage_records[] =
	"[{\"id\":\"" NONE "0\",\"names\":[\"other\"]},"
	"{\"id\":\"" PODMAN "\",\"names\":[\"web-1\"],\"image\":\"abc\","
	"\"metadata\":\"{\\\"image-name\\\":\\\"localhost/web:1\\\",\\\"name\\\":\\\"web-1\\\"}\"},"
	"{\"id\":\"" CRIO "\",\"names\":[\"" CRIO_NAME "\"],\"image\":\"" IMG "\","
	"\"layer\":\"" LAYER "\",\"metadata\":\"{" ISTR("pod-name", "k8s_api-7_prod_" UID "_0") ","
	ISTR("pod-id", SANDBOX) "," ISTR("image-name", IMG) "," ISTR("image-id", IMG) ","
	ISTR("name", CRIO_NAME) "," ISTR("metadata-name", "api") "," IQ "created-at" IQ ":1717171717}\","
	"\"created\":\"2024-05-31T16:08:37.123456789Z\",\"flags\":{\"MountLabel\":\"\"}},"
	"{\"id\":\"" CRIO_OLD "\",\"names\":[\"k8s_worker_batch-2_jobs_" UID "_0\"],"
	"\"metadata\":\"{" ISTR("image-name", IMG) "," ISTR("name", "k8s_worker_batch-2_jobs_" UID "_0")
	"}\"},"
	"{\"id\":\"" POD_CTR "\",\"names\":[\"shop-app\"],\"image\":\"" IMG "\",\"layer\":\"" LAYER "\","
	"\"metadata\":\"{" ISTR("image-name", "docker.io/library/nginx:1.25") "," ISTR("image-id", IMG) ","
	ISTR("name", "shop-app") "," IQ "created-at" IQ ":1717171717}\"},"
	"{\"id\":\"" POD_OLD "\",\"names\":[\"legacy\"],"
	"\"metadata\":\"{" ISTR("image-name", "localhost/legacy:1") "," ISTR("name", "legacy") "}\"},"
	"{\"id\":\"" MIMIC "\",\"names\":[\"mimic\"],"
	"\"metadata\":\"{" ISTR("image-name", "localhost/mimic:1") "," ISTR("name", "mimic") "}\"}]";

/* CRI-O's spec of a container (internal/factory/container): its own keys,
 * kubelet's labels both as one JSON string and one by one, kubelet's
 * annotations */
static const char crio_spec[] =
	"{\"ociVersion\":\"1.0.2-dev\",\"annotations\":{"
	"\"io.container.manager\":\"cri-o\","
	"\"io.kubernetes.container.hash\":\"8b7d4f2a\","
	"\"io.kubernetes.container.name\":\"api\","
	"\"io.kubernetes.container.restartCount\":\"0\","
	"\"io.kubernetes.cri-o.Annotations\":\"{" ISTR("io.kubernetes.container.hash", "8b7d4f2a") ","
	ISTR("io.kubernetes.container.restartCount", "0") "}\","
	"\"io.kubernetes.cri-o.ContainerID\":\"" CRIO "\","
	"\"io.kubernetes.cri-o.ContainerType\":\"container\","
	"\"io.kubernetes.cri-o.Created\":\"2024-05-31T16:08:37.123456789Z\","
	"\"io.kubernetes.cri-o.Image\":\"" IMG "\","
	"\"io.kubernetes.cri-o.ImageName\":\"quay.io/acme/api:3\","
	"\"io.kubernetes.cri-o.ImageRef\":\"" IMG "\","
	"\"io.kubernetes.cri-o.Labels\":\"{" ISTR("io.kubernetes.container.name", "api") ","
	ISTR("io.kubernetes.pod.name", "api-7") "," ISTR("io.kubernetes.pod.namespace", "prod") ","
	ISTR("io.kubernetes.pod.uid", UID) "}\","
	"\"io.kubernetes.cri-o.LogPath\":\"/var/log/pods/prod_api-7_" UID "/api/0.log\","
	"\"io.kubernetes.cri-o.Metadata\":\"{" ISTR("name", "api") "}\","
	"\"io.kubernetes.cri-o.MountPoint\":\"/var/lib/containers/storage/overlay/" LAYER "/merged\","
	"\"io.kubernetes.cri-o.Name\":\"" CRIO_NAME "\","
	"\"io.kubernetes.cri-o.SandboxID\":\"" SANDBOX "\","
	"\"io.kubernetes.cri-o.SandboxName\":\"k8s_api-7_prod_" UID "_0\","
	"\"io.kubernetes.cri-o.TTY\":\"false\","
	"\"io.kubernetes.pod.name\":\"api-7\","
	"\"io.kubernetes.pod.namespace\":\"prod\","
	"\"io.kubernetes.pod.uid\":\"" UID "\"}}";

static void storage_fixture(void)
{
	mkfile(STORAGE "/containers.json", storage_records);
	/* podman: the spec of podman run */
	mkfile(STORAGE "/" PODMAN "/userdata/config.json",
	       "{\"annotations\":{\"io.container.manager\":\"libpod\"}}");
	mkfile(STORAGE "/" CRIO "/userdata/config.json", crio_spec);
	/* CRI-O before 1.16: no io.container.manager; kubelet's labels left
	 * in its Labels string alone, so that the string is what is read */
	mkfile(STORAGE "/" CRIO_OLD "/userdata/config.json",
	       "{\"annotations\":{\"io.kubernetes.cri-o.ContainerType\":\"container\","
	       "\"io.kubernetes.cri-o.ImageName\":\"quay.io/acme/worker:1\","
	       "\"io.kubernetes.cri-o.Labels\":\"{" ISTR("io.kubernetes.container.name", "worker") ","
	       ISTR("io.kubernetes.pod.name", "batch-2") ","
	       ISTR("io.kubernetes.pod.namespace", "jobs") "}\","
	       "\"io.kubernetes.cri-o.Name\":\"k8s_worker_batch-2_jobs_" UID "_0\"}}");
	/* podman run --pod (podman 2 to 4.3): CRI-O's SandboxID, ContainerType
	 * and TTY, written for kata */
	mkfile(STORAGE "/" POD_CTR "/userdata/config.json",
	       "{\"annotations\":{\"io.container.manager\":\"libpod\","
	       "\"io.kubernetes.cri-o.ContainerType\":\"container\","
	       "\"io.kubernetes.cri-o.SandboxID\":\"" SANDBOX "\","
	       "\"io.kubernetes.cri-o.TTY\":\"false\","
	       "\"org.opencontainers.image.stopSignal\":\"3\"}}");
	/* the same without io.container.manager (podman before 1.6 wrote
	 * none): CRI-O's keys that podman writes too are not CRI-O's mark */
	mkfile(STORAGE "/" POD_OLD "/userdata/config.json",
	       "{\"annotations\":{\"io.kubernetes.cri-o.ContainerType\":\"container\","
	       "\"io.kubernetes.cri-o.SandboxID\":\"" SANDBOX "\","
	       "\"io.kubernetes.cri-o.TTY\":\"false\"}}");
	/* podman run --annotation with CRI-O's keys: io.container.manager decides */
	mkfile(STORAGE "/" MIMIC "/userdata/config.json",
	       "{\"annotations\":{\"io.container.manager\":\"libpod\","
	       "\"io.kubernetes.cri-o.Name\":\"k8s_x_y_z_0\","
	       "\"io.kubernetes.cri-o.ImageName\":\"quay.io/x:1\"}}");
}

static void fixture(void)
{
	storage_fixture();
	/* containerd, CRI: the bundle's annotations */
	mkfile("/run/containerd/io.containerd.runtime.v2.task/k8s.io/" CRI "/config.json",
	       "{\"annotations\":{\"io.kubernetes.cri.container-type\":\"container\","
	       "\"io.kubernetes.cri.container-name\":\"trainer\","
	       "\"io.kubernetes.cri.sandbox-name\":\"job-0\","
	       "\"io.kubernetes.cri.sandbox-namespace\":\"ml\","
	       "\"io.kubernetes.cri.image-name\":\"registry.example/train:2\"}}");
	/* containerd, plain ctr: nerdctl's name annotation */
	mkfile("/run/containerd/io.containerd.runtime.v2.task/default/" CTR "/config.json",
	       "{\"annotations\":{\"nerdctl/name\":\"batch\"}}");
	/* runc alone: state.json's labels carry the annotations and the bundle */
	mkfile("/run/runc/" RUNC "/state.json",
	       "{\"id\":\"" RUNC "\",\"config\":{\"labels\":[\"io.kubernetes.pod.name=p\","
	       "\"bundle=/b\",\"io.kubernetes.pod.namespace=ns\",\"junk\"]}}");
	mkfile("/var/lib/docker/containers/" DOCKER "/config.v2.json",
	       "{\"Name\":\"/db\",\"Config\":{\"Image\":\"postgres:16\",\"Labels\":"
	       "{\"io.kubernetes.container.name\":\"pg\",\"io.kubernetes.pod.name\":\"db-0\","
	       "\"ai.model.name\":\"llama-3\",\"ai.version\":\"7\"}}}");
}

static int rm_one(const char *p, const struct stat *s, int f, struct FTW *w)
{
	(void)s; (void)f; (void)w;
	return remove(p);
}

/* what one lookup must find; a NULL field is not checked */
struct meta_case {
	const char *id, *hint;
	const char *runtime, *name, *image, *k8s_container, *pod_name, *pod_namespace;
};

static void check_field(const char *id, const char *field, const char *got, const char *want)
{
	if (want)
		CHECK_CASE(got && !strcmp(got, want), "%.12s %s \"%s\", expected \"%s\"",
			   id, field, got ? got : "(null)", want);
}

/* each runtime's layout, read in the order the rows give */
static void test_lookups(void)
{
	static const struct meta_case c[] = {
		/* podman */
		{ PODMAN, "podman", "podman", "web-1", "localhost/web:1", NULL, "", NULL },
		/* the runtime the cgroup named is a hint, not a must */
		{ PODMAN, NULL, NULL, "web-1", NULL, NULL, NULL, NULL },
		/* containerd under CRI, then plain ctr */
		{ CRI, NULL, "containerd", "", "registry.example/train:2", "trainer", "job-0", "ml" },
		{ CTR, "containerd", "containerd", "batch", NULL, NULL, NULL, NULL },
		/* runc alone, docker */
		{ RUNC, NULL, "runc", RUNC, NULL, NULL, "p", "ns" },
		{ DOCKER, "docker", "docker", "db", "postgres:16", "pg", "db-0", NULL },
		/* CRI-O in podman's layout, its image the spec's, not storage's id */
		{ CRIO, NULL, "crio", CRIO_NAME, "quay.io/acme/api:3", "api", "api-7", "prod" },
		{ CRIO_OLD, NULL, "crio", NULL, "quay.io/acme/worker:1", "worker", "batch-2", "jobs" },
		/* podman's pod containers carry CRI-O's SandboxID and ContainerType */
		{ POD_CTR, NULL, "podman", "shop-app", "docker.io/library/nginx:1.25", "", "", "" },
		{ POD_OLD, NULL, "podman", "legacy", "localhost/legacy:1", NULL, NULL, NULL },
		{ MIMIC, NULL, "podman", "mimic", "localhost/mimic:1", NULL, NULL, NULL },
	};

	for (size_t i = 0; i < T_ROWS(c); i++) {
		const struct ctr_meta *m = ctrmeta_lookup(c[i].id, c[i].hint);

		CHECK_CASE(m->found, "%.12s", c[i].id);
		check_field(c[i].id, "runtime", m->runtime, c[i].runtime);
		check_field(c[i].id, "name", m->name, c[i].name);
		check_field(c[i].id, "image", m->image, c[i].image);
		check_field(c[i].id, "k8s_container", m->k8s_container, c[i].k8s_container);
		check_field(c[i].id, "pod_name", m->pod_name, c[i].pod_name);
		check_field(c[i].id, "pod_namespace", m->pod_namespace, c[i].pod_namespace);
	}
}

static void test_miss_retried_once_a_second(void)
{
	const struct ctr_meta *m;
	uint64_t reads;

	fake_now = 1000000000ULL;
	m = ctrmeta_lookup(NONE, NULL);
	CHECK(!m->found);
	CHECK(!m->runtime);
	reads = ctrmeta_reads();
	m = ctrmeta_lookup(NONE, NULL);
	CHECK_EQ(ctrmeta_reads(), reads);	/* cached miss */
	/* its state appears while it starts */
	mkfile("/run/runc/" NONE "/state.json", "{\"id\":\"late\"}");
	fake_now += 500000000ULL;
	CHECK(!ctrmeta_lookup(NONE, NULL)->found);
	fake_now += 600000000ULL;
	m = ctrmeta_lookup(NONE, NULL);
	CHECK(m->found);
	CHECK_STR(m->name, "late");
	CHECK_EQ(ctrmeta_reads(), reads + 1);
	/* hits read nothing */
	ctrmeta_lookup(NONE, NULL);
	ctrmeta_lookup(PODMAN, NULL);
	CHECK_EQ(ctrmeta_reads(), reads + 1);
}

static void test_bad_ids(void)
{
	CHECK(!ctrmeta_lookup("../../etc", NULL)->found);
	CHECK(!ctrmeta_lookup("", NULL)->found);
	CHECK(!ctrmeta_lookup(NULL, NULL)->found);
	CHECK(!ctrmeta_lookup("..", "podman")->found);
}

/* fn(id) for the ids PREFIX0 to PREFIX<n - 1>, on a cache emptied first */
static void for_ids(const char *prefix, int n, void (*fn)(const char *id))
{
	char id[32];

	ctrmeta_set_root(root);
	for (int i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "%s%d", prefix, i);
		fn(id);
	}
}

static void lookup_id(const char *id)
{
	ctrmeta_lookup(id, NULL);
}

static void expect_id(const char *id)
{
	ctrmeta_expect(id, NULL);
}

static void test_cap_counts_evictions(void)
{
	for_ids("x", CTRMETA_CAP + 10, lookup_id);
	CHECK_EQ(ctrmeta_cache_size(), CTRMETA_CAP);
	CHECK_EQ(ctrmeta_evicted(), 10);
	/* the oldest went, the newest stays and still resolves */
	CHECK(ctrmeta_lookup(PODMAN, NULL)->found);
	CHECK_EQ(ctrmeta_evicted(), 11);
	CHECK_STR(ctrmeta_lookup(PODMAN, NULL)->name, "web-1");
}

static void test_find_name(void)
{
	char id[129];

	ctrmeta_set_root(root);
	CHECK_EQ(ctrmeta_find_name("web-1", id, sizeof(id)), 0);
	CHECK_STR(id, PODMAN);
	CHECK_EQ(ctrmeta_find_name("trainer", id, sizeof(id)), 0);
	CHECK_STR(id, CRI);
	CHECK_EQ(ctrmeta_find_name("batch", id, sizeof(id)), 0);
	CHECK_STR(id, CTR);
	CHECK_EQ(ctrmeta_find_name("db", id, sizeof(id)), 0);
	CHECK_STR(id, DOCKER);
	CHECK_EQ(ctrmeta_find_name("nosuch", id, sizeof(id)), -ENOENT);
	/* two containers with one name */
	mkfile("/var/lib/docker/containers/" NONE "1/config.v2.json", "{\"Name\":\"/batch\"}");
	CHECK_EQ(ctrmeta_find_name("batch", id, sizeof(id)), -EEXIST);
}

static void test_find_pod(void)
{
	char ids[4][129];

	ctrmeta_set_root(root);
	CHECK_EQ(ctrmeta_find_pod("job-0", NULL, ids, 4), 1);
	CHECK_STR(ids[0], CRI);
	CHECK_EQ(ctrmeta_find_pod("job-0", "ml", ids, 4), 1);
	CHECK_EQ(ctrmeta_find_pod("job-0", "other", ids, 4), 0);
	CHECK_EQ(ctrmeta_find_pod("db-0", NULL, ids, 4), 1);
	CHECK_STR(ids[0], DOCKER);
	CHECK_EQ(ctrmeta_find_pod("api-7", "prod", ids, 4), 1);
	CHECK_STR(ids[0], CRIO);
	CHECK_EQ(ctrmeta_find_pod("nosuch", NULL, ids, 4), 0);
	CHECK_EQ(ctrmeta_find_pod("", NULL, ids, 4), -EINVAL);
}

/* the labels --metric-label chose: docker's labels, a spec's annotations,
 * runc's bundle labels; "" where a container has none of that key */
static void test_chosen_labels(void)
{
	static const char *const keys[] = { "ai.version", "io.container.manager", "bundle",
					    "ai.model.name" };
	const struct ctr_meta *m;

	ctrmeta_set_labels(keys, 4);
	m = ctrmeta_lookup(DOCKER, "docker");
	CHECK_STR(m->labels[0], "7");
	CHECK_STR(m->labels[1], "");
	CHECK_STR(m->labels[2], "");
	CHECK_STR(m->labels[3], "llama-3");
	CHECK_STR(m->name, "db");		/* the rest as before */
	m = ctrmeta_lookup(PODMAN, "podman");
	CHECK_STR(m->labels[1], "libpod");
	CHECK_STR(m->labels[3], "");
	m = ctrmeta_lookup(RUNC, NULL);
	CHECK_STR(m->labels[2], "/b");
	CHECK_STR(m->labels[0], "");
	ctrmeta_set_labels(NULL, 0);
	CHECK_STR(ctrmeta_lookup(DOCKER, "docker")->labels[0], "");
	ctrmeta_set_root(root);
	ctrmeta_set_clock(fake_clock);
}

/* stderr of fn() into buf */
static void capture_stderr(void (*fn)(void), char *buf, size_t size)
{
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t n;

	fflush(stderr);
	dup2(fileno(f), STDERR_FILENO);
	fn();
	fflush(stderr);
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(f);
	n = fread(buf, 1, size - 1, f);
	buf[n] = 0;
	fclose(f);
}

static void lookups_in_broken_state(void)
{
	for (int i = 0; i < 3; i++) {
		CHECK(!ctrmeta_lookup(PODMAN, "podman")->found);
		CHECK(!ctrmeta_lookup(CTR, "podman")->found);
		CHECK(!ctrmeta_lookup(RUNC, NULL)->found);
		fake_now += 2000000000ULL;	/* each miss read again */
	}
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/* A state that exists but cannot be read: ids only, said once per file kind */
static void test_unreadable_state_warns_once(void)
{
	char broken[] = "/tmp/ctrmeta-bad-XXXXXX", cmd[4096], err[4096];

	if (!mkdtemp(broken))
		abort();
	/* podman's record cut short; a directory where runc's state file is */
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/var/lib/containers/storage/overlay-containers "
		 "%s/run/runc/" RUNC "/state.json && printf '[{\"id\": ' > "
		 "%s/var/lib/containers/storage/overlay-containers/containers.json",
		 broken, broken, broken);
	if (system(cmd))
		abort();
	ctrmeta_set_root(broken);
	capture_stderr(lookups_in_broken_state, err, sizeof(err));
	CHECK_EQ(count(err, "overlay-containers/containers.json: not valid JSON; its containers are "
		       "shown by id only\n"), 1);
	CHECK_EQ(count(err, "/run/runc/" RUNC "/state.json: not a regular file"), 1);
	CHECK_EQ(count(err, "\n"), 2);
	ctrmeta_set_root(root);
	nftw(broken, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* a FIFO where a runtime keeps its state (a writer that never comes): the
 * lookup must not wait in open() for one; it warns as for any file that is
 * not a regular one, and SIGALRM ends the test if it blocks */
static void test_fifo_state_never_blocks(void)
{
	char dir[] = "/tmp/ctrmeta-fifo-XXXXXX", p[4096], err[4096];

	if (!mkdtemp(dir))
		abort();
	snprintf(p, sizeof(p), "mkdir -p %s/var/lib/containers/storage/overlay-containers "
		 "%s/run/runc/" RUNC, dir, dir);
	if (system(p))
		abort();
	snprintf(p, sizeof(p), "%s/var/lib/containers/storage/overlay-containers/containers.json", dir);
	CHECK_EQ(mkfifo(p, 0600), 0);
	snprintf(p, sizeof(p), "%s/run/runc/" RUNC "/state.json", dir);
	CHECK_EQ(mkfifo(p, 0600), 0);
	ctrmeta_set_root(dir);
	alarm(10);
	capture_stderr(lookups_in_broken_state, err, sizeof(err));
	alarm(0);
	CHECK_EQ(count(err, "overlay-containers/containers.json: not a regular file"), 1);
	CHECK_EQ(count(err, "/run/runc/" RUNC "/state.json: not a regular file"), 1);
	CHECK_EQ(count(err, "\n"), 2);
	ctrmeta_set_root(root);
	nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

#define EARLY  "8888888888888888888888888888888888888888888888888888888888888888"
#define RUNC_Q "9999999999999999999999999999999999999999999999999999999999999999"
#define MS 1000000ULL

/* a container just made: read at once, then within 10 ms, not after the
 * 1 s of a miss, and kept once found (its state may go right after) */
static void test_expect_retries_fast(void)
{
	char path[4096];
	uint64_t reads;

	ctrmeta_set_root(root);
	fake_now = 100 * MS;
	reads = ctrmeta_reads();
	ctrmeta_expect(EARLY, NULL);
	CHECK_EQ(ctrmeta_reads(), reads + 1);
	CHECK_EQ(ctrmeta_waiting(), 1);
	CHECK_EQ(ctrmeta_poll(), 10);
	fake_now += 4 * MS;
	CHECK_EQ(ctrmeta_poll(), 6);		/* not due: nothing read */
	CHECK_EQ(ctrmeta_reads(), reads + 1);
	fake_now += 6 * MS;
	CHECK_EQ(ctrmeta_poll(), 20);		/* read, missed, twice the wait */
	CHECK_EQ(ctrmeta_reads(), reads + 2);
	mkfile("/run/runc/" EARLY "/state.json", "{\"id\":\"quick\"}");
	fake_now += 20 * MS;
	CHECK_EQ(ctrmeta_poll(), -1);
	CHECK_EQ(ctrmeta_waiting(), 0);
	/* gone from disk, still named; expecting it again reads nothing */
	snprintf(path, sizeof(path), "%s/run/runc/" EARLY "/state.json", root);
	CHECK_EQ(unlink(path), 0);
	reads = ctrmeta_reads();
	ctrmeta_expect(EARLY, NULL);
	CHECK_STR(ctrmeta_lookup(EARLY, NULL)->name, "quick");
	CHECK_EQ(ctrmeta_reads(), reads);
	/* one never found waits 5 s, backing off to 100 ms */
	ctrmeta_expect(NONE "9", NULL);
	for (int i = 0; i < 5; i++) {
		fake_now += 100 * MS;
		ctrmeta_poll();
	}
	CHECK_EQ(ctrmeta_poll(), 100);
	fake_now += 5000 * MS;
	CHECK_EQ(ctrmeta_poll(), -1);
	CHECK_EQ(ctrmeta_waiting(), 0);
	CHECK(!ctrmeta_lookup(NONE "9", NULL)->found);
}

/* runc's state lives for milliseconds: its rename wakes the watch fd, and
 * the next poll reads it though no timer is due */
static void test_expect_runc_rename_wakes(void)
{
	char tmp[4096], final[4096];
	struct pollfd p;
	FILE *f;

	ctrmeta_set_root(root);
	fake_now = 100 * MS;
	mkfile("/run/runc/" RUNC_Q "/exec.fifo", "");
	ctrmeta_expect(RUNC_Q, NULL);
	CHECK_EQ(ctrmeta_waiting(), 1);
	p.fd = ctrmeta_watch_fd();
	p.events = POLLIN;
	CHECK(p.fd >= 0);
	CHECK_EQ(poll(&p, 1, 0), 0);
	snprintf(tmp, sizeof(tmp), "%s/run/runc/" RUNC_Q "/state-1", root);
	snprintf(final, sizeof(final), "%s/run/runc/" RUNC_Q "/state.json", root);
	f = fopen(tmp, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs("{\"id\":\"" RUNC_Q "\"}", f);
	fclose(f);
	CHECK_EQ(rename(tmp, final), 0);
	CHECK_EQ(poll(&p, 1, 1000), 1);
	fake_now += 1 * MS;			/* the timer is 9 ms away */
	CHECK_EQ(ctrmeta_poll(), -1);
	CHECK_EQ(ctrmeta_waiting(), 0);
	/* its watch's removal (IN_IGNORED) is read by the next poll */
	CHECK_EQ(ctrmeta_poll(), -1);
	CHECK_EQ(poll(&p, 1, 0), 0);
	CHECK(ctrmeta_lookup(RUNC_Q, NULL)->found);
	CHECK_STR(ctrmeta_lookup(RUNC_Q, NULL)->runtime, "runc");
	unlink(final);
}

static void test_expect_queue_bounded(void)
{
	for_ids("w", CTRMETA_WAITING + 3, expect_id);
	CHECK_EQ(ctrmeta_waiting(), CTRMETA_WAITING);
	CHECK_EQ(ctrmeta_expect_dropped(), 3);
	ctrmeta_expect("w0", NULL);		/* already waiting: not dropped */
	CHECK_EQ(ctrmeta_expect_dropped(), 3);
	ctrmeta_set_root(root);
	CHECK_EQ(ctrmeta_waiting(), 0);
	CHECK_EQ(ctrmeta_expect_dropped(), 0);
}

int main(void)
{
	if (!mkdtemp(root))
		return 1;
	fixture();
	ctrmeta_set_root(root);
	ctrmeta_set_clock(fake_clock);
	RUN(test_lookups);
	RUN(test_miss_retried_once_a_second);
	RUN(test_bad_ids);
	RUN(test_cap_counts_evictions);
	RUN(test_find_name);
	RUN(test_find_pod);
	RUN(test_chosen_labels);
	RUN(test_unreadable_state_warns_once);
	RUN(test_fifo_state_never_blocks);
	RUN(test_expect_retries_fast);
	RUN(test_expect_runc_rename_wakes);
	RUN(test_expect_queue_bounded);
	ctrmeta_cleanup();
	nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
	return t_done();
}
