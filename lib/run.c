// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "cgset.h"
#include "ctrmeta.h"
#include "kfeatures.h"
#include "metrics.h"
#include "opts.h"
#include "run.h"
#include "util.h"

static int64_t rt_offset;
static bool rt_offset_set;

const struct bpf_object_open_opts *aiscope_open_opts(void)
{
	static struct bpf_object_open_opts opts = { .sz = sizeof(opts) };

	opts.btf_custom_path = env.btf_path;
	return &opts;
}

static void refresh_offset(void)
{
	rt_offset = clock_realtime_offset(feat_boot_clock());
	rt_offset_set = true;
}

uint64_t aiscope_realtime(uint64_t bpf_ns)
{
	if (!rt_offset_set)
		refresh_offset();
	return bpf_ns + rt_offset;
}

uint64_t aiscope_now_realtime(void)
{
	return clock_ns(CLOCK_REALTIME);
}

void aiscope_map_resize(struct bpf_object *obj, const char *name, uint32_t entries)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);

	if (!m || bpf_map__set_max_entries(m, entries))
		aiscope_fail(EXIT_RUNTIME, "cannot size BPF map %s", name);
}

static void configure_cfg(volatile struct aiscope_cfg *cfg)
{
	cfg->by_pid = env.npids > 0;
	cfg->by_tid = env.ntids > 0;
	cfg->by_uid = env.has_uid;
	cfg->uid = env.uid;
	cfg->by_comm = env.comm[0] != 0;
	for (int i = 0; i < AISCOPE_COMM_LEN; i++)
		cfg->comm[i] = env.comm[i];
	cfg->ncg = env.ncg;
	for (int i = 0; i < env.ncg; i++) {
		cfg->cg[i].ssid = env.cg[i].ssid;
		cfg->cg[i].level = env.cg[i].level;
		cfg->cg[i].id = env.cg[i].id;
	}
	cfg->by_cgset = cgset_active();
	cfg->attr_ssid = cg_attr_ssid();
	cfg->wakeup_bytes = env.buffer_size / 16;
}

void aiscope_bpf_prepare(struct aiscope_bpf *b, struct bpf_object *obj,
			 volatile struct aiscope_cfg *cfg)
{
	const struct probe_hook *missing;
	char why[1024];
	int err;

	b->obj = obj;
	/* the whole plan only where it is shown */
	if (env.list_probes || env.verbose)
		err = probe_resolve(b->hooks, b->nhooks, features_ops(), env.probe_mask);
	else
		err = probe_resolve_first(b->hooks, b->nhooks, features_ops(), env.probe_mask);
	if (b->on_plan)
		b->on_plan(b);
	if (env.list_probes) {
		struct jw w;

		jw_init(&w, stdout);
		probe_print_plan(stdout, b->hooks, b->nhooks, env.json ? &w : NULL, env.tool,
				 aiscope_now_realtime());
		if (b->list_extra)
			b->list_extra(b, stdout, env.json ? &w : NULL);
		exit(0);
	}
	if (env.verbose) {
		fprintf(stderr, "%s: BTF %s, cgroups %s, v1 attribution controller id %d, %s clock\n",
			env.tool, feat_btf_source() ? feat_btf_source() : "none",
			cg_mode_name(cg_mode()), cg_attr_ssid(),
			feat_boot_clock() ? "boot" : "monotonic");
		probe_print_plan(stderr, b->hooks, b->nhooks, NULL, env.tool, 0);
	}
	if (err && (missing = probe_first_missing(b->hooks, b->nhooks))) {
		probe_explain(missing, why, sizeof(why));
		aiscope_fail(EXIT_CANNOT_RUN, "no way to attach %s on this kernel: %s", missing->name, why);
	}
	if (!feat_privileged(why, sizeof(why)))
		aiscope_fail(EXIT_CANNOT_RUN, "%s", why);
	if (!feat_core_btf())
		aiscope_fail(EXIT_CANNOT_RUN,
			     "this kernel has no BTF (/sys/kernel/btf/vmlinux): pass one with --btf FILE");
	feat_release_btf();
	err = probe_prepare(obj, b->hooks, b->nhooks);
	if (err)
		aiscope_fail(EXIT_RUNTIME, "cannot prepare BPF programs: %s", strerror(-err));
	configure_cfg(cfg);
	aiscope_map_resize(obj, "aiscope_events",
			   b->streaming ? env.buffer_size : (uint32_t)ringbuf_size(0, getpagesize()));
}

