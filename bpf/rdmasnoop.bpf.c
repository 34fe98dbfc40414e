// SPDX-License-Identifier: GPL-2.0
/*
 * rdmasnoop: RDMA verbs traffic per process and queue pair, from uprobes.
 *
 * ibv_post_send, ibv_post_recv and ibv_poll_cq are inline wrappers in
 * verbs.h that call the provider through qp->context->ops: there is no
 * libibverbs function to probe on the data path, and providers are shipped
 * stripped (librxe's rxe_post_send is a local symbol that is gone). So the
 * return probe of ibv_open_device reads the context's ops table and tells
 * user space the provider's entry points, which it probes by file offset
 * (tools/rdmasnoop.c). The control path (ibv_modify_qp, ibv_reg_mr...,
 * ibv_create_ah) is libibverbs' exported functions.
 *
 * Counters are cumulative per (process, QP number); user space reports
 * each interval's difference.
 */
#include "aiscope.bpf.h"
#include "uprobe_stack.bpf.h"
#include "uprobe_discover.bpf.h"
#include "rdmasnoop.h"

const volatile bool stream_events;	/* -e: connect, register, errors */

__u64 wcs_unread;			/* completions past RS_MAX_WCS in one poll */
__u64 holds_skipped;			/* --hold: openers not stopped (table full, signal refused) */

AISCOPE_MAP(qps, BPF_MAP_TYPE_HASH, struct rs_qp_key, struct rs_qp, 4096);
AISCOPE_MAP(procs, BPF_MAP_TYPE_HASH, __u32, struct rs_proc, 4096);
AISCOPE_MAP(mrs, BPF_MAP_TYPE_HASH, struct rs_mr_key, __u64, 65536);
/* the signaled sends in flight of each QP, in order (preallocated: 5.10
 * warns of a tracing program with a map allocated at run time) */
AISCOPE_MAP(sqs, BPF_MAP_TYPE_HASH, struct rs_qp_key, struct rs_sq, 4096);
/* sends not marked signaled, by wr_id: a QP made with sq_sig_all completes
 * them all (LRU: on other QPs they never complete, and are pushed out) */
AISCOPE_MAP(wrs, BPF_MAP_TYPE_LRU_HASH, struct rs_wr_key, __u64, 65536);
AISCOPE_MAP(ahs, BPF_MAP_TYPE_LRU_HASH, struct rs_ah_key, struct rs_ah, 4096);
/* calls in progress, by thread: poll_cq's wc array, create_ah's attr */
AISCOPE_MAP(args, BPF_MAP_TYPE_HASH, __u32, __u64, 16384);
/* --hold: openers stopped until their provider is probed, pid -> when;
 * user space continues each one after its open event, and at exit every
 * one still here (whose event it may not read) */
AISCOPE_MAP(held_opens, BPF_MAP_TYPE_HASH, __u32, __u64, 1024);

/* zero values to insert: too large for the stack */
static const struct rs_qp qp_zero;
static const struct rs_proc proc_zero;
static const struct rs_sq sq_zero;

static __always_inline bool pass(void)
{
	if (!aiscope_cfg.by_pid && !aiscope_cfg.by_tid && !aiscope_cfg.by_uid &&
	    !aiscope_cfg.by_comm && !aiscope_cfg.ncg && !aiscope_cfg.by_cgset)
		return true;
	return aiscope_task_pass((struct task_struct *)bpf_get_current_task());
}

static __always_inline __u32 cur_pid(void)
{
	return bpf_get_current_pid_tgid() >> 32;
}

static __always_inline __u64 rd64(__u64 addr)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

static __always_inline __u32 rd32(__u64 addr)
{
	__u32 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)addr);
	return v;
}

static __always_inline void fill_ident(struct aiscope_ident *id)
{
	aiscope_task_ident((struct task_struct *)bpf_get_current_task(), id);
}

static __always_inline struct rs_qp *qp_of(__u32 qpn)
{
	struct rs_qp_key k = { .pid = cur_pid(), .qpn = qpn };
	struct rs_qp *q = bpf_map_lookup_elem(&qps, &k);

	if (q)
		return q;
	q = aiscope_lookup_or_init(&qps, &k, &qp_zero);
	if (q)
		fill_ident(&q->ident);
	return q;
}

