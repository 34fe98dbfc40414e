// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ipcsnoop: which local processes feed each other, through which channel?
 *
 * Bytes and messages through pipes, FIFOs, unix sockets, SysV and POSIX
 * message queues and eventfds, plus SysV and POSIX shared-memory
 * attach/detach, per
 * channel with its writer and reader processes, aggregated in the kernel;
 * -e streams each operation; --json ends with one edge line per writer and
 * channel (docs/edges.md).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "edge.h"
#include "kfeatures.h"
#include "json.h"
#include "mapdrain.h"
#include "metrics.h"
#include "complete.h"
#include "opts.h"
#include "run.h"
#include "table.h"
#include "util.h"
#include "ipcsnoop.h"
#include "ipcsnoop.skel.h"

#define TOOL "ipcsnoop"

static const char doc[] =
"Bytes and messages between local processes: pipes, FIFOs, unix sockets,\n"
"SysV and POSIX message queues, eventfds, and shared-memory attaches.\n"
"\n"
"Every interval, a top-like table per channel with the processes that wrote\n"
"and read it, aggregated in the kernel. -e streams each operation instead.\n"
"With --json the run ends with one edge line per writer and channel.\n"
"\n"
"USAGE: ipcsnoop [OPTIONS] [interval [count]]"
"\v"
"EXAMPLES:\n"
"  ipcsnoop                      # busiest channels, each second\n"
"  ipcsnoop --kind unix,pipe -s msgs   # unix sockets and pipes by messages\n"
"  ipcsnoop -e -p 1234           # each operation of process 1234\n"
"  ipcsnoop -j -d 30s | jq -c 'select(.type==\"edge\")'  # who fed whom\n"
"  ipcsnoop --container 3f2a -j -n 5 | jq 'select(.type==\"sample\")'\n"
"\n"
"Exit status: 0 done, 1 runtime error, 2 usage error, 77 cannot run here.";

enum { OPT_KIND = 0x200 };

static const struct argp_option opts[] = {
	{ NULL, 0, NULL, 0, "ipcsnoop:", 1 },
	{ "events", 'e', NULL, 0, "Stream one line per operation instead of the table", 1 },
	{ "kind", OPT_KIND, "KIND[,KIND...]", 0,
	  "Only these: pipe, fifo, unix, msq, mq, eventfd, shm", 1 },
	{},
};

/* ended by a NULL: --kind takes the names from IPC_PIPE on */
static const char *const kind_names[IPC_KINDS + 1] = {
	[IPC_NONE] = "?", [IPC_PIPE] = "pipe", [IPC_FIFO] = "fifo", [IPC_UNIX] = "unix",
	[IPC_MSQ] = "msq", [IPC_MQ] = "mq", [IPC_EVENTFD] = "eventfd", [IPC_SHM] = "shm",
};

static const char *const sort_keys[] = { "bytes", "msgs", "read", NULL };

/* what the shell completions offer after its options (lib/complete.h) */
const struct opt_value aiscope_opt_values[] = {
	{ .name = "sort", .kind = OV_WORDS, .words = sort_keys },
	{ .name = "kind", .kind = OV_LIST, .words = kind_names + IPC_PIPE },
	{},
};

static struct {
	bool events;
	uint32_t kinds;		/* 1 << kind */
	const char *sort;
} cfg = { .kinds = ~0U, .sort = "bytes" };

