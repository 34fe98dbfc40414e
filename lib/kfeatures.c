// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <linux/bpf.h>
#include <linux/capability.h>
#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include "btfscan.h"
#include "kfeatures.h"
#include "util.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38
#endif
#ifndef CAP_BPF
#define CAP_BPF 39
#endif

#define VMLINUX_BTF "/sys/kernel/btf/vmlinux"
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define MAX_CACHE 64
#ifndef ENOTSUPP
#define ENOTSUPP 524	/* kernel-internal, seen through BPF */
#endif

struct fentry_result {
	char func[128];
	int err;
	char why[PROBE_WHY_LEN];
};

/* A BTF to ask: our own index for raw BTF, libbpf's parser for ELF files
 * given to --btf. */
struct kbtf {
	struct btfscan *scan;
	struct btf *btf;
};

static struct {
	bool init;
	bool has_kernel_btf;	/* survive feat_release_btf() */
	bool has_core_btf;
	int boot_clock;		/* 0 unknown, 1 yes, -1 no */
	struct kbtf kernel;	/* in-kernel BTF */
	struct kbtf external;	/* --btf */
	const char *btf_path;
	char tracefs[256];
	int tracefs_state;	/* 0 unknown, 1 found, -1 none */
	int kprobes;		/* 0 unknown, 1 yes, -1 no */
	char **ksyms;
	size_t nksyms;
	struct fentry_result fentry[MAX_CACHE];
	int nfentry;
} F;

static bool kbtf_ok(const struct kbtf *k)
{
	return k->scan || k->btf;
}

static int kbtf_open(struct kbtf *k, const char *path)
{
	k->scan = btfscan_open(path);
	if (k->scan)
		return 0;
	if (errno != EINVAL)
		return -errno;
	k->btf = btf__parse(path, NULL);
	return k->btf ? 0 : -errno;
}

static void kbtf_close(struct kbtf *k)
{
	btfscan_free(k->scan);
	btf__free(k->btf);
	k->scan = NULL;
	k->btf = NULL;
}

/* id of a TYPEDEF or FUNC, -1 if none */
static int kbtf_find(const struct kbtf *k, const char *name, int kind)
{
	int id;

	if (k->scan)
		return btfscan_find(k->scan, name, kind);
	if (!k->btf)
		return -1;
	id = btf__find_by_name_kind(k->btf, name, kind);
	return id > 0 ? id : -1;
}

static bool kbtf_enum_value(const struct kbtf *k, const char *enum_name, const char *name,
			    long long *out)
{
	const struct btf_type *t;
	int id;

	if (k->scan)
		return btfscan_enum_value(k->scan, enum_name, name, out);
	if (!k->btf)
		return false;
	id = btf__find_by_name_kind(k->btf, enum_name, BTF_KIND_ENUM);
	if (id <= 0)
		return false;
	t = btf__type_by_id(k->btf, id);
	for (int i = 0; i < btf_vlen(t); i++) {
		const struct btf_enum *e = btf_enum(t) + i;

		if (!strcmp(btf__name_by_offset(k->btf, e->name_off), name)) {
			*out = e->val;
			return true;
		}
	}
	return false;
}

static const struct kbtf *core_btf(void)
{
	return kbtf_ok(&F.external) ? &F.external : &F.kernel;
}

int features_init(const char *btf_path)
{
	int err;

	if (F.init)
		return 0;
	F.init = true;
	if (!access(VMLINUX_BTF, R_OK))
		kbtf_open(&F.kernel, VMLINUX_BTF);
	if (btf_path) {
		err = kbtf_open(&F.external, btf_path);
		if (err)
			return err;
		F.btf_path = btf_path;
	}
	F.has_kernel_btf = kbtf_ok(&F.kernel);
	F.has_core_btf = kbtf_ok(core_btf());
	F.boot_clock = feat_boot_clock() ? 1 : -1;
	return 0;
}

