// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * pingpong: two processes bounce a byte over a pair of pipes ROUNDS times,
 * a context-switch storm of known size for load and loss tests.
 *
 *	pingpong ROUNDS
 *
 * Prints "rounds N seconds S" when done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "bounce.h"

int main(int argc, char **argv)
{
	int ab[2], ba[2];
	long rounds = argc > 1 ? atol(argv[1]) : 100000;
	struct timespec t0, t1;
	pid_t child;

	if (rounds < 1 || pipe(ab) || pipe(ba))
		return 2;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	child = bounce(ab[1], ba[0], ab[0], ba[1], rounds);
	if (child < 0)
		return 1;
	waitpid(child, NULL, 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("rounds %ld seconds %.3f\n", rounds,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	return 0;
}
