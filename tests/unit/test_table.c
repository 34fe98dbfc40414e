// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/table.c: column layout, elision, control bytes, interval headers. */
#include <stdlib.h>
#include "t.h"
#include "table.h"
#include "util.h"

static const struct tcol cols[] = {
	{ "PID", 7, 0 },
	{ "COMM", 8, TC_LEFT },
	{ "LAT(us)", 8, 0 },
	{ "CGROUP", 10, TC_LEFT },
};

static struct t_mem mem;
static struct table t;

static void open_table(const struct tcol *c, int n, bool elide)
{
	table_init(&t, t_mem_open(&mem), c, n, elide);
}

static const char *done(void)
{
	return t_mem_str(&mem);
}

static void row(uint64_t pid, const char *comm, uint64_t lat, const char *cg)
{
	table_u64(&t, pid);
	table_str(&t, comm);
	table_u64(&t, lat);
	table_str(&t, cg);
	table_end_row(&t);
}

static void test_or_dash(void)
{
	static const struct tcol c[] = {
		{ "A", 4, 0 }, { "B", 4, 0 }, { "C", 6, 0 }, { "D", 6, 0 }, { "E", 3, 0 }, { "F", 3, 0 },
	};

	open_table(c, 6, false);
	table_u64_or_dash(&t, true, 12);
	table_u64_or_dash(&t, false, 12);
	table_fixed_or_dash(&t, true, 1.25, 1);
	table_fixed_or_dash(&t, false, 1.25, 1);
	table_dashes(&t, 2);
	table_end_row(&t);
	/* the dashes right-aligned where the numbers are */
	CHECK_STR(done(), "  12    -    1.2      -   -   -\n");
}

static void test_header(void)
{
	open_table(cols, 4, true);
	table_header(&t);
	/* right-aligned "PID" in 7, "COMM" padded to 8, "LAT(us)" in 8, last unpadded */
	CHECK_STR(done(), "    PID COMM      LAT(us) CGROUP\n");
}

static void time_table(bool timestamp)
{
	static const struct tcol c[] = {
		{ "TIME", 8, TC_LEFT }, { "PID", 7, 0 }, { "COMM", 8, TC_LEFT },
	};

	table_init_time(&t, t_mem_open(&mem), c, 3, timestamp, true);
	table_header(&t);
	if (timestamp)
		table_str(&t, "08:17:31");
	table_u64(&t, 42);
	table_str(&t, "python3");
	table_end_row(&t);
}

static void test_time_column_only_with_timestamp(void)
{
	time_table(false);
	CHECK_STR(done(), "    PID COMM\n     42 python3\n");
	time_table(true);
	CHECK_STR(done(), "TIME         PID COMM\n08:17:31      42 python3\n");
}

static void test_header_time(void)
{
	static const struct tcol c[] = {
		{ "TIME", 8, TC_LEFT }, { "PID", 7, 0 }, { "COMM", 8, TC_LEFT },
	};

	FILE *f = t_mem_open(&mem);

	table_header_time(f, c, 3, false);
	table_header_time(f, c, 3, true);
	CHECK_STR(done(), "    PID COMM\nTIME         PID COMM\n");
}

static void test_header_last_right_aligned(void)
{
	static const struct tcol c[] = { { "COMM", 6, TC_LEFT }, { "COUNT", 7, 0 } };

	open_table(c, 2, false);
	table_header(&t);
	table_str(&t, "a");
	table_u64(&t, 5);
	table_end_row(&t);
	CHECK_STR(done(), "COMM     COUNT\n"
			  "a            5\n");
}

static void test_row_alignment(void)
{
	open_table(cols, 4, true);
	table_header(&t);
	row(42, "bash", 1234, "/a");
	row(1, "", 0, "");
	CHECK_STR(done(), "    PID COMM      LAT(us) CGROUP\n"
			  "     42 bash         1234 /a\n"
			  "      1                 0 \n");
}

/* rows of cols, each in a table of its own, and how they print */
static void test_one_row(void)
{
	static const struct {
		bool elide;
		uint64_t pid;
		const char *comm;
		uint64_t lat;
		const char *cg, *want;
	} c[] = {
		/* elided only when longer: exactly the widths are kept, one more
		 * is cut with ~ */
		{ true, 7, "12345678", 1, "0123456789", "      7 12345678        1 0123456789\n" },
		{ true, 7, "123456789", 1, "0123456789A", "      7 1234567~        1 012345678~\n" },
		{ true, 7, "averyverylongname", 1, "/system.slice/x.scope",
		  "      7 averyve~        1 /system.s~\n" },
		/* not elided (wide): printed whole, the columns of a short row unmoved */
		{ false, 7, "averyverylongname", 1, "/system.slice/x.scope",
		  "      7 averyverylongname        1 /system.slice/x.scope\n" },
		{ false, 8, "short", 2, "/b", "      8 short           2 /b\n" },
		/* numbers are never truncated */
		{ true, 123456789012ULL, "x", 18446744073709551615ULL, "/",
		  "123456789012 x        18446744073709551615 /\n" },
		/* control bytes */
		{ false, 1, "a\tb\x1b[2J", 2, "x\ny\rz\x7f", "      1 a?b?[2J         2 x?y?z?\n" },
		/* control bytes when elided */
		{ true, 1, "\x01\x02\x03\x04\x05\x06\x07\x08\x09", 2, "/", "      1 ???????~        2 /\n" },
		/* raw CSI (0x9b), U+009B, an invalid byte and a surrogate */
		{ false, 1, "a\x9b" "1m\xc2\x9b", 2, "\xff\xed\xa0\x80", "      1 a?1m??          2 ????\n" },
		/* UTF-8 passes; widths count bytes: 5 bytes + 3 pad */
		{ false, 1, "caf\xc3\xa9", 2, "/", "      1 caf\xc3\xa9           2 /\n" },
		/* NULL strings */
		{ true, 1, NULL, 2, NULL, "      1                 2 \n" },
	};

	for (size_t i = 0; i < T_ROWS(c); i++) {
		const char *got;

		open_table(cols, 4, c[i].elide);
		row(c[i].pid, c[i].comm, c[i].lat, c[i].cg);
		got = done();
		CHECK_CASE(!strcmp(got, c[i].want), "row %zu: \"%s\", expected \"%s\"", i, got,
			   c[i].want);
	}
}

