// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * xhostnet: exactly known bytes over TCP between two "hosts" (network
 * namespaces), the truth for topograph's graph across hosts.
 *
 *   xhostnet serve PORT CONNS     accept CONNS connections, one at a time:
 *                                 read to EOF, answer rx/100 bytes, close
 *   xhostnet send ADDR PORT BYTES connect, send BYTES in 4096-byte writes,
 *                                 shut the write side, read the answer to EOF
 *
 * serve prints "listening port=P", then per connection
 * "conn pid=P local=A:P peer=A:P rx=N tx=M"; send prints
 * "sent pid=P local=A:P peer=A:P tx=N rx=M".
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void name(int fd, bool peer, char *buf, size_t len)
{
	struct sockaddr_in a;
	socklen_t l = sizeof(a);
	char ip[INET_ADDRSTRLEN];

	if ((peer ? getpeername : getsockname)(fd, (struct sockaddr *)&a, &l))
		die("getsockname");
	inet_ntop(AF_INET, &a.sin_addr, ip, sizeof(ip));
	snprintf(buf, len, "%s:%u", ip, ntohs(a.sin_port));
}

static unsigned long long drain(int fd)
{
	char buf[4096];
	unsigned long long n = 0;
	ssize_t r;

	while ((r = read(fd, buf, sizeof(buf))) > 0)
		n += r;
	if (r < 0)
		die("read");
	return n;
}

static void fill(int fd, unsigned long long n)
{
	static char buf[4096];

	while (n) {
		size_t c = n < sizeof(buf) ? n : sizeof(buf);
		ssize_t w = write(fd, buf, c);

		if (w <= 0)
			die("write");
		n -= w;
	}
}

static int serve(int port, int conns)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	char l[64], p[64];

	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 8))
		die("listen");
	printf("listening port=%d\n", port);
	fflush(stdout);
	while (conns-- > 0) {
		int c = accept(s, NULL, NULL);
		unsigned long long rx;

		if (c < 0)
			die("accept");
		name(c, false, l, sizeof(l));
		name(c, true, p, sizeof(p));
		rx = drain(c);
		fill(c, rx / 100);
		printf("conn pid=%d local=%s peer=%s rx=%llu tx=%llu\n", getpid(), l, p, rx, rx / 100);
		fflush(stdout);
		close(c);
	}
	return 0;
}

static int send_to(const char *addr, int port, unsigned long long bytes)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	int s = socket(AF_INET, SOCK_STREAM, 0);
	unsigned long long rx;
	char l[64], p[64];

	if (s < 0 || inet_pton(AF_INET, addr, &a.sin_addr) != 1 ||
	    connect(s, (struct sockaddr *)&a, sizeof(a)))
		die("connect");
	name(s, false, l, sizeof(l));
	name(s, true, p, sizeof(p));
	fill(s, bytes);
	if (shutdown(s, SHUT_WR))
		die("shutdown");
	rx = drain(s);
	printf("sent pid=%d local=%s peer=%s tx=%llu rx=%llu\n", getpid(), l, p, bytes, rx);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "serve"))
		return serve(atoi(argv[2]), atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "send"))
		return send_to(argv[2], atoi(argv[3]), strtoull(argv[4], NULL, 10));
	fprintf(stderr, "usage: xhostnet serve PORT CONNS | send ADDR PORT BYTES\n");
	return 2;
}
