// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "btfscan.h"

#define BTF_MAGIC	0xeB9F

enum {
	K_INT = 1, K_PTR, K_ARRAY, K_STRUCT, K_UNION, K_ENUM, K_FWD, K_TYPEDEF,
	K_VOLATILE, K_CONST, K_RESTRICT, K_FUNC, K_FUNC_PROTO, K_VAR, K_DATASEC,
	K_FLOAT, K_DECL_TAG, K_TYPE_TAG, K_ENUM64,
};

struct hdr {
	uint16_t magic;
	uint8_t version;
	uint8_t flags;
	uint32_t hdr_len;
	uint32_t type_off;
	uint32_t type_len;
	uint32_t str_off;
	uint32_t str_len;
};

struct type {
	uint32_t name_off;
	uint32_t info;
	uint32_t size_or_type;
};

struct btfscan {
	char *data;
	size_t mapped;		/* data is mmap()ed, this long */
	const char *strs;
	uint32_t str_len;
	const char *types;
	uint32_t *offs;		/* offset in types of each id, from 1 */
	uint32_t ntypes;
	uint32_t *hash;		/* ids of TYPEDEF, ENUM and ENUM64 types by name */
	uint32_t hash_cap;
};

static int kind_of(const struct type *t)
{
	return (t->info >> 24) & 0x1f;
}

static int vlen_of(const struct type *t)
{
	return t->info & 0xffff;
}

/* bytes that follow the common header, -1 for an unknown kind */
static long extra_len(const struct type *t)
{
	switch (kind_of(t)) {
	case K_INT: case K_VAR: case K_DECL_TAG: return 4;
	case K_ARRAY: return 12;
	case K_STRUCT: case K_UNION: case K_DATASEC: case K_ENUM64: return 12L * vlen_of(t);
	case K_ENUM: case K_FUNC_PROTO: return 8L * vlen_of(t);
	case K_PTR: case K_FWD: case K_TYPEDEF: case K_VOLATILE: case K_CONST:
	case K_RESTRICT: case K_FUNC: case K_FLOAT: case K_TYPE_TAG: return 0;
	default: return -1;
	}
}

static const char *name_at(const struct btfscan *b, uint32_t off)
{
	return off < b->str_len ? b->strs + off : "";
}

static const struct type *type_at(const struct btfscan *b, uint32_t id)
{
	return (const struct type *)(b->types + b->offs[id]);
}

static uint32_t str_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 16777619u;
	return h;
}

static bool indexed(int kind)
{
	return kind == K_TYPEDEF || kind == K_ENUM || kind == K_ENUM64;
}

/*
 * The header and sections checked as libbpf's btf_parse_hdr() and
 * btf_parse_str_sec() do: a header of at least its own size, version 1,
 * sections inside the blob, types 4-byte aligned, a string section that
 * starts and ends with a NUL (so every name_at() ends inside it).
 */
static int check_hdr(const struct btfscan *b, size_t size)
{
	const struct hdr *h = (const void *)b->data;

	if (size < sizeof(*h) || h->magic != BTF_MAGIC || h->version != 1 ||
	    h->hdr_len < sizeof(*h) || h->hdr_len > size)
		return -EINVAL;
	if ((uint64_t)h->hdr_len + h->type_off + h->type_len > size ||
	    (uint64_t)h->hdr_len + h->str_off + h->str_len > size)
		return -EINVAL;
	if ((h->hdr_len + h->type_off) % 4 || h->type_len % 4)
		return -EINVAL;
	if (!h->str_len || b->data[h->hdr_len + h->str_off] ||
	    b->data[h->hdr_len + h->str_off + h->str_len - 1])
		return -EINVAL;
	return 0;
}

