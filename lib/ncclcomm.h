/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A NCCL communicator's identity read from the process that holds it: what
 * a tool that attached after ncclCommInitRank (its arguments never seen)
 * can still learn of every communicator of a running job.
 *
 *	struct ncclcomm_layout l;
 *	if (!ncclcomm_layout_of("/usr/lib/libnccl.so.2", &l)) {
 *		struct ncclcomm_ident id;
 *		if (!ncclcomm_read(pid, handle, &l, &id))
 *			... id.hash, id.rank, id.nranks
 *	}
 *
 * The layout comes from the library's own code, never from its version
 * number: ncclCommUserRank and ncclCommCount end in a load of one int of
 * the communicator stored to their second argument (comm->rank,
 * comm->nRanks); the two offsets must be 4 apart, as NCCL's struct ncclComm
 * keeps them (2.18 to 2.30: uint64_t commHash; int rank; int nRanks;), and
 * commHash is the 8 bytes before rank. A communicator read is one whose
 * first 8 bytes are NCCL's startMagic (0x0280028002800280, static-asserted
 * first in ncclComm) with 0 <= rank < nRanks and a hash that is not 0 (it
 * is set once init has hashed the unique id or, for a split, the parent's).
 * commHash is NCCL's own id of the communicator, the same in every rank on
 * every host (NCCL's logs print it as commId/commHash).
 */
#ifndef AISCOPE_NCCLCOMM_H
#define AISCOPE_NCCLCOMM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define NCCLCOMM_MAGIC		0x0280028002800280ULL
#define NCCLCOMM_MAX_RANKS	(1 << 24)

struct ncclcomm_layout {
	int64_t hash_off, rank_off, nranks_off;
	char version[48];	/* "2.28.9+cuda13.0" from the library's banner, "" if none */
};

struct ncclcomm_ident {
	uint64_t hash;
	int32_t rank, nranks;
};

/*
 * The offset of the int that the function at code (len bytes of it, for
 * ELF machine machine: EM_X86_64 or EM_AARCH64) loads from its first
 * argument and stores through its second: x86-64 "mov disp(%base),%r32;
 * mov %r32,(%ptr)"; arm64 "ldr wT, [xB, #imm]" (with the adds and movs
 * that built xB's offset) and "str wT, [xP]". The first such pair is
 * taken. Returns 0, or -ENOENT when there is none.
 */
int ncclcomm_decode(const uint8_t *code, size_t len, int machine, int64_t *off);

/* The layout of the communicators of the library at path (an ELF file of
 * this tool's machine). Returns 0, -ENOENT (no ncclCommUserRank or
 * ncclCommCount, or their code does not decode), -EPROTO (the two offsets
 * are not 4 apart: a layout this reader does not know), other -errno. */
int ncclcomm_layout_of(const char *path, struct ncclcomm_layout *l);

/* The identity of the communicator at handle in pid's memory. Returns 0,
 * -EINVAL (not a communicator of that layout, or not initialised yet),
 * other -errno (the process is gone, the memory unreadable). */
int ncclcomm_read(pid_t pid, uint64_t handle, const struct ncclcomm_layout *l,
		  struct ncclcomm_ident *id);

/* Whether the identity is that of a live, initialised communicator. */
bool ncclcomm_valid(uint64_t magic, const struct ncclcomm_ident *id);

/*
 * Every communicator of layout l in pid's memory, whether or not it is
 * used: NCCL allocates each with calloc, so it lies in the process's
 * private writable anonymous memory ([heap], malloc's arenas, or a mapping
 * of its own past malloc's mmap threshold, 16 bytes in), its startMagic
 * 16-byte aligned; NCCL zeroes the magic before it frees one. Mappings are
 * read in order until max_bytes were read (then *capped), each later one
 * only at its start. Calls found(handle, id, ctx) for each that reads as a
 * communicator. Returns how many, or -errno (the process is gone).
 */
int ncclcomm_scan(pid_t pid, const struct ncclcomm_layout *l, uint64_t max_bytes, bool *capped,
		  void (*found)(uint64_t handle, const struct ncclcomm_ident *id, void *ctx),
		  void *ctx);

#endif
