// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * GET /metrics over HTTP/1.1 inside the tool's own epoll loop: no thread,
 * so the exposition served is always a whole interval's. Every connection
 * is non-blocking, answered once and closed ("Connection: close"), and
 * has deadlines: its request complete within PROM_HTTP_REQ_TIMEOUT_NS, its
 * answer sent within PROM_HTTP_TIMEOUT_NS. When all slots are taken, a new
 * connection evicts the oldest idle one (prom.h), so hundreds of silent or
 * slow clients cannot make a well-behaved scrape wait, or fail with 503.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include "prom.h"

/* ---- ADDR:PORT ---- */

static int parse_port(const char *s, char *port, size_t len)
{
	char *end;
	long v;

	if (!*s || strlen(s) >= len)
		return -EINVAL;
	for (const char *p = s; *p; p++)
		if (*p < '0' || *p > '9')
			return -EINVAL;
	v = strtol(s, &end, 10);
	if (v < 0 || v > 65535)
		return -EINVAL;
	snprintf(port, len, "%ld", v);
	return 0;
}

/* host: "" for loopback */
static int split_spec(const char *spec, char *host, size_t hlen, char *port, size_t plen)
{
	const char *colon;
	size_t n;

	if (spec[0] == '[') {
		const char *close = strchr(spec, ']');

		if (!close || close[1] != ':' || close == spec + 1)
			return -EINVAL;
		n = close - spec - 1;
		if (n >= hlen)
			return -EINVAL;
		memcpy(host, spec + 1, n);
		host[n] = 0;
		return parse_port(close + 2, port, plen);
	}
	colon = strrchr(spec, ':');
	if (!colon) {
		host[0] = 0;
		return parse_port(spec, port, plen);
	}
	n = colon - spec;
	if (n >= hlen || memchr(spec, ':', n))
		return -EINVAL;		/* a bare IPv6 address needs brackets */
	memcpy(host, spec, n);
	host[n] = 0;
	return parse_port(colon + 1, port, plen);
}

static void fmt_bound(struct prom_http *s)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ip[INET6_ADDRSTRLEN] = "?";
	int port = 0;

	if (getsockname(s->lfd, (struct sockaddr *)&ss, &sl))
		return;
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		port = ntohs(a->sin6_port);
		snprintf(s->addr, sizeof(s->addr), "[%s]:%d", ip, port);
		return;
	}
	inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip, sizeof(ip));
	port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
	snprintf(s->addr, sizeof(s->addr), "%s:%d", ip, port);
}