static int build(struct btfscan *b, size_t size)
{
	const struct hdr *h = (const void *)b->data;
	uint32_t off = 0, cap = 1024, n = 0;
	int err = check_hdr(b, size);

	if (err)
		return err;
	b->types = b->data + h->hdr_len + h->type_off;
	b->strs = b->data + h->hdr_len + h->str_off;
	b->str_len = h->str_len;
	b->offs = malloc(cap * sizeof(*b->offs));
	if (!b->offs)
		return -ENOMEM;
	b->offs[n++] = 0;	/* id 0 is void */
	while (off < h->type_len) {
		const struct type *t = (const void *)(b->types + off);
		long extra;

		/* the common header, then its members, all inside type_len */
		if (h->type_len - off < sizeof(*t))
			return -EINVAL;
		extra = extra_len(t);
		if (extra < 0 || (uint64_t)h->type_len - off - sizeof(*t) < (uint64_t)extra)
			return -EINVAL;
		if (n == cap) {
			uint32_t *o = realloc(b->offs, (cap *= 2) * sizeof(*o));

			if (!o)
				return -ENOMEM;
			b->offs = o;
		}
		b->offs[n++] = off;
		off += sizeof(*t) + extra;
	}
	b->ntypes = n;
	/* open addressing, at most half full */
	for (b->hash_cap = 1024; b->hash_cap < 2 * (uint64_t)n; b->hash_cap <<= 1)
		;
	b->hash = calloc(b->hash_cap, sizeof(*b->hash));
	if (!b->hash)
		return -ENOMEM;
	for (uint32_t id = 1; id < n; id++) {
		const struct type *t = type_at(b, id);
		uint32_t i;

		if (!indexed(kind_of(t)) || !t->name_off)
			continue;
		for (i = str_hash(name_at(b, t->name_off)) & (b->hash_cap - 1); b->hash[i];
		     i = (i + 1) & (b->hash_cap - 1))
			;
		b->hash[i] = id;
	}
	return 0;
}

struct btfscan *btfscan_new(const void *data, size_t size)
{
	struct btfscan *b = calloc(1, sizeof(*b));
	int err;

	if (!b || !(b->data = malloc(size ? size : 1))) {
		free(b);
		errno = ENOMEM;
		return NULL;
	}
	memcpy(b->data, data, size);
	err = build(b, size);
	if (err) {
		btfscan_free(b);
		errno = -err;
		return NULL;
	}
	return b;
}

/* Kernels since 6.16 let /sys/kernel/btf/vmlinux be mapped: no copy. */
static int map_file(struct btfscan *b, int fd, size_t *size)
{
	struct stat st;
	void *p;

	if (fstat(fd, &st) || st.st_size <= 0)
		return -1;
	p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return -1;
	b->data = p;
	b->mapped = st.st_size;
	*size = st.st_size;
	return 0;
}

static int read_file(struct btfscan *b, int fd, size_t *size)
{
	size_t cap = 1 << 20;
	ssize_t r;

	*size = 0;
	b->data = malloc(cap);
	while (b->data && (r = read(fd, b->data + *size, cap - *size)) > 0) {
		*size += r;
		if (*size == cap) {
			char *d = realloc(b->data, cap *= 2);

			if (!d)
				free(b->data);
			b->data = d;
		}
	}
	return b->data ? 0 : -ENOMEM;
}

static int regular_file(int fd)
{
	struct stat st;

	if (fstat(fd, &st))
		return -errno;
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	return S_ISREG(st.st_mode) ? 0 : -EINVAL;
}

struct btfscan *btfscan_open(const char *path)
{
	struct btfscan *b = calloc(1, sizeof(*b));
	size_t size;
	int fd, err;

	if (!b)
		return NULL;
	/* O_NONBLOCK: a FIFO must not hold the tool before it is refused */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		err = -errno;
		goto fail;
	}
	err = regular_file(fd);
	if (!err)
		err = map_file(b, fd, &size) ? read_file(b, fd, &size) : 0;
	close(fd);
	if (!err)
		err = build(b, size);
	if (!err)
		return b;
fail:
	btfscan_free(b);
	errno = -err;
	return NULL;
}

