// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rrloop: a loopback TCP request/response loop of small messages, the
 * workload of socketsnoop's benchmark. A forked server echoes each
 * message; the client sends one, waits for the answer, and after MS
 * milliseconds prints the round trips per second.
 *
 *   rrloop [MS [SIZE]]        (default 1000 ms, 64 bytes)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int full(int fd, char *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, buf + got, len - got, 0);

		if (n <= 0)
			return -1;
		got += n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 1000;
	size_t size = argc > 2 ? (size_t)atol(argv[2]) : 64;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	char buf[4096];
	int lfd, fd, one = 1;
	long n = 0;
	double t0, end;
	pid_t pid;

	if (ms <= 0 || !size || size > sizeof(buf)) {
		fprintf(stderr, "usage: rrloop [MS [SIZE <= 4096]]\n");
		return 2;
	}
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (void *)&a, sizeof(a)) || listen(lfd, 1) ||
	    getsockname(lfd, (void *)&a, &len)) {
		perror("rrloop: listen");
		return 1;
	}
	pid = fork();
	if (pid == 0) {
		fd = accept(lfd, NULL, NULL);
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while (!full(fd, buf, size))
			if (send(fd, buf, size, 0) != (ssize_t)size)
				break;
		_exit(0);
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (void *)&a, sizeof(a))) {
		perror("rrloop: connect");
		kill(pid, SIGKILL);
		return 1;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	t0 = now_s();
	end = t0 + ms / 1000.0;
	do {
		for (int i = 0; i < 64; i++, n++)
			if (send(fd, buf, size, 0) != (ssize_t)size || full(fd, buf, size)) {
				perror("rrloop");
				return 1;
			}
	} while (now_s() < end);
	printf("%.0f\n", n / (now_s() - t0));
	close(fd);
	waitpid(pid, NULL, 0);
	return 0;
}
