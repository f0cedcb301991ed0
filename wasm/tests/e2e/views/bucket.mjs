// Bucket console: a versioned bucket written with the CLI (overwrites, a delete marker, a
// placeholder master left by a delete without its repair, a prefix hierarchy, a folder of 25
// objects) is browsed by folders and breadcrumbs, with the versions toggle, the stored rows,
// an object's metadata, pages by continuation token and by marker; then a put and a delete
// from the forms and the schema's check.
import { assert } from '../webdriver.mjs';
import { dump } from './panel.mjs';

const BUCKET = 'photos';

export async function populate(cli) {
  // Key format v0: masters and versions interleave, so the stored rows show a placeholder.
  await cli(['s3', 'bucket', 'create', BUCKET, '--vformat', 'v0']);
  const put = async (key, value, ...flags) =>
    JSON.parse(await cli(['--json', 's3', 'put', BUCKET, key, '--value', JSON.stringify(value), ...flags]));
  await put('2024/jan/a.jpg', { 'content-length': 100 }, '--versioning');
  await put('2024/jan/a.jpg', { 'content-length': 200 }, '--versioning');
  await put('2024/feb/b.jpg', { 'content-length': 300 }, '--versioning');
  await put('docs/old.txt', { 'content-length': 5 }, '--versioning');
  await put('docs/old.txt', { isDeleteMarker: true }, '--versioning');
  await put('top.txt', { 'content-length': 1 });
  await put('2024/jan/c.jpg', { 'content-length': 7 }, '--versioning');
  const latest = await put('2024/jan/c.jpg', { 'content-length': 8 }, '--versioning');
  // Deleting the current version without its repair leaves a placeholder master (PHD).
  await cli(['s3', 'delete', BUCKET, '2024/jan/c.jpg', '--version-id', latest.version_id, '--repair', 'skip']);
  for (let i = 0; i < 25; i++) await put(`many/obj-${String(i).padStart(2, '0')}`, { 'content-length': i });
}

/** The listing on screen: breadcrumbs, caption, and each row's name, version, size and marks. */
async function listing(page) {
  return page.js(`const l = document.getElementById('s3-listing');
    return { crumbs: [...l.querySelectorAll('.breadcrumbs li')].map((li) => li.textContent),
      caption: l.querySelector('caption')?.textContent ?? null,
      rows: [...l.querySelectorAll('tbody tr')].map((tr) => ({ folder: tr.classList.contains('folder'),
        cells: [...tr.cells].map((c) => c.textContent) })),
      next: l.querySelector('.next-page')?.disabled === false,
      prev: l.querySelector('.prev-page')?.disabled === false };`);
}

/** Runs `act` and waits for the listing to be drawn again, not busy; returns it. */
async function relist(page, what, act) {
  // The listing shown now is marked: the wait is for the one `act` brings.
  await page.js(`for (const e of document.getElementById('s3-listing').children) e.dataset.old = 'true'`);
  await act();
  await page.until(`const l = document.getElementById('s3-listing');
    return !l.hasAttribute('aria-busy') && l.querySelector(':scope > :not([data-old])')`, what);
  const l = await listing(page);
  const alert = await page.js(`return document.querySelector('#s3-listing [role="alert"]')?.textContent ?? null`);
  assert(alert === null, `${what}: ${alert}`);
  return l;
}

const folder = (page, name) => page.click(`#s3-listing tr.folder button[aria-label="Open folder ${name}"]`);
const names = (l) => l.rows.map((r) => r.cells[0]);