void feat_release_btf(void)
{
	kbtf_close(&F.kernel);
	kbtf_close(&F.external);
}

void features_cleanup(void)
{
	feat_release_btf();
	for (size_t i = 0; i < F.nksyms; i++)
		free(F.ksyms[i]);
	free(F.ksyms);
	memset(&F, 0, sizeof(F));
}

bool feat_core_btf(void)
{
	return F.has_core_btf;
}

const char *feat_btf_source(void)
{
	if (F.btf_path)
		return F.btf_path;
	return F.has_kernel_btf ? VMLINUX_BTF : NULL;
}

bool feat_boot_clock(void)
{
	long long v;

	if (F.boot_clock)
		return F.boot_clock > 0;
	return kbtf_enum_value(core_btf(), "bpf_func_id", "BPF_FUNC_ktime_get_boot_ns", &v);
}

int feat_cgroup_ssid(const char *controller)
{
	char name[64];
	long long v;

	snprintf(name, sizeof(name), "%s_cgrp_id", controller);
	return kbtf_enum_value(core_btf(), "cgroup_subsys_id", name, &v) ? (int)v : -1;
}

static bool has_cap(const struct __user_cap_data_struct *d, int cap)
{
	return d[cap / 32].effective & (1U << (cap % 32));
}

bool feat_privileged(char *why, size_t len)
{
	struct __user_cap_header_struct hdr = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct data[2] = {};

	if (syscall(SYS_capget, &hdr, data)) {
		snprintf(why, len, "cannot read capabilities: %s", strerror(errno));
		return false;
	}
	if (has_cap(data, CAP_SYS_ADMIN) || (has_cap(data, CAP_BPF) && has_cap(data, CAP_PERFMON)))
		return true;
	snprintf(why, len, "needs root, or CAP_BPF and CAP_PERFMON (running as uid %u without them)",
		 (unsigned int)geteuid());
	return false;
}

const char *feat_tracefs(void)
{
	static const char *const candidates[] = { "/sys/kernel/tracing", "/sys/kernel/debug/tracing" };
	char p[PATH_MAX];

	if (F.tracefs_state)
		return F.tracefs_state > 0 ? F.tracefs : NULL;
	for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
		snprintf(p, sizeof(p), "%s/events", candidates[i]);
		if (!access(p, F_OK)) {
			snprintf(F.tracefs, sizeof(F.tracefs), "%s", candidates[i]);
			F.tracefs_state = 1;
			return F.tracefs;
		}
	}
	/* CONTRACT 6: mount it where classic tracepoints need it */
	if (!mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, NULL)) {
		snprintf(F.tracefs, sizeof(F.tracefs), "/sys/kernel/tracing");
		F.tracefs_state = 1;
		return F.tracefs;
	}
	F.tracefs_state = -1;
	return NULL;
}

static bool btf_has_tp(const struct kbtf *k, const char *tp)
{
	char name[160];

	snprintf(name, sizeof(name), "btf_trace_%s", tp);
	return kbtf_find(k, name, BTF_KIND_TYPEDEF) > 0;
}

static int op_tp_btf(void *ctx, const char *tp, char *why, size_t len)
{
	if (!F.has_kernel_btf) {
		snprintf(why, len, "no kernel BTF");
		return -ENOENT;
	}
	if (!btf_has_tp(&F.kernel, tp)) {
		snprintf(why, len, "not in kernel BTF");
		return -ENOENT;
	}
	return 0;
}

static int tracefs_has(const char *cat_name)
{
	const char *tfs = feat_tracefs();
	char p[PATH_MAX];

	if (!tfs)
		return -ENODEV;
	snprintf(p, sizeof(p), "%s/events/%s/id", tfs, cat_name);
	return access(p, F_OK) ? -ENOENT : 0;
}

