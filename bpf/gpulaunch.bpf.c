// SPDX-License-Identifier: GPL-2.0
/*
 * gpulaunch: CUDA kernel launches, allocations, copies and synchronization
 * per process, from uprobes on libcudart, libcuda.so.1 and executables with
 * a static runtime. User space attaches each program to every symbol of
 * its shape, with a cookie that names the API (bpf/gpulaunch.h); where the
 * kernel has no attach cookies or bpf_find_vma (5.10), the program finds
 * the same cookie from the probed address (api_cookie, map api_offs).
 *
 * A runtime call that calls the driver (cudaLaunchKernel -> cuLaunchKernel,
 * __cudaLaunchKernel -> cudaLaunchKernel, cudaMalloc -> cuMemAlloc_v2) is
 * one call: with return probes an open call of the same class on the
 * thread makes the inner one nested (a depth count); in entry-only mode the
 * outermost call's stack frame is remembered and an inner call is one made
 * while that frame is still live (its return address still in its slot).
 */
#include "aiscope.bpf.h"
#include "aiscope_hist.h"
#include "uprobe_args.bpf.h"
#include "uprobe_stack.bpf.h"
#include "uprobe_discover.bpf.h"
#include "gpulaunch.h"

const volatile bool with_ret;		/* launch return probes are attached */
const volatile bool with_latency;	/* --latency */
const volatile bool stream_events;	/* -e */
/* the API from the probed address, not from bpf_get_attach_cookie(): the
 * verifier drops the dead helper call, which a 5.10 kernel would reject */
const volatile bool addr_map;
const volatile __u32 page_shift = 12;	/* the kernel's page size, set by user space */

__u64 unscanned_calls;			/* addr_map: calls not told, counted */
__u64 batch_copies_unread;		/* copies of batch calls past GL_BATCH_MAX or unreadable */

__u32 epoch;				/* written by user space each interval */

/* captures begun and not ended, in every process: a launch looks up its
 * stream in captures only while there is one (user space takes back the
 * count of a process that exited while capturing) */
__u64 capturing;

AISCOPE_MAP(stats, BPF_MAP_TYPE_HASH, struct gl_key, struct gl_stats,
	    8192);			/* rows of two intervals, preallocated */

AISCOPE_MAP(lat, BPF_MAP_TYPE_HASH, struct gl_key, struct gl_lat,
	    1);				/* --latency: sized as stats */

AISCOPE_MAP(mem, BPF_MAP_TYPE_HASH, __u32, struct gl_mem, 1);	/* --mem: processes */

AISCOPE_MAP(allocs, BPF_MAP_TYPE_HASH, struct gl_alloc_key, __u64,
	    1);				/* --mem: live allocations */

AISCOPE_MAP(entries, BPF_MAP_TYPE_HASH, struct gl_entry_key, struct gl_entry,
	    16384);			/* calls in progress */

AISCOPE_MAP(outer, BPF_MAP_TYPE_HASH, __u32, struct gl_outer,
	    16384);			/* threads that launched (entry-only mode) */

AISCOPE_MAP(seen, BPF_MAP_TYPE_LRU_HASH, struct gl_key, __u8,
	    16384);			/* kernels user space was told about */

AISCOPE_MAP(rt_text, BPF_MAP_TYPE_HASH, __u32, struct gl_text,
	    4096);			/* processes with a probed runtime */

AISCOPE_MAP(rt_inodes, BPF_MAP_TYPE_HASH, struct gl_inode, struct gl_span,
	    256);			/* files with runtime launch probes */

AISCOPE_MAP(proc_maps, BPF_MAP_TYPE_HASH, __u32, struct gl_maps,
	    4096);			/* addr_map: the probed files' code per process */

AISCOPE_MAP(api_offs, BPF_MAP_TYPE_HASH, struct gl_off_key, __u64,
	    8192);			/* addr_map: the cookie of each probed offset */

AISCOPE_MAP(captures, BPF_MAP_TYPE_HASH, struct gl_cap_key, __u64,
	    4096);			/* capturing streams: the capture's first stream */

AISCOPE_MAP(cap_events, BPF_MAP_TYPE_HASH, struct gl_cap_key, __u64,
	    4096);			/* events recorded on them: the same */

AISCOPE_MAP(cap_joined, BPF_MAP_TYPE_HASH, struct gl_cap_key, struct gl_joined,
	    1024);			/* by the capture's first stream */

static const struct gl_stats zero_stats;

static __always_inline void hist_inc(__u32 *hist, __u64 v)
{
	__u32 slot = hist_bucket(v);

	/* keep the bound check and the index in one register for the verifier */
	asm volatile("" : "+r"(slot));
	if (slot >= HIST_BUCKETS)
		return;
	__sync_fetch_and_add(&hist[slot], 1);
}
static const struct gl_lat zero_lat;
static const struct gl_mem zero_mem;

#define NAME_CLS(shape)	(16 + (shape))

static __always_inline __u32 cur_tid(void)
{
	return (__u32)bpf_get_current_pid_tgid();
}

static __always_inline __u32 cur_pid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

/* Linux 5.10 (the maple tree replaced it in 6.1): the task's cache of
 * its last VMAs, which the uprobe handler's find_vma() filled with the
 * probed address's VMA just before this program ran. */
struct vmacache___old {
	__u64 seqnum;
	struct vm_area_struct *vmas[4];
} __attribute__((preserve_access_index));

struct task_struct___old {
	struct vmacache___old vmacache;
} __attribute__((preserve_access_index));

/* The probed file and offset of addr, from that cache: what a call made
 * before user space scanned its process needs. Checked against the task's
 * mm and the VMA's bounds (a slot may hold a VMA of before). */
static __always_inline bool vmacache_off(__u64 addr, struct gl_off_key *k)
{
	struct task_struct___old *t = (void *)bpf_get_current_task();
	struct mm_struct *mm;

	if (!bpf_core_field_exists(t->vmacache))
		return false;
	mm = BPF_CORE_READ((struct task_struct *)t, mm);
#pragma unroll
	for (int i = 0; i < 4; i++) {
		struct vm_area_struct *v = BPF_CORE_READ(t, vmacache.vmas[i]);
		struct inode *ino;
		__u64 start;

		if (!v || BPF_CORE_READ(v, vm_mm) != mm)
			continue;
		start = BPF_CORE_READ(v, vm_start);
		if (addr < start || addr >= BPF_CORE_READ(v, vm_end))
			continue;
		ino = BPF_CORE_READ(v, vm_file, f_inode);
		if (!ino)
			return false;
		k->f.ino = BPF_CORE_READ(ino, i_ino);
		k->f.dev = BPF_CORE_READ(ino, i_sb, s_dev);
		k->off = addr - start + (BPF_CORE_READ(v, vm_pgoff) << page_shift);
		return true;
	}
	return false;
}

/* The cookie user space gave the probed symbol at addr in this process,
 * from the process's scanned address map, else (5.10) from the VMA cache;
 * false when neither knows it: that call is counted in unscanned_calls,
 * not guessed. */
static __always_inline bool addr_cookie(__u64 addr, __u64 *cookie)
{
	__u32 pid = cur_pid();
	struct gl_maps *p = bpf_map_lookup_elem(&proc_maps, &pid);
	struct gl_off_key k = {};
	__u64 *c;

	if (!p)
		goto vmacache;
	for (int i = 0; i < GL_MAPS_MAX; i++) {
		if (i >= p->n)
			break;
		if (addr < p->m[i].start || addr >= p->m[i].end)
			continue;
		k.f = p->m[i].f;
		k.off = addr - p->m[i].start + p->m[i].pgoff;
		c = bpf_map_lookup_elem(&api_offs, &k);
		if (!c)
			break;
		*cookie = *c;
		return true;
	}
vmacache:
	if (vmacache_off(addr, &k)) {
		c = bpf_map_lookup_elem(&api_offs, &k);
		if (c) {
			*cookie = *c;
			return true;
		}
	}
	__sync_fetch_and_add(&unscanned_calls, 1);
	return false;
}

