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

/**
 * Makes `node`, a box that scrolls, reachable by keyboard (a focusable region named `label`),
 * so its content can be scrolled without a mouse. Returns `node`.
 */
export function scrollRegion(node, label) {
  if (!node.hasAttribute('tabindex')) node.tabIndex = 0;
  if (!node.hasAttribute('role')) node.setAttribute('role', 'region');
  if (!node.hasAttribute('aria-label') && !node.hasAttribute('aria-labelledby')) node.setAttribute('aria-label', label);
  return node;
}

/** A JSON value pretty-printed (two-space indent) in a `<pre>` (a keyboard-scrollable region). */
export function pretty(value, label = 'JSON document') {
  return scrollRegion(el('pre', { class: 'json' }, JSON.stringify(value, null, 2)), label);
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
  const get = () => {
    const o = options();
    const k = JSON.stringify(o);
    if (k !== key) {
      client = make(o);
      key = k;
    }
    return client;
  };
  /** The next call makes a new client (one whose caches are stale: a bucket's key format migrated). */
  get.reset = () => { key = null; };
  return get;
}

// ---- The shared UI contract (issue 31): readable errors, dates, sizes, caps, copying. ----

/**
 * The readable label of an error code: a dotted or slashed id keeps its last part, and words
 * are spaced (`invalid_argument`, `NoSuchKey`, `errMalformedAddress` → `invalid argument`,
 * `no such key`, `malformed address`).
 */
function codeLabel(code) {
  const last = String(code).split('/').pop().split('.').pop();
  // Vanadium's private ids (`errMalformedAddress`) read as words.
  return last.replace(/^err(?=[A-Z])/, '').replace(/([a-z])([A-Z])/g, '$1 $2').replace(/_/g, ' ').toLowerCase();
}

// A message prefix `X: ` that only repeats the code (or the previous prefix), in any casing or
// word style: "InternalError: InternalError: …", "INTERNAL: …" under code `internal`.
const squash = (s) => s.toLowerCase().replace(/[^a-z0-9]/g, '');
// A text's words, lower case, for "does the message already say the code".
const words = (text) => text.toLowerCase().split(/[^a-z0-9]+/).filter(Boolean);

/**
 * An error as one readable line: its code as words (`unauthenticated`, `no such key`,
 * `malformed address`) and its message without the prefixes that repeat the code, so nothing
 * reads "X: X: …".
 */
export function describe(e) {
  const code = e?.code ? String(e.code) : '';
  let message = String(e?.message ?? e ?? 'unknown error').trim();
  const seen = new Set([squash(code), squash(codeLabel(code)), squash(`${codeLabel(code)}error`)]);
  if (e?.name && e.name !== 'Error') seen.add(squash(e.name));
  for (;;) {
    const m = message.match(/^([^\s:][^:]{0,80}):\s*/);
    if (!m || !(seen.has(squash(m[1])) || seen.has(squash(m[1].split('.').pop())))) break;
    seen.add(squash(m[1]));
    message = message.slice(m[0].length);
  }
  if (!code) return message;
  const label = codeLabel(code);
  if (!message || squash(message) === squash(code)) return label;
  // A message that already says every word of the label ("bucket photos already exists" for
  // BucketAlreadyExists) says it once.
  const said = new Set(words(message));
  return words(label).every((w) => said.has(w)) ? message : `${label}: ${message}`;
}

/**
 * An error shown as the contract's failure block: the readable line as role="alert" and the
 * whole detail (code, name, message, other properties) behind a "Details" disclosure.
 */
export function failure(e) {
  const detail = [];
  if (e?.code) detail.push(['Code', String(e.code)]);
  if (e?.name && e.name !== 'Error') detail.push(['Name', String(e.name)]);
  const own = e !== null && typeof e === 'object' ? Object.keys(e) : [];
  for (const k of own.filter((name) => !['code', 'name', 'message'].includes(name))) {
    detail.push([k, typeof e[k] === 'object' ? JSON.stringify(e[k]) : String(e[k])]);
  }
  detail.push(['Message', String(e?.message ?? e)]);
  return el('div', { class: 'failure' },
    el('p', { class: 'error', role: 'alert' }, describe(e)),
    el('details', null, el('summary', null, 'Details'),
      el('dl', { class: 'error-detail' }, detail.map(([k, v]) => [el('dt', null, k), el('dd', null, el('code', null, v))]))));
}

