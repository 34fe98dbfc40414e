# fish completion for gpulaunch(8), part of aiscope: made by make from gpulaunch --complete=fish
source (status dirname)/aiscope-tool.fish
complete -c gpulaunch -f
complete -c gpulaunch -s e -l events -d 'Stream one event per launch (with its return code)'
complete -c gpulaunch -l latency -d 'Add return probes: errors and call latency'
complete -c gpulaunch -l mem -d 'Allocations (device, pinned, virtual memory), copies by direction, memsets, synchronize waits'
complete -c gpulaunch -l lib -x -a '(__fish_complete_path (__aiscope_value))' -d 'Probe this library or executable only (repeatable)'
complete -c gpulaunch -l mangled -d 'Keep kernel names mangled'
complete -c gpulaunch -l rescan -x -d 'Rescan all processes this often (default 5s, 0: never)'
complete -c gpulaunch -l hold -d 'Stop each new program and each library load of a process (within the filters) until its probes are attached, then continue it'
complete -c gpulaunch -s s -l sort -x -a 'launches errors p99 smem' -d 'Sort key of top-like tables'
__aiscope_options common -c gpulaunch
__aiscope_options metrics -c gpulaunch
