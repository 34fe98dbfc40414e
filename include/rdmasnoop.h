/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * rdmasnoop: types shared by bpf/rdmasnoop.bpf.c and tools/rdmasnoop.c.
 *
 * The verbs structures read from user memory are rdma-core's public ABI
 * (infiniband/verbs.h, unchanged since libibverbs 1.1): their offsets are
 * written here so that the build needs no rdma-core headers, and
 * tests/unit/test_rdma_abi.c checks every one against the real header
 * where libibverbs-dev is installed.
 */
#ifndef AISCOPE_RDMASNOOP_H
#define AISCOPE_RDMASNOOP_H

#include "aiscope_common.h"
#include "aiscope_hist.h"

/* struct ibv_context / ibv_context_ops / ibv_device */
#define RS_CTX_DEVICE		0
#define RS_CTX_POLL_CQ		(8 + 88)
#define RS_CTX_POST_SRQ_RECV	(8 + 160)
#define RS_CTX_POST_SEND	(8 + 200)
#define RS_CTX_POST_RECV	(8 + 208)
#define RS_DEV_NAME		24
/* struct ibv_qp */
#define RS_QP_CONTEXT		0
#define RS_QP_NUM		52
#define RS_QP_TYPE		60
/* struct ibv_qp_attr and its struct ibv_ah_attr */
#define RS_ATTR_QP_STATE	0
#define RS_ATTR_DEST_QPN	28
#define RS_ATTR_AH		56
#define RS_ATTR_PORT		129
#define RS_AH_DGID		0
#define RS_AH_SGID_INDEX	20
#define RS_AH_DLID		24
#define RS_AH_IS_GLOBAL		29
#define RS_AH_PORT		30
/* struct ibv_send_wr, ibv_recv_wr, ibv_sge */
#define RS_WR_NEXT		8
#define RS_WR_SG_LIST		16
#define RS_WR_NUM_SGE		24
#define RS_WR_OPCODE		28
#define RS_WR_SEND_FLAGS	32
#define RS_WR_UD_AH		40
#define RS_WR_UD_REMOTE_QPN	48
#define RS_SGE_SIZE		16
#define RS_SGE_LENGTH		8
/* struct ibv_wc */
#define RS_WC_SIZE		48
#define RS_WC_STATUS		8
#define RS_WC_OPCODE		12
#define RS_WC_BYTE_LEN		20
#define RS_WC_QP_NUM		28
/* struct ibv_mr */
#define RS_MR_LENGTH		24

/* enum ibv_qp_attr_mask bits, ibv_qp_state, ibv_qp_type */
#define RS_MASK_STATE		1
#define RS_MASK_AV		128
#define RS_MASK_PORT		32
#define RS_MASK_DEST_QPN	(1 << 20)
#define RS_QPS_RTR		2
#define RS_QPT_RC		2
#define RS_QPT_UC		3
#define RS_QPT_UD		4

/* enum ibv_wr_opcode */
#define RS_WR_RDMA_WRITE	0
#define RS_WR_RDMA_WRITE_IMM	1
#define RS_WR_SEND		2
#define RS_WR_SEND_IMM		3
#define RS_WR_RDMA_READ		4
#define RS_WR_CMP_SWP		5
#define RS_WR_FETCH_ADD		6
/* enum ibv_send_flags */
#define RS_SEND_SIGNALED	2
/* enum ibv_wc_opcode */
#define RS_WC_RECV		128

/* what the tool counts work requests and completions by */
enum rs_op {
	RS_OP_SEND,		/* send, send with immediate */
	RS_OP_WRITE,		/* RDMA write, with immediate */
	RS_OP_READ,
	RS_OP_ATOMIC,		/* compare-and-swap, fetch-and-add */
	RS_OP_OTHER,		/* bind/local invalidate/TSO/... */
	RS_OP_RECV,		/* receives (posted, or completed) */
	RS_NOPS,
};

#define RS_NSTATUS	25	/* enum ibv_wc_status 0..23; 24: any later one */
#define RS_DEV_LEN	32	/* a device name's first bytes (IB names are short) */
#define RS_MAX_WRS	16	/* work requests read per post call; the rest counted */
#define RS_MAX_SGES	4	/* scatter/gather entries read per request */
#define RS_MAX_WCS	16	/* completions read per poll call */

/* The signaled sends of a QP in flight, in the order they were posted:
 * a send queue completes them in that order, so the n-th send completion
 * is the n-th signaled post whatever their wr_ids (perftest posts every
 * request with one) */
