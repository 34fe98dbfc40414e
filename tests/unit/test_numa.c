// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/numa.c: node lists, numa_maps sums, devices in a sysfs tree built here. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "t.h"
#include "numa.h"

static void test_list(void)
{
	uint32_t ids[8];

	CHECK_EQ(numa_list_parse("0\n", ids, 8), 1);
	CHECK_EQ(ids[0], 0);
	CHECK_EQ(numa_list_parse("0-3,8,10-11\n", ids, 8), 7);
	CHECK_EQ(ids[3], 3);
	CHECK_EQ(ids[4], 8);
	CHECK_EQ(ids[6], 11);
	/* more than max: counted, not stored past it */
	CHECK_EQ(numa_list_parse("0-99", ids, 8), 100);
	CHECK_EQ(ids[7], 7);
	CHECK_EQ(numa_list_parse("", ids, 8), 0);
	CHECK_EQ(numa_list_parse("3-1", ids, 8), -1);
	CHECK_EQ(numa_list_parse("a", ids, 8), -1);
	CHECK_EQ(numa_list_parse("1-", ids, 8), -1);
	CHECK_EQ(numa_list_parse("1;2", ids, 8), -1);
}

static void test_maps_line(void)
{
	uint64_t b[3] = {};

	/* 4 KiB pages on two nodes */
	CHECK_EQ(numa_maps_line("7f00 default anon=3 dirty=3 N0=1 N1=2 kernelpagesize_kB=4\n", b, 2),
		 3 * 4096);
	CHECK_EQ(b[0], 4096);
	CHECK_EQ(b[1], 8192);
	/* huge pages count in their own size; a node past nnodes in b[nnodes] */
	CHECK_EQ(numa_maps_line("7f00 default file=/x huge dirty=1 N5=1 kernelpagesize_kB=2048", b, 2),
		 2048 * 1024);
	CHECK_EQ(b[2], 2048 * 1024);
	/* no pages resident: nothing */
	CHECK_EQ(numa_maps_line("7f00 bind:1 anon=0 kernelpagesize_kB=16", b, 2), 0);
	/* a file name that looks like a field is not one */
	CHECK_EQ(numa_maps_line("7f00 default file=/tmp/N0=5 N1=1 kernelpagesize_kB=16", b, 2), 16384);
	CHECK_EQ(b[1], 8192 + 16384);
}

static void put(const char *root, const char *rel, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	f = fopen(path, "w");
	CHECK(f != NULL);
	if (!f)
		return;
	fputs(text, f);
	fclose(f);
}

static void mk(const char *root, const char *rel)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/%s'", root, rel);
	CHECK(system(cmd) == 0);
}

static void test_devices(void)
{
	char root[] = "/tmp/aiscope-numa-XXXXXX", link[512], cmd[600];
	struct numa_dev d = {};
	unsigned int num;

	CHECK(mkdtemp(root) != NULL);
	mk(root, "proc/driver/nvidia/gpus/0000:3b:00.0");
	mk(root, "proc/driver/nvidia/gpus/0000:af:00.0");
	put(root, "proc/driver/nvidia/gpus/0000:3b:00.0/information", "Model: X\nDevice Minor: 0\n");
	put(root, "proc/driver/nvidia/gpus/0000:af:00.0/information", "Model: X\nDevice Minor: 1\n");
	mk(root, "sys/bus/pci/devices/0000:3b:00.0");
	mk(root, "sys/bus/pci/devices/0000:af:00.0");
	mk(root, "sys/devices/pci0000:00/0000:17:00.0");
	put(root, "sys/bus/pci/devices/0000:3b:00.0/numa_node", "0\n");
	put(root, "sys/bus/pci/devices/0000:af:00.0/numa_node", "1\n");
	put(root, "sys/devices/pci0000:00/0000:17:00.0/numa_node", "-1\n");
	mk(root, "sys/class/infiniband_verbs/uverbs0");
	put(root, "sys/class/infiniband_verbs/uverbs0/ibdev", "mlx5_0\n");
	snprintf(cmd, sizeof(cmd), "ln -s ../../../devices/pci0000:00/0000:17:00.0 '%s/sys/class/infiniband_verbs/uverbs0/device'", root);
	CHECK(system(cmd) == 0);

	snprintf(link, sizeof(link), "%s/dev/nvidia1", root);
	CHECK_EQ(numa_dev_classify(link, root, &num), NUMA_DEV_GPU);
	CHECK_EQ(num, 1);
	CHECK_EQ(numa_dev_classify("/dev/nvidia1", root, &num), NUMA_DEV_NONE);
	CHECK_EQ(numa_dev_classify("/dev/nvidiactl", "", &num), NUMA_DEV_NONE);
	CHECK_EQ(numa_dev_classify("/dev/nvidia-uvm", "", &num), NUMA_DEV_NONE);
	CHECK_EQ(numa_dev_classify("/dev/infiniband/uverbs3", "", &num), NUMA_DEV_RDMA);
	CHECK_EQ(num, 3);
	CHECK_EQ(numa_dev_classify("/dev/infiniband/rdma_cm", "", &num), NUMA_DEV_NONE);

	d = (struct numa_dev){ .kind = NUMA_DEV_GPU, .num = 1 };
	numa_dev_resolve(&d, root);
	CHECK_STR(d.name, "nvidia1");
	CHECK_STR(d.pci, "0000:af:00.0");
	CHECK_EQ(d.node, 1);
	d = (struct numa_dev){ .kind = NUMA_DEV_GPU, .num = 7 };	/* no such minor */
	numa_dev_resolve(&d, root);
	CHECK_STR(d.pci, "");
	CHECK_EQ(d.node, -1);
	d = (struct numa_dev){ .kind = NUMA_DEV_RDMA, .num = 0 };
	numa_dev_resolve(&d, root);
	CHECK_STR(d.name, "mlx5_0");
	CHECK_STR(d.pci, "0000:17:00.0");
	CHECK_EQ(d.node, -1);		/* the device says -1: unknown */

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
}

