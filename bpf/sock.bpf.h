/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Sockets seen from BPF with CO-RE: family, protocol, the inet 4-tuple,
 * a user sockaddr, and fd -> struct socket of the current task. Shared by
 * socketsnoop (AF_INET/AF_INET6) and ipcsnoop (AF_UNIX), which hook the
 * same sock_send_length/sock_recv_length tracepoints and filter on the
 * family first.
 */
#ifndef AISCOPE_SOCK_BPF_H
#define AISCOPE_SOCK_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#ifndef AF_UNIX
#define AF_UNIX		1
#endif
#ifndef AF_INET
#define AF_INET		2
#endif
#ifndef AF_INET6
#define AF_INET6	10
#endif
#define AISCOPE_S_IFMT		0170000
#define AISCOPE_S_IFSOCK	0140000

static __always_inline __u16 aiscope_sk_family(const struct sock *sk)
{
	return BPF_CORE_READ(sk, __sk_common.skc_family);
}

/* sk_protocol is a u16 since 5.6 and a bitfield before: the probed read
 * handles both. */
static __always_inline __u16 aiscope_sk_protocol(const struct sock *sk)
{
	return BPF_CORE_READ_BITFIELD_PROBED(sk, sk_protocol);
}

/* a[16] = ::ffff:v4 (the v4-mapped form keeps one address layout) */
static __always_inline void aiscope_v4_mapped(__u8 *a, __u32 v4_be)
{
	__builtin_memset(a, 0, 10);
	a[10] = 0xff;
	a[11] = 0xff;
	__builtin_memcpy(a + 12, &v4_be, 4);
}

static __always_inline bool aiscope_is_v4_mapped(const __u8 *a)
{
	for (int i = 0; i < 10; i++)
		if (a[i])
			return false;
	return a[10] == 0xff && a[11] == 0xff;
}

/* Local and remote address (16 bytes each, v4 as v4-mapped) and ports
 * (host order) of an AF_INET or AF_INET6 socket. rport 0: not connected. */
static __always_inline void aiscope_sk_inet_tuple(const struct sock *sk, __u16 family,
						  __u8 *laddr, __u8 *raddr,
						  __u16 *lport, __u16 *rport)
{
	/* inet_sport, not skc_num: a TCP socket in TIME_WAIT or CLOSE has
	 * left the port hash (skc_num 0) while its data is still read */
	*lport = bpf_ntohs(BPF_CORE_READ((struct inet_sock *)sk, inet_sport));
	*rport = bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport));
	if (family == AF_INET) {
		aiscope_v4_mapped(laddr, BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr));
		aiscope_v4_mapped(raddr, BPF_CORE_READ(sk, __sk_common.skc_daddr));
		return;
	}
	BPF_CORE_READ_INTO((struct in6_addr *)laddr, sk, __sk_common.skc_v6_rcv_saddr);
	BPF_CORE_READ_INTO((struct in6_addr *)raddr, sk, __sk_common.skc_v6_daddr);
}

/* A sockaddr_in/in6 already copied to kernel memory (user: from user
 * memory) into addr/port. Returns false when it is neither. */
static __always_inline bool aiscope_read_sockaddr(const void *sa, bool user,
						  __u8 *addr, __u16 *port)
{
	struct sockaddr_in6 s6 = {};
	long err;

	if (!sa)
		return false;
	if (user)
		err = bpf_probe_read_user(&s6, sizeof(s6), sa);
	else
		err = bpf_probe_read_kernel(&s6, sizeof(s6), sa);
	if (err) {
		/* a sockaddr_in at the end of a mapping */
		if (user)
			err = bpf_probe_read_user(&s6, sizeof(struct sockaddr_in), sa);
		else
			err = bpf_probe_read_kernel(&s6, sizeof(struct sockaddr_in), sa);
		if (err)
			return false;
	}
	*port = bpf_ntohs(s6.sin6_port);
	if (s6.sin6_family == AF_INET) {
		struct sockaddr_in *s4 = (void *)&s6;

		aiscope_v4_mapped(addr, s4->sin_addr.s_addr);
		return true;
	}
	if (s6.sin6_family != AF_INET6)
		return false;
	__builtin_memcpy(addr, &s6.sin6_addr, 16);
	return true;
}

/* The struct socket behind fd in task's file table, NULL if fd is not a
 * socket. */
static __always_inline struct socket *aiscope_fd_socket(struct task_struct *task, long fd)
{
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	struct file **fds, *f = NULL;
	unsigned int max;
	umode_t mode;

	if (!fdt || fd < 0)
		return NULL;
	max = BPF_CORE_READ(fdt, max_fds);
	if ((unsigned long)fd >= max)
		return NULL;
	fds = BPF_CORE_READ(fdt, fd);
	bpf_core_read(&f, sizeof(f), &fds[fd & 0xfffff]);
	if (!f)
		return NULL;
	mode = BPF_CORE_READ(f, f_inode, i_mode);
	if ((mode & AISCOPE_S_IFMT) != AISCOPE_S_IFSOCK)
		return NULL;
	return BPF_CORE_READ(f, private_data);
}

#endif