static void fill_ids(struct bpf_object *obj, const char *name, const uint32_t *ids, int n)
{
	struct bpf_map *m = bpf_object__find_map_by_name(obj, name);
	__u8 one = 1;

	for (int i = 0; i < n; i++)
		if (!m || bpf_map__update_elem(m, &ids[i], sizeof(ids[i]), &one, sizeof(one), BPF_ANY))
			aiscope_fail(EXIT_RUNTIME, "cannot fill BPF map %s: %s", name, strerror(errno));
}

static int cgset_map_add(const struct aiscope_cgset_key *k, void *map)
{
	__u8 one = 1;

	return bpf_map__update_elem(map, k, sizeof(*k), &one, sizeof(one), BPF_ANY) ? -errno : 0;
}

void aiscope_bpf_load(struct aiscope_bpf *b, int err)
{
	/* tried, and refused as newer than this kernel: a helper (by its
	 * number in enum bpf_func_id, e.g. 181 bpf_loop, Linux 5.17) or
	 * callback functions */
	if (err && env.bpf_missing[0])
		aiscope_fail(EXIT_CANNOT_RUN, "this kernel's BPF lacks %s, which program %s needs: %s",
			     env.bpf_missing, env.bpf_missing_prog[0] ? env.bpf_missing_prog : "?",
			     "a newer kernel is needed (-v shows the verifier log)");
	if (err == -EPERM)
		aiscope_fail(EXIT_CANNOT_RUN, "not permitted to load BPF programs (%s)", strerror(-err));
	if (err)
		aiscope_fail(EXIT_RUNTIME, "failed to load BPF programs: %s (-v shows the verifier log)",
			     strerror(-err));
	fill_ids(b->obj, "aiscope_pids", env.pids, env.npids);
	fill_ids(b->obj, "aiscope_tids", env.tids, env.ntids);
	if (cgset_active()) {
		struct bpf_map *m = bpf_object__find_map_by_name(b->obj, "aiscope_cgset");

		if (!m)
			aiscope_fail(EXIT_RUNTIME, "cannot fill BPF map aiscope_cgset: no such map");
		cgset_attach(cgset_map_add, m);
	}
	if (b->streaming) {
		struct bpf_map *m = bpf_object__find_map_by_name(b->obj, "aiscope_events");

		b->rb = ring_buffer__new(bpf_map__fd(m), b->on_event, b->ctx, NULL);
		if (!b->rb)
			aiscope_fail(EXIT_RUNTIME, "cannot open the ring buffer: %s", strerror(errno));
	}
}

/* SIGINT and SIGTERM wait for the event loop's signalfd from here on. A
 * background job of a non-interactive shell ignores SIGINT: one that came
 * between the "Tracing..." line and the loop would be dropped, and the
 * tool would never stop. Blocked, it stays pending until the loop reads it. */
static void block_stop_signals(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
}

void aiscope_bpf_attach(struct aiscope_bpf *b)
{
	const struct probe_hook *h = NULL;
	int err = probe_attach(b->obj, b->hooks, b->nhooks, &h);

	if (!err) {
		block_stop_signals();
		return;
	}
	if (h) {
		const struct probe_cand *c = &h->cand[h->chosen];

		aiscope_fail(err == -EPERM ? EXIT_CANNOT_RUN : EXIT_RUNTIME,
			     "cannot attach %s with %s:%s: %s", h->name, probe_mech_name(c->mech),
			     c->target, strerror(-err));
	}
	aiscope_fail(EXIT_RUNTIME, "cannot attach: %s", strerror(-err));
}

void aiscope_bpf_destroy(struct aiscope_bpf *b)
{
	/* the last interval's figures (tools print it after the loop) */
	metrics_publish(b->lost);
	ring_buffer__free(b->rb);
	b->rb = NULL;
	probe_detach(b->hooks, b->nhooks);
}

/* ---- lost events ---- */