static int bind_one(const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int one = 1, defer_s = PROM_HTTP_REQ_TIMEOUT_NS / 1000000000ULL, err;

	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (sa->sa_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	/* the first byte's deadline in the kernel: a silent connection is
	 * not handed to accept() before it sends or its time is up, so it
	 * takes no slot meanwhile, and a scrape arrives with its request */
	setsockopt(fd, IPPROTO_TCP, TCP_DEFER_ACCEPT, &defer_s, sizeof(defer_s));
	if (bind(fd, sa, len) || listen(fd, PROM_HTTP_BACKLOG)) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

/* Numeric addresses only (and "localhost"): no resolver, so that the
 * static tools in a minimal image behave the same. */
static int make_addr(const char *host, const char *port, struct sockaddr_storage *ss,
		     socklen_t *len)
{
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	uint16_t p = htons(atoi(port));

	memset(ss, 0, sizeof(*ss));
	if (!host[0] || !strcmp(host, "localhost"))
		host = "127.0.0.1";
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = p;
		*len = sizeof(*a4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = p;
		*len = sizeof(*a6);
		return 0;
	}
	return -EINVAL;
}

int prom_http_listen(struct prom_http *s, const char *spec, char *err, size_t errlen)
{
	struct sockaddr_storage ss;
	socklen_t len;
	char host[256], port[8];
	int fd;

	memset(s, 0, sizeof(*s));
	s->lfd = -1;
	s->ep = -1;
	for (int i = 0; i < PROM_HTTP_MAX_CONNS; i++)
		s->conns[i].fd = -1;
	if (!spec || split_spec(spec, host, sizeof(host), port, sizeof(port)) ||
	    make_addr(host, port, &ss, &len)) {
		snprintf(err, errlen,
			 "expected IPV4:PORT, [IPV6]:PORT, localhost:PORT, :PORT or PORT (0 to 65535)");
		return -EINVAL;
	}
	fd = bind_one((struct sockaddr *)&ss, len);
	if (fd < 0) {
		snprintf(err, errlen, "%s", strerror(-fd));
		return fd;
	}
	s->lfd = fd;
	fmt_bound(s);
	return 0;
}

/* ---- connections ---- */

int prom_http_nconns(const struct prom_http *s)
{
	int n = 0;

	for (int i = 0; i < PROM_HTTP_MAX_CONNS; i++)
		n += s->conns[i].fd >= 0;
	return n;
}

static void conn_close(struct prom_http *s, struct prom_http_conn *c)
{
	if (c->fd < 0)
		return;
	if (s->ep >= 0)
		epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->out);
	c->fd = -1;
	c->out = NULL;
	c->olen = c->ooff = c->rlen = 0;
}

static int conn_watch(struct prom_http *s, struct prom_http_conn *c, uint32_t events, int op)
{
	struct epoll_event ev = {
		.events = events,
		.data.u64 = s->tag + 1 + (c - s->conns),
	};

	return epoll_ctl(s->ep, op, c->fd, &ev);
}

static void conn_write(struct prom_http *s, struct prom_http_conn *c);

static void conn_respond(struct prom_http *s, struct prom_http_conn *c, int code,
			 const char *reason, const char *extra, bool head)
{
	size_t blen = code == 200 ? s->blen : strlen(reason) + 1;	/* with a newline */
	char hdr[512];
	int n;

	n = snprintf(hdr, sizeof(hdr),
		     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
		     code, reason, code == 200 ? PROM_CONTENT_TYPE : "text/plain; charset=utf-8",
		     blen, extra ? extra : "");
	c->out = malloc(n + blen);
	if (!c->out) {
		conn_close(s, c);
		return;
	}
	memcpy(c->out, hdr, n);
	c->olen = n;
	if (!head) {
		if (code == 200) {
			if (blen)
				memcpy(c->out + n, s->body, blen);
		} else {
			memcpy(c->out + n, reason, blen - 1);
			c->out[n + blen - 1] = '\n';
		}
		c->olen += blen;
	}
	c->ooff = 0;
	/* the request is in: now the time to send the answer */
	c->deadline_ns = c->accepted_ns + PROM_HTTP_TIMEOUT_NS;
	if (code == 200)
		s->served++;
	conn_watch(s, c, EPOLLOUT, EPOLL_CTL_MOD);
	conn_write(s, c);
}

static bool token_char(char ch)
{
	return ch > ' ' && ch < 0x7f && !strchr("()<>@,;:\\\"/[]?={}", ch);
}

/* The request line of a complete header block. */
static void conn_request(struct prom_http *s, struct prom_http_conn *c)
{
	char *line = c->req, *eol = strpbrk(line, "\r\n"), *target, *version, *q;
	size_t mlen;
	bool head;

	if (eol)
		*eol = 0;
	target = strchr(line, ' ');
	if (!target)
		goto bad;
	mlen = target - line;
	for (size_t i = 0; i < mlen; i++)
		if (!token_char(line[i]))
			goto bad;
	*target++ = 0;
	version = strchr(target, ' ');
	if (!version || mlen == 0 || target[0] != '/')
		goto bad;
	*version++ = 0;
	if (strcmp(version, "HTTP/1.1") && strcmp(version, "HTTP/1.0"))
		goto bad;
	head = !strcmp(line, "HEAD");
	if (strcmp(line, "GET") && !head) {
		conn_respond(s, c, 405, "Method Not Allowed", "Allow: GET, HEAD\r\n", false);
		return;
	}
	q = strchr(target, '?');
	if (q)
		*q = 0;
	if (strcmp(target, "/metrics")) {
		conn_respond(s, c, 404, "Not Found", NULL, head);
		return;
	}
	conn_respond(s, c, 200, "OK", NULL, head);
	return;
bad:
	conn_respond(s, c, 400, "Bad Request", NULL, false);
}

static bool header_done(const struct prom_http_conn *c)
{
	return memmem(c->req, c->rlen, "\r\n\r\n", 4) || memmem(c->req, c->rlen, "\n\n", 2);
}

static void conn_read(struct prom_http *s, struct prom_http_conn *c)
{
	for (;;) {
		ssize_t n;

		if (c->out) {
			/* answered: what the client still sends is thrown away */
			char junk[1024];

			n = recv(c->fd, junk, sizeof(junk), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				conn_close(s, c);
			if (n <= 0)
				return;
			continue;
		}
		n = recv(c->fd, c->req + c->rlen, PROM_HTTP_REQ_MAX - 1 - c->rlen, MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			conn_close(s, c);
			return;
		}
		c->rlen += n;
		c->req[c->rlen] = 0;
		if (header_done(c)) {
			conn_request(s, c);
			return;
		}
		if (c->rlen == PROM_HTTP_REQ_MAX - 1) {
			conn_respond(s, c, 431, "Request Header Fields Too Large", NULL, false);
			return;
		}
	}
}

static void conn_write(struct prom_http *s, struct prom_http_conn *c)
{
	while (c->ooff < c->olen) {
		ssize_t n = send(c->fd, c->out + c->ooff, c->olen - c->ooff,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			conn_close(s, c);
			return;
		}
		c->ooff += n;
	}
	/* all sent: wait for the client to close, so that closing first with
	 * its bytes unread cannot reset the connection under the response */
	shutdown(c->fd, SHUT_WR);
	free(c->out);
	c->out = malloc(1);
	c->olen = c->ooff = 0;
	/* done: a short wait for that close, and the first slot to give up */
	if (c->deadline_ns > s->now_ns + PROM_HTTP_REQ_TIMEOUT_NS)
		c->deadline_ns = s->now_ns + PROM_HTTP_REQ_TIMEOUT_NS;
	if (!c->out)
		conn_close(s, c);
	else
		conn_watch(s, c, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_MOD);
}

static bool conn_done(const struct prom_http_conn *c)
{
	return c->out && c->olen == 0;
}

/* 0: answered, 1: no complete request yet, 2: its answer being sent */
static int evict_rank(const struct prom_http_conn *c)
{
	if (conn_done(c))
		return 0;
	return c->out ? 2 : 1;
}

/* A free slot, or the one a new connection takes: the lowest rank, the
 * oldest of it. */
static struct prom_http_conn *slot_for_new(struct prom_http *s)
{
	struct prom_http_conn *victim = NULL;

	for (int i = 0; i < PROM_HTTP_MAX_CONNS; i++) {
		struct prom_http_conn *c = &s->conns[i];

		if (c->fd < 0)
			return c;
		if (!victim || evict_rank(c) < evict_rank(victim) ||
		    (evict_rank(c) == evict_rank(victim) && c->accepted_ns < victim->accepted_ns))
			victim = c;
	}
	/* an answered client's request is all read: what else it sent is
	 * drained, so that the close cannot reset the answer under it */
	if (conn_done(victim))
		conn_read(s, victim);
	conn_close(s, victim);
	s->evicted++;
	return victim;
}

static void do_accept(struct prom_http *s, uint64_t now_ns)
{
	for (;;) {
		int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct prom_http_conn *c;

		if (fd < 0)
			return;
		c = slot_for_new(s);
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->accepted_ns = now_ns;
		c->deadline_ns = now_ns + PROM_HTTP_REQ_TIMEOUT_NS;
		if (conn_watch(s, c, EPOLLIN | EPOLLRDHUP, EPOLL_CTL_ADD)) {
			conn_close(s, c);
			continue;
		}
		/* a client that sent its request with the handshake is answered
		 * now, before later connections in the queue could evict it */
		conn_read(s, c);
	}
}

int prom_http_attach(struct prom_http *s, int ep, uint64_t tag)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = tag };

	s->ep = ep;
	s->tag = tag;
	return epoll_ctl(ep, EPOLL_CTL_ADD, s->lfd, &ev) ? -errno : 0;
}

