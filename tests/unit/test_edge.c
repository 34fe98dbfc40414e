// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/edge.c: the edge table of docs/edges.md (keys, accumulation, read
 * bytes, both directions, non-process sides, limits) and its JSON lines. */
#include <stdlib.h>
#include "t.h"
#include "edge.h"
#include "json.h"
#include "metrics.h"
#include "prom.h"

#define T0 1795000000000000000ULL	/* 2026-11-18T11:06:40Z, realtime ns */

static struct aiscope_ident ident(uint32_t pid, const char *comm)
{
	struct aiscope_ident id;

	memset(&id, 0, sizeof(id));
	id.pid = pid;
	id.tid = pid;
	id.uid = 1000;
	snprintf(id.comm, sizeof(id.comm), "%s", comm);
	return id;
}

/* The JSON lines of t, with every "ts":"..." value replaced by "TS". */
static char *lines_of(struct edge_table *t, edge_extra_fn extra, void *ctx, uint32_t *n)
{
	char *buf = NULL, *p, *q, *end;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct jw w;

	jw_init(&w, f);
	*n = edges_json(t, &w, "test", extra, ctx);
	fclose(f);
	for (p = buf; (p = strstr(p, "\"ts\":\"")); ) {
		p += 6;
		end = strchr(p, '"');
		if (!end)
			break;
		memcpy(p, "TS", 2);
		q = p + 2;
		memmove(q, end, strlen(end) + 1);
		p = q;
	}
	return buf;
}

/* the end of a test: the table and the lines lines_of gave */
static void edges_done(struct edge_table *t, char *out)
{
	free(out);
	edges_free(t);
}

/* 0 when jq parses every line (or jq is missing: the exact strings above
 * still pin the format), else jq's status */
static int jq_accepts(const char *lines)
{
	FILE *p;

	if (system("command -v jq >/dev/null 2>&1"))
		return 0;
	p = popen("jq -e . >/dev/null", "w");
	if (!p)
		return -1;
	fputs(lines, p);
	return pclose(p);
}

static void test_accumulates_one_edge(void)
{
	struct edge_table *t = edges_new(0);
	struct aiscope_ident a = ident(4242, "producer"), b = ident(4243, "consumer");
	struct edge_side sa = { &a, "127.0.0.1:41234" }, sb = { &b, "127.0.0.1:5000" };
	const char *ch = "127.0.0.1:41234->127.0.0.1:5000";
	struct edge *e;
	uint32_t n;
	char *out;

	edge_add(t, "tcp", ch, &sa, &sb, 1000, 1, T0 + 2000);
	edge_add(t, "tcp", ch, &sa, &sb, 24, 2, T0 + 1000);	/* earlier: first_ts moves */
	e = edge_add_read(t, "tcp", ch, &sa, &sb, 1024, T0 + 3000);
	CHECK_EQ(edges_count(t), 1);
	CHECK(e != NULL);
	CHECK_EQ(e->bytes, 1024);
	CHECK_EQ(e->msgs, 3);
	CHECK_EQ(e->read_bytes, 1024);
	CHECK_EQ(e->first_ns, T0 + 1000);
	CHECK_EQ(e->last_ns, T0 + 3000);
	out = lines_of(t, NULL, NULL, &n);
	CHECK_EQ(n, 1);
	CHECK_STR(out,
		  "{\"type\":\"edge\",\"tool\":\"test\",\"ts\":\"TS\",\"schema\":1,\"host\":\"h\",\"kind\":\"tcp\","
		  "\"channel\":\"127.0.0.1:41234->127.0.0.1:5000\","
		  "\"src\":{\"pid\":4242,\"tid\":null,\"comm\":\"producer\",\"uid\":1000,"
		  "\"cgroup_id\":0,\"cgroup\":null,\"container_id\":null,\"runtime\":null,"
		  "\"pod_uid\":null,\"container_name\":null,\"container_image\":null,\"pod_name\":null,\"pod_namespace\":null,\"k8s_container\":null,\"endpoint\":\"127.0.0.1:41234\"},"
		  "\"dst\":{\"pid\":4243,\"tid\":null,\"comm\":\"consumer\",\"uid\":1000,"
		  "\"cgroup_id\":0,\"cgroup\":null,\"container_id\":null,\"runtime\":null,"
		  "\"pod_uid\":null,\"container_name\":null,\"container_image\":null,\"pod_name\":null,\"pod_namespace\":null,\"k8s_container\":null,\"endpoint\":\"127.0.0.1:5000\"},"
		  "\"bytes\":1024,\"msgs\":3,\"read_bytes\":1024,"
		  "\"first_ts\":\"2026-11-18T11:06:40.000001000Z\","
		  "\"last_ts\":\"2026-11-18T11:06:40.000003000Z\"}\n");
	CHECK_EQ(jq_accepts(out), 0);
	edges_done(t, out);
}

