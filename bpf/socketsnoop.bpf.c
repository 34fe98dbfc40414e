// SPDX-License-Identifier: GPL-2.0
/*
 * socketsnoop: TCP/UDP bytes and calls per flow, aggregated in the kernel,
 * plus connection lifecycle events.
 *
 * Data: fexit tcp_sendmsg/tcp_recvmsg/udp{,v6}_{send,recv}msg where
 * trampolines work, else tp_btf (or raw_tp) sock_send_length and
 * sock_recv_length, which fire in process context for every protocol, else
 * the same functions by kprobe at entry and kretprobe at return; the
 * generic programs count only the protocols whose function hooks are not
 * attached (gen_mask). An unconnected UDP socket has no peer in its
 * struct sock: the fexit hooks read it from msghdr::msg_name, the generic
 * path from the sockaddr arguments of the send/recv syscalls.
 *
 * Lifecycle (-e): sock:inet_sock_set_state and tcp:tcp_destroy_sock, whose
 * transitions often run in softirq, where "current" is whatever task was
 * interrupted: they are charged to the socket's owner, recorded in conns
 * from process context (connect, accept, first send/recv).
 */
#include "aiscope.bpf.h"
#include "sock.bpf.h"
#include "socketsnoop.h"

#define MSG_PEEK	2
#define TCP_ESTABLISHED	1
#define TCP_SYN_SENT	2
#define TCP_SYN_RECV	3
#define TCP_CLOSE	7

#define DIR_TX		0
#define DIR_RX		1

#define RECV_BATCH	4	/* recvmmsg datagrams whose sources are read */

const volatile __u32 gen_mask = SS_GEN_TCP | SS_GEN_UDP4 | SS_GEN_UDP6;
const volatile bool track_conns;	/* -e */
const volatile bool io_events;		/* --io */
const volatile __u8 want_proto;		/* 0: both */
const volatile __u8 want_family;	/* 0: both, 4, 6 */
const volatile bool by_port;		/* consult map ports */
/* tcp_destroy_sock is attached: a TCP socket's close event waits for its
 * destruction (the application may still read after the CLOSE state) */
const volatile bool close_at_destroy;

/* recvmsg's flags: the 4th argument (index 3) since 5.19 dropped nonblock,
 * the 5th before; user space reads the index from the kernel's BTF */
const volatile __u32 tcp_recv_flags_arg = 3;
const volatile __u32 udp_recv_flags_arg = 3;
const volatile __u32 udp6_recv_flags_arg = 3;

__u32 epoch;				/* written by user space each interval */

AISCOPE_MAP(flows, BPF_MAP_TYPE_HASH, struct ss_flow_key, struct ss_flow,
	    16384);			/* flows of two intervals; preallocated */

AISCOPE_MAP(conns, BPF_MAP_TYPE_HASH, __u64,		/* struct sock * */
	    struct ss_conn, 1);				/* sized by user space with -e */

AISCOPE_MAP(ports, BPF_MAP_TYPE_HASH, __u16, __u8, 1024);

/* A send/recv syscall in flight on this thread whose sockaddr may name the
 * peer of an unconnected UDP socket (generic path only). */
enum { UC_SENDTO = 1, UC_SENDMSG, UC_SENDMMSG, UC_RECVFROM, UC_RECVMSG, UC_RECVMMSG };

struct ss_pending {
	struct ss_tuple t;	/* local side known, peer filled at exit */
	__u64 sk;
	__s64 ret;
	__u16 sk_family;
	__u8 pad[6];
};

struct ss_ucall {
	__u64 uptr;		/* sockaddr, msghdr or mmsghdr array (user) */
	__u32 kind;
	__u32 idx;		/* sendmmsg: the message being sent */
	__u32 npend;
	__u32 pad;
	struct ss_pending pend[RECV_BATCH];
};

AISCOPE_MAP(ucalls, BPF_MAP_TYPE_HASH, __u32,		/* tid */
	    struct ss_ucall, 8192);

static const struct ss_flow zero_flow;
static const struct ss_conn zero_conn;
static const struct ss_ucall zero_ucall;

