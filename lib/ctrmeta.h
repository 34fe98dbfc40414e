/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Container names: given a container id (and the runtime its cgroup path
 * named, or NULL), the name, image and Kubernetes pod name, namespace and
 * container name from the runtime's own on-disk state, read-only, no
 * socket and no daemon:
 *
 *  podman:     /var/lib/containers/storage/overlay-containers/containers.json
 *              (names, metadata's image-name) and <id>/userdata/config.json
 *              (the OCI spec's annotations);
 *  crio:       the same files: a spec whose io.container.manager is "cri-o"
 *              (or, without one, that has CRI-O's own keys such as
 *              io.kubernetes.cri-o.Name) is CRI-O's, its image
 *              io.kubernetes.cri-o.ImageName;
 *  containerd: the task bundle /run/containerd/io.containerd.runtime.v2.task/
 *              <namespace>/<id>/config.json (also under /run/k3s/containerd),
 *              its annotations: CRI's io.kubernetes.cri.container-name,
 *              sandbox-name, sandbox-namespace, image-name; nerdctl/name;
 *  runc alone: /run/runc/<id>/state.json (config.labels: the bundle's
 *              annotations as key=value; the id is its name);
 *  docker:     /var/lib/docker/containers/<id>/config.v2.json (Name,
 *              Config.Image, Config.Labels).
 *
 * Kubernetes keys are taken from the annotations (or docker's labels)
 * whatever the runtime: CRI containerd's io.kubernetes.cri.*, kubelet's
 * io.kubernetes.pod.name / io.kubernetes.pod.namespace /
 * io.kubernetes.container.name (dockershim labels, CRI-O annotations and
 * its io.kubernetes.cri-o.Labels).
 *
 * Results are cached by id; a miss is retried at most once a second (a
 * container's state is written while it starts). The cache holds at most
 * CTRMETA_CAP entries; past that the oldest is dropped and counted.
 *
 * A container whose cgroup was just made (lib/cgroup.c's watcher) is read
 * at once and, until its runtime's state has it, again within 10 to 100 ms
 * for 5 s (ctrmeta_expect, ctrmeta_poll): its names are in the cache before
 * a short-lived container's state is removed (podman run --rm, runc
 * delete), and stay there for the run.
 */
#ifndef AISCOPE_CTRMETA_H
#define AISCOPE_CTRMETA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CTRMETA_CAP 4096
#define CTRMETA_WAITING 256	/* containers waiting for their state, at most */
#define CTRMETA_LABELS 4		/* ctrmeta_set_labels' keys, at most */
#define CTRMETA_LABEL_LEN 256

struct ctr_meta {
	bool found;			/* the runtime's state had the id */
	const char *runtime;		/* docker|containerd|crio|podman|runc, NULL unknown */
	char name[256];			/* "" unknown, likewise below */
	char image[512];
	char pod_name[256];
	char pod_namespace[256];
	char k8s_container[256];
	/* the values of the keys ctrmeta_set_labels chose, in its order,
	 * from the labels and annotations read above ("" absent) */
	char labels[CTRMETA_LABELS][CTRMETA_LABEL_LEN];
};

/* A prefix for every path read (tests: a fixture tree; "" or NULL: the
 * host). Empties the cache. */
void ctrmeta_set_root(const char *root);
/* The cache's clock (tests; NULL: CLOCK_MONOTONIC), and its time now:
 * lib/cgset's waits run on it too. */
void ctrmeta_set_clock(uint64_t (*clock)(void));
uint64_t ctrmeta_now(void);
/* The label or annotation keys (at most CTRMETA_LABELS; the strings are
 * kept) whose values ctr_meta.labels holds: docker's Config.Labels, the
 * OCI spec's annotations (containerd, CRI, podman --annotation), runc's
 * bundle labels. Empties the cache. */
void ctrmeta_set_labels(const char *const *keys, size_t n);
/* The metadata of id (64 hex, or any id a runtime uses), runtime as the
 * cgroup path named it (NULL: try each). Never NULL; ->found false when no
 * runtime knows it (yet). Valid until the next call. */
const struct ctr_meta *ctrmeta_lookup(const char *id, const char *runtime);
/* The id of the only container named name (podman, docker, nerdctl, CRI
 * and runc names, and Kubernetes container names), into id[65]:
 * 0, -ENOENT none, -EEXIST several. */
int ctrmeta_find_name(const char *name, char *id, size_t len);
/* The ids (at most max into ids) of the containers of Kubernetes pod pod
 * (NULL: any pod), in namespace ns (NULL: any): how many there are, or
 * -EINVAL (neither given). */
int ctrmeta_find_pod(const char *pod, const char *ns, char (*ids)[129], size_t max);
/* A container made now: read its state now, and keep reading it (by
 * ctrmeta_poll) while no runtime has it, for a few seconds. An id past
 * CTRMETA_WAITING waiting ones is not kept (counted). */
void ctrmeta_expect(const char *id, const char *runtime);
/* Reads the expected ids that are due; ms until the next one is, -1 when
 * none waits (an epoll_wait timeout). */
int ctrmeta_poll(void);
/* An fd readable when a waiting container's state may have appeared
 * (inotify on runc's state directory: it lives for milliseconds); the
 * caller's loop calls ctrmeta_poll when it is. -1: none. */
int ctrmeta_watch_fd(void);
size_t ctrmeta_waiting(void);
uint64_t ctrmeta_expect_dropped(void);	/* ids not kept: CTRMETA_WAITING waited */
size_t ctrmeta_cache_size(void);
uint64_t ctrmeta_evicted(void);		/* entries dropped at the cap */
uint64_t ctrmeta_reads(void);		/* lookups that read the runtimes' files */
void ctrmeta_cleanup(void);

#endif
