#!/usr/bin/awk -f
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
#
# A strict check of the Mermaid flowchart subset that topograph writes,
# after Mermaid's flowchart grammar (flow.jison): every line must be one of
#
#   flowchart LR|RL|TB|TD|BT                      (first line only)
#   ID["TEXT"]  or  ID(["TEXT"])                  node (stadium for endpoints)
#   subgraph ID["TEXT"] ... end                   balanced, not nested here
#   ID -->|"TEXT"| ID  or  ID -.->|"TEXT"| ID     both nodes defined before
#   linkStyle N stroke:#RRGGBB,stroke-width:Wpx   N < the number of links
#   classDef ID prop:val[,prop:val...]
#   class ID ID                                   a defined node and class
#
# TEXT has no raw '"' and no '<' or '>' other than <br/>, and every '#' starts
# an entity (#quot; #lt; #gt; #amp; #35;), since the parser reads those. IDs
# are not keywords and are defined once. Exit 0 when the text passes; else
# one line per problem on stderr and exit 1.

function bad(why) {
	printf "mermaid-check: line %d: %s: %s\n", NR, why, $0 > "/dev/stderr"
	errors++
}

function text_ok(t,    u) {
	if (t ~ /"/)
		return 0
	u = t
	gsub(/<br\/>/, "", u)
	if (u ~ /[<>]/)
		return 0
	gsub(/#(quot|lt|gt|amp|[0-9]+);/, "", u)
	return u !~ /#/
}

function id_ok(id) {
	return id ~ /^[A-Za-z][A-Za-z0-9_]*$/ && !(id in keyword)
}

function define(id) {
	if (!id_ok(id)) {
		bad("bad id '" id "'")
		return
	}
	if (id in defined)
		bad("'" id "' defined twice")
	defined[id] = 1
}

BEGIN {
	split("end subgraph graph flowchart class classDef linkStyle style click call default direction", kw, " ")
	for (i in kw)
		keyword[kw[i]] = 1
	links = 0
	depth = 0
	errors = 0
}

NR == 1 {
	if ($0 !~ /^flowchart (LR|RL|TB|TD|BT)$/)
		bad("the first line must be 'flowchart DIR'")
	next
}

/^[ ]*$/ { next }

# a node: ID["TEXT"] or ID(["TEXT"])
/^ *[A-Za-z][A-Za-z0-9_]*(\["[^"]*"\]|\(\["[^"]*"\]\))$/ {
	line = $0
	sub(/^ */, "", line)
	id = line
	sub(/[[(].*/, "", id)
	t = line
	sub(/^[^"]*"/, "", t)
	sub(/"[^"]*$/, "", t)
	if (!text_ok(t))
		bad("bad characters in a label")
	define(id)
	next
}

/^ *subgraph / {
	if (!match($0, /^ *subgraph [A-Za-z][A-Za-z0-9_]*\["[^"]*"\]$/)) {
		bad("bad subgraph line")
		next
	}
	id = $2
	sub(/\[.*/, "", id)
	t = $0
	sub(/^[^"]*"/, "", t)
	sub(/"[^"]*$/, "", t)
	if (!text_ok(t))
		bad("bad characters in a subgraph title")
	define(id)
	if (depth++)
		bad("nested subgraph")
	next
}

/^ *end$/ {
	if (depth-- <= 0)
		bad("'end' without a subgraph")
	next
}

# a link: A -->|"TEXT"| B, or dotted: A -.->|"TEXT"| B
/^ *[A-Za-z][A-Za-z0-9_]* (-->|-\.->)\|"[^"]*"\| [A-Za-z][A-Za-z0-9_]*$/ {
	a = $1
	b = $NF
	t = $0
	sub(/^[^"]*"/, "", t)
	sub(/"[^"]*$/, "", t)
	if (!text_ok(t))
		bad("bad characters in a link label")
	if (!(a in defined) || !(b in defined))
		bad("a link between nodes not defined before it")
	links++
	next
}

/^ *linkStyle / {
	if (!match($0, /^ *linkStyle [0-9]+ stroke:#[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f],stroke-width:[0-9]+(\.[0-9]+)?px$/)) {
		bad("bad linkStyle line")
		next
	}
	if ($2 + 0 >= links)
		bad("linkStyle " $2 " for a link that does not exist")
	next
}

/^ *classDef / {
	if (!match($0, /^ *classDef [A-Za-z][A-Za-z0-9_]* [a-z-]+:[#0-9a-zA-Z.]+(,[a-z-]+:[#0-9a-zA-Z.]+)*$/)) {
		bad("bad classDef line")
		next
	}
	classes[$2] = 1
	next
}

/^ *class / {
	if (NF != 3 || !($2 in defined) || !($3 in classes))
		bad("class of an undefined node or class")
	next
}

{ bad("not a line of the flowchart grammar") }

END {
	if (NR == 0)
		bad("empty")
	if (depth != 0)
		bad("unbalanced subgraph")
	exit errors ? 1 : 0
}
