// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A client of NCCL's RAS service; see ncclras.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "jsonp.h"
#include "ncclras.h"

/* RAS's own collection legs time out after 5 s each, plus 5 s (NCCL's
 * client allows that much past the timeout asked for) */
#define RAS_EXTRA_S	5
#define CONNECT_MS	500

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static int wait_fd(int fd, short ev, int64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int64_t left = deadline - now_ms();
	int n;

	if (left <= 0)
		return -ETIMEDOUT;
	n = poll(&p, 1, left);
	if (n < 0)
		return -errno;
	return n ? 0 : -ETIMEDOUT;
}

static int dial(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	int fd = -1, err = -ECONNREFUSED;

	if (getaddrinfo(host, port, &hints, &res))
		return -EHOSTUNREACH;
	for (ai = res; ai; ai = ai->ai_next) {
		socklen_t sl = sizeof(int);
		int soerr = 0;

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		if (errno == EINPROGRESS && !(err = wait_fd(fd, POLLOUT, now_ms() + CONNECT_MS)) &&
		    !getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) && !soerr)
			break;
		if (soerr)
			err = -soerr;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd >= 0 ? fd : err;
}

static int send_line(int fd, const char *line, int64_t deadline)
{
	size_t off = 0, len = strlen(line);

	while (off < len) {
		ssize_t n = send(fd, line + off, len - off, MSG_NOSIGNAL);

		if (n > 0) {
			off += n;
			continue;
		}
		if (n < 0 && errno != EAGAIN)
			return -errno;
		if (wait_fd(fd, POLLOUT, deadline))
			return -ETIMEDOUT;
	}
	return 0;
}

/* one answer line of the handshake; the server sends nothing before it */
static int read_line(int fd, char *buf, size_t size, int64_t deadline)
{
	size_t off = 0;

	while (off + 1 < size) {
		ssize_t n = recv(fd, buf + off, 1, 0);

		if (n == 1) {
			if (buf[off++] == '\n')
				break;
			continue;
		}
		if (n == 0)
			return -EPROTO;
		if (errno != EAGAIN)
			return -errno;
		if (wait_fd(fd, POLLIN, deadline))
			return -ETIMEDOUT;
	}
	buf[off] = 0;
	return 0;
}

static int ask(int fd, const char *cmd, const char *want, int64_t deadline)
{
	char line[256];
	int err = send_line(fd, cmd, deadline) ?: read_line(fd, line, sizeof(line), deadline);

	if (err)
		return err;
	return strncasecmp(line, want, strlen(want)) ? -EPROTO : 0;
}

static int read_all(int fd, char **doc, size_t *len, int64_t deadline)
{
	size_t cap = 1 << 16, off = 0;
	char *buf = malloc(cap);

	if (!buf)
		return -ENOMEM;
	for (;;) {
		ssize_t n;

		if (off + 1 == cap) {
			char *nb;

			if (cap >= NCCLRAS_DOC_MAX) {
				free(buf);
				return -EFBIG;
			}
			nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				return -ENOMEM;
			}
			buf = nb;
			cap *= 2;
		}
		n = recv(fd, buf + off, cap - 1 - off, 0);
		if (n > 0) {
			off += n;
			continue;
		}
		if (n == 0)
			break;
		if (errno != EAGAIN || wait_fd(fd, POLLIN, deadline)) {
			free(buf);
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		}
	}
	buf[off] = 0;
	*doc = buf;
	*len = off;
	return 0;
}

int ncclras_query(const char *host, const char *port, int timeout_s, char **doc, size_t *len)
{
	int64_t deadline = now_ms() + 1000LL * ((timeout_s > 0 ? timeout_s : 5) + RAS_EXTRA_S);
	char cmd[32];
	int fd = dial(host, port), err;

	if (fd < 0)
		return fd;
	snprintf(cmd, sizeof(cmd), "TIMEOUT %d\n", timeout_s > 0 ? timeout_s : 5);
	err = ask(fd, "CLIENT PROTOCOL 2\n", "SERVER PROTOCOL ", deadline) ?:
	      ask(fd, cmd, "OK", deadline) ?:
	      ask(fd, "SET FORMAT json\n", "OK", deadline) ?:
	      send_line(fd, "STATUS\n", deadline) ?:
	      read_all(fd, doc, len, deadline);
	close(fd);
	return err;
}

/* ---- the document ---- */

static int int_of(const struct jv *v)
{
	int64_t i = -1;

	return jv_i64(v, &i) && i >= INT32_MIN && i <= INT32_MAX ? (int)i : -1;
}

static void str_of(const struct jv *v, char *buf, size_t size)
{
	snprintf(buf, size, "%s", jv_str(v) ?: "");
}

