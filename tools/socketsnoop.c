// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * socketsnoop: who talks to whom over TCP/UDP, how much, and how are the
 * connections living?
 *
 * Bytes and calls per flow (process, protocol, local and remote endpoint)
 * are summed in the kernel and drained every interval into a top-like
 * table; flows whose both ends are on this host are joined by their
 * mirrored 4-tuple, so each row names the peer process. -e streams
 * connects, accepts and closes (with duration and bytes each way), --io
 * every call; --json ends with the process-to-process edges of the run.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "edge.h"
#include "json.h"
#include "kfeatures.h"
#include "mapdrain.h"
#include "metrics.h"
#include "complete.h"
#include "opts.h"
#include "run.h"
#include "table.h"
#include "util.h"
#include "socketsnoop.h"
#include "socketsnoop.skel.h"

#define TOOL "socketsnoop"
#define MAX_PORTS 1024
/* The run's flow table (peers, the edge lines) keeps at most this many:
 * with it full, 21 MiB RSS and 38 MiB at the exit's peak (measured:
 * docs/fleet.md), within the unit's MemoryMax=128M. Past it, the flows
 * idle longest are forgotten, counted (edge_flows_evicted) and left out
 * of the edge lines. */
#define RUN_FLOWS_MAX (1U << 16)
#define ENDPOINT_LEN 64		/* "[v6]:port" */

static const char doc[] =
"TCP and UDP flows between processes: bytes and calls per flow, the peer\n"
"process when both ends are on this host, and connection lifecycle events.\n"
"\n"
"Every interval, a top-like table of flows (PID, local and remote endpoint,\n"
"bytes and calls each way, peer PID and comm), summed in the kernel. -e\n"
"streams connects (with latency), accepts and closes (with duration and\n"
"bytes each way), and UDP sockets first seen or idle; --io adds every send\n"
"and receive. --json ends with one \"edge\" line per process pair.\n"
"\n"
"USAGE: socketsnoop [OPTIONS] [interval [count]]"
"\v"
"EXAMPLES:\n"
"  socketsnoop                   # busiest flows, each second\n"
"  socketsnoop -P 5000,29500 -4  # flows to or from these ports, IPv4 only\n"
"  socketsnoop -e --proto tcp    # connects, accepts and closes\n"
"  socketsnoop -p 1234 --io -d 2s   # every send and receive of one process\n"
"  socketsnoop -j -d 30s | jq -c 'select(.type==\"edge\") | [.src.comm,.dst.comm,.bytes]'\n"
"  socketsnoop --container 3f2a -j -n 5 | jq 'select(.type==\"sample\")'\n"
"\n"
"Exit status: 0 done, 1 runtime error, 2 usage error, 77 cannot run here.";

enum { OPT_IO = 0x300, OPT_PROTO, OPT_IDLE };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "socketsnoop:", 1 },
	{ "events", 'e', NULL, 0, "Stream connect, accept and close events (and UDP first seen, idle)", 1 },
	{ "io", OPT_IO, NULL, 0, "Stream one event per send and receive (high volume)", 1 },
	{ "port", 'P', "PORT[,PORT...]", 0, "Only flows with one of these ports at either end", 1 },
	{ "proto", OPT_PROTO, "PROTO", 0, "Only tcp or udp", 1 },
	{ "ipv4", '4', NULL, 0, "Only IPv4 (and v4-mapped IPv6)", 1 },
	{ "ipv6", '6', NULL, 0, "Only IPv6", 1 },
	{ "idle", OPT_IDLE, "DUR", 0, "With -e, a UDP socket silent this long is idle (default 30s)", 1 },
	{},
};

static const char *const sort_keys[] = { "bytes", "tx", "rx", "calls", "pid", NULL };

static struct {
	bool events;
	bool io;
	uint32_t ports[MAX_PORTS];
	int nports;
	uint8_t proto;
	uint8_t family;
	uint64_t idle_ns;
	const char *sort;
} cfg = { .idle_ns = 30 * NSEC_PER_SEC, .sort = "bytes" };

static const struct opt_key protos[] = {
	{ "tcp", SS_PROTO_TCP }, { "udp", SS_PROTO_UDP }, {},
};

/* what the shell completions offer after its options (lib/complete.h) */
const struct opt_value aiscope_opt_values[] = {
	{ .name = "sort", .kind = OV_WORDS, .words = sort_keys },
	{ .name = "proto", .kind = OV_WORDS, .keys = protos },
	{},
};

