// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <bpf/bpf.h>
#include "mapdrain.h"

int map_drain(int map_fd, size_t key_size, size_t value_size,
	      map_drain_want_fn want, map_drain_take_fn take, void *ctx)
{
	char *keys = NULL, *scratch, *cur, *next, *value;
	size_t nkeys = 0, kcap = 0;
	bool oom = false;
	void *prev = NULL;
	int n = 0;

	/* the iteration's two keys and the value, in one allocation */
	scratch = malloc(2 * key_size + value_size);
	if (!scratch)
		return -ENOMEM;
	cur = scratch;
	next = scratch + key_size;
	value = scratch + 2 * key_size;
	/*
	 * Collect first, delete after: deleting the key just returned would
	 * make the next bpf_map_get_next_key() restart from the first bucket
	 * and walk the map again.
	 */
	while (!bpf_map_get_next_key(map_fd, prev, next)) {
		memcpy(cur, next, key_size);
		prev = cur;
		if (want && !want(next, ctx))
			continue;
		if (nkeys == kcap) {
			size_t cap = kcap ? kcap * 2 : 256;
			char *k = realloc(keys, cap * key_size);

			if (!k) {
				oom = true;
				break;
			}
			keys = k;
			kcap = cap;
		}
		memcpy(keys + nkeys++ * key_size, next, key_size);
	}
	for (size_t i = 0; i < nkeys; i++) {
		const char *k = keys + i * key_size;

		/* gone since collected (the map's owner deleted it): skip */
		if (bpf_map_lookup_elem(map_fd, k, value))
			continue;
		bpf_map_delete_elem(map_fd, k);
		take(k, value, ctx);
		n++;
	}
	free(keys);
	free(scratch);
	return oom ? -ENOMEM : n;
}