/* the kernel's count of the runs of the tool's programs it skipped */
static uint64_t read_skipped(struct bpf_object *obj)
{
	struct bpf_program *p;
	uint64_t n = 0;

	bpf_object__for_each_program(p, obj) {
		struct bpf_prog_info info = {};
		uint32_t len = sizeof(info);
		int fd = bpf_program__fd(p);

		/* before 5.12 the kernel fills less: recursion_misses stays 0 */
		if (fd >= 0 && !bpf_obj_get_info_by_fd(fd, &info, &len))
			n += info.recursion_misses;
	}
	return n;
}

static void read_lost(struct aiscope_bpf *b, uint64_t now[AISCOPE_LOST_ALL])
{
	struct bpf_map *m = b->obj ? bpf_object__find_map_by_name(b->obj, "aiscope_lost") : NULL;
	int ncpu = libbpf_num_possible_cpus();
	uint64_t vals[ncpu > 0 ? ncpu : 1];

	memset(now, 0, sizeof(uint64_t) * AISCOPE_LOST_ALL);
	/* read as the loop drains the watcher: counted in the interval it
	 * was found in */
	now[AISCOPE_LOST_CGROUP] = cg_watch_lost();
	if (b->obj)
		now[AISCOPE_LOST_SKIPPED] = read_skipped(b->obj);
	if (!m || ncpu <= 0)
		return;
	for (uint32_t k = 0; k < AISCOPE_LOST_NR; k++) {
		if (bpf_map__lookup_elem(m, &k, sizeof(k), vals, sizeof(vals), 0))
			continue;
		for (int c = 0; c < ncpu; c++)
			now[k] += vals[c];
	}
}

uint64_t aiscope_lost_total(const struct aiscope_bpf *b)
{
	uint64_t t = 0;

	for (int k = 0; k < AISCOPE_LOST_ALL; k++)
		t += b->lost[k];
	return t;
}

static const char *lost_advice(const uint64_t d[AISCOPE_LOST_ALL])
{
	if (d[AISCOPE_LOST_RINGBUF])
		return "try a larger --buffer-size or a filter";
	if (d[AISCOPE_LOST_MAP])
		return "try a filter (-p, -c, --container)";
	if (d[AISCOPE_LOST_SKIPPED])
		return "the kernel skipped the tool's programs: they were running already on that CPU";
	return "cgroups were made faster than the watcher read them: one made and removed then has no path";
}

uint64_t aiscope_lost_check(struct aiscope_bpf *b)
{
	uint64_t now[AISCOPE_LOST_ALL], d[AISCOPE_LOST_ALL], total = 0;
	char skipped[64] = "", cgroups[64] = "";

	if (!b)
		return 0;
	read_lost(b, now);
	for (int k = 0; k < AISCOPE_LOST_ALL; k++) {
		d[k] = now[k] - b->lost[k];
		b->lost[k] = now[k];
		total += d[k];
	}
	if (!total)
		return 0;
	if (env.json) {
		struct jw w;

		jw_init(&w, stdout);
		jw_record_begin(&w, "lost", env.tool, aiscope_now_realtime());
		jw_ku64(&w, "lost_events", total);
		jw_ku64(&w, "ringbuf_full", d[AISCOPE_LOST_RINGBUF]);
		jw_ku64(&w, "map_full", d[AISCOPE_LOST_MAP]);
		jw_ku64(&w, "recursion_misses", d[AISCOPE_LOST_SKIPPED]);
		jw_ku64(&w, "cgroup_events_lost", d[AISCOPE_LOST_CGROUP]);
		jw_record_end(&w);
	}
	if (d[AISCOPE_LOST_SKIPPED])
		snprintf(skipped, sizeof(skipped), ", runs the kernel skipped: %llu",
			 (unsigned long long)d[AISCOPE_LOST_SKIPPED]);
	if (d[AISCOPE_LOST_CGROUP])
		snprintf(cgroups, sizeof(cgroups), ", cgroup creation records: %llu",
			 (unsigned long long)d[AISCOPE_LOST_CGROUP]);
	fprintf(stderr, "%s: lost %llu events (ring buffer full: %llu, map full: %llu%s%s): %s\n",
		env.tool, (unsigned long long)total, (unsigned long long)d[AISCOPE_LOST_RINGBUF],
		(unsigned long long)d[AISCOPE_LOST_MAP], skipped, cgroups, lost_advice(d));
	return total;
}

/* ---- event loop ---- */

