// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "jsonp.h"

#define CHUNK_MIN (32 * 1024)

struct jp_chunk {
	struct jp_chunk *next;
	size_t size, used;
	_Alignas(16) char mem[];
};

/* parser state of one jp_parse() */
struct ps {
	struct jp *p;
	const char *s, *end, *start;
	int depth;
	int err;
};

void jp_init(struct jp *p)
{
	memset(p, 0, sizeof(*p));
}

void jp_free(struct jp *p)
{
	struct jp_chunk *c = p->chunks, *n;

	for (; c; c = n) {
		n = c->next;
		free(c);
	}
	p->chunks = NULL;
}

const char *jp_error(const struct jp *p)
{
	return p->err;
}

/* Arena allocation: first fit in the chunks (they are few: a line is
 * small), a new chunk when none has room. */
static void *ps_alloc(struct ps *st, size_t n)
{
	struct jp_chunk *c;

	n = (n + 15) & ~(size_t)15;
	for (c = st->p->chunks; c; c = c->next)
		if (c->size - c->used >= n)
			break;
	if (!c) {
		size_t size = n > CHUNK_MIN ? n : CHUNK_MIN;

		c = malloc(sizeof(*c) + size);
		if (!c) {
			st->err = -ENOMEM;
			return NULL;
		}
		c->size = size;
		c->used = 0;
		c->next = st->p->chunks;
		st->p->chunks = c;
	}
	c->used += n;
	return c->mem + c->used - n;
}

static int fail(struct ps *st, const char *why)
{
	if (!st->err) {
		snprintf(st->p->err, sizeof(st->p->err), "%s at byte %zu", why,
			 (size_t)(st->s - st->start) + 1);
		st->err = -EINVAL;
	}
	return st->err;
}

static void skip_ws(struct ps *st)
{
	while (st->s < st->end &&
	       (*st->s == ' ' || *st->s == '\t' || *st->s == '\n' || *st->s == '\r'))
		st->s++;
}

static bool take(struct ps *st, const char *word)
{
	size_t n = strlen(word);

	if ((size_t)(st->end - st->s) < n || memcmp(st->s, word, n))
		return false;
	st->s += n;
	return true;
}

static int hex4(struct ps *st, unsigned int *out)
{
	unsigned int v = 0;

	if (st->end - st->s < 4)
		return fail(st, "short \\u escape");
	for (int i = 0; i < 4; i++) {
		char c = *st->s++;

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return fail(st, "bad hex digit in \\u escape");
	}
	*out = v;
	return 0;
}

static size_t put_utf8(char *o, unsigned int cp)
{
	if (cp < 0x80) {
		o[0] = cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = 0xc0 | cp >> 6;
		o[1] = 0x80 | (cp & 0x3f);
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = 0xe0 | cp >> 12;
		o[1] = 0x80 | (cp >> 6 & 0x3f);
		o[2] = 0x80 | (cp & 0x3f);
		return 3;
	}
	o[0] = 0xf0 | cp >> 18;
	o[1] = 0x80 | (cp >> 12 & 0x3f);
	o[2] = 0x80 | (cp >> 6 & 0x3f);
	o[3] = 0x80 | (cp & 0x3f);
	return 4;
}

/* \uXXXX, with a following low surrogate when XXXX is a high one; an
 * unpaired surrogate decodes as U+FFFD (as json.h writes invalid bytes) */
static int unicode_escape(struct ps *st, unsigned int *cp)
{
	unsigned int hi, lo;
	const char *save;

	if (hex4(st, &hi))
		return st->err;
	if (hi >= 0xdc00 && hi <= 0xdfff) {
		*cp = 0xfffd;
		return 0;
	}
	if (hi < 0xd800 || hi > 0xdbff) {
		*cp = hi;
		return 0;
	}
	save = st->s;
	if (take(st, "\\u")) {
		if (hex4(st, &lo))
			return st->err;
		if (lo >= 0xdc00 && lo <= 0xdfff) {
			*cp = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
			return 0;
		}
		st->s = save;	/* not a pair: the next escape stands alone */
	}
	*cp = 0xfffd;
	return 0;
}

