/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef IPCSNOOP_H
#define IPCSNOOP_H

#include "aiscope_common.h"

enum ipc_kind {
	IPC_NONE,
	IPC_PIPE,	/* anonymous pipe: id = pipefs inode */
	IPC_FIFO,	/* named pipe: id = inode, id2 = device */
	IPC_UNIX,	/* unix socket: id = receiving inode, id2 = sending struct sock (0: any) */
	IPC_MSQ,	/* SysV message queue: id = msqid */
	IPC_MQ,		/* POSIX message queue: id = mqueue inode */
	IPC_EVENTFD,	/* eventfd: id = eventfd id (fdinfo "eventfd-id") */
	IPC_SHM,	/* SysV shared memory: id = shmid */
	IPC_KINDS,
};

enum ipc_dir {
	IPC_WRITE,	/* write, send, msgsnd, mq_timedsend; shm: attach */
	IPC_READ,	/* read, recv, msgrcv, mq_timedreceive; shm: detach */
};

/* A channel. For unix sockets the direction is part of it: the bytes that
 * one socket sent to its peer (stream, seqpacket), or that all senders
 * sent to one datagram socket (id2 = 0). */
struct ipc_key {
	__u64 id;
	__u64 id2;
	__u32 kind;
	__u32 pad;
};

/* unix id of an unconnected datagram send: a hash of the destination
 * address, not an inode; user space files it under the receiver's socket
 * bound to that address */
#define IPC_UNIX_ADDR_ID	(1ULL << 63)

/* epoch alternates every interval (schedlat's pattern): user space drains
 * the closed epoch while BPF fills the open one. */
struct ipc_stat_key {
	struct ipc_key ch;
	__u32 pid;		/* thread-group id of the reader or writer */
	__u16 dir;
	__u16 epoch;
};

struct ipc_stat {
	struct aiscope_ident ident;	/* the first thread seen */
	__u64 ops;		/* calls, messages; shm: attaches or detaches */
	__u64 bytes;		/* payload moved; shm: the segment size at attach */
	__u64 first_ts;		/* boot clock, ns */
	__u64 last_ts;
	__u32 peer_pid;		/* unix: the peer's process at connect time, 0 unknown */
	__u32 pad;
};

/* Names that user space cannot derive from the key: FIFO paths (dentry
 * names, leaf first, crossing mounts), unix socket addresses (raw bytes,
 * len of them), POSIX mq names (one component). */
#define IPC_NAME_DEPTH	16
#define IPC_NAME_LEN	64
#define IPC_NAME_TRUNC	0x1	/* deeper than IPC_NAME_DEPTH */

struct ipc_name {
	__u32 depth;		/* components in comp[] */
	__u32 flags;
	__u32 len;		/* unix: bytes of the address in raw */
	__u32 pad;
	__u64 ino;		/* unix: the receiving socket's inode, 0 not yet known */
	union {
		char comp[IPC_NAME_DEPTH][IPC_NAME_LEN];
		char raw[IPC_NAME_DEPTH * IPC_NAME_LEN];
	};
};

/* -e: one operation */
struct ipc_event {
	__u64 ts;
	__u64 bytes;
	struct ipc_key ch;
	struct aiscope_ident task;
	__u32 dir;
	__u32 peer_pid;
	__s64 ret;		/* shm: the id or address */
};

/* Which (kind, direction) pairs a function hook covers, so that the
 * syscall path leaves them alone: bit kind * 2 + dir. */
#define IPC_BIT(kind, dir)	(1U << ((kind) * 2 + (dir)))

/* The syscalls the sys_enter/sys_exit path handles, as a bitmap of ids
 * (user space fills it per architecture). */
#define IPC_SYSCALL_WORDS	8	/* ids below 512 */

#endif
