// Table browser: any table scanned by key prefix, a page of rows at a time (the next page starts
// after the last key shown), each row key explained for its schema and drawn as its segments.
import { el, field, keyText } from './dom.js';
import { fieldsTable, segmentedKey } from './keys.js';

export const title = 'Table browser';

/** The tables rowkit's schemas use (the field takes any table id). */
const KNOWN_TABLES = ['mounttable', 'mounttable-counters', 'gold', 'objmeta', 'badwolf'];

function cellsText(row) {
  return row.cells.map((c) => `${c.family}:${c.qualifier} @${c.timestampMicros} = ${c.value}`
    + (c.valueSize > c.value_hex.length / 2 ? ` … (${c.valueSize} bytes)` : '')).join('\n');
}

function rowsTable(rows, caption) {
  return el('table', { class: 'rows' },
    el('caption', null, caption),
    el('thead', null, el('tr', null, ['Row key', 'Decoded', 'Cells'].map((h) => el('th', { scope: 'col' }, h)))),
    el('tbody', null, rows.map((row) => {
      const ok = row.decoded && !row.decoded.error;
      return el('tr', null,
        el('td', { class: 'k' }, ok ? segmentedKey(row.decoded) : keyText(row.row_key)),
        // The key itself is in the first column.
        el('td', null, row.decoded ? fieldsTable(row.decoded, ['segments', 'row_key', 'row_key_hex']) : null),
        el('td', { class: 'k cells' }, cellsText(row)));
    })));
}

export function mount(section, ctx) {
  const table = el('input', { id: 'browse-table', name: 'table', list: 'browse-tables', value: 'mounttable', size: 18, required: true });
  const prefix = el('input', { id: 'browse-prefix', name: 'prefix', size: 30 });
  const limit = el('input', { id: 'browse-limit', name: 'limit', type: 'number', min: 0, value: 25, size: 5 });
  const schema = el('select', { id: 'browse-schema', name: 'schema' },
    ['auto', 'mt', 'gold', 's3', 'graph', 'none'].map((v) => el('option', { value: v }, v)));
  const scan = el('button', { id: 'browse-scan' }, 'Scan');
  const prev = el('button', { type: 'button', id: 'browse-prev', disabled: true }, 'Previous page');
  const next = el('button', { type: 'button', id: 'browse-next', disabled: true }, 'Next page');
  const out = el('div', { id: 'browse-out', class: 'out', 'aria-live': 'polite' });
  const form = el('form', { id: 'browse-form' },
    field('Table', table),
    el('datalist', { id: 'browse-tables' }, KNOWN_TABLES.map((t) => el('option', { value: t }))),
    field('Key prefix', prefix), field('Rows per page (0 = all)', limit), field('Decode as', schema),
    scan, prev, next);
  section.append(el('h2', null, title), form, out);

  // The scan being paged: its parameters as of Scan, and the key each shown page started after.
  let query = null;
  let starts = [];
  let lastKey = null;

  async function show(after) {
    const pageSize = query.limit;
    // One row more than the page: whether a next page exists without another request.
    const rows = await ctx.busy(out, ctx.rowkit.scanRows(ctx.options(), query.table, query.prefix,
      pageSize ? pageSize + 1 : 0, query.schema, after ?? undefined));
    const more = pageSize > 0 && rows.length > pageSize;
    const page = more ? rows.slice(0, pageSize) : rows;
    lastKey = page.length ? page[page.length - 1].row_key : null;
    out.dataset.page = String(starts.length);
    const where = pageSize ? `page ${starts.length}` : 'all rows';
    out.replaceChildren(rowsTable(page, `${page.length} row(s) of ${query.table}, ${where}${more ? ', more follow' : ''}`));
    next.disabled = !more;
    prev.disabled = starts.length <= 1;
  }

  async function run(act) {
    try {
      await act();
    } catch (e) {
      next.disabled = true;
      ctx.fail(out, e);
    }
  }

  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    query = { table: table.value.trim(), prefix: prefix.value, limit: Number(limit.value) || 0, schema: schema.value };
    starts = [null];
    run(() => show(null));
  });
  next.addEventListener('click', () => run(() => {
    starts.push(lastKey);
    return show(lastKey);
  }));
  prev.addEventListener('click', () => run(() => {
    starts.pop();
    return show(starts[starts.length - 1]);
  }));
}
