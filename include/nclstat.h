/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * nclstat: types both sides see, and the NCCL ABI facts it decodes with
 * (nccl.h 2.28; tests/fixtures/nccl_abi_check.c checks them against the
 * real header where it is present).
 */
#ifndef NCLSTAT_H
#define NCLSTAT_H

#include "aiscope_common.h"
#include "aiscope_hist.h"

#define NCL_UNIQUE_ID_BYTES	128
#define NCL_NUM_TYPES		12
#define NCL_NUM_OPS		5	/* built-in ncclRedOp_t; larger: per-comm dynamic ops */
#define NCL_IN_PROGRESS		7	/* non-blocking communicators: pending, not an error */
#define NCL_INVALID_ARGUMENT	4
#define NCL_SIZE_SLOTS		8	/* distinct message sizes kept exactly per row */
#define NCL_MAX_INIT_ALL	64	/* ncclCommInitAll devices registered */

enum ncl_dtype {
	NCL_DT_INT8, NCL_DT_UINT8, NCL_DT_INT32, NCL_DT_UINT32, NCL_DT_INT64, NCL_DT_UINT64,
	NCL_DT_FLOAT16, NCL_DT_FLOAT32, NCL_DT_FLOAT64, NCL_DT_BFLOAT16, NCL_DT_FP8E4M3,
	NCL_DT_FP8E5M2,
	NCL_DT_UNKNOWN = NCL_NUM_TYPES,	/* any other value: counted, 0 bytes */
	NCL_DT_SLOTS,
};

enum ncl_redop { NCL_REDOP_SUM, NCL_REDOP_PROD, NCL_REDOP_MAX, NCL_REDOP_MIN, NCL_REDOP_AVG };
#define NCL_REDOP_DYNAMIC_BIT	5	/* redops bit for ncclRedOpCreatePreMulSum ops */

/* Bytes of one element; 0 for an unknown datatype. A constant expression,
 * so that the ABI check can assert it. */
#define ncl_dtype_size(dt) \
	((dt) == NCL_DT_INT8 || (dt) == NCL_DT_UINT8 || (dt) == NCL_DT_FP8E4M3 || \
	 (dt) == NCL_DT_FP8E5M2 ? 1 : \
	 (dt) == NCL_DT_FLOAT16 || (dt) == NCL_DT_BFLOAT16 ? 2 : \
	 (dt) == NCL_DT_INT32 || (dt) == NCL_DT_UINT32 || (dt) == NCL_DT_FLOAT32 ? 4 : \
	 (dt) == NCL_DT_INT64 || (dt) == NCL_DT_UINT64 || (dt) == NCL_DT_FLOAT64 ? 8 : 0)

/* What a probed call is. The first NCL_OP_COLL_NR take a communicator and
 * a count (collectives and point-to-point). */
enum ncl_op {
	NCL_OP_ALLREDUCE,
	NCL_OP_ALLGATHER,
	NCL_OP_REDUCESCATTER,
	NCL_OP_BROADCAST,
	NCL_OP_REDUCE,
	NCL_OP_SEND,
	NCL_OP_RECV,
	NCL_OP_ALLTOALL,
	NCL_OP_GATHER,
	NCL_OP_SCATTER,
	NCL_OP_COLL_NR,
	NCL_OP_GROUP_END = NCL_OP_COLL_NR,
	NCL_OP_INIT_RANK,
	NCL_OP_INIT_RANK_CONFIG,
	NCL_OP_INIT_ALL,
	NCL_OP_SPLIT,
	NCL_OP_DESTROY,
	NCL_OP_ABORT,
	NCL_OP_SHRINK,
	NCL_OP_INIT_SCALABLE,
	NCL_OP_COUNT,
	NCL_OP_USER_RANK,
	NCL_OP_NR,
};

/* Calls of one class can be in flight at once per thread (ncclGroupEnd
 * runs no collective through the PLT, but keep the classes apart anyway). */
enum ncl_class { NCL_CLASS_COLL, NCL_CLASS_GROUP, NCL_CLASS_COMM, NCL_CLASS_QUERY, NCL_CLASS_NR };

static __always_inline __u32 ncl_op_class(__u32 op)
{
	if (op < NCL_OP_COLL_NR)
		return NCL_CLASS_COLL;
	if (op == NCL_OP_GROUP_END)
		return NCL_CLASS_GROUP;
	if (op >= NCL_OP_COUNT)
		return NCL_CLASS_QUERY;
	return NCL_CLASS_COMM;
}

/* A call between its entry and its return, key: tid << 8 | class. User
 * space reads these for --hang. */
struct ncl_call {
	__u64 ts;			/* entry, boot clock ns */
	__u64 comm;			/* ncclComm_t (the parent for split) */
	__u64 count;
	__u64 stream;
	__u64 out;			/* user pointer read at return */
	__u64 id_hash;			/* init: hash of the unique id */
	__u32 pid;
	__u32 tid;
	__u32 op;			/* enum ncl_op */
	__u32 datatype;			/* as passed */
	__u32 redop;
	__s32 root_or_peer;
	__s32 nranks;
	__s32 rank;			/* init: rank; split: color */
};

