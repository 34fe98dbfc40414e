// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * memhog: memory the tests know exactly.
 *
 *   memhog grow STEP_KIB EVERY_MS [MAX_KIB]
 *	prints "ready PID", waits for SIGUSR1 (time to move it into a cgroup),
 *	then allocates STEP_KIB every EVERY_MS, touching every page, printing
 *	"at KIB" after each step; at MAX_KIB (default: never) it waits for a
 *	signal.
 *   memhog rate MIB_PER_S MAX_MIB
 *	prints "ready PID", waits for SIGUSR1, then touches the pages of one
 *	anonymous mapping of MAX_MIB at MIB_PER_S (0: as fast as the CPU
 *	touches pages), paced every 256 KiB; at MAX_MIB it prints "held KIB"
 *	and waits for a signal.
 *   memhog mmap SIZE_KIB
 *	prints "ready PID", waits for SIGUSR1, maps SIZE_KIB of PROT_NONE
 *	anonymous memory (nothing is touched, nothing is used), prints
 *	"mapped KIB", and waits for a signal.
 *   memhog mremap FROM_KIB TO_KIB
 *	the same mapping of FROM_KIB, then grown to TO_KIB with mremap();
 *	prints "remapped KIB".
 *   memhog brk SIZE_KIB
 *	moves the program break up by SIZE_KIB (untouched); prints
 *	"brk KIB".
 *   memhog forks N MAX_MIB
 *	prints "start NS" (CLOCK_REALTIME: the moment its program began) and
 *	at once, no signal awaited (a container's first milliseconds), N
 *	children each touch MAX_MIB as fast as they can; it waits for them
 *	and prints "child PID killed SIG" or "child PID exited CODE" for
 *	each, then "reaped N", and waits for a signal (a memory limit below
 *	MAX_MIB OOM-kills each child, not it: it uses next to nothing).
 */
#define _GNU_SOURCE
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	go = 1;
}

static void wait_go(void)
{
	sigset_t none;

	sigemptyset(&none);
	printf("ready %d\n", getpid());
	fflush(stdout);
	while (!go)
		sigsuspend(&none);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* says what it holds, the line a test waits for, and holds it until killed */
static _Noreturn void hold(const char *what, long kib)
{
	printf("%s %ld\n", what, kib);
	fflush(stdout);
	for (;;)
		pause();
}

static int grow(long step_kib, long every_ms, long max_kib)
{
	long page = sysconf(_SC_PAGESIZE), total = 0;

	for (;;) {
		size_t len = step_kib * 1024;
		char *p;

		if (max_kib && total >= max_kib)
			break;
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		/* touch every page: the memory is charged when it is used */
		for (size_t off = 0; off < len; off += page)
			p[off] = 1;
		total += step_kib;
		printf("at %ld\n", total);
		fflush(stdout);
		sleep_ms(every_ms);
	}
	for (;;)
		pause();
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static int rate(long mib_per_s, long max_mib)
{
	size_t len = (size_t)max_mib << 20, chunk = 256 << 10;
	long page = sysconf(_SC_PAGESIZE);
	uint64_t start = now_ns();
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (size_t off = 0; off < len; off += chunk) {
		for (size_t o = off; o < off + chunk && o < len; o += page)
			p[o] = 1;
		if (mib_per_s) {
			/* when this much should be done at the rate */
			uint64_t due = start + (off + chunk) * 1000000000ULL / ((uint64_t)mib_per_s << 20);
			uint64_t t = now_ns();

			if (due > t) {
				struct timespec ts = { (due - t) / 1000000000ULL, (due - t) % 1000000000ULL };

				nanosleep(&ts, NULL);
			}
		}
	}
	hold("held", len >> 10);
}

static int map_none(long kib)
{
	void *p = mmap(NULL, kib * 1024, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	if (p == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	hold("mapped", kib);
}

static int remap(long from_kib, long to_kib)
{
	void *p = mmap(NULL, from_kib * 1024, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);

	if (p == MAP_FAILED || mremap(p, from_kib * 1024, to_kib * 1024, MREMAP_MAYMOVE) == MAP_FAILED) {
		perror("mremap");
		return 1;
	}
	hold("remapped", to_kib);
}

static int grow_brk(long kib)
{
	if (sbrk(kib * 1024) == (void *)-1) {
		perror("sbrk");
		return 1;
	}
	hold("brk", kib);
}

static int forks(long n, long max_mib)
{
	struct timespec ts;
	int status;
	pid_t pid;

	clock_gettime(CLOCK_REALTIME, &ts);
	printf("start %lld%09ld\n", (long long)ts.tv_sec, ts.tv_nsec);
	fflush(stdout);
	for (long i = 0; i < n; i++) {
		pid = fork();
		if (pid < 0) {
			perror("fork");
			return 1;
		}
		if (!pid)
			_exit(rate(0, max_mib));
	}
	while ((pid = wait(&status)) > 0) {
		if (WIFSIGNALED(status))
			printf("child %d killed %d\n", (int)pid, WTERMSIG(status));
		else
			printf("child %d exited %d\n", (int)pid, WEXITSTATUS(status));
	}
	hold("reaped", n);
}

/* argv is the command cmd with min to max words: then the test's go
 * (SIGUSR1, once it has attached) is awaited */
static bool go_with(int argc, char **argv, const char *cmd, int min, int max)
{
	if (argc < min || argc > max || strcmp(argv[1], cmd))
		return false;
	wait_go();
	return true;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { .sa_handler = on_usr1 };

	setvbuf(stdout, NULL, _IOLBF, 0);
	sigaction(SIGUSR1, &sa, NULL);
	if (go_with(argc, argv, "grow", 4, INT_MAX))
		return grow(atol(argv[2]), atol(argv[3]), argc > 4 ? atol(argv[4]) : 0);
	if (go_with(argc, argv, "rate", 4, 4))
		return rate(atol(argv[2]), atol(argv[3]));
	if (go_with(argc, argv, "mmap", 3, 3))
		return map_none(atol(argv[2]));
	if (go_with(argc, argv, "mremap", 4, 4))
		return remap(atol(argv[2]), atol(argv[3]));
	if (go_with(argc, argv, "brk", 3, 3))
		return grow_brk(atol(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "forks"))
		return forks(atol(argv[2]), atol(argv[3]));
	fprintf(stderr, "usage: memhog grow STEP_KIB EVERY_MS [MAX_KIB] | mmap SIZE_KIB |"
		" rate MIB_PER_S MAX_MIB | mremap FROM_KIB TO_KIB | brk SIZE_KIB | forks N MAX_MIB\n");
	return 2;
}
