/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Files and sockets seen from BPF: an fd of the current task to its
 * struct file, a socket's inode number (the N of "socket:[N]"), its peer
 * process, and the family of a sock. CO-RE reads only, so that tp_btf,
 * raw_tp, classic tracepoints and fentry programs can all use them.
 * Include after aiscope.bpf.h.
 */
#ifndef AISCOPE_FILE_BPF_H
#define AISCOPE_FILE_BPF_H

#ifndef AISCOPE_S_IFMT
#define AISCOPE_S_IFMT		0170000
#endif
#ifndef AISCOPE_S_IFSOCK
#define AISCOPE_S_IFSOCK	0140000
#endif
#define AISCOPE_S_IFIFO		0010000
#define AISCOPE_AF_UNIX		1

/* The struct file behind fd in task t, NULL if none. */
static __always_inline struct file *aiscope_fd_file(struct task_struct *t, long fd)
{
	struct fdtable *fdt;
	struct file **fds;
	struct file *f = NULL;

	if (fd < 0)
		return NULL;
	fdt = BPF_CORE_READ(t, files, fdt);
	if (!fdt || (unsigned long)fd >= BPF_CORE_READ(fdt, max_fds))
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	if (!fds)
		return NULL;
	bpf_core_read(&f, sizeof(f), &fds[fd]);
	return f;
}

/* The same for the current task in tp_btf and fentry programs, where its
 * BTF pointer allows plain loads down to the fd array (a helper call per
 * step costs more than the rest of a hot path). */
static __always_inline struct file *aiscope_fd_file_btf(long fd)
{
	struct task_struct *t;
	struct fdtable *fdt;
	struct file *f = NULL;
	unsigned long fds;

	if (fd < 0)
		return NULL;
	/* bpf_get_current_task_btf() is 5.11: the verifier drops the branch
	 * that a kernel without it does not take */
	if (!bpf_core_enum_value_exists(enum bpf_func_id, BPF_FUNC_get_current_task_btf))
		return aiscope_fd_file((struct task_struct *)bpf_get_current_task(), fd);
	t = bpf_get_current_task_btf();
	fdt = t->files->fdt;
	if (!fdt || (unsigned long)fd >= fdt->max_fds)
		return NULL;
	/* the array is not a BTF object: read its slot */
	fds = (unsigned long)fdt->fd;
	if (!fds)
		return NULL;
	bpf_probe_read_kernel(&f, sizeof(f), (void *)(fds + fd * sizeof(f)));
	return f;
}

/* inode number of the socket ("socket:[N]"): struct socket sits first in
 * struct socket_alloc, before its inode */
static __always_inline __u64 aiscope_socket_ino(struct socket *sock)
{
	struct socket_alloc *sa = (void *)sock;

	if (!sock)
		return 0;
	return BPF_CORE_READ(sa, vfs_inode.i_ino);
}

static __always_inline __u64 aiscope_sk_ino(struct sock *sk)
{
	if (!sk)
		return 0;
	return aiscope_socket_ino(BPF_CORE_READ(sk, sk_socket));
}

/* (also in socketsnoop's sock.bpf.h, where it may come first) */
#ifndef AISCOPE_SOCK_BPF_H
static __always_inline __u16 aiscope_sk_family(const struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_family);
}
#endif

/* The process at the other end, as recorded at connect, accept or
 * socketpair (SO_PEERCRED): its tgid in the initial pid namespace. */
static __always_inline __u32 aiscope_sk_peer_tgid(struct sock *sk)
{
	struct pid *p = BPF_CORE_READ(sk, sk_peer_pid);

	if (!p)
		return 0;
	return BPF_CORE_READ(p, numbers[0].nr);
}

#endif
