// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Parses a Mermaid file with Mermaid's own parser (the npm package, under a
// jsdom window): node mermaid-parse.mjs MODULES_DIR FILE. Exit 0 when it
// parses (prints the diagram type), 1 with the parser's message otherwise.
// MODULES_DIR holds node_modules/mermaid and node_modules/jsdom
// (scripts/deps.sh installs them into build/npm when npm is there).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const [dir, file] = process.argv.slice(2);
const mods = join(dir, 'node_modules');
const { JSDOM } = createRequire(join(mods, 'x.js'))('jsdom');
const dom = new JSDOM('<!doctype html><html><body></body></html>');
globalThis.window = dom.window;
globalThis.document = dom.window.document;
const pkg = JSON.parse(readFileSync(join(mods, 'mermaid', 'package.json'), 'utf8'));
const entry = pkg.exports?.['.']?.import ?? pkg.module;
const { default: mermaid } = await import(pathToFileURL(join(mods, 'mermaid', entry)).href);
try {
	const r = await mermaid.parse(readFileSync(file, 'utf8'));
	console.log(`parsed: ${r.diagramType}`);
} catch (e) {
	console.error(`mermaid: ${String(e.message ?? e).split('\n').slice(0, 4).join(' | ')}`);
	process.exit(1);
}
