// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * topostages: a known communication topology for topograph's tests and demo.
 *
 *	topostages DIR BYTES CHUNK SIDE_MSGS SIDE_SIZE STARVED_CPU STARVED_NICE OTHER_CPU
 *
 * Three processes:
 *   producer    writes BYTES into the FIFO DIR/topo.fifo in CHUNK-byte writes
 *   transformer reads the FIFO and sends every byte over TCP (loopback) to
 *               the consumer, after some CPU work on it (bytes unchanged);
 *               pinned to STARVED_CPU (the test loads that CPU with busy
 *               loops) at nice STARVED_NICE, so that it waits for that CPU
 *   consumer    reads the BYTES, answers the transformer with an 8-byte ack,
 *               then sends SIDE_MSGS messages of SIDE_SIZE bytes to the
 *               producer over the unix socket DIR/topo.sock (the side channel)
 * The producer and the consumer are pinned to OTHER_CPU (-1: not pinned).
 *
 * Prints "ready PRODUCER_PID TRANSFORMER_PID CONSUMER_PID port PORT" once
 * every stage waits. SIGUSR1 to the topostages process starts them all (by
 * signals: no channel that a tracer would see). Each stage prints its
 * counts ("producer writes=N bytes=B side_bytes=S", "transformer reads=N
 * sends=M bytes=B", "consumer bytes=B side_sends=N"), then "done" when all
 * ended well ("failed" otherwise). SIGTERM ends everything.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define TRANSFORM_PASSES 8

static char fifo_path[256], sock_path[100];
static long total, chunk, side_msgs, side_size;
static int port;

static void die(const char *what)
{
	fprintf(stderr, "topostages: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void pin(int cpu)
{
	cpu_set_t set;

	if (cpu < 0)
		return;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

/* blocks until SIGUSR1 (the signal mask is inherited, blocked) */
static void wait_go(void)
{
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	if (sigwait(&set, &sig))
		die("sigwait");
}

static void write_all(int fd, const char *buf, size_t n, long *calls)
{
	while (n) {
		ssize_t w = write(fd, buf, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			die("write");
		buf += w;
		n -= w;
		(*calls)++;
	}
}

/* one read, again when a signal cut it short; 0 at the end, and an error
 * ends the stage (what: the channel read) */
static ssize_t read_once(int fd, char *buf, size_t n, const char *what)
{
	for (;;) {
		ssize_t r = read(fd, buf, n);

		if (r >= 0)
			return r;
		if (errno != EINTR)
			die(what);
	}
}

static long read_exact(int fd, char *buf, long n, long *calls)
{
	long got = 0;

	while (got < n) {
		ssize_t r = read_once(fd, buf + got, n - got, "read");

		if (!r)
			break;
		got += r;
		(*calls)++;
	}
	return got;
}

static void producer(int unix_l)
{
	char *buf = malloc(chunk), side[65536];
	long writes = 0, reads = 0, side_got;
	int fd, c;

	memset(buf, 'p', chunk);
	wait_go();
	fd = open(fifo_path, O_WRONLY);
	if (fd < 0)
		die("open fifo");
	for (long sent = 0; sent < total; sent += chunk) {
		long n = total - sent < chunk ? total - sent : chunk;
		long one = 0;

		write_all(fd, buf, n, &one);
		writes++;
	}
	close(fd);
	c = accept(unix_l, NULL, NULL);
	if (c < 0)
		die("accept unix");
	side_got = 0;
	for (;;) {
		ssize_t r = read(c, side, sizeof(side));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		side_got += r;
		reads++;
	}
	printf("producer writes=%ld bytes=%ld side_bytes=%ld\n", writes, total, side_got);
	fflush(stdout);
	exit(side_got == side_msgs * side_size ? 0 : 1);
}

/* CPU work per byte (and the same bytes out): the stage needs the CPU that
 * the test keeps busy, so it waits in the run queue */
static void transform(char *buf, ssize_t n)
{
	for (int pass = 0; pass < 2 * TRANSFORM_PASSES; pass++)
		for (ssize_t i = 0; i < n; i++)
			((volatile char *)buf)[i] ^= 0x5a;
}

static void transformer(void)
{
	static char buf[65536];
	long reads = 0, sends = 0, moved = 0;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port) };
	char ack[8];
	int in, out;

	wait_go();
	in = open(fifo_path, O_RDONLY);
	if (in < 0)
		die("open fifo");
	out = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (out < 0 || connect(out, (struct sockaddr *)&a, sizeof(a)))
		die("connect tcp");
	for (;;) {
		ssize_t r = read_once(in, buf, sizeof(buf), "read fifo");

		if (!r)
			break;
		reads++;
		moved += r;
		transform(buf, r);
		write_all(out, buf, r, &sends);
	}
	if (read_exact(out, ack, sizeof(ack), &reads) != sizeof(ack))
		die("ack");
	close(out);
	printf("transformer reads=%ld sends=%ld bytes=%ld\n", reads, sends, moved);
	fflush(stdout);
	exit(moved == total ? 0 : 1);
}

static void consumer(int tcp_l)
{
	static char buf[65536];
	struct sockaddr_un u = { .sun_family = AF_UNIX };
	long reads = 0, sends = 0, got;
	char *side = malloc(side_size);
	int c, s;

	memset(side, 's', side_size);
	wait_go();
	c = accept(tcp_l, NULL, NULL);
	if (c < 0)
		die("accept tcp");
	for (got = 0; got < total;) {
		size_t want = total - got < (long)sizeof(buf) ? (size_t)(total - got) : sizeof(buf);
		ssize_t r = read_once(c, buf, want, "read tcp");

		if (!r)
			die("read tcp");
		got += r;
		reads++;
	}
	write_all(c, "ACK12345", 8, &sends);
	close(c);
	s = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(u.sun_path, sizeof(u.sun_path), "%s", sock_path);
	if (s < 0 || connect(s, (struct sockaddr *)&u, sizeof(u)))
		die("connect unix");
	sends = 0;
	for (long i = 0; i < side_msgs; i++) {
		long one = 0;

		write_all(s, side, side_size, &one);
		sends++;
	}
	close(s);
	printf("consumer bytes=%ld side_sends=%ld\n", got, sends);
	fflush(stdout);
	exit(0);
}

static pid_t stage(const char *name, int cpu, int nice_val, void (*fn)(int), int arg)
{
	pid_t p = fork();

	if (p < 0)
		die("fork");
	if (p)
		return p;
	prctl(PR_SET_NAME, name);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	pin(cpu);
	if (nice_val && setpriority(PRIO_PROCESS, 0, nice_val))
		die("setpriority");
	fn(arg);
	exit(0);
}

static void run_transformer(int unused)
{
	transformer();
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	struct sockaddr_un u = { .sun_family = AF_UNIX };
	socklen_t alen = sizeof(a);
	pid_t pids[3];
	int tcp_l, unix_l, starved, starved_nice, other, ok = 1;
	sigset_t set;

	if (argc != 9) {
		fprintf(stderr, "usage: topostages DIR BYTES CHUNK SIDE_MSGS SIDE_SIZE STARVED_CPU STARVED_NICE OTHER_CPU\n");
		return 2;
	}
	snprintf(fifo_path, sizeof(fifo_path), "%s/topo.fifo", argv[1]);
	if (strlen(argv[1]) > 80) {
		fprintf(stderr, "topostages: DIR is too long for a unix socket path\n");
		return 2;
	}
	snprintf(sock_path, sizeof(sock_path), "%s/topo.sock", argv[1]);
	total = atol(argv[2]);
	chunk = atol(argv[3]);
	side_msgs = atol(argv[4]);
	side_size = atol(argv[5]);
	starved = atoi(argv[6]);
	starved_nice = atoi(argv[7]);
	other = atoi(argv[8]);
	if (total < 1 || chunk < 1 || side_msgs < 1 || side_size < 1 || side_size > 65536)
		return 2;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	unlink(fifo_path);
	unlink(sock_path);
	if (mkfifo(fifo_path, 0600))
		die("mkfifo");
	/* the listeners exist before tracing starts: no data moves yet */
	tcp_l = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (tcp_l < 0 || bind(tcp_l, (struct sockaddr *)&a, sizeof(a)) || listen(tcp_l, 1) ||
	    getsockname(tcp_l, (struct sockaddr *)&a, &alen))
		die("tcp listener");
	port = ntohs(a.sin_port);
	unix_l = socket(AF_UNIX, SOCK_STREAM, 0);
	snprintf(u.sun_path, sizeof(u.sun_path), "%s", sock_path);
	if (unix_l < 0 || bind(unix_l, (struct sockaddr *)&u, sizeof(u)) || listen(unix_l, 1))
		die("unix listener");
	pids[0] = stage("producer", other, 0, producer, unix_l);
	pids[1] = stage("transformer", starved, starved_nice, run_transformer, 0);
	pids[2] = stage("consumer", other, 0, consumer, tcp_l);
	close(tcp_l);
	close(unix_l);
	printf("ready %d %d %d port %d\n", pids[0], pids[1], pids[2], port);
	fflush(stdout);
	wait_go();
	for (int i = 0; i < 3; i++)
		kill(pids[i], SIGUSR1);
	for (int i = 0; i < 3; i++) {
		int st;

		if (waitpid(pids[i], &st, 0) != pids[i] || !WIFEXITED(st) || WEXITSTATUS(st))
			ok = 0;
	}
	unlink(fifo_path);
	unlink(sock_path);
	printf(ok ? "done\n" : "failed\n");
	return ok ? 0 : 1;
}
