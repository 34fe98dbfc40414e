// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * rsverbs: the verbs requests Debian's programs (ibverbs-utils, perftest)
 * do not make, for tests/vm/rdmasnoop.sh: two RC queue pairs of this one
 * process on one device (A and B, connected to each other), and
 *   1. N sends with immediate data from A to B's receives, posted in
 *      chains of 8 (both sides);
 *   2. N RDMA writes with immediate data from A into B's memory, each
 *      consuming one of B's receives;
 *   3. one chain of 20 sends and one of 20 receives (past the 16 requests
 *      per call that rdmasnoop reads);
 *   4. N sends polled 18 completions at a time (past the 16 per call
 *      rdmasnoop reads);
 *   5. K RDMA writes with a wrong rkey: the first completes with a remote
 *      access error, the QP goes to the error state and the rest are
 *      flushed (where none completes within 3 s, the QP is moved to the
 *      error state, which flushes them all).
 * Every request is signaled. It prints what it posted and what it polled,
 * counted by itself, per QP and in rdmasnoop's names:
 *   tally QPN KEY VALUE
 * (KEY: send_wrs, send_bytes, write_wrs, write_bytes, recv_wrs,
 * recv_posted_bytes, send_completions, write_completions,
 * recv_completions, recv_bytes, the status names of ibv_wc_status in
 * lower case without IBV_WC_, past16_wrs and past16_calls: the requests
 * after the 16th of a call, and such calls; past16_send_completions,
 * past16_recv_completions and past16_recv_bytes: the completions after
 * the 16th of a poll call). Exit 0 when every phase
 * completed as the verbs say it must, else 1 with one line on stderr.
 *
 * Usage: rsverbs -d DEVICE -g GID_INDEX [-n N] [-s SIZE] [-k K]
 */
#include <arpa/inet.h>
#include <getopt.h>
#include <infiniband/verbs.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHAIN		8	/* requests per post call in phase 1 */
#define LONG_CHAIN	20	/* phase 3: past rdmasnoop's 16 per call */
#define READ_BOUND	16	/* requests and completions rdmasnoop reads per call */
#define POLL_MAX	18	/* phase 5: 2 completions past them per poll call */

enum { K_SEND_WRS, K_SEND_BYTES, K_WRITE_WRS, K_WRITE_BYTES, K_RECV_WRS, K_RECV_POSTED,
       K_SEND_CQES, K_WRITE_CQES, K_RECV_CQES, K_RECV_BYTES, K_PAST16_WRS, K_PAST16_CALLS,
       K_PAST16_SEND_CQES, K_PAST16_RECV_CQES, K_PAST16_RECV_BYTES, K_NKEYS };

static const char *const key_names[K_NKEYS] = {
	"send_wrs", "send_bytes", "write_wrs", "write_bytes", "recv_wrs", "recv_posted_bytes",
	"send_completions", "write_completions", "recv_completions", "recv_bytes",
	"past16_wrs", "past16_calls", "past16_send_completions", "past16_recv_completions",
	"past16_recv_bytes",
};

/* the statuses this program can meet, named from verbs.h's constants */
#define ST(x) { IBV_WC_##x, #x }
static const struct {
	enum ibv_wc_status st;
	const char *name;
} statuses[] = {
	ST(WR_FLUSH_ERR), ST(REM_ACCESS_ERR), ST(REM_INV_REQ_ERR), ST(REM_OP_ERR),
	ST(RETRY_EXC_ERR), ST(RNR_RETRY_EXC_ERR), ST(LOC_PROT_ERR), ST(LOC_LEN_ERR),
	ST(LOC_QP_OP_ERR), ST(LOC_ACCESS_ERR), ST(BAD_RESP_ERR), ST(GENERAL_ERR),
};
#define NSTATUS (sizeof(statuses) / sizeof(statuses[0]))

struct side {
	struct ibv_qp *qp;
	uint64_t k[K_NKEYS];
	uint64_t st[NSTATUS];
	uint64_t other_status;
};