bool prom_http_owns(const struct prom_http *s, uint64_t tag)
{
	return s->lfd >= 0 && tag >= s->tag && tag <= s->tag + PROM_HTTP_MAX_CONNS;
}

void prom_http_event(struct prom_http *s, uint64_t tag, uint32_t events, uint64_t now_ns)
{
	struct prom_http_conn *c;

	s->now_ns = now_ns;
	if (tag == s->tag) {
		do_accept(s, now_ns);
		return;
	}
	c = &s->conns[tag - s->tag - 1];
	if (c->fd < 0)
		return;
	if (events & EPOLLERR) {
		conn_close(s, c);
		return;
	}
	if (c->out && c->ooff < c->olen) {
		conn_write(s, c);
		return;
	}
	if (events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP))
		conn_read(s, c);
}

void prom_http_sweep(struct prom_http *s, uint64_t now_ns)
{
	for (int i = 0; i < PROM_HTTP_MAX_CONNS; i++) {
		struct prom_http_conn *c = &s->conns[i];

		if (c->fd < 0 || now_ns < c->deadline_ns)
			continue;
		s->timed_out += !conn_done(c);
		conn_close(s, c);
	}
}

int prom_http_set_body(struct prom_http *s, const char *body, size_t len)
{
	char *b = malloc(len ? len : 1);

	if (!b)
		return -ENOMEM;
	memcpy(b, body, len);
	free(s->body);
	s->body = b;
	s->blen = len;
	return 0;
}

void prom_http_close(struct prom_http *s)
{
	for (int i = 0; i < PROM_HTTP_MAX_CONNS; i++)
		conn_close(s, &s->conns[i]);
	if (s->lfd >= 0) {
		if (s->ep >= 0)
			epoll_ctl(s->ep, EPOLL_CTL_DEL, s->lfd, NULL);
		close(s->lfd);
	}
	s->lfd = -1;
	free(s->body);
	s->body = NULL;
	s->blen = 0;
}
