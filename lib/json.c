// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include "json.h"
#include "util.h"

/* Length of the valid UTF-8 sequence at s (at most n bytes), 0 if invalid.
 * Rejects overlong forms, surrogates and code points above U+10FFFF. */
size_t utf8_seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len, i;
	uint32_t cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2;
		cp = c & 0x1F;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3;
		cp = c & 0x0F;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4;
		cp = c & 0x07;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3F);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return 0;
	return len;
}

void json_write_string(FILE *f, const char *str, size_t n)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t i = 0, len;

	fputc('"', f);
	while (i < n && s[i]) {
		unsigned char c = s[i];

		switch (c) {
		case '"': fputs("\\\"", f); i++; continue;
		case '\\': fputs("\\\\", f); i++; continue;
		case '\n': fputs("\\n", f); i++; continue;
		case '\r': fputs("\\r", f); i++; continue;
		case '\t': fputs("\\t", f); i++; continue;
		case '\b': fputs("\\b", f); i++; continue;
		case '\f': fputs("\\f", f); i++; continue;
		}
		if (c < 0x20 || c == 0x7F) {
			fprintf(f, "\\u%04x", c);
			i++;
			continue;
		}
		len = utf8_seq_len(s + i, n - i);
		if (!len) {
			fputs("\xEF\xBF\xBD", f);	/* U+FFFD */
			i++;
			continue;
		}
		/* a NUL inside a multi-byte sequence made it invalid above */
		fwrite(s + i, 1, len, f);
		i += len;
	}
	fputc('"', f);
}

void jw_init(struct jw *w, FILE *f)
{
	memset(w, 0, sizeof(*w));
	w->f = f;
}

static void sep(struct jw *w)
{
	if (w->after_key) {
		w->after_key = false;
		return;
	}
	if (w->need_comma[w->depth])
		fputc(',', w->f);
	w->need_comma[w->depth] = true;
}

static void push(struct jw *w, char c)
{
	sep(w);
	fputc(c, w->f);
	if (w->depth < JW_MAX_DEPTH - 1)
		w->depth++;
	w->need_comma[w->depth] = false;
}

static void pop(struct jw *w, char c)
{
	fputc(c, w->f);
	if (w->depth > 0)
		w->depth--;
}

void jw_obj_begin(struct jw *w) { push(w, '{'); }
void jw_obj_end(struct jw *w) { pop(w, '}'); }
void jw_arr_begin(struct jw *w) { push(w, '['); }
void jw_arr_end(struct jw *w) { pop(w, ']'); }

void jw_key(struct jw *w, const char *key)
{
	sep(w);
	json_write_string(w->f, key, strlen(key));
	fputc(':', w->f);
	w->after_key = true;
}

void jw_str(struct jw *w, const char *s)
{
	jw_strn(w, s, s ? strlen(s) : 0);
}

void jw_strn(struct jw *w, const char *s, size_t n)
{
	if (!s) {
		jw_null(w);
		return;
	}
	sep(w);
	json_write_string(w->f, s, n);
}

void jw_u64(struct jw *w, uint64_t v)
{
	sep(w);
	fprintf(w->f, "%llu", (unsigned long long)v);
}

void jw_i64(struct jw *w, int64_t v)
{
	sep(w);
	fprintf(w->f, "%lld", (long long)v);
}

void jw_double(struct jw *w, double v, int decimals)
{
	if (!isfinite(v)) {
		jw_null(w);
		return;
	}
	sep(w);
	fprintf(w->f, "%.*f", decimals, v);
}

void jw_bool(struct jw *w, bool v)
{
	sep(w);
	fputs(v ? "true" : "false", w->f);
}

void jw_null(struct jw *w)
{
	sep(w);
	fputs("null", w->f);
}

void jw_hex(struct jw *w, uint64_t v)
{
	sep(w);
	fprintf(w->f, "\"0x%llx\"", (unsigned long long)v);
}

void jw_kstr(struct jw *w, const char *k, const char *s) { jw_key(w, k); jw_str(w, s); }
void jw_kstrn(struct jw *w, const char *k, const char *s, size_t n) { jw_key(w, k); jw_strn(w, s, n); }
void jw_ku64(struct jw *w, const char *k, uint64_t v) { jw_key(w, k); jw_u64(w, v); }
void jw_ki64(struct jw *w, const char *k, int64_t v) { jw_key(w, k); jw_i64(w, v); }
void jw_kdouble(struct jw *w, const char *k, double v, int d) { jw_key(w, k); jw_double(w, v, d); }
void jw_kbool(struct jw *w, const char *k, bool v) { jw_key(w, k); jw_bool(w, v); }
void jw_knull(struct jw *w, const char *k) { jw_key(w, k); jw_null(w); }

void jw_ku64_or_null(struct jw *w, const char *k, bool known, uint64_t v)
{
	if (known)
		jw_ku64(w, k, v);
	else
		jw_knull(w, k);
}

void jw_ki64_or_null(struct jw *w, const char *k, bool known, int64_t v)
{
	if (known)
		jw_ki64(w, k, v);
	else
		jw_knull(w, k);
}

void jw_kdouble_or_null(struct jw *w, const char *k, bool known, double v, int decimals)
{
	if (known)
		jw_kdouble(w, k, v, decimals);
	else
		jw_knull(w, k);
}

void jw_kbool_or_null(struct jw *w, const char *k, bool known, bool v)
{
	if (known)
		jw_kbool(w, k, v);
	else
		jw_knull(w, k);
}

void jw_kts(struct jw *w, const char *k, uint64_t realtime_ns)
{
	char buf[40];

	if (!realtime_ns) {
		jw_knull(w, k);
		return;
	}
	fmt_rfc3339_ns(realtime_ns, buf, sizeof(buf));
	jw_kstr(w, k, buf);
}

static struct {
	bool known;
	char name[sizeof(((struct utsname *)0)->nodename)];
} host;

/* read once: a host's captures are joined by this name (topograph), so
 * every line of a run names the same one */
const char *jw_host(void)
{
	struct utsname u;

	if (!host.known) {
		host.known = true;
		if (!uname(&u))
			snprintf(host.name, sizeof(host.name), "%s", u.nodename);
	}
	return host.name[0] ? host.name : NULL;
}

void jw_host_set(const char *name)
{
	host.known = true;
	snprintf(host.name, sizeof(host.name), "%s", name ? name : "");
}

void jw_record_begin(struct jw *w, const char *type, const char *tool, uint64_t realtime_ns)
{
	char ts[40];

	w->depth = 0;
	w->after_key = false;
	w->need_comma[0] = false;
	jw_obj_begin(w);
	jw_kstr(w, "type", type);
	jw_kstr(w, "tool", tool);
	fmt_rfc3339_ns(realtime_ns, ts, sizeof(ts));
	jw_kstr(w, "ts", ts);
	jw_ku64(w, "schema", AISCOPE_JSON_SCHEMA);
	jw_kstr(w, "host", jw_host());
}

void jw_record_end(struct jw *w)
{
	jw_obj_end(w);
	fputc('\n', w->f);
}
