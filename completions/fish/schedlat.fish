# fish completion for schedlat(8), part of aiscope: made by make from schedlat --complete=fish
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
complete -c schedlat -f
complete -c schedlat -l by -x -a 'pid tid cgroup container host' -d 'Group by pid (default), tid, cgroup, container, host'
complete -c schedlat -s H -l hist -d 'Print log2 histograms (host-wide unless --by)'
complete -c schedlat -l min -x -d 'Stream each wait longer than DUR (e.g. 10ms)'
complete -c schedlat -s p -l pid -x -a '(__fish_complete_list , __fish_complete_pids)' -d 'Only these processes (thread-group ids)'
complete -c schedlat -s t -l tid -x -a '(__fish_complete_list , "string replace -r \'.*/\' \'\' /proc/*/task/*")' -d 'Only these threads'
complete -c schedlat -s c -l cgroup -x -a '(__fish_complete_directories (__aiscope_value))' -d 'Only tasks in this cgroup directory or below it'
complete -c schedlat -l container -x -d 'Only this container: its name, full id or unique prefix (>= 4 hex)'
complete -c schedlat -l pod -x -d 'Only this Kubernetes pod\'s containers (by its pod cgroup)'
complete -c schedlat -l namespace -x -d 'With --pod: the pod\'s namespace'
complete -c schedlat -s u -l uid -x -a '(__fish_complete_users)' -d 'Only this user (number or name)'
complete -c schedlat -l comm -x -a '(cat /proc/*/comm 2>/dev/null | sort -u)' -d 'Only tasks whose comm is NAME (first 15 bytes)'
complete -c schedlat -s j -l json -d 'JSON lines on stdout'
complete -c schedlat -s i -l interval -x -d 'Reporting interval (default 1s)'
complete -c schedlat -s d -l duration -x -d 'Stop after DUR (500ms, 10, 10s, 2m)'
complete -c schedlat -s n -l count -x -d 'Stop after N records (events, or intervals)'
complete -c schedlat -s T -l timestamp -d 'Add a TIME column to tables'
complete -c schedlat -s C -l noclear -d 'Never clear the screen between intervals'
complete -c schedlat -s r -l rows -x -d 'Rows per interval (default 20, 0: all)'
complete -c schedlat -s s -l sort -x -a 'wait p99 max runs avg' -d 'Sort key of top-like tables'
complete -c schedlat -l wide -d 'Never truncate strings in tables'
complete -c schedlat -l buffer-size -x -d 'Ring buffer size (default 8M; 256K, 64M)'
complete -c schedlat -l btf -x -a '(__fish_complete_path (__aiscope_value))' -d 'External BTF for kernels without /sys/kernel/btf/vmlinux'
complete -c schedlat -l list-probes -d 'Print the attach plan and exit'
complete -c schedlat -l probe-mode -x -a '(__fish_complete_list , "printf \'%s\n\' fentry kprobe tp_btf raw_tp tracepoint")' -d 'Use only these mechanisms: fentry, kprobe, tp_btf, raw_tp, tracepoint'
complete -c schedlat -s v -l verbose -d 'Attach decisions and libbpf debug output on stderr'
complete -c schedlat -s h -l help -d 'Give this help list'
complete -c schedlat -l usage -d 'Give a short usage message'
complete -c schedlat -s V -l version -d 'Print program version'
complete -c schedlat -l prometheus -x -a '(__fish_complete_path (__aiscope_value))' -d 'Write metrics to FILE each interval (node_exporter textfile format: a new FILE.tmp.XXXXXX, then rename)'
complete -c schedlat -l listen -x -d 'Serve metrics at http://ADDR:PORT/metrics (ADDR defaults to 127.0.0.1; port 0: any free one)'
complete -c schedlat -l metric-label -x -d 'Copy the container label (or annotation) KEY into metric label NAME (default: KEY with [^A-Za-z0-9_] as _); at most 4'
