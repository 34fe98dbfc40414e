// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* A NCCL communicator's identity from the process's memory; see ncclcomm.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include "ncclcomm.h"
#include "uprobe.h"

#ifndef EM_AARCH64
#define EM_AARCH64 183
#endif

/* enough for either accessor: NCCL 2.28's ncclCommUserRank is 0x1c0 bytes */
#define CODE_BYTES	2048
/* x86-64: bytes of other instructions between the load and the store */
#define STORE_WITHIN	8
/* a .rodata larger than this is not searched for the banner */
#define RODATA_MAX	(32u << 20)

static uint32_t le32(const uint8_t *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- x86-64 ---- */

/* "mov disp8/disp32(%base),%r32" at p: its register (0-15), displacement
 * and length; false if p is not one. A stack slot (rsp, rbp) is not a
 * communicator. */
static bool x86_load(const uint8_t *p, const uint8_t *end, int *reg, int64_t *disp, int *n)
{
	const uint8_t *q = p;
	int rex = 0, mod, rm, base;

	if (q < end && (*q & 0xf0) == 0x40)
		rex = *q++;
	if ((rex & 8) || q + 2 > end || q[0] != 0x8b)
		return false;
	mod = q[1] >> 6;
	rm = q[1] & 7;
	*reg = ((q[1] >> 3) & 7) | (rex & 4 ? 8 : 0);
	if (mod != 1 && mod != 2)
		return false;
	q += 2;
	base = rm | (rex & 1 ? 8 : 0);
	if (rm == 4) {
		/* a SIB byte: a base without an index only */
		if (q >= end || ((*q >> 3) & 7) != 4 || (rex & 2))
			return false;
		base = (*q & 7) | (rex & 1 ? 8 : 0);
		q++;
	}
	if (base == 4 || base == 5)
		return false;
	if (mod == 1) {
		if (q + 1 > end)
			return false;
		*disp = (int8_t)*q++;
	} else {
		if (q + 4 > end)
			return false;
		*disp = (int32_t)le32(q);
		q += 4;
	}
	*n = q - p;
	return *disp > 0;
}

/* "mov %r32,(%ptr)" at p storing register reg */
static bool x86_store(const uint8_t *p, const uint8_t *end, int reg)
{
	int rex = 0, rm;

	if (p < end && (*p & 0xf0) == 0x40)
		rex = *p++;
	if ((rex & 8) || p + 2 > end || p[0] != 0x89 || (p[1] >> 6) != 0)
		return false;
	if ((((p[1] >> 3) & 7) | (rex & 4 ? 8 : 0)) != reg)
		return false;
	rm = p[1] & 7;
	if (rm == 5)
		return false;		/* rip-relative: not through a pointer */
	return rm != 4 || (p + 3 <= end && p[2] == 0x24 && !(rex & 2));
}

/* Byte by byte, not instruction by instruction: a pair found inside
 * another instruction's bytes is possible in principle, and is why the
 * layout needs the two accessors to agree (ncclcomm_layout_of). */
static int decode_x86(const uint8_t *code, size_t len, int64_t *off)
{
	const uint8_t *end = code + len;

	for (const uint8_t *p = code; p < end; p++) {
		int reg, n;
		int64_t disp;

		/* after a REX.W byte these are a 64-bit load's last bytes */
		if (p > code && (p[-1] & 0xf8) == 0x48 && (*p & 0xf0) != 0x40)
			continue;
		if (!x86_load(p, end, &reg, &disp, &n))
			continue;
		/* the store may follow an unrelated instruction or two (gcc
		 * puts NCCL's "xor %ebx,%ebx" of its return value between):
		 * nothing in between writes the register, or the load would
		 * be dead code */
		for (int k = 0; k <= STORE_WITHIN; k++) {
			if (x86_store(p + n + k, end, reg)) {
				*off = disp;
				return 0;
			}
		}
	}
	return -ENOENT;
}

/* ---- arm64 ---- */

/* What a register holds, as far as the straight-line code read says: the
 * entry value of argument register base plus add, a constant, or nothing
 * known. Branches are not followed: the accessors' fast path is straight. */
struct a64_reg {
	enum { A64_UNKNOWN, A64_ARG, A64_CONST } kind;
	int base;
	int64_t v;		/* A64_ARG: added; A64_CONST: the value */
	bool loaded;		/* holds an int loaded from arg 0 at off */
	int64_t off;
};

static void a64_forget(struct a64_reg *r, int n)
{
	if (n < 31)
		r[n] = (struct a64_reg){ .kind = A64_UNKNOWN };
}

/* a load of an int from arg 0 into t at offset off */
static void a64_loaded(struct a64_reg *r, int t, const struct a64_reg *b, int64_t off)
{
	bool from_comm = b->kind == A64_ARG && b->base == 0 && b->v + off > 0;
	int64_t at = b->v + off;

	a64_forget(r, t);
	if (from_comm && t < 31) {
		r[t].loaded = true;
		r[t].off = at;
	}
}

/* Whether an instruction not decoded above writes its bits 4:0: not a
 * branch (b, b.cond, cbz/cbnz, tbz/tbnz, br/ret) nor a store. */
static bool a64_writes(uint32_t w)
{
	if ((w & 0x7c000000) == 0x14000000 || (w & 0xff000010) == 0x54000000 ||
	    (w & 0x7c000000) == 0x34000000 || (w & 0xfe000000) == 0xd6000000)
		return false;
	if (((w >> 27) & 7) == 7 && !(w & (1 << 26)) && ((w >> 22) & 3) == 0)
		return false;			/* str, strb, strh, stur... */
	if (((w >> 27) & 7) == 5 && !(w & (1 << 22)))
		return false;			/* stp */
	return true;
}

/* one instruction; true when it stores a loaded int through arg 1 */
static bool a64_step(struct a64_reg *r, uint32_t w, int64_t *off)
{
	int rd = w & 31, rn = (w >> 5) & 31, rm = (w >> 16) & 31;
	struct a64_reg sp = { .kind = A64_UNKNOWN };
	const struct a64_reg *n = rn == 31 ? &sp : &r[rn];

	if ((w & 0xff800000) == 0x91000000) {		/* add xd, xn, #imm{, lsl 12} */
		int64_t imm = (int64_t)((w >> 10) & 0xfff) << (w & (1 << 22) ? 12 : 0);
		struct a64_reg v = *n;

		a64_forget(r, rd);
		if (v.kind == A64_ARG || v.kind == A64_CONST)
			r[rd] = (struct a64_reg){ .kind = v.kind, .base = v.base, .v = v.v + imm };
		return false;
	}
	if ((w & 0xffe0ffe0) == 0xaa0003e0) {		/* mov xd, xm */
		struct a64_reg v = rm == 31 ? (struct a64_reg){ .kind = A64_CONST } : r[rm];

		if (rd < 31)
			r[rd] = v;
		return false;
	}
	if ((w & 0x7f800000) == 0x52800000) {		/* movz */
		a64_forget(r, rd);
		if (rd < 31)
			r[rd] = (struct a64_reg){ .kind = A64_CONST,
				.v = (int64_t)((w >> 5) & 0xffff) << (16 * ((w >> 21) & 3)) };
		return false;
	}
	if ((w & 0x7f800000) == 0x72800000) {		/* movk */
		int sh = 16 * ((w >> 21) & 3);

		if (rd < 31 && r[rd].kind == A64_CONST)
			r[rd].v = (r[rd].v & ~(0xffffLL << sh)) | (int64_t)((w >> 5) & 0xffff) << sh;
		else
			a64_forget(r, rd);
		return false;
	}
	if ((w & 0xffc00000) == 0xb9400000) {		/* ldr wt, [xn, #imm12*4] */
		a64_loaded(r, rd, n, (int64_t)((w >> 10) & 0xfff) * 4);
		return false;
	}
	if ((w & 0xffe00c00) == 0xb8400000) {		/* ldur wt, [xn, #simm9] */
		int64_t imm = (w >> 12) & 0x1ff;

		a64_loaded(r, rd, n, imm >= 256 ? imm - 512 : imm);
		return false;
	}
	if ((w & 0xffe0fc00) == 0xb8606800) {		/* ldr wt, [xn, xm] */
		struct a64_reg m = rm == 31 ? sp : r[rm];

		if (m.kind == A64_CONST)
			a64_loaded(r, rd, n, m.v);
		else if (n->kind == A64_CONST)
			a64_loaded(r, rd, &m, n->v);
		else
			a64_forget(r, rd);
		return false;
	}
	if ((w & 0xfffffc00) == 0xb9000000) {		/* str wt, [xn] */
		if (rd < 31 && r[rd].loaded && n->kind == A64_ARG && n->base == 1 && n->v == 0) {
			*off = r[rd].off;
			return true;
		}
		return false;
	}
	if ((w & 0xfc000000) == 0x94000000 || (w & 0xfffffc1f) == 0xd63f0000) {
		for (int i = 0; i <= 18; i++)	/* bl, blr: the caller-saved */
			a64_forget(r, i);
		a64_forget(r, 30);
		return false;
	}
	if (((w >> 27) & 7) == 5 && (w & (1 << 22))) {	/* ldp */
		a64_forget(r, rd);
		a64_forget(r, (w >> 10) & 31);
		return false;
	}
	/* anything else that writes a register writes the one in bits 4:0
	 * (compares write xzr) */
	if (a64_writes(w))
		a64_forget(r, rd);
	return false;
}

static int decode_a64(const uint8_t *code, size_t len, int64_t *off)
{
	struct a64_reg r[31];

	for (int i = 0; i < 31; i++)
		r[i] = (struct a64_reg){ .kind = i < 8 ? A64_ARG : A64_UNKNOWN, .base = i };
	for (size_t i = 0; i + 4 <= len; i += 4)
		if (a64_step(r, le32(code + i), off))
			return 0;
	return -ENOENT;
}

int ncclcomm_decode(const uint8_t *code, size_t len, int machine, int64_t *off)
{
	if (machine == EM_X86_64)
		return decode_x86(code, len, off);
	if (machine == EM_AARCH64)
		return decode_a64(code, len, off);
	return -ENOENT;
}

/* ---- the library file ---- */

static int machine_of(int fd)
{
	Elf *e;
	GElf_Ehdr eh;
	int m = EM_NONE;

	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && gelf_getehdr(e, &eh))
		m = eh.e_machine;
	elf_end(e);
	return m;
}

