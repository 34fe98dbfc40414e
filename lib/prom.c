// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Prometheus registry and text exposition format (see prom.h). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "json.h"
#include "prom.h"
#include "util.h"

struct prom_series {
	char *values[PROM_MAX_LABELS];
	uint64_t hash;
	uint64_t last_ns;
	bool overflow;
	uint64_t u;			/* counter */
	double d;			/* gauge */
	uint64_t *buckets;		/* histogram: nbounds + 1, not cumulative */
	uint64_t sum, count;
};

struct prom_family {
	struct prom_reg *reg;
	struct prom_family *next;
	char *name, *help;
	enum prom_type type;
	char *labels[PROM_MAX_LABELS];
	int nlabels;
	int pos[PROM_MAX_LABELS];	/* label i's place in a values array */
	uint64_t bounds[PROM_MAX_BOUNDS];
	int nbounds;
	unsigned int digits;
	uint8_t bmap[HIST_BUCKETS];	/* log-linear bucket -> _bucket index */
	unsigned int max_series;
	struct prom_series **series;	/* in creation order */
	unsigned int n, cap;
	/* open addressing on the series' hash: slot -> index in series + 1
	 * (0: empty), at most half full, so that a tool updating a thousand
	 * cgroups each interval does not scan the list for every one */
	unsigned int *index;
	unsigned int index_cap;		/* a power of two, or 0 */
	struct prom_series *overflow;
	uint64_t folded;		/* updates that went to overflow */
};

struct prom_reg {
	struct prom_family *first, *last;
	uint64_t now_ns;
	uint64_t idle_ns;
};

struct prom_reg *prom_reg_new(void)
{
	return calloc(1, sizeof(struct prom_reg));
}

static void series_free(struct prom_series *s)
{
	if (!s)
		return;
	for (int i = 0; i < PROM_MAX_LABELS; i++)
		free(s->values[i]);
	free(s->buckets);
	free(s);
}

static void family_free(struct prom_family *f)
{
	for (unsigned int i = 0; i < f->n; i++)
		series_free(f->series[i]);
	series_free(f->overflow);
	for (int i = 0; i < f->nlabels; i++)
		free(f->labels[i]);
	free(f->series);
	free(f->index);
	free(f->name);
	free(f->help);
	free(f);
}

void prom_reg_free(struct prom_reg *r)
{
	struct prom_family *f, *next;

	if (!r)
		return;
	for (f = r->first; f; f = next) {
		next = f->next;
		family_free(f);
	}
	free(r);
}

void prom_reg_set_time(struct prom_reg *r, uint64_t now_ns)
{
	r->now_ns = now_ns;
}

void prom_reg_set_idle(struct prom_reg *r, uint64_t idle_ns)
{
	r->idle_ns = idle_ns;
}

/* ---- names ---- */

static bool name_char(char c, bool first, bool colon)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
		return true;
	if (colon && c == ':')
		return true;
	return !first && c >= '0' && c <= '9';
}

static bool valid_name(const char *s, bool colon)
{
	if (!s || !*s)
		return false;
	for (const char *p = s; *p; p++)
		if (!name_char(*p, p == s, colon))
			return false;
	return true;
}

bool prom_valid_metric_name(const char *s)
{
	return valid_name(s, true);
}

bool prom_valid_label_name(const char *s)
{
	/* names starting with __ are reserved for Prometheus itself */
	return valid_name(s, false) && strncmp(s, "__", 2);
}

bool prom_own_label(const char *s)
{
	return !strcmp(s, "le") || !strcmp(s, "overflow");
}

/* ---- families ---- */