static __always_inline struct rs_proc *proc_of(void)
{
	__u32 pid = cur_pid();
	struct rs_proc *p = bpf_map_lookup_elem(&procs, &pid);

	if (p)
		return p;
	p = aiscope_lookup_or_init(&procs, &pid, &proc_zero);
	if (p)
		fill_ident(&p->ident);
	return p;
}

static __always_inline struct rs_event *event_new(__u32 type)
{
	struct rs_event *e = aiscope_reserve(sizeof(*e));

	if (!e)
		return NULL;
	__builtin_memset(e, 0, sizeof(*e));
	e->type = type;
	e->ts = aiscope_now();
	fill_ident(&e->ident);
	return e;
}

static __always_inline void dev_name(__u64 ctx, char *dst)
{
	__u64 dev = rd64(ctx + RS_CTX_DEVICE);

	bpf_probe_read_user_str(dst, RS_DEV_LEN, (void *)(dev + RS_DEV_NAME));
}

/* ---- devices: the provider's entry points ---- */

/* --hold: the opener stops (SIGSTOP, as it returns to user space, before
 * its first post) until user space has probed the provider its open
 * names; remembered first, so that a stop is never sent that nobody
 * would undo (a full table: not stopped, counted) */
static __always_inline void hold_opener(struct rs_event *e)
{
	__u32 pid = e->ident.pid;
	__u64 now = bpf_ktime_get_ns();

	if (!uprobe_hold)
		return;
	if (bpf_map_update_elem(&held_opens, &pid, &now, BPF_ANY)) {
		__sync_fetch_and_add(&holds_skipped, 1);
		return;
	}
	if (bpf_send_signal(UPROBE_SIGSTOP)) {
		bpf_map_delete_elem(&held_opens, &pid);
		__sync_fetch_and_add(&holds_skipped, 1);
		return;
	}
	e->held_ns = now;
	__sync_fetch_and_add(&uprobe_held, 1);
}

