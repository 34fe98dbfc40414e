// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/opts.c: the keyword options (--sort, --by, --kind): names to values,
 * and the one-line usage error (exit 2) that lists the accepted names;
 * aiscope_grow(); the shared options' parser and entries for a tool's own
 * table (aiscope_parse_shared, AISCOPE_OPTION_*). */
#include <stdlib.h>
#include "t.h"
#include "t_child.h"
#include "opts.h"

static const char *const sorts[] = { "wait", "p99", "max", NULL };
static const char *const protos[] = { "tcp", "udp", NULL };
static const char *const one[] = { "only", NULL };

enum { BY_A = 3, BY_B = 7, BY_C = 100 };

static const struct opt_key bys[] = {
	{ "pid", BY_A }, { "container", BY_C }, { "host", BY_B }, {},
};

static void sort_of(const char *arg) { opt_word("--sort", arg, sorts); }
static void proto_of(const char *arg) { opt_word("--proto", arg, protos); }
static void one_of(const char *arg) { opt_word("--x", arg, one); }
static void by_of(const char *arg) { opt_key("--by", arg, bys); }
static void kinds_of(const char *arg) { opt_words("--kind", arg, sorts); }

static void test_word(void)
{
	CHECK_EQ(opt_word("--sort", "wait", sorts), 0);
	CHECK_EQ(opt_word("--sort", "max", sorts), 2);
	CHECK_EQ(opt_word("--proto", "udp", protos), 1);
}

static void test_word_rejects(void)
{
	CHECK(rejects(sort_of, "nope", "t: invalid --sort 'nope': expected wait, p99 or max\n"));
	/* whole words only, and case counts */
	CHECK(rejects(sort_of, "wai", "t: invalid --sort 'wai': expected wait, p99 or max\n"));
	CHECK(rejects(sort_of, "WAIT", "t: invalid --sort 'WAIT': expected wait, p99 or max\n"));
	CHECK(rejects(sort_of, "", "t: invalid --sort '': expected wait, p99 or max\n"));
	CHECK(rejects(proto_of, "sctp", "t: invalid --proto 'sctp': expected tcp or udp\n"));
	CHECK(rejects(one_of, "y", "t: invalid --x 'y': expected only\n"));
}

static void rescan_of(const char *arg) { opt_duration_or_never("--rescan", arg); }

static void test_duration_or_never(void)
{
	CHECK_EQ(opt_duration_or_never("--rescan", "0"), 0);
	CHECK_EQ(opt_duration_or_never("--rescan", "5s"), 5000000000ULL);
	CHECK_EQ(opt_duration_or_never("--rescan", "250ms"), 250000000ULL);
	CHECK(rejects(rescan_of, "0s", "t: invalid --rescan '0s': expected a duration such as 5s, or 0\n"));
	CHECK(rejects(rescan_of, "-1", "t: invalid --rescan '-1': expected a duration such as 5s, or 0\n"));
	CHECK(rejects(rescan_of, "", "t: invalid --rescan '': expected a duration such as 5s, or 0\n"));
}

static void test_key(void)
{
	CHECK_EQ(opt_key("--by", "pid", bys), BY_A);
	CHECK_EQ(opt_key("--by", "container", bys), BY_C);
	CHECK_EQ(opt_key("--by", "host", bys), BY_B);
	CHECK(rejects(by_of, "tid", "t: invalid --by 'tid': expected pid, container or host\n"));
}

static void test_key_name(void)
{
	CHECK_STR(opt_key_name(bys, BY_A), "pid");
	CHECK_STR(opt_key_name(bys, BY_C), "container");
	CHECK_STR(opt_key_name(bys, BY_B), "host");
	CHECK(opt_key_name(bys, 0) == NULL);
}

static void test_words(void)
{
	CHECK_EQ(opt_words("--kind", "wait", sorts), 1);
	CHECK_EQ(opt_words("--kind", "max,wait", sorts), 5);
	/* empty words between commas are skipped, repeats are harmless */
	CHECK_EQ(opt_words("--kind", "p99,,p99,", sorts), 2);
	/* the word at fault is named, not the whole list */
	CHECK(rejects(kinds_of, "wait,x", "t: invalid --kind 'x': expected wait, p99 or max\n"));
	CHECK(rejects(kinds_of, ",", "t: invalid --kind ',': expected wait, p99 or max\n"));
	CHECK(rejects(kinds_of, "", "t: invalid --kind '': expected wait, p99 or max\n"));
}

