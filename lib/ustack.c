// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/ustack.c: see ustack.h */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include "ustack.h"

/* "NR a1 a2 a3 a4 a5 a6 SP PC" (NR -1: stopped, not in a call: only SP
 * and PC follow), or "running" */
int ustack_blocked_sp(pid_t pid, pid_t tid, uint64_t *sp)
{
	char path[64], buf[256], *tok, *save = NULL;
	uint64_t words[10];
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	if (!strncmp(buf, "running", 7))
		return -EBUSY;
	for (tok = strtok_r(buf, " \n", &save); tok && n < 10; tok = strtok_r(NULL, " \n", &save))
		words[n++] = strtoull(tok, NULL, 0);
	/* the stack pointer is the last but one field */
	if (n != 9 && n != 3)
		return -EIO;
	*sp = words[n - 2];
	return 0;
}

/* one remote iovec a page, so that a fault ends the read at a page */
#define USTACK_PAGE 4096

ssize_t ustack_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len }, remote[64];
	size_t done = 0;

	while (done < len) {
		size_t n = 0, want = 0;
		ssize_t got;

		while (n < 64 && done + want < len) {
			uint64_t at = addr + done + want;
			size_t chunk = USTACK_PAGE - (at % USTACK_PAGE);

			if (chunk > len - done - want)
				chunk = len - done - want;
			remote[n].iov_base = (void *)(uintptr_t)at;
			remote[n++].iov_len = chunk;
			want += chunk;
		}
		local.iov_base = (char *)buf + done;
		local.iov_len = want;
		got = process_vm_readv(pid, &local, 1, remote, n, 0);
		if (got < 0)
			return done ? (ssize_t)done : -errno;
		done += got;
		if ((size_t)got < want)
			break;
	}
	return done;
}

bool ustack_is_return(pid_t pid, uint64_t ret)
{
	uint8_t b[8];

	if (ret < sizeof(b) || ustack_read(pid, ret - sizeof(b), b, sizeof(b)) != sizeof(b))
		return false;
#if defined(__x86_64__)
	/* call rel32 (e8, 5 bytes); call *r (ff /2, mod 11: 2 bytes, 3 with a
	 * REX prefix); call *disp8(r) (3 bytes, 4 with a SIB byte); call
	 * *disp32(r) or *disp32(%rip) (6 bytes, 7 with a SIB byte) */
	if (b[3] == 0xe8)
		return true;
	if (b[6] == 0xff && (b[7] & 0xf8) == 0xd0)
		return true;
	if (b[6] == 0xff && (b[7] & 0xf8) == 0x10 && (b[7] & 7) != 4 && (b[7] & 7) != 5)
		return true;	/* call *(r) */
	if (b[5] == 0xff && (b[6] & 0x38) == 0x10 && (b[6] & 0xc0) == 0x40)
		return true;
	if (b[4] == 0xff && (b[5] & 0x38) == 0x10 && (b[5] & 0xc0) == 0x40 && (b[5] & 7) == 4)
		return true;
	if (b[2] == 0xff && (b[3] & 0x38) == 0x10 && ((b[3] & 0xc0) == 0x80 || (b[3] & 0xc7) == 0x05))
		return true;
	if (b[1] == 0xff && (b[2] & 0x38) == 0x10 && (b[2] & 0xc0) == 0x80 && (b[2] & 7) == 4)
		return true;
	return false;
#elif defined(__aarch64__)
	{
		uint32_t insn;

		memcpy(&insn, b + 4, sizeof(insn));
		return (insn & 0xfc000000) == 0x94000000 ||	/* bl */
		       (insn & 0xfffffc1f) == 0xd63f0000;	/* blr */
	}
#else
	return true;
#endif
}
