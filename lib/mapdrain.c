// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
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