static int timer_fd(uint64_t ns, bool periodic)
{
	struct itimerspec its = {};
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);

	if (fd < 0)
		return -1;
	its.it_value.tv_sec = ns / NSEC_PER_SEC;
	its.it_value.tv_nsec = ns % NSEC_PER_SEC;
	if (periodic)
		its.it_interval = its.it_value;
	timerfd_settime(fd, 0, &its, NULL);
	return fd;
}

static bool stdout_broken(void)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return false;
	return errno == EPIPE || ferror(stdout);
}

void aiscope_tracing(const char *what, ...)
{
	va_list ap;

	fputs("Tracing ", stderr);
	va_start(ap, what);
	vfprintf(stderr, what, ap);
	va_end(ap);
	fputs("... Ctrl-C to end.\n", stderr);
	fflush(stdout);
}

int aiscope_loop_stop(struct aiscope_loop *l, enum aiscope_exit why)
{
	if (l->exit == AISCOPE_RUNNING)
		l->exit = why;
	return -ECANCELED;
}

bool aiscope_loop_running(const struct aiscope_loop *l)
{
	return l->exit == AISCOPE_RUNNING || l->final;
}

const char *aiscope_exit_name(enum aiscope_exit e)
{
	static const char *const names[] = {
		[AISCOPE_EXIT_SIGNAL] = "signal", [AISCOPE_EXIT_DURATION] = "duration",
		[AISCOPE_EXIT_COUNT] = "count", [AISCOPE_EXIT_PIPE] = "pipe",
		[AISCOPE_EXIT_ERROR] = "error",
	};

	return e < ARRAY_SIZE(names) ? names[e] : NULL;
}

uint64_t aiscope_loop_interval(struct aiscope_loop *l)
{
	uint64_t now = clock_ns(CLOCK_MONOTONIC), interval = now - l->interval_start;

	l->interval_start = now;
	return interval;
}

void aiscope_loop_final(struct aiscope_loop *l)
{
	if (!l->on_final || (l->exit == AISCOPE_EXIT_COUNT && !l->final_drains))
		return;
	if (!l->final_drains)
		l->ticks++;
	l->final = true;
	l->on_final(l->ctx);
	l->final = false;
	aiscope_lost_check(l->bpf);
}

int aiscope_run(struct aiscope_loop *l, void (*summary)(void))
{
	if (l->exit == AISCOPE_RUNNING)
		aiscope_loop_run(l);
	aiscope_loop_final(l);
	summary();
	fflush(stdout);
	return aiscope_teardown(l->bpf, l);
}

/* user space's own losses, on stderr at the end (the summary has them) */
static void report_losses(void)
{
	uint64_t evicted = ctrmeta_evicted(), dropped = ctrmeta_expect_dropped();

	if (evicted)
		fprintf(stderr, "%s: %llu containers' names left the cache of %d (a name whose "
			"runtime state was gone by then could not be given again)\n",
			env.tool, (unsigned long long)evicted, CTRMETA_CAP);
	if (dropped)
		fprintf(stderr, "%s: %llu new containers' names were not read at their start "
			"(%d were waiting for their runtime's state): one gone by its first line "
			"has no name\n", env.tool, (unsigned long long)dropped, CTRMETA_WAITING);
	if (cgset_dropped())
		fprintf(stderr, "%s: %llu containers' cgroups were left out of the --pod/--namespace "
			"set (%d cgroups at most, %d containers waiting for their names): their tasks "
			"were not traced\n", env.tool, (unsigned long long)cgset_dropped(),
			AISCOPE_MAX_CGSET, CGSET_PENDING);
	if (cg_paths_evicted())
		fprintf(stderr, "%s: %llu removed cgroups were forgotten at the cache's cap: a line "
			"about one of them has no cgroup path or container\n", env.tool,
			(unsigned long long)cg_paths_evicted());
}

int aiscope_teardown(struct aiscope_bpf *b, const struct aiscope_loop *l)
{
	if (b)
		aiscope_bpf_destroy(b);
	report_losses();
	cg_cleanup();
	features_cleanup();
	return l && l->exit == AISCOPE_EXIT_ERROR ? EXIT_RUNTIME : 0;
}

enum { SRC_SIGNAL = 1, SRC_TICK, SRC_DEADLINE, SRC_RING, SRC_POLL, SRC_STDOUT, SRC_AUX, SRC_SWEEP,
	SRC_WATCH, SRC_CGROUP, SRC_CTRMETA, SRC_HTTP = 0x100 };	/* SRC_HTTP and up: the metrics server's sockets */

