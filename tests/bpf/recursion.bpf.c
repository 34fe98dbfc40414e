// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * tests/unit/test_lost.c's BPF side: runs whose count the test knows, each
 * of them skipped by the kernel once. kick (raw_tp, run by the test with
 * BPF_PROG_TEST_RUN) prints a line; the bpf_trace_printk tracepoint runs
 * on_printk, which prints too: that tracepoint fires inside on_printk, and
 * the kernel skips the nested run (bpf_prog_info.recursion_misses). Each
 * run of on_printk also counts one map_full loss, so that the test sees
 * lib/run.c add both kinds.
 */
#include "aiscope.bpf.h"

const volatile __u32 target_tgid;

__u64 printk_runs;

SEC("raw_tp")
int kick(void *ctx)
{
	bpf_printk("aiscope test_lost");
	return 0;
}

SEC("tp_btf/bpf_trace_printk")
int BPF_PROG(on_printk, const char *buf)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	__sync_fetch_and_add(&printk_runs, 1);
	aiscope_count_lost(AISCOPE_LOST_MAP);
	bpf_printk("aiscope test_lost, nested");
	return 0;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
