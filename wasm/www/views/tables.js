// Table browser: the store's tables listed, any table scanned by key prefix and range (start
// inclusive, end exclusive), narrowed to one column family and/or qualifier, a page of rows at
// a time (the next page starts after the last key shown; "all" stops at a cap, with a warning),
// each row key explained for its schema and drawn as its segments, cell timestamps as dates.
// The form's values and the page are the view's URL state (#tables?table=…&start=…).
import { capNotice, copyButton, el, field, formatTime, keyText } from './dom.js';
import { fieldsTable, segmentedKey } from './keys.js';

export const title = 'Table browser';

/** The tables rowkit's schemas use, offered before the store's own list is read. */
const KNOWN_TABLES = ['mounttable', 'mounttable-counters', 'gold', 'objmeta', 'badwolf'];

/** At most this many rows for "all" (a page size of 0): rendering more takes seconds. */
export const ALL_ROWS_CAP = 1000;

/** The form's fields that are URL state, by parameter name (the element ids are browse-<name>). */
const STATE_FIELDS = ['table', 'prefix', 'start', 'end', 'family', 'qualifier', 'limit', 'schema'];

/** A row's cells, one line each: family:qualifier, the timestamp as a date, the value. */
function cellLines(row) {
  return row.cells.map((c) => el('div', { class: 'cell' },
    el('code', null, `${c.family}:`, keyText(c.qualifier)), ' ',
    formatTime({ us: c.timestampMicros }), ' = ',
    keyText(c.value),
    c.valueSize > c.value_hex.length / 2 ? ` … (${c.valueSize} bytes)` : ''));
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
        el('td', { class: 'cells' }, cellLines(row)));
    })));
}

/** The store's tables (the wasm package's `listTables`): `[{name, families: [name]}]`. */
async function listTables(ctx) {
  if (typeof ctx.rowkit.listTables !== 'function') {
    throw Object.assign(new Error('this build of the wasm package cannot list tables (no listTables)'), { code: 'unimplemented' });
  }
  const tables = await ctx.rowkit.listTables(ctx.options());
  return tables.map((t) => ({ name: t.name, families: (t.families ?? []).map((f) => f.name) }));
}

// The mounted view's restore (one page has one table browser).
let restoreMounted = null;

