# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# A private apt configuration, sourced by the scripts that fetch packages
# from suites or components the host's sources do not name (the CUDA
# fixtures, the VM kernels). The system's sources, lists, cache and dpkg
# status stay as they are: everything lives in one directory of ours.
#
#   . scripts/apt-private.sh
#   apt_private DIR ARCHES LINE...   DIR/sources.list holds the LINEs (the
#                                    "deb ..." lines), DIR/lists and DIR/cache
#                                    apt's state; ARCHES "amd64 arm64"
#   apt-get $APT_PRIVATE update      (APT_PRIVATE: the options, no spaces in DIR)
#
# The dpkg status is an empty file of DIR, so that what the host has
# installed does not change what apt picks.

apt_private() {
	_ap_dir=$1 _ap_arches=$2
	shift 2
	case $_ap_dir in *' '*) echo "apt-private.sh: a path with spaces: $_ap_dir" >&2; return 1 ;; esac
	mkdir -p "$_ap_dir/lists/partial" "$_ap_dir/cache/archives/partial" || return 1
	[ -e "$_ap_dir/status" ] || : > "$_ap_dir/status" || return 1
	printf '%s\n' "$@" > "$_ap_dir/sources.list.tmp" && mv "$_ap_dir/sources.list.tmp" "$_ap_dir/sources.list" || return 1
	APT_PRIVATE="-q -o Dir::Etc::SourceList=$_ap_dir/sources.list -o Dir::Etc::SourceParts=/dev/null
		-o Dir::State::Lists=$_ap_dir/lists -o Dir::Cache=$_ap_dir/cache
		-o Dir::State::status=$_ap_dir/status
		-o Dir::Etc::Preferences=/dev/null -o Dir::Etc::PreferencesParts=/dev/null
		-o Acquire::Languages=none -o Debug::NoLocking=1 -o APT::Sandbox::User=root"
	for _ap_a in $_ap_arches; do
		APT_PRIVATE="$APT_PRIVATE -o APT::Architectures::=$_ap_a"
	done
}