static void test_grow(void)
{
	size_t cap = 0, n;
	uint32_t *v = NULL, *same;

	for (n = 0; n < 1000; n++) {
		v = aiscope_grow(v, &cap, n, sizeof(*v));
		CHECK(cap > n);
		v[n] = n * 7;
	}
	CHECK_EQ(cap, 1024);		/* 64, doubled four times */
	for (n = 0; n < 1000; n++)
		if (v[n] != n * 7)
			break;
	CHECK_EQ(n, 1000);		/* what was there moved along */
	same = aiscope_grow(v, &cap, 1000, sizeof(*v));
	CHECK(same == v);		/* room left: nothing moves */
	CHECK_EQ(cap, 1024);
	free(v);
}

static void grow_huge(const char *arg)
{
	size_t cap = 0;

	aiscope_grow(NULL, &cap, 0, SIZE_MAX / 8);
}

static int fails_oom(void)
{
	char err[512];
	int rc = child_err(grow_huge, "", err, sizeof(err));

	if (rc != 1 || strcmp(err, "t: out of memory\n")) {
		printf("# exit %d, stderr '%s', expected exit 1, 't: out of memory'\n", rc, err);
		return 0;
	}
	return 1;
}

static void shared_of(int key, char *arg)
{
	aiscope_parse_shared(key, arg, NULL);
}
static void container_of(const char *arg) { shared_of(AISCOPE_KEY_CONTAINER, (char *)arg); }
static void pids_of(const char *arg) { shared_of('p', (char *)arg); }

static void test_parse_shared(void)
{
	char many[8192] = "", arg[64];
	static const struct argp_option entries[] = {
		AISCOPE_OPTION_PID(10), AISCOPE_OPTION_CONTAINER(10), AISCOPE_OPTION_COMM(3),
	};

	snprintf(arg, sizeof(arg), "1,2,3");
	CHECK_EQ(aiscope_parse_shared('p', arg, NULL), 0);
	CHECK_EQ(env.npids, 3);
	CHECK_EQ(env.pids[2], 3);
	snprintf(arg, sizeof(arg), "0");
	CHECK_EQ(aiscope_parse_shared('u', arg, NULL), 0);
	CHECK(env.has_uid && env.uid == 0);
	snprintf(arg, sizeof(arg), "c0ffee");
	CHECK_EQ(aiscope_parse_shared(AISCOPE_KEY_CONTAINER, arg, NULL), 0);
	CHECK_STR(env.container_arg, "c0ffee");
	snprintf(arg, sizeof(arg), "a-name-longer-than-15");
	CHECK_EQ(aiscope_parse_shared(AISCOPE_KEY_COMM, arg, NULL), 0);
	CHECK_STR(env.comm, "a-name-longer-t");
	/* a tool's own key is not one of them */
	CHECK_EQ(aiscope_parse_shared(AISCOPE_KEY_TOOL, arg, NULL), ARGP_ERR_UNKNOWN);
	/* the container is checked as it is parsed: an id's hex digits or a
	 * name (resolved later, lib/ctrmeta.c); "abc" and "C0FFEE" are names */
	snprintf(arg, sizeof(arg), "web-1.prod_2");
	CHECK_EQ(aiscope_parse_shared(AISCOPE_KEY_CONTAINER, arg, NULL), 0);
	CHECK_STR(env.container_arg, "web-1.prod_2");
	CHECK(rejects(container_of, "a b", "t: invalid container 'a b': expected its name or 4 to 64 lowercase hex digits of its id\n"));
	CHECK(rejects(container_of, "-x", "t: invalid container '-x': expected its name or 4 to 64 lowercase hex digits of its id\n"));
	CHECK(rejects(container_of, "a/b", "t: invalid container 'a/b': expected its name or 4 to 64 lowercase hex digits of its id\n"));
	for (int i = 1; i <= AISCOPE_MAX_IDS + 1; i++)
		snprintf(many + strlen(many), sizeof(many) - strlen(many), "%s%d", i > 1 ? "," : "", i);
	CHECK(strncmp(many + strlen(many) - 5, ",1025", 5) == 0);
	{
		char want[8300], err[8300];

		snprintf(want, sizeof(want), "t: too many pids (at most %d): '%s'\n", AISCOPE_MAX_IDS, many);
		CHECK_EQ(child_err(pids_of, many, err, sizeof(err)), 2);
		CHECK_STR(err, want);
	}
	CHECK_STR(entries[0].name, "pid");
	CHECK_EQ(entries[0].key, 'p');
	CHECK_EQ(entries[1].key, AISCOPE_KEY_CONTAINER);
	CHECK_EQ(entries[2].group, 3);
}

static void test_grow_out_of_memory(void)
{
	CHECK(fails_oom());
}

int main(void)
{
	env.tool = "t";
	fail_setup("t", false);
	RUN(test_word);
	RUN(test_word_rejects);
	RUN(test_duration_or_never);
	RUN(test_key);
	RUN(test_key_name);
	RUN(test_words);
	RUN(test_grow);
	RUN(test_grow_out_of_memory);
	RUN(test_parse_shared);
	return t_done();
}
