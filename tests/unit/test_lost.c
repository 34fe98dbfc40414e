// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lib/run.c's lost events, as root: the programs' own counters
 * (aiscope_lost) and the runs the kernel skipped (recursion_misses), from
 * tests/bpf/recursion.bpf.c, which makes a known number of each; the
 * cgroup watcher's lost records (cgroup_events_lost).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "t.h"
#include "t_bpf.h"
#include "cgroup.h"
#include "opts.h"
#include "run.h"
#include "recursion.skel.h"

#define KICKS 5

static struct recursion_bpf *skel;
static struct bpf_link *printk_link;
static const char *skip_why;

static bool setup_bpf(void)
{
	if ((skip_why = t_bpf_begin()))
		return false;
	skel = recursion_bpf__open();
	if (!skel)
		return false;
	skel->rodata->target_tgid = getpid();
	if (!recursion_bpf__load(skel))
		printk_link = bpf_program__attach(skel->progs.on_printk);
	if (!printk_link) {
		printf("# cannot load or attach the BPF object (T_VERBOSE=1 shows why)\n");
		recursion_bpf__destroy(skel);
		skel = NULL;
		return false;
	}
	return true;
}

static void kick(int n)
{
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	for (int i = 0; i < n; i++)
		CHECK_EQ(bpf_prog_test_run_opts(bpf_program__fd(skel->progs.kick), &opts), 0);
}

/* aiscope_lost_check with stdout in a file: the "lost" record it wrote */
static const char *lost_record(struct aiscope_bpf *b, uint64_t *total)
{
	static char line[512];
	FILE *f = tmpfile();
	int saved = dup(STDOUT_FILENO);

	fflush(stdout);
	dup2(fileno(f), STDOUT_FILENO);
	*total = aiscope_lost_check(b);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	rewind(f);
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	return line;
}

static void test_skipped_runs_are_lost(void)
{
	struct aiscope_bpf b = { 0 };
	uint64_t total;
	const char *rec;

	if (!skel && skip_why)
		SKIP(skip_why);
	if (!skel) {
		CHECK(!"BPF setup failed");
		return;
	}
	b.obj = skel->obj;
	env.tool = "test_lost";
	env.json = true;
	/* what an earlier run of the object left: nothing */
	CHECK_STR(lost_record(&b, &total), "");
	CHECK_EQ(total, 0);
	kick(KICKS);
	CHECK_EQ(skel->bss->printk_runs, KICKS);
	rec = lost_record(&b, &total);
	CHECK_EQ(total, 2 * KICKS);
	CHECK_EQ(b.lost[AISCOPE_LOST_SKIPPED], KICKS);
	CHECK_EQ(b.lost[AISCOPE_LOST_MAP], KICKS);
	CHECK_EQ(b.lost[AISCOPE_LOST_RINGBUF], 0);
	CHECK(strstr(rec, "\"type\":\"lost\"") != NULL);
	CHECK(strstr(rec, "\"lost_events\":10,\"ringbuf_full\":0,\"map_full\":5,"
			  "\"recursion_misses\":5,\"cgroup_events_lost\":0}") != NULL);
	/* the next interval: only what is new */
	kick(2);
	rec = lost_record(&b, &total);
	CHECK_EQ(total, 4);
	CHECK(strstr(rec, "\"lost_events\":4,\"ringbuf_full\":0,\"map_full\":2,"
			  "\"recursion_misses\":2,\"cgroup_events_lost\":0}") != NULL);
	CHECK_EQ(aiscope_lost_total(&b), 2 * (KICKS + 2));
}

static int no_ssid(const char *controller)
{
	(void)controller;
	return -1;
}

static const char *made_prefix;
static int made_calls;

static void on_made(const struct container_info *ci, uint64_t id, bool v1)
{
	(void)id;
	(void)v1;
	if (!strncmp(ci->id, made_prefix, strlen(made_prefix)))
		made_calls++;
}

/*
 * The cgroup watcher's losses are an interval's: N container cgroups made
 * on one CPU with nothing read fill its perf buffer; the drain then
 * hands over the records that fitted and counts the rest, and the next
 * lost record has them: made() calls + cgroup_events_lost == N + 1 (the
 * one that carries the count) exactly.
 */
static void test_cgroup_records_lost(void)
{
	enum { N = 2000 };
	char dir[PATH_MAX], sub[PATH_MAX + 80], want[128];
	struct aiscope_bpf b = { 0 };
	cpu_set_t one, saved;
	uint64_t total, lost;
	const char *rec;

	if (geteuid())
		SKIP("not root");
	if (cg_init(NULL, no_ssid) || !cg_v2_mount() || !cg_watch_cpus()) {
		cg_cleanup();
		SKIP("no cgroup2 or no cgroup_mkdir perf events here");
	}
	env.tool = "test_lost";
	env.json = true;
	CHECK_STR(lost_record(&b, &total), "");
	made_prefix = "00000000000000000000000000000000000000000000000000000000";
	made_calls = 0;
	cg_watch_on_made(on_made);
	sched_getaffinity(0, sizeof(saved), &saved);
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof(one), &one);
	snprintf(dir, sizeof(dir), "%s/aiscope-unit-lost-%d", cg_v2_mount(), (int)getpid());
	CHECK_EQ(mkdir(dir, 0755), 0);
	for (int i = 0; i < N; i++) {
		snprintf(sub, sizeof(sub), "%s/libpod-%064x.scope", dir, i);
		CHECK_EQ(mkdir(sub, 0755), 0);
	}
	/* the kernel writes its count of the dropped ones before the next
	 * record that finds room: one more, after the read */
	cg_watch_drain();
	snprintf(sub, sizeof(sub), "%s/libpod-%064x.scope", dir, N);
	CHECK_EQ(mkdir(sub, 0755), 0);
	sched_setaffinity(0, sizeof(saved), &saved);
	cg_watch_drain();
	lost = cg_watch_lost();
	CHECK(lost > 0);
	CHECK_EQ(made_calls + lost, N + 1);
	rec = lost_record(&b, &total);
	CHECK_EQ(total, lost);
	CHECK_EQ(b.lost[AISCOPE_LOST_CGROUP], lost);
	snprintf(want, sizeof(want), "\"lost_events\":%llu,\"ringbuf_full\":0,\"map_full\":0,"
		 "\"recursion_misses\":0,\"cgroup_events_lost\":%llu}",
		 (unsigned long long)lost, (unsigned long long)lost);
	CHECK(strstr(rec, want) != NULL);
	/* the next interval: nothing new */
	CHECK_STR(lost_record(&b, &total), "");
	CHECK_EQ(aiscope_lost_total(&b), lost);
	for (int i = 0; i <= N; i++) {
		snprintf(sub, sizeof(sub), "%s/libpod-%064x.scope", dir, i);
		rmdir(sub);
	}
	rmdir(dir);
	cg_watch_on_made(NULL);
	cg_cleanup();
}

int main(void)
{
	setup_bpf();
	RUN(test_skipped_runs_are_lost);
	RUN(test_cgroup_records_lost);
	bpf_link__destroy(printk_link);
	if (skel)
		recursion_bpf__destroy(skel);
	return t_done();
}
