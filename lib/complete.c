// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --complete=SHELL: the tool's completion for bash, zsh or fish, made from
 * the argp tree it parses with, so that what the shells offer is what
 * --help lists (tests/completions.bats compares them). The shared helpers
 * the output calls are shell code in completions/<shell>/aiscope-tool.*,
 * which make puts after its first line.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "complete.h"

/* a tool with nothing of its own to complete (its table, when it has one,
 * takes this one's place at link time) */
__attribute__((weak)) const struct opt_value aiscope_opt_values[] = { {} };

/* what probe_parse_mode() takes (fexit and kretprobe come with fentry and
 * kprobe) */
static const char *const probe_modes[] = { "fentry", "kprobe", "tp_btf", "raw_tp", "tracepoint", NULL };

/* the shared options that take something other than free text */
static const struct opt_value shared_values[] = {
	{ .name = "pid", .kind = OV_PIDS },
	{ .name = "tid", .kind = OV_TIDS },
	{ .name = "cgroup", .kind = OV_DIR },
	{ .name = "uid", .kind = OV_USER },
	{ .name = "comm", .kind = OV_COMM },
	{ .name = "btf", .kind = OV_FILE },
	{ .name = "probe-mode", .kind = OV_LIST, .words = probe_modes },
	{ .name = "prometheus", .kind = OV_FILE },
	{},
};

#define MAX_OPTS	128

struct copt {
	const char *name;	/* NULL: a short option only */
	int key;		/* the short letter, or 0 */
	const char *arg;	/* the metavariable; NULL: a flag */
	const char *doc;
	const struct opt_value *value;
};

static struct copt copts[MAX_OPTS];
static int ncopts;

static bool is_short(int key)
{
	return key > 0 && key <= 0x7f && isprint(key);
}

static const struct opt_value *value_of(const char *name)
{
	static const struct opt_value free_text = { .kind = OV_FREE };

	for (const struct opt_value *v = aiscope_opt_values; name && v->name; v++)
		if (!strcmp(v->name, name))
			return v;
	for (const struct opt_value *v = shared_values; name && v->name; v++)
		if (!strcmp(v->name, name))
			return v;
	return &free_text;
}

/* the options of argp and its children, as argp_help() lists them: an
 * alias shares its option's argument and text */
static void collect(const struct argp *argp)
{
	const struct argp_option *o, *prev = NULL;

	for (o = argp->options; o && (o->name || o->key || o->doc || o->group); o++) {
		if (o->flags & OPTION_DOC || (!o->name && !is_short(o->key)))
			continue;
		if (!(o->flags & OPTION_ALIAS))
			prev = o;
		if ((o->flags | prev->flags) & OPTION_HIDDEN)
			continue;
		if (ncopts == MAX_OPTS)
			aiscope_fail(EXIT_RUNTIME, "--complete: more than %d options", MAX_OPTS);
		copts[ncopts++] = (struct copt){
			.name = o->name,
			.key = is_short(o->key) ? o->key : 0,
			.arg = prev->arg,
			.doc = prev->doc ? prev->doc : "",
			.value = value_of(o->name ? o->name : prev->name),
		};
	}
	for (const struct argp_child *c = argp->children; c && c->argp; c++)
		collect(c->argp);
}

/* s between single quotes, for fish (\' and \\) */
static void put_fish(const char *s)
{
	for (; *s; s++) {
		if (*s == '\'' || *s == '\\')
			putchar('\\');
		putchar(*s);
	}
}

/* a zsh description or message: ':' and ']' end them */
static void put_zsh_text(const char *s)
{
	for (; *s; s++) {
		if (*s == '\'')
			fputs("'\\''", stdout);
		else if (*s == ':' || *s == ']')
			printf("\\%c", *s);
		else
			putchar(*s);
	}
}

static void put_words(const struct opt_value *v, const char *sep)
{
	int n = 0;

	for (const char *const *w = v->words; w && *w; w++)
		printf("%s%s", n++ ? sep : "", *w);
	for (const struct opt_key *k = v->keys; k && k->name; k++)
		printf("%s%s", n++ ? sep : "", k->name);
}

/* -x | --long */
static void put_names(const struct copt *c, const char *sep)
{
	if (c->key)
		printf("-%c%s", c->key, c->name ? sep : "");
	if (c->name)
		printf("--%s", c->name);
}

enum args { ARGS_NONE, ARGS_INTERVAL, ARGS_FILES };

static enum args positional(const struct argp *argp)
{
	if (argp->args_doc && strstr(argp->args_doc, "FILE"))
		return ARGS_FILES;
	return env.kind & AISCOPE_AGGREGATING ? ARGS_INTERVAL : ARGS_NONE;
}