static error_t parse_arg(int key, char *arg, struct argp_state *state)
{
	switch (key) {
	case 'e':
		cfg.events = true;
		env.no_metrics = "-e streams operations: --prometheus and --listen need the interval view";
		break;
	case OPT_KIND:
		cfg.kinds = opt_words("--kind", arg, kind_names + IPC_PIPE) << IPC_PIPE;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp argp = AISCOPE_ARGP(opts, parse_arg, doc);

/* The syscall path is required: it is the one that works everywhere (its
 * sys_enter only with the classic sys_exit, which lacks the arguments). The
 * function hooks are richer where the kernel allows them (fexit); each one
 * chosen takes its (kind, direction) off the syscall path. */
enum {
	H_SYS_ENTER, H_SYS_EXIT, H_UNIX_SEND, H_UNIX_RECV, H_UNIX_DGRAM_SEND, H_UNIX_DGRAM_RECV,
	H_UNIX_SEQ_SEND, H_UNIX_SEQ_RECV,
	H_PIPE_WRITE, H_PIPE_READ, H_FIFO_WRITE, H_FIFO_READ, H_EFD_WRITE, H_EFD_READ,
	H_MSGSND, H_MSGRCV, H_MQ_SEND, H_MQ_RECV, H_NR,
};

static struct probe_hook hooks[H_NR] = {
	[H_SYS_ENTER] = { .name = "sys_enter", .preemptible = true, .cand = {
		PROBE_TRACEPOINT("raw_syscalls", "sys_enter", "sys_enter") } },
	[H_SYS_EXIT] = { .name = "sys_exit", .preemptible = true, .cand = {
		PROBE_TRACEPOINT("raw_syscalls", "sys_exit", "sys_exit") } },
	[H_UNIX_SEND] = { .name = "unix_send", .optional = true, .cand = {
		{ PM_FEXIT, "unix_stream_sendmsg", "unix_stream_send_fexit" },
		PROBE_BTF_RAW("sock_send_length", "sock_send") } },
	[H_UNIX_RECV] = { .name = "unix_recv", .optional = true, .cand = {
		{ PM_FEXIT, "unix_stream_recvmsg", "unix_stream_recv_fexit" },
		PROBE_BTF_RAW("sock_recv_length", "sock_recv") } },
	[H_UNIX_DGRAM_SEND] = PROBE_HOOK_FEXIT("unix_dgram_send", "unix_dgram_sendmsg", "unix_dgram_send"),
	[H_UNIX_DGRAM_RECV] = PROBE_HOOK_FEXIT("unix_dgram_recv", "unix_dgram_recvmsg", "unix_dgram_recv"),
	/* they call the dgram functions, maybe inlined: hooked on their own */
	[H_UNIX_SEQ_SEND] = PROBE_HOOK_FEXIT("unix_seqpacket_send", "unix_seqpacket_sendmsg",
					   "unix_seqpacket_send"),
	[H_UNIX_SEQ_RECV] = PROBE_HOOK_FEXIT("unix_seqpacket_recv", "unix_seqpacket_recvmsg",
					   "unix_seqpacket_recv"),
	/* 6.15 renamed pipe_write/pipe_read, which served FIFOs too, to
	 * anon_pipe_*, and gave FIFOs their own fifo_pipe_* wrappers */
	[H_PIPE_WRITE] = { .name = "pipe_write", .optional = true, .cand = {
		{ PM_FEXIT, "anon_pipe_write", "pipe_write_fexit" },
		{ PM_FEXIT, "pipe_write", "pipe_write_old_fexit" } } },
	[H_PIPE_READ] = { .name = "pipe_read", .optional = true, .cand = {
		{ PM_FEXIT, "anon_pipe_read", "pipe_read_fexit" },
		{ PM_FEXIT, "pipe_read", "pipe_read_old_fexit" } } },
	[H_FIFO_WRITE] = PROBE_HOOK_FEXIT("fifo_write", "fifo_pipe_write", "fifo_write"),
	[H_FIFO_READ] = PROBE_HOOK_FEXIT("fifo_read", "fifo_pipe_read", "fifo_read"),
	[H_EFD_WRITE] = PROBE_HOOK_FEXIT("eventfd_write", "eventfd_write", "eventfd_write"),
	[H_EFD_READ] = PROBE_HOOK_FEXIT("eventfd_read", "eventfd_read", "eventfd_read"),
	[H_MSGSND] = PROBE_HOOK_FEXIT("msgsnd", "do_msgsnd", "msgsnd"),
	[H_MSGRCV] = PROBE_HOOK_FEXIT("msgrcv", "do_msgrcv", "msgrcv"),
	[H_MQ_SEND] = PROBE_HOOK_FEXIT("mq_timedsend", "do_mq_timedsend", "mq_send"),
	[H_MQ_RECV] = PROBE_HOOK_FEXIT("mq_timedreceive", "do_mq_timedreceive", "mq_recv"),
};

/* ---- rows: one per (channel, process, direction) ---- */

struct prow {
	struct ipc_key ch;
	uint32_t pid;
	uint32_t dir;
	struct aiscope_ident ident;
	uint64_t ops, bytes, first_ts, last_ts;
	uint32_t peer_pid;
};

struct ptable {
	struct prow *rows;
	size_t n, cap;
	size_t *slot;		/* open addressing: index + 1, 0 empty */
	size_t nslots;
};

static uint64_t hash_key(const struct ipc_key *ch, uint32_t pid, uint32_t dir)
{
	uint64_t h = 1469598103934665603ULL;
	uint64_t v[4] = { ch->id, ch->id2, ((uint64_t)ch->kind << 32) | dir, pid };

	for (int i = 0; i < 4; i++) {
		h ^= v[i];
		h *= 1099511628211ULL;
		h ^= h >> 29;
	}
	return h;
}

static bool key_eq(const struct ipc_key *a, const struct ipc_key *b)
{
	return a->id == b->id && a->id2 == b->id2 && a->kind == b->kind;
}

static void pt_rehash(struct ptable *t, size_t ns)
{
	size_t *slot = calloc(ns, sizeof(*slot));

	if (!slot)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	for (size_t i = 0; i < t->n; i++) {
		const struct prow *r = &t->rows[i];
		size_t s = hash_key(&r->ch, r->pid, r->dir) & (ns - 1);

		while (slot[s])
			s = (s + 1) & (ns - 1);
		slot[s] = i + 1;
	}
	free(t->slot);
	t->slot = slot;
	t->nslots = ns;
}

/* The row of (ch, pid, dir), created empty when new (and create). */
static struct prow *pt_get(struct ptable *t, const struct ipc_key *ch, uint32_t pid, uint32_t dir,
			   bool create)
{
	size_t s;
	struct prow *r;

	if ((t->n + 1) * 2 > t->nslots)
		pt_rehash(t, t->nslots ? t->nslots * 2 : 256);
	s = hash_key(ch, pid, dir) & (t->nslots - 1);
	for (; t->slot[s]; s = (s + 1) & (t->nslots - 1)) {
		r = &t->rows[t->slot[s] - 1];
		if (r->pid == pid && r->dir == dir && key_eq(&r->ch, ch))
			return r;
	}
	if (!create)
		return NULL;
	t->rows = aiscope_grow(t->rows, &t->cap, t->n, sizeof(*t->rows));
	r = &t->rows[t->n];
	memset(r, 0, sizeof(*r));
	r->ch = *ch;
	r->pid = pid;
	r->dir = dir;
	t->slot[s] = ++t->n;
	return r;
}

static void pt_clear(struct ptable *t)
{
	t->n = 0;
	if (t->slot)
		memset(t->slot, 0, t->nslots * sizeof(*t->slot));
}

/* Rows of the whole run kept at most: a host that makes new pipes all
 * day must not grow the tool without bound. With it full, 29 MiB RSS
 * and 35 MiB at the exit's peak (measured: docs/fleet.md), within the
 * unit's MemoryMax=128M. Past it the rows idle longest are forgotten
 * (counted in edge_rows_dropped, left out of the edges). */
#define RUN_ROWS_MAX	(1U << 16)
/* the channel names kept beyond the run's: an interval's rows (the BPF
 * stats map holds 8192 of two intervals) */
#define NAMES_SLACK	8192

static bool pt_add(struct ptable *t, const struct prow *src, size_t max)
{
	struct prow *r = pt_get(t, &src->ch, src->pid, src->dir, t->n < max);

	if (!r)
		return false;

	if (!r->ops && !r->first_ts) {
		r->ident = src->ident;
		r->first_ts = src->first_ts;
	}
	if (src->first_ts && src->first_ts < r->first_ts)
		r->first_ts = src->first_ts;
	if (src->last_ts > r->last_ts)
		r->last_ts = src->last_ts;
	r->ops += src->ops;
	r->bytes += src->bytes;
	if (src->peer_pid)
		r->peer_pid = src->peer_pid;
	return true;
}

/* ---- channel names ---- */

struct cname {
	struct ipc_key ch;
	char *name;
	long long key;		/* msq: the IPC key, -1 unknown */
	uint64_t size;		/* shm: segment size, 0 unknown */
	uint64_t tried;		/* the tick it was last looked up */
	bool retry;		/* incomplete: look again next tick */
	bool keep;		/* forget_names(): a row still names it */
};

static uint64_t cur_tick = 1;

static struct {
	struct cname *v;
	size_t n, cap;
	size_t *slot;		/* open addressing: index + 1, 0 empty */
	size_t nslots;
} names;

static size_t cname_slot(const struct ipc_key *ch, size_t nslots)
{
	return hash_key(ch, 0, 0) & (nslots - 1);
}

static struct cname *cname_find(const struct ipc_key *ch)
{
	if (!names.nslots)
		return NULL;
	for (size_t s = cname_slot(ch, names.nslots); names.slot[s]; s = (s + 1) & (names.nslots - 1))
		if (key_eq(&names.v[names.slot[s] - 1].ch, ch))
			return &names.v[names.slot[s] - 1];
	return NULL;
}

/* The open-addressing index of the names, ns slots, built anew. */
static void cname_reindex(size_t ns)
{
	size_t *slot = calloc(ns, sizeof(*slot)), s;

	if (!slot)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	for (size_t i = 0; i < names.n; i++) {
		s = cname_slot(&names.v[i].ch, ns);
		while (slot[s])
			s = (s + 1) & (ns - 1);
		slot[s] = i + 1;
	}
	free(names.slot);
	names.slot = slot;
	names.nslots = ns;
}

/* A new entry for ch (not in the table yet). */
static struct cname *cname_new(const struct ipc_key *ch)
{
	size_t s;

	names.v = aiscope_grow(names.v, &names.cap, names.n, sizeof(*names.v));
	if ((names.n + 1) * 2 > names.nslots)
		cname_reindex(names.nslots ? names.nslots * 2 : 256);
	s = cname_slot(ch, names.nslots);
	while (names.slot[s])
		s = (s + 1) & (names.nslots - 1);
	names.slot[s] = names.n + 1;
	memset(&names.v[names.n], 0, sizeof(names.v[0]));
	names.v[names.n].ch = *ch;
	return &names.v[names.n++];
}

/* FIFO paths: dentry names come leaf first */
static char *render_path(const struct ipc_name *n)
{
	size_t len = 1;
	char *s, *p;

	for (uint32_t i = 0; i < n->depth && i < IPC_NAME_DEPTH; i++)
		len += strnlen(n->comp[i], IPC_NAME_LEN) + 1;
	s = p = malloc(len + 4);
	if (!s)
		return NULL;
	if (n->flags & IPC_NAME_TRUNC)
		p += sprintf(p, "...");
	for (uint32_t i = n->depth; i-- > 0;) {
		size_t l = strnlen(n->comp[i], IPC_NAME_LEN);

		*p++ = '/';
		memcpy(p, n->comp[i], l);
		p += l;
	}
	if (p == s)
		*p++ = '/';
	*p = 0;
	return s;
}

/* unix addresses: a path, or "@name" for the abstract namespace (whose
 * NUL bytes are shown as '@', as /proc/net/unix does) */
static char *render_unix(const struct ipc_name *n)
{
	size_t len = n->len < sizeof(n->raw) ? n->len : sizeof(n->raw);
	char *s = malloc(len + 2);

	if (!s)
		return NULL;
	if (len && n->raw[0] == 0) {
		for (size_t i = 0; i < len; i++)
			s[i] = n->raw[i] ? n->raw[i] : '@';
		s[len] = 0;
	} else {
		memcpy(s, n->raw, len);
		s[len] = 0;	/* a path ends at its NUL */
	}
	return s;
}

static char *render_unix_ino(const struct ipc_name *n)
{
	char *s = NULL;

	if (!n->ino || asprintf(&s, "socket:[%llu]", (unsigned long long)n->ino) < 0)
		return NULL;
	return s;
}

/* A unix channel with no recorded address: the receiving socket's inode
 * when the key has it; else (bytes sent before their connection was
 * accepted and never filed under it, an address whose name could not be
 * recorded) "socket:[?N]", N numbering them in the run, so that no two
 * channels share a name (and an edge) */
static char *unix_fallback(const struct ipc_key *ch)
{
	static unsigned int unknown;
	char *s = NULL;
	int r;

	if (ch->id && !(ch->id & IPC_UNIX_ADDR_ID))
		r = asprintf(&s, "socket:[%llu]", (unsigned long long)ch->id);
	else
		r = asprintf(&s, "socket:[?%u]", ++unknown);
	return r < 0 ? NULL : s;
}

static char *fallback_name(const struct ipc_key *ch)
{
	char *s = NULL;
	int r = -1;

	switch (ch->kind) {
	case IPC_PIPE: r = asprintf(&s, "pipe:[%llu]", (unsigned long long)ch->id); break;
	case IPC_FIFO: r = asprintf(&s, "fifo:[%llu]", (unsigned long long)ch->id); break;
	case IPC_UNIX: return unix_fallback(ch);
	case IPC_MSQ: r = asprintf(&s, "msq:%llu", (unsigned long long)ch->id); break;
	case IPC_MQ: r = asprintf(&s, "mq:[%llu]", (unsigned long long)ch->id); break;
	case IPC_EVENTFD: r = asprintf(&s, "eventfd:[%llu]", (unsigned long long)ch->id); break;
	case IPC_SHM:
		if (ch->id2)	/* POSIX: a /dev/shm file */
			r = asprintf(&s, "shm:[%llu]", (unsigned long long)ch->id);
		else
			r = asprintf(&s, "shm:%llu", (unsigned long long)ch->id);
		break;
	}
	return r < 0 ? NULL : s;
}

static struct ipcsnoop_bpf *skel;

/* /proc/sysvipc/{msg,shm}: the key of a queue, the size of a segment */
static void sysvipc_lookup(struct cname *c)
{
	const char *path = c->ch.kind == IPC_MSQ ? "/proc/sysvipc/msg" : "/proc/sysvipc/shm";
	FILE *f = fopen(path, "r");
	char line[512];
	long long key, id;
	unsigned long long size;

	if (!f)
		return;
	if (!fgets(line, sizeof(line), f))
		goto out;
	while (fgets(line, sizeof(line), f)) {
		/* key msqid ... / key shmid perms size ... */
		if (sscanf(line, "%lld %lld %*o %llu", &key, &id, &size) < 2)
			continue;
		if ((uint64_t)id != c->ch.id)
			continue;
		c->key = key;
		if (c->ch.kind == IPC_SHM)
			c->size = size;
		break;
	}
out:
	fclose(f);
}

static struct cname *cname_of(const struct ipc_key *ch)
{
	struct cname *c = cname_find(ch);
	struct ipc_name n;
	int fd = bpf_map__fd(skel->maps.names);

	if (c && (c->tried == cur_tick || !c->retry))
		return c;
	if (!c) {
		c = cname_new(ch);
		c->key = -1;
	}
	c->tried = cur_tick;
	c->retry = false;
	if (ch->kind == IPC_MSQ || (ch->kind == IPC_SHM && !ch->id2)) {
		sysvipc_lookup(c);
		c->retry = c->key == -1;
	}
	if (c->name && !c->retry)
		return c;
	if (!bpf_map_lookup_elem(fd, ch, &n)) {
		char *s = NULL;

		if (ch->kind == IPC_UNIX)
			s = n.len ? render_unix(&n) : render_unix_ino(&n);
		else if (n.depth)
			s = render_path(&n);
		if (s) {
			free(c->name);
			c->name = s;
			bpf_map_delete_elem(fd, ch);
		}
	}
	if (!c->name)
		c->name = fallback_name(ch);
	/* an accepted socket's inode comes later */
	if (ch->kind == IPC_UNIX && !strncmp(c->name, "socket:[?", 9))
		c->retry = true;
	return c;
}

/* ---- state ---- */

static struct {
	struct aiscope_bpf bpf;
	struct aiscope_loop loop;
	struct jw jw;
	struct ptable interval;		/* rows of the interval that closed */
	struct ptable run;		/* the whole run */
	uint64_t events;
	uint64_t ops, bytes;		/* whole run, written side */
	uint64_t run_dropped;		/* rows forgotten past run_max: not in the edges */
	size_t run_max;			/* RUN_ROWS_MAX, or a test's lower cap */
	size_t names_slack;		/* NAMES_SLACK, or a test's */
	uint64_t names_forgotten;	/* names of channels no row held any more */
} S;

/* Names that BPF made for channels whose operation then failed (the
 * classic path names them at sys_enter) are never read: drop what is
 * already known, and everything once the map is more than half full. */
static void prune_names(void)
{
	int fd = bpf_map__fd(skel->maps.names);
	uint32_t max = bpf_map__max_entries(skel->maps.names);
	size_t n, kept = 0;
	struct ipc_key *keys;
	bool oom;

	/* out of memory: what was collected, the rest at the next prune */
	keys = map_keys(fd, sizeof(*keys), NULL, NULL, &n, &oom);
	for (size_t i = 0; i < n; i++) {
		struct cname *c = cname_find(&keys[i]);

		if (c && c->name && !c->retry)
			bpf_map_delete_elem(fd, &keys[i]);
		else
			keys[kept++] = keys[i];
	}
	if (kept * 2 > max)
		for (size_t i = 0; i < kept; i++)
			bpf_map_delete_elem(fd, &keys[i]);
	free(keys);
}

/* A unix client that sent before its connection was accepted keyed those
 * bytes with receiver 0: they belong to the channel whose other rows have
 * the same sender (id2) and a receiver. A struct sock can be reused once
 * its connection is gone, so of those channels the first one still active
 * when these bytes were sent (a later user of the address starts after
 * that one ended). */
static const struct ipc_key *embryo_home(const struct prow *rows, size_t n,
					 const struct prow *r)
{
	const struct prow *best = NULL;

	for (size_t i = 0; i < n; i++) {
		const struct prow *q = &rows[i];

		if (q->ch.kind != IPC_UNIX || !q->ch.id || q->ch.id2 != r->ch.id2)
			continue;
		if (q->last_ts < r->first_ts)
			continue;
		if (!best || q->last_ts < best->last_ts)
			best = q;
	}
	return best ? &best->ch : NULL;
}

static void settle_embryos(struct prow *batch, size_t n)
{
	const struct ipc_key *home;

	for (size_t i = 0; i < n; i++) {
		struct prow *r = &batch[i];

		if (r->ch.kind != IPC_UNIX || r->ch.id || !r->ch.id2)
			continue;
		home = embryo_home(batch, n, r);
		if (!home)
			home = embryo_home(S.run.rows, S.run.n, r);
		if (home)
			r->ch = *home;
	}
	/* and rows of an earlier interval, now that the receiver is known */
	for (size_t i = 0; i < S.run.n; i++) {
		struct prow *r = &S.run.rows[i], moved;

		if (r->ch.kind != IPC_UNIX || r->ch.id || !r->ch.id2)
			continue;
		home = embryo_home(batch, n, r);
		if (!home)
			continue;
		moved = *r;
		moved.ch = *home;
		r->ch.kind = IPC_NONE;		/* dead: build_chans skips it */
		r->ops = r->bytes = 0;
		pt_add(&S.run, &moved, SIZE_MAX);
	}
}

/* The receiving socket (a bound datagram socket: id2 0) named name. */
static const struct ipc_key *addr_home(const struct prow *rows, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++) {
		const struct prow *q = &rows[i];

		if (q->ch.kind != IPC_UNIX || !q->ch.id || (q->ch.id & IPC_UNIX_ADDR_ID) || q->ch.id2)
			continue;
		if (!strcmp(cname_of(&q->ch)->name, name))
			return &q->ch;
	}
	return NULL;
}

static bool addressed(const struct prow *r)
{
	return r->ch.kind == IPC_UNIX && (r->ch.id & IPC_UNIX_ADDR_ID);
}

/* Unconnected datagrams were keyed by their destination address: file
 * them under the socket bound to it, where its reads are. */
static void settle_addressed(struct prow *batch, size_t n)
{
	const struct ipc_key *home;

	for (size_t i = 0; i < n; i++) {
		struct prow *r = &batch[i];

		if (!addressed(r))
			continue;
		home = addr_home(batch, n, cname_of(&r->ch)->name);
		if (!home)
			home = addr_home(S.run.rows, S.run.n, cname_of(&r->ch)->name);
		if (home)
			r->ch = *home;
	}
	for (size_t i = 0; i < S.run.n; i++) {
		struct prow *r = &S.run.rows[i], moved;

		if (!addressed(r))
			continue;
		home = addr_home(batch, n, cname_of(&r->ch)->name);
		if (!home)
			continue;
		moved = *r;
		moved.ch = *home;
		r->ch.kind = IPC_NONE;		/* dead: build_chans skips it */
		r->ops = r->bytes = 0;
		pt_add(&S.run, &moved, SIZE_MAX);
	}
}

/* Drains the rows of the closed epoch into the interval and the run. */
/* ---- Prometheus metrics: by the cgroup of the process that wrote or
 * read, and the channel's kind ---- */

static struct {
	struct prom_family *sent_bytes, *sent_msgs, *recv_bytes, *recv_msgs;
	struct prom_family *attaches, *detaches;
	struct edge_metrics edges;	/* the run's top edges */
} P;

static struct edge_table *run_edges(void);

static void metrics_init(void)
{
	AISCOPE_METRIC_LABELS(lbl, AISCOPE_CGROUP_LABEL_NAMES, "kind", NULL);

	if (!aiscope_metrics())
		return;
	P.sent_bytes = aiscope_metric_counter("aiscope_ipcsnoop_sent_bytes_total",
		"Bytes written or sent into local IPC channels (JSON bytes), by the writer's cgroup and the channel kind.",
		lbl);
	P.sent_msgs = aiscope_metric_counter("aiscope_ipcsnoop_sent_messages_total",
		"Write calls or messages sent (JSON msgs).", lbl);
	P.recv_bytes = aiscope_metric_counter("aiscope_ipcsnoop_received_bytes_total",
		"Bytes read or received from local IPC channels (JSON read_bytes), by the reader's cgroup.",
		lbl);
	P.recv_msgs = aiscope_metric_counter("aiscope_ipcsnoop_received_messages_total",
		"Read calls or messages received (JSON read_msgs).", lbl);
	P.attaches = aiscope_metric_counter("aiscope_ipcsnoop_shm_attaches_total",
		"Shared-memory attaches (kind shm).", lbl);
	P.detaches = aiscope_metric_counter("aiscope_ipcsnoop_shm_detaches_total",
		"Shared-memory detaches (kind shm).", lbl);
	edge_metrics_init(&P.edges, TOOL);
}

static void metrics_add(const struct prow *r)
{
	const char *v[AISCOPE_CGROUP_NLABELS + 1];
	struct container_info ci;
	bool write = r->dir == IPC_WRITE;

	if (!P.sent_bytes)
		return;
	aiscope_cgroup_values(&r->ident, v, &ci);
	v[AISCOPE_CGROUP_NLABELS] = r->ch.kind < IPC_KINDS ? kind_names[r->ch.kind] : "?";
	if (r->ch.kind == IPC_SHM) {
		prom_counter_add(write ? P.attaches : P.detaches, v, r->ops);
		return;
	}
	prom_counter_add(write ? P.sent_bytes : P.recv_bytes, v, r->bytes);
	prom_counter_add(write ? P.sent_msgs : P.recv_msgs, v, r->ops);
}

/* The closed epoch's rows, as map_drain() hands them over. */
struct drained {
	uint32_t closed;
	struct prow *rows;
	size_t n, cap;
};

static bool in_epoch(const void *key, void *ctx)
{
	return ((const struct ipc_stat_key *)key)->epoch == ((struct drained *)ctx)->closed;
}

static void take_stat(const void *key, const void *value, void *ctx)
{
	const struct ipc_stat_key *k = key;
	const struct ipc_stat *st = value;
	struct drained *d = ctx;

	d->rows = aiscope_grow(d->rows, &d->cap, d->n, sizeof(*d->rows));
	/* the name before settling: its map entry has the first key */
	cname_of(&k->ch);
	d->rows[d->n++] = (struct prow){
		.ch = k->ch, .pid = k->pid, .dir = k->dir,
		.ident = st->ident, .ops = st->ops, .bytes = st->bytes,
		.first_ts = st->first_ts, .last_ts = st->last_ts, .peer_pid = st->peer_pid,
	};
}

/* The run's table is full: its dead rows (moved by settle_addressed) go,
 * and the eighth idle longest (counted), so that active channels keep
 * their rows and the table its size. */
static void run_evict(void)
{
	struct ptable *t = &S.run;
	size_t n = 0, kept;

	for (size_t i = 0; i < t->n; i++)
		if (t->rows[i].ch.kind != IPC_NONE)
			t->rows[n++] = t->rows[i];
	if (n >= S.run_max) {
		kept = rows_drop_oldest(t->rows, n, sizeof(*t->rows), offsetof(struct prow, last_ts),
					n / 8);
		if (kept == SIZE_MAX)
			aiscope_fail(EXIT_RUNTIME, "out of memory");
		S.run_dropped += n - kept;
		n = kept;
	}
	t->n = n;
	pt_rehash(t, t->nslots);
}

static void mark_names(const struct ptable *t)
{
	for (size_t i = 0; i < t->n; i++) {
		struct cname *c = cname_find(&t->rows[i].ch);

		if (c)
			c->keep = true;
	}
}

/* The name cache holds the names of channels that rows of the run or of
 * the interval hold, and at most NAMES_SLACK more: past that, the names
 * no row holds any more are forgotten (counted: a channel seen again
 * after that is named by its key, its path being gone from the kernel's
 * map). */
static void forget_names(void)
{
	size_t kept = 0;

	if (names.n <= S.run_max + S.names_slack)
		return;
	mark_names(&S.run);
	mark_names(&S.interval);
	for (size_t i = 0; i < names.n; i++) {
		struct cname *c = &names.v[i];

		if (!c->keep) {
			free(c->name);
			S.names_forgotten++;
			continue;
		}
		c->keep = false;
		names.v[kept++] = *c;
	}
	names.n = kept;
	cname_reindex(names.nslots);
}

static void collect(void)
{
	/* returns once no program still adds to the closed epoch's rows */
	struct drained d = { .closed = map_epoch_close(&skel->bss->epoch, NULL) };
	struct prow *batch;
	size_t n;

	pt_clear(&S.interval);
	map_drain(bpf_map__fd(skel->maps.stats), sizeof(struct ipc_stat_key),
		  sizeof(struct ipc_stat), in_epoch, take_stat, &d);
	batch = d.rows;
	n = d.n;
	settle_embryos(batch, n);
	settle_addressed(batch, n);
	prune_names();
	for (size_t i = 0; i < n; i++) {
		struct prow *r = &batch[i];

		cname_of(&r->ch);
		metrics_add(r);
		pt_add(&S.interval, r, SIZE_MAX);
		if (S.run.n >= S.run_max && !pt_get(&S.run, &r->ch, r->pid, r->dir, false))
			run_evict();
		pt_add(&S.run, r, SIZE_MAX);
		if (r->dir == IPC_WRITE && r->ch.kind != IPC_SHM) {
			S.ops += r->ops;
			S.bytes += r->bytes;
		}
	}
	free(batch);
	forget_names();
}

/* ---- channels: rows grouped by channel ---- */

struct chan {
	struct ipc_key ch;
	const struct prow *writer, *reader;	/* the busiest of each side */
	uint32_t writers, readers;
	uint64_t msgs, bytes, read_msgs, read_bytes;
	uint64_t first_ts, last_ts;
};

static struct chan *chans;
static size_t nchans, chans_cap;

static bool busier(const struct prow *a, const struct prow *b)
{
	if (!b)
		return true;
	if (a->bytes != b->bytes)
		return a->bytes > b->bytes;
	if (a->ops != b->ops)
		return a->ops > b->ops;
	return a->pid < b->pid;
}

/* An index of chans by channel (open addressing: index + 1, 0 empty),
 * valid from build_chans() until chans is sorted: a run's 65536 rows
 * made a scan per row quadratic (minutes at exit, past a unit's stop
 * timeout). */
static size_t *chan_slot, chan_nslots;

static size_t chan_hash(const struct ipc_key *ch)
{
	return hash_key(ch, 0, 0) & (chan_nslots - 1);
}

static struct chan *chan_find(const struct ipc_key *ch)
{
	for (size_t s = chan_hash(ch); chan_slot[s]; s = (s + 1) & (chan_nslots - 1))
		if (key_eq(&chans[chan_slot[s] - 1].ch, ch))
			return &chans[chan_slot[s] - 1];
	return NULL;
}

static struct chan *chan_of(const struct ipc_key *ch)
{
	struct chan *c = chan_find(ch);
	size_t s;

	if (c)
		return c;
	chans = aiscope_grow(chans, &chans_cap, nchans, sizeof(*chans));
	memset(&chans[nchans], 0, sizeof(chans[0]));
	chans[nchans].ch = *ch;
	for (s = chan_hash(ch); chan_slot[s]; s = (s + 1) & (chan_nslots - 1))
		;
	chan_slot[s] = ++nchans;
	return &chans[nchans - 1];
}

static void build_chans(const struct ptable *t)
{
	size_t ns = 256;

	/* at most one channel a row: half full at worst */
	while (ns < 2 * t->n)
		ns *= 2;
	if (ns != chan_nslots) {
		free(chan_slot);
		chan_slot = malloc(ns * sizeof(*chan_slot));
		if (!chan_slot)
			aiscope_fail(EXIT_RUNTIME, "out of memory");
		chan_nslots = ns;
	}
	memset(chan_slot, 0, ns * sizeof(*chan_slot));
	nchans = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct prow *r = &t->rows[i];
		struct chan *c;

		if (r->ch.kind == IPC_NONE)
			continue;
		c = chan_of(&r->ch);

		if (r->dir == IPC_WRITE) {
			c->writers++;
			c->msgs += r->ops;
			c->bytes += r->bytes;
			if (busier(r, c->writer))
				c->writer = r;
		} else {
			c->readers++;
			c->read_msgs += r->ops;
			c->read_bytes += r->bytes;
			if (busier(r, c->reader))
				c->reader = r;
		}
		if (!c->first_ts || r->first_ts < c->first_ts)
			c->first_ts = r->first_ts;
		if (r->last_ts > c->last_ts)
			c->last_ts = r->last_ts;
	}
}

