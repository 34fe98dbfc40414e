// SPDX-License-Identifier: GPL-2.0
/*
 * ipcsnoop: bytes and messages between local processes, per channel and
 * per process, aggregated in the kernel.
 *
 * Two paths see the same operations; user space chooses per kind:
 *  - function hooks (fexit) on the pipe, unix socket, SysV msg, POSIX mq
 *    and eventfd implementations, where the kernel has them;
 *  - the syscall path: tp_btf (or raw_tp, or classic) sys_enter/sys_exit.
 *    It runs on every syscall of the host, so the syscall id is checked
 *    against a bitmap first, then the shared filters, and only then the fd
 *    is classified (struct file -> pipe, FIFO, eventfd, unix socket, mq).
 *    What sys_enter learned waits in `pending` for sys_exit's result.
 *  - unix sockets: tp_btf sock_send_length/sock_recv_length (6.3+), with
 *    AF_UNIX checked first, or the syscall path where those are missing.
 * fn_covers tells the syscall path which (kind, direction) a function
 * hook already counts, so that nothing is counted twice.
 */
#include "aiscope.bpf.h"
#include "aiscope_file.bpf.h"
#include "ipcsnoop.h"

/* a CO-RE readable task in every program type (raw_tp and classic
 * tracepoints too); the helpers read it with bpf_probe_read */
#define cur_task()	((struct task_struct *)bpf_get_current_task())

#define PIPEFS_MAGIC	0x50495045
#define MQUEUE_MAGIC	0x19800202
#define MSG_PEEK	2
#define SOCK_DGRAM	2
#define SOCK_SEQPACKET	5

#if defined(__TARGET_ARCH_x86)
#define NR_read		0
#define NR_write	1
#define NR_readv	19
#define NR_writev	20
#define NR_mmap		9
#define NR_munmap	11
#define NR_shmat	30
#define NR_sendto	44
#define NR_recvfrom	45
#define NR_sendmsg	46
#define NR_recvmsg	47
#define NR_shmdt	67
#define NR_msgsnd	69
#define NR_msgrcv	70
#define NR_mq_timedsend	242
#define NR_mq_timedreceive 243
#define NR_splice	275
#define NR_tee		276
#define NR_vmsplice	278
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, orig_ax)
#elif defined(__TARGET_ARCH_arm64)
#define NR_read		63
#define NR_write	64
#define NR_readv	65
#define NR_writev	66
#define NR_vmsplice	75
#define NR_splice	76
#define NR_tee		77
#define NR_mq_timedsend	182
#define NR_mq_timedreceive 183
#define NR_msgrcv	188
#define NR_msgsnd	189
#define NR_shmat	196
#define NR_munmap	215
#define NR_mmap		222
#define NR_shmdt	197
#define NR_sendto	206
#define NR_recvfrom	207
#define NR_sendmsg	211
#define NR_recvmsg	212
#define SYSCALL_NR(regs) BPF_CORE_READ(regs, syscallno)
#else
#error "ipcsnoop: unsupported architecture"
#endif

const volatile __u64 sys_ids[IPC_SYSCALL_WORDS];	/* ids the syscall path handles */
const volatile __u32 fn_covers;		/* IPC_BIT(kind, dir) counted by function hooks */
const volatile __u32 kinds = ~0U;	/* 1 << kind: --kind */
const volatile bool unix_by_sys;	/* no sock_*_length hook: sockets via syscalls */
const volatile bool events_on;		/* -e */
const volatile __u64 shm_dev;		/* s_dev of /dev/shm (POSIX shm), 0: none */

__u32 epoch;				/* written by user space each interval */

/* eventfd's f_op->write: data ksyms (eventfd_fops) are often missing
 * from kallsyms, functions are there */
extern const void eventfd_write __ksym __weak;

struct pending {
	struct ipc_key ch[2];	/* splice and tee: [0] written, [1] read */
	__u8 dir[2];
	__u8 n;
	__u8 op;
	__u32 peer_pid;
	__u64 size;		/* msgsnd, mq_timedsend: the message size */
	__u64 arg;		/* shmdt: the address */
};

enum {
	OP_RW = 1, OP_SPLICE, OP_MSGSND, OP_MSGRCV, OP_MQSEND, OP_MQRECV,
	OP_SHMAT, OP_SHMDT,	/* SysV, and POSIX: mmap/munmap of a /dev/shm file */
};

AISCOPE_MAP(pending, BPF_MAP_TYPE_HASH, __u32, struct pending,
	    16384);			/* threads inside an IPC syscall at once */

/* rows of two intervals, preallocated: every row is inserted anew at
 * each interval, in a burst */
AISCOPE_MAP(stats, BPF_MAP_TYPE_HASH, struct ipc_stat_key, struct ipc_stat, 8192);

/* user space deletes what it has read. Preallocated: an on-demand
 * allocation in a tracepoint can fail when the allocator's per-CPU
 * cache is empty, and the name would be lost. Unnamed unix sockets
 * take no entry (user space names them by the key's inode): what
 * needs one is a FIFO, a bound unix socket's connections and an mq
 * opened in one interval (about 1 KiB each, 4.3 MiB in all); a
 * failed insert is counted in names_lost */
AISCOPE_MAP(names, BPF_MAP_TYPE_HASH, struct ipc_key, struct ipc_name, 4096);

/* an attach address -> its segment, for the detach */
struct shm_key {
	__u32 pid;
	__u32 pad;
	__u64 addr;
};

AISCOPE_MAP(shm_addrs, BPF_MAP_TYPE_HASH, struct shm_key, struct ipc_key, 4096);

/* A name is built in a slot of its own thread's, inserted and deleted
 * around the build, never in per-CPU memory: these programs are
 * preemptible on preemptible kernels (fentry, and syscall tracepoints
 * since 6.13), and another task's program on this CPU would build its
 * name in the same place (the slots of threads preempted mid-build). */
