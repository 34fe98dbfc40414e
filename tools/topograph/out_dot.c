// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* topograph --dot: a Graphviz digraph, a cluster per container. */
#include <stdio.h>
#include "topo.h"

/* DOT string contents: quotes and backslashes escaped, control bytes
 * shown as '?' (a label's own line breaks are written by the caller) */
static void dot_str(const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (put_non_ascii(&s))
			continue;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else
			putchar(c < 0x20 || c == 0x7f ? '?' : c);
	}
}

static void dot_node(const struct node *n, const char *indent)
{
	char lines[8][128];
	int k = node_lines(n, lines);

	printf("%sn%d [label=\"", indent, n->id);
	for (int i = 0; i < k; i++) {
		dot_str(lines[i]);
		if (i + 1 < k)
			printf("\\n");
	}
	printf("\"");
	if (n->kind != N_PROC)
		printf(", shape=ellipse, style=dashed");
	if (n->flags)
		printf(", color=\"#d62728\", penwidth=3");
	printf("];\n");
}

static const struct draw_style dot_style = {
	.cluster = "  subgraph cluster_%d {\n    label=\"container ", .cluster_label_end = "\";\n",
	.cluster_end = "  }\n", .str = dot_str, .node = dot_node,
};

void print_dot(void)
{
	char b[32];

	printf("digraph topograph {\n");
	printf("  graph [rankdir=LR, fontname=\"Helvetica\", label=\"topograph: %zu nodes, %zu edges\"];\n",
	       G.nshown, G.ne);
	printf("  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n");
	printf("  edge [fontname=\"Helvetica\", fontsize=10];\n");
	draw_nodes(&dot_style);
	for (size_t i = 0; i < G.ne; i++) {
		const struct gedge *e = G.ev[i];

		human_bytes(e->bytes, b, sizeof(b));
		printf("  n%d -> n%d [label=\"%s %s\", tooltip=\"", e->src->id, e->dst->id, e->kind, b);
		dot_str(e->channel);
		printf("\", color=\"%s\", penwidth=%.2f%s];\n", colour_of(e->kind), width_of(e),
		       e->flags ? ", style=bold" : "");
	}
	for (size_t i = 0; cfg.tree && i < G.nspawn; i += 2)
		printf("  n%d -> n%d [label=\"spawn\", style=dashed, color=\"#999999\", arrowhead=empty];\n",
		       G.spawn[i]->id, G.spawn[i + 1]->id);
	printf("}\n");
}
