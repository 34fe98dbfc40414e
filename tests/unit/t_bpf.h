/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What a unit test that loads BPF objects does first (after t.h):
 *
 *	if ((why = t_bpf_begin()))
 *		SKIP(why);
 */
#ifndef AISCOPE_T_BPF_H
#define AISCOPE_T_BPF_H

#include <stdlib.h>
#include <unistd.h>
#include <bpf/libbpf.h>

/* NULL when this process may load BPF (root), else why not; libbpf's own
 * messages only with T_VERBOSE=1 */
static inline const char *t_bpf_begin(void)
{
	if (geteuid() != 0)
		return "not root";
	if (!getenv("T_VERBOSE"))
		libbpf_set_print(NULL);
	return NULL;
}

#endif
