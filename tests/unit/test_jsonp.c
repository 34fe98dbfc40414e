// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/jsonp.c: the JSON-lines reader. Strings with escapes and \u
 * sequences (surrogate pairs, lone surrogates, \u0000), nested objects,
 * integers up to 2^64-1, rejected input, and a round trip through the
 * writer of lib/json.c. */
#include <errno.h>
#include <stdlib.h>
#include "t.h"
#include "json.h"
#include "jsonp.h"

static struct jp p;

static const struct jv *parse(const char *s)
{
	const struct jv *v = NULL;

	if (jp_parse(&p, s, strlen(s), &v)) {
		printf("# parse failed: %s: %s\n", s, jp_error(&p));
		return NULL;
	}
	return v;
}

static int rejects(const char *s)
{
	const struct jv *v;

	return jp_parse(&p, s, strlen(s), &v) == -EINVAL && jp_error(&p)[0];
}

static void test_literals(void)
{
	static const char *const bad[] = { "nul", "tru", "True", "", "   " };
	const struct jv *v;

	v = parse(" null ");
	CHECK(v && v->type == JV_NULL && jv_is_null(v));
	v = parse("true");
	CHECK(v && v->type == JV_BOOL && v->b);
	CHECK(jv_true(v) && !jv_true(parse("1")) && !jv_true(parse("\"true\"")) && !jv_true(NULL));
	v = parse("false");
	CHECK(v && v->type == JV_BOOL && !v->b && !jv_true(v));
	t_check_all(rejects, "rejects", bad, T_ROWS(bad));
}

/* the string a JSON string parses to, NULL when it does not parse */
static const char *parsed_str(const char *s)
{
	return jv_str(parse(s));
}

static void test_plain_and_escaped_strings(void)
{
	static const struct t_str_case c[] = {
		{ "\"producer\"", "producer" },
		{ "\"a\\\"b\\\\c\\/d\"", "a\"b\\c/d" },
		{ "\"\\n\\r\\t\\b\\f\"", "\n\r\t\b\f" },
		{ "\"\"", "" },
		/* raw UTF-8 passes through */
		{ "\"caf\xc3\xa9\"", "caf\xc3\xa9" },
	};
	const struct jv *v;

	t_check_strs(parsed_str, c, T_ROWS(c));
	v = parse("\"producer\"");
	CHECK_EQ(v->len, 8);
	v = parse("\"\"");
	CHECK_EQ(v->len, 0);
}

static void test_unicode_escapes(void)
{
	static const struct t_str_case c[] = {
		{ "\"\\u0041\\u00e9\\u20ac\"", "A\xc3\xa9\xe2\x82\xac" },
		{ "\"\\u00E9\"", "\xc3\xa9" },	/* upper-case hex */
		/* a surrogate pair: U+1F600 */
		{ "\"x\\ud83d\\ude00y\"", "x\xf0\x9f\x98\x80y" },
		/* lone surrogates become U+FFFD, and what follows is kept */
		{ "\"\\ud83dz\"", "\xef\xbf\xbdz" },
		{ "\"\\ude00\"", "\xef\xbf\xbd" },
		{ "\"\\ud83d\\u0041\"", "\xef\xbf\xbd" "A" },
	};
	const struct jv *v;

	t_check_strs(parsed_str, c, T_ROWS(c));
	/* \u0000 is kept: len counts it */
	v = parse("\"a\\u0000b\"");
	CHECK(v && v->len == 3 && !memcmp(v->s, "a\0b", 3));
	/* control characters as json.h escapes them */
	v = parse("\"\\u0001\\u001f\"");
	CHECK(v && v->len == 2 && v->s[0] == 1 && v->s[1] == 0x1f);
}

static void test_bad_strings(void)
{
	static const char *const bad[] = {
		"\"abc", "\"a\\", "\"\\x\"", "\"\\u12\"", "\"\\u12g4\"",
		"\"a\nb\"",		/* raw control character */
		"\"a\tb\"",
	};

	t_check_all(rejects, "rejects", bad, T_ROWS(bad));
}

static void test_integers_up_to_u64(void)
{
	const struct jv *v;
	uint64_t u;
	int64_t i;
	double d;

	v = parse("0");
	CHECK(jv_u64(v, &u) && u == 0);
	v = parse("18446744073709551615");
	CHECK(jv_u64(v, &u) && u == UINT64_MAX);
	CHECK(!jv_i64(v, &i));
	v = parse("9223372036854775807");
	CHECK(jv_i64(v, &i) && i == INT64_MAX);
	v = parse("9007199254740993");	/* 2^53 + 1: not exact as a double */
	CHECK(jv_u64(v, &u) && u == 9007199254740993ULL);
	v = parse("-9223372036854775808");
	CHECK(jv_i64(v, &i) && i == INT64_MIN);
	CHECK(!jv_u64(v, &u));
	v = parse("-42");
	CHECK(jv_i64(v, &i) && i == -42);
	/* beyond u64: a number, but not an integer we can hold */
	v = parse("18446744073709551616");
	CHECK(v && v->type == JV_NUM && !jv_u64(v, &u) && jv_num(v, &d) && d > 1.8e19);
	v = parse("-9223372036854775809");
	CHECK(v && !jv_i64(v, &i));
}

static void test_fractions_and_exponents(void)
{
	static const char *const bad[] = { "01", "1.", ".5", "1e", "-", "+1", "0x10" };
	const struct jv *v;
	uint64_t u;
	double d;

	v = parse("1.5");
	CHECK(jv_num(v, &d) && d == 1.5 && !jv_u64(v, &u));
	v = parse("-0.25e2");
	CHECK(jv_num(v, &d) && d == -25.0);
	v = parse("1E3");
	CHECK(jv_num(v, &d) && d == 1000.0 && !jv_u64(v, &u));
	t_check_all(rejects, "rejects", bad, T_ROWS(bad));
}

