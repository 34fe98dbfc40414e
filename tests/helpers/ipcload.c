// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ipcload: moves known bytes and message counts through one IPC mechanism
 * between known processes, and prints the truth, one line per channel
 * side, before it ends:
 *
 *	truth KIND CHANNEL write|read PID COMM MSGS BYTES
 *
 * (MSGS of the read side: the calls this helper made.) Usage:
 *
 *	ipcload pipe N SIZE                   one writer, one reader
 *	ipcload fifo PATH WRITERS N SIZE      WRITERS writers, one reader
 *	ipcload unix-stream ADDR CLIENTS N SIZE   a server and CLIENTS clients,
 *	                                      each sends N x SIZE, the server
 *	                                      answers N x SIZE/2 to each
 *	ipcload unix-dgram ADDR CLIENTS N SIZE    clients connect to a bound
 *	                                      datagram server and send N x SIZE
 *	ipcload unix-sendto ADDR CLIENTS N SIZE   the same without connect():
 *	                                      sendto() (odd clients) and
 *	                                      sendmsg() (even ones) with the address
 *	ipcload unix-seqpacket N SIZE         a socketpair, child to parent
 *	ipcload msq RECEIVERS N SIZE          one sender, RECEIVERS receivers
 *	ipcload mq NAME RECEIVERS N SIZE      the same through a POSIX queue
 *	ipcload eventfd N                     N writes of 8 bytes, one reader
 *	ipcload shm SIZE                      two processes attach and detach
 *	ipcload posix-shm NAME SIZE           the same with shm_open + mmap
 *	                                      (channel /dev/shm/NAME)
 *	ipcload unix-pairs COUNT SIZE         COUNT stream socketpairs made one
 *	                                      after another (unnamed, unbound):
 *	                                      SIZE bytes through each, writers
 *	                                      ipc-w (one per 256 pairs), reader
 *	                                      ipc-r; "done COUNT" at the end
 *	ipcload fifos DIR COUNT SIZE          COUNT FIFOs DIR/fN made one after
 *	                                      another, SIZE bytes written and read
 *	                                      back through each by one process
 *	                                      (ipc-w), removed at the end
 *	ipcload unix-pingpong ROUNDS          a byte back and forth over a unix
 *	                                      socketpair (read/write); prints
 *	                                      "ops/sec N" (for benchmarks)
 *
 * IPCLOAD_HOLD=FILE: pipe's and unix-seqpacket's writer and reader stay,
 * after their truth lines, until FILE exists.
 *
 * ADDR: a path, or @name for the abstract namespace. Processes are named
 * (comm) ipc-w, ipc-r, ipc-srv, ipc-cli1, ... so that tests can check them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <mqueue.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/msg.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bounce.h"

static char *buf;

