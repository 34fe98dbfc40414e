// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* topograph --mermaid: a Mermaid flowchart, a subgraph per container. */
#include <stdio.h>
#include "topo.h"

/* Mermaid label text inside "...": entity codes for what its parser or
 * the HTML it renders would take as syntax */
static void mm_str(const char *s)
{
	for (; *s; s++) {
		unsigned char c = *s;

		if (put_non_ascii(&s))
			continue;
		switch (c) {
		case '"': printf("#quot;"); break;
		case '#': printf("#35;"); break;
		case '<': printf("#lt;"); break;
		case '>': printf("#gt;"); break;
		case '&': printf("#amp;"); break;
		default:
			putchar(c < 0x20 || c == 0x7f ? '?' : c);
		}
	}
}

static void mm_node(const struct node *n, const char *indent)
{
	char lines[8][128];
	int k = node_lines(n, lines);

	printf("%sn%d%s\"", indent, n->id, n->kind == N_PROC ? "[" : "([");
	for (int i = 0; i < k; i++) {
		mm_str(lines[i]);
		if (i + 1 < k)
			printf("<br/>");
	}
	printf("\"%s\n", n->kind == N_PROC ? "]" : "])");
}

static const struct draw_style mm_style = {
	.cluster = "  subgraph c%d[\"container ", .cluster_label_end = "\"]\n",
	.cluster_end = "  end\n", .str = mm_str, .node = mm_node,
};

void print_mermaid(void)
{
	bool any_flag = false;
	char b[32];

	printf("flowchart LR\n");
	draw_nodes(&mm_style);
	for (size_t i = 0; i < G.nshown; i++)
		any_flag |= G.shown[i]->flags != 0;
	for (size_t i = 0; i < G.ne; i++) {
		const struct gedge *e = G.ev[i];

		human_bytes(e->bytes, b, sizeof(b));
		printf("  n%d -->|\"", e->src->id);
		mm_str(e->kind);
		printf(" %s\"| n%d\n", b, e->dst->id);
	}
	/* after the edges: linkStyle numbers them from 0 */
	for (size_t i = 0; cfg.tree && i < G.nspawn; i += 2)
		printf("  n%d -.->|\"spawn\"| n%d\n", G.spawn[i]->id, G.spawn[i + 1]->id);
	for (size_t i = 0; i < G.ne; i++)
		printf("  linkStyle %zu stroke:%s,stroke-width:%.1fpx\n", i, colour_of(G.ev[i]->kind),
		       width_of(G.ev[i]));
	if (!any_flag)
		return;
	printf("  classDef bottleneck stroke:#d62728,stroke-width:3px\n");
	for (size_t i = 0; i < G.nshown; i++)
		if (G.shown[i]->flags)
			printf("  class n%d bottleneck\n", G.shown[i]->id);
}
