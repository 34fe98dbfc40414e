/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * JSON-lines writer. Every record is one object on one line with "type",
 * "tool" and "ts" first. Strings are escaped for RFC 8259 and made valid
 * UTF-8: invalid bytes become U+FFFD, so a hostile comm or path still
 * gives a line that jq accepts.
 */
#ifndef AISCOPE_JSON_H
#define AISCOPE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define JW_MAX_DEPTH 16

struct jw {
	FILE *f;
	int depth;
	bool after_key;
	bool need_comma[JW_MAX_DEPTH];
};

void jw_init(struct jw *w, FILE *f);
/*
 * The version of the keys (docs/schema/): it changes when a key is renamed
 * or removed or its meaning or unit changes, not when one is added, so a
 * reader that checks it can trust every key it knows.
 */
#define AISCOPE_JSON_SCHEMA 1

/* {"type":type,"tool":tool,"ts":"<RFC 3339 of realtime_ns>","schema":N,
 * "host":"<nodename>", the envelope every line of every tool starts with */
void jw_record_begin(struct jw *w, const char *type, const char *tool, uint64_t realtime_ns);
void jw_record_end(struct jw *w);
/*
 * The host every line names: uname's nodename (what hostname(1) shows, in
 * the tool's UTS namespace), read at the first record; NULL when empty.
 * jw_host_set() names it instead (tests; NULL: null).
 */
const char *jw_host(void);
void jw_host_set(const char *name);

void jw_key(struct jw *w, const char *key);
void jw_obj_begin(struct jw *w);
void jw_obj_end(struct jw *w);
void jw_arr_begin(struct jw *w);
void jw_arr_end(struct jw *w);
void jw_str(struct jw *w, const char *s);		/* NULL: null */
void jw_strn(struct jw *w, const char *s, size_t n);	/* stops at NUL or n; NULL: null */
void jw_u64(struct jw *w, uint64_t v);
void jw_i64(struct jw *w, int64_t v);
void jw_double(struct jw *w, double v, int decimals);	/* non-finite: null */
void jw_bool(struct jw *w, bool v);
void jw_null(struct jw *w);
void jw_hex(struct jw *w, uint64_t v);			/* "0x..." string */

/* key + value shorthands */
void jw_kstr(struct jw *w, const char *key, const char *s);
void jw_kstrn(struct jw *w, const char *key, const char *s, size_t n);
void jw_ku64(struct jw *w, const char *key, uint64_t v);
void jw_ki64(struct jw *w, const char *key, int64_t v);
void jw_kdouble(struct jw *w, const char *key, double v, int decimals);
void jw_kbool(struct jw *w, const char *key, bool v);
void jw_knull(struct jw *w, const char *key);
/* the value where it is known, else null */
void jw_ku64_or_null(struct jw *w, const char *key, bool known, uint64_t v);
void jw_ki64_or_null(struct jw *w, const char *key, bool known, int64_t v);
void jw_kdouble_or_null(struct jw *w, const char *key, bool known, double v, int decimals);
void jw_kbool_or_null(struct jw *w, const char *key, bool known, bool v);
/* An RFC 3339 time of realtime ns, null for 0 (not known) */
void jw_kts(struct jw *w, const char *key, uint64_t realtime_ns);

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid
 * (overlong forms, surrogates, above U+10FFFF). */
size_t utf8_seq_len(const unsigned char *s, size_t n);

/* The escaped, quoted form of s[0..n) (stops at NUL). */
void json_write_string(FILE *f, const char *s, size_t n);

#endif
