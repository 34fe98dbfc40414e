/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * NUMA facts from /proc and sysfs: node and CPU lists, a process's
 * resident memory per node (/proc/PID/numa_maps), the devices it has open
 * (NVIDIA GPUs, RDMA verbs devices) and the node of each.
 *
 * AISCOPE_SYSROOT (tests only) is a directory under which the device
 * lookups find dev/, sys/ and proc/driver/ instead of /: a test builds a
 * GPU's sysfs tree there, with no GPU on the host. The host's own topology
 * (nodes, CPUs) and /proc/PID are always read from /.
 */
#ifndef AISCOPE_NUMA_H
#define AISCOPE_NUMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "0-3,8,10-11" (a sysfs cpulist or node list) into out[], ascending as
 * written. Returns how many ids the list has (more than max: only max
 * stored), or -1 when it is not such a list. */
int numa_list_parse(const char *s, uint32_t *out, int max);

/* One line of numa_maps: adds the bytes of its N<node>=<pages> fields
 * (pages of the mapping's kernelpagesize_kB) to bytes[node]; a node at
 * or past nnodes goes to bytes[nnodes]. Returns the bytes added. */
uint64_t numa_maps_line(const char *line, uint64_t *bytes, int nnodes);
/* All of a numa_maps file the same way; -1 (errno set) when unreadable. */
int numa_maps_read(const char *path, uint64_t *bytes, int nnodes);

/* The root of device lookups: AISCOPE_SYSROOT, or "" */
const char *numa_sysroot(void);

enum numa_dev_kind {
	NUMA_DEV_NONE,
	NUMA_DEV_GPU,		/* /dev/nvidiaN */
	NUMA_DEV_RDMA,		/* /dev/infiniband/uverbsN */
};

/* What an fd's link names under root: a device kind and its number. */
enum numa_dev_kind numa_dev_classify(const char *link, const char *root, unsigned int *num);

struct numa_dev {
	enum numa_dev_kind kind;
	unsigned int num;
	char name[32];		/* nvidia0, or the RDMA device (mlx5_0) */
	char pci[32];		/* 0000:3b:00.0, or "" when unknown */
	int node;		/* -1: unknown (no sysfs entry, or the device says -1) */
};

/* The PCI address and node of a device, from root's proc/driver/nvidia
 * (a GPU's "Device Minor") and sys/ trees. */
void numa_dev_resolve(struct numa_dev *d, const char *root);

/* "-1\n" or "1\n" in a sysfs numa_node file; -1 when unreadable */
int numa_node_file(const char *path);

#endif