/* A string at st->s (after the opening quote): decoded into the arena.
 * The decoded form is never longer than the source. */
static int parse_string(struct ps *st, const char **out, size_t *outlen)
{
	const char *q = st->s;
	char *buf, *o;

	/* find the closing quote to size the buffer */
	while (q < st->end && *q != '"')
		q += *q == '\\' && q + 1 < st->end ? 2 : 1;
	if (q >= st->end)
		return fail(st, "unterminated string");
	o = buf = ps_alloc(st, q - st->s + 1);
	if (!buf)
		return st->err;
	while (*st->s != '"') {
		unsigned char c = *st->s++;
		unsigned int cp;

		if (c < 0x20)
			return fail(st, "control character in string");
		if (c != '\\') {
			*o++ = c;
			continue;
		}
		c = *st->s++;
		switch (c) {
		case '"': case '\\': case '/':
			*o++ = c;
			break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u':
			if (unicode_escape(st, &cp))
				return st->err;
			o += put_utf8(o, cp);
			break;
		default:
			st->s--;
			return fail(st, "bad escape in string");
		}
	}
	st->s++;
	*o = 0;
	*out = buf;
	*outlen = o - buf;
	return 0;
}

static bool is_digit(struct ps *st)
{
	return st->s < st->end && *st->s >= '0' && *st->s <= '9';
}

/* RFC 8259 number grammar; integers kept exact in u/i when they fit */
static int parse_number(struct ps *st, struct jv *v)
{
	const char *b = st->s;
	bool neg = false, frac = false, overflow = false;
	uint64_t u = 0;
	char tmp[64], *endp;

	if (*st->s == '-') {
		neg = true;
		st->s++;
	}
	if (!is_digit(st))
		return fail(st, "bad number");
	if (*st->s == '0' && st->s + 1 < st->end && st->s[1] >= '0' && st->s[1] <= '9')
		return fail(st, "leading zero in number");
	while (is_digit(st)) {
		unsigned int d = *st->s++ - '0';

		if (u > (UINT64_MAX - d) / 10)
			overflow = true;
		else
			u = u * 10 + d;
	}
	if (st->s < st->end && *st->s == '.') {
		st->s++;
		frac = true;
		if (!is_digit(st))
			return fail(st, "bad fraction in number");
		while (is_digit(st))
			st->s++;
	}
	if (st->s < st->end && (*st->s == 'e' || *st->s == 'E')) {
		st->s++;
		frac = true;
		if (st->s < st->end && (*st->s == '+' || *st->s == '-'))
			st->s++;
		if (!is_digit(st))
			return fail(st, "bad exponent in number");
		while (is_digit(st))
			st->s++;
	}
	v->type = JV_NUM;
	if ((size_t)(st->s - b) < sizeof(tmp)) {
		memcpy(tmp, b, st->s - b);
		tmp[st->s - b] = 0;
		v->d = strtod(tmp, &endp);
	} else {
		v->d = neg ? -(double)u : (double)u;	/* absurdly long: overflowed anyway */
	}
	if (frac || overflow)
		return 0;
	if (!neg) {
		v->is_u64 = true;
		v->u = u;
		if (u <= INT64_MAX) {
			v->is_i64 = true;
			v->i = u;
		}
	} else if (u <= (uint64_t)INT64_MAX + 1) {
		v->is_i64 = true;
		v->i = u == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)u;
		if (!u) {
			v->is_u64 = true;	/* -0 */
			v->u = 0;
		}
	}
	return 0;
}

static int parse_value(struct ps *st, struct jv *v);

