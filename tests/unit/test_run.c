// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/run.c: the end of a run (final interval, exit reason, teardown). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include "t.h"
#include "ctrmeta.h"
#include "opts.h"
#include "run.h"
#include "util.h"

static struct {
	int calls;
	bool running;		/* aiscope_loop_running() inside on_final */
	bool final;
	uint64_t ticks;
} seen;

static struct aiscope_loop *cur;

static int record(void *ctx)
{
	seen.calls++;
	seen.running = aiscope_loop_running(cur);
	seen.final = cur->final;
	seen.ticks = cur->ticks;
	return 0;
}

/* the identity block: all nine keys whatever is known, null for the rest */
static const char *identity(const struct aiscope_identity *id)
{
	struct t_mem m;
	struct jw w;

	jw_init(&w, t_mem_open(&m));
	jw_obj_begin(&w);
	aiscope_identity_json(&w, id);
	jw_obj_end(&w);
	return t_mem_str(&m);
}

static void test_identity_block(void)
{
	struct container_info ci = { .runtime = "docker" };
	char comm[16];

	CHECK_STR(identity(&(struct aiscope_identity){ 0 }),
		  "{\"pid\":null,\"tid\":null,\"comm\":null,\"uid\":null,\"cgroup_id\":null,"
		  "\"cgroup\":null,\"container_id\":null,\"runtime\":null,\"pod_uid\":null,"
		  "\"container_name\":null,\"container_image\":null,\"pod_name\":null,\"pod_namespace\":null,\"k8s_container\":null}");
	memset(ci.id, 'a', 64);
	snprintf(ci.pod_uid, sizeof(ci.pod_uid), "p-1");
	memcpy(comm, "0123456789abcdef", 16);	/* a BPF comm without its NUL */
	CHECK_STR(identity(&(struct aiscope_identity){
			.known = AISCOPE_ID_PID | AISCOPE_ID_TID | AISCOPE_ID_CGROUP_ID,
			.pid = 7, .tid = 8, .uid = 9, .comm = comm, .comm_len = sizeof(comm),
			.cgroup_id = 0, .cgroup = "/c", .ci = &ci }),
		  "{\"pid\":7,\"tid\":8,\"comm\":\"0123456789abcdef\",\"uid\":null,\"cgroup_id\":0,"
		  "\"cgroup\":\"/c\",\"container_id\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\","
		  "\"runtime\":\"docker\",\"pod_uid\":\"p-1\",\"container_name\":null,\"container_image\":null,\"pod_name\":null,\"pod_namespace\":null,\"k8s_container\":null}");
	/* a row per container: its keys only, from the container_info */
	ci.id[0] = 0;
	ci.pod_uid[0] = 0;
	CHECK_STR(identity(&(struct aiscope_identity){ .known = AISCOPE_ID_UID, .uid = 0, .ci = &ci }),
		  "{\"pid\":null,\"tid\":null,\"comm\":null,\"uid\":0,\"cgroup_id\":null,"
		  "\"cgroup\":null,\"container_id\":null,\"runtime\":\"docker\",\"pod_uid\":null,"
		  "\"container_name\":null,\"container_image\":null,\"pod_name\":null,\"pod_namespace\":null,\"k8s_container\":null}");
}

/* another process a line names: the same fourteen keys with its role in
 * front (docs/schema/README.md rule 5), all null for none seen */
static const char *identity_as(const char *pfx, const struct aiscope_ident *id)
{
	struct t_mem m;
	struct jw w;

	jw_init(&w, t_mem_open(&m));
	jw_obj_begin(&w);
	aiscope_ident_json_as(&w, pfx, id, false);
	jw_obj_end(&w);
	return t_mem_str(&m);
}