/* The communicator registry, key: (tgid, handle). */
struct ncl_comm_key {
	__u64 handle;
	__u32 pid;
	__u32 pad;
};

enum ncl_how {			/* how nclstat learnt of a communicator */
	NCL_HOW_SEEN,		/* first used in a call: created before nclstat started */
	NCL_HOW_INIT_RANK,
	NCL_HOW_INIT_RANK_CONFIG,
	NCL_HOW_INIT_ALL,
	NCL_HOW_SPLIT,
	NCL_HOW_SHRINK,
	NCL_HOW_INIT_SCALABLE,
};

/* ncclCommShrink: the excluded ranks read; a longer list leaves the new
 * communicator's identity, size and rank unknown */
#define NCL_SHRINK_MAX	64

/* Where a communicator's identity came from: the arguments of the call that
 * made it (id_hash is nclstat's FNV-1a of the unique id), ncclCommCount and
 * ncclCommUserRank returns only (no id), or the communicator itself in the
 * process's memory (id_hash is NCCL's commHash; lib/ncclcomm.h) */
enum ncl_ident {
	NCL_IDENT_NONE,
	NCL_IDENT_ARGS,
	NCL_IDENT_QUERY,
	NCL_IDENT_MEMORY,
};

#define NCL_COMM_MAGIC	0x0280028002800280ULL

struct ncl_comm {
	__u64 id_hash;			/* 0: unknown */
	__u64 parent;			/* split: the parent handle */
	__u64 init_ts;
	__u64 seq;			/* collective calls entered since nclstat started */
	__u64 last_ts;			/* entry of the last one */
	__u64 last_count;
	__u64 destroyed_ts;		/* ncclCommDestroy/Abort entered, 0: alive */
	__s32 nranks;			/* -1: unknown */
	__s32 rank;			/* -1: unknown */
	__s32 color;			/* split color */
	__u32 how;			/* enum ncl_how */
	__u32 last_op;
	__u32 last_datatype;
	__u32 tid;			/* thread of the last collective */
	__u32 aborted;
	__u32 ident;			/* enum ncl_ident: where id_hash, rank, nranks came from */
};

/*
 * Arrival of a local rank at a collective of a communicator: key (the
 * communicator's unique-id hash, its collective sequence number, the
 * rank's process and rank: -1 when not known, as after a split), one entry
 * per rank and sequence number, so that ranks never write one entry. User
 * space pairs the local ranks of each sequence number (arrival skew, the
 * rank that came last) and deletes them.
 */
struct ncl_arrival_key {
	__u64 id_hash;
	__u64 seq;
	__u32 pid;
	__s32 rank;
};

struct ncl_arrival {
	__u64 ts;			/* entry, boot clock ns */
	__u64 count;			/* op and count: what aligns ranks met mid-job */
	__u32 tid;
	__u32 op;
};

#define NCL_ARRIVALS_MAX	65536

/* Per interval (epoch), process, communicator and op. */
struct ncl_stats_key {
	__u64 handle;			/* 0 for ncclGroupEnd */
	__u32 pid;
	__u16 op;
	__u16 epoch;
};

struct ncl_size_slot {
	__u64 bytes;
	__u64 calls;
};

struct ncl_stats {
	struct aiscope_ident ident;	/* the first thread seen under the key */
	__u64 calls;
	__u64 bytes;
	__u64 sq_lo;			/* sum of bytes^2, 128 bits */
	__u64 sq_hi;
	__u64 errors;			/* rc other than 0 and 7 */
	__u64 in_progress;		/* rc 7 */
	__u64 lat_n;			/* calls seen returning */
	__u64 lat_sum;
	__u64 lat_max;
	__u64 size_max;
	__u64 sizes_other;		/* calls whose size had no slot left */
	__u32 last_error;
	__u32 redops;			/* bit per built-in op, NCL_REDOP_DYNAMIC_BIT */
	__u32 dtype_calls[NCL_DT_SLOTS];
	__u32 pad;
	struct ncl_size_slot sizes[NCL_SIZE_SLOTS];
	__u32 size_hist[HIST_BUCKETS];	/* message bytes, log-linear */
	__u32 lat_hist[HIST_BUCKETS];	/* entry to return, ns */
};

/* -e: one record per call, at its return */
struct ncl_event {
	__u64 ts;			/* return, boot clock ns */
	__u64 latency_ns;
	__u64 comm;
	__u64 count;
	__u64 stream;
	__u64 id_hash;
	__u64 new_comm;			/* init and split: the communicator made */
	struct aiscope_ident task;
	__u32 op;
	__u32 datatype;
	__u32 redop;
	__s32 root_or_peer;
	__s32 nranks;
	__s32 rank;
	__s32 rc;
	__u32 returned;			/* 0: --no-return, rc and latency unknown */
	__u32 ident;			/* of id_hash, nranks, rank: enum ncl_ident */
	__u32 pad;
};

#endif
