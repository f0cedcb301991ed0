// Bucket console, as an S3 operator uses it, on a realistic store: a v0 bucket (`photos`,
// written with the CLI: overwrites, a delete marker, a placeholder master left by a delete
// without its repair, a prefix hierarchy, a folder of 25 objects), a v1 bucket (`archive`:
// versions and a delete marker) and a v1 bucket of 10 000 objects (`logs`). The page lists by
// folders and breadcrumbs (a URL per folder, the back button), sorts, filters, shows sizes and
// dates as people read them, versions, stored rows, an object's metadata; creates, puts and
// deletes (bulk, each confirmed); refuses bad input before writing; and "Create bucket" on the
// existing v0 bucket is an error that changes nothing (the CLI reads the same bucket back).
// Migrate (a v0 bucket to v1, from the page) is bucket-migrate.mjs's, run from here.
import { createRequire } from 'node:module';

import { assert } from '../webdriver.mjs';
import * as migration from './bucket-migrate.mjs';
import { confirmWith, fieldError, hashState, setupCheck } from './forms.mjs';
import { offlineError } from './offline.mjs';

const BUCKET = 'photos';
const ARCHIVE = 'archive';
const LOGS = 'logs';
const LOG_OBJECTS = 10000;

/** A realistic metadata document: size, type, date (ISO, as Arsenal stores `last-modified`). */
const meta = (size, day, extra = {}) => ({ 'content-length': size, 'content-type': 'application/octet-stream',
  'last-modified': new Date(Date.UTC(2024, 0, 1) + day * 86400000).toISOString(), ...extra });
/** The sizes of many/obj-NN: not in name order, some above a MiB, for sorting and human sizes. */
const manySize = (i) => ((i * 7919) % 97) * 40503;

// What populate left in `photos`, read back by the CLI: after() compares with it.
let photosBefore = null;
// What the screen showed (filled by check, compared by after with what the CLI reads).
const seen = {};

/**
 * `rowkit s3 check` of a bucket as JSON, whatever its exit code (1 = findings left), at one
 * fixed later time: the placeholder's repair is due then at every run, so two reports compare.
 */
async function cliCheck(cli, bucket) {
  try {
    return JSON.parse(await cli(['--json', '--now', '2030-01-01T00:00:00Z', 's3', 'check', bucket]));
  } catch (e) {
    if (e.stdout) return JSON.parse(e.stdout);
    throw e;
  }
}

/** Every object of `bucket` as the CLI lists it (no delimiter, at most 1000). */
const cliList = async (cli, bucket, ...args) => JSON.parse(await cli(['--json', 's3', 'list', bucket, ...args]));

export async function populate(cli) {
  // Key format v0: masters and versions interleave, so the stored rows show a placeholder.
  await cli(['s3', 'bucket', 'create', BUCKET, '--vformat', 'v0']);
  const put = async (bucket, key, value, ...flags) =>
    JSON.parse(await cli(['--json', 's3', 'put', bucket, key, '--value', JSON.stringify(value), ...flags]));
  await put(BUCKET, '2024/jan/a.jpg', meta(100, 1), '--versioning');
  await put(BUCKET, '2024/jan/a.jpg', meta(200, 2), '--versioning');
  await put(BUCKET, '2024/feb/b.jpg', meta(300, 3), '--versioning');
  await put(BUCKET, 'docs/old.txt', meta(5, 4), '--versioning');
  await put(BUCKET, 'docs/old.txt', { isDeleteMarker: true }, '--versioning');
  await put(BUCKET, 'top.txt', meta(1, 5));
  await put(BUCKET, '2024/jan/c.jpg', meta(7, 6), '--versioning');
  const latest = await put(BUCKET, '2024/jan/c.jpg', meta(8, 7), '--versioning');
  // Deleting the current version without its repair leaves a placeholder master (PHD).
  await cli(['s3', 'delete', BUCKET, '2024/jan/c.jpg', '--version-id', latest.version_id, '--repair', 'skip']);
  for (let i = 0; i < 25; i++) await put(BUCKET, `many/obj-${String(i).padStart(2, '0')}`, meta(manySize(i), 10 + i));
  photosBefore = { list: await cliList(cli, BUCKET), check: await cliCheck(cli, BUCKET) };

  // Key format v1 (the default): versions and a delete marker.
  await cli(['s3', 'bucket', 'create', ARCHIVE]);
  await put(ARCHIVE, 'reports/q1.pdf', meta(2_400_000, 40), '--versioning');
  await put(ARCHIVE, 'reports/q1.pdf', meta(2_600_000, 41), '--versioning');
  await put(ARCHIVE, 'reports/q2.pdf', meta(3_100_000, 42), '--versioning');
  await put(ARCHIVE, 'reports/q2.pdf', { isDeleteMarker: true }, '--versioning');
  for (let i = 0; i < 6; i++) await put(ARCHIVE, `tmp/t${i}.bin`, meta(1000 * (i + 1), 50 + i));
  await cli(['s3', 'bucket', 'create', LOGS]);
  await migration.populate(cli);
}