static void test_identity_as(void)
{
	struct aiscope_ident id = { .cgroup_id = 0, .pid = 7, .tid = 8, .uid = 9 };
	struct container_info ci = { .runtime = "podman" };
	struct t_mem m;
	struct jw w;

	CHECK_STR(identity_as("reader_", NULL),
		  "{\"reader_pid\":null,\"reader_tid\":null,\"reader_comm\":null,\"reader_uid\":null,"
		  "\"reader_cgroup_id\":null,\"reader_cgroup\":null,\"reader_container_id\":null,"
		  "\"reader_runtime\":null,\"reader_pod_uid\":null,\"reader_container_name\":null,"
		  "\"reader_container_image\":null,\"reader_pod_name\":null,\"reader_pod_namespace\":null,"
		  "\"reader_k8s_container\":null}");
	memcpy(id.comm, "w\"1", 4);
	/* cgroup id 0: no such cgroup, so its path and container are null */
	CHECK_STR(identity_as("writer_", &id),
		  "{\"writer_pid\":7,\"writer_tid\":null,\"writer_comm\":\"w\\\"1\",\"writer_uid\":9,"
		  "\"writer_cgroup_id\":0,\"writer_cgroup\":null,\"writer_container_id\":null,"
		  "\"writer_runtime\":null,\"writer_pod_uid\":null,\"writer_container_name\":null,"
		  "\"writer_container_image\":null,\"writer_pod_name\":null,\"writer_pod_namespace\":null,"
		  "\"writer_k8s_container\":null}");
	/* the container keys and the names, prefixed as the block's own */
	memset(ci.id, 'd', 64);
	jw_init(&w, t_mem_open(&m));
	jw_obj_begin(&w);
	aiscope_identity_json_as(&w, "peer_", &(struct aiscope_identity){
		.known = AISCOPE_ID_PID, .pid = 3, .cgroup = "/x", .ci = &ci,
		.names = &(struct ctr_meta){ .found = true, .name = "web", .image = "nginx:1" } });
	jw_obj_end(&w);
	CHECK_STR(t_mem_str(&m),
		  "{\"peer_pid\":3,\"peer_tid\":null,\"peer_comm\":null,\"peer_uid\":null,"
		  "\"peer_cgroup_id\":null,\"peer_cgroup\":\"/x\","
		  "\"peer_container_id\":\"dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd\","
		  "\"peer_runtime\":\"podman\",\"peer_pod_uid\":null,\"peer_container_name\":\"web\","
		  "\"peer_container_image\":\"nginx:1\",\"peer_pod_name\":null,\"peer_pod_namespace\":null,"
		  "\"peer_k8s_container\":null}");
	/* "" is the block itself */
	CHECK(strncmp(identity_as("", NULL), "{\"pid\":null,\"tid\":null,\"comm\"",
		      strlen("{\"pid\":null,\"tid\":null,\"comm\"")) == 0);
}

/* the container's names, from its runtime's state (lib/ctrmeta.c), null
 * when the runtime does not know it; a cgroupfs path's unnamed runtime is
 * the one whose state has the id */
