# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by scripts/demo.sh: helpers header/show/show_sh/start_bg/stop_bg, $B.

# ---- nclstat: NCCL collectives, rank skew and hangs ----------------------

# nclstat_ranks: a fresh job of four ranks, waiting (-w) until released one
# second from now, so that the nclstat started meanwhile sees their
# communicators being created (one created earlier is registered at its
# first call, without the hash that joins its ranks). Sets NCL_PIDS.
nclstat_ranks() {
	stop_bg
	start_bg ranks '^ready' env FAKE_NCCL_HANG=2:3000 LD_LIBRARY_PATH="$B/tests/nccl" \
		"$B/tests/nccl/ncclrank" run -r 4 -i 100000 -s 2000 -l 1:200 -w
	NCL_PIDS=$(awk '$1 == "rank" { print $4 }' "$tmp/ranks.out" | xargs)
	# shellcheck disable=SC2086
	(sleep 1 && kill -USR1 $NCL_PIDS) &
}

demo_nclstat() {
	header "nclstat: NCCL communicators and collectives, rank skew and stuck calls"
	echo "Workload: tests/fixtures/ncclrank, four ranks (processes) sharing one ncclUniqueId, on"
	echo "the project's test double of libnccl.so.2 (the real one needs GPUs). Each rank runs"
	echo "AllReduce, AllGather, ReduceScatter, Broadcast, Reduce and a Send/Recv group, then an"
	echo "AllReduce on a split communicator, every 2 ms. Rank 1 stops after 200 iterations;"
	echo "rank 2 gets stuck in its 3000th call on the communicator (FAKE_NCCL_HANG=2:3000)."
	echo "Each step starts the job afresh, a second after nclstat."

	header "Every NCCL user on the host, found in /proc/*/maps: communicators, then ops (-r 8 rows), 4 s"
	nclstat_ranks
	show "$B/nclstat" -C -d 4s --hang 1s -r 8

	header "Communicators in JSON (-j) through jq: skew, the lagging rank and its last collective"
	nclstat_ranks
	show_sh "$B/nclstat -j -d 3s --hang 1s | jq -c 'select(.row == \"communicator\" and .seq == 3) | {communicator_id, created_by, local_ranks, skew_ops, lagging_rank, lagging_last_op, hung_calls}'"

	header "Calls stuck in NCCL for over 1 s, as events"
	nclstat_ranks
	show_sh "$B/nclstat -j -d 3s --hang 1s | jq -c 'select(.type == \"event\") | {event, pid, rank, nccl_op, count, datatype, communicator_id, waiting_s: (.waiting_ns / 1e9)}'"

	header "Each call of rank 0 with its decoded arguments (-e), first 10 (-n)"
	nclstat_ranks
	show "$B/nclstat" -e -n 10 -p "${NCL_PIDS%% *}"

	header "Where the probes go (--list-probes)"
	show "$B/nclstat" --list-probes

	stop_bg
}
