// The bucket view's Migrate action (docs/migration.md §3, §7.3), as an operator uses it: a v0
// bucket (`moving`, written with the CLI: plain objects, versions, a delete marker) is
// migrated to v1 from the page.
//
// 1. Migrate without gates: the status names v0 and no migration; Run stops in `verifying`
//    (no settle wait), the progress and the state changes are on screen, and the bucket still
//    lists and reads as before.
// 2. Migrate again with "switch" and "finish" (confirmed): the run waits the settle time Δ
//    twice (the browser's clock is the page's own: `--now` drives only the CLI's, see
//    docs/migration.md §12), so the check starts it first and the rest of the bucket view's
//    check and the other views' checks run meanwhile (navigating away must not stop or harm
//    it); `settled(page)` comes back and waits for
//    `removed`: the status says v1, the listing and an object's metadata are as before.
// 3. `after(cli)`: the CLI lists the same objects and versions, and says the bucket is v1.
import { assert } from '../webdriver.mjs';
import { confirmWith } from './forms.mjs';

const MOVING = 'moving';
const PLAIN = 20;
/** The versioned keys and how many versions each gets (the last of `gone.txt` is a delete marker). */
const VERSIONED = { 'v/doc.txt': 3, 'v/gone.txt': 2 };
/**
 * The bucket's stored rows in v0 (objmeta.md §4): one master per plain object, and a master
 * plus one row per version for each versioned key; each is one pair of the migration.
 */
const ROWS = PLAIN + Object.values(VERSIONED).reduce((n, v) => n + 1 + v, 0);
/** The longest a full run may take: two settle waits (90 s each by default) and its passes. */
const FULL_RUN_MS = 300_000;

let before = null;

/** What the CLI says of `moving`: its objects and its versions. */
async function cliState(cli) {
  const list = JSON.parse(await cli(['--json', 's3', 'list', MOVING]));
  const versions = JSON.parse(await cli(['--json', 's3', 'versions', MOVING]));
  return { list, versions };
}

export async function populate(cli) {
  await cli(['s3', 'bucket', 'create', MOVING, '--vformat', 'v0']);
  const put = (key, value, ...flags) => cli(['s3', 'put', MOVING, key, '--value', JSON.stringify(value), ...flags]);
  for (let i = 0; i < PLAIN; i++) await put(`plain/p${String(i).padStart(2, '0')}`, { 'content-length': 100 + i });
  for (let n = 1; n <= VERSIONED['v/doc.txt']; n++) await put('v/doc.txt', { 'content-length': n }, '--versioning');
  await put('v/gone.txt', { 'content-length': 9 }, '--versioning');
  await put('v/gone.txt', { isDeleteMarker: true }, '--versioning');
  before = await cliState(cli);
}

/** The panel as on screen: status, figures, state changes, final line, buttons. */
function panel(page) {
  return page.js(`const p = document.getElementById('s3-migrate');
    const fig = Object.fromEntries([...p.querySelectorAll('dd[data-figure]')].map((d) => [d.dataset.figure, d.textContent]));
    return { hidden: p.hidden, status: document.getElementById('s3-migrate-status').textContent, fig,
      states: [...p.querySelectorAll('.migrate-states li')].map((li) => li.textContent),
      final: p.querySelector('.migrate-final').textContent, state: document.getElementById('s3-migrate-progress').dataset.state ?? null,
      out: document.getElementById('s3-migrate-out').textContent,
      alert: document.querySelector('#s3-migrate-out [role="alert"]')?.textContent ?? null,
      run: document.getElementById('s3-migrate-run').disabled, open: document.querySelector('#s3-list-form button[data-op="migrate"]').disabled,
      gates: ['switch', 'finish', 'abort'].map((g) => document.getElementById('s3-migrate-' + g + '-help').textContent) };`);
}

/** Waits until the run ended (a final state, or an error) and returns the panel. */
async function ended(page, ms, what) {
  await page.waitFor(ms, `const p = document.getElementById('s3-migrate');
    return !document.getElementById('s3-migrate-run').disabled && !p.hasAttribute('aria-busy')
      && (document.getElementById('s3-migrate-progress').dataset.state || p.querySelector('[role="alert"]'))`, what);
  return panel(page);
}

