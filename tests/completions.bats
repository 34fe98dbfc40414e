#!/usr/bin/env bats
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# The documentation that ships with every tool, kept in step with the tool
# (CONTRACT section 8): for each tool (tools/<tool>.c or tools/<tool>/),
#   - the bash, zsh and fish completions, which make writes into
#     $AISCOPE_BUILD/completions/ from the tool's own options (lib/complete.c),
#     with the shared files they load (the helpers and the options lib gives
#     every tool), offer exactly the options that "<tool> --help" lists (long
#     options and short letters), and complete a value after exactly the
#     options that take one, from the build tree and as make install lays
#     them out;
#   - man/<tool>.8 exists, renders without groff warnings, has the contract's
#     sections and exit codes, and its OPTIONS describe exactly those of --help;
#   - README.md has a row for it.
# No root needed. zsh and fish are used when installed; without them their
# files are read as text (and when they are installed, the text reading is
# checked against what the shell itself sees, so that the fallback stays true).

TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
BIN=${AISCOPE_BUILD:-$TOP/build}
case $BIN in /*) ;; *) BIN=$TOP/$BIN ;; esac
BASH_COMPLETION=${BASH_COMPLETION:-/usr/share/bash-completion/bash_completion}

# the files of completions/ that every tool's completion loads: the helpers
# (written by hand) and the completion of lib's shared options (make's)
HELPERS="bash/aiscope-tool zsh/_aiscope_tids zsh/_aiscope_comms fish/aiscope-tool.fish"
SHARED="bash/aiscope-options zsh/_aiscope_options fish/aiscope-options.fish"

setup() {
	cd "$TOP" || return 1
}

# every tool: the names of tools/*.c and of the folders tools/*/ of .c
# files (the Makefile's TOOLS)
tools() {
	local f
	for f in "$TOP"/tools/*.c "$TOP"/tools/*/; do
		[ -e "$f" ] || continue
		[ -f "$f" ] || compgen -G "$f*.c" >/dev/null || continue
		f=${f%/}
		f=${f##*/}
		echo "${f%.c}"
	done
}

need_binary() {
	[ -x "$BIN/$1" ] || {
		echo "$BIN/$1 is not built (run make, or set AISCOPE_BUILD)" >&2
		return 1
	}
}

# help_opts TOOL [args]: the options "TOOL --help" lists, one per line
# ("-p", "--pid"), sorted; with "args", only those that take a value.
# An option line is "  -x, --long=ARG   text" or "      --long=ARG   text".
help_opts() {
	local out
	need_binary "$1" || return 1
	out=$(env -u ARGP_HELP_FMT "$BIN/$1" --help) || return 1
	printf '%s\n' "$out" | awk -v want="${2:-}" '
		/^  -[^- ]/ || /^      --[[:alnum:]]/ {
			s = $0
			sub(/^ +/, "", s)
			sub(/  .*/, "", s)		# the description starts after two spaces
			arg = s ~ /=/ || s ~ /^-[^-] [^ ]/
			n = split(s, parts, ", ")
			for (i = 1; i <= n; i++) {
				o = parts[i]
				sub(/[= [].*/, "", o)
				if (want != "args" || arg)
					print o
			}
		}' | LC_ALL=C sort -u
}

# same SET_A SET_B WHAT: compares two sorted lists, shows the difference
same() {
	if [ "$1" != "$2" ]; then
		echo "$3 differ (< only in the first list, > only in the second):" >&2
		diff <(printf '%s\n' "$1") <(printf '%s\n' "$2") >&2
		return 1
	fi
	[ -n "$1" ] || { echo "$3: empty option list" >&2; return 1; }
}

# ---- bash ----

# bash_complete TOOL BASH_COMPLETION_FILE|"" WORD...: what the completion
# function offers for the last WORD, one per line. Words are given as
# readline splits them (COMP_WORDBREAKS), e.g. "--by" "=" "c" for --by=c.
# With no WORD, each line of stdin is one such query (its words separated
# by tabs) and each answer is one line, ">" and its replies separated by
# tabs: one bash for them all (sourcing bash-completion is most of the time
# of a query).
bash_complete() {
	local tool=$1 bc=$2
	shift 2
	bash --norc --noprofile -c '
		tool=$1 bc=$2 bin=$3
		shift 3
		if [ -n "$bc" ]; then
			. "$bc" || exit 1
		fi
		. "$bin/completions/bash/$tool" || exit 1
		[ "$(complete -p "$tool")" = "complete -F _$tool $tool" ] ||
			{ echo "no complete -F _$tool $tool" >&2; exit 1; }
		query() {
			COMP_WORDS=("$@")
			COMP_CWORD=$(($# - 1))
			COMP_LINE=$(printf "%s " "$@")
			COMP_LINE=${COMP_LINE% }
			COMP_LINE=${COMP_LINE// = /=}
			COMP_LINE=${COMP_LINE% =}
			[[ ${COMP_WORDS[COMP_CWORD]} == = ]] && COMP_LINE+="="
			COMP_POINT=${#COMP_LINE}
			COMP_TYPE=9 COMP_KEY=9
			COMPREPLY=()
			"_$tool" "$tool" "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		}
		if [ $# -gt 0 ]; then
			query "$@"
			printf "%s\n" "${COMPREPLY[@]}"
			exit 0
		fi
		while IFS=$'"'"'\t'"'"' read -r -a words; do
			query "${words[@]}"
			(IFS=$'"'"'\t'"'"'; printf ">%s\n" "${COMPREPLY[*]}")
		done
	' bash "$tool" "$bc" "$BIN" "$@"
}

# bash_opts TOOL BC: the options offered for "TOOL -" and "TOOL --"
bash_opts() {
	local one two
	one=$(bash_complete "$1" "$2" "$1" -) || return 1
	two=$(bash_complete "$1" "$2" "$1" --) || return 1
	# "--" must offer the long options of "-", no more, no less
	same "$(printf '%s\n' "$one" | grep -- '^--' | LC_ALL=C sort -u)" \
		"$(printf '%s\n' "$two" | LC_ALL=C sort -u)" "bash: '$1 --' and the long options of '$1 -'" ||
		return 1
	printf '%s\n' "$one" "$two" | grep -v '^$' | LC_ALL=C sort -u
}

# bash_arg_opts TOOL BC: the options after which "-" completes a value
# rather than options (run where no file name starts with "-")
bash_arg_opts() {
	local opts answers
	opts=$(help_opts "$1") || return 1
	answers=$(printf '%s\n' "$opts" | while IFS= read -r o; do
		printf '%s\t%s\t-\n' "$1" "$o"
	done | bash_complete "$1" "$2") || return 1
	[ "$(printf '%s\n' "$opts" | wc -l)" = "$(printf '%s\n' "$answers" | wc -l)" ] || {
		echo "bash: $1: $(printf '%s\n' "$answers" | wc -l) answers to" \
			"$(printf '%s\n' "$opts" | wc -l) queries" >&2
		return 1
	}
	# an answer is ">" and the replies, tab-separated
	paste <(printf '%s\n' "$opts") <(printf '%s\n' "$answers") | awk -F '\t' '
		$2 !~ /^>/ { exit 1 }
		{ sub(/^>/, "", $2); arg = 1
		  for (i = 2; i <= NF; i++) if ($i ~ /^-/) arg = 0
		  if (arg) print $1 }' | LC_ALL=C sort -u
	[ "${PIPESTATUS[1]}" = 0 ]
}

check_bash() {
	local bc=$1 t help got empty
	empty=$BATS_TEST_TMPDIR/empty
	mkdir -p "$empty"
	for t in $(tools); do
		help=$(help_opts "$t") || return 1
		got=$(bash_opts "$t" "$bc") || return 1
		same "$help" "$got" "bash: options of $t" || return 1
		help=$(help_opts "$t" args) || return 1
		got=$(cd "$empty" && bash_arg_opts "$t" "$bc") || return 1
		same "$help" "$got" "bash: options of $t that take a value" || return 1
	done
}

@test "bash completion offers exactly the options of --help (plain bash)" {
	check_bash ""
}

@test "bash completion offers exactly the options of --help (with bash-completion)" {
	[ -r "$BASH_COMPLETION" ] || skip "bash-completion is not installed"
	check_bash "$BASH_COMPLETION"
}

@test "bash completion completes values, also after --opt=" {
	local t bc
	for bc in "" "$BASH_COMPLETION"; do
		[ -z "$bc" ] || [ -r "$bc" ] || continue
		for t in $(tools); do
			run bash_complete "$t" "$bc" "$t" --probe-mode tp_btf,r
			[ "$status" -eq 0 ]
			[ "$output" = "tp_btf,raw_tp" ]
			run bash_complete "$t" "$bc" "$t" --probe-mode = ""
			[ "$status" -eq 0 ]
			[ "$(printf '%s\n' "$output" | LC_ALL=C sort | tr '\n' ' ')" = "fentry kprobe raw_tp tp_btf tracepoint " ]
			run bash_complete "$t" "$bc" "$t" --probe-mode =
			[ "$(printf '%s\n' "$output" | LC_ALL=C sort | tr '\n' ' ')" = "fentry kprobe raw_tp tp_btf tracepoint " ]
			run bash_complete "$t" "$bc" "$t" -j --probe-mode = tr
			[ "$output" = tracepoint ]
			run bash_complete "$t" "$bc" "$t" -p "$$,"
			[[ "$output" == *"$$,$$"* ]]
			run bash_complete "$t" "$bc" "$t" -c /sys/fs/cgr
			[[ "$output" == /sys/fs/cgroup* ]]
			# after "--" only arguments follow
			run bash_complete "$t" "$bc" "$t" -- -
			[ -z "$output" ]
		done
		run bash_complete schedlat "$bc" schedlat --by = c
		[ "$(printf '%s\n' "$output" | tr '\n' ' ')" = "cgroup container " ]
		run bash_complete schedlat "$bc" schedlat -s p
		[ "$output" = p99 ]
	done
}

# ---- zsh ----

# zsh_specs_zsh TOOL: the _arguments specs as zsh itself expands them
zsh_specs_zsh() {
	zsh -f -c '
		fpath=("$2/completions/zsh" $fpath)
		autoload -Uz "_$1"
		_arguments() {
			# drop _arguments own flags; every spec has a [description]
			while [[ $1 == -[sSCwWn0] ]]; do shift; done
			print -rl -- "$@"
		}
		"_$1"
	' zsh "$1" "$BIN"
}

# zsh_specs_text TOOL: the same, from the files' text: the tool's function
# and _aiscope_options (the shared options' specs it adds) run alike in
# bash (quotes, {a,b} braces, arrays)
zsh_specs_text() {
	local f=$BIN/completions/zsh/_$1
	grep -q '^_arguments' "$f" || { echo "no _arguments in $f" >&2; return 1; }
	bash --norc --noprofile -c '
		autoload() { :; }
		_arguments() {
			while [[ $1 == -[sSCwWn0] ]]; do shift; done
			printf "%s\n" "$@"
		}
		eval "_aiscope_options() { $(< "$2/_aiscope_options")
		}"
		eval "_tool() { $(< "$1")
		}"
		_tool
	' bash "$f" "$BIN/completions/zsh"
}

# zsh_parse [args]: specs on stdin -> option names (with "args": those
# that take a value: a ":message:action" after the description)
zsh_parse() {
	awk -v want="${1:-}" '
		/^[0-9*]*:/ { next }			# positional arguments
		{
			s = $0
			if (s ~ /^\(/) sub(/^\([^)]*\)/, "", s)	# exclusion list
			sub(/^[*!]/, "", s)
			if (!match(s, /^(--[[:alnum:]][[:alnum:]-]*[[:alnum:]]|--[[:alnum:]]|-[^-])/))
				next
			name = substr(s, 1, RLENGTH)
			rest = substr(s, RLENGTH + 1)
			sub(/\[[^]]*\]/, "", rest)		# the description
			if (want != "args" || rest ~ /:/)
				print name
		}' | LC_ALL=C sort -u
}

# read_by_shell SHELL TEXT WHAT COMMAND...: sets READING to TEXT, the
# options read from the completion file as text; where SHELL is installed
# COMMAND (SHELL's own reading) must say the same (WHAT names the check)
read_by_shell() {
	local shell=$1 text=$2 what=$3
	shift 3
	READING=$text
	command -v "$shell" > /dev/null 2>&1 || return 0
	READING=$("$@")
	same "$READING" "$text" "$what"
}

@test "zsh completion offers exactly the options of --help" {
	local t help specs
	for t in $(tools); do
		[ "$(head -n 1 "$BIN/completions/zsh/_$t")" = "#compdef $t" ]
		# the text reading used where zsh is missing must agree with zsh
		read_by_shell zsh "$(zsh_specs_text "$t")" "zsh: specs of $t read as text vs by zsh" \
			zsh_specs_zsh "$t"
		specs=$READING
		help=$(help_opts "$t")
		same "$help" "$(printf '%s\n' "$specs" | zsh_parse)" "zsh: options of $t"
		help=$(help_opts "$t" args)
		same "$help" "$(printf '%s\n' "$specs" | zsh_parse args)" \
			"zsh: options of $t that take a value"
	done
}

# ---- fish ----

# fish_lines TOOL: the complete lines of TOOL.fish without "complete -c TOOL",
# with those of each "__aiscope_options GROUP -c TOOL" (aiscope-options.fish)
fish_lines() {
	local dir=$BIN/completions/fish line group
	while IFS= read -r line; do
		case $line in
		"complete -c $1 "*) printf '%s\n' "${line#"complete -c $1 "}" ;;
		"__aiscope_options "*" -c $1")
			group=${line#__aiscope_options }
			group=${group%" -c $1"}
			awk -v g="$group" '$1 == "case" { on = $2 == g; next } $1 == "end" { on = 0 }
				on && sub(/^ *complete \$argv\[2\.\.-1\] /, "")' "$dir/aiscope-options.fish"
			;;
		esac
	done < "$dir/$1.fish"
}

# fish_text TOOL [args]: options of the complete lines, read as text:
# -s/-l (and -x/-r) come before -a and -d on each line
fish_text() {
	fish_lines "$1" |
		sed -E 's/ -[ad] .*//' | awk -v want="${2:-}" '{
			arg = 0
			for (i = 1; i <= NF; i++)
				if ($i == "-x" || $i == "-r" || $i == "--exclusive" || $i == "--require-parameter")
					arg = 1
			if (want == "args" && !arg)
				next
			for (i = 1; i < NF; i++) {
				v = $(i + 1)
				gsub(/\047|"/, "", v)
				if ($i == "-s" || $i == "--short-option") print "-" v
				if ($i == "-l" || $i == "--long-option") print "--" v
			}
		}' | LC_ALL=C sort -u
}

# fish_run TOOL: the options fish offers for "TOOL -" and "TOOL --"
fish_run() {
	# shellcheck disable=SC2016 # fish expands $argv
	fish --no-config -c 'source $argv[1]; complete -C"$argv[2] -"; complete -C"$argv[2] --"' \
		"$BIN/completions/fish/$1.fish" "$1" | cut -f1 | grep -- '^-' | LC_ALL=C sort -u
}

# fish_run_args TOOL: options that take a value, from fish's own listing
fish_run_args() {
	# shellcheck disable=SC2016 # fish expands $argv
	fish --no-config -c 'source $argv[1]; complete -c $argv[2]' \
		"$BIN/completions/fish/$1.fish" "$1" |
		sed -E 's/ -[ad] .*//' | awk '/--exclusive|--require-parameter/ {
			for (i = 1; i < NF; i++) {
				if ($i == "-s") print "-" $(i + 1)
				if ($i == "-l") print "--" $(i + 1)
			}
		}' | tr -d "'" | LC_ALL=C sort -u
}

@test "fish completion offers exactly the options of --help" {
	local t help
	for t in $(tools); do
		help=$(help_opts "$t")
		read_by_shell fish "$(fish_text "$t")" "fish: options of $t read as text vs offered by fish" \
			fish_run "$t"
		same "$help" "$READING" "fish: options of $t"
		help=$(help_opts "$t" args)
		read_by_shell fish "$(fish_text "$t" args)" \
			"fish: options of $t that take a value, read as text vs by fish" fish_run_args "$t"
		same "$help" "$READING" "fish: options of $t that take a value"
	done
}

# ---- every tool ships its documentation ----

# the Makefile's TOOLS (what make builds and installs)
make_tools() {
	# shellcheck disable=SC2016 # make expands $(TOOLS)
	printf 'aiscope-print-tools:\n\t@echo $(TOOLS)\n' |
		make --no-print-directory -s -f Makefile -f - aiscope-print-tools
}

@test "every tool has a man page, bash, zsh and fish completions and a README row" {
	local t f missing=
	[ -n "$(tools)" ]
	for t in $(tools); do
		[ -f "man/$t.8" ] || missing+=" man/$t.8"
		[ -f "$BIN/completions/bash/$t" ] || missing+=" $BIN/completions/bash/$t"
		[ -f "$BIN/completions/zsh/_$t" ] || missing+=" $BIN/completions/zsh/_$t"
		[ -f "$BIN/completions/fish/$t.fish" ] || missing+=" $BIN/completions/fish/$t.fish"
		for f in "bash/$t" "zsh/_$t" "fish/$t.fish"; do
			[ -f "completions/$f" ] || missing+=" completions/$f"
		done
		# a row of the tools table: | [`tool`](man/tool.8) | ... (not "planned")
		grep -Eq "^\| \[\`$t\`\]\(man/$t\.8\) \|" README.md || missing+=" README.md row for $t"
		grep -E "^\| \[?\`$t\`" README.md | grep -qi planned && missing+=" README.md: $t still 'planned'"
		[[ " $(make_tools) " == *" $t "* ]] || missing+=" Makefile TOOLS entry for $t"
	done
	[ -f man/aiscope.7 ] || missing+=" man/aiscope.7"
	# the front command's page and completions
	for f in man/aiscope.8 completions/bash/aiscope completions/zsh/_aiscope; do
		[ -f "$f" ] || missing+=" $f"
	done
	[ -z "$missing" ] || { echo "missing:$missing" >&2; false; }
}

@test "no man page or completion for a tool that does not exist" {
	local f t stale=
	for f in man/*.8 "$BIN"/completions/bash/* "$BIN"/completions/zsh/_* "$BIN"/completions/fish/*.fish; do
		[ -e "$f" ] || continue
		t=${f##*/}
		t=${t#_}
		t=${t%.8}
		t=${t%.fish}
		# the front command's own files, and the shared ones
		[ "$t" = aiscope ] && continue
		[[ " $HELPERS $SHARED " == *" ${f#"$BIN"/completions/} "* ]] && continue
		[ -f "tools/$t.c" ] || compgen -G "tools/$t/*.c" >/dev/null || stale+=" $f"
	done
	[ -z "$stale" ] || { echo "files for no tool:$stale" >&2; false; }
}

# the tools' completions are made from their options; the tree's copies
# (completions/<shell>/, shipped with the source) are make's output, unedited
@test "completions/: the front command's, the shared files and make's copies of the tools', nothing else" {
	local f t sh extra= want=" bash/aiscope zsh/_aiscope $HELPERS $SHARED "
	for t in $(tools); do
		want+="bash/$t zsh/_$t fish/$t.fish "
	done
	for f in completions/*/*; do
		[[ "$want" == *" ${f#completions/} "* ]] || extra+=" $f"
	done
	[ -z "$extra" ] || { echo "not made by make:$extra" >&2; false; }
	# what make wrote is what the tool prints now, and the tree's copy is it
	for t in $(tools); do
		for sh in bash zsh fish; do
			case $sh in
			bash) f=bash/$t ;;
			zsh) f=zsh/_$t ;;
			fish) f=fish/$t.fish ;;
			esac
			diff <("$BIN/$t" --complete=$sh) "$BIN/completions/$f"
			diff "$BIN/completions/$f" "completions/$f" ||
				{ echo "completions/$f is not make's: make completions-update" >&2; false; }
			# lib's shared options: every tool prints the same
			for f in $SHARED; do
				[[ $f == "$sh"/* ]] && break
			done
			diff <("$BIN/$t" --complete=$sh-shared) "$BIN/completions/$f"
		done
	done
	for f in $SHARED; do
		diff "$BIN/completions/$f" "completions/$f" ||
			{ echo "completions/$f is not make's: make completions-update" >&2; false; }
	done
	for f in $HELPERS; do
		cmp "completions/$f" "$BIN/completions/$f"
	done
	# a tool's file holds its own options only: lib's are in the shared files
	for t in $(tools); do
		if grep -e --buffer-size -e --listen "completions/bash/$t" "completions/zsh/_$t" "completions/fish/$t.fish"; then
			echo "completions of $t list lib's options (the shared files' own)" >&2
			false
		fi
	done
	run "$BIN/cachestat" --complete=tcsh
	[ "$status" -eq 2 ]
	[[ "$output" == *"invalid --complete 'tcsh': expected bash, zsh or fish"* ]]
	run "$BIN/cachestat" --complete=bash-sharedx
	[ "$status" -eq 2 ]
}

@test "man pages render without groff warnings" {
	command -v groff >/dev/null 2>&1 || skip "groff is not installed"
	local f out
	for f in man/*.8 man/*.7; do
		out=$(groff -man -Tutf8 -ww -z "$f" 2>&1)
		[ -z "$out" ] || { echo "$f: $out" >&2; false; }
	done
}

@test "each man page has the contract's sections and exit codes" {
	local t s missing=
	for t in $(tools); do
		for s in NAME SYNOPSIS DESCRIPTION OPTIONS FIELDS "EXIT STATUS" REQUIREMENTS \
			OVERHEAD EXAMPLES "SEE ALSO"; do
			grep -q "^\.SH \"\{0,1\}$s\"\{0,1\}\$" "man/$t.8" || missing+=" $t.8:section '$s'"
		done
		# EXIT STATUS entries: ".TP" then ".B <code>"
		for s in 0 1 2 77; do
			grep -q "^\.B $s\$" "man/$t.8" || missing+=" $t.8:exit status $s"
		done
	done
	[ -z "$missing" ] || { echo "missing:$missing" >&2; false; }
}

# man_opts TOOL: the options that OPTIONS of man/TOOL.8 describes: those in
# its .TP tags ("\-p", "\-\-pid=" in roff), sorted
man_opts() {
	awk '/^\.SH/ { in_opts = ($0 ~ /^\.SH "?OPTIONS"?$/) }
		in_opts && tag {
			n = split($0, w, /[ "]+/)
			for (i = 1; i <= n; i++)
				if (w[i] ~ /^\\-/) {
					o = w[i]
					sub(/=.*/, "", o)
					gsub(/\\-/, "-", o)
					print o
				}
		}
		{ tag = in_opts && $0 == ".TP" }' "$TOP/man/$1.8" | LC_ALL=C sort -u
}

