// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Calls the real CUDA libraries with sentinel arguments, for gpulaunch's
 * tests: the calls fail without a GPU (no driver, or no device), but the
 * uprobes fire, and every argument the tool decodes must equal what this
 * program passed. Each call is printed as one JSON line (the truth):
 *
 *	{"api":"cudaLaunchKernel","func":"0x5581...","grid":[4,2,1],
 *	 "block":[256,1,1],"smem":1024,"stream":"0x1234","rc":100}
 *
 * Usage: cudacall [--rt LIB] [--drv LIB] [--wait] [--pause MS] OP...
 *   --rt/--drv   the runtime and driver libraries to dlopen
 *   --wait       after loading, print "ready" and wait for SIGUSR1
 *   --pause MS   sleep MS after loading (a tool attaches meanwhile)
 *   --ready      after loading, print "ready PID" (and go on)
 * OPs: launch launch_ptsz launch_ex launch13 launch13_ptsz coop graph
 *      malloc:SIZE free memcpy:KIND:SIZE memcpy_async:KIND:SIZE
 *      sync_stream sync_device cu_launch cu_launch_ptsz cu_launch_ex
 *      cu_malloc:SIZE cu_free cu_htod:SIZE cu_dtoh:SIZE cu_dtod:SIZE
 *      loop:N (N cudaLaunchKernel calls, for benchmarks: prints the rate)
 *      rate:N:S (N cudaLaunchKernel a second for S seconds, with a failed
 *      cudaMalloc and a 1 MiB cudaMemcpy every tenth: a demo workload)
 *      sleep:MS sync_us:US (cudaStreamSynchronize of a stream handle US)
 *      done (prints {"done":true}: the calls before it have returned)
 *      reg (__cudaRegisterFunction of a host function under the name
 *      _Z9reduceSumPfi) getkernel (__cudaGetKernel of it, then
 *      __cudaLaunchKernel of the handle) cu_getfunc (cuModuleGetFunction of
 *      "_Z9reduceSumPfi", then cuLaunchKernel of the function)
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct dim3 {
	unsigned int x, y, z;
};

/* cudaLaunchConfig_t (CUDA 11.8 to 13.0): 56 bytes */
struct rt_config {
	struct dim3 grid, block;
	size_t smem;
	void *stream;
	void *attrs;
	unsigned int nattrs;
};

/* CUlaunchConfig */
struct drv_config {
	unsigned int gx, gy, gz, bx, by, bz, smem;
	void *stream;
	void *attrs;
	unsigned int nattrs;
};

typedef int (*launch_fn)(const void *, struct dim3, struct dim3, void **, size_t, void *);
typedef int (*launch_ex_fn)(const struct rt_config *, const void *, void **);
typedef int (*graph_fn)(void *, void *);
typedef int (*malloc_fn)(void **, size_t);
typedef int (*free_fn)(void *);
typedef int (*memcpy_fn)(void *, const void *, size_t, int);
typedef int (*memcpy_async_fn)(void *, const void *, size_t, int, void *);
typedef int (*sync_stream_fn)(void *);
typedef int (*sync_device_fn)(void);
typedef int (*cu_launch_fn)(void *, unsigned int, unsigned int, unsigned int, unsigned int,
			    unsigned int, unsigned int, unsigned int, void *, void **, void **);
typedef int (*cu_launch_ex_fn)(const struct drv_config *, void *, void **, void **);
typedef int (*cu_malloc_fn)(unsigned long long *, size_t);
typedef int (*cu_free_fn)(unsigned long long);
typedef int (*cu_copy_fn)(unsigned long long, const void *, size_t);
typedef void (*register_fn)(void **, const char *, char *, const char *, int, void *, void *,
			    void *, void *, int *);
typedef int (*get_kernel_fn)(void **, const void *);
typedef int (*get_func_fn)(void **, void *, const char *);

#include "host_fns.h"

#define FUNC_DRV ((void *)0xf00d)
static void *rt, *drv;

#define REG_NAME "_Z9reduceSumPfi"

static void *sym(void *lib, const char *name)
{
	void *p = lib ? dlsym(lib, name) : NULL;

	if (!p) {
		fprintf(stderr, "cudacall: %s not found\n", name);
		exit(3);
	}
	return p;
}

