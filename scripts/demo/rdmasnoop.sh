# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by scripts/demo.sh: helpers header/show/show_sh/start_bg/stop_bg, $B.

# ---- rdmasnoop: RDMA verbs per process, queue pair and peer ---------------

# rdma_ready: an RDMA device to run verbs on: one the host has, or rxe0
# (Soft-RoCE) on a dummy device, where the kernel has the modules; sets
# RDMA_DEV and RDMA_GID (the GID index of the address of the device)
rdma_ready() {
	RDMA_DEV=$(ls /sys/class/infiniband 2>/dev/null | head -1)
	if [ -z "$RDMA_DEV" ] && command -v rdma > /dev/null &&
		modprobe rdma_rxe 2>/dev/null && modprobe dummy numdummies=0 2>/dev/null; then
		ip link add aiscope-rxe0 type dummy 2>/dev/null
		ip addr add 10.77.0.1/24 dev aiscope-rxe0 2>/dev/null
		ip link set aiscope-rxe0 up
		rdma link add rxe0 type rxe netdev aiscope-rxe0 2>/dev/null && RDMA_DEV=rxe0
		sleep 1
	fi
	[ -n "$RDMA_DEV" ] || return 1
	RDMA_GID=$(grep -l 'ffff:0a4d:0001$' /sys/class/infiniband/"$RDMA_DEV"/ports/1/gids/* 2>/dev/null |
		head -1 | sed 's|.*/||')
	RDMA_GID=${RDMA_GID:-0}
	command -v ibv_rc_pingpong > /dev/null
}

demo_rdmasnoop() {
	header "rdmasnoop: RDMA verbs traffic per process, queue pair and peer"
	show "$B/rdmasnoop" --list-probes
	if ! rdma_ready; then
		echo "No RDMA device here, and no Soft-RoCE to make one (the rdma_rxe module, iproute2's"
		echo "rdma, ibverbs-utils): rdmasnoop says so in one line and exits 77."
		show_sh "$B/rdmasnoop -d 1 || echo \"exit status \$?\""
		return
	fi
	echo "Workload: ibv_rc_pingpong, a server and a client on $RDMA_DEV, 1000 messages of"
	echo "4096 bytes each way (-s 4096 -n 1000)."
	echo "A first process opens the device and waits (a pingpong server nobody calls): rdmasnoop"
	echo "learns from it where the provider's post and poll functions are, so that the pingpong"
	echo "is traced from its first call."
	start_bg rdma 'Tracing' "$B/rdmasnoop" -C -i 60
	ibv_rc_pingpong -d "$RDMA_DEV" -g "$RDMA_GID" -p 18601 > /dev/null 2>&1 &
	local opener=$!
	sleep 2
	kill "$opener" 2>/dev/null
	wait "$opener" 2>/dev/null || true
	ibv_rc_pingpong -d "$RDMA_DEV" -g "$RDMA_GID" -s 4096 -n 1000 > /dev/null 2>&1 &
	local srv=$!
	sleep 1
	show ibv_rc_pingpong -d "$RDMA_DEV" -g "$RDMA_GID" -s 4096 -n 1000 127.0.0.1
	wait "$srv" || true
	header "$B/rdmasnoop -C (stopped after the pingpong: its last interval)"
	stop_bg
	cat "$tmp/rdma.out"
}
