// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* btfscan against a hand-built BTF blob and against libbpf on the kernel's BTF. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

/* header fields of make_blob()'s blob */
#define OFF_VERSION	2
#define OFF_HDR_LEN	4
#define OFF_TYPE_OFF	8
#define OFF_TYPE_LEN	12
#define OFF_STR_OFF	16
#define OFF_STR_LEN	20
/* where each of its 6 types starts in the type section, and its end */
static const uint32_t type_ends[] = { 0, 16, 28, 40, 52, 80, 104 };

static void set32(uint8_t *buf, size_t off, uint32_t v)
{
	memcpy(buf + off, &v, sizeof(v));
}

static uint32_t get32(const uint8_t *buf, size_t off)
{
	uint32_t v;

	memcpy(&v, buf + off, sizeof(v));
	return v;
}

/* each lookup, so that ASan sees every read of an index that was built */
static void poke(const struct btfscan *b)
{
	long long v;

	btfscan_find(b, "btf_trace_x", BTFSCAN_TYPEDEF);
	btfscan_find(b, "foo", BTFSCAN_FUNC);
	btfscan_enum_value(b, "e", "nope", &v);
	btfscan_enum_value(b, "e64", "nope", &v);
}

/* btfscan_new() copies exactly size bytes into its own allocation: a read
 * past the blob is one past that allocation (ASan) */
static struct btfscan *try_blob(const uint8_t *buf, size_t size)
{
	struct btfscan *b;

	errno = 0;
	b = btfscan_new(buf, size);
	if (b)
		poke(b);
	else
		CHECK_EQ(errno, EINVAL);
	return b;
}

/*
 * A type whose vlen runs past type_len (the --btf file that read past the
 * buffer), every cut of the type section and of the file, and each header
 * field libbpf checks: refused with EINVAL, never read past.
 */
static void test_truncated_and_corrupt(void)
{
	uint8_t buf[512];
	size_t n = make_blob(buf);
	uint32_t tlen = get32(buf, OFF_TYPE_LEN);
	struct btfscan *b;
	int accepted = 0;

	CHECK_EQ(tlen, type_ends[6]);
	/* the last type, enum64 e64, claims 200 members: 2388 bytes past */
	set32(buf, 24 + 80 + 4, KIND(19, 200, 0));
	CHECK(try_blob(buf, n) == NULL);
	/* and the signed enum 2 -> 6 members: over the next type, then past */
	n = make_blob(buf);
	set32(buf, 24 + 52 + 4, KIND(6, 6, 1));
	CHECK(try_blob(buf, n) == NULL);
	/* type_len cut anywhere: only at a type's end is it a valid blob */
	for (uint32_t cut = 0; cut < tlen; cut++) {
		bool at_end = false;

		for (size_t i = 0; i < sizeof(type_ends) / sizeof(type_ends[0]); i++)
			at_end |= type_ends[i] == cut;
		n = make_blob(buf);
		set32(buf, OFF_TYPE_LEN, cut);
		b = try_blob(buf, n);
		if (at_end)
			CHECK(b != NULL);
		else
			CHECK(b == NULL);
		accepted += b != NULL;
		btfscan_free(b);
	}
	CHECK_EQ(accepted, 6);
	/* the file cut anywhere: its sections no longer fit */
	n = make_blob(buf);
	for (size_t size = 0; size < n; size++)
		CHECK(try_blob(buf, size) == NULL);
	/* strings without their final NUL, or not starting with one */
	n = make_blob(buf);
	set32(buf, OFF_STR_LEN, get32(buf, OFF_STR_LEN) - 1);
	CHECK(try_blob(buf, n) == NULL);
	n = make_blob(buf);
	set32(buf, OFF_STR_LEN, 0);
	CHECK(try_blob(buf, n) == NULL);
	n = make_blob(buf);
	buf[24 + tlen] = 'x';
	CHECK(try_blob(buf, n) == NULL);
	/* a name offset past the strings reads as "" */
	n = make_blob(buf);
	set32(buf, 24 + 16, 0xffffff00);
	b = try_blob(buf, n);
	CHECK(b != NULL);
	if (b)
		CHECK_EQ(btfscan_find(b, "btf_trace_x", BTFSCAN_TYPEDEF), -1);
	btfscan_free(b);
	/* a header shorter than itself, another version, misaligned types */
	n = make_blob(buf);
	set32(buf, OFF_HDR_LEN, 8);
	CHECK(try_blob(buf, n) == NULL);
	n = make_blob(buf);
	buf[OFF_VERSION] = 2;
	CHECK(try_blob(buf, n) == NULL);
	n = make_blob(buf);
	set32(buf, OFF_TYPE_OFF, 2);
	set32(buf, OFF_TYPE_LEN, 100);
	CHECK(try_blob(buf, n) == NULL);
	/* a section offset that wraps */
	n = make_blob(buf);
	set32(buf, OFF_STR_OFF, 0xfffffff0);
	CHECK(try_blob(buf, n) == NULL);
}

/* a FIFO or a directory is refused at once (a FIFO used to block) */
static void test_open_not_a_file(void)
{
	char dir[] = "/tmp/aiscope-test-btf.XXXXXX", fifo[64];

	CHECK(mkdtemp(dir) != NULL);
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	CHECK_EQ(mkfifo(fifo, 0600), 0);
	alarm(5);			/* a blocking open fails the test, not hangs it */
	errno = 0;
	CHECK(btfscan_open(fifo) == NULL);
	CHECK_EQ(errno, EINVAL);
	errno = 0;
	CHECK(btfscan_open(dir) == NULL);
	CHECK_EQ(errno, EISDIR);
	alarm(0);
	unlink(fifo);
	rmdir(dir);
}

