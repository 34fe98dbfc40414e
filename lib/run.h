/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A tool's life around its skeleton: prepare (attach plan, --list-probes,
 * privileges, filters, buffer size), load, attach, the event loop (ring
 * buffer, interval timer, SIGINT/SIGTERM, --duration, closed stdout) and
 * lost-event accounting.
 *
 *	skel = x_bpf__open_opts(aiscope_open_opts());
 *	aiscope_bpf_prepare(&b, skel->obj, &skel->rodata->aiscope_cfg);
 *	aiscope_bpf_load(&b, x_bpf__load(skel));
 *	aiscope_bpf_attach(&b);
 *	code = aiscope_run(&loop, print_summary);
 *	x_bpf__destroy(skel);
 *	return code;
 */
#ifndef AISCOPE_RUN_H
#define AISCOPE_RUN_H

#include <stdbool.h>
#include <stdint.h>
#include <bpf/libbpf.h>
#include "aiscope_common.h"
#include "cgroup.h"
#include "json.h"
#include "probe.h"

struct ctr_meta;

struct aiscope_bpf {
	struct bpf_object *obj;
	struct probe_hook *hooks;
	int nhooks;
	bool streaming;			/* events go through the ring buffer */
	ring_buffer_sample_fn on_event;
	void *ctx;
	/* optional: called once the hooks are resolved, before --list-probes
	 * prints them and before the programs are prepared, for tools whose
	 * hooks depend on each other (e.g. to leave out a hook that another
	 * one's choice makes redundant) */
	void (*on_plan)(struct aiscope_bpf *b);
	/* optional: what --list-probes prints after the plan (the text
	 * table, or JSON records through jw when not NULL) */
	void (*list_extra)(struct aiscope_bpf *b, FILE *f, struct jw *jw);
	/* filled in */
	struct ring_buffer *rb;
	uint64_t lost[AISCOPE_LOST_ALL];	/* totals so far */
};

#define AISCOPE_STOP 1
/* the ring buffer is read at least this often (ms), and when a sixteenth
 * of it is full */
#define AISCOPE_POLL_MS 100

/* why the loop ended; the summary's exit_reason */
enum aiscope_exit {
	AISCOPE_RUNNING,
	AISCOPE_EXIT_SIGNAL,
	AISCOPE_EXIT_DURATION,
	AISCOPE_EXIT_COUNT,
	AISCOPE_EXIT_PIPE,
	AISCOPE_EXIT_ERROR,
};

struct aiscope_loop {
	/* NULL: no BPF object of its own (topograph's capture, whose work
	 * comes through watch_fd): no ring buffer, no lost events */
	struct aiscope_bpf *bpf;
	/* every interval (aggregating tools); returns AISCOPE_STOP to end */
	int (*on_tick)(void *ctx);
	void *ctx;
	uint64_t tick_ns;		/* 0: no interval callback */
	/* optional: a second ring buffer read as soon as it has data (its
	 * producer wakes the reader), e.g. uprobe discovery events */
	struct ring_buffer *aux_rb;
	/* optional: one more fd (e.g. an epoll set of the kernel's own
	 * notifications) and its callback, served first in each wakeup: what
	 * it signalled before a ring buffer event is reported before it */
	int watch_fd;
	int (*on_watch)(void *ctx);
	/* optional: the run's last output, by aiscope_loop_final(): the
	 * interval that a signal or --duration cut short, counted as one
	 * more tick (not after --count: that one was whole) */
	int (*on_final)(void *ctx);
	/* on_final drains what a streaming run has left: after --count too,
	 * and not counted as a tick */
	bool final_drains;
	/* filled in */
	enum aiscope_exit exit;
	uint64_t ticks;
	uint64_t interval_start;	/* CLOCK_MONOTONIC ns */
	bool final;			/* inside on_final */
};

const struct bpf_object_open_opts *aiscope_open_opts(void);
/* Exits 0 after --list-probes, 77 when a hook is missing or privileges
 * are, 1 on other errors. */
void aiscope_bpf_prepare(struct aiscope_bpf *b, struct bpf_object *obj,
			 volatile struct aiscope_cfg *cfg);
void aiscope_bpf_load(struct aiscope_bpf *b, int load_err);
void aiscope_bpf_attach(struct aiscope_bpf *b);
void aiscope_bpf_destroy(struct aiscope_bpf *b);
/* Sets a map's size before load (tools size maps from options). */
void aiscope_map_resize(struct bpf_object *obj, const char *map, uint32_t entries);

/* Once attached: "Tracing <what>... Ctrl-C to end." on stderr, the line
 * CONTRACT 7 promises and topograph waits for in each tool it runs, then
 * what stdout holds so far (a streaming table's header) flushed. */
void __attribute__((format(printf, 1, 2))) aiscope_tracing(const char *what, ...);
int aiscope_loop_run(struct aiscope_loop *l);
/* From a ring-buffer callback: end the loop (e.g. --count reached). */
int aiscope_loop_stop(struct aiscope_loop *l, enum aiscope_exit why);
/* Still taking events: the loop has not ended, or on_final runs. */
bool aiscope_loop_running(const struct aiscope_loop *l);
/* "signal", "duration", "count", "pipe", "error"; NULL while running */
const char *aiscope_exit_name(enum aiscope_exit e);
/* From on_tick/on_final: ns since the interval began; the next one
 * begins now. */