static int add_fd(int ep, int fd, uint32_t events, uint64_t tag)
{
	struct epoll_event ev = { .events = events, .data.u64 = tag };

	return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* A container's cgroup was just made: its names are read while it lives,
 * not at its first line, when podman run --rm may have removed them. */
static void container_made(const struct container_info *ci, uint64_t id, bool v1)
{
	ctrmeta_expect(ci->id, ci->runtime);
	cgset_made(ci, id, v1);
}

static void watch_containers(int ep)
{
	int fd = cg_watch_fd();

	cg_watch_on_made(container_made);
	/* and those that run already, for one that ends before its line */
	cg_watch_existing();
	if (fd < 0)
		return;
	add_fd(ep, fd, EPOLLIN, SRC_CGROUP);
	/* read by ctrmeta_poll, before each wait */
	fd = ctrmeta_watch_fd();
	if (fd >= 0)
		add_fd(ep, fd, EPOLLIN, SRC_CTRMETA);
}

int aiscope_loop_run(struct aiscope_loop *l)
{
	struct aiscope_bpf *b = l->bpf;
	const uint64_t *lost = b ? b->lost : NULL;
	uint64_t tick_ns = l->tick_ns ? l->tick_ns : NSEC_PER_SEC;
	int ep, sfd, tfd, dfd = -1, pfd = -1, wfd = -1;
	sigset_t mask;

	l->interval_start = clock_ns(CLOCK_MONOTONIC);
	signal(SIGPIPE, SIG_IGN);
	/* A shell without job control starts background commands ("tool &"
	 * in a script) with SIGINT ignored, and an ignored signal never
	 * reaches the signalfd: CONTRACT 7 wants SIGINT to end the tool with
	 * its summary wherever it was started. */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	tfd = timer_fd(tick_ns, true);
	if (sfd < 0 || ep < 0 || tfd < 0)
		aiscope_fail(EXIT_RUNTIME, "cannot set up the event loop: %s", strerror(errno));
	add_fd(ep, sfd, EPOLLIN, SRC_SIGNAL);
	add_fd(ep, tfd, EPOLLIN, SRC_TICK);
	if (env.duration_ns) {
		uint64_t spent = clock_ns(CLOCK_MONOTONIC) - env.start_mono_ns;

		dfd = timer_fd(env.duration_ns > spent ? env.duration_ns - spent : 1, false);
		add_fd(ep, dfd, EPOLLIN, SRC_DEADLINE);
	}
	if (b && b->rb) {
		add_fd(ep, ring_buffer__epoll_fd(b->rb), EPOLLIN, SRC_RING);
		pfd = timer_fd(AISCOPE_POLL_MS * NSEC_PER_MSEC, true);
		add_fd(ep, pfd, EPOLLIN, SRC_POLL);
	}
	if (l->aux_rb)
		add_fd(ep, ring_buffer__epoll_fd(l->aux_rb), EPOLLIN, SRC_AUX);
	if (l->on_watch)
		add_fd(ep, l->watch_fd, EPOLLIN, SRC_WATCH);
	watch_containers(ep);
	/* a pipe whose reader went away reports EPOLLERR: leave at once */
	add_fd(ep, STDOUT_FILENO, 0, SRC_STDOUT);
	if (metrics_listening()) {
		if (metrics_attach(ep, SRC_HTTP))
			aiscope_fail(EXIT_RUNTIME, "cannot serve metrics: %s", strerror(errno));
		/* closes connections past their deadline */
		wfd = timer_fd(PROM_HTTP_SWEEP_NS, true);
		add_fd(ep, wfd, EPOLLIN, SRC_SWEEP);
	}
	/* FILE and /metrics exist from the start (build info, zero counters) */
	metrics_publish(lost);
	refresh_offset();

	while (l->exit == AISCOPE_RUNNING) {
		struct epoll_event evs[8];
		/* woken too when an expected container's state is due */
		int timeout = ctrmeta_poll(), n;

		/* --pod, --namespace: those whose names were read since */
		cgset_poll();
		n = epoll_wait(ep, evs, 8, timeout);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			l->exit = AISCOPE_EXIT_ERROR;
			break;
		}
		for (int i = 0; i < n; i++)
			if (evs[i].data.u64 == SRC_WATCH && l->on_watch(l->ctx) == AISCOPE_STOP)
				aiscope_loop_stop(l, AISCOPE_EXIT_COUNT);
		for (int i = 0; i < n && l->exit == AISCOPE_RUNNING; i++) {
			uint64_t exp;
			struct signalfd_siginfo si;

			if (metrics_owns(evs[i].data.u64)) {
				metrics_event(evs[i].data.u64, evs[i].events);
				continue;
			}
			switch (evs[i].data.u64) {
			case SRC_SWEEP:
				if (read(wfd, &exp, sizeof(exp)) > 0)
					metrics_sweep();
				break;
			case SRC_SIGNAL:
				if (read(sfd, &si, sizeof(si)) > 0)
					l->exit = AISCOPE_EXIT_SIGNAL;
				break;
			case SRC_DEADLINE:
				l->exit = AISCOPE_EXIT_DURATION;
				break;
			case SRC_STDOUT:
				l->exit = AISCOPE_EXIT_PIPE;
				break;
			case SRC_CGROUP:
				cg_watch_drain();
				break;
			case SRC_POLL:
				/* events queued without a wakeup */
				if (read(pfd, &exp, sizeof(exp)) < 0)
					break;
				__attribute__((fallthrough));
			case SRC_RING:
				if (ring_buffer__consume(b->rb) < 0 && l->exit == AISCOPE_RUNNING)
					l->exit = AISCOPE_EXIT_ERROR;
				break;
			case SRC_AUX:
				if (ring_buffer__consume(l->aux_rb) < 0 && l->exit == AISCOPE_RUNNING)
					l->exit = AISCOPE_EXIT_ERROR;
				break;
			case SRC_TICK:
				if (read(tfd, &exp, sizeof(exp)) < 0)
					break;
				refresh_offset();
				/* events stamped before the tick belong before it */
				if (b && b->rb)
					ring_buffer__consume(b->rb);
				l->ticks++;
				if (l->on_tick && l->on_tick(l->ctx) == AISCOPE_STOP)
					aiscope_loop_stop(l, AISCOPE_EXIT_COUNT);
				aiscope_lost_check(b);
				metrics_publish(lost);
				break;
			}
		}
		if (stdout_broken())
			l->exit = AISCOPE_EXIT_PIPE;
	}
	/* drain what is already in the buffer, unless nobody reads it */
	if (b && b->rb && l->exit != AISCOPE_EXIT_PIPE && l->exit != AISCOPE_EXIT_COUNT)
		ring_buffer__consume(b->rb);
	close(ep);
	close(sfd);
	close(tfd);
	if (dfd >= 0)
		close(dfd);
	if (pfd >= 0)
		close(pfd);
	if (wfd >= 0)
		close(wfd);
	metrics_stop();
	if (l->exit == AISCOPE_EXIT_PIPE) {
		/* CONTRACT 7: a closed stdout ends the tool at once, silently */
		if (b)
			aiscope_bpf_destroy(b);
		_exit(0);
	}
	return l->exit == AISCOPE_EXIT_ERROR ? -1 : 0;
}

