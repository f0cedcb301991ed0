// Table browser: any table scanned by key prefix, each row key explained for its schema.
import { fieldsTable } from './keys.js';

export const title = 'Table browser';

export function mount(section, ctx) {
  section.innerHTML = `
  <h2 id="browse-h">Table browser</h2>
  <form id="browse-form">
    <label>Table
      <select id="browse-table" name="table">
        <option value="mounttable">mounttable</option><option value="mounttable-counters">mounttable-counters</option>
        <option value="gold">gold</option><option value="objmeta">objmeta</option><option value="badwolf">badwolf</option>
      </select></label>
    <label>Key prefix <input id="browse-prefix" name="prefix" size="30"></label>
    <label>Limit <input id="browse-limit" name="limit" type="number" min="0" value="100" size="5"></label>
    <label>Decode as
      <select id="browse-schema" name="schema">
        <option value="auto">auto</option><option value="mt">mt</option><option value="gold">gold</option>
        <option value="s3">s3</option><option value="graph">graph</option><option value="none">none</option>
      </select></label>
    <button>Scan</button>
  </form>
  <div id="browse-out" class="out" aria-live="polite"></div>`;
  const $ = (id) => section.querySelector(`#${id}`);
  $('browse-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const out = $('browse-out');
    try {
      const rows = await ctx.busy(out, ctx.rowkit.scanRows(ctx.options(), $('browse-table').value,
        $('browse-prefix').value, Number($('browse-limit').value) || 0, $('browse-schema').value));
      const t = document.createElement('table');
      t.createCaption().textContent = `${rows.length} row(s)`;
      const head = t.createTHead().insertRow();
      for (const h of ['Row key', 'Decoded', 'Cells']) {
        const th = document.createElement('th');
        th.scope = 'col';
        th.textContent = h;
        head.append(th);
      }
      const body = t.createTBody();
      for (const row of rows) {
        const r = body.insertRow();
        r.insertCell().textContent = row.row_key;
        r.cells[0].className = 'k';
        const dec = r.insertCell();
        if (row.decoded) dec.append(fieldsTable(row.decoded));
        const cells = r.insertCell();
        cells.className = 'k';
        cells.textContent = row.cells
          .map((c) => `${c.family}:${c.qualifier} @${c.timestampMicros} = ${c.value}`)
          .join('\n');
      }
      out.replaceChildren(t);
    } catch (e) {
      ctx.fail(out, e);
    }
  });
}
