// Small DOM helpers shared by the browser tool's views (wasm/www/views/<name>.js): building
// elements, labelled fields, tables, and showing keys in their escaped text form.

const SVG_NS = 'http://www.w3.org/2000/svg';

// Properties set as properties (their attribute is only the initial value, or a boolean).
const PROPERTIES = new Set(['value', 'checked', 'disabled', 'selected', 'hidden', 'textContent']);

function apply(node, attrs) {
  for (const [k, v] of Object.entries(attrs ?? {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith('on') && typeof v === 'function') {
      node.addEventListener(k.slice(2), v);
    } else if (k === 'dataset') {
      Object.assign(node.dataset, v);
    } else if (PROPERTIES.has(k)) {
      node[k] = v;
    } else {
      node.setAttribute(k === 'className' ? 'class' : k, v === true ? '' : String(v));
    }
  }
}

function append(node, children) {
  for (const c of children.flat(Infinity)) {
    if (c === undefined || c === null || c === false) continue;
    node.append(c instanceof Node ? c : String(c));
  }
}

/**
 * An HTML element: `el('button', { type: 'button', onclick: f }, 'Set up')`. Attributes:
 * `on<event>` functions become listeners, `dataset` an object of data-*, `value`/`checked`/
 * `disabled`/`hidden` are set as properties, `true` is an empty attribute and
 * `false`/`null`/`undefined` leave the attribute out. Children: nodes, strings, numbers or
 * (nested) arrays of them; `null`/`false` are skipped.
 */
export function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  apply(node, attrs);
  append(node, children);
  return node;
}

/** An SVG element (same arguments as `el`), for the views that draw. */
export function svg(tag, attrs, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  apply(node, attrs);
  append(node, children);
  return node;
}

let lastId = 0;

/** A fresh element id with `prefix`, for label/for and aria-labelledby pairs. */
export function uniqueId(prefix) {
  lastId += 1;
  return `${prefix}-${lastId}`;
}

/**
 * A labelled form control: `field('Bucket', el('input', { name: 'bucket' }))` gives the input an
 * id (unless it has one) and a `<label for>` naming it; returns the label wrapping both.
 */
export function field(text, control) {
  if (!control.id) control.id = uniqueId(control.name || 'field');
  return el('label', { for: control.id }, el('span', null, text), control);
}

/**
 * A table with a caption, column headers (`th scope=col`) and rows; a cell is a node, a string,
 * or an array of them. `rowAttrs(row, i)` may give each `<tr>` attributes.
 */
export function table(caption, headers, rows, rowAttrs) {
  return el('table', null,
    caption ? el('caption', null, caption) : null,
    el('thead', null, el('tr', null, headers.map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', null, rows.map((cells, i) =>
      el('tr', rowAttrs ? rowAttrs(cells, i) : null, cells.map((c) => el('td', null, c))))));
}

/**
 * A key in its escaped text form (as the wasm package and the CLI print it: `\xHH` for bytes
 * outside printable ASCII, `\\` for a backslash) as `<code class="key">`, each escape in a
 * `<span class="esc">` so that bytes stand out from text.
 */
export function keyText(escaped) {
  const code = el('code', { class: 'key' });
  const re = /\\x[0-9a-fA-F]{2}|\\\\/g;
  let at = 0;
  for (const m of escaped.matchAll(re)) {
    if (m.index > at) code.append(escaped.slice(at, m.index));
    code.append(el('span', { class: 'esc' }, m[0]));
    at = m.index + m[0].length;
  }
  if (at < escaped.length) code.append(escaped.slice(at));
  return code;
}

/** A JSON value pretty-printed (two-space indent) in a `<pre>`. */
export function pretty(value) {
  return el('pre', { class: 'json' }, JSON.stringify(value, null, 2));
}