static void test_right_aligned_string_column(void)
{
	static const struct tcol c[] = {
		{ "STATE", 6, 0 }, { "DEV", 4, 0 }, { "NAME", 4, TC_LEFT },
	};

	open_table(c, 3, true);
	table_header(&t);
	table_str(&t, "up");
	table_str(&t, "eth0x");
	table_str(&t, "n");
	table_end_row(&t);
	CHECK_STR(done(), " STATE  DEV NAME\n"
			  "    up eth~ n\n");
}

static void test_fixed(void)
{
	static const struct tcol c[] = { { "AVG(ms)", 8, 0 }, { "PCT", 6, 0 } };

	open_table(c, 2, true);
	table_header(&t);
	table_fixed(&t, 1.5, 2);
	table_fixed(&t, 99.999, 1);
	table_end_row(&t);
	table_fixed(&t, 123456789.25, 2);
	table_fixed(&t, 0, 1);
	table_end_row(&t);
	CHECK_STR(done(), " AVG(ms)    PCT\n"
			  "    1.50  100.0\n"
			  "123456789.25    0.0\n");
}

static void test_single_column(void)
{
	static const struct tcol c[] = { { "PATH", 10, TC_LEFT } };

	open_table(c, 1, true);
	table_header(&t);
	table_str(&t, "/x");
	table_end_row(&t);
	table_str(&t, "/a/very/long/path");
	table_end_row(&t);
	CHECK_STR(done(), "PATH\n/x\n/a/very/l~\n");
}

static void test_block_begin_append(void)
{
	struct t_mem m;
	FILE *f = t_mem_open(&m);

	table_block_begin(f, false, 1764404251123456789ULL, NSEC_PER_SEC, "schedlat");
	table_block_begin(f, false, 0, 500 * NSEC_PER_MSEC, "schedlat");
	table_block_begin(f, false, 951782400000000001ULL, 120 * NSEC_PER_SEC, "x");
	CHECK_STR(t_mem_str(&m), "# 2025-11-29T08:17:31.123456789Z interval=1s\n"
		       "# 1970-01-01T00:00:00.000000000Z interval=500ms\n"
		       "# 2000-02-29T00:00:00.000000001Z interval=2m\n");
}

static void test_block_begin_redraw(void)
{
	struct t_mem m;
	FILE *f = t_mem_open(&m);

	setenv("TZ", "UTC", 1);
	tzset();
	table_block_begin(f, true, 1764404251123456789ULL, 1500 * NSEC_PER_MSEC, "schedlat");
	CHECK_STR(t_mem_str(&m), "\033[H\033[2Jschedlat  08:17:31  interval=1.5s\n\n");
}

static void test_shown(void)
{
	CHECK_EQ(table_shown(5, 0), 5);		/* -r 0: all */
	CHECK_EQ(table_shown(5, 3), 3);
	CHECK_EQ(table_shown(5, 5), 5);
	CHECK_EQ(table_shown(5, 20), 5);
	CHECK_EQ(table_shown(0, 20), 0);
}

static void test_more(void)
{
	struct t_mem m;
	FILE *f = t_mem_open(&m);

	table_more(f, 5, 5);			/* nothing left out: no line */
	table_more(f, 0, 0);
	table_more(f, 3, 5);
	table_more(f, 20, 1020);
	CHECK_STR(t_mem_str(&m), "... 2 more (-r 0 shows all)\n... 1000 more (-r 0 shows all)\n");
}

int main(void)
{
	RUN(test_header);
	RUN(test_time_column_only_with_timestamp);
	RUN(test_header_last_right_aligned);
	RUN(test_row_alignment);
	RUN(test_one_row);
	RUN(test_right_aligned_string_column);
	RUN(test_fixed);
	RUN(test_single_column);
	RUN(test_block_begin_append);
	RUN(test_block_begin_redraw);
	RUN(test_or_dash);
	RUN(test_header_time);
	RUN(test_shown);
	RUN(test_more);
	return t_done();
}