static int accessor_offset(int fd, const struct elf_syms *s, int machine, const char *name,
			   int64_t *off)
{
	char pname[64];
	uint8_t code[CODE_BYTES];
	uint64_t at;
	ssize_t n;

	snprintf(pname, sizeof(pname), "p%s", name);
	if (elf_syms_offset(s, name, &at) && elf_syms_offset(s, pname, &at))
		return -ENOENT;
	n = pread(fd, code, sizeof(code), at);
	if (n <= 0)
		return -ENOENT;
	return ncclcomm_decode(code, n, machine, off);
}

/* "NCCL version 2.28.9+cuda13.0", the banner NCCL logs at init, in .rodata */
static void read_version(int fd, char *buf, size_t len)
{
	static const char tag[] = "NCCL version ";
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t shstr;

	buf[0] = 0;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_getshdrstrndx(e, &shstr))
		goto out;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name, *p;
		char *data;

		if (!gelf_getshdr(scn, &sh) || !(name = elf_strptr(e, shstr, sh.sh_name)) ||
		    strcmp(name, ".rodata") || sh.sh_size > RODATA_MAX || sh.sh_type != SHT_PROGBITS)
			continue;
		data = malloc(sh.sh_size + 1);
		if (data && pread(fd, data, sh.sh_size, sh.sh_offset) == (ssize_t)sh.sh_size) {
			data[sh.sh_size] = 0;
			p = memmem(data, sh.sh_size, tag, sizeof(tag) - 1);
			if (p) {
				p += sizeof(tag) - 1;
				snprintf(buf, len, "%.*s", (int)strcspn(p, " \n\t"), p);
			}
		}
		free(data);
		break;
	}
