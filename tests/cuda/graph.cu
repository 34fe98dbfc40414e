// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * CUDA graphs for gpulaunch's tests, built every way an application does:
 * kernel nodes added one by one (cudaGraphAddKernelNode, cudaGraphAddNode),
 * launches captured from a stream that forks work to a second stream and
 * joins it back through events (PyTorch's multi-stream capture), a graph
 * launch captured into a graph, child graphs, a clone taken before its
 * source changed, and the driver's own calls (cuGraphCreate,
 * cuGraphAddKernelNode_v2, cuStreamBeginCapture_v2 with cuLaunchKernel,
 * cuGraphAddChildGraphNode, cuGraphInstantiateWithFlags, cuGraphLaunch) on
 * a function of a PTX module. Between them, launches made directly, one
 * of them on the second stream right after its capture ended.
 *
 * It prints the truth, from what it built: the launches each kernel got
 * through graph launches and directly, the graph launches made, and (with
 * --wait) those of a graph instantiated before gpulaunch attached, whose
 * kernels gpulaunch cannot know:
 *
 *	{"pid":1234}
 *	{"kernel":"gk_scale(float*, int)","via":"graph","launches":24}
 *	{"graph_launches":16,"unknown_graph_launches":2}
 *
 * Against the test doubles (tests/cuda/double/) every call succeeds; on a
 * GPU (scripts/gpu-check.sh) the kernels run. Usage:
 *	graph_shared [--wait] [sleep:MS]
 * --wait: make and instantiate one graph, print "ready PID", wait for
 * SIGUSR1, then the rest; sleep:MS: stay MS ms after the calls.
 *	graph_shared events:N
 * only N cudaEventRecord calls on a stream that does not capture, timed:
 * {"event_records":N,"ns_per_call":X} (what the capture-join probes cost
 * an application that captures nothing).
 */
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <dlfcn.h>
#include <unistd.h>
#include <cuda.h>
#include <cuda_runtime.h>

__global__ void gk_scale(float *x, int n)
{
	if (x && (int)threadIdx.x < n)
		x[threadIdx.x] *= 2;
}

__global__ void gk_add(float *x, int n)
{
	if (x && (int)threadIdx.x < n)
		x[threadIdx.x] += 1;
}

__global__ void gk_side(float *x, int n)
{
	if (x && (int)threadIdx.x < n)
		x[threadIdx.x] -= 1;
}

__global__ void gk_norm(float *x, int n)
{
	if (x && (int)threadIdx.x < n)
		x[threadIdx.x] = 0;
}

/* the driver's kernel: a PTX module any GPU of sm_50 on JIT-compiles */
static const char ptx[] =
	".version 7.0\n.target sm_50\n.address_size 64\n"
	".visible .entry gk_drv(.param .u64 p)\n{\n\tret;\n}\n";

static struct {
	const char *kernel, *via;
	long n;
} tally[16];
static int ntally;
static long graph_launches, unknown_launches;

static void count(const char *kernel, const char *via, long n)
{
	for (int i = 0; i < ntally; i++) {
		if (!strcmp(tally[i].kernel, kernel) && !strcmp(tally[i].via, via)) {
			tally[i].n += n;
			return;
		}
	}
	tally[ntally].kernel = kernel;
	tally[ntally].via = via;
	tally[ntally++].n = n;
}

static int fails;

static void ok(const char *what, int rc)
{
	if (!rc)
		return;
	fprintf(stderr, "graph: %s: %d\n", what, rc);
	fails++;
}

static volatile sig_atomic_t go;

static void on_usr1(int sig)
{
	go = 1;
}

static float *buf;
static int n = 32;
static void *args[] = { &buf, &n };

static cudaKernelNodeParams kparams(void *func, unsigned int gx, unsigned int bx, unsigned int smem)
{
	cudaKernelNodeParams p = {};

	p.func = func;
	p.gridDim = dim3(gx, 1, 1);
	p.blockDim = dim3(bx, 1, 1);
	p.sharedMemBytes = smem;
	p.kernelParams = args;
	return p;
}

static void launch(cudaGraphExec_t x, cudaStream_t s, long times)
{
	for (long i = 0; i < times; i++)
		ok("cudaGraphLaunch", cudaGraphLaunch(x, s));
	graph_launches += times;
}

/* the driver's part, through libcuda.so.1 as an application that uses both
 * APIs reaches it */
typedef CUresult (*load_fn)(CUmodule *, const void *);
typedef CUresult (*getfn_fn)(CUfunction *, CUmodule, const char *);
typedef CUresult (*gcreate_fn)(CUgraph *, unsigned int);
typedef CUresult (*addk_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t,
			    const CUDA_KERNEL_NODE_PARAMS *);
typedef CUresult (*begin_fn)(CUstream, CUstreamCaptureMode);
typedef CUresult (*end_fn)(CUstream, CUgraph *);
typedef CUresult (*launchk_fn)(CUfunction, unsigned int, unsigned int, unsigned int,
			       unsigned int, unsigned int, unsigned int, unsigned int, CUstream,
			       void **, void **);
