// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/json.c: string escaping (control bytes, invalid UTF-8) and the
 * JSON-lines writer. */
#include <math.h>
#include <stdlib.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"
#include "json.h"
#include "util.h"

#define FFFD "\xef\xbf\xbd"

/* The escaped form of s[0..n), as a C string. */
static const char *esc_n(const char *s, size_t n)
{
	struct t_mem m;

	json_write_string(t_mem_open(&m), s, n);
	return t_mem_str(&m);
}

static const char *esc(const char *s)
{
	return esc_n(s, strlen(s));
}

static void test_escapes_ascii(void)
{
	static const struct t_str_case c[] = {
		/* plain ascii */
		{ "", "\"\"" },
		{ "bash", "\"bash\"" },
		{ "a b/c'd", "\"a b/c'd\"" },
		/* quote and backslash */
		{ "a\"b", "\"a\\\"b\"" },
		{ "a\\b", "\"a\\\\b\"" },
		{ "\\\"", "\"\\\\\\\"\"" },
		{ "\"\"", "\"\\\"\\\"\"" },
		/* short escapes */
		{ "\n", "\"\\n\"" },
		{ "\r", "\"\\r\"" },
		{ "\t", "\"\\t\"" },
		{ "\b", "\"\\b\"" },
		{ "\f", "\"\\f\"" },
		{ "x\n\r\t\b\fy", "\"x\\n\\r\\t\\b\\fy\"" },
		/* other control bytes */
		{ "\x01", "\"\\u0001\"" },
		{ "\x1f", "\"\\u001f\"" },
		{ "\x0b", "\"\\u000b\"" },
		{ "\x1b[2J", "\"\\u001b[2J\"" },
		{ "\x7f", "\"\\u007f\"" },
		{ "a\x01" "b\x7f" "c", "\"a\\u0001b\\u007fc\"" },
		/* 0x20 and 0x7e are printable */
		{ " ~", "\" ~\"" },
	};

	t_check_strs(esc, c, T_ROWS(c));
}

static void test_escapes_utf8(void)
{
	static const struct t_str_case c[] = {
		/* valid utf8 passes */
		{ "\xc3\xa9", "\"\xc3\xa9\"" },			/* é U+00E9 */
		{ "\xc2\x80", "\"\xc2\x80\"" },			/* U+0080, smallest 2-byte */
		{ "\xe2\x82\xac", "\"\xe2\x82\xac\"" },		/* € U+20AC */
		{ "\xe0\xa0\x80", "\"\xe0\xa0\x80\"" },		/* U+0800, smallest 3-byte */
		{ "\xef\xbf\xbd", "\"\xef\xbf\xbd\"" },		/* U+FFFD itself */
		{ "\xf0\x9f\x98\x80", "\"\xf0\x9f\x98\x80\"" },	/* 😀 U+1F600 */
		{ "\xf0\x90\x80\x80", "\"\xf0\x90\x80\x80\"" },	/* U+10000 */
		{ "\xf4\x8f\xbf\xbf", "\"\xf4\x8f\xbf\xbf\"" },	/* U+10FFFF */
		{ "\xed\x9f\xbf", "\"\xed\x9f\xbf\"" },		/* U+D7FF */
		{ "a\xc3\xa9\"\xe2\x82\xac", "\"a\xc3\xa9\\\"\xe2\x82\xac\"" },
		/* lone continuation */
		{ "\x80", "\"" FFFD "\"" },
		{ "\xbf", "\"" FFFD "\"" },
		{ "a\x80" "b", "\"a" FFFD "b\"" },
		{ "\xc3\xa9\xa9", "\"\xc3\xa9" FFFD "\"" },
		/* truncated sequences */
		/* every byte of a broken sequence becomes one U+FFFD */
		{ "\xe2\x82", "\"" FFFD FFFD "\"" },
		{ "a\xe2\x82", "\"a" FFFD FFFD "\"" },
		{ "\xc3", "\"" FFFD "\"" },
		{ "\xf0\x9f\x98", "\"" FFFD FFFD FFFD "\"" },
		/* a lead byte followed by ASCII: the ASCII survives */
		{ "\xc3" "A", "\"" FFFD "A\"" },
		{ "\xe2\x82" "\"", "\"" FFFD FFFD "\\\"\"" },
		/* overlong forms */
		{ "\xc0\xaf", "\"" FFFD FFFD "\"" },
		{ "\xc1\xbf", "\"" FFFD FFFD "\"" },
		{ "\xe0\x80\xaf", "\"" FFFD FFFD FFFD "\"" },
		{ "\xe0\x9f\xbf", "\"" FFFD FFFD FFFD "\"" },
		{ "\xf0\x8f\xbf\xbf", "\"" FFFD FFFD FFFD FFFD "\"" },
		/* overlong NUL */
		{ "\xc0\x80", "\"" FFFD FFFD "\"" },
		/* surrogates and range */
		{ "\xed\xa0\x80", "\"" FFFD FFFD FFFD "\"" },	/* U+D800 */
		{ "\xed\xbf\xbf", "\"" FFFD FFFD FFFD "\"" },	/* U+DFFF */
		{ "\xf4\x90\x80\x80", "\"" FFFD FFFD FFFD FFFD "\"" },	/* U+110000 */
		{ "\xf5\x80\x80\x80", "\"" FFFD FFFD FFFD FFFD "\"" },
		/* never valid bytes */
		{ "\xff", "\"" FFFD "\"" },
		{ "\xfe", "\"" FFFD "\"" },
		{ "\xf8\x88\x80\x80\x80", "\"" FFFD FFFD FFFD FFFD FFFD "\"" },
		{ "a\xff" "b\xfe" "c", "\"a" FFFD "b" FFFD "c\"" },
	};

	t_check_strs(esc, c, T_ROWS(c));
}

