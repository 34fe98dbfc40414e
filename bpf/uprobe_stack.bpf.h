/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A uprobe program's stack must be its task's own.
 *
 * Since 6.13 the verifier may run a kprobe-type program that needs 64 or
 * more bytes of stack on a per-CPU private stack (x86-64's JIT first),
 * on the premise that such a program never runs twice at once on one CPU.
 * That holds for kprobes and tracepoints, not for uprobes: uprobe programs
 * (and uprobe_multi's) run with migration disabled but preemptible, and
 * sleepable ones may sleep. On a preemptible kernel (x86 7.x has only lazy
 * and full preemption) a second task then enters the program on the CPU
 * of a preempted first one and overwrites its stack: a call's fields mixed
 * with another process's, a map key that names another task (nclstat on
 * x86 7.2 under TCG: a call counted under another rank, a returned call
 * reported hung). tests/helpers/privstack shows it with a raw program.
 *
 * The verifier never gives a private stack to a program that holds a tail
 * call. AISCOPE_OWN_STACK(ctx), in every uprobe program, holds one that is
 * never taken: the knob is 0 and the verifier, which knows read-only data,
 * never walks the branch, so neither is its map argument checked (none is
 * given: a sleepable program may hold no program array) and it costs
 * nothing at run time. The instruction alone is what counts.
 */
#ifndef AISCOPE_UPROBE_STACK_BPF_H
#define AISCOPE_UPROBE_STACK_BPF_H

/* never set: the compiler must keep the branch, the verifier drops it */
const volatile bool aiscope_tail_never;

#define AISCOPE_OWN_STACK(ctx) do {						\
	if (aiscope_tail_never)							\
		bpf_tail_call(ctx, (void *)0, 0);				\
} while (0)

#endif