static void bash(const char *tool, enum args args)
{
	static const char *const act[] = {
		[OV_FREE] = "COMPREPLY=()", [OV_WORDS] = "_aiscope_words", [OV_LIST] = "_aiscope_list",
		[OV_FILE] = "_aiscope_files", [OV_DIR] = "_aiscope_cgroups", [OV_PIDS] = "_aiscope_pids",
		[OV_TIDS] = "_aiscope_tids", [OV_USER] = "_aiscope_users", [OV_COMM] = "_aiscope_comms",
	};

	printf("# bash completion for %s(8), part of aiscope: made by make from %s --complete=bash\n",
	       tool, tool);
	printf("\n_%s()\n{\n\tlocal cur prev words cword split\n\t_aiscope_init_completion || return\n\n",
	       tool);
	printf("\tcase $prev in\n");
	for (int i = 0; i < ncopts; i++) {
		const struct copt *c = &copts[i];

		if (!c->arg)
			continue;
		putchar('\t');
		put_names(c, " | ");
		printf(") %s", act[c->value->kind]);
		if (c->value->kind == OV_WORDS || c->value->kind == OV_LIST) {
			putchar(' ');
			put_words(c->value, " ");
		}
		printf("; return ;;\n");
	}
	printf("\tesac\n\t_aiscope_rest %s '", args == ARGS_FILES ? "files" : "none");
	for (int i = 0; i < ncopts; i++) {
		printf("%s", i ? " " : "");
		put_names(&copts[i], " ");
	}
	printf("'\n} &&\n\tcomplete -F _%s %s\n", tool, tool);
}

static void zsh(const char *tool, enum args args)
{
	static const char *const act[] = {
		[OV_FREE] = " ", [OV_FILE] = "_files", [OV_DIR] = "_files -/",
		[OV_PIDS] = "_sequence -s , _pids", [OV_TIDS] = "_aiscope_tids",
		[OV_USER] = "_users", [OV_COMM] = "_aiscope_comms",
	};

	printf("#compdef %s\n", tool);
	printf("# zsh completion for %s(8), part of aiscope: made by make from %s --complete=zsh\n",
	       tool, tool);
	printf("\n_arguments -s -S");
	for (int i = 0; i < ncopts; i++) {
		const struct copt *c = &copts[i];
		bool info = c->name && (!strcmp(c->name, "help") || !strcmp(c->name, "usage") ||
					!strcmp(c->name, "version"));

		printf(" \\\n\t");
		if (info)
			printf("'(- *)'");
		else if (c->key && c->name)
			printf("'(-%c --%s)'", c->key, c->name);
		if (c->key && c->name)
			printf("{-%c%s,--%s%s}'", c->key, c->arg ? "+" : "", c->name, c->arg ? "=" : "");
		else if (c->name)
			printf("'--%s%s", c->name, c->arg ? "=" : "");
		else
			printf("'-%c%s", c->key, c->arg ? "+" : "");
		putchar('[');
		put_zsh_text(c->doc);
		putchar(']');
		if (c->arg) {
			putchar(':');
			put_zsh_text(c->arg);
			putchar(':');
			if (c->value->kind == OV_WORDS) {
				putchar('(');
				put_words(c->value, " ");
				putchar(')');
			} else if (c->value->kind == OV_LIST) {
				printf("_sequence -s , compadd - ");
				put_words(c->value, " ");
			} else {
				printf("%s", act[c->value->kind]);
			}
		}
		putchar('\'');
	}
	if (args == ARGS_INTERVAL)
		printf(" \\\n\t'1:interval (500ms, 10, 10s, 2m): ' \\\n\t'2:count: '");
	else if (args == ARGS_FILES)
		printf(" \\\n\t'*:file:_files'");
	putchar('\n');
}

static void fish(const char *tool, enum args args)
{
	static const char *const act[] = {
		[OV_FILE] = "(__fish_complete_path (__aiscope_value))",
		[OV_DIR] = "(__fish_complete_directories (__aiscope_value))",
		[OV_PIDS] = "(__fish_complete_list , __fish_complete_pids)",
		[OV_TIDS] = "(__fish_complete_list , \"string replace -r \\'.*/\\' \\'\\' /proc/*/task/*\")",
		[OV_USER] = "(__fish_complete_users)",
		[OV_COMM] = "(cat /proc/*/comm 2>/dev/null | sort -u)",
	};

	printf("# fish completion for %s(8), part of aiscope: made by make from %s --complete=fish\n",
	       tool, tool);
	/* files only where the tool reads them */
	if (args != ARGS_FILES)
		printf("complete -c %s -f\n", tool);
	for (int i = 0; i < ncopts; i++) {
		const struct copt *c = &copts[i];
		enum opt_value_kind k = c->value->kind;

		printf("complete -c %s", tool);
		if (c->key)
			printf(" -s %c", c->key);
		if (c->name)
			printf(" -l %s", c->name);
		if (c->arg) {
			/* -x, not -r: "complete -c" lists no -r */
			printf(" -x");
			if (k == OV_WORDS) {
				printf(" -a '");
				put_words(c->value, " ");
				putchar('\'');
			} else if (k == OV_LIST) {
				printf(" -a '(__fish_complete_list , \"printf \\'%%s\\n\\' ");
				put_words(c->value, " ");
				printf("\")'");
			} else if (k != OV_FREE) {
				printf(" -a '%s'", act[k]);
			}
		}
		printf(" -d '");
		put_fish(c->doc);
		printf("'\n");
	}
}

void aiscope_complete(const struct argp *argp, const char *shell)
{
	const char *tool = env.tool;

	collect(argp);
	if (!strcmp(shell, "bash"))
		bash(tool, positional(argp));
	else if (!strcmp(shell, "zsh"))
		zsh(tool, positional(argp));
	else if (!strcmp(shell, "fish"))
		fish(tool, positional(argp));
	else
		usage_error("invalid --complete '%s': expected bash, zsh or fish", shell);
	if (fflush(stdout) || ferror(stdout))
		aiscope_fail(EXIT_RUNTIME, "--complete: cannot write the output: %s", strerror(errno));
	exit(0);
}