static int op_raw_tp(void *ctx, const char *tp, char *why, size_t len)
{
	if (btf_has_tp(&F.kernel, tp) || btf_has_tp(&F.external, tp))
		return 0;
	/* without BTF the tracepoint is known from tracefs, under some category */
	if (feat_tracefs()) {
		char p[PATH_MAX];
		FILE *f;
		char line[256];
		size_t n = strlen(tp);

		snprintf(p, sizeof(p), "%s/available_events", feat_tracefs());
		f = fopen(p, "r");
		if (f) {
			while (fgets(line, sizeof(line), f)) {
				char *c = strchr(line, ':');

				if (c && !strncmp(c + 1, tp, n) && (c[1 + n] == '\n' || !c[1 + n])) {
					fclose(f);
					return 0;
				}
			}
			fclose(f);
		}
	}
	snprintf(why, len, "tracepoint not found");
	return -ENOENT;
}

static int op_tracepoint(void *ctx, const char *cat_name, char *why, size_t len)
{
	int err = tracefs_has(cat_name);

	if (err == -ENODEV)
		snprintf(why, len, "tracefs not mounted and cannot be mounted");
	else if (err)
		snprintf(why, len, "not in tracefs");
	return err;
}

static int op_fentry(void *ctx, const char *func, char *why, size_t len)
{
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	struct fentry_result *r;
	int id, fd, lfd;

	for (int i = 0; i < F.nfentry; i++) {
		if (!strcmp(F.fentry[i].func, func)) {
			snprintf(why, len, "%s", F.fentry[i].why);
			return F.fentry[i].err;
		}
	}
	if (!F.has_kernel_btf) {
		snprintf(why, len, "no kernel BTF");
		return -ENOENT;
	}
	id = kbtf_find(&F.kernel, func, BTF_KIND_FUNC);
	if (id <= 0) {
		snprintf(why, len, "not in kernel BTF");
		return -ENOENT;
	}
	/* being in BTF does not make a function attachable: load and attach */
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_FENTRY,
		    .attach_btf_id = id);
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", insns, 2, &opts);
	if (fd < 0) {
		int err = -errno;

		snprintf(why, len, "%s", err == -EPERM ? "not permitted" :
			 err == -ENOTSUPP || err == -EOPNOTSUPP ? "not supported" : strerror(-err));
		fd = err;
	} else {
		lfd = bpf_raw_tracepoint_open(NULL, fd);
		if (lfd < 0) {
			int err = -errno;

			snprintf(why, len, "attach failed: %s", err == -ENOTSUPP ? "not supported" :
				 strerror(-err));
			close(fd);
			fd = err;
		} else {
			close(lfd);
			close(fd);
			fd = 0;
		}
	}
	if (F.nfentry < MAX_CACHE) {
		r = &F.fentry[F.nfentry++];
		snprintf(r->func, sizeof(r->func), "%s", func);
		r->err = fd;
		snprintf(r->why, sizeof(r->why), "%s", fd ? why : "");
	}
	return fd;
}

/* A trial load of a fexit program on func that calls bpf_get_func_ret()
 * (5.17): kernels before it have trampolines but not the helper, and a
 * program that calls it would fail the whole object's load. */
static int trial_func_ret(const char *func, char *why, size_t len)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ST | BPF_MEM | BPF_DW, .dst_reg = BPF_REG_10, .off = -8, .imm = 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_2, .imm = -8 },
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_get_func_ret },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int id, fd;

	id = kbtf_find(&F.kernel, func, BTF_KIND_FUNC);
	if (id <= 0) {
		snprintf(why, len, "not in kernel BTF");
		return -ENOENT;
	}
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_FEXIT,
		    .attach_btf_id = id);
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACING, NULL, "GPL", insns, ARRAY_LEN(insns), &opts);
	if (fd < 0) {
		int err = -errno;

		snprintf(why, len, "no bpf_get_func_ret() in fexit here (%s)", strerror(-err));
		return err;
	}
	close(fd);
	return 0;
}