/**
 * The 10 000 objects of `logs`, written through the gateway by rowkit's Node package (one CLI
 * process per object would take minutes): 16 clients in parallel, as many writers would.
 */
async function fillLogs(page) {
  const require = createRequire(import.meta.url);
  const rowkit = require('../../../pkg-node/rowkit.js');
  const token = await page.js(`return document.getElementById('token').value`);
  const started = Date.now();
  const clients = Array.from({ length: 16 }, () => new rowkit.ObjectMetadata({ gateway: page.url, token }));
  let next = 0;
  await Promise.all(clients.map(async (c) => {
    for (let i = next++; i < LOG_OBJECTS; i = next++) {
      const day = `2024-03-${String(1 + (i % 28)).padStart(2, '0')}`;
      await c.putObject(LOGS, `${day}/app-${String(i).padStart(5, '0')}.log`, meta(1000 + ((i * 104729) % 5_000_000), 60 + (i % 28)));
    }
  }));
  console.log(`e2e: bucket: ${LOG_OBJECTS} objects written to ${LOGS} through the gateway in ${((Date.now() - started) / 1000).toFixed(1)} s`);
}

/** The listing on screen: breadcrumbs, caption, each row's cells, pager, sort state. */
async function listing(page) {
  return page.js(`const l = document.getElementById('s3-listing');
    return { crumbs: [...l.querySelectorAll('.breadcrumbs li')].map((li) => li.textContent),
      caption: l.querySelector('caption')?.textContent ?? null,
      rows: [...l.querySelectorAll('tbody tr')].map((tr) => ({ folder: tr.classList.contains('folder'),
        key: tr.dataset.key, version: tr.dataset.versionId,
        cells: [...tr.cells].map((c) => c.textContent),
        bytes: tr.cells[3]?.querySelector('.size')?.title ?? null,
        datetime: tr.cells[4]?.querySelector('time')?.getAttribute('datetime') ?? null })),
      sort: [...l.querySelectorAll('thead th[aria-sort]')].map((th) => [th.textContent.replace(/[▲▼ ]+$/, ''), th.getAttribute('aria-sort')]),
      next: l.querySelector('.next-page')?.disabled === false,
      prev: l.querySelector('.prev-page')?.disabled === false };`);
}

/** Runs `act` and waits for the listing to be drawn again, not busy; returns it (no alert allowed). */
async function relist(page, what, act, { alert: expectAlert = false } = {}) {
  // The listing shown now is marked: the wait is for the one `act` brings.
  await page.js(`for (const e of document.getElementById('s3-listing').children) e.dataset.old = 'true'`);
  await act();
  await page.until(`const l = document.getElementById('s3-listing');
    return !l.hasAttribute('aria-busy') && l.querySelector(':scope > :not([data-old])')`, what);
  const alert = await page.js(`return document.querySelector('#s3-listing [role="alert"]')?.textContent ?? null`);
  if (expectAlert) {
    assert(alert !== null, `${what}: an error is shown`);
    return alert;
  }
  assert(alert === null, `${what}: ${alert}`);
  return listing(page);
}

const folder = (page, name) => page.click(`#s3-listing tr.folder button[aria-label="Open folder ${name}"]`);
const names = (l) => l.rows.map((r) => r.cells[1]);


/** Lists bucket `name` from the top (type it, Enter in the prefix field). */
async function openBucket(page, name, what) {
  await page.type('s3-bucket', name);
  await page.clear('s3-prefix');
  return relist(page, what, () => page.keys('s3-prefix', '\uE007'));
}

