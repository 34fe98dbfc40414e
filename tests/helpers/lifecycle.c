// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * lifecycle: processes with a known life, for topograph's lifecycle hooks.
 *
 *	lifecycle pipe BYTES CODE [CGROUP]
 *		joins CGROUP (a directory; its cgroup.procs), then forks a
 *		child named "lcwriter" that writes BYTES into a pipe and exits
 *		with CODE; reads them all and reaps it; leaves and removes
 *		CGROUP; prints
 *		"pipe PARENT GRANDPARENT CHILD T0 T1 READ STATUS", T0 before
 *		the fork and T1 after the reap (CLOCK_REALTIME ns)
 *	lifecycle execs N
 *		forks a child that execs this program N times in all, then
 *		exits 0; prints "execs PARENT CHILD N" once it is reaped
 *	lifecycle respawn K CODE
 *		forks K children named "lcworker" one after the other, each
 *		writing 100 bytes into a pipe to it and exiting with CODE, as
 *		a supervisor restarting a crashing worker would; prints
 *		"respawn PARENT PID..." at the end
 *
 *	lifecycle loop N
 *		fork, exec /bin/true, reap, N times; prints "loop N NS", the
 *		wall time of the whole (the cost of the lifecycle hooks)
 *
 * Then (but loop) it waits for SIGTERM or SIGINT (60 s at most), so that
 * the parent is alive when the capture ends.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void die(const char *what)
{
	fprintf(stderr, "lifecycle: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void write_file(const char *path, long v)
{
	FILE *f = fopen(path, "w");

	if (!f || fprintf(f, "%ld\n", v) < 0 || fclose(f))
		die(path);
}

static void hold(void)
{
	sigset_t set;
	struct timespec limit = { .tv_sec = 60 };

	fflush(stdout);
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigtimedwait(&set, NULL, &limit);
}

static int do_pipe(long bytes, int code, const char *cg)
{
	char path[PATH_MAX], buf[4096];
	unsigned long long t0, t1;
	long got = 0;
	int fds[2], status;
	ssize_t n;
	pid_t child;

	if (cg) {
		snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
		write_file(path, getpid());
	}
	if (pipe(fds))
		die("pipe");
	t0 = now_ns();
	child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		prctl(PR_SET_NAME, "lcwriter");
		close(fds[0]);
		memset(buf, 'x', sizeof(buf));
		for (long left = bytes; left > 0; left -= n) {
			n = write(fds[1], buf, left < (long)sizeof(buf) ? left : (long)sizeof(buf));
			if (n <= 0)
				_exit(100);
		}
		_exit(code);
	}
	close(fds[1]);
	while ((n = read(fds[0], buf, sizeof(buf))) > 0)
		got += n;
	if (waitpid(child, &status, 0) != child)
		die("waitpid");
	t1 = now_ns();
	if (cg) {
		/* out of it, then it is gone: as a container's cgroup after its job */
		snprintf(path, sizeof(path), "%s/../cgroup.procs", cg);
		write_file(path, getpid());
		if (rmdir(cg))
			die(cg);
	}
	printf("pipe %d %d %d %llu %llu %ld %d\n", getpid(), getppid(), child, t0, t1, got, status);
	hold();
	return 0;
}

static int do_execs(long n)
{
	char self[PATH_MAX], arg[32];
	ssize_t len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int status;
	pid_t child;

	if (len <= 0)
		die("readlink");
	self[len] = 0;
	child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		snprintf(arg, sizeof(arg), "%ld", n - 1);
		execl(self, "lifecycle", "chain", arg, (char *)NULL);
		_exit(127);
	}
	if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status))
		die("the exec chain");
	printf("execs %d %d %ld\n", getpid(), child, n);
	hold();
	return 0;
}

/* one exec of the chain: K more to go */
static int do_chain(long k)
{
	char self[PATH_MAX], arg[32];
	ssize_t len;

	if (k <= 0)
		return 0;
	len = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (len <= 0)
		die("readlink");
	self[len] = 0;
	snprintf(arg, sizeof(arg), "%ld", k - 1);
	execl(self, "lifecycle", "chain", arg, (char *)NULL);
	die("exec");
	return 1;
}

static int do_respawn(long k, int code)
{
	char buf[100] = "";
	pid_t pids[64];
	int status, fds[2];

	if (k < 1 || k > 64)
		k = 1;
	if (pipe(fds))
		die("pipe");
	for (long i = 0; i < k; i++) {
		pids[i] = fork();
		if (pids[i] < 0)
			die("fork");
		if (!pids[i]) {
			prctl(PR_SET_NAME, "lcworker");
			/* a stage: it moves data before it fails */
			if (write(fds[1], buf, sizeof(buf)) != sizeof(buf))
				_exit(100);
			usleep(20000);
			_exit(code);
		}
		if (read(fds[0], buf, sizeof(buf)) != sizeof(buf))
			die("read");
		waitpid(pids[i], &status, 0);
	}
	printf("respawn %d", getpid());
	for (long i = 0; i < k; i++)
		printf(" %d", pids[i]);
	printf("\n");
	hold();
	return 0;
}

static int do_loop(long n)
{
	unsigned long long t0 = now_ns();
	int status;

	for (long i = 0; i < n; i++) {
		pid_t child = fork();

		if (child < 0)
			die("fork");
		if (!child) {
			execl("/bin/true", "true", (char *)NULL);
			_exit(127);
		}
		if (waitpid(child, &status, 0) != child || status)
			die("/bin/true");
	}
	printf("loop %ld %llu\n", n, now_ns() - t0);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 4 && !strcmp(argv[1], "pipe"))
		return do_pipe(atol(argv[2]), atoi(argv[3]), argc > 4 ? argv[4] : NULL);
	if (argc == 3 && !strcmp(argv[1], "execs"))
		return do_execs(atol(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "chain"))
		return do_chain(atol(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "loop"))
		return do_loop(atol(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "respawn"))
		return do_respawn(atol(argv[2]), atoi(argv[3]));
	fprintf(stderr, "usage: lifecycle pipe BYTES CODE [CGROUP] | execs N | respawn K CODE | loop N\n");
	return 2;
}
