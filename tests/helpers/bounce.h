/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A byte bounced between two processes ROUNDS times: a context-switch
 * storm of known size. The parent writes on parent_w and reads the answer
 * on parent_r; the child, forked here, reads on child_r and answers on
 * child_w. Returns the child, to wait for, once the parent's rounds are
 * done; -1 when the fork or a round failed.
 */
#ifndef AISCOPE_TEST_BOUNCE_H
#define AISCOPE_TEST_BOUNCE_H

#include <sys/types.h>
#include <unistd.h>

static inline pid_t bounce(int parent_w, int parent_r, int child_r, int child_w, long rounds)
{
	char c = 0;
	pid_t child = fork();

	if (child < 0)
		return -1;
	if (child == 0) {
		for (long i = 0; i < rounds; i++)
			if (read(child_r, &c, 1) != 1 || write(child_w, &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	for (long i = 0; i < rounds; i++)
		if (write(parent_w, &c, 1) != 1 || read(parent_r, &c, 1) != 1)
			return -1;
	return child;
}

#endif
