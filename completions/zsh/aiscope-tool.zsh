# zsh: the helpers of every aiscope tool's completion
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make writes $(O)/completions/zsh/_<tool>: the _arguments specs that
# "<tool> --complete=zsh" prints (lib/complete.c, from the tool's own
# options), with this file after its #compdef line. Installed as
# <datadir>/aiscope/completions/zsh/_<tool>, which completions/zsh/_aiscope
# loads for "aiscope <tool> <TAB>". Try one without installing:
#   fpath=(build/completions/zsh $fpath); autoload -Uz compinit; compinit

(( $+functions[_aiscope_tids] )) || _aiscope_tids() {
	local -a tids
	tids=(/proc/<->/task/<->(N:t))
	_sequence -s , compadd -a tids
}
(( $+functions[_aiscope_comms] )) || _aiscope_comms() {
	local -a comms
	comms=(${(f)"$(cat /proc/<->/comm(N) 2>/dev/null)"})
	compadd "$@" -a comms
}
