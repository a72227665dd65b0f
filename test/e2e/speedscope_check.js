// speedscope_check.js — load a profile with speedscope's own importers in
// node and print what speedscope sees, as JSON: one entry per profile
// {name, total, stacks: {"root;...;leaf": weight}}.
//
// Usage: node speedscope_check.js SPEEDSCOPE_BUNDLE PROFILE
//
// The npm package ships speedscope as one browser bundle that, once its
// modules are set up, renders the app into document.body. The importers
// are one of those modules (the one exporting importProfileGroupFromText,
// which the app loads through a promise); this loads the bundle in a vm
// context with the few globals module set-up touches, stops before the
// render, and takes that promise.
'use strict';
const fs = require('fs');
const vm = require('vm');

const [bundlePath, profilePath] = process.argv.slice(2);
const src = fs.readFileSync(bundlePath, 'utf8');
const m = src.match(/return\(await (\w+)\)\.importProfileGroupFromText\(/);
const render = src.lastIndexOf('console.log(`speedscope v');
if (!m || render < 0) {
	console.error('speedscope_check: the bundle has no importer module where expected');
	process.exit(2);
}
const code = src.slice(0, render) + `globalThis.__importers=${m[1]};})();`;
const ctx = {
	console: { log() {}, warn() {}, error: console.error, info() {} },
	setTimeout, clearTimeout, TextDecoder, TextEncoder, URL, Promise,
	navigator: { userAgent: 'node', platform: 'Linux' },
	location: { hash: '', search: '', href: 'file:///', protocol: 'file:' },
	document: { createElement: () => ({ getContext: () => null, style: {} }),
		    addEventListener() {}, body: {} },
	addEventListener() {},
	matchMedia: () => ({ matches: false, addEventListener() {}, addListener() {} }),
	localStorage: { getItem: () => null, setItem() {} },
};
ctx.globalThis = ctx.window = ctx.self = ctx;
vm.createContext(ctx);
vm.runInContext(code, ctx);
ctx.__importers.then(async mod => {
	const text = fs.readFileSync(profilePath, 'utf8');
	const group = await mod.importProfileGroupFromText(profilePath, text);
	if (!group) {
		console.error('speedscope_check: speedscope did not recognise ' + profilePath);
		process.exit(1);
	}
	const out = [];
	for (const p of group.profiles) {
		const stacks = {};
		const open = [];
		let last = 0;
		// forEachCall visits the call tree in time order: the weight between
		// two visits belongs to the stack open at the time.
		const flush = v => {
			if (v > last && open.length) {
				const k = open.join(';');
				stacks[k] = (stacks[k] || 0) + (v - last);
			}
			last = v;
		};
		p.forEachCall((node, v) => { flush(v); open.push(node.frame.name); },
			      (node, v) => { flush(v); open.pop(); });
		out.push({ name: p.getName(), total: p.getTotalWeight(), stacks });
	}
	console.log(JSON.stringify(out));
}).catch(e => { console.error('speedscope_check: ' + (e && e.stack || e)); process.exit(1); });