SEC("uretprobe")
int BPF_KRETPROBE(open_device_ret, __u64 ctx_ptr)
{
	struct rs_proc *p;
	struct rs_event *e;

	AISCOPE_OWN_STACK(ctx);
	if (!ctx_ptr || !pass())
		return 0;
	p = proc_of();
	if (p)
		__sync_fetch_and_add(&p->opens, 1);
	/* always sent, -e or not: user space probes the provider from it */
	e = event_new(RS_EV_OPEN);
	if (!e)
		return 0;
	dev_name(ctx_ptr, e->dev);
	e->fn[RS_FN_POST_SEND] = rd64(ctx_ptr + RS_CTX_POST_SEND);
	e->fn[RS_FN_POST_RECV] = rd64(ctx_ptr + RS_CTX_POST_RECV);
	e->fn[RS_FN_POLL_CQ] = rd64(ctx_ptr + RS_CTX_POLL_CQ);
	e->fn[RS_FN_POST_SRQ_RECV] = rd64(ctx_ptr + RS_CTX_POST_SRQ_RECV);
	hold_opener(e);
	bpf_ringbuf_submit(e, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* ---- connection setup ---- */

static __always_inline void connect_event(const struct rs_qp *q, __u32 qpn, __u32 state)
{
	struct rs_event *e;

	if (!stream_events)
		return;
	e = event_new(RS_EV_CONNECT);
	if (!e)
		return;
	e->qpn = qpn;
	e->status = state;
	e->dest_qpn = q->dest_qpn;
	e->qp_type = q->qp_type;
	e->port = q->port;
	e->dlid = q->dlid;
	e->is_global = q->is_global;
	__builtin_memcpy(e->dgid, q->dgid, sizeof(e->dgid));
	__builtin_memcpy(e->dev, q->dev, sizeof(e->dev));
	aiscope_submit(e);
}

/* a QP (its number perhaps reused) going to INIT has no send in flight */
static __always_inline void sq_reset(__u32 qpn)
{
	struct rs_qp_key k = { .pid = cur_pid(), .qpn = qpn };
	struct rs_sq *sq = bpf_map_lookup_elem(&sqs, &k);

	if (sq)
		sq->done = sq->posted;
}

/* ibv_modify_qp(qp, attr, mask): the port (INIT) and the peer (RTR) */
SEC("uprobe")
int BPF_KPROBE(modify_qp, __u64 qp, __u64 attr, __u32 mask)
{
	struct rs_qp *q;
	__u64 ah = attr + RS_ATTR_AH;
	__u32 qpn, state = 0;

	AISCOPE_OWN_STACK(ctx);
	if (!qp || !attr || !pass())
		return 0;
	if (!(mask & (RS_MASK_PORT | RS_MASK_AV | RS_MASK_DEST_QPN)))
		return 0;
	qpn = rd32(qp + RS_QP_NUM);
	q = qp_of(qpn);
	if (!q)
		return 0;
	q->qp_type = rd32(qp + RS_QP_TYPE);
	if (!q->dev[0])
		dev_name(rd64(qp + RS_QP_CONTEXT), q->dev);
	if (mask & RS_MASK_PORT) {
		bpf_probe_read_user(&q->port, 1, (void *)(attr + RS_ATTR_PORT));
		sq_reset(qpn);
	}
	if (mask & RS_MASK_STATE)
		state = rd32(attr + RS_ATTR_QP_STATE);
	if (mask & RS_MASK_AV) {
		bpf_probe_read_user(q->dgid, sizeof(q->dgid), (void *)(ah + RS_AH_DGID));
		bpf_probe_read_user(&q->dlid, 2, (void *)(ah + RS_AH_DLID));
		bpf_probe_read_user(&q->is_global, 1, (void *)(ah + RS_AH_IS_GLOBAL));
		bpf_probe_read_user(&q->sgid_index, 1, (void *)(ah + RS_AH_SGID_INDEX));
		q->has_sgid = 1;
		if (!q->port)
			bpf_probe_read_user(&q->port, 1, (void *)(ah + RS_AH_PORT));
	}
	if (mask & RS_MASK_DEST_QPN) {
		q->dest_qpn = rd32(attr + RS_ATTR_DEST_QPN);
		q->has_peer = RS_PEER_ADDR;
		connect_event(q, qpn, state);
	}
	return 0;
}

/* ibv_create_ah(pd, attr): a UD peer's address, found again by its ah */
SEC("uprobe")
int BPF_KPROBE(create_ah, __u64 pd, __u64 attr)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	AISCOPE_OWN_STACK(ctx);
	if (!attr || !pass())
		return 0;
	if (bpf_map_update_elem(&args, &tid, &attr, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
	return 0;
}

SEC("uretprobe")
int BPF_KRETPROBE(create_ah_ret, __u64 ah_ptr)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct rs_ah_key k = { .pid = cur_pid(), .ah = ah_ptr };
	struct rs_ah a = {};
	__u64 *attr = bpf_map_lookup_elem(&args, &tid);

	AISCOPE_OWN_STACK(ctx);
	if (!attr)
		return 0;
	if (ah_ptr) {
		bpf_probe_read_user(a.dgid, sizeof(a.dgid), (void *)(*attr + RS_AH_DGID));
		bpf_probe_read_user(&a.dlid, 2, (void *)(*attr + RS_AH_DLID));
		bpf_probe_read_user(&a.is_global, 1, (void *)(*attr + RS_AH_IS_GLOBAL));
		bpf_probe_read_user(&a.port, 1, (void *)(*attr + RS_AH_PORT));
		bpf_map_update_elem(&ahs, &k, &a, BPF_ANY);
	}
	bpf_map_delete_elem(&args, &tid);
	return 0;
}

/* ibv_destroy_ah(ah): its address forgotten, so that the table holds the
 * live handles only (a process making and destroying one per peer would
 * otherwise push out the ones it still uses) */
SEC("uprobe")
int BPF_KPROBE(destroy_ah, __u64 ah)
{
	struct rs_ah_key k = { .pid = cur_pid(), .ah = ah };

	AISCOPE_OWN_STACK(ctx);
	bpf_map_delete_elem(&ahs, &k);
	return 0;
}

/* ---- memory registration ---- */

static __always_inline void mr_event(__u32 type, __u64 len)
{
	struct rs_event *e;

	if (!stream_events)
		return;
	e = event_new(type);
	if (!e)
		return;
	e->bytes = len;
	aiscope_submit(e);
}

/*
 * ibv_reg_mr, _iova, _iova2, ibv_reg_dmabuf_mr: the region they return.
 * ibv_reg_mr tail-calls ibv_reg_mr_iova2 in rdma-core, and both return
 * probes see the same region: it counts once (first insert wins).
 */
SEC("uretprobe")
int BPF_KRETPROBE(reg_mr_ret, __u64 mr)
{
	struct rs_mr_key k = { .pid = cur_pid(), .mr = mr };
	struct rs_proc *p;
	__u64 len;
	long err;

	AISCOPE_OWN_STACK(ctx);
	if (!mr || !pass())
		return 0;
	/* looked up first, not told by the insert's error alone: in the 5.10
	 * VM the second of the two chained return probes got an error other
	 * than -EEXIST from its insert (seen as a map-full loss and the region
	 * counted twice; why, not found out) */
	if (bpf_map_lookup_elem(&mrs, &k))
		return 0;
	len = rd64(mr + RS_MR_LENGTH);
	err = bpf_map_update_elem(&mrs, &k, &len, BPF_NOEXIST);
	if (err == -EEXIST)
		return 0;
	/* full: registered all the same, its deregistration will not be
	 * known (counted lost) */
	if (err)
		aiscope_count_lost(AISCOPE_LOST_MAP);
	p = proc_of();
	if (!p)
		return 0;
	__sync_fetch_and_add(&p->mr_regs, 1);
	__sync_fetch_and_add(&p->mr_reg_bytes, len);
	__sync_fetch_and_add(&p->mr_bytes, len);
	mr_event(RS_EV_REG_MR, len);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(dereg_mr, __u64 mr)
{
	struct rs_mr_key k = { .pid = cur_pid(), .mr = mr };
	struct rs_proc *p;
	__u64 *len, l;

	AISCOPE_OWN_STACK(ctx);
	len = bpf_map_lookup_elem(&mrs, &k);
	if (!len)
		return 0;
	l = *len;
	bpf_map_delete_elem(&mrs, &k);
	p = proc_of();
	if (!p)
		return 0;
	__sync_fetch_and_add(&p->mr_deregs, 1);
	__sync_fetch_and_add(&p->mr_bytes, -(__s64)l);
	mr_event(RS_EV_DEREG_MR, l);
	return 0;
}

/* ---- the data path: the provider's post_send, post_recv, poll_cq ---- */

static __always_inline __u32 send_op(__u32 opcode)
{
	switch (opcode) {
	case RS_WR_SEND:
	case RS_WR_SEND_IMM:
		return RS_OP_SEND;
	case RS_WR_RDMA_WRITE:
	case RS_WR_RDMA_WRITE_IMM:
		return RS_OP_WRITE;
	case RS_WR_RDMA_READ:
		return RS_OP_READ;
	case RS_WR_CMP_SWP:
	case RS_WR_FETCH_ADD:
		return RS_OP_ATOMIC;
	default:
		return RS_OP_OTHER;
	}
}

/* the bytes of a request's scatter/gather list (the first RS_MAX_SGES) */
static __always_inline __u64 sge_bytes(struct rs_qp *q, __u64 wr)
{
	__u64 sg = rd64(wr + RS_WR_SG_LIST), bytes = 0;
	__s32 n = rd32(wr + RS_WR_NUM_SGE);

	if (n > RS_MAX_SGES)
		__sync_fetch_and_add(&q->truncated, 1);
	for (int i = 0; i < RS_MAX_SGES; i++) {
		if (i >= n)
			break;
		bytes += rd32(sg + i * RS_SGE_SIZE + RS_SGE_LENGTH);
	}
	return bytes;
}

/* UD: each request names its peer */
static __always_inline void ud_peer(struct rs_qp *q, __u64 wr)
{
	struct rs_ah_key k = { .pid = cur_pid(), .ah = rd64(wr + RS_WR_UD_AH) };
	struct rs_ah *a = bpf_map_lookup_elem(&ahs, &k);

	q->dest_qpn = rd32(wr + RS_WR_UD_REMOTE_QPN);
	if (!a) {
		/* made before the probes, or forgotten by the full table:
		 * the QPN alone, never the last peer's address under it */
		q->has_peer = RS_PEER_QPN;
		__sync_fetch_and_add(&q->peer_unknown, 1);
		return;
	}
	q->has_peer = RS_PEER_ADDR;
	__builtin_memcpy(q->dgid, a->dgid, sizeof(q->dgid));
	q->dlid = a->dlid;
	q->is_global = a->is_global;
	if (!q->port)
		q->port = a->port;
}

static __always_inline struct rs_qp *qp_arg(__u64 qp, __u32 *qpn)
{
	struct rs_qp *q;

	*qpn = rd32(qp + RS_QP_NUM);
	q = qp_of(*qpn);
	if (q && !q->qp_type) {
		q->qp_type = rd32(qp + RS_QP_TYPE);
		dev_name(rd64(qp + RS_QP_CONTEXT), q->dev);
	}
	return q;
}

/* a signaled send: the next slot of its QP's ring; one that finds the
 * ring full overwrites the oldest, whose completion is then unmatched.
 * False when the table of rings is full (matched by wr_id then). */
static __always_inline bool sq_push(const struct rs_wr_key *wk, __u64 now)
{
	struct rs_qp_key k = { .pid = wk->pid, .qpn = wk->qpn };
	struct rs_sq *sq = aiscope_lookup_or_init(&sqs, &k, &sq_zero);
	struct rs_sq_slot *s;

	if (!sq)
		return false;
	s = &sq->slot[sq->posted & (RS_SQ_RING - 1)];
	s->wr_id = wk->wr_id;
	s->ts = now;
	sq->posted++;
	return true;
}

SEC("uprobe")
int BPF_KPROBE(post_send, __u64 qp, __u64 wr)
{
	struct rs_wr_key wk = { .pid = cur_pid() };
	__u64 now = aiscope_now(), bytes;
	struct rs_qp *q;
	__u32 op;

	AISCOPE_OWN_STACK(ctx);
	if (!qp || !pass())
		return 0;
	q = qp_arg(qp, &wk.qpn);
	if (!q)
		return 0;
	for (int i = 0; i < RS_MAX_WRS && wr; i++) {
		op = send_op(rd32(wr + RS_WR_OPCODE));
		bytes = sge_bytes(q, wr);
		__sync_fetch_and_add(&q->wrs[op], 1);
		__sync_fetch_and_add(&q->bytes[op], bytes);
		if (q->qp_type == RS_QPT_UD)
			ud_peer(q, wr);
		wk.wr_id = rd64(wr);
		if (!(rd32(wr + RS_WR_SEND_FLAGS) & RS_SEND_SIGNALED) || !sq_push(&wk, now))
			bpf_map_update_elem(&wrs, &wk, &now, BPF_ANY);
		wr = rd64(wr + RS_WR_NEXT);
	}
	if (wr)
		__sync_fetch_and_add(&q->truncated, 1);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(post_recv, __u64 qp, __u64 wr)
{
	struct rs_qp *q;
	__u32 qpn;

	AISCOPE_OWN_STACK(ctx);
	if (!qp || !pass())
		return 0;
	q = qp_arg(qp, &qpn);
	if (!q)
		return 0;
	for (int i = 0; i < RS_MAX_WRS && wr; i++) {
		__sync_fetch_and_add(&q->wrs[RS_OP_RECV], 1);
		__sync_fetch_and_add(&q->bytes[RS_OP_RECV], sge_bytes(q, wr));
		wr = rd64(wr + RS_WR_NEXT);
	}
	if (wr)
		__sync_fetch_and_add(&q->truncated, 1);
	return 0;
}

/* poll_cq(cq, num_entries, wc): the array is read at return */
SEC("uprobe")
int BPF_KPROBE(poll_cq, __u64 cq, __s32 n, __u64 wc)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	AISCOPE_OWN_STACK(ctx);
	if (!wc || n <= 0 || !pass())
		return 0;
	if (bpf_map_update_elem(&args, &tid, &wc, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
	return 0;
}

static __always_inline __u32 wc_op(__u32 opcode)
{
	if (opcode >= RS_WC_RECV)
		return RS_OP_RECV;
	/* enum ibv_wc_opcode: send, RDMA write, RDMA read, CAS, FAA, ... */
	switch (opcode) {
	case 0: return RS_OP_SEND;
	case 1: return RS_OP_WRITE;
	case 2: return RS_OP_READ;
	case 3:
	case 4: return RS_OP_ATOMIC;
	default: return RS_OP_OTHER;
	}
}

/* The post time of the signaled send a completion of wr_id ends (0:
 * none): the oldest in flight on its QP with that wr_id (those before it
 * completed unseen: past the completions read per poll call, any number
 * of calls in a row; a program that reuses fewer ids than that in a row
 * may have one timed from a later post of its id). One whose slot a
 * later post took (lapped: over RS_SQ_RING in flight) is consumed
 * untimed, *lapped set. */
static __always_inline __u64 sq_match(struct rs_sq *sq, __u64 wr_id, bool *lapped)
{
	struct rs_sq_slot *s;
	__u64 n;

	if (sq->posted - sq->done > RS_SQ_RING) {
		sq->done++;
		*lapped = true;
		return 0;
	}
	for (int i = 0; i < RS_SQ_RING; i++) {
		n = sq->done + i;
		if (n >= sq->posted)
			break;
		s = &sq->slot[n & (RS_SQ_RING - 1)];
		if (s->wr_id != wr_id)
			continue;
		sq->done = n + 1;
		return s->ts;
	}
	return 0;
}

/* The post time of a send completion (0: none): its QP's signaled post
 * (sq_match), else a send not marked signaled (sq_sig_all) by its wr_id.
 * A completion of a post made before the probes finds neither. */
static __always_inline __u64 send_posted(__u32 qpn, __u64 wr_id)
{
	struct rs_qp_key qk = { .pid = cur_pid(), .qpn = qpn };
	struct rs_wr_key k = { .pid = qk.pid, .qpn = qpn, .wr_id = wr_id };
	struct rs_sq *sq = bpf_map_lookup_elem(&sqs, &qk);
	bool lapped = false;
	__u64 *t, ts;

	if (sq) {
		ts = sq_match(sq, wr_id, &lapped);
		if (ts || lapped)
			return ts;
	}
	t = bpf_map_lookup_elem(&wrs, &k);
	if (!t)
		return 0;
	ts = *t;
	bpf_map_delete_elem(&wrs, &k);
	return ts;
}

static __always_inline void send_latency(struct rs_qp *q, __u32 qpn, __u64 wr_id, __u64 now)
{
	__u64 t = send_posted(qpn, wr_id), d, b;

	/* posted before the probes, past RS_SQ_RING signaled sends in
	 * flight, or evicted from the LRU table of unmarked posts:
	 * counted, never silent */
	if (!t) {
		__sync_fetch_and_add(&q->lat_unmatched, 1);
		return;
	}
	d = now > t ? now - t : 0;
	b = hist_bucket(d);
	/* one register for the bound check and the index: the verifier
	 * loses the bound of a 32-bit copy */
	asm volatile("" : "+r"(b));
	if (b < HIST_BUCKETS)
		__sync_fetch_and_add(&q->lat[b], 1);
	__sync_fetch_and_add(&q->lat_count, 1);
	__sync_fetch_and_add(&q->lat_sum, d);
	if (d > q->lat_max)
		q->lat_max = d;
}

static __always_inline void cq_error(__u32 qpn, __u32 status, __u64 wr_id)
{
	struct rs_event *e;

	if (!stream_events)
		return;
	e = event_new(RS_EV_CQ_ERROR);
	if (!e)
		return;
	e->qpn = qpn;
	e->status = status;
	e->bytes = wr_id;
	aiscope_submit(e);
}

static __always_inline void one_wc(__u64 wc, __u64 now)
{
	__u32 status = rd32(wc + RS_WC_STATUS), qpn = rd32(wc + RS_WC_QP_NUM), op;
	struct rs_qp *q = qp_of(qpn);

	if (!q)
		return;
	if (status) {
		__sync_fetch_and_add(&q->errors[status < RS_NSTATUS ? status : RS_NSTATUS - 1], 1);
		/* (its ring stays: a QP in error is flushed, reset and taken
		 * to INIT again before its next send) */
		cq_error(qpn, status, rd64(wc));
		return;
	}
	op = wc_op(rd32(wc + RS_WC_OPCODE));
	__sync_fetch_and_add(&q->cqes[op], 1);
	__sync_fetch_and_add(&q->cqe_bytes[op], rd32(wc + RS_WC_BYTE_LEN));
	if (op != RS_OP_RECV)
		send_latency(q, qpn, rd64(wc), now);
}

SEC("uretprobe")
int BPF_KRETPROBE(poll_cq_ret, __s32 rc)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *wcp = bpf_map_lookup_elem(&args, &tid), wc, now = aiscope_now();

	AISCOPE_OWN_STACK(ctx);
	if (!wcp)
		return 0;
	wc = *wcp;
	bpf_map_delete_elem(&args, &tid);
	for (int i = 0; i < RS_MAX_WCS; i++) {
		if (i >= rc)
			break;
		one_wc(wc + i * RS_WC_SIZE, now);
	}
	if (rc > RS_MAX_WCS)
		__sync_fetch_and_add(&wcs_unread, rc - RS_MAX_WCS);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
