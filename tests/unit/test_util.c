// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/util.c: duration, size and list parsing; formatting; clocks. */
#include <errno.h>
#include <stdlib.h>
#include <sys/sysmacros.h>
#include <stddef.h>
#include "t.h"
#include "util.h"

typedef int (*parse_fn)(const char *s, uint64_t *v);

/* A string and the value it must parse to */
struct parse_case {
	const char *s;
	uint64_t want;
};

/* parse(s) must give exactly want */
static int parses_to(parse_fn parse, const char *s, uint64_t want)
{
	uint64_t v = 12345;

	return parse(s, &v) == 0 && v == want;
}

/* parse(s) must refuse s and leave the value as it was */
static int refuses(parse_fn parse, const char *s)
{
	uint64_t v = 12345;

	return parse(s, &v) == -EINVAL && v == 12345;
}

static void check_parses(parse_fn parse, const struct parse_case *c, size_t n)
{
	for (size_t i = 0; i < n; i++)
		CHECK_CASE(parses_to(parse, c[i].s, c[i].want), "\"%s\"", c[i].s);
}

static void check_refuses(parse_fn parse, const char *const *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		CHECK_CASE(refuses(parse, s[i]), "\"%s\"", s[i] ? s[i] : "(null)");
}

static void test_has_prefix(void)
{
	CHECK(str_has_prefix("libibverbs.so.1", "libibverbs.so"));
	CHECK(str_has_prefix("abc", ""));
	CHECK(str_has_prefix("abc", "abc"));
	CHECK(!str_has_prefix("ab", "abc"));
	CHECK(!str_has_prefix("libcuda.so.1", "libcudart"));
}

static void test_duration_units(void)
{
	static const struct parse_case c[] = {
		{ "500ms", 500000000ULL }, { "10", 10000000000ULL },
		{ "10s", 10000000000ULL }, { "2m", 120000000000ULL },
		{ "1h", 3600000000000ULL }, { "1d", 86400000000000ULL },
		{ "250us", 250000ULL }, { "1ns", 1ULL }, { "0", 0ULL }, { "0s", 0ULL },
	};

	check_parses(parse_duration, c, T_ROWS(c));
}

static void test_duration_fractions(void)
{
	static const struct parse_case c[] = {
		{ "1.5s", 1500000000ULL }, { "1.5ms", 1500000ULL },
		{ "0.5", 500000000ULL }, { ".25s", 250000000ULL },
		{ "0.000000001s", 1ULL }, { "2.5m", 150000000000ULL },
		{ "0.1h", 360000000000ULL },
		/* below a nanosecond truncates to 0 */
		{ "0.0000000001s", 0ULL },
		/* a long fraction must not overflow the intermediate product */
		{ "0.333333333333s", 333333333ULL },
		{ "1.999999999999s", 1999999999ULL },
		{ "0.123456789012d", 10666666570636ULL },
	};

	check_parses(parse_duration, c, T_ROWS(c));
}

static void test_duration_rejects(void)
{
	static const char *const bad[] = {
		"", "abc", "10x", "-1", "+1", "1..2", "s", ".", " 1s", "1s ", "1 s",
		"1S", "1sec", "1e3", "99999999999999999999", NULL,
	};

	check_refuses(parse_duration, bad, T_ROWS(bad));
}

static void test_duration_overflow_edges(void)
{
	static const struct parse_case max[] = {
		/* 18446744073.709551615 s is exactly UINT64_MAX ns */
		{ "18446744073.709551615s", UINT64_MAX },
		{ "18446744073709551615ns", UINT64_MAX },
		{ "5124095h", 5124095ULL * 3600000000000ULL },
	};
	static const char *const over[] = {
		"18446744073.709551616s", "18446744074s", "18446744074",
		"18446744073709551616ns", "5124096h",
	};

	check_parses(parse_duration, max, T_ROWS(max));
	check_refuses(parse_duration, over, T_ROWS(over));
}

static void test_size_units(void)
{
	static const struct parse_case c[] = {
		{ "4096", 4096ULL }, { "256K", 262144ULL }, { "64M", 67108864ULL },
		{ "1G", 1073741824ULL }, { "1KiB", 1024ULL }, { "1KB", 1024ULL },
		{ "100B", 100ULL }, { "8m", 8388608ULL }, { "2g", 2147483648ULL },
		{ "3mib", 3145728ULL }, { "1.5K", 1536ULL }, { "0", 0ULL },
	};

	check_parses(parse_size, c, T_ROWS(c));
}