/* An entry probe's cookie. In an entry probe the kernel has set the IP to
 * the probed address before the handlers run (handle_swbp). am: the
 * program variant without the cookie helper. */
static __always_inline bool api_cookie(struct pt_regs *ctx, bool am, __u64 *cookie)
{
	if (!am && !addr_map) {
		*cookie = bpf_get_attach_cookie(ctx);
		return true;
	}
	return addr_cookie(PT_REGS_IP(ctx), cookie);
}

/* The shared filter; without any (the settings are read-only, so the
 * verifier drops the dead branch) not even the task is fetched. */
static __always_inline bool pass(void)
{
	if (!aiscope_cfg.by_pid && !aiscope_cfg.by_tid && !aiscope_cfg.by_uid &&
	    !aiscope_cfg.by_comm && !aiscope_cfg.ncg && !aiscope_cfg.by_cgset)
		return true;
	return aiscope_task_pass((struct task_struct *)bpf_get_current_task());
}

/* ---- nesting, entry-only mode ----
 *
 * No per-launch state on the hot path. A driver launch is inside a runtime
 * launch when the runtime called it: its return address lies in the code
 * of a probed runtime mapped by the process (map rt_text, filled by user
 * space as it scans processes). A runtime launch that tail-calls another
 * (CUDA 13's __cudaLaunchKernel jumping to cudaLaunchKernel: same stack
 * pointer, same return address) is told by a record that only the tail
 * callers (cookie bit GL_TAIL_SRC) write: the callee (GL_TAIL_DST) is
 * nested when it runs on that stack pointer with that return address
 * still in place. The same API is never nested in itself.
 */

static __always_inline __u64 entry_ret_addr(struct pt_regs *ctx)
{
#if defined(__TARGET_ARCH_x86)
	__u64 ret = 0;

	bpf_probe_read_user(&ret, sizeof(ret), (void *)PT_REGS_SP(ctx));
	return ret;
#else
	return UARG_CTX_LOAD(ctx, 30 * 8);	/* the link register */
#endif
}

/* file offset off of file f lies in a runtime's code */
static __always_inline bool runtime_code(const struct gl_inode *f, __u64 off)
{
	struct gl_span *s = bpf_map_lookup_elem(&rt_inodes, f);

	return s && off >= s->lo && off < s->hi;
}

struct vma_ask {
	__u64 addr;
	bool found;
};

static long vma_is_runtime(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	struct vma_ask *q = data;
	struct gl_inode k = {};
	struct file *f = BPF_CORE_READ(vma, vm_file);
	__u64 off;

	if (!f)
		return 0;
	k.ino = BPF_CORE_READ(f, f_inode, i_ino);
	k.dev = BPF_CORE_READ(f, f_inode, i_sb, s_dev);
	off = q->addr - BPF_CORE_READ(vma, vm_start) + (BPF_CORE_READ(vma, vm_pgoff) << page_shift);
	q->found = runtime_code(&k, off);
	return 0;
}

/* am: the variant without bpf_find_vma (a callback: the program would not
 * load on 5.10). A process not scanned yet is asked by its VMAs: their
 * file and offset of ret, in a runtime's code (the whole of a runtime
 * library, a static runtime's part of an executable): with bpf_find_vma,
 * or on 5.10 from the task's VMA cache (the uprobe handler looked up the
 * runtime's VMA when its launch began); one it does not hold is not told
 * nested. */
static __always_inline bool in_runtime_text(__u32 pid, __u64 ret, bool am)
{
	struct gl_text *t = bpf_map_lookup_elem(&rt_text, &pid);
	struct vma_ask q = { .addr = ret };
	struct gl_off_key k = {};

	if (t) {
		for (int i = 0; i < GL_TEXT_MAX; i++)
			if (ret >= t->start[i] && ret < t->end[i])
				return true;
		return false;
	}
	if (am)
		return vmacache_off(ret, &k) && runtime_code(&k.f, k.off);
	bpf_find_vma(bpf_get_current_task_btf(), ret, vma_is_runtime, &q, 0);
	return q.found;
}

static __always_inline bool launch_nested_noret(struct pt_regs *ctx, __u64 cookie, __u64 id,
						bool am)
{
	__u32 tid = (__u32)id, api = GL_API(cookie);
	struct gl_outer *o, n = {};

	if (GL_LAYER(cookie) == GL_DRIVER)
		return in_runtime_text(id >> 32, entry_ret_addr(ctx), am);
	if (cookie & GL_TAIL_SRC) {
		n.sp = PT_REGS_SP(ctx);
		n.ret = entry_ret_addr(ctx);
		n.api = api;
		if (bpf_map_update_elem(&outer, &tid, &n, BPF_ANY))
			aiscope_count_lost(AISCOPE_LOST_MAP);
		return false;
	}
	if (!(cookie & GL_TAIL_DST))
		return false;
	o = bpf_map_lookup_elem(&outer, &tid);
	if (!o || !o->sp)
		return false;
	/* one look per record: a later call at that stack pointer is not it */
	n = *o;
	o->sp = 0;
	return n.api != api && PT_REGS_SP(ctx) == n.sp && entry_ret_addr(ctx) == n.ret;
}

/* ---- calls with return probes ----
 *
 * Here the return probes say when a call ends, so a call is nested when
 * one of another API of its class is open on the thread, deeper in the
 * stack than it (the return address cannot be checked: the return probe
 * replaced it with its trampoline). A tail call (same stack pointer, another
 * API: __cudaLaunchKernel jumping to cudaLaunchKernel) leaves the open
 * entry as it is, without a deeper count: the first return probe to fire
 * ends the call, a second one finds nothing. An entry older than
 * GL_STALE_NS (its return was missed: longjmp) is replaced.
 */
#define GL_STALE_NS	(30ULL * 1000000000ULL)

static __always_inline bool call_begin(struct pt_regs *ctx, __u32 cls, struct gl_entry *e,
				       __u64 cookie)
{
	struct gl_entry_key k = { cur_tid(), cls };
	struct gl_entry *o = bpf_map_lookup_elem(&entries, &k);
	__u64 now = aiscope_now();

	e->api = GL_API(cookie);
	if (o && o->depth && o->api != e->api && PT_REGS_SP(ctx) <= o->sp &&
	    now - o->ts < GL_STALE_NS) {
		if (PT_REGS_SP(ctx) < o->sp)
			o->depth++;
		return false;
	}
	e->depth = 1;
	e->sp = PT_REGS_SP(ctx);
	e->ts = now;
	if (bpf_map_update_elem(&entries, &k, e, BPF_ANY)) {
		aiscope_count_lost(AISCOPE_LOST_MAP);
		return false;
	}
	return true;
}

/* Closes a call: its entry when it was the outermost (the caller deletes
 * it with call_done), NULL for a nested one or an unknown one. */
static __always_inline struct gl_entry *call_end(__u32 cls)
{
	struct gl_entry_key k = { cur_tid(), cls };
	struct gl_entry *e = bpf_map_lookup_elem(&entries, &k);

	if (!e || !e->depth)
		return NULL;
	if (--e->depth)
		return NULL;
	return e;
}

static __always_inline void call_done(__u32 cls)
{
	struct gl_entry_key k = { cur_tid(), cls };

	bpf_map_delete_elem(&entries, &k);
}

/* ---- launches ---- */

