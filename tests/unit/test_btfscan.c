// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* btfscan against a hand-built BTF blob and against libbpf on the kernel's BTF. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/btf.h>
#include "btfscan.h"
#include "t.h"

#define KIND(k, vlen, kflag) (((uint32_t)(kflag) << 31) | ((uint32_t)(k) << 24) | (vlen))

/* strings: "\0int\0btf_trace_x\0foo\0e\0A\0B\0e64\0C\0" */
static const char strs[] = "\0int\0btf_trace_x\0foo\0e\0A\0B\0e64\0C";
enum { S_INT = 1, S_TP = 5, S_FOO = 17, S_E = 21, S_A = 23, S_B = 25, S_E64 = 27, S_C = 31 };

static size_t make_blob(uint8_t *buf)
{
	uint32_t types[] = {
		/* 1: int, 4 bytes + int encoding word */
		S_INT, KIND(1, 0, 0), 4, 32,
		/* 2: typedef btf_trace_x -> 1 */
		S_TP, KIND(8, 0, 0), 1,
		/* 3: func_proto void(void) */
		0, KIND(13, 0, 0), 0,
		/* 4: func foo -> 3 */
		S_FOO, KIND(12, 0, 0), 3,
		/* 5: signed enum e { A = 1, B = -2 } */
		S_E, KIND(6, 2, 1), 4, S_A, 1, S_B, (uint32_t)-2,
		/* 6: enum64 e64 { C = 0x100000002 } */
		S_E64, KIND(19, 1, 0), 8, S_C, 2, 1,
	};
	struct {
		uint16_t magic;
		uint8_t version, flags;
		uint32_t hdr_len, type_off, type_len, str_off, str_len;
	} hdr = { 0xeB9F, 1, 0, 24, 0, sizeof(types), sizeof(types), sizeof(strs) };

	memcpy(buf, &hdr, sizeof(hdr));
	memcpy(buf + 24, types, sizeof(types));
	memcpy(buf + 24 + sizeof(types), strs, sizeof(strs));
	return 24 + sizeof(types) + sizeof(strs);
}

static void test_blob_lookups(void)
{
	uint8_t buf[512];
	size_t n = make_blob(buf);
	struct btfscan *b = btfscan_new(buf, n);
	long long v = 0;

	CHECK(b != NULL);
	if (!b)
		return;
	CHECK_EQ(btfscan_find(b, "btf_trace_x", BTFSCAN_TYPEDEF), 2);
	CHECK_EQ(btfscan_find(b, "foo", BTFSCAN_FUNC), 4);
	CHECK_EQ(btfscan_find(b, "foo", BTFSCAN_TYPEDEF), -1);
	CHECK_EQ(btfscan_find(b, "btf_trace_y", BTFSCAN_TYPEDEF), -1);
	CHECK(btfscan_enum_value(b, "e", "A", &v));
	CHECK_EQ(v, 1);
	CHECK(btfscan_enum_value(b, "e", "B", &v));
	CHECK_EQ(v, -2);
	CHECK(btfscan_enum_value(b, "e64", "C", &v));
	CHECK_EQ(v, 0x100000002LL);
	CHECK(!btfscan_enum_value(b, "e", "C", &v));
	CHECK(!btfscan_enum_value(b, "nope", "A", &v));
	btfscan_free(b);
}

static void test_rejects_garbage(void)
{
	uint8_t buf[512];
	size_t n = make_blob(buf);

	errno = 0;
	CHECK(btfscan_new("not btf at all, not at all", 26) == NULL);
	CHECK_EQ(errno, EINVAL);
	/* a type section running past the end */
	buf[12] = 0xff;
	CHECK(btfscan_new(buf, n) == NULL);
	/* an unknown kind */
	n = make_blob(buf);
	buf[24 + 7] = 30;
	CHECK(btfscan_new(buf, n) == NULL);
	CHECK(btfscan_open("/nonexistent/btf") == NULL);
}

/* the same answers as libbpf's full parser on the running kernel's BTF */
static void test_matches_libbpf_on_kernel(void)
{
	static const char *const tps[] = { "btf_trace_sched_switch", "btf_trace_sched_wakeup",
					   "btf_trace_no_such_tracepoint" };
	static const char *const funcs[] = { "schedule", "do_exit", "no_such_function_here" };
	struct btfscan *b;
	struct btf *ref;
	long long v;

	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		printf("# no kernel BTF here\n");
		return;
	}
	b = btfscan_open("/sys/kernel/btf/vmlinux");
	ref = btf__parse("/sys/kernel/btf/vmlinux", NULL);
	CHECK(b && ref);
	if (!b || !ref)
		goto out;
	for (size_t i = 0; i < sizeof(tps) / sizeof(tps[0]); i++) {
		int id = btf__find_by_name_kind(ref, tps[i], BTF_KIND_TYPEDEF);

		CHECK_EQ(btfscan_find(b, tps[i], BTFSCAN_TYPEDEF), id > 0 ? id : -1);
	}
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		int id = btf__find_by_name_kind(ref, funcs[i], BTF_KIND_FUNC);

		CHECK_EQ(btfscan_find(b, funcs[i], BTFSCAN_FUNC), id > 0 ? id : -1);
	}
	CHECK(btfscan_enum_value(b, "bpf_func_id", "BPF_FUNC_map_lookup_elem", &v));
	CHECK_EQ(v, 1);
	CHECK(btfscan_enum_value(b, "bpf_func_id", "BPF_FUNC_ktime_get_ns", &v));
	CHECK_EQ(v, 5);
out:
	btfscan_free(b);
	btf__free(ref);
}

int main(void)
{
	RUN(test_blob_lookups);
	RUN(test_rejects_garbage);
	RUN(test_matches_libbpf_on_kernel);
	return t_done();
}
