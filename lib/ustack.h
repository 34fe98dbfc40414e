/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where a thread of another process is stuck, without stopping it: its user
 * stack pointer while it waits in the kernel, its stack's words, and
 * whether a word is a return address. What a tool that attached after a
 * call began (a uprobe never saw it enter) can still find: the functions of
 * a library with a live frame on the thread's stack.
 *
 *	uint64_t sp, words[N];
 *	if (!ustack_blocked_sp(pid, tid, &sp)) {
 *		ssize_t n = ustack_read(pid, sp, words, sizeof(words));
 *		for (i ...) if (in_text(words[i]) && ustack_is_return(pid, words[i])) ...
 *	}
 *
 * A live frame lies at or above the stack pointer; a word there that points
 * into a function's code just after a call instruction is a return address
 * of a call that function made and has not returned from (or a stale copy
 * in a frame's uninitialised slot: a caller checks again later that the
 * slot still holds it and the stack pointer is still below it).
 */
#ifndef AISCOPE_USTACK_H
#define AISCOPE_USTACK_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The user stack pointer of thread tid of pid while it is in the kernel (a
 * system call, or stopped), from /proc/PID/task/TID/syscall. Returns 0,
 * -EBUSY while it runs in user space (no stack pointer to read), -ESRCH
 * when it is gone, other -errno. Needs ptrace read access (root). */
int ustack_blocked_sp(pid_t pid, pid_t tid, uint64_t *sp);

/* Up to len bytes of pid's memory at addr into buf, to the first page that
 * cannot be read: the bytes read (0 if none), or -errno. */
ssize_t ustack_read(pid_t pid, uint64_t addr, void *buf, size_t len);

/* The instruction that ends at ret is a call (x86-64: call rel32 or an
 * indirect call; arm64: bl or blr): ret can be a return address. */
bool ustack_is_return(pid_t pid, uint64_t ret);

#endif
