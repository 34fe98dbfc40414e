# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by scripts/demo.sh: helpers header/show/show_sh/start_bg/stop_bg, $B.

# ---- ipcsnoop: who feeds whom through pipes, FIFOs, sockets, queues ----
# ipc_traffic DIR: one round of each mechanism (tests/helpers/ipcload),
# repeated until killed, so that every interval of the demo sees it
ipc_traffic() {
	local d=$1
	echo "ready"
	while :; do
		"$B/tests/helpers/ipcload" fifo "$d/jobs.fifo" 2 100 4096
		"$B/tests/helpers/ipcload" unix-stream "$d/trainer.sock" 2 50 8192
		"$B/tests/helpers/ipcload" unix-stream "@aiscope-demo" 1 20 512
		"$B/tests/helpers/ipcload" msq 2 40 256
		"$B/tests/helpers/ipcload" mq /aiscope-demo 2 20 128
		"$B/tests/helpers/ipcload" pipe 200 16384
		"$B/tests/helpers/ipcload" eventfd 50
		sleep 0.2
	done > /dev/null
}

demo_ipcsnoop() {
	local d

	header "ipcsnoop: bytes and messages between local processes, per channel"
	d=$(mktemp -d /tmp/aiscope-demo-ipc.XXXXXX)
	echo "Workload: tests/helpers/ipcload in a loop: a FIFO with two writers ($d/jobs.fifo),"
	echo "a unix server with two clients ($d/trainer.sock) and one on an abstract name,"
	echo "a SysV queue and a POSIX queue with two receivers each, a pipe, an eventfd."
	start_bg ipc '^ready' bash -c "$(declare -f ipc_traffic); B=$B; ipc_traffic $d"

	header "Channel table every second for 3 s, only the workload's kinds, appended (-C)"
	show "$B/ipcsnoop" -C -d 3s -r 12 --kind fifo,unix,msq,mq,eventfd

	header "Each operation on the POSIX queue as it happens (-e), first 8 (-n)"
	show "$B/ipcsnoop" -e --kind mq -n 8 -d 10s

	header "The process graph of 2 s: one edge per writer and channel, through jq"
	show_sh "$B/ipcsnoop -j -d 2s --kind fifo,unix,msq | jq -r 'select(.type==\"edge\") | [.kind, .channel, .src.comm, .dst.comm, .bytes, .read_bytes] | @tsv' | sort -u | head -12"

	stop_bg
	rm -rf "$d"
}