#define SS_NO_METRICS "-e and --io stream events: --prometheus and --listen need the interval view"

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	int n;

	switch (key) {
	case 'e':
		cfg.events = true;
		env.no_metrics = SS_NO_METRICS;
		break;
	case OPT_IO:
		cfg.io = true;
		env.no_metrics = SS_NO_METRICS;
		break;
	case 'P':
		n = parse_u32_list(arg, cfg.ports, MAX_PORTS);
		if (n <= 0)
			usage_error("invalid --port '%s': expected ports such as 80,443", arg);
		for (int i = 0; i < n; i++)
			if (!cfg.ports[i] || cfg.ports[i] > 65535)
				usage_error("invalid --port '%s': ports are 1 to 65535", arg);
		cfg.nports = n;
		break;
	case OPT_PROTO:
		cfg.proto = opt_key("--proto", arg, protos);
		break;
	case '4':
	case '6':
		if (cfg.family && cfg.family != key - '0')
			usage_error("-4 and -6 exclude each other");
		cfg.family = key - '0';
		break;
	case OPT_IDLE:
		if (parse_duration(arg, &cfg.idle_ns) || !cfg.idle_ns)
			usage_error("invalid --idle '%s': expected a positive duration such as 30s", arg);
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = AISCOPE_ARGP(opts, parse_arg, doc);

/* Function hooks first where trampolines work, then the sock_*_length
 * tracepoints, which count every protocol (the generic programs count
 * those whose function hooks are not attached). */
enum {
	H_SEND, H_RECV, H_UDP_SEND, H_UDP6_SEND, H_UDP_RECV, H_UDP6_RECV,
	H_STATE, H_DESTROY, H_ACCEPT, H_ACCEPT_OLD, H_CLOSE,
	H_SENDTO_IN, H_SENDTO_OUT, H_SENDMSG_IN, H_SENDMSG_OUT, H_SENDMMSG_IN, H_SENDMMSG_OUT,
	H_RECVFROM_IN, H_RECVFROM_OUT, H_RECVMSG_IN, H_RECVMSG_OUT, H_RECVMMSG_IN, H_RECVMMSG_OUT,
	/* the entry halves of the kretprobe candidates (their arguments) */
	H_SEND_IN, H_RECV_IN, H_UDP_SEND_IN, H_UDP6_SEND_IN, H_UDP_RECV_IN, H_UDP6_RECV_IN,
	H_NR,
};

#define SYSCALL_HOOK(hname, tp, prog) \
	{ .name = hname, .optional = true, .cand = { { PM_TRACEPOINT, "syscalls/" tp, prog } } }

#define ENTRY_HOOK(hname, func, prog) \
	{ .name = hname, .optional = true, .cand = { { PM_KPROBE, func, prog } } }
#define FUNC_RET PROBE_NEEDS_FUNC_RET

/* fexit first, then the tracepoints, then kprobe/kretprobe (each
 * kretprobe with its entry half among the *_IN hooks, paired in on_plan) */
static struct probe_hook hooks[H_NR] = {
	[H_SEND] = { .name = "send", .cand = {
		{ PM_FEXIT, "tcp_sendmsg", "tcp_send_fexit" },
		PROBE_BTF_RAW("sock_send_length", "send"),
		{ PM_KRETPROBE, "tcp_sendmsg", "tcp_send_kret" } } },
	[H_RECV] = { .name = "recv", .cand = {
		{ PM_FEXIT, "tcp_recvmsg", "tcp_recv_fexit", FUNC_RET },
		PROBE_BTF_RAW("sock_recv_length", "recv"),
		{ PM_KRETPROBE, "tcp_recvmsg", "tcp_recv_kret" } } },
	[H_UDP_SEND] = { .name = "udp_send", .optional = true, .cand = {
		PROBE_FUNC_RET("udp_sendmsg", "udp_send", 0) } },
	[H_UDP6_SEND] = { .name = "udp6_send", .optional = true, .cand = {
		PROBE_FUNC_RET("udpv6_sendmsg", "udp6_send", 0) } },
	[H_UDP_RECV] = { .name = "udp_recv", .optional = true, .cand = {
		PROBE_FUNC_RET("udp_recvmsg", "udp_recv", FUNC_RET) } },
	[H_UDP6_RECV] = { .name = "udp6_recv", .optional = true, .cand = {
		PROBE_FUNC_RET("udpv6_recvmsg", "udp6_recv", FUNC_RET) } },
	[H_STATE] = { .name = "inet_sock_set_state", .optional = true, .preemptible = true, .cand = {
		PROBE_TRACEPOINT("sock", "inet_sock_set_state", "state") } },
	[H_DESTROY] = { .name = "tcp_destroy_sock", .optional = true, .preemptible = true, .cand = {
		PROBE_TRACEPOINT("tcp", "tcp_destroy_sock", "destroy") } },
	[H_ACCEPT] = { .name = "accept", .optional = true, .cand = {
		PROBE_FUNC_RET("inet_csk_accept", "accept", FUNC_RET),
		{ PM_TRACEPOINT, "syscalls/sys_exit_accept4", "accept4_exit" } } },
	[H_ACCEPT_OLD] = SYSCALL_HOOK("accept_old", "sys_exit_accept", "accept_exit_tp"),
	[H_CLOSE] = SYSCALL_HOOK("udp_close", "sys_enter_close", "close_enter"),
	[H_SENDTO_IN] = SYSCALL_HOOK("udp_peer_sendto", "sys_enter_sendto", "sendto_enter"),
	[H_SENDTO_OUT] = SYSCALL_HOOK("udp_peer_sendto_exit", "sys_exit_sendto", "sendto_exit"),
	[H_SENDMSG_IN] = SYSCALL_HOOK("udp_peer_sendmsg", "sys_enter_sendmsg", "sendmsg_enter"),
	[H_SENDMSG_OUT] = SYSCALL_HOOK("udp_peer_sendmsg_exit", "sys_exit_sendmsg", "sendmsg_exit"),
	[H_SENDMMSG_IN] = SYSCALL_HOOK("udp_peer_sendmmsg", "sys_enter_sendmmsg", "sendmmsg_enter"),
	[H_SENDMMSG_OUT] = SYSCALL_HOOK("udp_peer_sendmmsg_exit", "sys_exit_sendmmsg", "sendmmsg_exit"),
	[H_RECVFROM_IN] = SYSCALL_HOOK("udp_peer_recvfrom", "sys_enter_recvfrom", "recvfrom_enter"),
	[H_RECVFROM_OUT] = SYSCALL_HOOK("udp_peer_recvfrom_exit", "sys_exit_recvfrom", "recvfrom_exit"),
	[H_RECVMSG_IN] = SYSCALL_HOOK("udp_peer_recvmsg", "sys_enter_recvmsg", "recvmsg_enter"),
	[H_RECVMSG_OUT] = SYSCALL_HOOK("udp_peer_recvmsg_exit", "sys_exit_recvmsg", "recvmsg_exit"),
	[H_RECVMMSG_IN] = SYSCALL_HOOK("udp_peer_recvmmsg", "sys_enter_recvmmsg", "recvmmsg_enter"),
	[H_RECVMMSG_OUT] = SYSCALL_HOOK("udp_peer_recvmmsg_exit", "sys_exit_recvmmsg", "recvmmsg_exit"),
	[H_SEND_IN] = ENTRY_HOOK("send_entry", "tcp_sendmsg", "tcp_send_kprobe"),
	[H_RECV_IN] = ENTRY_HOOK("recv_entry", "tcp_recvmsg", "tcp_recv_kprobe"),
	[H_UDP_SEND_IN] = ENTRY_HOOK("udp_send_entry", "udp_sendmsg", "udp_send_kprobe"),
	[H_UDP6_SEND_IN] = ENTRY_HOOK("udp6_send_entry", "udpv6_sendmsg", "udp6_send_kprobe"),
	[H_UDP_RECV_IN] = ENTRY_HOOK("udp_recv_entry", "udp_recvmsg", "udp_recv_kprobe"),
	[H_UDP6_RECV_IN] = ENTRY_HOOK("udp6_recv_entry", "udpv6_recvmsg", "udp6_recv_kprobe"),
};

/* each kretprobe hook and the kprobe that saves its arguments */
static const int kret_pairs[][2] = {
	{ H_SEND, H_SEND_IN }, { H_RECV, H_RECV_IN }, { H_UDP_SEND, H_UDP_SEND_IN },
	{ H_UDP6_SEND, H_UDP6_SEND_IN }, { H_UDP_RECV, H_UDP_RECV_IN }, { H_UDP6_RECV, H_UDP6_RECV_IN },
};

/* ---- flows of the whole run: peers and edges ---- */

struct rflow {
	struct ss_tuple t;
	struct aiscope_ident ident;
	uint64_t tx_bytes, rx_bytes, tx_calls, rx_calls;
	uint64_t first_ns, last_ns;	/* realtime */
	int32_t next_key, next_ports;	/* hash chains, -1: end */
};

static struct {
	struct rflow *v;
	uint32_t n, cap;
	int32_t *by_key, *by_ports;	/* bucket heads */
	uint32_t nb;
	uint32_t max;		/* RUN_FLOWS_MAX, or a test's lower cap */
	uint64_t evicted;	/* flows forgotten to stay within max */
} R;

static uint32_t key_hash(uint32_t pid, const struct ss_tuple *t)
{
	uint64_t h = fnv1a(FNV1A_INIT, &pid, sizeof(pid));

	return fnv1a(h, t, sizeof(*t)) & (R.nb - 1);
}

static uint32_t ports_hash(uint8_t proto, uint16_t lport, uint16_t rport)
{
	uint64_t h = FNV1A_INIT;

	h = fnv1a(h, &proto, 1);
	h = fnv1a(h, &lport, 2);
	h = fnv1a(h, &rport, 2);
	return h & (R.nb - 1);
}

static void rehash(uint32_t nb)
{
	int32_t *bk = malloc(nb * sizeof(*bk)), *bp = malloc(nb * sizeof(*bp));

	if (!bk || !bp)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	free(R.by_key);
	free(R.by_ports);
	R.by_key = bk;
	R.by_ports = bp;
	R.nb = nb;
	memset(bk, 0xff, nb * sizeof(*bk));
	memset(bp, 0xff, nb * sizeof(*bp));
	for (uint32_t i = 0; i < R.n; i++) {
		struct rflow *f = &R.v[i];
		uint32_t a = key_hash(f->ident.pid, &f->t);
		uint32_t b = ports_hash(f->t.proto, f->t.lport, f->t.rport);

		f->next_key = bk[a];
		bk[a] = i;
		f->next_ports = bp[b];
		bp[b] = i;
	}
}

/* The table is full: forget the eighth of its flows idle longest (a
 * connection long closed, most likely), so that the active ones keep
 * their peers and the table its size. Counted, never silent. */
static void evict_idle(void)
{
	size_t kept = rows_drop_oldest(R.v, R.n, sizeof(*R.v), offsetof(struct rflow, last_ns),
				       R.n / 8);

	if (kept == SIZE_MAX)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	R.evicted += R.n - kept;
	R.n = kept;
	rehash(R.nb);
}

static struct rflow *rflow_get(uint32_t pid, const struct ss_tuple *t, const struct aiscope_ident *id)
{
	struct rflow *f;
	uint32_t a, b;

	if (!R.nb)
		rehash(1024);
	for (int32_t i = R.by_key[key_hash(pid, t)]; i >= 0; i = R.v[i].next_key) {
		f = &R.v[i];
		if (f->ident.pid == pid && !memcmp(&f->t, t, sizeof(*t)))
			return f;
	}
	if (R.n >= R.max)
		evict_idle();
	if (R.n == R.cap) {
		uint32_t cap = R.cap ? R.cap * 2 : 1024;
		struct rflow *v = realloc(R.v, cap * sizeof(*v));

		if (!v)
			aiscope_fail(EXIT_RUNTIME, "out of memory");
		R.v = v;
		R.cap = cap;
	}
	f = &R.v[R.n];
	memset(f, 0, sizeof(*f));
	f->t = *t;
	f->ident = *id;
	f->ident.pid = pid;
	a = key_hash(pid, t);
	b = ports_hash(t->proto, t->lport, t->rport);
	f->next_key = R.by_key[a];
	R.by_key[a] = R.n;
	f->next_ports = R.by_ports[b];
	R.by_ports[b] = R.n;
	R.n++;
	if (R.n > R.nb)
		rehash(R.nb * 2);
	return &R.v[R.n - 1];
}

static bool addr_any(const uint8_t *a)
{
	static const uint8_t any4[16] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t any6[16];

	return !memcmp(a, any4, 16) || !memcmp(a, any6, 16);
}

/* a's local address as seen by the other end b: equal, or a wildcard */
static int addr_fit(const uint8_t *local, const uint8_t *seen)
{
	if (!memcmp(local, seen, 16))
		return 2;
	return addr_any(local) ? 1 : 0;
}

/* The flow of the other end of t (its mirror), the best address match. */
static const struct rflow *peer_of(const struct ss_tuple *t, const struct rflow *self)
{
	const struct rflow *best = NULL;
	int best_score = 0;

	if (!t->rport || !R.nb)
		return NULL;
	for (int32_t i = R.by_ports[ports_hash(t->proto, t->rport, t->lport)]; i >= 0;
	     i = R.v[i].next_ports) {
		const struct rflow *f = &R.v[i];
		int a, b;

		if (f == self || f->t.proto != t->proto || f->t.lport != t->rport ||
		    f->t.rport != t->lport)
			continue;
		a = addr_fit(f->t.laddr, t->raddr);
		b = addr_fit(t->laddr, f->t.raddr);
		if (!a || !b)
			continue;
		if (a + b > best_score) {
			best = f;
			best_score = a + b;
		}
	}
	return best;
}

/* ---- formatting ---- */

static void fmt_addr(const struct ss_tuple *t, const uint8_t *a, char *buf, size_t len)
{
	if (t->family == 4)
		inet_ntop(AF_INET, a + 12, buf, len);
	else
		inet_ntop(AF_INET6, a, buf, len);
}

static void fmt_endpoint(const struct ss_tuple *t, const uint8_t *a, uint16_t port,
			 char *buf, size_t len)
{
	char addr[INET6_ADDRSTRLEN];

	fmt_addr(t, a, addr, sizeof(addr));
	if (t->family == 4)
		snprintf(buf, len, "%s:%u", addr, port);
	else
		snprintf(buf, len, "[%s]:%u", addr, port);
}

static bool peer_known(const struct ss_tuple *t)
{
	static const uint8_t zero[16];

	return t->rport || memcmp(t->raddr, zero, 16);
}

static const char *proto_name(uint8_t p)
{
	return p == SS_PROTO_TCP ? "tcp" : "udp";
}

/* ---- state ---- */

struct row {
	struct ss_tuple t;
	struct aiscope_ident ident;
	struct container_info ci;
	uint64_t tx_bytes, rx_bytes, tx_calls, rx_calls;
	const struct rflow *peer;
};

static struct {
	struct socketsnoop_bpf *skel;
	struct aiscope_bpf bpf;
	struct aiscope_loop loop;
	struct jw jw;
	struct row *rows;
	size_t nrows, cap;
	uint64_t events;		/* events printed */
	uint64_t tx_bytes, rx_bytes, tx_calls, rx_calls;	/* the run */
	uint64_t idle_sockets;
	bool streaming;
	bool final;		/* the last drain takes both epochs */
} S;

static struct row *new_row(void)
{
	S.rows = aiscope_grow(S.rows, &S.cap, S.nrows, sizeof(*S.rows));
	memset(&S.rows[S.nrows], 0, sizeof(S.rows[0]));
	return &S.rows[S.nrows++];
}

/* ---- Prometheus metrics: by the cgroup of the process that sent or
 * received, the direction and the protocol ---- */

static struct {
	struct prom_family *bytes, *calls;
	struct edge_metrics edges;	/* the run's top edges */
} P;

static struct edge_table *run_edges(void);

static void metrics_init(void)
{
	AISCOPE_METRIC_LABELS(lbl, AISCOPE_CGROUP_LABEL_NAMES, "direction", "proto", NULL);

	if (!aiscope_metrics())
		return;
	P.bytes = aiscope_metric_counter("aiscope_socketsnoop_bytes_total",
		"Bytes sent (direction tx, JSON tx_bytes) or received (rx, JSON rx_bytes) over TCP and UDP sockets, by the process's cgroup and protocol.",
		lbl);
	P.calls = aiscope_metric_counter("aiscope_socketsnoop_calls_total",
		"Send (direction tx, JSON tx_calls) or receive (rx, JSON rx_calls) calls that moved at least one byte.",
		lbl);
	edge_metrics_init(&P.edges, TOOL);
}

static void metrics_add(const struct ss_flow_key *k, const struct ss_flow *v)
{
	const char *vals[AISCOPE_CGROUP_NLABELS + 2];
	struct container_info ci;

	if (!P.bytes)
		return;
	aiscope_cgroup_values(&v->ident, vals, &ci);
	vals[AISCOPE_CGROUP_NLABELS + 1] = proto_name(k->t.proto);
	if (v->tx_calls || v->tx_bytes) {
		vals[AISCOPE_CGROUP_NLABELS] = "tx";
		prom_counter_add(P.bytes, vals, v->tx_bytes);
		prom_counter_add(P.calls, vals, v->tx_calls);
	}
	if (v->rx_calls || v->rx_bytes) {
		vals[AISCOPE_CGROUP_NLABELS] = "rx";
		prom_counter_add(P.bytes, vals, v->rx_bytes);
		prom_counter_add(P.calls, vals, v->rx_calls);
	}
}

static void add_flow(const struct ss_flow_key *k, const struct ss_flow *v)
{
	struct row *r = new_row();
	struct rflow *f;

	r->t = k->t;
	r->ident = v->ident;
	r->ident.pid = k->pid;
	r->tx_bytes = v->tx_bytes;
	r->rx_bytes = v->rx_bytes;
	r->tx_calls = v->tx_calls;
	r->rx_calls = v->rx_calls;
	S.tx_bytes += v->tx_bytes;
	S.rx_bytes += v->rx_bytes;
	S.tx_calls += v->tx_calls;
	S.rx_calls += v->rx_calls;
	metrics_add(k, v);
	f = rflow_get(k->pid, &k->t, &v->ident);
	if (!f)
		return;
	f->ident = v->ident;		/* the latest comm */
	f->ident.pid = k->pid;
	f->tx_bytes += v->tx_bytes;
	f->rx_bytes += v->rx_bytes;
	f->tx_calls += v->tx_calls;
	f->rx_calls += v->rx_calls;
	if (!f->first_ns)
		f->first_ns = aiscope_realtime(v->first_ns);
	f->last_ns = aiscope_realtime(v->last_ns);
}

/*
 * A late update of the epoch drained last time waits for the next drain of
 * that epoch, or for the last one.
 */
static bool want_flow(const void *key, void *ctx)
{
	return ((const struct ss_flow_key *)key)->epoch == *(uint32_t *)ctx || S.final;
}

static void take_flow(const void *key, const void *value, void *ctx)
{
	add_flow(key, value);
}

/* Drain the flows of the interval that just closed. */
static void collect(void)
{
	/* returns once no program still adds to the closed epoch's rows */
	uint32_t closed = map_epoch_close(&S.skel->bss->epoch, NULL);

	S.nrows = 0;
	map_drain(bpf_map__fd(S.skel->maps.flows), sizeof(struct ss_flow_key),
		  sizeof(struct ss_flow), want_flow, take_flow, &closed);
	/* peers once every flow of the interval is known */
	for (size_t i = 0; i < S.nrows; i++) {
		struct row *r = &S.rows[i];

		r->peer = peer_of(&r->t, NULL);
		if (r->peer && r->peer->ident.pid == r->ident.pid &&
		    !memcmp(&r->peer->t, &r->t, sizeof(r->t)))
			r->peer = NULL;
		aiscope_ident_cgroup(&r->ident, &r->ci);
	}
}

/* ---- the flow table ---- */

static uint64_t sort_value(const struct row *r)
{
	switch (cfg.sort[0]) {
	case 't': return r->tx_bytes;
	case 'r': return r->rx_bytes;
	case 'c': return r->tx_calls + r->rx_calls;
	case 'p': return UINT64_MAX - r->ident.pid;
	default: return r->tx_bytes + r->rx_bytes;
	}
}

static int cmp_rows(const void *pa, const void *pb)
{
	const struct row *a = pa, *b = pb;
	uint64_t va = sort_value(a), vb = sort_value(b);

	return cmp_u64(vb, va) ?: cmp_u64(a->ident.pid, b->ident.pid) ?: cmp_u64(a->t.lport, b->t.lport);
}

static void json_tuple(struct jw *w, const struct ss_tuple *t)
{
	char a[INET6_ADDRSTRLEN];

	jw_kstr(w, "proto", proto_name(t->proto));
	jw_kstr(w, "family", t->family == 4 ? "ipv4" : "ipv6");
	fmt_addr(t, t->laddr, a, sizeof(a));
	jw_kstr(w, "saddr", a);
	jw_ku64(w, "sport", t->lport);
	if (peer_known(t)) {
		fmt_addr(t, t->raddr, a, sizeof(a));
		jw_kstr(w, "daddr", a);
		jw_ku64(w, "dport", t->rport);
	} else {
		jw_knull(w, "daddr");
		jw_knull(w, "dport");
	}
}

static void json_peer(struct jw *w, const struct rflow *peer)
{
	if (!peer) {
		jw_knull(w, "peer_pid");
		jw_knull(w, "peer_comm");
		return;
	}
	jw_ku64(w, "peer_pid", peer->ident.pid);
	jw_kstrn(w, "peer_comm", peer->ident.comm, sizeof(peer->ident.comm));
}

static void json_row(const struct row *r, uint64_t now, uint64_t interval)
{
	struct jw *w = &S.jw;

	jw_record_begin(w, "sample", TOOL, now);
	jw_ku64(w, "seq", S.loop.ticks);
	jw_ku64(w, "interval_ns", interval);
	jw_kstr(w, "row", "flow");
	aiscope_ident_json(w, &r->ident, false);
	json_tuple(w, &r->t);
	jw_ku64(w, "tx_bytes", r->tx_bytes);
	jw_ku64(w, "rx_bytes", r->rx_bytes);
	jw_ku64(w, "tx_calls", r->tx_calls);
	jw_ku64(w, "rx_calls", r->rx_calls);
	json_peer(w, r->peer);
	jw_record_end(w);
}

static const struct tcol flow_cols[] = {
	{ "TIME", 8, TC_LEFT }, { "PID", 7, 0 }, { "COMM", 15, TC_LEFT },
	{ "CONTAINER", 12, TC_LEFT }, { "PROTO", 5, TC_LEFT }, { "LADDR:LPORT", 21, TC_LEFT },
	{ "RADDR:RPORT", 21, TC_LEFT }, { "TX(KiB)", 10, 0 }, { "RX(KiB)", 10, 0 },
	{ "TX_CALLS", 9, 0 }, { "RX_CALLS", 9, 0 }, { "PEER_PID", 8, 0 },
	{ "PEER_COMM", 15, TC_LEFT },
};

static void remote_str(const struct ss_tuple *t, char *buf, size_t len)
{
	if (peer_known(t))
		fmt_endpoint(t, t->raddr, t->rport, buf, len);
	else
		snprintf(buf, len, "*");
}

static void table_row(struct table *t, const struct row *r, const char *hms)
{
	char l[ENDPOINT_LEN], rem[ENDPOINT_LEN], buf[16];

	if (env.timestamp)
		table_str(t, hms);
	table_u64(t, r->ident.pid);
	table_str(t, r->ident.comm);
	table_str(t, aiscope_container_short(&r->ci, buf));
	table_str(t, proto_name(r->t.proto));
	fmt_endpoint(&r->t, r->t.laddr, r->t.lport, l, sizeof(l));
	remote_str(&r->t, rem, sizeof(rem));
	table_str(t, l);
	table_str(t, rem);
	table_fixed(t, r->tx_bytes / 1024.0, 1);
	table_fixed(t, r->rx_bytes / 1024.0, 1);
	table_u64(t, r->tx_calls);
	table_u64(t, r->rx_calls);
	if (r->peer) {
		table_u64(t, r->peer->ident.pid);
		table_str(t, r->peer->ident.comm);
	} else {
		table_dashes(t, 2);
	}
	table_end_row(t);
}

static void print_interval(uint64_t interval)
{
	uint64_t now = aiscope_now_realtime();
	size_t shown;
	struct table t;
	char hms[16];

	sort_array(S.rows, S.nrows, sizeof(*S.rows), cmp_rows);
	shown = table_shown(S.nrows, env.rows);
	if (env.json) {
		for (size_t i = 0; i < shown; i++)
			json_row(&S.rows[i], now, interval);
		return;
	}
	table_block_begin(stdout, env.tty && !env.noclear, now, interval, "socketsnoop");
	fmt_hms(now, hms, sizeof(hms));
	table_init_time(&t, stdout, flow_cols, ARRAY_SIZE(flow_cols), env.timestamp,
			env.tty && !env.wide);
	table_header(&t);
	for (size_t i = 0; i < shown; i++)
		table_row(&t, &S.rows[i], hms);
	table_more(stdout, shown, S.nrows);
}

/* ---- events ---- */

static const char *const ev_names[] = {
	[SS_EV_CONNECT] = "connect", [SS_EV_ACCEPT] = "accept", [SS_EV_CLOSE] = "close",
	[SS_EV_SEND] = "send", [SS_EV_RECV] = "recv", [SS_EV_FIRST_SEEN] = "first_seen",
	[SS_EV_IDLE] = "idle",
};

static const struct tcol ev_cols[] = {
	{ "TIME", 8, TC_LEFT }, { "EVENT", 10, TC_LEFT }, { "PID", 7, 0 }, { "COMM", 15, TC_LEFT },
	{ "PROTO", 5, TC_LEFT }, { "LADDR:LPORT", 21, TC_LEFT }, { "RADDR:RPORT", 21, TC_LEFT },
	{ "BYTES", 9, 0 }, { "LAT(us)", 9, 0 }, { "DUR(ms)", 9, 0 }, { "TX(B)", 10, 0 },
	{ "RX(B)", 10, 0 }, { "PEER_PID", 8, 0 },
};

static bool ev_has_totals(uint32_t k)
{
	return k == SS_EV_CLOSE || k == SS_EV_IDLE;
}

static void print_event(const struct ss_event *e, uint64_t rt)
{
	const struct rflow *peer = peer_of(&e->t, NULL);
	bool lat = e->kind == SS_EV_CONNECT || e->kind == SS_EV_ACCEPT;
	bool io = e->kind == SS_EV_SEND || e->kind == SS_EV_RECV;
	bool tot = ev_has_totals(e->kind);
	bool dur = tot && e->start_known;
	const char *name = e->kind < ARRAY_SIZE(ev_names) ? ev_names[e->kind] : "?";

	if (peer && peer->ident.pid == e->ident.pid && !memcmp(&peer->t, &e->t, sizeof(e->t)))
		peer = NULL;
	if (env.json) {
		struct jw *w = &S.jw;

		jw_record_begin(w, "event", TOOL, rt);
		jw_kstr(w, "event", name);
		aiscope_ident_json(w, &e->ident, true);
		json_tuple(w, &e->t);
		jw_ku64_or_null(w, "bytes", io, e->bytes);
		jw_ku64_or_null(w, "latency_ns", lat, e->latency_ns);
		jw_ku64_or_null(w, "duration_ns", dur, e->duration_ns);
		jw_ku64_or_null(w, "tx_bytes", tot, e->tx_bytes);
		jw_ku64_or_null(w, "rx_bytes", tot, e->rx_bytes);
		jw_ku64_or_null(w, "tx_calls", tot, e->tx_calls);
		jw_ku64_or_null(w, "rx_calls", tot, e->rx_calls);
		json_peer(w, peer);
		jw_record_end(w);
	} else {
		char l[ENDPOINT_LEN], rem[ENDPOINT_LEN], hms[16];
		struct table t;

		table_init_time(&t, stdout, ev_cols, ARRAY_SIZE(ev_cols), env.timestamp,
				env.tty && !env.wide);
		if (env.timestamp) {
			fmt_hms(rt, hms, sizeof(hms));
			table_str(&t, hms);
		}
		table_str(&t, name);
		table_u64(&t, e->ident.pid);
		table_str(&t, e->ident.comm);
		table_str(&t, proto_name(e->t.proto));
		fmt_endpoint(&e->t, e->t.laddr, e->t.lport, l, sizeof(l));
		remote_str(&e->t, rem, sizeof(rem));
		table_str(&t, l);
		table_str(&t, rem);
		table_u64_or_dash(&t, io, e->bytes);
		table_fixed_or_dash(&t, lat, e->latency_ns / 1e3, 1);
		table_fixed_or_dash(&t, dur, e->duration_ns / 1e6, 1);
		table_u64_or_dash(&t, tot, e->tx_bytes);
		table_u64_or_dash(&t, tot, e->rx_bytes);
		table_u64_or_dash(&t, peer != NULL, peer ? peer->ident.pid : 0);
		table_end_row(&t);
	}
}

static int count_event(void)
{
	S.events++;
	if (env.count && S.events >= env.count)
		return aiscope_loop_stop(&S.loop, AISCOPE_EXIT_COUNT);
	return 0;
}

static int on_event(void *ctx, void *data, size_t len)
{
	const struct ss_event *e = data;

	if (len < sizeof(*e) || !aiscope_loop_running(&S.loop))
		return 0;
	/* the endpoints of connects and accepts name the peers of later events */
	if (e->kind != SS_EV_SEND && e->kind != SS_EV_RECV && peer_known(&e->t))
		rflow_get(e->ident.pid, &e->t, &e->ident);
	print_event(e, aiscope_realtime(e->ts));
	return count_event();
}

/* -e: UDP sockets silent past --idle leave the kernel's table */
struct idle_sweep {
	int fd;
	uint64_t now;
};

static bool udp_idle(const void *key, void *ctx)
{
	const struct idle_sweep *w = ctx;
	struct ss_conn c;

	return !bpf_map_lookup_elem(w->fd, key, &c) && c.proto == SS_PROTO_UDP &&
	       c.last_ns + cfg.idle_ns <= w->now;
}

static void report_idle(const void *key, const void *value, void *ctx)
{
	const struct ss_conn *c = value;
	struct ss_event e = { .kind = SS_EV_IDLE };

	S.idle_sockets++;
	if (!c->has_owner || !aiscope_loop_running(&S.loop))
		return;
	e.ts = c->last_ns;
	e.ident = c->owner;
	e.t = c->t;
	e.duration_ns = c->last_ns - c->start_ns;
	e.tx_bytes = c->tx_bytes;
	e.rx_bytes = c->rx_bytes;
	e.tx_calls = c->tx_calls;
	e.rx_calls = c->rx_calls;
	print_event(&e, aiscope_realtime(e.ts));
	count_event();
}

static void sweep_idle(void)
{
	struct idle_sweep w = {
		.fd = bpf_map__fd(S.skel->maps.conns),
		.now = clock_ns(feat_boot_clock() ? CLOCK_BOOTTIME : CLOCK_MONOTONIC),
	};

	map_drain(w.fd, sizeof(uint64_t), sizeof(struct ss_conn), udp_idle, report_idle, &w);
}

static int on_tick(void *ctx)
{
	uint64_t interval = aiscope_loop_interval(&S.loop);

	collect();
	if (cfg.events)
		sweep_idle();
	edge_metrics_of(&P.edges, run_edges);
	if (S.streaming)
		return 0;
	print_interval(interval);
	if (env.count && S.loop.ticks >= env.count)
		return AISCOPE_STOP;
	return 0;
}

/* The last drain takes both epochs: the interval cut short, or what a
 * streaming run has left (its events still print). */
static int on_final(void *ctx)
{
	S.final = true;
	if (!S.streaming)
		return on_tick(ctx);
	collect();
	edge_metrics_of(&P.edges, run_edges);
	return 0;
}

/* ---- the end: edges and summary ---- */

static void side_endpoint(const struct ss_tuple *t, bool local, const struct ss_tuple *other,
			  char *buf, size_t len)
{
	const uint8_t *a = local ? t->laddr : t->raddr;
	uint16_t port = local ? t->lport : t->rport;

	/* a wildcard local address, as the other end saw it */
	if (local && other && addr_any(a))
		a = other->raddr;
	fmt_endpoint(t, a, port, buf, len);
}

static void add_edges(struct edge_table *et)
{
	for (uint32_t i = 0; i < R.n; i++) {
		const struct rflow *f = &R.v[i];
		const struct rflow *p = peer_of(&f->t, f);
		char l[ENDPOINT_LEN], r[ENDPOINT_LEN], ch[2 * ENDPOINT_LEN + 4];
		struct edge_side me, other;
		const char *kind = proto_name(f->t.proto);

		side_endpoint(&f->t, true, p ? &p->t : NULL, l, sizeof(l));
		if (peer_known(&f->t))
			fmt_endpoint(&f->t, f->t.raddr, f->t.rport, r, sizeof(r));
		else
			snprintf(r, sizeof(r), "*");
		me = (struct edge_side){ .id = &f->ident, .endpoint = l };
		other = (struct edge_side){ .id = p ? &p->ident : NULL, .endpoint = r };
		if (f->tx_calls) {
			snprintf(ch, sizeof(ch), "%s->%s", l, r);
			edge_add(et, kind, ch, &me, &other, f->tx_bytes, f->tx_calls, f->last_ns);
			if (f->first_ns)
				edge_add(et, kind, ch, &me, &other, 0, 0, f->first_ns);
		}
		if (!f->rx_calls)
			continue;
		/* what this end read: the peer's edge when it is a process,
		 * else what the remote endpoint sent */
		snprintf(ch, sizeof(ch), "%s->%s", r, l);
		if (p) {
			edge_add_read(et, kind, ch, &other, &me, f->rx_bytes, f->last_ns);
		} else {
			edge_add(et, kind, ch, &other, &me, f->rx_bytes, f->rx_calls, f->last_ns);
			edge_add_read(et, kind, ch, &other, &me, f->rx_bytes, f->first_ns);
		}
	}
}

/* two edges a flow at most: what it sent, what it received */
static struct edge_table *run_edges(void)
{
	struct edge_table *et = edges_new(2 * R.max);

	if (!et)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	add_edges(et);
	return et;
}

static void print_edges(void)
{
	struct edge_table *et = run_edges();

	edges_json(et, &S.jw, TOOL, NULL, NULL);
	if (edges_dropped(et))
		fprintf(stderr, "%s: %llu edges left out of the edge lines (table full)\n",
			TOOL, (unsigned long long)edges_dropped(et));
	edges_free(et);
}

static void report_evicted(void)
{
	if (R.evicted)
		fprintf(stderr, "%s: %llu flows idle longest were forgotten to keep the run's flow table at %u: left out of the edge lines\n",
			TOOL, (unsigned long long)R.evicted, R.max);
}

static void print_summary(void)
{
	/* keys only: a count (out of memory: unknown, null) */
	int nflows = map_walk(bpf_map__fd(S.skel->maps.flows), sizeof(struct ss_flow_key), 0,
			      NULL, NULL);
	int nconns = cfg.events ? map_walk(bpf_map__fd(S.skel->maps.conns), sizeof(uint64_t), 0,
					   NULL, NULL) : 0;

	if (env.json) {
		print_edges();
		aiscope_summary_begin(&S.jw, &S.bpf, &S.loop, S.streaming ? S.events : S.tx_calls + S.rx_calls);
		jw_ku64(&S.jw, "intervals", S.loop.ticks);
		jw_ku64(&S.jw, "flows", R.n + R.evicted);
		jw_ku64(&S.jw, "edge_flows_evicted", R.evicted);
		jw_ku64(&S.jw, "tx_bytes", S.tx_bytes);
		jw_ku64(&S.jw, "rx_bytes", S.rx_bytes);
		jw_ku64(&S.jw, "tx_calls", S.tx_calls);
		jw_ku64(&S.jw, "rx_calls", S.rx_calls);
		jw_ki64_or_null(&S.jw, "kernel_flows", nflows >= 0, nflows);
		jw_ki64_or_null(&S.jw, "kernel_sockets", nconns >= 0, nconns);
		jw_ku64(&S.jw, "idle_sockets", S.idle_sockets);
		jw_record_end(&S.jw);
		report_evicted();
		return;
	}
	fprintf(S.streaming ? stderr : stdout,
		"# summary: %llu flows, tx %llu bytes in %llu calls, rx %llu bytes in %llu calls, %llu events, %llu lost events\n",
		(unsigned long long)(R.n + R.evicted), (unsigned long long)S.tx_bytes, (unsigned long long)S.tx_calls,
		(unsigned long long)S.rx_bytes, (unsigned long long)S.rx_calls,
		(unsigned long long)S.events, (unsigned long long)aiscope_lost_total(&S.bpf));
	report_evicted();
}

/* ---- setup ---- */

/* Which protocols the generic programs count, and the hooks that follow. */
static void plan_generic(void)
{
	const unsigned int fexit = PM_BIT(PM_FEXIT) | PM_BIT(PM_KRETPROBE);
	uint32_t mask = 0;
	bool send_gen = !probe_chosen_by(&hooks[H_SEND], fexit);
	bool recv_gen = !probe_chosen_by(&hooks[H_RECV], fexit);

	if (send_gen != recv_gen)
		fprintf(stderr, "%s: warning: send and receive use different mechanisms\n", TOOL);
	if (send_gen || recv_gen)
		mask |= SS_GEN_TCP;
	/* UDP through the generic programs unless all its function hooks work */
	if (!probe_chosen_by(&hooks[H_UDP_SEND], fexit) || !probe_chosen_by(&hooks[H_UDP_RECV], fexit))
		mask |= SS_GEN_UDP4;
	if (!probe_chosen_by(&hooks[H_UDP6_SEND], fexit) || !probe_chosen_by(&hooks[H_UDP6_RECV], fexit))
		mask |= SS_GEN_UDP6;
	if (mask & SS_GEN_UDP4) {
		probe_drop(&hooks[H_UDP_SEND], S.skel->obj);
		probe_drop(&hooks[H_UDP_RECV], S.skel->obj);
		probe_drop(&hooks[H_UDP_SEND_IN], S.skel->obj);
		probe_drop(&hooks[H_UDP_RECV_IN], S.skel->obj);
	}
	if (mask & SS_GEN_UDP6) {
		probe_drop(&hooks[H_UDP6_SEND], S.skel->obj);
		probe_drop(&hooks[H_UDP6_RECV], S.skel->obj);
		probe_drop(&hooks[H_UDP6_SEND_IN], S.skel->obj);
		probe_drop(&hooks[H_UDP6_RECV_IN], S.skel->obj);
	}
	if (((mask & (SS_GEN_UDP4 | SS_GEN_UDP6)) && !send_gen && !recv_gen) ||
	    ((mask & SS_GEN_TCP) && !probe_chosen(&hooks[H_SEND])))
		aiscope_fail(EXIT_CANNOT_RUN, "UDP needs sock_send_length/sock_recv_length or fexit or kretprobe udp_sendmsg/udp_recvmsg: none attaches here");
	/* the syscall hooks cost every send and receive call of the host:
	 * only where UDP is wanted and the generic path counts it */
	if (!(mask & (SS_GEN_UDP4 | SS_GEN_UDP6)) || cfg.proto == SS_PROTO_TCP)
		for (int h = H_SENDTO_IN; h <= H_RECVMMSG_OUT; h++)
			probe_drop(&hooks[h], S.skel->obj);
	if (!cfg.events)
		for (int h = H_STATE; h <= H_CLOSE; h++)
			probe_drop(&hooks[h], S.skel->obj);
	else if (cfg.proto == SS_PROTO_UDP)
		for (int h = H_STATE; h <= H_ACCEPT_OLD; h++)
			probe_drop(&hooks[h], S.skel->obj);
	else if (!probe_chosen(&hooks[H_STATE]) && cfg.proto != SS_PROTO_UDP)
		aiscope_fail(EXIT_CANNOT_RUN, "-e needs sock:inet_sock_set_state: %s",
			     "no mechanism attaches here (--list-probes shows why)");
	S.skel->rodata->gen_mask = mask;
	S.skel->rodata->close_at_destroy = probe_chosen(&hooks[H_DESTROY]) != NULL;
}

/* Before --list-probes: a kretprobe's entry half only with it, and the
 * recvmsg flags where this kernel's prototype has them. */
static void on_plan(struct aiscope_bpf *b)
{
	static const char *const recv_funcs[] = { "tcp_recvmsg", "udp_recvmsg", "udpv6_recvmsg" };
	volatile uint32_t *flags_arg[] = {
		&S.skel->rodata->tcp_recv_flags_arg, &S.skel->rodata->udp_recv_flags_arg,
		&S.skel->rodata->udp6_recv_flags_arg,
	};

	for (size_t i = 0; i < ARRAY_SIZE(kret_pairs); i++) {
		struct probe_hook *ret = &hooks[kret_pairs[i][0]], *entry = &hooks[kret_pairs[i][1]];

		if (!probe_chosen_by(ret, PM_BIT(PM_KRETPROBE)))
			probe_drop(entry, NULL);
		else if (!probe_chosen(entry))
			aiscope_fail(EXIT_CANNOT_RUN, "kretprobe %s without its kprobe: %s",
				     probe_chosen(ret)->target, entry->why[0]);
	}
	for (size_t i = 0; i < ARRAY_SIZE(recv_funcs); i++) {
		int arg = feat_func_param(recv_funcs[i], "flags");

		if (arg == 3 || arg == 4)
			*flags_arg[i] = arg;
	}
}

static void validate(void)
{
	if (env.sort)
		cfg.sort = sort_keys[opt_word("--sort", env.sort, sort_keys)];
}

static void fill_ports(void)
{
	int fd = bpf_map__fd(S.skel->maps.ports);
	uint8_t one = 1;

	for (int i = 0; i < cfg.nports; i++) {
		uint16_t p = cfg.ports[i];

		if (bpf_map_update_elem(fd, &p, &one, BPF_ANY))
			aiscope_fail(EXIT_RUNTIME, "cannot fill BPF map ports: %s", strerror(errno));
	}
}

int main(int argc, char **argv)
{
	int code;

	aiscope_parse(&argp, argc, argv, TOOL,
		      AISCOPE_AGGREGATING | AISCOPE_STREAMING | AISCOPE_METRICS);
	validate();
	metrics_init();
	jw_init(&S.jw, stdout);
	S.streaming = cfg.events || cfg.io;

	R.max = aiscope_test_cap("SS_RUN_FLOWS", RUN_FLOWS_MAX);
	S.skel = socketsnoop_bpf__open_opts(aiscope_open_opts());
	if (!S.skel)
		aiscope_fail(EXIT_RUNTIME, "cannot open the BPF object: %s", strerror(errno));
	S.skel->rodata->track_conns = cfg.events;
	S.skel->rodata->io_events = cfg.io;
	S.skel->rodata->want_proto = cfg.proto;
	S.skel->rodata->want_family = cfg.family;
	S.skel->rodata->by_port = cfg.nports > 0;

	S.bpf = (struct aiscope_bpf){
		.hooks = hooks, .nhooks = ARRAY_SIZE(hooks),
		.streaming = S.streaming, .on_event = on_event, .on_plan = on_plan,
	};
	aiscope_bpf_prepare(&S.bpf, S.skel->obj, &S.skel->rodata->aiscope_cfg);
	plan_generic();
	if (cfg.events)
		aiscope_map_resize(S.skel->obj, "conns", 32768);
	aiscope_bpf_load(&S.bpf, socketsnoop_bpf__load(S.skel));
	fill_ports();
	aiscope_bpf_attach(&S.bpf);

	if (S.streaming && !env.json)
		table_header_time(stdout, ev_cols, ARRAY_SIZE(ev_cols), env.timestamp);
	aiscope_tracing("TCP/UDP flows (%s)", probe_summary(hooks, ARRAY_SIZE(hooks)));

	S.loop = (struct aiscope_loop){
		.bpf = &S.bpf,
		.on_tick = on_tick,
		.on_final = on_final,
		.final_drains = S.streaming,
		.tick_ns = env.interval_ns,
	};
	code = aiscope_run(&S.loop, print_summary);
	socketsnoop_bpf__destroy(S.skel);
	free(S.rows);
	free(R.v);
	free(R.by_key);
	free(R.by_ports);
	return code;
}