/*
 * The running kernel's BTF, through btfscan and through libbpf's full
 * parser: 0 when both opened; else what did open is in *b or *ref, to free.
 */
static int open_kernel_btf(struct btfscan **b, struct btf **ref)
{
	*b = NULL;
	*ref = NULL;
	if (access("/sys/kernel/btf/vmlinux", R_OK)) {
		printf("# no kernel BTF here\n");
		return -1;
	}
	*b = btfscan_open("/sys/kernel/btf/vmlinux");
	*ref = btf__parse("/sys/kernel/btf/vmlinux", NULL);
	CHECK(*b && *ref);
	return *b && *ref ? 0 : -1;
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

	if (open_kernel_btf(&b, &ref))
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

/* libbpf's answer: index of param in func's prototype, -1 if none */
static int ref_param(const struct btf *ref, const char *func, const char *param)
{
	int id = btf__find_by_name_kind(ref, func, BTF_KIND_FUNC);
	const struct btf_type *proto;

	if (id <= 0)
		return -1;
	proto = btf__type_by_id(ref, btf__type_by_id(ref, id)->type);
	for (int i = 0; i < btf_vlen(proto); i++)
		if (!strcmp(btf__name_by_offset(ref, btf_params(proto)[i].name_off), param))
			return i;
	return -1;
}

/* the parameter a kretprobe's entry reads (recvmsg's flags moved when
 * 5.19 dropped nonblock): the same index as libbpf finds */
static void test_func_param_on_kernel(void)
{
	static const char *const q[][2] = {
		{ "tcp_recvmsg", "flags" }, { "udp_recvmsg", "flags" }, { "tcp_sendmsg", "size" },
		{ "tcp_sendmsg", "sk" }, { "tcp_sendmsg", "no_such_param" }, { "no_such_function_here", "sk" },
	};
	struct btfscan *b;
	struct btf *ref;

	if (open_kernel_btf(&b, &ref))
		goto out;
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++)
		CHECK_EQ(btfscan_func_param(b, q[i][0], q[i][1]), ref_param(ref, q[i][0], q[i][1]));
	CHECK_EQ(btfscan_func_param(b, "tcp_sendmsg", "sk"), 0);
	CHECK(btfscan_func_param(b, "tcp_recvmsg", "flags") >= 3);
out:
	btfscan_free(b);
	btf__free(ref);
}

/* libbpf's answer: byte offset of member in the struct or union at id,
 * through anonymous members, -1 if none */
static long ref_member_in(const struct btf *ref, int id, const char *member)
{
	const struct btf_type *t = btf__type_by_id(ref, id);

	if (!t || (!btf_is_struct(t) && !btf_is_union(t)))
		return -1;
	for (int i = 0; i < btf_vlen(t); i++) {
		const struct btf_member *m = btf_members(t) + i;
		const char *name = btf__name_by_offset(ref, m->name_off);
		long inner;

		if (*name) {
			if (!strcmp(name, member))
				return btf_member_bit_offset(t, i) / 8;
			continue;
		}
		inner = ref_member_in(ref, btf__resolve_type(ref, m->type), member);
		if (inner >= 0)
			return btf_member_bit_offset(t, i) / 8 + inner;
	}
	return -1;
}

/* member offsets, anonymous unions and bitfield structs (kind_flag) among
 * them, as libbpf finds them */
static void test_member_offset_on_kernel(void)
{
	static const char *const q[][2] = {
		{ "task_struct", "pid" }, { "task_struct", "thread_info" }, { "sk_buff", "sk" },
		{ "sk_buff", "len" }, { "sk_buff", "tstamp" }, { "sock", "sk_state" },
		{ "thread_info", "preempt_count" }, { "pcpu_hot", "preempt_count" },
		{ "no_such_struct_here", "x" }, { "task_struct", "no_such_member" },
	};
	struct btfscan *b;
	struct btf *ref;
	int rq;

	if (open_kernel_btf(&b, &ref))
		goto out;
	for (size_t i = 0; i < sizeof(q) / sizeof(q[0]); i++) {
		int id = btf__find_by_name_kind(ref, q[i][0], BTF_KIND_STRUCT);
		long want = id > 0 ? ref_member_in(ref, id, q[i][1]) : -1;

		CHECK_EQ(btfscan_member_offset(b, q[i][0], q[i][1]), want);
	}
	CHECK(btfscan_member_offset(b, "task_struct", "pid") > 0);
	CHECK(btfscan_member_offset(b, "sk_buff", "len") > 0);
	CHECK_EQ(btfscan_member_offset(b, "task_struct", "no_such_member"), -1);
	/* a per-CPU variable (the kernel's BTF holds those) */
	rq = btf__find_by_name_kind(ref, "runqueues", BTF_KIND_VAR);
	CHECK(rq > 0);
	CHECK_EQ(btfscan_find(b, "runqueues", BTFSCAN_VAR), rq);
out:
	btfscan_free(b);
	btf__free(ref);
}

static void test_func_param_blob(void)
{
	uint8_t buf[512];
	struct btfscan *b = btfscan_new(buf, make_blob(buf));

	CHECK(b != NULL);
	if (!b)
		return;
	CHECK_EQ(btfscan_func_param(b, "foo", "int"), -1);
	CHECK_EQ(btfscan_func_param(b, "btf_trace_x", "int"), -1);
	btfscan_free(b);
}

int main(void)
{
	RUN(test_blob_lookups);
	RUN(test_rejects_garbage);
	RUN(test_truncated_and_corrupt);
	RUN(test_open_not_a_file);
	RUN(test_matches_libbpf_on_kernel);
	RUN(test_func_param_on_kernel);
	RUN(test_func_param_blob);
	RUN(test_member_offset_on_kernel);
	return t_done();
}