/* elements or members up to the closing bracket; obj: "key": value */
static int parse_container(struct ps *st, struct jv *v, bool obj)
{
	char close = obj ? '}' : ']';
	struct jv **tail = &v->child;

	if (++st->depth > JP_MAX_DEPTH)
		return fail(st, "nested too deeply");
	v->type = obj ? JV_OBJ : JV_ARR;
	st->s++;
	skip_ws(st);
	if (st->s < st->end && *st->s == close) {
		st->s++;
		st->depth--;
		return 0;
	}
	for (;;) {
		struct jv *e = ps_alloc(st, sizeof(*e));

		if (!e)
			return st->err;
		memset(e, 0, sizeof(*e));
		skip_ws(st);
		if (obj) {
			size_t klen;

			if (st->s >= st->end || *st->s != '"')
				return fail(st, "expected a key");
			st->s++;
			if (parse_string(st, &e->key, &klen))
				return st->err;
			skip_ws(st);
			if (st->s >= st->end || *st->s != ':')
				return fail(st, "expected ':'");
			st->s++;
		}
		if (parse_value(st, e))
			return st->err;
		*tail = e;
		tail = &e->next;
		v->len++;
		skip_ws(st);
		if (st->s < st->end && *st->s == ',') {
			st->s++;
			continue;
		}
		if (st->s < st->end && *st->s == close) {
			st->s++;
			st->depth--;
			return 0;
		}
		return fail(st, obj ? "expected ',' or '}'" : "expected ',' or ']'");
	}
}

static int parse_value(struct ps *st, struct jv *v)
{
	skip_ws(st);
	if (st->s >= st->end)
		return fail(st, "unexpected end");
	switch (*st->s) {
	case '{':
		return parse_container(st, v, true);
	case '[':
		return parse_container(st, v, false);
	case '"':
		st->s++;
		v->type = JV_STR;
		return parse_string(st, &v->s, &v->len);
	case 't':
	case 'f':
		v->type = JV_BOOL;
		v->b = *st->s == 't';
		if (!take(st, v->b ? "true" : "false"))
			return fail(st, "bad literal");
		return 0;
	case 'n':
		v->type = JV_NULL;
		if (!take(st, "null"))
			return fail(st, "bad literal");
		return 0;
	default:
		if (*st->s == '-' || (*st->s >= '0' && *st->s <= '9'))
			return parse_number(st, v);
		return fail(st, "unexpected character");
	}
}

int jp_parse(struct jp *p, const char *text, size_t len, const struct jv **out)
{
	struct ps st = { .p = p, .s = text, .end = text + len, .start = text };
	struct jv *root;

	for (struct jp_chunk *c = p->chunks; c; c = c->next)
		c->used = 0;
	p->err[0] = 0;
	root = ps_alloc(&st, sizeof(*root));
	if (!root)
		return st.err;
	memset(root, 0, sizeof(*root));
	if (parse_value(&st, root))
		return st.err;
	skip_ws(&st);
	if (st.s != st.end)
		return fail(&st, "trailing characters");
	*out = root;
	return 0;
}

const struct jv *jv_get(const struct jv *obj, const char *key)
{
	const struct jv *found = NULL;

	if (!obj || obj->type != JV_OBJ)
		return NULL;
	/* the last of duplicate keys wins, as in most parsers */
	for (const struct jv *e = obj->child; e; e = e->next)
		if (!strcmp(e->key, key))
			found = e;
	return found;
}

bool jv_is_null(const struct jv *v)
{
	return !v || v->type == JV_NULL;
}

const char *jv_str(const struct jv *v)
{
	return v && v->type == JV_STR ? v->s : NULL;
}

bool jv_u64(const struct jv *v, uint64_t *out)
{
	if (!v || v->type != JV_NUM || !v->is_u64)
		return false;
	*out = v->u;
	return true;
}

bool jv_i64(const struct jv *v, int64_t *out)
{
	if (!v || v->type != JV_NUM || !v->is_i64)
		return false;
	*out = v->i;
	return true;
}

bool jv_true(const struct jv *v)
{
	return v && v->type == JV_BOOL && v->b;
}

bool jv_num(const struct jv *v, double *out)
{
	if (!v || v->type != JV_NUM)
		return false;
	*out = v->d;
	return true;
}