static void die(const char *what)
{
	fprintf(stderr, "ipcload: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void name(const char *comm)
{
	prctl(PR_SET_NAME, comm, 0, 0, 0);
}

static void truth(const char *kind, const char *ch, const char *dir, pid_t pid,
		  const char *comm, long msgs, long bytes)
{
	printf("truth %s %s %s %d %s %ld %ld\n", kind, ch, dir, (int)pid, comm, msgs, bytes);
	fflush(stdout);
}

/* write all of n bytes in one call (blocking fds return the full count) */
static void put(int fd, size_t n)
{
	ssize_t r = write(fd, buf, n);

	if (r != (ssize_t)n)
		die("write");
}

static long drain(int fd, long *calls)
{
	long total = 0;
	ssize_t r;

	*calls = 0;
	while ((r = read(fd, buf, 65536)) > 0) {
		total += r;
		(*calls)++;
	}
	if (r < 0)
		die("read");
	return total;
}

/* read exactly n bytes */
static long get_exact(int fd, long n, long *calls)
{
	long got = 0;
	ssize_t r;

	while (got < n) {
		r = read(fd, buf, n - got > 65536 ? 65536 : n - got);
		if (r <= 0)
			die("read");
		got += r;
		(*calls)++;
	}
	return got;
}

static int reap(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
		return 1;
	return 0;
}

/* 1 when any of n children failed */
static int reap_all(const pid_t *pids, int n)
{
	int rc = 0;

	for (int i = 0; i < n; i++)
		rc |= reap(pids[i]);
	return rc;
}

/* Forks the i-th of several peers, named prefix1, prefix2, ... (comm):
 * 0 in the child, the child's pid in the parent. */
static pid_t fork_peer(const char *prefix, int i, char comm[16])
{
	pid_t pid = fork();

	if (pid == 0) {
		snprintf(comm, 16, "%s%d", prefix, i + 1);
		name(comm);
	}
	return pid;
}

/* ch (64 bytes): the channel as the tools name an fd's inode, "KIND:[INO]" */
static void inode_name(char ch[64], const char *kind, int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		die("fstat");
	snprintf(ch, 64, "%s:[%lu]", kind, (unsigned long)st.st_ino);
}

/*
 * One way between two processes: a writer (ipc-w, forked) puts n messages
 * of size into wfd, the reader (ipc-r, this process) takes rfd to its end.
 * Each reports its own truth line (KIND, channel ch) through the shared
 * stdout.
 */
/* IPCLOAD_HOLD=FILE: stay until FILE exists (30 s at most), so that a
 * tool can still read a side's /proc after its truth line */
static void hold(void)
{
	const char *f = getenv("IPCLOAD_HOLD");

	for (int i = 0; f && i < 3000 && access(f, F_OK); i++)
		usleep(10000);
}

static int one_way(const char *kind, const char *ch, int rfd, int wfd, long n, long size,
		   void (*put_one)(int fd, size_t n), long (*take_all)(int fd, long *calls))
{
	pid_t w = fork();
	long calls = 0, got;

	if (w == 0) {
		name("ipc-w");
		close(rfd);
		for (long i = 0; i < n; i++)
			put_one(wfd, size);
		truth(kind, ch, "write", getpid(), "ipc-w", n, n * size);
		close(wfd);	/* the reader's end of file, then hold */
		hold();
		_exit(0);
	}
	name("ipc-r");
	close(wfd);
	got = take_all(rfd, &calls);
	truth(kind, ch, "read", getpid(), "ipc-r", calls, got);
	hold();
	return reap(w);
}

static int do_pipe(long n, long size)
{
	int p[2];
	char ch[64];

	if (pipe(p))
		die("pipe");
	inode_name(ch, "pipe", p[0]);
	return one_way("pipe", ch, p[0], p[1], n, size, put, drain);
}

static int do_fifo(const char *path, int writers, long n, long size)
{
	pid_t pids[16], r;
	int keep, fd, rc = 0, sync[2];
	long calls, got;
	char c;

	if (writers < 1 || writers > 16)
		return 2;
	unlink(path);
	if (mkfifo(path, 0600))
		die("mkfifo");
	/* held open for writing, so that the reader sees EOF only once every
	 * writer is done; this process never reads or writes it */
	keep = open(path, O_RDWR);
	if (keep < 0 || pipe(sync))
		die("open fifo");
	r = fork();
	if (r == 0) {
		name("ipc-r");
		close(keep);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			die("open fifo");
		/* the writers start once the reader has the FIFO open: else
		 * they could finish, and the last close drop their bytes */
		close(sync[0]);
		close(sync[1]);
		got = drain(fd, &calls);
		truth("fifo", path, "read", getpid(), "ipc-r", calls, got);
		_exit(0);
	}
	close(sync[1]);
	if (read(sync[0], &c, 1) != 0)
		die("sync");
	close(sync[0]);
	for (int i = 0; i < writers; i++) {
		char comm[16];

		pids[i] = fork_peer("ipc-w", i, comm);
		if (pids[i] == 0) {
			close(keep);
			fd = open(path, O_WRONLY);
			if (fd < 0)
				die("open fifo");
			for (long j = 0; j < n; j++)
				put(fd, size);
			truth("fifo", path, "write", getpid(), comm, n, n * size);
			_exit(0);
		}
	}
	rc |= reap_all(pids, writers);
	close(keep);
	rc |= reap(r);
	unlink(path);
	return rc;
}

static socklen_t unix_addr(const char *a, struct sockaddr_un *sun)
{
	size_t len = strlen(a);

	memset(sun, 0, sizeof(*sun));
	sun->sun_family = AF_UNIX;
	if (len >= sizeof(sun->sun_path))
		len = sizeof(sun->sun_path) - 1;
	memcpy(sun->sun_path, a, len);
	if (a[0] == '@') {
		sun->sun_path[0] = 0;	/* abstract: no trailing NUL in the name */
		return offsetof(struct sockaddr_un, sun_path) + len;
	}
	return offsetof(struct sockaddr_un, sun_path) + len + 1;
}

static int connect_to(const char *addr, int type)
{
	struct sockaddr_un sun;
	socklen_t sl = unix_addr(addr, &sun);
	int fd = socket(AF_UNIX, type, 0);

	if (fd < 0)
		die("socket");
	for (int i = 0; i < 200; i++) {
		if (!connect(fd, (struct sockaddr *)&sun, sl))
			return fd;
		usleep(10000);
	}
	die("connect");
	return -1;
}

static int listen_on(const char *addr, int type)
{
	struct sockaddr_un sun;
	socklen_t sl = unix_addr(addr, &sun);
	int fd = socket(AF_UNIX, type, 0);

	if (addr[0] != '@')
		unlink(addr);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sun, sl))
		die("bind");
	if (type != SOCK_DGRAM && listen(fd, 16))
		die("listen");
	return fd;
}