AISCOPE_MAP(name_buf, BPF_MAP_TYPE_HASH, __u32, struct ipc_name, 1024);

static const struct ipc_name zero_name;

static const struct ipc_stat zero_stat;

/* operations whose channel name could not be recorded (the map full):
 * user space shows those channels by their key, and reports the count */
__u64 names_lost;

static __always_inline void put_name(const struct ipc_key *ch, const struct ipc_name *n)
{
	long err = bpf_map_update_elem(&names, ch, n, BPF_NOEXIST);

	if (err && err != -EEXIST)
		__sync_fetch_and_add(&names_lost, 1);
}

/* this thread's slot to build a name in, zeroed; NULL (counted) if none */
static __always_inline struct ipc_name *name_buf_take(__u32 tid)
{
	if (bpf_map_update_elem(&name_buf, &tid, &zero_name, BPF_ANY)) {
		__sync_fetch_and_add(&names_lost, 1);
		return NULL;
	}
	return bpf_map_lookup_elem(&name_buf, &tid);
}

static __always_inline void name_buf_drop(__u32 tid)
{
	bpf_map_delete_elem(&name_buf, &tid);
}

/* Where a channel's name comes from, when it has one of its own. */
struct name_src {
	struct file *file;	/* FIFO path, mq name */
	struct sock *sk;	/* unix: this socket's or its peer's address */
	struct sock *peer;
	/* the syscall path: its number and arguments, where an unconnected
	 * send's address is (NULL elsewhere) */
	const unsigned long *sys_a;
	long sys_nr;
};

static __always_inline bool kind_on(__u32 kind)
{
	return kinds & (1U << kind);
}

/* ---- names ---- */

#define IPC_NAME_MOUNTS	8	/* mounts a path walk crosses between two components */

/* Up out of every mount whose root *d is (stacked mounts, a mount at a
 * mount point): false at the root of the mount namespace, or when more
 * than IPC_NAME_MOUNTS are stacked there */
static __always_inline bool cross_mounts(struct dentry **d, struct mount **m, bool *trunc)
{
	struct vfsmount *vm;
	struct mount *mp;

	/* unrolled, here and in name_path and hash_name, which are
	 * subprograms so that their code is there once: a loop whose
	 * back-edge clang lays out as a fall-through is refused by kernels
	 * before 6.x ("back-edge from insn N to N+1") */
#pragma unroll
	for (int c = 0; c < IPC_NAME_MOUNTS; c++) {
		vm = &(*m)->mnt;
		if (*d != BPF_CORE_READ(vm, mnt_root))
			return true;
		mp = BPF_CORE_READ(*m, mnt_parent);
		if (mp == *m)
			return false;
		*d = BPF_CORE_READ(*m, mnt_mountpoint);
		*m = mp;
	}
	vm = &(*m)->mnt;
	if (*d != BPF_CORE_READ(vm, mnt_root))
		return true;
	*trunc = true;
	return false;
}

/*
 * Dentry names leaf first up to the root of the mount namespace, crossing
 * mount points (bpf_d_path() is not allowed in tracepoints). Bounded
 * loops, not bpf_loop(): callbacks are 5.13+. One step per component with
 * the depth as its counter and the mount crossings in steps of their own
 * that leave no state behind, so that the verifier meets each depth once
 * (a loop whose steps are either a component or a crossing takes it past
 * a million instructions at 16 steps). Beyond IPC_NAME_DEPTH components
 * the name is marked truncated.
 */
static __noinline int name_path(struct ipc_name *n, struct file *f)
{
	struct dentry *d = BPF_CORE_READ(f, f_path.dentry), *parent;
	struct vfsmount *vm = BPF_CORE_READ(f, f_path.mnt);
	struct mount *m = container_of(vm, struct mount, mnt);
	bool trunc = false;
	__u32 depth;

#pragma unroll
	for (depth = 0; depth < IPC_NAME_DEPTH; depth++) {
		if (!cross_mounts(&d, &m, &trunc))
			goto out;
		parent = BPF_CORE_READ(d, d_parent);
		if (parent == d)
			goto out;
		bpf_probe_read_kernel_str(n->comp[depth & (IPC_NAME_DEPTH - 1)], IPC_NAME_LEN,
					  BPF_CORE_READ(d, d_name.name));
		d = parent;
	}
	/* a component above the ones kept */
	if (cross_mounts(&d, &m, &trunc) && BPF_CORE_READ(d, d_parent) != d)
		trunc = true;
out:
	n->depth = depth;
	n->flags = trunc ? IPC_NAME_TRUNC : 0;
	return 0;
}

static __always_inline bool name_unix_addr(struct ipc_name *n, struct sock *sk)
{
	struct unix_sock *u = (void *)sk;
	struct unix_address *a;
	__u32 sz;
	int len;

	if (!sk)
		return false;
	a = BPF_CORE_READ(u, addr);
	if (!a)
		return false;
	len = BPF_CORE_READ(a, len) - (int)sizeof(unsigned short);
	if (len <= 0)
		return false;
	if (len > 108)
		len = 108;
	sz = len;
	/* keep the bound in the register the helper gets */
	asm volatile("" : "+r"(sz));
	sz &= 127;
	bpf_probe_read_kernel(n->raw, sz, &a->name[0].sun_path);
	n->len = sz;
	return true;
}

/* unix channels without an address are named after the receiving
 * socket's inode, which an accepted socket gets only at accept(): fill it
 * in when a later operation knows it */
static __always_inline void name_unix_ino(struct ipc_name *n, const struct name_src *src)
{
	__u64 ino;

	if (n->ino || n->len)
		return;
	ino = aiscope_sk_ino(src->peer);
	if (ino)
		n->ino = ino;
}