uint64_t aiscope_loop_interval(struct aiscope_loop *l);
/* After aiscope_loop_run: on_final (see above), then lost events. */
void aiscope_loop_final(struct aiscope_loop *l);
/* The run once attached: the loop (unless already ended), the final
 * interval, summary() with stdout flushed, aiscope_teardown(). Returns
 * the exit code. */
int aiscope_run(struct aiscope_loop *l, void (*summary)(void));
/* The end of every run: the programs detached (when b), the cgroup and
 * feature caches freed. Returns the exit code: EXIT_RUNTIME when the
 * loop ended in an error, else 0. */
int aiscope_teardown(struct aiscope_bpf *b, const struct aiscope_loop *l);

/* The summary's counts of what user space lost or dropped at a cap,
 * besides lost_events: container_meta_evicted (lib/ctrmeta.c's cache),
 * cgroup_events_lost (lib/cgroup.c's cgroup_mkdir records),
 * container_meta_dropped (new containers lib/ctrmeta.c's queue had no room
 * for). */
void aiscope_summary_losses(struct jw *w);

/* Boot-clock ns of a BPF event -> realtime ns. */
uint64_t aiscope_realtime(uint64_t bpf_ns);
uint64_t aiscope_now_realtime(void);
/* Reads the lost counters; reports a non-zero delta as a "lost" record or
 * a stderr warning. Returns the delta (0 when b is NULL). */
uint64_t aiscope_lost_check(struct aiscope_bpf *b);
uint64_t aiscope_lost_total(const struct aiscope_bpf *b);

/*
 * The identity block of CONTRACT section 4 and docs/schema/common.json:
 * pid, tid, comm, uid, cgroup_id, cgroup, container_id, runtime, pod_uid,
 * then the container's names from its runtime's state (lib/ctrmeta.h):
 * container_name, container_image, pod_name, pod_namespace, k8s_container;
 * always all fourteen, in this order, the ones a line does not know null, so
 * that every tool's lines carry the same block (a row per cgroup has a null
 * pid, a row per container a null cgroup_id). The one writer of it.
 */
enum {
	AISCOPE_ID_PID = 1 << 0,
	AISCOPE_ID_UID = 1 << 1,
	AISCOPE_ID_TID = 1 << 2,
	AISCOPE_ID_CGROUP_ID = 1 << 3,
	AISCOPE_ID_TASK = AISCOPE_ID_PID | AISCOPE_ID_UID,
};

struct aiscope_identity {
	unsigned int known;		/* AISCOPE_ID_* */
	uint32_t pid, tid, uid;
	const char *comm;		/* NULL: null */
	size_t comm_len;		/* its most bytes (a BPF comm may lack its NUL); 0: NUL-terminated */
	uint64_t cgroup_id;
	const char *cgroup;		/* path or NULL */
	const struct container_info *ci;	/* NULL: no container keys known */
	/* the container's names when known otherwise (topograph: from its
	 * input lines); NULL: read from the runtime's state (lib/ctrmeta) */
	const struct ctr_meta *names;
};

void aiscope_identity_json(struct jw *w, const struct aiscope_identity *id);
/* The same fourteen keys of another process a line names, each with its
 * role in front (docs/schema/README.md rule 5): pfx "writer_" gives
 * writer_pid ... writer_k8s_container. pfx "" is aiscope_identity_json. */
void aiscope_identity_json_as(struct jw *w, const char *pfx, const struct aiscope_identity *id);
/* The block of a task the BPF side identified; with_tid false writes a
 * null tid (rows per process). */
void aiscope_ident_json(struct jw *w, const struct aiscope_ident *id, bool with_tid);
/* ... with pfx in front of each key; id NULL (no such process seen):
 * all fourteen null. */
void aiscope_ident_json_as(struct jw *w, const char *pfx, const struct aiscope_ident *id,
			   bool with_tid);
/* The block of process pid (0: none, all null) with pfx in front, from
 * /proc (read once a second per pid, a cache of 256): for a peer the BPF
 * side knows by its pid only. Its tid is null; what /proc no longer has
 * (the process gone) is null too, and counted. */
void aiscope_pid_identity_json_as(struct jw *w, const char *pfx, uint32_t pid);
/* Events whose pid's identity could not be read (no /proc/PID: the process
 * was gone); aiscope_pid_identity_forget() empties the cache and the count. */
uint64_t aiscope_pid_identity_unread(void);
void aiscope_pid_identity_forget(void);
/* The cgroup path (NULL if unknown) and the container of an identity. */
const char *aiscope_ident_cgroup(const struct aiscope_ident *id, struct container_info *ci);
/* A container in tables: its name (lib/ctrmeta.h), else its 12-character
 * id; with --wide its full id; "-" for none. buf: 13 bytes or more. */
const char *aiscope_container_short(const struct container_info *ci, char *buf);
/* The same for an identity's container (its cgroup resolved first),
 * copied into buf: CONTAINER_ID_LEN + 1 bytes hold --wide's whole id */
const char *aiscope_ident_container_short(const struct aiscope_ident *id, char *buf, size_t len);
/* Its runtime as the cgroup path or, failing that, its state names it; "-" */
const char *aiscope_container_runtime(const struct container_info *ci);
/* Its pod in tables: "namespace/name" where known (not with --wide), else
 * the pod's uid, else "-" */
const char *aiscope_container_pod(const struct container_info *ci, char *buf, size_t len);

/* {"type":"summary",... common keys; the caller adds its own and ends it */
void aiscope_summary_begin(struct jw *w, const struct aiscope_bpf *b, const struct aiscope_loop *l,
			   uint64_t events);

#endif
