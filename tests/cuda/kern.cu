// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Real nvcc <<<>>> launches for gpulaunch's tests (built when nvcc is
 * there: shared runtime, static runtime, and stripped). Without a GPU the
 * launches fail (cudaErrorInsufficientDriver 35, or another error code),
 * but the probes see them: the kernel names must come out demangled (from
 * registration and CUDA 13's handle map, even stripped), and the launch
 * configuration as written here. With a GPU (scripts/gpu-check.sh) it
 * really runs: a 4 KiB buffer copied both ways, the kernels on a stream.
 * Prints what it did as JSON lines.
 * Usage: kern [N]   (launches each kernel N times, default 1)
 */
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

template <typename T> __global__ void vecAdd(const T *a, const T *b, T *c, int n)
{
	int i = blockIdx.x * blockDim.x + threadIdx.x;

	if (i < n)
		c[i] = a[i] + b[i];
}

__global__ void scale(float *x, float s)
{
	x[threadIdx.x] *= s;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 1;
	/* a real stream on a GPU; without one, a sentinel handle */
	cudaStream_t stream = (cudaStream_t)0x1234;
	static float host[1024];
	float *d = nullptr;
	int rc = 0, mrc, crc1, crc2, frc;

	mrc = (int)cudaMalloc(&d, sizeof(host));
	if (mrc == 0)
		cudaStreamCreate(&stream);
	crc1 = (int)cudaMemcpy(d, host, sizeof(host), cudaMemcpyHostToDevice);
	for (int i = 0; i < n; i++) {
		vecAdd<float><<<dim3(4, 2, 1), dim3(256, 1, 1), 1024, stream>>>(d, d, d, 1024);
		rc = (int)cudaGetLastError();
		scale<<<3, 64>>>(d, 2.0f);
		cudaGetLastError();
	}
	crc2 = (int)cudaMemcpy(host, d, sizeof(host), cudaMemcpyDeviceToHost);
	frc = (int)cudaFree(d);
	printf("{\"api\":\"cudaMalloc\",\"size\":%zu,\"rc\":%d}\n", sizeof(host), mrc);
	printf("{\"api\":\"cudaMemcpy\",\"kind\":1,\"size\":%zu,\"rc\":%d}\n", sizeof(host), crc1);
	printf("{\"api\":\"cudaMemcpy\",\"kind\":2,\"size\":%zu,\"rc\":%d}\n", sizeof(host), crc2);
	printf("{\"api\":\"cudaFree\",\"rc\":%d}\n", frc);
	if (mrc == 0)
		printf("{\"stream_real\":\"%p\"}\n", (void *)stream);
	printf("{\"kernel\":\"void vecAdd<float>(float const*, float const*, float*, int)\","
	       "\"launches\":%d,\"grid\":[4,2,1],\"block\":[256,1,1],\"smem\":1024,"
	       "\"stream\":\"0x1234\",\"rc\":%d}\n", n, rc);
	printf("{\"kernel\":\"scale(float*, float)\",\"launches\":%d,\"grid\":[3,1,1],"
	       "\"block\":[64,1,1],\"smem\":0,\"stream\":\"0x0\",\"rc\":%d}\n", n, rc);
	return 0;
}