static int op_needs(void *ctx, enum probe_mech m, const char *target, unsigned int needs,
		    char *why, size_t len)
{
	static int func_ret;	/* 0 unknown, 1 yes, -errno no */
	static char func_ret_why[PROBE_WHY_LEN];

	if (!(needs & PROBE_NEEDS_FUNC_RET) || m != PM_FEXIT)
		return 0;
	/* the helper is the kernel's, whatever the target: tried once */
	if (!func_ret) {
		func_ret = trial_func_ret(target, func_ret_why, sizeof(func_ret_why));
		func_ret = func_ret ? func_ret : 1;
	}
	if (func_ret > 0)
		return 0;
	snprintf(why, len, "%s", func_ret_why);
	return func_ret;
}

int feat_func_param(const char *func, const char *param)
{
	const struct kbtf *k = core_btf();
	const struct btf_type *proto;
	int id;

	if (k->scan)
		return btfscan_func_param(k->scan, func, param);
	if (!k->btf)
		return -1;
	id = btf__find_by_name_kind(k->btf, func, BTF_KIND_FUNC);
	if (id <= 0)
		return -1;
	proto = btf__type_by_id(k->btf, btf__type_by_id(k->btf, id)->type);
	if (!proto || !btf_is_func_proto(proto))
		return -1;
	for (int i = 0; i < btf_vlen(proto); i++)
		if (!strcmp(btf__name_by_offset(k->btf, btf_params(proto)[i].name_off), param))
			return i;
	return -1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void load_ksyms(void)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	char line[512], name[256], type;
	size_t cap = 0;

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%*s %c %255s", &type, name) != 2)
			continue;
		if (type != 't' && type != 'T')
			continue;
		if (F.nksyms == cap) {
			char **n = realloc(F.ksyms, (cap = cap ? cap * 2 : 65536) * sizeof(char *));

			if (!n)
				break;
			F.ksyms = n;
		}
		F.ksyms[F.nksyms++] = strdup(name);
	}
	fclose(f);
	sort_array(F.ksyms, F.nksyms, sizeof(char *), cmp_str);
}

/* func itself, or a compiler clone of it that takes the whole function:
 * "func.isra.0", "func.constprop.0" (not ".part.N": only a piece of it). */
static const char *kprobe_symbol(void *ctx, const char *func)
{
	size_t n = strlen(func), lo = 0, hi = F.nksyms;
	char **hit;

	hit = search_array(&func, F.ksyms, F.nksyms, sizeof(char *), cmp_str);
	if (hit)
		return *hit;
	/* the clones sort right after func: find the first name >= func */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (strcmp(F.ksyms[mid], func) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < F.nksyms && !strncmp(F.ksyms[lo], func, n) && F.ksyms[lo][n] == '.'; lo++)
		if (!strncmp(F.ksyms[lo] + n, ".isra.", 6) ||
		    !strncmp(F.ksyms[lo] + n, ".constprop.", 11))
			return F.ksyms[lo];
	return NULL;
}

static int op_kprobe(void *ctx, const char *func, char *why, size_t len)
{
	const char *tfs;
	char p[PATH_MAX];

	if (!F.kprobes) {
		F.kprobes = -1;
		if (!access("/sys/bus/event_source/devices/kprobe/type", F_OK))
			F.kprobes = 1;
		tfs = feat_tracefs();
		if (tfs) {
			snprintf(p, sizeof(p), "%s/kprobe_events", tfs);
			if (!access(p, F_OK))
				F.kprobes = 1;
		}
		if (F.kprobes > 0)
			load_ksyms();
	}
	if (F.kprobes < 0) {
		snprintf(why, len, "kprobes not supported");
		return -EOPNOTSUPP;
	}
	if (!kprobe_symbol(ctx, func)) {
		snprintf(why, len, "no such kernel function");
		return -ENOENT;
	}
	return 0;
}