const pad = (n, w = 2) => String(n).padStart(w, '0');

/**
 * A timestamp as a `<time>` a person reads: local date and time (milliseconds when present),
 * with the UTC instant in `datetime` and `title`. `t`: `{ us }` (microseconds since the epoch,
 * as Bigtable cells carry), `{ ms }`, or an RFC 3339 string. Small values stay dates (1970-…),
 * as the CLI prints them, with the raw number in the title.
 */
export function formatTime(t) {
  let ms;
  let raw;
  if (typeof t === 'string') {
    ms = Date.parse(t);
    raw = t;
  } else if (t && t.us !== undefined) {
    raw = `${t.us} µs`;
    ms = Number(t.us) / 1000;
  } else if (t && t.ms !== undefined) {
    ms = Number(t.ms);
    raw = `${t.ms} ms`;
  } else {
    throw new TypeError(`formatTime: expected { us }, { ms } or an RFC 3339 string, got ${JSON.stringify(t)}`);
  }
  const d = new Date(ms);
  if (Number.isNaN(d.getTime())) return el('time', { title: 'not a valid time' }, String(raw));
  const frac = d.getMilliseconds() ? `.${pad(d.getMilliseconds(), 3)}` : '';
  const local = `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}${frac}`;
  const iso = d.toISOString();
  return el('time', { datetime: iso, title: `${iso} (UTC) · ${raw}` }, local);
}

/** A number with thousands grouped ("11,001"). */
export function count(n) {
  return Number(n).toLocaleString('en-US');
}

/** A byte size as "1.2 MiB" (binary units) in a `<span>` whose title is the exact count. */
export function humanSize(bytes) {
  const n = Number(bytes);
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = n;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u += 1;
  }
  const text = u === 0 ? `${n} ${n === 1 ? 'byte' : 'bytes'}` : `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[u]}`;
  return el('span', { class: 'size', title: `${count(n)} bytes` }, text);
}

/**
 * The warning shown when a listing stopped at its cap: "showing the first 1,000 rows: the cap
 * on 'all'; narrow the range to see the rest". `what` names the items ("rows", "objects").
 */
export function capNotice(shown, cap, what) {
  return el('p', { class: 'cap-notice', role: 'status' },
    `showing the first ${count(Math.min(shown, cap))} ${what}: the cap on 'all'; narrow the range to see the rest`);
}

/**
 * A button that copies `text` to the clipboard and says so in an aria-live note beside it
 * ("copied" or why not). `label` is the button's text ("Copy key").
 */
export function copyButton(text, label = 'Copy') {
  const note = el('span', { class: 'copy-note', 'aria-live': 'polite' });
  const button = el('button', {
    type: 'button',
    class: 'copy',
    onclick: async () => {
      note.textContent = '';
      try {
        await navigator.clipboard.writeText(text);
        note.textContent = 'copied';
      } catch (e) {
        // No clipboard permission (an insecure origin, a denied prompt): select the text instead.
        note.textContent = `not copied (${describe(e)}): select it and copy by hand`;
      }
    },
  }, label);
  return el('span', { class: 'copy-wrap' }, button, note);
}

/**
 * A labelled field (as `field`) checked as the user types with the wasm package's
 * `validate(fieldName, value)` (the rules the CLI applies; no `fieldName`: none) and
 * `extra(value)` (a form's own rule, e.g. "required"); a problem is shown by `markInvalid`.
 * Returns `{ label, check, text }`; `check()` runs the rules now and returns the message or
 * null — forms call it before their first write.
 */
export function validatedField(rowkit, text, input, fieldName, extra = () => null) {
  const label = field(text, input);
  const rule = (value) => {
    try {
      return rowkit.validate && fieldName ? (rowkit.validate(fieldName, value) ?? null) : null;
    } catch {
      return null; // a field this package's validator does not know
    }
  };
  const check = () => {
    const problem = extra(input.value) ?? rule(input.value);
    markInvalid(input, problem);
    return problem;
  };
  input.addEventListener('input', check);
  return { label, check, text };
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
