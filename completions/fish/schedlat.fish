# fish completion for schedlat(8), part of aiscope: made by make from schedlat --complete=fish
source (status dirname)/aiscope-tool.fish
complete -c schedlat -f
complete -c schedlat -l by -x -a 'pid tid cgroup container host' -d 'Group by pid (default), tid, cgroup, container, host'
complete -c schedlat -s H -l hist -d 'Print log2 histograms (host-wide unless --by)'
complete -c schedlat -l min -x -d 'Stream each wait longer than DUR (e.g. 10ms)'
complete -c schedlat -s s -l sort -x -a 'wait p99 max runs avg' -d 'Sort key of top-like tables'
__aiscope_options common -c schedlat
__aiscope_options metrics -c schedlat
