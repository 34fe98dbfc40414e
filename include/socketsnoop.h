/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef SOCKETSNOOP_H
#define SOCKETSNOOP_H

#include "aiscope_common.h"

#define SS_PROTO_TCP	6
#define SS_PROTO_UDP	17

/* Which protocols the generic tracepoint programs (tp_btf/raw_tp
 * sock_send_length, sock_recv_length) count: those whose function hooks
 * (fexit tcp_sendmsg, ...) are not attached. */
#define SS_GEN_TCP	0x1
#define SS_GEN_UDP4	0x2
#define SS_GEN_UDP6	0x4

/* A flow as one process sees it. Addresses are 16 bytes, IPv4 in the
 * v4-mapped form; family is 4 for IPv4 and v4-mapped IPv6, else 6.
 * rport 0 with raddr zero: the peer is not known (an unconnected UDP
 * datagram received without asking for its source). */
struct ss_tuple {
	__u8 laddr[16];
	__u8 raddr[16];
	__u16 lport;		/* host order */
	__u16 rport;
	__u8 family;
	__u8 proto;		/* SS_PROTO_TCP or SS_PROTO_UDP */
	__u8 pad[2];
};

/* Per interval: epoch alternates, so that user space drains the closed
 * interval while BPF fills the open one. */
struct ss_flow_key {
	struct ss_tuple t;
	__u32 pid;		/* tgid */
	__u32 epoch;
};

struct ss_flow {
	struct aiscope_ident ident;	/* the first thread seen */
	__u64 tx_bytes;
	__u64 rx_bytes;
	__u64 tx_calls;		/* calls that moved at least one byte */
	__u64 rx_calls;
	__u64 first_ns;		/* boot clock */
	__u64 last_ns;
};

/* -e: one socket while it lives, keyed by its struct sock address. The
 * owner is the process that connected, accepted or first used it; state
 * changes handled in softirq are charged to it. */
struct ss_conn {
	struct aiscope_ident owner;
	struct ss_tuple t;
	__u64 start_ns;		/* SYN_SENT, passive ESTABLISHED, or first seen */
	__u64 connect_ns;	/* SYN_SENT, until ESTABLISHED */
	__u64 last_ns;		/* last transfer */
	__u64 tx_bytes;
	__u64 rx_bytes;
	__u64 tx_calls;
	__u64 rx_calls;
	__u8 has_owner;
	__u8 start_known;	/* start_ns is the real start, not first seen */
	__u8 proto;
	__u8 pad[5];
};

enum ss_event_kind {
	SS_EV_CONNECT,
	SS_EV_ACCEPT,
	SS_EV_CLOSE,
	SS_EV_SEND,
	SS_EV_RECV,
	SS_EV_FIRST_SEEN,	/* UDP socket first seen */
	SS_EV_IDLE,		/* user space: a UDP socket idle past --idle */
};

struct ss_event {
	__u64 ts;		/* boot clock */
	struct aiscope_ident ident;
	struct ss_tuple t;
	__u64 bytes;		/* send, recv */
	__u64 latency_ns;	/* connect: SYN_SENT to ESTABLISHED; accept: queued */
	__u64 duration_ns;	/* close */
	__u64 tx_bytes;		/* close: the socket's totals */
	__u64 rx_bytes;
	__u64 tx_calls;
	__u64 rx_calls;
	__u32 kind;
	__u8 start_known;	/* close: duration_ns is valid */
	__u8 pad[3];
};

#endif
