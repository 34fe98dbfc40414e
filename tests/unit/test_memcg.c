// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/memcg: the parsers, and the set against fake v1 and v2 trees. */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "memcg.h"
#include "t.h"

static void test_parse_limit(void)
{
	uint64_t v;

	CHECK_EQ(memcg_parse_limit("max\n", &v), 0);
	CHECK(v == MEMCG_NO_LIMIT);
	CHECK_EQ(memcg_parse_limit("67108864\n", &v), 0);
	CHECK_EQ(v, 67108864);
	/* v1's unlimited: PAGE_COUNTER_MAX pages in bytes */
	CHECK_EQ(memcg_parse_limit("9223372036854771712\n", &v), 0);
	CHECK(v == MEMCG_NO_LIMIT);
	CHECK_EQ(memcg_parse_limit("0", &v), 0);
	CHECK_EQ(v, 0);
	CHECK_EQ(memcg_parse_limit("", &v), -EINVAL);
	CHECK_EQ(memcg_parse_limit("12x\n", &v), -EINVAL);
	CHECK_EQ(memcg_parse_limit("maximum", &v), -EINVAL);
}

static void test_parse_key(void)
{
	static const char stat[] = "cache 4096\nrss 8192\ninactive_file 123\ntotal_inactive_file 456\n";
	static const char events[] = "low 0\nhigh 3\nmax 17\noom 2\noom_kill 1\noom_group_kill 0\n";
	static const struct {
		const char *text, *key;
		bool found;
		uint64_t want;
	} c[] = {
		{ stat, "inactive_file", true, 123 },
		{ stat, "total_inactive_file", true, 456 },
		{ stat, "cache", true, 4096 },
		{ stat, "active_file", false, 0 },
		/* "oom" must not match "oom_kill" or "oom_group_kill" */
		{ events, "oom", true, 2 },
		{ events, "oom_kill", true, 1 },
		{ events, "max", true, 17 },
		{ "", "max", false, 0 },
		{ "max\n", "max", false, 0 },
	};

	for (size_t i = 0; i < T_ROWS(c); i++) {
		uint64_t v = 0;
		bool found = memcg_parse_key(c[i].text, c[i].key, &v);

		CHECK_CASE(found == c[i].found, "%s in row %zu", c[i].key, i);
		if (c[i].found)
			CHECK_CASE(v == c[i].want, "%s: %" PRIu64, c[i].key, v);
	}
}

static void test_parse_psi(void)
{
	double some, full;

	memcg_parse_psi("some avg10=12.50 avg60=1.00 avg300=0.00 total=123\n"
			"full avg10=3.25 avg60=0.00 avg300=0.00 total=45\n", &some, &full);
	CHECK(some == 12.5);
	CHECK(full == 3.25);
	/* the host's cpu.pressure style: no full line */
	memcg_parse_psi("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &some, &full);
	CHECK(some == 0);
	CHECK(full == -1);
}

static void test_working_set(void)
{
	struct memcg_reading r = { .usage = 1000, .inactive_file = 300 };

	CHECK_EQ(memcg_working_set(&r), 700);
	r.inactive_file = 2000;
	CHECK_EQ(memcg_working_set(&r), 0);
	r.inactive_file = MEMCG_UNKNOWN;
	CHECK(memcg_working_set(&r) == MEMCG_UNKNOWN);
}

/* ---- fake trees ---- */

static char root[64];

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(p);
}

/* a new temporary tree in root: 0, or -1 when there is none */
static int make_root(void)
{
	snprintf(root, sizeof(root), "/tmp/aiscope-test-memcg.XXXXXX");
	return mkdtemp(root) ? 0 : -1;
}

/* the end of a test: the set over root freed, the tree removed */
static void set_done(struct memcg_set *s)
{
	memcg_set_free(s);
	nftw(root, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}

static void put(const char *rel, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

static void dir(const char *rel)
{
	char p[512];

	snprintf(p, sizeof(p), "%s/%s", root, rel);
	mkdir(p, 0755);
}

static struct memcg *by_path(struct memcg_set *s, const char *path)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->cg[i]->path, path))
			return s->cg[i];
	return NULL;
}

static void v2_cgroup(const char *rel, const char *current, const char *max, const char *inactive,
		      const char *events)
{
	char p[256], stat[128];

	dir(rel);
	snprintf(p, sizeof(p), "%s/memory.current", rel);
	put(p, current);
	snprintf(p, sizeof(p), "%s/memory.max", rel);
	put(p, max);
	snprintf(stat, sizeof(stat), "anon 1\nactive_file 5\ninactive_file %s\n", inactive);
	snprintf(p, sizeof(p), "%s/memory.stat", rel);
	put(p, stat);
	snprintf(p, sizeof(p), "%s/memory.events", rel);
	put(p, events);
	snprintf(p, sizeof(p), "%s/memory.pressure", rel);
	put(p, "some avg10=1.50 avg60=0.00 avg300=0.00 total=1\nfull avg10=0.75 avg60=0.00 avg300=0.00 total=1\n");
}