@test "each man page describes exactly the options of --help" {
	local t
	for t in $(tools); do
		same "$(help_opts "$t")" "$(man_opts "$t")" "man/$t.8: OPTIONS"
	done
}

# ---- the front command: aiscope TOOL ... completes as TOOL ... ----

# aiscope_bash BC WORD...: what bash offers for the last WORD of "aiscope WORD..."
# (with AISCOPE_ROOT: as installed there by make install PREFIX=/usr)
aiscope_bash() {
	local bc=$1 run=(env PATH="$BIN:$PATH" AISCOPE_LIBEXECDIR="$BIN") file=$BIN/completions/bash/aiscope
	shift
	if [ -n "${AISCOPE_ROOT:-}" ]; then
		run=(env -u AISCOPE_LIBEXECDIR PATH="$AISCOPE_ROOT/usr/sbin:$PATH")
		file=$AISCOPE_ROOT/usr/share/bash-completion/completions/aiscope
	fi
	# shellcheck disable=SC2016 # the inner bash expands them
	"${run[@]}" bash --norc --noprofile -c '
		bc=$1 top=$2 file=$3
		shift 3
		if [ -n "$bc" ]; then
			. "$bc" || exit 1
		fi
		. "$file" || exit 1
		COMP_WORDS=(aiscope "$@")
		COMP_CWORD=$#
		COMP_LINE=$(printf "%s " aiscope "$@")
		COMP_LINE=${COMP_LINE% }
		COMP_LINE=${COMP_LINE// = /=}
		COMP_LINE=${COMP_LINE% =}
		[[ ${COMP_WORDS[COMP_CWORD]} == = ]] && COMP_LINE+="="
		COMP_POINT=${#COMP_LINE}
		COMPREPLY=()
		_aiscope aiscope "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
		printf "%s\n" "${COMPREPLY[@]}"
		# a tool file loaded for aiscope registers nothing for the tool name
		for t in $("$top/build/aiscope" list 2> /dev/null || aiscope list); do
			complete -p "$t" > /dev/null 2>&1 && { echo "complete registered for $t" >&2; exit 1; }
		done
		exit 0
	' bash "$bc" "$TOP" "$file" "$@"
}

@test "aiscope completion: the tools first, then each tool's own options (bash, zsh, fish)" {
	local bc t help got tools
	need_binary aiscope
	tools=$(printf '%s\n' $("$BIN/aiscope" list) list help --version | LC_ALL=C sort)
	for bc in "" "$BASH_COMPLETION"; do
		[ -z "$bc" ] || [ -r "$bc" ] || continue
		same "$tools" "$(aiscope_bash "$bc" "" | LC_ALL=C sort)" "bash: aiscope <TAB>"
		[ "$(aiscope_bash "$bc" help to)" = topograph ]
		for t in $("$BIN/aiscope" list); do
			help=$(help_opts "$t")
			got=$({ aiscope_bash "$bc" "$t" -; aiscope_bash "$bc" "$t" --; } | grep -v '^$' | LC_ALL=C sort -u)
			same "$help" "$got" "bash: aiscope $t -"
		done
		run aiscope_bash "$bc" schedlat --by = c
		[ "$status" -eq 0 ]
		[ "$(printf '%s\n' "$output" | tr '\n' ' ')" = "cgroup container " ]
	done
	if command -v zsh > /dev/null 2>&1; then
		# _arguments as completions.bats reads it, compadd printing its words
		got=$(PATH=$BIN:$PATH zsh -f -c '
			zmodload zsh/parameter
			fpath=("$2/completions/zsh" $fpath)
			autoload -Uz _aiscope
			compadd() {
				while [[ $1 == -* ]]; do
					if [[ $1 == -a ]]; then print -rl -- ${(P)2}; shift 2; continue; fi
					shift
				done
				print -rl -- "$@"
			}
			_arguments() { while [[ $1 == -[sSCwWn0] ]]; do shift; done; print -rl -- "$@"; }
			words=(aiscope ""); CURRENT=2; _aiscope; print -- ---
			words=(aiscope schedlat -); CURRENT=3; _aiscope
		' zsh "$TOP" "$BIN")
		same "$tools" "$(printf '%s\n' "$got" | sed '/^---$/,$d' | grep -v '^$' | LC_ALL=C sort)" "zsh: aiscope <TAB>"
		same "$(help_opts schedlat)" "$(printf '%s\n' "$got" | sed '1,/^---$/d' | zsh_parse)" "zsh: aiscope schedlat -"
	fi
	if command -v fish > /dev/null 2>&1; then
		[ -f "$BIN/completions/aiscope.fish" ]
		# shellcheck disable=SC2016 # fish expands $argv
		got=$(fish --no-config -c 'source $argv[1]; complete -C"aiscope "' "$BIN/completions/aiscope.fish" | cut -f1)
		same "$(printf '%s\n' "$tools" | grep -v -- --version)" "$(printf '%s\n' "$got" | LC_ALL=C sort)" "fish: aiscope <TAB>"
		for t in $("$BIN/aiscope" list); do
			# shellcheck disable=SC2016 # fish expands $argv
			got=$(fish --no-config -c 'source $argv[1]; complete -C"aiscope $argv[2] -"; complete -C"aiscope $argv[2] --"' \
				"$BIN/completions/aiscope.fish" "$t" | cut -f1 | grep -- '^-' | LC_ALL=C sort -u)
			same "$(help_opts "$t")" "$got" "fish: aiscope $t -"
		done
	fi
}

@test "aiscope completion as make install lays it out: each tool's options, the shared files found (bash, zsh, fish)" {
	[ "$BIN" = "$TOP/build" ] || skip "make install installs build/, not $BIN"
	local bc t got
	export AISCOPE_ROOT=$BATS_TEST_TMPDIR/root
	local share=$AISCOPE_ROOT/usr/share
	make -s -C "$TOP" install DESTDIR="$AISCOPE_ROOT" PREFIX=/usr > /dev/null
	for bc in "" "$BASH_COMPLETION"; do
		[ -z "$bc" ] || [ -r "$bc" ] || continue
		for t in $("$BIN/aiscope" list); do
			got=$({ aiscope_bash "$bc" "$t" -; aiscope_bash "$bc" "$t" --; } | grep -v '^$' | LC_ALL=C sort -u)
			same "$(help_opts "$t")" "$got" "bash (installed): aiscope $t -"
		done
		run aiscope_bash "$bc" schedlat --probe-mode tp_btf,r
		[ "$status" -eq 0 ]
		[ "$output" = "tp_btf,raw_tp" ]
	done
	if command -v zsh > /dev/null 2>&1; then
		for t in $("$BIN/aiscope" list); do
			got=$(PATH=$AISCOPE_ROOT/usr/sbin:$PATH zsh -f -c '
				zmodload zsh/parameter
				fpath=("$2/zsh/site-functions" $fpath)
				autoload -Uz _aiscope
				_arguments() { while [[ $1 == -[sSCwWn0] ]]; do shift; done; print -rl -- "$@"; }
				words=(aiscope $1 -); CURRENT=3; _aiscope
			' zsh "$t" "$share")
			same "$(help_opts "$t")" "$(printf '%s\n' "$got" | zsh_parse)" "zsh (installed): aiscope $t -"
		done
	fi
	if command -v fish > /dev/null 2>&1; then
		for t in $("$BIN/aiscope" list); do
			# shellcheck disable=SC2016 # fish expands $argv
			got=$(fish --no-config -c 'source $argv[1]; complete -C"aiscope $argv[2] -"; complete -C"aiscope $argv[2] --"' \
				"$share/fish/vendor_completions.d/aiscope.fish" "$t" | cut -f1 | grep -- '^-' | LC_ALL=C sort -u)
			same "$(help_opts "$t")" "$got" "fish (installed): aiscope $t -"
		done
	fi
}