static __always_inline struct task_struct *cur_task(void)
{
	return (struct task_struct *)bpf_get_current_task();
}

/* AF_INET/AF_INET6, TCP/UDP and the protocol filter: the checks every
 * hook makes first, before anything else is read. */
static __always_inline __u8 inet_proto(const struct sock *sk, __u16 *familyp)
{
	__u16 family, proto;

	if (!sk)
		return 0;
	family = aiscope_sk_family(sk);
	if (family != AF_INET && family != AF_INET6)
		return 0;
	proto = aiscope_sk_protocol(sk);
	if (proto != SS_PROTO_TCP && proto != SS_PROTO_UDP)
		return 0;
	if (want_proto && proto != want_proto)
		return 0;
	*familyp = family;
	return proto;
}

static __always_inline bool zero16(const __u8 *a)
{
	for (int i = 0; i < 16; i++)
		if (a[i])
			return false;
	return true;
}

/* IPv4 sockets, and IPv6 ones whose peer (or, peer unknown, local
 * address) is v4-mapped, show as IPv4. */
static __always_inline void set_family(struct ss_tuple *t, __u16 sk_family)
{
	if (sk_family == AF_INET || aiscope_is_v4_mapped(t->raddr) ||
	    (zero16(t->raddr) && aiscope_is_v4_mapped(t->laddr)))
		t->family = 4;
	else
		t->family = 6;
}

static __always_inline bool tuple_pass(const struct ss_tuple *t)
{
	__u16 p;

	if (want_family && t->family != want_family)
		return false;
	if (!by_port)
		return true;
	p = t->lport;
	if (bpf_map_lookup_elem(&ports, &p))
		return true;
	p = t->rport;
	return bpf_map_lookup_elem(&ports, &p) != NULL;
}

static __always_inline void fill_tuple(const struct sock *sk, __u16 family, __u8 proto,
				       struct ss_tuple *t)
{
	aiscope_sk_inet_tuple(sk, family, t->laddr, t->raddr, &t->lport, &t->rport);
	t->proto = proto;
	t->pad[0] = t->pad[1] = 0;
	set_family(t, family);
}

static __always_inline void emit(__u32 kind, const struct aiscope_ident *id,
				 const struct ss_tuple *t, __u64 now, __u64 bytes,
				 __u64 latency, const struct ss_conn *c)
{
	struct ss_event *ev = aiscope_reserve(sizeof(*ev));

	if (!ev)
		return;
	__builtin_memset(ev, 0, sizeof(*ev));
	ev->ts = now;
	ev->kind = kind;
	ev->ident = *id;
	ev->t = *t;
	ev->bytes = bytes;
	ev->latency_ns = latency;
	if (c) {
		ev->duration_ns = now > c->start_ns ? now - c->start_ns : 0;
		ev->start_known = c->start_known;
		ev->tx_bytes = c->tx_bytes;
		ev->rx_bytes = c->rx_bytes;
		ev->tx_calls = c->tx_calls;
		ev->rx_calls = c->rx_calls;
	}
	aiscope_submit(ev);
}

/* -e: the socket's own totals, and its owner when it has none yet */
static __always_inline void conn_account(__u64 sk, const struct ss_tuple *t,
					 const struct aiscope_ident *id, int dir,
					 __u64 bytes, __u64 now)
{
	struct ss_conn *c = bpf_map_lookup_elem(&conns, &sk);

	if (!c) {
		struct ss_conn init = zero_conn;

		init.owner = *id;
		init.has_owner = 1;
		init.t = *t;
		init.proto = t->proto;
		init.start_ns = now;
		/* a UDP socket lives from its first datagram on; a TCP one
		 * seen only now was established before we attached */
		init.start_known = t->proto == SS_PROTO_UDP;
		c = aiscope_lookup_or_init(&conns, &sk, &init);
		if (!c)
			return;
		if (t->proto == SS_PROTO_UDP)
			emit(SS_EV_FIRST_SEEN, id, t, now, 0, 0, NULL);
	}
	if (!c->has_owner) {
		c->owner = *id;
		c->has_owner = 1;
	}
	if (dir == DIR_TX) {
		__sync_fetch_and_add(&c->tx_bytes, bytes);
		__sync_fetch_and_add(&c->tx_calls, 1);
	} else {
		__sync_fetch_and_add(&c->rx_bytes, bytes);
		__sync_fetch_and_add(&c->rx_calls, 1);
	}
	c->last_ns = now;
}

