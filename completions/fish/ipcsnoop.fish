# fish completion for ipcsnoop(8), part of aiscope: made by make from ipcsnoop --complete=fish
source (status dirname)/aiscope-tool.fish
complete -c ipcsnoop -f
complete -c ipcsnoop -s e -l events -d 'Stream one line per operation instead of the table'
complete -c ipcsnoop -l kind -x -a '(__fish_complete_list , "printf \'%s\n\' pipe fifo unix msq mq eventfd shm")' -d 'Only these: pipe, fifo, unix, msq, mq, eventfd, shm'
complete -c ipcsnoop -s s -l sort -x -a 'bytes msgs read' -d 'Sort key of top-like tables'
__aiscope_options common -c ipcsnoop
__aiscope_options metrics -c ipcsnoop
