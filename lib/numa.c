// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* NUMA facts from /proc and sysfs (see numa.h). */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "numa.h"

int numa_list_parse(const char *s, uint32_t *out, int max)
{
	int n = 0;
	char *end;

	while (*s && *s != '\n') {
		unsigned long a, b;

		if (!isdigit((unsigned char)*s))
			return -1;
		a = b = strtoul(s, &end, 10);
		s = end;
		if (*s == '-') {
			if (!isdigit((unsigned char)s[1]))
				return -1;
			b = strtoul(s + 1, &end, 10);
			s = end;
		}
		if (b < a || b > UINT32_MAX)
			return -1;
		for (unsigned long i = a; i <= b; i++, n++)
			if (n < max)
				out[n] = i;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -1;
	}
	return n;
}

uint64_t numa_maps_line(const char *line, uint64_t *bytes, int nnodes)
{
	const char *p = strstr(line, " kernelpagesize_kB=");
	unsigned long long kb = p ? strtoull(p + 19, NULL, 10) : 0;
	uint64_t added = 0;

	/* each field is " N<node>=<pages>" */
	for (p = line; kb && (p = strstr(p, " N")); p += 2) {
		unsigned long node, pages;
		char *end;

		if (!isdigit((unsigned char)p[2]))
			continue;
		node = strtoul(p + 2, &end, 10);
		if (*end != '=' || !isdigit((unsigned char)end[1]))
			continue;
		pages = strtoul(end + 1, NULL, 10);
		bytes[node < (unsigned long)nnodes ? node : (unsigned long)nnodes] += pages * kb * 1024;
		added += pages * kb * 1024;
	}
	return added;
}

int numa_maps_read(const char *path, uint64_t *bytes, int nnodes)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;

	if (!f)
		return -1;
	while (getline(&line, &cap, f) > 0)
		numa_maps_line(line, bytes, nnodes);
	free(line);
	fclose(f);
	return 0;
}

const char *numa_sysroot(void)
{
	const char *r = getenv("AISCOPE_SYSROOT");

	return r ? r : "";
}

/* "<prefix><digits>" exactly; the number in *num */
static bool numbered(const char *s, const char *prefix, unsigned int *num)
{
	size_t n = strlen(prefix);
	char *end;

	if (strncmp(s, prefix, n) || !isdigit((unsigned char)s[n]))
		return false;
	*num = strtoul(s + n, &end, 10);
	return !*end;
}

enum numa_dev_kind numa_dev_classify(const char *link, const char *root, unsigned int *num)
{
	size_t n = strlen(root);

	if (strncmp(link, root, n))
		return NUMA_DEV_NONE;
	link += n;
	if (numbered(link, "/dev/nvidia", num))
		return NUMA_DEV_GPU;
	if (numbered(link, "/dev/infiniband/uverbs", num))
		return NUMA_DEV_RDMA;
	return NUMA_DEV_NONE;
}

int numa_node_file(const char *path)
{
	FILE *f = fopen(path, "re");
	int node = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &node) != 1 || node < 0)
		node = -1;
	fclose(f);
	return node;
}

/* The first line of a small file, without its newline; "" when none */
static void read_line(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	buf[0] = 0;
	if (!f)
		return;
	if (!fgets(buf, len, f))
		buf[0] = 0;
	buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

/* The NVIDIA driver lists each GPU under its PCI address with the minor
 * of its /dev/nvidiaN: that is the one map from the file to the device. */
static void gpu_pci(struct numa_dev *d, const char *root)
{
	char path[PATH_MAX], line[256];
	struct dirent *e;
	DIR *dir;

	snprintf(path, sizeof(path), "%s/proc/driver/nvidia/gpus", root);
	dir = opendir(path);
	if (!dir)
		return;
	while ((e = readdir(dir)) && !d->pci[0]) {
		FILE *f;

		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(d->pci))
			continue;
		snprintf(path, sizeof(path), "%s/proc/driver/nvidia/gpus/%s/information", root,
			 e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f)) {
			unsigned int minor;

			if (sscanf(line, "Device Minor: %u", &minor) == 1 && minor == d->num) {
				strcpy(d->pci, e->d_name);
				break;
			}
		}
		fclose(f);
	}
	closedir(dir);
}

