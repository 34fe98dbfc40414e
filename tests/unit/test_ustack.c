// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/ustack.c: a child blocked in a system call inside a known function
 * has a return address into it on its stack above its stack pointer, told
 * a return address; the function's first byte is not one; a child that
 * runs in user space has no stack pointer to read; reads stop at the
 * first unmapped page; a gone process is -ESRCH. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "t.h"
#include "ustack.h"

static __attribute__((noinline)) void stuck_here(void)
{
	pause();
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void spin_here(void)
{
	for (;;)
		__asm__ volatile("" ::: "memory");
}

static pid_t child(void (*fn)(void))
{
	pid_t p = fork();

	if (p == 0) {
		fn();
		_exit(0);
	}
	return p;
}

static void reap(pid_t p)
{
	kill(p, SIGKILL);
	waitpid(p, NULL, 0);
}

static void test_blocked_child(void)
{
	static uint64_t words[8192];
	uint64_t sp = 0, lo = (uintptr_t)stuck_here;
	pid_t p = child(stuck_here);
	int rc = -EBUSY, found = 0;
	ssize_t n;

	if (geteuid())
		SKIP("needs root (ptrace read access to the child)");
	for (int i = 0; i < 200 && rc == -EBUSY; i++) {
		usleep(5000);
		rc = ustack_blocked_sp(p, p, &sp);
	}
	CHECK_EQ(rc, 0);
	n = ustack_read(p, sp, words, sizeof(words));
	/* to the top of the stack mapping: a few frames and the environment, at
	 * times under a page */
	CHECK(n >= 256);
	for (ssize_t i = 0; i < n / 8; i++)
		if (words[i] > lo && words[i] < lo + 256 && ustack_is_return(p, words[i]))
			found++;
	CHECK(found >= 1);
	CHECK(!ustack_is_return(p, lo));
	reap(p);
	CHECK_EQ(ustack_blocked_sp(p, p, &sp), -ESRCH);
}

static void test_running_child(void)
{
	pid_t p = child(spin_here);
	uint64_t sp;
	int busy = 0;

	if (geteuid())
		SKIP("needs root");
	usleep(20000);
	/* on the CPU or waiting for one: never in the kernel on its own */
	for (int i = 0; i < 10; i++)
		busy += ustack_blocked_sp(p, p, &sp) == -EBUSY;
	CHECK_EQ(busy, 10);
	reap(p);
}

static void test_read_stops_at_unmapped(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, 2 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static char buf[1 << 16];

	CHECK(m != MAP_FAILED);
	memset(m, 7, 2 * pg);
	munmap(m + pg, pg);
	CHECK_EQ(ustack_read(getpid(), (uintptr_t)m + 100, buf, 3 * pg), pg - 100);
	CHECK(buf[0] == 7 && buf[pg - 101] == 7);
	CHECK(ustack_read(getpid(), (uintptr_t)m + pg, buf, 16) < 0);
	munmap(m, pg);
}

int main(void)
{
	RUN(test_blocked_child);
	RUN(test_running_child);
	RUN(test_read_stops_at_unmapped);
	return t_done();
}
