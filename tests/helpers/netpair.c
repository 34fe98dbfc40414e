// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * netpair: two known processes that move exactly known bytes in exactly
 * known calls over loopback, the truth for socketsnoop's tests.
 *
 *   netpair MODE [-n BYTES] [-m CALLS] [-k BYTES] [-l CALLS] [-p PEERS]
 *                [-C COMM] [-S COMM] [-w MS] [-x CONNS] [-W FILE]
 *
 * MODE: tcp4 tcp6 udp4 udp6 (connected UDP client), udpu4 udpu6
 * (unconnected client: sendto to PEERS server sockets, M datagrams each),
 * many4 (X short TCP connections of 10 bytes each way).
 * The parent is the server, the forked child the client. The client sends
 * BYTES in CALLS send calls (to each peer), the server answers with -k
 * BYTES in -l CALLS (per peer). -w: the client holds its connection this
 * long before sending. -C/-S: comm names (may hold any bytes: \xHH).
 * -W FILE: wait until FILE exists before the client starts.
 * Prints "server pid=P ports=A[,B...]", "client pid=P port=A",
 * "client_result rx_bytes=.. rx_calls=.. tx_calls=.. duration_ns=..",
 * "server_result rx_bytes=.. rx_calls=.. tx_calls=..".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PEERS 8

static int family = AF_INET, stream = 1, connected = 1, npeers = 1;
static const char *go_file;
static long bytes = 65536, calls = 16, rbytes = 4096, rcalls = 2, hold_ms = 0, conns = 0;
static int lfd[MAX_PEERS];
static unsigned short ports[MAX_PEERS];
static char buf[1 << 16];

static void die(const char *what)
{
	fprintf(stderr, "netpair: %s: %s\n", what, strerror(errno));
	exit(1);
}

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* "a\x22b" -> bytes, for hostile comm names */
static void set_comm(const char *s)
{
	char name[16] = "";
	size_t n = 0;

	while (*s && n < sizeof(name) - 1) {
		if (s[0] == '\\' && s[1] == 'x' && s[2] && s[3]) {
			char hex[3] = { s[2], s[3], 0 };

			name[n++] = (char)strtol(hex, NULL, 16);
			s += 4;
		} else if (s[0] == '\\' && s[1] == 'n') {
			name[n++] = '\n';
			s += 2;
		} else {
			name[n++] = *s++;
		}
	}
	name[n] = 0;
	if (prctl(PR_SET_NAME, name))
		die("prctl");
}