/*
 * Where the running task's preemption count lives, for the trial below:
 * x86's per-CPU __preempt_count (or pcpu_hot.preempt_count, 6.2 to 6.14),
 * else thread_info.preempt_count in the task (arm64 and most others).
 */
struct preempt_loc {
	int percpu_var;		/* BTF id of the per-CPU variable, 0: in the task */
	long off;		/* of the count in that variable, or in task_struct */
};

static bool find_preempt_count(const struct btfscan *b, struct preempt_loc *loc)
{
	long ti, pc;

	loc->percpu_var = btfscan_find(b, "__preempt_count", BTFSCAN_VAR);
	loc->off = 0;
	if (loc->percpu_var > 0)
		return true;
	loc->percpu_var = btfscan_find(b, "pcpu_hot", BTFSCAN_VAR);
	loc->off = btfscan_member_offset(b, "pcpu_hot", "preempt_count");
	if (loc->percpu_var > 0 && loc->off >= 0)
		return true;
	loc->percpu_var = 0;
	ti = btfscan_member_offset(b, "task_struct", "thread_info");
	pc = btfscan_member_offset(b, "thread_info", "preempt_count");
	loc->off = ti + pc;
	return ti >= 0 && pc >= 0;
}

#define INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define CALL(fn)		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, fn)
#define MOV_IMM(d, i)		INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define MOV_REG(d, s)		INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define ALU_IMM(op, d, i)	INSN(BPF_ALU64 | (op) | BPF_K, d, 0, 0, i)
#define LD_IMM64(d, s, i)	INSN(BPF_LD | BPF_DW | BPF_IMM, d, s, 0, i), INSN(0, 0, 0, 0, 0)

/*
 * A raw_tp program that, for this thread only, stores the preemption count
 * it runs with in slot key of the map, plus 1 << 32 to tell "ran" from "did
 * not": 36 instructions at most. Jumps go to the exit at the end (fixed
 * below).
 */
static int preempt_prog(struct bpf_insn *p, const struct preempt_loc *loc, int tid, int map_fd,
			int key)
{
	int n = 0, jumps[2], nj = 0;

	p[n++] = CALL(BPF_FUNC_get_current_pid_tgid);
	p[n++] = ALU_IMM(BPF_LSH, BPF_REG_0, 32);
	p[n++] = ALU_IMM(BPF_RSH, BPF_REG_0, 32);
	jumps[nj++] = n;
	p[n++] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_0, 0, 0, tid);
	if (loc->percpu_var) {
		struct bpf_insn ld[2] = { LD_IMM64(BPF_REG_1, BPF_PSEUDO_BTF_ID, loc->percpu_var) };

		p[n++] = ld[0];
		p[n++] = ld[1];
		p[n++] = CALL(BPF_FUNC_this_cpu_ptr);
	} else {
		p[n++] = CALL(BPF_FUNC_get_current_task);
	}
	p[n++] = MOV_REG(BPF_REG_3, BPF_REG_0);
	p[n++] = ALU_IMM(BPF_ADD, BPF_REG_3, loc->off);
	p[n++] = INSN(BPF_ST | BPF_MEM | BPF_DW, BPF_REG_10, 0, -8, 0);
	p[n++] = MOV_REG(BPF_REG_1, BPF_REG_10);
	p[n++] = ALU_IMM(BPF_ADD, BPF_REG_1, -8);
	p[n++] = MOV_IMM(BPF_REG_2, 4);
	p[n++] = CALL(BPF_FUNC_probe_read_kernel);
	jumps[nj++] = n;
	p[n++] = INSN(BPF_JMP | BPF_JNE | BPF_K, BPF_REG_0, 0, 0, 0);
	p[n++] = INSN(BPF_LDX | BPF_MEM | BPF_W, BPF_REG_1, BPF_REG_10, -8, 0);
	p[n++] = MOV_IMM(BPF_REG_2, 1);
	p[n++] = ALU_IMM(BPF_LSH, BPF_REG_2, 32);
	p[n++] = INSN(BPF_ALU64 | BPF_OR | BPF_X, BPF_REG_1, BPF_REG_2, 0, 0);
	p[n++] = INSN(BPF_STX | BPF_MEM | BPF_DW, BPF_REG_10, BPF_REG_1, -16, 0);
	p[n++] = INSN(BPF_ST | BPF_MEM | BPF_W, BPF_REG_10, 0, -20, key);
	{
		struct bpf_insn ld[2] = { LD_IMM64(BPF_REG_1, BPF_PSEUDO_MAP_FD, map_fd) };

		p[n++] = ld[0];
		p[n++] = ld[1];
	}
	p[n++] = MOV_REG(BPF_REG_2, BPF_REG_10);
	p[n++] = ALU_IMM(BPF_ADD, BPF_REG_2, -20);
	p[n++] = MOV_REG(BPF_REG_3, BPF_REG_10);
	p[n++] = ALU_IMM(BPF_ADD, BPF_REG_3, -16);
	p[n++] = MOV_IMM(BPF_REG_4, BPF_ANY);
	p[n++] = CALL(BPF_FUNC_map_update_elem);
	for (int i = 0; i < nj; i++)
		p[jumps[i]].off = n - jumps[i] - 1;
	p[n++] = MOV_IMM(BPF_REG_0, 0);
	p[n++] = INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0);
	return n;
}

