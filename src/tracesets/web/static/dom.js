// Building the page: elements from tags, attributes and text only. Data never becomes
// markup: strings go in as text nodes, so a name like <img src=x onerror=…> shows as text.

const SVG_NS = 'http://www.w3.org/2000/svg';

function fill(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
    } else if (name === 'style') {
      throw new Error('style attributes are refused by the Content-Security-Policy: use a class');
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Put children in place of an element's own, skipping null and false as h() does. */
export function replace(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** A table cell labelled for the narrow layout, its content in one box. */
export function cell(label, attrs, ...content) {
  return h('td', { 'data-label': label, ...attrs }, h('div', { class: 'cell' }, content));
}

export function plural(n, one, many) {
  return `${formatCount(n)} ${n === 1 ? one : many}`;
}

/** An HTML element: h('a', {href: '#/', class: 'link'}, 'text', otherElement). */
export function h(tag, attrs, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element, attributes set the same way (presentation attributes, no style). */
export function svg(tag, attrs, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

const UNITS = ['kB', 'MB', 'GB', 'TB', 'PB', 'EB', 'ZB', 'YB'];

/** Decimal units, written as the command line (rich) writes them: "1 byte", "4.0 MB". */
export function formatBytes(size) {
  if (size < 1000) return `${size} ${size === 1 ? 'byte' : 'bytes'}`;
  let unit = 0;
  let base = 1000;
  while (size >= base * 1000 && unit < UNITS.length - 1) {
    base *= 1000;
    unit += 1;
  }
  const value = (size / base).toLocaleString('en-US', { minimumFractionDigits: 1, maximumFractionDigits: 1 });
  return `${value} ${UNITS[unit]}`;
}

export function formatCount(n) {
  return n.toLocaleString('en-US');
}

/** "2026-11-29 14:57 UTC" in a <time>, the full timestamp on hover. */
export function timeElement(iso) {
  if (!iso) return h('span', { class: 'muted' }, '—');
  const shown = iso.replace('T', ' ').replace(/:\d\d(\.\d+)?Z$/, ' UTC');
  return h('time', { datetime: iso, title: iso }, shown);
}

export function statusBadge(status) {
  return h('span', { class: `badge badge-${String(status).replace(/[^a-z]/g, '')}` }, status);
}

/** A measured time in µs, in the unit that reads best: "850 µs", "12.34 ms", "2.50 s". */
export function formatDuration(us) {
  if (us < 1000) return `${us.toFixed(us < 10 ? 1 : 0)} µs`;
  if (us < 1_000_000) return `${(us / 1000).toFixed(us < 100_000 ? 2 : 1)} ms`;
  return `${(us / 1_000_000).toFixed(2)} s`;
}
