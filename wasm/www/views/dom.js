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

/**
 * A check report (`{schema, rows_scanned, findings_by_kind, repaired, left, notes, findings}`,
 * as every wasm class's `check` resolves) as a summary list and a table of its findings.
 */
export function checkReport(report) {
  const kinds = Object.entries(report.findings_by_kind ?? {});
  const summary = el('dl', { class: 'check-summary' },
    el('dt', null, 'Schema'), el('dd', null, report.schema),
    el('dt', null, 'Rows scanned'), el('dd', null, report.rows_scanned),
    el('dt', null, 'Findings'), el('dd', null,
      kinds.length ? kinds.map(([k, n]) => `${k}: ${n}`).join(', ') : 'none'),
    el('dt', null, 'Repaired'), el('dd', null, report.repaired),
    el('dt', null, 'Left'), el('dd', null, report.left),
    (report.notes ?? []).length ? [el('dt', null, 'Notes'), el('dd', null, report.notes.join('; '))] : null);
  const findings = report.findings ?? [];
  return el('div', { class: 'check-report' },
    summary,
    findings.length
      ? table(`${findings.length} finding(s)`, ['Kind', 'Row', 'Detail', 'Repair', 'Repaired'],
        findings.map((f) => [f.kind, keyText(f.row_key), f.detail, f.repair, f.repaired ? 'yes' : 'no']))
      : null);
}

/**
 * A client of the view, made again only when its options change: `const client =
 * cachedClient(() => ctx.options(), (o) => new rowkit.MountTable(o))`. One client per set of
 * options keeps its call counter (the machines' seeds advance from call to call, as in one
 * CLI process) instead of starting each operation from the same seed.
 */
export function cachedClient(options, make) {
  let key = null;
  let client = null;
  return () => {
    const o = options();
    const k = JSON.stringify(o);
    if (k !== key) {
      client = make(o);
      key = k;
    }
    return client;
  };
}

/**
 * Marks the form control `control` invalid with `message` shown next to it (`aria-invalid`,
 * the message as its `aria-describedby`, announced), or valid again when `message` is null.
 * The forms call it before their first write, with the shared validator's messages.
 */
export function markInvalid(control, message) {
  const id = `${control.id}-error`;
  const described = (control.getAttribute('aria-describedby') ?? '').split(' ').filter((x) => x && x !== id);
  let note = document.getElementById(id);
  if (!message) {
    control.removeAttribute('aria-invalid');
    note?.remove();
    if (described.length) control.setAttribute('aria-describedby', described.join(' '));
    else control.removeAttribute('aria-describedby');
    return;
  }
  control.setAttribute('aria-invalid', 'true');
  if (!note) {
    note = el('span', { id, class: 'field-error', role: 'alert' });
    // After the control's label (which wraps it), so the message is not part of its name.
    (control.closest('label') ?? control).after(note);
  }
  note.textContent = message;
  control.setAttribute('aria-describedby', [...described, id].join(' '));
}
