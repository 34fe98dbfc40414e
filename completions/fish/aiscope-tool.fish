# fish: the helpers of every aiscope tool's completion
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make writes $(O)/completions/fish/<tool>.fish: the complete lines that
# "<tool> --complete=fish" prints (lib/complete.c, from the tool's own
# options), which load this file from their directory; this file loads
# aiscope-options.fish there (__aiscope_options: the options lib gives
# every tool, "<tool> --complete=fish-shared"). aiscope.fish, the fish
# completion of "aiscope <tool>", is made of them all, with these functions
# once. Try one without installing: source build/completions/fish/<tool>.fish

# the value being typed, also in the --long=value form
function __aiscope_value
    commandline -ct | string replace -r -- '^--[^=]*=' ''
end

source (status dirname)/aiscope-options.fish
