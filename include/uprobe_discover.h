/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Events of bpf/uprobe_discover.bpf.h, read by lib/uprobe.c. */
#ifndef AISCOPE_UPROBE_DISCOVER_H
#define AISCOPE_UPROBE_DISCOVER_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

enum uprobe_discover_why {
	UPROBE_DISC_EXEC = 1,	/* sched_process_exec: a new program */
	UPROBE_DISC_DLOPEN,	/* ld.so's _dl_debug_state: libraries loaded or unloaded */
};

struct uprobe_discover_ev {
	__u32 pid;		/* thread-group id */
	__u32 why;
	__u64 held_ns;		/* --hold: when it was stopped (CLOCK_MONOTONIC), else 0 */
};

#endif
