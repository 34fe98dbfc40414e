/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef CACHESTAT_H
#define CACHESTAT_H

#include "aiscope_common.h"

enum cachestat_by {
	CACHESTAT_BY_HOST,
	CACHESTAT_BY_PID,
	CACHESTAT_BY_CGROUP,	/* --by container aggregates cgroups in user space */
	CACHESTAT_BY_FILE,
};

/* Where accesses come from (decided in user space from the attach plan). */
enum cachestat_access {
	CACHESTAT_ACC_NONE,		/* no access hook: hits unknown */
	CACHESTAT_ACC_FUNCTION,		/* folio_mark_accessed / mark_page_accessed */
	CACHESTAT_ACC_TRACEPOINT,	/* mm_filemap_get_pages / map_pages / fault */
};

/* Page counts. A large folio counts as the pages it holds. */
struct cachestat_counts {
	__u64 accesses;		/* pages marked accessed, or read/mapped */
	__u64 added;		/* pages inserted into the page cache */
	__u64 dirtied;		/* pages that became dirty */
	__u64 buf_dirtied;	/* mark_buffer_dirty() calls (function mode) */
	__u64 write_added;	/* of added: inserted to be written, then dirtied */
};

/* epoch alternates every interval: user space drains the keys of the
 * closed interval while BPF fills those of the open one. */
struct cachestat_key {
	__u64 id;		/* tgid, cgroup id or inode number, per cachestat_by */
	__u32 dev;		/* --by file: the kernel dev_t of the file system */
	__u16 epoch;
	__u8 cgroup_v1;
	__u8 pad;
};

#define CACHESTAT_NAME_LEN 64

struct cachestat_row {
	struct cachestat_counts c;
	struct aiscope_ident ident;	/* the first task seen under the key */
	__u64 size;			/* --by file: i_size when first seen, bytes */
	char name[CACHESTAT_NAME_LEN];	/* --by file: the dentry's name, "" unknown */
};

/* --llc: hardware cache counters sampled per process */
struct cachestat_llc_key {
	__u32 pid;
	__u32 epoch;
};

struct cachestat_llc {
	struct aiscope_ident ident;
	__u64 refs;
	__u64 misses;
};

#endif
