/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * JSON-lines reader: parses one line (one RFC 8259 value) into a small
 * tree whose nodes live in an arena that the next parse reuses. It is the
 * counterpart of json.h for tools that read other tools' --json output
 * (topograph).
 *
 *	struct jp p;
 *	const struct jv *v, *pid;
 *	uint64_t n;
 *
 *	jp_init(&p);
 *	if (jp_parse(&p, line, len, &v))
 *		fprintf(stderr, "bad line: %s\n", jp_error(&p));
 *	else if (jv_u64(jv_get(jv_get(v, "src"), "pid"), &n))
 *		...
 *	jp_free(&p);
 *
 * Strings are decoded (escapes, \u sequences with surrogate pairs; a lone
 * surrogate becomes U+FFFD) and NUL-terminated; len counts a decoded
 * \u0000. Integers are exact up to 2^64-1 (and down to -2^63); others are
 * doubles. Nesting deeper than JP_MAX_DEPTH is an error, so a hostile
 * line cannot exhaust the stack.
 */
#ifndef AISCOPE_JSONP_H
#define AISCOPE_JSONP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JP_MAX_DEPTH 64

enum jv_type { JV_NULL, JV_BOOL, JV_NUM, JV_STR, JV_ARR, JV_OBJ };

struct jv {
	enum jv_type type;
	bool b;			/* JV_BOOL */
	bool is_u64;		/* JV_NUM: an integer in [0, 2^64) in u */
	bool is_i64;		/* JV_NUM: an integer in [-2^63, 2^63) in i */
	uint64_t u;
	int64_t i;
	double d;		/* JV_NUM: always set (rounded for big integers) */
	const char *s;		/* JV_STR: decoded, NUL-terminated */
	size_t len;		/* JV_STR: bytes; JV_ARR/JV_OBJ: elements */
	const char *key;	/* a member of an object: its key (decoded) */
	struct jv *child;	/* JV_ARR/JV_OBJ: the first element */
	struct jv *next;	/* the next element of the parent */
};

struct jp_chunk;

struct jp {
	struct jp_chunk *chunks;	/* arena, reused by each parse */
	char err[128];
};

void jp_init(struct jp *p);
void jp_free(struct jp *p);
/* Parses text[0..len) (one value, whitespace around it allowed). 0 and
 * *out on success; -EINVAL (jp_error() says where and why) or -ENOMEM.
 * The tree stays valid until the next jp_parse() or jp_free(). */
int jp_parse(struct jp *p, const char *text, size_t len, const struct jv **out);
const char *jp_error(const struct jp *p);

/* Lookups; each accepts NULL (and then returns NULL or false), so that
 * jv_get(jv_get(v, "src"), "pid") needs no checks in between. */
const struct jv *jv_get(const struct jv *obj, const char *key);
bool jv_is_null(const struct jv *v);	/* missing or null */
/* The string, or NULL when v is not a string. */
const char *jv_str(const struct jv *v);
/* An integer in range: true and *out. */
bool jv_u64(const struct jv *v, uint64_t *out);
bool jv_i64(const struct jv *v, int64_t *out);
/* The literal true (false for false, null, a missing key, anything else). */
bool jv_true(const struct jv *v);
/* Any number: true and *out. */
bool jv_num(const struct jv *v, double *out);

#endif