static __always_inline void decode_launch(struct pt_regs *ctx, __u32 shape, struct gl_entry *e)
{
	struct uarg c = {};
	__u64 cfg;

	switch (shape) {
	case GL_SH_RT:
		e->func = uarg_int(ctx, &c);
		uarg_struct(ctx, &c, e->grid, 12);
		uarg_struct(ctx, &c, e->block, 12);
		uarg_int(ctx, &c);			/* args */
		e->smem = uarg_int(ctx, &c);
		e->stream = uarg_int(ctx, &c);
		break;
	case GL_SH_RT_EX:
		/* cudaLaunchConfig_t: gridDim@0, blockDim@12, dynamicSmemBytes@24,
		 * stream@32 */
		cfg = uarg_int(ctx, &c);
		e->func = uarg_int(ctx, &c);
		bpf_probe_read_user(e->grid, 24, (void *)cfg);
		bpf_probe_read_user(&e->smem, 4, (void *)(cfg + 24));
		bpf_probe_read_user(&e->stream, 8, (void *)(cfg + 32));
		break;
	case GL_SH_DRV:
		e->func = uarg_int(ctx, &c);
		e->grid[0] = uarg_int(ctx, &c);
		e->grid[1] = uarg_int(ctx, &c);
		e->grid[2] = uarg_int(ctx, &c);
		e->block[0] = uarg_int(ctx, &c);
		e->block[1] = uarg_int(ctx, &c);
		e->block[2] = uarg_int(ctx, &c);
		e->smem = uarg_int(ctx, &c);
		e->stream = uarg_int(ctx, &c);
		break;
	case GL_SH_DRV_EX:
		/* CUlaunchConfig: gridDimX/Y/Z@0, blockDimX/Y/Z@12,
		 * sharedMemBytes@24, hStream@32 */
		cfg = uarg_int(ctx, &c);
		e->func = uarg_int(ctx, &c);
		bpf_probe_read_user(e->grid, 24, (void *)cfg);
		bpf_probe_read_user(&e->smem, 4, (void *)(cfg + 24));
		bpf_probe_read_user(&e->stream, 8, (void *)(cfg + 32));
		break;
	case GL_SH_GRAPH:
		e->func = uarg_int(ctx, &c);
		e->stream = uarg_int(ctx, &c);
		break;
	}
}

/* A new row: tell user space once per kernel and process, with a wakeup,
 * so that it reads the name while the process is there. */
static __always_inline void tell_seen(const struct gl_key *k, __u32 api)
{
	struct gl_key sk = *k;
	struct gl_seen_ev *ev;
	__u8 one = 1;

	sk.epoch = 0;
	if (bpf_map_lookup_elem(&seen, &sk))
		return;
	bpf_map_update_elem(&seen, &sk, &one, BPF_ANY);
	ev = aiscope_reserve(sizeof(*ev));
	if (!ev)
		return;
	ev->type = GL_EV_SEEN;
	ev->pid = k->pid;
	ev->func = k->func;
	ev->api = api;
	ev->layer = k->layer;
	bpf_ringbuf_submit(ev, 0);
}

/* The row of this launch's kernel in the open interval; a new row takes
 * the identity of the thread and the configuration of this launch (the
 * first of the interval), and is told to user space. */
static __always_inline struct gl_stats *stats_row(const struct gl_entry *e, __u32 pid,
						  struct gl_key *k)
{
	struct gl_stats *st;

	k->func = e->func;
	k->pid = pid;
	k->layer = e->layer;
	k->epoch = epoch;
	k->pad = 0;
	st = bpf_map_lookup_elem(&stats, k);
	if (st)
		return st;
	st = aiscope_lookup_or_init(&stats, k, &zero_stats);
	if (!st)
		return NULL;
	aiscope_task_ident((struct task_struct *)bpf_get_current_task(), &st->ident);
	st->stream = e->stream;
	__builtin_memcpy(st->grid, e->grid, sizeof(st->grid));
	__builtin_memcpy(st->block, e->block, sizeof(st->block));
	st->smem = e->smem;
	st->api = e->api;
	tell_seen(k, e->api);
	return st;
}

static __always_inline void lat_add(const struct gl_key *k, __u64 ns)
{
	struct gl_lat *l = aiscope_lookup_or_init(&lat, k, &zero_lat);

	if (!l)
		return;
	__sync_fetch_and_add(&l->sum, ns);
	if (ns > l->max)
		l->max = ns;
	hist_inc(l->hist, ns);
}

static __always_inline void emit_launch(const struct gl_entry *e, __u64 now, bool has_rc,
					int rc)
{
	struct gl_launch_ev *ev = aiscope_reserve(sizeof(*ev));

	if (!ev)
		return;
	ev->type = GL_EV_LAUNCH;
	ev->api = e->api;
	ev->ts = now;
	aiscope_task_ident((struct task_struct *)bpf_get_current_task(), &ev->ident);
	ev->func = e->func;
	ev->stream = e->stream;
	ev->latency_ns = with_latency && has_rc ? now - e->ts : 0;
	__builtin_memcpy(ev->grid, e->grid, sizeof(ev->grid));
	__builtin_memcpy(ev->block, e->block, sizeof(ev->block));
	ev->smem = e->smem;
	ev->rc = rc;
	ev->layer = e->layer;
	ev->has_rc = has_rc;
	ev->has_latency = with_latency && has_rc;
	__builtin_memset(ev->pad, 0, sizeof(ev->pad));
	aiscope_submit(ev);
}

static __always_inline void count_launch(const struct gl_entry *e, bool has_rc, int rc,
					 __u64 now)
{
	struct gl_stats *st;
	struct gl_key k;

	if (stream_events) {
		emit_launch(e, now, has_rc, rc);
		return;
	}
	st = stats_row(e, cur_pid(), &k);
	if (!st)
		return;
	__sync_fetch_and_add(&st->launches, 1);
	if (has_rc) {
		__sync_fetch_and_add(&st->returns, 1);
		if (rc) {
			__sync_fetch_and_add(&st->errors, 1);
			st->last_rc = rc;
		}
	}
	if (has_rc && with_latency)
		lat_add(&k, now - e->ts);
}

/* ---- launches captured into a CUDA graph ---- */

static __always_inline __u64 *capture_of(__u64 stream)
{
	struct gl_cap_key k = { .handle = stream, .pid = cur_pid() };

	return bpf_map_lookup_elem(&captures, &k);
}

/* A graph event with every field set (ring buffer space is not zeroed);
 * sent at once: user space names a node's kernel while its process lives. */
static __always_inline struct gl_graph_ev *graph_ev(__u32 op, __u32 api, __u64 graph, __u64 aux)
{
	struct gl_graph_ev *ev = aiscope_reserve(sizeof(*ev));

	if (!ev)
		return NULL;
	ev->type = GL_EV_GRAPH;
	ev->op = op;
	ev->pid = cur_pid();
	ev->api = api;
	ev->graph = graph;
	ev->aux = aux;
	ev->func = 0;
	__builtin_memset(ev->grid, 0, sizeof(ev->grid));
	__builtin_memset(ev->block, 0, sizeof(ev->block));
	ev->smem = 0;
	ev->layer = 0;
	__builtin_memset(ev->pad, 0, sizeof(ev->pad));
	return ev;
}

/* a kernel node of graph (or, graph 0, a launch captured by the capture
 * whose first stream is aux), as e holds it */
static __always_inline void emit_node(const struct gl_entry *e, __u32 op, __u64 graph, __u64 aux)
{
	struct gl_graph_ev *ev = graph_ev(op, e->api, graph, aux);

	if (!ev)
		return;
	ev->func = e->func;
	__builtin_memcpy(ev->grid, e->grid, sizeof(ev->grid));
	__builtin_memcpy(ev->block, e->block, sizeof(ev->block));
	ev->smem = e->smem;
	ev->layer = e->layer;
	bpf_ringbuf_submit(ev, 0);
}

/* Entry-only mode: a launch on a capturing stream runs nothing now; it is
 * a node of the graph the capture makes, told to user space, not counted. */
