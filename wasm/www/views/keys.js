// Key inspector: a row key of any schema decoded by rowkit's codecs.

export const title = 'Key inspector';

/** A decoded key's fields as a two-column table. */
export function fieldsTable(doc) {
  const t = document.createElement('table');
  const body = t.createTBody();
  for (const [k, v] of Object.entries(doc)) {
    const r = body.insertRow();
    const th = document.createElement('th');
    th.scope = 'row';
    th.textContent = k;
    r.append(th);
    const td = r.insertCell();
    td.className = 'k';
    td.textContent = typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
  }
  return t;
}

export function mount(section, ctx) {
  section.innerHTML = `
  <h2 id="keys-h">Key inspector</h2>
  <form id="key-form">
    <label><span>Row key (escaped text, <code>\\xHH</code>, or <code>hex:…</code>)</span>
      <input id="key-input" name="key" size="60" required></label>
    <label>Schema
      <select id="key-schema" name="schema">
        <option value="auto">auto</option><option value="mt">mt (mount table)</option>
        <option value="gold">gold (trace store)</option><option value="s3">s3 (object metadata)</option>
        <option value="graph">graph (triples)</option>
      </select></label>
    <button>Decode</button>
  </form>
  <div id="key-out" class="out" aria-live="polite"></div>`;
  const $ = (id) => section.querySelector(`#${id}`);
  $('key-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const out = $('key-out');
    try {
      const doc = ctx.rowkit.decodeKey($('key-schema').value, $('key-input').value);
      const t = fieldsTable(doc);
      t.createCaption().textContent = `Row key decoded as ${doc.schema}${doc.kind ? ` (${doc.kind})` : ''}`;
      out.replaceChildren(t);
    } catch (e) {
      ctx.fail(out, e);
    }
  });
}
