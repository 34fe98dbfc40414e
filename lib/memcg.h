/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Memory cgroups read from their files, cheaply enough to poll a thousand
 * of them every second: each cgroup's files stay open and are re-read with
 * pread(); inotify reports new directories, a removed cgroup fails its
 * next read, and the whole tree is walked again only on a slow timer. cgroup v1 (memory controller) and
 * v2 (directories with memory.current) both.
 */
#ifndef AISCOPE_MEMCG_H
#define AISCOPE_MEMCG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MEMCG_NO_LIMIT	UINT64_MAX
#define MEMCG_UNKNOWN	UINT64_MAX

/* One reading. Counters are cumulative; MEMCG_UNKNOWN where the cgroup
 * version has no such file (v1 has no "oom" count, no per-cgroup PSI). */
struct memcg_reading {
	uint64_t usage;		/* bytes: memory.current, memory.usage_in_bytes */
	uint64_t limit;		/* bytes: memory.max, memory.limit_in_bytes; MEMCG_NO_LIMIT */
	uint64_t inactive_file;	/* bytes, MEMCG_UNKNOWN when memory.stat was not read */
	uint64_t limit_hits;	/* v2 memory.events max; v1 memory.failcnt */
	uint64_t ooms;		/* v2 memory.events oom */
	uint64_t oom_kills;	/* v2 memory.events oom_kill; v1 memory.oom_control oom_kill */
	double psi_some10;	/* memory.pressure avg10 (%), < 0 unknown */
	double psi_full10;
	uint64_t at_ns;		/* CLOCK_MONOTONIC of the read */
};

/* The kernel's own signals of one cgroup, armed with memcg_set_arm():
 * v1 usage thresholds (cgroup.event_control, an eventfd on
 * memory.usage_in_bytes at --warn and --crit of the limit, re-armed when
 * the limit changes) and the memory.oom_control eventfd (the memcg is in
 * OOM, its kill is next); v2 memory.events changes (POLLPRI) and PSI
 * triggers on memory.pressure (POLLPRI). Each fd is in the set's epoll fd. */
enum memcg_sig_kind {
	MEMCG_SIG_NONE,
	MEMCG_SIG_THRESHOLD,	/* v1: usage crossed bytes, up or down */
	MEMCG_SIG_OOM,		/* v1: memory.oom_control: under OOM now */
	MEMCG_SIG_EVENTS,	/* v2: memory.events changed */
	MEMCG_SIG_PSI,		/* v2: full stall of the trigger's share of its window */
};
/* v1: warn, crit thresholds and oom_control; v2: memory.events, 2 PSI */
#define MEMCG_NSIG	3

struct memcg;

struct memcg_sig {
	struct memcg *m;
	int fd;			/* -1: not armed */
	uint8_t kind;		/* enum memcg_sig_kind */
	uint8_t level;		/* 1 warn, 2 crit: which threshold or trigger */
	bool above;		/* thresholds: the usage was at or above bytes when last seen */
	uint64_t bytes;		/* thresholds: the usage they fire at */
	uint64_t count;		/* eventfd count of the last wakeup (signals since the last) */
};

/* What memcg_set_arm() arms. */
struct memcg_arm {
	double warn_pct, crit_pct;		/* v1 usage thresholds, % of the limit */
	double psi_warn_pct, psi_crit_pct;	/* v2 PSI triggers: full stall, % of the window */
	uint64_t psi_window_us;
};

struct memcg {
	uint64_t id;		/* the directory's inode number (the cgroup id) */
	bool v1;
	char *path;		/* relative to its hierarchy, "/a/b" */
	int fd_usage, fd_limit, fd_stat, fd_events, fd_oomctl, fd_psi;
	struct memcg_reading cur;	/* the last reading */
	/* made while the set watched its parent (inotify saw the mkdir): its
	 * counters were 0 at birth, so what its first reading finds happened
	 * while watched (a cgroup first found by a rescan may be older) */
	bool born;
	uint64_t reads;		/* successful reads so far */
	/* reads still to come that must read the counters (v1 oom_control,
	 * v2 memory.events) though their signal is armed: set when a signal
	 * fired, and by the caller when it knows they moved (a kill) */
	unsigned int counters_due;
	/* for the caller */
	int level;
	int psi_level;
	uint64_t scan_gen;
	/* kernel signals (memcg_set_arm) */
	int fd_ctl;		/* v1 cgroup.event_control, -1 */
	struct memcg_sig sig[MEMCG_NSIG];
	uint64_t armed_limit;	/* the limit the thresholds were set from */
	bool limit_changed;	/* inotify saw the limit file written */
	/* for the caller */
	uint64_t seen_hits, seen_ooms, seen_kills;	/* counters as of the last alert check */
	bool seen;					/* an alert check has run */
	uint64_t proj_usage, proj_ns;			/* the last tick's usage, for the growth rate */
	bool proj_alerted;
	uint64_t reclaim_ns;	/* the last memcg reclaim event, and its working set (%) */
	double reclaim_ws_pct;
	uint64_t psi_hold_ns;	/* a PSI trigger's level holds until then */
};

struct memcg_watch {
	int wd;
	bool v1;
	char *path;		/* relative to its hierarchy, "" for the root */
};