static uint64_t sort_value(const struct chan *c)
{
	switch (cfg.sort[0]) {
	case 'm': return c->msgs;
	case 'r': return c->read_bytes;
	default: return c->bytes ? c->bytes : c->read_bytes;
	}
}

static int cmp_chans(const void *a, const void *b)
{
	const struct chan *x = a, *y = b;
	uint64_t va = sort_value(x), vb = sort_value(y);

	return cmp_u64(vb, va) ?: cmp_u64(x->ch.kind, y->ch.kind) ?: cmp_u64(x->ch.id, y->ch.id);
}

/* ---- output ---- */

static void json_channel(struct jw *w, const struct ipc_key *ch)
{
	struct cname *c = cname_of(ch);

	jw_kstr(w, "kind", kind_names[ch->kind < IPC_KINDS ? ch->kind : 0]);
	jw_kstr(w, "channel", c->name);
	jw_ki64_or_null(w, "channel_key", ch->kind == IPC_MSQ && c->key != -1, c->key);
}

static void json_chan(const struct chan *c, uint64_t now, uint64_t interval)
{
	struct jw *w = &S.jw;
	struct cname *cn = cname_of(&c->ch);
	bool shm = c->ch.kind == IPC_SHM;

	jw_record_begin(w, "sample", TOOL, now);
	jw_ku64(w, "seq", S.loop.ticks);
	jw_ku64(w, "interval_ns", interval);
	jw_kstr(w, "row", "channel");
	json_channel(w, &c->ch);
	/* the busiest writer and reader, as in the table; null: none seen */
	aiscope_ident_json_as(w, "writer_", c->writer ? &c->writer->ident : NULL, false);
	aiscope_ident_json_as(w, "reader_", c->reader ? &c->reader->ident : NULL, false);
	jw_ku64(w, "writers", c->writers);
	jw_ku64(w, "readers", c->readers);
	jw_ku64(w, "msgs", shm ? 0 : c->msgs);
	jw_ku64(w, "bytes", shm ? 0 : c->bytes);
	jw_ku64(w, "read_msgs", shm ? 0 : c->read_msgs);
	jw_ku64(w, "read_bytes", shm ? 0 : c->read_bytes);
	jw_ku64_or_null(w, "attaches", shm, c->msgs);
	jw_ku64_or_null(w, "detaches", shm, c->read_msgs);
	jw_ku64_or_null(w, "size_bytes", shm && cn->size, cn->size);
	jw_record_end(w);
}

