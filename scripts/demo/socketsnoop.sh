# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by scripts/demo.sh: helpers header/show/show_sh/start_bg/stop_bg, $B.

# ---- socketsnoop: TCP/UDP flows between processes ------------------------
demo_socketsnoop() {
	local np="$B/tests/helpers/netpair"

	header "socketsnoop: who talks to whom over TCP and UDP, how much, and how connections live"
	echo "Workload: tests/helpers/netpair, a server and its forked client moving known bytes"
	echo "over loopback, once every 0.3 s: TCP over IPv4 (120000 bytes in 40 sends, 6000 back"
	echo "in 3), then unconnected UDP over IPv6 to 3 server sockets (10 datagrams of 300 bytes each)."
	start_bg pairs '^server' bash -c "while :; do
		'$np' tcp4 -n 120000 -m 40 -k 6000 -l 3 -w 100 || exit 1
		'$np' udpu6 -p 3 -n 3000 -m 10 -k 600 -l 2 || exit 1
		sleep 0.3
	done"

	header "The flow table every second for 2 s, the netpair processes only (--comm), appended (-C)"
	echo "Each flow names its peer process: both ends are on this host."
	show "$B/socketsnoop" --comm ss-client -C -d 2s
	show "$B/socketsnoop" --comm ss-server -C -d 2s -r 6

	header "Lifecycle events (-e): connect with its latency, accept, close with duration and bytes each way"
	show "$B/socketsnoop" -e --proto tcp --comm ss-client -n 4 -d 5s

	header "At exit, --json adds the process-to-process edges of the run, through jq"
	show_sh "$B/socketsnoop -j -d 1.5s --comm ss-client | jq -c 'select(.type==\"edge\") | {kind, channel, src: .src.comm, dst: (.dst.comm // .dst.endpoint), bytes, msgs, read_bytes}' | head -4"

	stop_bg
}