static void ln(const char *target, const char *root, const char *rel)
{
	char cmd[700];

	snprintf(cmd, sizeof(cmd), "ln -s '%s' '%s/%s'", target, root, rel);
	CHECK(system(cmd) == 0);
}

/* Soft-RoCE and siw have no device of their own: the NIC they run on
 * places them (a virtio NIC's node is its PCI device's) */
static void test_soft_rdma(void)
{
	char root[] = "/tmp/aiscope-numa-XXXXXX", cmd[600];
	struct numa_dev d;

	CHECK(mkdtemp(root) != NULL);
	/* rxe0 on eth1: virtio3 on PCI 0000:80:02.0, node 1; its GID 0
	 * unused (empty), GID 1 on eth1 */
	mk(root, "sys/devices/pci0000:80/0000:80:02.0/virtio3/net/eth1");
	put(root, "sys/devices/pci0000:80/0000:80:02.0/numa_node", "1\n");
	mk(root, "sys/class/net");
	ln("../../devices/pci0000:80/0000:80:02.0/virtio3/net/eth1", root, "sys/class/net/eth1");
	ln("../../../virtio3", root, "sys/devices/pci0000:80/0000:80:02.0/virtio3/net/eth1/device");
	mk(root, "sys/class/infiniband_verbs/uverbs1");
	put(root, "sys/class/infiniband_verbs/uverbs1/ibdev", "rxe0\n");
	mk(root, "sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs");
	put(root, "sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/0", "");
	put(root, "sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/1", "eth1\n");
	d = (struct numa_dev){ .kind = NUMA_DEV_RDMA, .num = 1 };
	numa_dev_resolve(&d, root);
	CHECK_STR(d.name, "rxe0");
	CHECK_STR(d.pci, "0000:80:02.0");
	CHECK_EQ(d.node, 1);

	/* siw0 names no GID's netdev: its "parent", eth2 on PCI node 0 */
	mk(root, "sys/devices/pci0000:00/0000:00:03.0/net/eth2");
	put(root, "sys/devices/pci0000:00/0000:00:03.0/numa_node", "0\n");
	ln("../../devices/pci0000:00/0000:00:03.0/net/eth2", root, "sys/class/net/eth2");
	ln("../../../0000:00:03.0", root, "sys/devices/pci0000:00/0000:00:03.0/net/eth2/device");
	mk(root, "sys/class/infiniband_verbs/uverbs2");
	put(root, "sys/class/infiniband_verbs/uverbs2/ibdev", "siw0\n");
	mk(root, "sys/class/infiniband/siw0");
	put(root, "sys/class/infiniband/siw0/parent", "eth2\n");
	d = (struct numa_dev){ .kind = NUMA_DEV_RDMA, .num = 2 };
	numa_dev_resolve(&d, root);
	CHECK_STR(d.name, "siw0");
	CHECK_STR(d.pci, "0000:00:03.0");
	CHECK_EQ(d.node, 0);

	/* on a netdev of no device (dummy0), or naming a path: unknown */
	mk(root, "sys/class/net/dummy0");
	mk(root, "sys/class/infiniband_verbs/uverbs3");
	put(root, "sys/class/infiniband_verbs/uverbs3/ibdev", "rxe1\n");
	mk(root, "sys/class/infiniband/rxe1");
	put(root, "sys/class/infiniband/rxe1/parent", "dummy0\n");
	d = (struct numa_dev){ .kind = NUMA_DEV_RDMA, .num = 3 };
	numa_dev_resolve(&d, root);
	CHECK_STR(d.name, "rxe1");
	CHECK_STR(d.pci, "");
	CHECK_EQ(d.node, -1);
	put(root, "sys/class/infiniband/rxe1/parent", "../eth2\n");
	d = (struct numa_dev){ .kind = NUMA_DEV_RDMA, .num = 3 };
	numa_dev_resolve(&d, root);
	CHECK_EQ(d.node, -1);
	/* a device outside sys/devices is not read, numa_node or not */
	mk(root, "outside");
	put(root, "outside/numa_node", "1\n");
	mk(root, "sys/class/net/eth9");
	ln("../../../../outside", root, "sys/class/net/eth9/device");
	put(root, "sys/class/infiniband/rxe1/parent", "eth9\n");
	d = (struct numa_dev){ .kind = NUMA_DEV_RDMA, .num = 3 };
	numa_dev_resolve(&d, root);
	CHECK_EQ(d.node, -1);

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	CHECK(system(cmd) == 0);
}

int main(void)
{
	RUN(test_list);
	RUN(test_maps_line);
	RUN(test_devices);
	RUN(test_soft_rdma);
	return t_done();
}