static const struct tcol cols[] = {
	{ "TIME", 8, TC_LEFT }, { "KIND", 7, TC_LEFT }, { "CHANNEL", 28, TC_LEFT },
	{ "WRITER", 22, TC_LEFT }, { "READER", 22, TC_LEFT }, { "MSGS", 8, 0 },
	{ "BYTES", 11, 0 }, { "READ_BYTES", 11, 0 },
};

static void side_str(char *buf, size_t len, const struct prow *r, uint32_t n)
{
	if (!r) {
		snprintf(buf, len, "-");
		return;
	}
	if (n > 1)
		snprintf(buf, len, "%u/%.16s+%u", r->pid, r->ident.comm, n - 1);
	else
		snprintf(buf, len, "%u/%.16s", r->pid, r->ident.comm);
}

static void table_chan(struct table *t, const struct chan *c, const char *hms)
{
	char w[64], r[64];
	bool shm = c->ch.kind == IPC_SHM;

	if (env.timestamp)
		table_str(t, hms);
	table_str(t, kind_names[c->ch.kind < IPC_KINDS ? c->ch.kind : 0]);
	table_str(t, cname_of(&c->ch)->name);
	side_str(w, sizeof(w), c->writer, c->writers);
	side_str(r, sizeof(r), c->reader, c->readers);
	table_str(t, w);
	table_str(t, r);
	table_u64(t, c->msgs);
	table_u64(t, shm ? 0 : c->bytes);
	table_u64(t, shm ? 0 : c->read_bytes);
	table_end_row(t);
}

