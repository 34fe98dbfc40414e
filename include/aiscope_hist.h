/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Log-linear histogram buckets, shared by BPF and user space.
 *
 * Values below HIST_SUB get a bucket each; above that every power of two
 * is split into HIST_SUB equal sub-buckets. A bucket spans 1/8 of its lower
 * bound, so a percentile reported as the bucket's midpoint is within 6.25%
 * of the true value. Values of 2^(HIST_MAX_EXP+1) and more share the last
 * bucket.
 */
#ifndef AISCOPE_HIST_H
#define AISCOPE_HIST_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif
#ifndef __always_inline
#define __always_inline inline __attribute__((always_inline))
#endif

#define HIST_SUB_BITS	3
#define HIST_SUB	(1U << HIST_SUB_BITS)
#define HIST_MAX_EXP	36	/* 2^37 ns is about 137 s */
#define HIST_BUCKETS	((HIST_MAX_EXP - HIST_SUB_BITS + 2) * HIST_SUB)

/* floor(log2(v)) for v > 0, branch-free and loop-free: BPF has no clz. */
static __always_inline __u32 aiscope_log2(__u64 v)
{
	__u32 r, shift;

	r = (v > 0xFFFFFFFFULL) << 5; v >>= r;
	shift = (v > 0xFFFF) << 4; v >>= shift; r |= shift;
	shift = (v > 0xFF) << 3; v >>= shift; r |= shift;
	shift = (v > 0xF) << 2; v >>= shift; r |= shift;
	shift = (v > 0x3) << 1; v >>= shift; r |= shift;
	r |= (v >> 1);
	return r;
}

static __always_inline __u32 hist_bucket(__u64 v)
{
	__u32 e;

	if (v < HIST_SUB)
		return v;
	e = aiscope_log2(v);
	if (e > HIST_MAX_EXP)
		return HIST_BUCKETS - 1;
	return (e - HIST_SUB_BITS + 1) * HIST_SUB +
	       ((v >> (e - HIST_SUB_BITS)) & (HIST_SUB - 1));
}

#endif
