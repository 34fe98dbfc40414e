// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* topograph's terminal view: NODES by group, EDGES, SPAWNS, BOTTLENECKS. */
#include <stdio.h>
#include <string.h>
#include "table.h"
#include "topo.h"

static const struct tcol node_cols[] = {
	{ "ID", 4, 0 }, { "PID", 7, 0 }, { "PPID", 7, 0 }, { "COMM", 16, TC_LEFT }, { "TX(KiB)", 10, 0 },
	{ "RX(KiB)", 10, 0 }, { "RUNQ_P99(us)", 12, 0 }, { "CUDA_LAUNCHES", 13, 0 },
	{ "NCCL", 14, TC_LEFT }, { "EXIT", 6, TC_LEFT },
	{ "FLAGS", 8, TC_LEFT },
};

static const struct tcol edge_cols[] = {
	{ "KIND", 7, TC_LEFT }, { "SRC", 22, TC_LEFT }, { "DST", 22, TC_LEFT },
	{ "BYTES", 12, 0 }, { "MSGS", 8, 0 }, { "RATE(KiB/s)", 11, 0 }, { "UNREAD", 10, 0 },
	{ "CHANNEL", 30, TC_LEFT },
};

static void flags_str(unsigned int flags, char *buf, size_t len)
{
	*buf = 0;
	for (int r = 0; r < R_NR; r++)
		if (flags & (1u << r))
			snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", *buf ? "," : "",
				 rule_flags[r]);
	if (!*buf)
		snprintf(buf, len, "-");
}

/* "3", "SIG9", "-": still alive, or its end not seen */
static void exit_str(const struct node *n, char *buf, size_t len)
{
	if (!n->exited_ns)
		snprintf(buf, len, "-");
	else if (n->status & 0x7f)
		snprintf(buf, len, "SIG%d", n->status & 0x7f);
	else
		snprintf(buf, len, "%d", (n->status >> 8) & 0xff);
}

static void print_group_header(const struct node *n)
{
	char short_id[13];

	/* several hosts: "[host NAME]", "[container ID on NAME]" */
	const char *on = many_hosts() && n->host ? n->host : NULL;

	if (n->kind == N_ENDPOINT) {
		printf("[external]\n");
		return;
	}
	if (!n->container_id) {
		printf(on ? "[host %s]\n" : "[host]\n", on);
		return;
	}
	if (env.wide)
		printf("[container %s", n->container_id);
	else if (n->ctr_name || n->k8s_container)
		printf("[container %s", n->ctr_name ? n->ctr_name : n->k8s_container);
	else {
		snprintf(short_id, sizeof(short_id), "%s", n->container_id);
		printf("[container %s", short_id);
	}
	printf(on ? " on %s]\n" : "]\n", on);
}

static void table_node(struct table *t, const struct node *n)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "n%d", n->id);
	table_str(t, buf);
	if (n->kind == N_PROC)
		table_u64(t, n->pid);
	else
		table_str(t, "-");
	if (n->has_ppid)
		table_u64(t, n->ppid);
	else
		table_str(t, "-");
	if (n->kind == N_PROC)
		table_str(t, n->comm ? n->comm : "?");
	else
		table_str(t, n->kind == N_ENDPOINT ? n->endpoint : "(unseen)");
	table_fixed(t, n->tx / 1024.0, 1);
	table_fixed(t, n->rx / 1024.0, 1);
	if (n->has_runq)
		table_fixed(t, n->runq_p99_ns / 1e3, 1);
	else
		table_str(t, "-");
	if (n->cuda)
		table_u64(t, n->cuda_launches);
	else
		table_str(t, "-");
	if (n->ncl)
		snprintf(buf, sizeof(buf), "rank %lld/%lld", (long long)n->ncl->rank,
			 (long long)n->ncl->nranks);
	else
		snprintf(buf, sizeof(buf), "-");
	table_str(t, buf);
	exit_str(n, buf, sizeof(buf));
	table_str(t, buf);
	flags_str(n->flags, buf, sizeof(buf));
	table_str(t, buf);
	table_end_row(t);
}