static struct {
	const char *dev;
	int gid_index;
	int n, size, k;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf;		/* [0, size): A's source; [size, 2 size): B's target */
	union ibv_gid gid;
	enum ibv_mtu mtu;
	struct side a, b;
} R = { .gid_index = -1, .n = 64, .size = 4096, .k = 5 };

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("rsverbs: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void open_device(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr port;

	for (int i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), R.dev))
			R.ctx = ibv_open_device(list[i]);
	if (list)
		ibv_free_device_list(list);
	if (!R.ctx)
		die("cannot open %s", R.dev);
	if (ibv_query_port(R.ctx, 1, &port))
		die("cannot query %s's port 1", R.dev);
	R.mtu = port.active_mtu;
	if (ibv_query_gid(R.ctx, 1, R.gid_index, &R.gid))
		die("cannot read GID %d of %s", R.gid_index, R.dev);
	R.pd = ibv_alloc_pd(R.ctx);
	R.cq = ibv_create_cq(R.ctx, 6 * R.n + 2 * LONG_CHAIN + R.k + 16, NULL, NULL, 0);
	R.buf = calloc(2, R.size);
	if (!R.pd || !R.cq || !R.buf)
		die("cannot make a protection domain, a completion queue or a buffer");
	R.mr = ibv_reg_mr(R.pd, R.buf, 2 * R.size, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!R.mr)
		die("cannot register %d bytes", 2 * R.size);
}

static struct ibv_qp *make_qp(void)
{
	struct ibv_qp_init_attr a = {
		.send_cq = R.cq, .recv_cq = R.cq, .qp_type = IBV_QPT_RC, .sq_sig_all = 0,
		.cap = { .max_send_wr = 3 * R.n + LONG_CHAIN + R.k, .max_recv_wr = 3 * R.n + LONG_CHAIN,
			 .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp *qp = ibv_create_qp(R.pd, &a);

	if (!qp)
		die("cannot create an RC queue pair on %s", R.dev);
	return qp;
}

/* INIT, RTR (to peer), RTS: the path of ibv_rc_pingpong */
static void connect_qp(struct ibv_qp *qp, uint32_t peer)
{
	struct ibv_qp_attr init = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	struct ibv_qp_attr rtr = {
		.qp_state = IBV_QPS_RTR, .path_mtu = R.mtu, .dest_qp_num = peer, .rq_psn = 0,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .dgid = R.gid, .sgid_index = R.gid_index, .hop_limit = 1 } },
	};
	struct ibv_qp_attr rts = {
		.qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7, .rnr_retry = 7,
		.sq_psn = 0, .max_rd_atomic = 1,
	};

