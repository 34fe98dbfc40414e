// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* topograph's live capture: socketsnoop, ipcsnoop and the tools of --with
 * run as children, their JSON lines ingested as they come, their stderr
 * held until they trace, their end (and ours) supervised. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "topo.h"

const char *const extra_tools[] = { "schedlat", "nclstat", "gpulaunch", "rdmasnoop", "numaplace", NULL };

/* socketsnoop, ipcsnoop and each of extra_tools */
#define MAX_KIDS (2 + ARRAY_SIZE(extra_tools) - 1)

struct child {
	const char *tool;
	char path[PATH_MAX];
	pid_t pid;
	int out_fd, err_fd;
	char *out_buf, *err_buf;	/* partial lines */
	size_t out_len, err_len;
	char *held;			/* stderr before it traces */
	size_t held_len;
	uint64_t lineno;
	bool tracing, exited, killed;
	int code;			/* exit code, 128+signal */
};

static struct child kids[MAX_KIDS];
static int nkids;
static int ntracing, nexited;	/* of them: said "Tracing", exited */

/* lib/run's watch fd: the tools' pipes, their SIGCHLD and our stdout */
static int watch_ep = -1, chld_fd = -1;
enum { WATCH_CHLD = 2 * ARRAY_SIZE(kids), WATCH_STDOUT };	/* below: 2 * kid (+ 1: stderr) */
static bool stopping;		/* the tools were told to stop */
static uint64_t stop_mono_ns;	/* when a signal came */

/* topograph itself or a tool it runs */
bool is_self(const struct node *n)
{
	if (n->kind != N_PROC)
		return false;
	if (n->pid == (uint32_t)getpid())
		return true;
	for (int i = 0; i < nkids; i++)
		if (n->pid == (uint32_t)kids[i].pid)
			return true;
	return false;
}
static uint64_t traced_mono_ns;	/* when the last tool said it traces */

/* next to our own binary, then PATH */
static bool find_tool(const char *tool, char *out, size_t len, char *self_dir)
{
	const char *path = getenv("PATH");
	char *copy, *save = NULL, *dir;
	bool found = false;

	if (snprintf(out, len, "%s/%s", self_dir, tool) < (int)len && !access(out, X_OK))
		return true;
	if (!path)
		return false;
	copy = xstrdup(path);
	for (dir = strtok_r(copy, ":", &save); dir; dir = strtok_r(NULL, ":", &save)) {
		if (snprintf(out, len, "%s/%s", *dir ? dir : ".", tool) < (int)len &&
		    !access(out, X_OK)) {
			found = true;
			break;
		}
	}
	free(copy);
	return found;
}

static void add_arg(char **argv, int *argc, const char *a, const char *b)
{
	argv[(*argc)++] = (char *)a;
	if (b)
		argv[(*argc)++] = (char *)b;
}

static void spawn(struct child *k, const sigset_t *oldmask)
{
	/* -d and the filters, as given, in this order */
	const struct { const char *opt, *arg; } pass[] = {
		{ "--duration", cfg.duration_arg }, { "--pid", cfg.pid_arg }, { "--tid", cfg.tid_arg },
		{ "--cgroup", env.cgroup_arg }, { "--container", env.container_arg },
		{ "--pod", env.pod_arg }, { "--namespace", env.namespace_arg },
		{ "--uid", cfg.uid_arg }, { "--comm", cfg.comm_arg },
	};
	char *argv[4 + 2 * ARRAY_SIZE(pass)];
	int argc = 0, out[2], err[2];

	add_arg(argv, &argc, k->path, "--json");
	for (size_t i = 0; i < ARRAY_SIZE(pass); i++)
		if (pass[i].arg)
			add_arg(argv, &argc, pass[i].opt, pass[i].arg);
	argv[argc] = NULL;
	if (cfg.verbose) {
		fprintf(stderr, TOOL ": running");
		for (int i = 0; i < argc; i++)
			fprintf(stderr, " %s", argv[i]);
		fputc('\n', stderr);
	}
	if (pipe2(out, O_CLOEXEC) || pipe2(err, O_CLOEXEC))
		aiscope_fail(EXIT_RUNTIME, "pipe: %s", strerror(errno));
	k->pid = fork();
	if (k->pid < 0)
		aiscope_fail(EXIT_RUNTIME, "fork: %s", strerror(errno));
	if (!k->pid) {
		/* its own process group: a terminal's Ctrl-C reaches topograph,
		 * which passes it on once; and it ends if we die */
		setpgid(0, 0);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		sigprocmask(SIG_SETMASK, oldmask, NULL);
		dup2(out[1], STDOUT_FILENO);
		dup2(err[1], STDERR_FILENO);
		execv(k->path, argv);
		dprintf(STDERR_FILENO, "%s: cannot run %s: %s\n", k->tool, k->path, strerror(errno));
		_exit(EXIT_CANNOT_RUN);
	}
	close(out[1]);
	close(err[1]);
	k->out_fd = out[0];
	k->err_fd = err[0];
}