/* the channel name a test expects: the server's address */
static const char *shown(const char *addr)
{
	return addr;
}

static int do_unix_stream(const char *addr, int clients, long n, long size)
{
	int lfd = listen_on(addr, SOCK_STREAM), rc = 0;
	pid_t pids[16];
	long half = size / 2;

	if (clients < 1 || clients > 16)
		return 2;
	for (int i = 0; i < clients; i++) {
		char comm[16];

		pids[i] = fork_peer("ipc-cli", i, comm);
		if (pids[i] == 0) {
			long calls = 0;
			int fd;

			close(lfd);
			fd = connect_to(addr, SOCK_STREAM);
			for (long j = 0; j < n; j++)
				put(fd, size);
			truth("unix", shown(addr), "write", getpid(), comm, n, n * size);
			get_exact(fd, n * half, &calls);
			truth("unix", shown(addr), "read", getpid(), comm, calls, n * half);
			_exit(0);
		}
	}
	name("ipc-srv");
	for (int i = 0; i < clients; i++) {
		struct ucred peer;
		socklen_t len = sizeof(peer);
		long calls = 0;
		int fd = accept(lfd, NULL, NULL);

		/* the clients connect in any order (under emulation the second
		 * one can come first): the one to wait for is this connection's */
		if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &len))
			die("accept");
		get_exact(fd, n * size, &calls);
		truth("unix", shown(addr), "read", getpid(), "ipc-srv", calls, n * size);
		for (long j = 0; j < n; j++)
			put(fd, half);
		truth("unix", shown(addr), "write", getpid(), "ipc-srv", n, n * half);
		/* keep it open until the client has read the answer */
		if (reap(peer.pid))
			rc = 1;
		close(fd);
	}
	if (addr[0] != '@')
		unlink(addr);
	return rc;
}

/* unconnected: every datagram carries the address */
static void send_to(int fd, const char *addr, long size, bool use_sendmsg)
{
	struct sockaddr_un sun;
	socklen_t sl = unix_addr(addr, &sun);
	struct iovec iov = { .iov_base = buf, .iov_len = size };
	struct msghdr mh = { .msg_name = &sun, .msg_namelen = sl, .msg_iov = &iov, .msg_iovlen = 1 };
	ssize_t r;

	for (int i = 0; i < 200; i++) {
		r = use_sendmsg ? sendmsg(fd, &mh, 0) : sendto(fd, buf, size, 0, (struct sockaddr *)&sun, sl);
		if (r == size)
			return;
		usleep(10000);	/* the server may not be bound yet */
	}
	die("sendto");
}

/* a datagram client: n datagrams of size to addr, connected (send) or
 * not (every datagram carries the address: sendto, or sendmsg for odd i) */
static void dgram_client(const char *addr, int i, long n, long size, bool connected)
{
	int fd = connected ? connect_to(addr, SOCK_DGRAM) : socket(AF_UNIX, SOCK_DGRAM, 0);

	if (fd < 0)
		die("socket");
	for (long j = 0; j < n; j++) {
		if (!connected)
			send_to(fd, addr, size, i % 2);
		else if (send(fd, buf, size, 0) != size)
			die("send");
	}
}