static void test_nul_terminates(void)
{
	CHECK_STR(esc_n("ab\0cd", 5), "\"ab\"");
	CHECK_STR(esc_n("\0abc", 4), "\"\"");
	/* NUL in the middle of a multi-byte sequence: the lead byte is invalid */
	CHECK_STR(esc_n("\xc3\0\xa9", 3), "\"" FFFD "\"");
	CHECK_STR(esc_n("\xe2\x82\0", 3), "\"" FFFD FFFD "\"");
}

static void test_length_bound(void)
{
	/* a 16-byte comm without a NUL, then other data */
	struct { char comm[16]; char after[8]; } ev;

	memcpy(ev.comm, "0123456789abcdef", 16);
	memcpy(ev.after, "XXXXXXX", 8);
	CHECK_STR(esc_n(ev.comm, sizeof(ev.comm)), "\"0123456789abcdef\"");
	CHECK_STR(esc_n(ev.comm, 4), "\"0123\"");
	CHECK_STR(esc_n(ev.comm, 0), "\"\"");
	/* the bound cuts a multi-byte sequence: it is invalid there */
	CHECK_STR(esc_n("\xc3\xa9", 1), "\"" FFFD "\"");
	CHECK_STR(esc_n("x\xf0\x9f\x98\x80", 4), "\"x" FFFD FFFD FFFD "\"");
	CHECK_STR(esc_n("x\xf0\x9f\x98\x80", 5), "\"x\xf0\x9f\x98\x80\"");
}

/* ---- the writer ---- */

struct cap {
	struct t_mem m;
	struct jw w;
};

static void cap_open(struct cap *c)
{
	jw_init(&c->w, t_mem_open(&c->m));
}

static const char *cap_close(struct cap *c)
{
	return t_mem_str(&c->m);
}