struct memcg_set {
	char v1_root[4096];	/* memory controller mount, "" none */
	char v2_root[4096];	/* cgroup2 mount, "" none */
	const char *prefix;	/* only cgroups whose path starts with it (or NULL) */
	bool (*keep)(const char *path);	/* and, when set, that it keeps */
	struct memcg **cg;	/* sorted by (v1, id) */
	size_t n, cap;
	size_t nsorted;		/* cg[0..nsorted) is sorted (during a rescan) */
	int inotify_fd;
	struct memcg_watch *watch;	/* sorted by wd */
	size_t nwatch, capwatch;
	bool dirty;		/* inotify lost events: rescan */
	uint64_t scan_gen;
	uint64_t last_scan_ns;
	uint64_t rescan_ns;	/* periodic rescan, 0: never */
	int open_errors;	/* files that could not be opened (EMFILE ...) */
	/* kernel signals: an epoll fd over the armed fds and inotify */
	int epoll_fd;		/* -1: not armed */
	struct memcg_arm arm;
	int arm_errors;		/* signals that could not be armed (the poll covers those);
				 * with memcg_arm_errors(), the armer's too */
	struct memcg_armer *armer;	/* the thread that registers v1 thresholds */
	bool arm_front;		/* after the first arming: new ones go first */
	int inotify_tag;	/* the epoll data.ptr of inotify: &inotify_tag */
};

/* Pure parsers (unit-tested). */
/* "max", a number; v1's "unlimited" (>= 2^62) -> MEMCG_NO_LIMIT */
int memcg_parse_limit(const char *s, uint64_t *v);
/* value of "key N" lines (memory.stat, memory.events, oom_control) */
bool memcg_parse_key(const char *buf, const char *key, uint64_t *v);
/* "some avg10=1.23 ..." / "full avg10=..." lines (memory.pressure,
 * /proc/pressure/memory); -1 where absent */
void memcg_parse_psi(const char *buf, double *some10, double *full10);

/* v1_root, v2_root: mount points ("" or NULL: none); prefix, keep: see above. */
int memcg_set_init(struct memcg_set *s, const char *v1_root, const char *v2_root,
		   const char *prefix, bool (*keep)(const char *path), bool watch);
/* Walks the trees: opens new cgroups, closes removed ones. */
void memcg_set_rescan(struct memcg_set *s);
/* Opens the cgroups inotify saw made (removed ones fail their next read:
 * memcg_set_drop() them); rescans when inotify lost events or the slow
 * periodic rescan is due. */
void memcg_set_refresh(struct memcg_set *s);
void memcg_set_drop(struct memcg_set *s, size_t i);
/* The watched cgroup of that id (its directory's inode number), or NULL:
 * a cgroup made a moment ago is here as soon as inotify reported it. */
struct memcg *memcg_set_find(struct memcg_set *s, uint64_t id, bool v1);
/* Reads one cgroup into cur. A poll reads what can change the
 * verdict: the limit at the first read and with MEMCG_LIMIT (it rarely
 * changes), the usage only of limited cgroups, memory.stat and v1's
 * memory.failcnt only when hot(reading) says the usage is near the limit
 * (memory.stat is the expensive file); the counters (v1 oom_control, v2
 * memory.events) when their signal is not armed, when hot, or while
 * counters_due; else they cannot have moved unsignalled. Fields not
 * read keep their last value. MEMCG_ALL reads everything (hot still
 * decides memory.stat). MEMCG_COUNTERS reads every counter, v1's
 * memory.failcnt too, cold or not (an exporter of the kernel's totals).
 * -errno when the cgroup went away. */
#define MEMCG_ALL	0x1
#define MEMCG_LIMIT	0x2
#define MEMCG_COUNTERS	0x4
int memcg_read(struct memcg *m, unsigned int what,
	       bool (*hot)(const struct memcg_reading *r, void *ctx), void *ctx);
void memcg_set_free(struct memcg_set *s);

/* Arms the kernel signals of every cgroup, now and as they are found;
 * the set's epoll_fd then reports them and inotify. -errno without
 * epoll. */
int memcg_set_arm(struct memcg_set *s, const struct memcg_arm *arm);
/* Signals that could not be armed, so far; thresholds still queued for
 * the armer. The kernel waits for an RCU grace period in each v1
 * threshold registration (some 15 ms here): a thread registers them,
 * the fullest cgroups first at start, a new or re-armed one before the
 * rest, and the event loop never waits for it. */
int memcg_arm_errors(const struct memcg_set *s);
int memcg_arm_pending(const struct memcg_set *s);
/* Sets m's signals for its limit as read last (thresholds move with it). */
void memcg_rearm(struct memcg_set *s, struct memcg *m);
/* Serves what epoll_fd has ready without waiting: on_sig for each signal
 * (sig->count set; on_sig must not drop cgroups), then inotify (new
 * cgroups are armed; rescans may free gone ones). Returns the signals. */
int memcg_set_serve(struct memcg_set *s, void (*on_sig)(struct memcg_sig *sig, void *ctx),
		    void *ctx);
/* Pure (unit-tested): the usage a threshold at pct of limit fires at;
 * the PSI trigger line for a share of the window. */
uint64_t memcg_threshold_bytes(uint64_t limit, double pct);
int memcg_psi_trigger(char *buf, size_t len, double pct, uint64_t window_us);

/* working set = usage - inactive_file (what kubelet and cAdvisor use);
 * MEMCG_UNKNOWN when memory.stat was not read */
uint64_t memcg_working_set(const struct memcg_reading *r);

#endif
