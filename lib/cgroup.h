/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * cgroups and containers: which hierarchies the host has (v2, hybrid, v1),
 * cgroup id <-> path, and the container a cgroup path belongs to.
 */
#ifndef AISCOPE_CGROUP_H
#define AISCOPE_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum cg_mode { CG_MODE_NONE, CG_MODE_V2, CG_MODE_HYBRID, CG_MODE_V1 };

#define CONTAINER_ID_LEN 64

struct container_info {
	char id[CONTAINER_ID_LEN + 1];	/* "" when not in a container */
	const char *runtime;		/* docker|containerd|crio|podman or NULL */
	char pod_uid[37];		/* "" when not in a pod */
};

/* A cgroup directory as the BPF filter sees it. */
struct cg_target {
	int ssid;		/* -1: v2; else the v1 controller's cgroup_subsys_id */
	unsigned int level;	/* depth below the hierarchy root */
	uint64_t id;		/* kernfs id == the directory's inode number */
	char path[4096];	/* relative to the hierarchy root, "/" for the root */
};

/* Looks up a v1 controller's cgroup_subsys_id ("memory" -> memory_cgrp_id);
 * given by the caller because it needs the kernel's BTF. */
typedef int (*cg_ssid_fn)(const char *controller);

/* Reads the cgroup mounts. root: a prefix for tests ("" on a live host). */
int cg_init(const char *root, cg_ssid_fn ssid_of);
enum cg_mode cg_mode(void);
const char *cg_mode_name(enum cg_mode m);
/* The v1 controller used to name tasks whose v2 cgroup is the root: -1 on
 * pure v2 hosts or when the kernel's controller ids are unknown. */
int cg_attr_ssid(void);

/* Mount point of the cgroup2 hierarchy, or of the v1 hierarchy that
 * carries controller; NULL when there is none. */
const char *cg_v2_mount(void);
const char *cg_v1_mount(const char *controller);

/* A directory given to -c: its hierarchy, level and id. -ENOENT, -ENOTDIR,
 * -EXDEV (not in a cgroup hierarchy), -EOPNOTSUPP (named v1 hierarchy). */
int cg_target_of_dir(const char *dir, struct cg_target *t);
/* --container: the cgroup directory of the only container whose id starts
 * with prefix. -ENOENT none, -EEXIST several (ambiguous), -EINVAL bad id. */
int cg_find_container(const char *prefix, char *dir, size_t len, char *full_id);
/* A container id or prefix as --container takes it: 4 to 64 lowercase hex. */
bool cg_container_prefix_ok(const char *prefix);

/* id -> path relative to its hierarchy ("/system.slice/x.scope"), from a
 * cache filled by file handle (one lookup per new id) where cgroupfs allows
 * it, else by a walk of the hierarchy on a miss (at most once a second); it
 * keeps removed cgroups for about a minute. NULL when unknown. */
const char *cg_path_of(uint64_t id, bool v1);

/* cgroups made while the tool runs are recorded from the cgroup_mkdir
 * tracepoint (a perf event per CPU, opened by cg_init on a live host) and
 * read into the id -> path cache on a miss: a cgroup made and removed
 * between two lookups still has its path. How many CPUs it watches (0:
 * unavailable), and the records the kernel dropped (ring full). */
size_t cg_watch_cpus(void);
uint64_t cg_watch_lost(void);
/* The watcher read as cgroups are made: an fd (an epoll set) readable
 * when records wait, -1 without a watcher; the drain of its records into
 * the cache, made() called for each cgroup of a container among them, with
 * its id and hierarchy (v1: the attribution controller's), once per
 * hierarchy (its names are read while it lives: lib/ctrmeta.h
 * ctrmeta_expect; --pod and --namespace: lib/cgset.h). */
int cg_watch_fd(void);
void cg_watch_drain(void);
void cg_watch_on_made(void (*made)(const struct container_info *ci, uint64_t id, bool v1));
/* The containers' cgroups that exist now, from one walk: into the cache
 * and to made(), as if the watcher had seen them made. */
void cg_watch_existing(void);

/* The cgroup of process pid as the BPF side names a task's (the v2 one;
 * on hybrid hosts, where that is the root, the attribution controller's):
 * its id and hierarchy, from /proc/PID/cgroup; false when it is gone. */
bool cg_of_pid(uint32_t pid, uint64_t *id, bool *v1);

/* Pure: the container of a cgroup path (CONTRACT section 5). */
bool cg_parse_container(const char *path, struct container_info *ci);

void cg_cleanup(void);

/* Tests: the cache's clock (NULL: CLOCK_MONOTONIC; kept by cg_cleanup), and
 * how many cgroups it holds. */
typedef uint64_t (*cg_clock_fn)(void);
void cg_set_clock(cg_clock_fn clock);
size_t cg_cache_size(void);
/* Removed cgroups forgotten because the cache was over its cap (32768
 * entries): a line about one of them has no path. cg_set_cache_max: for
 * the tests (after cg_init, which sets it). */
uint64_t cg_paths_evicted(void);
void cg_set_cache_max(size_t max);
size_t cg_scan_count(void);	/* walks of the hierarchies so far */

#endif
