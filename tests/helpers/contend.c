// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * contend: a known run-queue workload for schedlat's tests and demo.
 *
 *	contend THREADS CPU SPIN_MS [ROUNDS]
 *
 * Starts THREADS workers pinned to CPU, named "contend-w", and prints
 * "ready PID" once they all block. Each SIGUSR1 starts a round: every
 * worker spins for SPIN_MS of wall time on that CPU, so they preempt each
 * other, then blocks again, and "done N" is printed. SIGTERM or SIGINT
 * ends it. With ROUNDS the rounds start by themselves (for the demo).
 * Outside rounds nothing runs, so the run-queue waits of a round are
 * exactly the change of run_delay in /proc/PID/task/(*)/schedstat.
 * CPU -1: workers hop between CPU 0 and 1 every millisecond instead, so
 * that each hop is a migration (se.nr_migrations in /proc/PID/task/(*)/sched).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static int go_pipe[2], done_pipe[2];
static long spin_ms;
static int cpu;

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void pin(int to)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(to, &set);
	pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *worker(void *arg)
{
	char c;

	pin(cpu < 0 ? 0 : cpu);
	prctl(PR_SET_NAME, "contend-w");
	while (read(go_pipe[0], &c, 1) == 1) {
		double start = now_ms(), end = start + spin_ms, next_hop = start + 1;
		volatile unsigned long x = 0;
		int on = 0;

		while (now_ms() < end) {
			x++;
			if (cpu < 0 && now_ms() >= next_hop) {
				on ^= 1;
				pin(on);
				next_hop += 1;
			}
		}
		if (cpu < 0 && on)
			pin(0);
		if (write(done_pipe[1], "d", 1) != 1)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	long threads, rounds = 0;
	sigset_t set;
	int sig, round = 0;

	if (argc < 4) {
		fprintf(stderr, "usage: contend THREADS CPU SPIN_MS [ROUNDS]\n");
		return 2;
	}
	threads = atol(argv[1]);
	cpu = atoi(argv[2]);
	spin_ms = atol(argv[3]);
	if (argc > 4)
		rounds = atol(argv[4]);
	if (threads < 1 || threads > 256 || spin_ms < 1 || pipe(go_pipe) || pipe(done_pipe))
		return 2;
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (long i = 0; i < threads; i++) {
		pthread_t t;

		if (pthread_create(&t, NULL, worker, NULL))
			return 1;
	}
	usleep(100000);		/* let the workers reach their read() */
	printf("ready %d\n", getpid());
	fflush(stdout);
	for (;;) {
		if (rounds) {
			if (round >= rounds)
				break;
			sig = SIGUSR1;
		} else if (sigwait(&set, &sig)) {
			break;
		}
		if (sig != SIGUSR1)
			break;
		for (long i = 0; i < threads; i++)
			if (write(go_pipe[1], "g", 1) != 1)
				return 1;
		for (long i = 0; i < threads; i++) {
			char c;

			if (read(done_pipe[0], &c, 1) != 1)
				return 1;
		}
		printf("done %d\n", ++round);
		fflush(stdout);
	}
	return 0;
}
