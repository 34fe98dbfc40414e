// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * ncclrank with the libnccl test double linked in: one static executable
 * whose own symbol table has the NCCL API, as in programs that link NCCL
 * statically (conda builds of PyTorch). nclstat probes it with --lib on
 * the executable; the VM images carry it (they have no dynamic loader).
 * Same commands and output as tests/fixtures/ncclrank.c.
 */
#include "../fixtures/libnccl.c"
#include "../fixtures/ncclrank.c"
