// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bpf/aiscope_hist.h and lib/hist.c: bucketing, percentiles, log2 slots,
 * JSON buckets. */
#include <stdlib.h>
#include "t.h"
#include "hist.h"
#include "util.h"

static struct hist h;

static unsigned int ref_log2(uint64_t v)
{
	unsigned int r = 0;

	while (v > 1) {
		v >>= 1;
		r++;
	}
	return r;
}

static uint64_t lcg_state = 0x2545F4914F6CDD1DULL;

static uint64_t lcg(void)
{
	lcg_state = lcg_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return lcg_state;
}

static void test_constants(void)
{
	CHECK_EQ(HIST_SUB, 8);
	CHECK_EQ(HIST_BUCKETS, 280);	/* (36 - 3 + 2) * 8 */
}

static void test_log2_against_loop(void)
{
	int bad = 0;

	for (unsigned int k = 0; k < 64; k++) {
		uint64_t p = 1ULL << k;

		bad += aiscope_log2(p) != k;
		bad += aiscope_log2(p | (p - 1)) != k;	/* 2^(k+1) - 1 */
		if (k)
			bad += aiscope_log2(p + 1) != k;
	}
	for (uint64_t v = 1; v < 70000; v++)
		bad += aiscope_log2(v) != ref_log2(v);
	for (int i = 0; i < 200000; i++) {
		uint64_t v = lcg() >> (lcg() % 64);

		if (v)
			bad += aiscope_log2(v) != ref_log2(v);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(aiscope_log2(UINT64_MAX), 63);
	CHECK_EQ(aiscope_log2(1), 0);
	CHECK_EQ(aiscope_log2(3), 1);
}

static void test_bucket_small_values(void)
{
	for (uint64_t v = 0; v < 8; v++)
		CHECK_EQ(hist_bucket(v), v);
	CHECK_EQ(hist_bucket(8), 8);
	CHECK_EQ(hist_bucket(9), 9);
	CHECK_EQ(hist_bucket(15), 15);
	CHECK_EQ(hist_bucket(16), 16);
	CHECK_EQ(hist_bucket(17), 16);	/* 16..17 share a bucket of width 2 */
	CHECK_EQ(hist_bucket(18), 17);
	CHECK_EQ(hist_bucket(31), 23);
	CHECK_EQ(hist_bucket(32), 24);
	CHECK_EQ(hist_bucket(1000), 63);	/* 960..1023 */
	CHECK_EQ(hist_bucket(959), 62);
	CHECK_EQ(hist_bucket(960), 63);
	CHECK_EQ(hist_bucket(1024), 64);
}

static void test_bucket_powers_of_two(void)
{
	/* 2^k, k >= 3, opens bucket (k - 2) * 8; 2^k - 1 closes the one before */
	for (unsigned int k = 3; k <= 36; k++) {
		CHECK_EQ(hist_bucket(1ULL << k), (k - 2) * 8);
		CHECK_EQ(hist_bucket((1ULL << k) - 1), (k - 2) * 8 - 1);
	}
	CHECK_EQ(hist_bucket(1ULL << 36), 272);
}

static void test_bucket_clamp(void)
{
	CHECK_EQ(hist_bucket((1ULL << 37) - 1), HIST_BUCKETS - 1);
	CHECK_EQ(hist_bucket(1ULL << 37), HIST_BUCKETS - 1);
	CHECK_EQ(hist_bucket((1ULL << 37) + 12345), HIST_BUCKETS - 1);
	CHECK_EQ(hist_bucket(1ULL << 63), HIST_BUCKETS - 1);
	CHECK_EQ(hist_bucket(UINT64_MAX), HIST_BUCKETS - 1);
	CHECK_EQ(hist_bucket(15ULL << 33), HIST_BUCKETS - 1);
	CHECK_EQ(hist_bucket((15ULL << 33) - 1), HIST_BUCKETS - 2);
}

static void test_bucket_min_max_consistent(void)
{
	int bad = 0;

	CHECK_EQ(hist_bucket_min(0), 0);
	CHECK_EQ(hist_bucket_max(0), 0);
	CHECK_EQ(hist_bucket_min(8), 8);
	CHECK_EQ(hist_bucket_min(16), 16);
	CHECK_EQ(hist_bucket_max(16), 17);
	CHECK_EQ(hist_bucket_min(63), 960);
	CHECK_EQ(hist_bucket_max(63), 1023);
	CHECK_EQ(hist_bucket_min(HIST_BUCKETS - 1), 15ULL << 33);
	CHECK(hist_bucket_max(HIST_BUCKETS - 1) == UINT64_MAX);
	for (unsigned int i = 0; i < HIST_BUCKETS; i++) {
		uint64_t lo = hist_bucket_min(i), hi = hist_bucket_max(i);

		bad += lo > hi;
		bad += hist_bucket(lo) != i;
		bad += hist_bucket(hi) != i;
		if (i + 1 < HIST_BUCKETS)
			bad += hist_bucket_min(i + 1) != hi + 1;
		/* a bucket spans at most 1/8 of its lower bound (above 8) */
		if (i >= 8 && i + 1 < HIST_BUCKETS)
			bad += (hi - lo + 1) * 8 > lo;
	}
	CHECK_EQ(bad, 0);
}

static void test_bucket_every_value_in_range(void)
{
	int bad = 0;

	/* exhaustive below 2^16, sampled above */
	for (uint64_t v = 0; v < 65536; v++) {
		unsigned int b = hist_bucket(v);

		bad += v < hist_bucket_min(b) || v > hist_bucket_max(b);
	}
	for (int i = 0; i < 100000; i++) {
		uint64_t v = lcg() >> (lcg() % 64);
		unsigned int b = hist_bucket(v);

		bad += b >= HIST_BUCKETS || v < hist_bucket_min(b) || v > hist_bucket_max(b);
	}
	CHECK_EQ(bad, 0);
}

static void test_percentile_empty(void)
{
	hist_reset(&h);
	CHECK_EQ(hist_percentile(&h, 0), 0);
	CHECK_EQ(hist_percentile(&h, 50), 0);
	CHECK_EQ(hist_percentile(&h, 100), 0);
}

static void test_percentile_single_value(void)
{
	static const uint64_t vals[] = {
		0, 1, 7, 8, 9, 17, 100, 1000, 1023, 4097, 123456, 999999, 1000000007ULL,
		(1ULL << 36) + 5, (15ULL << 33) + 1, 1ULL << 40, UINT64_MAX,
	};

	for (size_t i = 0; i < ARRAY_SIZE(vals); i++) {
		uint64_t v = vals[i], p50, p99;

		hist_reset(&h);
		hist_add_value(&h, v);
		p50 = hist_percentile(&h, 50);
		p99 = hist_percentile(&h, 99);
		CHECK(p50 <= v);
		CHECK(p99 <= v);
		/* |p - v| <= v / 16 */
		CHECK(v - p50 <= v / 16);
		CHECK(v - p99 <= v / 16);
		CHECK(hist_percentile(&h, 100) == v);
	}
}

static void test_percentile_uniform(void)
{
	uint64_t p50, p90, p99, p0;

	hist_reset(&h);
	for (uint64_t v = 1; v <= 100000; v++)
		hist_add_value(&h, v);
	CHECK_EQ(h.total, 100000);
	CHECK_EQ(h.sum, 5000050000ULL);
	CHECK_EQ(h.max, 100000);
	p0 = hist_percentile(&h, 0);
	p50 = hist_percentile(&h, 50);
	p90 = hist_percentile(&h, 90);
	p99 = hist_percentile(&h, 99);
	CHECK_EQ(p0, 1);
	CHECK(p50 >= 46500 && p50 <= 53500);
	CHECK(p90 >= 83700 && p90 <= 96300);
	CHECK(p99 >= 92070 && p99 <= 105930);
	CHECK(p99 <= 100000);
	CHECK_EQ(hist_percentile(&h, 100), 100000);
	CHECK_EQ(hist_percentile(&h, 150), 100000);
	CHECK(p0 <= p50 && p50 <= p90 && p90 <= p99);
}

static void test_percentile_skewed(void)
{
	hist_reset(&h);
	for (int i = 0; i < 99; i++)
		hist_add_value(&h, 10);
	hist_add_value(&h, 1000000);
	/* values below 16 have a bucket each: exact */
	CHECK_EQ(hist_percentile(&h, 50), 10);
	CHECK_EQ(hist_percentile(&h, 99), 10);
	CHECK(hist_percentile(&h, 99.5) >= 937500 && hist_percentile(&h, 99.5) <= 1000000);
	CHECK_EQ(hist_percentile(&h, 100), 1000000);
}

static void test_add_counts(void)
{
	uint32_t counts[HIST_BUCKETS] = { 0 };

	counts[3] = 2;
	counts[63] = 5;
	counts[HIST_BUCKETS - 1] = 1;
	hist_reset(&h);
	hist_add_counts(&h, counts, 123456, 1ULL << 40);
	CHECK_EQ(h.total, 8);
	CHECK_EQ(h.sum, 123456);
	CHECK_EQ(h.max, 1ULL << 40);
	CHECK_EQ(h.counts[3], 2);
	CHECK_EQ(h.counts[63], 5);
	hist_add_counts(&h, counts, 4, 7);
	CHECK_EQ(h.total, 16);
	CHECK_EQ(h.sum, 123460);
	CHECK_EQ(h.max, 1ULL << 40);	/* a smaller max does not lower it */
	CHECK_EQ(h.counts[63], 10);
	/* the last bucket reports the exact max */
	CHECK_EQ(hist_percentile(&h, 99.9), 1ULL << 40);
}

static void test_merge(void)
{
	struct hist a, b;

	hist_reset(&a);
	hist_reset(&b);
	hist_add_value(&a, 5);
	hist_add_value(&a, 1000);
	hist_add_value(&b, 5);
	hist_add_value(&b, 70000);
	hist_add_value(&b, 3);
	hist_merge(&a, &b);
	CHECK_EQ(a.total, 5);
	CHECK_EQ(a.sum, 5 + 1000 + 5 + 70000 + 3);
	CHECK_EQ(a.max, 70000);
	CHECK_EQ(a.counts[5], 2);
	CHECK_EQ(a.counts[3], 1);
	CHECK_EQ(a.counts[63], 1);
	CHECK_EQ(a.counts[hist_bucket(70000)], 1);
	/* b untouched */
	CHECK_EQ(b.total, 3);
	hist_reset(&b);
	hist_merge(&b, &a);
	CHECK_EQ(b.max, 70000);
	CHECK_EQ(b.total, 5);
}

static void test_log2_exact_slots(void)
{
	uint64_t slots[LOG2_SLOTS];
	int n;

	hist_reset(&h);
	for (uint64_t v = 0; v < 4; v++)
		hist_add_value(&h, v);
	hist_add_value(&h, 1000);
	hist_add_value(&h, 1023);
	hist_add_value(&h, 512);
	n = hist_log2(&h, 1, slots);
	CHECK_EQ(n, 10);
	CHECK_EQ(slots[0], 2);	/* 0, 1 */
	CHECK_EQ(slots[1], 2);	/* 2, 3 */
	for (int i = 2; i < 9; i++)
		CHECK_EQ(slots[i], 0);
	CHECK_EQ(slots[9], 3);	/* 512, 1000, 1023 */
	hist_add_value(&h, 1024);
	n = hist_log2(&h, 1, slots);
	CHECK_EQ(n, 11);
	CHECK_EQ(slots[10], 1);
}

static void test_log2_exact_every_slot(void)
{
	uint64_t slots[LOG2_SLOTS];
	int bad = 0;

	/* with div 1 each value lands in floor(log2(v)), up to the last bucket */
	for (unsigned int k = 1; k < 37; k++) {
		uint64_t vals[3] = { 1ULL << k, (1ULL << k) + (1ULL << k) / 3, (2ULL << k) - 1 };

		for (int j = 0; j < 3; j++) {
			hist_reset(&h);
			hist_add_value(&h, vals[j]);
			bad += hist_log2(&h, 1, slots) != (int)k + 1;
			bad += slots[k] != 1;
		}
	}
	CHECK_EQ(bad, 0);
}

static void test_log2_div_1000(void)
{
	uint64_t slots[LOG2_SLOTS];
	int n;

	/* ns into us: a bucket goes to the slot of its midpoint / 1000 */
	hist_reset(&h);
	hist_add_value(&h, 1000);	/* 960..1023, mid 991 -> 0 us */
	hist_add_value(&h, 5000);	/* 4608..5119, mid 4863 -> 4 us */
	hist_add_value(&h, 1000000);	/* 983040..1048575, mid 1015807 -> 1015 us */
	hist_add_value(&h, 2000000);	/* 1966080..2097151, mid 2031615 -> 2031 us */
	n = hist_log2(&h, 1000, slots);
	CHECK_EQ(n, 11);
	CHECK_EQ(slots[0], 1);
	CHECK_EQ(slots[1], 0);
	CHECK_EQ(slots[2], 1);
	CHECK_EQ(slots[9], 1);
	CHECK_EQ(slots[10], 1);
}

static void test_log2_empty(void)
{
	uint64_t slots[LOG2_SLOTS];

	hist_reset(&h);
	slots[5] = 99;
	CHECK_EQ(hist_log2(&h, 1, slots), 0);
	CHECK_EQ(slots[5], 0);
	CHECK_EQ(hist_log2(&h, 0, slots), 0);	/* div 0 taken as 1 */
}

static void test_json_buckets(void)
{
	struct t_mem m;
	struct jw w;

	hist_reset(&h);
	hist_add_value(&h, 1);
	hist_add_value(&h, 5);
	hist_add_value(&h, 6);
	jw_init(&w, t_mem_open(&m));
	jw_obj_begin(&w);
	hist_json_buckets(&w, &h);
	jw_ku64(&w, "after", 1);
	jw_obj_end(&w);
	CHECK_STR(t_mem_str(&m), "{\"buckets\":[{\"min\":0,\"max\":1,\"count\":1},"
		  "{\"min\":2,\"max\":3,\"count\":0},"
		  "{\"min\":4,\"max\":7,\"count\":2}],\"after\":1}");
}

static void test_json_buckets_empty(void)
{
	struct t_mem m;
	struct jw w;

	hist_reset(&h);
	jw_init(&w, t_mem_open(&m));
	jw_obj_begin(&w);
	hist_json_buckets(&w, &h);
	jw_obj_end(&w);
	CHECK_STR(t_mem_str(&m), "{\"buckets\":[]}");
}

static void test_print_log2(void)
{
	struct t_mem m;
	uint64_t slots[3] = { 1, 0, 2 };

	hist_print_log2(t_mem_open(&m), slots, 3, "usecs");
	CHECK_STR(t_mem_str(&m),
		  "          usecs         : count    distribution\n"
		  "         0 -> 1          : 1        |********************                    |\n"
		  "         2 -> 3          : 0        |                                        |\n"
		  "         4 -> 7          : 2        |****************************************|\n");
}

int main(void)
{
	RUN(test_constants);
	RUN(test_log2_against_loop);
	RUN(test_bucket_small_values);
	RUN(test_bucket_powers_of_two);
	RUN(test_bucket_clamp);
	RUN(test_bucket_min_max_consistent);
	RUN(test_bucket_every_value_in_range);
	RUN(test_percentile_empty);
	RUN(test_percentile_single_value);
	RUN(test_percentile_uniform);
	RUN(test_percentile_skewed);
	RUN(test_add_counts);
	RUN(test_merge);
	RUN(test_log2_exact_slots);
	RUN(test_log2_exact_every_slot);
	RUN(test_log2_div_1000);
	RUN(test_log2_empty);
	RUN(test_json_buckets);
	RUN(test_json_buckets_empty);
	RUN(test_print_log2);
	return t_done();
}