static void hold(struct child *k, const char *line, size_t len)
{
	char *p = realloc(k->held, k->held_len + len + 1);

	if (!p)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	memcpy(p + k->held_len, line, len);
	p[k->held_len + len] = '\n';
	k->held = p;
	k->held_len += len + 1;
}

static void announce(void)
{
	fprintf(stderr, "Tracing the communication graph with");
	for (int i = 0; i < nkids; i++)
		fprintf(stderr, "%s %s", i ? "," : "", kids[i].tool);
	if (cfg.duration_arg)
		fprintf(stderr, " for %s.\n", cfg.duration_arg);
	else
		fprintf(stderr, "... Ctrl-C to end.\n");
}

/* A child's stderr line: its "Tracing" line marks it attached; before
 * that, lines are held (a usage error is printed once, by the first tool
 * that fails); after it, forwarded (warnings about lost events). */
static void child_err_line(struct child *k, const char *line, size_t len)
{
	if (!k->tracing && memmem(line, len, "Tracing", 7)) {
		k->tracing = true;
		ntracing++;
		if (cfg.verbose)
			fprintf(stderr, "%.*s\n", (int)len, line);
		if (ntracing == nkids) {
			traced_mono_ns = clock_ns(CLOCK_MONOTONIC);
			announce();
		}
		return;
	}
	if (!k->tracing && !cfg.verbose) {
		hold(k, line, len);
		return;
	}
	fprintf(stderr, "%.*s\n", (int)len, line);
}

static void child_out_line(struct child *k, const char *line, size_t len)
{
	ingest(k->tool, ++k->lineno, line, len);
}

/* Reads what is there; calls fn per complete line. False at EOF (or, when
 * last, once nothing more is there). */
static bool drain(struct child *k, int *fd, char **buf, size_t *blen,
		  void (*fn)(struct child *, const char *, size_t), bool last)
{
	char chunk[65536];
	ssize_t n = read(*fd, chunk, sizeof(chunk));
	char *p, *nl, *start;

	if (n < 0 && (errno == EINTR || (errno == EAGAIN && !last)))
		return true;
	if (n <= 0) {
		if (*blen)
			fn(k, *buf, *blen);	/* a last line without its newline */
		*blen = 0;
		epoll_ctl(watch_ep, EPOLL_CTL_DEL, *fd, NULL);
		close(*fd);
		*fd = -1;
		return false;
	}
	p = realloc(*buf, *blen + n);
	if (!p)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	*buf = p;
	memcpy(p + *blen, chunk, n);
	*blen += n;
	start = p;
	while ((nl = memchr(start, '\n', p + *blen - start))) {
		fn(k, start, nl - start);
		start = nl + 1;
	}
	*blen = p + *blen - start;
	memmove(p, start, *blen);
	if (*blen >= TOPO_MAX_LINE)
		aiscope_fail(EXIT_RUNTIME, "%s wrote a line longer than %d MiB", k->tool, TOPO_MAX_LINE >> 20);
	return true;
}

static void stop_kids(int sig, struct child *except)
{
	for (int i = 0; i < nkids; i++) {
		struct child *k = &kids[i];

		if (k == except || k->exited)
			continue;
		if (sig == SIGTERM)
			k->killed = true;
		kill(k->pid, sig);
	}
}

