// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/cudagraph.c: graphs built node by node, captured from streams (with
 * a stream that joined), children, clones, captures into a graph, graph
 * launches captured, instances as snapshots, what is not known, the cap on
 * entries, and pruning a process that left a capture open. */
#include "t.h"
#include "cudagraph.h"

#define PID 100

static struct cg_node kn(uint64_t func, uint32_t gx)
{
	return (struct cg_node){ .func = func, .grid = { gx, 1, 1 }, .block = { 128, 1, 1 } };
}

/* the count of func's entries (any configuration) in exec's nodes; -1: not known */
static long long launches_of(const struct cg_store *s, uint64_t exec, uint64_t func)
{
	size_t n;
	const struct cg_node *v = cg_exec_nodes(s, PID, exec, &n, NULL);
	long long c = 0;

	if (!v)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (v[i].func == func)
			c += v[i].count;
	return c;
}

static void test_nodes_and_instances(void)
{
	struct cg_store *s = cg_new(0);
	struct cg_node a = kn(0xa, 4), b = kn(0xb, 8);
	bool partial = true;
	size_t n = 0;

	cg_create(s, PID, 0x10);
	cg_node(s, PID, 0x10, &a);
	cg_node(s, PID, 0x10, &a);
	cg_node(s, PID, 0x10, &b);
	cg_instantiate(s, PID, 0x10, 0xe1);
	CHECK_EQ(launches_of(s, 0xe1, 0xa), 2);
	CHECK_EQ(launches_of(s, 0xe1, 0xb), 1);
	CHECK(cg_exec_nodes(s, PID, 0xe1, &n, &partial) && n == 2 && !partial);
	/* a node added later reaches a new instance, not the old one */
	cg_node(s, PID, 0x10, &b);
	cg_instantiate(s, PID, 0x10, 0xe2);
	CHECK_EQ(launches_of(s, 0xe1, 0xb), 1);
	CHECK_EQ(launches_of(s, 0xe2, 0xb), 2);
	/* the same kernel in another configuration is its own entry */
	b.grid[0] = 9;
	cg_node(s, PID, 0x10, &b);
	cg_instantiate(s, PID, 0x10, 0xe2);
	CHECK(cg_exec_nodes(s, PID, 0xe2, &n, NULL) && n == 3);
	CHECK_EQ(launches_of(s, 0xe2, 0xb), 3);
	/* another process's handles are its own */
	CHECK(!cg_exec_nodes(s, PID + 1, 0xe1, &n, NULL));
	/* a handle made again starts empty */
	cg_create(s, PID, 0x10);
	cg_instantiate(s, PID, 0x10, 0xe1);
	CHECK_EQ(launches_of(s, 0xe1, 0xa), 0);
	CHECK_EQ(cg_unknown(s), 0);
	cg_free(s);
}

static int unjoined;
static uint64_t unjoined_stream;

static void unjoin(uint32_t pid, uint64_t stream, void *ctx)
{
	unjoined++;
	unjoined_stream = stream;
}

static void test_capture_join_child_clone(void)
{
	struct cg_store *s = cg_new(0);
	struct cg_node a = kn(0xa, 1), b = kn(0xb, 1), c = kn(0xc, 1);

	/* stream 0x5 captures a, b; stream 0x6 joins and captures c twice */
	cg_begin(s, PID, 0x5, 0);
	cg_captured(s, PID, 0x5, &a);
	cg_join(s, PID, 0x6, 0x5);
	cg_captured(s, PID, 0x5, &c);
	cg_captured(s, PID, 0x5, &c);
	cg_captured(s, PID, 0x5, &b);
	cg_end(s, PID, 0x5, 0x20, unjoin, NULL);
	CHECK_EQ(unjoined, 1);
	CHECK_EQ(unjoined_stream, 0x6);
	cg_instantiate(s, PID, 0x20, 0xe3);
	CHECK_EQ(launches_of(s, 0xe3, 0xa), 1);
	CHECK_EQ(launches_of(s, 0xe3, 0xc), 2);
	/* a parent with the captured graph as a child, twice, plus a */
	cg_create(s, PID, 0x30);
	cg_child(s, PID, 0x30, 0x20);
	cg_child(s, PID, 0x30, 0x20);
	cg_node(s, PID, 0x30, &a);
	cg_instantiate(s, PID, 0x30, 0xe4);
	CHECK_EQ(launches_of(s, 0xe4, 0xa), 3);
	CHECK_EQ(launches_of(s, 0xe4, 0xc), 4);
	/* a clone is the graph as it was */
	cg_clone(s, PID, 0x40, 0x30);
	cg_node(s, PID, 0x30, &b);
	cg_instantiate(s, PID, 0x40, 0xe5);
	CHECK_EQ(launches_of(s, 0xe5, 0xb), 2);
	/* a capture into an existing graph adds to it; a graph launch
	 * captured adds that instance's kernels */
	cg_begin(s, PID, 0x7, 0x40);
	cg_captured(s, PID, 0x7, &c);
	cg_captured_exec(s, PID, 0x7, 0xe3);
	cg_end(s, PID, 0x7, 0x40, unjoin, NULL);
	cg_instantiate(s, PID, 0x40, 0xe5);
	CHECK_EQ(launches_of(s, 0xe5, 0xc), 4 + 1 + 2);
	CHECK_EQ(launches_of(s, 0xe5, 0xa), 3 + 1);
	/* a capture that failed makes no graph and leaves none open */
	cg_begin(s, PID, 0x8, 0);
	cg_captured(s, PID, 0x8, &a);
	cg_end(s, PID, 0x8, 0, unjoin, NULL);
	CHECK_EQ(unjoined, 1);
	CHECK_EQ(cg_unknown(s), 0);
	cg_free(s);
}