/* n: a zeroed slot; false: no name of its own (the key names it) */
static __always_inline bool fill_name(struct ipc_name *n, const struct ipc_key *ch,
				      const struct name_src *src)
{
	if (ch->kind == IPC_UNIX) {
		/* the receiver's address (a server's path), else the sender's;
		 * without either, the key's inode is the name: no entry */
		if (!name_unix_addr(n, src->peer) && !name_unix_addr(n, src->sk))
			return false;
		name_unix_ino(n, src);
	} else if (ch->kind == IPC_MQ) {
		struct file *f = src->file;
		const unsigned char *s = BPF_CORE_READ(f, f_path.dentry, d_name.name);

		bpf_probe_read_kernel_str(n->comp[0], IPC_NAME_LEN, s);
		n->depth = 1;
	} else {
		name_path(n, src->file);
	}
	return true;
}

static __always_inline void make_name(const struct ipc_key *ch, const struct name_src *src)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct ipc_name *n;

	if (!src || (ch->kind != IPC_FIFO && ch->kind != IPC_UNIX && ch->kind != IPC_MQ &&
		     !(ch->kind == IPC_SHM && ch->id2)))
		return;
	if (ch->kind != IPC_UNIX && !src->file)
		return;
	n = bpf_map_lookup_elem(&names, ch);
	if (n) {
		if (ch->kind == IPC_UNIX)
			name_unix_ino(n, src);
		return;
	}
	n = name_buf_take(tid);
	if (!n)
		return;
	/* a failed insert loses no data: the next operation on the channel
	 * tries again, and user space has a name from the key meanwhile */
	if (fill_name(n, ch, src))
		put_name(ch, n);
	name_buf_drop(tid);
}

/* ---- accounting ---- */

static __always_inline void emit(const struct ipc_key *ch, __u32 dir, __u64 bytes,
				 __u32 peer, __s64 ret, __u64 now)
{
	struct ipc_event *ev = aiscope_reserve(sizeof(*ev));

	if (!ev)
		return;
	ev->ts = now;
	ev->bytes = bytes;
	ev->ch = *ch;
	aiscope_task_ident(cur_task(), &ev->task);
	ev->dir = dir;
	ev->peer_pid = peer;
	ev->ret = ret;
	aiscope_submit(ev);
}

static __always_inline void account(const struct ipc_key *ch, __u32 dir, __u64 bytes,
				    __u32 peer, const struct name_src *src, __s64 ret)
{
	struct ipc_stat_key key = {
		.ch = *ch,
		.pid = bpf_get_current_pid_tgid() >> 32,
		.dir = dir,
		.epoch = *(volatile __u32 *)&epoch,
	};
	struct ipc_stat *st;
	__u64 now = aiscope_now();

	st = bpf_map_lookup_elem(&stats, &key);
	if (!st) {
		make_name(ch, src);
		st = aiscope_lookup_or_init(&stats, &key, &zero_stat);
		if (!st)
			goto out;
		if (!st->first_ts) {
			aiscope_task_ident(cur_task(), &st->ident);
			st->first_ts = now;
		}
	}
	__sync_fetch_and_add(&st->ops, 1);
	/* (an add of a constant 0, where the caller passes one, clang turns
	 * into an atomic or: an instruction of 5.12) */
	if (bytes)
		__sync_fetch_and_add(&st->bytes, bytes);
	st->last_ts = now;
	if (peer)
		st->peer_pid = peer;
out:
	if (events_on)
		emit(ch, dir, bytes, peer, ret, now);
}

/* ---- unix sockets ---- */

/*
 * An unconnected datagram send (sendto or sendmsg with an address) has no
 * peer to name the receiver by: the destination address is read from the
 * syscall's arguments in the task's saved user registers, the channel gets
 * id = a hash of it (top bit set: not an inode), and its name is stored;
 * user space then files it under the bound socket of that name, where the
 * receiver's reads are.
 */
#if defined(__TARGET_ARCH_x86)
#define SYSCALL_A6(r)	BPF_CORE_READ(r, r9)
#else
#define SYSCALL_A6(r)	BPF_CORE_READ(r, regs[5])
#endif

struct walk_hash {
	const char *s;
	__u32 len;	/* in: bytes given; out: bytes of the name */
	__u32 i;
	__u64 h;
};

/* FNV-1a; a path ends at its first NUL, an abstract name (leading NUL)
 * has all its bytes */
static __always_inline long hash_step(__u32 i, struct walk_hash *w)
{
	char c;

	if (i >= w->len || i >= 108)
		return 1;
	/* keep the mask: the verifier needs the bound in the register */
	asm volatile("" : "+r"(i));
	c = w->s[i & 127];
	if (!c && i && w->s[0])
		return 1;
	w->h = (w->h ^ (__u8)c) * 1099511628211ULL;
	w->i = i + 1;
	return 0;
}

/* one subprogram, unrolled: see cross_mounts */
static __noinline int hash_name(struct walk_hash *w)
{
#pragma unroll
	for (__u32 i = 0; i < 108; i++)
		if (hash_step(i, w))
			break;
	return 0;
}

/* The address an unconnected send names, from the syscall's arguments in
 * the task's saved user registers (a user pointer). bpf_task_pt_regs() is
 * 5.15: before it the verifier drops this branch, and a hook that has the
 * kernel's msghdr uses that instead. */
static __always_inline bool dest_from_regs(const void **addr, long *alen)
{
	struct user_msghdr um;
	struct pt_regs *regs;
	long nr;

	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_task_pt_regs) ||
	    !bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf))
		return false;
	regs = (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
	nr = SYSCALL_NR(regs);
	if (nr == NR_sendto) {
		*addr = (const void *)PT_REGS_PARM5_CORE_SYSCALL(regs);
		*alen = SYSCALL_A6(regs);
		return true;
	}
	if (nr != NR_sendmsg ||
	    bpf_probe_read_user(&um, sizeof(um), (void *)PT_REGS_PARM2_CORE_SYSCALL(regs)))
		return false;
	*addr = um.msg_name;
	*alen = um.msg_namelen;
	return true;
}

