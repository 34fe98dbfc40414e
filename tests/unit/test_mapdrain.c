// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/mapdrain.c on a real BPF hash map: every key, a filter, the deletes,
 * and what stays in the map for the next drain; map_epoch_close against a
 * program still adding to the epoch it closes (tests/bpf/epoch.bpf.c). */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "t.h"
#include "t_bpf.h"
#include "aiscope_common.h"
#include "mapdrain.h"
#include "epoch.skel.h"

struct key {
	uint32_t id;
	uint32_t epoch;
};

struct val {
	uint64_t a, b;
};

/* want and take share one ctx */
struct seen {
	uint32_t closed;
	int n;
	uint64_t sum;
	int bad;
};

static bool epoch_is(const void *key, void *ctx)
{
	return ((const struct key *)key)->epoch == ((struct seen *)ctx)->closed;
}

static void take(const void *key, const void *value, void *ctx)
{
	const struct key *k = key;
	const struct val *v = value;
	struct seen *s = ctx;

	s->n++;
	s->sum += v->a;
	/* the value is the one stored under the key */
	if (v->a != k->id || v->b != (uint64_t)k->id * 3 + k->epoch)
		s->bad++;
}

/* id 0..n-1, epoch id % 2 */
static int make_map(int n)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_HASH, "t_drain", sizeof(struct key),
				sizeof(struct val), 4096, NULL);

	for (int i = 0; fd >= 0 && i < n; i++) {
		struct key k = { .id = i, .epoch = i % 2 };
		struct val v = { .a = i, .b = (uint64_t)i * 3 + i % 2 };

		if (bpf_map_update_elem(fd, &k, &v, BPF_NOEXIST)) {
			close(fd);
			return -1;
		}
	}
	return fd;
}

/* a map of n entries as make_map() fills it, in *fd; else why a test
 * cannot have one */
static const char *test_map(int n, int *fd)
{
	if (geteuid())
		return "not root";
	*fd = make_map(n);
	return *fd < 0 ? "no BPF hash map" : NULL;
}

/* map_drain() of a map as make_map() makes them */
static int drain(int fd, map_drain_want_fn want, map_drain_take_fn take, struct seen *s)
{
	return map_drain(fd, sizeof(struct key), sizeof(struct val), want, take, s);
}

static int count_keys(int fd)
{
	struct key k, next;
	void *prev = NULL;
	int n = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		k = next;
		prev = &k;
		n++;
	}
	return n;
}

/* what take saw: n entries, each with its own value, summing to sum; left
 * keys stay in the map */
static void check_taken(const struct seen *s, int n, uint64_t sum, int fd, int left)
{
	CHECK_EQ(s->n, n);
	CHECK_EQ(s->sum, sum);
	CHECK_EQ(s->bad, 0);
	CHECK_EQ(count_keys(fd), left);
}

static void test_drain_all(void)
{
	struct seen s = { 0 };
	int fd;

	/* more keys than the first key array holds: it grows */
	SKIP_IF(test_map(1000, &fd));
	CHECK_EQ(drain(fd, NULL, take, &s), 1000);
	check_taken(&s, 1000, 999 * 1000 / 2, fd, 0);
	/* an empty map: nothing */
	CHECK_EQ(drain(fd, NULL, take, &s), 0);
	CHECK_EQ(s.n, 1000);
	close(fd);
}

/* A filter as the tools' closed epoch: only its keys go, the others stay. */
static void test_drain_filter(void)
{
	struct seen s = { .closed = 1 };
	struct key k = { .id = 4, .epoch = 0 };
	struct val v;
	int fd;

	SKIP_IF(test_map(600, &fd));
	CHECK_EQ(drain(fd, epoch_is, take, &s), 300);
	/* the odd ids, epoch 1 */
	check_taken(&s, 300, 300 * 300, fd, 300);
	CHECK(!bpf_map_lookup_elem(fd, &k, &v));
	k = (struct key){ .id = 5, .epoch = 1 };
	CHECK(bpf_map_lookup_elem(fd, &k, &v) && errno == ENOENT);

	/* then the other epoch */
	memset(&s, 0, sizeof(s));
	s.closed = 0;
	CHECK_EQ(drain(fd, epoch_is, take, &s), 300);
	check_taken(&s, 300, 299 * 300, fd, 0);
	close(fd);
}

/* each entry once, with its own value, and every one left in the map */
static void visit(const void *key, const void *value, void *ctx)
{
	take(key, value, ctx);
}

