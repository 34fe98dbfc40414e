// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * A static executable that carries a CUDA runtime and driver of its own:
 * the test doubles of tests/cuda/double/ (the exact C ABI of the CUDA
 * calls gpulaunch probes, calls that succeed) linked in, as nvcc links a
 * static runtime into programs. It needs no shared library, so the VM
 * matrix (busybox, no dynamic loader) can run gpulaunch against it on each
 * architecture: discovery of a static runtime in an executable, argument
 * decoding (arm64: registers x0-x7 and the stack), nesting of runtime into
 * driver launches, names, --mem. Prints what it called as JSON lines.
 *
 * Usage: cudastatic [--wait] OP...   (--wait: print "ready PID", then wait
 * for SIGUSR1) OPs: launch launch13 getkernel cu_launch malloc:SIZE free
 * memcpy:KIND:SIZE a2a:WIDTH:HEIGHT (a device-to-device cudaMemcpy2DArrayToArray:
 * nine arguments, the last ones on the stack on both architectures) batch:N (a
 * cudaMemcpyBatchAsync of N copies of 10 bytes) sync_us:US reg
 */
#define GL_STATIC_DOUBLE 1
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "../cuda/double/cudart.c"
#include "../cuda/double/cuda.c"

const struct drv_fn gl_driver_fns[] = {
	{ "cuLaunchKernel", (void *)cuLaunchKernel },
	{ "cuMemAlloc_v2", (void *)cuMemAlloc_v2 },
	{ "cuMemFree_v2", (void *)cuMemFree_v2 },
	{ "cuMemcpyHtoD_v2", (void *)cuMemcpyHtoD_v2 },
	{ "cuMemcpyDtoH_v2", (void *)cuMemcpyDtoH_v2 },
	{ "cuMemcpyDtoD_v2", (void *)cuMemcpyDtoD_v2 },
	{ "cuStreamSynchronize", (void *)cuStreamSynchronize },
	{ NULL, NULL },
};

#include "../cuda/host_fns.h"

/* calls through pointers: the compiler must not inline the doubles */
static int (*volatile p_launch)(const void *, struct dim3, struct dim3, void **, size_t, void *) =
	cudaLaunchKernel;
static int (*volatile p_launch13)(const void *, struct dim3, struct dim3, void **, size_t,
				  void *) = __cudaLaunchKernel;
static void (*volatile p_register)(void **, const char *, char *, const char *, int, void *,
				   void *, void *, void *, int *) = __cudaRegisterFunction;
static int (*volatile p_get_kernel)(void **, const void *) = __cudaGetKernel;
static int (*volatile p_malloc)(void **, size_t) = cudaMalloc;
static int (*volatile p_free)(void *) = cudaFree;
static int (*volatile p_memcpy)(void *, const void *, size_t, int) = cudaMemcpy;
static int (*volatile p_sync)(void *) = cudaStreamSynchronize;
static int (*volatile p_a2a)(void *, size_t, size_t, const void *, size_t, size_t, size_t, size_t,
			     int) = cudaMemcpy2DArrayToArray;
static int (*volatile p_batch)(void *const *, const void *const *, const size_t *, size_t, void *,
			       size_t *, size_t, void *) = cudaMemcpyBatchAsync;
static int (*volatile p_cu_launch)(void *, unsigned int, unsigned int, unsigned int, unsigned int,
				   unsigned int, unsigned int, unsigned int, void *, void **,
				   void **) = cuLaunchKernel;

static void print_launch(const char *api, const void *func, int rc)
{
	printf("{\"api\":\"%s\",\"func\":\"%p\",\"grid\":[4,2,1],\"block\":[256,1,1],"
	       "\"smem\":1024,\"stream\":\"0x1234\",\"rc\":%d}\n", api, func, rc);
}

