// The bucket console: buckets, a bucket's listing with prefixes as folders (breadcrumbs), the
// objects or every version (delete markers marked) or the stored rows (placeholder masters
// marked), pages by marker or continuation token, an object's metadata on selection, and
// create / put / delete as the CLI can. Every listing is Arsenal's own algorithm run by the
// wasm package (`listObjects` with `listingType` DelimiterMaster, DelimiterVersions or
// Delimiter); the view only shows its result.
import { cachedClient, checkReport, el, field, pretty, uniqueId } from './dom.js';

export const title = 'Buckets';

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

export function mount(section, ctx) {
  section.classList.add('view-bucket');
  const client = cachedClient(ctx.options, (o) => new ctx.rowkit.ObjectMetadata(o));
  const out = el('div', { id: 's3-out', class: 'out', 'aria-live': 'polite' });
  const listing = el('div', { id: 's3-listing', class: 'bucket-listing', 'aria-live': 'polite' });
  const details = el('div', { id: 's3-details', class: 'bucket-details', 'aria-live': 'polite' });
  const bucketsOut = el('div', { id: 's3-buckets', class: 'bucket-list' });

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

  // Pages: the markers of the pages before the current one, for Previous.
  let pages = [];
  let next = null; // the next page's marker fields, or null on the last page

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
    try {
      const r = await ctx.busy(listing, client().listObjects(bucket.value, params(page)));
      next = nextPage(r);
      render(r, page);
    } catch (e) {
      ctx.fail(listing, e);
    }
  }

  // --- the listing ---------------------------------------------------------------------------
  function breadcrumbs() {
    const d = delimiter.value;
    const parts = d && prefix.value ? prefix.value.split(d).slice(0, -1) : [];
    const crumb = (text, p, current) => el('li', null, current
      ? el('span', { 'aria-current': 'location' }, text)
      : el('button', { type: 'button', class: 'link', onclick: () => goTo(p) }, text));
    const items = [crumb(bucket.value, '', parts.length === 0 && !prefix.value)];
    parts.forEach((part, i) => items.push(crumb(part + d, parts.slice(0, i + 1).join(d) + d, i === parts.length - 1)));
    if (prefix.value && !(d && prefix.value.endsWith(d))) items.push(crumb(`${prefix.value}…`, prefix.value, true));
    return el('nav', { 'aria-label': 'Folder', class: 'breadcrumbs' }, el('ol', null, items));
  }

  function goTo(p) {
    prefix.value = p;
    pages = [];
    list();
  }

  function render(r, page) {
    const versions = mode() === 'versions';
    const entries = (versions ? r.Versions : r.Contents) ?? [];
    const rows = [];
    for (const p of r.CommonPrefixes ?? []) {
      rows.push(el('tr', { class: 'folder' },
        el('td', null, el('button', { type: 'button', class: 'link', 'aria-label': `Open folder ${p}`, onclick: () => goTo(p) },
          '📁 ', p.slice(prefix.value.length))),
        el('td', null), el('td', null), el('td', null), el('td', null, 'folder')));
    }
    let lastKey = null;
    for (const e of entries) {
      // Stored rows of a v0 bucket: a version's key is the object key, \0, the version id.
      const [key, rowVersion] = mode() === 'rows' && e.key.includes('\0') ? e.key.split('\0', 2) : [e.key, undefined];
      const versionId = versions ? e.versionId : rowVersion;
      const value = parseValue(e.value);
      const m = marks(value);
      if (versions && key !== lastKey) m.unshift(['latest', 'latest']);
      if (mode() === 'rows') m.unshift(rowVersion === undefined ? ['master', 'master'] : ['version', 'version']);
      lastKey = key;
      const select = () => showObject(key, versionId);
      rows.push(el('tr', { class: m.map(([, c]) => c).join(' '), dataset: { key, versionId: versionId ?? '' } },
        el('td', null, el('button', { type: 'button', class: 'link', onclick: select,
          'aria-label': `Show metadata of ${key}${versionId ? ` version ${versionId}` : ''}` }, key.slice(prefix.value.length) || key)),
        el('td', null, versionId ? el('code', null, versionId) : ''),
        el('td', null, value?.['content-length'] ?? ''),
        el('td', null, value?.['last-modified'] ?? ''),
        el('td', null, m.map(([text, c]) => el('span', { class: `badge ${c}` }, text)))));
    }
    const caption = `${r.CommonPrefixes?.length ?? 0} folder(s), ${entries.length} ${versions ? 'version(s)' : mode() === 'rows' ? 'row(s)' : 'object(s)'}`
      + `${r.IsTruncated ? ' (more on the next page)' : ''}`;
    const t = el('table', { class: 'bucket-table' },
      el('caption', null, caption),
      el('thead', null, el('tr', null, ['Name', 'Version', 'Size', 'Last modified', 'Marks'].map((h) => el('th', { scope: 'col' }, h)))),
      el('tbody', null, rows));
    const pager = el('div', { class: 'pager' },
      el('button', { type: 'button', class: 'prev-page', disabled: pages.length === 0,
        onclick: () => list(pages.pop() ?? {}) }, 'Previous page'),
      el('span', null, ` page ${pages.length + 1} `),
      el('button', { type: 'button', class: 'next-page', disabled: !next,
        onclick: () => { pages.push(page); list(next); } }, 'Next page'));
    listing.classList.remove('error');
    listing.replaceChildren(breadcrumbs(), t, pager);
  }

  async function showObject(key, versionId) {
    try {
      const vid = versionId && versionId !== 'null' ? versionId : undefined;
      const value = await ctx.busy(details, client().getObject(bucket.value, key, vid));
      details.classList.remove('error');
      details.replaceChildren(el('h3', null, key, vid ? el('small', null, ` version ${vid}`) : null), pretty(value));
      objKey.value = key;
      objVersion.value = vid ?? '';
    } catch (e) {
      ctx.fail(details, e);
    }
  }

  async function listBuckets() {
    try {
      const buckets = await ctx.busy(bucketsOut, client().listBuckets());
      bucketNames.replaceChildren(...buckets.map((b) => el('option', { value: b.name })));
      bucketsOut.classList.remove('error');
      bucketsOut.replaceChildren(el('ul', { 'aria-label': 'Buckets' }, buckets.map((b) => el('li', null,
        el('button', { type: 'button', class: 'link', onclick: () => { bucket.value = b.name; goTo(''); } }, b.name),
        ` (${b.vformat}${b.special ? ', special' : ''})`))));
    } catch (e) {
      ctx.fail(bucketsOut, e);
    }
  }

  async function run(what, op, after) {
    try {
      const result = await ctx.busy(out, op(client()));
      out.classList.remove('error');
      out.replaceChildren(what === 'check' ? checkReport(result) : `${what}${result == null ? '' : `: ${result}`}`);
      if (after) await after();
    } catch (e) {
      ctx.fail(out, e);
    }
  }

  // --- the forms -------------------------------------------------------------------------------
  const listForm = el('form', { id: 's3-list-form', 'aria-label': 'Listing' },
    field('Bucket', bucket), bucketNames, field('Prefix', prefix), field('Delimiter', delimiter),
    field('Page size', pageSize), field('Paging', paging), showSet,
    el('button', { dataset: { op: 'list' } }, 'List'),
    el('button', { type: 'button', dataset: { op: 'buckets' }, onclick: listBuckets }, 'Buckets'),
    el('button', { type: 'button', dataset: { op: 'create-bucket' }, onclick: () => run(`created bucket ${bucket.value}, key format`, (c) => c.createBucket(bucket.value), listBuckets) }, 'Create bucket'),
    el('button', { type: 'button', dataset: { op: 'check' }, onclick: () => run('check', (c) => c.check(bucket.value || undefined, false)) }, 'Check'),
    el('button', { type: 'button', dataset: { op: 'setup' }, onclick: () => run('set up', (c) => c.setup()) }, 'Set up'));
  listForm.addEventListener('submit', (ev) => { ev.preventDefault(); goTo(prefix.value); });
  showSet.addEventListener('change', () => goTo(prefix.value));

  const objKey = el('input', { id: 's3-key', name: 'key', size: 20, value: 'photos/cat.jpg', required: true });
  const objValue = el('input', { id: 's3-value', name: 'value', size: 26, value: '{"content-length": 3}' });
  const objVersioned = el('input', { id: 's3-versioned', type: 'checkbox', name: 'versioning' });
  const objVersion = el('input', { id: 's3-version', name: 'versionId', size: 18, placeholder: 'latest' });
  const objForm = el('form', { id: 's3-object-form', 'aria-label': 'Object' },
    field('Key', objKey), field('Value (JSON)', objValue),
    el('label', null, objVersioned, ' versioned'), field('Version id', objVersion),
    el('button', { dataset: { op: 'put' } }, 'Put'),
    el('button', { type: 'button', dataset: { op: 'get' }, onclick: () => showObject(objKey.value, objVersion.value || undefined) }, 'Get'),
    el('button', { type: 'button', dataset: { op: 'delete' }, onclick: () => run(`deleted ${objKey.value}`,
      (c) => c.deleteObject(bucket.value, objKey.value, objVersion.value ? { versionId: objVersion.value } : undefined),
      () => list()) }, 'Delete'));
  objForm.addEventListener('submit', (ev) => {
    ev.preventDefault();
    let value;
    try {
      value = JSON.parse(objValue.value);
    } catch (e) {
      ctx.fail(out, new Error(`Value is not JSON: ${e.message}`));
      return;
    }
    run(`put ${objKey.value}, version id`,
      (c) => c.putObject(bucket.value, objKey.value, value, objVersioned.checked ? { versioning: true } : undefined),
      () => list());
  });

  section.append(el('h2', null, title), listForm, objForm, out, bucketsOut,
    el('div', { class: 'bucket-panes' }, listing, details));
}
