#!/bin/sh
# Runs a command as root: directly when root, else through sudo when it
# exists, else says plainly that root is needed.
if [ "$(id -u)" -eq 0 ]; then
	exec "$@"
fi
if command -v sudo >/dev/null 2>&1; then
	echo "$1 needs root: re-running under sudo" >&2
	exec sudo -E "$@"
fi
echo "$1 needs root (BPF programs are loaded): run it as root; there is no sudo here" >&2
exit 1
