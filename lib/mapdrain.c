// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include "mapdrain.h"

void *map_keys(int map_fd, size_t key_size, map_drain_want_fn want, void *ctx, size_t *n,
	       bool *oom)
{
	char *keys = NULL, *cur, *next;
	size_t kcap = 0;
	void *prev = NULL;

	*n = 0;
	*oom = false;
	/* the iteration's two keys */
	cur = malloc(2 * key_size);
	if (!cur) {
		*oom = true;
		return NULL;
	}
	next = cur + key_size;
	while (!bpf_map_get_next_key(map_fd, prev, next)) {
		memcpy(cur, next, key_size);
		prev = cur;
		if (want && !want(next, ctx))
			continue;
		if (*n == kcap) {
			size_t cap = kcap ? kcap * 2 : 256;
			char *k = realloc(keys, cap * key_size);

			if (!k) {
				*oom = true;
				break;
			}
			keys = k;
			kcap = cap;
		}
		memcpy(keys + (*n)++ * key_size, next, key_size);
	}
	free(cur);
	return keys;
}

int map_drain(int map_fd, size_t key_size, size_t value_size,
	      map_drain_want_fn want, map_drain_take_fn take, void *ctx)
{
	size_t nkeys;
	char *keys, *value;
	bool oom;
	int n = 0;

	value = malloc(value_size);
	if (!value)
		return -ENOMEM;
	/*
	 * Collect first, delete after: deleting the key just returned would
	 * make the next bpf_map_get_next_key() restart from the first bucket
	 * and walk the map again.
	 */
	keys = map_keys(map_fd, key_size, want, ctx, &nkeys, &oom);
	for (size_t i = 0; i < nkeys; i++) {
		const char *k = keys + i * key_size;

		/* gone since collected (the map's owner deleted it), or
		 * deleted by it meanwhile: not ours to take */
		if (bpf_map_lookup_elem(map_fd, k, value) || bpf_map_delete_elem(map_fd, k))
			continue;
		if (take)
			take(k, value, ctx);
		n++;
	}
	free(keys);
	free(value);
	return oom ? -ENOMEM : n;
}

int map_walk(int map_fd, size_t key_size, size_t value_size, map_walk_fn visit, void *ctx)
{
	char *scratch, *cur, *next, *value;
	void *prev = NULL;
	int n = 0;

	scratch = malloc(2 * key_size + value_size);
	if (!scratch)
		return -ENOMEM;
	cur = scratch;
	next = scratch + key_size;
	value = value_size ? scratch + 2 * key_size : NULL;
	while (!bpf_map_get_next_key(map_fd, prev, next)) {
		memcpy(cur, next, key_size);
		prev = cur;
		/* deleted since its key was returned: not an entry any more */
		if (value && bpf_map_lookup_elem(map_fd, next, value))
			continue;
		if (visit)
			visit(next, value, ctx);
		n++;
	}
	free(scratch);
	return n;
}

/* an array of maps of one slot, and the map it holds: updating the slot
 * returns after an RCU grace period (kernel/bpf/syscall.c,
 * maybe_wait_bpf_programs) */
static struct {
	int outer, inner;
	bool tried;
} grace = { -1, -1, false };

static void grace_open(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, o);

	grace.tried = true;
	grace.inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "aiscope_grace_in", 4, 4, 1, NULL);
	if (grace.inner < 0)
		return;
	o.inner_map_fd = grace.inner;
	grace.outer = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "aiscope_grace", 4, 4, 1, &o);
	if (grace.outer < 0) {
		close(grace.inner);
		grace.inner = -1;
	}
}

static bool grace_period(void)
{
	uint32_t slot = 0;

	if (!grace.tried)
		grace_open();
	if (grace.outer < 0)
		return false;
	return !bpf_map_update_elem(grace.outer, &slot, &grace.inner, BPF_ANY);
}

uint32_t map_epoch_close(volatile uint32_t *epoch, bool *waited)
{
	static bool warned;
	uint32_t closed = *epoch & 1;
	bool ok;

	*epoch = closed ^ 1;
	__sync_synchronize();
	ok = grace_period();
	if (!ok && !warned) {
		warned = true;
		fprintf(stderr, "%s: the kernel refused a map of maps (%s): an interval's figures are "
			"read without waiting for the programs still adding to them, which may be "
			"lost at its end\n", program_invocation_short_name, strerror(errno));
	}
	if (waited)
		*waited = ok;
	return closed;
}
