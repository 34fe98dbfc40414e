// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * aiscope: the one command aiscope installs on $PATH.
 *
 *   aiscope TOOL [ARG...]     runs TOOL with ARG... (TOOL replaces aiscope:
 *                             its exit status and signals are the tool's)
 *   aiscope list              the tools, one per line
 *   aiscope help [TOOL]       this usage, or TOOL --help
 *   aiscope -V, --version
 *
 * The tools themselves live in LIBEXEC/aiscope/, where nothing else looks for
 * them: Debian's libbpf-tools and bpfcc-tools install cachestat and friends
 * into /usr/sbin, and aiscope must not overwrite or shadow them. LIBEXEC is
 * found from this program's own path (/usr/sbin/aiscope ->
 * /usr/libexec/aiscope/), so the same binary works from the Debian package,
 * make install with any PREFIX and an unpacked release tarball.
 * AISCOPE_LIBEXECDIR names the directory instead (the tests point it at
 * build/).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef AISCOPE_VERSION
#define AISCOPE_VERSION "unknown"
#endif
#ifndef AISCOPE_TOOLS
#error "AISCOPE_TOOLS: the tool names, separated by spaces (the Makefile sets it)"
#endif

/* relative to the directory of this program */
#define LIBEXEC_FROM_BIN "../libexec/aiscope"

enum { EXIT_USAGE = 2, EXIT_NOEXEC = 126, EXIT_NOTFOUND = 127 };

static const char tool_names[] = AISCOPE_TOOLS;

/* is_tool: NAME is one of AISCOPE_TOOLS (never a path, never an option) */
static int is_tool(const char *name)
{
	size_t len = strlen(name);
	const char *p = tool_names;

	if (!len)
		return 0;
	while ((p = strstr(p, name))) {
		int starts = p == tool_names || p[-1] == ' ';
		int ends = p[len] == ' ' || p[len] == '\0';

		if (starts && ends)
			return 1;
		p += len;
	}
	return 0;
}

static void list_tools(FILE *out, const char *indent)
{
	const char *p = tool_names;

	while (*p) {
		size_t len = strcspn(p, " ");

		if (len)
			fprintf(out, "%s%.*s\n", indent, (int)len, p);
		p += len;
		p += strspn(p, " ");
	}
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: aiscope TOOL [OPTION...]   run TOOL (aiscope TOOL --help: its options)\n"
		"       aiscope list               the tools, one per line\n"
		"       aiscope help [TOOL]        this text, or TOOL --help\n"
		"       aiscope -V, --version\n"
		"\nTools (man aiscope-TOOL, man aiscope):\n");
	list_tools(out, "  ");
}

/* libexec_dir: where the tools are, into BUF; 0, or -1 with a message */
static int libexec_dir(char *buf, size_t size)
{
	const char *env = getenv("AISCOPE_LIBEXECDIR");
	char self[PATH_MAX];
	ssize_t n;
	char *slash;

	if (env && *env) {
		if ((size_t)snprintf(buf, size, "%s", env) >= size)
			goto too_long;
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n < 0) {
		fprintf(stderr, "aiscope: cannot find its own path (/proc/self/exe: %s): set AISCOPE_LIBEXECDIR\n",
			strerror(errno));
		return -1;
	}
	self[n] = '\0';
	slash = strrchr(self, '/');
	if (slash)
		*slash = '\0';
	if ((size_t)snprintf(buf, size, "%s/%s", self, LIBEXEC_FROM_BIN) >= size)
		goto too_long;
	return 0;
too_long:
	fprintf(stderr, "aiscope: the tools' directory is too long a path\n");
	return -1;
}

/* run_tool: execv TOOL with ARGV (ARGV[0] is TOOL's name); returns only on failure */
static int run_tool(const char *tool, char **argv)
{
	char dir[PATH_MAX], path[PATH_MAX];
	int err;

	if (libexec_dir(dir, sizeof(dir)))
		return EXIT_NOEXEC;
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, tool) >= sizeof(path)) {
		fprintf(stderr, "aiscope: %s/%s: path too long\n", dir, tool);
		return EXIT_NOEXEC;
	}
	execv(path, argv);
	err = errno;
	fprintf(stderr, "aiscope: cannot run %s: %s\n", path, strerror(err));
	return err == ENOENT ? EXIT_NOTFOUND : EXIT_NOEXEC;
}

static int unknown_tool(const char *name)
{
	fprintf(stderr, "aiscope: '%s' is not an aiscope tool (aiscope list shows them)\n", name);
	return EXIT_USAGE;
}

static int help(int argc, char **argv)
{
	static char help_opt[] = "--help";
	char *tool_argv[3];

	if (argc < 3) {
		usage(stdout);
		return 0;
	}
	if (argc > 3) {
		fprintf(stderr, "aiscope: help takes one tool (aiscope help TOOL)\n");
		return EXIT_USAGE;
	}
	if (!is_tool(argv[2]))
		return unknown_tool(argv[2]);
	tool_argv[0] = argv[2];
	tool_argv[1] = help_opt;
	tool_argv[2] = NULL;
	return run_tool(argv[2], tool_argv);
}

int main(int argc, char **argv)
{
	const char *cmd;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cmd = argv[1];
	if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
		printf("aiscope %s\n", AISCOPE_VERSION);
		return 0;
	}
	if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help") || !strcmp(cmd, "help"))
		return help(argc, argv);
	if (!strcmp(cmd, "list")) {
		if (argc > 2) {
			fprintf(stderr, "aiscope: list takes no argument\n");
			return EXIT_USAGE;
		}
		list_tools(stdout, "");
		return 0;
	}
	if (!is_tool(cmd))
		return unknown_tool(cmd);
	/* the tool sees its own name as argv[0], as when run directly */
	return run_tool(cmd, argv + 1);
}
