/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --pod NAME and --namespace NS in a live run: only the tasks of the
 * containers whose Kubernetes names (lib/ctrmeta) match, filtered in BPF
 * through the set of their cgroups (map aiscope_cgset, bpf/aiscope.bpf.h)
 * as -c filters through one. The set grows as lib/cgroup's watcher reports
 * a container's cgroup (those that run as the tool starts, then each one
 * made), once its names are read: a container started later in the pod or
 * the namespace, or a pod made again under its name, is traced from then on.
 *
 * A container matches when its pod name is NAME (any, without --pod) and
 * its namespace NS (any, without --namespace). One whose runtime's state
 * is never read has no names and never matches. Its cgroup stays in the
 * set after it ends (its id is not used again): at most AISCOPE_MAX_CGSET
 * cgroups for a run; one past them, or past CGSET_PENDING containers
 * waiting for their names, is not traced, and counted (cgset_dropped).
 */
#ifndef AISCOPE_CGSET_H
#define AISCOPE_CGSET_H

#include <stdbool.h>
#include <stdint.h>
#include "aiscope_common.h"
#include "cgroup.h"

#define CGSET_PENDING 256

/* The names to match (NULL: any; both NULL: no set). */
void cgset_want(const char *pod, const char *ns);
bool cgset_active(void);
/* Where the members go: add(key) returns 0 or a negative errno (the BPF
 * map's update); members known before are given to it at once. */
void cgset_attach(int (*add)(const struct aiscope_cgset_key *k, void *ctx), void *ctx);
/* A container's cgroup (id in the v2 hierarchy, or v1: the attribution
 * controller's), made or found: a member once its names match. */
void cgset_made(const struct container_info *ci, uint64_t cgid, bool v1);
/* The containers still waiting for their names: those read since are
 * matched (call after ctrmeta_poll); one waiting CTRMETA's 5 s is let go. */
void cgset_poll(void);
/* User space's own filter of a cgroup path (oomwatch's memory cgroups): a
 * matching container's cgroup or one below it, or the pod cgroup of a
 * member. */
bool cgset_path_wanted(const char *path);
/* A container's names match (ctrmeta found them). */
bool cgset_names_match(const char *id, const char *runtime);

size_t cgset_members(void);
uint64_t cgset_dropped(void);
void cgset_reset(void);

#endif