static void print_nodes(bool elide)
{
	struct table t;
	const char *group = NULL, *host = NULL;

	printf("NODES\n");
	table_init(&t, stdout, node_cols, ARRAY_SIZE(node_cols), elide);
	for (size_t i = 0; i < G.nshown; i++) {
		const struct node *n = G.shown[i];

		if (!group || strcmp(group, group_of(n)) ||
		    (n->kind != N_ENDPOINT && n->host != host)) {
			group = group_of(n);
			host = n->host;
			print_group_header(n);
			table_header(&t);
		}
		table_node(&t, n);
	}
}

static void print_edges(bool elide)
{
	struct table t;
	char a[128];
	uint64_t unread;

	printf("\nEDGES\n");
	table_init(&t, stdout, edge_cols, ARRAY_SIZE(edge_cols), elide);
	table_header(&t);
	for (size_t i = 0; i < G.ne; i++) {
		const struct gedge *e = G.ev[i];

		table_str(&t, e->kind);
		node_label(e->src, a, sizeof(a));
		table_str(&t, a);
		node_label(e->dst, a, sizeof(a));
		table_str(&t, a);
		table_u64(&t, e->bytes);
		table_u64(&t, e->msgs);
		if (G.window_ns)
			table_fixed(&t, e->bytes * 1e9 / G.window_ns / 1024.0, 1);
		else
			table_str(&t, "-");
		if (unread_of(e, &unread))
			table_u64(&t, unread);
		else
			table_str(&t, "-");
		table_str(&t, e->channel);
		table_end_row(&t);
	}
}

static void print_spawns(void)
{
	char a[128], b[128], when[64];

	printf("\nSPAWNS\n");
	if (!G.nspawn)
		printf("  none\n");
	for (size_t i = 0; i < G.nspawn; i += 2) {
		node_label(G.spawn[i], a, sizeof(a));
		node_label(G.spawn[i + 1], b, sizeof(b));
		if (G.spawn[i + 1]->started_ns)
			fmt_rfc3339_ns(G.spawn[i + 1]->started_ns, when, sizeof(when));
		else
			snprintf(when, sizeof(when), "before the capture");
		printf("  n%d %s -> n%d %s (%s)\n", G.spawn[i]->id, a, G.spawn[i + 1]->id, b, when);
	}
}

void print_table(void)
{
	bool elide = cfg.tty && !env.wide;
	char dur[32] = "?";
	uint64_t lost = lost_total();

	if (G.window_ns)
		fmt_duration(G.window_ns, dur, sizeof(dur));
	printf("# topograph: %zu nodes, %zu edges, %llu bytes in %s\n", G.nshown, G.ne,
	       (unsigned long long)G.total_bytes, dur);
	if (!G.ne && !G.nshown) {
		printf("(no edges: nothing moved between the processes seen)\n");
		return;
	}
	print_nodes(elide);
	if (G.ne)
		print_edges(elide);
	else
		printf("\n(no edges: nothing moved between the processes seen)\n");
	if (cfg.tree)
		print_spawns();
	printf("\nBOTTLENECKS\n");
	if (!G.nbn)
		printf("  none\n");
	for (size_t i = 0; i < G.nbn; i++) {
		printf("  %-13s ", rule_titles[G.bn[i].rule]);
		for (const char *c = G.bn[i].evidence; *c; c++)	/* a comm cannot move the cursor */
			putchar((unsigned char)*c < 0x20 || *c == 0x7f ? '?' : *c);
		putchar('\n');
	}
	if (!G.any_runq)
		printf("  (no run-queue data: add --with schedlat, or schedlat's --json lines)\n");
	if (lost)
		fprintf(stderr, TOOL ": %llu events were lost by the tools: the graph is incomplete (--buffer-size, a filter)\n",
			(unsigned long long)lost);
}
