#!/usr/bin/env bats
# docs/schema/: the JSON Schemas of every line of every tool, and the check
# (tests/schema/validate.js, ajv) that tests/lib.bash runs on every --json
# line the other suites get from a tool: it is installed, it compiles the
# schemas strictly, it passes real lines and fails wrong ones, so that the
# suites' check can fail. The lines here are topograph's (no root needed)
# and, as root, schedlat's.

bats_require_minimum_version 1.5.0
load lib

FIX=$BATS_TEST_DIRNAME/fixtures/topograph
TOP=$(cd "$BATS_TEST_DIRNAME/.." && pwd)
TOOLS="schedlat socketsnoop ipcsnoop cachestat gpulaunch oomwatch nclstat rdmasnoop topograph numaplace"

setup() {
	command -v node > /dev/null || skip "no node: the JSON lines cannot be checked here"
	schema_install || {
		echo "cannot install ajv into $SCHEMA_NPM (npm ci of tests/schema/package-lock.json)" >&2
		return 1
	}
}

teardown() {
	aiscope_teardown
}

# validate FILE: the check's output in $output, its status in $status
validate() {
	run -0 true
	run env NODE_PATH="$SCHEMA_NPM/node_modules" node "$TOP/tests/schema/validate.js" "$TOP/docs/schema" "$@"
}

@test "schema: a JSON Schema per tool, draft 2020-12, version 1, every line type closed to stray keys" {
	local t
	for t in $TOOLS; do
		[ -e "$TOP/docs/schema/$t.json" ]
		jq -e --arg t "$t" '."$schema" == "https://json-schema.org/draft/2020-12/schema" and
			.properties.tool.const == $t and .properties.schema.const == 1 and
			(.oneOf | length) == (."$defs" | length)' "$TOP/docs/schema/$t.json"
		# every line type either refers to a shared line or lists its keys and forbids the others
		jq -e '[."$defs"[] | select(has("$ref") | not) |
			.unevaluatedProperties == false and (.required | index("type")) != null] | all' \
			"$TOP/docs/schema/$t.json"
	done
	jq -e '."$defs".envelope.properties.schema.const == 1 and
		(."$defs".identity.required | sort) == (["pid","tid","comm","uid","cgroup_id","cgroup",
		"container_id","runtime","pod_uid"] | sort) and
		([."$defs".identity.properties | keys[]] | contains(["container_name","container_image",
		"pod_name","pod_namespace","k8s_container"]))' "$TOP/docs/schema/common.json"
	# the version the tools write is the one the schemas describe
	grep -q '^#define AISCOPE_JSON_SCHEMA 1$' "$TOP/lib/json.h"
}