/* A connection between A and B is two edges; a side is its pid (any tid) */
static void test_directions_and_sides(void)
{
	struct edge_table *t = edges_new(0);
	struct aiscope_ident a = ident(10, "a"), a2 = ident(10, "a"), b = ident(11, "b");
	struct edge_side sa = { &a, "[::1]:40000" }, sb = { &b, "[::1]:5000" };
	struct edge_side sa2 = { &a2, "[::1]:40000" };
	struct edge *ab, *ba;

	a2.tid = 12;
	ab = edge_add(t, "tcp", "[::1]:40000->[::1]:5000", &sa, &sb, 7, 1, T0);
	ba = edge_add(t, "tcp", "[::1]:40000->[::1]:5000", &sb, &sa, 5, 1, T0);
	CHECK(ab != ba);
	CHECK(edge_add(t, "tcp", "[::1]:40000->[::1]:5000", &sa2, &sb, 3, 1, T0) == ab);
	CHECK_EQ(edges_count(t), 2);
	CHECK_EQ(ab->bytes, 10);
	CHECK_EQ(ab->msgs, 2);
	CHECK_EQ(ba->bytes, 5);
	/* another kind or channel is another edge */
	CHECK(edge_add(t, "udp", "[::1]:40000->[::1]:5000", &sa, &sb, 1, 1, T0) != ab);
	CHECK(edge_add(t, "tcp", "[::1]:40001->[::1]:5000", &sa, &sb, 1, 1, T0) != ab);
	CHECK_EQ(edges_count(t), 4);
	edges_free(t);
}

/* A remote peer: identity null, endpoint kept; unread: read_bytes null */
static void test_endpoint_side(void)
{
	struct edge_table *t = edges_new(0);
	struct aiscope_ident a = ident(77, "curl");
	struct edge_side local = { &a, "10.0.0.5:41234" }, remote = { NULL, "10.0.0.9:443" };
	struct edge_side remote2 = { NULL, "10.0.0.9:444" };
	const char *head = "{\"type\":\"edge\",\"tool\":\"test\",\"ts\":\"TS\",\"schema\":1,\"host\":\"h\",\"kind\":\"tcp\","
			   "\"channel\":\"10.0.0.5:41234->10.0.0.9:443\",\"src\":{\"pid\":null,"
			   "\"tid\":null,\"comm\":null,\"uid\":null,\"cgroup_id\":null,"
			   "\"cgroup\":null,\"container_id\":null,\"runtime\":null,"
			   "\"pod_uid\":null,\"container_name\":null,\"container_image\":null,\"pod_name\":null,\"pod_namespace\":null,\"k8s_container\":null,\"endpoint\":\"10.0.0.9:443\"},\"dst\":{\"pid\":77,";
	uint32_t n;
	char *out;

	edge_add(t, "tcp", "10.0.0.5:41234->10.0.0.9:443", &remote, &local, 300, 2, T0);
	edge_add(t, "tcp", "10.0.0.5:41234->10.0.0.9:443", &local, &remote, 100, 1, T0);
	/* two non-process sides differ by endpoint */
	CHECK(edge_add(t, "tcp", "x", &local, &remote, 1, 1, T0) !=
	      edge_add(t, "tcp", "x", &local, &remote2, 1, 1, T0));
	out = lines_of(t, NULL, NULL, &n);
	CHECK_EQ(n, 4);
	/* most bytes first: the received side */
	CHECK(!strncmp(out, head, strlen(head)));
	CHECK(strstr(out, "\"bytes\":300,\"msgs\":2,\"read_bytes\":null,") != NULL);
	CHECK(strstr(strchr(out, '\n') + 1, "\"bytes\":100,\"msgs\":1,") != NULL);
	edges_done(t, out);
}

/* IPC: endpoint null, readers and the tool's own keys */
static void extra_key(struct jw *w, const struct edge *e, void *ctx)
{
	jw_kstr(w, "channel_key", e->user ? (const char *)e->user : NULL);
	(*(int *)ctx)++;
}

