// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * nclstat: uprobes on libnccl's API. Entry programs decode the arguments
 * (by ABI: sixth and later arguments and the 128-byte ncclUniqueId passed
 * by value live on the stack on x86-64) and park the call per thread;
 * the return program (one, attached to every function) settles it: rc,
 * latency, per-interval statistics per (process, communicator, op), and
 * the communicator registry. Nothing crosses to user space per call
 * unless -e asks for events.
 */
#include "aiscope.bpf.h"
#include "uprobe_args.bpf.h"
#include "uprobe_stack.bpf.h"
#include "uprobe_discover.bpf.h"
#include "nclstat.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile bool stream_events;	/* -e */
const volatile bool entry_only;		/* --no-return: collectives settle at entry */
const volatile bool pair_arrivals;	/* intervals (not -e): arrivals paired by user space */
__u32 epoch;				/* flipped by user space every interval */
/* where a communicator keeps commHash, then rank and nRanks: decoded by user
 * space from the probed library's code (lib/ncclcomm.h); 0: not known */
__s64 comm_hash_off;

AISCOPE_MAP(calls, BPF_MAP_TYPE_HASH, __u64, struct ncl_call, 16384);

AISCOPE_MAP(comms, BPF_MAP_TYPE_HASH, struct ncl_comm_key, struct ncl_comm, 4096);

AISCOPE_MAP(stats, BPF_MAP_TYPE_HASH, struct ncl_stats_key, struct ncl_stats, 2048);

AISCOPE_MAP(arrivals, BPF_MAP_TYPE_HASH, struct ncl_arrival_key, struct ncl_arrival,
	    NCL_ARRIVALS_MAX);

/* zeroed initial values (too large for the BPF stack); never written */
AISCOPE_MAP(stats_zero, BPF_MAP_TYPE_PERCPU_ARRAY, __u32, struct ncl_stats, 1);

static const struct ncl_comm comm_unknown = { .nranks = -1, .rank = -1, .color = -1 };

static __always_inline __u64 call_key(__u32 tid, __u32 op)
{
	return (__u64)tid << 8 | ncl_op_class(op);
}

/* FNV-1a, 64 bits, over the unique id: the same in every rank, so it joins
 * the ranks of one communicator across processes. */
