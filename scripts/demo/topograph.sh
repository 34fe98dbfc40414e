# shellcheck shell=bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Sourced by scripts/demo.sh: helpers header/show/show_sh/start_bg/stop_bg, $B, $tmp.

# ---- topograph: the communication graph ----------------------------------
demo_topograph() {
	local dir=$tmp/topo stages spin pids

	header "topograph: which processes feed which, through what, and where it jams"
	if [ ! -x "$B/socketsnoop" ] || [ ! -x "$B/ipcsnoop" ]; then
		echo "topograph runs socketsnoop and ipcsnoop, which are not built here: skipped"
		return 0
	fi
	echo "Workload: tests/helpers/topostages: a producer writes 2 MiB into a FIFO to a"
	echo "transformer that sends it over TCP to a consumer; the consumer answers over"
	echo "TCP and reports to the producer over a unix socket. The transformer is pinned"
	echo "to CPU 0 (nice 10), where tests/helpers/contend keeps 4 busy loops."
	mkdir -p "$dir"
	start_bg stages '^ready' "$B/tests/helpers/topostages" "$dir" 2097152 4096 4 25 0 10 1
	stages=$BG_PID
	read -r _ pids < "$tmp/stages.out"
	pids=$(echo "$pids" | awk '{ print $1 "," $2 "," $3 }')
	start_bg spin '^ready' "$B/tests/helpers/contend" 4 0 4000
	spin=$BG_PID
	# the data moves 2 s into the capture: the busy loops first, then the stages
	(sleep 2; kill -USR1 "$spin"; sleep 0.2; kill -USR1 "$stages") &
	bg_pids+=("$!")

	header "6 s of socketsnoop, ipcsnoop and schedlat, only these processes (-p), as JSON lines"
	show_sh "$B/topograph -d 6s --with schedlat -p $pids -j > $tmp/graph.jsonl"

	header "The graph as a table: nodes by container, edges by bytes, bottlenecks with evidence"
	show "$B/topograph" "$tmp/graph.jsonl"

	if command -v dot > /dev/null; then
		header "Graphviz: edge width by bytes, colour by kind, the starved stage outlined"
		show_sh "$B/topograph --dot $tmp/graph.jsonl | dot -Tsvg > $tmp/graph.svg && ls -l $tmp/graph.svg"
	fi

	header "Mermaid, for Markdown"
	show "$B/topograph" --mermaid "$tmp/graph.jsonl"

	header "The bottlenecks through jq"
	show_sh "$B/topograph -j $tmp/graph.jsonl | jq -r 'select(.type==\"bottleneck\") | [.rule, .evidence] | @tsv'"

	stop_bg
}
