// Key inspector: a row key of any schema decoded by rowkit's codecs and shown as coloured byte
// segments, each named with its meaning. The segments come from the codec that owns the key's
// layout (`segments` of `decodeKey`); this view only draws them.
import { copyButton, el, field, keyText } from './dom.js';

export const title = 'Key inspector';

/** Colours of the fields (background; text stays dark), by field name; others get a hashed one. */
const FIELD_COLOURS = {
  separator: '#e4e4e4', hash: '#f6c28b', name: '#a8d5a2', counter: '#f6c28b', creator: '#a8d5a2',
  shard: '#f6c28b', namespace: '#d7c4ec', 'row type': '#f4a6a6', 'tile key': '#9fc9ef', subkey: '#a8d5a2',
  collection: '#9fc9ef', 'kind prefix': '#f4a6a6', 'object key': '#a8d5a2', 'version id': '#f6c28b',
  'internal key': '#a8d5a2', graph: '#9fc9ef', index: '#f4a6a6', subject: '#a8d5a2',
  predicate: '#f6c28b', object: '#d7c4ec',
};

/** A stable colour for a field (FIELD_COLOURS, else a light hue from its name's hash). */
export function fieldColour(name) {
  if (FIELD_COLOURS[name]) return FIELD_COLOURS[name];
  let h = 0;
  for (const c of name) h = (h * 31 + c.codePointAt(0)) >>> 0;
  return `hsl(${h % 360} 70% 80%)`;
}

/**
 * A decoded key's bytes as coloured segments: each a `<span>` titled with its field and
 * meaning, in order, so the key reads as it is stored. A text alternative names the fields.
 */
export function segmentedKey(doc) {
  const segments = doc.segments ?? [];
  const label = segments.map((s) => `${s.field} ${s.bytes}`).join(', ');
  return el('code', { class: 'segments', 'aria-label': `Row key: ${label}` },
    segments.map((s) => el('span', {
      class: 'segment', dataset: { field: s.field }, title: `${s.field} (bytes ${s.start}–${s.end - 1}): ${s.meaning}`,
      style: `background: ${fieldColour(s.field)}`,
    }, keyText(s.bytes))));
}

/** The legend of a key's segments: bytes, field, value and meaning, one row per segment. */
function legend(doc) {
  const rows = (doc.segments ?? []).filter((s) => s.field !== 'separator');
  return el('table', { class: 'legend' },
    el('caption', null, `Segments of the ${doc.schema} key`),
    el('thead', null, el('tr', null, ['Bytes', 'Field', 'Value', 'Meaning'].map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', null, rows.map((s) => el('tr', { dataset: { field: s.field } },
      el('td', null, `${s.start}–${s.end - 1}`),
      el('td', null, el('span', { class: 'swatch', style: `background: ${fieldColour(s.field)}`, 'aria-hidden': 'true' }), ` ${s.field}`),
      el('td', null, keyText(s.bytes)),
      el('td', null, s.meaning)))));
}

/** A decoded key's fields as a two-column table, but those in `omit` (segments shown apart). */
export function fieldsTable(doc, omit = ['segments']) {
  return el('table', { class: 'fields' }, el('tbody', null,
    Object.entries(doc).filter(([k]) => !omit.includes(k)).map(([k, v]) => el('tr', null,
      el('th', { scope: 'row' }, k),
      el('td', { class: 'k' }, typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v))))));
}

/** Error codes of `decodeKey` that mean "none of the schemas' layouts fits these bytes". */
const NO_LAYOUT_FITS = new Set(['unknown_row_key', 'not_a_row_key']);

/**
 * The answer for a key no schema's layout fits: said as such (not as a failure of the tool),
 * with the codecs' reason, the key's bytes as read, and what to try next.
 */
function noLayoutFits(e, schema, key, ctx) {
  const which = schema === 'auto' ? "No schema's row key layout fits this key" : `This is not a ${schema} row key`;
  return el('div', { class: 'no-fit' },
    el('p', { class: 'no-fit-title' }, `${which}.`),
    el('p', null, ctx.describe(e)),
    el('p', null, 'The key as read: ', keyText(key)),
    schema === 'auto'
      ? el('p', { class: 'help' }, 'Choose a schema above to see why that schema\'s layout does not fit.')
      : null);
}

// The mounted view's restore (one page has one key inspector).
let restoreMounted = null;

export function mount(section, ctx) {
  const input = el('input', { id: 'key-input', name: 'key', size: 60, required: true });
  const schema = el('select', { id: 'key-schema', name: 'schema' },
    [['auto', 'auto'], ['mt', 'mt (mount table)'], ['gold', 'gold (trace store)'], ['s3', 's3 (object metadata)'],
      ['graph', 'graph (triples)']].map(([v, t]) => el('option', { value: v }, t)));
  const out = el('div', { id: 'key-out', class: 'out', tabindex: 0, role: 'region', 'aria-label': 'Decoded key', 'aria-live': 'polite' });
  const form = el('form', { id: 'key-form' },
    field(el('span', null, 'Row key (escaped text, ', el('code', null, '\\xHH'), ', or ', el('code', null, 'hex:…'), ')'), input),
    field('Schema', schema),
    el('button', null, 'Decode'));
  section.append(el('h2', null, title), form, out);

  function decode() {
    try {
      const doc = ctx.rowkit.decodeKey(schema.value, input.value);
      const fields = fieldsTable(doc);
      fields.prepend(el('caption', null, `Row key decoded as ${doc.schema}${doc.kind ? ` (${doc.kind})` : ''}`));
      out.replaceChildren(
        el('div', { class: 'key-line' }, segmentedKey(doc), copyButton(doc.row_key, 'Copy key')),
        legend(doc), fields);
    } catch (e) {
      if (NO_LAYOUT_FITS.has(e?.code)) out.replaceChildren(noLayoutFits(e, schema.value, input.value, ctx));
      else ctx.fail(out, e);
    }
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const params = new URLSearchParams({ key: input.value });
    if (schema.value !== 'auto') params.set('schema', schema.value);
    ctx.setState(params);
    decode();
  });

  restoreMounted = (params) => {
    input.value = params.get('key') ?? '';
    schema.value = params.get('schema') ?? 'auto';
    if (input.value) decode();
    else out.replaceChildren();
  };
}

/** The view's state from the URL (`#keys?key=…&schema=…`): decodes that key. */
export function restore(params) {
  restoreMounted?.(params);
}