static void test_or_null(void)
{
	struct cap c;

	cap_open(&c);
	jw_obj_begin(&c.w);
	jw_ku64_or_null(&c.w, "a", true, 18446744073709551615ULL);
	jw_ku64_or_null(&c.w, "b", false, 7);
	jw_ki64_or_null(&c.w, "c", true, -3);
	jw_ki64_or_null(&c.w, "d", false, -3);
	jw_kdouble_or_null(&c.w, "e", true, 0.12345, 4);
	jw_kdouble_or_null(&c.w, "f", false, 0.5, 4);
	jw_kbool_or_null(&c.w, "g", true, false);
	jw_kbool_or_null(&c.w, "h", false, true);
	jw_kstrn(&c.w, "i", NULL, 16);
	jw_kts(&c.w, "j", 0);
	jw_kts(&c.w, "k", 1764404251123456789ULL);
	jw_obj_end(&c.w);
	CHECK_STR(cap_close(&c), "{\"a\":18446744073709551615,\"b\":null,\"c\":-3,\"d\":null,"
		  "\"e\":0.1235,\"f\":null,\"g\":false,\"h\":null,\"i\":null,"
		  "\"j\":null,\"k\":\"2025-11-29T08:17:31.123456789Z\"}");
}

static void test_record_header(void)
{
	struct cap c;

	cap_open(&c);
	jw_record_begin(&c.w, "event", "schedlat", 1764404251123456789ULL);
	jw_record_end(&c.w);
	CHECK_STR(cap_close(&c),
		  "{\"type\":\"event\",\"tool\":\"schedlat\",\"ts\":\"2025-11-29T08:17:31.123456789Z\",\"schema\":1,\"host\":\"h\"}\n");
}

static void test_full_record(void)
{
	struct cap c;
	char comm[16];

	memcpy(comm, "py\"thon\n\x01\xff" "abcdef", 16);	/* no NUL */
	cap_open(&c);
	jw_record_begin(&c.w, "sample", "socketsnoop", 0);
	jw_ku64(&c.w, "pid", 4242);
	jw_kstrn(&c.w, "comm", comm, sizeof(comm));
	jw_kstr(&c.w, "container_id", NULL);
	jw_knull(&c.w, "pod_uid");
	jw_kbool(&c.w, "ok", true);
	jw_kbool(&c.w, "bad", false);
	jw_ki64(&c.w, "delta_ns", -5);
	jw_kdouble(&c.w, "hit_ratio", 0.5, 3);
	jw_kdouble(&c.w, "nan_ratio", NAN, 3);
	jw_kdouble(&c.w, "inf_ratio", INFINITY, 3);
	jw_kdouble(&c.w, "ninf_ratio", -INFINITY, 3);
	jw_key(&c.w, "addr");
	jw_hex(&c.w, 0x7f3a00001000ULL);
	jw_key(&c.w, "inner");
	jw_obj_begin(&c.w);
	jw_ku64(&c.w, "a", 1);
	jw_key(&c.w, "list");
	jw_arr_begin(&c.w);
	jw_u64(&c.w, 1);
	jw_u64(&c.w, 18446744073709551615ULL);
	jw_str(&c.w, "x");
	jw_null(&c.w);
	jw_obj_begin(&c.w);
	jw_obj_end(&c.w);
	jw_arr_begin(&c.w);
	jw_arr_end(&c.w);
	jw_arr_end(&c.w);
	jw_kstr(&c.w, "b", "y");
	jw_obj_end(&c.w);
	jw_key(&c.w, "empty");
	jw_arr_begin(&c.w);
	jw_arr_end(&c.w);
	jw_kstr(&c.w, "last", "");
	jw_record_end(&c.w);
	CHECK_STR(cap_close(&c),
		  "{\"type\":\"sample\",\"tool\":\"socketsnoop\",\"ts\":\"1970-01-01T00:00:00.000000000Z\",\"schema\":1,\"host\":\"h\","
		  "\"pid\":4242,\"comm\":\"py\\\"thon\\n\\u0001" FFFD "abcdef\","
		  "\"container_id\":null,\"pod_uid\":null,\"ok\":true,\"bad\":false,"
		  "\"delta_ns\":-5,\"hit_ratio\":0.500,\"nan_ratio\":null,\"inf_ratio\":null,"
		  "\"ninf_ratio\":null,\"addr\":\"0x7f3a00001000\","
		  "\"inner\":{\"a\":1,\"list\":[1,18446744073709551615,\"x\",null,{},[]],\"b\":\"y\"},"
		  "\"empty\":[],\"last\":\"\"}\n");
}

