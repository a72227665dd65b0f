// fg_script_check.js — run the flame graph's inline script against a
// minimal DOM built from the SVG's frames, and check search and zoom.
//
//   node test/e2e/fg_script_check.js FILE.svg FUNCTION
//
// FUNCTION must be a frame narrower than the whole graph. Prints TAP.
'use strict';
const fs = require('fs');

const [file, func] = process.argv.slice(2);
const svg = fs.readFileSync(file, 'utf8');
let n = 0, failed = 0;
function check(ok, what) {
  n++;
  if (!ok) failed++;
  console.log((ok ? 'ok ' : 'not ok ') + n + ' - ' + what);
}

function unescape(s) {
  return s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'").replace(/&amp;/g, '&');
}

// Elements: attributes, textContent, a style object, listeners.
function el(tag, attrs, text) {
  return {
    tagName: tag, attrs: Object.assign({}, attrs), textContent: text || '', style: {},
    children: [], listeners: {},
    getAttribute(k) { return k in this.attrs ? String(this.attrs[k]) : null; },
    setAttribute(k, v) { this.attrs[k] = String(v); },
    addEventListener(ev, fn) { (this.listeners[ev] = this.listeners[ev] || []).push(fn); },
    getElementsByTagName(t) { return this.children.filter(c => c.tagName === t); },
    fire(ev) { (this.listeners[ev] || []).forEach(fn => fn({ preventDefault() {} })); },
  };
}

function attrsOf(s) {
  const a = {};
  for (const m of s.matchAll(/([\w-]+)="([^"]*)"/g)) a[m[1]] = unescape(m[2]);
  return a;
}

const frames = [];
for (const m of svg.matchAll(/<g class="f"><title>(.*?)<\/title><rect ([^>]*)\/><text ([^>]*)>(.*?)<\/text><\/g>/g)) {
  const g = el('g', { class: 'f' });
  g.children.push(el('title', {}, unescape(m[1])), el('rect', attrsOf(m[2])),
                  el('text', attrsOf(m[3]), unescape(m[4])));
  frames.push(g);
}
const byId = {};
for (const m of svg.matchAll(/<text id="(\w+)"([^>]*)>(.*?)<\/text>/g))
  byId[m[1]] = el('text', attrsOf(m[2]), unescape(m[3]));

let promptAnswer = null;
const win = { listeners: {}, addEventListener(ev, fn) { (this.listeners[ev] = this.listeners[ev] || []).push(fn); } };
const doc = {
  documentElement: {},
  getElementById: id => byId[id],
  getElementsByClassName: c => (c === 'f' ? frames : []),
};
const script = svg.match(/<!\[CDATA\[([\s\S]*)\]\]>/)[1];
new Function('document', 'window', 'prompt', 'alert', script)(
  doc, win, () => promptAnswer, msg => { throw new Error('alert: ' + msg); });

const rect = g => g.getElementsByTagName('rect')[0];
const name = g => g.getElementsByTagName('title')[0].textContent.replace(/ \(.*\)$/, '');
const width = g => +rect(g).getAttribute('width');
const find = f => frames.find(g => name(g) === f);
const root = frames[0];
const target = find(func);
check(frames.length > 1 && name(root) === 'all', 'frames found, root first');
check(target && width(target) < width(root), func + ' is a frame narrower than the root');
if (!target) process.exit(1);

// Tooltip line on hover.
target.fire('mouseover');
check(byId.details.textContent.startsWith('Function: ' + func + ' ('), 'details line on hover');

// Search: the matched share equals the frame's share of samples.
const share = +target.getElementsByTagName('title')[0].textContent.match(/([0-9.]+)%\)$/)[1];
promptAnswer = '^' + func.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$';
byId.search.fire('click');
const matched = parseFloat(byId.matched.textContent.replace('Matched: ', ''));
check(rect(target).getAttribute('fill') === 'rgb(230,0,230)', 'search highlights ' + func);
check(Math.abs(matched - share) < 0.15, `search matched ${matched}% = the frame's ${share}%`);
check(byId.search.textContent === 'Reset Search', 'search button turns into reset');
byId.search.fire('click');
check(rect(target).getAttribute('fill') !== 'rgb(230,0,230)' && byId.matched.textContent.trim() === '',
      'reset search restores colours');

// Zoom: the frame fills the width; frames beside it disappear; its callers fade.
const before = frames.map(g => [rect(g).getAttribute('x'), rect(g).getAttribute('width')]);
target.fire('click');
const full = width(root);
check(Math.abs(width(target) - full) < 0.2, 'zoomed frame spans the graph');
check(root.style.opacity === '0.5' && root.style.display === '', 'callers stay, faded');
const hidden = frames.filter(g => g.style.display === 'none').length;
const sibling = frames.some(g => g.style.display !== 'none' && g !== target && g !== root &&
  +rect(g).getAttribute('y') === +rect(target).getAttribute('y'));
check(!sibling, 'no other frame at the zoomed depth stays visible');
check(hidden > 0 || frames.length <= 3, 'frames outside the zoom are hidden');
byId.unzoom.fire('click');
const after = frames.map(g => [rect(g).getAttribute('x'), rect(g).getAttribute('width')]);
check(JSON.stringify(before) === JSON.stringify(after) && frames.every(g => g.style.display === ''),
      'reset zoom restores every frame');

console.log('1..' + n);
process.exit(failed ? 1 : 0);