static struct prom_family *family_new(struct prom_reg *r, const char *name, const char *help,
				      const char *const *labels, enum prom_type type)
{
	struct prom_family *f;
	int n = 0;

	if (!r || !prom_valid_metric_name(name) || !help)
		goto inval;
	for (struct prom_family *o = r->first; o; o = o->next)
		if (!strcmp(o->name, name))
			goto inval;
	for (; labels && labels[n]; n++) {
		if (n == PROM_MAX_LABELS)
			goto inval;
		if (!labels[n][0])
			continue;	/* a slot left out */
		if (!prom_valid_label_name(labels[n]) || prom_own_label(labels[n]))
			goto inval;
		for (int i = 0; i < n; i++)
			if (!strcmp(labels[i], labels[n]))
				goto inval;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return NULL;
	f->reg = r;
	f->type = type;
	f->max_series = PROM_DEFAULT_MAX_SERIES;
	f->name = strdup(name);
	f->help = strdup(help);
	for (int i = 0; i < n; i++) {
		if (!labels[i][0])
			continue;
		f->pos[f->nlabels] = i;
		f->labels[f->nlabels++] = strdup(labels[i]);
	}
	return f;
inval:
	errno = EINVAL;
	return NULL;
}

static struct prom_family *family_add(struct prom_reg *r, struct prom_family *f)
{
	if (!f)
		return NULL;
	if (r->last)
		r->last->next = f;
	else
		r->first = f;
	r->last = f;
	return f;
}

struct prom_family *prom_counter(struct prom_reg *r, const char *name, const char *help,
				 const char *const *labels)
{
	return family_add(r, family_new(r, name, help, labels, PROM_COUNTER));
}

struct prom_family *prom_counter_scaled(struct prom_reg *r, const char *name, const char *help,
					const char *const *labels, unsigned int digits)
{
	struct prom_family *f;

	if (digits > 18) {
		errno = EINVAL;
		return NULL;
	}
	f = prom_counter(r, name, help, labels);
	if (f)
		f->digits = digits;
	return f;
}

struct prom_family *prom_gauge(struct prom_reg *r, const char *name, const char *help,
			       const char *const *labels)
{
	return family_add(r, family_new(r, name, help, labels, PROM_GAUGE));
}

/* b is the largest value of a log-linear bucket that is not the last */
static bool is_bucket_max(uint64_t b)
{
	return b < hist_bucket_min(HIST_BUCKETS - 1) && hist_bucket(b) != hist_bucket(b + 1);
}

struct prom_family *prom_histogram(struct prom_reg *r, const char *name, const char *help,
				   const char *const *labels, const uint64_t *bounds, int nbounds,
				   unsigned int digits)
{
	struct prom_family *f;
	int j = 0;

	if (nbounds < 1 || nbounds > PROM_MAX_BOUNDS || digits > 18)
		goto inval;
	for (int i = 0; i < nbounds; i++)
		if (!is_bucket_max(bounds[i]) || (i && bounds[i] <= bounds[i - 1]))
			goto inval;
	f = family_new(r, name, help, labels, PROM_HISTOGRAM);
	if (!f)
		return NULL;
	memcpy(f->bounds, bounds, nbounds * sizeof(*bounds));
	f->nbounds = nbounds;
	f->digits = digits;
	/* a whole log-linear bucket lies at or below exactly the bounds that
	 * are at least its largest value */
	for (unsigned int i = 0; i < HIST_BUCKETS; i++) {
		while (j < nbounds && hist_bucket_max(i) > bounds[j])
			j++;
		f->bmap[i] = j;
	}
	return family_add(r, f);
inval:
	errno = EINVAL;
	return NULL;
}

uint64_t prom_family_folded(const struct prom_family *f)
{
	return f ? f->folded : 0;
}

uint64_t prom_reg_folded(const struct prom_reg *r, const char **name)
{
	uint64_t t = 0;

	if (name)
		*name = NULL;
	for (const struct prom_family *f = r ? r->first : NULL; f; f = f->next) {
		if (f->folded && name && !*name)
			*name = f->name;
		t += f->folded;
	}
	return t;
}

void prom_set_max_series(struct prom_family *f, unsigned int max)
{
	f->max_series = max;
}

unsigned int prom_series_count(const struct prom_family *f)
{
	return f->n + (f->overflow != NULL);
}

void prom_family_clear(struct prom_family *f)
{
	if (!f)
		return;
	for (unsigned int i = 0; i < f->n; i++)
		series_free(f->series[i]);
	f->n = 0;
	series_free(f->overflow);
	f->overflow = NULL;
	if (f->index)
		memset(f->index, 0, f->index_cap * sizeof(*f->index));
}

/* ---- series ---- */

static const char *val(const char *const *values, int i)
{
	return values && values[i] ? values[i] : "";
}

static uint64_t values_hash(const struct prom_family *f, const char *const *values)
{
	uint64_t h = FNV1A_INIT;

	for (int i = 0; i < f->nlabels; i++) {
		h = fnv1a(h, val(values, f->pos[i]), strlen(val(values, f->pos[i])));
		h = fnv1a(h, "\xff", 1);	/* no byte of UTF-8 text */
	}
	return h;
}

static bool same_values(const struct prom_family *f, const struct prom_series *s,
			const char *const *values)
{
	for (int i = 0; i < f->nlabels; i++)
		if (strcmp(s->values[i], val(values, f->pos[i])))
			return false;
	return true;
}

static struct prom_series *series_new(const struct prom_family *f, const char *const *values,
				      uint64_t hash, bool overflow)
{
	struct prom_series *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->hash = hash;
	s->overflow = overflow;
	for (int i = 0; i < f->nlabels; i++)
		if (!(s->values[i] = strdup(overflow ? "" : val(values, f->pos[i]))))
			goto fail;
	if (f->type == PROM_HISTOGRAM &&
	    !(s->buckets = calloc(f->nbounds + 1, sizeof(*s->buckets))))
		goto fail;
	return s;
fail:
	series_free(s);
	return NULL;
}

static void index_insert(struct prom_family *f, unsigned int i)
{
	unsigned int mask = f->index_cap - 1, slot = f->series[i]->hash & mask;

	while (f->index[slot])
		slot = (slot + 1) & mask;
	f->index[slot] = i + 1;
}

/* Sized for n series at most half full; 0 or -ENOMEM (the old index stays). */
static int index_rebuild(struct prom_family *f, unsigned int n)
{
	unsigned int cap = f->index_cap ? f->index_cap : 32;

	while (cap < 2 * n)
		cap *= 2;
	if (cap != f->index_cap) {
		unsigned int *idx = calloc(cap, sizeof(*idx));

		if (!idx)
			return -ENOMEM;
		free(f->index);
		f->index = idx;
		f->index_cap = cap;
	} else {
		memset(f->index, 0, cap * sizeof(*f->index));
	}
	for (unsigned int i = 0; i < f->n; i++)
		index_insert(f, i);
	return 0;
}

static struct prom_series *index_find(const struct prom_family *f, const char *const *values,
				      uint64_t h)
{
	unsigned int mask = f->index_cap - 1, slot, e;

	if (!f->index_cap)
		return NULL;
	for (slot = h & mask; (e = f->index[slot]); slot = (slot + 1) & mask) {
		struct prom_series *s = f->series[e - 1];

		if (s->hash == h && same_values(f, s, values))
			return s;
	}
	return NULL;
}

/* Drops the series untouched for longest, if it has been idle long enough. */
static bool evict_idle(struct prom_family *f)
{
	uint64_t now = f->reg->now_ns, idle = f->reg->idle_ns;
	unsigned int oldest = 0;

	if (!idle || !f->n)
		return false;
	for (unsigned int i = 1; i < f->n; i++)
		if (f->series[i]->last_ns < f->series[oldest]->last_ns)
			oldest = i;
	if (now - f->series[oldest]->last_ns < idle)
		return false;
	series_free(f->series[oldest]);
	memmove(&f->series[oldest], &f->series[oldest + 1],
		(f->n - oldest - 1) * sizeof(*f->series));
	f->n--;
	index_rebuild(f, f->n);		/* the same size: cannot fail */
	return true;
}

static struct prom_series *overflow_series(struct prom_family *f)
{
	if (!f->overflow)
		f->overflow = series_new(f, NULL, 0, true);
	return f->overflow;
}

static struct prom_series *series_get(struct prom_family *f, const char *const *values)
{
	uint64_t h = values_hash(f, values);
	struct prom_series *s;

	s = index_find(f, values, h);
	if (s)
		goto found;
	if (f->n >= f->max_series && !evict_idle(f)) {
		f->folded++;
		s = overflow_series(f);
		goto found;
	}
	if (f->n == f->cap) {
		unsigned int cap = f->cap ? f->cap * 2 : 16;
		struct prom_series **n = realloc(f->series, cap * sizeof(*n));

		if (!n)
			return NULL;
		f->series = n;
		f->cap = cap;
	}
	if (2 * (f->n + 1) > f->index_cap && index_rebuild(f, f->n + 1))
		return NULL;
	s = series_new(f, values, h, false);
	if (!s)
		return NULL;
	f->series[f->n++] = s;
	index_insert(f, f->n - 1);
found:
	if (s)
		s->last_ns = f->reg->now_ns;
	return s;
}

void prom_counter_add(struct prom_family *f, const char *const *values, uint64_t v)
{
	struct prom_series *s;

	if (f && f->type == PROM_COUNTER && (s = series_get(f, values)))
		s->u += v;
}

void prom_counter_set(struct prom_family *f, const char *const *values, uint64_t v)
{
	struct prom_series *s;

	/* a counter never goes down: an overflow series only adds */
	if (!f || f->type != PROM_COUNTER || !(s = series_get(f, values)))
		return;
	if (s->overflow)
		s->u += v;
	else
		s->u = v;
}

void prom_gauge_set(struct prom_family *f, const char *const *values, double v)
{
	struct prom_series *s;

	if (f && f->type == PROM_GAUGE && (s = series_get(f, values)))
		s->d = v;
}

void prom_hist_add(struct prom_family *f, const char *const *values, const struct hist *h)
{
	struct prom_series *s;

	if (!f || f->type != PROM_HISTOGRAM || !(s = series_get(f, values)))
		return;
	for (unsigned int i = 0; i < HIST_BUCKETS; i++)
		s->buckets[f->bmap[i]] += h->counts[i];
	s->sum += h->sum;
	s->count += h->total;
}

int prom_log2_bounds(uint64_t *out, int max, unsigned int lo, unsigned int hi)
{
	int n = 0;

	for (unsigned int k = lo; k <= hi && k < 64 && n < max; k++)
		out[n++] = (1ULL << k) - 1;
	return n;
}

/* ---- text ---- */

void prom_fmt_scaled(char *buf, size_t len, uint64_t v, unsigned int digits)
{
	uint64_t div = 1;
	int n;

	for (unsigned int i = 0; i < digits; i++)
		div *= 10;
	if (digits == 0 || v % div == 0) {
		snprintf(buf, len, "%llu", (unsigned long long)(v / div));
		return;
	}
	n = snprintf(buf, len, "%llu.%0*llu", (unsigned long long)(v / div), (int)digits,
		     (unsigned long long)(v % div));
	while (n > 0 && (size_t)n < len && buf[n - 1] == '0')
		buf[--n] = 0;
}

/* Escapes esc (with a backslash) and newline; invalid UTF-8 -> U+FFFD. */
static void write_escaped(FILE *f, const char *str, bool quote)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t n = strlen(str), i = 0, len;

	while (i < n) {
		size_t run = i;

		/* plain ASCII goes out in one piece: a byte at a time was most
		 * of the rendering time */
		while (run < n && s[run] < 0x80 && s[run] != '\\' && s[run] != '\n' &&
		       !(quote && s[run] == '"'))
			run++;
		if (run > i) {
			fwrite(s + i, 1, run - i, f);
			i = run;
			continue;
		}
		if (s[i] == '\\' || (quote && s[i] == '"')) {
			fputc('\\', f);
			fputc(s[i++], f);
			continue;
		}
		if (s[i] == '\n') {
			fputs("\\n", f);
			i++;
			continue;
		}
		len = utf8_seq_len(s + i, n - i);
		if (!len) {
			fputs("\xEF\xBF\xBD", f);
			i++;
			continue;
		}
		fwrite(s + i, 1, len, f);
		i += len;
	}
}