static void test_size_rejects(void)
{
	static const char *const bad[] = {
		"1T", "", "K", "-1K", "1 K", "1Kb2", "1KK", "99999999999999999999",
		"17179869184G",	/* 2^34 GiB == 2^64 bytes */
		NULL,
	};

	check_refuses(parse_size, bad, T_ROWS(bad));
	CHECK(parses_to(parse_size, "17179869183G", 17179869183ULL << 30));
}

static void test_u32_list_ok(void)
{
	uint32_t v[4] = { 0 };

	CHECK_EQ(parse_u32_list("1,2,3", v, 4), 3);
	CHECK_EQ(v[0], 1);
	CHECK_EQ(v[1], 2);
	CHECK_EQ(v[2], 3);
	CHECK_EQ(parse_u32_list("4294967295", v, 4), 1);
	CHECK_EQ(v[0], 4294967295LL);
	CHECK_EQ(parse_u32_list("0", v, 4), 1);
	CHECK_EQ(v[0], 0);
	CHECK_EQ(parse_u32_list("7,8,9,10", v, 4), 4);
	CHECK_EQ(v[3], 10);
}

static void test_u32_list_rejects(void)
{
	static const char *const bad[] = {
		"1,,2", "1,", ",1", "a", "1,a", "1a", "4294967296",
		"99999999999999999999999", "-1", "1,-1", " 1", "1, 2", "", NULL,
	};
	uint32_t v[4];

	for (size_t i = 0; i < T_ROWS(bad); i++)
		CHECK_CASE(parse_u32_list(bad[i], v, 4) == -EINVAL, "\"%s\"",
			   bad[i] ? bad[i] : "(null)");
}

static void test_u32_list_too_many(void)
{
	uint32_t v[3] = { 0, 0, 0 };

	CHECK_EQ(parse_u32_list("1,2,3", v, 2), -E2BIG);
	CHECK_EQ(parse_u32_list("1,2", v, 2), 2);
	CHECK_EQ(parse_u32_list("5", v, 0), -E2BIG);
	CHECK_EQ(v[2], 0);	/* never written past max */
}

static void test_u64(void)
{
	static const struct parse_case ok[] = {
		{ "0", 0 }, { "42", 42 }, { "18446744073709551615", UINT64_MAX },
	};
	static const char *const bad[] = {
		"18446744073709551616", "-1", "+1", " 1", " -1", "1 ", "12a", "0x10",
		"", NULL,
	};

	check_parses(parse_u64, ok, T_ROWS(ok));
	check_refuses(parse_u64, bad, T_ROWS(bad));
}

static const char *fdur(uint64_t ns)
{
	static char buf[32];

	fmt_duration(ns, buf, sizeof(buf));
	return buf;
}

static void test_fmt_duration(void)
{
	static const struct {
		uint64_t ns;
		const char *want;
	} c[] = {
		{ 1000000000ULL, "1s" }, { 500000000ULL, "500ms" },
		{ 1500000000ULL, "1.5s" }, { 120000000000ULL, "2m" },
		{ 90000000000ULL, "1.5m" }, { 3600000000000ULL, "1h" },
		{ 250000ULL, "250us" },
		/* three significant digits that round up to the next unit */
		{ 999969855ULL, "1s" }, { 999700ULL, "1ms" }, { 893000000ULL, "893ms" },
		{ 3600000000000ULL * 1500 + 1, "1500h" }, { 1500ULL, "1.5us" },
		{ 1234567ULL, "1.23ms" },
		/* a measured interval just short of a second: no exponent */
		{ 999989054ULL, "1s" }, { 999600ULL, "1ms" },
		{ 10ULL, "10ns" }, { 999ULL, "999ns" }, { 0ULL, "0ns" },
	};

	for (size_t i = 0; i < T_ROWS(c); i++)
		CHECK_CASE(!strcmp(fdur(c[i].ns), c[i].want), "%" PRIu64 " ns: \"%s\"",
			   c[i].ns, fdur(c[i].ns));
}