static void test_nested_objects(void)
{
	const char *line =
		"{\"type\":\"edge\",\"tool\":\"ipcsnoop\",\"kind\":\"fifo\","
		"\"src\":{\"pid\":4242,\"comm\":\"pro\\\"d\",\"container_id\":null,"
		"\"deep\":{\"a\":[1,[2,{\"b\":3}],[]],\"e\":{}}},"
		"\"dst\":{\"pid\":4243},\"bytes\":1048576,\"read_bytes\":null}";
	const struct jv *v = parse(line), *src, *a;
	uint64_t u = 0;

	CHECK(v && v->type == JV_OBJ && v->len == 7);
	CHECK_STR(jv_str(jv_get(v, "kind")), "fifo");
	src = jv_get(v, "src");
	CHECK(jv_u64(jv_get(src, "pid"), &u) && u == 4242);
	CHECK_STR(jv_str(jv_get(src, "comm")), "pro\"d");
	CHECK(jv_get(src, "container_id") && jv_is_null(jv_get(src, "container_id")));
	CHECK(jv_u64(jv_get(jv_get(v, "dst"), "pid"), &u) && u == 4243);
	CHECK(jv_is_null(jv_get(v, "read_bytes")));
	CHECK(jv_is_null(jv_get(v, "missing")));
	CHECK(!jv_get(v, "missing"));
	CHECK(!jv_get(jv_get(v, "missing"), "pid"));	/* NULL chains */
	a = jv_get(jv_get(src, "deep"), "a");
	CHECK(a && a->type == JV_ARR && a->len == 3);
	CHECK(a && jv_u64(a->child, &u) && u == 1);
	CHECK(a && a->child->next->type == JV_ARR &&
	      jv_u64(jv_get(a->child->next->child->next, "b"), &u) && u == 3);
	CHECK(a && a->child->next->next->type == JV_ARR && a->child->next->next->len == 0);
	CHECK(jv_get(jv_get(src, "deep"), "e")->type == JV_OBJ);
	/* the last of duplicate keys */
	v = parse("{\"k\":1,\"k\":2}");
	CHECK(jv_u64(jv_get(v, "k"), &u) && u == 2);
}

static void test_bad_structure(void)
{
	static const char *const bad[] = {
		"{", "{\"a\"}", "{\"a\":}", "{\"a\":1,}", "{a:1}", "[1,2", "[1 2]",
		"{\"a\":1} x", "{\"a\":1}{\"b\":2}",
	};
	char deep[2 * JP_MAX_DEPTH + 8];
	int n = 0;

	t_check_all(rejects, "rejects", bad, T_ROWS(bad));
	/* too deep: an error, not a crash */
	for (int i = 0; i <= JP_MAX_DEPTH; i++)
		deep[n++] = '[';
	for (int i = 0; i <= JP_MAX_DEPTH; i++)
		deep[n++] = ']';
	deep[n] = 0;
	CHECK(rejects(deep));
	deep[n - 1] = 0;			/* exactly the limit */
	CHECK(parse(deep + 1) != NULL);
}

/* what lib/json.c writes, lib/jsonp.c reads back */
static void test_round_trip_with_writer(void)
{
	const char weird[] = "q\"b\\s\n\x01\xff" "caf\xc3\xa9";
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct jw w;
	const struct jv *v;
	uint64_t u = 0;

	jw_init(&w, f);
	jw_record_begin(&w, "edge", "test", 1);
	jw_kstr(&w, "comm", weird);
	jw_ku64(&w, "bytes", UINT64_MAX);
	jw_key(&w, "src");
	jw_obj_begin(&w);
	jw_ku64(&w, "pid", 7);
	jw_obj_end(&w);
	jw_record_end(&w);
	fclose(f);
	v = parse(buf);
	/* the invalid byte 0xff came out as U+FFFD */
	CHECK_STR(jv_str(jv_get(v, "comm")), "q\"b\\s\n\x01\xef\xbf\xbd" "caf\xc3\xa9");
	CHECK(jv_u64(jv_get(v, "bytes"), &u) && u == UINT64_MAX);
	CHECK(jv_u64(jv_get(jv_get(v, "src"), "pid"), &u) && u == 7);
	CHECK_STR(jv_str(jv_get(v, "ts")), "1970-01-01T00:00:00.000000001Z");
	free(buf);
}

/* the arena is reused: many lines, and a line bigger than a chunk */
static void test_arena_reuse(void)
{
	size_t n = 200000;
	char *big = malloc(n + 3);
	const struct jv *v;

	for (int i = 0; i < 10000; i++)
		CHECK(parse("{\"a\":[1,2,3],\"b\":\"xyz\"}") != NULL);
	big[0] = '"';
	memset(big + 1, 'x', n);
	big[n + 1] = '"';
	big[n + 2] = 0;
	v = parse(big);
	CHECK(v && v->len == n);
	free(big);
}

int main(void)
{
	jp_init(&p);
	RUN(test_literals);
	RUN(test_plain_and_escaped_strings);
	RUN(test_unicode_escapes);
	RUN(test_bad_strings);
	RUN(test_integers_up_to_u64);
	RUN(test_fractions_and_exponents);
	RUN(test_nested_objects);
	RUN(test_bad_structure);
	RUN(test_round_trip_with_writer);
	RUN(test_arena_reuse);
	jp_free(&p);
	return t_done();
}