void prom_write_label_value(FILE *f, const char *s)
{
	write_escaped(f, s, true);
}

void prom_write_help(FILE *f, const char *s)
{
	write_escaped(f, s, false);
}

/* {a="x",b="y"[,overflow="true"][,le="0.5"]} or nothing */
static void write_labels(FILE *out, const struct prom_family *f, const struct prom_series *s,
			 const char *le)
{
	bool any = false;

	for (int i = 0; i < f->nlabels; i++) {
		fprintf(out, "%s%s=\"", any ? "," : "{", f->labels[i]);
		prom_write_label_value(out, s->values[i]);
		fputc('"', out);
		any = true;
	}
	if (s->overflow) {
		fprintf(out, "%soverflow=\"true\"", any ? "," : "{");
		any = true;
	}
	if (le) {
		fprintf(out, "%sle=\"%s\"", any ? "," : "{", le);
		any = true;
	}
	if (any)
		fputc('}', out);
}

static void write_double(FILE *out, double v)
{
	if (isnan(v))
		fputs("NaN", out);
	else if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", out);
	else
		fprintf(out, "%.17g", v);
}

static void write_hist(FILE *out, const struct prom_family *f, const struct prom_series *s)
{
	uint64_t cum = 0;
	char le[48];

	for (int b = 0; b < f->nbounds; b++) {
		cum += s->buckets[b];
		prom_fmt_scaled(le, sizeof(le), f->bounds[b], f->digits);
		fprintf(out, "%s_bucket", f->name);
		write_labels(out, f, s, le);
		fprintf(out, " %llu\n", (unsigned long long)cum);
	}
	fprintf(out, "%s_bucket", f->name);
	write_labels(out, f, s, "+Inf");
	fprintf(out, " %llu\n", (unsigned long long)s->count);
	prom_fmt_scaled(le, sizeof(le), s->sum, f->digits);
	fprintf(out, "%s_sum", f->name);
	write_labels(out, f, s, NULL);
	fprintf(out, " %s\n%s_count", le, f->name);
	write_labels(out, f, s, NULL);
	fprintf(out, " %llu\n", (unsigned long long)s->count);
}

