/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Table writer: UPPERCASE headers, numbers right-aligned and never cut,
 * strings elided with "~" only on a terminal and never with --wide.
 * Strings are sanitised by lib/text's rule (control bytes, C1 and invalid
 * UTF-8 shown as '?'), so a hostile comm cannot split a row or move the
 * cursor.
 */
#ifndef AISCOPE_TABLE_H
#define AISCOPE_TABLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define TC_LEFT		0x1	/* strings: left-aligned, elidable */

struct tcol {
	const char *name;
	int width;
	unsigned int flags;
};

struct table {
	FILE *f;
	const struct tcol *cols;
	int ncols;
	bool elide;		/* a terminal without --wide */
	int cur;		/* column being written */
};

void table_init(struct table *t, FILE *f, const struct tcol *cols, int ncols, bool elide);
/* The same for columns whose first, TIME, only -T shows: without
 * timestamp the table starts at cols[1]. */
void table_init_time(struct table *t, FILE *f, const struct tcol *cols, int ncols,
		     bool timestamp, bool elide);
void table_header(struct table *t);
/* Just the header of such a table (a streaming tool's, once at start). */
void table_header_time(FILE *f, const struct tcol *cols, int ncols, bool timestamp);
void table_str(struct table *t, const char *s);
void table_u64(struct table *t, uint64_t v);
void table_fixed(struct table *t, double v, int decimals);
void table_end_row(struct table *t);
/* the value where it is known, else "-" */
void table_u64_or_dash(struct table *t, bool known, uint64_t v);
void table_fixed_or_dash(struct table *t, bool known, double v, int decimals);
/* "-" in each of the next n columns */
void table_dashes(struct table *t, int n);

/* How many of n rows a table of at most max rows (-r; 0: all) shows. */
size_t table_shown(size_t n, int max);
/* After the shown rows: "... N more (-r 0 shows all)" when max left some out. */
void table_more(FILE *f, size_t shown, size_t n);

/* Start of an interval block: on a terminal (unless noclear) clear the
 * screen and print title; otherwise "# <RFC 3339> interval=<dur>". */
void table_block_begin(FILE *f, bool redraw, uint64_t realtime_ns, uint64_t interval_ns,
		       const char *title);

#endif