/* clients (each a process of its own) send n datagrams each to one server */
static int do_unix_datagrams(const char *addr, int clients, long n, long size, bool connected)
{
	int sfd = listen_on(addr, SOCK_DGRAM), rc = 0;
	pid_t pids[16];
	long calls = 0, got = 0;
	ssize_t r;

	if (clients < 1 || clients > 16)
		return 2;
	for (int i = 0; i < clients; i++) {
		char comm[16];

		pids[i] = fork_peer("ipc-cli", i, comm);
		if (pids[i] == 0) {
			close(sfd);
			dgram_client(addr, i, n, size, connected);
			truth("unix", shown(addr), "write", getpid(), comm, n, n * size);
			_exit(0);
		}
	}
	name("ipc-srv");
	while (calls < clients * n) {
		r = recv(sfd, buf, 65536, 0);
		if (r < 0)
			die("recv");
		got += r;
		calls++;
	}
	truth("unix", shown(addr), "read", getpid(), "ipc-srv", calls, got);
	rc |= reap_all(pids, clients);
	if (addr[0] != '@')
		unlink(addr);
	return rc;
}

/* a seqpacket message: one send, whole */
static void send_packet(int fd, size_t n)
{
	if (send(fd, buf, n, 0) != (ssize_t)n)
		die("send");
}

/* every message until the writer closes */
static long recv_packets(int fd, long *calls)
{
	long got = 0;
	ssize_t r;

	while ((r = recv(fd, buf, 65536, 0)) > 0) {
		got += r;
		(*calls)++;
	}
	return got;
}

static int do_seqpacket(long n, long size)
{
	int sv[2];
	char ch[64];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		die("socketpair");
	/* the parent receives on sv[0]: the channel is its socket */
	inode_name(ch, "socket", sv[0]);
	return one_way("unix", ch, sv[0], sv[1], n, size, send_packet, recv_packets);
}

struct qmsg {
	long mtype;
	char mtext[65536];
};

/* a message queue, SysV or POSIX: what a receiver and the writer call */
struct queue {
	const char *kind, *ch;
	ssize_t (*receive)(struct queue *q, long size);
	void (*send)(struct queue *q, long size);
	int msq;
	struct qmsg *m;
	mqd_t mq;
};

static ssize_t msq_receive(struct queue *q, long size)
{
	ssize_t r = msgrcv(q->msq, q->m, sizeof(q->m->mtext), 0, 0);

	if (r < 0)
		die("msgrcv");
	return r;
}

static void msq_send(struct queue *q, long size)
{
	if (msgsnd(q->msq, q->m, size, 0))
		die("msgsnd");
}

static ssize_t mq_receive_one(struct queue *q, long size)
{
	ssize_t r = mq_receive(q->mq, buf, size, NULL);

	if (r < 0)
		die("mq_receive");
	return r;
}

static void mq_send_one(struct queue *q, long size)
{
	if (mq_send(q->mq, buf, size, 0))
		die("mq_send");
}

/* n messages of size from one writer, shared out among receivers (each a
 * process of its own) */
static int run_queue(struct queue *q, int receivers, long n, long size)
{
	pid_t pids[16];
	int rc = 0;

	for (int i = 0; i < receivers; i++) {
		char comm[16];

		pids[i] = fork_peer("ipc-r", i, comm);
		if (pids[i] == 0) {
			long got = 0;

			for (long j = 0; j < n / receivers; j++)
				got += q->receive(q, size);
			truth(q->kind, q->ch, "read", getpid(), comm, n / receivers, got);
			_exit(0);
		}
	}
	name("ipc-w");
	for (long j = 0; j < n; j++)
		q->send(q, size);
	truth(q->kind, q->ch, "write", getpid(), "ipc-w", n, n * size);
	rc |= reap_all(pids, receivers);
	return rc;
}

static int do_msq(int receivers, long n, long size)
{
	struct queue q = { .kind = "msq", .receive = msq_receive, .send = msq_send };
	char ch[32];
	int rc;

	q.msq = msgget(IPC_PRIVATE, IPC_CREAT | 0600);
	q.m = calloc(1, sizeof(*q.m));
	if (q.msq < 0 || !q.m)
		die("msgget");
	if (receivers < 1 || receivers > 16 || n % receivers)
		return 2;
	snprintf(ch, sizeof(ch), "msq:%d", q.msq);
	q.ch = ch;
	q.m->mtype = 1;
	rc = run_queue(&q, receivers, n, size);
	msgctl(q.msq, IPC_RMID, NULL);
	return rc;
}