static socklen_t loopback(struct sockaddr_storage *ss, unsigned short port)
{
	memset(ss, 0, sizeof(*ss));
	if (family == AF_INET) {
		struct sockaddr_in *s = (void *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		return sizeof(*s);
	}
	struct sockaddr_in6 *s6 = (void *)ss;

	s6->sin6_family = AF_INET6;
	s6->sin6_port = htons(port);
	s6->sin6_addr = in6addr_loopback;
	return sizeof(*s6);
}

static unsigned short port_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (void *)&ss, &len))
		die("getsockname");
	return ntohs(family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
				       : ((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* big buffers; and a peer that died never leaves the other end waiting */
static void big_buffers(int fd)
{
	struct timeval tv = { .tv_sec = 20 };
	int sz = 4 << 20;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* one call moving exactly len bytes, or exit */
static void send_exact(int fd, size_t len, const struct sockaddr_storage *to, socklen_t tolen)
{
	ssize_t n = to ? sendto(fd, buf, len, 0, (const void *)to, tolen) : send(fd, buf, len, 0);

	if (n != (ssize_t)len)
		die("send");
}

static void send_all(int fd, long total, long ncalls, const struct sockaddr_storage *to,
		     socklen_t tolen)
{
	long chunk = total / ncalls;

	for (long i = 0; i < ncalls; i++)
		send_exact(fd, i == ncalls - 1 ? total - chunk * (ncalls - 1) : chunk, to, tolen);
}

/* stream: read until want bytes came; dgram: want datagrams */
static void recv_count(int fd, long want_bytes, long want_dgrams, long *rx, long *rxc,
		       struct sockaddr_storage *from, socklen_t *fromlen)
{
	while (stream ? *rx < want_bytes : want_dgrams-- > 0) {
		ssize_t n;

		if (from) {
			*fromlen = sizeof(*from);
			n = recvfrom(fd, buf, sizeof(buf), 0, (void *)from, fromlen);
		} else {
			size_t len = sizeof(buf);

			if (stream && (size_t)(want_bytes - *rx) < len)
				len = want_bytes - *rx;
			n = recv(fd, buf, len, 0);
		}
		if (n < 0)
			die("recv");
		if (n == 0)
			break;
		*rx += n;
		(*rxc)++;
	}
}

static void client(const char *comm)
{
	struct sockaddr_storage to;
	socklen_t tolen;
	long rx = 0, rxc = 0, txc = 0;
	unsigned long long t0 = now_ns();
	int fd = socket(family, stream ? SOCK_STREAM : SOCK_DGRAM, 0);

	if (comm)
		set_comm(comm);
	if (fd < 0)
		die("socket");
	big_buffers(fd);
	if (connected) {
		tolen = loopback(&to, ports[0]);
		if (connect(fd, (void *)&to, tolen))
			die("connect");
	} else {
		/* bind first so the port is known before the first datagram */
		tolen = loopback(&to, 0);
		if (bind(fd, (void *)&to, tolen))
			die("bind");
	}
	printf("client pid=%d port=%u\n", getpid(), port_of(fd));
	fflush(stdout);
	if (hold_ms)
		usleep(hold_ms * 1000);
	for (int p = 0; p < npeers; p++) {
		tolen = loopback(&to, ports[p]);
		send_all(fd, bytes, calls, connected ? NULL : &to, tolen);
		txc += calls;
	}
	if (stream)
		shutdown(fd, SHUT_WR);
	/* unconnected: ask for each datagram's source */
	recv_count(fd, rbytes * npeers, rcalls * npeers, &rx, &rxc, connected ? NULL : &to, &tolen);
	if (stream) {
		/* the server's close */
		ssize_t n = recv(fd, buf, sizeof(buf), 0);

		if (n != 0)
			die("expected EOF");
	}
	close(fd);
	printf("client_result rx_bytes=%ld rx_calls=%ld tx_calls=%ld duration_ns=%llu\n",
	       rx, rxc, txc, now_ns() - t0);
	fflush(stdout);
	exit(0);
}

static void server(void)
{
	long rx = 0, rxc = 0, txc = 0;

	for (int p = 0; p < npeers; p++) {
		struct sockaddr_storage from;
		socklen_t fromlen;
		int fd = lfd[p];

		if (stream) {
			fd = accept(lfd[p], NULL, NULL);
			if (fd < 0)
				die("accept");
			recv_count(fd, bytes, 0, &rx, &rxc, NULL, NULL);
			send_all(fd, rbytes, rcalls, NULL, 0);
			txc += rcalls;
			if (recv(fd, buf, sizeof(buf), 0) != 0)
				die("expected EOF");
			close(fd);
			continue;
		}
		recv_count(fd, 0, calls, &rx, &rxc, &from, &fromlen);
		/* the answer goes to the source of the datagrams */
		send_all(fd, rbytes, rcalls, &from, fromlen);
		txc += rcalls;
	}
	printf("server_result rx_bytes=%ld rx_calls=%ld tx_calls=%ld\n", rx, rxc, txc);
	fflush(stdout);
}

/* X short connections, 10 bytes each way, one after the other */
static void many(void)
{
	struct sockaddr_storage to;
	socklen_t tolen = loopback(&to, ports[0]);
	pid_t pid = fork();

	if (pid < 0)
		die("fork");
	if (pid == 0) {
		for (long i = 0; i < conns; i++) {
			int fd = socket(family, SOCK_STREAM, 0);

			if (fd < 0 || connect(fd, (void *)&to, tolen))
				die("connect");
			send_exact(fd, 10, NULL, 0);
			if (recv(fd, buf, 10, MSG_WAITALL) != 10)
				die("recv");
			close(fd);
		}
		exit(0);
	}
	for (long i = 0; i < conns; i++) {
		int fd = accept(lfd[0], NULL, NULL);

		if (fd < 0 || recv(fd, buf, 10, MSG_WAITALL) != 10)
			die("accept");
		send_exact(fd, 10, NULL, 0);
		recv(fd, buf, sizeof(buf), 0);
		close(fd);
	}
	waitpid(pid, NULL, 0);
	printf("many_result conns=%ld\n", conns);
}

static void setup_mode(const char *mode)
{
	if (!strncmp(mode, "many", 4)) {
		conns = conns ? conns : 100;
		mode += 4;
	} else if (!strncmp(mode, "tcp", 3)) {
		mode += 3;
	} else if (!strncmp(mode, "udpu", 4)) {
		stream = 0;
		connected = 0;
		mode += 4;
	} else if (!strncmp(mode, "udp", 3)) {
		stream = 0;
		mode += 3;
	} else {
		fprintf(stderr, "netpair: unknown mode %s\n", mode);
		exit(2);
	}
	family = !strcmp(mode, "6") ? AF_INET6 : AF_INET;
}

int main(int argc, char **argv)
{
	const char *ccomm = "ss-client", *scomm = "ss-server", *mode;
	int opt;
	pid_t pid;

	if (argc < 2) {
		fprintf(stderr, "usage: netpair MODE [-n BYTES] [-m CALLS] [-k BYTES] [-l CALLS] [-p PEERS] [-C COMM] [-S COMM] [-w MS] [-x CONNS] [-W FILE]\n");
		return 2;
	}
	mode = argv[1];
	optind = 2;
	while ((opt = getopt(argc, argv, "n:m:k:l:p:C:S:w:x:W:")) != -1) {
		switch (opt) {
		case 'n': bytes = atol(optarg); break;
		case 'm': calls = atol(optarg); break;
		case 'k': rbytes = atol(optarg); break;
		case 'l': rcalls = atol(optarg); break;
		case 'p': npeers = atoi(optarg); break;
		case 'C': ccomm = optarg; break;
		case 'S': scomm = optarg; break;
		case 'w': hold_ms = atol(optarg); break;
		case 'x': conns = atol(optarg); break;
		case 'W': go_file = optarg; break;
		default: return 2;
		}
	}
	setup_mode(mode);
	if (npeers < 1 || npeers > MAX_PEERS || calls < 1 || rcalls < 1 || bytes < calls ||
	    rbytes < rcalls || bytes / calls > (long)sizeof(buf) || rbytes / rcalls > (long)sizeof(buf)) {
		fprintf(stderr, "netpair: bad sizes\n");
		return 2;
	}
	if (connected || conns)
		npeers = stream || connected ? 1 : npeers;
	memset(buf, 'x', sizeof(buf));
	set_comm(scomm);
	for (int p = 0; p < npeers; p++) {
		struct sockaddr_storage ss;
		socklen_t len = loopback(&ss, 0);
		int one = 1;

		lfd[p] = socket(family, stream ? SOCK_STREAM : SOCK_DGRAM, 0);
		if (lfd[p] < 0)
			die("socket");
		setsockopt(lfd[p], SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		big_buffers(lfd[p]);
		if (bind(lfd[p], (void *)&ss, len) || (stream && listen(lfd[p], 128)))
			die("bind");
		ports[p] = port_of(lfd[p]);
	}
	printf("server pid=%d ports=", getpid());
	for (int p = 0; p < npeers; p++)
		printf("%s%u", p ? "," : "", ports[p]);
	printf("\n");
	fflush(stdout);
	/* -W: the test moves the server, then starts a tool, then says go */
	while (go_file && access(go_file, F_OK))
		usleep(10000);
	if (conns) {
		many();
		return 0;
	}
	pid = fork();
	if (pid < 0)
		die("fork");
	if (pid == 0)
		client(ccomm);
	server();
	if (waitpid(pid, &opt, 0) < 0 || !WIFEXITED(opt) || WEXITSTATUS(opt))
		return 1;
	return 0;
}