static int parse_rank(const struct jv *r, struct ncclras_rank *out)
{
	const struct jv *st = jv_get(r, "status"), *cc = jv_get(r, "collective_counts");

	out->rank = int_of(jv_get(r, "rank"));
	str_of(jv_get(r, "host"), out->host, sizeof(out->host));
	out->pid = int_of(jv_get(r, "pid"));
	out->init_state = int_of(jv_get(st, "init_state"));
	out->async_error = int_of(jv_get(st, "async_error"));
	out->finalize_called = jv_true(jv_get(st, "finalize_called"));
	out->destroy_flag = jv_true(jv_get(st, "destroy_flag"));
	out->abort_flag = jv_true(jv_get(st, "abort_flag"));
	out->colls = 0;
	for (const struct jv *c = cc && cc->type == JV_OBJ ? cc->child : NULL; c; c = c->next) {
		uint64_t n;

		if (jv_u64(c, &n))
			out->colls += n;
	}
	return out->rank >= 0 ? 0 : -EINVAL;
}

static void parse_missing(const struct jv *r, struct ncclras_missing *out)
{
	const struct jv *st = jv_get(r, "status");

	out->rank = int_of(jv_get(r, "rank"));
	str_of(jv_get(r, "host"), out->host, sizeof(out->host));
	out->pid = int_of(jv_get(r, "pid"));
	out->unresponsive = jv_true(jv_get(st, "unresponsive"));
	out->dead = jv_true(jv_get(st, "considered_dead"));
}

static void *array_of(const struct jv *a, size_t size, size_t *n)
{
	*n = a && a->type == JV_ARR ? a->len : 0;
	return *n ? calloc(*n, size) : NULL;
}

static int parse_comm(const struct jv *c, struct ncclras_comm *out)
{
	const struct jv *ranks = jv_get(c, "ranks"), *missing = jv_get(c, "missing_ranks"), *e;
	const char *h = jv_str(jv_get(c, "hash"));
	char *end;
	size_t i;

	if (!h || strncmp(h, "0x", 2))
		return -EINVAL;
	out->hash = strtoull(h + 2, &end, 16);
	if (*end || end == h + 2)
		return -EINVAL;
	out->size = int_of(jv_get(c, "size"));
	out->ranks = array_of(ranks, sizeof(*out->ranks), &out->nranks);
	out->missing = array_of(missing, sizeof(*out->missing), &out->nmissing);
	if ((out->nranks && !out->ranks) || (out->nmissing && !out->missing))
		return -ENOMEM;
	for (i = 0, e = out->nranks ? ranks->child : NULL; e; e = e->next, i++)
		if (parse_rank(e, &out->ranks[i]))
			return -EINVAL;
	for (i = 0, e = out->nmissing ? missing->child : NULL; e; e = e->next, i++)
		parse_missing(e, &out->missing[i]);
	return 0;
}

int ncclras_parse(const char *doc, size_t len, struct ncclras_status *st)
{
	const char *start = memchr(doc, '{', len);
	const struct jv *root, *comms, *c;
	struct jp p;
	int err = -EINVAL;
	size_t i;

	memset(st, 0, sizeof(*st));
	if (!start)
		return -EINVAL;
	jp_init(&p);
	if (jp_parse(&p, start, len - (start - doc), &root) || root->type != JV_OBJ)
		goto out;
	comms = jv_get(root, "communicators");
	if (!comms || comms->type != JV_ARR)
		goto out;
	str_of(jv_get(root, "nccl_version"), st->version, sizeof(st->version));
	jv_num(jv_get(jv_get(root, "ras"), "collection_time_sec"), &st->collection_s);
	st->timeouts = int_of(jv_get(jv_get(root, "ras"), "timeouts_count"));
	st->comms = array_of(comms, sizeof(*st->comms), &st->ncomms);
	if (st->ncomms && !st->comms) {
		err = -ENOMEM;
		goto out;
	}
	for (i = 0, c = comms->child; c; c = c->next, i++)
		if ((err = parse_comm(c, &st->comms[i])))
			goto out;
	err = 0;
out:
	jp_free(&p);
	if (err)
		ncclras_status_free(st);
	return err;
}

void ncclras_status_free(struct ncclras_status *st)
{
	for (size_t i = 0; i < st->ncomms; i++) {
		free(st->comms[i].ranks);
		free(st->comms[i].missing);
	}
	free(st->comms);
	memset(st, 0, sizeof(*st));
}

int ncclras_behind(const struct ncclras_comm *c, uint64_t *min, uint64_t *max)
{
	int behind = -1;

	*min = UINT64_MAX;
	*max = 0;
	for (size_t i = 0; i < c->nranks; i++) {
		if (c->ranks[i].colls < *min) {
			*min = c->ranks[i].colls;
			behind = i;
		}
		if (c->ranks[i].colls > *max)
			*max = c->ranks[i].colls;
	}
	if (behind < 0)
		*min = 0;
	return behind;
}