@test "schema: topograph's lines are valid, and a stray key, a wrong type, a missing or other version fail" {
	"$BIN/topograph" -j "$FIX/mixed.jsonl" > "$BATS_TEST_TMPDIR/g.json" 2> /dev/null
	"$BIN/topograph" -j --tree "$FIX/pipeline.jsonl" >> "$BATS_TEST_TMPDIR/g.json" 2> /dev/null
	validate "$BATS_TEST_TMPDIR/g.json"
	[ "$status" -eq 0 ]
	n=$(wc -l < "$BATS_TEST_TMPDIR/g.json")
	[ "$output" = "$n lines, 0 invalid" ]
	jq -e -s 'map(.type) | unique | . - ["bottleneck","edge","node","summary"] == []' "$BATS_TEST_TMPDIR/g.json"

	# one wrong line each, made from a valid one; each fails, saying why
	jq -c 'select(.type == "node")' "$BATS_TEST_TMPDIR/g.json" | head -1 > "$BATS_TEST_TMPDIR/node"
	jq -c '. + {"stray_key": 1}' "$BATS_TEST_TMPDIR/node" > "$BATS_TEST_TMPDIR/bad"
	jq -c '.tx_bytes = "12"' "$BATS_TEST_TMPDIR/node" >> "$BATS_TEST_TMPDIR/bad"
	jq -c 'del(.schema)' "$BATS_TEST_TMPDIR/node" >> "$BATS_TEST_TMPDIR/bad"
	jq -c '.schema = 0' "$BATS_TEST_TMPDIR/node" >> "$BATS_TEST_TMPDIR/bad"
	jq -c 'del(.rx_bytes)' "$BATS_TEST_TMPDIR/node" >> "$BATS_TEST_TMPDIR/bad"
	jq -c '.pid = -1' "$BATS_TEST_TMPDIR/node" >> "$BATS_TEST_TMPDIR/bad"
	jq -c '.ts = "yesterday"' "$BATS_TEST_TMPDIR/node" >> "$BATS_TEST_TMPDIR/bad"
	jq -c '.tool = "nosuchtool"' "$BATS_TEST_TMPDIR/node" >> "$BATS_TEST_TMPDIR/bad"
	jq -c 'select(.type == "edge") | .share_ratio = 50' "$BATS_TEST_TMPDIR/g.json" | head -1 >> "$BATS_TEST_TMPDIR/bad"
	jq -c 'select(.type == "edge") | .src.runtime = "lxc"' "$BATS_TEST_TMPDIR/g.json" | head -1 >> "$BATS_TEST_TMPDIR/bad"
	echo '{"type":"node"' >> "$BATS_TEST_TMPDIR/bad"
	validate "$BATS_TEST_TMPDIR/bad"
	[ "$status" -eq 1 ]
	echo "$output"
	[ "$(echo "$output" | tail -1)" = "11 lines, 11 invalid" ]
	echo "$output" | grep -q ':1: node: .*unevaluated properties (stray_key)'
	echo "$output" | grep -q ':2: node: /tx_bytes must be integer'
	echo "$output" | grep -q ':3: no "schema" key'
	echo "$output" | grep -q ':4: "schema": 0, these schemas are version 1'
	echo "$output" | grep -q ":5: node: / must have required property 'rx_bytes'"
	echo "$output" | grep -q ':6: node: /pid must be >= 0'
	echo "$output" | grep -q ':7: node: /ts must match pattern'
	echo "$output" | grep -q ':8: no schema for tool "nosuchtool"'
	echo "$output" | grep -q ':9: edge: /share_ratio must be <= 1'
	echo "$output" | grep -q ':10: edge: /src/runtime must be equal to one of the allowed values'
	echo "$output" | grep -q ':11: not JSON'
}

