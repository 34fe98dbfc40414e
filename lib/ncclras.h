/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A client of NCCL's RAS service (NCCL 2.24+, on by default in every job:
 * a TCP port on each node, 28028 unless NCCL_RAS_ADDR says otherwise): the
 * state of every communicator of the jobs on this node, gathered by NCCL
 * across all their nodes, as the JSON document NCCL 2.28.7+ writes.
 *
 *	char *doc; size_t len;
 *	struct ncclras_status st;
 *	if (!ncclras_query("localhost", "28028", 5, &doc, &len) &&
 *	    !ncclras_parse(doc, len, &st))
 *		... st.comms[i].hash, .ranks[j].rank, .host, .pid, .colls
 *	ncclras_status_free(&st); free(doc);
 *
 * The protocol (NCCL's src/ras/client.cc): "CLIENT PROTOCOL 2" answered by
 * "SERVER PROTOCOL N"; "TIMEOUT S" and "SET FORMAT json" answered by "OK";
 * "STATUS", then the document until the server closes the connection.
 */
#ifndef AISCOPE_NCCLRAS_H
#define AISCOPE_NCCLRAS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define NCCLRAS_PORT	"28028"
#define NCCLRAS_DOC_MAX	(64u << 20)	/* a larger answer is cut: -EFBIG */

struct ncclras_rank {
	int rank;
	char host[64];
	int pid;
	int init_state, async_error;
	bool finalize_called, destroy_flag, abort_flag;
	uint64_t colls;		/* collective operations launched, all kinds */
};

struct ncclras_missing {
	int rank;
	char host[64];
	int pid;
	bool unresponsive, dead;
};

struct ncclras_comm {
	uint64_t hash;		/* NCCL's commHash */
	int size;
	struct ncclras_rank *ranks;
	size_t nranks;
	struct ncclras_missing *missing;
	size_t nmissing;
};

struct ncclras_status {
	char version[48];
	struct ncclras_comm *comms;
	size_t ncomms;
	double collection_s;
	int timeouts;
};

/*
 * Connects to host:port, asks for the status in JSON with a collection
 * timeout of timeout_s seconds (0: NCCL's default), and reads the answer:
 * *doc (malloc'd, NUL-terminated) and *len. Returns 0, -ECONNREFUSED (no
 * RAS there: no NCCL job, or RAS off), -ETIMEDOUT, -EPROTO (an answer not
 * of the protocol: a NCCL before 2.28.7 refuses the JSON format), -EFBIG,
 * other -errno.
 */
int ncclras_query(const char *host, const char *port, int timeout_s, char **doc, size_t *len);

/* Parses a status document. Returns 0, or -EINVAL (not one). */
int ncclras_parse(const char *doc, size_t len, struct ncclras_status *st);
void ncclras_status_free(struct ncclras_status *st);

/* The rank of c with the fewest collectives launched and how many the
 * most has: the rank the others wait for. -1 when c has no ranks. */
int ncclras_behind(const struct ncclras_comm *c, uint64_t *min, uint64_t *max);

#endif
