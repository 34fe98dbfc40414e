# fish completion for numaplace(8), part of aiscope: made by make from numaplace --complete=fish
source (status dirname)/aiscope-tool.fish
complete -c numaplace -f
complete -c numaplace -l by -x -a 'pid tid' -d 'Group by pid (default) or tid'
complete -c numaplace -s s -l sort -x -a 'cpu mem migrated' -d 'Sort key of top-like tables'
__aiscope_options common -c numaplace
__aiscope_options metrics -c numaplace
