// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A page-cache workload whose truth the tests know, for cachestat:
 *
 *   pagecache create PATH PAGES   write a file of PAGES pages, fsync it
 *   pagecache drop PATH           evict the file's own pages (fsync, then
 *                                 posix_fadvise DONTNEED): nothing else's
 *   pagecache resident PATH       "resident N cachestat C": pages in the
 *                                 cache by mincore(2), and by cachestat(2)
 *                                 (C = -1 where the kernel lacks it)
 *   pagecache serve PATH          open PATH, print "ready PID PAGES"; then
 *                                 SIGUSR1: read the whole file (pread,
 *                                 128 KiB at a time), print "read N BYTES";
 *                                 SIGUSR2: rewrite every page and fsync,
 *                                 print "wrote N PAGES". SIGTERM ends it.
 *
 *   pagecache loop PATH BYTES SECS
 *                                 pread BYTES at a time over the file, again
 *                                 and again, for SECS seconds; prints reads
 *                                 per second (the file should be cached)
 *
 * serve keeps the file open, so that the reading process and the file it
 * reads are both known while a tool runs. Exits 1 with a message on error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (128 * 1024)
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif

static void die(const char *what)
{
	fprintf(stderr, "pagecache: %s: %s\n", what, strerror(errno));
	exit(1);
}

static int open_file(const char *path, int flags)
{
	int fd = open(path, flags, 0644);

	if (fd < 0)
		die(path);
	return fd;
}

static off_t file_size(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		die("fstat");
	return st.st_size;
}

/* every page written, and different from the last write of it */
static void write_all(int fd, off_t size, unsigned int round)
{
	static char buf[CHUNK];

	for (off_t off = 0; off < size; off += CHUNK) {
		size_t n = size - off < CHUNK ? size - off : CHUNK;

		memset(buf, 'a' + (round + off / CHUNK) % 26, n);
		if (pwrite(fd, buf, n, off) != (ssize_t)n)
			die("pwrite");
	}
	if (fsync(fd))
		die("fsync");
}

static ssize_t read_all(int fd, off_t size)
{
	static char buf[CHUNK];
	ssize_t total = 0, n;

	for (off_t off = 0; off < size; off += n) {
		n = pread(fd, buf, CHUNK, off);
		if (n < 0)
			die("pread");
		if (n == 0)
			break;
		total += n;
	}
	return total;
}

static long resident(int fd, off_t size)
{
	long pg = sysconf(_SC_PAGESIZE), n = 0;
	size_t pages = (size + pg - 1) / pg;
	unsigned char *vec;
	void *p;

	if (!size)
		return 0;
	p = mmap(NULL, size, PROT_READ, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	vec = malloc(pages);
	if (!vec || mincore(p, size, vec))
		die("mincore");
	for (size_t i = 0; i < pages; i++)
		n += vec[i] & 1;
	free(vec);
	munmap(p, size);
	return n;
}

/* cachestat(2), 6.5+: struct cachestat_range { off, len }, struct
 * cachestat { nr_cache, nr_dirty, nr_writeback, nr_evicted,
 * nr_recently_evicted } */
static long long syscall_cachestat(int fd)
{
	uint64_t range[2] = { 0, 0 }, cs[5] = { 0 };

	if (syscall(__NR_cachestat, fd, range, cs, 0))
		return -1;
	return (long long)cs[0];
}

static volatile sig_atomic_t want_read, want_write, stop;

static void on_signal(int sig)
{
	if (sig == SIGUSR1)
		want_read++;
	else if (sig == SIGUSR2)
		want_write++;
	else
		stop = 1;
}

static int serve(const char *path)
{
	struct sigaction sa = { .sa_handler = on_signal };
	long pg = sysconf(_SC_PAGESIZE);
	unsigned int reads = 0, writes = 0;
	sigset_t mask, old;
	int fd = open_file(path, O_RDWR);
	off_t size = file_size(fd);

	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGUSR1);
	sigaddset(&mask, SIGUSR2);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, &old);
	printf("ready %d %lld\n", getpid(), (long long)((size + pg - 1) / pg));
	fflush(stdout);
	while (!stop) {
		if (!want_read && !want_write)
			sigsuspend(&old);
		if (want_read) {
			want_read--;
			printf("read %u %zd\n", ++reads, read_all(fd, size));
			fflush(stdout);
		}
		if (want_write) {
			want_write--;
			write_all(fd, size, ++writes);
			printf("wrote %u %lld\n", writes, (long long)((size + pg - 1) / pg));
			fflush(stdout);
		}
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* a cached-read loop: the workload of scripts/bench/cachestat.sh */
static int loop(const char *path, size_t bytes, double secs)
{
	int fd = open_file(path, O_RDONLY);
	off_t size = file_size(fd), off = 0;
	char *buf = malloc(bytes);
	double t0 = now_s(), t;
	unsigned long n = 0;

	if (!buf || !bytes || (off_t)bytes > size) {
		fprintf(stderr, "pagecache: BYTES must be between 1 and the file size\n");
		return 1;
	}
	do {
		for (int i = 0; i < 64; i++, n++) {
			if (off + (off_t)bytes > size)
				off = 0;
			if (pread(fd, buf, bytes, off) != (ssize_t)bytes)
				die("pread");
			off += bytes;
		}
		t = now_s() - t0;
	} while (t < secs);
	printf("%.0f\n", n / t);
	return 0;
}

int main(int argc, char **argv)
{
	long pg = sysconf(_SC_PAGESIZE);
	int fd;

	if (argc == 4 && !strcmp(argv[1], "create")) {
		long pages = atol(argv[3]);

		if (pages <= 0) {
			fprintf(stderr, "pagecache: PAGES must be positive\n");
			return 1;
		}
		fd = open_file(argv[2], O_RDWR | O_CREAT | O_TRUNC);
		write_all(fd, (off_t)pages * pg, 0);
		printf("created %ld\n", pages);
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "drop")) {
		fd = open_file(argv[2], O_RDWR);
		if (fsync(fd))
			die("fsync");
		errno = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
		if (errno)
			die("posix_fadvise");
		printf("resident %ld\n", resident(fd, file_size(fd)));
		return 0;
	}
	if (argc == 3 && !strcmp(argv[1], "resident")) {
		fd = open_file(argv[2], O_RDONLY);
		printf("resident %ld cachestat %lld\n", resident(fd, file_size(fd)),
		       syscall_cachestat(fd));
		return 0;
	}
	if (argc == 5 && !strcmp(argv[1], "loop"))
		return loop(argv[2], strtoul(argv[3], NULL, 0), atof(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "serve"))
		return serve(argv[2]);
	fprintf(stderr, "usage: pagecache create PATH PAGES | drop PATH | resident PATH | serve PATH | loop PATH BYTES SECS\n");
	return 1;
}
