/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * For tests of code that exits (usage errors, fatal failures): run it in a
 * child and compare its exit status and stderr.
 */
#ifndef AISCOPE_T_CHILD_H
#define AISCOPE_T_CHILD_H

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Runs fn(arg) in a child; its exit status and the stderr it wrote. */
static inline int child_err(void (*fn)(const char *), const char *arg, char *err, size_t size)
{
	int fds[2], status;
	ssize_t n, len = 0;
	pid_t pid;

	if (pipe(fds))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		/* nothing on stdout either: the TAP stream stays the parent's */
		if (!freopen("/dev/null", "w", stdout))
			_exit(99);
		fn(arg);
		_exit(0);
	}
	close(fds[1]);
	while (len < (ssize_t)size - 1 && (n = read(fds[0], err + len, size - 1 - len)) > 0)
		len += n;
	err[len] = 0;
	close(fds[0]);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* fn(arg) exits 2 with exactly want on stderr */
static inline int rejects(void (*fn)(const char *), const char *arg, const char *want)
{
	char err[512];
	int rc = child_err(fn, arg, err, sizeof(err));

	if (rc != 2 || strcmp(err, want)) {
		printf("# '%s': exit %d, stderr '%s', expected exit 2, '%s'\n", arg, rc, err, want);
		return 0;
	}
	return 1;
}

#endif