static void print_interval(uint64_t interval)
{
	uint64_t now = aiscope_now_realtime();
	size_t shown;
	struct table t;
	char hms[16];

	build_chans(&S.interval);
	sort_array(chans, nchans, sizeof(*chans), cmp_chans);
	shown = table_shown(nchans, env.rows);
	if (env.json) {
		for (size_t i = 0; i < shown; i++)
			json_chan(&chans[i], now, interval);
		return;
	}
	table_block_begin(stdout, env.tty && !env.noclear, now, interval, TOOL);
	fmt_hms(now, hms, sizeof(hms));
	table_init_time(&t, stdout, cols, ARRAY_SIZE(cols), env.timestamp, env.tty && !env.wide);
	table_header(&t);
	for (size_t i = 0; i < shown; i++)
		table_chan(&t, &chans[i], hms);
	table_more(stdout, shown, nchans);
}

static int on_tick(void *ctx)
{
	uint64_t interval = aiscope_loop_interval(&S.loop);

	cur_tick++;
	collect();
	if (!cfg.events)
		print_interval(interval);
	edge_metrics_of(&P.edges, run_edges);
	if (!cfg.events && env.count && S.loop.ticks >= env.count)
		return AISCOPE_STOP;
	return 0;
}

/* ---- -e ---- */