static int do_mq(const char *qname, int receivers, long n, long size)
{
	struct mq_attr attr = { .mq_maxmsg = 10, .mq_msgsize = size };
	struct queue q = { .kind = "mq", .ch = qname, .receive = mq_receive_one, .send = mq_send_one };
	int rc;

	if (receivers < 1 || receivers > 16 || n % receivers)
		return 2;
	mq_unlink(qname);
	q.mq = mq_open(qname, O_CREAT | O_RDWR, 0600, &attr);
	if (q.mq == (mqd_t)-1)
		die("mq_open");
	rc = run_queue(&q, receivers, n, size);
	mq_close(q.mq);
	mq_unlink(qname);
	return rc;
}

static int eventfd_id(int fd)
{
	char path[64], line[128];
	FILE *f;
	int id = -1;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "eventfd-id: %d", &id) == 1)
			break;
	fclose(f);
	return id;
}

static int do_eventfd(long n)
{
	int fd = eventfd(0, 0);
	uint64_t v = 1, sum = 0;
	long calls = 0;
	char ch[64];
	pid_t w;

	if (fd < 0)
		die("eventfd");
	snprintf(ch, sizeof(ch), "eventfd:[%d]", eventfd_id(fd));
	w = fork();
	if (w == 0) {
		name("ipc-w");
		for (long i = 0; i < n; i++)
			if (write(fd, &v, 8) != 8)
				die("write");
		truth("eventfd", ch, "write", getpid(), "ipc-w", n, n * 8);
		_exit(0);
	}
	name("ipc-r");
	while (sum < (uint64_t)n) {
		if (read(fd, &v, 8) != 8)
			die("read");
		sum += v;
		calls++;
	}
	truth("eventfd", ch, "read", getpid(), "ipc-r", calls, calls * 8);
	return reap(w);
}

static int do_shm(long size)
{
	int id = shmget(IPC_PRIVATE, size, IPC_CREAT | 0600);
	char ch[32];
	void *p;
	pid_t c;

	if (id < 0)
		die("shmget");
	snprintf(ch, sizeof(ch), "shm:%d", id);
	c = fork();
	if (c == 0) {
		name("ipc-w");
		p = shmat(id, NULL, 0);
		if (p == (void *)-1)
			die("shmat");
		memset(p, 1, size);
		shmdt(p);
		truth("shm", ch, "write", getpid(), "ipc-w", 1, size);
		_exit(0);
	}
	name("ipc-r");
	if (reap(c))
		return 1;
	p = shmat(id, NULL, 0);
	if (p == (void *)-1)
		die("shmat");
	shmdt(p);
	truth("shm", ch, "read", getpid(), "ipc-r", 1, size);
	shmctl(id, IPC_RMID, NULL);
	return 0;
}

static int do_unix_pingpong(long rounds)
{
	struct timespec t0, t1;
	int sv[2];
	pid_t child;
	double secs;

	if (rounds < 1 || socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	child = bounce(sv[0], sv[0], sv[1], sv[1], rounds);
	if (child < 0 || reap(child))
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("ops/sec %.0f\n", rounds / secs);
	return 0;
}

static int do_posix_shm(const char *shm, long size)
{
	char ch[300];
	void *p;
	pid_t c;
	int fd;

	snprintf(ch, sizeof(ch), "/dev/shm%s", shm);
	shm_unlink(shm);
	fd = shm_open(shm, O_CREAT | O_RDWR, 0600);
	if (fd < 0 || ftruncate(fd, size))
		die("shm_open");
	c = fork();
	if (c == 0) {
		name("ipc-w");
		p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			die("mmap");
		memset(p, 1, size);
		munmap(p, size);
		truth("shm", ch, "write", getpid(), "ipc-w", 1, size);
		_exit(0);
	}
	name("ipc-r");
	if (reap(c))
		return 1;
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	munmap(p, size);
	truth("shm", ch, "read", getpid(), "ipc-r", 1, size);
	close(fd);
	shm_unlink(shm);
	return 0;
}

#define PAIRS_BATCH 256

/* One batch of socketpairs: a child (ipc-w) writes size bytes into each,
 * the parent (ipc-r) reads them back. The channel is the parent's
 * receiving socket, named by its inode. */
static void pairs_batch(long count, long size)
{
	int rx[PAIRS_BATCH], tx[PAIRS_BATCH], sv[2];
	char ch[64];
	pid_t w;

	for (long i = 0; i < count; i++) {
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv))
			die("socketpair");
		rx[i] = sv[0];
		tx[i] = sv[1];
	}
	w = fork();
	if (w < 0)
		die("fork");
	if (w == 0) {
		name("ipc-w");
		for (long i = 0; i < count; i++) {
			put(tx[i], size);
			close(tx[i]);
		}
		_exit(0);
	}
	for (long i = 0; i < count; i++)
		close(tx[i]);
	for (long i = 0; i < count; i++) {
		long calls, got = drain(rx[i], &calls);

		inode_name(ch, "socket", rx[i]);
		truth("unix", ch, "write", w, "ipc-w", 1, size);
		truth("unix", ch, "read", getpid(), "ipc-r", calls, got);
		close(rx[i]);
	}
	if (waitpid(w, NULL, 0) < 0)
		die("waitpid");
}

