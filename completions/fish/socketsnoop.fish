# fish completion for socketsnoop(8), part of aiscope: made by make from socketsnoop --complete=fish
source (status dirname)/aiscope-tool.fish
complete -c socketsnoop -f
complete -c socketsnoop -s e -l events -d 'Stream connect, accept and close events (and UDP first seen, idle)'
complete -c socketsnoop -l io -d 'Stream one event per send and receive (high volume)'
complete -c socketsnoop -s P -l port -x -d 'Only flows with one of these ports at either end'
complete -c socketsnoop -l proto -x -a 'tcp udp' -d 'Only tcp or udp'
complete -c socketsnoop -s 4 -l ipv4 -d 'Only IPv4 (and v4-mapped IPv6)'
complete -c socketsnoop -s 6 -l ipv6 -d 'Only IPv6'
complete -c socketsnoop -l idle -x -d 'With -e, a UDP socket silent this long is idle (default 30s)'
complete -c socketsnoop -s s -l sort -x -a 'bytes tx rx calls pid' -d 'Sort key of top-like tables'
__aiscope_options common -c socketsnoop
__aiscope_options metrics -c socketsnoop
