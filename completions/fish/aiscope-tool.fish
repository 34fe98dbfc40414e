# fish: the helpers of every aiscope tool's completion
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# make writes $(O)/completions/fish/<tool>.fish: the complete lines that
# "<tool> --complete=fish" prints (lib/complete.c, from the tool's own
# options), with this file after its first line; aiscope.fish is made of
# them (the fish completion of "aiscope <tool>"). Try one without
# installing: source build/completions/fish/<tool>.fish

# the value being typed, also in the --long=value form
function __aiscope_value
    commandline -ct | string replace -r -- '^--[^=]*=' ''
end
