// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * privstack: do two tasks that run one uprobe program on one CPU share its
 * stack? Since 6.13 the verifier may give a kprobe-type program of 64 or
 * more bytes of stack a per-CPU private stack (x86-64's JIT first), on the
 * premise that such a program never runs twice at once on a CPU. Uprobe
 * programs run with migration disabled but preemptible, so on a
 * preemptible kernel (x86 7.x: lazy or full only) a second task can enter
 * the program on the CPU of a preempted first one and overwrite its stack.
 * A program that holds a tail call never gets a private stack
 * (bpf/aiscope.bpf.h AISCOPE_OWN_STACK does that for the tools).
 *
 *	privstack [-g] [-s] [-p PROCS] [-n CALLS] [-l LOOPS]
 *	runs N corrupt N
 *
 * The program (raw instructions: no libbpf, static for the VM images) is a
 * uprobe on a function of this binary. It fills 128 bytes of its stack with
 * the calling thread's id, spins LOOPS iterations, reads the stack back and
 * counts the run in slot 1 of an array if any of it changed, else in slot
 * 0. PROCS processes pinned to CPU 0 call the function CALLS times each.
 * -g adds a tail call the verifier knows is never taken (the guard). -s
 * loads it sleepable, and before the spin it reads a byte of a page the
 * caller never touched, so that the program faults and may sleep there.
 * Exit 0 with the counts, 77 where uprobes (or, with -s, sleepable uprobe
 * programs) cannot be used, 1 on error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#define STACK_WORDS 16

static long sys_bpf(int cmd, union bpf_attr *a)
{
	return syscall(__NR_bpf, cmd, a, sizeof(*a));
}

__attribute__((noinline)) int privstack_target(const char *page, int i)
{
	asm volatile("" : : "r"(page) : "memory");
	return i + 1;
}

/* the first argument's place in the pt_regs a uprobe program gets */
#if defined(__x86_64__)
#define ARG1_OFF	112	/* di */
#elif defined(__aarch64__)
#define ARG1_OFF	0	/* regs[0] */
#endif

static int map_create(__u32 type, __u32 value_size, __u32 entries)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_type = type;
	a.key_size = 4;
	a.value_size = value_size;
	a.max_entries = entries;
	return sys_bpf(BPF_MAP_CREATE, &a);
}

#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define MOV64_REG(d, s)	INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV64_IMM(d, i)	INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define ADD64_IMM(d, i)	INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define STX_DW(d, s, o)	INSN(BPF_STX | BPF_MEM | BPF_DW, d, s, o, 0)
#define STX_W(d, s, o)	INSN(BPF_STX | BPF_MEM | BPF_W, d, s, o, 0)
#define LDX_DW(d, s, o)	INSN(BPF_LDX | BPF_MEM | BPF_DW, d, s, o, 0)
#define XADD_DW(d, s, o) INSN(BPF_STX | BPF_XADD | BPF_DW, d, s, o, 0)
#define JNE_REG(d, s, o) INSN(BPF_JMP | BPF_JNE | BPF_X, d, s, o, 0)
#define JLT_IMM(d, i, o) INSN(BPF_JMP | BPF_JLT | BPF_K, d, 0, o, i)
#define JEQ_IMM(d, i, o) INSN(BPF_JMP | BPF_JEQ | BPF_K, d, 0, o, i)
#define JA(o)		INSN(BPF_JMP | BPF_JA, 0, 0, o, 0)
#define CALL(f)		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT()		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
/* a map's address: two instructions */
#define LD_MAP(p, n, d, fd) do { \
	(p)[(n)++] = INSN(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, fd); \
	(p)[(n)++] = INSN(0, 0, 0, 0, 0); \
} while (0)