/* the same from the arguments the syscall path already read */
static __always_inline bool dest_from_args(long nr, const unsigned long *a, const void **addr,
					   long *alen)
{
	struct user_msghdr um;

	if (nr == NR_sendto) {
		*addr = (const void *)a[4];
		*alen = a[5];
		return true;
	}
	if (nr != NR_sendmsg || bpf_probe_read_user(&um, sizeof(um), (void *)a[1]))
		return false;
	*addr = um.msg_name;
	*alen = um.msg_namelen;
	return true;
}

/* kmsg: the sendmsg function's msghdr where the hook has it (fexit); its
 * msg_name is the kernel's copy of the address (the syscall moved it
 * there), good on every kernel with trampolines */
static __always_inline bool unix_dest(struct ipc_key *ch, struct msghdr *kmsg,
				      const struct name_src *src)
{
	struct walk_hash w = { .h = 14695981039346656037ULL };
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), len;
	struct ipc_name *n;
	const void *addr = NULL;
	char raw[128] = {};
	long alen = 0, err;

	if (kmsg) {
		addr = BPF_CORE_READ(kmsg, msg_name);
		alen = BPF_CORE_READ(kmsg, msg_namelen);
	} else if (src->sys_a) {
		if (!dest_from_args(src->sys_nr, src->sys_a, &addr, &alen))
			return false;
	} else if (!dest_from_regs(&addr, &alen)) {
		return false;
	}
	alen -= sizeof(unsigned short);		/* sun_family */
	if (!addr || alen <= 0)
		return false;
	len = alen > 108 ? 108 : alen;
	/* on the stack: the channel's id is this address's hash, and this
	 * task's own stack is the one place no other program writes */
	if (kmsg)
		err = bpf_probe_read_kernel(raw, len & 127, addr + sizeof(unsigned short));
	else
		err = bpf_probe_read_user(raw, len & 127, addr + sizeof(unsigned short));
	if (err)
		return false;
	w.s = raw;
	w.len = len;
	hash_name(&w);
	ch->id = w.h | IPC_UNIX_ADDR_ID;
	ch->id2 = 0;
	if (bpf_map_lookup_elem(&names, ch))
		return true;
	n = name_buf_take(tid);
	if (!n)
		return true;
	__builtin_memcpy(n->raw, raw, sizeof(raw));
	n->len = w.i;
	put_name(ch, n);
	name_buf_drop(tid);
	return true;
}

/* The channel of bytes that sk sends (send) or receives (recv): the
 * receiving socket's inode, and for connection-oriented types the sending
 * struct sock. Both sides can read these at any time of the connection's
 * life (a peer that closed has no inode any more, but the receiver still
 * holds it), and the pair is never reused (socket inode numbers are not).
 * A client that sends to a connection not yet accepted does not know the
 * receiving inode: id is 0 then, and user space files those bytes under
 * the channel that the receiver's reads name (same id2). */
static __always_inline void unix_key(struct sock *sk, bool send, struct ipc_key *ch,
				     struct name_src *src, struct msghdr *kmsg)
{
	struct unix_sock *u = (void *)sk;
	struct sock *peer = BPF_CORE_READ(u, peer);
	bool dgram = BPF_CORE_READ(sk, sk_type) == SOCK_DGRAM;
	struct sock *rx = send ? peer : sk, *tx = send ? sk : peer;

	ch->kind = IPC_UNIX;
	ch->pad = 0;
	ch->id = aiscope_sk_ino(rx);
	ch->id2 = dgram && rx ? 0 : (__u64)tx;
	src->file = NULL;
	src->sk = tx;
	src->peer = rx;
	if (send && !peer && unix_dest(ch, kmsg, src))
		src->sk = NULL;		/* its name is made */
}

static __always_inline void unix_op(struct sock *sk, bool send, long ret, struct msghdr *kmsg)
{
	struct ipc_key ch;
	struct name_src src = {};

	if (ret <= 0)
		return;
	unix_key(sk, send, &ch, &src, kmsg);
	account(&ch, send ? IPC_WRITE : IPC_READ, ret, aiscope_sk_peer_tgid(sk), &src, ret);
}

static __always_inline bool unix_pass(struct sock *sk)
{
	if (!sk || aiscope_sk_family(sk) != AISCOPE_AF_UNIX)
		return false;
	if (!kind_on(IPC_UNIX))
		return false;
	return aiscope_task_pass(cur_task());
}

AISCOPE_BTF_RAW(sock_send_length, sock_send, struct sock *sk, int ret, int flags)
{
	if (!unix_pass(sk))
		return 0;
	unix_op(sk, true, ret, NULL);
	return 0;
}

AISCOPE_BTF_RAW(sock_recv_length, sock_recv, struct sock *sk, int ret, int flags)
{
	if ((flags & MSG_PEEK) || !unix_pass(sk))
		return 0;
	unix_op(sk, false, ret, NULL);
	return 0;
}

/* unix_seqpacket_{send,recv}msg call the dgram functions, which the
 * compiler may inline there: each hook takes its own socket type. */
static __always_inline bool unix_fn_pass(struct sock *sk, bool seqpacket)
{
	if (!unix_pass(sk))
		return false;
	return (BPF_CORE_READ(sk, sk_type) == SOCK_SEQPACKET) == seqpacket;
}

/* the unix sendmsg and recvmsg functions at return: args after sock, the
 * ret; skip: an expression of sk, true where the socket does not count
 * here (a peek is no read) */
