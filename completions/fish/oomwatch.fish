# fish completion for oomwatch(8), part of aiscope: made by make from oomwatch --complete=fish
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
complete -c oomwatch -f
complete -c oomwatch -l warn -x -d 'Alert when a working set reaches PCT% of its limit (default 85)'
complete -c oomwatch -l crit -x -d 'Critical from PCT% (default 95)'
complete -c oomwatch -l psi-warn -x -d 'Alert when memory pressure (full avg10) reaches PCT% (default 10)'
complete -c oomwatch -l psi-crit -x -d 'Critical pressure from PCT% (default 40)'
complete -c oomwatch -l alloc-min -x -d 'Report mmap/mremap/brk of at least SIZE (default 512M, 0: off)'
complete -c oomwatch -l check -d 'Scan every memory cgroup once; exit 0 ok, 3 warn, 4 crit'
complete -c oomwatch -s p -l pid -x -a '(__fish_complete_list , __fish_complete_pids)' -d 'Only these processes (thread-group ids)'
complete -c oomwatch -s t -l tid -x -a '(__fish_complete_list , "string replace -r \'.*/\' \'\' /proc/*/task/*")' -d 'Only these threads'
complete -c oomwatch -s c -l cgroup -x -a '(__fish_complete_directories (__aiscope_value))' -d 'Only tasks in this cgroup directory or below it'
complete -c oomwatch -l container -x -d 'Only this container: its name, full id or unique prefix (>= 4 hex)'
complete -c oomwatch -l pod -x -d 'Only this Kubernetes pod\'s containers (by its pod cgroup)'
complete -c oomwatch -l namespace -x -d 'With --pod: the pod\'s namespace'
complete -c oomwatch -s u -l uid -x -a '(__fish_complete_users)' -d 'Only this user (number or name)'
complete -c oomwatch -l comm -x -a '(cat /proc/*/comm 2>/dev/null | sort -u)' -d 'Only tasks whose comm is NAME (first 15 bytes)'
complete -c oomwatch -s j -l json -d 'JSON lines on stdout'
complete -c oomwatch -s i -l interval -x -d 'Reporting interval (default 1s)'
complete -c oomwatch -s d -l duration -x -d 'Stop after DUR (500ms, 10, 10s, 2m)'
complete -c oomwatch -s n -l count -x -d 'Stop after N records (events, or intervals)'
complete -c oomwatch -s T -l timestamp -d 'Add a TIME column to tables'
complete -c oomwatch -s C -l noclear -d 'Never clear the screen between intervals'
complete -c oomwatch -s r -l rows -x -d 'Rows per interval (default 20, 0: all)'
complete -c oomwatch -s s -l sort -x -a 'pct ws usage limit' -d 'Sort key of top-like tables'
complete -c oomwatch -l wide -d 'Never truncate strings in tables'
complete -c oomwatch -l buffer-size -x -d 'Ring buffer size (default 8M; 256K, 64M)'
complete -c oomwatch -l btf -x -a '(__fish_complete_path (__aiscope_value))' -d 'External BTF for kernels without /sys/kernel/btf/vmlinux'
complete -c oomwatch -l list-probes -d 'Print the attach plan and exit'
complete -c oomwatch -l probe-mode -x -a '(__fish_complete_list , "printf \'%s\n\' fentry kprobe tp_btf raw_tp tracepoint")' -d 'Use only these mechanisms: fentry, kprobe, tp_btf, raw_tp, tracepoint'
complete -c oomwatch -s v -l verbose -d 'Attach decisions and libbpf debug output on stderr'
complete -c oomwatch -s h -l help -d 'Give this help list'
complete -c oomwatch -l usage -d 'Give a short usage message'
complete -c oomwatch -s V -l version -d 'Print program version'
complete -c oomwatch -l prometheus -x -a '(__fish_complete_path (__aiscope_value))' -d 'Write metrics to FILE each interval (node_exporter textfile format: a new FILE.tmp.XXXXXX, then rename)'
complete -c oomwatch -l listen -x -d 'Serve metrics at http://ADDR:PORT/metrics (ADDR defaults to 127.0.0.1; port 0: any free one)'
complete -c oomwatch -l metric-label -x -d 'Copy the container label (or annotation) KEY into metric label NAME (default: KEY with [^A-Za-z0-9_] as _); at most 4'
