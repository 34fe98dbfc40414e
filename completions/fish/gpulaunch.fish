# fish completion for gpulaunch(8), part of aiscope: made by make from gpulaunch --complete=fish
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
complete -c gpulaunch -f
complete -c gpulaunch -s e -l events -d 'Stream one event per launch (with its return code)'
complete -c gpulaunch -l latency -d 'Add return probes: errors and call latency'
complete -c gpulaunch -l mem -d 'Allocations, copies by direction, synchronize waits'
complete -c gpulaunch -l lib -x -a '(__fish_complete_path (__aiscope_value))' -d 'Probe this library or executable only (repeatable)'
complete -c gpulaunch -l mangled -d 'Keep kernel names mangled'
complete -c gpulaunch -l rescan -x -d 'Rescan all processes this often (default 5s, 0: never)'
complete -c gpulaunch -s p -l pid -x -a '(__fish_complete_list , __fish_complete_pids)' -d 'Only these processes (thread-group ids)'
complete -c gpulaunch -s t -l tid -x -a '(__fish_complete_list , "string replace -r \'.*/\' \'\' /proc/*/task/*")' -d 'Only these threads'
complete -c gpulaunch -s c -l cgroup -x -a '(__fish_complete_directories (__aiscope_value))' -d 'Only tasks in this cgroup directory or below it'
complete -c gpulaunch -l container -x -d 'Only this container: its name, full id or unique prefix (>= 4 hex)'
complete -c gpulaunch -l pod -x -d 'Only this Kubernetes pod\'s containers (by its pod cgroup)'
complete -c gpulaunch -l namespace -x -d 'With --pod: the pod\'s namespace'
complete -c gpulaunch -s u -l uid -x -a '(__fish_complete_users)' -d 'Only this user (number or name)'
complete -c gpulaunch -l comm -x -a '(cat /proc/*/comm 2>/dev/null | sort -u)' -d 'Only tasks whose comm is NAME (first 15 bytes)'
complete -c gpulaunch -s j -l json -d 'JSON lines on stdout'
complete -c gpulaunch -s i -l interval -x -d 'Reporting interval (default 1s)'
complete -c gpulaunch -s d -l duration -x -d 'Stop after DUR (500ms, 10, 10s, 2m)'
complete -c gpulaunch -s n -l count -x -d 'Stop after N records (events, or intervals)'
complete -c gpulaunch -s T -l timestamp -d 'Add a TIME column to tables'
complete -c gpulaunch -s C -l noclear -d 'Never clear the screen between intervals'
complete -c gpulaunch -s r -l rows -x -d 'Rows per interval (default 20, 0: all)'
complete -c gpulaunch -s s -l sort -x -a 'launches errors p99 smem' -d 'Sort key of top-like tables'
complete -c gpulaunch -l wide -d 'Never truncate strings in tables'
complete -c gpulaunch -l buffer-size -x -d 'Ring buffer size (default 8M; 256K, 64M)'
complete -c gpulaunch -l btf -x -a '(__fish_complete_path (__aiscope_value))' -d 'External BTF for kernels without /sys/kernel/btf/vmlinux'
complete -c gpulaunch -l list-probes -d 'Print the attach plan and exit'
complete -c gpulaunch -l probe-mode -x -a '(__fish_complete_list , "printf \'%s\n\' fentry kprobe tp_btf raw_tp tracepoint")' -d 'Use only these mechanisms: fentry, kprobe, tp_btf, raw_tp, tracepoint'
complete -c gpulaunch -s v -l verbose -d 'Attach decisions and libbpf debug output on stderr'
complete -c gpulaunch -s h -l help -d 'Give this help list'
complete -c gpulaunch -l usage -d 'Give a short usage message'
complete -c gpulaunch -s V -l version -d 'Print program version'
complete -c gpulaunch -l prometheus -x -a '(__fish_complete_path (__aiscope_value))' -d 'Write metrics to FILE each interval (node_exporter textfile format: a new FILE.tmp.XXXXXX, then rename)'
complete -c gpulaunch -l listen -x -d 'Serve metrics at http://ADDR:PORT/metrics (ADDR defaults to 127.0.0.1; port 0: any free one)'
complete -c gpulaunch -l metric-label -x -d 'Copy the container label (or annotation) KEY into metric label NAME (default: KEY with [^A-Za-z0-9_] as _); at most 4'