#define UNIX_FEXIT(fn, prog, send, skip, args...)				\
SEC("fexit/" #fn)								\
int BPF_PROG(prog, struct socket *sock, args, int ret)				\
{										\
	struct sock *sk = BPF_CORE_READ(sock, sk);				\
										\
	if (skip)								\
		return 0;							\
	unix_op(sk, send, ret, msg);						\
	return 0;								\
}
#define UNIX_SEND_ARGS	struct msghdr *msg, size_t len
#define UNIX_RECV_ARGS	struct msghdr *msg, size_t size, int flags
#define UNIX_PEEK		(flags & MSG_PEEK)

UNIX_FEXIT(unix_stream_sendmsg, unix_stream_send_fexit, true, !unix_pass(sk), UNIX_SEND_ARGS)
UNIX_FEXIT(unix_dgram_sendmsg, unix_dgram_send_fexit, true, !unix_fn_pass(sk, false), UNIX_SEND_ARGS)
UNIX_FEXIT(unix_seqpacket_sendmsg, unix_seqpacket_send_fexit, true, !unix_fn_pass(sk, true), UNIX_SEND_ARGS)
UNIX_FEXIT(unix_stream_recvmsg, unix_stream_recv_fexit, false, UNIX_PEEK || !unix_pass(sk), UNIX_RECV_ARGS)
UNIX_FEXIT(unix_dgram_recvmsg, unix_dgram_recv_fexit, false, UNIX_PEEK || !unix_fn_pass(sk, false), UNIX_RECV_ARGS)
UNIX_FEXIT(unix_seqpacket_recvmsg, unix_seqpacket_recv_fexit, false, UNIX_PEEK || !unix_fn_pass(sk, true), UNIX_RECV_ARGS)

/* ---- files: pipes, FIFOs, eventfd, unix sockets, mq ---- */

/* the id /proc/PID/fdinfo shows as "eventfd-id" */
static __always_inline __u64 eventfd_id(struct file *f)
{
	struct eventfd_ctx *ctx = BPF_CORE_READ(f, private_data);

	return BPF_CORE_READ(ctx, id);
}

/* The channel behind f; IPC_NONE when it is none of ours or --kind or a
 * function hook leaves it out. */
static __always_inline __u32 classify(struct file *f, __u32 dir, struct ipc_key *ch,
				      struct name_src *src, __u32 *peer)
{
	struct inode *ino;
	__u32 mode, kind;
	struct sock *sk;

	if (!f)
		return IPC_NONE;
	ino = BPF_CORE_READ(f, f_inode);
	mode = BPF_CORE_READ(ino, i_mode) & AISCOPE_S_IFMT;
	ch->pad = 0;
	ch->id2 = 0;
	src->file = f;
	src->sk = NULL;
	src->peer = NULL;
	if (mode == AISCOPE_S_IFIFO) {
		if (BPF_CORE_READ(ino, i_sb, s_magic) == PIPEFS_MAGIC) {
			kind = IPC_PIPE;
		} else {
			kind = IPC_FIFO;
			ch->id2 = BPF_CORE_READ(ino, i_sb, s_dev);
		}
		ch->id = BPF_CORE_READ(ino, i_ino);
	} else if (mode == AISCOPE_S_IFSOCK) {
		if (!unix_by_sys)
			return IPC_NONE;
		struct socket *sock = BPF_CORE_READ(f, private_data);

		sk = BPF_CORE_READ(sock, sk);
		if (!sk || aiscope_sk_family(sk) != AISCOPE_AF_UNIX)
			return IPC_NONE;
		unix_key(sk, dir == IPC_WRITE, ch, src, NULL);
		*peer = aiscope_sk_peer_tgid(sk);
		kind = IPC_UNIX;
	} else if (&eventfd_write && BPF_CORE_READ(f, f_op, write) == (void *)&eventfd_write) {
		kind = IPC_EVENTFD;
		ch->id = eventfd_id(f);
	} else {
		return IPC_NONE;
	}
	if (!kind_on(kind) || (fn_covers & IPC_BIT(kind, dir)))
		return IPC_NONE;
	ch->kind = kind;
	return kind;
}

/* btf: a tp_btf program, where the fd table is read with plain loads */
static __always_inline __u32 classify_fd(long fd, __u32 dir, struct ipc_key *ch,
					 struct name_src *src, __u32 *peer, bool btf)
{
	struct file *f = btf ? aiscope_fd_file_btf(fd) : aiscope_fd_file(cur_task(), fd);

	return classify(f, dir, ch, src, peer);
}

static __always_inline bool mq_fd(long fd, struct ipc_key *ch)
{
	struct file *f = aiscope_fd_file(cur_task(), fd);
	struct inode *ino;

	if (!f)
		return false;
	ino = BPF_CORE_READ(f, f_inode);
	if (BPF_CORE_READ(ino, i_sb, s_magic) != MQUEUE_MAGIC)
		return false;
	ch->kind = IPC_MQ;
	ch->id = BPF_CORE_READ(ino, i_ino);
	ch->id2 = 0;
	ch->pad = 0;
	return true;
}

/* ---- the syscall path ---- */

static __always_inline bool sys_wanted(long id)
{
	if ((unsigned long)id >= IPC_SYSCALL_WORDS * 64)
		return false;
	return sys_ids[(id >> 6) & (IPC_SYSCALL_WORDS - 1)] & (1ULL << (id & 63));
}

/* Fills p for one fd that the syscall reads (dir IPC_READ) or writes. */
static __always_inline bool op_fd(struct pending *p, long nr, const unsigned long *a, __u32 dir,
				  bool btf)
{
	struct name_src src = { .sys_a = a, .sys_nr = nr };
	long fd = a[0];

	if (!classify_fd(fd, dir, &p->ch[0], &src, &p->peer_pid, btf))
		return false;
	/* a new channel's name while its file is at hand */
	make_name(&p->ch[0], &src);
	p->op = OP_RW;
	p->n = 1;
	p->dir[0] = dir;
	return true;
}

static __always_inline bool op_splice(struct pending *p, long fd_in, long fd_out, bool btf)
{
	struct name_src src = {};
	__u32 peer;

	p->op = OP_SPLICE;
	p->n = 0;
	if (classify_fd(fd_out, IPC_WRITE, &p->ch[0], &src, &p->peer_pid, btf)) {
		make_name(&p->ch[0], &src);
		p->dir[0] = IPC_WRITE;
		p->n = 1;
	}
	if (fd_in >= 0 && classify_fd(fd_in, IPC_READ, &p->ch[1], &src, &peer, btf)) {
		make_name(&p->ch[1], &src);
		p->dir[1] = IPC_READ;
		p->n |= 2;
	}
	return p->n;
}

static __always_inline bool op_msq(struct pending *p, long msqid, __u8 op, __u64 size)
{
	if (!kind_on(IPC_MSQ) || msqid < 0)
		return false;
	p->op = op;
	p->n = 1;
	p->size = size;
	p->ch[0].kind = IPC_MSQ;
	p->ch[0].id = msqid;
	p->ch[0].id2 = 0;
	p->ch[0].pad = 0;
	p->dir[0] = op == OP_MSGSND ? IPC_WRITE : IPC_READ;
	return true;
}

static __always_inline bool op_mq(struct pending *p, long fd, __u8 op, __u64 size)
{
	struct name_src src = {};

	if (!kind_on(IPC_MQ) || !mq_fd(fd, &p->ch[0]))
		return false;
	src.file = aiscope_fd_file(cur_task(), fd);
	make_name(&p->ch[0], &src);
	p->op = op;
	p->n = 1;
	p->size = size;
	p->dir[0] = op == OP_MQSEND ? IPC_WRITE : IPC_READ;
	return true;
}

static __always_inline bool op_shm(struct pending *p, long arg, __u8 op)
{
	if (!kind_on(IPC_SHM))
		return false;
	p->op = op;
	p->n = 1;
	p->arg = arg;
	p->ch[0].kind = IPC_SHM;
	p->ch[0].id = arg;		/* shmat: the id; shmdt: found at exit */
	p->ch[0].id2 = 0;
	p->ch[0].pad = 0;
	p->dir[0] = op == OP_SHMAT ? IPC_WRITE : IPC_READ;
	return true;
}

#define MAP_SHARED	0x01

/* POSIX shared memory: a shared mapping of a file on /dev/shm (tmpfs,
 * identified by its superblock's device) */
static __always_inline bool op_mmap(struct pending *p, long fd, unsigned long flags, bool btf)
{
	struct file *f;
	struct inode *ino;
	struct name_src src = {};

	if (!shm_dev || !kind_on(IPC_SHM) || fd < 0 || !(flags & MAP_SHARED))
		return false;
	f = btf ? aiscope_fd_file_btf(fd) : aiscope_fd_file(cur_task(), fd);
	if (!f)
		return false;
	ino = BPF_CORE_READ(f, f_inode);
	if (BPF_CORE_READ(ino, i_sb, s_dev) != shm_dev)
		return false;
	p->op = OP_SHMAT;
	p->n = 1;
	p->ch[0].kind = IPC_SHM;
	p->ch[0].id = BPF_CORE_READ(ino, i_ino);
	p->ch[0].id2 = shm_dev;
	p->ch[0].pad = 0;
	p->dir[0] = IPC_WRITE;
	src.file = f;
	make_name(&p->ch[0], &src);
	return true;
}

/* What syscall id with arguments a[0..4] does, into p; false when it
 * touches no channel of ours. The filters have passed. */
static __always_inline bool sys_op(long id, const unsigned long *a, struct pending *p, bool btf)
{
	switch (id) {
	case NR_read:
	case NR_readv:
	case NR_recvfrom:
	case NR_recvmsg:
		return op_fd(p, id, a, IPC_READ, btf);
	case NR_write:
	case NR_writev:
	case NR_sendto:
	case NR_sendmsg:
	case NR_vmsplice:
		/* vmsplice into a pipe's write end */
		return op_fd(p, id, a, IPC_WRITE, btf);
	case NR_splice:
		return op_splice(p, a[0], a[2], btf);
	case NR_tee:
		/* tee copies without consuming: a write into fd_out */
		return op_splice(p, -1, a[1], btf);
	case NR_msgsnd:
		return op_msq(p, a[0], OP_MSGSND, a[2]);
	case NR_msgrcv:
		return op_msq(p, a[0], OP_MSGRCV, 0);
	case NR_mq_timedsend:
		return op_mq(p, a[0], OP_MQSEND, a[2]);
	case NR_mq_timedreceive:
		return op_mq(p, a[0], OP_MQRECV, 0);
	case NR_shmat:
		return op_shm(p, a[0], OP_SHMAT);
	case NR_shmdt:
	case NR_munmap:
		/* a munmap is a detach when its address was an attach */
		return op_shm(p, a[0], OP_SHMDT);
	case NR_mmap:
		return op_mmap(p, a[4], a[3], btf);
	}
	return false;
}

/* Calls that move data succeed with ret > 0; others with 0 (msgsnd,
 * mq_timedsend, shmdt) or an address (shmat). */
static __always_inline bool sys_failed(long id, long ret)
{
	switch (id) {
	case NR_msgsnd:
	case NR_mq_timedsend:
	case NR_shmat:
	case NR_shmdt:
	case NR_mmap:
	case NR_munmap:
		return ret < 0;
	case NR_msgrcv:
	case NR_mq_timedreceive:
		return ret < 0;
	}
	return ret <= 0;
}

static __always_inline void exit_shm(struct pending *p, long ret)
{
	struct shm_key k = { .pid = bpf_get_current_pid_tgid() >> 32 };
	struct ipc_key *seg;

	if (p->op == OP_SHMAT) {
		k.addr = ret;
		if (bpf_map_update_elem(&shm_addrs, &k, &p->ch[0], BPF_ANY))
			aiscope_count_lost(AISCOPE_LOST_MAP);
		account(&p->ch[0], IPC_WRITE, 0, 0, NULL, ret);
		return;
	}
	k.addr = p->arg;
	seg = bpf_map_lookup_elem(&shm_addrs, &k);
	if (!seg)
		return;		/* not an attach, or one from before we started */
	p->ch[0] = *seg;
	bpf_map_delete_elem(&shm_addrs, &k);
	account(&p->ch[0], IPC_READ, 0, 0, NULL, p->arg);
}

/* The syscall returned ret: count what p describes. */
static __always_inline void finish(struct pending *p, long ret)
{
	struct name_src none = {};

	switch (p->op) {
	case OP_MSGSND:
	case OP_MQSEND:
		/* success returns 0; the message is what was asked */
		if (ret == 0)
			account(&p->ch[0], IPC_WRITE, p->size, 0, &none, ret);
		break;
	case OP_SHMAT:
	case OP_SHMDT:
		if (ret >= 0)
			exit_shm(p, ret);
		break;
	default:
		if (ret <= 0)
			break;
		if (p->n & 1)
			account(&p->ch[0], p->dir[0], ret, p->peer_pid, &none, ret);
		if (p->n & 2)
			account(&p->ch[1], p->dir[1], ret, 0, &none, ret);
		break;
	}
}

/*
 * tp_btf and raw_tp: everything at sys_exit. The arguments are still in
 * the saved user registers there (only the return register changed), so
 * sys_enter needs no program, no per-thread entry waits for the result,
 * and a failed call is dropped before its fd is even looked at.
 */
static __always_inline int sys_exit_args(long id, const unsigned long *a, long ret, bool btf)
{
	struct pending p;

	if (!sys_wanted(id) || sys_failed(id, ret))
		return 0;
	if (!aiscope_task_pass(cur_task()))
		return 0;
	if (!sys_op(id, a, &p, btf))
		return 0;
	finish(&p, ret);
	return 0;
}

#if defined(__TARGET_ARCH_x86)
#define REGS_NR(r)	((r)->orig_ax)
#define REGS_A1(r)	((r)->di)
#define REGS_A2(r)	((r)->si)
#define REGS_A3(r)	((r)->dx)
#define REGS_A4(r)	((r)->r10)
#define REGS_A5(r)	((r)->r8)
#define REGS_A6(r)	((r)->r9)
#else
#define REGS_NR(r)	((r)->syscallno)
#define REGS_A1(r)	((r)->orig_x0)
#define REGS_A2(r)	((r)->regs[1])
#define REGS_A3(r)	((r)->regs[2])
#define REGS_A4(r)	((r)->regs[3])
#define REGS_A5(r)	((r)->regs[4])
#define REGS_A6(r)	((r)->regs[5])
#endif
/* argument n with a plain load, for AISCOPE_SYS_ARGS */
#define REGS_ARG(r, n)	REGS_A##n(r)

/* tp_btf: regs is a BTF pointer, read with plain loads */
SEC("tp_btf/sys_exit")
int BPF_PROG(sys_exit_btf, struct pt_regs *regs, long ret)
{
	unsigned long a[6];	/* a[5]: sendto's addrlen */
	long id = REGS_NR(regs);

	if (!sys_wanted(id))
		return 0;
	AISCOPE_SYS_ARGS(a, REGS_ARG, regs);
	a[5] = REGS_A6(regs);
	return sys_exit_args(id, a, ret, true);
}

SEC("raw_tp/sys_exit")
int BPF_PROG(sys_exit_raw, struct pt_regs *regs, long ret)
{
	unsigned long a[6];	/* a[5]: sendto's addrlen */
	long id = SYSCALL_NR(regs);

	if (!sys_wanted(id))
		return 0;
	AISCOPE_SYS_ARGS(a, AISCOPE_SYS_ARG_CORE, regs);
	a[5] = SYSCALL_A6(regs);
	return sys_exit_args(id, a, ret, false);
}

/*
 * Classic tracepoints: sys_exit has only the id and the result, so
 * sys_enter classifies and leaves the operation in `pending` for it.
 */
static __always_inline void pend(const struct pending *p)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();

	if (bpf_map_update_elem(&pending, &tid, p, BPF_ANY))
		aiscope_count_lost(AISCOPE_LOST_MAP);
}