/* ---- identity ---- */

const char *aiscope_ident_cgroup(const struct aiscope_ident *id, struct container_info *ci)
{
	const char *path = cg_path_of(id->cgroup_id, id->cgroup_v1);

	if (!path || !cg_parse_container(path, ci))
		memset(ci, 0, sizeof(*ci));
	return path;
}

static const struct ctr_meta *container_meta(const struct container_info *ci)
{
	const struct ctr_meta *m = ci->id[0] ? ctrmeta_lookup(ci->id, ci->runtime) : NULL;

	return m && m->found ? m : NULL;
}

const char *aiscope_container_short(const struct container_info *ci, char *buf)
{
	const struct ctr_meta *m;

	if (!ci->id[0])
		return "-";
	if (env.wide)
		return ci->id;
	m = container_meta(ci);
	if (m && m->name[0])
		return m->name;
	memcpy(buf, ci->id, 12);
	buf[12] = 0;
	return buf;
}

const char *aiscope_ident_container_short(const struct aiscope_ident *id, char *buf, size_t len)
{
	struct container_info ci;
	char short_id[16];

	aiscope_ident_cgroup(id, &ci);
	snprintf(buf, len, "%s", aiscope_container_short(&ci, short_id));
	return buf;
}

const char *aiscope_container_runtime(const struct container_info *ci)
{
	const struct ctr_meta *m;

	if (ci->runtime)
		return ci->runtime;
	m = container_meta(ci);
	return m && m->runtime ? m->runtime : "-";
}

