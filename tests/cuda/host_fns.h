/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What the two programs that call CUDA for gpulaunch's tests share:
 * tests/cuda/cudacall.c (the real libraries, dlopened) and
 * tests/helpers/cudastatic.c (the doubles linked in). The stream and
 * dimensions every launch passes, the flag SIGUSR1 sets and its handler,
 * and the host functions launched. Included after struct dim3 is defined.
 */
#ifndef AISCOPE_TEST_CUDA_HOST_FNS_H
#define AISCOPE_TEST_CUDA_HOST_FNS_H

#include <signal.h>

#define STREAM ((void *)0x1234)
static const struct dim3 grid = { 4, 2, 1 }, block = { 256, 1, 1 };
static volatile sig_atomic_t go;

/* SIGUSR1's handler: the test has attached, the calls may start */
static void on_usr1(int sig)
{
	go = 1;
}

/* A stand-in for an nvcc kernel stub: its symbol is the mangled name of
 * vecAdd(float*, float*, float*, int), found by gpulaunch in .symtab */
__attribute__((noinline, used)) void kernel_stub(void) __asm__("_Z6vecAddPfS_S_i");
void kernel_stub(void)
{
	__asm__ volatile("");
}

/* A host function with no mangled name of its own: its kernel name can
 * only come from registration. */
static __attribute__((noinline, used)) void host_fn2(void)
{
	__asm__ volatile("");
}

#endif