static int find_indexed(const struct btfscan *b, const char *name, int kind)
{
	for (uint32_t i = str_hash(name) & (b->hash_cap - 1); b->hash[i];
	     i = (i + 1) & (b->hash_cap - 1)) {
		const struct type *t = type_at(b, b->hash[i]);

		if ((kind < 0 ? kind_of(t) == K_ENUM || kind_of(t) == K_ENUM64 : kind_of(t) == kind) &&
		    !strcmp(name_at(b, t->name_off), name))
			return b->hash[i];
	}
	return -1;
}

int btfscan_find(const struct btfscan *b, const char *name, int kind)
{
	if (kind == K_TYPEDEF)
		return find_indexed(b, name, kind);
	for (uint32_t id = 1; id < b->ntypes; id++) {
		const struct type *t = type_at(b, id);

		if (kind_of(t) == kind && !strcmp(name_at(b, t->name_off), name))
			return id;
	}
	return -1;
}

bool btfscan_enum_value(const struct btfscan *b, const char *enum_name, const char *val,
			long long *out)
{
	int id = find_indexed(b, enum_name, -1);
	const struct type *t;
	const uint32_t *m;

	if (id < 0)
		return false;
	t = type_at(b, id);
	m = (const uint32_t *)(t + 1);
	for (int i = 0; i < vlen_of(t); i++) {
		int words = kind_of(t) == K_ENUM ? 2 : 3;
		const uint32_t *e = m + i * words;

		if (strcmp(name_at(b, e[0]), val))
			continue;
		if (words == 2)
			*out = (t->info >> 31) ? (long long)(int32_t)e[1] : (long long)e[1];
		else
			*out = (long long)(((uint64_t)e[2] << 32) | e[1]);
		return true;
	}
	return false;
}

int btfscan_func_param(const struct btfscan *b, const char *func, const char *param)
{
	int id = btfscan_find(b, func, K_FUNC);
	const struct type *proto;
	const uint32_t *m;
	uint32_t pid;

	if (id < 0)
		return -1;
	pid = type_at(b, id)->size_or_type;
	if (!pid || pid >= b->ntypes)
		return -1;
	proto = type_at(b, pid);
	if (kind_of(proto) != K_FUNC_PROTO)
		return -1;
	m = (const uint32_t *)(proto + 1);
	for (int i = 0; i < vlen_of(proto); i++)
		if (!strcmp(name_at(b, m[2 * i]), param))
			return i;
	return -1;
}

/* member of the struct or union at id, searched through its anonymous
 * members to depth levels; its byte offset, or -1 */
static long member_in(const struct btfscan *b, uint32_t id, const char *member, int depth)
{
	const struct type *t;
	const uint32_t *m;

	if (!id || id >= b->ntypes || depth < 0)
		return -1;
	t = type_at(b, id);
	if (kind_of(t) != K_STRUCT && kind_of(t) != K_UNION)
		return -1;
	m = (const uint32_t *)(t + 1);
	for (int i = 0; i < vlen_of(t); i++) {
		const uint32_t *e = m + 3 * i;
		/* with kind_flag, the low 24 bits are the bit offset */
		long bits = (t->info >> 31) ? (e[2] & 0xffffff) : e[2];
		long inner;

		if (e[0] && !strcmp(name_at(b, e[0]), member))
			return bits / 8;
		if (e[0])
			continue;
		inner = member_in(b, e[1], member, depth - 1);
		if (inner >= 0)
			return bits / 8 + inner;
	}
	return -1;
}

long btfscan_member_offset(const struct btfscan *b, const char *strct, const char *member)
{
	for (uint32_t id = 1; id < b->ntypes; id++) {
		const struct type *t = type_at(b, id);

		if ((kind_of(t) != K_STRUCT && kind_of(t) != K_UNION) || !vlen_of(t) ||
		    strcmp(name_at(b, t->name_off), strct))
			continue;
		return member_in(b, id, member, 4);
	}
	return -1;
}

void btfscan_free(struct btfscan *b)
{
	if (!b)
		return;
	if (b->mapped)
		munmap(b->data, b->mapped);
	else
		free(b->data);
	free(b->offs);
	free(b->hash);
	free(b);
}
