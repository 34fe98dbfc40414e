// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/ncclcomm.c: the offset an accessor loads from its communicator and
 * stores through its second argument, in x86-64 and arm64 code as
 * compilers emit it (the x86-64 pair is NCCL 2.28.9's ncclCommUserRank's,
 * after its calls, through callee-saved registers; the arm64 ones a large
 * offset built by an add or a movz); code that loads from a stack slot, or
 * loses the register to a call, has none; a communicator in memory is read
 * when its magic and ranks hold, refused when not; a process's
 * communicators are found in its heap and in a mapping of their own, not
 * a freed one, and past the read budget only at a mapping's start. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>
#include "t.h"
#include "ncclcomm.h"

#define A64_ADD(rd, rn, imm, sh)  (0x91000000u | (sh) << 22 | (imm) << 10 | (rn) << 5 | (rd))
#define A64_MOV(rd, rm)		  (0xaa0003e0u | (rm) << 16 | (rd))
#define A64_MOVZ(rd, imm)	  (0x52800000u | (imm) << 5 | (rd))
#define A64_LDR(rt, rn, off)	  (0xb9400000u | ((off) / 4) << 10 | (rn) << 5 | (rt))
#define A64_LDR_REG(rt, rn, rm)	  (0xb8606800u | (rm) << 16 | (rn) << 5 | (rt))
#define A64_STR(rt, rn)		  (0xb9000000u | (rn) << 5 | (rt))
#define A64_BL			  0x94000010u
#define A64_RET			  0xd65f03c0u

static int64_t x86(const uint8_t *code, size_t len)
{
	int64_t off = -1;

	return ncclcomm_decode(code, len, EM_X86_64, &off) ? -1 : off;
}

static int64_t a64(const uint32_t *code, size_t n)
{
	int64_t off = -1;

	return ncclcomm_decode((const uint8_t *)code, 4 * n, EM_AARCH64, &off) ? -1 : off;
}

static void test_x86(void)
{
	/* mov %rsi,%r14; mov %rdi,%r13; call; test; je; then
	 * mov 0x1044d0(%r13),%eax; mov %eax,(%r14) */
	static const uint8_t nccl[] = {
		0x49, 0x89, 0xf6, 0x49, 0x89, 0xfd, 0xe8, 0x00, 0x00, 0x00, 0x00,
		0x85, 0xc0, 0x74, 0x05,
		0x41, 0x8b, 0x85, 0xd0, 0x44, 0x10, 0x00, 0x41, 0x89, 0x06, 0xc3,
	};
	/* gcc -O2: mov 0x2014(%rdi),%eax; mov %eax,(%rsi); xor %eax,%eax; ret */
	static const uint8_t plain[] = { 0x8b, 0x87, 0x14, 0x20, 0, 0, 0x89, 0x06, 0x31, 0xc0, 0xc3 };
	/* disp8, stored through (%rsp)-style SIB base r12: mov 0xc(%rbx),%edx; mov %edx,(%r12) */
	static const uint8_t sib[] = { 0x8b, 0x53, 0x0c, 0x41, 0x89, 0x14, 0x24 };
	/* NCCL 2.28.9's ncclCommCount: mov 0x1044d4(%r13),%eax; xor %ebx,%ebx; mov %eax,(%r14) */
	static const uint8_t between[] = { 0x41, 0x8b, 0x85, 0xd4, 0x44, 0x10, 0, 0x31, 0xdb,
					   0x41, 0x89, 0x06 };
	/* a stack slot: mov -0x8(%rbp),%eax; mov %eax,(%rsi) */
	static const uint8_t stack[] = { 0x8b, 0x45, 0xf8, 0x89, 0x06 };
	/* another register stored: mov 0x10(%rdi),%eax; mov %ecx,(%rsi) */
	static const uint8_t other[] = { 0x8b, 0x47, 0x10, 0x89, 0x0e };
	/* a 64-bit load is not an int: mov 0x10(%rdi),%rax; mov %eax,(%rsi) */
	static const uint8_t wide[] = { 0x48, 0x8b, 0x47, 0x10, 0x89, 0x06 };

	CHECK_EQ(x86(nccl, sizeof(nccl)), 0x1044d0);
	CHECK_EQ(x86(plain, sizeof(plain)), 0x2014);
	CHECK_EQ(x86(sib, sizeof(sib)), 0xc);
	CHECK_EQ(x86(between, sizeof(between)), 0x1044d4);
	CHECK_EQ(x86(stack, sizeof(stack)), -1);
	CHECK_EQ(x86(other, sizeof(other)), -1);
	CHECK_EQ(x86(wide, sizeof(wide)), -1);
	CHECK_EQ(x86(nccl, 20), -1);		/* cut inside the load */
}