export async function check(page) {
  // Migrate first: its full run waits out Δ twice while this check and the other views' run
  // (`settled` waits for its end).
  await migration.check(page);
  await fillLogs(page);
  const buckets = await page.outcome('s3-buckets', 'list buckets', () => page.click('#s3-list-form button[data-op="buckets"]'));
  assert(buckets.text.includes(`${BUCKET} (v0)`) && buckets.text.includes(`${ARCHIVE} (v1)`) && buckets.text.includes(`${LOGS} (v1)`),
    `the bucket list shows the three buckets with their key formats: ${buckets.text}`);
  await page.axe('bucket: the bucket list');

  // "Create bucket" on the existing v0 bucket: an error naming its format; nothing changes.
  await page.type('s3-bucket', BUCKET);
  const again = await page.outcome('s3-out', 'create an existing bucket', () => page.click('#s3-list-form button[data-op="create-bucket"]'));
  assert(again.alert !== null && /exists/i.test(again.alert) && again.alert.includes('v0'),
    `creating ${BUCKET} again is refused, naming its format v0: ${again.text}`);
  await page.shot('bucket-create-existing');
  await page.axe('bucket: create refused');

  // Objects at the top: folders and the one top-level object (Enter in a field lists).
  let l = await openBucket(page, BUCKET, 'the top level');
  assert(JSON.stringify(names(l)) === JSON.stringify(['📁 2024/', '📁 many/', 'top.txt']),
    `top level (docs/ holds only a delete marker): ${JSON.stringify(l)}`);
  assert(JSON.stringify(l.crumbs) === JSON.stringify([BUCKET]), `breadcrumbs at the top: ${l.crumbs}`);
  assert(l.caption === '2 folders, 1 object', `the counts: ${l.caption}`);
  const top = l.rows.find((r) => r.key === 'top.txt');
  assert(top.cells[3] === '1 byte' && top.datetime === '2024-01-06T00:00:00.000Z', `top.txt: 1 byte, its date: ${JSON.stringify(top)}`);

  // Folders: 2024/ → jan/, breadcrumbs follow, each folder its own URL.
  l = await relist(page, 'open 2024/', () => folder(page, '2024/'));
  assert(JSON.stringify(names(l)) === JSON.stringify(['📁 feb/', '📁 jan/']), `2024/: ${JSON.stringify(l)}`);
  l = await relist(page, 'open 2024/jan/', () => folder(page, '2024/jan/'));
  assert(JSON.stringify(l.crumbs) === JSON.stringify([BUCKET, '2024/', 'jan/']), `breadcrumbs in jan/: ${l.crumbs}`);
  assert(JSON.stringify(l.rows.map((r) => [r.cells[1], r.cells[3]])) === JSON.stringify([['a.jpg', '200 bytes'], ['c.jpg', '7 bytes']]),
    `jan/ objects with their sizes (c.jpg's placeholder shows its latest version): ${JSON.stringify(l)}`);
  let state = await hashState(page);
  assert(state.bucket === BUCKET && state.prefix === '2024/jan/', `the URL names the folder: ${JSON.stringify(state)}`);

  // The browser's Back button returns to the folder before; Forward goes again; a reload keeps it.
  l = await relist(page, 'back to 2024/', () => page.back());
  assert(JSON.stringify(names(l)) === JSON.stringify(['📁 feb/', '📁 jan/']) && (await hashState(page)).prefix === '2024/',
    `Back shows 2024/ again: ${JSON.stringify(l)}`);
  l = await relist(page, 'forward to 2024/jan/', () => page.forward());
  assert(JSON.stringify(l.crumbs) === JSON.stringify([BUCKET, '2024/', 'jan/']), `Forward shows jan/ again: ${l.crumbs}`);

  // Metadata on selection; the selection is in the URL and survives a reload.
  await page.click('#s3-listing tbody tr[data-key="2024/jan/a.jpg"] button.open');
  const meta1 = await page.until(`return document.querySelector('#s3-details pre')?.textContent`, 'the object\'s metadata');
  assert(meta1.includes('"content-length": 200'), `a.jpg's metadata, indented: ${meta1}`);
  state = await hashState(page);
  assert(state.object === '2024/jan/a.jpg', `the selection is in the URL: ${JSON.stringify(state)}`);
  // Back and Forward again: the folder and the selected object come back from the URL (no
  // reload here: it would clear what the other views' checks left on screen; the shell's
  // check reloads).
  l = await relist(page, 'back from the selection', () => page.back());
  assert(JSON.stringify(l.crumbs) === JSON.stringify([BUCKET, '2024/']), `Back: 2024/ again: ${l.crumbs}`);
  const none = await page.js(`return document.getElementById('s3-details').textContent`);
  assert(none === 'Select an object to see its metadata.', `the details pane follows the folder: ${none}`);
  l = await relist(page, 'forward to the selection', () => page.forward());
  assert(JSON.stringify(l.crumbs) === JSON.stringify([BUCKET, '2024/', 'jan/']), `jan/ again: ${l.crumbs}`);
  const reloaded = await page.until(`return document.querySelector('#s3-details pre')?.textContent`, 'the selection from the URL');
  assert(reloaded.includes('"content-length": 200'), `the URL's selection shows the object again: ${reloaded}`);
  assert(await page.js(`return document.querySelector('#s3-listing tr[aria-selected="true"]')?.dataset.key`) === '2024/jan/a.jpg',
    'the selected row is marked');
  await page.axe('bucket: an object selected');
  await page.shot('bucket-object');

  // The versions toggle: every version, newest first, the latest marked; the details follow.
  l = await relist(page, 'versions of jan/', () => page.click('#view-bucket input.show-versions'));
  const versions = l.rows.map((r) => [r.cells[1], r.cells[3], r.cells[5]]);
  assert(JSON.stringify(versions) === JSON.stringify([['a.jpg', '200 bytes', 'latest'], ['a.jpg', '100 bytes', ''], ['c.jpg', '7 bytes', 'latest']]),
    `versions in jan/: ${JSON.stringify(versions)}`);
  assert(l.rows.every((r) => r.cells[2] !== ''), 'every version shows its id');
  const cleared = await page.js(`return document.getElementById('s3-details').textContent`);
  assert(cleared === 'Select an object to see its metadata.', `the details pane is cleared on a change of listing: ${cleared}`);

  // The stored rows: the placeholder master is marked.
  l = await relist(page, 'stored rows of jan/', () => page.click('#view-bucket input.show-rows'));
  const phd = l.rows.find((r) => r.cells[1] === 'c.jpg' && r.cells[5].includes('master'));
  assert(phd?.cells[5] === 'masterplaceholder master', `c.jpg's master is a placeholder: ${JSON.stringify(l.rows)}`);
  await page.axe('bucket: stored rows');

  // A delete marker, by the breadcrumbs back to the top and into docs/.
  await relist(page, 'versions of jan/ again', () => page.click('#view-bucket input.show-versions'));
  l = await relist(page, 'back to the top', () => page.click('#s3-listing .breadcrumbs button'));
  assert(names(l).includes('📁 docs/'), `versions at the top include docs/: ${JSON.stringify(l)}`);
  l = await relist(page, 'versions of docs/', () => folder(page, 'docs/'));
  const dm = l.rows.map((r) => [r.cells[1], r.cells[5]]);
  assert(JSON.stringify(dm) === JSON.stringify([['old.txt', 'latestdelete marker'], ['old.txt', '']]),
    `docs/old.txt: a delete marker over one version: ${JSON.stringify(dm)}`);
  await page.axe('bucket: versions with a delete marker');
  await page.shot('bucket-versions');

  // many/: sort by size and by date, filter within the listing, human sizes.
  await relist(page, 'objects of docs/', () => page.click('#view-bucket input.show-objects'));
  await page.type('s3-page-size', '50');
  await page.type('s3-prefix', 'many/');
  l = await relist(page, 'many/', () => page.keys('s3-prefix', '\uE007'));
  assert(l.caption === '0 folders, 25 objects' && JSON.stringify(l.sort) === '[["Name","ascending"],["Size","none"],["Last modified","none"]]',
    `many/ by name: ${l.caption} ${JSON.stringify(l.sort)}`);
  await page.click('#s3-listing button.sort[data-sort="size"]');
  l = await listing(page);
  const bySize = l.rows.map((r) => Number(r.bytes.replace(/[^0-9]/g, '')));
  const expected = [...Array(25).keys()].map(manySize).sort((a, b) => a - b);
  assert(JSON.stringify(bySize) === JSON.stringify(expected) && l.sort[1][1] === 'ascending', `sorted by size: ${bySize} ${JSON.stringify(l.sort)}`);
  assert(l.rows.some((r) => /^\d(\.\d)? MiB$/.test(r.cells[3])) && l.rows.some((r) => /KiB$/.test(r.cells[3])),
    `sizes read as KiB and MiB: ${l.rows.map((r) => r.cells[3])}`);
  await page.click('#s3-listing button.sort[data-sort="size"]');
  l = await listing(page);
  assert(l.sort[1][1] === 'descending' && Number(l.rows[0].bytes.replace(/[^0-9]/g, '')) === expected.at(-1), `descending by size: ${JSON.stringify(l.sort)}`);
  await page.click('#s3-listing button.sort[data-sort="modified"]');
  l = await listing(page);
  assert(l.rows[0].key === 'many/obj-00' && l.rows[24].key === 'many/obj-24' && l.sort[2][1] === 'ascending', `by date: ${names(l)}`);
  await page.axe('bucket: sorted');
  await page.type('s3-filter', 'obj-1');
  l = await listing(page);
  assert(JSON.stringify(names(l)) === JSON.stringify(Array.from({ length: 10 }, (_, i) => `obj-1${i}`)) && l.caption.includes('10 matches for “obj-1”'),
    `the filter keeps obj-10..19: ${names(l)} ${l.caption}`);
  await page.clear('s3-filter');
  await page.keys('s3-filter', ' \uE003');
  await page.shot('bucket-sorted');

  // Copy the key: the note says what happened.
  await page.click('#s3-listing tbody tr[data-key="many/obj-03"] button.copy');
  const copied = await page.until(`return document.querySelector('#s3-listing tbody tr[data-key="many/obj-03"] .copy-note').textContent`, 'the copy note');
  assert(/copied/.test(copied), `copy key: ${copied}`);

  // archive (v1): bulk select, one confirmation with the count; Cancel deletes nothing.
  await page.type('s3-page-size', '20');
  l = await openBucket(page, ARCHIVE, 'archive');
  l = await relist(page, 'archive tmp/', () => folder(page, 'tmp/'));
  assert(l.caption === '0 folders, 6 objects', `archive tmp/: ${l.caption}`);
  for (const k of ['tmp/t0.bin', 'tmp/t2.bin', 'tmp/t4.bin']) await page.click(`#s3-listing tbody tr[data-key="${k}"] input.pick`);
  const label = await page.js(`return document.querySelector('#s3-listing button[data-op="delete-selected"]').textContent`);
  assert(label === 'Delete selected (3)', `the bulk button counts: ${label}`);
  await page.shot('bucket-bulk-select');
  let dialog = await confirmWith(page, 'bucket', '#s3-listing button[data-op="delete-selected"]', 'confirm-cancel');
  assert(dialog.body.startsWith('Delete 3 from bucket archive: tmp/t0.bin, tmp/t2.bin, tmp/t4.bin') && dialog.focused === 'confirm-cancel',
    `one confirmation naming the count and the keys, Cancel focused: ${JSON.stringify(dialog)}`);
  l = await listing(page);
  assert(l.rows.length === 6, 'Cancel deleted nothing');
  dialog = await confirmWith(page, 'bucket', '#s3-listing button[data-op="delete-selected"]', 'confirm-ok');
  l = await page.until(`const l = document.getElementById('s3-listing');
    return !l.hasAttribute('aria-busy') && l.querySelectorAll('tbody tr').length === 3 && l.querySelector('caption').textContent`, 'the listing after the bulk delete');
  assert(l === '0 folders, 3 objects', `three left: ${l}`);
  seen.archiveTmp = (await listing(page)).rows.map((r) => r.key);

  // Put and delete from the object form (the delete confirmed); the listing follows.
  await page.type('s3-key', 'tmp/zz-put.txt');
  await page.type('s3-value', JSON.stringify(meta(42, 70)));
  const put = await page.outcome('s3-out', 'put', () => page.keys('s3-value', '\uE007'));
  assert(put.alert === null && put.text.startsWith('put tmp/zz-put.txt'), `put: ${put.text}`);
  await page.type('s3-key', 'tmp/t1.bin');
  dialog = await confirmWith(page, 'bucket', '#s3-object-form button[data-op="delete"]', 'confirm-ok');
  assert(dialog.body.startsWith('Delete tmp/t1.bin from bucket archive'), `the delete names the object and bucket: ${dialog.body}`);
  await page.until(`return document.getElementById('s3-out').textContent === 'deleted tmp/t1.bin'`, 'the delete');
  l = await page.until(`const l = document.getElementById('s3-listing');
    const keys = [...l.querySelectorAll('tbody tr')].map((tr) => tr.dataset.key);
    return !l.hasAttribute('aria-busy') && !keys.includes('tmp/t1.bin') && keys.includes('tmp/zz-put.txt') && keys`, 'the listing after put and delete');
  seen.archiveTmp = l;

  // 10 000 objects: folders per day, pages of 1 000 (Arsenal's cap), counts.
  await page.type('s3-page-size', '1000');
  l = await openBucket(page, LOGS, 'logs');
  assert(l.caption === '28 folders, 0 objects', `logs: a folder per day: ${l.caption}`);
  await page.axe('bucket: logs by day');
  await page.clear('s3-delimiter');
  const started = Date.now();
  l = await relist(page, 'logs without delimiter', () => page.keys('s3-prefix', '\uE007'));
  const ms = Date.now() - started;
  assert(l.rows.length === 1000 && l.caption === '0 folders, 1,000 objects on this page (more on the next page)' && l.next,
    `the first 1 000 of 10 000: ${l.caption}`);
  console.log(`e2e: bucket: 1 000 of ${LOG_OBJECTS} objects listed and drawn in ${ms} ms`);
  seen.logsFirst = l.rows.map((r) => r.key);
  l = await relist(page, 'logs page 2', () => page.click('#s3-listing .next-page'));
  assert(l.rows.length === 1000 && l.prev, `page 2: ${l.caption}`);
  seen.logsSecond = l.rows.map((r) => r.key);
  // (No axe run here: 1 000 rows of the markup checked above take axe longer than the script timeout.)
  await page.shot('bucket-logs');
  await page.keys('s3-delimiter', '/');

  // An unknown bucket is an error, not an empty listing; an empty bucket says so.
  await page.type('s3-bucket', 'nosuch');
  await page.clear('s3-prefix');
  const missing = await relist(page, 'an unknown bucket', () => page.keys('s3-prefix', '\uE007'), { alert: true });
  assert(/no bucket named nosuch|NoSuchBucket|no such bucket/i.test(missing), `an unknown bucket is said to be missing: ${missing}`);
  await page.axe('bucket: unknown bucket');
  await page.shot('bucket-unknown');
  await page.type('s3-bucket', 'empty-one');
  const made = await page.outcome('s3-out', 'create empty-one', () => page.click('#s3-list-form button[data-op="create-bucket"]'));
  assert(made.alert === null && made.text === 'created bucket empty-one, key format: v1', `create: ${made.text}`);
  l = await relist(page, 'an empty bucket', () => page.keys('s3-prefix', '\uE007'));
  assert(l.caption === 'empty bucket: empty-one holds no objects' && l.rows.length === 0, `an empty bucket says so: ${l.caption}`);

  // Bad input, refused before writing, shown next to its field.
  await page.type('s3-bucket', 'Bad_Name!!');
  await page.click('#s3-list-form button[data-op="create-bucket"]');
  let [invalid, message] = await page.until(`const e = document.getElementById('s3-bucket-error'); return e && [document.getElementById('s3-bucket').getAttribute('aria-invalid'), e.textContent]`, 'the bucket name refused');
  assert(invalid === 'true' && message.length > 0, `Bad_Name!! is refused next to the field: ${message}`);
  seen.badName = message;
  await page.axe('bucket: a bad bucket name');
  await page.shot('bucket-bad-name');
  await page.type('s3-bucket', 'nosuch');
  await page.type('s3-key', 'x.txt');
  await page.type('s3-value', '{"content-length": 1}');
  const intoMissing = await page.outcome('s3-out', 'a put into an unknown bucket', () => page.keys('s3-value', '\uE007'));
  assert(intoMissing.alert !== null && /nosuch|no such bucket/i.test(intoMissing.alert), `a put into an unknown bucket is refused: ${intoMissing.text}`);
  [invalid] = await fieldError(page, 's3-bucket');
  assert(invalid === 'true', 'the bucket field is marked');
  await page.type('s3-bucket', ARCHIVE);
  await page.type('s3-key', 'tmp/not-json.txt');
  await page.type('s3-value', 'not json');
  await page.keys('s3-value', '\uE007');
  [invalid, message] = await fieldError(page, 's3-value');
  assert(invalid === 'true' && message.startsWith('not JSON'), `a value that is not JSON is refused next to its field: ${message}`);
  await page.type('s3-key', '');
  await page.type('s3-value', '{}');
  await page.keys('s3-value', '\uE007');
  [invalid, message] = await fieldError(page, 's3-key');
  assert(invalid === 'true' && message.length > 0, `an empty key is refused: ${message}`);
  await page.axe('bucket: bad input');

  const report = await page.outcome('s3-out', 's3 check', () => page.click('#s3-list-form button[data-op="check"]'));
  assert(report.alert === null && /^Schemas3Rows scanned\d+/.test(report.text), `s3 check report: ${report.text}`);
  // Back to photos for the offline pass.
  await page.type('s3-bucket', BUCKET);
}

