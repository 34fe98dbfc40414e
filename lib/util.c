// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <pwd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <sys/sysmacros.h>
#include "util.h"

int parse_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	/* strtoull would skip spaces and take " -1" as UINT64_MAX */
	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	x = strtoull(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	*v = x;
	return 0;
}

/* Splits "1.5ms" into 1.5 and "ms"; integer and fraction kept apart so
 * that "0.000000001s" stays exact. */
static int parse_scaled(const char *s, uint64_t *whole, uint64_t *frac_num,
			uint64_t *frac_den, const char **unit)
{
	const char *p = s;
	uint64_t w = 0, num = 0, den = 1;
	int digits = 0;

	if (!s || !*s)
		return -EINVAL;
	for (; *p >= '0' && *p <= '9'; p++, digits++) {
		if (w > (UINT64_MAX - (uint64_t)(*p - '0')) / 10)
			return -ERANGE;
		w = w * 10 + (*p - '0');
	}
	if (*p == '.') {
		p++;
		for (; *p >= '0' && *p <= '9'; p++, digits++) {
			if (den < 1000000000000ULL) {
				num = num * 10 + (*p - '0');
				den *= 10;
			}
		}
	}
	if (!digits)
		return -EINVAL;
	*whole = w;
	*frac_num = num;
	*frac_den = den;
	*unit = p;
	return 0;
}

static int scale(uint64_t whole, uint64_t num, uint64_t den, uint64_t mult, uint64_t *out)
{
	/* num < den <= 10^12: the product needs 128 bits, the result < mult */
	uint64_t frac = (uint64_t)((unsigned __int128)num * mult / den);

	if (whole && mult > UINT64_MAX / whole)
		return -ERANGE;
	if (whole * mult > UINT64_MAX - frac)
		return -ERANGE;
	*out = whole * mult + frac;
	return 0;
}

struct unit {
	const char *name;
	uint64_t mult;
};

/* A number with one of units (ended by { NULL }) after it, scaled by it;
 * cmp compares the unit's spelling (sizes take any case). */
static int parse_units(const char *s, const struct unit *units,
		       int (*cmp)(const char *, const char *), uint64_t *out)
{
	uint64_t w, num, den;
	const char *unit;

	if (parse_scaled(s, &w, &num, &den, &unit))
		return -EINVAL;
	for (; units->name; units++)
		if (!cmp(unit, units->name))
			return scale(w, num, den, units->mult, out) ? -EINVAL : 0;
	return -EINVAL;
}

int parse_duration(const char *s, uint64_t *ns)
{
	static const struct unit units[] = {
		{ "", NSEC_PER_SEC }, { "ns", 1 }, { "us", NSEC_PER_USEC },
		{ "ms", NSEC_PER_MSEC }, { "s", NSEC_PER_SEC },
		{ "m", 60 * NSEC_PER_SEC }, { "h", 3600 * NSEC_PER_SEC },
		{ "d", 86400 * NSEC_PER_SEC }, {},
	};

	return parse_units(s, units, strcmp, ns);
}

int parse_size(const char *s, uint64_t *bytes)
{
	static const struct unit units[] = {
		{ "", 1 }, { "B", 1 },
		{ "K", 1ULL << 10 }, { "KiB", 1ULL << 10 }, { "KB", 1ULL << 10 },
		{ "M", 1ULL << 20 }, { "MiB", 1ULL << 20 }, { "MB", 1ULL << 20 },
		{ "G", 1ULL << 30 }, { "GiB", 1ULL << 30 }, { "GB", 1ULL << 30 }, {},
	};

	return parse_units(s, units, strcasecmp, bytes);
}

int parse_u32_list(const char *s, uint32_t *out, int max)
{
	const char *p = s;
	int n = 0;

	if (!s || !*s)
		return -EINVAL;
	while (*p) {
		char *end;
		unsigned long v;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || v > UINT32_MAX || (*end && *end != ','))
			return -EINVAL;
		if (n >= max)
			return -E2BIG;
		out[n++] = v;
		p = end;
		if (*p == ',') {
			p++;
			if (!*p)
				return -EINVAL;
		}
	}
	return n;
}

void fmt_duration(uint64_t ns, char *buf, size_t len)
{
	static const struct { const char *unit; uint64_t div; } units[] = {
		{ "h", 3600 * NSEC_PER_SEC }, { "m", 60 * NSEC_PER_SEC },
		{ "s", NSEC_PER_SEC }, { "ms", NSEC_PER_MSEC }, { "us", NSEC_PER_USEC },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(units); i++) {
		if (ns < units[i].div)
			continue;
		if (ns % units[i].div == 0) {
			snprintf(buf, len, "%llu%s", (unsigned long long)(ns / units[i].div),
				 units[i].unit);
			return;
		}
		/* 999.99ms would print as "1e+03ms": it is 1s to 3 digits */
		if (i > 0 && (double)ns / units[i].div >= 999.5)
			i--;
		/* and 1500h would be "1.5e+03h" */
		snprintf(buf, len, (double)ns / units[i].div >= 1000 ? "%.0f%s" : "%.3g%s",
			 (double)ns / units[i].div, units[i].unit);
		return;
	}
	snprintf(buf, len, "%lluns", (unsigned long long)ns);
}

