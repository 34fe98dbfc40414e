# fish completion for socketsnoop(8), part of aiscope: made by make from socketsnoop --complete=fish
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
complete -c socketsnoop -f
complete -c socketsnoop -s e -l events -d 'Stream connect, accept and close events (and UDP first seen, idle)'
complete -c socketsnoop -l io -d 'Stream one event per send and receive (high volume)'
complete -c socketsnoop -s P -l port -x -d 'Only flows with one of these ports at either end'
complete -c socketsnoop -l proto -x -a 'tcp udp' -d 'Only tcp or udp'
complete -c socketsnoop -s 4 -l ipv4 -d 'Only IPv4 (and v4-mapped IPv6)'
complete -c socketsnoop -s 6 -l ipv6 -d 'Only IPv6'
complete -c socketsnoop -l idle -x -d 'With -e, a UDP socket silent this long is idle (default 30s)'
complete -c socketsnoop -s p -l pid -x -a '(__fish_complete_list , __fish_complete_pids)' -d 'Only these processes (thread-group ids)'
complete -c socketsnoop -s t -l tid -x -a '(__fish_complete_list , "string replace -r \'.*/\' \'\' /proc/*/task/*")' -d 'Only these threads'
complete -c socketsnoop -s c -l cgroup -x -a '(__fish_complete_directories (__aiscope_value))' -d 'Only tasks in this cgroup directory or below it'
complete -c socketsnoop -l container -x -d 'Only this container: its name, full id or unique prefix (>= 4 hex)'
complete -c socketsnoop -l pod -x -d 'Only this Kubernetes pod\'s containers (by its pod cgroup)'
complete -c socketsnoop -l namespace -x -d 'With --pod: the pod\'s namespace'
complete -c socketsnoop -s u -l uid -x -a '(__fish_complete_users)' -d 'Only this user (number or name)'
complete -c socketsnoop -l comm -x -a '(cat /proc/*/comm 2>/dev/null | sort -u)' -d 'Only tasks whose comm is NAME (first 15 bytes)'
complete -c socketsnoop -s j -l json -d 'JSON lines on stdout'
complete -c socketsnoop -s i -l interval -x -d 'Reporting interval (default 1s)'
complete -c socketsnoop -s d -l duration -x -d 'Stop after DUR (500ms, 10, 10s, 2m)'
complete -c socketsnoop -s n -l count -x -d 'Stop after N records (events, or intervals)'
complete -c socketsnoop -s T -l timestamp -d 'Add a TIME column to tables'
complete -c socketsnoop -s C -l noclear -d 'Never clear the screen between intervals'
complete -c socketsnoop -s r -l rows -x -d 'Rows per interval (default 20, 0: all)'
complete -c socketsnoop -s s -l sort -x -a 'bytes tx rx calls pid' -d 'Sort key of top-like tables'
complete -c socketsnoop -l wide -d 'Never truncate strings in tables'
complete -c socketsnoop -l buffer-size -x -d 'Ring buffer size (default 8M; 256K, 64M)'
complete -c socketsnoop -l btf -x -a '(__fish_complete_path (__aiscope_value))' -d 'External BTF for kernels without /sys/kernel/btf/vmlinux'
complete -c socketsnoop -l list-probes -d 'Print the attach plan and exit'
complete -c socketsnoop -l probe-mode -x -a '(__fish_complete_list , "printf \'%s\n\' fentry kprobe tp_btf raw_tp tracepoint")' -d 'Use only these mechanisms: fentry, kprobe, tp_btf, raw_tp, tracepoint'
complete -c socketsnoop -s v -l verbose -d 'Attach decisions and libbpf debug output on stderr'
complete -c socketsnoop -s h -l help -d 'Give this help list'
complete -c socketsnoop -l usage -d 'Give a short usage message'
complete -c socketsnoop -s V -l version -d 'Print program version'
complete -c socketsnoop -l prometheus -x -a '(__fish_complete_path (__aiscope_value))' -d 'Write metrics to FILE each interval (node_exporter textfile format: a new FILE.tmp.XXXXXX, then rename)'
complete -c socketsnoop -l listen -x -d 'Serve metrics at http://ADDR:PORT/metrics (ADDR defaults to 127.0.0.1; port 0: any free one)'
complete -c socketsnoop -l metric-label -x -d 'Copy the container label (or annotation) KEY into metric label NAME (default: KEY with [^A-Za-z0-9_] as _); at most 4'