static __always_inline bool launch_captured(struct pt_regs *ctx, __u32 shape, __u64 cookie)
{
	struct gl_entry e = {};
	__u64 *origin;

	decode_launch(ctx, shape, &e);
	origin = capture_of(e.stream);
	if (!origin)
		return false;
	e.api = GL_API(cookie);
	e.layer = GL_LAYER(cookie);
	emit_node(&e, GL_G_CAPTURED, 0, *origin);
	return true;
}

/* The kernel a launch is of: its first argument, or its second for the
 * launches that take a configuration struct first. */
static __always_inline __u64 launch_func(struct pt_regs *ctx, __u32 shape)
{
	if (shape == GL_SH_RT_EX || shape == GL_SH_DRV_EX)
		return uarg_reg(ctx, 1);
	return uarg_reg(ctx, 0);
}

/*
 * Entry-only mode, the hot path: one lookup of the open interval's row and
 * an atomic increment. The configuration (grid, block, shared memory and
 * stream, two of which are read from the user stack) is decoded only when
 * the row is created, once per kernel, process and interval.
 */
static __always_inline void count_noret(struct pt_regs *ctx, __u32 shape, __u64 cookie,
					__u32 pid)
{
	struct gl_key k = {
		.func = launch_func(ctx, shape), .pid = pid,
		.layer = GL_LAYER(cookie), .epoch = epoch,
	};
	struct gl_stats *st = bpf_map_lookup_elem(&stats, &k);
	struct gl_entry e = {};

	if (!st) {
		decode_launch(ctx, shape, &e);
		e.api = GL_API(cookie);
		e.layer = GL_LAYER(cookie);
		st = stats_row(&e, k.pid, &k);
		if (!st)
			return;
	}
	__sync_fetch_and_add(&st->launches, 1);
}

static __always_inline int launch_entry(struct pt_regs *ctx, __u32 shape, bool am)
{
	struct gl_entry e = {};
	__u64 cookie;

	AISCOPE_OWN_STACK(ctx);
	if (!pass() || !api_cookie(ctx, am, &cookie))
		return 0;
	if (!with_ret) {
		__u64 id = bpf_get_current_pid_tgid();

		if (launch_nested_noret(ctx, cookie, id, am))
			return 0;
		if (capturing && launch_captured(ctx, shape, cookie))
			return 0;
		count_noret(ctx, shape, cookie, id >> 32);
		return 0;
	}
	decode_launch(ctx, shape, &e);
	e.api = GL_API(cookie);
	e.layer = GL_LAYER(cookie);
	e.shape = shape;
	if (capturing) {
		__u64 *origin = capture_of(e.stream);

		/* kind 1: captured; aux: the capture's first stream */
		if (origin) {
			e.kind = 1;
			e.aux = *origin;
		}
	}
	call_begin(ctx, GL_LAUNCH, &e, cookie);
	return 0;
}

/* Each launch shape twice: with bpf_find_vma for a process not scanned
 * yet, and the _am variant (address map) without it. */