out:
	elf_end(e);
}

int ncclcomm_layout_of(const char *path, struct ncclcomm_layout *l)
{
	struct elf_syms *s;
	int fd, machine, err;
	int64_t rank, nranks;

	memset(l, 0, sizeof(*l));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	s = elf_syms_open(path);
	if (!s) {
		err = -errno;
		close(fd);
		return err;
	}
	machine = machine_of(fd);
	err = accessor_offset(fd, s, machine, "ncclCommUserRank", &rank) ?:
	      accessor_offset(fd, s, machine, "ncclCommCount", &nranks);
	if (!err && (nranks != rank + 4 || rank < 8))
		err = -EPROTO;
	if (!err) {
		l->rank_off = rank;
		l->nranks_off = nranks;
		l->hash_off = rank - 8;
		read_version(fd, l->version, sizeof(l->version));
	}
	elf_syms_free(s);
	close(fd);
	return err;
}

bool ncclcomm_valid(uint64_t magic, const struct ncclcomm_ident *id)
{
	return magic == NCCLCOMM_MAGIC && id->hash && id->nranks > 0 &&
	       id->nranks <= NCCLCOMM_MAX_RANKS && id->rank >= 0 && id->rank < id->nranks;
}

int ncclcomm_read(pid_t pid, uint64_t handle, const struct ncclcomm_layout *l,
		  struct ncclcomm_ident *id)
{
	struct {
		uint64_t hash;
		int32_t rank, nranks;
	} f;
	uint64_t magic;
	struct iovec local[2] = { { &magic, sizeof(magic) }, { &f, sizeof(f) } };
	struct iovec remote[2] = {
		{ (void *)(uintptr_t)handle, sizeof(magic) },
		{ (void *)(uintptr_t)(handle + l->hash_off), sizeof(f) },
	};
	ssize_t n;

