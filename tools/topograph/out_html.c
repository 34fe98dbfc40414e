// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * topograph --html FILE: one self-contained page of the graph, to open in
 * any browser without a network: an SVG drawn here (no script, no
 * library), the bottlenecks and a table of the edges.
 *
 * The layout is layered, left to right: a node's column is one more than
 * that of the first node found feeding it (a breadth-first walk from the
 * nodes nothing feeds, in the graph's order), so that a pipeline reads
 * from left to right; a cycle's way back is drawn as an arc. Every node
 * is a <g class="node" id="nN"> with its pid, host and kind in data-
 * attributes, every edge a <path class="edge" id="eN"> with its ends,
 * kind, channel and bytes: a page a script can check.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "text.h"
#include "topo.h"

#define COL_W	280	/* a column's width */
#define NODE_W	210
#define LINE_H	16
#define ROW_GAP	24
#define MARGIN	30

struct place {
	int col, row;
	int x, y, h;
};

/* HTML text or attribute value: markup characters as entities, control
 * bytes but tab as '?', invalid UTF-8 as U+FFFD (as the JSON has it) */
static void h_str(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		unsigned char c = *s;
		int n;

		if (c >= 0x80) {
			n = text_utf8_len((const unsigned char *)s, strnlen(s, 4));
			if (n) {
				fwrite(s, 1, n, f);
				s += n - 1;
			} else {
				fputs("\xef\xbf\xbd", f);
			}
			continue;
		}
		switch (c) {
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		case '\t':
			fputc(c, f);
			break;
		default:
			fputc(c < 0x20 || c == 0x7f ? '?' : c, f);
		}
	}
}

/* the columns: breadth first from the nodes nothing feeds; each node's
 * out-edges found through an index by source (counting sort, in the
 * graph's order), not a walk of every edge per node */
static void place_columns(struct place *p)
{
	size_t n = G.nshown, head = 0, tail = 0;
	struct node **queue = xcalloc(n ? n : 1, sizeof(*queue));
	bool *seen = xcalloc(n ? n : 1, sizeof(*seen));
	bool *fed = xcalloc(n ? n : 1, sizeof(*fed));
	size_t *first = xcalloc(n + 1, sizeof(*first));
	size_t *pos = xcalloc(n ? n : 1, sizeof(*pos));
	const struct gedge **out = xcalloc(G.ne ? G.ne : 1, sizeof(*out));

	for (size_t i = 0; i < G.ne; i++) {
		if (G.ev[i]->src != G.ev[i]->dst)
			fed[G.ev[i]->dst->id - 1] = true;
		first[G.ev[i]->src->id]++;
	}
	/* first[k]: the edges from ids up to k; node id's out-edges are
	 * out[first[id - 1] .. first[id]) */
	for (size_t i = 1; i <= n; i++)
		first[i] += first[i - 1];
	for (size_t i = 0; i < n; i++)
		pos[i] = first[i];
	for (size_t i = 0; i < G.ne; i++)
		out[pos[G.ev[i]->src->id - 1]++] = G.ev[i];
	/* the sources first; then whatever a cycle left, in order */
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			if (seen[i] || (pass == 0 && fed[i]))
				continue;
			seen[i] = true;
			p[i].col = 0;
			queue[tail++] = G.shown[i];
			while (head < tail) {
				const struct node *u = queue[head++];

				for (size_t k = first[u->id - 1]; k < first[u->id]; k++) {
					int d = out[k]->dst->id - 1;

					if (seen[d])
						continue;
					seen[d] = true;
					p[d].col = p[u->id - 1].col + 1;
					queue[tail++] = out[k]->dst;
				}
			}
		}
	}
	free(out);
	free(pos);
	free(first);
	free(queue);
	free(seen);
	free(fed);
}

