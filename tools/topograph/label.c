// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The text of nodes and edges that several writers show: labels, the
 * lines of a drawn node, sizes, colours and widths, valid UTF-8. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include "text.h"
#include "topo.h"


void node_label(const struct node *n, char *buf, size_t len)
{
	switch (n->kind) {
	case N_PROC:
		if (many_hosts() && n->host)
			snprintf(buf, len, "%u/%s@%s", n->pid, n->comm ? n->comm : "?", n->host);
		else
			snprintf(buf, len, "%u/%s", n->pid, n->comm ? n->comm : "?");
		break;
	case N_ENDPOINT:
		/* a loopback address of one of the hosts */
		if (many_hosts() && n->host)
			snprintf(buf, len, "%s@%s", n->endpoint, n->host);
		else
			snprintf(buf, len, "%s", n->endpoint);
		break;
	default:
		snprintf(buf, len, "(unseen)");
	}
}

/* "fifo 4242/producer -> 4243/transformer (/tmp/x.fifo)", allocated */
char *edge_label(const struct gedge *e)
{
	char a[128], b[128];

	node_label(e->src, a, sizeof(a));
	node_label(e->dst, b, sizeof(b));
	return xasprintf("%s %s -> %s (%s)", e->kind, a, b, e->channel);
}

static const struct { const char *kind, *colour; } kind_colours[] = {
	{ "tcp", "#1f77b4" }, { "udp", "#17becf" }, { "pipe", "#2ca02c" }, { "fifo", "#8c564b" },
	{ "unix", "#ff7f0e" }, { "msq", "#9467bd" }, { "mq", "#e377c2" }, { "eventfd", "#7f7f7f" },
	{ "shm", "#bcbd22" },
};

/* The shown nodes in their order, a cluster around each container's */
void draw_nodes(const struct draw_style *s)
{
	const char *group = NULL;
	bool open = false;
	int cluster = 0;

	for (size_t i = 0; i < G.nshown; i++) {
		const struct node *n = G.shown[i];

		if (!group || strcmp(group, group_of(n))) {
			if (open)
				fputs(s->cluster_end, stdout);
			group = group_of(n);
			open = n->container_id && n->kind != N_ENDPOINT;
			if (open) {
				printf(s->cluster, ++cluster);
				s->str(n->container_id);
				fputs(s->cluster_label_end, stdout);
			}
		}
		s->node(n, open ? "    " : "  ");
	}
	if (open)
		fputs(s->cluster_end, stdout);
}

const char *colour_of(const char *kind)
{
	for (size_t i = 0; i < ARRAY_SIZE(kind_colours); i++)
		if (!strcmp(kind, kind_colours[i].kind))
			return kind_colours[i].colour;
	return "#000000";
}

/* 1 to 8: proportional to the bytes, the biggest edge widest */
double width_of(const struct gedge *e)
{
	uint64_t max = G.ne ? G.ev[0]->bytes : 0;

	return max ? 1.0 + 7.0 * e->bytes / max : 1.0;
}

void human_bytes(uint64_t b, char *buf, size_t len)
{
	if (b >= 1ULL << 30)
		snprintf(buf, len, "%.1f GiB", b / 1073741824.0);
	else if (b >= 1ULL << 20)
		snprintf(buf, len, "%.1f MiB", b / 1048576.0);
	else if (b >= 1ULL << 10)
		snprintf(buf, len, "%.1f KiB", b / 1024.0);
	else
		snprintf(buf, len, "%llu B", (unsigned long long)b);
}

/* The lines of a node's label: "pid comm", then what is known of it. */
int node_lines(const struct node *n, char lines[][128])
{
	int k = 0;

	if (n->kind == N_PROC)
		snprintf(lines[k++], 128, "%u %s", n->pid, n->comm ? n->comm : "?");
	else if (n->kind == N_ENDPOINT)
		snprintf(lines[k++], 128, "%s", n->endpoint);
	else
		snprintf(lines[k++], 128, "reader not seen: %s", n->endpoint);
	if (many_hosts() && n->host)
		snprintf(lines[k++], 128, "on %s", n->host);
	if (n->has_runq)
		snprintf(lines[k++], 128, "runq p99 %.1f ms", n->runq_p99_ns / 1e6);
	if (n->ncl)
		snprintf(lines[k++], 128, "nccl rank %lld/%lld", (long long)n->ncl->rank,
			 (long long)n->ncl->nranks);
	if (n->cuda)
		snprintf(lines[k++], 128, "cuda %llu launches", (unsigned long long)n->cuda_launches);
	if (n->exited_ns && (n->status & 0x7f))
		snprintf(lines[k++], 128, "killed by signal %d", n->status & 0x7f);
	else if (n->exited_ns)
		snprintf(lines[k++], 128, "exit %d", (n->status >> 8) & 0xff);
	if (n->execs >= 2)
		snprintf(lines[k++], 128, "exec'd %llu times", (unsigned long long)n->execs);
	return k;
}

/* Writes the multi-byte sequence at *s (or '?' for an invalid byte) and
 * moves *s past it; false for a plain ASCII byte, left to the caller.
 * DOT and Mermaid text must be valid UTF-8, whatever a comm holds. */
bool put_non_ascii(const char **s)
{
	const unsigned char *u = (const unsigned char *)*s;
	int n;

	if (u[0] < 0x80)
		return false;
	n = text_utf8_len(u, strnlen(*s, 4));
	if (n)
		fwrite(u, 1, n, stdout);
	else
		putchar('?');
	*s += n ? n - 1 : 0;
	return true;
}
