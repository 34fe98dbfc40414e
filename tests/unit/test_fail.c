// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/fail.c: the failure line, the -j error record and the exit codes. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"
#include "fail.h"
#include "json.h"

static char out[1024], err[1024];

static void slurp(int fd, char *buf, size_t size)
{
	ssize_t n, len = 0;

	while (len < (ssize_t)size - 1 && (n = read(fd, buf + len, size - 1 - len)) > 0)
		len += n;
	buf[len] = 0;
	close(fd);
}

/* Runs fn in a child: its exit status, stdout in out, stderr in err. */
static int child(void (*fn)(void))
{
	int o[2], e[2], status;
	pid_t pid;

	if (pipe(o) || pipe(e))
		return -1;
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		dup2(o[1], STDOUT_FILENO);
		dup2(e[1], STDERR_FILENO);
		close(o[0]);
		close(e[0]);
		fn();
		_exit(0);
	}
	close(o[1]);
	close(e[1]);
	slurp(e[0], err, sizeof(err));
	slurp(o[0], out, sizeof(out));
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void fail_text(void)
{
	fail_setup("t", false);
	printf("before");	/* flushed before the message */
	aiscope_fail(EXIT_CANNOT_RUN, "no way to attach %s", "x");
}

static void fail_json(void)
{
	fail_setup("t", true);
	aiscope_fail(EXIT_RUNTIME, "cannot open \"%s\"", "a\nb");
}

static void usage_named(void)
{
	fail_setup("schedlat", true);
	usage_error("invalid --interval '%s'", "0");
}

static void usage_unnamed(void)
{
	usage_error("bad");
}

static void test_fail_line_and_code(void)
{
	CHECK_EQ(child(fail_text), 77);
	CHECK_STR(out, "before");
	CHECK_STR(err, "t: no way to attach x\n");
}

static void test_fail_json_record(void)
{
	const char *head = "{\"type\":\"error\",\"tool\":\"t\",\"ts\":\"";

	CHECK_EQ(child(fail_json), 1);
	CHECK(!strncmp(out, head, strlen(head)));
	CHECK(strstr(out, "\",\"schema\":1,\"host\":\"h\",\"message\":\"cannot open \\\"a\\nb\\\"\",\"exit_code\":1}\n") != NULL);
	CHECK_STR(err, "t: cannot open \"a\nb\"\n");
}

/* a usage error is one stderr line, no record, exit 2 */
static void test_usage_error(void)
{
	CHECK_EQ(child(usage_named), EXIT_USAGE);
	CHECK_STR(out, "");
	CHECK_STR(err, "schedlat: invalid --interval '0'\n");
	/* before lib/opts names the tool: the program's name */
	CHECK_EQ(child(usage_unnamed), 2);
	CHECK_STR(err, "test_fail: bad\n");
}

int main(void)
{
	/* every line names its host: a fixed one, for exact lines */
	jw_host_set("h");
	RUN(test_fail_line_and_code);
	RUN(test_fail_json_record);
	RUN(test_usage_error);
	return t_done();
}
