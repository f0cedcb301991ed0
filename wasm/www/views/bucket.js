// The bucket console: buckets, a bucket's listing with prefixes as folders (breadcrumbs), the
// objects or every version (delete markers marked) or the stored rows (placeholder masters
// marked), pages by marker or continuation token, an object's metadata on selection, and
// create / put / delete as the CLI can, and Migrate: a bucket's key format changed live
// (`rowkit s3 migrate`, docs/migration.md; views/migrate.js shows it). Every listing is
// Arsenal's own algorithm run by the wasm package (`listObjects` with `listingType`
// DelimiterMaster, DelimiterVersions or Delimiter); the view only shows its result, sorted and
// filtered within the page as an S3 console does. The bucket, folder, mode and selected object are the URL's state
// (`#bucket?bucket=…&prefix=…&show=…&object=…&version=…`).
import {
  cachedClient, checkReport, copyButton, el, field, formatTime, humanSize, markInvalid, pretty, uniqueId,
} from './dom.js';
import { migrateForm, migrationProgress, tabOwner } from './migrate.js';

export const title = 'Buckets';

/** Each mounted view's `restore`, by its section (the shell calls the module's `restore`). */
const restorers = new WeakMap();

/** Shows the state `params` (the URL's query) in the view mounted in `section`. */
export function restore(params, section) {
  return restorers.get(section)?.(params);
}

/** What a listed value is, from its metadata: delete marker, placeholder master, or neither. */
function marks(value) {
  const m = [];
  if (value?.isDeleteMarker) m.push(['delete marker', 'dm']);
  if (value?.isPHD) m.push(['placeholder master', 'phd']);
  if (value?.isNull) m.push(['null version', 'null']);
  return m;
}

/** A listed value's JSON text as an object (`null` when it is not JSON). */
function parseValue(text) {
  try {
    return typeof text === 'string' ? JSON.parse(text) : text;
  } catch {
    return null;
  }
}

/** An object's size in bytes from its metadata, or `null` (delete markers, odd documents). */
function sizeOf(value) {
  const n = Number(value?.['content-length']);
  return value?.['content-length'] === undefined || !Number.isFinite(n) ? null : n;
}

/** A "Copy key" button for `key` (its accessible name names the key: one per row). */
function copyKey(key) {
  const wrap = copyButton(key, 'Copy key');
  wrap.querySelector('button').setAttribute('aria-label', `Copy key ${key}`);
  return wrap;
}

/** The columns a listing sorts by: what each compares. */
const SORTS = {
  name: (a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0),
  size: (a, b) => (a.size ?? -1) - (b.size ?? -1),
  modified: (a, b) => String(a.modified ?? '').localeCompare(String(b.modified ?? '')),
};