static void test_fmt_duration_roundtrip(void)
{
	static const uint64_t vals[] = {
		1ULL, 1000ULL, 250000ULL, 1000000ULL, 500000000ULL, 1000000000ULL,
		10000000000ULL, 120000000000ULL, 3600000000000ULL, 1500000000ULL,
	};

	for (size_t i = 0; i < ARRAY_SIZE(vals); i++) {
		uint64_t back = 0;

		CHECK_EQ(parse_duration(fdur(vals[i]), &back), 0);
		CHECK_EQ(back, vals[i]);
	}
}

static const char *rfc(uint64_t ns)
{
	static char buf[40];

	fmt_rfc3339_ns(ns, buf, sizeof(buf));
	return buf;
}

static void test_rfc3339(void)
{
	CHECK_STR(rfc(0), "1970-01-01T00:00:00.000000000Z");
	CHECK_STR(rfc(999999999ULL), "1970-01-01T00:00:00.999999999Z");
	/* 1764404251 s = 20421 days + 29851 s; day 20421 is 2025-11-29 */
	CHECK_STR(rfc(1764404251123456789ULL), "2025-11-29T08:17:31.123456789Z");
	/* 11016 days: 2000-02-29, a leap day */
	CHECK_STR(rfc(951782400000000001ULL), "2000-02-29T00:00:00.000000001Z");
	/* the last second of 1999 */
	CHECK_STR(rfc(946684799000000500ULL), "1999-12-31T23:59:59.000000500Z");
	CHECK_EQ(strlen(rfc(1764404251123456789ULL)), 30);
}

static void test_hms_utc(void)
{
	char buf[16];

	setenv("TZ", "UTC", 1);
	tzset();
	fmt_hms(1764404251123456789ULL, buf, sizeof(buf));
	CHECK_STR(buf, "08:17:31");
	fmt_hms(0, buf, sizeof(buf));
	CHECK_STR(buf, "00:00:00");
}

static uint64_t absdiff(int64_t a, int64_t b)
{
	return a > b ? (uint64_t)(a - b) : (uint64_t)(b - a);
}

static void test_clock_offset(void)
{
	int64_t boot_off = clock_realtime_offset(true);
	int64_t mono_off = clock_realtime_offset(false);
	int64_t rt, bt, mt;

	rt = (int64_t)clock_ns(CLOCK_REALTIME);
	bt = (int64_t)clock_ns(CLOCK_BOOTTIME);
	mt = (int64_t)clock_ns(CLOCK_MONOTONIC);
	CHECK(absdiff(rt - boot_off, bt) < NSEC_PER_MSEC);
	CHECK(absdiff(rt - mono_off, mt) < NSEC_PER_MSEC);
	/* boot time includes suspend: its offset is never larger */
	CHECK(boot_off <= mono_off + (int64_t)NSEC_PER_MSEC);
	/* a realtime clock after 2020 */
	CHECK(rt > 1577836800LL * (int64_t)NSEC_PER_SEC);
}

static void test_user_uid(void)
{
	uint32_t uid = 1234;

	CHECK(user_uid("root", &uid));
	CHECK_EQ(uid, 0);
	CHECK(!user_uid("no_such_user_here", &uid));
	CHECK(!user_uid("", &uid));
}

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return x < y ? -1 : x > y;
}

/* an empty array may be NULL: nothing is called with it (UBSan's
 * "null pointer passed as argument 1" under make SANITIZE=1) */
static void test_sort_and_search(void)
{
	int v[] = { 5, -1, 3, 3, 0 }, key = 3, *hit;

	sort_array(NULL, 0, sizeof(int), cmp_int);
	CHECK(search_array(&key, NULL, 0, sizeof(int), cmp_int) == NULL);
	sort_array(v, ARRAY_SIZE(v), sizeof(int), cmp_int);
	CHECK(v[0] == -1 && v[1] == 0 && v[2] == 3 && v[3] == 3 && v[4] == 5);
	hit = search_array(&key, v, ARRAY_SIZE(v), sizeof(int), cmp_int);
	CHECK(hit && *hit == 3);
	key = 4;
	CHECK(search_array(&key, v, ARRAY_SIZE(v), sizeof(int), cmp_int) == NULL);
}

struct trow {
	uint32_t id;
	uint64_t ts;
};

