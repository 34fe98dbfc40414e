/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What this kernel and this process can do, probed once and cached:
 * kernel BTF, tracefs, kprobes, trial fentry loads, BPF helpers,
 * privileges. The one place where tools learn about the kernel.
 */
#ifndef AISCOPE_KFEATURES_H
#define AISCOPE_KFEATURES_H

#include <stdbool.h>
#include "probe.h"

/* btf_path: --btf FILE or NULL. 0, or -errno when that file is unusable. */
int features_init(const char *btf_path);
void features_cleanup(void);
/* Frees the parsed BTF once the attach plan is made: libbpf parses its own
 * copy at load, and two copies would double the peak memory. */
void feat_release_btf(void);
const struct feat_ops *features_ops(void);

bool feat_core_btf(void);		/* kernel BTF or --btf */
const char *feat_btf_source(void);	/* path of the BTF used for CO-RE, or NULL */
bool feat_boot_clock(void);		/* bpf_ktime_get_boot_ns() exists */
/* cgroup_subsys_id of a v1 controller from BTF, -1 if unknown */
int feat_cgroup_ssid(const char *controller);
/* root, or CAP_BPF+CAP_PERFMON, or CAP_SYS_ADMIN; else a reason in why */
bool feat_privileged(char *why, size_t len);
/* sleepable uprobe programs load (6.0+) */
bool feat_sleepable_uprobe(void);
/* uprobe_multi links (6.6+): one link, one detach, for many uprobes of
 * one file; a trial attach. AISCOPE_TEST_SINGLE_UPROBES=1 (a hidden knob
 * for the tests of the fallback) says no. */
bool feat_uprobe_multi(void);
/* bpf_get_attach_cookie() (5.15+) and bpf_find_vma() (5.17+) in uprobe
 * programs, trial loads: a tool that attaches one program to many symbols
 * tells them by their cookie; without, by the probed address (gpulaunch's
 * address map). AISCOPE_TEST_ADDR_MAP=1 (a hidden knob for the tests of
 * the fallback) says no. */
bool feat_uprobe_cookie(void);
/* Index of parameter param of kernel function func in the kernel's BTF
 * (or --btf), -1 when unknown: kprobes read arguments by position, and
 * prototypes change (tcp_recvmsg's flags moved when 5.19 dropped nonblock). */
int feat_func_param(const char *func, const char *param);
/* tracefs mount point, mounting it at /sys/kernel/tracing if needed */
const char *feat_tracefs(void);

#endif