static void reap(void)
{
	int status;

	for (int i = 0; i < nkids; i++) {
		struct child *k = &kids[i];

		if (k->exited || waitpid(k->pid, &status, WNOHANG) != k->pid)
			continue;
		k->exited = true;
		nexited++;
		k->code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
}

static void final_drain(void)
{
	for (int i = 0; i < nkids; i++) {
		struct child *k = &kids[i];

		if (k->out_fd >= 0) {
			fcntl(k->out_fd, F_SETFL, O_NONBLOCK);
			while (drain(k, &k->out_fd, &k->out_buf, &k->out_len, child_out_line, true))
				;
		}
		if (k->err_fd >= 0) {
			fcntl(k->err_fd, F_SETFL, O_NONBLOCK);
			while (drain(k, &k->err_fd, &k->err_buf, &k->err_len, child_err_line, true))
				;
		}
	}
}

static struct child *first_failed(void)
{
	for (int i = 0; i < nkids; i++)
		if (kids[i].exited && kids[i].code && !kids[i].killed)
			return &kids[i];
	return NULL;
}

static void locate_kids(void)
{
	const char *want[MAX_KIDS] = { "socketsnoop", "ipcsnoop" };
	char self[PATH_MAX], missing[256] = "";
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	int nwant = 2;

	if (n <= 0)
		snprintf(self, sizeof(self), ".");
	else
		self[n] = 0;
	if (strrchr(self, '/'))
		*strrchr(self, '/') = 0;
	for (int i = 0; extra_tools[i]; i++)
		if (cfg.with & (1u << i))
			want[nwant++] = extra_tools[i];
	for (int i = 0; i < nwant; i++) {
		struct child *k = &kids[nkids];

		k->tool = want[i];
		if (!find_tool(want[i], k->path, sizeof(k->path), self)) {
			snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
				 "%s%s", *missing ? ", " : "", want[i]);
			continue;
		}
		nkids++;
	}
	if (*missing)
		aiscope_fail(EXIT_CANNOT_RUN, "cannot run here: %s not found (looked in %s and PATH)",
		     missing, self);
}

/* A tool ended in error: its last line before it traced is the one line
 * we print (a usage error, a missing privilege), with its exit code. */
static void __attribute__((noreturn)) child_failed(struct child *k)
{
	int code = k->code == EXIT_USAGE || k->code == EXIT_CANNOT_RUN ? k->code : EXIT_RUNTIME;
	char *end, *last;

	if (cfg.verbose || !k->held_len)
		aiscope_fail(code, "%s exited with status %d: no graph", k->tool, k->code);
	end = k->held + k->held_len - 1;	/* the last newline */
	*end = 0;
	last = strrchr(k->held, '\n');
	aiscope_fail(code, "%s", last ? last + 1 : k->held);
}


/* CONTRACT 7: a closed stdout ends the capture at once, silently, as a
 * tool's does: the graph has no reader. The tools are stopped quietly,
 * the hooks come off. */
static void __attribute__((noreturn)) stdout_gone(void)
{
	stop_kids(SIGTERM, NULL);
	lifecycle_stop();
	_exit(0);
}

static void watch_add(int fd, uint64_t tag, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	/* stdout as a regular file cannot be watched, and never closes */
	if (epoll_ctl(watch_ep, EPOLL_CTL_ADD, fd, &ev) && tag != WATCH_STDOUT)
		aiscope_fail(EXIT_RUNTIME, "epoll_ctl: %s", strerror(errno));
}

static void watch_open(void)
{
	sigset_t chld;

	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	watch_ep = epoll_create1(EPOLL_CLOEXEC);
	chld_fd = signalfd(-1, &chld, SFD_CLOEXEC | SFD_NONBLOCK);
	if (watch_ep < 0 || chld_fd < 0)
		aiscope_fail(EXIT_RUNTIME, "cannot watch the tools: %s", strerror(errno));
	watch_add(chld_fd, WATCH_CHLD, EPOLLIN);
	/* a pipe whose reader went away reports EPOLLERR */
	watch_add(STDOUT_FILENO, WATCH_STDOUT, 0);
}

static void watch_kid(struct child *k)
{
	watch_add(k->out_fd, 2 * (k - kids), EPOLLIN);
	watch_add(k->err_fd, 2 * (k - kids) + 1, EPOLLIN);
}

static void watch_event(uint64_t tag)
{
	struct signalfd_siginfo si;
	struct child *k;

	if (tag == WATCH_STDOUT)
		stdout_gone();
	if (tag == WATCH_CHLD) {
		/* which ones ended, reap() asks each */
		while (read(chld_fd, &si, sizeof(si)) == sizeof(si))
			;
		return;
	}
	k = &kids[tag / 2];
	if (tag % 2 == 0)
		drain(k, &k->out_fd, &k->out_buf, &k->out_len, child_out_line, false);
	else
		drain(k, &k->err_fd, &k->err_buf, &k->err_len, child_err_line, false);
}