/* rows within each column, in the graph's order; then the coordinates */
static void place_rows(struct place *p, int *width, int *height)
{
	int ncols = 0, *next_y;
	char lines[8][128];

	for (size_t i = 0; i < G.nshown; i++)
		if (p[i].col + 1 > ncols)
			ncols = p[i].col + 1;
	next_y = xcalloc(ncols ? ncols : 1, sizeof(*next_y));
	*height = 0;
	for (size_t i = 0; i < G.nshown; i++) {
		p[i].h = 12 + LINE_H * node_lines(G.shown[i], lines);
		p[i].x = MARGIN + p[i].col * COL_W;
		p[i].y = MARGIN + next_y[p[i].col];
		next_y[p[i].col] += p[i].h + ROW_GAP;
		if (p[i].y + p[i].h > *height)
			*height = p[i].y + p[i].h;
	}
	*width = 2 * MARGIN + (ncols ? (ncols - 1) * COL_W + NODE_W : 0);
	*height += MARGIN;
	free(next_y);
}

static void svg_node(FILE *f, const struct node *n, const struct place *p)
{
	char lines[8][128], label[512];
	int k = node_lines(n, lines);

	node_label(n, label, sizeof(label));
	fprintf(f, "<g class=\"node%s\" id=\"n%d\" data-kind=\"%s\"", n->flags ? " flagged" : "",
		n->id, node_kind_names[n->kind]);
	if (n->kind == N_PROC)
		fprintf(f, " data-pid=\"%u\"", n->pid);
	if (n->host) {
		fputs(" data-host=\"", f);
		h_str(f, n->host);
		fputc('"', f);
	}
	fputs("><title>", f);
	h_str(f, label);
	fprintf(f, "</title><rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"%d\"/>", p->x, p->y,
		NODE_W, p->h, n->kind == N_PROC ? 6 : p->h / 2);
	for (int i = 0; i < k; i++) {
		fprintf(f, "<text x=\"%d\" y=\"%d\"%s>", p->x + 10, p->y + 6 + LINE_H * (i + 1) - 4,
			i ? " class=\"sub\"" : "");
		h_str(f, lines[i]);
		fputs("</text>", f);
	}
	fputs("</g>\n", f);
}

static void svg_edge(FILE *f, const struct gedge *e, const struct place *a, const struct place *b)
{
	int x1 = a->x + NODE_W, y1 = a->y + a->h / 2, x2 = b->x, y2 = b->y + b->h / 2;
	char *label = edge_label(e), bytes[32];

	human_bytes(e->bytes, bytes, sizeof(bytes));
	fprintf(f, "<path class=\"edge%s\" id=\"e%d\" data-src=\"n%d\" data-dst=\"n%d\" data-kind=\"",
		e->flags ? " flagged" : "", e->id, e->src->id, e->dst->id);
	h_str(f, e->kind);
	fprintf(f, "\" data-bytes=\"%llu\" data-channel=\"", (unsigned long long)e->bytes);
	h_str(f, e->channel);
	fprintf(f, "\" stroke=\"%s\" stroke-width=\"%.2f\" marker-end=\"url(#arrow)\" d=\"",
		colour_of(e->kind), width_of(e));
	if (x2 > x1) {
		fprintf(f, "M%d %d C%d %d %d %d %d %d", x1, y1, (x1 + x2) / 2, y1, (x1 + x2) / 2, y2,
			x2, y2);
	} else {
		/* back to an earlier column (a cycle), or within one: around */
		int top = (a->y < b->y ? a->y : b->y) - 20;

		fprintf(f, "M%d %d C%d %d %d %d %d %d", x1, y1, x1 + 60, top, x2 - 60, top, x2, y2);
	}
	fputs("\"><title>", f);
	h_str(f, label);
	fprintf(f, ": %s in %llu messages</title></path>\n", bytes, (unsigned long long)e->msgs);
	free(label);
}

static void html_svg(FILE *f)
{
	struct place *p = xcalloc(G.nshown ? G.nshown : 1, sizeof(*p));
	int w, h;

	place_columns(p);
	place_rows(p, &w, &h);
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
		w, h, w, h);
	fputs("<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" markerUnits=\"userSpaceOnUse\" markerWidth=\"10\" markerHeight=\"10\" orient=\"auto-start-reverse\"><path d=\"M0 0L10 5L0 10z\" fill=\"#555\"/></marker></defs>\n",
	      f);
	for (size_t i = 0; i < G.ne; i++)
		svg_edge(f, G.ev[i], &p[G.ev[i]->src->id - 1], &p[G.ev[i]->dst->id - 1]);
	for (size_t i = 0; i < G.nshown; i++)
		svg_node(f, G.shown[i], &p[i]);
	fputs("</svg>\n", f);
	free(p);
}