static void write_series(FILE *out, const struct prom_family *f, const struct prom_series *s)
{
	if (f->type == PROM_HISTOGRAM) {
		write_hist(out, f, s);
		return;
	}
	fputs(f->name, out);
	write_labels(out, f, s, NULL);
	fputc(' ', out);
	if (f->type == PROM_COUNTER && f->digits) {
		char v[48];

		prom_fmt_scaled(v, sizeof(v), s->u, f->digits);
		fputs(v, out);
	} else if (f->type == PROM_COUNTER) {
		fprintf(out, "%llu", (unsigned long long)s->u);
	} else
		write_double(out, s->d);
	fputc('\n', out);
}

static const char *type_name(enum prom_type t)
{
	switch (t) {
	case PROM_COUNTER: return "counter";
	case PROM_GAUGE: return "gauge";
	default: return "histogram";
	}
}

int prom_write(const struct prom_reg *r, FILE *out)
{
	for (const struct prom_family *f = r->first; f; f = f->next) {
		fprintf(out, "# HELP %s ", f->name);
		prom_write_help(out, f->help);
		fprintf(out, "\n# TYPE %s %s\n", f->name, type_name(f->type));
		for (unsigned int i = 0; i < f->n; i++)
			write_series(out, f, f->series[i]);
		if (f->overflow)
			write_series(out, f, f->overflow);
	}
	return ferror(out) ? -EIO : 0;
}

char *prom_render(const struct prom_reg *r, size_t *len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&buf, &n);

	if (!f)
		return NULL;
	if (prom_write(r, f) || fclose(f)) {
		free(buf);
		return NULL;
	}
	*len = n;
	return buf;
}

static int write_all(int fd, const char *text, size_t len)
{
	size_t off = 0;

	while (off < len) {
		ssize_t w = write(fd, text + off, len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? -errno : -EIO;
		off += w;
	}
	return 0;
}

/*
 * The temporary file is a new one each time: mkostemp() creates it with
 * O_CREAT|O_EXCL under a name nobody can guess, so a link, FIFO or file
 * another user planted in the directory is never opened (a root tool used
 * to open FILE.tmp with O_TRUNC and follow a symlink there). rename()
 * replaces a link at FILE itself, it does not write through it.
 */
int prom_write_file(const char *path, const char *text, size_t len)
{
	char tmp[PATH_MAX];
	int fd, err;

	if (snprintf(tmp, sizeof(tmp), "%s" PROM_TMP_SUFFIX, path) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* node_exporter usually runs as another user */
	err = fchmod(fd, 0644) ? -errno : write_all(fd, text, len);
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
