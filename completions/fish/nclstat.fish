# fish completion for nclstat(8), part of aiscope: made by make from nclstat --complete=fish
source (status dirname)/aiscope-tool.fish
complete -c nclstat -f
complete -c nclstat -l lib -x -a '(__fish_complete_path (__aiscope_value))' -d 'Probe this libnccl (or an executable with NCCL linked in) instead of finding it in processes; repeatable'
complete -c nclstat -s e -l events -d 'Stream one event per call (at its return)'
complete -c nclstat -l hang -x -d 'Report calls not returned after DUR (default 10s)'
complete -c nclstat -l busbw -d 'Add the bus-bandwidth estimate column (nccl-tests factors)'
complete -c nclstat -l no-return -d 'Entry probes only on collectives: half the cost per call, no rc, latency or hangs'
complete -c nclstat -l hold -d 'Stop each new program and each library load of a process (within the filters) until its probes are attached, then continue it'
complete -c nclstat -l ras -x -d 'Ask NCCL\'s RAS service there for every communicator of the job, all its hosts (default localhost:28028; off: never)'
complete -c nclstat -l ras-every -x -d 'Ask RAS every DUR (default 30s; it gathers from every host of the job)'
complete -c nclstat -s s -l sort -x -a 'bytes calls lat p99 errors' -d 'Sort key of top-like tables'
__aiscope_options common -c nclstat
__aiscope_options metrics -c nclstat