static __always_inline int sys_enter_args(long id, const unsigned long *a)
{
	struct pending p;

	if (!sys_wanted(id) || !aiscope_task_pass(cur_task()))
		return 0;
	if (sys_op(id, a, &p, false))
		pend(&p);
	return 0;
}

SEC("tracepoint/raw_syscalls/sys_enter")
int sys_enter_tp(struct trace_event_raw_sys_enter *ctx)
{
	unsigned long a[6];	/* a[5]: sendto's addrlen */
	long id = ctx->id;

	if (!sys_wanted(id))
		return 0;
	AISCOPE_SYS_ARGS(a, AISCOPE_SYS_ARG_TP, ctx);
	a[5] = ctx->args[5];
	return sys_enter_args(id, a);
}

/* the same from tp_btf or raw_tp sys_enter, where those exist but the
 * classic sys_exit is the one chosen */
SEC("tp_btf/sys_enter")
int BPF_PROG(sys_enter_btf, struct pt_regs *regs, long id)
{
	unsigned long a[6];	/* a[5]: sendto's addrlen */

	if (!sys_wanted(id))
		return 0;
	AISCOPE_SYS_ARGS(a, REGS_ARG, regs);
	a[5] = REGS_A6(regs);
	return sys_enter_args(id, a);
}