/* keeps "job" cgroups only */
static bool keep_job(const char *path)
{
	const char *b = strrchr(path, '/');

	return b && !strcmp(b, "/job");
}

static void test_set_v2(void)
{
	struct memcg_set s;
	struct memcg *a, *b;
	char gone[128];

	if (make_root())
		SKIP("no temporary directory");
	/* the root has no memory.current, like a real cgroup2 root */
	put("cgroup.controllers", "memory\n");
	dir("a.slice");
	put("a.slice/cgroup.controllers", "\n");
	v2_cgroup("a.slice/job", "900\n", "1000\n", "100", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n");
	v2_cgroup("b", "50\n", "max\n", "10", "low 0\nhigh 0\nmax 0\noom 0\noom_kill 0\n");
	memcg_set_init(&s, NULL, root, NULL, NULL, false);
	CHECK_EQ(s.n, 2);
	a = by_path(&s, "/a.slice/job");
	b = by_path(&s, "/b");
	CHECK(a && b);
	if (!a || !b)
		goto out;
	CHECK(!a->v1);
	CHECK_EQ(memcg_read(a, MEMCG_ALL, NULL, NULL), 0);
	CHECK_EQ(a->cur.usage, 900);
	CHECK_EQ(a->cur.limit, 1000);
	CHECK_EQ(a->cur.inactive_file, 100);
	CHECK_EQ(memcg_working_set(&a->cur), 800);
	CHECK_EQ(a->cur.limit_hits, 4);
	CHECK_EQ(a->cur.ooms, 1);
	CHECK_EQ(a->cur.oom_kills, 1);
	CHECK(a->cur.psi_full10 == 0.75 && a->cur.psi_some10 == 1.5);
	CHECK_EQ(a->reads, 1);
	/* the files stay open: a rewrite is seen by the next read */
	put("a.slice/job/memory.events", "low 0\nhigh 0\nmax 9\noom 2\noom_kill 2\n");
	CHECK_EQ(memcg_read(a, MEMCG_ALL, NULL, NULL), 0);
	CHECK_EQ(a->reads, 2);
	CHECK_EQ(a->cur.limit_hits, 9);
	CHECK_EQ(memcg_read(b, MEMCG_ALL, NULL, NULL), 0);
	CHECK(b->cur.limit == MEMCG_NO_LIMIT);
	/* a removed cgroup leaves the set at the next rescan; a new one joins */
	v2_cgroup("c", "1\n", "2\n", "0", "max 0\n");
	nftw(strcat(strcpy(gone, root), "/b"), rm_cb, 16, FTW_DEPTH | FTW_PHYS);
	memcg_set_rescan(&s);
	CHECK(by_path(&s, "/c") != NULL);
	CHECK(by_path(&s, "/b") == NULL);
	CHECK(by_path(&s, "/a.slice/job") == a);	/* kept, files still open */
	CHECK_EQ(s.n, 2);
	memcg_set_free(&s);
	/* a prefix keeps only that subtree */
	memcg_set_init(&s, NULL, root, "/a.slice", NULL, false);
	CHECK_EQ(s.n, 1);
	CHECK(by_path(&s, "/a.slice/job") != NULL);
	memcg_set_free(&s);
	/* keep (--pod, --namespace): only the cgroups it keeps, the one below
	 * a cgroup it refuses too, with a prefix or without */
	memcg_set_init(&s, NULL, root, NULL, keep_job, false);
	CHECK_EQ(s.n, 1);
	CHECK(by_path(&s, "/a.slice/job") != NULL);
	memcg_set_free(&s);
	memcg_set_init(&s, NULL, root, "/a.slice", keep_job, false);
	CHECK_EQ(s.n, 1);
	CHECK(by_path(&s, "/a.slice/job") != NULL);
out:
	set_done(&s);
}

static void test_set_v1(void)
{
	struct memcg_set s;
	struct memcg *a;

	if (make_root())
		SKIP("no temporary directory");
	put("memory.usage_in_bytes", "5000\n");
	dir("job");
	put("job/memory.usage_in_bytes", "67100000\n");
	put("job/memory.limit_in_bytes", "67108864\n");
	put("job/memory.stat", "cache 0\ninactive_file 7\ntotal_inactive_file 1000000\n");
	put("job/memory.failcnt", "12\n");
	put("job/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
	memcg_set_init(&s, root, NULL, NULL, NULL, false);
	/* the root is the host, not a cgroup to watch */
	CHECK_EQ(s.n, 1);
	a = by_path(&s, "/job");
	CHECK(a != NULL);
	if (a) {
		CHECK(a->v1);
		CHECK_EQ(memcg_read(a, MEMCG_ALL, NULL, NULL), 0);
		CHECK_EQ(a->cur.usage, 67100000);
		CHECK_EQ(a->cur.limit, 67108864);
		/* v1's hierarchical figure, not the local one */
		CHECK_EQ(a->cur.inactive_file, 1000000);
		CHECK_EQ(a->cur.limit_hits, 12);
		CHECK_EQ(a->cur.oom_kills, 3);
		CHECK(a->cur.ooms == MEMCG_UNKNOWN);
		CHECK(a->cur.psi_full10 < 0);
	}
	set_done(&s);
}

/* inotify: a cgroup made later joins at the next refresh, with no rescan */
static void test_set_watch(void)
{
	struct memcg_set s;
	uint64_t gen;

	if (make_root())
		SKIP("no temporary directory");
	v2_cgroup("x", "10\n", "20\n", "5", "max 0\n");
	memcg_set_init(&s, NULL, root, NULL, NULL, true);
	CHECK_EQ(s.n, 1);
	gen = s.scan_gen;
	v2_cgroup("x/y", "1\n", "2\n", "0", "max 0\n");
	v2_cgroup("z", "1\n", "2\n", "0", "max 0\n");
	memcg_set_refresh(&s);
	CHECK_EQ(s.scan_gen, gen);
	CHECK_EQ(s.n, 3);
	CHECK(by_path(&s, "/x/y") != NULL);
	CHECK(by_path(&s, "/z") != NULL);
	/* made while watched: born (their counters count from 0); the one
	 * of the first scan, and one first found by a rescan, are not */
	CHECK(!by_path(&s, "/x")->born);
	CHECK(by_path(&s, "/x/y")->born);
	CHECK(by_path(&s, "/z")->born);
	s.dirty = true;
	v2_cgroup("w", "1\n", "2\n", "0", "max 0\n");
	memcg_set_rescan(&s);
	CHECK_EQ(s.n, 4);
	CHECK(!by_path(&s, "/w")->born);
	CHECK(by_path(&s, "/z")->born);
	/* dropped by the caller when its read fails */
	for (size_t i = 0; i < s.n; i++)
		if (!strcmp(s.cg[i]->path, "/z"))
			memcg_set_drop(&s, i);
	CHECK_EQ(s.n, 3);
	CHECK(by_path(&s, "/z") == NULL);
	set_done(&s);
}

static bool never(const struct memcg_reading *r, void *ctx)
{
	return false;
}

static void test_stat_skipped(void)
{
	struct memcg_set s;
	struct memcg *a;

	if (make_root())
		SKIP("no temporary directory");
	v2_cgroup("x", "10\n", "20\n", "5", "max 0\n");
	memcg_set_init(&s, NULL, root, NULL, NULL, false);
	a = by_path(&s, "/x");
	CHECK(a != NULL);
	if (a) {
		CHECK_EQ(memcg_read(a, 0, never, NULL), 0);
		CHECK(a->cur.inactive_file == MEMCG_UNKNOWN);
		CHECK_EQ(a->cur.usage, 10);
	}
	set_done(&s);
}

/* a v1 tree with one cgroup, /job: 1000 bytes used of 64 MiB */
static int v1_job_tree(void)
{
	if (make_root())
		return -1;
	dir("job");
	put("job/memory.usage_in_bytes", "1000\n");
	put("job/memory.limit_in_bytes", "67108864\n");
	return 0;
}

/* v1_job_tree() with its counter files (failcnt, 3 OOM kills) and the set
 * s over it, read once cold: the job's memcg; NULL when there is none (the
 * tree is gone then; the test skips, or fails where a check did) */
static struct memcg *v1_job_counters(struct memcg_set *s, int failcnt)
{
	struct memcg *a;
	char buf[32];

	if (v1_job_tree())
		return NULL;
	snprintf(buf, sizeof(buf), "%d\n", failcnt);
	put("job/memory.stat", "total_inactive_file 0\n");
	put("job/memory.failcnt", buf);
	put("job/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n");
	memcg_set_init(s, root, NULL, NULL, NULL, false);
	a = by_path(s, "/job");
	CHECK(a != NULL);
	if (a)
		CHECK_EQ(memcg_read(a, 0, never, NULL), 0);
	else
		set_done(s);
	return a;
}

/* v1's failcnt is read cold only with MEMCG_COUNTERS */
static void test_v1_failcnt_cold(void)
{
	struct memcg_set s;
	struct memcg *a = v1_job_counters(&s, 12);

	if (!a)
		SKIP("no v1 job tree");
	CHECK_EQ(a->cur.limit_hits, 12);	/* the first read has them all */
	put("job/memory.failcnt", "15\n");
	CHECK_EQ(memcg_read(a, 0, never, NULL), 0);
	CHECK_EQ(a->cur.limit_hits, 12);	/* cold: not read */
	CHECK_EQ(memcg_read(a, MEMCG_COUNTERS, never, NULL), 0);
	CHECK_EQ(a->cur.limit_hits, 15);
	CHECK(a->cur.inactive_file == MEMCG_UNKNOWN);
	CHECK_EQ(a->cur.oom_kills, 3);
	set_done(&s);
}

/* A counter file whose signal is armed is read when it moved (the signal
 * fired, the caller saw a kill: counters_due), when hot or asked for, and
 * not by a cold poll: nothing moves it unsignalled. */
static void test_counters_armed(void)
{
	struct memcg_set s;
	struct memcg *a = v1_job_counters(&s, 0);

	if (!a)
		SKIP("no v1 job tree");
	CHECK_EQ(a->cur.oom_kills, 3);
	/* as memcg_set_arm() leaves it (any fd will do: never read) */
	a->sig[2].kind = MEMCG_SIG_OOM;
	a->sig[2].fd = dup(0);
	put("job/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 4\n");
	CHECK_EQ(memcg_read(a, 0, never, NULL), 0);
	CHECK_EQ(a->cur.oom_kills, 3);		/* armed and cold: not read */
	a->counters_due = 1;
	CHECK_EQ(memcg_read(a, 0, never, NULL), 0);
	CHECK_EQ(a->cur.oom_kills, 4);		/* due: read once */
	CHECK_EQ(a->counters_due, 0);
	put("job/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 5\n");
	CHECK_EQ(memcg_read(a, 0, never, NULL), 0);
	CHECK_EQ(a->cur.oom_kills, 4);
	CHECK_EQ(memcg_read(a, 0, NULL, NULL), 0);
	CHECK_EQ(a->cur.oom_kills, 5);		/* hot */
	set_done(&s);
}

static void test_signal_figures(void)
{
	char buf[64];

	CHECK_EQ(memcg_threshold_bytes(67108864, 85), 57042534);
	CHECK_EQ(memcg_threshold_bytes(268435456, 95), 255013683);
	CHECK_EQ(memcg_threshold_bytes(MEMCG_NO_LIMIT, 85), 0);
	CHECK_EQ(memcg_threshold_bytes(0, 85), 0);
	memcg_psi_trigger(buf, sizeof(buf), 10, 2000000);
	CHECK_STR(buf, "full 200000 2000000");
	memcg_psi_trigger(buf, sizeof(buf), 0.00001, 2000000);
	CHECK_STR(buf, "full 1 2000000");	/* at least 1 us */
}

/* A fake v1 tree has no cgroup.event_control that the kernel answers:
 * every signal that cannot be armed is counted, none is lost silently,
 * and the cgroup stays readable (polled). */
static void test_arm_counts_errors(void)
{
	struct memcg_set s;
	struct memcg_arm arm = { .warn_pct = 85, .crit_pct = 95, .psi_warn_pct = 10,
				 .psi_crit_pct = 40, .psi_window_us = 2000000 };
	struct memcg *a;

	if (v1_job_tree())
		SKIP("no temporary directory");
	put("job/memory.oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n");
	memcg_set_init(&s, root, NULL, NULL, NULL, true);
	CHECK_EQ(memcg_set_arm(&s, &arm), 0);
	CHECK(s.epoll_fd >= 0);
	/* no cgroup.event_control: the two thresholds and oom_control */
	CHECK_EQ(s.arm_errors, 3);
	a = by_path(&s, "/job");
	CHECK(a != NULL);
	if (a) {
		for (int i = 0; i < MEMCG_NSIG; i++)
			CHECK_EQ(a->sig[i].fd, -1);
		CHECK_EQ(memcg_read(a, MEMCG_ALL, NULL, NULL), 0);
		CHECK_EQ(a->cur.usage, 1000);
	}
	CHECK_EQ(memcg_set_serve(&s, NULL, NULL), 0);
	set_done(&s);
}

int main(void)
{
	RUN(test_parse_limit);
	RUN(test_parse_key);
	RUN(test_parse_psi);
	RUN(test_working_set);
	RUN(test_set_v2);
	RUN(test_set_v1);
	RUN(test_set_watch);
	RUN(test_stat_skipped);
	RUN(test_v1_failcnt_cold);
	RUN(test_counters_armed);
	RUN(test_signal_figures);
	RUN(test_arm_counts_errors);
	return t_done();
}
