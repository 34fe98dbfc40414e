# fish completion for cachestat(8), part of aiscope: made by make from cachestat --complete=fish
source (status dirname)/aiscope-tool.fish
complete -c cachestat -f
complete -c cachestat -l by -x -a 'pid container file host' -d 'Break down by pid, container or file (default: host only)'
complete -c cachestat -l llc -d 'CPU last-level-cache references and misses per process (hardware counters)'
complete -c cachestat -s s -l sort -x -a 'misses hits accesses dirties' -d 'Sort key of top-like tables'
__aiscope_options common -c cachestat
__aiscope_options metrics -c cachestat