static void test_identity_names(void)
{
	char root[] = "/tmp/test_run-XXXXXX", path[256], cmd[512];
	struct container_info ci = { .runtime = NULL };
	FILE *f;

	if (!mkdtemp(root))
		SKIP("mkdtemp");
	snprintf(path, sizeof(path), "%s/run/containerd/io.containerd.runtime.v2.task/k8s.io/%.64s", root,
		 "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb");
	snprintf(cmd, sizeof(cmd), "mkdir -p %s", path);
	CHECK(!system(cmd));
	strcat(path, "/config.json");
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs("{\"annotations\":{\"io.kubernetes.cri.container-name\":\"c\","
	      "\"io.kubernetes.cri.sandbox-name\":\"p\",\"io.kubernetes.cri.sandbox-namespace\":\"n\","
	      "\"io.kubernetes.cri.image-name\":\"i:1\"}}", f);
	fclose(f);
	ctrmeta_set_root(root);
	memset(ci.id, 'b', 64);
	CHECK_STR(identity(&(struct aiscope_identity){ .ci = &ci }),
		  "{\"pid\":null,\"tid\":null,\"comm\":null,\"uid\":null,\"cgroup_id\":null,"
		  "\"cgroup\":null,\"container_id\":\"bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb\","
		  "\"runtime\":\"containerd\",\"pod_uid\":null,\"container_name\":null,"
		  "\"container_image\":\"i:1\",\"pod_name\":\"p\",\"pod_namespace\":\"n\","
		  "\"k8s_container\":\"c\"}");
	memset(ci.id, 'c', 64);
	CHECK(strstr(identity(&(struct aiscope_identity){ .ci = &ci }),
		     "\"runtime\":null,\"pod_uid\":null,\"container_name\":null,\"container_image\":null,") != NULL);
	ctrmeta_set_root(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	CHECK(!system(cmd));
}

static void run_final(struct aiscope_loop *l)
{
	memset(&seen, 0, sizeof(seen));
	cur = l;
	aiscope_loop_final(l);
}

/* the loop ends for why (a signal, --duration, --count), then its final
 * interval runs */
static void stop_then_final(struct aiscope_loop *l, enum aiscope_exit why)
{
	aiscope_loop_stop(l, why);
	run_final(l);
}

/* a BPF object with nothing loaded, as each loop below had of its own */
static struct aiscope_bpf no_bpf;

static void test_exit_names(void)
{
	CHECK(aiscope_exit_name(AISCOPE_RUNNING) == NULL);
	CHECK_STR(aiscope_exit_name(AISCOPE_EXIT_SIGNAL), "signal");
	CHECK_STR(aiscope_exit_name(AISCOPE_EXIT_DURATION), "duration");
	CHECK_STR(aiscope_exit_name(AISCOPE_EXIT_COUNT), "count");
	CHECK_STR(aiscope_exit_name(AISCOPE_EXIT_PIPE), "pipe");
	CHECK_STR(aiscope_exit_name(AISCOPE_EXIT_ERROR), "error");
	CHECK(aiscope_exit_name(AISCOPE_EXIT_ERROR + 1) == NULL);
}

/* the first reason stays: a count reached after a signal does not hide it */
static void test_stop_keeps_first_reason(void)
{
	struct aiscope_loop l = {};

	CHECK(aiscope_loop_running(&l));
	CHECK(aiscope_loop_stop(&l, AISCOPE_EXIT_SIGNAL) < 0);
	CHECK(!aiscope_loop_running(&l));
	aiscope_loop_stop(&l, AISCOPE_EXIT_COUNT);
	CHECK_EQ(l.exit, AISCOPE_EXIT_SIGNAL);
}

/*
 * The final interval after each way a run ends. A signal or --duration
 * cuts the interval short: it still counts, as a tick, and events are
 * taken while it prints. After --count the last interval was whole:
 * nothing more prints; nor without an on_final callback.
 */
static void test_final_interval(void)
{
	static const struct {
		const char *what;
		int (*on_final)(void *ctx);
		uint64_t ticks;
		enum aiscope_exit why;
		int calls;
		uint64_t ticks_after;
	} c[] = {
		{ "after --duration", record, 3, AISCOPE_EXIT_DURATION, 1, 4 },
		{ "after --count", record, 5, AISCOPE_EXIT_COUNT, 0, 5 },
		{ "no callback", NULL, 1, AISCOPE_EXIT_SIGNAL, 0, 1 },
	};

	for (size_t i = 0; i < T_ROWS(c); i++) {
		struct aiscope_loop l = { .bpf = &no_bpf, .on_final = c[i].on_final, .ticks = c[i].ticks };

		stop_then_final(&l, c[i].why);
		CHECK_CASE(seen.calls == c[i].calls, "%s: %d calls", c[i].what, seen.calls);
		CHECK_CASE(l.ticks == c[i].ticks_after, "%s: ticks %" PRIu64, c[i].what, l.ticks);
		/* the callback ran as the final interval, the loop stopped */
		if (c[i].calls) {
			CHECK_CASE(seen.ticks == c[i].ticks_after, "%s", c[i].what);
			CHECK_CASE(seen.running && seen.final, "%s", c[i].what);
		}
		CHECK_CASE(!l.final && !aiscope_loop_running(&l), "%s", c[i].what);
		CHECK_CASE(l.exit == c[i].why, "%s", c[i].what);
	}
}

/* a streaming run drains what is left, after --count too, as no tick */
static void test_final_drains(void)
{
	struct aiscope_loop l = { .bpf = &no_bpf, .on_final = record, .final_drains = true, .ticks = 2 };

	stop_then_final(&l, AISCOPE_EXIT_COUNT);
	CHECK_EQ(seen.calls, 1);
	CHECK_EQ(seen.ticks, 2);
	CHECK(seen.running);
	l.exit = AISCOPE_EXIT_SIGNAL;
	run_final(&l);
	CHECK_EQ(seen.calls, 1);
	CHECK_EQ(l.ticks, 2);
}

static void test_interval(void)
{
	struct aiscope_loop l = {};
	struct timespec ms20 = { 0, 20 * 1000 * 1000 };
	uint64_t first, second, before = clock_ns(CLOCK_MONOTONIC);

	l.interval_start = before;
	nanosleep(&ms20, NULL);
	first = aiscope_loop_interval(&l);
	CHECK(first >= 20 * 1000 * 1000ULL);
	CHECK(l.interval_start >= before + first);
	/* the next interval begins where the last one ended */
	second = aiscope_loop_interval(&l);
	CHECK(second < first);
	CHECK(l.interval_start - before >= first + second);
}

static void test_teardown_exit_code(void)
{
	struct aiscope_loop l = {};

	CHECK_EQ(aiscope_teardown(NULL, NULL), 0);
	l.exit = AISCOPE_EXIT_SIGNAL;
	CHECK_EQ(aiscope_teardown(NULL, &l), 0);
	l.exit = AISCOPE_EXIT_COUNT;
	CHECK_EQ(aiscope_teardown(NULL, &l), 0);
	l.exit = AISCOPE_EXIT_ERROR;
	CHECK_EQ(aiscope_teardown(NULL, &l), EXIT_RUNTIME);
}

static int watch_rfd;

/* the watch fd's callback: takes its byte, ends the loop as a capture
 * whose children all ended does */
static int take_watch(void *ctx)
{
	struct aiscope_loop *l = ctx;
	char c;

	seen.calls++;
	if (read(watch_rfd, &c, 1) == 1)
		aiscope_loop_stop(l, AISCOPE_EXIT_DURATION);
	return 0;
}

/* a loop with no BPF object of its own (topograph's capture): its work
 * comes through watch_fd, the exit reason is the one it stops with, and
 * the final interval runs with no lost events to read */
static void test_loop_without_bpf(void)
{
	struct aiscope_loop l = { .on_watch = take_watch, .on_final = record };
	int fds[2];

	l.ctx = &l;
	CHECK(!pipe(fds));
	watch_rfd = fds[0];
	l.watch_fd = fds[0];
	CHECK(write(fds[1], "x", 1) == 1);
	memset(&seen, 0, sizeof(seen));
	CHECK_EQ(aiscope_loop_run(&l), 0);
	CHECK_EQ(l.exit, AISCOPE_EXIT_DURATION);
	CHECK_EQ(seen.calls, 1);
	CHECK_STR(aiscope_exit_name(l.exit), "duration");
	run_final(&l);
	CHECK_EQ(seen.calls, 1);
	CHECK(seen.final);
	CHECK_EQ(aiscope_lost_check(NULL), 0);
	close(fds[0]);
	close(fds[1]);
}

/* ... and --duration ends it from lib/run's own deadline, the ticks
 * counted with nothing to drain */
static void test_loop_without_bpf_deadline(void)
{
	struct aiscope_loop l = { .tick_ns = 10 * 1000 * 1000ULL };
	uint64_t saved = env.duration_ns, saved_start = env.start_mono_ns;

	env.duration_ns = 35 * 1000 * 1000ULL;
	env.start_mono_ns = clock_ns(CLOCK_MONOTONIC);
	CHECK_EQ(aiscope_loop_run(&l), 0);
	CHECK_EQ(l.exit, AISCOPE_EXIT_DURATION);
	CHECK(l.ticks >= 1 && l.ticks <= 4);
	CHECK(clock_ns(CLOCK_MONOTONIC) - env.start_mono_ns >= env.duration_ns);
	env.duration_ns = saved;
	env.start_mono_ns = saved_start;
}

static int summaries, finals_before_summary;

static void summary(void)
{
	summaries++;
	finals_before_summary = seen.calls;
}

/* a loop already ended (oomwatch's first poll reached --count) is not
 * run again: the final interval, then the summary, then the exit code */
static void test_run_after_end(void)
{
	struct aiscope_loop l = { .bpf = &no_bpf, .on_final = record };

	memset(&seen, 0, sizeof(seen));
	cur = &l;
	aiscope_loop_stop(&l, AISCOPE_EXIT_ERROR);
	CHECK_EQ(aiscope_run(&l, summary), EXIT_RUNTIME);
	CHECK_EQ(summaries, 1);
	CHECK_EQ(finals_before_summary, 1);
	CHECK_EQ(l.ticks, 1);
	l.exit = AISCOPE_EXIT_COUNT;
	CHECK_EQ(aiscope_run(&l, summary), 0);
	CHECK_EQ(summaries, 2);
	CHECK_EQ(seen.calls, 1);	/* after --count: no final interval */
}

static const char *pid_identity(uint32_t pid)
{
	struct t_mem m;
	struct jw w;

	jw_init(&w, t_mem_open(&m));
	jw_obj_begin(&w);
	aiscope_pid_identity_json_as(&w, "peer_", pid);
	jw_obj_end(&w);
	return t_mem_str(&m);
}

/* a peer by its pid: its comm from /proc; a process gone before its
 * identity was read gives nulls and is counted per event; the cache keeps
 * a live one's names for its second (a renamed process shows its old
 * comm until then), and forget() empties it */
static void test_pid_identity_cache(void)
{
	char want[64];
	pid_t child;
	int st;

	aiscope_pid_identity_forget();
	snprintf(want, sizeof(want), "\"peer_pid\":%d,\"peer_tid\":null,\"peer_comm\":\"test_run\"", getpid());
	CHECK(strstr(pid_identity(getpid()), want) != NULL);
	CHECK_EQ(aiscope_pid_identity_unread(), 0);
	/* a process gone: a child reaped, so its pid is free */
	child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, &st, 0);
	snprintf(want, sizeof(want), "{\"peer_pid\":%d,\"peer_tid\":null,\"peer_comm\":null,", child);
	CHECK(strncmp(pid_identity(child), want, strlen(want)) == 0);
	CHECK(strncmp(pid_identity(child), want, strlen(want)) == 0);
	CHECK_EQ(aiscope_pid_identity_unread(), 2);
	/* cached: a rename within the second is not seen */
	prctl(PR_SET_NAME, "renamed", 0, 0, 0);
	CHECK(strstr(pid_identity(getpid()), "\"peer_comm\":\"test_run\"") != NULL);
	aiscope_pid_identity_forget();
	CHECK(strstr(pid_identity(getpid()), "\"peer_comm\":\"renamed\"") != NULL);
	CHECK_EQ(aiscope_pid_identity_unread(), 0);
	/* pid 0: no peer, no /proc read, not counted */
	snprintf(want, sizeof(want), "{\"peer_pid\":null,\"peer_tid\":null,\"peer_comm\":null,");
	CHECK(strncmp(pid_identity(0), want, strlen(want)) == 0);
	CHECK_EQ(aiscope_pid_identity_unread(), 0);
	prctl(PR_SET_NAME, "test_run", 0, 0, 0);
}

int main(void)
{
	RUN(test_exit_names);
	RUN(test_stop_keeps_first_reason);
	RUN(test_final_interval);
	RUN(test_final_drains);
	RUN(test_interval);
	RUN(test_teardown_exit_code);
	RUN(test_run_after_end);
	RUN(test_loop_without_bpf);
	RUN(test_loop_without_bpf_deadline);
	RUN(test_identity_block);
	RUN(test_identity_names);
	RUN(test_identity_as);
	RUN(test_pid_identity_cache);
	return t_done();
}