static int prog_load(int counts, int guard, int loops, int sleepable, char *log, size_t log_size)
{
	struct bpf_insn p[128];
	union bpf_attr a;
	int n = 0, bad, fd;

	p[n++] = MOV64_REG(BPF_REG_6, BPF_REG_1);
	p[n++] = CALL(BPF_FUNC_get_current_pid_tgid);
	p[n++] = MOV64_REG(BPF_REG_7, BPF_REG_0);
	for (int i = 1; i <= STACK_WORDS; i++)
		p[n++] = STX_DW(BPF_REG_10, BPF_REG_7, -8 * i);
	if (sleepable) {
		/* one byte of the caller's untouched page: a fault */
		p[n++] = MOV64_REG(BPF_REG_1, BPF_REG_10);
		p[n++] = ADD64_IMM(BPF_REG_1, -8 * STACK_WORDS - 16);
		p[n++] = MOV64_IMM(BPF_REG_2, 1);
		p[n++] = LDX_DW(BPF_REG_3, BPF_REG_6, ARG1_OFF);
		p[n++] = CALL(BPF_FUNC_copy_from_user);
	}
	/* the spin: a bounded loop, long enough for a tick to land in it */
	p[n++] = MOV64_IMM(BPF_REG_8, 0);
	p[n++] = ADD64_IMM(BPF_REG_8, 1);
	p[n++] = JLT_IMM(BPF_REG_8, loops, -2);
	p[n++] = MOV64_IMM(BPF_REG_9, 0);
	/* each word read back: a changed one jumps to "bad" */
	bad = n + 2 * STACK_WORDS + 1;
	for (int i = 1; i <= STACK_WORDS; i++) {
		p[n++] = LDX_DW(BPF_REG_1, BPF_REG_10, -8 * i);
		p[n] = JNE_REG(BPF_REG_1, BPF_REG_7, bad - n - 1);
		n++;
	}
	p[n++] = JA(1);
	p[n++] = MOV64_IMM(BPF_REG_9, 1);	/* bad */
	p[n++] = STX_W(BPF_REG_10, BPF_REG_9, -8 * STACK_WORDS - 8);
	p[n++] = MOV64_REG(BPF_REG_2, BPF_REG_10);
	p[n++] = ADD64_IMM(BPF_REG_2, -8 * STACK_WORDS - 8);
	LD_MAP(p, n, BPF_REG_1, counts);
	p[n++] = CALL(BPF_FUNC_map_lookup_elem);
	p[n++] = JEQ_IMM(BPF_REG_0, 0, 2);
	p[n++] = MOV64_IMM(BPF_REG_1, 1);
	p[n++] = XADD_DW(BPF_REG_0, BPF_REG_1, 0);
	if (guard) {
		/* never taken, and the verifier knows it (r4 is 0), so neither
		 * is the map argument checked: none is needed (a sleepable
		 * program may hold no program array) */
		p[n++] = MOV64_IMM(BPF_REG_4, 0);
		p[n++] = JEQ_IMM(BPF_REG_4, 0, 4);
		p[n++] = MOV64_REG(BPF_REG_1, BPF_REG_6);
		p[n++] = MOV64_IMM(BPF_REG_2, 0);
		p[n++] = MOV64_IMM(BPF_REG_3, 0);
		p[n++] = CALL(BPF_FUNC_tail_call);
	}
	p[n++] = MOV64_IMM(BPF_REG_0, 0);
	p[n++] = EXIT();

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_KPROBE;
	a.prog_flags = sleepable ? BPF_F_SLEEPABLE : 0;
	a.insns = (__u64)(unsigned long)p;
	a.insn_cnt = n;
	a.license = (__u64)(unsigned long)"GPL";
	fd = sys_bpf(BPF_PROG_LOAD, &a);
	if (fd >= 0)
		return fd;
	/* again with the verifier's last lines, to say why */
	a.log_buf = (__u64)(unsigned long)log;
	a.log_size = log_size;
	a.log_level = 1;
	return sys_bpf(BPF_PROG_LOAD, &a);
}

/* the file offset of privstack_target in /proc/self/exe */
static long target_offset(void)
{
	unsigned long addr = (unsigned long)privstack_target, lo, hi, off;
	char line[512], perm[8];
	FILE *f = fopen("/proc/self/maps", "r");
	long r = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%lx-%lx %7s %lx", &lo, &hi, perm, &off) != 4)
			continue;
		if (addr >= lo && addr < hi) {
			r = addr - lo + off;
			break;
		}
	}
	fclose(f);
	return r;
}

static int uprobe_type(void)
{
	FILE *f = fopen("/sys/bus/event_source/devices/uprobe/type", "r");
	int t = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%d", &t) != 1)
		t = -1;
	fclose(f);
	return t;
}

