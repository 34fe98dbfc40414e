# fish completion for oomwatch(8), part of aiscope: made by make from oomwatch --complete=fish
source (status dirname)/aiscope-tool.fish
complete -c oomwatch -f
complete -c oomwatch -l warn -x -d 'Alert when a working set reaches PCT% of its limit (default 85)'
complete -c oomwatch -l crit -x -d 'Critical from PCT% (default 95)'
complete -c oomwatch -l psi-warn -x -d 'Alert when memory pressure (full avg10) reaches PCT% (default 10)'
complete -c oomwatch -l psi-crit -x -d 'Critical pressure from PCT% (default 40)'
complete -c oomwatch -l alloc-min -x -d 'Report mmap/mremap/brk of at least SIZE (default 512M, 0: off)'
complete -c oomwatch -l check -d 'Scan every memory cgroup once; exit 0 ok, 3 warn, 4 crit'
complete -c oomwatch -s s -l sort -x -a 'pct ws usage limit' -d 'Sort key of top-like tables'
__aiscope_options common -c oomwatch
__aiscope_options metrics -c oomwatch
