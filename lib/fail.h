/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * How a tool fails: one line on stderr ("tool: message"), with -j also an
 * "error" record on stdout, and the documented exit code (CONTRACT 8).
 * Depends on nothing but lib/json, so that every lib file can fail
 * without reaching back into lib/opts.
 */
#ifndef AISCOPE_FAIL_H
#define AISCOPE_FAIL_H

#include <stdbool.h>

#define EXIT_RUNTIME	1
#define EXIT_USAGE	2
#define EXIT_CANNOT_RUN	77

/* Who speaks, and whether -j wants the error record: lib/opts sets it as
 * it parses. Until then the program's name, no record. */
void fail_setup(const char *tool, bool json);

/* A usage error: exit 2. */
void __attribute__((noreturn, format(printf, 1, 2))) usage_error(const char *fmt, ...);
void __attribute__((noreturn, format(printf, 2, 3))) aiscope_fail(int code, const char *fmt, ...);

#endif
