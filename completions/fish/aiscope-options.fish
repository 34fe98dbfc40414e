# fish: the options lib gives every tool, made by make from TOOL --complete=fish-shared
# (lib/complete.c: every tool prints the same); aiscope-tool.fish loads it

# __aiscope_options GROUP ARG...: complete ARG... (-c TOOL, or -c aiscope -n COND)
# for each of GROUP's options
function __aiscope_options
    switch $argv[1]
        case common
            complete $argv[2..-1] -s p -l pid -x -a '(__fish_complete_list , __fish_complete_pids)' -d 'Only these processes (thread-group ids)'
            complete $argv[2..-1] -s t -l tid -x -a '(__fish_complete_list , "string replace -r \'.*/\' \'\' /proc/*/task/*")' -d 'Only these threads'
            complete $argv[2..-1] -s c -l cgroup -x -a '(__fish_complete_directories (__aiscope_value))' -d 'Only tasks in this cgroup directory or below it'
            complete $argv[2..-1] -l container -x -d 'Only this container: its name, full id or unique prefix (>= 4 hex)'
            complete $argv[2..-1] -l pod -x -d 'Only this Kubernetes pod\'s containers, those started later too'
            complete $argv[2..-1] -l namespace -x -d 'Only this Kubernetes namespace\'s containers (with --pod: the pod\'s)'
            complete $argv[2..-1] -s u -l uid -x -a '(__fish_complete_users)' -d 'Only this user (number or name)'
            complete $argv[2..-1] -l comm -x -a '(cat /proc/*/comm 2>/dev/null | sort -u)' -d 'Only tasks whose comm is NAME (first 15 bytes)'
            complete $argv[2..-1] -s j -l json -d 'JSON lines on stdout'
            complete $argv[2..-1] -s i -l interval -x -d 'Reporting interval (default 1s)'
            complete $argv[2..-1] -s d -l duration -x -d 'Stop after DUR (500ms, 10, 10s, 2m)'
            complete $argv[2..-1] -s n -l count -x -d 'Stop after N records (events, or intervals)'
            complete $argv[2..-1] -s T -l timestamp -d 'Add a TIME column to tables'
            complete $argv[2..-1] -s C -l noclear -d 'Never clear the screen between intervals'
            complete $argv[2..-1] -s r -l rows -x -d 'Rows per interval (default 20, 0: all)'
            complete $argv[2..-1] -l wide -d 'Never truncate strings in tables'
            complete $argv[2..-1] -l buffer-size -x -d 'Ring buffer size (default 8M; 256K, 64M)'
            complete $argv[2..-1] -l btf -x -a '(__fish_complete_path (__aiscope_value))' -d 'External BTF for kernels without /sys/kernel/btf/vmlinux'
            complete $argv[2..-1] -l list-probes -d 'Print the attach plan and exit'
            complete $argv[2..-1] -l probe-mode -x -a '(__fish_complete_list , "printf \'%s\n\' fentry kprobe tp_btf raw_tp tracepoint")' -d 'Use only these mechanisms: fentry, kprobe, tp_btf, raw_tp, tracepoint'
            complete $argv[2..-1] -s v -l verbose -d 'Attach decisions and libbpf debug output on stderr'
            complete $argv[2..-1] -s h -l help -d 'Give this help list'
            complete $argv[2..-1] -l usage -d 'Give a short usage message'
            complete $argv[2..-1] -s V -l version -d 'Print program version'
        case metrics
            complete $argv[2..-1] -l prometheus -x -a '(__fish_complete_path (__aiscope_value))' -d 'Write metrics to FILE each interval (node_exporter textfile format: a new FILE.tmp.XXXXXX, then rename)'
            complete $argv[2..-1] -l listen -x -d 'Serve metrics at http://ADDR:PORT/metrics (ADDR defaults to 127.0.0.1; port 0: any free one)'
            complete $argv[2..-1] -l metric-label -x -d 'Copy the container label (or annotation) KEY into metric label NAME (default: KEY with [^A-Za-z0-9_] as _); at most 4'
    end
end