static void print_launch(const char *api, const void *func, struct dim3 g, struct dim3 b,
			 size_t smem, void *stream, int rc)
{
	printf("{\"api\":\"%s\",\"func\":\"%p\",\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u],"
	       "\"smem\":%zu,\"stream\":\"%p\",\"rc\":%d}\n", api, func, g.x, g.y, g.z, b.x, b.y,
	       b.z, smem, stream, rc);
}

static void print_simple(const char *api, const char *extra, int rc)
{
	printf("{\"api\":\"%s\"%s%s,\"rc\":%d}\n", api, extra[0] ? "," : "", extra, rc);
}

/* One function per API: every API is called from its own call site, as
 * in real programs (gpulaunch tells a nested call from the next one by
 * return addresses). */
#define DEF_LAUNCH(fn, api)							\
static __attribute__((noinline)) void fn(void)				\
{									\
	launch_fn f = sym(rt, api);					\
	void *args[1] = { NULL };					\
	int rc = f((const void *)kernel_stub, grid, block, args, 1024, STREAM); \
									\
	print_launch(api, (const void *)kernel_stub, grid, block, 1024, STREAM, rc); \
}
DEF_LAUNCH(launch_rt, "cudaLaunchKernel")
DEF_LAUNCH(launch_rt_ptsz, "cudaLaunchKernel_ptsz")
DEF_LAUNCH(launch_13, "__cudaLaunchKernel")
DEF_LAUNCH(launch_13_ptsz, "__cudaLaunchKernel_ptsz")
DEF_LAUNCH(launch_coop, "cudaLaunchCooperativeKernel")

static void do_launch_ex(void)
{
	launch_ex_fn f = sym(rt, "cudaLaunchKernelExC");
	struct rt_config c = { grid, block, 1024, STREAM, NULL, 0 };
	int rc = f(&c, (const void *)kernel_stub, NULL);

	print_launch("cudaLaunchKernelExC", (const void *)kernel_stub, grid, block, 1024,
		     STREAM, rc);
}

#define DEF_CU_LAUNCH(fn, api)							\
static __attribute__((noinline)) void fn(void)				\
{									\
	cu_launch_fn f = sym(drv, api);					\
	int rc = f(FUNC_DRV, 4, 2, 1, 256, 1, 1, 1024, STREAM, NULL, NULL); \
									\
	print_launch(api, FUNC_DRV, grid, block, 1024, STREAM, rc);	\
}
DEF_CU_LAUNCH(cu_launch, "cuLaunchKernel")
DEF_CU_LAUNCH(cu_launch_ptsz, "cuLaunchKernel_ptsz")

