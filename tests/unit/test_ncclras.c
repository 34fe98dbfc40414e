// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/ncclras.c: a status document in NCCL 2.28's JSON format (as its
 * src/ras/client_support.cc writes it; tests/fixtures/ras/status.json) is
 * read whole: communicators, ranks with their status and collectives
 * launched, the missing ranks; the rank behind is the one with the fewest
 * collectives; text around the document is skipped; documents that are
 * not one are refused. */
#define _GNU_SOURCE
#include <errno.h>
#include "t.h"
#include "ncclras.h"

#ifndef FIXTURES
#define FIXTURES "tests/fixtures"
#endif

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL;

	if (!f)
		return NULL;
	buf = malloc(1 << 16);
	*len = fread(buf, 1, (1 << 16) - 1, f);
	buf[*len] = 0;
	fclose(f);
	return buf;
}

static void test_status(void)
{
	size_t len;
	char *doc = slurp(FIXTURES "/ras/status.json", &len);
	struct ncclras_status st;
	const struct ncclras_comm *c;
	uint64_t min, max;

	CHECK(doc != NULL);
	if (!doc)
		return;
	CHECK_EQ(ncclras_parse(doc, len, &st), 0);
	CHECK_STR(st.version, "2.28.9");
	CHECK_EQ(st.ncomms, 2);
	CHECK_EQ(st.timeouts, 0);
	c = &st.comms[0];
	CHECK(c->hash == 0xe9d8dab70e220282ULL);
	CHECK_EQ(c->size, 4);
	CHECK_EQ(c->nranks, 3);
	CHECK_EQ(c->nmissing, 1);
	CHECK_EQ(c->ranks[1].rank, 1);
	CHECK_STR(c->ranks[1].host, "node-a");
	CHECK_EQ(c->ranks[1].pid, 4101);
	CHECK_EQ(c->ranks[1].colls, 2 + 10 + 9 + 117);
	CHECK_EQ(c->ranks[2].async_error, 5);
	CHECK(c->ranks[2].abort_flag && !c->ranks[2].destroy_flag);
	CHECK_EQ(c->missing[0].rank, 2);
	CHECK_STR(c->missing[0].host, "node-b");
	CHECK(c->missing[0].unresponsive && !c->missing[0].dead);
	CHECK_EQ(ncclras_behind(c, &min, &max), 1);
	CHECK_EQ(min, 138);
	CHECK_EQ(max, 142);
	CHECK(st.comms[1].ranks[0].finalize_called && st.comms[1].nmissing == 0);
	ncclras_status_free(&st);
	free(doc);
}

static void test_refused(void)
{
	static const char *const bad[] = {
		"ERROR: Invalid format json\n",
		"{\"communicators\": 3}",
		"{\"communicators\": [{\"hash\": \"e9d8\"}]}",
		"{\"communicators\": [{\"hash\": \"0xzz\"}]}",
		"{\"communicators\": [{\"hash\": \"0x1\", \"ranks\": [{\"rank\": \"x\"}]}]}",
		"{\"communicators\": [",
	};
	static const char ok[] = "Gathering data...\n{\"nccl_version\": \"2.29.2\", \"communicators\": []}\n";
	struct ncclras_status st;

	for (size_t i = 0; i < T_ROWS(bad); i++)
		CHECK_CASE(ncclras_parse(bad[i], strlen(bad[i]), &st) == -EINVAL, "%s", bad[i]);
	CHECK_EQ(ncclras_parse(ok, strlen(ok), &st), 0);
	CHECK_STR(st.version, "2.29.2");
	CHECK_EQ(st.ncomms, 0);
	ncclras_status_free(&st);
}

int main(void)
{
	RUN(test_status);
	RUN(test_refused);
	return t_done();
}