/* bytes moved by the current task on a socket whose tuple is known and
 * has passed the filters */
static __always_inline void account(struct task_struct *task, __u64 sk,
				    const struct ss_tuple *t, int dir, __u64 bytes)
{
	struct ss_flow_key key = {};
	struct ss_flow *f;
	struct aiscope_ident id;
	__u64 now = aiscope_now();

	key.t = *t;
	key.pid = bpf_get_current_pid_tgid() >> 32;
	key.epoch = *(volatile __u32 *)&epoch;
	f = bpf_map_lookup_elem(&flows, &key);
	if (!f || track_conns || io_events)
		aiscope_task_ident(task, &id);
	if (!f) {
		struct ss_flow init = zero_flow;

		init.ident = id;
		init.first_ns = now;
		f = aiscope_lookup_or_init(&flows, &key, &init);
		if (!f)
			return;
	}
	if (dir == DIR_TX) {
		__sync_fetch_and_add(&f->tx_bytes, bytes);
		__sync_fetch_and_add(&f->tx_calls, 1);
	} else {
		__sync_fetch_and_add(&f->rx_bytes, bytes);
		__sync_fetch_and_add(&f->rx_calls, 1);
	}
	f->last_ns = now;
	if (track_conns)
		conn_account(sk, t, &id, dir, bytes, now);
	if (io_events)
		emit(dir == DIR_TX ? SS_EV_SEND : SS_EV_RECV, &id, t, now, bytes, 0, NULL);
}

/* ---- the generic path: sock_send_length / sock_recv_length ---- */

static __always_inline __u32 gen_bit(__u8 proto, __u16 family)
{
	if (proto == SS_PROTO_TCP)
		return SS_GEN_TCP;
	return family == AF_INET ? SS_GEN_UDP4 : SS_GEN_UDP6;
}

/* The peer of an unconnected UDP send from the syscall in flight. */
static __always_inline bool send_peer(struct ss_ucall *uc, struct ss_tuple *t)
{
	void *msg = NULL, *name = NULL;

	switch (uc->kind) {
	case UC_SENDTO:
		name = (void *)uc->uptr;
		break;
	case UC_SENDMSG:
		msg = (void *)uc->uptr;
		break;
	case UC_SENDMMSG:
		/* struct mmsghdr: a msghdr then msg_len, 64 bytes on 64-bit */
		msg = (void *)(uc->uptr + (__u64)(uc->idx & 0xffff) * 64);
		uc->idx++;
		break;
	default:
		return false;
	}
	if (msg && bpf_probe_read_user(&name, sizeof(name), msg))
		return false;
	return aiscope_read_sockaddr(name, true, t->raddr, &t->rport);
}

static __always_inline bool is_recv_call(const struct ss_ucall *uc)
{
	return uc->kind == UC_RECVFROM || uc->kind == UC_RECVMSG || uc->kind == UC_RECVMMSG;
}

static __always_inline int on_gen(struct sock *sk, long ret, int flags, int dir)
{
	struct task_struct *task;
	struct ss_ucall *uc = NULL;
	struct ss_tuple t;
	__u16 family;
	__u8 proto;
	__u32 tid;

	proto = inet_proto(sk, &family);
	if (!proto || !(gen_mask & gen_bit(proto, family)))
		return 0;
	if (ret <= 0 || (dir == DIR_RX && (flags & MSG_PEEK)))
		return 0;
	task = cur_task();
	if (!aiscope_task_pass(task))
		return 0;
	fill_tuple(sk, family, proto, &t);
	if (proto == SS_PROTO_UDP && !t.rport) {
		tid = (__u32)bpf_get_current_pid_tgid();
		uc = bpf_map_lookup_elem(&ucalls, &tid);
	}
	if (uc && dir == DIR_TX && send_peer(uc, &t))
		set_family(&t, family);
	if (uc && dir == DIR_RX && is_recv_call(uc)) {
		/* the source is in user memory only when the syscall returns */
		__u32 i = uc->npend;

		if (i < RECV_BATCH) {
			uc->pend[i].t = t;
			uc->pend[i].sk = (__u64)sk;
			uc->pend[i].ret = ret;
			uc->pend[i].sk_family = family;
			uc->npend = i + 1;
			return 0;
		}
	}
	if (!tuple_pass(&t))
		return 0;
	account(task, (__u64)sk, &t, dir, ret);
	return 0;
}

