# fish completion for rdmasnoop(8), part of aiscope: made by make from rdmasnoop --complete=fish
source (status dirname)/aiscope-tool.fish
complete -c rdmasnoop -f
complete -c rdmasnoop -s e -l events -d 'Stream device opens, connections, memory registrations and completion errors'
complete -c rdmasnoop -l rescan -x -d 'Rescan all processes this often (default 5s, 0: never)'
complete -c rdmasnoop -l wait-device -d 'Run on a host with no RDMA device yet (a DaemonSet on every node, a driver that loads later) instead of exiting 77: processes that open one once it appears are traced'
complete -c rdmasnoop -l hold -d 'Stop each process that opens a device until its provider is probed, and each new program and library load (within the filters) until libibverbs is, then continue it: no call of a new provider\'s first opener is missed'
complete -c rdmasnoop -s s -l sort -x -a 'bytes wrs errors p99' -d 'Sort key of top-like tables'
__aiscope_options common -c rdmasnoop
__aiscope_options metrics -c rdmasnoop