export function mount(section, ctx) {
  section.classList.add('view-bucket');
  const client = cachedClient(ctx.options, (o) => new ctx.rowkit.ObjectMetadata(o));
  const out = el('div', { id: 's3-out', class: 'out', 'aria-live': 'polite' });
  const listing = el('div', { id: 's3-listing', class: 'bucket-listing', 'aria-live': 'polite' });
  const details = el('div', { id: 's3-details', class: 'bucket-details', 'aria-live': 'polite' });
  const bucketsOut = el('div', { id: 's3-buckets', class: 'bucket-list' });

  /** The shared validator's message for `value` as `what` (`null`: fine, or no validator). */
  const rule = (what, value) => ctx.rowkit.validate?.(what, value) ?? null;

  // --- the listing's parameters ----------------------------------------------------------------
  const bucketNames = el('datalist', { id: uniqueId('buckets') });
  const bucket = el('input', { id: 's3-bucket', name: 'bucket', size: 14, value: 'demo', required: true, list: bucketNames.id });
  const prefix = el('input', { id: 's3-prefix', name: 'prefix', size: 18 });
  const delimiter = el('input', { id: 's3-delimiter', name: 'delimiter', size: 2, value: '/' });
  const pageSize = el('input', { id: 's3-page-size', name: 'maxKeys', type: 'number', min: 1, size: 4, value: 20 });
  const paging = el('select', { id: 's3-paging', name: 'paging' },
    el('option', { value: 'v2' }, 'continuation token (v2)'),
    el('option', { value: 'v1' }, 'marker (v1)'));
  const showName = uniqueId('show');
  const show = (value, text, checked) => el('label', null,
    el('input', { type: 'radio', name: showName, value, checked, class: `show-${value}` }), ` ${text}`);
  const showSet = el('fieldset', { class: 'bucket-show' }, el('legend', null, 'Show'),
    show('objects', 'objects', true), show('versions', 'versions', false), show('rows', 'stored rows', false));
  const mode = () => showSet.querySelector('input:checked').value;
  const setMode = (m) => {
    for (const r of showSet.querySelectorAll('input')) r.checked = r.value === m;
  };

  // Pages: the markers of the pages before the current one, for Previous.
  let pages = [];
  let next = null; // the next page's marker fields, or null on the last page
  let shown = null; // the listing on screen: { result, page, bucket, prefix, mode }
  let sort = { by: 'name', dir: 'ascending' };
  const selected = new Set(); // the ids (key \0 versionId) of the checked rows
  let selection = null; // the object whose details show: { key, versionId }

  /** The URL's state: where the listing is and what is selected. */
  function saveState(push) {
    const p = new URLSearchParams();
    if (bucket.value) p.set('bucket', bucket.value);
    if (prefix.value) p.set('prefix', prefix.value);
    if (mode() !== 'objects') p.set('show', mode());
    if (selection) {
      p.set('object', selection.key);
      if (selection.versionId) p.set('version', selection.versionId);
    }
    ctx.setState?.(p, { push });
  }

  function params(page) {
    const p = { prefix: prefix.value || undefined, delimiter: delimiter.value || undefined,
      maxKeys: Number(pageSize.value) || 20, ...page };
    if (mode() === 'versions') return { ...p, listingType: 'DelimiterVersions' };
    if (mode() === 'rows') return { ...p, listingType: 'Delimiter' };
    return paging.value === 'v2' ? { ...p, listingType: 'DelimiterMaster', v2: true } : { ...p, listingType: 'DelimiterMaster' };
  }

  // Where the page after `r` starts: Arsenal's next markers (the last key when a v1 listing
  // without delimiter leaves NextMarker out, as S3 clients do).
  function nextPage(r) {
    if (!r.IsTruncated) return null;
    if (mode() === 'versions') return { keyMarker: r.NextKeyMarker, versionIdMarker: r.NextVersionIdMarker };
    if (mode() === 'objects' && paging.value === 'v2') return { continuationToken: r.NextContinuationToken };
    const entries = r.Contents ?? [];
    return { marker: r.NextMarker ?? entries[entries.length - 1]?.key };
  }

  async function list(page = {}) {
    const name = bucket.value;
    const message = rule('bucket', name);
    markInvalid(bucket, message);
    if (message) return;
    try {
      // An unknown bucket is an error (NoSuchBucket), never an empty listing.
      const r = await ctx.busy(listing, client().listObjects(name, params(page)));
      next = nextPage(r);
      shown = { result: r, page, bucket: name, prefix: prefix.value, mode: mode() };
      render();
    } catch (e) {
      shown = null;
      ctx.fail(listing, e);
    }
  }

  // --- the listing ---------------------------------------------------------------------------
  function breadcrumbs() {
    const d = delimiter.value;
    const at = shown.prefix;
    const parts = d && at ? at.split(d).slice(0, -1) : [];
    const crumb = (text, p, current) => el('li', null, current
      ? el('span', { 'aria-current': 'location' }, text)
      : el('button', { type: 'button', class: 'link', onclick: () => goTo(p) }, text));
    const items = [crumb(shown.bucket, '', parts.length === 0 && !at)];
    parts.forEach((part, i) => items.push(crumb(part + d, parts.slice(0, i + 1).join(d) + d, i === parts.length - 1)));
    if (at && !(d && at.endsWith(d))) items.push(crumb(`${at}…`, at, true));
    return el('nav', { 'aria-label': 'Folder', class: 'breadcrumbs' }, el('ol', null, items));
  }

  /** Opens folder `p` of the bucket: a new listing, a new URL (the back button returns). */
  function goTo(p, { push = true } = {}) {
    prefix.value = p;
    pages = [];
    selected.clear();
    select(null);
    saveState(push);
    return list();
  }

  /** The entries of the listing on screen as rows: key, version, size, date, marks. */
  function entriesOf(r, m) {
    const versions = m === 'versions';
    const entries = (versions ? r.Versions : r.Contents) ?? [];
    let lastKey = null;
    return entries.map((e) => {
      // Stored rows of a v0 bucket: a version's key is the object key, \0, the version id.
      const [key, rowVersion] = m === 'rows' && e.key.includes('\0') ? e.key.split('\0', 2) : [e.key, undefined];
      const versionId = versions ? e.versionId : rowVersion;
      const value = parseValue(e.value);
      const badges = marks(value);
      if (versions && key !== lastKey) badges.unshift(['latest', 'latest']);
      if (m === 'rows') badges.unshift(rowVersion === undefined ? ['master', 'master'] : ['version', 'version']);
      lastKey = key;
      return { key, versionId, value, badges, size: sizeOf(value), modified: value?.['last-modified'] ?? null,
        id: `${key}\0${versionId ?? ''}` };
    });
  }

  /** A column header that sorts the listing, with `aria-sort` saying how it is sorted now. */
  function sortHeader(text, by) {
    const current = sort.by === by;
    return el('th', { scope: 'col', 'aria-sort': current ? sort.dir : 'none' },
      el('button', { type: 'button', class: 'sort', dataset: { sort: by },
        onclick: () => {
          sort = { by, dir: current && sort.dir === 'ascending' ? 'descending' : 'ascending' };
          render();
          listing.querySelector(`button.sort[data-sort="${by}"]`)?.focus(); // the table was drawn anew
        } }, text, current ? (sort.dir === 'ascending' ? ' ▲' : ' ▼') : ''));
  }

  function render() {
    const r = shown.result;
    const m = shown.mode;
    const all = entriesOf(r, m);
    const needle = filter.value.trim().toLowerCase();
    const matches = (name) => !needle || name.toLowerCase().includes(needle);
    // Ties keep the listing's order (a key's versions newest first, as Arsenal lists them).
    const order = all.map((e, i) => [e, i]);
    const compare = SORTS[sort.by];
    const sign = sort.dir === 'ascending' ? 1 : -1;
    order.sort(([a, i], [b, j]) => sign * compare(a, b) || i - j);
    const entries = order.map(([e]) => e).filter((e) => matches(e.key.slice(shown.prefix.length) || e.key));
    const folders = (r.CommonPrefixes ?? []).filter((p) => matches(p.slice(shown.prefix.length)));
    const selectable = m !== 'rows';
    const what = m === 'versions' ? 'version' : m === 'rows' ? 'row' : 'object';
    const plural = (n, word) => `${n.toLocaleString('en')} ${word}${n === 1 ? '' : word.endsWith('ch') ? 'es' : 's'}`;

    const rows = folders.map((p) => el('tr', { class: 'folder' },
      el('td', null),
      el('td', null, el('button', { type: 'button', class: 'link', 'aria-label': `Open folder ${p}`, onclick: () => goTo(p) },
        '📁 ', p.slice(shown.prefix.length))),
      el('td', null), el('td', null), el('td', null), el('td', null, 'folder'), el('td', null)));
    for (const e of entries) {
      const label = `${e.key}${e.versionId ? ` version ${e.versionId}` : ''}`;
      const isSelected = selection && selection.key === e.key && (selection.versionId ?? '') === (e.versionId ?? '');
      rows.push(el('tr', { class: [...e.badges.map(([, c]) => c), isSelected ? 'selected' : ''].join(' ').trim(),
        'aria-selected': isSelected ? 'true' : null, dataset: { key: e.key, versionId: e.versionId ?? '' } },
      el('td', null, selectable
        ? el('input', { type: 'checkbox', class: 'pick', 'aria-label': `Select ${label}`, checked: selected.has(e.id),
          onchange: (ev) => { if (ev.target.checked) selected.add(e.id); else selected.delete(e.id); toolbar(); } })
        : null),
      el('td', null, el('button', { type: 'button', class: 'link open', onclick: () => showObject(e.key, e.versionId),
        'aria-label': `Show metadata of ${label}` }, e.key.slice(shown.prefix.length) || e.key)),
      el('td', null, e.versionId ? el('code', null, e.versionId) : ''),
      el('td', { class: 'num' }, e.size === null ? '' : humanSize(e.size)),
      el('td', null, e.modified ? formatTime(e.modified) : ''),
      el('td', null, e.badges.map(([text, c]) => el('span', { class: `badge ${c}` }, text))),
      el('td', null, copyKey(e.key))));
    }

    const total = (r.CommonPrefixes?.length ?? 0) + all.length;
    let caption;
    if (total === 0) {
      caption = shown.prefix ? `nothing under ${shown.prefix}` : `empty bucket: ${shown.bucket} holds no ${what}s`;
    } else {
      caption = `${plural(r.CommonPrefixes?.length ?? 0, 'folder')}, ${plural(all.length, what)}`
        + `${needle ? ` (${plural(folders.length + entries.length, 'match')} for “${filter.value.trim()}”)` : ''}`
        + `${r.IsTruncated ? ' on this page (more on the next page)' : ''}`;
    }
    const pageIds = entries.map((e) => e.id);
    const allPicked = selectable && pageIds.length > 0 && pageIds.every((id) => selected.has(id));
    const t = el('table', { class: 'bucket-table' },
      el('caption', null, caption),
      el('thead', null, el('tr', null,
        el('th', { scope: 'col' }, selectable
          ? el('input', { type: 'checkbox', class: 'pick-all', 'aria-label': 'Select every row shown', checked: allPicked,
            onchange: (ev) => { for (const id of pageIds) { if (ev.target.checked) selected.add(id); else selected.delete(id); }
              render();
              listing.querySelector('input.pick-all')?.focus();
            } })
          : el('span', { class: 'visually-hidden' }, 'Select')),
        sortHeader('Name', 'name'),
        el('th', { scope: 'col' }, 'Version'),
        sortHeader('Size', 'size'),
        sortHeader('Last modified', 'modified'),
        el('th', { scope: 'col' }, 'Marks'),
        el('th', { scope: 'col' }, el('span', { class: 'visually-hidden' }, 'Copy')))),
      el('tbody', null, rows));
    const pager = el('div', { class: 'pager' },
      el('button', { type: 'button', class: 'prev-page', disabled: pages.length === 0,
        onclick: () => { selected.clear(); list(pages.pop() ?? {}); } }, 'Previous page'),
      el('span', null, ` page ${pages.length + 1} `),
      el('button', { type: 'button', class: 'next-page', disabled: !next,
        onclick: () => { pages.push(shown.page); selected.clear(); list(next); } }, 'Next page'));
    listing.classList.remove('error');
    listing.replaceChildren(breadcrumbs(), bulkBar, el('div', { class: 'bucket-scroll', tabindex: 0, role: 'region',
      'aria-label': `Listing of ${shown.bucket}/${shown.prefix}` }, t), pager);
    toolbar();
  }

  // --- bulk selection ----------------------------------------------------------------------------
  const deleteSelected = el('button', { type: 'button', class: 'danger', dataset: { op: 'delete-selected' }, disabled: true,
    onclick: () => deleteRows() }, 'Delete selected');
  const bulkBar = el('div', { class: 'bulk-bar' }, deleteSelected);
  function toolbar() {
    deleteSelected.disabled = selected.size === 0;
    deleteSelected.textContent = selected.size ? `Delete selected (${selected.size})` : 'Delete selected';
  }

  /** Deletes the checked rows after one confirmation naming how many and which. */
  async function deleteRows() {
    const ids = [...selected];
    const items = ids.map((id) => { const [key, versionId] = id.split('\0'); return { key, versionId: versionId || undefined }; });
    const where = shown.bucket;
    const names = items.map((i) => `${i.key}${i.versionId ? ` (version ${i.versionId})` : ''}`);
    const ok = await ctx.confirm({
      title: `Delete ${items.length} ${items.length === 1 ? 'object' : 'objects'}?`,
      body: `Delete ${items.length} from bucket ${where}: ${names.slice(0, 10).join(', ')}${names.length > 10 ? `, and ${names.length - 10} more` : ''}.`,
      confirm: 'Delete',
    });
    if (!ok) return;
    await run(`deleted ${items.length} from ${where}`, async (c) => {
      for (const i of items) await c.deleteObject(where, i.key, i.versionId ? { versionId: i.versionId } : undefined);
    }, () => { selected.clear(); return list(shown?.page ?? {}); });
  }

  // --- the selected object -------------------------------------------------------------------------
  /** Shows the details of `sel` (`{key, versionId}`), or the hint when nothing is selected. */
  function select(sel) {
    selection = sel;
    if (!sel) details.replaceChildren(el('p', { class: 'help' }, 'Select an object to see its metadata.'));
  }

  /** Marks the selected object's row (without drawing the listing again). */
  function markSelected() {
    for (const tr of listing.querySelectorAll('tbody tr[data-key]')) {
      const on = Boolean(selection) && tr.dataset.key === selection.key && tr.dataset.versionId === (selection.versionId ?? '');
      tr.classList.toggle('selected', on);
      if (on) tr.setAttribute('aria-selected', 'true');
      else tr.removeAttribute('aria-selected');
    }
  }

  async function showObject(key, versionId, { push = false } = {}) {
    const vid = versionId && versionId !== 'null' ? versionId : undefined;
    select({ key, versionId: versionId || undefined });
    saveState(push);
    markSelected();
    try {
      const value = await ctx.busy(details, client().getObject(bucket.value, key, vid));
      if (selection?.key !== key || selection?.versionId !== (versionId || undefined)) return; // another was selected since
      details.classList.remove('error');
      const size = sizeOf(value);
      details.replaceChildren(
        el('h3', null, key, vid ? el('small', null, ` version ${vid}`) : null),
        el('p', { class: 'object-actions' }, copyKey(key)),
        el('dl', { class: 'object-summary' },
          el('dt', null, 'Bucket'), el('dd', null, bucket.value),
          el('dt', null, 'Size'), el('dd', null, size === null ? '—' : humanSize(size)),
          el('dt', null, 'Last modified'), el('dd', null, value?.['last-modified'] ? formatTime(value['last-modified']) : '—')),
        Object.assign(pretty(value), { tabIndex: 0 }));
      objKey.value = key;
      objVersion.value = vid ?? '';
    } catch (e) {
      ctx.fail(details, e);
    }
  }

  // --- Migrate: the bucket's key format, changed live (docs/migration.md §3, §7.3) ---------------
  // The run has a client of its own: a client runs one operation at a time, and a migration
  // waits the settle time Δ twice on its way, while the listing must stay usable.
  const migrateOpen = el('button', { type: 'button', dataset: { op: 'migrate' }, onclick: () => openMigrate() }, 'Migrate');
  const migrateTitle = el('h3', { id: 's3-migrate-title' });
  const migrateStatus = el('p', { id: 's3-migrate-status' });
  // Named: the shell makes every .out a region named after the view, and two may not share a name.
  const migrateOut = el('div', { id: 's3-migrate-out', class: 'out', 'aria-live': 'polite', 'aria-label': 'Buckets: migration output' });
  const progress = migrationProgress('s3-migrate-progress');
  const migrate = migrateForm({ prefix: 's3-migrate', layouts: ['v1', 'v0'], onRun: () => runMigration() });
  const migratePanel = el('div', { id: 's3-migrate', class: 'migrate-panel', role: 'group', 'aria-labelledby': migrateTitle.id, hidden: true },
    migrateTitle, migrateStatus, migrate.node, progress.node, migrateOut);
  let migrating = null; // the bucket a run is migrating, while it runs
  /** Leaving the page stops a run (it resumes where it stopped when run again): the browser asks first. */
  const leaving = (ev) => { ev.preventDefault(); ev.returnValue = ''; };

  /** What the bucket's metastore row says: its key format and the migration in progress. */
  function statusLine(st) {
    const m = st.marker;
    if (!m) return [`key format ${st.vformat}; no migration in progress`];
    const c = st.checkpoint;
    const pass = c && c.run === m.run ? `, pass ${c.pass} of ${c.state} (${c.rows_scanned.toLocaleString('en')} rows scanned, by ${c.owner})` : '';
    return [`key format ${st.vformat}; migrating ${m.from} → ${m.to}: ${m.state} since `, formatTime({ us: m.since }), pass];
  }

  /** Reads the status of `name` into the panel; the form's target follows a run in progress. */
  async function readMigration(name) {
    const st = await ctx.busy(migrateStatus, client().migrationStatus(name));
    migrateStatus.replaceChildren(...statusLine(st));
    migrate.setTo(st.marker ? st.marker.to : st.vformat === 'v0' ? 'v1' : 'v0');
    return st;
  }

  /** Opens the panel for the bucket named in the Bucket field. */
  async function openMigrate() {
    const name = bucket.value;
    const message = rule('bucket', name);
    markInvalid(bucket, message);
    if (message) return;
    migratePanel.hidden = false;
    migrateTitle.textContent = `Migrate bucket ${name}`;
    migratePanel.dataset.bucket = name;
    migrateOut.replaceChildren();
    migrateOut.classList.remove('error');
    progress.reset();
    try {
      await readMigration(name);
    } catch (e) {
      migrateStatus.textContent = '';
      ctx.fail(migrateOut, e);
      if (e?.code === 'NoSuchBucket') markInvalid(bucket, `no bucket named ${name}`);
    }
  }

  /**
   * Runs the migration the form asks for on the panel's bucket (finish and abort confirmed
   * first), its progress shown as it comes; then the status, the bucket list and the listing
   * are read again (the bucket's format may have changed).
   */
  async function runMigration() {
    const name = migratePanel.dataset.bucket;
    if (migrating || !name) return;
    const v = migrate.values();
    if (v.finish || v.abort) {
      const ok = await ctx.confirm({
        title: v.abort ? `Roll back the migration of ${name}?` : `Migrate ${name} and delete its old layout?`,
        body: v.abort
          ? `Delete the ${v.to} rows the migration of bucket ${name} wrote; the bucket stays as it was.`
          : `Migrate bucket ${name} to ${v.to}, switch it and delete the rows of its old layout once every process uses the new one.`,
        confirm: v.abort ? 'Roll back' : 'Migrate',
      });
      if (!ok) return;
    }
    migrating = name;
    migrate.setRunning(true);
    migrateOpen.disabled = true;
    addEventListener('beforeunload', leaving);
    progress.reset();
    migrateOut.classList.remove('error');
    migrateOut.replaceChildren(`running: ${name} to ${v.to}${v.switch ? ', switch' : ''}${v.finish ? ', finish' : ''}${v.abort ? ', abort' : ''}`);
    const runner = new ctx.rowkit.ObjectMetadata(ctx.options());
    try {
      const result = await ctx.busy(migratePanel, runner.migrateBucket(name, v.to,
        { switch: v.switch, finish: v.finish, abort: v.abort, owner: tabOwner() },
        (e) => {
          progress.event(e);
          // The view's client caches the bucket's key format: read it again after a change.
          if (e.event === 'state_changed') client.reset();
        }));
      progress.done(result, `bucket ${name}`);
      migrateOut.replaceChildren();
      // Done: the form does not offer the way back with the same gates ticked.
      if (result.state === 'removed' || result.state === 'already') migrate.clearGates();
    } catch (e) {
      ctx.fail(migrateOut, e);
    } finally {
      runner.free();
      migrating = null;
      migrate.setRunning(false);
      migrateOpen.disabled = false;
      removeEventListener('beforeunload', leaving);
      client.reset();
    }
    try {
      await readMigration(name);
    } catch (e) {
      ctx.fail(migrateOut, e);
    }
    if (bucketsOut.querySelector('ul')) await listBuckets(); // its formats are shown
    if (shown?.bucket === name) await list(shown.page);
  }

  async function listBuckets() {
    try {
      const buckets = await ctx.busy(bucketsOut, client().listBuckets());
      bucketNames.replaceChildren(...buckets.map((b) => el('option', { value: b.name })));
      bucketsOut.classList.remove('error');
      bucketsOut.replaceChildren(buckets.length === 0
        ? el('p', null, 'no buckets yet: Create bucket makes one')
        : el('ul', { 'aria-label': 'Buckets' }, buckets.map((b) => el('li', null,
          el('button', { type: 'button', class: 'link', onclick: () => { bucket.value = b.name; goTo(''); } }, b.name),
          ` (${b.vformat}${b.special ? ', special' : ''}) `,
          el('button', { type: 'button', class: 'danger small', dataset: { op: 'delete-bucket', bucket: b.name },
            'aria-label': `Delete bucket ${b.name}`, onclick: () => deleteBucket(b.name) }, 'Delete')))));
    } catch (e) {
      ctx.fail(bucketsOut, e);
    }
  }

  async function deleteBucket(name) {
    const ok = await ctx.confirm({ title: `Delete bucket ${name}?`,
      body: `Delete bucket ${name}: its metadata and every object and version in it.`, confirm: 'Delete bucket' });
    if (ok) await run(`deleted bucket ${name}, rows`, (c) => c.deleteBucket(name), listBuckets);
  }

  async function run(what, op, after) {
    try {
      const result = await ctx.busy(out, op(client()));
      out.classList.remove('error');
      out.replaceChildren(what === 'check' ? checkReport(result) : `${what}${result == null ? '' : `: ${result}`}`);
      if (after) await after();
      return true;
    } catch (e) {
      ctx.fail(out, e);
      if (e?.code === 'NoSuchBucket') markInvalid(bucket, `no bucket named ${bucket.value}`);
      return false;
    }
  }

  // --- the forms -------------------------------------------------------------------------------
  function createBucket() {
    const name = bucket.value;
    const message = rule('bucket', name);
    markInvalid(bucket, message);
    if (!message) run(`created bucket ${name}, key format`, (c) => c.createBucket(name), listBuckets);
  }

  const filter = el('input', { id: 's3-filter', name: 'filter', type: 'search', size: 16, placeholder: 'part of a name',
    oninput: () => { if (shown) render(); } });
  const listForm = el('form', { id: 's3-list-form', 'aria-label': 'Listing', novalidate: true },
    field('Bucket', bucket), bucketNames, field('Prefix', prefix), field('Delimiter', delimiter),
    field('Page size', pageSize), field('Paging', paging), showSet,
    el('button', { dataset: { op: 'list' } }, 'List'),
    el('button', { type: 'button', dataset: { op: 'buckets' }, onclick: listBuckets }, 'Buckets'),
    el('button', { type: 'button', dataset: { op: 'create-bucket' }, onclick: createBucket }, 'Create bucket'),
    migrateOpen,
    el('button', { type: 'button', dataset: { op: 'check' }, onclick: () => run('check', (c) => c.check(bucket.value || undefined, false)) }, 'Check'),
    el('button', { type: 'button', dataset: { op: 'setup' }, onclick: () => run('set up', (c) => c.setup()) }, 'Set up'));
  listForm.addEventListener('submit', (ev) => { ev.preventDefault(); goTo(prefix.value); });
  showSet.addEventListener('change', () => goTo(prefix.value));
  bucket.addEventListener('input', () => markInvalid(bucket, null));

  const objKey = el('input', { id: 's3-key', name: 'key', size: 20, value: 'photos/cat.jpg', required: true,
    oninput: () => markInvalid(objKey, null) });
  const objValue = el('input', { id: 's3-value', name: 'value', size: 26, value: '{"content-length": 3}',
    oninput: () => markInvalid(objValue, null) });
  const objVersioned = el('input', { id: 's3-versioned', type: 'checkbox', name: 'versioning' });
  const objVersion = el('input', { id: 's3-version', name: 'versionId', size: 18, placeholder: 'latest' });

  /** The object form's bucket and key if both pass the rules (each refusal is shown by its field). */
  function objectTarget() {
    const bad = [[bucket, rule('bucket', bucket.value)],
      [objKey, objKey.value ? rule('objectKey', objKey.value) : 'an object key is required']];
    for (const [control, message] of bad) markInvalid(control, message);
    return bad.every(([, message]) => !message);
  }

  async function deleteOne() {
    if (!objectTarget()) return;
    const [where, key, vid] = [bucket.value, objKey.value, objVersion.value];
    const ok = await ctx.confirm({ title: `Delete ${key}?`,
      body: `Delete ${key}${vid ? ` version ${vid}` : ''} from bucket ${where}${vid ? '' : ' (a versioned bucket keeps its versions under a delete marker)'}.`,
      confirm: 'Delete' });
    if (!ok) return;
    if (await run(`deleted ${key}`, (c) => c.deleteObject(where, key, vid ? { versionId: vid } : undefined))) {
      if (selection?.key === key) select(null);
      if (shown) await list(shown.page);
    }
  }

  const objForm = el('form', { id: 's3-object-form', 'aria-label': 'Object', novalidate: true },
    field('Key', objKey), field('Value (JSON)', objValue),
    el('label', null, objVersioned, ' versioned'), field('Version id', objVersion),
    el('button', { dataset: { op: 'put' } }, 'Put'),
    el('button', { type: 'button', dataset: { op: 'get' }, onclick: () => objectTarget() && showObject(objKey.value, objVersion.value || undefined) }, 'Get'),
    el('button', { type: 'button', class: 'danger', dataset: { op: 'delete' }, onclick: deleteOne }, 'Delete'));
  objForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const target = objectTarget();
    let value;
    try {
      value = JSON.parse(objValue.value);
      markInvalid(objValue, value && typeof value === 'object' && !Array.isArray(value) ? null : 'the value must be a JSON object');
    } catch (e) {
      markInvalid(objValue, `not JSON: ${e.message}`);
    }
    if (!target || objValue.getAttribute('aria-invalid') === 'true') return;
    const [where, key] = [bucket.value, objKey.value];
    run(`put ${key}, version id`,
      (c) => c.putObject(where, key, value, objVersioned.checked ? { versioning: true } : undefined),
      () => (shown?.bucket === where ? list(shown.page) : null));
  });

  section.append(el('h2', null, title), listForm, objForm, out, bucketsOut, migratePanel,
    field('Filter this page', filter),
    el('div', { class: 'bucket-panes' }, listing, details));
  select(null);

  restorers.set(section, async (p) => {
    const name = p.get('bucket');
    if (!name) return;
    bucket.value = name;
    prefix.value = p.get('prefix') ?? '';
    setMode(['versions', 'rows'].includes(p.get('show')) ? p.get('show') : 'objects');
    pages = [];
    selected.clear();
    select(null);
    await list();
    if (p.get('object')) await showObject(p.get('object'), p.get('version') ?? undefined, { push: false });
  });
}