/* the trial's map (a slot per program) and its programs: 0 on sys_enter,
 * 1 on sched_switch; -1 where not loaded or attached */
struct preempt_trial {
	int map_fd;
	int prog_fd[2];
	int link_fd[2];
};

static void preempt_attach(struct preempt_trial *t, const struct preempt_loc *loc, int key,
			   const char *tp)
{
	struct bpf_insn insns[40];
	int n = preempt_prog(insns, loc, (int)syscall(SYS_gettid), t->map_fd, key);

	t->prog_fd[key] = bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, NULL, "GPL", insns, n, NULL);
	t->link_fd[key] = t->prog_fd[key] >= 0 ? bpf_raw_tracepoint_open(tp, t->prog_fd[key]) : -1;
}

/*
 * Do tp_btf and raw_tp programs run with preemption on? Asked by trying: a
 * raw_tp program on sys_enter reads the preemption count it runs with, for
 * one syscall of this thread, and the same program on sched_switch, which
 * always runs with preemption off, for one sleep of it. Preemptible: 0 in
 * the syscall (the need-resched bit aside) where the switch read more. A
 * kernel without a preemption count (no CONFIG_PREEMPT_COUNT, and so no
 * preemption in the kernel) reads 0 in both: no. Anything that fails
 * answers no: no kernel BTF, a verifier that refuses, or on x86 a kernel
 * without per-CPU symbols in kallsyms (no CONFIG_KALLSYMS_ALL), where the
 * typed ksym cannot resolve.
 */
static bool trial_tp_preemptible(void)
{
	struct preempt_trial t = { .prog_fd = { -1, -1 }, .link_fd = { -1, -1 } };
	unsigned long long v[2] = { 0, 0 };
	struct preempt_loc loc;

	if (!F.kernel.scan || !find_preempt_count(F.kernel.scan, &loc))
		return false;
	t.map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "aiscope_preempt", 4, 8, 2, NULL);
	if (t.map_fd < 0)
		return false;
	preempt_attach(&t, &loc, 0, "sys_enter");
	preempt_attach(&t, &loc, 1, "sched_switch");
	if (t.link_fd[0] >= 0 && t.link_fd[1] >= 0) {
		syscall(SYS_getppid);
		usleep(1000);
	}
	for (int key = 0; key < 2; key++) {
		if (t.link_fd[key] >= 0)
			close(t.link_fd[key]);
		if (t.prog_fd[key] >= 0)
			close(t.prog_fd[key]);
	}
	for (int key = 0; key < 2; key++)
		bpf_map_lookup_elem(t.map_fd, &key, &v[key]);
	close(t.map_fd);
	return (v[0] >> 32) && (v[1] >> 32) && !(v[0] & 0x7fffffff) && (v[1] & 0x7fffffff);
}