static void do_cu_launch_ex(void)
{
	cu_launch_ex_fn f = sym(drv, "cuLaunchKernelEx");
	struct drv_config c = { 4, 2, 1, 256, 1, 1, 1024, STREAM, NULL, 0 };
	int rc = f(&c, FUNC_DRV, NULL, NULL);

	print_launch("cuLaunchKernelEx", FUNC_DRV, grid, block, 1024, STREAM, rc);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* the benchmark loop: launches per second */
static void do_loop(long n)
{
	launch_fn f = sym(rt, "cudaLaunchKernel");
	void *args[1] = { NULL };
	double t0 = now_s(), t;
	int rc = 0;

	for (long i = 0; i < n; i++)
		rc = f((const void *)kernel_stub, grid, block, args, 1024, STREAM);
	t = now_s() - t0;
	printf("{\"api\":\"loop\",\"calls\":%ld,\"seconds\":%.6f,\"calls_per_sec\":%.1f,\"rc\":%d}\n",
	       n, t, n / t, rc);
}

/* the demo workload: N launches a second for S seconds */
static void do_rate(long n, long secs)
{
	launch_fn f = sym(rt, "cudaLaunchKernel");
	malloc_fn m = sym(rt, "cudaMalloc");
	memcpy_fn c = sym(rt, "cudaMemcpy");
	static char buf[1 << 20];
	void *args[1] = { NULL }, *p;
	long total = n * secs;
	int rc = 0;

	for (long i = 0; i < total; i++) {
		rc = f((const void *)kernel_stub, grid, block, args, 1024, STREAM);
		if (i % 10 == 0) {
			m(&p, 4096);
			c(buf, buf, sizeof(buf), 1);
		}
		usleep(1000000 / (n ? n : 1));
	}
	printf("{\"api\":\"rate\",\"calls\":%ld,\"rc\":%d}\n", total, rc);
}

/* the ops that are one launch, each through its own call site */
static const struct {
	const char *op;
	void (*fn)(void);
} launch_ops[] = {
	{ "launch", launch_rt }, { "launch_ptsz", launch_rt_ptsz }, { "launch13", launch_13 },
	{ "launch13_ptsz", launch_13_ptsz }, { "coop", launch_coop }, { "launch_ex", do_launch_ex },
	{ "cu_launch", cu_launch }, { "cu_launch_ptsz", cu_launch_ptsz },
	{ "cu_launch_ex", do_cu_launch_ex },
};

static void run_op(const char *op)
{
	static void *dptr_rt;
	static unsigned long long dptr_drv;
	char extra[128], *host = NULL;
	unsigned long long a = 0, b = 0;
	int rc;

	if (sscanf(op, "%*[^:]:%llu:%llu", &a, &b) < 1)
		a = b = 0;
	for (size_t i = 0; i < sizeof(launch_ops) / sizeof(launch_ops[0]); i++) {
		if (!strcmp(op, launch_ops[i].op)) {
			launch_ops[i].fn();
			fflush(stdout);
			return;
		}
	}
	if (!strcmp(op, "graph")) {
		rc = ((graph_fn)sym(rt, "cudaGraphLaunch"))((void *)0x6a6a, STREAM);
		print_simple("cudaGraphLaunch", "\"stream\":\"0x1234\"", rc);
	} else if (!strncmp(op, "malloc:", 7)) {
		dptr_rt = (void *)0x77;
		rc = ((malloc_fn)sym(rt, "cudaMalloc"))(&dptr_rt, a);
		snprintf(extra, sizeof(extra), "\"size\":%llu,\"ptr\":\"%p\"", a, dptr_rt);
		print_simple("cudaMalloc", extra, rc);
	} else if (!strcmp(op, "free")) {
		rc = ((free_fn)sym(rt, "cudaFree"))(dptr_rt);
		snprintf(extra, sizeof(extra), "\"ptr\":\"%p\"", dptr_rt);
		print_simple("cudaFree", extra, rc);
	} else if (!strncmp(op, "memcpy:", 7) || !strncmp(op, "memcpy_async:", 13)) {
		bool async = op[6] == '_';

		host = calloc(1, b ? b : 1);
		if (async)
			rc = ((memcpy_async_fn)sym(rt, "cudaMemcpyAsync"))(host, host, b, (int)a,
									   STREAM);
		else
			rc = ((memcpy_fn)sym(rt, "cudaMemcpy"))(host, host, b, (int)a);
		snprintf(extra, sizeof(extra), "\"kind\":%llu,\"size\":%llu", a, b);
		print_simple(async ? "cudaMemcpyAsync" : "cudaMemcpy", extra, rc);
		free(host);
	} else if (!strcmp(op, "sync_stream")) {
		rc = ((sync_stream_fn)sym(rt, "cudaStreamSynchronize"))(STREAM);
		print_simple("cudaStreamSynchronize", "", rc);
	} else if (!strcmp(op, "sync_device")) {
		rc = ((sync_device_fn)sym(rt, "cudaDeviceSynchronize"))();
		print_simple("cudaDeviceSynchronize", "", rc);
	} else if (!strncmp(op, "cu_malloc:", 10)) {
		dptr_drv = 0x99;
		rc = ((cu_malloc_fn)sym(drv, "cuMemAlloc_v2"))(&dptr_drv, a);
		snprintf(extra, sizeof(extra), "\"size\":%llu,\"ptr\":\"0x%llx\"", a, dptr_drv);
		print_simple("cuMemAlloc_v2", extra, rc);
	} else if (!strcmp(op, "cu_free")) {
		rc = ((cu_free_fn)sym(drv, "cuMemFree_v2"))(dptr_drv);
		print_simple("cuMemFree_v2", "", rc);
	} else if (!strncmp(op, "cu_htod:", 8) || !strncmp(op, "cu_dtoh:", 8) ||
		   !strncmp(op, "cu_dtod:", 8)) {
		static const char *const names[] = { "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2",
						     "cuMemcpyDtoD_v2" };
		int k = op[3] == 'h' ? 0 : op[6] == 'h' ? 1 : 2;

		host = calloc(1, a ? a : 1);
		rc = ((cu_copy_fn)sym(drv, names[k]))(0x5000, host, a);
		snprintf(extra, sizeof(extra), "\"size\":%llu", a);
		print_simple(names[k], extra, rc);
		free(host);
	} else if (!strncmp(op, "loop:", 5)) {
		do_loop((long)a);
	} else if (!strncmp(op, "rate:", 5)) {
		do_rate((long)a, (long)b);
	} else if (!strncmp(op, "sleep:", 6)) {
		usleep(a * 1000);
	} else if (!strcmp(op, "done")) {
		printf("{\"done\":true}\n");
	} else if (!strncmp(op, "sync_us:", 8)) {
		rc = ((sync_stream_fn)sym(rt, "cudaStreamSynchronize"))((void *)(uintptr_t)a);
		snprintf(extra, sizeof(extra), "\"wait_us\":%llu", a);
		print_simple("cudaStreamSynchronize", extra, rc);
	} else if (!strcmp(op, "reg")) {
		static char name[] = REG_NAME;
		static void *fatbin;

		((register_fn)sym(rt, "__cudaRegisterFunction"))(&fatbin, (const char *)host_fn2,
								  name, name, -1, NULL, NULL,
								  NULL, NULL, NULL);
		snprintf(extra, sizeof(extra), "\"func\":\"%p\",\"name\":\"%s\"",
			 (void *)host_fn2, name);
		print_simple("__cudaRegisterFunction", extra, 0);
	} else if (!strcmp(op, "getkernel")) {
		void *h = NULL, *args[1] = { NULL };

		rc = ((get_kernel_fn)sym(rt, "__cudaGetKernel"))(&h, (const void *)host_fn2);
		snprintf(extra, sizeof(extra), "\"func\":\"%p\",\"handle\":\"%p\"",
			 (void *)host_fn2, h);
		print_simple("__cudaGetKernel", extra, rc);
		rc = ((launch_fn)sym(rt, "__cudaLaunchKernel"))(h, grid, block, args, 1024, STREAM);
		print_launch("__cudaLaunchKernel", h, grid, block, 1024, STREAM, rc);
	} else if (!strcmp(op, "cu_getfunc")) {
		void *f = NULL;

		rc = ((get_func_fn)sym(drv, "cuModuleGetFunction"))(&f, (void *)0x30d, REG_NAME);
		snprintf(extra, sizeof(extra), "\"function\":\"%p\",\"name\":\"%s\"", f,
			 REG_NAME);
		print_simple("cuModuleGetFunction", extra, rc);
		rc = ((cu_launch_fn)sym(drv, "cuLaunchKernel"))(f, 4, 2, 1, 256, 1, 1, 1024, STREAM,
								NULL, NULL);
		print_launch("cuLaunchKernel", f, grid, block, 1024, STREAM, rc);
	} else {
		fprintf(stderr, "cudacall: unknown op '%s'\n", op);
		exit(2);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *rt_path = NULL, *drv_path = NULL;
	bool wait = false, ready = false;
	long pause_ms = 0;
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--rt") && i + 1 < argc)
			rt_path = argv[++i];
		else if (!strcmp(argv[i], "--drv") && i + 1 < argc)
			drv_path = argv[++i];
		else if (!strcmp(argv[i], "--wait"))
			wait = true;
		else if (!strcmp(argv[i], "--ready"))
			ready = true;
		else if (!strcmp(argv[i], "--pause") && i + 1 < argc)
			pause_ms = atol(argv[++i]);
		else {
			fprintf(stderr, "cudacall: bad option '%s'\n", argv[i]);
			return 2;
		}
	}
	if (rt_path && !(rt = dlopen(rt_path, RTLD_NOW | RTLD_GLOBAL))) {
		fprintf(stderr, "cudacall: %s\n", dlerror());
		return 3;
	}
	if (drv_path && !(drv = dlopen(drv_path, RTLD_NOW | RTLD_GLOBAL))) {
		fprintf(stderr, "cudacall: %s\n", dlerror());
		return 3;
	}
	signal(SIGUSR1, on_usr1);
	if (ready && !wait) {
		printf("ready %d\n", getpid());
		fflush(stdout);
	}
	if (wait) {
		sigset_t none;

		printf("ready %d\n", getpid());
		fflush(stdout);
		sigemptyset(&none);
		while (!go)
			sigsuspend(&none);
	}
	if (pause_ms)
		usleep(pause_ms * 1000);
	for (; i < argc; i++)
		run_op(argv[i]);
	return 0;
}