static const char *op_name(const struct ipc_event *e)
{
	bool w = e->dir == IPC_WRITE;

	switch (e->ch.kind) {
	case IPC_UNIX: return w ? "send" : "recv";
	case IPC_MSQ: return w ? "msgsnd" : "msgrcv";
	case IPC_MQ: return w ? "mq_send" : "mq_receive";
	case IPC_SHM: return w ? "attach" : "detach";
	default: return w ? "write" : "read";
	}
}

static const struct tcol ev_cols[] = {
	{ "TIME", 8, TC_LEFT }, { "KIND", 7, TC_LEFT }, { "OP", 10, TC_LEFT }, { "BYTES", 9, 0 },
	{ "PID", 7, 0 }, { "COMM", 15, TC_LEFT }, { "CHANNEL", 28, TC_LEFT }, { "PEER", 7, 0 },
};

static int on_event(void *ctx, void *data, size_t len)
{
	const struct ipc_event *e = data;
	uint64_t rt;
	struct table t;
	char hms[16];

	if (len < sizeof(*e))
		return 0;
	rt = aiscope_realtime(e->ts);
	S.events++;
	if (env.json) {
		struct jw *w = &S.jw;

		jw_record_begin(w, "event", TOOL, rt);
		jw_kstr(w, "event", op_name(e));
		json_channel(w, &e->ch);
		jw_ku64(w, "bytes", e->ch.kind == IPC_SHM ? 0 : e->bytes);
		aiscope_ident_json(w, &e->task, true);
		/* the peer by its pid only from the kernel: the rest from /proc */
		aiscope_pid_identity_json_as(w, "peer_", e->peer_pid);
		/* shm: where the segment was attached or detached */
		jw_key(w, "addr");
		if (e->ch.kind == IPC_SHM)
			jw_hex(w, (uint64_t)e->ret);
		else
			jw_null(w);
		jw_record_end(w);
	} else {
		table_init_time(&t, stdout, ev_cols, ARRAY_SIZE(ev_cols), env.timestamp,
				env.tty && !env.wide);
		if (env.timestamp) {
			fmt_hms(rt, hms, sizeof(hms));
			table_str(&t, hms);
		}
		table_str(&t, kind_names[e->ch.kind < IPC_KINDS ? e->ch.kind : 0]);
		table_str(&t, op_name(e));
		table_u64(&t, e->ch.kind == IPC_SHM ? 0 : e->bytes);
		table_u64(&t, e->task.pid);
		table_str(&t, e->task.comm);
		table_str(&t, cname_of(&e->ch)->name);
		table_u64_or_dash(&t, e->peer_pid, e->peer_pid);
		table_end_row(&t);
	}
	if (env.count && S.events >= env.count)
		return aiscope_loop_stop(&S.loop, AISCOPE_EXIT_COUNT);
	return 0;
}

/* ---- the end: edges and summary ---- */

/* channel_key (msq) and writers, on top of the shared edge keys */
static void edge_extra(struct jw *w, const struct edge *e, void *ctx)
{
	const struct chan *c = e->user;
	struct cname *cn = cname_of(&c->ch);

	jw_ki64_or_null(w, "channel_key", c->ch.kind == IPC_MSQ && cn->key != -1, cn->key);
	jw_ku64(w, "writers", c->writers);
}

