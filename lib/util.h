/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Parsing of durations, sizes and lists; clocks and timestamps. */
#ifndef AISCOPE_UTIL_H
#define AISCOPE_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <sys/types.h>

#define NSEC_PER_USEC	1000ULL
#define NSEC_PER_MSEC	1000000ULL
#define NSEC_PER_SEC	1000000000ULL

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

/* "500ms", "10" (seconds), "10s", "2m", "1h", "250us", "1.5s". 0 or -EINVAL. */
int parse_duration(const char *s, uint64_t *ns);
/* "4096", "256K", "64M", "1G" (powers of 1024, optional "iB"/"B"). */
int parse_size(const char *s, uint64_t *bytes);
/* "1,2,3" into out[] (at most max); returns the count or -EINVAL/-E2BIG. */
int parse_u32_list(const char *s, uint32_t *out, int max);
/* A BPF ring buffer's size for at least want bytes: a power of two and a
 * multiple of the page size (page: a power of two, 4 KiB, 16 KiB, 64 KiB) */
uint64_t ringbuf_size(uint64_t want, uint64_t page);
int parse_u64(const char *s, uint64_t *v);
/* A cap (table entries, map size) that tests may lower: the positive
 * number in AISCOPE_TEST_CAP_<name> if set, else dflt. A hidden knob, so
 * that a test overflows a cap with hundreds of objects, not millions. */
uint64_t aiscope_test_cap(const char *name, uint64_t dflt);
/* The uid of a user name (static builds read /etc/passwd: no NSS). */
bool user_uid(const char *name, uint32_t *uid);

/* qsort() and bsearch() that accept an empty array whose base is NULL
 * (a grown array before its first row): glibc declares base nonnull, so
 * qsort(NULL, 0) is undefined (UBSan reported four). */
typedef int (*cmp_fn)(const void *, const void *);
void sort_array(void *base, size_t n, size_t size, cmp_fn cmp);
void *search_array(const void *key, const void *base, size_t n, size_t size, cmp_fn cmp);
/* FNV-1a over n bytes, continuing from h (FNV1A_INIT to start) */
#define FNV1A_INIT	0xcbf29ce484222325ULL
uint64_t fnv1a(uint64_t h, const void *p, size_t n);
/* whether s starts with prefix */
static inline bool str_has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}
/* -1, 0 or 1 as a is below, equal to or above b: for comparators */
static inline int cmp_u64(uint64_t a, uint64_t b)
{
	return a < b ? -1 : a > b;
}
/* A full table's eviction: of n rows of size bytes, each with a uint64_t
 * timestamp at ts_off, the k (at least 1) with the oldest go, those at the
 * cut first in row order, and the rest keep their order at the front.
 * Returns how many are kept; SIZE_MAX when out of memory (nothing moved). */
size_t rows_drop_oldest(void *rows, size_t n, size_t size, size_t ts_off, size_t k);

/* Human form of a duration: "1s", "500ms", "1.5s". */
void fmt_duration(uint64_t ns, char *buf, size_t len);

/* CLOCK_REALTIME minus the clock BPF stamps events with. */
int64_t clock_realtime_offset(bool boot_clock);
uint64_t clock_ns(int clockid);
/* "2026-11-29T08:17:31.123456789Z" (buf >= 32 bytes). */
void fmt_rfc3339_ns(uint64_t realtime_ns, char *buf, size_t len);
/* Local "HH:MM:SS" for -T columns. */
void fmt_hms(uint64_t realtime_ns, char *buf, size_t len);

/* A device number as the kernel keeps it (MKDEV(): major << 20 | minor,
 * what BPF reads from a struct super_block or inode), of a user-space
 * dev_t (glibc's encoding differs), and its two halves. */
uint32_t kernel_dev(dev_t dev);
#define KDEV_MAJOR(kdev)	((unsigned int)((kdev) >> 20))
#define KDEV_MINOR(kdev)	((unsigned int)((kdev) & 0xfffff))

#endif
