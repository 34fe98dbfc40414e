/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Arguments of a user-space function at a uprobe on its first instruction,
 * past what libbpf 1.1 gives (PT_REGS_PARM1..5), including structs passed
 * by value. Include after aiscope.bpf.h (or vmlinux.h and bpf_tracing.h).
 *
 * An argument cursor walks the C signature from left to right, as the
 * calling convention does, and knows where each argument lives:
 *
 *	struct uarg c = {};
 *	__u64 func = uarg_int(ctx, &c);		// const void *func
 *	uarg_struct(ctx, &c, &grid, 12);	// dim3 gridDim (by value)
 *	uarg_struct(ctx, &c, &block, 12);	// dim3 blockDim
 *	__u64 args = uarg_int(ctx, &c);		// void **args
 *	__u64 smem = uarg_int(ctx, &c);		// size_t sharedMem
 *	__u64 stream = uarg_int(ctx, &c);	// cudaStream_t stream
 *
 * Integer and pointer arguments only (every CUDA and NCCL entry point we
 * trace): floating-point arguments travel in vector registers and do not
 * advance the cursor, so a signature with them needs its own care.
 *
 * x86-64 (System V): six registers rdi, rsi, rdx, rcx, r8, r9; then the
 * stack, 8 bytes a slot, the first at sp+8 (sp holds the return address at
 * function entry). A struct of up to 16 bytes of integers takes one
 * register per 8 bytes when that many are free, otherwise it goes whole to
 * the stack and the registers stay free for later arguments (ncclCommInitRank:
 * the 128-byte ncclUniqueId sits at sp+8..sp+136 and rank moves to rdx).
 * Larger structs always go to the stack.
 *
 * arm64 (AAPCS64): eight registers x0..x7, then the stack from sp+0 (the
 * return address is in the link register). A struct of up to 16 bytes
 * takes consecutive registers when enough are free, otherwise it goes to the
 * stack and no further argument uses a register; a larger struct is copied
 * by the caller and passed as a pointer (read through it).
 */
#ifndef AISCOPE_UPROBE_ARGS_BPF_H
#define AISCOPE_UPROBE_ARGS_BPF_H

#if defined(__TARGET_ARCH_x86)
#define UARG_NREGS	6
#define UARG_STACK0	8
#define UARG_SPILL_BLOCKS_REGS	0	/* a struct on the stack leaves registers free */
#define UARG_BIG_BY_REF		0	/* structs > 16 bytes: copied on the stack */
#elif defined(__TARGET_ARCH_arm64)
#define UARG_NREGS	8
#define UARG_STACK0	0
#define UARG_SPILL_BLOCKS_REGS	1
#define UARG_BIG_BY_REF		1	/* structs > 16 bytes: a pointer to a copy */
#else
#error "uprobe_args.bpf.h: only x86 and arm64 are supported"
#endif

/* Where the next argument is: registers used, bytes of stack used. */
struct uarg {
	__u32 ngrn;
	__u32 nsaa;
};

/*
 * A load from the context at a constant offset. Written in assembly because
 * clang, given a loop over arguments, computes &ctx->field once and keeps
 * it in a register or on the stack, and the verifier rejects a load through
 * a modified context pointer.
 */
#define UARG_CTX_LOAD(ctx, off) ({					\
	__u64 __v;							\
	asm volatile("%0 = *(u64 *)(%1 + %2)"				\
		     : "=r"(__v) : "r"(ctx), "i"(off));			\
	__v;								\
})