static void test_ipc_readers_extra(void)
{
	struct edge_table *t = edges_new(0);
	struct aiscope_ident w1 = ident(1, "w1"), r = ident(3, "r");
	struct edge_side sw = { &w1, NULL }, sr = { &r, NULL };
	struct edge *e;
	int calls = 0;
	uint32_t n;
	char *out;

	e = edge_add(t, "msq", "msq:5", &sw, &sr, 64, 4, T0);
	e->readers = 2;
	e->user = (void *)"0x1234";
	edge_add_read(t, "msq", "msq:5", &sw, &sr, 48, T0 + 1);
	out = lines_of(t, extra_key, &calls, &n);
	CHECK_EQ(n, 1);
	CHECK_EQ(calls, 1);
	CHECK(strstr(out, "\"endpoint\":null},\"dst\":") != NULL);
	CHECK(strstr(out, "\"bytes\":64,\"msgs\":4,\"read_bytes\":48,") != NULL);
	CHECK(strstr(out, "\"readers\":2,\"channel_key\":\"0x1234\"}\n") != NULL);
	edges_done(t, out);
}

/* The latest identity is printed, and a hostile comm stays valid JSON */
static void test_identity_update_and_escaping(void)
{
	struct edge_table *t = edges_new(0);
	struct aiscope_ident a = ident(5, "old"), b = ident(6, "b");
	struct edge_side sa = { &a, NULL }, sb = { &b, NULL };
	uint32_t n;
	char *out;

	edge_add(t, "pipe", "pipe:[99]", &sa, &sb, 1, 1, T0);
	memcpy(a.comm, "q\"x\n\xff" "z", 7);
	edge_add(t, "pipe", "pipe:[99]", &sa, &sb, 1, 1, T0);
	out = lines_of(t, NULL, NULL, &n);
	CHECK_EQ(n, 1);
	CHECK(strstr(out, "\"comm\":\"q\\\"x\\n\xef\xbf\xbdz\"") != NULL);
	CHECK(strstr(out, "\"channel\":\"pipe:[99]\"") != NULL);
	CHECK_EQ(jq_accepts(out), 0);
	edges_done(t, out);
}

