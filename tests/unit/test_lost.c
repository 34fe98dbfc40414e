// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lib/run.c's lost events, as root: the programs' own counters
 * (aiscope_lost) and the runs the kernel skipped (recursion_misses), from
 * tests/bpf/recursion.bpf.c, which makes a known number of each.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "t.h"
#include "t_bpf.h"
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
			  "\"recursion_misses\":5}") != NULL);
	/* the next interval: only what is new */
	kick(2);
	rec = lost_record(&b, &total);
	CHECK_EQ(total, 4);
	CHECK(strstr(rec, "\"lost_events\":4,\"ringbuf_full\":0,\"map_full\":2,"
			  "\"recursion_misses\":2}") != NULL);
	CHECK_EQ(aiscope_lost_total(&b), 2 * (KICKS + 2));
}

int main(void)
{
	setup_bpf();
	RUN(test_skipped_runs_are_lost);
	bpf_link__destroy(printk_link);
	if (skel)
		recursion_bpf__destroy(skel);
	return t_done();
}
