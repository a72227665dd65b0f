// perfetto_check.js — load a trace with Perfetto's own trace processor (the
// WebAssembly build the Perfetto UI runs) in node, run SQL queries on it and
// print the rows, as JSON: {"QUERY": [{column: value, ...}, ...], ...}; a
// query that fails gives {"QUERY": {"error": "..."}}.
//
// Usage: node perfetto_check.js ENGINE_BUNDLE TRACE QUERY...
//
// ENGINE_BUNDLE is the UI's engine_bundle.js, trace_processor.wasm beside
// it. The bundle is the UI's worker script: its emscripten module (the one
// assigned to trace_processor_wasm) is taken out and started here, and
// spoken to as the UI's worker does, through the RPC entry points of
// src/trace_processor/rpc/wasm_bridge.cc: trace_processor_rpc_init(reply
// function, request buffer size) returns the request buffer;
// trace_processor_on_rpc_request(length) reads a TraceProcessorRpcStream
// from it and answers through the reply function. The messages are those
// of protos/perfetto/trace_processor/trace_processor.proto (field numbers
// below), encoded and decoded here by hand: the few fields used need no
// protobuf library.
'use strict';
const fs = require('fs');
const path = require('path');

const [bundlePath, tracePath, ...queries] = process.argv.slice(2);
if (!bundlePath || !tracePath) {
	console.error('usage: node perfetto_check.js ENGINE_BUNDLE TRACE QUERY...');
	process.exit(2);
}
const src = fs.readFileSync(bundlePath, 'utf8');
const START = 'var trace_processor_wasm = (function() {';
const END = 'module.exports = trace_processor_wasm;';
const a = src.indexOf(START), b = src.indexOf(END, a);
if (a < 0 || b < 0) {
	console.error('perfetto_check: the bundle has no trace_processor_wasm module where expected');
	process.exit(2);
}
const mod = { exports: {} };
new Function('module', 'exports', 'require', '__filename', '__dirname', 'process',
	     src.slice(a, b + END.length))(mod, mod.exports, require, bundlePath,
					   path.dirname(bundlePath), process);
const stderr = [];
const tp = mod.exports({
	locateFile: s => path.join(path.dirname(bundlePath), s),
	print() {},
	printErr: l => stderr.push(l),
});

// TraceProcessorRpcStream { repeated TraceProcessorRpc msg = 1; }
// TraceProcessorRpc { int64 seq = 1; TraceProcessorMethod request = 2;
//   bytes append_trace_data = 101; QueryArgs query_args = 103;
//   AppendTraceDataResult append_result = 201; QueryResult query_result = 203; }
const TPM_APPEND_TRACE_DATA = 1, TPM_FINALIZE_TRACE_DATA = 2, TPM_QUERY_STREAMING = 3;
// QueryResult { repeated string column_names = 1; string error = 2;
//   repeated CellsBatch batch = 3; }
// CellsBatch { repeated CellType cells = 1 [packed]; repeated int64
//   varint_cells = 2 [packed]; repeated double float64_cells = 3 [packed];
//   repeated bytes blob_cells = 4; string string_cells = 5 (NUL-separated); }
const CELL_NULL = 1, CELL_VARINT = 2, CELL_FLOAT64 = 3, CELL_STRING = 4, CELL_BLOB = 5;

function varint(n) {
	const o = [];
	n = BigInt.asUintN(64, BigInt(n));
	do {
		let byte = Number(n & 0x7fn);
		n >>= 7n;
		if (n)
			byte |= 0x80;
		o.push(byte);
	} while (n);
	return o;
}
const field = (id, wt, payload) => Buffer.concat([Buffer.from(varint(id * 8 + wt)),
						    Buffer.from(payload)]);
const bytesField = (id, buf) => field(id, 2, Buffer.concat([Buffer.from(varint(buf.length)),
							    Buffer.from(buf)]));

function readVarint(buf, p) {
	let r = 0n, s = 0n;
	for (;;) {
		if (p >= buf.length)
			throw new Error('truncated varint');
		const byte = buf[p++];
		r |= BigInt(byte & 0x7f) << s;
		s += 7n;
		if (!(byte & 0x80))
			return [r, p];
	}
}