/* What the tools wrote and which of them ended, waiting up to timeout_ms
 * for it (-1: until something comes). */
static void watch_kids(int timeout_ms)
{
	struct epoll_event evs[WATCH_STDOUT + 1];
	struct child *failed;
	int n = epoll_wait(watch_ep, evs, ARRAY_SIZE(evs), timeout_ms);

	if (n < 0 && errno != EINTR)
		aiscope_fail(EXIT_RUNTIME, "epoll_wait: %s", strerror(errno));
	for (int i = 0; i < n; i++)
		watch_event(evs[i].data.u64);
	reap();
	failed = first_failed();
	if (failed && !stopping) {
		/* one tool cannot run: the others stop, quietly */
		stopping = true;
		stop_kids(SIGTERM, failed);
	}
}

/* lib/run's on_watch: the capture is over when every tool has ended of
 * its own (its -d, or it failed) before a signal or our -d */
static int on_watch(void *ctx)
{
	watch_kids(0);
	if (nexited == nkids)
		aiscope_loop_stop(ctx, AISCOPE_EXIT_DURATION);
	return 0;
}

/* lib/run's on_final: a signal is passed on to the tools once (a second
 * one waits, blocked, and is dropped), unless one failed and they are
 * stopping already; then what they print until they end is taken (their
 * edges, their summaries), but not what a process they left behind may
 * still write into the pipes. */
static int on_final(void *ctx)
{
	const struct aiscope_loop *l = ctx;

	if (l->exit == AISCOPE_EXIT_SIGNAL && !stopping) {
		stopping = true;
		stop_mono_ns = clock_ns(CLOCK_MONOTONIC);
		stop_kids(SIGINT, NULL);
	}
	while (nexited < nkids)
		watch_kids(-1);
	final_drain();
	return 0;
}

/* Signals that came while the tools ended are dropped, as the capture's
 * own; later ones find their default action again. */
static void unblock_signals(const sigset_t *mask, const sigset_t *old)
{
	struct timespec now = {};

	while (sigtimedwait(mask, NULL, &now) > 0)
		;
	sigprocmask(SIG_SETMASK, old, NULL);
}

int capture(void)
{
	struct aiscope_loop loop = { .on_watch = on_watch, .on_final = on_final };
	sigset_t mask, old;
	struct child *failed;
	uint64_t t0 = clock_ns(CLOCK_MONOTONIC), end, start;

	/* the filters resolved as every tool does (pids exist, cgroup and
	 * container found) before any tool starts, so that a bad value gives
	 * one line (the tools would each print theirs) */
	aiscope_setup(TOOL);
	locate_kids();
	lifecycle_start();
	/* as lib/run's loop does, but before the tools start: a shell without
	 * job control starts "topograph &" with SIGINT ignored, which no
	 * signalfd would see and the tools would inherit */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGCHLD);
	/* blocked from here: one that comes before the loop waits for it */
	sigprocmask(SIG_BLOCK, &mask, &old);
	watch_open();
	for (int i = 0; i < nkids; i++) {
		spawn(&kids[i], &old);
		watch_kid(&kids[i]);
	}
	/* no BPF object of its own: the lifecycle hooks' lost events are
	 * counted once, at the end (lifecycle_collect) */
	loop.ctx = &loop;
	loop.watch_fd = watch_ep;
	if (aiscope_loop_run(&loop))
		aiscope_fail(EXIT_RUNTIME, "the event loop failed: %s", strerror(errno));
	aiscope_loop_final(&loop);
	close(chld_fd);
	close(watch_ep);
	unblock_signals(&mask, &old);
	failed = first_failed();
	if (failed)
		child_failed(failed);
	G.exit_reason = aiscope_exit_name(loop.exit);
	/* the rates are over the time every tool traced: from the last one's
	 * "Tracing" line to Ctrl-C or the end of -d (not the tools' exit) */
	end = stop_mono_ns ? stop_mono_ns : clock_ns(CLOCK_MONOTONIC);
	if (env.duration_ns && t0 + env.duration_ns < end)
		end = t0 + env.duration_ns;
	start = traced_mono_ns ? traced_mono_ns : t0;
	G.window_ns = end > start ? end - start : 0;
	return 0;
}
