// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "fail.h"
#include "json.h"
#include "util.h"

static struct {
	const char *tool;
	bool json;
} F;

void fail_setup(const char *tool, bool json)
{
	F.tool = tool;
	F.json = json;
}

static const char *who(void)
{
	return F.tool ? F.tool : program_invocation_short_name;
}

void usage_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "%s: ", who());
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(EXIT_USAGE);
}

void aiscope_fail(int code, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (F.json) {
		struct jw w;

		jw_init(&w, stdout);
		jw_record_begin(&w, "error", who(), clock_ns(CLOCK_REALTIME));
		jw_kstr(&w, "message", msg);
		jw_ki64(&w, "exit_code", code);
		jw_record_end(&w);
	}
	fflush(stdout);
	fprintf(stderr, "%s: %s\n", who(), msg);
	exit(code);
}