// One message's fields: {id: [value...]}, a varint as BigInt, a
// length-delimited field as Uint8Array.
function parse(buf) {
	const out = {};
	let p = 0;
	while (p < buf.length) {
		let tag, v;
		[tag, p] = readVarint(buf, p);
		const id = Number(tag >> 3n), wt = Number(tag & 7n);
		if (wt === 0) {
			[v, p] = readVarint(buf, p);
		} else if (wt === 2) {
			let len;
			[len, p] = readVarint(buf, p);
			v = buf.subarray(p, p + Number(len));
			p += Number(len);
		} else if (wt === 1 || wt === 5) {
			v = buf.subarray(p, p + (wt === 1 ? 8 : 4));
			p += wt === 1 ? 8 : 4;
		} else {
			throw new Error('wire type ' + wt);
		}
		(out[id] = out[id] || []).push(v);
	}
	return out;
}

// A packed repeated varint field may also come unpacked: take both.
function varints(vals) {
	const out = [];
	for (const v of vals || []) {
		if (typeof v === 'bigint') {
			out.push(v);
			continue;
		}
		for (let p = 0, x; p < v.length;) {
			[x, p] = readVarint(v, p);
			out.push(x);
		}
	}
	return out;
}

function rows(replies) {
	const cols = [], cells = [];
	let err = null;
	for (const rpc of replies) {
		for (const qr of (rpc[203] || []).map(parse)) {
			for (const c of qr[1] || [])
				cols.push(Buffer.from(c).toString());
			// "not an error" is SQLite's text for SQLITE_OK.
			const e = qr[2] ? Buffer.from(qr[2][0]).toString() : '';
			if (e && e !== 'not an error')
				err = e;
			for (const b of (qr[3] || []).map(parse)) {
				const types = varints(b[1]).map(Number);
				const ints = varints(b[2]).map(x => Number(BigInt.asIntN(64, x)));
				const dbl = [];
				for (const c of b[3] || []) {
					const dv = new DataView(c.buffer, c.byteOffset, c.length);
					for (let i = 0; i + 8 <= c.length; i += 8)
						dbl.push(dv.getFloat64(i, true));
				}
				const str = Buffer.concat((b[5] || []).map(x => Buffer.from(x)))
					.toString().split('\0');
				let iv = 0, id = 0, is = 0;
				for (const t of types)
					cells.push(t === CELL_NULL ? null : t === CELL_VARINT ? ints[iv++] :
						   t === CELL_FLOAT64 ? dbl[id++] : t === CELL_STRING ? str[is++] :
						   t === CELL_BLOB ? '<blob>' : undefined);
			}
		}
	}
	if (err)
		return { error: err };
	const out = [];
	for (let i = 0; cols.length && i + cols.length <= cells.length; i += cols.length)
		out.push(Object.fromEntries(cols.map((c, j) => [c, cells[i + j]])));
	return out;
}

tp.ready.then(() => {
	let pending = [];
	const reply = tp.addFunction((ptr, size) => {
		pending.push(tp.HEAPU8.slice(ptr, ptr + size));
	}, 'vii');
	const BUF = 32 << 20;
	const req = tp.ccall('trace_processor_rpc_init', 'number', ['number', 'number'],
			     [reply, BUF]);
	let seq = 0;
	function call(method, extra) {
		const msg = Buffer.concat([field(1, 0, varint(++seq)), field(2, 0, varint(method)),
					   extra]);
		const data = bytesField(1, msg);
		for (let w = 0; w < data.length; w += BUF) {
			const part = data.subarray(w, w + BUF);
			tp.HEAPU8.set(part, req);
			tp.ccall('trace_processor_on_rpc_request', 'void', ['number'], [part.length]);
		}
		const all = Buffer.concat(pending);
		pending = [];
		return (parse(all)[1] || []).map(parse);
	}
	const trace = fs.readFileSync(tracePath);
	const CHUNK = 4 << 20;
	for (let w = 0; w < trace.length; w += CHUNK) {
		const chunk = trace.subarray(w, w + CHUNK);
		for (const rpc of call(TPM_APPEND_TRACE_DATA, bytesField(101, chunk))) {
			const r = rpc[201] ? parse(rpc[201][0]) : {};
			if (r[2]) {
				console.error('perfetto_check: ' + Buffer.from(r[2][0]).toString());
				process.exit(1);
			}
		}
	}
	call(TPM_FINALIZE_TRACE_DATA, Buffer.alloc(0));
	const out = {};
	for (const q of queries)
		out[q] = rows(call(TPM_QUERY_STREAMING, bytesField(103, bytesField(1, Buffer.from(q)))));
	console.log(JSON.stringify(out));
}).catch(e => {
	console.error('perfetto_check: ' + (e && e.stack || e));
	console.error(stderr.slice(-20).join('\n'));
	process.exit(1);
});