/* Thousands of edges: the table grows and finds each one again */
static void test_many_edges(void)
{
	struct edge_table *t = edges_new(0);
	struct aiscope_ident a = ident(1, "a"), b = ident(2, "b");
	struct edge_side sa = { &a, NULL }, sb = { &b, NULL };
	char ch[32];
	int i, round, bad = 0;

	for (round = 1; round <= 2; round++) {
		for (i = 0; i < 20000; i++) {
			struct edge *e;

			snprintf(ch, sizeof(ch), "pipe:[%d]", i);
			e = edge_add(t, "pipe", ch, &sa, &sb, i, 1, T0 + i);
			if (!e || e->bytes != (uint64_t)i * round || e->msgs != (uint64_t)round)
				bad++;
		}
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(edges_count(t), 20000);
	CHECK_EQ(edges_dropped(t), 0);
	edges_free(t);
}

/* A full table drops new edges (counted) but still updates existing ones */
static void test_limit(void)
{
	struct edge_table *t = edges_new(3);
	struct aiscope_ident a = ident(1, "a"), b = ident(2, "b");
	struct edge_side sa = { &a, NULL }, sb = { &b, NULL };

	CHECK(edge_add(t, "fifo", "/a", &sa, &sb, 1, 1, T0));
	CHECK(edge_add(t, "fifo", "/b", &sa, &sb, 1, 1, T0));
	CHECK(edge_add(t, "fifo", "/c", &sa, &sb, 1, 1, T0));
	CHECK(edge_add(t, "fifo", "/d", &sa, &sb, 1, 1, T0) == NULL);
	CHECK(edge_add_read(t, "fifo", "/e", &sa, &sb, 1, T0) == NULL);
	CHECK_EQ(edges_dropped(t), 2);
	CHECK_EQ(edge_add(t, "fifo", "/a", &sa, &sb, 1, 1, T0)->bytes, 2);
	CHECK_EQ(edges_count(t), 3);
	edges_free(t);
}

static void test_empty(void)
{
	struct edge_table *t = edges_new(0);
	uint32_t n;
	char *out = lines_of(t, NULL, NULL, &n);

	CHECK_EQ(n, 0);
	CHECK_STR(out, "");
	edges_done(t, out);
	edges_free(NULL);
}

/* The series of the top edges: exact lines, the rest counted; a second
 * interval's set replaces the first's. */
static void test_metrics_top(void)
{
	struct edge_table *t = edges_new(0), *t2 = edges_new(0);
	struct aiscope_ident a = ident(1, "a\"q"), b = ident(2, "b");
	struct edge_side sa = { &a, "10.0.0.1:5" }, sb = { &b, "10.0.0.2:6" }, far = { NULL, "10.9.9.9:7" };
	struct edge_side pa = { &a, NULL }, pb = { &b, NULL };
	struct edge_metrics em;
	char *text;
	size_t len;

	setenv("AISCOPE_TEST_CAP_EDGE_METRICS_TOP", "2", 1);
	metrics_setup("test", "/dev/null", NULL);
	edge_metrics_init(&em, "test");
	unsetenv("AISCOPE_TEST_CAP_EDGE_METRICS_TOP");
	CHECK(edge_metrics_on(&em));
	CHECK_EQ(em.top, 2);
	edge_add(t, "tcp", "10.0.0.1:5->10.0.0.2:6", &sa, &sb, 1000, 3, T0);
	edge_add_read(t, "tcp", "10.0.0.1:5->10.0.0.2:6", &sa, &sb, 900, T0);
	edge_add(t, "tcp", "10.9.9.9:7->10.0.0.1:5", &far, &sa, 500, 1, T0);
	edge_add(t, "pipe", "pipe:[9]", &pa, &pb, 10, 1, T0);
	edge_metrics_set(&em, t);
	text = prom_render(aiscope_metrics(), &len);
	CHECK(strstr(text, "\naiscope_test_edge_bytes_total{host=\"h\",kind=\"tcp\",channel=\"10.0.0.1:5->10.0.0.2:6\","
			   "src_pid=\"1\",src_comm=\"a\\\"q\",src_container=\"\",src_endpoint=\"10.0.0.1:5\","
			   "dst_pid=\"2\",dst_comm=\"b\",dst_container=\"\",dst_endpoint=\"10.0.0.2:6\"} 1000\n"));
	CHECK(strstr(text, "\naiscope_test_edge_messages_total{host=\"h\",kind=\"tcp\",channel=\"10.0.0.1:5->10.0.0.2:6\","));
	CHECK(strstr(text, "\",dst_endpoint=\"10.0.0.2:6\"} 900\n"));
	/* a remote side: no pid, comm or container */
	CHECK(strstr(text, "\naiscope_test_edge_bytes_total{host=\"h\",kind=\"tcp\",channel=\"10.9.9.9:7->10.0.0.1:5\","
			   "src_pid=\"\",src_comm=\"\",src_container=\"\",src_endpoint=\"10.9.9.9:7\","
			   "dst_pid=\"1\",dst_comm=\"a\\\"q\",dst_container=\"\",dst_endpoint=\"10.0.0.1:5\"} 500\n"));
	/* its reads are not known: no read series */
	CHECK(!strstr(text, "channel=\"10.9.9.9:7->10.0.0.1:5\",src_pid=\"\",src_comm=\"\",src_container=\"\",src_endpoint=\"10.9.9.9:7\",dst_pid=\"1\",dst_comm=\"a\\\"q\",dst_container=\"\",dst_endpoint=\"10.0.0.1:5\"} 0"));
	/* the third edge is counted, not a series */
	CHECK(!strstr(text, "pipe:[9]"));
	CHECK(strstr(text, "\naiscope_test_edges 3\n"));
	CHECK(strstr(text, "\naiscope_test_edges_omitted 1\n"));
	free(text);
	/* the next interval's top replaces this one's */
	edge_add(t2, "pipe", "pipe:[9]", &pa, &pb, 20, 2, T0);
	edge_metrics_set(&em, t2);
	text = prom_render(aiscope_metrics(), &len);
	CHECK(!strstr(text, "10.0.0.2:6"));
	CHECK(strstr(text, "kind=\"pipe\",channel=\"pipe:[9]\",src_pid=\"1\",src_comm=\"a\\\"q\",src_container=\"\",src_endpoint=\"\","
			   "dst_pid=\"2\",dst_comm=\"b\",dst_container=\"\",dst_endpoint=\"\"} 20\n"));
	CHECK(strstr(text, "\naiscope_test_edges 1\n"));
	CHECK(strstr(text, "\naiscope_test_edges_omitted 0\n"));
	free(text);
	edges_free(t);
	edges_free(t2);
}

int main(void)
{
	/* every line names its host: a fixed one, for exact lines */
	jw_host_set("h");
	RUN(test_accumulates_one_edge);
	RUN(test_directions_and_sides);
	RUN(test_endpoint_side);
	RUN(test_ipc_readers_extra);
	RUN(test_identity_update_and_escaping);
	RUN(test_many_edges);
	RUN(test_limit);
	RUN(test_empty);
	RUN(test_metrics_top);
	return t_done();
}