const char *aiscope_container_pod(const struct container_info *ci, char *buf, size_t len)
{
	const struct ctr_meta *m = container_meta(ci);

	if (m && m->pod_name[0] && !env.wide) {
		snprintf(buf, len, "%s%s%s", m->pod_namespace, m->pod_namespace[0] ? "/" : "",
			 m->pod_name);
		return buf;
	}
	return ci->pod_uid[0] ? ci->pod_uid : "-";
}

/* pfx NAME in buf; the block's own keys (no prefix) as they are */
static const char *id_key(char *buf, size_t len, const char *pfx, const char *name)
{
	if (!pfx[0])
		return name;
	snprintf(buf, len, "%s%s", pfx, name);
	return buf;
}

void aiscope_identity_json_as(struct jw *w, const char *pfx, const struct aiscope_identity *id)
{
	const struct container_info *ci = id->ci;
	const struct ctr_meta *m = id->names;
	char k[64];

#define K(name) id_key(k, sizeof(k), pfx, name)
	jw_ku64_or_null(w, K("pid"), id->known & AISCOPE_ID_PID, id->pid);
	jw_ku64_or_null(w, K("tid"), id->known & AISCOPE_ID_TID, id->tid);
	if (id->comm)
		jw_kstrn(w, K("comm"), id->comm, id->comm_len ? id->comm_len : strlen(id->comm));
	else
		jw_knull(w, K("comm"));
	jw_ku64_or_null(w, K("uid"), id->known & AISCOPE_ID_UID, id->uid);
	jw_ku64_or_null(w, K("cgroup_id"), id->known & AISCOPE_ID_CGROUP_ID, id->cgroup_id);
	jw_kstr(w, K("cgroup"), id->cgroup);
	if (!m && ci && ci->id[0])
		m = ctrmeta_lookup(ci->id, ci->runtime);
	if (m && !m->found)
		m = NULL;
	jw_kstr(w, K("container_id"), ci && ci->id[0] ? ci->id : NULL);
	jw_kstr(w, K("runtime"), ci && ci->runtime ? ci->runtime : m ? m->runtime : NULL);
	jw_kstr(w, K("pod_uid"), ci && ci->pod_uid[0] ? ci->pod_uid : NULL);
	jw_kstr(w, K("container_name"), m && m->name[0] ? m->name : NULL);
	jw_kstr(w, K("container_image"), m && m->image[0] ? m->image : NULL);
	jw_kstr(w, K("pod_name"), m && m->pod_name[0] ? m->pod_name : NULL);
	jw_kstr(w, K("pod_namespace"), m && m->pod_namespace[0] ? m->pod_namespace : NULL);
	jw_kstr(w, K("k8s_container"), m && m->k8s_container[0] ? m->k8s_container : NULL);
#undef K
}

void aiscope_identity_json(struct jw *w, const struct aiscope_identity *id)
{
	aiscope_identity_json_as(w, "", id);
}

void aiscope_ident_json_as(struct jw *w, const char *pfx, const struct aiscope_ident *id,
			   bool with_tid)
{
	struct container_info ci;
	struct aiscope_identity b = { 0 };

	if (id) {
		b = (struct aiscope_identity){
			.known = AISCOPE_ID_TASK | AISCOPE_ID_CGROUP_ID |
				 (with_tid ? AISCOPE_ID_TID : 0),
			.pid = id->pid, .tid = id->tid, .uid = id->uid,
			.comm = id->comm, .comm_len = sizeof(id->comm),
			.cgroup_id = id->cgroup_id, .ci = &ci,
		};
		b.cgroup = aiscope_ident_cgroup(id, &ci);
	}
	aiscope_identity_json_as(w, pfx, &b);
}

/* Identities by pid read from /proc, kept a second: an event stream asks
 * for the same few peers at every event (a busy socket pair: thousands a
 * second), and three /proc reads each would be the tool's hot path. A pid
 * reused within the second shows its predecessor's names: the price. */