	if (ibv_modify_qp(qp, &init, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("cannot take QP %u to INIT", qp->qp_num);
	if (ibv_modify_qp(qp, &rtr, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("cannot take QP %u to RTR", qp->qp_num);
	if (ibv_modify_qp(qp, &rts, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("cannot take QP %u to RTS", qp->qp_num);
}

/* a post call's requests past the 16 that rdmasnoop reads */
static void count_call(struct side *s, int nwr)
{
	if (nwr <= READ_BOUND)
		return;
	s->k[K_PAST16_CALLS]++;
	s->k[K_PAST16_WRS] += nwr - READ_BOUND;
}

/* n receives of size bytes into B's half, in chains of chain */
static void post_recvs(struct side *s, int n, int chain)
{
	struct ibv_sge sge[LONG_CHAIN];
	struct ibv_recv_wr wr[LONG_CHAIN], *bad;

	for (int done = 0; done < n; ) {
		int m = n - done < chain ? n - done : chain;

		for (int i = 0; i < m; i++) {
			sge[i] = (struct ibv_sge){ (uintptr_t)R.buf + R.size, R.size, R.mr->lkey };
			wr[i] = (struct ibv_recv_wr){ .wr_id = 1000 + done + i, .sg_list = &sge[i],
						      .num_sge = 1, .next = i + 1 < m ? &wr[i + 1] : NULL };
		}
		if (ibv_post_recv(s->qp, wr, &bad))
			die("ibv_post_recv failed on QP %u", s->qp->qp_num);
		count_call(s, m);
		s->k[K_RECV_WRS] += m;
		s->k[K_RECV_POSTED] += (uint64_t)m * R.size;
		done += m;
	}
}

/* n signaled requests of opcode, in chains of chain; rkey for writes */
static void post_sends(struct side *s, enum ibv_wr_opcode op, int n, int chain, uint32_t rkey)
{
	struct ibv_sge sge[LONG_CHAIN];
	struct ibv_send_wr wr[LONG_CHAIN], *bad;
	bool write = op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;

	for (int done = 0; done < n; ) {
		int m = n - done < chain ? n - done : chain;

		for (int i = 0; i < m; i++) {
			sge[i] = (struct ibv_sge){ (uintptr_t)R.buf, R.size, R.mr->lkey };
			wr[i] = (struct ibv_send_wr){
				.wr_id = done + i, .sg_list = &sge[i], .num_sge = 1, .opcode = op,
				.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(done + i),
				.next = i + 1 < m ? &wr[i + 1] : NULL,
			};
			wr[i].wr.rdma.remote_addr = (uintptr_t)R.buf + R.size;
			wr[i].wr.rdma.rkey = rkey;
		}
		if (ibv_post_send(s->qp, wr, &bad))
			die("ibv_post_send failed on QP %u", s->qp->qp_num);
		count_call(s, m);
		s->k[write ? K_WRITE_WRS : K_SEND_WRS] += m;
		s->k[write ? K_WRITE_BYTES : K_SEND_BYTES] += (uint64_t)m * R.size;
		done += m;
	}
}

static struct side *side_of(uint32_t qpn)
{
	return qpn == R.a.qp->qp_num ? &R.a : qpn == R.b.qp->qp_num ? &R.b : NULL;
}

/* wc, the i-th of its poll call's: past the 16th, rdmasnoop does not
 * read it (counted apart too) */
static void tally_wc(const struct ibv_wc *wc, int i)
{
	struct side *s = side_of(wc->qp_num);

	if (!s)
		die("a completion of QP %u, not ours", wc->qp_num);
	if (wc->status != IBV_WC_SUCCESS) {
		for (size_t i = 0; i < NSTATUS; i++)
			if (statuses[i].st == wc->status) {
				s->st[i]++;
				return;
			}
		s->other_status++;
		return;
	}
	if (wc->opcode & IBV_WC_RECV) {
		s->k[K_RECV_CQES]++;
		s->k[K_RECV_BYTES] += wc->byte_len;
		if (i >= READ_BOUND) {
			s->k[K_PAST16_RECV_CQES]++;
			s->k[K_PAST16_RECV_BYTES] += wc->byte_len;
		}
	} else if (wc->opcode == IBV_WC_RDMA_WRITE) {
		s->k[K_WRITE_CQES]++;
	} else {
		s->k[K_SEND_CQES]++;
		s->k[K_PAST16_SEND_CQES] += i >= READ_BOUND;
	}
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* poll (batch at a time) until want completions came or secs passed;
 * how many are still missing */
static int poll_for(int want, int batch, double secs, const char *phase)
{
	struct ibv_wc wc[POLL_MAX];
	double end = now_s() + secs;

	while (want > 0 && now_s() < end) {
		int got = ibv_poll_cq(R.cq, batch < want ? batch : want, wc);

		if (got < 0)
			die("ibv_poll_cq failed (%s)", phase);
		for (int i = 0; i < got; i++)
			tally_wc(&wc[i], i);
		want -= got;
	}
	return want;
}

/* the same, every one of them within 10 s */
static void poll_n(int want, int batch, const char *phase)
{
	int missing = poll_for(want, batch, 10, phase);

	if (missing)
		die("%s: %d completions missing after 10 s", phase, missing);
}

static void print_side(const struct side *s)
{
	for (int i = 0; i < K_NKEYS; i++)
		printf("tally %u %s %llu\n", s->qp->qp_num, key_names[i], (unsigned long long)s->k[i]);
	for (size_t i = 0; i < NSTATUS; i++) {
		char name[32];

		for (size_t j = 0; j < sizeof(name); j++) {
			char c = statuses[i].name[j];

			name[j] = c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
			if (!c)
				break;
		}
		name[sizeof(name) - 1] = 0;
		printf("tally %u %s %llu\n", s->qp->qp_num, name, (unsigned long long)s->st[i]);
	}
	printf("tally %u other_status %llu\n", s->qp->qp_num, (unsigned long long)s->other_status);
}

static void parse(int argc, char **argv)
{
	int c;

	while ((c = getopt(argc, argv, "d:g:n:s:k:")) != -1) {
		switch (c) {
		case 'd': R.dev = optarg; break;
		case 'g': R.gid_index = atoi(optarg); break;
		case 'n': R.n = atoi(optarg); break;
		case 's': R.size = atoi(optarg); break;
		case 'k': R.k = atoi(optarg); break;
		default: exit(2);
		}
	}
	if (!R.dev || R.gid_index < 0 || R.n <= 0 || R.n % CHAIN || R.size <= 0 || R.k < 2) {
		fprintf(stderr, "usage: rsverbs -d DEVICE -g GID_INDEX [-n N (a multiple of %d)] [-s SIZE] [-k K (2 or more)]\n",
			CHAIN);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	parse(argc, argv);
	open_device();
	R.a.qp = make_qp();
	R.b.qp = make_qp();
	connect_qp(R.a.qp, R.b.qp->qp_num);
	connect_qp(R.b.qp, R.a.qp->qp_num);
	printf("qps %u %u\n", R.a.qp->qp_num, R.b.qp->qp_num);

	post_recvs(&R.b, R.n, CHAIN);
	post_sends(&R.a, IBV_WR_SEND_WITH_IMM, R.n, CHAIN, 0);
	poll_n(2 * R.n, 8, "sends with immediate");

	post_recvs(&R.b, R.n, 1);
	post_sends(&R.a, IBV_WR_RDMA_WRITE_WITH_IMM, R.n, 1, R.mr->rkey);
	poll_n(2 * R.n, 8, "RDMA writes with immediate");

	post_recvs(&R.b, LONG_CHAIN, LONG_CHAIN);
	post_sends(&R.a, IBV_WR_SEND, LONG_CHAIN, LONG_CHAIN, 0);
	poll_n(2 * LONG_CHAIN, 8, "a chain of 20");

	/* sends polled 18 at a time: up to 2 of each call's completions
	 * unseen by rdmasnoop, the next seen ones timed all the same */
	post_recvs(&R.b, R.n, CHAIN);
	post_sends(&R.a, IBV_WR_SEND, R.n, CHAIN, 0);
	usleep(1000000);	/* (their completions queued: full batches) */
	poll_n(2 * R.n, POLL_MAX, "sends polled 18 at a time");

	/* a key that is not the region's: the key's low byte changed. The
	 * responder refuses the first (rem_access_err) and the rest are
	 * flushed; a responder that never answers (rxe of 5.10) leaves
	 * them in flight until A is moved to the error state, which
	 * flushes them all */
	post_sends(&R.a, IBV_WR_RDMA_WRITE, R.k, 1, R.mr->rkey ^ 0x5a);
	int left = poll_for(R.k, 8, 3, "RDMA writes with a wrong key");
	printf("wrong key: %d of %d completed within 3 s\n", R.k - left, R.k);
	if (left) {
		struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };

		if (ibv_modify_qp(R.a.qp, &err, IBV_QP_STATE))
			die("cannot move QP %u to the error state", R.a.qp->qp_num);
		poll_n(left, 8, "RDMA writes with a wrong key, flushed");
	}

	print_side(&R.a);
	print_side(&R.b);
	fflush(stdout);
	ibv_destroy_qp(R.a.qp);
	ibv_destroy_qp(R.b.qp);
	ibv_dereg_mr(R.mr);
	ibv_destroy_cq(R.cq);
	ibv_dealloc_pd(R.pd);
	ibv_close_device(R.ctx);
	return 0;
}
