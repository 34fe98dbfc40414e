#!/usr/bin/env node
// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
//
// Checks Kubernetes manifests offline against the Kubernetes API schema
// (and the Prometheus operator's PodMonitor against its CRD's schema):
// kubernetes-models carries the API's OpenAPI definitions compiled into
// ajv validators (types, required fields, enums, formats). Every document
// of every file must be a known apiVersion/kind and valid.
//
// The OpenAPI definitions do not forbid unknown fields (the API server does,
// with strict field validation, as kubectl's default): a typo such as
// "hostPid" would pass them and silently do nothing. So every field is also
// looked up in the model's type declarations (the .d.ts files generated from
// the same definitions), and an unknown one is an error.
//
//   node validate.js FILE.yaml...     (NODE_PATH: where npm ci put the modules)
//
// One line per document ("FILE: N Kind name: valid", or the errors); exit
// status 1 when any is invalid, 2 on a bad file.
'use strict';

const fs = require('fs');
const path = require('path');
const yaml = require('js-yaml');

// ---- unknown fields, from the generated type declarations ----

const decls = new Map();

function findDecl(from, spec) {
	if (spec.startsWith('.'))
		return path.resolve(path.dirname(from), `${spec}.d.ts`);
	for (const dir of require.resolve.paths(spec) || []) {
		const f = path.join(dir, `${spec}.d.ts`);
		if (fs.existsSync(f))
			return f;
	}
	return null;
}

// The fields of the first interface of a .d.ts: name -> { decl, array }
// where decl is the declaration file of an object type (null: a scalar,
// a map or an alias such as Quantity, whose content is not checked here).
function fieldsOf(file) {
	if (decls.has(file))
		return decls.get(file);
	const text = fs.readFileSync(file, 'utf8');
	const imports = new Map();
	for (const m of text.matchAll(/^import \{ (\w+) \} from "([^"]+)";$/gm))
		imports.set(m[1], m[2]);
	const start = text.indexOf('\nexport interface ');
	let fields = null;
	if (start >= 0) {
		const body = text.slice(start, text.indexOf('\n}\n', start));

		fields = new Map();
		for (const m of body.matchAll(/^ {4}"([^"]+)"\??: (.*?);?$/gm)) {
			const arr = /^Array<(\w+)>$/.exec(m[2]);
			const type = arr ? arr[1] : m[2];
			const spec = imports.get(type);

			fields.set(m[1], { decl: spec ? findDecl(file, spec) : null, array: !!arr });
		}
	}
	decls.set(file, fields);
	return fields;
}

function unknownFields(value, file, where, out) {
	const fields = file && fieldsOf(file);

	if (!fields || !value || typeof value !== 'object' || Array.isArray(value))
		return;
	for (const [key, v] of Object.entries(value)) {
		const f = fields.get(key);

		if (!f) {
			out.push(`${where}/${key}: unknown field`);
			continue;
		}
		if (f.array && Array.isArray(v))
			v.forEach((e, i) => unknownFields(e, f.decl, `${where}/${key}/${i}`, out));
		else if (!f.array)
			unknownFields(v, f.decl, `${where}/${key}`, out);
	}
}

// The custom resources' models: API group -> package (the same layout)
const crdPackages = {
	'monitoring.coreos.com': '@kubernetes-models/prometheus-operator',
};

// "apps/v1" DaemonSet -> kubernetes-models/apps/v1/DaemonSet; core "v1" -> v1/;
// "monitoring.coreos.com/v1" PodMonitor -> the operator's package
function modelFor(apiVersion, kind) {
	if (typeof apiVersion !== 'string' || typeof kind !== 'string' || !/^[A-Za-z]+$/.test(kind))
		return null;
	const parts = apiVersion.split('/');
	if (parts.length > 2 || parts.some((p) => !/^[a-z0-9.-]+$/.test(p)))
		return null;
	const pkg = (parts.length === 2 && crdPackages[parts[0]]) || 'kubernetes-models';
	const spec = `${pkg}/${parts.join('/')}/${kind}`;
	try {
		const Model = require(spec)[kind];

		return Model ? { Model, decl: findDecl(__filename, spec) } : null;
	} catch (e) {
		return null;
	}
}

function check(file, doc, i) {
	const name = doc && doc.metadata && doc.metadata.name;
	const where = `${file}: ${i + 1} ${doc && doc.kind} ${name}`;
	const m = modelFor(doc && doc.apiVersion, doc && doc.kind);
	const unknown = [];

	if (!m || !m.decl) {
		console.log(`${where}: unknown apiVersion/kind ${doc && doc.apiVersion} ${doc && doc.kind}`);
		return false;
	}
	try {
		new m.Model(doc).validate();
	} catch (e) {
		console.log(`${where}: ${e.message}`);
		return false;
	}
	unknownFields(doc, m.decl, 'data', unknown);
	if (unknown.length) {
		console.log(`${where}: ${unknown.join(', ')}`);
		return false;
	}
	console.log(`${where}: valid`);
	return true;
}

let bad = 0, n = 0;
for (const file of process.argv.slice(2)) {
	let docs;
	try {
		docs = yaml.loadAll(fs.readFileSync(file, 'utf8'));
	} catch (e) {
		console.error(`${file}: ${e.message}`);
		process.exit(2);
	}
	docs.forEach((doc, i) => {
		if (doc === null || doc === undefined)
			return;
		n++;
		if (!check(file, doc, i))
			bad++;
	});
}
if (!n) {
	console.error('validate.js: no Kubernetes document given');
	process.exit(2);
}
process.exit(bad ? 1 : 0);
