// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * topograph --prometheus URL: the graph from a Prometheus server's HTTP
 * API instead of the tools' lines. Each host's socketsnoop and ipcsnoop
 * export their run's top edges (lib/edge.h edge_metrics, docs/fleet.md);
 * for each tool and family one instant query of
 * last_over_time(FAMILY[RANGE]) gives every edge seen in the range, its
 * run totals as last scraped. The series of one edge (bytes, messages,
 * reads) become one edge line, which ingest() takes as it takes a
 * capture's: hosts are joined as with FILEs. nclstat's ranks
 * (aiscope_nclstat_rank_op_seq) become its "communicator" rows, one per
 * host and communicator: ranks are joined across hosts by communicator.
 *
 * Plain HTTP only (the API of a server on the host or behind a proxy that
 * terminates TLS); one connection per query, HTTP/1.0, so that the body
 * ends with the connection and is never chunked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "json.h"
#include "topo.h"

#define PROM_TIMEOUT_S		30
#define PROM_MAX_BODY		(256U << 20)

enum { F_BYTES, F_MSGS, F_READ, F_N };

static const char *const prom_tools[] = { "socketsnoop", "ipcsnoop" };
static const char *const prom_families[F_N] = {
	"edge_bytes_total", "edge_messages_total", "edge_read_bytes_total",
};

/* the labels of an edge series (lib/edge.c), in the order of its key */
static const char *const series_label[] = {
	"host", "kind", "channel",
	"src_pid", "src_comm", "src_container", "src_endpoint",
	"dst_pid", "dst_comm", "dst_container", "dst_endpoint",
};
#define NLABELS	ARRAY_SIZE(series_label)

struct pedge {
	const char *tool;
	char *lv[NLABELS];
	uint64_t v[F_N];
	bool have[F_N];
};

/* a local rank of a communicator on its host */
struct prank {
	char *host, *comm_id, *comm;
	int64_t rank, nranks;	/* nranks -1: unknown */
	uint64_t pid, op_seq;
};

static struct {
	char host[256], port[16], prefix[1024];
	struct pedge *e;
	size_t n, cap;
	uint32_t *slot;		/* open addressing: index + 1 into e, 0 free */
	size_t nslots;		/* a power of two, at least twice n */
	struct prank *r;
	size_t nr, rcap;
	uint64_t queries, series;
} P;

/* ---- the URL ---- */

/* http://HOST[:PORT][/PREFIX]; HOST may be [IPv6]. A usage error when not. */
void prom_url_parse(const char *url)
{
	const char *p = url, *h, *he, *slash;
	size_t n;

	if (!strncmp(p, "https://", 8))
		usage_error("invalid --prometheus '%s': https is not supported (plain http://, e.g. to a local proxy)", url);
	if (strncmp(p, "http://", 7))
		usage_error("invalid --prometheus '%s': expected http://HOST[:PORT][/PATH]", url);
	p += 7;
	slash = strchr(p, '/');
	if (!slash)
		slash = p + strlen(p);
	if (*p == '[') {
		h = p + 1;
		he = memchr(h, ']', slash - h);
		if (!he)
			usage_error("invalid --prometheus '%s': no ']' after the IPv6 address", url);
		p = he + 1;
	} else {
		h = p;
		he = memchr(p, ':', slash - p);
		if (!he)
			he = slash;
		p = he;
	}
	n = he - h;
	if (!n || n >= sizeof(P.host))
		usage_error("invalid --prometheus '%s': no host", url);
	memcpy(P.host, h, n);
	P.host[n] = 0;
	if (*p == ':') {
		unsigned long port;
		char *end;

		port = strtoul(p + 1, &end, 10);
		if (end == p + 1 || end != slash || !port || port > 65535)
			usage_error("invalid --prometheus '%s': bad port", url);
		snprintf(P.port, sizeof(P.port), "%lu", port);
	} else if (p != slash) {
		usage_error("invalid --prometheus '%s': expected http://HOST[:PORT][/PATH]", url);
	} else {
		snprintf(P.port, sizeof(P.port), "80");
	}
	/* a server behind a path (--web.route-prefix): its API is below it */
	n = strlen(slash);
	while (n && slash[n - 1] == '/')
		n--;
	if (n >= sizeof(P.prefix))
		usage_error("invalid --prometheus '%s': the path is too long", url);
	memcpy(P.prefix, slash, n);
	P.prefix[n] = 0;
	for (const char *c = P.prefix; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == '?' || *c == '#' || *c == 0x7f)
			usage_error("invalid --prometheus '%s': the path may not hold spaces, '?' or '#'", url);
}