/* "0000:3b:00.0": a PCI address, as sysfs names a PCI device */
static bool pci_address(const char *s)
{
	unsigned int dom, bus, slot, fn;
	int end = 0;

	return sscanf(s, "%4x:%2x:%2x.%1u%n", &dom, &bus, &slot, &fn, &end) == 4 &&
	       end == 12 && !s[end];
}

/* The node of the device at dir (a sysfs "device" link): the nearest of
 * it and its parents under root's sys/devices with a numa_node file (a
 * virtio NIC has none, its PCI device has), with the nearest PCI address
 * among them into pci when it has none yet; -1 when none says. */
static int device_node(const char *dir, const char *root, char pci[32])
{
	char real[PATH_MAX], top[PATH_MAX], path[PATH_MAX];
	size_t ntop;
	char *base;

	snprintf(path, sizeof(path), "%s/sys/devices", root);
	if (!realpath(dir, real) || !realpath(path, top))
		return -1;
	ntop = strlen(top);
	while (!strncmp(real, top, ntop) && real[ntop] == '/') {
		base = strrchr(real, '/');
		if (!pci[0] && pci_address(base + 1))
			strcpy(pci, base + 1);
		if (snprintf(path, sizeof(path), "%s/numa_node", real) < (int)sizeof(path) &&
		    !access(path, F_OK))
			return numa_node_file(path);
		*base = 0;
	}
	return -1;
}

/* The network device a software RDMA device (rxe, siw) sends through:
 * the netdev of one of its port 1 GIDs (RoCE), else its "parent" (rxe);
 * false when it names none */
static bool rdma_netdev(const char *ibdev, const char *root, char *out, size_t len)
{
	char path[PATH_MAX];
	struct dirent *e;
	DIR *dir;

	out[0] = 0;
	snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/ports/1/gid_attrs/ndevs", root,
		 ibdev);
	dir = opendir(path);
	while (dir && !out[0] && (e = readdir(dir))) {
		char file[PATH_MAX];

		if (e->d_name[0] == '.' ||
		    snprintf(file, sizeof(file), "%s/%s", path, e->d_name) >= (int)sizeof(file))
			continue;
		read_line(file, out, len);	/* an unused GID's read fails */
	}
	if (dir)
		closedir(dir);
	if (!out[0]) {
		snprintf(path, sizeof(path), "%s/sys/class/infiniband/%s/parent", root, ibdev);
		read_line(path, out, len);
	}
	return out[0] && !strchr(out, '/') && strcmp(out, ".") && strcmp(out, "..");
}

/* A verbs device's own device (a PCI HCA); a software one has none: then
 * the NIC it runs on, whose node is where its traffic comes and goes */
static void rdma_dev(struct numa_dev *d, const char *root)
{
	char path[PATH_MAX], ibdev[sizeof(d->name)], ndev[64];

	snprintf(path, sizeof(path), "%s/sys/class/infiniband_verbs/uverbs%u/ibdev", root, d->num);
	read_line(path, ibdev, sizeof(ibdev));
	if (ibdev[0])
		snprintf(d->name, sizeof(d->name), "%s", ibdev);
	snprintf(path, sizeof(path), "%s/sys/class/infiniband_verbs/uverbs%u/device", root, d->num);
	if (!access(path, F_OK)) {
		d->node = device_node(path, root, d->pci);
		return;
	}
	if (!ibdev[0] || strchr(ibdev, '/') || !rdma_netdev(ibdev, root, ndev, sizeof(ndev)))
		return;
	snprintf(path, sizeof(path), "%s/sys/class/net/%s/device", root, ndev);
	if (!access(path, F_OK))
		d->node = device_node(path, root, d->pci);
}

void numa_dev_resolve(struct numa_dev *d, const char *root)
{
	char path[PATH_MAX];

	d->pci[0] = 0;
	d->node = -1;
	if (d->kind == NUMA_DEV_GPU) {
		snprintf(d->name, sizeof(d->name), "nvidia%u", d->num);
		gpu_pci(d, root);
		if (!d->pci[0])
			return;
		snprintf(path, sizeof(path), "%s/sys/bus/pci/devices/%s/numa_node", root, d->pci);
		d->node = numa_node_file(path);
	} else if (d->kind == NUMA_DEV_RDMA) {
		snprintf(d->name, sizeof(d->name), "uverbs%u", d->num);
		rdma_dev(d, root);
	}
}