#define LAUNCH_PROGS(name, shape)			\
SEC("uprobe")						\
int BPF_KPROBE(name)					\
{							\
	return launch_entry(ctx, shape, false);		\
}							\
SEC("uprobe")						\
int BPF_KPROBE(name##_am)				\
{							\
	return launch_entry(ctx, shape, true);		\
}

LAUNCH_PROGS(launch_rt, GL_SH_RT)

LAUNCH_PROGS(launch_rt_ex, GL_SH_RT_EX)

LAUNCH_PROGS(launch_drv, GL_SH_DRV)

LAUNCH_PROGS(launch_drv_ex, GL_SH_DRV_EX)

LAUNCH_PROGS(launch_graph, GL_SH_GRAPH)

SEC("uretprobe")
int BPF_KRETPROBE(launch_ret, long ret)
{
	struct gl_entry *e = call_end(GL_LAUNCH);

	AISCOPE_OWN_STACK(ctx);
	if (!e)
		return 0;
	/* a captured launch that failed added no node: counted, with its rc */
	if (e->kind && !(int)ret)
		emit_node(e, GL_G_CAPTURED, 0, e->aux);
	else
		count_launch(e, true, (int)ret, aiscope_now());
	call_done(GL_LAUNCH);
	return 0;
}

/* ---- --mem ---- */

static __always_inline struct gl_mem *mem_row(void)
{
	__u32 pid = cur_pid();
	struct gl_mem *m = bpf_map_lookup_elem(&mem, &pid);

	if (m)
		return m;
	m = aiscope_lookup_or_init(&mem, &pid, &zero_mem);
	if (m)
		aiscope_task_ident((struct task_struct *)bpf_get_current_task(), &m->ident);
	return m;
}

_Static_assert(GL_NPOOLS <= 8, "pool_of masks the pool with 7");

/* A pool's counters; NULL for a pool out of range. */
static __always_inline struct gl_pool_stats *pool_of(struct gl_mem *m, __u32 pool)
{
	if (!m || pool >= GL_NPOOLS)
		return NULL;
	/* the compiler checks one copy of the index and adds another: a
	 * mask it cannot drop bounds the one added (GL_NPOOLS <= 8) */
	asm volatile("" : "+r"(pool));
	return &m->pool[pool & 7];
}

/*
 * An allocation's entry: where its address will be (an out pointer, or
 * the argument itself for cuMemMap) and its size, or for pitched ones the
 * pitch's out pointer and the rows: the bytes are pitch x rows, known at
 * the return.
 */
SEC("uprobe")
int BPF_KPROBE(mem_alloc)
{
	__u64 cookie, ext[3] = {};
	struct gl_entry e = {};
	struct uarg c = {};

	AISCOPE_OWN_STACK(ctx);
	if (!pass() || !api_cookie(ctx, false, &cookie))
		return 0;
	e.shape = GL_SHAPE(cookie);
	e.kind = GL_KIND(cookie);
	e.func = uarg_int(ctx, &c);
	switch (e.shape) {
	case GL_SH_PITCH:
		e.stream = uarg_int(ctx, &c);		/* size_t *pitch */
		uarg_int(ctx, &c);			/* width */
		e.aux = uarg_int(ctx, &c);		/* height */
		break;
	case GL_SH_3D:
		/* cudaPitchedPtr {ptr, pitch, xsize, ysize}; cudaExtent by value */
		uarg_struct(ctx, &c, ext, sizeof(ext));
		e.stream = e.func + 8;
		e.aux = ext[1] * ext[2];
		break;
	default:
		e.aux = uarg_int(ctx, &c);		/* size */
		break;
	}
	call_begin(ctx, GL_ALLOC, &e, cookie);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(mem_alloc_ret, long ret)
{
	struct gl_entry *e = call_end(GL_ALLOC);
	struct gl_alloc_key k = {};
	struct gl_pool_stats *p;
	struct gl_mem *m;
	__u64 ns, ptr = 0, pitch = 0, size;

	AISCOPE_OWN_STACK(ctx);
	if (!e)
		return 0;
	ns = aiscope_now() - e->ts;
	m = mem_row();
	p = pool_of(m, e->kind);
	if (p)
		__sync_fetch_and_add(&p->alloc_calls, 1);
	if (m && e->kind == GL_POOL_DEVICE) {
		__sync_fetch_and_add(&m->alloc_lat_sum, ns);
		if (ns > m->alloc_lat_max)
			m->alloc_lat_max = ns;
		hist_inc(m->alloc_hist, ns);
	}
	if ((int)ret != 0) {
		if (p)
			__sync_fetch_and_add(&p->alloc_fail, 1);
		goto out;
	}
	size = e->aux;
	if (e->shape == GL_SH_MAP) {
		ptr = e->func;
	} else {
		bpf_probe_read_user(&ptr, sizeof(ptr), (void *)e->func);
		if (e->shape == GL_SH_PITCH || e->shape == GL_SH_3D) {
			bpf_probe_read_user(&pitch, sizeof(pitch), (void *)e->stream);
			size = pitch * e->aux;
		}
	}
	k.ptr = ptr;
	k.pid = cur_pid();
	k.pool = e->kind;
	if (bpf_map_update_elem(&allocs, &k, &size, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
	if (p) {
		__sync_fetch_and_add(&p->alloc_bytes, size);
		__sync_fetch_and_add(&p->outstanding, size);
	}
out:
	call_done(GL_ALLOC);
	return 0;
}

/* Frees and copies are accounted at the outermost return, like
 * allocations: a runtime call that tail-calls the driver fires two entry
 * probes but is one call. A free finds its allocation in its own pool
 * (cudaFreeHost a pinned one, cuMemUnmap a mapping). */
SEC("uprobe")
int BPF_KPROBE(mem_free, __u64 ptr, __u64 size)
{
	struct gl_entry e = { .aux = ptr };
	__u64 cookie;

	AISCOPE_OWN_STACK(ctx);
	if (!pass() || !api_cookie(ctx, false, &cookie))
		return 0;
	e.kind = GL_KIND(cookie);
	/* cuMemUnmap(ptr, size): the range may span several mappings */
	if (e.kind == GL_POOL_VMM_MAP)
		e.stream = size;
	call_begin(ctx, GL_FREE, &e, cookie);
	return 0;
}

/* An unmapped range is the mappings that lie end to end in it, at most
 * this many (PyTorch unmaps a segment's handles one by one); past them
 * the rest is counted lost */
#define GL_UNMAP_PIECES 8

/* The bytes of the allocations a free releases (deleted): one, or for an
 * unmap those that tile its range from its start. */
static __always_inline __u64 release(const struct gl_entry *e)
{
	struct gl_alloc_key k = { .ptr = e->aux, .pid = cur_pid(), .pool = e->kind };
	__u64 *size, piece, freed = 0;

	for (int i = 0; i < GL_UNMAP_PIECES; i++) {
		size = bpf_map_lookup_elem(&allocs, &k);
		if (!size)
			break;
		piece = *size;
		bpf_map_delete_elem(&allocs, &k);
		freed += piece;
		k.ptr += piece;
		if (e->kind != GL_POOL_VMM_MAP || !piece || freed >= e->stream)
			return freed;
	}
	/* a range of more mappings: the rest stays outstanding, counted */
	if (freed && bpf_map_lookup_elem(&allocs, &k))
		aiscope_count_lost(AISCOPE_LOST_MAP);
	return freed;
}

SEC("uretprobe")
int BPF_KRETPROBE(mem_free_ret)
{
	struct gl_entry *e = call_end(GL_FREE);
	struct gl_pool_stats *p;
	__u64 freed;

	AISCOPE_OWN_STACK(ctx);
	if (!e)
		return 0;
	/* cudaFree(NULL) is the idiom that creates a context: no free */
	if (!e->aux)
		goto out;
	p = pool_of(mem_row(), e->kind);
	if (!p)
		goto out;
	__sync_fetch_and_add(&p->free_calls, 1);
	freed = release(e);
	if (!freed) {
		__sync_fetch_and_add(&p->free_unknown, 1);
		goto out;
	}
	__sync_fetch_and_add(&p->free_bytes, freed);
	__sync_fetch_and_add(&p->outstanding, -(__s64)freed);
out:
	call_done(GL_FREE);
	return 0;
}

/* a cudaMemcpyKind argument: an unknown value counts as default */
static __always_inline __u32 rt_kind(__u64 v)
{
	return (__u32)v <= GL_DEFAULT ? (__u32)v : GL_DEFAULT;
}

/* CUmemorytype: host 1, device 2, array 3, unified 4 */
static __always_inline __u32 drv_dir(__u32 src, __u32 dst)
{
	if (src < 1 || src > 3 || dst < 1 || dst > 3)
		return GL_DEFAULT;
	if (src == 1)
		return dst == 1 ? GL_H2H : GL_H2D;
	return dst == 1 ? GL_D2H : GL_D2D;
}

/* The driver's 2D and 3D copies describe themselves in a struct: the
 * memory types say the direction, WidthInBytes x Height (x Depth) the
 * bytes. CUDA_MEMCPY2D: srcMemoryType@16, dstMemoryType@72, WidthInBytes
 * @112, Height@120; CUDA_MEMCPY3D and _PEER: @32, @120, @176, @184, Depth@192. */
static __always_inline __u64 drv_copy(__u64 p, __u32 shape, __u32 *kind)
{
	__u64 ext[3] = { 0, 0, 1 };
	__u32 mt[2] = {};

	if (shape == GL_SH_COPY_DRV_2D) {
		bpf_probe_read_user(&mt[0], 4, (void *)(p + 16));
		bpf_probe_read_user(&mt[1], 4, (void *)(p + 72));
		bpf_probe_read_user(ext, 16, (void *)(p + 112));
	} else {
		bpf_probe_read_user(&mt[0], 4, (void *)(p + 32));
		bpf_probe_read_user(&mt[1], 4, (void *)(p + 120));
		bpf_probe_read_user(ext, 24, (void *)(p + 176));
	}
	*kind = shape == GL_SH_COPY_DRV_3D_PEER ? GL_PEER : drv_dir(mt[0], mt[1]);
	return ext[0] * ext[1] * ext[2];
}

/* cudaMemcpyBatchAsync, cuMemcpyBatchAsync (all versions: the first four
 * arguments are the same): the sum of sizes[0..count), read 16 at a time,
 * then what is left (the array may end at a page's end); copies past
 * GL_BATCH_MAX, or whose sizes cannot be read, are counted in
 * batch_copies_unread. The loop's index stays exact in every state the
 * verifier walks: it walks each round once. */
static __always_inline __u64 batch_bytes(__u64 sizes, __u64 count)
{
	__u64 chunk[16], sum = 0, sz;
	__u32 n = count < GL_BATCH_MAX ? count : GL_BATCH_MAX, i, j, done;

	for (i = 0; i < GL_BATCH_MAX / 16; i++) {
		if (i >= n / 16)
			break;
		if (bpf_probe_read_user(chunk, sizeof(chunk), (void *)(sizes + i * sizeof(chunk))))
			break;
		for (j = 0; j < 16; j++)
			sum += chunk[j];
	}
	done = i * 16;
	sz = (n - done) * 8;
	asm volatile("" : "+r"(sz));
	if (done == (n & ~15U) && sz && sz < sizeof(chunk)) {
		/* zeroed, then summed whole: no branch per element */
		__builtin_memset(chunk, 0, sizeof(chunk));
		if (!bpf_probe_read_user(chunk, sz, (void *)(sizes + done * 8))) {
			for (j = 0; j < 16; j++)
				sum += chunk[j];
			done = n;
		}
	}
	if (count > done)
		__sync_fetch_and_add(&batch_copies_unread, count - done);
	return sum;
}

/* cudaMemcpy3DBatchAsync, cuMemcpy3DBatchAsync (all versions): the sum of
 * each op's extent, width x height x depth (width in elements where a side
 * is an array, as for cudaMemcpy3D) */
static __always_inline __u64 batch3d_bytes(__u64 ops, __u64 count)
{
	__u64 ext[3], sum = 0;
	__u32 n = count < GL_BATCH_MAX ? count : GL_BATCH_MAX, i;

	for (i = 0; i < GL_BATCH_MAX; i++) {
		if (i >= n)
			break;
		if (bpf_probe_read_user(ext, sizeof(ext),
					(void *)(ops + i * GL_BATCH_OP_SIZE + GL_BATCH_OP_EXTENT)))
			break;
		sum += ext[0] * ext[1] * ext[2];
	}
	if (count > i)
		__sync_fetch_and_add(&batch_copies_unread, count - i);
	return sum;
}

/* The bytes and the direction of a copy or memset, from its arguments. */
static __always_inline __u64 copy_args(struct pt_regs *ctx, __u64 cookie, __u32 *kind)
{
	__u64 w, h, ext[3] = {}, pp[4];
	struct uarg c = {};
	__u32 elt = GL_KIND(cookie) & 3, k = 0;

	*kind = GL_KIND(cookie);
	switch (GL_SHAPE(cookie)) {
	case GL_SH_COPY_RT:
		uarg_skip(ctx, &c, 2);			/* dst, src */
		w = uarg_int(ctx, &c);
		*kind = rt_kind(uarg_int(ctx, &c));
		return w;
	case GL_SH_COPY_DRV:
		uarg_skip(ctx, &c, 2);
		return uarg_int(ctx, &c);
	case GL_SH_COPY_2D:
	case GL_SH_COPY_2D_ARRAY:
		uarg_skip(ctx, &c, GL_SHAPE(cookie) == GL_SH_COPY_2D ? 4 : 5);
		w = uarg_int(ctx, &c);
		h = uarg_int(ctx, &c);
		*kind = rt_kind(uarg_int(ctx, &c));
		return w * h;
	case GL_SH_COPY_3D:
	case GL_SH_COPY_3D_PEER:
		/* cudaMemcpy3DParms: extent@128, kind@152; the peer
		 * parameters: extent@144 (the width in bytes, or in elements
		 * where a side is an array) */
		w = uarg_int(ctx, &c);
		if (GL_SHAPE(cookie) == GL_SH_COPY_3D) {
			bpf_probe_read_user(ext, sizeof(ext), (void *)(w + 128));
			bpf_probe_read_user(&k, sizeof(k), (void *)(w + 152));
			*kind = rt_kind(k);
		} else {
			bpf_probe_read_user(ext, sizeof(ext), (void *)(w + 144));
			*kind = GL_PEER;
		}
		return ext[0] * ext[1] * ext[2];
	case GL_SH_COPY_PEER:
		uarg_skip(ctx, &c, 4);
		*kind = GL_PEER;
		return uarg_int(ctx, &c);
	case GL_SH_COPY_SYMBOL:
		uarg_skip(ctx, &c, 2);
		w = uarg_int(ctx, &c);
		uarg_int(ctx, &c);			/* offset */
		*kind = rt_kind(uarg_int(ctx, &c));
		return w;
	case GL_SH_MEMSET:
		uarg_skip(ctx, &c, 2);			/* ptr, value */
		*kind = GL_MEMSET;
		return uarg_int(ctx, &c) << elt;
	case GL_SH_MEMSET_2D:
		uarg_skip(ctx, &c, 3);			/* ptr, pitch, value */
		w = uarg_int(ctx, &c);
		h = uarg_int(ctx, &c);
		*kind = GL_MEMSET;
		return (w * h) << elt;
	case GL_SH_COPY_DRV_2D:
	case GL_SH_COPY_DRV_3D:
	case GL_SH_COPY_DRV_3D_PEER:
		return drv_copy(uarg_int(ctx, &c), GL_SHAPE(cookie), kind);
	case GL_SH_COPY_A2A:
		uarg_skip(ctx, &c, 6);			/* dst, offsets, src, offsets */
		w = uarg_int(ctx, &c);
		h = elt == GL_A2A_2D ? uarg_int(ctx, &c) : 1;
		*kind = rt_kind(uarg_int(ctx, &c));
		return w * h;
	case GL_SH_COPY_BATCH:
		/* the runtime infers each copy's direction from its pointers */
		*kind = GL_DEFAULT;
		if (elt == GL_BATCH_3D) {
			w = uarg_int(ctx, &c);		/* numOps */
			return batch3d_bytes(uarg_int(ctx, &c), w);
		}
		uarg_skip(ctx, &c, 2);			/* dsts, srcs */
		w = uarg_int(ctx, &c);			/* sizes */
		return batch_bytes(w, uarg_int(ctx, &c));
	case GL_SH_MEMSET_3D:
		uarg_struct(ctx, &c, pp, sizeof(pp));	/* cudaPitchedPtr */
		uarg_int(ctx, &c);			/* value */
		uarg_struct(ctx, &c, ext, sizeof(ext));
		*kind = GL_MEMSET;
		return ext[0] * ext[1] * ext[2];
	}
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(mem_copy)
{
	struct gl_entry e = {};
	__u64 cookie;
	__u32 kind;

	AISCOPE_OWN_STACK(ctx);
	if (!pass() || !api_cookie(ctx, false, &cookie))
		return 0;
	e.aux = copy_args(ctx, cookie, &kind);
	e.smem = kind < GL_NKINDS ? kind : GL_DEFAULT;
	call_begin(ctx, GL_COPY, &e, cookie);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(mem_copy_ret)
{
	struct gl_entry *e = call_end(GL_COPY);
	struct gl_mem *m;
	__u32 kind;

	AISCOPE_OWN_STACK(ctx);
	if (!e)
		return 0;
	kind = e->smem;
	m = mem_row();
	/* keep the bound check and the index in one register for the verifier */
	asm volatile("" : "+r"(kind));
	if (m && kind < GL_NKINDS) {
		__sync_fetch_and_add(&m->copy_calls[kind], 1);
		__sync_fetch_and_add(&m->copy_bytes[kind], e->aux);
	}
	call_done(GL_COPY);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(sync_entry)
{
	struct gl_entry e = {};
	__u64 cookie;

	AISCOPE_OWN_STACK(ctx);
	if (!pass() || !api_cookie(ctx, false, &cookie))
		return 0;
	call_begin(ctx, GL_SYNC, &e, cookie);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(sync_ret)
{
	struct gl_entry *e = call_end(GL_SYNC);
	struct gl_mem *m;
	__u64 ns;
	__u32 slot;

	AISCOPE_OWN_STACK(ctx);
	if (!e)
		return 0;
	ns = aiscope_now() - e->ts;
	m = mem_row();
	if (m) {
		__sync_fetch_and_add(&m->sync_calls, 1);
		__sync_fetch_and_add(&m->sync_ns, ns);
		slot = ns ? aiscope_log2(ns) : 0;
		/* the bound check and the index in one register: 6.1's
		 * verifier lost a mask folded into aiscope_log2's ors */
		asm volatile("" : "+r"(slot));
		if (slot < GL_SYNC_BUCKETS)
			__sync_fetch_and_add(&m->sync_log2[slot], 1);
	}
	call_done(GL_SYNC);
	return 0;
}

/* ---- names ---- */

static __always_inline struct gl_name_ev *name_ev(__u32 src, __u64 addr, __u64 alias)
{
	struct gl_name_ev *ev = aiscope_reserve(sizeof(*ev));

	if (!ev)
		return NULL;
	ev->type = GL_EV_NAME;
	ev->pid = cur_pid();
	ev->src = src;
	ev->name_ok = 0;
	ev->addr = addr;
	ev->alias = alias;
	ev->name_ptr = 0;
	ev->name[0] = 0;
	return ev;
}

static __always_inline void name_copy(struct gl_name_ev *ev, __u64 ptr)
{
	ev->name_ptr = ptr;
	if (bpf_probe_read_user_str(ev->name, sizeof(ev->name), (void *)ptr) > 1)
		ev->name_ok = 1;
}

static __always_inline int do_register(struct pt_regs *ctx, bool sleepable)
{
	struct gl_name_ev *ev;
	struct uarg c = {};
	__u64 host, dev;
	char b;

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	uarg_int(ctx, &c);				/* fatCubinHandle */
	host = uarg_int(ctx, &c);
	dev = uarg_int(ctx, &c);			/* deviceFun: the mangled name */
	if (sleepable) {
		/* the name sits in a page of the module nobody touched yet:
		 * fault it (and the next one) in, then read it */
		bpf_copy_from_user(&b, 1, (void *)dev);
		bpf_copy_from_user(&b, 1, (void *)(dev + GL_NAME_LEN - 1));
	}
	ev = name_ev(GL_SRC_REGISTER, host, 0);
	if (!ev)
		return 0;
	name_copy(ev, dev);
	bpf_ringbuf_submit(ev, 0);
	return 0;
}

SEC("uprobe.s")
int BPF_KPROBE(name_register_s)
{
	return do_register(ctx, true);
}

SEC("uprobe")
int BPF_KPROBE(name_register)
{
	return do_register(ctx, false);
}

/* (out, x, name) or (out, x): the out pointer and the second word saved */
SEC("uprobe")
int BPF_KPROBE(name_lookup, __u64 out, __u64 x, __u64 name)
{
	struct gl_entry_key k = { cur_tid() };
	struct gl_entry e = {};
	__u64 cookie;

	AISCOPE_OWN_STACK(ctx);
	if (!pass() || !api_cookie(ctx, false, &cookie))
		return 0;
	k.cls = NAME_CLS(GL_SHAPE(cookie) & 3);
	e.sp = PT_REGS_SP(ctx);
	e.func = out;
	e.stream = x;
	e.aux = name;
	e.shape = GL_SHAPE(cookie);
	if (bpf_map_update_elem(&entries, &k, &e, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
	return 0;
}

/* The SP a return probe sees for a call whose entry saw sp: x86's ret
 * popped the return address, arm64's was in the link register. */
static __always_inline __u64 sp_after_ret(__u64 sp)
{
#if defined(__TARGET_ARCH_x86)
	return sp + 8;
#else
	return sp;
#endif
}

/* addr_map: a return probe's IP is not the function's. The open lookup
 * whose entry stack pointer this return matches is the one returning (a
 * lookup may call another: __cudaGetKernel -> cuLibraryGetKernel). */
static __always_inline struct gl_entry *name_open(struct pt_regs *ctx,
						  struct gl_entry_key *k)
{
	struct gl_entry *e;

	for (__u32 s = 1; s < 4; s++) {
		k->cls = NAME_CLS(s);
		e = bpf_map_lookup_elem(&entries, k);
		if (e && sp_after_ret(e->sp) == PT_REGS_SP(ctx))
			return e;
	}
	return NULL;
}

SEC("uretprobe")
int BPF_KRETPROBE(name_lookup_ret, long ret)
{
	struct gl_entry_key k = { cur_tid() };
	struct gl_name_ev *ev;
	struct gl_entry *e;
	__u64 handle = 0;
	__u32 shape;

	AISCOPE_OWN_STACK(ctx);
	if (addr_map) {
		e = name_open(ctx, &k);
	} else {
		k.cls = NAME_CLS(GL_SHAPE(bpf_get_attach_cookie(ctx)) & 3);
		e = bpf_map_lookup_elem(&entries, &k);
	}
	if (!e)
		return 0;
	shape = e->shape;
	if ((int)ret != 0)
		goto out;
	bpf_probe_read_user(&handle, sizeof(handle), (void *)e->func);
	if (!handle)
		goto out;
	switch (shape) {
	case GL_SH_GETKERNEL:
		ev = name_ev(GL_SRC_GETKERNEL, handle, e->stream);
		break;
	case GL_SH_KFUNC:
		ev = name_ev(GL_SRC_KFUNC, handle, e->stream);
		break;
	default:
		ev = name_ev(GL_SRC_GETFUNC, handle, 0);
		if (ev)
			name_copy(ev, e->aux);
		break;
	}
	if (ev)
		bpf_ringbuf_submit(ev, 0);
out:
	bpf_map_delete_elem(&entries, &k);
	return 0;
}

/* ---- CUDA graphs: built, captured, instantiated ---- */

/* cudaKernelNodeParams and CUDA_KERNEL_NODE_PARAMS alike: func@0, grid@8,
 * block@20, sharedMemBytes@32; the driver's v2/v3 take a CUkernel at 56
 * when func is NULL */
struct gl_knode {
	__u64 func;
	__u32 grid[3], block[3];
	__u32 smem;
} __attribute__((packed));

_Static_assert(sizeof(struct gl_knode) == 36, "kernel node params prefix");

static __always_inline void knode_read(struct gl_entry *e, __u64 p)
{
	struct gl_knode n = {};

	bpf_probe_read_user(&n, sizeof(n), (void *)p);
	e->func = n.func;
	__builtin_memcpy(e->grid, n.grid, sizeof(e->grid));
	__builtin_memcpy(e->block, n.block, sizeof(e->block));
	e->smem = n.smem;
	if (!e->func && e->layer == GL_DRIVER)
		bpf_probe_read_user(&e->func, sizeof(e->func), (void *)(p + 56));
}

/*
 * cudaGraphAddNode/cuGraphAddNode: (out, graph, deps, n, params) before
 * CUDA 12.3's edge data, (out, graph, deps, edges, n, params) since (the
 * runtime 13's cudaGraphAddNode, the _v2 exports): the fifth argument is
 * a pointer in the one and a count of dependencies in the other, and no
 * user address lies below 64 KiB. Kernel nodes (type 0) and child graphs
 * (type 4) are kept; their parameters start at 16.
 */
static __always_inline bool node_read(struct pt_regs *ctx, struct gl_entry *e)
{
	__u64 p = uarg_nth(ctx, 5);
	__u32 type = ~0U;

	if (p < 65536)
		p = uarg_nth(ctx, 6);
	bpf_probe_read_user(&type, sizeof(type), (void *)p);
	if (type == 0) {
		knode_read(e, p + 16);
		return true;
	}
	if (type == 4) {
		e->kind = GL_G_CHILD;
		bpf_probe_read_user(&e->func, sizeof(e->func), (void *)(p + 16));
		return true;
	}
	return false;
}

SEC("uprobe")
int BPF_KPROBE(graph_entry)
{
	struct gl_entry e = {};
	__u64 cookie;

	AISCOPE_OWN_STACK(ctx);
	if (!pass() || !api_cookie(ctx, false, &cookie))
		return 0;
	e.shape = GL_SHAPE(cookie);
	e.layer = GL_LAYER(cookie);
	switch (e.shape) {
	case GL_SH_G_CREATE:
		e.stream = uarg_nth(ctx, 1);		/* graph *out */
		break;
	case GL_SH_G_KNODE:
		e.aux = uarg_nth(ctx, 2);		/* graph */
		knode_read(&e, uarg_nth(ctx, 5));
		break;
	case GL_SH_G_NODE:
		e.aux = uarg_nth(ctx, 2);
		if (!node_read(ctx, &e))
			return 0;
		break;
	case GL_SH_G_CHILD:
		e.aux = uarg_nth(ctx, 2);
		e.func = uarg_nth(ctx, 5);		/* the child graph */
		break;
	case GL_SH_G_CLONE:
		e.stream = uarg_nth(ctx, 1);
		e.func = uarg_nth(ctx, 2);		/* the original */
		break;
	case GL_SH_G_BEGIN_TO:
		e.func = uarg_nth(ctx, 2);		/* the graph captured into */
		/* fall through */
	case GL_SH_G_BEGIN:
		e.aux = uarg_nth(ctx, 1);		/* the stream */
		break;
	case GL_SH_G_END:
		e.aux = uarg_nth(ctx, 1);
		e.stream = uarg_nth(ctx, 2);		/* graph *out */
		break;
	case GL_SH_G_INST:
		e.stream = uarg_nth(ctx, 1);		/* exec *out */
		e.aux = uarg_nth(ctx, 2);		/* graph */
		break;
	default:
		return 0;
	}
	call_begin(ctx, GL_GRAPH, &e, cookie);
	return 0;
}

static __always_inline __u64 out_handle(const struct gl_entry *e)
{
	__u64 h = 0;

	bpf_probe_read_user(&h, sizeof(h), (void *)e->stream);
	return h;
}

/* a stream that began capturing: its launches are nodes from now on */
static __always_inline void capture_begin(const struct gl_entry *e)
{
	struct gl_cap_key k = { .handle = e->aux, .pid = cur_pid() };
	struct gl_graph_ev *ev;
	__u64 origin = e->aux;

	if (!bpf_map_lookup_elem(&captures, &k)) {
		if (bpf_map_update_elem(&captures, &k, &origin, BPF_NOEXIST)) {
			/* its launches will count as launches: said, not silent */
			aiscope_count_lost(AISCOPE_LOST_MAP);
			return;
		}
		__sync_fetch_and_add(&capturing, 1);
	}
	ev = graph_ev(GL_G_BEGIN, e->api, e->shape == GL_SH_G_BEGIN_TO ? e->func : 0, e->aux);
	if (ev)
		bpf_ringbuf_submit(ev, 0);
}

/* the capture ends, whether or not it made a graph */
static __always_inline void capture_end(const struct gl_entry *e, int rc)
{
	struct gl_cap_key k = { .handle = e->aux, .pid = cur_pid() };
	struct gl_graph_ev *ev;

	struct gl_joined *j;

	if (!bpf_map_delete_elem(&captures, &k))
		__sync_fetch_and_sub(&capturing, 1);
	j = bpf_map_lookup_elem(&cap_joined, &k);
	if (j) {
		struct gl_cap_key s = { .pid = k.pid };

		for (__u32 i = 0; i < GL_JOINED_MAX && i < j->n; i++) {
			s.handle = j->stream[i];
			bpf_map_delete_elem(&captures, &s);
		}
		bpf_map_delete_elem(&cap_joined, &k);
	}
	ev = graph_ev(GL_G_END, e->api, rc ? 0 : out_handle(e), e->aux);
	if (ev)
		bpf_ringbuf_submit(ev, 0);
}

static __always_inline void graph_done(const struct gl_entry *e, int rc)
{
	struct gl_graph_ev *ev = NULL;

	switch (e->shape) {
	case GL_SH_G_BEGIN:
	case GL_SH_G_BEGIN_TO:
		if (!rc)
			capture_begin(e);
		return;
	case GL_SH_G_END:
		capture_end(e, rc);
		return;
	}
	if (rc)
		return;
	switch (e->shape) {
	case GL_SH_G_CREATE:
		ev = graph_ev(GL_G_CREATE, e->api, out_handle(e), 0);
		break;
	case GL_SH_G_KNODE:
	case GL_SH_G_NODE:
		if (e->kind == GL_G_CHILD)
			ev = graph_ev(GL_G_CHILD, e->api, e->aux, e->func);
		else
			emit_node(e, GL_G_NODE, e->aux, 0);
		break;
	case GL_SH_G_CHILD:
		ev = graph_ev(GL_G_CHILD, e->api, e->aux, e->func);
		break;
	case GL_SH_G_CLONE:
		ev = graph_ev(GL_G_CLONE, e->api, out_handle(e), e->func);
		break;
	case GL_SH_G_INST:
		ev = graph_ev(GL_G_INST, e->api, e->aux, out_handle(e));
		break;
	}
	if (ev)
		bpf_ringbuf_submit(ev, 0);
}

SEC("uretprobe")
int BPF_KRETPROBE(graph_ret, long ret)
{
	struct gl_entry *e = call_end(GL_GRAPH);

	AISCOPE_OWN_STACK(ctx);
	if (!e)
		return 0;
	graph_done(e, (int)ret);
	call_done(GL_GRAPH);
	return 0;
}

static const struct gl_joined zero_joined;

/* a stream that joined the capture of origin, to end with it */
static __always_inline void joined_add(__u32 pid, __u64 origin, __u64 stream)
{
	struct gl_cap_key k = { .handle = origin, .pid = pid };
	struct gl_joined *j = aiscope_lookup_or_init(&cap_joined, &k, &zero_joined);
	__u32 n;

	if (!j)
		return;
	/* not atomic (5.10 has no fetching add): two threads of one process
	 * joining streams to one capture at the same instant may keep one */
	n = j->n;
	/* more: user space takes them out at the capture's end, from their
	 * join events */
	if (n >= GL_JOINED_MAX)
		return;
	j->stream[n & (GL_JOINED_MAX - 1)] = stream;
	j->n = n + 1;
}

/*
 * Streams join a capture the way CUDA forks work into them: an event
 * recorded on a capturing stream, then waited for on another stream, makes
 * that stream capture into the same graph until the capture ends. Entry
 * probes only; nothing but a test of the count runs while no stream
 * captures. The runtime's call and the driver's under it see the same
 * handles and do the same.
 */
SEC("uprobe")
int BPF_KPROBE(graph_join)
{
	struct gl_cap_key s = { .pid = cur_pid() }, ev = { .pid = s.pid };
	struct gl_graph_ev *out;
	__u64 cookie, *o, origin;

	if (!capturing)
		return 0;
	AISCOPE_OWN_STACK(ctx);
	if (!pass() || !api_cookie(ctx, false, &cookie))
		return 0;
	if (GL_SHAPE(cookie) == GL_SH_J_RECORD) {
		ev.handle = uarg_nth(ctx, 1);
		s.handle = uarg_nth(ctx, 2);
		o = bpf_map_lookup_elem(&captures, &s);
		if (!o) {
			bpf_map_delete_elem(&cap_events, &ev);
			return 0;
		}
		origin = *o;
		if (bpf_map_update_elem(&cap_events, &ev, &origin, BPF_ANY))
			aiscope_count_lost(AISCOPE_LOST_MAP);
		return 0;
	}
	s.handle = uarg_nth(ctx, 1);
	ev.handle = uarg_nth(ctx, 2);
	o = bpf_map_lookup_elem(&cap_events, &ev);
	if (!o || bpf_map_lookup_elem(&captures, &s))
		return 0;
	origin = *o;
	/* an event recorded in a capture that has ended since joins nothing */
	if (!capture_of(origin)) {
		bpf_map_delete_elem(&cap_events, &ev);
		return 0;
	}
	if (bpf_map_update_elem(&captures, &s, &origin, BPF_NOEXIST)) {
		aiscope_count_lost(AISCOPE_LOST_MAP);
		return 0;
	}
	joined_add(s.pid, origin, s.handle);
	out = graph_ev(GL_G_JOIN, GL_API(cookie), 0, s.handle);
	if (!out)
		return 0;
	out->func = origin;
	bpf_ringbuf_submit(out, 0);
	return 0;
}

/* ---- thread exit: drop its calls in progress ---- */

static __always_inline int on_exit(__u32 tid, __u32 pid)
{
	struct gl_entry_key k = { tid, 0 };

	bpf_map_delete_elem(&outer, &tid);
	if (tid == pid) {
		bpf_map_delete_elem(&rt_text, &pid);
		bpf_map_delete_elem(&proc_maps, &pid);
	}

	bpf_map_delete_elem(&outer, &tid);
	for (__u32 c = 0; c < GL_NCLASS; c++) {
		k.cls = c;
		bpf_map_delete_elem(&entries, &k);
	}
	for (__u32 s = 0; s < 4; s++) {
		k.cls = NAME_CLS(s);
		bpf_map_delete_elem(&entries, &k);
	}
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_btf, struct task_struct *t)
{
	return on_exit(t->pid, t->tgid);
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(exit_raw, struct task_struct *t)
{
	return on_exit(BPF_CORE_READ(t, pid), BPF_CORE_READ(t, tgid));
}

SEC("tracepoint/sched/sched_process_exit")
int exit_tp(void *ctx)
{
	return on_exit(cur_tid(), cur_pid());
}

char LICENSE[] SEC("license") = "GPL";
