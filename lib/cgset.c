// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "cgset.h"
#include "ctrmeta.h"
#include "util.h"

/* ctrmeta_expect reads a new container's state for this long */
#define CGSET_WAIT_NS (6ULL * 1000000000ULL)

struct member {
	struct aiscope_cgset_key key;
	char pod_uid[37];
};

struct pending {
	struct aiscope_cgset_key key;
	struct container_info ci;
	uint64_t until_ns;
};

static struct {
	const char *pod, *ns;
	int (*add)(const struct aiscope_cgset_key *k, void *ctx);
	void *ctx;
	struct member mem[AISCOPE_MAX_CGSET];
	size_t nmem;
	struct pending wait[CGSET_PENDING];
	size_t nwait;
	uint64_t dropped;
} S;

void cgset_want(const char *pod, const char *ns)
{
	S.pod = pod;
	S.ns = ns;
}

bool cgset_active(void)
{
	return S.pod || S.ns;
}

bool cgset_names_match(const char *id, const char *runtime)
{
	const struct ctr_meta *m = ctrmeta_lookup(id, runtime);

	return m->found && (!S.pod || !strcmp(m->pod_name, S.pod)) &&
	       (!S.ns || !strcmp(m->pod_namespace, S.ns));
}

static bool is_member(const struct aiscope_cgset_key *k)
{
	for (size_t i = 0; i < S.nmem; i++)
		if (S.mem[i].key.id == k->id && S.mem[i].key.v1 == k->v1)
			return true;
	return false;
}

static void join(const struct aiscope_cgset_key *k, const struct container_info *ci)
{
	if (is_member(k))
		return;
	if (S.nmem == AISCOPE_MAX_CGSET || (S.add && S.add(k, S.ctx))) {
		S.dropped++;
		return;
	}
	S.mem[S.nmem].key = *k;
	snprintf(S.mem[S.nmem].pod_uid, sizeof(S.mem[0].pod_uid), "%s", ci->pod_uid);
	S.nmem++;
}

void cgset_attach(int (*add)(const struct aiscope_cgset_key *k, void *ctx), void *ctx)
{
	size_t kept = 0;

	S.add = add;
	S.ctx = ctx;
	for (size_t i = 0; i < S.nmem; i++) {
		if (add && add(&S.mem[i].key, ctx)) {
			S.dropped++;
			continue;
		}
		S.mem[kept++] = S.mem[i];
	}
	S.nmem = kept;
}

void cgset_made(const struct container_info *ci, uint64_t cgid, bool v1)
{
	struct aiscope_cgset_key k = { .id = cgid, .v1 = v1 };
	const struct ctr_meta *m;

	if (!cgset_active() || !ci->id[0] || !cgid || is_member(&k))
		return;
	m = ctrmeta_lookup(ci->id, ci->runtime);
	if (m->found) {
		if (cgset_names_match(ci->id, ci->runtime))
			join(&k, ci);
		return;
	}
	for (size_t i = 0; i < S.nwait; i++)
		if (S.wait[i].key.id == k.id && S.wait[i].key.v1 == k.v1)
			return;
	if (S.nwait == CGSET_PENDING) {
		S.dropped++;
		return;
	}
	S.wait[S.nwait++] = (struct pending){ .key = k, .ci = *ci,
		.until_ns = ctrmeta_now() + CGSET_WAIT_NS };
}

void cgset_poll(void)
{
	uint64_t now;

	if (!S.nwait)
		return;
	now = ctrmeta_now();
	for (size_t i = 0; i < S.nwait;) {
		struct pending *p = &S.wait[i];

		/* a miss is read again at most once a second (lib/ctrmeta):
		 * this mostly asks its cache, which ctrmeta_poll filled */
		if (ctrmeta_lookup(p->ci.id, p->ci.runtime)->found) {
			if (cgset_names_match(p->ci.id, p->ci.runtime))
				join(&p->key, &p->ci);
		} else if (now < p->until_ns) {
			i++;
			continue;
		} else {
			/* its names never became readable: whether it
			 * matches is unknown, and it is not traced */
			S.dropped++;
		}
		*p = S.wait[--S.nwait];
	}
}

bool cgset_path_wanted(const char *path)
{
	struct container_info ci;

	if (!path)
		return false;
	if (cg_parse_container(path, &ci))
		return cgset_names_match(ci.id, ci.runtime);
	if (!ci.pod_uid[0])
		return false;
	for (size_t i = 0; i < S.nmem; i++)
		if (!strcmp(S.mem[i].pod_uid, ci.pod_uid))
			return true;
	return false;
}

size_t cgset_members(void)
{
	return S.nmem;
}

uint64_t cgset_dropped(void)
{
	return S.dropped;
}

void cgset_reset(void)
{
	memset(&S, 0, sizeof(S));
}