static void test_unknown_and_partial(void)
{
	struct cg_store *s = cg_new(0);
	struct cg_node a = kn(0xa, 1);
	bool partial = false;
	size_t n;

	/* instance of a graph never seen: not known at all */
	cg_instantiate(s, PID, 0x99, 0xe9);
	CHECK(!cg_exec_nodes(s, PID, 0xe9, &n, NULL));
	CHECK_EQ(cg_unknown(s), 1);
	/* nodes added to a graph made before: known in part */
	cg_node(s, PID, 0x98, &a);
	cg_instantiate(s, PID, 0x98, 0xe8);
	CHECK(cg_exec_nodes(s, PID, 0xe8, &n, &partial) && n == 1 && partial);
	/* a child not known makes its parent partial */
	cg_create(s, PID, 0x97);
	cg_child(s, PID, 0x97, 0x96);
	cg_instantiate(s, PID, 0x97, 0xe7);
	CHECK(cg_exec_nodes(s, PID, 0xe7, &n, &partial) && n == 0 && partial);
	cg_free(s);
}

static void test_cap_counts_drops(void)
{
	struct cg_store *s = cg_new(3);
	bool partial = false;
	size_t n;

	cg_create(s, PID, 0x10);
	for (uint64_t f = 1; f <= 5; f++) {
		struct cg_node x = kn(f, 1);

		cg_node(s, PID, 0x10, &x);
	}
	CHECK_EQ(cg_dropped(s), 2);
	/* the instance copy does not fit either: all its entries dropped */
	cg_instantiate(s, PID, 0x10, 0xe1);
	CHECK(cg_exec_nodes(s, PID, 0xe1, &n, &partial) && n == 0 && partial);
	CHECK_EQ(cg_dropped(s), 5);
	cg_free(s);
}

static bool none_alive(uint32_t pid)
{
	return pid != PID;
}

static int gone_origin, gone_joined;

static void gone(uint32_t pid, uint64_t stream, bool origin, void *ctx)
{
	if (origin)
		gone_origin++;
	else
		gone_joined++;
}

static void test_prune(void)
{
	struct cg_store *s = cg_new(0);
	struct cg_node a = kn(0xa, 1);

	cg_create(s, PID, 0x10);
	cg_node(s, PID, 0x10, &a);
	cg_instantiate(s, PID, 0x10, 0xe1);
	cg_begin(s, PID, 0x5, 0);
	cg_join(s, PID, 0x6, 0x5);
	cg_create(s, PID + 1, 0x10);
	CHECK_EQ(cg_objects(s), 5);
	cg_prune(s, none_alive, gone, NULL);
	CHECK_EQ(gone_origin, 1);
	CHECK_EQ(gone_joined, 1);
	CHECK_EQ(cg_objects(s), 1);
	CHECK(!cg_exec_nodes(s, PID, 0xe1, &(size_t){ 0 }, NULL));
	cg_free(s);
}

int main(void)
{
	RUN(test_nodes_and_instances);
	RUN(test_capture_join_child_clone);
	RUN(test_unknown_and_partial);
	RUN(test_cap_counts_drops);
	RUN(test_prune);
	return t_done();
}
