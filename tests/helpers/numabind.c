// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * numabind: a process placed on known NUMA nodes, for numaplace's tests.
 *
 *	numabind CPU_NODE MEM_NODE MIB [touch]
 *
 * Pins itself to the CPUs of node CPU_NODE (sysfs cpulist), maps MIB MiB
 * of anonymous memory bound to node MEM_NODE (mbind MPOL_BIND), touches
 * every page, and prints "ready PID PAGESIZE". Then it spins on its CPUs.
 * Each SIGUSR1 moves its pages from MEM_NODE to CPU_NODE with
 * migrate_pages(2) (what migratepages(8) does, here in its own context)
 * and prints "migrated N" with the pages not moved the call returned.
 * With "touch" it drops the binding once its pages are placed and keeps
 * writing every page instead of spinning: NUMA balancing (when on) then
 * moves them to CPU_NODE on its hinting faults, in its context.
 * SIGTERM ends it. Raw system calls: no libnuma, so it links statically.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define MPOL_BIND	2
#define MPOL_MF_STRICT	(1 << 0)
#define MPOL_MF_MOVE	(1 << 1)
#define MAXNODE		64

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	go = 1;
}

static void die(const char *what)
{
	perror(what);
	exit(1);
}

/* the CPUs of node n, from its sysfs cpulist ("0-1,4") */
static void pin_to_node(int n)
{
	char path[80], buf[256], *s = buf, *end;
	cpu_set_t set;
	FILE *f;

	snprintf(path, sizeof(path), "/sys/devices/system/node/node%d/cpulist", n);
	f = fopen(path, "r");
	if (!f || !fgets(buf, sizeof(buf), f))
		die(path);
	fclose(f);
	CPU_ZERO(&set);
	while (*s >= '0' && *s <= '9') {
		long a = strtol(s, &end, 10), b = a;

		if (*end == '-')
			b = strtol(end + 1, &end, 10);
		for (long c = a; c <= b; c++)
			CPU_SET(c, &set);
		s = *end == ',' ? end + 1 : end;
	}
	if (sched_setaffinity(0, sizeof(set), &set))
		die("sched_setaffinity");
}

/* numabind --reap: what the parent becomes, so that it shares no page
 * with the child (a page still shared copy-on-write would move to the
 * child's node when it writes it, which no migration counter counts): it
 * waits for the child, which dies with it */
static int reap(void)
{
	while (wait(NULL) > 0 || errno == EINTR)
		;
	return 0;
}

/* true in the parent, which has become the reaper by then or waits */
static bool run_pinned_child(const char *self)
{
	pid_t c = fork();

	if (c < 0)
		die("fork");
	if (c == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		return false;
	}
	execl(self, "numabind", "--reap", (char *)NULL);
	execl("/proc/self/exe", "numabind", "--reap", (char *)NULL);
	reap();
	return true;
}

int main(int argc, char **argv)
{
	unsigned long from[MAXNODE / 64] = {}, to[MAXNODE / 64] = {};
	long page = sysconf(_SC_PAGESIZE);
	int cpu_node, mem_node, touch;
	size_t len;
	char *mem;

	if (argc == 2 && !strcmp(argv[1], "--reap"))
		return reap();
	touch = argc == 5 && !strcmp(argv[4], "touch");
	if (argc != 4 && !touch) {
		fprintf(stderr, "usage: numabind CPU_NODE MEM_NODE MIB [touch]\n");
		return 2;
	}
	cpu_node = atoi(argv[1]);
	mem_node = atoi(argv[2]);
	len = strtoul(argv[3], NULL, 10) << 20;
	if (cpu_node < 0 || cpu_node >= MAXNODE || mem_node < 0 || mem_node >= MAXNODE || !len) {
		fprintf(stderr, "numabind: nodes 0 to %d and a size in MiB\n", MAXNODE - 1);
		return 2;
	}
	pin_to_node(cpu_node);
	/* the process the tests measure runs pinned from its first instant:
	 * a child forked after the pin (this one ran wherever it was started
	 * until then: an emulated guest's exec took 40 ms on the other node);
	 * "ready" names the child, which dies with this process */
	if (run_pinned_child(argv[0]))
		return 0;
	mem = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED)
		die("mmap");
	/* base pages: on 5.10 NUMA balancing moves a transparent huge
	 * page by migrate_misplaced_transhuge_page, which fires no
	 * migrate:mm_migrate_pages (numaplace counts such moves only in the
	 * host's vmstat deltas: a known gap, documented) */
	madvise(mem, len, MADV_NOHUGEPAGE);
	from[0] = 1UL << mem_node;
	to[0] = 1UL << cpu_node;
	if (syscall(SYS_mbind, mem, len, MPOL_BIND, from, MAXNODE, MPOL_MF_STRICT | MPOL_MF_MOVE))
		die("mbind");
	for (size_t off = 0; off < len; off += page)
		mem[off] = 1;
	if (touch && syscall(SYS_mbind, mem, len, 0, NULL, 0, 0))
		die("mbind default");
	signal(SIGUSR1, on_usr1);
	printf("ready %d %ld\n", getpid(), page);
	fflush(stdout);
	for (;;) {
		long left;

		for (size_t off = 0; touch && off < len; off += page)
			mem[off]++;
		if (!go)
			continue;
		go = 0;
		/* the binding would put moved pages back: the pages of the
		 * mapping may live anywhere from now on */
		if (syscall(SYS_mbind, mem, len, 0, NULL, 0, 0))
			die("mbind default");
		left = syscall(SYS_migrate_pages, 0, MAXNODE, from, to);
		if (left < 0)
			die("migrate_pages");
		printf("migrated %ld\n", left);
		fflush(stdout);
	}
}
