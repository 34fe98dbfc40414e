#!/usr/bin/env node
// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//
// Checks aiscope --json lines against docs/schema/ with ajv (JSON Schema
// draft 2020-12): every line must be a JSON object whose "tool" names a
// schema file and whose "schema" is the version those files describe, and
// must match exactly one of its tool's line types (each closed by
// unevaluatedProperties: false, so a key the schema does not list fails).
//
//   node validate.js SCHEMA_DIR FILE...     (NODE_PATH: where npm ci put ajv)
//
// Prints "FILE:LINE: why" and the line for each invalid line, then
// "N lines, M invalid"; exit status 1 when any is invalid, 2 on a bad
// schema or an unreadable file.
'use strict';

const fs = require('fs');
const path = require('path');
const Ajv2020 = require('ajv/dist/2020').default;

const [dir, ...files] = process.argv.slice(2);
if (!dir || !files.length) {
	console.error('usage: validate.js SCHEMA_DIR FILE...');
	process.exit(2);
}

const ajv = new Ajv2020({ allErrors: true, strict: true, allowUnionTypes: true });
const tools = new Map();	// tool -> { validate, defs, version }
let version = null;

try {
	for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.json')).sort())
		ajv.addSchema(JSON.parse(fs.readFileSync(path.join(dir, f), 'utf8')));
	version = ajv.getSchema('https://aiscope.invalid/schema/1/common.json')
		.schema.$defs.envelope.properties.schema.const;
} catch (e) {
	console.error(`${dir}: ${e.message}`);
	process.exit(2);
}

function toolSchema(tool) {
	if (tools.has(tool))
		return tools.get(tool);
	const id = `https://aiscope.invalid/schema/1/${tool}.json`;
	const s = ajv.getSchema(id);
	const t = s ? { validate: s, defs: s.schema.$defs } : null;
	tools.set(tool, t);
	return t;
}

// the $defs entries a line claims to be (by type, and row or event): their
// errors say more than oneOf's "must match exactly one schema"
function candidates(t, o) {
	const out = [];
	for (const [name, d] of Object.entries(t.defs)) {
		const p = (d.$ref ? ajv.getSchema(`https://aiscope.invalid/schema/1/${d.$ref}`)?.schema ??
			   t.defs[d.$ref.replace('#/$defs/', '')] : d).properties || {};
		if (p.type?.const !== o.type)
			continue;
		const key = 'row' in o ? 'row' : 'event' in o ? 'event' : null;
		if (key && p[key] && 'const' in p[key] && p[key].const !== o[key])
			continue;
		out.push(name);
	}
	return out;
}

function explain(t, tool, o) {
	const why = [];
	for (const name of candidates(t, o)) {
		const v = ajv.getSchema(`https://aiscope.invalid/schema/1/${tool}.json#/$defs/${name}`);
		if (v && !v(o))
			why.push(`${name}: ` + v.errors.map((e) =>
				`${e.instancePath || '/'} ${e.message}` +
				(e.params?.unevaluatedProperty ? ` (${e.params.unevaluatedProperty})` : '') +
				(e.params?.allowedValues ? ` ${JSON.stringify(e.params.allowedValues)}` : '')).join('; '));
	}
	return why.length ? why.join(' | ') : `no line type "${o.type}" of ${tool} has these keys`;
}

let lines = 0, bad = 0;
for (const file of files) {
	let text;
	try {
		text = fs.readFileSync(file, 'utf8');
	} catch (e) {
		console.error(`${file}: ${e.message}`);
		process.exit(2);
	}
	text.split('\n').forEach((line, i) => {
		if (!line.trim())
			return;
		lines++;
		let o, why = null;
		try {
			o = JSON.parse(line);
		} catch (e) {
			why = `not JSON: ${e.message}`;
		}
		if (!why && (o === null || typeof o !== 'object' || Array.isArray(o)))
			why = 'not a JSON object';
		else if (!why && !('schema' in o))
			why = 'no "schema" key';
		else if (!why && o.schema !== version)
			why = `"schema": ${JSON.stringify(o.schema)}, these schemas are version ${version}`;
		else if (!why && !toolSchema(o.tool))
			why = `no schema for tool ${JSON.stringify(o.tool)}`;
		else if (!why && !toolSchema(o.tool).validate(o))
			why = explain(toolSchema(o.tool), o.tool, o);
		if (why) {
			bad++;
			console.log(`${file}:${i + 1}: ${why}\n  ${line.length > 2000 ? line.slice(0, 2000) + '...' : line}`);
		}
	});
}
console.log(`${lines} lines, ${bad} invalid`);
process.exit(bad ? 1 : 0);