SEC("raw_tp/sys_enter")
int BPF_PROG(sys_enter_raw, struct pt_regs *regs, long id)
{
	unsigned long a[6];	/* a[5]: sendto's addrlen */

	if (!sys_wanted(id))
		return 0;
	AISCOPE_SYS_ARGS(a, AISCOPE_SYS_ARG_CORE, regs);
	a[5] = SYSCALL_A6(regs);
	return sys_enter_args(id, a);
}

SEC("tracepoint/raw_syscalls/sys_exit")
int sys_exit_tp(struct trace_event_raw_sys_exit *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct pending *p;

	if (!sys_wanted(ctx->id))
		return 0;
	p = bpf_map_lookup_elem(&pending, &tid);
	if (!p)
		return 0;
	finish(p, ctx->ret);
	bpf_map_delete_elem(&pending, &tid);
	return 0;
}

/* ---- function hooks: pipes, FIFOs, eventfd, msg, mq ---- */

/* kind: the only kind this hook counts (IPC_NONE: pipe or FIFO, for the
 * pre-6.15 pipe_read/pipe_write that serve both) */
static __always_inline void file_fn(struct file *f, __u32 dir, long ret, __u32 only)
{
	struct ipc_key ch = {};
	struct name_src src = { .file = f };
	struct inode *ino;
	__u32 kind;

	if (ret <= 0 || !aiscope_task_pass(cur_task()))
		return;
	ino = BPF_CORE_READ(f, f_inode);
	if (only == IPC_EVENTFD) {
		kind = IPC_EVENTFD;
		ch.id = eventfd_id(f);
	} else if (BPF_CORE_READ(ino, i_sb, s_magic) == PIPEFS_MAGIC) {
		kind = IPC_PIPE;
		ch.id = BPF_CORE_READ(ino, i_ino);
	} else {
		kind = IPC_FIFO;
		ch.id = BPF_CORE_READ(ino, i_ino);
		ch.id2 = BPF_CORE_READ(ino, i_sb, s_dev);
	}
	if (only != IPC_NONE && kind != only)
		return;
	if (!kind_on(kind))
		return;
	ch.kind = kind;
	account(&ch, dir, ret, 0, &src, ret);
}