static __always_inline __u64 uarg_reg(struct pt_regs *ctx, __u32 i)
{
#if defined(__TARGET_ARCH_x86)
	switch (i) {
	case 0: return UARG_CTX_LOAD(ctx, __builtin_offsetof(struct pt_regs, di));
	case 1: return UARG_CTX_LOAD(ctx, __builtin_offsetof(struct pt_regs, si));
	case 2: return UARG_CTX_LOAD(ctx, __builtin_offsetof(struct pt_regs, dx));
	case 3: return UARG_CTX_LOAD(ctx, __builtin_offsetof(struct pt_regs, cx));
	case 4: return UARG_CTX_LOAD(ctx, __builtin_offsetof(struct pt_regs, r8));
	case 5: return UARG_CTX_LOAD(ctx, __builtin_offsetof(struct pt_regs, r9));
	}
#else
	/* user_pt_regs: x0..x30 from offset 0 */
	switch (i) {
	case 0: return UARG_CTX_LOAD(ctx, 0);
	case 1: return UARG_CTX_LOAD(ctx, 8);
	case 2: return UARG_CTX_LOAD(ctx, 16);
	case 3: return UARG_CTX_LOAD(ctx, 24);
	case 4: return UARG_CTX_LOAD(ctx, 32);
	case 5: return UARG_CTX_LOAD(ctx, 40);
	case 6: return UARG_CTX_LOAD(ctx, 48);
	case 7: return UARG_CTX_LOAD(ctx, 56);
	}
#endif
	return 0;
}

static __always_inline __u64 uarg_sp(struct pt_regs *ctx)
{
	return PT_REGS_SP(ctx);
}

/* The stack slot at byte offset off from the first stack argument. */
static __always_inline __u64 uarg_stack(struct pt_regs *ctx, __u32 off)
{
	__u64 v = 0;

	bpf_probe_read_user(&v, sizeof(v), (void *)(uarg_sp(ctx) + UARG_STACK0 + off));
	return v;
}

/* The next integer or pointer argument (up to 8 bytes; an int's upper
 * half is whatever the caller left there: cast it). */
static __always_inline __u64 uarg_int(struct pt_regs *ctx, struct uarg *c)
{
	__u64 v;

	if (c->ngrn < UARG_NREGS)
		return uarg_reg(ctx, c->ngrn++);
	v = uarg_stack(ctx, c->nsaa);
	c->nsaa += 8;
	return v;
}

/* Skip the next n integer arguments. */
static __always_inline void uarg_skip(struct pt_regs *ctx, struct uarg *c, __u32 n)
{
	for (__u32 i = 0; i < n; i++)
		uarg_int(ctx, c);
}

/* The next argument, a struct of size bytes passed by value (integer
 * members), copied into dst. size must be a compile-time constant (the
 * copy from registers is an inline memcpy). Returns 0 or a negative error
 * of the read. */
static __always_inline long uarg_struct(struct pt_regs *ctx, struct uarg *c, void *dst,
					__u32 size)
{
	__u32 words = (size + 7) / 8;
	__u64 regs[2];
	__u64 ptr;
	long err;

	if (size <= 16 && c->ngrn + words <= UARG_NREGS) {
		regs[0] = uarg_reg(ctx, c->ngrn);
		regs[1] = words > 1 ? uarg_reg(ctx, c->ngrn + 1) : 0;
		c->ngrn += words;
		__builtin_memcpy(dst, regs, size <= 16 ? size : 16);
		return 0;
	}
	if (size > 16 && UARG_BIG_BY_REF) {
		ptr = uarg_int(ctx, c);
		return bpf_probe_read_user(dst, size, (void *)ptr);
	}
	if (UARG_SPILL_BLOCKS_REGS)
		c->ngrn = UARG_NREGS;
	err = bpf_probe_read_user(dst, size, (void *)(uarg_sp(ctx) + UARG_STACK0 + c->nsaa));
	c->nsaa += words * 8;
	return err;
}

/* The n-th argument (1-based, as PT_REGS_PARMn) of a function whose
 * arguments before it are all integers or pointers. */
static __always_inline __u64 uarg_nth(struct pt_regs *ctx, __u32 n)
{
	if (n - 1 < UARG_NREGS)
		return uarg_reg(ctx, n - 1);
	return uarg_stack(ctx, (n - 1 - UARG_NREGS) * 8);
}

#endif