static void html_bottlenecks(FILE *f)
{
	fputs("<h2>Bottlenecks</h2>\n", f);
	if (!G.nbn) {
		fputs("<p>none</p>\n", f);
		return;
	}
	fputs("<ul class=\"bottlenecks\">\n", f);
	for (size_t i = 0; i < G.nbn; i++) {
		fprintf(f, "<li data-rule=\"%s\"><b>", rule_names[G.bn[i].rule]);
		h_str(f, rule_titles[G.bn[i].rule]);
		fputs("</b> ", f);
		h_str(f, G.bn[i].evidence);
		fputs("</li>\n", f);
	}
	fputs("</ul>\n", f);
}

static void html_edges(FILE *f)
{
	fputs("<h2>Edges</h2>\n<table class=\"edges\"><tr><th>kind</th><th>from</th><th>to</th><th>bytes</th><th>messages</th><th>read</th><th>channel</th></tr>\n",
	      f);
	for (size_t i = 0; i < G.ne; i++) {
		const struct gedge *e = G.ev[i];
		char a[256], b[256];

		node_label(e->src, a, sizeof(a));
		node_label(e->dst, b, sizeof(b));
		fputs("<tr><td>", f);
		h_str(f, e->kind);
		fputs("</td><td>", f);
		h_str(f, a);
		fputs("</td><td>", f);
		h_str(f, b);
		fprintf(f, "</td><td>%llu</td><td>%llu</td><td>", (unsigned long long)e->bytes,
			(unsigned long long)e->msgs);
		if (e->read_known && !e->read_missing)
			fprintf(f, "%llu", (unsigned long long)e->read_bytes);
		else
			fputs("-", f);
		fputs("</td><td>", f);
		h_str(f, e->channel);
		fputs("</td></tr>\n", f);
	}
	fputs("</table>\n", f);
}

static const char css[] =
	"body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}"
	"svg{border:1px solid #ddd;background:#fcfcfc;max-width:none}"
	".node rect{fill:#eef4fb;stroke:#4a78b0;stroke-width:1.5}"
	"[data-kind=endpoint] rect,[data-kind=unseen] rect{fill:#f4f4f4;stroke:#888;stroke-dasharray:4 3}"
	".node.flagged rect{stroke:#d62728;stroke-width:3}"
	".node text{font-size:12px;fill:#111}.node text.sub{fill:#555;font-size:11px}"
	".edge{fill:none;opacity:.8}.edge.flagged{opacity:1}"
	"table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:2px 8px;text-align:left}"
	"td:nth-child(4),td:nth-child(5),td:nth-child(6){text-align:right}";

void write_html(FILE *f, const char *path)
{
	char total[32];

	human_bytes(G.total_bytes, total, sizeof(total));
	fprintf(f, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>topograph: %zu nodes, %zu edges</title>\n<style>%s</style></head><body>\n",
		G.nshown, G.ne, css);
	fprintf(f, "<h1>topograph</h1>\n<p class=\"summary\" data-nodes=\"%zu\" data-edges=\"%zu\" data-bytes=\"%llu\">%zu nodes, %zu edges, %s",
		G.nshown, G.ne, (unsigned long long)G.total_bytes, G.nshown, G.ne, total);
	if (G.nhosts > 1) {
		fputs(" on", f);
		for (size_t i = 0; i < G.nhosts; i++) {
			fputc(' ', f);
			h_str(f, G.hosts[i]);
		}
	}
	fputs("</p>\n", f);
	html_svg(f);
	html_bottlenecks(f);
	html_edges(f);
	fputs("</body></html>\n", f);
	if (fclose(f))
		aiscope_fail(EXIT_RUNTIME, "cannot write '%s': %s", path, strerror(errno));
}
