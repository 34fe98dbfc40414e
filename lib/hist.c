// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <math.h>
#include <string.h>
#include "hist.h"

uint64_t hist_bucket_min(unsigned int idx)
{
	unsigned int e, sub;

	if (idx < HIST_SUB)
		return idx;
	e = idx / HIST_SUB + HIST_SUB_BITS - 1;
	sub = idx % HIST_SUB;
	return (uint64_t)(HIST_SUB + sub) << (e - HIST_SUB_BITS);
}

uint64_t hist_bucket_max(unsigned int idx)
{
	if (idx >= HIST_BUCKETS - 1)
		return UINT64_MAX;
	return hist_bucket_min(idx + 1) - 1;
}

void hist_reset(struct hist *h)
{
	memset(h, 0, sizeof(*h));
}

void hist_add_value(struct hist *h, uint64_t v)
{
	h->counts[hist_bucket(v)]++;
	h->total++;
	h->sum += v;
	if (v > h->max)
		h->max = v;
}

void hist_add_counts(struct hist *h, const uint32_t *counts, uint64_t sum, uint64_t max)
{
	for (unsigned int i = 0; i < HIST_BUCKETS; i++) {
		h->counts[i] += counts[i];
		h->total += counts[i];
	}
	h->sum += sum;
	if (max > h->max)
		h->max = max;
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	for (unsigned int i = 0; i < HIST_BUCKETS; i++)
		dst->counts[i] += src->counts[i];
	dst->total += src->total;
	dst->sum += src->sum;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t hist_percentile(const struct hist *h, double p)
{
	uint64_t rank, seen = 0, lo, hi, mid;

	if (!h->total)
		return 0;
	if (p <= 0)
		p = 0;
	if (p >= 100)
		return h->max;
	rank = (uint64_t)ceil(p / 100.0 * (double)h->total);
	if (rank < 1)
		rank = 1;
	for (unsigned int i = 0; i < HIST_BUCKETS; i++) {
		seen += h->counts[i];
		if (seen < rank)
			continue;
		lo = hist_bucket_min(i);
		hi = hist_bucket_max(i);
		if (hi == UINT64_MAX)
			return h->max;
		mid = lo + (hi - lo + 1) / 2;
		if (lo == hi)
			mid = lo;
		return mid < h->max ? mid : h->max;
	}
	return h->max;
}

static int slot_of(uint64_t v)
{
	int s = 0;

	while (v > 1 && s < LOG2_SLOTS - 1) {
		v >>= 1;
		s++;
	}
	return s;
}

int hist_log2(const struct hist *h, uint64_t div, uint64_t slots[LOG2_SLOTS])
{
	int n = 0;

	memset(slots, 0, sizeof(uint64_t) * LOG2_SLOTS);
	if (!div)
		div = 1;
	for (unsigned int i = 0; i < HIST_BUCKETS; i++) {
		uint64_t lo = hist_bucket_min(i), hi = hist_bucket_max(i), v;
		int s;

		if (!h->counts[i])
			continue;
		if (hi == UINT64_MAX)
			hi = h->max > lo ? h->max : lo;
		v = div == 1 ? lo : (lo + (hi - lo) / 2) / div;
		s = slot_of(v);
		slots[s] += h->counts[i];
		if (s + 1 > n)
			n = s + 1;
	}
	return n;
}

void hist_print_log2(FILE *f, const uint64_t *slots, int n, const char *unit)
{
	const int width = 40;
	uint64_t maxc = 0;

	for (int i = 0; i < n; i++)
		if (slots[i] > maxc)
			maxc = slots[i];
	fprintf(f, "%*s%-*s : count    distribution\n", 10, "", 13, unit);
	for (int i = 0; i < n; i++) {
		uint64_t lo = i ? 1ULL << i : 0, hi = i ? (1ULL << (i + 1)) - 1 : 1;
		int stars = maxc ? (int)((slots[i] * width + maxc - 1) / maxc) : 0;

		if (slots[i] && !stars)
			stars = 1;
		fprintf(f, "%10llu -> %-10llu : %-8llu |", (unsigned long long)lo,
			(unsigned long long)hi, (unsigned long long)slots[i]);
		for (int s = 0; s < width; s++)
			fputc(s < stars ? '*' : ' ', f);
		fputs("|\n", f);
	}
}

void hist_json_buckets(struct jw *w, const struct hist *h)
{
	uint64_t slots[LOG2_SLOTS];
	int n = hist_log2(h, 1, slots);

	jw_key(w, "buckets");
	jw_arr_begin(w);
	for (int i = 0; i < n; i++) {
		jw_obj_begin(w);
		jw_ku64(w, "min", i ? 1ULL << i : 0);
		jw_ku64(w, "max", i ? (1ULL << (i + 1)) - 1 : 1);
		jw_ku64(w, "count", slots[i]);
		jw_obj_end(w);
	}
	jw_arr_end(w);
}