AISCOPE_BTF_RAW(sock_send_length, send, struct sock *sk, int ret, int flags)
{
	return on_gen(sk, ret, flags, DIR_TX);
}

AISCOPE_BTF_RAW(sock_recv_length, recv, struct sock *sk, int ret, int flags)
{
	return on_gen(sk, ret, flags, DIR_RX);
}

/* ---- the function hooks ---- */

static __always_inline int on_func(struct sock *sk, struct msghdr *msg, long ret,
				   int flags, int dir)
{
	struct task_struct *task;
	struct ss_tuple t;
	__u16 family;
	__u8 proto;

	proto = inet_proto(sk, &family);
	if (!proto || ret <= 0 || (dir == DIR_RX && (flags & MSG_PEEK)))
		return 0;
	task = cur_task();
	if (!aiscope_task_pass(task))
		return 0;
	fill_tuple(sk, family, proto, &t);
	if (proto == SS_PROTO_UDP && !t.rport && msg) {
		/* sendto/recvfrom: a kernel copy of the sockaddr */
		void *name = BPF_CORE_READ(msg, msg_name);

		if (aiscope_read_sockaddr(name, false, t.raddr, &t.rport))
			set_family(&t, family);
	}
	if (!tuple_pass(&t))
		return 0;
	account(task, (__u64)sk, &t, dir, ret);
	return 0;
}

SEC("fexit/tcp_sendmsg")
int BPF_PROG(tcp_send_fexit, struct sock *sk, struct msghdr *msg, size_t size, int ret)
{
	return on_func(sk, NULL, ret, 0, DIR_TX);
}

SEC("fexit/udp_sendmsg")
int BPF_PROG(udp_send_fexit, struct sock *sk, struct msghdr *msg, size_t len, int ret)
{
	return on_func(sk, msg, ret, 0, DIR_TX);
}

SEC("fexit/udpv6_sendmsg")
int BPF_PROG(udp6_send_fexit, struct sock *sk, struct msghdr *msg, size_t len, int ret)
{
	return on_func(sk, msg, ret, 0, DIR_TX);
}

/* recvmsg lost its nonblock argument in 5.19 and addr_len in 6.x: flags
 * is the fourth argument since 5.19 and the fifth before (the index comes
 * from the kernel's BTF: *_recv_flags_arg, read with bpf_get_func_arg()),
 * and the return value with bpf_get_func_ret() wherever it sits (both
 * 5.17; user space leaves these programs out where they are missing). */
static __always_inline int fexit_flags(void *ctx, __u32 arg)
{
	__u64 v = 0;

	/* (5.17, as bpf_get_func_ret: a constant-index ctx[] read of an
	 * argument the function may not have is refused at load) */
	bpf_get_func_arg(ctx, arg, &v);
	return (int)v;
}
#define RECV_FLAGS(arg)	fexit_flags(ctx, (arg))

SEC("fexit/tcp_recvmsg")
int BPF_PROG(tcp_recv_fexit, struct sock *sk, struct msghdr *msg)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	return on_func(sk, NULL, (int)ret, RECV_FLAGS(tcp_recv_flags_arg), DIR_RX);
}

SEC("fexit/udp_recvmsg")
int BPF_PROG(udp_recv_fexit, struct sock *sk, struct msghdr *msg)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	return on_func(sk, msg, (int)ret, RECV_FLAGS(udp_recv_flags_arg), DIR_RX);
}

