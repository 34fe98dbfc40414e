// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* topograph's own BPF side (bpf/topograph.bpf.c): process fork, exec and
 * exit during a live capture, collected into the nodes at its end. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "cgroup.h"
#include "mapdrain.h"
#include "topo.h"
#include "topograph.h"	/* bpf/: the records of the BPF side */
#include "topograph.skel.h"

/* Tracepoints only: their arguments are a stable ABI, and each is one
 * place in the kernel (a function hook would need several). */
static struct probe_hook hooks[] = {
	{ .name = "sched_process_fork", .preemptible = true,
	  .cand = { PROBE_TRACEPOINT("sched", "sched_process_fork", "fork") } },
	{ .name = "sched_process_exec", .preemptible = true,
	  .cand = { PROBE_TRACEPOINT("sched", "sched_process_exec", "exec") } },
	{ .name = "sched_process_exit", .preemptible = true,
	  .cand = { PROBE_TRACEPOINT("sched", "sched_process_exit", "exit") } },
};

struct lifecycle L;

/* Opens the object and resolves the plan: --list-probes ends here, and a
 * kernel without any candidate of a hook exits 77 naming them. */
void lifecycle_open(void)
{
	L.skel = topograph_bpf__open_opts(aiscope_open_opts());
	if (!L.skel)
		aiscope_fail(EXIT_RUNTIME, "cannot open the BPF object: %s", strerror(errno));
	L.skel->rodata->self_tgid = getpid();
	L.bpf = (struct aiscope_bpf){ .hooks = hooks, .nhooks = ARRAY_SIZE(hooks) };
	aiscope_bpf_prepare(&L.bpf, L.skel->obj, &L.skel->rodata->aiscope_cfg);
}

/* Before the tools start: what they see, it has seen from the start. */
void lifecycle_start(void)
{
	sigset_t mask;

	lifecycle_open();
	aiscope_bpf_load(&L.bpf, topograph_bpf__load(L.skel));
	sigprocmask(SIG_SETMASK, NULL, &mask);
	aiscope_bpf_attach(&L.bpf);
	/* attach blocks SIGINT and SIGTERM for lib/run's loop: capture()
	 * starts the tools before it does, and they must not inherit them
	 * blocked */
	sigprocmask(SIG_SETMASK, &mask, NULL);
	L.on = true;
}

/* "/a/b/c" from the names read in BPF, leaf first; NULL when its depth
 * is more than they hold */
static char *record_cgroup(const struct topo_proc *r)
{
	char path[TOPO_CG_LEVELS * (TOPO_CG_NAME + 1) + 2] = "";
	size_t len = 0;

	if (r->cg_level > r->cg_levels)
		return NULL;
	if (!r->cg_levels)
		return xstrdup("/");
	for (int i = r->cg_levels - 1; i >= 0; i--)
		len += snprintf(path + len, sizeof(path) - len, "/%.*s", TOPO_CG_NAME,
				r->cg_name[i]);
	return xstrdup(path);
}

/* Classic tracepoints record new threads too: a pid never seen exec or
 * exit that /proc says is a thread is one. */
static bool is_thread(uint32_t pid)
{
	char path[64], line[128];
	unsigned int tgid = pid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/status", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %u", &tgid) == 1)
			break;
	fclose(f);
	return tgid != pid;
}

/* The identity a record knows fills what the edges did not say: a
 * process gone before the capture ended had its cgroup, whose directory
 * may be gone too (the tools then print it null). */
static void record_ident(struct node *n, const struct topo_proc *r)
{
	struct container_info ci;
	const char *live;
	char comm[AISCOPE_COMM_LEN + 1];

	snprintf(comm, sizeof(comm), "%.*s", AISCOPE_COMM_LEN, r->comm);
	if (!n->comm)
		set_str(&n->comm, comm);
	if (!n->has_uid) {
		n->uid = r->uid;
		n->has_uid = true;
	}
	if (n->has_cgid && n->cgroup_id != r->cgroup_id)
		return;		/* it moved: the edges' cgroup is the later one */
	n->cgroup_id = r->cgroup_id;
	n->has_cgid = true;
	if (!n->cgroup) {
		live = cg_path_of(r->cgroup_id, r->cgroup_v1);
		n->cgroup = live ? xstrdup(live) : record_cgroup(r);
	}
	if (!n->container_id && n->cgroup && cg_parse_container(n->cgroup, &ci) && ci.id[0]) {
		set_str(&n->container_id, ci.id);
		set_str(&n->runtime, ci.runtime);
		if (ci.pod_uid[0])
			set_str(&n->pod_uid, ci.pod_uid);
	}
}

static void take_record(const void *key, const void *value, void *ctx)
{
	const struct topo_proc *r = value;
	struct node *n;
	char file[TOPO_FILE_LEN + 1];

	if (!r->pid || ((r->flags & TOPO_MAYBE_THREAD) && is_thread(r->pid)))
		return;
	n = proc_node(r->pid);
	L.records++;
	n->has_life = true;
	n->has_ppid = true;
	n->ppid = r->ppid;
	if (r->flags & TOPO_FORKED)
		n->started_ns = aiscope_realtime(r->fork_ns);
	if (r->flags & TOPO_EXITED) {
		n->exited_ns = aiscope_realtime(r->exit_ns);
		n->status = r->exit_code;
	}
	n->execs = r->execs;
	n->reexecs = r->reexecs;
	if (r->filename[0]) {
		snprintf(file, sizeof(file), "%.*s", TOPO_FILE_LEN, r->filename);
		set_str(&n->exec_file, file);
	}
	record_ident(n, r);
}

/* Once the tools have ended: the records into the nodes. */
void lifecycle_collect(void)
{
	if (!L.on)
		return;
	map_drain(bpf_map__fd(L.skel->maps.procs), sizeof(uint32_t), sizeof(struct topo_proc),
		  NULL, take_record, NULL);
	aiscope_lost_check(&L.bpf);
	lifecycle_stop();
}

void lifecycle_stop(void)
{
	if (!L.skel)
		return;
	/* the end of the run as every tool's: the hooks off, the cgroup and
	 * feature caches freed */
	aiscope_teardown(&L.bpf, NULL);
	topograph_bpf__destroy(L.skel);
	L.skel = NULL;
}

/* A live process's parent, from /proc (it forked before the capture). */
void proc_parent(struct node *n)
{
	char path[64], buf[512], *p;
	unsigned int ppid;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/stat", n->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	if (p && sscanf(p + 1, " %*c %u", &ppid) == 1) {
		n->ppid = ppid;
		n->has_ppid = true;
	}
	fclose(f);
}

/* ... and its name, for a parent that is a node only for --tree */
void proc_comm(struct node *n)
{
	char path[64], buf[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%u/comm", n->pid);
	f = fopen(path, "re");
	if (!f)
		return;
	if (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = 0;
		set_str(&n->comm, buf);
	}
	fclose(f);
}

uint64_t lost_total(void)
{
	uint64_t lost = aiscope_lost_total(&L.bpf);

	for (struct source *s = G.sources; s; s = s->next)
		sat_add(&lost, s->has_summary ? s->lost_summary : s->lost_lines);
	return lost;
}