	if (!handle || l->hash_off <= 0)
		return -EINVAL;
	n = process_vm_readv(pid, local, 2, remote, 2, 0);
	if (n < 0)
		return -errno;
	if (n != sizeof(magic) + sizeof(f))
		return -EINVAL;
	id->hash = f.hash;
	id->rank = f.rank;
	id->nranks = f.nranks;
	return ncclcomm_valid(magic, id) ? 0 : -EINVAL;
}

/* ---- finding every communicator of a process ---- */

#define SCAN_CHUNK	(1u << 20)

struct anon_map {
	uint64_t start, end;
};

/* pid's private writable anonymous mappings, [heap] first */
static int anon_maps(pid_t pid, struct anon_map **out, size_t *n)
{
	char path[64], line[512];
	size_t cap = 0;
	FILE *f;

	*out = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long start, end, ino;
		char perms[8], name[256] = "";
		struct anon_map m;

		if (sscanf(line, "%llx-%llx %7s %*s %*s %llu %255s", &start, &end, perms, &ino,
			   name) < 4 || strcmp(perms, "rw-p") || ino ||
		    (name[0] && strcmp(name, "[heap]")))
			continue;
		if (*n == cap) {
			struct anon_map *nm = realloc(*out, (cap = cap ? 2 * cap : 64) * sizeof(*nm));

			if (!nm) {
				fclose(f);
				return -ENOMEM;
			}
			*out = nm;
		}
		m = (struct anon_map){ start, end };
		if (!strcmp(name, "[heap]")) {
			memmove(*out + 1, *out, *n * sizeof(m));
			(*out)[0] = m;
		} else {
			(*out)[*n] = m;
		}
		(*n)++;
	}
	fclose(f);
	return 0;
}

static int try_comm(pid_t pid, uint64_t addr, const struct ncclcomm_layout *l,
		    void (*found)(uint64_t, const struct ncclcomm_ident *, void *), void *ctx)
{
	struct ncclcomm_ident id;

	if (ncclcomm_read(pid, addr, l, &id))
		return 0;
	found(addr, &id, ctx);
	return 1;
}

/* the words of [start, end) that hold the magic, 16-byte aligned */
static int scan_range(pid_t pid, uint64_t start, uint64_t end, const struct ncclcomm_layout *l,
		      uint64_t *buf, void (*found)(uint64_t, const struct ncclcomm_ident *, void *),
		      void *ctx)
{
	int n = 0;

	for (uint64_t at = start; at < end; at += SCAN_CHUNK) {
		size_t want = end - at < SCAN_CHUNK ? end - at : SCAN_CHUNK;
		struct iovec lv = { buf, want }, rv = { (void *)(uintptr_t)at, want };
		ssize_t got = process_vm_readv(pid, &lv, 1, &rv, 1, 0);

		if (got < 0)
			return errno == ESRCH ? -ESRCH : n;
		for (size_t i = 0; i + 1 < (size_t)got / 8; i += 2)
			if (buf[i] == NCCLCOMM_MAGIC)
				n += try_comm(pid, at + 8 * i, l, found, ctx);
	}
	return n;
}

int ncclcomm_scan(pid_t pid, const struct ncclcomm_layout *l, uint64_t max_bytes, bool *capped,
		  void (*found)(uint64_t handle, const struct ncclcomm_ident *id, void *ctx),
		  void *ctx)
{
	struct anon_map *m;
	uint64_t *buf, left = max_bytes;
	size_t nm;
	int err = anon_maps(pid, &m, &nm), n = 0;

	*capped = false;
	if (err)
		return err;
	buf = malloc(SCAN_CHUNK);
	if (!buf) {
		free(m);
		return -ENOMEM;
	}
	for (size_t i = 0; i < nm && n >= 0; i++) {
		uint64_t len = m[i].end - m[i].start;
		int r;

		if (len > left) {
			*capped = true;
			/* a communicator of its own mapping: malloc's chunk header, then it */
			n += try_comm(pid, m[i].start + 16, l, found, ctx);
			continue;
		}
		left -= len;
		r = scan_range(pid, m[i].start, m[i].end, l, buf, found, ctx);
		n = r < 0 ? r : n + r;
	}
	free(buf);
	free(m);
	return n;
}