#define RS_SQ_RING	64	/* signaled posts in flight timed per QP */
struct rs_sq_slot {
	__u64 wr_id;
	__u64 ts;
};

struct rs_sq {
	__u64 posted;			/* signaled posts */
	__u64 done;			/* send completions matched to them */
	struct rs_sq_slot slot[RS_SQ_RING];
};

struct rs_qp_key {
	__u32 pid;
	__u32 qpn;
};

/* a queue pair of a process, cumulative since it was first seen */
struct rs_qp {
	struct aiscope_ident ident;	/* the last thread that touched it */
	__u32 qp_type;			/* 0: not seen yet (a QP made before start) */
	__u32 port;			/* 0: unknown */
	__u32 dest_qpn;			/* RC/UC: from ibv_modify_qp; UD: the last send's */
	__u16 dlid;
	__u8 has_peer;			/* RS_PEER_* */
	__u8 is_global;
	__u8 has_sgid;			/* its address vector seen: sgid_index (RC, UC) */
	__u8 sgid_index;		/* its own GID's index in its port's table */
	__u8 dgid[16];
	char dev[RS_DEV_LEN];
	__u64 wrs[RS_NOPS];		/* work requests posted */
	__u64 bytes[RS_NOPS];		/* their scatter/gather bytes */
	__u64 cqes[RS_NOPS];		/* successful completions */
	__u64 cqe_bytes[RS_NOPS];	/* byte_len of successful completions */
	__u64 errors[RS_NSTATUS];	/* completions by status (0 unused) */
	__u64 truncated;		/* requests or sges past the read bounds */
	__u64 lat_count, lat_sum, lat_max;
	__u64 lat_unmatched;		/* send completions whose post was not seen (before
					 * attach, or forgotten by the full table of posts) */
	__u64 lat[HIST_BUCKETS];	/* send post -> completion, ns */
	__u64 peer_unknown;		/* UD sends whose address handle was not seen (made
					 * before attach, or forgotten by the full table) */
};

/* what a QP knows of its peer */
enum {
	RS_PEER_NONE,
	RS_PEER_ADDR,			/* its GID or LID, and QPN */
	RS_PEER_QPN,			/* a UD send's QPN only: its address handle unseen */
};

/* a process: memory registered, devices opened */
struct rs_proc {
	struct aiscope_ident ident;
	__u64 mr_regs, mr_deregs;	/* calls that returned a region, and freed ones */
	__u64 mr_reg_bytes;		/* bytes registered, in total */
	__s64 mr_bytes;			/* registered now (those seen registered) */
	__u64 opens;			/* ibv_open_device calls that returned a context */
};

struct rs_mr_key {
	__u32 pid;
	__u32 pad;
	__u64 mr;
};

struct rs_wr_key {
	__u32 pid;
	__u32 qpn;
	__u64 wr_id;
};

struct rs_ah_key {
	__u32 pid;
	__u32 pad;
	__u64 ah;
};

struct rs_ah {
	__u8 dgid[16];
	__u16 dlid;
	__u8 is_global;
	__u8 port;
};

enum rs_ev_type {
	RS_EV_OPEN = 1,		/* a device opened: its provider's entry points */
	RS_EV_CONNECT,		/* a QP given its peer (ibv_modify_qp) */
	RS_EV_REG_MR,
	RS_EV_DEREG_MR,
	RS_EV_CQ_ERROR,		/* a completion with an error status */
};

struct rs_event {
	__u32 type;
	__u32 qpn;		/* CONNECT, CQ_ERROR */
	__u64 ts;		/* boot-time ns */
	struct aiscope_ident ident;
	char dev[RS_DEV_LEN];	/* OPEN, CONNECT */
	/* OPEN: the provider's post_send, post_recv, poll_cq, post_srq_recv */
	__u64 fn[4];
	__u64 bytes;		/* REG_MR/DEREG_MR: length; CQ_ERROR: the wr_id */
	__u32 status;		/* CQ_ERROR: ibv_wc_status; CONNECT: qp state */
	__u32 dest_qpn;		/* CONNECT */
	__u32 qp_type, port;	/* CONNECT */
	__u16 dlid;
	__u8 is_global;
	__u8 pad;
	__u8 dgid[16];
	__u64 held_ns;		/* OPEN with --hold: when the opener was stopped (0: not) */
};

/* the provider entry points, in rs_event.fn order */
enum rs_fn { RS_FN_POST_SEND, RS_FN_POST_RECV, RS_FN_POLL_CQ, RS_FN_POST_SRQ_RECV, RS_NFN };

#endif
