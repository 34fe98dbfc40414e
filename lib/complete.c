// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * --complete=SHELL: the tool's completion for bash, zsh or fish, made from
 * the argp tree it parses with, so that what the shells offer is what
 * --help lists (tests/completions.bats compares them). A tool's file holds
 * its own options only: those lib gives every tool (aiscope_common_argp,
 * aiscope_metrics_argp) are completed by one shared file per shell, which
 * --complete=SHELL-shared prints (the same from every tool) and the tool's
 * file loads with the helpers of completions/<shell>/ (make writes both
 * into $(O)/completions/, and make install puts them beside the tools').
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

/* whose option it is: the tool's, or one of lib's argp trees (whose
 * completion is shared by every tool, under the group's name) */
enum group { G_OWN, G_COMMON, G_METRICS, NGROUPS };
static const char *const group_names[NGROUPS] = { [G_COMMON] = "common", [G_METRICS] = "metrics" };

/* lib's options whose values each tool lists (its sort keys): completed as
 * the tool's own, never by the shared file */
static const char *const tool_valued[] = { "sort", NULL };

struct copt {
	const char *name;	/* NULL: a short option only */
	int key;		/* the short letter, or 0 */
	const char *arg;	/* the metavariable; NULL: a flag */
	const char *doc;
	const struct opt_value *value;
	enum group group;
};

static struct copt copts[MAX_OPTS];
static int ncopts;
/* the groups of lib's options the tool has */
static bool has_group[NGROUPS];

static bool is_short(int key)
{
	return key > 0 && key <= 0x7f && isprint(key);
}

static bool in(const char *const *names, const char *name)
{
	for (; name && *names; names++)
		if (!strcmp(*names, name))
			return true;
	return false;
}

static const struct opt_value *find_value(const struct opt_value *table, const char *name)
{
	for (const struct opt_value *v = table; name && v->name; v++)
		if (!strcmp(v->name, name))
			return v;
	return NULL;
}

/* what NAME takes: the tool's table, then lib's (lib's only for an option
 * of the shared file, which is the same for every tool) */
static const struct opt_value *value_of(const char *name, enum group group)
{
	static const struct opt_value free_text = { .kind = OV_FREE };
	const struct opt_value *v = NULL;

	if (group == G_OWN)
		v = find_value(aiscope_opt_values, name);
	if (!v)
		v = find_value(shared_values, name);
	return v ? v : &free_text;
}

/* the group of an option of argp in GROUP: a tool's value for one of lib's
 * options would differ from the shared file's (SHARED: the shared file
 * itself, made from lib's options alone, whatever the tool's are: a tool's
 * own option may have the name of one of lib's it does not take) */
static enum group group_of(const char *name, enum group group, bool shared)
{
	if (group == G_OWN || in(tool_valued, name))
		return G_OWN;
	if (!shared && find_value(aiscope_opt_values, name))
		aiscope_fail(EXIT_RUNTIME, "--complete: --%s is lib's, completed alike in every tool", name);
	return group;
}

/* the options of argp and its children in GROUP, as argp_help() lists them:
 * an alias shares its option's argument and text; SHARED: only lib's that
 * the shared file completes */
static void collect(const struct argp *argp, enum group group, bool shared)
{
	const struct argp_option *o, *prev = NULL;

	for (o = argp->options; o && (o->name || o->key || o->doc || o->group); o++) {
		const char *name;
		enum group g;

		if (o->flags & OPTION_DOC || (!o->name && !is_short(o->key)))
			continue;
		if (!(o->flags & OPTION_ALIAS))
			prev = o;
		if ((o->flags | prev->flags) & OPTION_HIDDEN)
			continue;
		name = o->name ? o->name : prev->name;
		g = group_of(name, group, shared);
		if (shared && g == G_OWN)
			continue;
		if (ncopts == MAX_OPTS)
			aiscope_fail(EXIT_RUNTIME, "--complete: more than %d options", MAX_OPTS);
		has_group[g] = true;
		copts[ncopts++] = (struct copt){
			.name = o->name,
			.key = is_short(o->key) ? o->key : 0,
			.arg = prev->arg,
			.doc = prev->doc ? prev->doc : "",
			.value = value_of(name, g),
			.group = g,
		};
	}
	for (const struct argp_child *c = argp->children; c && c->argp; c++) {
		enum group g = group;

		if (c->argp == &aiscope_common_argp)
			g = G_COMMON;
		else if (c->argp == &aiscope_metrics_argp)
			g = G_METRICS;
		collect(c->argp, g, shared);
	}
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

/* PUT of each option of GROUP, after PREFIX */
static void put_group(enum group group, const char *prefix, void (*put)(const struct copt *c))
{
	for (int i = 0; i < ncopts; i++) {
		if (copts[i].group != group)
			continue;
		fputs(prefix, stdout);
		put(&copts[i]);
	}
}

enum args { ARGS_NONE, ARGS_INTERVAL, ARGS_FILES };

static enum args positional(const struct argp *argp)
{
	if (argp->args_doc && strstr(argp->args_doc, "FILE"))
		return ARGS_FILES;
	return env.kind & AISCOPE_AGGREGATING ? ARGS_INTERVAL : ARGS_NONE;
}

/* the case arms of GROUP's options that take a value, each ending in TAIL */
static void bash_arms(enum group group, const char *tail)
{
	static const char *const act[] = {
		[OV_FREE] = "COMPREPLY=()", [OV_WORDS] = "_aiscope_words", [OV_LIST] = "_aiscope_list",
		[OV_FILE] = "_aiscope_files", [OV_DIR] = "_aiscope_cgroups", [OV_PIDS] = "_aiscope_pids",
		[OV_TIDS] = "_aiscope_tids", [OV_USER] = "_aiscope_users", [OV_COMM] = "_aiscope_comms",
	};

	for (int i = 0; i < ncopts; i++) {
		const struct copt *c = &copts[i];

		if (!c->arg || c->group != group)
			continue;
		putchar('\t');
		put_names(c, " | ");
		printf(") %s", act[c->value->kind]);
		if (c->value->kind == OV_WORDS || c->value->kind == OV_LIST) {
			putchar(' ');
			put_words(c->value, " ");
		}
		printf("%s\n", tail);
	}
}

static void bash_names(enum group group)
{
	for (int i = 0, n = 0; i < ncopts; i++) {
		if (copts[i].group != group)
			continue;
		printf("%s", n++ ? " " : "");
		put_names(&copts[i], " ");
	}
}

static void bash(const char *tool, enum args args)
{
	printf("# bash completion for %s(8), part of aiscope: made by make from %s --complete=bash\n",
	       tool, tool);
	printf("# the helpers and the options of every tool: aiscope-tool, beside this file\n");
	printf(". \"$(dirname \"${BASH_SOURCE[0]}\")/aiscope-tool\" || return\n");
	printf("\n_%s()\n{\n\tlocal cur prev words cword split\n\t_aiscope_init_completion || return\n\n",
	       tool);
	printf("\tcase $prev in\n");
	bash_arms(G_OWN, "; return ;;");
	printf("\tesac\n");
	for (enum group g = G_OWN + 1; g < NGROUPS; g++)
		if (has_group[g])
			printf("\t_aiscope_%s_value && return\n", group_names[g]);
	printf("\t_aiscope_rest %s \"", args == ARGS_FILES ? "files" : "none");
	bash_names(G_OWN);
	for (enum group g = G_OWN + 1; g < NGROUPS; g++)
		if (has_group[g])
			printf(" $_aiscope_%s_opts", group_names[g]);
	printf("\"\n} &&\n\tcomplete -F _%s %s\n", tool, tool);
}

static void bash_shared(void)
{
	printf("# bash: the options lib gives every tool, made by make from TOOL --complete=bash-shared\n");
	printf("# (lib/complete.c: every tool prints the same); completions/bash/aiscope-tool loads it\n");
	for (enum group g = G_OWN + 1; g < NGROUPS; g++) {
		printf("\n# the %s options, for _aiscope_rest\n_aiscope_%s_opts='", group_names[g],
		       group_names[g]);
		bash_names(g);
		printf("'\n\n# _aiscope_%s_value: the value of the %s option in $prev; 1: $prev is none\n",
		       group_names[g], group_names[g]);
		printf("_aiscope_%s_value()\n{\n\tcase $prev in\n", group_names[g]);
		bash_arms(g, " ;;");
		printf("\t*) return 1 ;;\n\tesac\n\treturn 0\n}\n");
	}
}

static bool has_shared(void)
{
	for (enum group g = G_OWN + 1; g < NGROUPS; g++)
		if (has_group[g])
			return true;
	return false;
}

/* the zsh helpers that the specs of the tool's own options (OWN) or of
 * lib's call, autoloaded from $fpath (without compinit too) */
static void zsh_autoload(bool own)
{
	bool options = own && has_shared(), tids = false, comms = false;

	for (int i = 0; i < ncopts; i++) {
		if ((copts[i].group == G_OWN) != own || !copts[i].arg)
			continue;
		tids |= copts[i].value->kind == OV_TIDS;
		comms |= copts[i].value->kind == OV_COMM;
	}
	if (options || tids || comms)
		printf("autoload -Uz%s%s%s\n", options ? " _aiscope_options" : "",
		       tids ? " _aiscope_tids" : "", comms ? " _aiscope_comms" : "");
}

static void zsh_spec(const struct copt *c)
{
	static const char *const act[] = {
		[OV_FREE] = " ", [OV_FILE] = "_files", [OV_DIR] = "_files -/",
		[OV_PIDS] = "_sequence -s , _pids", [OV_TIDS] = "_aiscope_tids",
		[OV_USER] = "_users", [OV_COMM] = "_aiscope_comms",
	};
	bool info = c->name && (!strcmp(c->name, "help") || !strcmp(c->name, "usage") ||
				!strcmp(c->name, "version"));

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

static void zsh(const char *tool, enum args args)
{
	bool shared = has_shared();

	printf("#compdef %s\n", tool);
	printf("# zsh completion for %s(8), part of aiscope: made by make from %s --complete=zsh\n\n",
	       tool, tool);
	zsh_autoload(true);
	if (shared) {
		printf("local -a reply\n_aiscope_options");
		for (enum group g = G_OWN + 1; g < NGROUPS; g++)
			if (has_group[g])
				printf(" %s", group_names[g]);
		putchar('\n');
	}
	printf("_arguments -s -S");
	put_group(G_OWN, " \\\n\t", zsh_spec);
	if (shared)
		printf(" \\\n\t\"${reply[@]}\"");
	if (args == ARGS_INTERVAL)
		printf(" \\\n\t'1:interval (500ms, 10, 10s, 2m): ' \\\n\t'2:count: '");
	else if (args == ARGS_FILES)
		printf(" \\\n\t'*:file:_files'");
	putchar('\n');
}

static void zsh_shared(void)
{
	printf("#autoload\n");
	printf("# zsh: the options lib gives every tool, made by make from TOOL --complete=zsh-shared\n");
	printf("# (lib/complete.c: every tool prints the same)\n");
	printf("# _aiscope_options GROUP...: in reply, the _arguments specs of each GROUP's options\n\n");
	zsh_autoload(false);
	printf("reply=()\nlocal group\nfor group; do\n\tcase $group in\n");
	for (enum group g = G_OWN + 1; g < NGROUPS; g++) {
		printf("\t%s)\n\t\treply+=(", group_names[g]);
		put_group(g, "\n\t\t\t", zsh_spec);
		printf("\n\t\t)\n\t\t;;\n");
	}
	printf("\tesac\ndone\n");
}

/* the rest of a complete line after "complete -c TOOL" (or its arguments) */
static void fish_line(const struct copt *c)
{
	static const char *const act[] = {
		[OV_FILE] = "(__fish_complete_path (__aiscope_value))",
		[OV_DIR] = "(__fish_complete_directories (__aiscope_value))",
		[OV_PIDS] = "(__fish_complete_list , __fish_complete_pids)",
		[OV_TIDS] = "(__fish_complete_list , \"string replace -r \\'.*/\\' \\'\\' /proc/*/task/*\")",
		[OV_USER] = "(__fish_complete_users)",
		[OV_COMM] = "(cat /proc/*/comm 2>/dev/null | sort -u)",
	};
	enum opt_value_kind k = c->value->kind;

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

static void fish(const char *tool, enum args args)
{
	char prefix[128];

	printf("# fish completion for %s(8), part of aiscope: made by make from %s --complete=fish\n",
	       tool, tool);
	printf("source (status dirname)/aiscope-tool.fish\n");
	/* files only where the tool reads them */
	if (args != ARGS_FILES)
		printf("complete -c %s -f\n", tool);
	snprintf(prefix, sizeof(prefix), "complete -c %s", tool);
	put_group(G_OWN, prefix, fish_line);
	for (enum group g = G_OWN + 1; g < NGROUPS; g++)
		if (has_group[g])
			printf("__aiscope_options %s -c %s\n", group_names[g], tool);
}

static void fish_shared(void)
{
	printf("# fish: the options lib gives every tool, made by make from TOOL --complete=fish-shared\n");
	printf("# (lib/complete.c: every tool prints the same); aiscope-tool.fish loads it\n\n");
	printf("# __aiscope_options GROUP ARG...: complete ARG... (-c TOOL, or -c aiscope -n COND)\n");
	printf("# for each of GROUP's options\nfunction __aiscope_options\n    switch $argv[1]\n");
	for (enum group g = G_OWN + 1; g < NGROUPS; g++) {
		printf("        case %s\n", group_names[g]);
		put_group(g, "            complete $argv[2..-1]", fish_line);
	}
	printf("    end\nend\n");
}

static const struct shell {
	const char *name;
	void (*tool)(const char *tool, enum args args);
	void (*shared)(void);
} shells[] = {
	{ "bash", bash, bash_shared },
	{ "zsh", zsh, zsh_shared },
	{ "fish", fish, fish_shared },
	{},
};

void aiscope_complete(const struct argp *argp, const char *arg)
{
	const struct shell *sh;
	size_t len;

	for (sh = shells; sh->name; sh++) {
		len = strlen(sh->name);
		if (!strncmp(arg, sh->name, len) && (!arg[len] || !strcmp(arg + len, "-shared")))
			break;
	}
	if (!sh->name)
		usage_error("invalid --complete '%s': expected bash, zsh or fish", arg);
	if (arg[len]) {
		collect(&aiscope_common_argp, G_COMMON, true);
		collect(&aiscope_metrics_argp, G_METRICS, true);
		sh->shared();
	} else {
		collect(argp, G_OWN, false);
		sh->tool(env.tool, positional(argp));
	}
	if (fflush(stdout) || ferror(stdout))
		aiscope_fail(EXIT_RUNTIME, "--complete: cannot write the output: %s", strerror(errno));
	exit(0);
}