static bool op_tp_preemptible(void *ctx)
{
	static int cached = -1;
	const char *v = getenv("AISCOPE_TEST_TP_PREEMPTIBLE");

	/* a hidden knob for the tests: 1 or 0 answers without the trial */
	if (v && (!strcmp(v, "1") || !strcmp(v, "0")))
		return *v == '1';
	if (cached < 0)
		cached = trial_tp_preemptible();
	return cached;
}

static const struct feat_ops real_ops = {
	.fentry = op_fentry,
	.tp_btf = op_tp_btf,
	.raw_tp = op_raw_tp,
	.tracepoint = op_tracepoint,
	.kprobe = op_kprobe,
	.kprobe_symbol = kprobe_symbol,
	.needs = op_needs,
	.tp_preemptible = op_tp_preemptible,
};

const struct feat_ops *features_ops(void)
{
	return &real_ops;
}

/* Sleepable uprobe programs (6.0+) can fault user pages in
 * (bpf_copy_from_user): a trial load of a trivial one. */
bool feat_sleepable_uprobe(void)
{
	static int cached = -1;
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .prog_flags = BPF_F_SLEEPABLE);
	int fd;

	if (cached >= 0)
		return cached;
	fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns, 2, &opts);
	cached = fd >= 0;
	if (fd >= 0)
		close(fd);
	return cached;
}

/* A trivial program of the uprobe_multi attach type, linked to offset 0 of
 * "/": a kernel with uprobe_multi links fails that with EBADF (not a regular
 * file), one without them with EINVAL at load or link creation. */
static bool probe_uprobe_multi(void)
{
	struct bpf_insn insns[2] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, load, .expected_attach_type = BPF_TRACE_UPROBE_MULTI);
	LIBBPF_OPTS(bpf_link_create_opts, link);
	unsigned long offset = 0;
	int prog_fd, link_fd, err;

	prog_fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, NULL, "GPL", insns, 2, &load);
	if (prog_fd < 0)
		return false;
	link.uprobe_multi.path = "/";
	link.uprobe_multi.offsets = &offset;
	link.uprobe_multi.cnt = 1;
	link_fd = bpf_link_create(prog_fd, -1, BPF_TRACE_UPROBE_MULTI, &link);
	err = -errno;
	if (link_fd >= 0)
		close(link_fd);
	close(prog_fd);
	return link_fd < 0 && err == -EBADF;
}

/* A uprobe program (BPF_PROG_TYPE_KPROBE) may call both: a trial load of
 * each, so that a backported helper counts and a missing one never reaches
 * the verifier of the tool's own programs. */
static bool probe_uprobe_helpers(void)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_get_attach_cookie, NULL) == 1 &&
	       libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, BPF_FUNC_find_vma, NULL) == 1;
}

/* A trial once per process; a test knob set to 1 answers "no" without it,
 * to run the fallback on a kernel that has the feature. */
static bool tried_once(int *cached, const char *knob, bool (*trial)(void))
{
	const char *v = getenv(knob);

	if (*cached < 0)
		*cached = !(v && !strcmp(v, "1")) && trial();
	return *cached;
}

bool feat_uprobe_cookie(void)
{
	static int cached = -1;

	return tried_once(&cached, "AISCOPE_TEST_ADDR_MAP", probe_uprobe_helpers);
}

bool feat_uprobe_multi(void)
{
	static int cached = -1;

	return tried_once(&cached, "AISCOPE_TEST_SINGLE_UPROBES", probe_uprobe_multi);
}