/** The objects of `moving` as the page lists them (the Bucket field, no delimiter, one page). */
async function pageListing(page) {
  await page.type('s3-bucket', MOVING);
  await page.clear('s3-prefix');
  await page.clear('s3-delimiter');
  await page.type('s3-page-size', '100');
  await page.js(`for (const e of document.getElementById('s3-listing').children) e.dataset.old = 'true'`);
  await page.keys('s3-prefix', '\uE007');
  const keys = await page.until(`const l = document.getElementById('s3-listing');
    return !l.hasAttribute('aria-busy') && l.querySelector(':scope > :not([data-old])') && !l.querySelector('[role="alert"]')
      && [...l.querySelectorAll('tbody tr[data-key]')].map((tr) => tr.dataset.key)`, `the listing of ${MOVING}`);
  await page.keys('s3-delimiter', '/');
  return keys;
}

/** Gets `key` of `moving` with the object form (Key, then Get) and returns its metadata, parsed. */
async function metadata(page, key) {
  await page.js(`document.getElementById('s3-details').textContent = ''`);
  await page.type('s3-bucket', MOVING);
  await page.type('s3-key', key);
  await page.clear('s3-version');
  await page.click('#s3-object-form button[data-op="get"]');
  const text = await page.until(`return document.querySelector('#s3-details pre')?.textContent
    ?? document.querySelector('#s3-details [role="alert"]')?.textContent`, `${key}'s metadata`);
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`check failed: ${key} of ${MOVING} does not read: ${text}`);
  }
}

export async function check(page) {
  const keys = before.list.Contents.map((c) => c.key);
  // 1. The panel for a v0 bucket, then a run without gates: it stops in `verifying`.
  await page.type('s3-bucket', MOVING);
  await page.click('#s3-list-form button[data-op="migrate"]');
  await page.until(`const s = document.getElementById('s3-migrate-status');
    return !s.hasAttribute('aria-busy') && s.textContent`, 'the migration status');
  let p = await panel(page);
  assert(!p.hidden && p.status === 'key format v0; no migration in progress', `the status of ${MOVING}: ${p.status}`);
  assert(p.gates.every((g) => g.length > 20), `each gate is explained in one line: ${JSON.stringify(p.gates)}`);
  await page.axe('bucket: the Migrate panel');
  await page.select('#s3-migrate-to', 'v1');
  await page.click('#s3-migrate-run');
  p = await panel(page);
  assert(p.run && p.open, `while it runs, Run and Migrate are disabled: ${JSON.stringify(p)}`);
  p = await ended(page, 60_000, 'the run without gates');
  assert(p.alert === null, `the run without gates: ${p.alert}`);
  assert(p.state === 'verifying' && p.fig.state === 'verifying', `it stops in verifying: ${JSON.stringify(p)}`);
  assert(JSON.stringify(p.states) === JSON.stringify(['no migration → copying', 'copying → verifying']), `the state changes: ${p.states}`);
  // The copy pass reads the ROWS v0 rows and copies each; the verification reads both layouts.
  assert(p.fig.rows_scanned === String(2 * ROWS) && p.fig.copied === '0' && p.fig.pass !== '—',
    `the last progress is the verification's: ${2 * ROWS} rows scanned, none copied: ${JSON.stringify(p.fig)}`);
  const first = `bucket ${MOVING}: verifying (2 passes, ${3 * ROWS} rows scanned, ${ROWS} copied, 0 deleted, 0 stragglers, 0 conflicts, 0 findings); run again with “switch” to switch`;
  assert(p.final === first, `the result line:\n${p.final}\n${first}`);
  assert(/^key format v0; migrating v0 → v1: verifying since /.test(p.status), `the status names the run in progress: ${p.status}`);
  await page.axe('bucket: a migration in verifying');
  await page.shot('bucket-migrate-verifying');
  // Every object still reads (its truth is the v0 layout until the switch). The listing is
  // not compared here: it shows the v1 copies too while a migration is in progress (listings
  // are not migration-aware yet, docs/migration.md §12).
  for (const key of keys) {
    const doc = await metadata(page, key);
    const want = before.list.Contents.find((c) => c.key === key).value['content-length'];
    assert(doc['content-length'] === want, `${key} reads as before while verifying: ${JSON.stringify(doc)}`);
  }

  // 2. Switch and finish (confirmed first: the old layout is deleted); the page goes on to the
  // other views while it waits out Δ twice.
  await page.type('s3-bucket', MOVING);
  await page.click('#s3-list-form button[data-op="migrate"]');
  await page.until(`return document.getElementById('s3-migrate-status').textContent.includes('verifying since')`, 'the status again');
  await page.click('#s3-migrate-switch');
  await page.click('#s3-migrate-finish');
  const dialog = await confirmWith(page, 'bucket', '#s3-migrate-run', 'confirm-ok');
  assert(dialog.title === `Migrate ${MOVING} and delete its old layout?` && dialog.focused === 'confirm-cancel',
    `the full run asks first: ${JSON.stringify(dialog)}`);
  await page.until(`return document.getElementById('s3-migrate-run').disabled`, 'the full run to start');
  p = await panel(page);
  assert(p.run && p.open && p.alert === null, `the full run runs, its buttons disabled: ${JSON.stringify(p)}`);
  // A second click on the disabled button starts nothing.
  await page.js(`document.getElementById('s3-migrate-run').click()`);
  await page.shot('bucket-migrate-running');
  await page.axe('bucket: a migration running');
  console.log(`e2e: bucket: migration of ${MOVING} with switch and finish started (it waits Δ twice); the other checks run meanwhile`);
}

