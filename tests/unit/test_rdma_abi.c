// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * include/rdmasnoop.h writes the offsets of the verbs structures that
 * rdmasnoop's BPF side reads from user memory, so that building needs no
 * rdma-core headers. Here every one is checked against rdma-core's own
 * <infiniband/verbs.h> (libibverbs-dev), where it is installed.
 */
#include <stddef.h>
#include "t.h"
#include "rdmasnoop.h"

#if defined(__has_include) && __has_include(<infiniband/verbs.h>)
#include <infiniband/verbs.h>
#define HAVE_VERBS 1
#define OFF(type, field) offsetof(struct type, field)
#endif

static void test_context_and_device(void)
{
#ifdef HAVE_VERBS
	CHECK_EQ(RS_CTX_DEVICE, OFF(ibv_context, device));
	CHECK_EQ(RS_CTX_POLL_CQ, OFF(ibv_context, ops) + OFF(ibv_context_ops, poll_cq));
	CHECK_EQ(RS_CTX_POST_SRQ_RECV, OFF(ibv_context, ops) + OFF(ibv_context_ops, post_srq_recv));
	CHECK_EQ(RS_CTX_POST_SEND, OFF(ibv_context, ops) + OFF(ibv_context_ops, post_send));
	CHECK_EQ(RS_CTX_POST_RECV, OFF(ibv_context, ops) + OFF(ibv_context_ops, post_recv));
	CHECK_EQ(RS_DEV_NAME, OFF(ibv_device, name));
	CHECK_EQ(RS_MR_LENGTH, OFF(ibv_mr, length));
#else
	SKIP("no <infiniband/verbs.h> (libibverbs-dev)");
#endif
}

static void test_qp_and_attr(void)
{
#ifdef HAVE_VERBS
	CHECK_EQ(RS_QP_CONTEXT, OFF(ibv_qp, context));
	CHECK_EQ(RS_QP_NUM, OFF(ibv_qp, qp_num));
	CHECK_EQ(RS_QP_TYPE, OFF(ibv_qp, qp_type));
	CHECK_EQ(RS_ATTR_QP_STATE, OFF(ibv_qp_attr, qp_state));
	CHECK_EQ(RS_ATTR_DEST_QPN, OFF(ibv_qp_attr, dest_qp_num));
	CHECK_EQ(RS_ATTR_AH, OFF(ibv_qp_attr, ah_attr));
	CHECK_EQ(RS_ATTR_PORT, OFF(ibv_qp_attr, port_num));
	CHECK_EQ(RS_AH_DGID, OFF(ibv_ah_attr, grh) + OFF(ibv_global_route, dgid));
	CHECK_EQ(RS_AH_DLID, OFF(ibv_ah_attr, dlid));
	CHECK_EQ(RS_AH_IS_GLOBAL, OFF(ibv_ah_attr, is_global));
	CHECK_EQ(RS_AH_PORT, OFF(ibv_ah_attr, port_num));
	CHECK_EQ(RS_MASK_STATE, IBV_QP_STATE);
	CHECK_EQ(RS_MASK_AV, IBV_QP_AV);
	CHECK_EQ(RS_MASK_PORT, IBV_QP_PORT);
	CHECK_EQ(RS_MASK_DEST_QPN, IBV_QP_DEST_QPN);
	CHECK_EQ(RS_QPS_RTR, IBV_QPS_RTR);
	CHECK_EQ(RS_QPT_RC, IBV_QPT_RC);
	CHECK_EQ(RS_QPT_UC, IBV_QPT_UC);
	CHECK_EQ(RS_QPT_UD, IBV_QPT_UD);
#else
	SKIP("no <infiniband/verbs.h> (libibverbs-dev)");
#endif
}

static void test_work_requests_and_completions(void)
{
#ifdef HAVE_VERBS
	CHECK_EQ(RS_WR_NEXT, OFF(ibv_send_wr, next));
	CHECK_EQ(RS_WR_SG_LIST, OFF(ibv_send_wr, sg_list));
	CHECK_EQ(RS_WR_NUM_SGE, OFF(ibv_send_wr, num_sge));
	CHECK_EQ(RS_WR_OPCODE, OFF(ibv_send_wr, opcode));
	CHECK_EQ(RS_WR_SEND_FLAGS, OFF(ibv_send_wr, send_flags));
	CHECK_EQ(RS_SEND_SIGNALED, IBV_SEND_SIGNALED);
	CHECK_EQ(RS_WR_UD_AH, OFF(ibv_send_wr, wr.ud.ah));
	CHECK_EQ(RS_WR_UD_REMOTE_QPN, OFF(ibv_send_wr, wr.ud.remote_qpn));
	/* a receive request starts as a send request does */
	CHECK_EQ(RS_WR_NEXT, OFF(ibv_recv_wr, next));
	CHECK_EQ(RS_WR_SG_LIST, OFF(ibv_recv_wr, sg_list));
	CHECK_EQ(RS_WR_NUM_SGE, OFF(ibv_recv_wr, num_sge));
	CHECK_EQ(RS_SGE_SIZE, sizeof(struct ibv_sge));
	CHECK_EQ(RS_SGE_LENGTH, OFF(ibv_sge, length));
	CHECK_EQ(RS_WC_SIZE, sizeof(struct ibv_wc));
	CHECK_EQ(RS_WC_STATUS, OFF(ibv_wc, status));
	CHECK_EQ(RS_WC_OPCODE, OFF(ibv_wc, opcode));
	CHECK_EQ(RS_WC_BYTE_LEN, OFF(ibv_wc, byte_len));
	CHECK_EQ(RS_WC_QP_NUM, OFF(ibv_wc, qp_num));
	CHECK_EQ(RS_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE);
	CHECK_EQ(RS_WR_RDMA_WRITE_IMM, IBV_WR_RDMA_WRITE_WITH_IMM);
	CHECK_EQ(RS_WR_SEND, IBV_WR_SEND);
	CHECK_EQ(RS_WR_SEND_IMM, IBV_WR_SEND_WITH_IMM);
	CHECK_EQ(RS_WR_RDMA_READ, IBV_WR_RDMA_READ);
	CHECK_EQ(RS_WR_CMP_SWP, IBV_WR_ATOMIC_CMP_AND_SWP);
	CHECK_EQ(RS_WR_FETCH_ADD, IBV_WR_ATOMIC_FETCH_AND_ADD);
	CHECK_EQ(RS_WC_RECV, IBV_WC_RECV);
	CHECK_EQ(0, IBV_WC_SEND);
	CHECK_EQ(1, IBV_WC_RDMA_WRITE);
	CHECK_EQ(2, IBV_WC_RDMA_READ);
	CHECK_EQ(3, IBV_WC_COMP_SWAP);
	CHECK_EQ(4, IBV_WC_FETCH_ADD);
	/* the status names rdmasnoop prints run to the last status it knows */
	CHECK_EQ(RS_NSTATUS - 2, IBV_WC_TM_RNDV_INCOMPLETE);
#else
	SKIP("no <infiniband/verbs.h> (libibverbs-dev)");
#endif
}

int main(void)
{
	RUN(test_context_and_device);
	RUN(test_qp_and_attr);
	RUN(test_work_requests_and_completions);
	return t_done();
}
