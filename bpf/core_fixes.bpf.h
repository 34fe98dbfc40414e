/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* CO-RE shims for kernel structures that changed shape over time. */
#ifndef AISCOPE_CORE_FIXES_BPF_H
#define AISCOPE_CORE_FIXES_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>

/* task_struct::state became __state in 5.14. */
struct task_struct___o {
	volatile long int state;
} __attribute__((preserve_access_index));

static __always_inline long aiscope_task_state(struct task_struct *t)
{
	struct task_struct___o *old = (void *)t;

	if (bpf_core_field_exists(t->__state))
		return BPF_CORE_READ(t, __state);
	return BPF_CORE_READ(old, state);
}

/* cgroup::ancestor_ids[] (ids) became cgroup::ancestors[] (pointers) in 6.0. */
struct cgroup___o {
	int level;
	__u64 ancestor_ids[];
} __attribute__((preserve_access_index));

static __always_inline __u64 aiscope_cgroup_ancestor_id(struct cgroup *cg, __u32 level)
{
	struct cgroup___o *old = (void *)cg;
	struct cgroup *anc = NULL;
	__u64 id = 0;

	if (bpf_core_field_exists(cg->ancestors)) {
		bpf_core_read(&anc, sizeof(anc), &cg->ancestors[level]);
		if (!anc)
			return 0;
		return BPF_CORE_READ(anc, kn, id);
	}
	bpf_core_read(&id, sizeof(id), &old->ancestor_ids[level]);
	return id;
}

#endif