static void test_doubles(void)
{
	struct cap c;

	cap_open(&c);
	jw_arr_begin(&c.w);
	jw_double(&c.w, 1.0 / 3.0, 2);
	jw_double(&c.w, 2.5, 0);
	jw_double(&c.w, -0.125, 3);
	jw_double(&c.w, 100.0, 1);
	jw_arr_end(&c.w);
	/* %.0f rounds half to even: 2.5 -> 2 */
	CHECK_STR(cap_close(&c), "[0.33,2,-0.125,100.0]");
}

static void test_hostile_key(void)
{
	struct cap c;

	cap_open(&c);
	jw_obj_begin(&c.w);
	jw_ku64(&c.w, "a\"b\n", 1);
	jw_obj_end(&c.w);
	CHECK_STR(cap_close(&c), "{\"a\\\"b\\n\":1}");
}

static void test_records_in_a_row(void)
{
	struct cap c;

	cap_open(&c);
	jw_record_begin(&c.w, "event", "t", 0);
	jw_ku64(&c.w, "n", 1);
	jw_record_end(&c.w);
	jw_record_begin(&c.w, "event", "t", 1);
	jw_ku64(&c.w, "n", 2);
	jw_record_end(&c.w);
	CHECK_STR(cap_close(&c),
		  "{\"type\":\"event\",\"tool\":\"t\",\"ts\":\"1970-01-01T00:00:00.000000000Z\",\"schema\":1,\"host\":\"h\",\"n\":1}\n"
		  "{\"type\":\"event\",\"tool\":\"t\",\"ts\":\"1970-01-01T00:00:00.000000001Z\",\"schema\":1,\"host\":\"h\",\"n\":2}\n");
}

/* the host is uname's nodename, read once; an empty one is null */
static void test_host(void)
{
	struct utsname u;
	struct cap c;

	/* what a tool sees: read at the first call (before jw_host_set) */
	CHECK(uname(&u) == 0);
	CHECK(jw_host() != NULL && !strcmp(jw_host(), u.nodename));
	jw_host_set(NULL);
	cap_open(&c);
	jw_record_begin(&c.w, "e", "t", 0);
	jw_record_end(&c.w);
	CHECK_STR(cap_close(&c), "{\"type\":\"e\",\"tool\":\"t\",\"ts\":\"1970-01-01T00:00:00.000000000Z\",\"schema\":1,\"host\":null}\n");
}

static void test_record_after_unbalanced(void)
{
	struct cap c;
	char *junk = NULL;
	size_t junk_len = 0;
	FILE *f;

	/* a record abandoned mid-array must not leak state into the next one */
	f = open_memstream(&junk, &junk_len);
	cap_open(&c);
	c.w.f = f;
	jw_record_begin(&c.w, "a", "t", 0);
	jw_key(&c.w, "l");
	jw_arr_begin(&c.w);
	jw_u64(&c.w, 1);
	fclose(f);
	free(junk);
	c.w.f = c.m.f;
	jw_record_begin(&c.w, "b", "t", 0);
	jw_ku64(&c.w, "n", 3);
	jw_record_end(&c.w);
	CHECK_STR(cap_close(&c),
		  "{\"type\":\"b\",\"tool\":\"t\",\"ts\":\"1970-01-01T00:00:00.000000000Z\",\"schema\":1,\"host\":\"h\",\"n\":3}\n");
}

/* ---- jq: the output of hostile strings parses and round-trips ---- */

/* hostile strings, and what jq must read back of each: control bytes as
 * they were, invalid bytes as U+FFFD */
