/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Which kernels a CUDA graph launch runs: a model of each process's
 * graphs built from the calls that make them (gpulaunch's graph probes),
 * so that a launch of an instantiated graph counts the launches of its
 * kernels by name.
 *
 *	struct cg_store *s = cg_new(0);
 *	cg_create(s, pid, g);				cudaGraphCreate
 *	cg_node(s, pid, g, &kernel_a);			cudaGraphAddKernelNode
 *	cg_begin(s, pid, stream, 0);			cudaStreamBeginCapture
 *	cg_captured(s, pid, stream, &kernel_b);		a launch on the stream
 *	cg_end(s, pid, stream, g2, unjoin, ctx);	cudaStreamEndCapture
 *	cg_child(s, pid, g, g2);			a child graph node
 *	cg_instantiate(s, pid, g, exec);		cudaGraphInstantiate
 *	nodes = cg_exec_nodes(s, pid, exec, &n);	what cudaGraphLaunch(exec) runs
 *
 * A graph's kernels are kept as distinct (kernel, layer, configuration)
 * entries with a count: a graph of 1000 launches of 40 kernels is 40
 * entries. A child graph, a clone and an instance copy the nodes of their
 * source as it is then (CUDA's semantics: later changes to the source do
 * not reach them). Handles are per process; a process's objects go with
 * cg_prune once it is gone. At most max_entries node entries are kept in
 * all: more are counted in dropped, and the graphs they belonged to are
 * marked partial.
 */
#ifndef AISCOPE_CUDAGRAPH_H
#define AISCOPE_CUDAGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cg_node {
	uint64_t func;		/* hostFun, CUfunction or CUkernel */
	uint32_t api;		/* the caller's index of the call that added it */
	uint32_t grid[3], block[3];
	uint32_t smem;
	uint8_t layer;
	uint64_t count;		/* launches of it per graph launch (0: 1) */
};

struct cg_store;

struct cg_store *cg_new(size_t max_entries);	/* 0: the default, 1 << 20 */
void cg_free(struct cg_store *s);

void cg_create(struct cg_store *s, uint32_t pid, uint64_t graph);
void cg_node(struct cg_store *s, uint32_t pid, uint64_t graph, const struct cg_node *n);
void cg_child(struct cg_store *s, uint32_t pid, uint64_t graph, uint64_t child);
void cg_clone(struct cg_store *s, uint32_t pid, uint64_t clone, uint64_t orig);

/* a capture that began on stream (into graph, or 0 for a new graph) */
void cg_begin(struct cg_store *s, uint32_t pid, uint64_t stream, uint64_t into);
/* a launch captured by the capture whose first stream is origin */
void cg_captured(struct cg_store *s, uint32_t pid, uint64_t origin, const struct cg_node *n);
/* a graph launch captured: the nodes of that instance, as a child */
void cg_captured_exec(struct cg_store *s, uint32_t pid, uint64_t origin, uint64_t exec);
void cg_join(struct cg_store *s, uint32_t pid, uint64_t stream, uint64_t origin);
/* the capture ended with graph (0: it made none); unjoin is called with
 * each stream that had joined it */
void cg_end(struct cg_store *s, uint32_t pid, uint64_t origin, uint64_t graph,
	    void (*unjoin)(uint32_t pid, uint64_t stream, void *ctx), void *ctx);

void cg_instantiate(struct cg_store *s, uint32_t pid, uint64_t graph, uint64_t exec);

/* The kernels one launch of exec runs; NULL when exec is not known (made
 * before the model saw it). *partial: some of its nodes were not kept. */
const struct cg_node *cg_exec_nodes(const struct cg_store *s, uint32_t pid, uint64_t exec,
				    size_t *n, bool *partial);

/* Forgets the objects of processes alive() says are gone; gone_capture is
 * called with each capture they left open (origin) and each stream that
 * had joined one. */
void cg_prune(struct cg_store *s, bool (*alive)(uint32_t pid),
	      void (*gone_capture)(uint32_t pid, uint64_t stream, bool origin, void *ctx),
	      void *ctx);

/* counters */
uint64_t cg_dropped(const struct cg_store *s);	/* node entries not kept */
uint64_t cg_unknown(const struct cg_store *s);	/* sources not known: a node or instance
						 * of a graph made before */
size_t cg_objects(const struct cg_store *s);

#endif