/* The read_iter/write_iter hooks of pipes, FIFOs and eventfd reads: the
 * file from the kiocb; only: as file_fn */
#define KIOCB_FEXIT(fn, prog, dir, only)					\
SEC("fexit/" #fn)								\
int BPF_PROG(prog, struct kiocb *iocb, struct iov_iter *iter, long ret)	\
{										\
	file_fn(BPF_CORE_READ(iocb, ki_filp), dir, ret, only);			\
	return 0;								\
}

KIOCB_FEXIT(anon_pipe_write, pipe_write_fexit, IPC_WRITE, IPC_PIPE)
KIOCB_FEXIT(anon_pipe_read, pipe_read_fexit, IPC_READ, IPC_PIPE)
KIOCB_FEXIT(pipe_write, pipe_write_old_fexit, IPC_WRITE, IPC_NONE)
KIOCB_FEXIT(pipe_read, pipe_read_old_fexit, IPC_READ, IPC_NONE)
KIOCB_FEXIT(fifo_pipe_write, fifo_write_fexit, IPC_WRITE, IPC_FIFO)
KIOCB_FEXIT(fifo_pipe_read, fifo_read_fexit, IPC_READ, IPC_FIFO)

SEC("fexit/eventfd_write")
int BPF_PROG(eventfd_write_fexit, struct file *f, const char *buf, size_t count, loff_t *ppos,
	     long ret)
{
	file_fn(f, IPC_WRITE, ret, IPC_EVENTFD);
	return 0;
}

KIOCB_FEXIT(eventfd_read, eventfd_read_fexit, IPC_READ, IPC_EVENTFD)

static __always_inline void msq_fn(long msqid, __u32 dir, __u64 bytes)
{
	struct ipc_key ch = { .kind = IPC_MSQ, .id = msqid };

	if (!kind_on(IPC_MSQ) || !aiscope_task_pass(cur_task()))
		return;
	account(&ch, dir, bytes, 0, NULL, bytes);
}

SEC("fexit/do_msgsnd")
int BPF_PROG(msgsnd_fexit, int msqid, long mtype, void *mtext, size_t msgsz, int msgflg, long ret)
{
	if (ret == 0)
		msq_fn(msqid, IPC_WRITE, msgsz);
	return 0;
}

SEC("fexit/do_msgrcv")
int BPF_PROG(msgrcv_fexit, int msqid, void *buf, size_t bufsz, long msgtyp, int msgflg,
	     void *handler, long ret)
{
	if (ret >= 0)
		msq_fn(msqid, IPC_READ, ret);
	return 0;
}

static __always_inline void mq_fn(int fd, __u32 dir, __u64 bytes)
{
	struct ipc_key ch;
	struct name_src src = {};

	if (!kind_on(IPC_MQ) || !aiscope_task_pass(cur_task()))
		return;
	if (!mq_fd(fd, &ch))
		return;
	src.file = aiscope_fd_file(cur_task(), fd);
	account(&ch, dir, bytes, 0, &src, bytes);
}

SEC("fexit/do_mq_timedsend")
int BPF_PROG(mq_send_fexit, int mqdes, const char *u_msg_ptr, size_t msg_len,
	     unsigned int msg_prio, void *ts, int ret)
{
	if (ret == 0)
		mq_fn(mqdes, IPC_WRITE, msg_len);
	return 0;
}

SEC("fexit/do_mq_timedreceive")
int BPF_PROG(mq_recv_fexit, int mqdes, char *u_msg_ptr, size_t msg_len,
	     unsigned int *u_msg_prio, void *ts, long ret)
{
	if (ret >= 0)
		mq_fn(mqdes, IPC_READ, ret);
	return 0;
}

char LICENSE[] SEC("license") = "GPL";
