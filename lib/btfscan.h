/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A small read-only index over a raw BTF blob (/sys/kernel/btf/vmlinux):
 * enough to answer "does this tracepoint, function or enum value exist"
 * in about a third of the time and memory of a full btf__parse(), which
 * libbpf repeats anyway when it loads the programs.
 */
#ifndef AISCOPE_BTFSCAN_H
#define AISCOPE_BTFSCAN_H

#include <stdbool.h>
#include <stddef.h>

#define BTFSCAN_TYPEDEF	8
#define BTFSCAN_FUNC	12
#define BTFSCAN_VAR	14

struct btfscan;

/* NULL with errno set: EINVAL when the file is not raw BTF. */
struct btfscan *btfscan_open(const char *path);
/* From memory (tests); the blob is copied. */
struct btfscan *btfscan_new(const void *data, size_t size);
/* Type id of a TYPEDEF or FUNC named name, -1 if none. */
int btfscan_find(const struct btfscan *b, const char *name, int kind);
/* Value of enumerator val of enum enum_name. */
bool btfscan_enum_value(const struct btfscan *b, const char *enum_name, const char *val,
			long long *out);
/* Index (from 0) of the parameter named param of function func, -1 when
 * func is not there or has no such parameter. */
int btfscan_func_param(const struct btfscan *b, const char *func, const char *param);
/* Byte offset of member (through anonymous structs and unions) in the
 * first struct or union named strct that has members, -1 when none. */
long btfscan_member_offset(const struct btfscan *b, const char *strct, const char *member);
void btfscan_free(struct btfscan *b);

#endif