/* ---- one query over HTTP ---- */

static void urlencode(const char *s, char *out, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (; *s && o + 4 < len; s++) {
		unsigned char c = *s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			out[o++] = c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = 0;
}

static int connect_server(void)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *a;
	struct timeval tv = { .tv_sec = PROM_TIMEOUT_S };
	int fd = -1, err;

	err = getaddrinfo(P.host, P.port, &hints, &res);
	if (err)
		aiscope_fail(EXIT_RUNTIME, "cannot query Prometheus at %s:%s: %s", P.host, P.port,
			     gai_strerror(err));
	for (a = res; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (!connect(fd, a->ai_addr, a->ai_addrlen))
			break;
		err = errno;
		close(fd);
		fd = -1;
		errno = err;
	}
	freeaddrinfo(res);
	if (fd < 0)
		aiscope_fail(EXIT_RUNTIME, "cannot query Prometheus at %s:%s: %s", P.host, P.port,
			     strerror(errno));
	return fd;
}

static void send_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			aiscope_fail(EXIT_RUNTIME, "cannot query Prometheus at %s:%s: %s", P.host,
				     P.port, n ? strerror(errno) : "connection closed");
		buf += n;
		len -= n;
	}
}

/* The whole response, NUL-terminated; *len its size. */
static char *recv_all(int fd, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);

	if (!buf)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	for (;;) {
		ssize_t r;

		if (cap - n < 2) {
			if (cap >= PROM_MAX_BODY)
				aiscope_fail(EXIT_RUNTIME, "Prometheus at %s:%s answered more than %u MiB",
					     P.host, P.port, PROM_MAX_BODY >> 20);
			cap *= 2;
			buf = realloc(buf, cap);
			if (!buf)
				aiscope_fail(EXIT_RUNTIME, "out of memory");
		}
		r = recv(fd, buf + n, cap - n - 1, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			aiscope_fail(EXIT_RUNTIME, "cannot read Prometheus' answer from %s:%s: %s",
				     P.host, P.port,
				     errno == EAGAIN ? "no answer in time" : strerror(errno));
		if (!r)
			break;
		n += r;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

/* GET path; the body of a 200 answer (or of an API error, which says
 * why in its JSON); *status the HTTP status. */
static char *http_get(const char *path, int *status, size_t *blen)
{
	char *req, *resp, *body;
	size_t len;
	int fd, n;

	n = asprintf(&req, "GET %s HTTP/1.0\r\nHost: %s:%s\r\nAccept: application/json\r\n"
			   "User-Agent: aiscope-topograph\r\nConnection: close\r\n\r\n",
		     path, P.host, P.port);
	if (n < 0)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	fd = connect_server();
	send_all(fd, req, n);
	free(req);
	resp = recv_all(fd, &len);
	close(fd);
	if (sscanf(resp, "HTTP/1.%*d %d", status) != 1)
		aiscope_fail(EXIT_RUNTIME, "Prometheus at %s:%s: not an HTTP answer", P.host, P.port);
	body = strstr(resp, "\r\n\r\n");
	if (!body)
		aiscope_fail(EXIT_RUNTIME, "Prometheus at %s:%s: an answer without its body", P.host,
			     P.port);
	body += 4;
	*blen = len - (body - resp);
	memmove(resp, body, *blen + 1);
	return resp;
}

/* ---- the series into edges ---- */

static const char *label_of(const struct jv *metric, const char *name)
{
	return jv_str(jv_get(metric, name));
}

static uint64_t pedge_hash(const char *tool, char *const *lv)
{
	uint64_t h = fnv1a(FNV1A_INIT, tool, strlen(tool) + 1);

	for (size_t i = 0; i < NLABELS; i++)
		h = fnv1a(h, lv[i], strlen(lv[i]) + 1);
	return h;
}

static bool pedge_is(const struct pedge *e, const char *tool, char *const *lv)
{
	if (strcmp(e->tool, tool))
		return false;
	for (size_t i = 0; i < NLABELS; i++)
		if (strcmp(e->lv[i], lv[i]))
			return false;
	return true;
}

static void slots_grow(void)
{
	size_t ns = P.nslots ? P.nslots * 2 : 1024;

	free(P.slot);
	P.slot = xcalloc(ns, sizeof(*P.slot));
	P.nslots = ns;
	for (size_t i = 0; i < P.n; i++) {
		size_t s = pedge_hash(P.e[i].tool, P.e[i].lv) & (ns - 1);

		while (P.slot[s])
			s = (s + 1) & (ns - 1);
		P.slot[s] = i + 1;
	}
}

/* The edge of a series: its labels but the scrape's (instance, job), so
 * that the three families of one edge meet. */
static struct pedge *pedge_of(const char *tool, const struct jv *metric)
{
	char *lv[NLABELS];
	struct pedge *e;
	size_t s;

	for (size_t i = 0; i < NLABELS; i++)
		lv[i] = (char *)(label_of(metric, series_label[i]) ?: "");
	/* a tool's series without its host label: the scrape target's */
	if (!*lv[0] && label_of(metric, "instance"))
		lv[0] = (char *)label_of(metric, "instance");
	if (2 * (P.n + 1) > P.nslots)
		slots_grow();
	for (s = pedge_hash(tool, lv) & (P.nslots - 1); P.slot[s]; s = (s + 1) & (P.nslots - 1))
		if (pedge_is(&P.e[P.slot[s] - 1], tool, lv))
			return &P.e[P.slot[s] - 1];
	P.e = aiscope_grow(P.e, &P.cap, P.n, sizeof(*P.e));
	e = &P.e[P.n++];
	memset(e, 0, sizeof(*e));
	e->tool = tool;
	for (size_t i = 0; i < NLABELS; i++)
		e->lv[i] = xstrdup(lv[i]);
	P.slot[s] = P.n;
	return e;
}

/* A sample's value, ["<ts>", "<float>"]: an integer count, exact below
 * 2^53 as Prometheus keeps float64 */
static bool sample_value(const struct jv *value, uint64_t *out)
{
	const struct jv *v = value && value->child ? value->child->next : NULL;
	const char *s = jv_str(v);
	double d;
	char *end;

	if (!s)
		return false;
	d = strtod(s, &end);
	if (end == s || *end || !(d >= 0) || d > 18446744073709551615.0)
		return false;
	*out = (uint64_t)(d + 0.5);
	return true;
}

static void take_edges(const struct jv *result, const char *tool, int fam)
{
	for (const struct jv *r = result ? result->child : NULL; r; r = r->next) {
		const struct jv *metric = jv_get(r, "metric");
		struct pedge *e;
		uint64_t v;

		if (!metric || !sample_value(jv_get(r, "value"), &v)) {
			G.bad_lines++;
			continue;
		}
		e = pedge_of(tool, metric);
		e->v[fam] = v;
		e->have[fam] = true;
		P.series++;
	}
}

/* the instant query q; take(result) */
static void query_expr(const char *q, void (*take)(const struct jv *result, const char *tool, int fam),
		       const char *tool, int fam)
{
	char enc[1536], *path, *body;
	const struct jv *v;
	struct jp p;
	size_t blen;
	int status;

	urlencode(q, enc, sizeof(enc));
	if (asprintf(&path, "%s/api/v1/query?query=%s", P.prefix, enc) < 0)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	body = http_get(path, &status, &blen);
	free(path);
	P.queries++;
	jp_init(&p);
	if (jp_parse(&p, body, blen, &v))
		aiscope_fail(EXIT_RUNTIME, "Prometheus at %s:%s answered HTTP %d, not its API's JSON: %s",
			     P.host, P.port, status, jp_error(&p));
	if (status != 200 || strcmp(jv_str(jv_get(v, "status")) ?: "", "success"))
		aiscope_fail(EXIT_RUNTIME, "Prometheus at %s:%s refused the query %s: HTTP %d, %s",
			     P.host, P.port, q, status,
			     jv_str(jv_get(v, "error")) ?: "no error message");
	take(jv_get(jv_get(v, "data"), "result"), tool, fam);
	jp_free(&p);
	free(body);
}

/* the instant query last_over_time(SERIES[range]) */
static void query(const char *series, uint64_t range_ms,
		  void (*take)(const struct jv *result, const char *tool, int fam),
		  const char *tool, int fam)
{
	char q[256];

	snprintf(q, sizeof(q), "last_over_time(%s[%llums])", series, (unsigned long long)range_ms);
	query_expr(q, take, tool, fam);
}

/* one side of an edge line: a process (with a pid) or an endpoint */
static void side_json(struct jw *w, const char *key, char *const *lv)
{
	uint64_t pid;

	jw_key(w, key);
	jw_obj_begin(w);
	if (*lv[0] && !parse_u64(lv[0], &pid) && pid <= UINT32_MAX) {
		jw_ku64(w, "pid", pid);
		jw_kstr(w, "comm", lv[1]);
		if (*lv[2])
			jw_kstr(w, "container_name", lv[2]);
	} else {
		jw_knull(w, "pid");
	}
	if (*lv[3])
		jw_kstr(w, "endpoint", lv[3]);
	else
		jw_knull(w, "endpoint");
	jw_obj_end(w);
}

/* A line as a tool would have written it, for ingest(): begun with its
 * type, tool and host, its other keys added with w, then ingested. */
struct made_line {
	char *buf;
	size_t len;
	FILE *f;
	struct jw w;
};

static void line_begin(struct made_line *l, const char *type, const char *tool, const char *host)
{
	l->buf = NULL;
	l->len = 0;
	l->f = open_memstream(&l->buf, &l->len);
	if (!l->f)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	jw_init(&l->w, l->f);
	jw_obj_begin(&l->w);
	jw_kstr(&l->w, "type", type);
	jw_kstr(&l->w, "tool", tool);
	jw_kstr(&l->w, "host", host);
}

static void line_ingest(struct made_line *l, uint64_t lineno)
{
	jw_obj_end(&l->w);
	if (fclose(l->f))
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	ingest("prometheus", lineno, l->buf, l->len);
	free(l->buf);
}

/* The edge as the tool's own edge line would have it (docs/edges.md). */
static void ingest_pedge(const struct pedge *e, uint64_t lineno)
{
	struct made_line l;
	struct jw *w = &l.w;

	line_begin(&l, "edge", e->tool, e->lv[0]);
	jw_kstr(w, "kind", e->lv[1]);
	jw_kstr(w, "channel", e->lv[2]);
	side_json(w, "src", &e->lv[3]);
	side_json(w, "dst", &e->lv[7]);
	jw_ku64(w, "bytes", e->v[F_BYTES]);
	jw_ku64(w, "msgs", e->v[F_MSGS]);
	if (e->have[F_READ])
		jw_ku64(w, "read_bytes", e->v[F_READ]);
	else
		jw_knull(w, "read_bytes");
	line_ingest(&l, lineno);
}

/* ---- nclstat's ranks ---- */

static bool label_i64(const struct jv *metric, const char *name, int64_t *out)
{
	const char *s = label_of(metric, name);
	char *end;

	if (!s || !*s)
		return false;
	errno = 0;
	*out = strtoll(s, &end, 10);
	return !errno && !*end;
}

static void take_ranks(const struct jv *result, const char *tool, int fam)
{
	for (const struct jv *r = result ? result->child : NULL; r; r = r->next) {
		const struct jv *metric = jv_get(r, "metric");
		const char *host = label_of(metric, "host"), *id = label_of(metric, "communicator_id");
		struct prank *k;
		int64_t rank, pid;
		uint64_t seq;

		if (!host || !*host)
			host = label_of(metric, "instance");
		if (!host || !id || !*id || !label_i64(metric, "rank", &rank) ||
		    !label_i64(metric, "pid", &pid) || pid <= 0 || pid > UINT32_MAX ||
		    !sample_value(jv_get(r, "value"), &seq)) {
			G.bad_lines++;
			continue;
		}
		P.r = aiscope_grow(P.r, &P.rcap, P.nr, sizeof(*P.r));
		k = &P.r[P.nr++];
		k->host = xstrdup(host);
		k->comm_id = xstrdup(id);
		k->comm = xstrdup(label_of(metric, "comm") ?: "");
		k->rank = rank;
		if (!label_i64(metric, "nranks", &k->nranks))
			k->nranks = -1;
		k->pid = pid;
		k->op_seq = seq;
		P.series++;
	}
}

static int cmp_prank(const void *a, const void *b)
{
	const struct prank *x = a, *y = b;
	int c = strcmp(x->host, y->host);

	if (!c)
		c = strcmp(x->comm_id, y->comm_id);
	if (!c)
		c = (x->rank > y->rank) - (x->rank < y->rank);
	return c;
}

/* ranks[first, first + n) (one host, one communicator) as nclstat's
 * communicator row */
static void ingest_ranks(size_t first, size_t n, uint64_t lineno)
{
	const struct prank *k = &P.r[first];
	struct made_line l;
	struct jw *w = &l.w;
	int64_t nranks = -1;

	for (size_t i = 0; i < n; i++)
		if (k[i].nranks > nranks)
			nranks = k[i].nranks;
	line_begin(&l, "sample", "nclstat", k->host);
	jw_kstr(w, "row", "communicator");
	jw_kstr(w, "communicator_id", k->comm_id);
	jw_ki64_or_null(w, "nranks", nranks >= 0, nranks);
	jw_key(w, "ranks");
	jw_arr_begin(w);
	for (size_t i = 0; i < n; i++) {
		jw_obj_begin(w);
		jw_ki64(w, "rank", k[i].rank);
		jw_ku64(w, "pid", k[i].pid);
		jw_ku64(w, "op_seq", k[i].op_seq);
		if (*k[i].comm)
			jw_kstr(w, "comm", k[i].comm);
		jw_obj_end(w);
	}
	jw_arr_end(w);
	line_ingest(&l, lineno);
}

static void read_ranks(uint64_t range_ms)
{
	size_t i = 0, n;

	query("aiscope_nclstat_rank_op_seq", range_ms, take_ranks, "nclstat", 0);
	if (P.nr)
		qsort(P.r, P.nr, sizeof(*P.r), cmp_prank);
	for (; i < P.nr; i += n) {
		for (n = 1; i + n < P.nr && !strcmp(P.r[i].host, P.r[i + n].host) &&
			    !strcmp(P.r[i].comm_id, P.r[i + n].comm_id); n++)
			;
		ingest_ranks(i, n, P.n + i + 1);
	}
	for (i = 0; i < P.nr; i++) {
		free(P.r[i].host);
		free(P.r[i].comm_id);
		free(P.r[i].comm);
	}
	free(P.r);
}

/* ---- what each host's schedlat and cachestat say of the host ---- */

/* instance -> host, from every tool's aiscope_build_info */
struct inst {
	char *instance, *host;
};
static struct {
	struct inst *v;
	size_t n, cap;
} I;

static const char *host_of_instance(const char *instance)
{
	for (size_t i = 0; instance && i < I.n; i++)
		if (!strcmp(I.v[i].instance, instance))
			return I.v[i].host;
	return NULL;
}

static void take_instances(const struct jv *result, const char *tool, int fam)
{
	for (const struct jv *r = result ? result->child : NULL; r; r = r->next) {
		const struct jv *metric = jv_get(r, "metric");
		const char *inst = label_of(metric, "instance"), *host = label_of(metric, "host");

		if (!inst || !host || !*host || host_of_instance(inst))
			continue;
		I.v = aiscope_grow(I.v, &I.cap, I.n, sizeof(*I.v));
		I.v[I.n].instance = xstrdup(inst);
		I.v[I.n++].host = xstrdup(host);
	}
}

/* a sample's value as a number (NaN and infinities: false) */
static bool sample_double(const struct jv *value, double *out)
{
	const char *s = jv_str(value && value->child ? value->child->next : NULL);
	char *end;

	if (!s)
		return false;
	*out = strtod(s, &end);
	return end != s && !*end && *out == *out && *out < 1e300 && *out > -1e300;
}

enum { H_RUNQ, H_MISSES, H_HITS };

static void take_host_figure(const struct jv *result, const char *tool, int what)
{
	for (const struct jv *r = result ? result->child : NULL; r; r = r->next) {
		const char *host = host_of_instance(label_of(jv_get(r, "metric"), "instance"));
		struct host_ctx *h;
		double x;

		if (!host || !sample_double(jv_get(r, "value"), &x) || x < 0)
			continue;
		h = host_ctx_of(host);
		switch (what) {
		case H_RUNQ:
			if (x * 1e9 > h->runq_p99_ns)
				h->runq_p99_ns = x * 1e9 + 0.5;
			h->has_runq = true;
			break;
		case H_MISSES:
			h->misses += x + 0.5;
			h->has_cache = true;
			break;
		case H_HITS:
			h->hits += x + 0.5;
			h->hits_known = true;
			break;
		}
	}
}

/* each host's run-queue wait p99 (schedlat) and page-cache misses and hits
 * (cachestat) over the tools' runs, as last scraped in the range (the run
 * totals, as the edges'), for the evidence of a process there */
static void read_host_context(uint64_t range_ms)
{
	char q[512];

	snprintf(q, sizeof(q), "last_over_time(aiscope_build_info[%llums])", (unsigned long long)range_ms);
	query_expr(q, take_instances, NULL, 0);
	if (!I.n)
		return;
	snprintf(q, sizeof(q),
		 "histogram_quantile(0.99, sum by (instance, le) (last_over_time(aiscope_schedlat_wait_seconds_bucket[%llums])))",
		 (unsigned long long)range_ms);
	query_expr(q, take_host_figure, NULL, H_RUNQ);
	snprintf(q, sizeof(q), "sum by (instance) (last_over_time(aiscope_cachestat_pages_total{kind=\"miss\"}[%llums]))",
		 (unsigned long long)range_ms);
	query_expr(q, take_host_figure, NULL, H_MISSES);
	snprintf(q, sizeof(q), "sum by (instance) (last_over_time(aiscope_cachestat_pages_total{kind=\"hit\"}[%llums]))",
		 (unsigned long long)range_ms);
	query_expr(q, take_host_figure, NULL, H_HITS);
	for (size_t i = 0; i < I.n; i++) {
		free(I.v[i].instance);
		free(I.v[i].host);
	}
	free(I.v);
}

/* by host, then the other labels: the same graph, nodes and hosts in the
 * same order, whatever order the server gave the series in */
static int cmp_pedge(const void *a, const void *b)
{
	const struct pedge *x = a, *y = b;
	int c;

	for (size_t i = 0; i < NLABELS; i++)
		if ((c = strcmp(x->lv[i], y->lv[i])))
			return c;
	return strcmp(x->tool, y->tool);
}

void read_prometheus(void)
{
	uint64_t range_ms = cfg.prom_range_ns / 1000000;

	G.exit_reason = "input";
	if (!range_ms)
		range_ms = 1;
	for (size_t t = 0; t < ARRAY_SIZE(prom_tools); t++)
		for (int fam = 0; fam < F_N; fam++) {
			char series[128];

			snprintf(series, sizeof(series), "aiscope_%s_%s", prom_tools[t],
				 prom_families[fam]);
			query(series, range_ms, take_edges, prom_tools[t], fam);
		}
	if (P.n)
		qsort(P.e, P.n, sizeof(*P.e), cmp_pedge);
	for (size_t i = 0; i < P.n; i++) {
		/* a series of the bytes is what makes an edge: the others
		 * come with it, in the same scrape */
		if (P.e[i].have[F_BYTES])
			ingest_pedge(&P.e[i], i + 1);
		else
			G.bad_lines++;
		for (size_t j = 0; j < NLABELS; j++)
			free(P.e[i].lv[j]);
	}
	read_ranks(range_ms);
	read_host_context(range_ms);
	if (cfg.verbose)
		fprintf(stderr, TOOL ": %llu queries to Prometheus at %s:%s gave %llu series: %zu edges, %zu NCCL ranks\n",
			(unsigned long long)P.queries, P.host, P.port, (unsigned long long)P.series,
			P.n, P.nr);
	free(P.e);
	free(P.slot);
}
