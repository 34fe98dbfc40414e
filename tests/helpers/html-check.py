#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""html-check FILE: what topograph --html's page holds, as one JSON object,
for tests/topograph.bats to compare with topograph -j:

  {"nodes": [{"id", "kind", "pid", "host", "title"}], "edges": [{"id", "src",
   "dst", "kind", "bytes", "channel"}], "scripts": N, "external": [URL...],
   "elements": {"tag": count}}

It parses the HTML as a browser's tokenizer does (html.parser): a hostile
name that made markup would show up here as elements or scripts."""
import json
import sys
from html.parser import HTMLParser


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.nodes, self.edges, self.external = [], [], []
        self.scripts = 0
        self.elements = {}
        self.stack = []      # (tag, the node or edge, or None) of open g and path
        self.in_title = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.elements[tag] = self.elements.get(tag, 0) + 1
        if tag == "script":
            self.scripts += 1
        for k in ("href", "src", "xlink:href", "action"):
            v = a.get(k)
            if v is not None and not v.startswith("#"):
                self.external.append(v)
        cls = (a.get("class") or "").split()
        obj = None
        if tag == "g" and "node" in cls:
            obj = {"id": a.get("id"), "kind": a.get("data-kind"),
                   "pid": int(a["data-pid"]) if "data-pid" in a else None,
                   "host": a.get("data-host"), "title": None}
            self.nodes.append(obj)
        elif tag == "path" and "edge" in cls:
            obj = {"id": a.get("id"), "src": a.get("data-src"), "dst": a.get("data-dst"),
                   "kind": a.get("data-kind"), "bytes": int(a.get("data-bytes", "-1")),
                   "channel": a.get("data-channel"), "title": None}
            self.edges.append(obj)
        if tag in ("g", "path"):
            self.stack.append((tag, obj))
        elif tag == "title" and self.stack and self.stack[-1][1] is not None:
            self.in_title = self.stack[-1][1]
            self.in_title["title"] = ""

    def handle_endtag(self, tag):
        if tag == "title":
            self.in_title = None
        elif tag in ("g", "path") and self.stack and self.stack[-1][0] == tag:
            self.stack.pop()

    def handle_data(self, data):
        if self.in_title is not None:
            self.in_title["title"] += data


p = Page()
with open(sys.argv[1], encoding="utf-8", errors="strict") as f:
    p.feed(f.read())
p.close()
json.dump({"nodes": p.nodes, "edges": p.edges, "scripts": p.scripts,
           "external": p.external, "elements": p.elements}, sys.stdout)
print()