SEC("fexit/udpv6_recvmsg")
int BPF_PROG(udp6_recv_fexit, struct sock *sk, struct msghdr *msg)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	return on_func(sk, msg, (int)ret, RECV_FLAGS(udp6_recv_flags_arg), DIR_RX);
}

/* ---- the same functions by kprobe/kretprobe (no trampolines: arm64
 * before 6.x, kernels without BTF-typed fexit return values) ---- */

/* the arguments the return probe needs, saved at entry per thread */
struct ss_kargs {
	__u64 sk;
	__u64 msg;
	__s32 flags;
	__u32 pad;
};

AISCOPE_MAP(kargs, BPF_MAP_TYPE_HASH, __u32,		/* tid */
	    struct ss_kargs, 8192);			/* threads inside send/recv at once */

static __always_inline int kargs_save(void *sk, void *msg, int flags)
{
	struct ss_kargs a = { .sk = (__u64)sk, .msg = (__u64)msg, .flags = flags };
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	if (bpf_map_update_elem(&kargs, &tid, &a, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
	return 0;
}

static __always_inline int kargs_done(long ret, int dir)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ss_kargs *a = bpf_map_lookup_elem(&kargs, &tid);
	struct ss_kargs copy;

	if (!a)
		return 0;
	copy = *a;
	bpf_map_delete_elem(&kargs, &tid);
	return on_func((struct sock *)copy.sk, (struct msghdr *)copy.msg, ret, copy.flags, dir);
}

/* both registers read, then one picked: a load from a computed offset of
 * ctx (what the compiler makes of the ternary) is refused by the verifier */
static __always_inline int recv_flags(struct pt_regs *ctx, __u32 arg)
{
	__u64 p4 = PT_REGS_PARM4(ctx), p5 = PT_REGS_PARM5(ctx);

	asm volatile("" : "+r"(p4), "+r"(p5));
	return arg == 4 ? (int)p5 : (int)p4;
}

SEC("kprobe/tcp_sendmsg")
int BPF_KPROBE(tcp_send_kprobe, struct sock *sk)
{
	return kargs_save(sk, NULL, 0);
}

SEC("kprobe/udp_sendmsg")
int BPF_KPROBE(udp_send_kprobe, struct sock *sk, struct msghdr *msg)
{
	return kargs_save(sk, msg, 0);
}

SEC("kprobe/udpv6_sendmsg")
int BPF_KPROBE(udp6_send_kprobe, struct sock *sk, struct msghdr *msg)
{
	return kargs_save(sk, msg, 0);
}

SEC("kprobe/tcp_recvmsg")
int BPF_KPROBE(tcp_recv_kprobe, struct sock *sk)
{
	return kargs_save(sk, NULL, recv_flags(ctx, tcp_recv_flags_arg));
}

SEC("kprobe/udp_recvmsg")
int BPF_KPROBE(udp_recv_kprobe, struct sock *sk, struct msghdr *msg)
{
	return kargs_save(sk, msg, recv_flags(ctx, udp_recv_flags_arg));
}

SEC("kprobe/udpv6_recvmsg")
int BPF_KPROBE(udp6_recv_kprobe, struct sock *sk, struct msghdr *msg)
{
	return kargs_save(sk, msg, recv_flags(ctx, udp6_recv_flags_arg));
}

SEC("kretprobe/tcp_sendmsg")
int BPF_KRETPROBE(tcp_send_kret, int ret)
{
	return kargs_done(ret, DIR_TX);
}

SEC("kretprobe/udp_sendmsg")
int BPF_KRETPROBE(udp_send_kret, int ret)
{
	return kargs_done(ret, DIR_TX);
}

SEC("kretprobe/udpv6_sendmsg")
int BPF_KRETPROBE(udp6_send_kret, int ret)
{
	return kargs_done(ret, DIR_TX);
}

SEC("kretprobe/tcp_recvmsg")
int BPF_KRETPROBE(tcp_recv_kret, int ret)
{
	return kargs_done(ret, DIR_RX);
}

SEC("kretprobe/udp_recvmsg")
int BPF_KRETPROBE(udp_recv_kret, int ret)
{
	return kargs_done(ret, DIR_RX);
}

SEC("kretprobe/udpv6_recvmsg")
int BPF_KRETPROBE(udp6_recv_kret, int ret)
{
	return kargs_done(ret, DIR_RX);
}

/* ---- syscalls: the peers of unconnected UDP sockets (generic path) ---- */

static __always_inline int ucall_enter(__u32 kind, __u64 uptr)
{
	struct ss_ucall *uc;
	__u32 tid;

	if (!(gen_mask & (SS_GEN_UDP4 | SS_GEN_UDP6)) || !uptr)
		return 0;
	if (!aiscope_task_pass(cur_task()))
		return 0;
	tid = (__u32)bpf_get_current_pid_tgid();
	if (bpf_map_update_elem(&ucalls, &tid, &zero_ucall, BPF_ANY)) {
		aiscope_count_lost(AISCOPE_LOST_MAP);
		return 0;
	}
	uc = bpf_map_lookup_elem(&ucalls, &tid);
	if (uc) {
		uc->kind = kind;
		uc->uptr = uptr;
	}
	return 0;
}

/* The user msghdr's msg_name, or 0: no peer to learn from this call. */
static __always_inline __u64 msg_name_of(__u64 umsg)
{
	void *name = NULL;

	if (!umsg || bpf_probe_read_user(&name, sizeof(name), (void *)umsg))
		return 0;
	return name ? umsg : 0;
}

SEC("tracepoint/syscalls/sys_enter_sendto")
int sendto_enter(struct trace_event_raw_sys_enter *ctx)
{
	return ucall_enter(UC_SENDTO, ctx->args[4]);
}

SEC("tracepoint/syscalls/sys_enter_sendmsg")
int sendmsg_enter(struct trace_event_raw_sys_enter *ctx)
{
	return ucall_enter(UC_SENDMSG, msg_name_of(ctx->args[1]));
}

SEC("tracepoint/syscalls/sys_enter_sendmmsg")
int sendmmsg_enter(struct trace_event_raw_sys_enter *ctx)
{
	return ucall_enter(UC_SENDMMSG, ctx->args[1]);
}

SEC("tracepoint/syscalls/sys_enter_recvfrom")
int recvfrom_enter(struct trace_event_raw_sys_enter *ctx)
{
	return ucall_enter(UC_RECVFROM, ctx->args[4]);
}

SEC("tracepoint/syscalls/sys_enter_recvmsg")
int recvmsg_enter(struct trace_event_raw_sys_enter *ctx)
{
	return ucall_enter(UC_RECVMSG, msg_name_of(ctx->args[1]));
}

SEC("tracepoint/syscalls/sys_enter_recvmmsg")
int recvmmsg_enter(struct trace_event_raw_sys_enter *ctx)
{
	return ucall_enter(UC_RECVMMSG, ctx->args[1]);
}

/* The source of pending datagram i, now in user memory. */
static __always_inline void settle(struct ss_ucall *uc, __u32 i)
{
	struct ss_pending *p = &uc->pend[i & (RECV_BATCH - 1)];
	void *name = NULL, *msg = NULL;

	if (uc->kind == UC_RECVFROM)
		name = (void *)uc->uptr;
	else if (uc->kind == UC_RECVMSG)
		msg = (void *)uc->uptr;
	else
		msg = (void *)(uc->uptr + (__u64)i * 64);
	if (msg)
		bpf_probe_read_user(&name, sizeof(name), msg);
	if (aiscope_read_sockaddr(name, true, p->t.raddr, &p->t.rport))
		set_family(&p->t, p->sk_family);
	if (!tuple_pass(&p->t))
		return;
	account(cur_task(), p->sk, &p->t, DIR_RX, p->ret);
}

static __always_inline int ucall_exit(void)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ss_ucall *uc = bpf_map_lookup_elem(&ucalls, &tid);

	if (!uc)
		return 0;
	if (is_recv_call(uc)) {
		for (__u32 i = 0; i < RECV_BATCH; i++) {
			if (i >= uc->npend)
				break;
			settle(uc, i);
		}
	}
	bpf_map_delete_elem(&ucalls, &tid);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_sendto")
int sendto_exit(void *ctx) { return ucall_exit(); }
SEC("tracepoint/syscalls/sys_exit_sendmsg")
int sendmsg_exit(void *ctx) { return ucall_exit(); }
SEC("tracepoint/syscalls/sys_exit_sendmmsg")
int sendmmsg_exit(void *ctx) { return ucall_exit(); }
SEC("tracepoint/syscalls/sys_exit_recvfrom")
int recvfrom_exit(void *ctx) { return ucall_exit(); }
SEC("tracepoint/syscalls/sys_exit_recvmsg")
int recvmsg_exit(void *ctx) { return ucall_exit(); }
SEC("tracepoint/syscalls/sys_exit_recvmmsg")
int recvmmsg_exit(void *ctx) { return ucall_exit(); }

/* ---- lifecycle (-e) ---- */

static __always_inline void conn_close(__u64 key, const struct sock *sk, __u16 family)
{
	struct ss_conn *c = bpf_map_lookup_elem(&conns, &key);
	struct ss_tuple t;

	if (!c)
		return;
	if (c->has_owner) {
		t = c->t;
		if (sk && c->proto == SS_PROTO_TCP) {
			/* the tuple is complete once the socket was connected */
			fill_tuple(sk, family, c->proto, &t);
			if (!t.lport && !t.rport)
				t = c->t;
		}
		emit(SS_EV_CLOSE, &c->owner, &t, aiscope_now(), 0, 0, c);
	}
	bpf_map_delete_elem(&conns, &key);
}

static __always_inline int on_state(struct sock *sk, int old, int new)
{
	struct task_struct *task;
	struct ss_conn *c;
	struct ss_tuple t;
	__u64 key = (__u64)sk, now;
	__u16 family;

	if (!track_conns || inet_proto(sk, &family) != SS_PROTO_TCP)
		return 0;
	now = aiscope_now();
	if (new == TCP_SYN_SENT) {
		/* connect(): process context, the owner is current */
		struct ss_conn init = zero_conn;

		task = cur_task();
		if (!aiscope_task_pass(task))
			return 0;
		aiscope_task_ident(task, &init.owner);
		init.has_owner = 1;
		init.start_known = 1;
		init.proto = SS_PROTO_TCP;
		init.start_ns = now;
		init.connect_ns = now;
		if (bpf_map_update_elem(&conns, &key, &init, BPF_ANY))
			aiscope_count_lost(AISCOPE_LOST_MAP);
		return 0;
	}
	if (new == TCP_ESTABLISHED && old == TCP_SYN_SENT) {
		/* often softirq (the SYN-ACK): charged to the owner */
		c = bpf_map_lookup_elem(&conns, &key);
		if (!c)
			return 0;
		fill_tuple(sk, family, SS_PROTO_TCP, &t);
		if (!tuple_pass(&t)) {
			bpf_map_delete_elem(&conns, &key);
			return 0;
		}
		c->t = t;
		emit(SS_EV_CONNECT, &c->owner, &t, now, 0, now - c->connect_ns, NULL);
		c->connect_ns = 0;
		return 0;
	}
	if (new == TCP_ESTABLISHED && old == TCP_SYN_RECV) {
		/* the passive side, in softirq: no owner until accept() */
		struct ss_conn init = zero_conn;

		fill_tuple(sk, family, SS_PROTO_TCP, &t);
		if (!tuple_pass(&t))
			return 0;
		init.t = t;
		init.start_known = 1;
		init.proto = SS_PROTO_TCP;
		init.start_ns = now;
		if (bpf_map_update_elem(&conns, &key, &init, BPF_NOEXIST))
			aiscope_count_lost(AISCOPE_LOST_MAP);
		return 0;
	}
	if (new == TCP_CLOSE && !close_at_destroy)
		conn_close(key, sk, family);
	return 0;
}

AISCOPE_BTF_RAW(inet_sock_set_state, state, struct sock *sk, int old, int new)
{
	return on_state(sk, old, new);
}

SEC("tracepoint/sock/inet_sock_set_state")
int state_tp(struct trace_event_raw_inet_sock_set_state *ctx)
{
	return on_state((struct sock *)ctx->skaddr, ctx->oldstate, ctx->newstate);
}

/* A socket destroyed without a CLOSE transition seen: free its state. */
static __always_inline int on_destroy(struct sock *sk)
{
	__u16 family;

	if (!track_conns || inet_proto(sk, &family) != SS_PROTO_TCP)
		return 0;
	conn_close((__u64)sk, sk, family);
	return 0;
}

AISCOPE_BTF_RAW(tcp_destroy_sock, destroy, struct sock *sk)
{
	return on_destroy(sk);
}

SEC("tracepoint/tcp/tcp_destroy_sock")
int destroy_tp(struct trace_event_raw_tcp_event_sk *ctx)
{
	return on_destroy((struct sock *)ctx->skaddr);
}

/* accept(): process context; the passive socket gets its owner */
static __always_inline int on_accept(struct sock *sk)
{
	struct task_struct *task;
	struct ss_conn *c;
	struct ss_tuple t;
	__u64 key = (__u64)sk, now;
	__u16 family;

	if (!track_conns || inet_proto(sk, &family) != SS_PROTO_TCP)
		return 0;
	c = bpf_map_lookup_elem(&conns, &key);
	if (c && c->has_owner)
		return 0;	/* both accept hooks saw it */
	task = cur_task();
	if (!aiscope_task_pass(task)) {
		if (c)
			bpf_map_delete_elem(&conns, &key);
		return 0;
	}
	now = aiscope_now();
	if (!c) {
		/* established before we attached, or left out by a filter */
		struct ss_conn init = zero_conn;

		fill_tuple(sk, family, SS_PROTO_TCP, &t);
		if (!tuple_pass(&t))
			return 0;
		init.t = t;
		init.proto = SS_PROTO_TCP;
		init.start_ns = now;
		c = aiscope_lookup_or_init(&conns, &key, &init);
		if (!c)
			return 0;
	}
	aiscope_task_ident(task, &c->owner);
	c->has_owner = 1;
	emit(SS_EV_ACCEPT, &c->owner, &c->t, now, 0,
	     c->start_known && now > c->start_ns ? now - c->start_ns : 0, NULL);
	return 0;
}

SEC("fexit/inet_csk_accept")
int BPF_PROG(accept_fexit, struct sock *lsk)
{
	__u64 ret = 0;

	bpf_get_func_ret(ctx, &ret);
	return on_accept((struct sock *)ret);
}

SEC("kretprobe/inet_csk_accept")
int BPF_KRETPROBE(accept_kret, struct sock *newsk)
{
	return on_accept(newsk);
}

static __always_inline int accept_exit(long fd)
{
	struct socket *so;

	if (!track_conns || fd < 0)
		return 0;
	so = aiscope_fd_socket(cur_task(), fd);
	if (!so)
		return 0;
	return on_accept(BPF_CORE_READ(so, sk));
}

SEC("tracepoint/syscalls/sys_exit_accept4")
int accept4_exit(struct trace_event_raw_sys_exit *ctx)
{
	return accept_exit(ctx->ret);
}

SEC("tracepoint/syscalls/sys_exit_accept")
int accept_exit_tp(struct trace_event_raw_sys_exit *ctx)
{
	return accept_exit(ctx->ret);
}

/* close(): the end of a UDP socket (TCP ends in its CLOSE transition) */
SEC("tracepoint/syscalls/sys_enter_close")
int close_enter(struct trace_event_raw_sys_enter *ctx)
{
	struct socket *so;
	struct sock *sk;
	__u64 key;
	__u16 family;

	if (!track_conns)
		return 0;
	so = aiscope_fd_socket(cur_task(), ctx->args[0]);
	if (!so)
		return 0;
	sk = BPF_CORE_READ(so, sk);
	if (inet_proto(sk, &family) != SS_PROTO_UDP)
		return 0;
	key = (__u64)sk;
	conn_close(key, NULL, family);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
