// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The cost of one gpulaunch metrics publish (man gpulaunch(8), OVERHEAD):
 * the families of --latency --mem for N cgroups with Kubernetes-length
 * paths and container ids, both layers and three copy directions, filled
 * as one interval fills them (cgroup labels parsed per row), rendered and
 * written as --prometheus writes FILE. Prints the medians of 21 rounds.
 *
 *	make && cc -O2 -Ilib -Iinclude -Ibuild scripts/bench/gpulaunch-metrics.c \
 *		build/libaiscope.a -lbpf -lelf -lz -o build/gpulaunch-metrics
 *	build/gpulaunch-metrics 100 /var/tmp/gpulaunch.prom
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "metrics.h"
#include "prom.h"
#include "hist.h"

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 0, reps = 21;
	const char *file = argc > 2 ? argv[2] : NULL;
	static const char *const ll[] = { "cgroup", "container_id", "pod_uid", "layer", NULL };
	static const char *const dl[] = { "cgroup", "container_id", "pod_uid", "direction", NULL };
	static const char *const cl[] = { "cgroup", "container_id", "pod_uid", NULL };
	static const char *const dirs[] = { "h2d", "d2h", "d2d" };
	uint64_t b[PROM_MAX_BOUNDS];
	int nb = prom_log2_bounds(b, PROM_MAX_BOUNDS, 10, 36);
	struct prom_reg *r = prom_reg_new();
	struct prom_family *la = prom_counter(r, "aiscope_gpulaunch_launches_total", "x", ll);
	struct prom_family *le = prom_counter(r, "aiscope_gpulaunch_launch_errors_total", "x", ll);
	struct prom_family *lh = prom_histogram(r, "aiscope_gpulaunch_launch_latency_seconds", "x", ll, b, nb, 9);
	struct prom_family *a1 = prom_counter(r, "aiscope_gpulaunch_allocations_total", "x", cl);
	struct prom_family *a2 = prom_counter(r, "aiscope_gpulaunch_allocation_failures_total", "x", cl);
	struct prom_family *a3 = prom_counter(r, "aiscope_gpulaunch_allocated_bytes_total", "x", cl);
	struct prom_family *og = prom_gauge(r, "aiscope_gpulaunch_outstanding_bytes", "x", cl);
	struct prom_family *cp = prom_counter(r, "aiscope_gpulaunch_copies_total", "x", dl);
	struct prom_family *cb = prom_counter(r, "aiscope_gpulaunch_copied_bytes_total", "x", dl);
	struct prom_family *sh = prom_histogram(r, "aiscope_gpulaunch_sync_wait_seconds", "x", cl, b, nb, 9);
	char (*paths)[128];
	double tadd[64], tren[64], twr[64];
	struct hist h;
	size_t len = 0;
	int lines = 0;

	if (n < 1 || !file) {
		fprintf(stderr, "usage: gpulaunch-metrics CGROUPS FILE\n");
		return 2;
	}
	paths = calloc(n, 128);
	if (!r || !paths)
		return 1;
	hist_reset(&h);
	for (int i = 0; i < 200; i++)
		hist_add_value(&h, 1000 + i * 997);
	for (int i = 0; i < n; i++)
		snprintf(paths[i], 128, "/kubepods/burstable/pod%08x-1111-2222-3333-444455556666/"
			 "%064x", i, i * 2654435761u);
	for (int k = 0; k < reps; k++) {
		double t0 = now(), t1, t2, t3;
		char *text;

		prom_reg_set_time(r, k * 1000000000ULL);
		for (int i = 0; i < n; i++) {
			const char *v[4];
			struct container_info ci;

			aiscope_cgroup_path_values(paths[i], v, &ci);
			for (int y = 0; y < 2; y++) {
				v[3] = y ? "driver" : "runtime";
				prom_counter_add(la, v, 100);
				prom_counter_add(le, v, 1);
				prom_hist_add(lh, v, &h);
			}
			prom_counter_add(a1, v, 3);
			prom_counter_add(a2, v, 1);
			prom_counter_add(a3, v, 4096);
			prom_gauge_set(og, v, 12288);
			prom_hist_add(sh, v, &h);
			for (int d = 0; d < 3; d++) {
				v[3] = dirs[d];
				prom_counter_add(cp, v, 2);
				prom_counter_add(cb, v, 512);
			}
		}
		t1 = now();
		text = prom_render(r, &len);
		t2 = now();
		prom_write_file(file, text, len);
		t3 = now();
		if (!k)
			for (size_t j = 0; j < len; j++)
				lines += text[j] == '\n';
		free(text);
		tadd[k] = t1 - t0;
		tren[k] = t2 - t1;
		twr[k] = t3 - t2;
	}
	qsort(tadd, reps, sizeof(double), cmp);
	qsort(tren, reps, sizeof(double), cmp);
	qsort(twr, reps, sizeof(double), cmp);
	printf("cgroups %d: %u+%u+%u... series, %d lines, %zu bytes; median of %d: adds %.3f ms, render %.3f ms, write+rename %.3f ms\n",
	       n, prom_series_count(la), prom_series_count(lh), prom_series_count(cp), lines, len, reps,
	       tadd[reps / 2] * 1e3, tren[reps / 2] * 1e3, twr[reps / 2] * 1e3);
	return 0;
}