static void run_op(const char *op)
{
	static void *dptr;
	unsigned long long a = 0, b = 0;
	void *h = NULL, *args[1] = { NULL };
	static char buf[1 << 16];
	static char name[] = "_Z9reduceSumPfi";
	int rc;

	if (sscanf(op, "%*[^:]:%llu:%llu", &a, &b) < 1)
		a = b = 0;
	if (!strcmp(op, "launch")) {
		rc = p_launch((const void *)kernel_stub, grid, block, args, 1024, STREAM);
		print_launch("cudaLaunchKernel", (const void *)kernel_stub, rc);
	} else if (!strcmp(op, "launch13")) {
		rc = p_launch13((const void *)kernel_stub, grid, block, args, 1024, STREAM);
		print_launch("__cudaLaunchKernel", (const void *)kernel_stub, rc);
	} else if (!strcmp(op, "cu_launch")) {
		rc = p_cu_launch((void *)0xf00d, 4, 2, 1, 256, 1, 1, 1024, STREAM, NULL, NULL);
		print_launch("cuLaunchKernel", (void *)0xf00d, rc);
	} else if (!strcmp(op, "reg")) {
		p_register(NULL, (const char *)host_fn2, name, name, -1, NULL, NULL, NULL, NULL,
			   NULL);
		printf("{\"api\":\"__cudaRegisterFunction\",\"name\":\"%s\",\"rc\":0}\n", name);
	} else if (!strcmp(op, "getkernel")) {
		rc = p_get_kernel(&h, (const void *)host_fn2);
		rc |= p_launch13(h, grid, block, args, 1024, STREAM);
		print_launch("__cudaLaunchKernel", h, rc);
	} else if (!strncmp(op, "malloc:", 7)) {
		rc = p_malloc(&dptr, a);
		printf("{\"api\":\"cudaMalloc\",\"size\":%llu,\"rc\":%d}\n", a, rc);
	} else if (!strcmp(op, "free")) {
		rc = p_free(dptr);
		printf("{\"api\":\"cudaFree\",\"rc\":%d}\n", rc);
	} else if (!strncmp(op, "memcpy:", 7)) {
		rc = p_memcpy(buf, buf, b < sizeof(buf) ? b : sizeof(buf), (int)a);
		printf("{\"api\":\"cudaMemcpy\",\"kind\":%llu,\"size\":%llu,\"rc\":%d}\n", a, b, rc);
	} else if (!strncmp(op, "a2a:", 4)) {
		rc = p_a2a(buf, 1, 2, buf, 3, 4, a, b, 3);
		printf("{\"api\":\"cudaMemcpy2DArrayToArray\",\"bytes\":%llu,\"rc\":%d}\n", a * b, rc);
	} else if (!strncmp(op, "batch:", 6)) {
		static void *dsts[64];
		static const void *srcs[64];
		static size_t sizes[64];
		size_t idx = 0;

		a = a < 64 ? a : 64;
		for (unsigned i = 0; i < a; i++) {
			dsts[i] = buf;
			srcs[i] = buf + 4096;
			sizes[i] = 10;
		}
		rc = p_batch(dsts, srcs, sizes, a, NULL, &idx, 0, STREAM);
		printf("{\"api\":\"cudaMemcpyBatchAsync\",\"bytes\":%llu,\"rc\":%d}\n", 10 * a, rc);
	} else if (!strncmp(op, "sync_us:", 8)) {
		rc = p_sync((void *)(uintptr_t)a);
		printf("{\"api\":\"cudaStreamSynchronize\",\"rc\":%d}\n", rc);
	} else {
		fprintf(stderr, "cudastatic: unknown op '%s'\n", op);
		exit(2);
	}
	fflush(stdout);
}

int main(int argc, char **argv)
{
	int i = 1;

	signal(SIGUSR1, on_usr1);
	if (i < argc && !strcmp(argv[i], "--wait")) {
		sigset_t none;

		i++;
		printf("ready %d\n", getpid());
		fflush(stdout);
		sigemptyset(&none);
		while (!go)
			sigsuspend(&none);
	}
	for (; i < argc; i++)
		run_op(argv[i]);
	return 0;
}