typedef CUresult (*child_fn)(CUgraphNode *, CUgraph, const CUgraphNode *, size_t, CUgraph);
typedef CUresult (*inst_fn)(CUgraphExec *, CUgraph, unsigned long long);
typedef CUresult (*glaunch_fn)(CUgraphExec, CUstream);

static void *drv(void *h, const char *name)
{
	void *f = dlsym(h, name);

	if (!f) {
		fprintf(stderr, "graph: no %s in libcuda.so.1\n", name);
		exit(1);
	}
	return f;
}

static void driver_graph(cudaStream_t s)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW);
	CUmodule mod;
	CUfunction f;
	CUgraph g5, g6;
	CUgraphNode node;
	CUgraphExec x5;
	CUDA_KERNEL_NODE_PARAMS p = {};

	if (!h) {
		fprintf(stderr, "graph: no libcuda.so.1: %s\n", dlerror());
		exit(1);
	}
	ok("cuModuleLoadData", ((load_fn)drv(h, "cuModuleLoadData"))(&mod, ptx));
	ok("cuModuleGetFunction", ((getfn_fn)drv(h, "cuModuleGetFunction"))(&f, mod, "gk_drv"));
	ok("cuGraphCreate", ((gcreate_fn)drv(h, "cuGraphCreate"))(&g5, 0));
	p.func = f;
	p.gridDimX = 2, p.gridDimY = p.gridDimZ = 1;
	p.blockDimX = 64, p.blockDimY = p.blockDimZ = 1;
	p.kernelParams = args;
	ok("cuGraphAddKernelNode_v2",
	   ((addk_fn)drv(h, "cuGraphAddKernelNode_v2"))(&node, g5, NULL, 0, &p));
	ok("cuStreamBeginCapture_v2", ((begin_fn)drv(h, "cuStreamBeginCapture_v2"))(
		(CUstream)s, CU_STREAM_CAPTURE_MODE_GLOBAL));
	for (int i = 0; i < 2; i++)
		ok("cuLaunchKernel", ((launchk_fn)drv(h, "cuLaunchKernel"))(
			f, 3, 1, 1, 32, 1, 1, 0, (CUstream)s, args, NULL));
	ok("cuStreamEndCapture", ((end_fn)drv(h, "cuStreamEndCapture"))((CUstream)s, &g6));
	ok("cuGraphAddChildGraphNode",
	   ((child_fn)drv(h, "cuGraphAddChildGraphNode"))(&node, g5, NULL, 0, g6));
	ok("cuGraphInstantiateWithFlags",
	   ((inst_fn)drv(h, "cuGraphInstantiateWithFlags"))(&x5, g5, 0));
	for (int i = 0; i < 5; i++)
		ok("cuGraphLaunch", ((glaunch_fn)drv(h, "cuGraphLaunch"))(x5, (CUstream)s));
	graph_launches += 5;
	count("gk_drv", "graph", 3 * 5);
}

static int time_events(long calls)
{
	struct timespec a, b;
	cudaStream_t s;
	cudaEvent_t e;

	ok("cudaStreamCreate", cudaStreamCreate(&s));
	ok("cudaEventCreate", cudaEventCreate(&e));
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < calls; i++)
		ok("cudaEventRecord", cudaEventRecord(e, s));
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("{\"event_records\":%ld,\"ns_per_call\":%.1f}\n", calls,
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / calls);
	return fails ? 1 : 0;
}

