// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * slowclients: hostile clients of a --listen server, for fleet.bats.
 *
 *   slowclients PORT IDLE SLOW SECONDS
 *
 * Holds IDLE connections to 127.0.0.1:PORT that never send a byte and SLOW
 * ones that send a request one byte every 100 ms and never finish it
 * (slowloris: "GET /metrics HTTP/1.1\r\nX-Slow: aaaa..."). A connection the
 * server closes is opened again at once, so the pressure lasts SECONDS
 * (or until SIGTERM). Prints "ready PID" once all are connected, and at
 * the end "reopened N" (connections the server closed: evicted or timed
 * out), "slow_bytes N" and "seconds S" (how long it ran).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CLIENTS 4096

static const char slow_req[] = "GET /metrics HTTP/1.1\r\nX-Slow: ";
static struct sockaddr_in addr;
static volatile sig_atomic_t stop;

struct client {
	int fd;
	int slow;
	size_t sent;		/* bytes of the slow request sent */
};

static void on_term(int sig)
{
	stop = 1;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int open_one(struct client *c)
{
	c->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	c->sent = 0;
	if (c->fd < 0)
		return -1;
	if (connect(c->fd, (struct sockaddr *)&addr, sizeof(addr))) {
		close(c->fd);
		c->fd = -1;
		return -1;
	}
	return 0;
}

/* the server closed it (EOF or reset): anything readable is the end,
 * since these clients never complete a request */
static int closed_by_server(const struct client *c)
{
	char buf[512];
	ssize_t n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR) || n > 0;
}

int main(int argc, char **argv)
{
	static struct client cl[MAX_CLIENTS];
	static struct pollfd pfd[MAX_CLIENTS];
	long reopened = 0, slow_bytes = 0;
	int idle, slow, n;
	double start, end, next_slow;

	if (argc != 5) {
		fprintf(stderr, "usage: slowclients PORT IDLE SLOW SECONDS\n");
		return 2;
	}
	idle = atoi(argv[2]);
	slow = atoi(argv[3]);
	n = idle + slow;
	if (n <= 0 || n > MAX_CLIENTS) {
		fprintf(stderr, "slowclients: 1 to %d clients\n", MAX_CLIENTS);
		return 2;
	}
	addr.sin_family = AF_INET;
	addr.sin_port = htons(atoi(argv[1]));
	inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	signal(SIGPIPE, SIG_IGN);
	for (int i = 0; i < n; i++) {
		cl[i].slow = i >= idle;
		if (open_one(&cl[i])) {
			perror("slowclients: connect");
			return 1;
		}
	}
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	start = now_s();
	end = start + atof(argv[4]);
	next_slow = now_s();
	while (!stop && now_s() < end) {
		for (int i = 0; i < n; i++) {
			pfd[i].fd = cl[i].fd;
			pfd[i].events = POLLIN | POLLRDHUP;
			pfd[i].revents = 0;
		}
		poll(pfd, n, 20);
		for (int i = 0; i < n; i++) {
			if (cl[i].fd >= 0 && !pfd[i].revents)
				continue;
			if (cl[i].fd >= 0 && !closed_by_server(&cl[i]))
				continue;
			if (cl[i].fd >= 0) {
				close(cl[i].fd);
				reopened++;
			}
			open_one(&cl[i]);	/* -1: tried again next round */
		}
		if (now_s() < next_slow)
			continue;
		next_slow += 0.1;
		for (int i = 0; i < n; i++) {
			struct client *c = &cl[i];
			char ch;

			if (!c->slow || c->fd < 0)
				continue;
			ch = c->sent < sizeof(slow_req) - 1 ? slow_req[c->sent] : 'a';
			if (send(c->fd, &ch, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1) {
				c->sent++;
				slow_bytes++;
			}
		}
	}
	printf("reopened %ld\nslow_bytes %ld\nseconds %.1f\n", reopened, slow_bytes, now_s() - start);
	return 0;
}