static void test_arm64(void)
{
	/* NCCL's shape: comm and out kept in x19/x20 across a call, the
	 * offset past ldr's reach built by an add */
	const uint32_t kept[] = {
		A64_MOV(19, 0), A64_MOV(20, 1), A64_BL,
		A64_ADD(8, 19, 0x104, 1), A64_LDR(8, 8, 0x4d0), A64_STR(8, 20), A64_RET,
	};
	/* gcc -O2: add x0, x0, #2, lsl 12; ldr w0, [x0, #20]; str w0, [x1] */
	const uint32_t added[] = { A64_ADD(0, 0, 2, 1), A64_LDR(0, 0, 20), A64_STR(0, 1), A64_RET };
	/* mov w2, #0x2014; ldr w0, [x0, x2]; str w0, [x1] */
	const uint32_t reg[] = { A64_MOVZ(2, 0x2014), A64_LDR_REG(0, 0, 2), A64_STR(0, 1), A64_RET };
	/* gcc -O2 of the test double: the comm copied, branches and a store
	 * elsewhere between: mov x2, x0; mov w0, #4; cbz x2; str x3, [sp];
	 * ldr w2, [x2, #0x3058]; mov w0, #0; str w2, [x1] */
	const uint32_t branchy[] = {
		A64_MOV(2, 0), A64_MOVZ(0, 4), 0xb4000122u, 0xf90003e3u,
		A64_LDR(2, 2, 0x3058), A64_MOVZ(0, 0), A64_STR(2, 1), A64_RET,
	};
	/* the loaded register lost to a call before the store */
	const uint32_t lost[] = { A64_LDR(0, 0, 20), A64_BL, A64_STR(0, 1), A64_RET };
	/* stored through the comm, not the out pointer */
	const uint32_t wrong[] = { A64_LDR(2, 0, 20), A64_STR(2, 0), A64_RET };
	/* comm and out pointer swapped through x19/x20 then moved: still x0's */
	const uint32_t moved[] = {
		A64_MOV(20, 0), A64_MOV(19, 1), A64_BL, A64_LDR(3, 20, 8), A64_STR(3, 19), A64_RET,
	};

	CHECK_EQ(a64(kept, T_ROWS(kept)), 0x1044d0);
	CHECK_EQ(a64(added, T_ROWS(added)), 0x2014);
	CHECK_EQ(a64(reg, T_ROWS(reg)), 0x2014);
	CHECK_EQ(a64(branchy, T_ROWS(branchy)), 0x3058);
	CHECK_EQ(a64(lost, T_ROWS(lost)), -1);
	CHECK_EQ(a64(wrong, T_ROWS(wrong)), -1);
	CHECK_EQ(a64(moved, T_ROWS(moved)), 8);
}