static int do_unix_pairs(long count, long size)
{
	name("ipc-r");
	for (long done = 0; done < count; done += PAIRS_BATCH)
		pairs_batch(count - done < PAIRS_BATCH ? count - done : PAIRS_BATCH, size);
	printf("done %ld\n", count);
	return 0;
}

static int do_fifos(const char *dir, long count, long size)
{
	char path[4096];
	long calls, got;
	int fd;

	name("ipc-w");
	for (long i = 0; i < count; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		if (mkfifo(path, 0600))
			die(path);
		/* read and write ends at once, without a second process */
		fd = open(path, O_RDWR);
		if (fd < 0)
			die(path);
		put(fd, size);
		calls = 1;
		got = read(fd, buf, size);
		if (got != size)
			die("read");
		truth("fifo", path, "write", getpid(), "ipc-w", 1, size);
		truth("fifo", path, "read", getpid(), "ipc-w", calls, got);
		close(fd);
	}
	/* removed at the end: an inode freed at once is the next one's */
	for (long i = 0; i < count; i++) {
		snprintf(path, sizeof(path), "%s/f%ld", dir, i);
		unlink(path);
	}
	printf("done %ld\n", count);
	return 0;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";

	buf = calloc(1, 1 << 20);
	if (!buf)
		return 1;
	memset(buf, 'x', 1 << 20);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(m, "pipe") && argc == 4)
		return do_pipe(atol(argv[2]), atol(argv[3]));
	if (!strcmp(m, "fifo") && argc == 6)
		return do_fifo(argv[2], atoi(argv[3]), atol(argv[4]), atol(argv[5]));
	if (!strcmp(m, "unix-stream") && argc == 6)
		return do_unix_stream(argv[2], atoi(argv[3]), atol(argv[4]), atol(argv[5]));
	if (!strcmp(m, "unix-dgram") && argc == 6)
		return do_unix_datagrams(argv[2], atoi(argv[3]), atol(argv[4]), atol(argv[5]), true);
	if (!strcmp(m, "unix-sendto") && argc == 6)
		return do_unix_datagrams(argv[2], atoi(argv[3]), atol(argv[4]), atol(argv[5]), false);
	if (!strcmp(m, "unix-seqpacket") && argc == 4)
		return do_seqpacket(atol(argv[2]), atol(argv[3]));
	if (!strcmp(m, "msq") && argc == 5)
		return do_msq(atoi(argv[2]), atol(argv[3]), atol(argv[4]));
	if (!strcmp(m, "mq") && argc == 6)
		return do_mq(argv[2], atoi(argv[3]), atol(argv[4]), atol(argv[5]));
	if (!strcmp(m, "eventfd") && argc == 3)
		return do_eventfd(atol(argv[2]));
	if (!strcmp(m, "shm") && argc == 3)
		return do_shm(atol(argv[2]));
	if (!strcmp(m, "posix-shm") && argc == 4)
		return do_posix_shm(argv[2], atol(argv[3]));
	if (!strcmp(m, "unix-pairs") && argc == 4)
		return do_unix_pairs(atol(argv[2]), atol(argv[3]));
	if (!strcmp(m, "fifos") && argc == 5)
		return do_fifos(argv[2], atol(argv[3]), atol(argv[4]));
	if (!strcmp(m, "unix-pingpong") && argc == 3)
		return do_unix_pingpong(atol(argv[2]));
	fprintf(stderr, "usage: ipcload pipe|fifo|unix-stream|unix-dgram|unix-sendto|unix-seqpacket|unix-pairs|fifos|msq|mq|eventfd|shm|posix-shm|unix-pingpong ...\n");
	return 2;
}
