# fish completion for ipcsnoop(8), part of aiscope: made by make from ipcsnoop --complete=fish
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
complete -c ipcsnoop -f
complete -c ipcsnoop -s e -l events -d 'Stream one line per operation instead of the table'
complete -c ipcsnoop -l kind -x -a '(__fish_complete_list , "printf \'%s\n\' pipe fifo unix msq mq eventfd shm")' -d 'Only these: pipe, fifo, unix, msq, mq, eventfd, shm'
complete -c ipcsnoop -s p -l pid -x -a '(__fish_complete_list , __fish_complete_pids)' -d 'Only these processes (thread-group ids)'
complete -c ipcsnoop -s t -l tid -x -a '(__fish_complete_list , "string replace -r \'.*/\' \'\' /proc/*/task/*")' -d 'Only these threads'
complete -c ipcsnoop -s c -l cgroup -x -a '(__fish_complete_directories (__aiscope_value))' -d 'Only tasks in this cgroup directory or below it'
complete -c ipcsnoop -l container -x -d 'Only this container: its name, full id or unique prefix (>= 4 hex)'
complete -c ipcsnoop -l pod -x -d 'Only this Kubernetes pod\'s containers (by its pod cgroup)'
complete -c ipcsnoop -l namespace -x -d 'With --pod: the pod\'s namespace'
complete -c ipcsnoop -s u -l uid -x -a '(__fish_complete_users)' -d 'Only this user (number or name)'
complete -c ipcsnoop -l comm -x -a '(cat /proc/*/comm 2>/dev/null | sort -u)' -d 'Only tasks whose comm is NAME (first 15 bytes)'
complete -c ipcsnoop -s j -l json -d 'JSON lines on stdout'
complete -c ipcsnoop -s i -l interval -x -d 'Reporting interval (default 1s)'
complete -c ipcsnoop -s d -l duration -x -d 'Stop after DUR (500ms, 10, 10s, 2m)'
complete -c ipcsnoop -s n -l count -x -d 'Stop after N records (events, or intervals)'
complete -c ipcsnoop -s T -l timestamp -d 'Add a TIME column to tables'
complete -c ipcsnoop -s C -l noclear -d 'Never clear the screen between intervals'
complete -c ipcsnoop -s r -l rows -x -d 'Rows per interval (default 20, 0: all)'
complete -c ipcsnoop -s s -l sort -x -a 'bytes msgs read' -d 'Sort key of top-like tables'
complete -c ipcsnoop -l wide -d 'Never truncate strings in tables'
complete -c ipcsnoop -l buffer-size -x -d 'Ring buffer size (default 8M; 256K, 64M)'
complete -c ipcsnoop -l btf -x -a '(__fish_complete_path (__aiscope_value))' -d 'External BTF for kernels without /sys/kernel/btf/vmlinux'
complete -c ipcsnoop -l list-probes -d 'Print the attach plan and exit'
complete -c ipcsnoop -l probe-mode -x -a '(__fish_complete_list , "printf \'%s\n\' fentry kprobe tp_btf raw_tp tracepoint")' -d 'Use only these mechanisms: fentry, kprobe, tp_btf, raw_tp, tracepoint'
complete -c ipcsnoop -s v -l verbose -d 'Attach decisions and libbpf debug output on stderr'
complete -c ipcsnoop -s h -l help -d 'Give this help list'
complete -c ipcsnoop -l usage -d 'Give a short usage message'
complete -c ipcsnoop -s V -l version -d 'Print program version'
complete -c ipcsnoop -l prometheus -x -a '(__fish_complete_path (__aiscope_value))' -d 'Write metrics to FILE each interval (node_exporter textfile format: a new FILE.tmp.XXXXXX, then rename)'
complete -c ipcsnoop -l listen -x -d 'Serve metrics at http://ADDR:PORT/metrics (ADDR defaults to 127.0.0.1; port 0: any free one)'
complete -c ipcsnoop -l metric-label -x -d 'Copy the container label (or annotation) KEY into metric label NAME (default: KEY with [^A-Za-z0-9_] as _); at most 4'
