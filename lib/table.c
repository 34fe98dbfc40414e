// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <string.h>
#include "table.h"
#include "text.h"
#include "util.h"

void table_init(struct table *t, FILE *f, const struct tcol *cols, int ncols, bool elide)
{
	t->f = f;
	t->cols = cols;
	t->ncols = ncols;
	t->elide = elide;
	t->cur = 0;
}

void table_init_time(struct table *t, FILE *f, const struct tcol *cols, int ncols,
		     bool timestamp, bool elide)
{
	table_init(t, f, cols + !timestamp, ncols - !timestamp, elide);
}

static void gap(struct table *t)
{
	if (t->cur++ > 0)
		fputc(' ', t->f);
}

static bool last(const struct table *t)
{
	return t->cur == t->ncols;
}

void table_header(struct table *t)
{
	t->cur = 0;
	for (int i = 0; i < t->ncols; i++) {
		const struct tcol *c = &t->cols[i];

		gap(t);
		if (c->flags & TC_LEFT)
			fprintf(t->f, "%-*s", last(t) ? 0 : c->width, c->name);
		else
			fprintf(t->f, "%*s", c->width, c->name);
	}
	table_end_row(t);
}

void table_header_time(FILE *f, const struct tcol *cols, int ncols, bool timestamp)
{
	struct table t;

	table_init_time(&t, f, cols, ncols, timestamp, false);
	table_header(&t);
}

void table_str(struct table *t, const char *s)
{
	const struct tcol *c = &t->cols[t->cur < t->ncols ? t->cur : t->ncols - 1];
	size_t n, shown;
	bool cut;
	int pad;

	gap(t);
	if (!s)
		s = "";
	n = shown = strlen(s);
	if (t->elide && (int)n > c->width && c->width > 1) {
		shown = c->width - 1;
		/* never cut a UTF-8 sequence in half */
		while (shown > 0 && ((unsigned char)s[shown] & 0xC0) == 0x80)
			shown--;
	}
	cut = shown < n;
	pad = c->width - (int)(shown + cut);
	if (!(c->flags & TC_LEFT))
		for (; pad > 0; pad--)
			fputc(' ', t->f);
	text_put_safe(t->f, s, shown);
	if (cut)
		fputc('~', t->f);
	if (!last(t))
		for (; pad > 0; pad--)
			fputc(' ', t->f);
}

void table_u64(struct table *t, uint64_t v)
{
	const struct tcol *c = &t->cols[t->cur < t->ncols ? t->cur : t->ncols - 1];

	gap(t);
	fprintf(t->f, "%*llu", c->width, (unsigned long long)v);
}

void table_fixed(struct table *t, double v, int decimals)
{
	const struct tcol *c = &t->cols[t->cur < t->ncols ? t->cur : t->ncols - 1];

	gap(t);
	fprintf(t->f, "%*.*f", c->width, decimals, v);
}

void table_u64_or_dash(struct table *t, bool known, uint64_t v)
{
	if (known)
		table_u64(t, v);
	else
		table_str(t, "-");
}

void table_fixed_or_dash(struct table *t, bool known, double v, int decimals)
{
	if (known)
		table_fixed(t, v, decimals);
	else
		table_str(t, "-");
}

void table_dashes(struct table *t, int n)
{
	for (int i = 0; i < n; i++)
		table_str(t, "-");
}

void table_end_row(struct table *t)
{
	fputc('\n', t->f);
	t->cur = 0;
}

size_t table_shown(size_t n, int max)
{
	return max > 0 && (size_t)max < n ? (size_t)max : n;
}

void table_more(FILE *f, size_t shown, size_t n)
{
	if (shown < n)
		fprintf(f, "... %zu more (-r 0 shows all)\n", n - shown);
}

void table_block_begin(FILE *f, bool redraw, uint64_t realtime_ns, uint64_t interval_ns,
		       const char *title)
{
	char ts[40], dur[32];

	fmt_duration(interval_ns, dur, sizeof(dur));
	if (redraw) {
		char hms[16];

		fmt_hms(realtime_ns, hms, sizeof(hms));
		fputs("\033[H\033[2J", f);
		fprintf(f, "%s  %s  interval=%s\n\n", title, hms, dur);
		return;
	}
	fmt_rfc3339_ns(realtime_ns, ts, sizeof(ts));
	fprintf(f, "# %s interval=%s\n", ts, dur);
}
