/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Drain a BPF hash map once an interval: every wanted key is collected
 * first, then each is looked up, deleted and handed to the caller.
 *
 *	static bool closed_epoch(const void *k, void *ctx)
 *	{ return ((const struct my_key *)k)->epoch == *(uint32_t *)ctx; }
 *	static void take(const void *k, const void *v, void *ctx) { ... }
 *
 *	map_drain(fd, sizeof(struct my_key), sizeof(struct my_val),
 *		  closed_epoch, take, &closed);
 *
 * Only maps whose value is value_size bytes (no per-CPU hash maps: no
 * drained map of a tool is one).
 *
 * map_walk() visits every entry and deletes none; map_keys() collects the
 * keys, for a caller that decides later what to delete. Never delete the
 * key just returned while walking (see map_drain()).
 */
#ifndef AISCOPE_MAPDRAIN_H
#define AISCOPE_MAPDRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* want(key, ctx): drain this key (NULL: every key) */
typedef bool (*map_drain_want_fn)(const void *key, void *ctx);
/* take(key, value, ctx): one drained entry, already deleted from the map */
typedef void (*map_drain_take_fn)(const void *key, const void *value, void *ctx);
/* visit(key, value, ctx): one entry, left in the map */
typedef void (*map_walk_fn)(const void *key, const void *value, void *ctx);

/*
 * Returns the number of entries handed to take (NULL: deleted only), or
 * -ENOMEM when memory ran out: the keys collected until then are still
 * drained, the rest wait in the map for the next drain.
 */
int map_drain(int map_fd, size_t key_size, size_t value_size,
	      map_drain_want_fn want, map_drain_take_fn take, void *ctx);

/* Every entry (value_size 0: keys only, value NULL; visit NULL: counts).
 * Returns the entries visited, or -ENOMEM. */
int map_walk(int map_fd, size_t key_size, size_t value_size, map_walk_fn visit, void *ctx);
/* The keys that want accepts (NULL: all), *n of them in a malloc'd array
 * (NULL when none); *oom when memory ran out before the walk's end. */
void *map_keys(int map_fd, size_t key_size, map_drain_want_fn want, void *ctx, size_t *n,
	       bool *oom);

/*
 * Closes the interval of a map that programs fill by epoch: *epoch (a
 * variable of the BPF object's mmap'd .bss that its programs put in their
 * keys) flips between 0 and 1, and the call returns the closed one once
 * every program run that may have read the old value has ended. A drain of
 * the closed epoch after it sees every update made in it; without the wait
 * a run still adding to a row it looked up before the flip (a uprobe
 * program preempted there, on 6.x+ kernels) adds after the drain, to a
 * deleted element that a preallocated hash map hands at once to another
 * key: lost from one row and added to another.
 *
 * The wait is an RCU grace period, taken by an update of a map of maps
 * (the kernel waits for every running non-sleepable program before such
 * an update returns). Returns the closed epoch; *waited, if given, false
 * when the kernel refused the maps (said once on stderr).
 */
uint32_t map_epoch_close(volatile uint32_t *epoch, bool *waited);

#endif