/* One edge per writer of each channel, towards its busiest reader (with
 * "readers" when there are several). With several writers the reads
 * cannot be told apart: each edge gets the channel's reads in proportion
 * to what its writer wrote, exact once the channel is drained. */
static struct edge_table *run_edges(void)
{
	struct edge_table *t = edges_new(0);

	if (!t)
		aiscope_fail(EXIT_RUNTIME, "out of memory");
	build_chans(&S.run);
	/* each writer's row, with its channel (the edges come out sorted) */
	for (size_t j = 0; j < S.run.n; j++) {
		const struct prow *r = &S.run.rows[j];
		const struct chan *c;
		const char *kind, *name;
		struct edge_side src = { .id = &r->ident }, dst;
		struct edge *e;
		uint64_t rd;

		if (r->dir != IPC_WRITE || r->ch.kind == IPC_NONE || r->ch.kind == IPC_SHM)
			continue;
		c = chan_find(&r->ch);
		kind = kind_names[c->ch.kind < IPC_KINDS ? c->ch.kind : 0];
		name = cname_of(&c->ch)->name;
		dst = (struct edge_side){ .id = c->reader ? &c->reader->ident : NULL };
		e = edge_add(t, kind, name, &src, &dst, r->bytes, r->ops,
			     aiscope_realtime(r->first_ts));
		if (!e)
			continue;
		edge_add(t, kind, name, &src, &dst, 0, 0, aiscope_realtime(r->last_ts));
		e->user = (void *)c;
		if (c->readers > 1)
			e->readers = c->readers;
		if (!c->reader)
			continue;
		rd = c->writers > 1 && c->bytes ?
			(uint64_t)((double)c->read_bytes * r->bytes / c->bytes + 0.5) : c->read_bytes;
		edge_add_read(t, kind, name, &src, &dst, rd, aiscope_realtime(c->reader->last_ts));
	}
	return t;
}

static void print_edges(void)
{
	struct edge_table *t = run_edges();

	edges_json(t, &S.jw, TOOL, edge_extra, NULL);
	edges_free(t);
}

/* Every cap that was reached, one line each. Names the BPF side could
 * not record: those channels are shown by their key (inode, id) instead,
 * never merged. */
static void report_caps(void)
{
	uint64_t n = skel->bss->names_lost;

	if (n)
		fprintf(stderr, "%s: %llu operations found the channel name map (%u entries) full: their channels are shown by inode, not by name\n",
			TOOL, (unsigned long long)n, bpf_map__max_entries(skel->maps.names));
	if (S.run_dropped)
		fprintf(stderr, "%s: %llu (channel, process) rows idle longest were forgotten to keep the run's table at %zu: left out of the edges\n",
			TOOL, (unsigned long long)S.run_dropped, S.run_max);
	if (S.names_forgotten)
		fprintf(stderr, "%s: %llu names of channels no row held any more were forgotten (cache of %zu)\n",
			TOOL, (unsigned long long)S.names_forgotten, S.run_max + S.names_slack);
}

static void print_summary(void)
{
	if (env.json) {
		print_edges();
		aiscope_summary_begin(&S.jw, &S.bpf, &S.loop, cfg.events ? S.events : S.ops);
		jw_ku64(&S.jw, "intervals", S.loop.ticks);
		jw_ku64(&S.jw, "msgs", S.ops);
		jw_ku64(&S.jw, "bytes", S.bytes);
		build_chans(&S.run);
		jw_ku64(&S.jw, "channels", nchans);
		jw_ku64(&S.jw, "edge_rows", S.run.n);
		jw_ku64(&S.jw, "edge_rows_dropped", S.run_dropped);
		jw_ku64(&S.jw, "name_map_full", skel->bss->names_lost);
		jw_ku64(&S.jw, "names_cached", names.n);
		jw_ku64(&S.jw, "names_forgotten", S.names_forgotten);
		jw_ku64(&S.jw, "peer_identity_unread", aiscope_pid_identity_unread());
		jw_record_end(&S.jw);
		report_caps();
		return;
	}
	report_caps();
	build_chans(&S.run);
	if (cfg.events) {
		fprintf(stderr, "%s: %llu operations, %llu lost, %llu peers gone before their names were read\n",
			TOOL, (unsigned long long)S.events, (unsigned long long)aiscope_lost_total(&S.bpf),
			(unsigned long long)aiscope_pid_identity_unread());
		return;
	}
	printf("# summary: %zu channels, %llu msgs, %llu bytes written, %llu lost events, %llu name map full, %llu rows and %llu names forgotten\n",
	       nchans, (unsigned long long)S.ops, (unsigned long long)S.bytes,
	       (unsigned long long)aiscope_lost_total(&S.bpf),
	       (unsigned long long)skel->bss->names_lost,
	       (unsigned long long)S.run_dropped, (unsigned long long)S.names_forgotten);
}

/* ---- the plan ---- */

/* The kernel's device number of the tmpfs at /dev/shm, where POSIX shared
 * memory lives (shm_open); 0 when there is none. */
static uint64_t posix_shm_dev(void)
{
	struct statfs sf;
	struct stat st;

	if (statfs("/dev/shm", &sf) || sf.f_type != TMPFS_MAGIC || stat("/dev/shm", &st))
		return 0;
	return kernel_dev(st.st_dev);
}

static void want_sys(uint64_t *ids, long nr)
{
	ids[nr / 64] |= 1ULL << (nr % 64);
}

/* the kind and direction a function hook, once chosen, takes off the
 * syscall path (the pipe hooks and the unix ones are decided in plan()) */
static const struct { int hook; uint32_t kind, dir; } covers[] = {
	{ H_FIFO_WRITE, IPC_FIFO, IPC_WRITE }, { H_FIFO_READ, IPC_FIFO, IPC_READ },
	{ H_EFD_WRITE, IPC_EVENTFD, IPC_WRITE }, { H_EFD_READ, IPC_EVENTFD, IPC_READ },
	{ H_MSGSND, IPC_MSQ, IPC_WRITE }, { H_MSGRCV, IPC_MSQ, IPC_READ },
	{ H_MQ_SEND, IPC_MQ, IPC_WRITE }, { H_MQ_RECV, IPC_MQ, IPC_READ },
};

/* After the resolver: which kinds the function hooks cover, and which
 * syscalls are left for the syscall path. */