export const settled = (page) => migration.settled(page);

export async function offline(page) {
  await offlineError(page, { view: 'bucket', button: '#s3-list-form button[data-op="list"]', out: 's3-listing' });
}

export async function setup(page) {
  await setupCheck(page, 'bucket', { first: '#s3-list-form button[data-op="buckets"]', firstOut: 's3-buckets',
    setup: '#s3-list-form button[data-op="setup"]', setupOut: 's3-out', done: 'set up', after: 'no buckets yet: Create bucket makes one' });
}

export async function after(cli) {
  await migration.after(cli);
  // The refused "Create bucket" changed nothing: the same objects, no new findings.
  const list = await cliList(cli, BUCKET);
  assert(JSON.stringify(list) === JSON.stringify(photosBefore.list), `${BUCKET} lists as before:\n${JSON.stringify(list)}\n${JSON.stringify(photosBefore.list)}`);
  const report = await cliCheck(cli, BUCKET);
  assert(JSON.stringify(report.findings_by_kind) === JSON.stringify(photosBefore.check.findings_by_kind) && !report.findings_by_kind?.wrong_format_key,
    `s3 check of ${BUCKET} as before: ${JSON.stringify(report.findings_by_kind)}`);
  const buckets = JSON.parse(await cli(['--json', 's3', 'bucket', 'list'])).buckets;
  const formats = Object.fromEntries(buckets.map((b) => [b.name, b.vformat]));
  assert(formats[BUCKET] === 'v0' && formats['empty-one'] === 'v1' && !('nosuch' in formats) && !Object.keys(formats).some((n) => /bad/i.test(n)),
    `the buckets: ${BUCKET} still v0, empty-one made, no bad or unknown one: ${JSON.stringify(formats)}`);
  // What the screen showed of archive/tmp/ after the bulk delete, the put and the delete.
  const tmp = (await cliList(cli, ARCHIVE, '--prefix', 'tmp/')).Contents.map((c) => c.key);
  assert(JSON.stringify(tmp) === JSON.stringify(seen.archiveTmp), `archive tmp/ as the page showed it: ${tmp} vs ${seen.archiveTmp}`);
  assert(!tmp.includes('tmp/not-json.txt'), 'the value that was not JSON was not written');
  // The first two pages of logs as the CLI lists them (v2 continuation, 1 000 each).
  const first = await cliList(cli, LOGS, '--max-keys', '1000');
  assert(JSON.stringify(first.Contents.map((c) => c.key)) === JSON.stringify(seen.logsFirst), 'logs page 1 as the CLI lists it');
  const second = await cliList(cli, LOGS, '--max-keys', '1000', '--marker', seen.logsFirst.at(-1));
  assert(JSON.stringify(second.Contents.map((c) => c.key)) === JSON.stringify(seen.logsSecond), 'logs page 2 as the CLI lists it');
}
