/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A minimal TAP producer for the C unit tests: one "ok"/"not ok" line per
 * test function, the failed checks as "#" diagnostics. tests/run.sh counts
 * the lines.
 *
 *	static void test_x(void) { CHECK(1 + 1 == 2); CHECK_STR(s, "a"); }
 *	int main(void) { RUN(test_x); return t_done(); }
 */
#ifndef AISCOPE_T_H
#define AISCOPE_T_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int t_num, t_failed_tests, t_cur_failed;
static const char *t_skip_why;

/* Inside a test function: report it as skipped (TAP "# skip") and return. */
#define SKIP(why) do { t_skip_why = (why); return; } while (0)

/* SKIP with the reason an expression gives, when it gives one (not NULL) */
#define SKIP_IF(why_or_null) do {						\
	const char *_why = (why_or_null);					\
	if (_why)								\
		SKIP(_why);							\
} while (0)

#define CHECK(cond) do {							\
	if (!(cond)) {								\
		t_cur_failed++;							\
		printf("# %s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); \
	}									\
} while (0)

#define CHECK_EQ(a, b) do {							\
	long long _a = (long long)(a), _b = (long long)(b);			\
	if (_a != _b) {								\
		t_cur_failed++;							\
		printf("# %s:%d: %s == %lld, expected %s == %lld\n", __FILE__,	\
		       __LINE__, #a, _a, #b, _b);				\
	}									\
} while (0)

/*
 * CHECK for one row of a table walked in a loop: every row fails on the
 * same line, so the failure says which row (fmt and its arguments).
 *	CHECK_CASE(parses(c[i].s), "\"%s\"", c[i].s);
 */
#define CHECK_CASE(cond, fmt, ...) do {					\
	if (!(cond)) {								\
		t_cur_failed++;							\
		printf("# %s:%d: CHECK(%s) failed for " fmt "\n", __FILE__,	\
		       __LINE__, #cond, __VA_ARGS__);				\
	}									\
} while (0)

/* The rows of a table, for a loop: for (size_t i = 0; i < T_ROWS(c); i++) */
#define T_ROWS(a) (sizeof(a) / sizeof((a)[0]))

/* A string and the string it must give */
struct t_str_case {
	const char *in;
	const char *want;
};

/* fn(in) is want for each row, as CHECK_STR(fn(in), want) */
static inline void t_check_strs(const char *(*fn)(const char *),
				const struct t_str_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const char *got = fn(c[i].in);

		if (!got || strcmp(got, c[i].want)) {
			t_cur_failed++;
			printf("# row %zu: \"%s\" gave \"%s\", expected \"%s\"\n", i,
			       c[i].in, got ? got : "(null)", c[i].want);
		}
	}
}

/* ok(in) holds for each string, as CHECK(ok(in)); a NULL one is a row too */
static inline void t_check_all(int (*ok)(const char *), const char *what,
			       const char *const *in, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!ok(in[i])) {
			t_cur_failed++;
			printf("# row %zu: %s(\"%s\") failed\n", i, what,
			       in[i] ? in[i] : "(null)");
		}
	}
}

#define CHECK_STR(a, b) do {							\
	const char *_a = (a), *_b = (b);					\
	if (!_a || !_b || strcmp(_a, _b)) {					\
		t_cur_failed++;							\
		printf("# %s:%d: %s is \"%s\", expected \"%s\"\n", __FILE__,	\
		       __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)");	\
	}									\
} while (0)

#define RUN(fn) do {								\
	t_cur_failed = 0;							\
	t_skip_why = NULL;							\
	fn();									\
	t_num++;								\
	if (t_cur_failed)							\
		t_failed_tests++;						\
	printf("%sok %d - %s%s%s\n", t_cur_failed ? "not " : "", t_num, #fn,	\
	       t_skip_why && !t_cur_failed ? " # skip " : "",			\
	       t_skip_why && !t_cur_failed ? t_skip_why : "");			\
	fflush(stdout);								\
} while (0)

/*
 * What a writer puts in a FILE, as a string:
 *	struct t_mem m;
 *	hist_print_log2(t_mem_open(&m), slots, 3, "usecs");
 *	CHECK_STR(t_mem_str(&m), "...");
 * t_mem_str closes the FILE; its string lives until the next one.
 */
struct t_mem {
	FILE *f;
	char *buf;
	size_t len;
};

static char t_mem_out[16384];

static inline FILE *t_mem_open(struct t_mem *m)
{
	m->buf = NULL;
	m->len = 0;
	m->f = open_memstream(&m->buf, &m->len);
	return m->f;
}

static inline const char *t_mem_str(struct t_mem *m)
{
	fclose(m->f);
	snprintf(t_mem_out, sizeof(t_mem_out), "%s", m->buf ? m->buf : "");
	free(m->buf);
	return t_mem_out;
}

static inline int t_done(void)
{
	printf("1..%d\n", t_num);
	return t_failed_tests ? 1 : 0;
}

#endif
