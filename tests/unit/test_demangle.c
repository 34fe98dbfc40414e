// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* lib/demangle.c: names of CUDA kernels as nvcc mangles them. */
#include <stdlib.h>
#include "t.h"
#include "demangle.h"

static void check(const char *in, const char *want)
{
	char *got = demangle(in);

	CHECK_STR(got, want);
	free(got);
}

static void test_kernels(void)
{
	check("_Z6vecAddPfS_S_i", "vecAdd(float*, float*, float*, int)");
	check("_Z6vecAddIfEvPKT_S2_PS0_i", "void vecAdd<float>(float const*, float const*, float*, int)");
	check("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEENS_6detail5ArrayIPcLi1EEEEEviT0_T1_",
	      "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)");
}

static void test_not_mangled(void)
{
	CHECK(demangle("cudaLaunchKernel") == NULL);
	CHECK(demangle("libcudart.so.13+0x1a2b") == NULL);
	CHECK(demangle("_Zbroken!") == NULL);
	CHECK(demangle("") == NULL);
	CHECK(demangle(NULL) == NULL);
}

int main(void)
{
	RUN(test_kernels);
	RUN(test_not_mangled);
	return t_done();
}