@test "schema: the suites' check fails a test whose tool wrote a line its schema does not have" {
	# what tests/lib.bash does at teardown with a file a test named
	jq -c 'select(.type == "summary")' <("$BIN/topograph" -j "$FIX/mixed.jsonl" 2> /dev/null) > "$BATS_TEST_TMPDIR/ok"
	schema_validate "$BATS_TEST_TMPDIR/ok"
	jq -c '.exit_reason = 3' "$BATS_TEST_TMPDIR/ok" > "$BATS_TEST_TMPDIR/bad"
	run schema_validate "$BATS_TEST_TMPDIR/bad"
	[ "$status" -eq 1 ]
	[[ $output == *"summary: /exit_reason must be string"* ]]
	# and teardown's check itself: a named bad file fails it
	schema_check "$BATS_TEST_TMPDIR/bad"
	run schema_teardown
	[ "$status" -eq 1 ]
	[[ $output == *"lines not valid against docs/schema/"* ]]
	# (run's subshell kept this shell's list: this test's own teardown must pass)
	SCHEMA_FILES=()

	# what `run "$BIN/TOOL" ... -j` printed is named for that check too:
	# its JSON lines, every one of them, and not stderr's
	run "$BIN/topograph" "$FIX/mixed.jsonl"
	[ "$status" -eq 0 ]
	[ ${#SCHEMA_FILES[@]} -eq 0 ]
	run "$BIN/topograph" -j "$FIX/mixed.jsonl"
	[ "$status" -eq 0 ]
	[ ${#SCHEMA_FILES[@]} -eq 1 ]
	# (the same lines but for their time stamps)
	"$BIN/topograph" -j "$FIX/mixed.jsonl" 2> /dev/null | jq -c 'del(.ts)' > "$BATS_TEST_TMPDIR/again"
	jq -c 'del(.ts)' "${SCHEMA_FILES[0]}" | cmp - "$BATS_TEST_TMPDIR/again"
	run --separate-stderr "$BIN/topograph" --json --no-such-option
	[ "$status" -eq 2 ]
	[ ${#SCHEMA_FILES[@]} -eq 2 ] && [ ! -s "${SCHEMA_FILES[1]}" ]
	SCHEMA_FILES=()
	# a wrong line in such output fails teardown's check
	run "$BIN/topograph" -j "$FIX/mixed.jsonl"
	output=$(jq -c 'select(.type == "summary") | .exit_reason = 3' "$BATS_TEST_TMPDIR/ok")
	SCHEMA_FILES=()
	schema_run_output "$BIN/topograph" -j "$FIX/mixed.jsonl"
	run schema_teardown
	[ "$status" -eq 1 ]
	[[ $output == *"summary: /exit_reason must be string"* ]]
	SCHEMA_FILES=()
}

@test "schema: schedlat's lines, each kind of them, are valid; the schema 0 keys are not" {
	need_root
	"$BIN/schedlat" -j -i 300ms -d 1s > "$BATS_TEST_TMPDIR/s" 2> /dev/null
	"$BIN/schedlat" -j -H --by host -i 300ms -d 700ms >> "$BATS_TEST_TMPDIR/s" 2> /dev/null
	"$BIN/schedlat" -j --min 1us -n 20 >> "$BATS_TEST_TMPDIR/s" 2> /dev/null
	"$BIN/schedlat" -j --list-probes >> "$BATS_TEST_TMPDIR/s" 2> /dev/null
	jq -e -s '[.[] | "\(.type)/\(.row // .event // "")"] | unique |
		. - ["sample/pid","sample/host","hist/host","event/wait","summary/","probe/"] == []' "$BATS_TEST_TMPDIR/s"
	validate "$BATS_TEST_TMPDIR/s"
	[ "$status" -eq 0 ]
	# the row kind as schema 0 spelled it
	jq -c 'select(.type == "sample") | .by = .row | del(.row)' "$BATS_TEST_TMPDIR/s" | head -1 > "$BATS_TEST_TMPDIR/old"
	validate "$BATS_TEST_TMPDIR/old"
	[ "$status" -eq 1 ]
	[[ $output == *"unevaluated properties (by)"* ]]
}

@test "schema: topograph reads schema 0 captures (before the renames) as it reads schema 1" {
	# the fixtures are schema 0 lines; the same capture with schema 1's keys
	jq -R -c 'fromjson? | if .tool == "nclstat" then
			(if has("comm_hash") then .communicator_id = .comm_hash | del(.comm_hash) else . end) |
			(if has("op") then .nccl_op = .op | del(.op) else . end) |
			(if .row == "comm" then .row = "communicator" else . end)
		elif .tool == "schedlat" and has("by") then .row = .by | del(.by)
		else . end | . + {schema: 1}' "$FIX/mixed.jsonl" > "$BATS_TEST_TMPDIR/v1.jsonl"
	grep -q '"communicator_id"' "$BATS_TEST_TMPDIR/v1.jsonl"
	! grep -q '"comm_hash"' "$BATS_TEST_TMPDIR/v1.jsonl" || false
	"$BIN/topograph" -j "$FIX/mixed.jsonl" 2> /dev/null | jq -c 'del(.ts)' > "$BATS_TEST_TMPDIR/g0"
	"$BIN/topograph" -j "$BATS_TEST_TMPDIR/v1.jsonl" 2> /dev/null | jq -c 'del(.ts)' > "$BATS_TEST_TMPDIR/g1"
	# the fixture's lines that are not JSON are skipped in one and gone in the other
	diff <(jq -c 'del(.lines, .bad_lines)' "$BATS_TEST_TMPDIR/g0") <(jq -c 'del(.lines, .bad_lines)' "$BATS_TEST_TMPDIR/g1")
	jq -e -s '[.[] | select(.type == "node") | .nccl // [] | .[].communicator_id] | length > 0' "$BATS_TEST_TMPDIR/g1"
}

@test "schema: the README's JSON examples are lines the schemas accept" {
	grep '^{"type":"' "$TOP/README.md" > "$BATS_TEST_TMPDIR/readme"
	[ "$(wc -l < "$BATS_TEST_TMPDIR/readme")" -ge 10 ]
	validate "$BATS_TEST_TMPDIR/readme"
	echo "$output"
	[ "$status" -eq 0 ]
	# one of each tool
	[ "$(jq -r .tool "$BATS_TEST_TMPDIR/readme" | sort -u | wc -l)" -eq "$(echo $TOOLS | wc -w)" ]
}