export async function check(page) {
  const buckets = await page.outcome('s3-buckets', 'list buckets', () => page.click('#s3-list-form button[data-op="buckets"]'));
  assert(buckets.text.includes(`${BUCKET} (v0)`), `the bucket list shows ${BUCKET}: ${buckets.text}`);

  // Objects at the top: folders and the one top-level object (Enter in a field lists).
  await page.type('s3-bucket', BUCKET);
  let l = await relist(page, 'the top level', () => page.keys('s3-prefix', '\uE007'));
  assert(JSON.stringify(names(l)) === JSON.stringify(['📁 2024/', '📁 many/', 'top.txt']),
    `top level (docs/ holds only a delete marker): ${JSON.stringify(l)}`);
  assert(JSON.stringify(l.crumbs) === JSON.stringify([BUCKET]), `breadcrumbs at the top: ${l.crumbs}`);

  // Folders: 2024/ → jan/, breadcrumbs follow; the placeholder's object shows its latest version.
  l = await relist(page, 'open 2024/', () => folder(page, '2024/'));
  assert(JSON.stringify(names(l)) === JSON.stringify(['📁 feb/', '📁 jan/']), `2024/: ${JSON.stringify(l)}`);
  l = await relist(page, 'open 2024/jan/', () => folder(page, '2024/jan/'));
  assert(JSON.stringify(l.crumbs) === JSON.stringify([BUCKET, '2024/', 'jan/']), `breadcrumbs in jan/: ${l.crumbs}`);
  assert(JSON.stringify(l.rows.map((r) => [r.cells[0], r.cells[2]])) === JSON.stringify([['a.jpg', '200'], ['c.jpg', '7']]),
    `jan/ objects with their sizes: ${JSON.stringify(l)}`);

  // The versions toggle: every version, newest first, the latest marked.
  l = await relist(page, 'versions of jan/', () => page.click('#view-bucket input.show-versions'));
  const versions = l.rows.map((r) => [r.cells[0], r.cells[2], r.cells[4]]);
  assert(JSON.stringify(versions) === JSON.stringify([['a.jpg', '200', 'latest'], ['a.jpg', '100', ''], ['c.jpg', '7', 'latest']]),
    `versions in jan/: ${JSON.stringify(versions)}`);
  assert(l.rows.every((r) => r.cells[1] !== ''), 'every version shows its id');

  // The stored rows: the placeholder master is marked.
  l = await relist(page, 'stored rows of jan/', () => page.click('#view-bucket input.show-rows'));
  const phd = l.rows.find((r) => r.cells[0] === 'c.jpg' && r.cells[4].includes('master'));
  assert(phd?.cells[4] === 'masterplaceholder master', `c.jpg's master is a placeholder: ${JSON.stringify(l.rows)}`);

  // Metadata on selection, pretty-printed.
  await page.click('#s3-listing tbody tr:not(.folder) button');
  const meta = await page.until(`return document.querySelector('#s3-details pre')?.textContent`, 'the object\'s metadata');
  assert(meta.includes('"content-length": 200') && meta.includes('\n  "versionId"'), `a.jpg's metadata, indented: ${meta}`);

  // A delete marker, by the breadcrumbs back to the top and into docs/.
  await page.click('#view-bucket input.show-versions');
  l = await relist(page, 'back to the top', () => page.click('#s3-listing .breadcrumbs button'));
  assert(names(l).includes('📁 docs/'), `versions at the top include docs/: ${JSON.stringify(l)}`);
  l = await relist(page, 'versions of docs/', () => folder(page, 'docs/'));
  const dm = l.rows.map((r) => [r.cells[0], r.cells[4]]);
  assert(JSON.stringify(dm) === JSON.stringify([['old.txt', 'latestdelete marker'], ['old.txt', '']]),
    `docs/old.txt: a delete marker over one version: ${JSON.stringify(dm)}`);
  assert(await page.js(`return document.querySelectorAll('#s3-listing tr.dm .badge.dm').length`) === 1, 'the delete marker row is marked');
  await page.shot('bucket');

  // Pages of 20 by continuation token, then by marker.
  await page.click('#view-bucket input.show-objects');
  for (const paging of ['v2', 'v1']) {
    await page.js(`document.getElementById('s3-paging').value = arguments[0]`, paging);
    await page.type('s3-page-size', '20');
    await page.type('s3-prefix', 'many/');
    l = await relist(page, `many/ page 1 (${paging})`, () => page.keys('s3-prefix', '\uE007'));
    assert(l.rows.length === 20 && l.next && !l.prev && l.caption.includes('more on the next page'), `page 1 (${paging}): ${JSON.stringify(l)}`);
    assert(names(l)[0] === 'obj-00' && names(l)[19] === 'obj-19', `page 1 (${paging}) holds obj-00..19: ${names(l)}`);
    l = await relist(page, `many/ page 2 (${paging})`, () => page.click('#s3-listing .next-page'));
    assert(JSON.stringify(names(l)) === JSON.stringify(['obj-20', 'obj-21', 'obj-22', 'obj-23', 'obj-24']) && !l.next && l.prev,
      `page 2 (${paging}): ${JSON.stringify(l)}`);
    l = await relist(page, `many/ back to page 1 (${paging})`, () => page.click('#s3-listing .prev-page'));
    assert(names(l)[0] === 'obj-00' && l.rows.length === 20, `Previous page (${paging}): ${names(l)}`);
  }

  // Put and delete from the forms; the listing follows.
  await page.type('s3-key', 'many/zz-put.txt');
  await page.type('s3-value', '{"content-length": 42}');
  const put = await page.outcome('s3-out', 'put', () => page.keys('s3-value', '\uE007'));
  assert(put.alert === null && put.text.startsWith('put many/zz-put.txt'), `put: ${put.text}`);
  await page.type('s3-key', 'many/obj-00');
  const del = await page.outcome('s3-out', 'delete', () => page.click('#s3-object-form button[data-op="delete"]'));
  assert(del.alert === null && del.text === 'deleted many/obj-00', `delete: ${del.text}`);

  const report = await page.outcome('s3-out', 's3 check', () => page.click('#s3-list-form button[data-op="check"]'));
  assert(report.alert === null && /^Schemas3Rows scanned\d+/.test(report.text), `s3 check report: ${report.text}`);
}

export async function after(cli) {
  const cells = await dump(cli, 'objmeta');
  assert(cells.some((c) => c.row_key === `${BUCKET}\\x00many/zz-put.txt`), 'objmeta has the object put in the page');
  assert(!cells.some((c) => c.row_key === `${BUCKET}\\x00many/obj-00`), 'the object deleted in the page is gone');
}