static void test_walk(void)
{
	struct seen s = { 0 };
	int fd;

	SKIP_IF(test_map(700, &fd));
	CHECK_EQ(map_walk(fd, sizeof(struct key), sizeof(struct val), visit, &s), 700);
	check_taken(&s, 700, 699 * 700 / 2, fd, 700);
	/* keys only: a count */
	CHECK_EQ(map_walk(fd, sizeof(struct key), 0, NULL, NULL), 700);
	close(fd);
}

static void test_keys_then_delete_only(void)
{
	struct seen s = { .closed = 0 };
	struct key *keys;
	size_t n;
	bool oom = true;
	int even = 0, fd;

	SKIP_IF(test_map(500, &fd));
	keys = map_keys(fd, sizeof(struct key), epoch_is, &s, &n, &oom);
	CHECK_EQ(n, 250);
	CHECK(!oom);
	for (size_t i = 0; i < n; i++)
		even += keys[i].epoch == 0 && keys[i].id % 2 == 0;
	CHECK_EQ(even, 250);
	free(keys);
	CHECK_EQ(count_keys(fd), 500);
	/* take NULL: the wanted keys deleted, nothing handed over */
	CHECK_EQ(drain(fd, epoch_is, NULL, &s), 250);
	CHECK_EQ(s.n, 0);
	CHECK_EQ(count_keys(fd), 250);
	keys = map_keys(fd, sizeof(struct key), epoch_is, &s, &n, &oom);
	CHECK_EQ(n, 0);
	CHECK(keys == NULL);
	close(fd);
}

static void *run_slow_add(void *arg)
{
	struct epoch_bpf *skel = arg;
	LIBBPF_OPTS(bpf_test_run_opts, o);

	bpf_prog_test_run_opts(bpf_program__fd(skel->progs.slow_add), &o);
	return NULL;
}

static uint64_t mono_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

struct epoch_sum {
	uint32_t closed;
	uint64_t sum;
};

static bool epoch_key_is(const void *key, void *ctx)
{
	return ((const uint32_t *)key)[1] == ((struct epoch_sum *)ctx)->closed;
}

static void add_value(const void *key, const void *value, void *ctx)
{
	((struct epoch_sum *)ctx)->sum += *(const uint64_t *)value;
}

/* The closed epoch drained while a run that looked its row up before the
 * flip is still spinning: map_epoch_close returns after that run, so the
 * drain has its 1 (a plain flip drains 0 there, and the 1 is lost) */
static void test_epoch_close_waits(void)
{
	struct epoch_bpf *skel;
	pthread_t th;
	struct epoch_sum e = { 0 };
	uint64_t t0, waited_ns;
	bool waited = false;
	const char *why = t_bpf_begin();

	SKIP_IF(why);
	skel = epoch_bpf__open_and_load();
	SKIP_IF(skel ? NULL : "cannot load tests/bpf/epoch.bpf.c (bpf_loop: 5.17)");
	skel->bss->spins = 1 << 23;
	CHECK_EQ(pthread_create(&th, NULL, run_slow_add, skel), 0);
	while (!*(volatile uint32_t *)&skel->bss->started)
		;
	t0 = mono_ns();
	e.closed = map_epoch_close(&skel->bss->epoch, &waited);
	waited_ns = mono_ns() - t0;
	CHECK_EQ(e.closed, 0);
	CHECK_EQ(skel->bss->epoch, 1);
	CHECK(waited);
	CHECK_EQ(map_drain(bpf_map__fd(skel->maps.rows), 8, 8, epoch_key_is, add_value, &e), 1);
	CHECK_EQ(e.sum, 1);
	pthread_join(th, NULL);
	printf("# the spin outlasted the flip by %.1f ms\n", waited_ns / 1e6);
	/* the run ended within the wait: nothing added since, nothing left */
	CHECK_EQ(map_walk(bpf_map__fd(skel->maps.rows), 8, 0, NULL, NULL), 0);
	/* and the next close flips back */
	CHECK_EQ(map_epoch_close(&skel->bss->epoch, NULL), 1);
	CHECK_EQ(skel->bss->epoch, 0);
	epoch_bpf__destroy(skel);
}

int main(void)
{
	RUN(test_drain_all);
	RUN(test_drain_filter);
	RUN(test_walk);
	RUN(test_keys_then_delete_only);
	RUN(test_epoch_close_waits);
	return t_done();
}
