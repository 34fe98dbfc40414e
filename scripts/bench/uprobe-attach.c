// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Attach and detach time of N uprobes on N functions of one library, as
 * N single uprobe links (one perf event each, what libbpf before 1.2 and
 * kernels before 6.6 give) and as one uprobe_multi link (what gpulaunch and
 * nclstat use where the kernel has it). Each round calls the N functions
 * once with the probes attached and checks that the program counted N
 * hits, so a round that attached nothing cannot pass as fast.
 *
 * Usage: uprobe-attach LIB N ROUNDS   (LIB exports aiscope_bench_f0 .. _f<N-1>, int(int))
 * Prints one line per mode: mode attach_ms detach_ms (medians) rounds.
 * Built and run by scripts/bench/uprobe-attach.sh.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <bpf/libbpf.h>
#include "uprobe-attach.skel.h"

typedef int (*fn_t)(int);

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* calls every function once: the probes must count exactly n */
static int call_all(fn_t *fns, int n, struct uprobe_attach_bpf *skel)
{
	int i, sum = 0;

	skel->bss->hits = 0;
	for (i = 0; i < n; i++)
		sum += fns[i](i);
	if (skel->bss->hits != (__u64)n) {
		fprintf(stderr, "uprobe-attach: %llu hits for %d calls\n",
			(unsigned long long)skel->bss->hits, n);
		return -1;
	}
	return sum;
}

static int round_single(struct uprobe_attach_bpf *skel, const char *lib, fn_t *fns,
			int n, double *att, double *det)
{
	struct bpf_link **links = calloc(n, sizeof(*links));
	char name[32];
	double t0;
	int i, err = 0;

	if (!links)
		return -ENOMEM;
	t0 = now_ms();
	for (i = 0; i < n; i++) {
		LIBBPF_OPTS(bpf_uprobe_opts, opts, .func_name = name);

		snprintf(name, sizeof(name), "aiscope_bench_f%d", i);
		links[i] = bpf_program__attach_uprobe_opts(skel->progs.count_single, -1,
							   lib, 0, &opts);
		if (!links[i]) {
			err = -errno;
			fprintf(stderr, "uprobe-attach: single uprobe on %s: %s\n", name,
				strerror(errno));
			break;
		}
	}
	*att = now_ms() - t0;
	if (!err && call_all(fns, n, skel) < 0)
		err = -EINVAL;
	t0 = now_ms();
	for (i = 0; i < n; i++)
		bpf_link__destroy(links[i]);
	*det = now_ms() - t0;
	free(links);
	return err;
}

static int round_multi(struct uprobe_attach_bpf *skel, const char *lib, fn_t *fns,
		       int n, double *att, double *det)
{
	struct bpf_link *link;
	double t0;
	int err = 0;

	t0 = now_ms();
	link = bpf_program__attach_uprobe_multi(skel->progs.count_multi, -1, lib,
						"aiscope_bench_f*", NULL);
	*att = now_ms() - t0;
	if (!link) {
		fprintf(stderr, "uprobe-attach: uprobe_multi link: %s\n", strerror(errno));
		return -errno;
	}
	if (call_all(fns, n, skel) < 0)
		err = -EINVAL;
	t0 = now_ms();
	bpf_link__destroy(link);
	*det = now_ms() - t0;
	return err;
}

int main(int argc, char **argv)
{
	struct uprobe_attach_bpf *skel;
	double *att, *det;
	fn_t *fns;
	void *dl;
	int n, rounds, r, i, multi;

	if (argc != 4 || (n = atoi(argv[2])) < 1 || (rounds = atoi(argv[3])) < 1) {
		fprintf(stderr, "usage: uprobe-attach LIB N ROUNDS\n");
		return 2;
	}
	dl = dlopen(argv[1], RTLD_NOW);
	fns = calloc(n, sizeof(*fns));
	att = calloc(rounds, sizeof(*att));
	det = calloc(rounds, sizeof(*det));
	if (!dl || !fns || !att || !det) {
		fprintf(stderr, "uprobe-attach: %s\n", dl ? "out of memory" : dlerror());
		return 1;
	}
	for (i = 0; i < n; i++) {
		char name[32];

		snprintf(name, sizeof(name), "aiscope_bench_f%d", i);
		fns[i] = (fn_t)dlsym(dl, name);
		if (!fns[i]) {
			fprintf(stderr, "uprobe-attach: %s has no %s\n", argv[1], name);
			return 1;
		}
	}
	skel = uprobe_attach_bpf__open_and_load();
	if (!skel) {
		fprintf(stderr, "uprobe-attach: loading the program: %s\n", strerror(errno));
		return 1;
	}
	for (multi = 0; multi <= 1; multi++) {
		for (r = 0; r < rounds; r++) {
			int err = multi ? round_multi(skel, argv[1], fns, n, &att[r], &det[r])
					: round_single(skel, argv[1], fns, n, &att[r], &det[r]);
			if (err)
				break;
		}
		if (r < rounds) {
			printf("%s - - 0\n", multi ? "uprobe_multi" : "single");
			continue;
		}
		printf("%s %.2f %.2f %d\n", multi ? "uprobe_multi" : "single",
		       median(att, rounds), median(det, rounds), rounds);
		fflush(stdout);
	}
	uprobe_attach_bpf__destroy(skel);
	return 0;
}