static void plan(void)
{
	const unsigned int fexit = PM_BIT(PM_FEXIT);
	uint32_t cov = 0, all = 0;
	uint64_t ids[IPC_SYSCALL_WORDS] = {};
	bool unix_fn = true, unix_sys, fd_sys = false;
	int k, h;

	/* unix: both directions by the same mechanism, else by syscalls */
	for (h = H_UNIX_SEND; h <= H_UNIX_SEQ_RECV; h++)
		unix_fn = unix_fn && probe_chosen_by(&hooks[h], fexit);
	if (!unix_fn) {
		for (h = H_UNIX_DGRAM_SEND; h <= H_UNIX_SEQ_RECV; h++)
			probe_drop(&hooks[h], skel->obj);
		if (probe_chosen_by(&hooks[H_UNIX_SEND], fexit))
			probe_drop(&hooks[H_UNIX_SEND], skel->obj);
		if (probe_chosen_by(&hooks[H_UNIX_RECV], fexit))
			probe_drop(&hooks[H_UNIX_RECV], skel->obj);
	}
	if (!probe_chosen(&hooks[H_UNIX_SEND]) || !probe_chosen(&hooks[H_UNIX_RECV])) {
		probe_drop(&hooks[H_UNIX_SEND], skel->obj);
		probe_drop(&hooks[H_UNIX_RECV], skel->obj);
	}
	unix_sys = !probe_chosen(&hooks[H_UNIX_SEND]);
	/* tp_btf and raw_tp sys_exit find the arguments in the saved
	 * registers: sys_enter is only for the classic sys_exit */
	if (probe_chosen_by(&hooks[H_SYS_EXIT], PM_ALL & ~PM_BIT(PM_TRACEPOINT)))
		probe_drop(&hooks[H_SYS_ENTER], skel->obj);
	if (probe_chosen(&hooks[H_PIPE_WRITE])) {
		cov |= IPC_BIT(IPC_PIPE, IPC_WRITE);
		if (hooks[H_PIPE_WRITE].chosen == 1)
			cov |= IPC_BIT(IPC_FIFO, IPC_WRITE);
	}
	if (probe_chosen(&hooks[H_PIPE_READ])) {
		cov |= IPC_BIT(IPC_PIPE, IPC_READ);
		if (hooks[H_PIPE_READ].chosen == 1)
			cov |= IPC_BIT(IPC_FIFO, IPC_READ);
	}
	/* the FIFO wrappers only where the pipe hooks are the new ones */
	if (!probe_chosen(&hooks[H_PIPE_WRITE]) || hooks[H_PIPE_WRITE].chosen == 1)
		probe_drop(&hooks[H_FIFO_WRITE], skel->obj);
	if (!probe_chosen(&hooks[H_PIPE_READ]) || hooks[H_PIPE_READ].chosen == 1)
		probe_drop(&hooks[H_FIFO_READ], skel->obj);
	for (size_t i = 0; i < ARRAY_SIZE(covers); i++)
		if (probe_chosen(&hooks[covers[i].hook]))
			cov |= IPC_BIT(covers[i].kind, covers[i].dir);
	for (k = IPC_PIPE; k < IPC_KINDS; k++)
		if (cfg.kinds & (1U << k))
			all |= IPC_BIT(k, IPC_WRITE) | IPC_BIT(k, IPC_READ);
	/* read/write and friends: pipes, FIFOs and eventfds not covered */
	for (k = IPC_PIPE; k <= IPC_EVENTFD; k++) {
		uint32_t b = IPC_BIT(k, IPC_WRITE) | IPC_BIT(k, IPC_READ);

		if (k == IPC_MSQ || k == IPC_MQ || (k == IPC_UNIX && !unix_sys))
			continue;
		if ((all & b) & ~cov)
			fd_sys = true;
	}
	if (fd_sys) {
		want_sys(ids, SYS_read);
		want_sys(ids, SYS_write);
		want_sys(ids, SYS_readv);
		want_sys(ids, SYS_writev);
		want_sys(ids, SYS_splice);
		want_sys(ids, SYS_tee);
		want_sys(ids, SYS_vmsplice);
	}
	if (unix_sys && (cfg.kinds & (1U << IPC_UNIX))) {
		want_sys(ids, SYS_sendto);
		want_sys(ids, SYS_recvfrom);
		want_sys(ids, SYS_sendmsg);
		want_sys(ids, SYS_recvmsg);
	}
	if ((all & IPC_BIT(IPC_MSQ, IPC_WRITE)) & ~cov)
		want_sys(ids, SYS_msgsnd);
	if ((all & IPC_BIT(IPC_MSQ, IPC_READ)) & ~cov)
		want_sys(ids, SYS_msgrcv);
	if ((all & IPC_BIT(IPC_MQ, IPC_WRITE)) & ~cov)
		want_sys(ids, SYS_mq_timedsend);
	if ((all & IPC_BIT(IPC_MQ, IPC_READ)) & ~cov)
		want_sys(ids, SYS_mq_timedreceive);
	if (cfg.kinds & (1U << IPC_SHM)) {
		want_sys(ids, SYS_shmat);
		want_sys(ids, SYS_shmdt);
		skel->rodata->shm_dev = posix_shm_dev();
		if (skel->rodata->shm_dev) {
			want_sys(ids, SYS_mmap);
			want_sys(ids, SYS_munmap);
		}
	}
	for (int i = 0; i < IPC_SYSCALL_WORDS; i++)
		skel->rodata->sys_ids[i] = ids[i];
	skel->rodata->fn_covers = cov;
	skel->rodata->unix_by_sys = unix_sys;
	skel->rodata->kinds = cfg.kinds;
	skel->rodata->events_on = cfg.events;
	if (env.verbose)
		fprintf(stderr, "%s: function hooks cover 0x%x, unix sockets by %s\n", TOOL, cov,
			unix_sys ? "syscalls" : probe_mech_name(probe_chosen(&hooks[H_UNIX_SEND])->mech));
}

static void validate(void)
{
	if (env.sort)
		cfg.sort = sort_keys[opt_word("--sort", env.sort, sort_keys)];
}

int main(int argc, char **argv)
{
	int code;

	aiscope_parse(&argp, argc, argv, TOOL,
		      AISCOPE_AGGREGATING | AISCOPE_STREAMING | AISCOPE_METRICS);
	validate();
	metrics_init();
	jw_init(&S.jw, stdout);

	skel = ipcsnoop_bpf__open_opts(aiscope_open_opts());
	if (!skel)
		aiscope_fail(EXIT_RUNTIME, "cannot open the BPF object: %s", strerror(errno));
	S.bpf = (struct aiscope_bpf){
		.hooks = hooks, .nhooks = ARRAY_SIZE(hooks),
		.streaming = cfg.events, .on_event = on_event,
	};
	aiscope_bpf_prepare(&S.bpf, skel->obj, &skel->rodata->aiscope_cfg);
	S.run_max = aiscope_test_cap("IPC_RUN_ROWS", RUN_ROWS_MAX);
	S.names_slack = aiscope_test_cap("IPC_NAMES_SLACK", NAMES_SLACK);
	bpf_map__set_max_entries(skel->maps.names,
				 aiscope_test_cap("IPC_NAMES", bpf_map__max_entries(skel->maps.names)));
	plan();
	aiscope_bpf_load(&S.bpf, ipcsnoop_bpf__load(skel));
	aiscope_bpf_attach(&S.bpf);

	if (cfg.events && !env.json)
		table_header_time(stdout, ev_cols, ARRAY_SIZE(ev_cols), env.timestamp);
	aiscope_tracing("IPC (%s)", probe_summary(hooks, ARRAY_SIZE(hooks)));

	S.loop = (struct aiscope_loop){
		.bpf = &S.bpf,
		.on_tick = on_tick,
		.on_final = on_tick,
		.final_drains = cfg.events,
		.tick_ns = env.interval_ns,
	};
	code = aiscope_run(&S.loop, print_summary);
	ipcsnoop_bpf__destroy(skel);
	return code;
}