uint64_t clock_ns(int clockid)
{
	struct timespec ts;

	clock_gettime(clockid, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + ts.tv_nsec;
}

int64_t clock_realtime_offset(bool boot_clock)
{
	int clk = boot_clock ? CLOCK_BOOTTIME : CLOCK_MONOTONIC;
	uint64_t a, b, r;

	/* bracket the realtime read to halve the error of the pair */
	a = clock_ns(clk);
	r = clock_ns(CLOCK_REALTIME);
	b = clock_ns(clk);
	return (int64_t)(r - (a + (b - a) / 2));
}

void fmt_rfc3339_ns(uint64_t realtime_ns, char *buf, size_t len)
{
	time_t sec = realtime_ns / NSEC_PER_SEC;
	struct tm tm;
	char base[24];

	gmtime_r(&sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%09lluZ", base, (unsigned long long)(realtime_ns % NSEC_PER_SEC));
}

void fmt_hms(uint64_t realtime_ns, char *buf, size_t len)
{
	time_t sec = realtime_ns / NSEC_PER_SEC;
	struct tm tm;

	localtime_r(&sec, &tm);
	strftime(buf, len, "%H:%M:%S", &tm);
}

#ifdef AISCOPE_STATIC
/* Static builds cannot load NSS modules: read /etc/passwd itself. */
bool user_uid(const char *name, uint32_t *uid)
{
	FILE *f = fopen("/etc/passwd", "r");
	struct passwd *pw;
	bool found = false;

	if (!f)
		return false;
	while ((pw = fgetpwent(f)))
		if (!strcmp(pw->pw_name, name)) {
			*uid = pw->pw_uid;
			found = true;
			break;
		}
	fclose(f);
	return found;
}
#else
bool user_uid(const char *name, uint32_t *uid)
{
	struct passwd *pw = getpwnam(name);

	if (pw)
		*uid = pw->pw_uid;
	return pw != NULL;
}
#endif

void sort_array(void *base, size_t n, size_t size, cmp_fn cmp)
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

void *search_array(const void *key, const void *base, size_t n, size_t size, cmp_fn cmp)
{
	return n ? bsearch(key, base, n, size, cmp) : NULL;
}

uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *s = p;

	while (n--) {
		h ^= *s++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int cmp_u64_p(const void *a, const void *b)
{
	return cmp_u64(*(const uint64_t *)a, *(const uint64_t *)b);
}

static uint64_t row_ts(const char *row, size_t ts_off)
{
	uint64_t ts;

	memcpy(&ts, row + ts_off, sizeof(ts));
	return ts;
}

size_t rows_drop_oldest(void *rows, size_t n, size_t size, size_t ts_off, size_t k)
{
	char *r = rows;
	uint64_t *ts, cut;
	size_t kept = 0, gone = 0;

	if (!n)
		return 0;
	if (!k)
		k = 1;
	if (k > n)
		k = n;
	ts = malloc(n * sizeof(*ts));
	if (!ts)
		return SIZE_MAX;
	for (size_t i = 0; i < n; i++)
		ts[i] = row_ts(r + i * size, ts_off);
	qsort(ts, n, sizeof(*ts), cmp_u64_p);
	cut = ts[k - 1];
	free(ts);
	for (size_t i = 0; i < n; i++) {
		if (gone < k && row_ts(r + i * size, ts_off) <= cut) {
			gone++;
			continue;
		}
		if (kept != i)
			memcpy(r + kept * size, r + i * size, size);
		kept++;
	}
	return kept;
}

uint64_t aiscope_test_cap(const char *name, uint64_t dflt)
{
	char var[64];
	const char *v;
	uint64_t n;

	snprintf(var, sizeof(var), "AISCOPE_TEST_CAP_%s", name);
	v = getenv(var);
	if (!v || parse_u64(v, &n) || !n)
		return dflt;
	return n;
}

uint64_t ringbuf_size(uint64_t want, uint64_t page)
{
	uint64_t p = page ? page : 4096;

	while (p < want)
		p <<= 1;
	return p;
}

uint32_t kernel_dev(dev_t dev)
{
	return major(dev) << 20 | minor(dev);
}