static __always_inline __u64 id_hash(const __u8 *id)
{
	__u64 h = 0xcbf29ce484222325ULL;

	for (int i = 0; i < NCL_UNIQUE_ID_BYTES; i++) {
		h ^= id[i];
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The stream is printed only by -e: on x86-64 it is often a stack
 * argument, and a user-memory read per call is not free. */
static __always_inline __u64 stream_arg(struct pt_regs *ctx, __u32 n)
{
	return stream_events ? uarg_nth(ctx, n) : 0;
}

static __always_inline bool pass(void)
{
	return aiscope_task_pass((struct task_struct *)bpf_get_current_task());
}

/* ---- the registry ---- */

/* The communicator's own identity, NCCL's commHash among it, where its
 * layout is known: the same id in every rank on every host, whenever the
 * communicator was made. False when the handle is not an initialised
 * communicator of that layout (its magic, its ranks). */
static __always_inline bool comm_read(__u64 handle, struct ncl_comm *c)
{
	struct {
		__u64 hash;
		__s32 rank, nranks;
	} f;
	__s64 off = comm_hash_off;
	__u64 magic;

	if (off <= 0 || !handle)
		return false;
	if (bpf_probe_read_user(&magic, sizeof(magic), (void *)handle) || magic != NCL_COMM_MAGIC)
		return false;
	if (bpf_probe_read_user(&f, sizeof(f), (void *)(handle + off)))
		return false;
	if (!f.hash || f.nranks <= 0 || f.nranks > (1 << 24) || f.rank < 0 || f.rank >= f.nranks)
		return false;
	c->id_hash = f.hash;
	c->rank = f.rank;
	c->nranks = f.nranks;
	c->ident = NCL_IDENT_MEMORY;
	return true;
}

/* A communicator first met in a call (made before nclstat started) is
 * read until it reads (once its layout is known); after that, one test
 * per call. */
static __always_inline struct ncl_comm *comm_of(__u32 pid, __u64 handle)
{
	struct ncl_comm_key k = { .handle = handle, .pid = pid };
	struct ncl_comm *c = aiscope_lookup_or_init(&comms, &k, &comm_unknown);

	if (c && c->ident != NCL_IDENT_MEMORY && comm_hash_off)
		comm_read(handle, c);
	return c;
}

static __always_inline void comm_register(__u32 pid, __u64 handle, const struct ncl_comm *c)
{
	struct ncl_comm_key k = { .handle = handle, .pid = pid };

	if (!handle)
		return;
	if (bpf_map_update_elem(&comms, &k, c, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
}

/* ---- statistics ---- */

/* sum of squares in 128 bits: sizes up to 2^64 never overflow it */
static __always_inline void add_square(struct ncl_stats *s, __u64 v)
{
	__u64 a = v >> 32, b = v & 0xffffffffULL;
	__u64 lo = b * b, mid = a * b, hi = a * a, add, old;

	/* v^2 = hi << 64 + 2 * mid << 32 + lo */
	add = mid << 33;
	hi += (mid >> 31);
	old = lo;
	lo += add;
	hi += lo < old;
	old = s->sq_lo;
	s->sq_lo += lo;
	s->sq_hi += hi + (s->sq_lo < old);
}

static __always_inline void add_size(struct ncl_stats *s, __u64 bytes)
{
	for (int i = 0; i < NCL_SIZE_SLOTS; i++) {
		if (s->sizes[i].calls && s->sizes[i].bytes != bytes)
			continue;
		s->sizes[i].bytes = bytes;
		s->sizes[i].calls++;
		return;
	}
	s->sizes_other++;
}

static __always_inline struct ncl_stats *stats_of(const struct ncl_call *c)
{
	struct ncl_stats_key k = {
		.handle = c->op < NCL_OP_COLL_NR ? c->comm : 0,
		.pid = c->pid, .op = c->op, .epoch = epoch & 1,
	};
	struct ncl_stats *s = bpf_map_lookup_elem(&stats, &k), *zero;
	__u32 z = 0;

	if (s)
		return s;
	zero = bpf_map_lookup_elem(&stats_zero, &z);
	if (!zero)
		return NULL;
	s = aiscope_lookup_or_init(&stats, &k, zero);
	/* The identity goes into the row, never into the per-CPU zero value:
	 * uprobe programs are preemptible, and another task's program on this
	 * CPU would write its own there between our write and our insert (a
	 * row of one rank named after another, seen on x86 7.2). */
	if (s && !s->ident.pid)
		aiscope_task_ident((struct task_struct *)bpf_get_current_task(), &s->ident);
	return s;
}

static __always_inline void hist_add(__u32 *hist, __u64 v)
{
	__u32 slot = hist_bucket(v);

	/* keep the bound check and the index in one register for the verifier */
	asm volatile("" : "+r"(slot));
	if (slot < HIST_BUCKETS)
		__sync_fetch_and_add(&hist[slot], 1);
}

/* Several threads of a process may share a row (ncclGroupEnd's, or one
 * communicator driven from two threads): counters are atomic; the exact
 * size slots and the sum of squares are not, and a rare race there only
 * blurs the size statistics. rc < 0: not known (entry-only mode). */
static __always_inline void account(const struct ncl_call *c, long rc, __u64 lat)
{
	struct ncl_stats *s = stats_of(c);
	__u64 bytes;
	__u32 dt;

	if (!s)
		return;
	__sync_fetch_and_add(&s->calls, 1);
	if (c->op < NCL_OP_COLL_NR) {
		dt = c->datatype < NCL_NUM_TYPES ? c->datatype : NCL_DT_UNKNOWN;
		bytes = c->count * ncl_dtype_size(dt);
		__sync_fetch_and_add(&s->bytes, bytes);
		add_square(s, bytes);
		add_size(s, bytes);
		if (bytes > s->size_max)
			s->size_max = bytes;
		hist_add(s->size_hist, bytes);
		if (dt < NCL_DT_SLOTS)
			__sync_fetch_and_add(&s->dtype_calls[dt], 1);
		if (c->op == NCL_OP_ALLREDUCE || c->op == NCL_OP_REDUCE ||
		    c->op == NCL_OP_REDUCESCATTER)
			s->redops |= 1U << (c->redop < NCL_NUM_OPS ? c->redop : NCL_REDOP_DYNAMIC_BIT);
	}
	if (rc < 0)
		return;
	if (rc == NCL_IN_PROGRESS) {
		__sync_fetch_and_add(&s->in_progress, 1);
	} else if (rc) {
		__sync_fetch_and_add(&s->errors, 1);
		s->last_error = rc;
	}
	__sync_fetch_and_add(&s->lat_n, 1);
	__sync_fetch_and_add(&s->lat_sum, lat);
	if (lat > s->lat_max)
		s->lat_max = lat;
	hist_add(s->lat_hist, lat);
}

/* -e: the call as it returns (or, with --no-return, as it enters) */
/* made: the identity of the communicator the call made, as registered
 * (the event carries it: its handle may be another's by the time user
 * space reads the event) */
static __always_inline void emit(const struct ncl_call *c, long rc, __u64 now, __u64 new_comm,
				 const struct ncl_comm *made, bool returned)
{
	struct ncl_event *e = aiscope_reserve(sizeof(*e));

	if (!e)
		return;
	e->ts = now;
	e->latency_ns = now - c->ts;
	e->comm = c->comm;
	e->count = c->count;
	e->stream = c->stream;
	e->id_hash = c->id_hash;
	e->new_comm = new_comm;
	aiscope_task_ident((struct task_struct *)bpf_get_current_task(), &e->task);
	e->op = c->op;
	e->datatype = c->datatype;
	e->redop = c->redop;
	e->root_or_peer = c->root_or_peer;
	e->nranks = c->nranks;
	e->rank = c->rank;
	e->ident = c->id_hash ? NCL_IDENT_ARGS : NCL_IDENT_NONE;
	if (made && new_comm) {
		e->id_hash = made->id_hash;
		e->nranks = made->nranks;
		e->rank = made->rank;
		e->ident = made->ident;
	}
	e->rc = rc;
	e->returned = returned;
	aiscope_submit(e);
}

/* ---- arrivals: which local rank enters each collective last ---- */

static __always_inline void arrive(const struct ncl_comm *cm, const struct ncl_call *c)
{
	struct ncl_arrival_key k = {
		.id_hash = cm->id_hash, .seq = cm->seq, .pid = c->pid, .rank = cm->rank,
	};
	struct ncl_arrival a = { .ts = c->ts, .count = c->count, .tid = c->tid, .op = c->op };

	/* a communicator of unknown identity cannot be paired */
	if (!pair_arrivals || !cm->id_hash)
		return;
	if (bpf_map_update_elem(&arrivals, &k, &a, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
}

/* ---- entries ---- */

static __always_inline int enter(struct ncl_call *c)
{
	__u64 id = bpf_get_current_pid_tgid(), key;
	struct ncl_comm *cm;

	c->ts = aiscope_now();
	c->pid = id >> 32;
	c->tid = (__u32)id;
	if (c->op < NCL_OP_COLL_NR && c->op != NCL_OP_SEND && c->op != NCL_OP_RECV) {
		/* the rank-skew sequence: collectives only (p2p is not symmetric) */
		cm = comm_of(c->pid, c->comm);
		if (cm) {
			cm->seq++;
			cm->last_ts = c->ts;
			cm->last_op = c->op;
			cm->last_count = c->count;
			cm->last_datatype = c->datatype;
			cm->tid = c->tid;
			arrive(cm, c);
		}
	} else if (c->op < NCL_OP_COLL_NR) {
		comm_of(c->pid, c->comm);
	}
	/* --no-return: collectives and ncclGroupEnd settle here, without
	 * rc, latency or hang detection (one probe hit per call, not two) */
	if (entry_only && ncl_op_class(c->op) <= NCL_CLASS_GROUP) {
		if (stream_events)
			emit(c, 0, c->ts, 0, NULL, false);
		else
			account(c, -1, 0);
		return 0;
	}
	key = call_key(c->tid, c->op);
	if (bpf_map_update_elem(&calls, &key, c, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
	return 0;
}

/* op(sendbuff, recvbuff, count, datatype, redop, comm, stream) */
static __always_inline int coll_redop(struct pt_regs *ctx, __u32 op)
{
	struct ncl_call c = { .op = op, .root_or_peer = -1 };

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	c.count = uarg_nth(ctx, 3);
	c.datatype = uarg_nth(ctx, 4);
	c.redop = uarg_nth(ctx, 5);
	c.comm = uarg_nth(ctx, 6);
	c.stream = stream_arg(ctx, 7);
	return enter(&c);
}

/* op(sendbuff, recvbuff, count, datatype, comm, stream) */
static __always_inline int coll_plain(struct pt_regs *ctx, __u32 op)
{
	struct ncl_call c = { .op = op, .root_or_peer = -1 };

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	c.count = uarg_nth(ctx, 3);
	c.datatype = uarg_nth(ctx, 4);
	c.comm = uarg_nth(ctx, 5);
	c.stream = stream_arg(ctx, 6);
	return enter(&c);
}

/* op(sendbuff, recvbuff, count, datatype, root, comm, stream) */
static __always_inline int coll_root(struct pt_regs *ctx, __u32 op)
{
	struct ncl_call c = { .op = op };

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	c.count = uarg_nth(ctx, 3);
	c.datatype = uarg_nth(ctx, 4);
	c.root_or_peer = uarg_nth(ctx, 5);
	c.comm = uarg_nth(ctx, 6);
	c.stream = stream_arg(ctx, 7);
	return enter(&c);
}

/* op(buff, count, datatype, peer, comm, stream) */
static __always_inline int p2p(struct pt_regs *ctx, __u32 op)
{
	struct ncl_call c = { .op = op };

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	c.count = uarg_nth(ctx, 2);
	c.datatype = uarg_nth(ctx, 3);
	c.root_or_peer = uarg_nth(ctx, 4);
	c.comm = uarg_nth(ctx, 5);
	c.stream = stream_arg(ctx, 6);
	return enter(&c);
}

SEC("uprobe")
int BPF_KPROBE(allreduce_enter) { return coll_redop(ctx, NCL_OP_ALLREDUCE); }

SEC("uprobe")
int BPF_KPROBE(reducescatter_enter) { return coll_redop(ctx, NCL_OP_REDUCESCATTER); }

SEC("uprobe")
int BPF_KPROBE(allgather_enter) { return coll_plain(ctx, NCL_OP_ALLGATHER); }

SEC("uprobe")
int BPF_KPROBE(alltoall_enter) { return coll_plain(ctx, NCL_OP_ALLTOALL); }

SEC("uprobe")
int BPF_KPROBE(broadcast_enter) { return coll_root(ctx, NCL_OP_BROADCAST); }

SEC("uprobe")
int BPF_KPROBE(gather_enter) { return coll_root(ctx, NCL_OP_GATHER); }

SEC("uprobe")
int BPF_KPROBE(scatter_enter) { return coll_root(ctx, NCL_OP_SCATTER); }

SEC("uprobe")
int BPF_KPROBE(send_enter) { return p2p(ctx, NCL_OP_SEND); }

SEC("uprobe")
int BPF_KPROBE(recv_enter) { return p2p(ctx, NCL_OP_RECV); }

/* ncclReduce(sendbuff, recvbuff, count, datatype, redop, root, comm, stream):
 * on x86-64 comm and stream are the 7th and 8th arguments, on the stack */
SEC("uprobe")
int BPF_KPROBE(reduce_enter)
{
	struct ncl_call c = { .op = NCL_OP_REDUCE };

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	c.count = uarg_nth(ctx, 3);
	c.datatype = uarg_nth(ctx, 4);
	c.redop = uarg_nth(ctx, 5);
	c.root_or_peer = uarg_nth(ctx, 6);
	c.comm = uarg_nth(ctx, 7);
	c.stream = stream_arg(ctx, 8);
	return enter(&c);
}

SEC("uprobe")
int BPF_KPROBE(group_end_enter)
{
	struct ncl_call c = { .op = NCL_OP_GROUP_END, .root_or_peer = -1 };

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	return enter(&c);
}

/* ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank
 * [, ncclConfig_t *config]): the 128-byte id is passed by value. x86-64:
 * in memory at sp+8, and rank takes the third integer register; arm64: the
 * caller's copy by reference in x2, rank in x3. The cursor knows which. */
static __always_inline int init_rank(struct pt_regs *ctx, __u32 op)
{
	struct ncl_call c = { .op = op, .root_or_peer = -1 };
	__u8 id[NCL_UNIQUE_ID_BYTES];
	struct uarg a = {};

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	c.out = uarg_int(ctx, &a);
	c.nranks = uarg_int(ctx, &a);
	if (uarg_struct(ctx, &a, id, sizeof(id)) == 0)
		c.id_hash = id_hash(id);
	c.rank = uarg_int(ctx, &a);
	return enter(&c);
}

SEC("uprobe")
int BPF_KPROBE(init_rank_enter) { return init_rank(ctx, NCL_OP_INIT_RANK); }

SEC("uprobe")
int BPF_KPROBE(init_rank_config_enter) { return init_rank(ctx, NCL_OP_INIT_RANK_CONFIG); }

/* ncclCommInitAll(ncclComm_t *comm, int ndev, const int *devlist) */
SEC("uprobe")
int BPF_KPROBE(init_all_enter)
{
	struct ncl_call c = { .op = NCL_OP_INIT_ALL, .root_or_peer = -1 };

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	c.out = uarg_nth(ctx, 1);
	c.nranks = uarg_nth(ctx, 2);
	return enter(&c);
}

/* ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm, config) */
SEC("uprobe")
int BPF_KPROBE(split_enter)
{
	struct ncl_call c = { .op = NCL_OP_SPLIT, .root_or_peer = -1 };

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	c.comm = uarg_nth(ctx, 1);
	c.rank = uarg_nth(ctx, 2);		/* the color */
	c.out = uarg_nth(ctx, 4);
	return enter(&c);
}

/*
 * ncclCommShrink(comm, int *excludeRanksList, int excludeRanksCount,
 * ncclComm_t *newcomm, config, flags): every remaining rank shrinks the
 * same parent by the same list, so the new communicator's identity is the
 * parent's with the list folded in; its ranks are the parent's less the
 * excluded ones below them, its size the parent's less the list's.
 */
SEC("uprobe")
int BPF_KPROBE(shrink_enter)
{
	struct ncl_call c = { .op = NCL_OP_SHRINK, .root_or_peer = -1, .nranks = -1, .rank = -1 };
	struct ncl_comm *parent;
	__u32 n, below = 0;
	__u64 h, list;

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	c.comm = uarg_nth(ctx, 1);
	n = uarg_nth(ctx, 3);
	c.out = uarg_nth(ctx, 4);
	c.count = n;
	list = uarg_nth(ctx, 2);
	parent = comm_of(bpf_get_current_pid_tgid() >> 32, c.comm);
	if (!parent || !parent->id_hash || n > NCL_SHRINK_MAX)
		return enter(&c);
	h = parent->id_hash;
	/* a read per rank: a rare call, and no variable-size read to bound */
	for (__u32 i = 0; i < NCL_SHRINK_MAX; i++) {
		__s32 r;

		if (i >= n)
			break;
		if (bpf_probe_read_user(&r, sizeof(r), (void *)(list + 4 * i)))
			return enter(&c);
		h = (h ^ (__u32)r) * 0x100000001b3ULL;
		below += parent->rank >= 0 && r < parent->rank;
	}
	c.id_hash = (h ^ 0x5348524bULL) * 0x100000001b3ULL;	/* "SHRK" */
	if (parent->nranks > 0)
		c.nranks = parent->nranks - n;
	if (parent->rank >= 0)
		c.rank = parent->rank - below;
	return enter(&c);
}

/* ncclCommInitRankScalable(ncclComm_t *newcomm, int nranks, int myrank,
 * int nId, ncclUniqueId *commIds, config): every rank passes the same ids;
 * the first names the communicator as ncclCommInitRank's id does */
SEC("uprobe")
int BPF_KPROBE(init_scalable_enter)
{
	struct ncl_call c = { .op = NCL_OP_INIT_SCALABLE, .root_or_peer = -1 };
	__u8 id[NCL_UNIQUE_ID_BYTES];

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	c.out = uarg_nth(ctx, 1);
	c.nranks = uarg_nth(ctx, 2);
	c.rank = uarg_nth(ctx, 3);
	if (uarg_nth(ctx, 4) >= 1 &&
	    !bpf_probe_read_user(id, sizeof(id), (void *)uarg_nth(ctx, 5)))
		c.id_hash = id_hash(id);
	return enter(&c);
}

static __always_inline int comm_end(struct pt_regs *ctx, __u32 op)
{
	struct ncl_call c = { .op = op, .root_or_peer = -1 };
	struct ncl_comm *cm;

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	c.comm = uarg_nth(ctx, 1);
	cm = comm_of(bpf_get_current_pid_tgid() >> 32, c.comm);
	if (cm) {
		cm->destroyed_ts = aiscope_now();
		cm->aborted = op == NCL_OP_ABORT;
	}
	return enter(&c);
}

SEC("uprobe")
int BPF_KPROBE(destroy_enter) { return comm_end(ctx, NCL_OP_DESTROY); }

SEC("uprobe")
int BPF_KPROBE(abort_enter) { return comm_end(ctx, NCL_OP_ABORT); }

/* ncclCommCount / ncclCommUserRank(comm, int *out) */
static __always_inline int query(struct pt_regs *ctx, __u32 op)
{
	struct ncl_call c = { .op = op, .root_or_peer = -1 };

	AISCOPE_OWN_STACK(ctx);
	if (!pass())
		return 0;
	c.comm = uarg_nth(ctx, 1);
	c.out = uarg_nth(ctx, 2);
	return enter(&c);
}

SEC("uprobe")
int BPF_KPROBE(count_enter) { return query(ctx, NCL_OP_COUNT); }

SEC("uprobe")
int BPF_KPROBE(user_rank_enter) { return query(ctx, NCL_OP_USER_RANK); }


/* ---- returns ---- */

static __always_inline __u64 read_user_u64(__u64 addr)
{
	__u64 v = 0;

	if (addr)
		bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

static __always_inline __s32 read_user_s32(__u64 addr)
{
	__s32 v = -1;

	if (!addr || bpf_probe_read_user(&v, sizeof(v), (void *)addr))
		return -1;
	return v;
}

/* init and split: the new communicator enters the registry */
static __always_inline __u64 settle_comm(struct ncl_call *c, long rc, struct ncl_comm *made)
{
	struct ncl_comm n = { .nranks = -1, .rank = -1, .color = -1 };
	struct ncl_comm *parent;
	__u64 handle;

	if (rc && rc != NCL_IN_PROGRESS)
		return 0;
	n.init_ts = c->ts;
	switch (c->op) {
	case NCL_OP_INIT_RANK:
	case NCL_OP_INIT_RANK_CONFIG:
	case NCL_OP_INIT_SCALABLE:
	case NCL_OP_SHRINK:
		handle = read_user_u64(c->out);
		n.how = c->op == NCL_OP_INIT_RANK ? NCL_HOW_INIT_RANK :
			c->op == NCL_OP_INIT_RANK_CONFIG ? NCL_HOW_INIT_RANK_CONFIG :
			c->op == NCL_OP_SHRINK ? NCL_HOW_SHRINK : NCL_HOW_INIT_SCALABLE;
		if (c->op == NCL_OP_SHRINK)
			n.parent = c->comm;
		n.id_hash = c->id_hash;
		n.nranks = c->nranks;
		n.rank = c->rank;
		n.ident = n.id_hash ? NCL_IDENT_ARGS : NCL_IDENT_NONE;
		comm_read(handle, &n);
		comm_register(c->pid, handle, &n);
		*made = n;
		return handle;
	case NCL_OP_SPLIT:
		handle = read_user_u64(c->out);
		n.how = NCL_HOW_SPLIT;
		n.parent = c->comm;
		n.color = c->rank;
		parent = comm_of(c->pid, c->comm);
		/* every member splits the same parent with the same color */
		if (parent && parent->id_hash) {
			n.id_hash = (parent->id_hash ^ (__u32)c->rank) * 0x100000001b3ULL;
			n.ident = NCL_IDENT_ARGS;
		}
		comm_read(handle, &n);
		comm_register(c->pid, handle, &n);
		*made = n;
		return handle;
	case NCL_OP_INIT_ALL:
		n.how = NCL_HOW_INIT_ALL;
		n.nranks = c->nranks;
		handle = read_user_u64(c->out);
		/* one process holds every rank: the first handle names the clique */
		for (int i = 0; i < NCL_MAX_INIT_ALL; i++) {
			__u64 h;

			if (i >= c->nranks)
				break;
			h = read_user_u64(c->out + 8 * i);
			n.id_hash = (handle ^ c->pid) * 0x100000001b3ULL;
			n.nranks = c->nranks;
			n.rank = i;
			n.ident = NCL_IDENT_ARGS;
			comm_read(h, &n);
			comm_register(c->pid, h, &n);
			if (i == 0)
				*made = n;
		}
		return handle;
	}
	return 0;
}

static __always_inline void settle_query(struct ncl_call *c, long rc)
{
	struct ncl_comm *cm;
	__s32 v;

	if (rc)
		return;
	v = read_user_s32(c->out);
	cm = comm_of(c->pid, c->comm);
	if (!cm || v < 0)
		return;
	if (cm->ident == NCL_IDENT_NONE)
		cm->ident = NCL_IDENT_QUERY;
	if (c->op == NCL_OP_COUNT)
		cm->nranks = v;
	else
		cm->rank = v;
}

static __always_inline int leave(struct pt_regs *ctx, __u32 class)
{
	__u64 key = (bpf_get_current_pid_tgid() & 0xffffffffULL) << 8 | class;
	struct ncl_call *c = bpf_map_lookup_elem(&calls, &key);
	long rc = (int)PT_REGS_RC(ctx);
	struct ncl_comm made = {};
	__u64 now, new_comm = 0;

	AISCOPE_OWN_STACK(ctx);
	if (!c)
		return 0;
	now = aiscope_now();
	if (class == NCL_CLASS_COMM)
		new_comm = settle_comm(c, rc, &made);
	else if (class == NCL_CLASS_QUERY)
		settle_query(c, rc);
	if (class != NCL_CLASS_QUERY && !stream_events)
		account(c, rc, now - c->ts);
	if (stream_events && class != NCL_CLASS_QUERY)
		emit(c, rc, now, new_comm, &made, true);
	bpf_map_delete_elem(&calls, &key);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(coll_return) { return leave(ctx, NCL_CLASS_COLL); }

SEC("uretprobe")
int BPF_KRETPROBE(group_return) { return leave(ctx, NCL_CLASS_GROUP); }

SEC("uretprobe")
int BPF_KRETPROBE(comm_return) { return leave(ctx, NCL_CLASS_COMM); }

SEC("uretprobe")
int BPF_KRETPROBE(query_return) { return leave(ctx, NCL_CLASS_QUERY); }

/* ---- threads that die inside a call (killed ranks) ---- */

static __always_inline void drop_calls(__u32 tid)
{
	for (__u32 cl = 0; cl < NCL_CLASS_NR; cl++) {
		__u64 key = (__u64)tid << 8 | cl;

		bpf_map_delete_elem(&calls, &key);
	}
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(exit_btf, struct task_struct *p)
{
	drop_calls(p->pid);
	return 0;
}

SEC("raw_tp/sched_process_exit")
int BPF_PROG(exit_raw, struct task_struct *p)
{
	drop_calls(BPF_CORE_READ(p, pid));
	return 0;
}

/* these run in the exiting task */
SEC("tracepoint/sched/sched_process_exit")
int exit_tp(void *ctx)
{
	drop_calls((__u32)bpf_get_current_pid_tgid());
	return 0;
}

AISCOPE_FENTRY_KPROBE(do_exit, exit)
{
	drop_calls((__u32)bpf_get_current_pid_tgid());
	return 0;
}
