# fish completion for topograph(8), part of aiscope: made by make from topograph --complete=fish
# fish: the helpers of every aiscope tool's completion
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make writes $(O)/completions/fish/<tool>.fish: the complete lines that
# "<tool> --complete=fish" prints (lib/complete.c, from the tool's own
# options), with this file after its first line; aiscope.fish is made of
# them (the fish completion of "aiscope <tool>"). Try one without
# installing: source build/completions/fish/<tool>.fish

# the value being typed, also in the --long=value form
function __aiscope_value
    commandline -ct | string replace -r -- '^--[^=]*=' ''
end
complete -c topograph -s p -l pid -x -a '(__fish_complete_list , __fish_complete_pids)' -d 'Only these processes (thread-group ids)'
complete -c topograph -s t -l tid -x -a '(__fish_complete_list , "string replace -r \'.*/\' \'\' /proc/*/task/*")' -d 'Only these threads (live capture only)'
complete -c topograph -s c -l cgroup -x -a '(__fish_complete_directories (__aiscope_value))' -d 'Only tasks in this cgroup directory or below it (live capture only)'
complete -c topograph -l container -x -d 'Only this container: its name, full id or unique prefix (>= 4 hex)'
complete -c topograph -l pod -x -d 'Only this Kubernetes pod\'s containers (live: by its pod cgroup; with FILEs: the lines\' pod_name)'
complete -c topograph -l namespace -x -d 'The pod\'s namespace (with FILEs also alone: the lines\' pod_namespace)'
complete -c topograph -s u -l uid -x -a '(__fish_complete_users)' -d 'Only this user (number or name)'
complete -c topograph -l comm -x -a '(cat /proc/*/comm 2>/dev/null | sort -u)' -d 'Only tasks whose comm is NAME (first 15 bytes)'
complete -c topograph -s j -l json -d 'JSON lines on stdout: nodes, edges, bottlenecks, summary'
complete -c topograph -l dot -d 'Graphviz DOT on stdout (edge width by bytes, colour by kind)'
complete -c topograph -l mermaid -d 'Mermaid flowchart on stdout'
complete -c topograph -s d -l duration -x -d 'Capture for DUR (500ms, 10, 10s, 2m); default: until Ctrl-C'
complete -c topograph -l with -x -a '(__fish_complete_list , "printf \'%s\n\' schedlat nclstat gpulaunch")' -d 'Also run schedlat, nclstat, gpulaunch (live capture)'
complete -c topograph -l wide -d 'Never truncate strings in tables'
complete -c topograph -l tree -d 'Also every process forked, exec\'d or exited in the capture, and parent->child spawn links'
complete -c topograph -s v -l verbose -d 'Commands run and every line the tools print on stderr'
complete -c topograph -l hot -x -d 'An edge with at least PCT% of all bytes is hot (default 25)'
complete -c topograph -l runq -x -d 'Run-queue p99 that is high on a busy edge (default 10ms)'
complete -c topograph -l backlog -x -d 'Bytes written but not read that mark a reader behind (default 1M)'
complete -c topograph -l list-probes -d 'Print the attach plan and exit'
complete -c topograph -l probe-mode -x -a '(__fish_complete_list , "printf \'%s\n\' fentry kprobe tp_btf raw_tp tracepoint")' -d 'Use only these mechanisms: fentry, kprobe, tp_btf, raw_tp, tracepoint'
complete -c topograph -s h -l help -d 'Give this help list'
complete -c topograph -l usage -d 'Give a short usage message'
complete -c topograph -s V -l version -d 'Print program version'
