# bash: the helpers of every aiscope tool's completion   -*- shell-script -*-
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make writes $(O)/completions/bash/<tool>: the function _<tool> that
# "<tool> --complete=bash" prints (lib/complete.c, from the tool's own
# options), with this file after its first line. Installed as
# <datadir>/aiscope/completions/bash/<tool>, which completions/bash/aiscope
# loads for "aiscope <tool> <TAB>". Try one without installing:
# . build/completions/bash/<tool>. It uses bash-completion's
# _init_completion and _filedir when they are there, plain compgen when not.

# cur, prev, words, cword and split as _init_completion -s sets them.
_aiscope_init_completion()
{
	if declare -F _init_completion >/dev/null 2>&1; then
		_init_completion -s
		return
	fi
	words=("${COMP_WORDS[@]}")
	cword=$COMP_CWORD
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=
	((cword > 0)) && prev=${COMP_WORDS[cword - 1]}
	split=false
	# readline splits "--opt=value" at '=' (COMP_WORDBREAKS):
	# words are (... --opt = value) or, right after the '=', (... --opt =)
	if [[ $cur == = ]]; then
		cur=
		split=true
	elif [[ $prev == = ]] && ((cword > 1)); then
		prev=${COMP_WORDS[cword - 2]}
		split=true
	elif [[ $cur == --*=* ]]; then
		prev=${cur%%=*}
		cur=${cur#*=}
		split=true
	fi
	return 0
}

# _aiscope_words WORD...: the words that start with $cur
_aiscope_words()
{
	mapfile -t COMPREPLY < <(compgen -W "$*" -- "$cur")
}

# _aiscope_list WORD...: one more element of a comma-separated list in $cur
_aiscope_list()
{
	local head='' last=$cur
	if [[ $cur == *,* ]]; then
		head=${cur%,*},
		last=${cur##*,}
	fi
	mapfile -t COMPREPLY < <(compgen -P "$head" -W "$*" -- "$last")
}

_aiscope_pids()
{
	local p=(/proc/[0-9]*)
	_aiscope_list "${p[*]##*/}"
}

_aiscope_tids()
{
	local t=(/proc/[0-9]*/task/[0-9]*)
	_aiscope_list "${t[*]##*/}"
}

_aiscope_comms()
{
	local IFS=$'\n'
	mapfile -t COMPREPLY < <(compgen -W "$(cat /proc/[0-9]*/comm 2>/dev/null | sort -u)" -- "$cur")
}

# -c: cgroup directories, starting at /sys/fs/cgroup/
_aiscope_cgroups()
{
	[[ -z $cur ]] && cur=/sys/fs/cgroup/
	if declare -F _filedir >/dev/null 2>&1; then
		_filedir -d
	else
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -d -- "$cur")
	fi
}

_aiscope_users()
{
	mapfile -t COMPREPLY < <(compgen -u -- "$cur")
}

_aiscope_files()
{
	if declare -F _filedir >/dev/null 2>&1; then
		_filedir
	else
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	fi
}

# _aiscope_rest none|files OPTIONS: what is offered where the word before
# takes no value: OPTIONS for "-", after "--" only arguments, and files as
# arguments for a tool that reads them
_aiscope_rest()
{
	$split && return
	local i
	for ((i = 1; i < cword; i++)); do
		if [[ ${words[i]} == -- ]]; then
			[[ $1 == files ]] && _aiscope_files
			return
		fi
	done
	if [[ $cur == -* ]]; then
		_aiscope_words "$2"
	elif [[ $1 == files ]]; then
		_aiscope_files
	fi
}
