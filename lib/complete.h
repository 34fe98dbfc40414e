/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The shell completions of a tool, made from its own argp options: the
 * hidden --complete=bash|zsh|fish prints them, and --complete=SHELL-shared
 * the completion of lib's options that every tool's file loads (make writes
 * them into $(O)/completions/, beside completions/<shell>/'s helpers). The options and
 * whether they take a value come from the argp tree the tool parses with;
 * what to offer as a value comes from the table below (the shared options'
 * are lib's own), and a tool lists only its own keywords, files and lists.
 */
#ifndef AISCOPE_COMPLETE_H
#define AISCOPE_COMPLETE_H

#include <argp.h>
#include "opts.h"

enum opt_value_kind {
	OV_FREE,	/* typed by hand: a duration, a size, a number */
	OV_WORDS,	/* one of words (or of keys' names) */
	OV_LIST,	/* a comma-separated list of them */
	OV_FILE,
	OV_DIR,		/* a cgroup directory */
	OV_PIDS,	/* a comma-separated list of process ids */
	OV_TIDS,
	OV_USER,
	OV_COMM,
};

struct opt_value {
	const char *name;		/* the long option; NULL ends a table */
	enum opt_value_kind kind;
	const char *const *words;	/* OV_WORDS, OV_LIST: NULL-ended */
	const struct opt_key *keys;	/* or the names of an opt_key table */
};

/* A tool's own: what its options take (an option not in it is OV_FREE, or
 * lib's for a shared option), { NULL } ended. A tool without any needs no
 * table: lib has an empty one. */
extern const struct opt_value aiscope_opt_values[];

/* Prints the completion of ARGP (the tree argp_parse was given) for ARG
 * (a shell), or lib's shared one for "SHELL-shared", and exits 0; any other
 * ARG is a usage error. */
void __attribute__((noreturn)) aiscope_complete(const struct argp *argp, const char *arg);

#endif