static const struct t_str_case hostile[] = {
	{ "plain", "plain" },
	{ "q\"uote", "q\"uote" },
	{ "back\\slash", "back\\slash" },
	{ "nl\ncr\rtab\tbs\bff\f", "nl\ncr\rtab\tbs\bff\f" },
	{ "\x01\x02\x1b[31m\x1f\x7f", "\x01\x02\x1b[31m\x1f\x7f" },
	{ "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" },
	{ "\x80\xbf", FFFD FFFD },
	{ "trunc\xe2\x82", "trunc" FFFD FFFD },
	{ "\xc0\xaf\xe0\x80\xaf", FFFD FFFD FFFD FFFD FFFD },
	{ "\xed\xa0\x80", FFFD FFFD FFFD },
	{ "\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD },
	{ "\xff\xfe", FFFD FFFD },
	{ "</script>\\u0000", "</script>\\u0000" },
	{ "", "" },
};

static bool have_jq(void)
{
	return system("command -v jq >/dev/null 2>&1") == 0;
}

static void test_jq_accepts_hostile_records(void)
{
	char cmd[128];
	struct jw w;
	FILE *p;
	int st;

	if (!have_jq())
		SKIP("jq not installed");
	snprintf(cmd, sizeof(cmd),
		 "jq -e -s 'length == %zu and all(.[]; .type == \"event\")' >/dev/null",
		 ARRAY_SIZE(hostile));
	p = popen(cmd, "w");
	CHECK(p != NULL);
	if (!p)
		return;
	jw_init(&w, p);
	for (size_t i = 0; i < ARRAY_SIZE(hostile); i++) {
		jw_record_begin(&w, "event", hostile[i].in, i * 1000000001ULL);
		jw_kstr(&w, hostile[i].in, hostile[i].in);
		jw_kstrn(&w, "comm", hostile[i].in, 16);
		jw_kdouble(&w, "x_ratio", NAN, 2);
		jw_key(&w, "nested");
		jw_arr_begin(&w);
		jw_obj_begin(&w);
		jw_kstr(&w, "s", hostile[i].in);
		jw_obj_end(&w);
		jw_arr_end(&w);
		jw_record_end(&w);
	}
	st = pclose(p);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

static void test_jq_roundtrip(void)
{
	char path[] = "/tmp/aiscope-test-json.XXXXXX", cmd[160], back[256];
	int fd;

	if (!have_jq())
		SKIP("jq not installed");
	fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd < 0)
		return;
	close(fd);
	snprintf(cmd, sizeof(cmd), "jq -j .s > %s", path);
	for (size_t i = 0; i < ARRAY_SIZE(hostile); i++) {
		FILE *p = popen(cmd, "w"), *f;
		struct jw w;
		size_t n;
		int st;

		CHECK(p != NULL);
		if (!p)
			break;
		jw_init(&w, p);
		jw_obj_begin(&w);
		jw_kstr(&w, "s", hostile[i].in);
		jw_obj_end(&w);
		st = pclose(p);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		f = fopen(path, "r");
		CHECK(f != NULL);
		if (!f)
			break;
		n = fread(back, 1, sizeof(back) - 1, f);
		back[n] = 0;
		fclose(f);
		if (strcmp(back, hostile[i].want))
			printf("# round trip of hostile[%zu] differs\n", i);
		CHECK_STR(back, hostile[i].want);
	}
	unlink(path);
}

int main(void)
{
	RUN(test_host);
	/* every line names its host: a fixed one, for exact lines */
	jw_host_set("h");
	RUN(test_escapes_ascii);
	RUN(test_escapes_utf8);
	RUN(test_nul_terminates);
	RUN(test_length_bound);
	RUN(test_record_header);
	RUN(test_full_record);
	RUN(test_doubles);
	RUN(test_or_null);
	RUN(test_hostile_key);
	RUN(test_records_in_a_row);
	RUN(test_record_after_unbalanced);
	RUN(test_jq_accepts_hostile_records);
	RUN(test_jq_roundtrip);
	return t_done();
}
