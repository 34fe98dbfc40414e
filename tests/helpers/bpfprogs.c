// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * bpfprogs: every loaded BPF program's id, type, name, run count and
 * recursion misses (the runs the kernel skipped because the program was
 * already running on that CPU), one line each:
 *
 *	bpfprogs [NAME_PREFIX]
 *	prog ID TYPE NAME run_cnt N recursion_misses N
 *
 * run_cnt counts only while kernel.bpf_stats_enabled is 1. For the VM
 * tests (static, no libbpf).
 */
#include <errno.h>
#include <linux/bpf.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static long sys_bpf(int cmd, union bpf_attr *a)
{
	return syscall(__NR_bpf, cmd, a, sizeof(*a));
}

int main(int argc, char **argv)
{
	const char *pre = argc > 1 ? argv[1] : "";
	__u32 id = 0;

	for (;;) {
		union bpf_attr a;
		struct bpf_prog_info info;
		int fd;

		memset(&a, 0, sizeof(a));
		a.start_id = id;
		if (sys_bpf(BPF_PROG_GET_NEXT_ID, &a))
			break;
		id = a.next_id;
		memset(&a, 0, sizeof(a));
		a.prog_id = id;
		fd = sys_bpf(BPF_PROG_GET_FD_BY_ID, &a);
		if (fd < 0)
			continue;
		memset(&info, 0, sizeof(info));
		memset(&a, 0, sizeof(a));
		a.info.bpf_fd = fd;
		a.info.info_len = sizeof(info);
		a.info.info = (__u64)(unsigned long)&info;
		if (!sys_bpf(BPF_OBJ_GET_INFO_BY_FD, &a) && !strncmp(info.name, pre, strlen(pre)))
			printf("prog %u %u %s run_cnt %llu recursion_misses %llu\n", id, info.type,
			       info.name, (unsigned long long)info.run_cnt,
			       (unsigned long long)info.recursion_misses);
		close(fd);
	}
	return 0;
}