/** After the other views' checks: the full run ended, removed, and the bucket is v1. */
export async function settled(page) {
  const started = Date.now();
  const p = await ended(page, FULL_RUN_MS, 'the run with switch and finish');
  console.log(`e2e: bucket: the full migration ended ${((Date.now() - started) / 1000).toFixed(1)} s after the other views' checks`);
  assert(p.alert === null && p.state === 'removed', `the full run: ${p.alert ?? JSON.stringify(p)}`);
  assert(p.final.startsWith(`bucket ${MOVING}: migrated to v1 (`) && p.final.includes(`, ${ROWS} deleted, `),
    `the result line names v1 and the ${ROWS} old rows deleted: ${p.final}`);
  assert(p.states.at(0) === 'verifying → switching' && p.states.at(-1) === 'cleaning → no migration'
    && p.states.includes('switching → switched') && p.states.includes('switched → cleaning'), `the state changes: ${p.states}`);
  await page.until(`return document.getElementById('s3-migrate-status').textContent === 'key format v1; no migration in progress'`,
    'the status to say v1');
  await page.until(`return document.getElementById('s3-buckets').textContent.includes(arguments[0])`,
    'the bucket list to show the new format', `${MOVING} (v1)`);
  const ticked = await page.js(`return ['switch', 'finish', 'abort'].map((g) => document.getElementById('s3-migrate-' + g).checked)`);
  assert(ticked.every((t) => !t), `after the migration no gate is left ticked: ${ticked}`);
  await page.shot('bucket-migrate-done');
  await page.axe('bucket: a migration done');
  const keys = before.list.Contents.map((c) => c.key);
  const listed = await pageListing(page);
  assert(JSON.stringify(listed) === JSON.stringify(keys), `${MOVING} lists as before after the migration:\n${JSON.stringify(listed)}\n${JSON.stringify(keys)}`);
  for (const c of before.list.Contents) {
    const doc = await metadata(page, c.key);
    assert(doc['content-length'] === c.value['content-length'], `${c.key} reads as before after the migration: ${JSON.stringify(doc)}`);
  }
}

export async function after(cli) {
  const now = await cliState(cli);
  assert(JSON.stringify(now.list) === JSON.stringify(before.list), `the CLI lists ${MOVING} as before:\n${JSON.stringify(now.list)}\n${JSON.stringify(before.list)}`);
  assert(JSON.stringify(now.versions) === JSON.stringify(before.versions), `the CLI lists ${MOVING}'s versions as before`);
  const buckets = JSON.parse(await cli(['--json', 's3', 'bucket', 'list'])).buckets;
  assert(buckets.find((b) => b.name === MOVING)?.vformat === 'v1', `${MOVING} is v1 now: ${JSON.stringify(buckets)}`);
}
