/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* User side of the log-linear histograms of bpf/aiscope_hist.h. */
#ifndef AISCOPE_LIB_HIST_H
#define AISCOPE_LIB_HIST_H

#include <stdint.h>
#include <stdio.h>
#include "aiscope_hist.h"
#include "json.h"

#define LOG2_SLOTS 64

struct hist {
	uint64_t counts[HIST_BUCKETS];
	uint64_t total;
	uint64_t sum;
	uint64_t max;
};

uint64_t hist_bucket_min(unsigned int idx);
uint64_t hist_bucket_max(unsigned int idx);	/* UINT64_MAX for the last */

void hist_reset(struct hist *h);
void hist_add_value(struct hist *h, uint64_t v);
/* Adds BPF counts; sum and max come from the BPF side, exact. */
void hist_add_counts(struct hist *h, const uint32_t *counts, uint64_t sum, uint64_t max);
void hist_merge(struct hist *dst, const struct hist *src);
/* p in [0, 100]; the midpoint of the bucket holding that rank, never
 * above the largest value seen. 0 for an empty histogram. */
uint64_t hist_percentile(const struct hist *h, double p);

/* Power-of-two slots of value/div: slot 0 holds 0..1, slot k holds
 * [2^k, 2^(k+1)-1]. With div 1 the slots are exact; otherwise each
 * log-linear bucket goes to the slot of its midpoint. Returns the number
 * of slots up to the highest non-empty one. */
int hist_log2(const struct hist *h, uint64_t div, uint64_t slots[LOG2_SLOTS]);
/* runqlat-style bars: "     usecs     : count    distribution" */
void hist_print_log2(FILE *f, const uint64_t *slots, int n, const char *unit);
/* "buckets":[{"min":..,"max":..,"count":..},...] of exact ns log2 slots */
void hist_json_buckets(struct jw *w, const struct hist *h);

#endif