/* the oldest k go, ties at the cut in row order, the rest keep theirs */
static void test_rows_drop_oldest(void)
{
	struct trow r[] = { { 1, 50 }, { 2, 10 }, { 3, 30 }, { 4, 30 }, { 5, 90 }, { 6, 30 } };
	struct trow one[] = { { 7, 5 } };

	/* FNV-1a's published 64-bit values */
	CHECK(fnv1a(FNV1A_INIT, "", 0) == 0xcbf29ce484222325ULL);
	CHECK(fnv1a(FNV1A_INIT, "a", 1) == 0xaf63dc4c8601ec8cULL);
	CHECK(fnv1a(fnv1a(FNV1A_INIT, "fo", 2), "obar", 4) == 0x85944171f73967e8ULL);
	CHECK_EQ(cmp_u64(1, 2), -1);
	CHECK_EQ(cmp_u64(2, 2), 0);
	CHECK_EQ(cmp_u64(UINT64_MAX, 0), 1);
	/* 10, then two of the three at 30: ids 2, 3, 4 */
	CHECK_EQ(rows_drop_oldest(r, ARRAY_SIZE(r), sizeof(*r), offsetof(struct trow, ts), 3), 3);
	CHECK(r[0].id == 1 && r[1].id == 5 && r[2].id == 6);
	/* k 0 is 1; k past n drops all */
	CHECK_EQ(rows_drop_oldest(r, 3, sizeof(*r), offsetof(struct trow, ts), 0), 2);
	CHECK(r[0].id == 1 && r[1].id == 5);
	CHECK_EQ(rows_drop_oldest(r, 2, sizeof(*r), offsetof(struct trow, ts), 9), 0);
	CHECK_EQ(rows_drop_oldest(one, 0, sizeof(*one), offsetof(struct trow, ts), 1), 0);
	CHECK_EQ(rows_drop_oldest(one, 1, sizeof(*one), offsetof(struct trow, ts), 1), 0);
}

/* sizes a 4 KiB-page habit would get wrong on 16 KiB and 64 KiB kernels */
static void test_ringbuf_size(void)
{
	CHECK_EQ(ringbuf_size(4096, 4096), 4096);
	CHECK_EQ(ringbuf_size(5000, 4096), 8192);
	CHECK_EQ(ringbuf_size(4096, 16384), 16384);
	CHECK_EQ(ringbuf_size(8192, 16384), 16384);
	CHECK_EQ(ringbuf_size(20000, 16384), 32768);
	CHECK_EQ(ringbuf_size(4096, 65536), 65536);
	CHECK_EQ(ringbuf_size(0, 16384), 16384);
	CHECK_EQ(ringbuf_size(8ULL << 20, 65536), 8ULL << 20);
	CHECK_EQ(ringbuf_size((8ULL << 20) + 1, 4096), 16ULL << 20);
}

/* the kernel's MKDEV() of glibc's dev_t, which puts minor bits above 255
 * elsewhere */
static void test_kernel_dev(void)
{
	uint32_t k = kernel_dev(makedev(259, 65537));

	CHECK_EQ(kernel_dev(makedev(8, 1)), (8U << 20) | 1);
	CHECK_EQ(k, (259U << 20) | 65537);
	CHECK_EQ(KDEV_MAJOR(k), 259);
	CHECK_EQ(KDEV_MINOR(k), 65537);
	CHECK_EQ(kernel_dev(makedev(4095, 0xfffff)), 0xffffffffU);
	CHECK_EQ(KDEV_MAJOR(0xffffffffU), 4095);
	CHECK_EQ(KDEV_MINOR(0xffffffffU), 0xfffff);
	CHECK_EQ(kernel_dev(0), 0);
}

int main(void)
{
	RUN(test_has_prefix);
	RUN(test_duration_units);
	RUN(test_duration_fractions);
	RUN(test_duration_rejects);
	RUN(test_duration_overflow_edges);
	RUN(test_size_units);
	RUN(test_size_rejects);
	RUN(test_u32_list_ok);
	RUN(test_u32_list_rejects);
	RUN(test_u32_list_too_many);
	RUN(test_u64);
	RUN(test_fmt_duration);
	RUN(test_fmt_duration_roundtrip);
	RUN(test_rfc3339);
	RUN(test_hms_utc);
	RUN(test_clock_offset);
	RUN(test_user_uid);
	RUN(test_sort_and_search);
	RUN(test_rows_drop_oldest);
	RUN(test_ringbuf_size);
	RUN(test_kernel_dev);
	return t_done();
}