export function mount(section, ctx) {
  const input = {
    table: el('input', { id: 'browse-table', name: 'table', list: 'browse-tables', value: 'mounttable', size: 18, required: true }),
    prefix: el('input', { id: 'browse-prefix', name: 'prefix', size: 24 }),
    start: el('input', { id: 'browse-start', name: 'start', size: 18 }),
    end: el('input', { id: 'browse-end', name: 'end', size: 18 }),
    family: el('input', { id: 'browse-family', name: 'family', list: 'browse-families', size: 10 }),
    qualifier: el('input', { id: 'browse-qualifier', name: 'qualifier', size: 10 }),
    limit: el('input', { id: 'browse-limit', name: 'limit', type: 'number', min: 0, value: 25, size: 5 }),
    schema: el('select', { id: 'browse-schema', name: 'schema' },
      ['auto', 'mt', 'gold', 's3', 'graph', 'none'].map((v) => el('option', { value: v }, v))),
  };
  const scan = el('button', { id: 'browse-scan' }, 'Scan');
  const prev = el('button', { type: 'button', id: 'browse-prev', disabled: true }, 'Previous page');
  const next = el('button', { type: 'button', id: 'browse-next', disabled: true }, 'Next page');
  const datalist = el('datalist', { id: 'browse-tables' }, KNOWN_TABLES.map((t) => el('option', { value: t })));
  const listButton = el('button', { type: 'button', id: 'browse-list' }, 'List tables');
  const familyList = el('datalist', { id: 'browse-families' });
  // The families of each listed table, offered in the Family field for the table chosen.
  let familiesOf = new Map();
  const offerFamilies = () => familyList.replaceChildren(
    ...(familiesOf.get(input.table.value.trim()) ?? []).map((f) => el('option', { value: f })));
  const tablesOut = el('div', { id: 'browse-tables-out', class: 'table-list', 'aria-live': 'polite' });
  // The rows scroll inside this box: focusable and named, so a keyboard reaches all of them.
  const out = el('div', { id: 'browse-out', class: 'out', tabindex: 0, role: 'region', 'aria-label': 'Scanned rows', 'aria-live': 'polite' });
  // The fields are checked by readForm, which says what is wrong in the output (novalidate: not
  // the browser's bubble, which a screen reader may miss).
  const form = el('form', { id: 'browse-form', novalidate: true },
    field('Table', input.table), datalist,
    field('Key prefix', input.prefix),
    field('Start key (from)', input.start), field('End key (before)', input.end),
    field('Family', input.family), familyList, field('Qualifier', input.qualifier),
    field(`Rows per page (0 = all, at most ${ALL_ROWS_CAP.toLocaleString('en-US')})`, input.limit),
    field('Decode as', input.schema),
    scan, prev, next);
  section.append(el('h2', null, title),
    el('div', { class: 'tables-bar' }, listButton, tablesOut),
    form,
    el('p', { class: 'help' }, 'Keys as escaped text (\\xHH for a byte) or hex:…; the end key is not included.'),
    out);

  // The scan being paged: its parameters as of Scan, and the key each shown page started after.
  let query = null;
  // The scan in flight (its AbortController).
  let running = null;
  let starts = [];
  let lastKey = null;

  async function show(after) {
    // A page size of 0 ("all") or above the cap reads at most the cap.
    const capped = query.limit === 0 || query.limit > ALL_ROWS_CAP;
    const pageSize = capped ? ALL_ROWS_CAP : query.limit;
    const narrowing = { start: query.start, end: query.end, family: query.family, qualifier: query.qualifier };
    // A new scan cancels the one still running, whose rows would otherwise land after these.
    running?.abort();
    const mine = new AbortController();
    running = mine;
    let rows;
    try {
      // One row more than the page: whether a next page exists without another request.
      rows = await ctx.busy(out, ctx.rowkit.scanRows({ ...ctx.options(), signal: mine.signal }, query.table, query.prefix,
        pageSize + 1, query.schema, after ?? undefined, narrowing));
    } catch (e) {
      if (running !== mine) return; // superseded: its cancellation is no news
      throw e;
    }
    if (running !== mine) return;
    const more = rows.length > pageSize;
    const page = more ? rows.slice(0, pageSize) : rows;
    lastKey = page.length ? page[page.length - 1].row_key : null;
    out.dataset.page = String(starts.length);
    const where = capped && starts.length === 1 ? 'all rows' : `page ${starts.length}`;
    const caption = page.length
      ? `${page.length} row(s) of ${query.table}, ${where}${more ? ', more follow' : ''}`
      : `no rows in ${query.table} match: the table is empty here (prefix, range and filters as given)`;
    out.replaceChildren(...[
      capped && more ? capNotice(page.length, ALL_ROWS_CAP, 'rows') : null,
      page.length ? rowsTable(page, caption) : el('p', { class: 'empty' }, caption),
      page.length ? el('p', { class: 'help' }, 'Last key on this page: ', copyButton(lastKey, 'Copy last key')) : null,
    ].filter(Boolean));
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

  /** The form as URL state, with the key the page starts after. */
  function remember(after, push = true) {
    const params = new URLSearchParams();
    for (const name of STATE_FIELDS) if (query[name] !== '' && query[name] !== undefined) params.set(name, String(query[name]));
    if (after) {
      params.set('after', after);
      params.set('page', String(starts.length));
    }
    ctx.setState(params, { push });
  }

  function readForm() {
    const q = {};
    for (const name of STATE_FIELDS) q[name] = input[name].value;
    q.table = q.table.trim();
    q.family = q.family.trim();
    if (!q.table) throw Object.assign(new Error('table: give the table to scan (List tables shows them)'), { code: 'invalid_argument' });
    const limit = Number(q.limit);
    if (!Number.isInteger(limit) || limit < 0) {
      throw Object.assign(new Error(`rows per page: ${JSON.stringify(q.limit)} is not a whole number ≥ 0 (0 = all)`), { code: 'invalid_argument' });
    }
    q.limit = limit;
    return q;
  }

  input.table.addEventListener('change', offerFamilies);
  form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    run(() => {
      query = readForm();
      starts = [null];
      remember(null);
      return show(null);
    });
  });
  next.addEventListener('click', () => run(() => {
    starts.push(lastKey);
    remember(lastKey);
    return show(lastKey);
  }));
  prev.addEventListener('click', () => run(() => {
    starts.pop();
    let after = starts[starts.length - 1];
    // A restored page knows only where it starts: before it, Previous goes to the first page.
    if (after === undefined) {
      starts = [null];
      after = null;
    }
    remember(after);
    return show(after);
  }));
  listButton.addEventListener('click', async () => {
    try {
      const tables = await ctx.busy(tablesOut, listTables(ctx));
      const names = tables.map((t) => t.name);
      familiesOf = new Map(tables.map((t) => [t.name, t.families]));
      offerFamilies();
      datalist.replaceChildren(...names.map((t) => el('option', { value: t })));
      tablesOut.replaceChildren(names.length
        ? el('ul', { 'aria-label': 'Tables' }, names.map((t) => el('li', null,
          el('button', {
            type: 'button',
            class: 'link',
            dataset: { table: t },
            title: `families: ${familiesOf.get(t).join(', ') || 'none'}`,
            onclick: () => {
              input.table.value = t;
              offerFamilies();
              form.requestSubmit(scan);
            },
          }, t))))
        : el('p', { class: 'empty' }, 'no tables in this store: the views\' Set up creates them'));
    } catch (e) {
      ctx.fail(tablesOut, e);
    }
  });

  /** Shows the scan a URL names (a deep link, a reload, back/forward). */
  restoreMounted = (params) => {
    for (const name of STATE_FIELDS) {
      const v = params.get(name);
      if (name === 'table') input.table.value = v ?? 'mounttable';
      else if (name === 'limit') input.limit.value = v ?? '25';
      else if (name === 'schema') input.schema.value = v ?? 'auto';
      else input[name].value = v ?? '';
    }
    if (!params.get('table')) {
      query = null;
      out.replaceChildren();
      next.disabled = true;
      prev.disabled = true;
      return undefined;
    }
    const after = params.get('after');
    // The pages between the first and a restored one are not known (undefined).
    const number = after ? Math.max(2, Math.floor(Number(params.get('page'))) || 2) : 1;
    starts = Array.from({ length: number }, (_, i) => (i === 0 ? null : undefined));
    if (after) starts[number - 1] = after;
    return run(() => {
      query = readForm();
      return show(after);
    });
  };
}

/** The view's state from the URL: the shell calls it after mount and on back/forward. */
export function restore(params) {
  return restoreMounted?.(params);
}