static void test_read(void)
{
	struct {
		uint64_t magic;
		char state[0x3000];
		uint64_t hash;
		int32_t rank, nranks;
	} comm = { .magic = NCCLCOMM_MAGIC, .hash = 0x1234abcd5678ef90ULL, .rank = 3, .nranks = 8 };
	struct ncclcomm_layout l = {
		.hash_off = offsetof(typeof(comm), hash),
		.rank_off = offsetof(typeof(comm), rank),
		.nranks_off = offsetof(typeof(comm), nranks),
	};
	struct ncclcomm_ident id;
	uint64_t h = (uintptr_t)&comm;

	CHECK_EQ(ncclcomm_read(getpid(), h, &l, &id), 0);
	CHECK(id.hash == comm.hash);
	CHECK_EQ(id.rank, 3);
	CHECK_EQ(id.nranks, 8);
	comm.rank = 8;				/* not below nranks */
	CHECK_EQ(ncclcomm_read(getpid(), h, &l, &id), -EINVAL);
	comm.rank = 0;
	comm.hash = 0;				/* init has not hashed its id yet */
	CHECK_EQ(ncclcomm_read(getpid(), h, &l, &id), -EINVAL);
	comm.hash = 1;
	comm.magic = 0x0280028002800281ULL;	/* not a communicator */
	CHECK_EQ(ncclcomm_read(getpid(), h, &l, &id), -EINVAL);
	comm.magic = NCCLCOMM_MAGIC;
	CHECK_EQ(ncclcomm_read(getpid(), h, &l, &id), 0);
	CHECK_EQ(ncclcomm_read(getpid(), 0, &l, &id), -EINVAL);
	CHECK(ncclcomm_read(getpid(), 8, &l, &id) < 0);	/* unmapped */
}

struct fake_comm {
	uint64_t magic;
	char state[0x3000];
	uint64_t hash;
	int32_t rank, nranks;
};

static const struct ncclcomm_layout fake_layout = {
	.hash_off = offsetof(struct fake_comm, hash),
	.rank_off = offsetof(struct fake_comm, rank),
	.nranks_off = offsetof(struct fake_comm, nranks),
};

struct seen {
	uint64_t want[3];
	int hits[3];
};

static void on_found(uint64_t handle, const struct ncclcomm_ident *id, void *ctx)
{
	struct seen *s = ctx;

	for (int i = 0; i < 3; i++)
		if (handle == s->want[i] && id->hash == 0xabc0 + (uint64_t)i && id->rank == i)
			s->hits[i]++;
}

static struct fake_comm *fake(struct fake_comm *c, int i)
{
	c->magic = NCCLCOMM_MAGIC;
	c->hash = 0xabc0 + i;
	c->rank = i;
	c->nranks = 4;
	return c;
}

static void test_scan(void)
{
	/* one in the heap (a small calloc), one in a mapping of its own (past
	 * malloc's mmap threshold), one freed (NCCL zeroes the magic first) */
	struct fake_comm *heap = fake(calloc(1, sizeof(*heap)), 0);
	char *big = calloc(1, 8 << 20);
	struct fake_comm *own = fake((struct fake_comm *)big, 1);
	struct fake_comm *gone = fake(calloc(1, sizeof(*gone)), 2);
	struct seen s = { .want = { (uintptr_t)heap, (uintptr_t)own, (uintptr_t)gone } };
	bool capped;

#ifdef __SANITIZE_ADDRESS__
	/* ASan's allocator is not glibc's (no heap, no chunk header) and its
	 * shadow is terabytes of anonymous memory: what this test is about
	 * (where a NCCL job's glibc puts a communicator) is not here */
	free(heap);
	free(big);
	free(gone);
	SKIP("an ASan build: its allocator and shadow are not glibc malloc's");
#endif
	gone->magic = 0;
	CHECK(ncclcomm_scan(getpid(), &fake_layout, 1ULL << 40, &capped, on_found, &s) >= 2);
	CHECK(!capped);
	CHECK_EQ(s.hits[0], 1);
	CHECK_EQ(s.hits[1], 1);
	CHECK_EQ(s.hits[2], 0);
	/* nothing may be read: only a mapping's start is looked at */
	memset(s.hits, 0, sizeof(s.hits));
	ncclcomm_scan(getpid(), &fake_layout, 0, &capped, on_found, &s);
	CHECK(capped);
	CHECK_EQ(s.hits[0], 0);
	CHECK_EQ(s.hits[1], 1);
	CHECK(ncclcomm_scan(999999999, &fake_layout, 1 << 20, &capped, on_found, &s) < 0);
	free(heap);
	free(big);
	free(gone);
}

int main(void)
{
	RUN(test_x86);
	RUN(test_arm64);
	RUN(test_read);
	RUN(test_scan);
	return t_done();
}