#define PID_ID_SLOTS	256
#define PID_ID_TTL_NS	1000000000ULL

struct pid_id_slot {
	uint32_t pid;
	uint64_t read_ns;	/* 0: empty */
	bool gone;		/* no /proc/PID when it was read */
	bool uid_known, cg_known, v1;
	uint32_t uid;
	uint64_t cgroup_id;
	char comm[64];
};

static struct pid_id_slot pid_ids[PID_ID_SLOTS];
static uint64_t pid_ids_unread;

static void pid_id_read(struct pid_id_slot *s, uint32_t pid)
{
	char path[64], line[256];
	FILE *f;

	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->gone = true;
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	if ((f = fopen(path, "r"))) {
		if (fgets(s->comm, sizeof(s->comm), f)) {
			s->comm[strcspn(s->comm, "\n")] = 0;
			s->gone = false;
		}
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	if (!s->gone && (f = fopen(path, "r"))) {
		while (fgets(line, sizeof(line), f))
			if (sscanf(line, "Uid: %u", &s->uid) == 1) {
				s->uid_known = true;
				break;
			}
		fclose(f);
	}
	s->cg_known = !s->gone && cg_of_pid(pid, &s->cgroup_id, &s->v1);
}

static const struct pid_id_slot *pid_id_get(uint32_t pid)
{
	struct pid_id_slot *s = &pid_ids[pid % PID_ID_SLOTS];
	uint64_t now = clock_ns(CLOCK_MONOTONIC);

	if (s->pid != pid || !s->read_ns || now - s->read_ns >= PID_ID_TTL_NS) {
		pid_id_read(s, pid);
		s->read_ns = now;
	}
	if (s->gone)
		pid_ids_unread++;
	return s;
}

uint64_t aiscope_pid_identity_unread(void)
{
	return pid_ids_unread;
}

void aiscope_pid_identity_forget(void)
{
	memset(pid_ids, 0, sizeof(pid_ids));
	pid_ids_unread = 0;
}

void aiscope_pid_identity_json_as(struct jw *w, const char *pfx, uint32_t pid)
{
	struct aiscope_identity b = { .known = pid ? AISCOPE_ID_PID : 0, .pid = pid };
	const struct pid_id_slot *s = pid ? pid_id_get(pid) : NULL;
	struct container_info ci;

	if (s && !s->gone) {
		b.comm = s->comm;
		b.uid = s->uid;
		b.known |= s->uid_known ? AISCOPE_ID_UID : 0;
	}
	if (s && s->cg_known) {
		b.known |= AISCOPE_ID_CGROUP_ID;
		b.cgroup_id = s->cgroup_id;
		b.cgroup = cg_path_of(s->cgroup_id, s->v1);
		cg_parse_container(b.cgroup ? b.cgroup : "", &ci);
		b.ci = &ci;
	}
	aiscope_identity_json_as(w, pfx, &b);
}

void aiscope_ident_json(struct jw *w, const struct aiscope_ident *id, bool with_tid)
{
	aiscope_ident_json_as(w, "", id, with_tid);
}

void aiscope_summary_begin(struct jw *w, const struct aiscope_bpf *b, const struct aiscope_loop *l,
			   uint64_t events)
{
	jw_record_begin(w, "summary", env.tool, aiscope_now_realtime());
	jw_ku64(w, "duration_ns", clock_ns(CLOCK_MONOTONIC) - env.start_mono_ns);
	jw_ku64(w, "events", events);
	jw_ku64(w, "lost_events", aiscope_lost_total(b));
	jw_ku64(w, "metrics_overflow", metrics_folded());
	jw_kstr(w, "exit_reason", aiscope_exit_name(l->exit));
	jw_kstr(w, "probes", probe_summary(b->hooks, b->nhooks));
	aiscope_summary_losses(w);
}

void aiscope_summary_losses(struct jw *w)
{
	jw_ku64(w, "container_meta_evicted", ctrmeta_evicted());
	jw_ku64(w, "cgroup_events_lost", cg_watch_lost());
	jw_ku64(w, "container_meta_dropped", ctrmeta_expect_dropped());
	jw_ku64(w, "cgroup_set_dropped", cgset_dropped());
	jw_ku64(w, "cgroup_paths_evicted", cg_paths_evicted());
}