int main(int argc, char **argv)
{
	bool wait = argc > 1 && !strcmp(argv[1], "--wait");
	long stay = 0;
	cudaGraph_t g0, g1, g2, g3, g4;
	cudaGraphExec_t x0 = NULL, x1, x2, x4;
	cudaGraphNode_t node, prev;
	cudaStream_t s1, s2;
	cudaEvent_t e1, e2;
	cudaKernelNodeParams p;
	cudaGraphNodeParams np = {};

	for (int i = 1; i < argc; i++)
		if (!strncmp(argv[i], "sleep:", 6))
			stay = atol(argv[i] + 6);
	if (argc > 1 && !strncmp(argv[1], "events:", 7))
		return time_events(atol(argv[1] + 7));
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("{\"pid\":%d}\n", (int)getpid());
	ok("cudaMalloc", cudaMalloc((void **)&buf, n * sizeof(float)));
	ok("cudaStreamCreate", cudaStreamCreate(&s1));
	ok("cudaStreamCreate", cudaStreamCreate(&s2));
	ok("cudaEventCreate", cudaEventCreate(&e1));
	ok("cudaEventCreate", cudaEventCreate(&e2));

	/* made before gpulaunch attaches: its launches are [graph] there */
	if (wait) {
		signal(SIGUSR1, on_usr1);
		ok("cudaGraphCreate", cudaGraphCreate(&g0, 0));
		p = kparams((void *)gk_norm, 3, 32, 0);
		ok("cudaGraphAddKernelNode", cudaGraphAddKernelNode(&node, g0, NULL, 0, &p));
		ok("cudaGraphInstantiate", cudaGraphInstantiate(&x0, g0, 0));
		printf("ready %d\n", (int)getpid());
		while (!go)
			usleep(1000);
	}

	/* nodes one by one: gk_scale twice (a chain), gk_add through the
	 * generic cudaGraphAddNode */
	ok("cudaGraphCreate", cudaGraphCreate(&g1, 0));
	p = kparams((void *)gk_scale, 8, 128, 0);
	ok("cudaGraphAddKernelNode", cudaGraphAddKernelNode(&prev, g1, NULL, 0, &p));
	ok("cudaGraphAddKernelNode", cudaGraphAddKernelNode(&node, g1, &prev, 1, &p));
	np.type = cudaGraphNodeTypeKernel;
	np.kernel.func = (void *)gk_add;
	np.kernel.gridDim = dim3(16, 1, 1);
	np.kernel.blockDim = dim3(64, 1, 1);
	np.kernel.sharedMemBytes = 256;
	np.kernel.kernelParams = args;
	prev = node;
	ok("cudaGraphAddNode", cudaGraphAddNode(&node, g1, &prev, NULL, 1, &np));
	ok("cudaGraphInstantiate", cudaGraphInstantiate(&x1, g1, 0));
	launch(x1, s1, 3);
	count("gk_scale(float*, int)", "graph", 2 * 3);
	count("gk_add(float*, int)", "graph", 3);

	/* captured: s1 forks gk_side twice to s2 and joins it back; g1's
	 * graph launch is captured too */
	ok("cudaStreamBeginCapture", cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal));
	gk_scale<<<4, 32, 0, s1>>>(buf, n);
	ok("cudaEventRecord", cudaEventRecord(e1, s1));
	ok("cudaStreamWaitEvent", cudaStreamWaitEvent(s2, e1, 0));
	gk_side<<<2, 32, 0, s2>>>(buf, n);
	gk_side<<<2, 32, 0, s2>>>(buf, n);
	ok("cudaEventRecord", cudaEventRecord(e2, s2));
	ok("cudaStreamWaitEvent", cudaStreamWaitEvent(s1, e2, 0));
	gk_add<<<1, 32, 0, s1>>>(buf, n);
	ok("cudaGraphLaunch (captured)", cudaGraphLaunch(x1, s1));
	ok("cudaStreamEndCapture", cudaStreamEndCapture(s1, &g2));
	ok("cudaGraphInstantiate", cudaGraphInstantiate(&x2, g2, 0));
	launch(x2, s1, 4);
	/* per launch: gk_scale 1 + 2 (x1's), gk_side 2, gk_add 1 + 1 */
	count("gk_scale(float*, int)", "graph", 3 * 4);
	count("gk_side(float*, int)", "graph", 2 * 4);
	count("gk_add(float*, int)", "graph", 2 * 4);
	/* s2 captures no more */
	gk_side<<<1, 32, 0, s2>>>(buf, n);
	count("gk_side(float*, int)", "direct", 1);

	/* a child graph and a kernel; the clone is taken before g3 gets
	 * another kernel, which only g3 has */
	ok("cudaGraphCreate", cudaGraphCreate(&g3, 0));
	ok("cudaGraphAddChildGraphNode", cudaGraphAddChildGraphNode(&node, g3, NULL, 0, g2));
	p = kparams((void *)gk_norm, 1, 32, 0);
	ok("cudaGraphAddKernelNode", cudaGraphAddKernelNode(&node, g3, NULL, 0, &p));
	ok("cudaGraphClone", cudaGraphClone(&g4, g3));
	p = kparams((void *)gk_add, 1, 32, 0);
	ok("cudaGraphAddKernelNode", cudaGraphAddKernelNode(&node, g3, NULL, 0, &p));
	ok("cudaGraphInstantiate", cudaGraphInstantiate(&x4, g4, 0));
	launch(x4, s1, 2);
	count("gk_scale(float*, int)", "graph", 3 * 2);
	count("gk_side(float*, int)", "graph", 2 * 2);
	count("gk_add(float*, int)", "graph", 2 * 2);
	count("gk_norm(float*, int)", "graph", 1 * 2);

	driver_graph(s1);

	for (int i = 0; i < 5; i++)
		gk_scale<<<1, 32, 0, s1>>>(buf, n);
	count("gk_scale(float*, int)", "direct", 5);

	if (x0) {
		launch(x0, s1, 2);
		unknown_launches = 2;
	}
	ok("cudaStreamSynchronize", cudaStreamSynchronize(s1));
	ok("cudaStreamSynchronize", cudaStreamSynchronize(s2));

	for (int i = 0; i < ntally; i++)
		printf("{\"kernel\":\"%s\",\"via\":\"%s\",\"launches\":%ld}\n", tally[i].kernel,
		       tally[i].via, tally[i].n);
	printf("{\"graph_launches\":%ld,\"unknown_graph_launches\":%ld,\"failed_calls\":%d}\n",
	       graph_launches, unknown_launches, fails);
	if (stay)
		usleep(stay * 1000);
	return fails ? 1 : 0;
}