static int uprobe_attach(int prog, long offset)
{
	static char path[4096];
	struct perf_event_attr pa;
	ssize_t len = readlink("/proc/self/exe", path, sizeof(path) - 1);
	int type = uprobe_type(), fd;

	if (type < 0 || len <= 0)
		return -2;
	path[len] = 0;
	memset(&pa, 0, sizeof(pa));
	pa.size = sizeof(pa);
	pa.type = type;
	pa.config1 = (__u64)(unsigned long)path;
	pa.config2 = offset;
	fd = syscall(__NR_perf_event_open, &pa, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd < 0)
		return -2;
	if (ioctl(fd, PERF_EVENT_IOC_SET_BPF, prog) || ioctl(fd, PERF_EVENT_IOC_ENABLE, 0)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int pin_cpu0(void)
{
	cpu_set_t s;

	CPU_ZERO(&s);
	CPU_SET(0, &s);
	return sched_setaffinity(0, sizeof(s), &s);
}

static int count_of(int map, __u32 key, __u64 *v)
{
	union bpf_attr a;

	memset(&a, 0, sizeof(a));
	a.map_fd = map;
	a.key = (__u64)(unsigned long)&key;
	a.value = (__u64)(unsigned long)v;
	return sys_bpf(BPF_MAP_LOOKUP_ELEM, &a);
}

int main(int argc, char **argv)
{
	int procs = 2, calls = 200, loops = 200000, guard = 0, sleepable = 0, opt, counts, prog, ev;
	static char log[1 << 16];
	__u64 good = 0, bad = 0;
	long off;

	while ((opt = getopt(argc, argv, "gsp:n:l:")) != -1) {
		switch (opt) {
		case 'g': guard = 1; break;
		case 's': sleepable = 1; break;
		case 'p': procs = atoi(optarg); break;
		case 'n': calls = atoi(optarg); break;
		case 'l': loops = atoi(optarg); break;
		default:
			fprintf(stderr, "usage: privstack [-g] [-s] [-p PROCS] [-n CALLS] [-l LOOPS]\n");
			return 2;
		}
	}
	if (procs < 1 || procs > 64 || calls < 1 || loops < 1 || loops > 400000) {
		fprintf(stderr, "privstack: 1-64 processes, 1+ calls, 1-400000 loops\n");
		return 2;
	}
	counts = map_create(BPF_MAP_TYPE_ARRAY, 8, 2);
	if (counts < 0) {
		perror("privstack: map");
		return 1;
	}
	prog = prog_load(counts, guard, loops, sleepable, log, sizeof(log));
	if (prog < 0 && sleepable && errno == EINVAL && strstr(log, "sleepable")) {
		/* before 6.0 only trampoline and LSM programs may sleep */
		fprintf(stderr, "privstack: no sleepable uprobe programs here\n");
		return 77;
	}
	if (prog < 0) {
		fprintf(stderr, "privstack: load: %s\n%s", strerror(errno), log);
		return 1;
	}
	off = target_offset();
	if (off < 0) {
		fprintf(stderr, "privstack: no mapping holds privstack_target\n");
		return 1;
	}
	ev = uprobe_attach(prog, off);
	if (ev == -2) {
		fprintf(stderr, "privstack: no uprobe PMU here (%s)\n", strerror(errno));
		return 77;
	}
	if (ev < 0) {
		perror("privstack: attach");
		return 1;
	}
	for (int p = 0; p < procs; p++) {
		pid_t c = fork();

		if (c < 0) {
			perror("privstack: fork");
			return 1;
		}
		if (c == 0) {
			long pg = sysconf(_SC_PAGESIZE);
			char *pages = mmap(NULL, calls * pg, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
			int s = 0;

			if (pages == MAP_FAILED || pin_cpu0())
				_exit(3);
			for (int i = 0; i < calls; i++)
				s = privstack_target(pages + i * pg, s);
			_exit(s == calls ? 0 : 4);
		}
	}
	for (int p = 0; p < procs; p++) {
		int st;

		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "privstack: a caller failed\n");
			return 1;
		}
	}
	close(ev);
	if (count_of(counts, 0, &good) || count_of(counts, 1, &bad)) {
		perror("privstack: read");
		return 1;
	}
	printf("runs %llu corrupt %llu\n", (unsigned long long)(good + bad), (unsigned long long)bad);
	return 0;
}
