// Trace store view: 283 traces over 4 tiles (16 commits each, some points missing) imported
// with the CLI. The newest tile is shown as the grid: every trace counted, the grid fitting its
// region, the scroll region reached by Tab, the arrow keys and the pointer showing the trace,
// commit and digest under them (checked against the data written), filters with OR values and
// suggestions, Group by chosen by clicking, two traces compared, the state surviving a reload
// and the back button; bad input in every field of the Put form refused as typed (nothing
// written: `after` reads the store back); a digest put from the view; the table checked.
// `setup` (an empty server) and `offline` (the server stopped) per the e2e contract.
// Migrate (into a digest-id table the CLI set up) is tracestore-migrate.mjs's, run from here.
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { assert } from '../webdriver.mjs';
import { offlineError } from './offline.mjs';
import * as migration from './tracestore-migrate.mjs';
import { defaultButton } from './panel.mjs';

const TRACES = 283;
const TILES = 4;
const NEWEST = TILES - 1;
/** The commits with data in tile `k`: 16, every 8th repo index. */
const commitsOf = (k) => Array.from({ length: 16 }, (_, j) => k * 256 + 8 * j);
const OSES = ['linux', 'mac', 'win', 'android'];
const CONFIGS = ['8888', 'gles', 'vk'];

const name = (i) => `test_${String(i).padStart(3, '0')}`;
const params = (i) => ({ name: name(i), os: OSES[i % 4], config: CONFIGS[i % 3], source_type: i % 5 ? 'gm' : 'svg' });
const missing = (i, k, j) => (i + j + k) % 9 === 0;
/**
 * Trace `i`'s digest at the j-th commit of tile k: an MD5 (as Gold's image digests are) of one
 * of 113 images; it changes every 4 commits, as traces do.
 */
const digest = (i, k, j) => crypto.createHash('md5').update(`image ${(i * 31 + k * 7 + (j >> 2)) % 113}`).digest('hex');

/** The trace id of trace `i` (`,k=v,` in key order), as the store writes it. */
const traceId = (i) => `,${Object.entries(params(i)).sort().map(([k, v]) => `${k}=${v}`).join(',')},`;
/** The traces in the grid's row order (by trace id). */
const ROWS = Array.from({ length: TRACES }, (_, i) => i).sort((a, b) => (traceId(a) < traceId(b) ? -1 : 1));

/** The digest the view must show for trace `i` at repo index `commit` of the newest tile. */
function expected(i, commit) {
  const j = commitsOf(NEWEST).indexOf(commit);
  if (j < 0 || missing(i, NEWEST, j)) return 'missing (no digest at this commit)';
  return digest(i, NEWEST, j);
}

/** What the page showed, for `after` to compare with what the CLI reads. */
const seen = {};

export async function populate(cli) {
  const lines = [];
  for (let k = 0; k < TILES; k++) {
    commitsOf(k).forEach((commit, j) => lines.push(JSON.stringify({
      commit,
      entries: Array.from({ length: TRACES }, (_, i) => i).filter((i) => !missing(i, k, j))
        .map((i) => ({ params: params(i), digest: digest(i, k, j) })),
    })));
  }
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'rowkit-e2e-gold-')), 'tiles.jsonl');
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  await cli(['gold', 'import', file]);
  await migration.populate(cli);
}

const STATE = `return document.getElementById('view-tracestore').dataset.state`;
const settled = (page, what) => page.until(`const s = document.getElementById('view-tracestore').dataset.state;
  return ['done', 'failed', 'empty'].includes(s) && s`, what);

/** What the details panel shows: [trace id, commit, digest text]. */
const details = (page) => page.js(`return [document.getElementById('tile-detail-id')?.textContent ?? null,
  document.getElementById('tile-detail-commit')?.textContent ?? null,
  document.getElementById('tile-detail-digest')?.textContent.trim() ?? null];`);

const shownRows = (page) => page.js(`return Number(document.getElementById('view-tracestore').dataset.rows)`);
const count = (pred) => Array.from({ length: TRACES }, (_, i) => i).filter((i) => pred(params(i))).length;

/** The Put form's output once it has changed: its text and its alert (null: no error). */
const putOutcome = (page, what, act) => page.outcome('gold-out', what, act);

export async function check(page) {
  await page.axe('tracestore (no tile yet)');
  await page.click('#tile-load');
  assert(await settled(page, 'the tile to stream in') === 'done', 'the newest tile streamed in');
  const [traces, status, label] = await page.js(`const s = document.getElementById('view-tracestore');
    return [Number(s.dataset.traces), document.getElementById('tile-status').textContent,
      document.getElementById('tile-canvas').getAttribute('aria-label')];`);
  assert(traces === TRACES, `the newest tile has ${TRACES} traces: ${traces} ${status}`);
  assert(status.startsWith(`Tile ${NEWEST} (commits 768–1023): ${TRACES} trace(s);`) && /\d+ missing point/.test(status),
    `the status says which tile and how many traces: ${status}`);
  assert(label.includes(`${TRACES} trace(s)`), `the canvas has a text alternative: ${label}`);

  // The grid fits its region (no cut-off canvas), labels at a readable size, the region a Tab stop.
  const fit = await page.js(`const s = document.getElementById('tile-scroll'); const c = document.getElementById('tile-canvas');
    return { region: [s.getAttribute('role'), s.tabIndex, s.getAttribute('aria-label')], canvasW: c.getBoundingClientRect().width,
      scrollerW: s.clientWidth, sideways: s.scrollWidth > s.clientWidth, font: c.dataset.font, labelW: Number(c.dataset.labelW),
      cellW: Number(c.dataset.cellW), page: document.documentElement.scrollWidth <= innerWidth };`);
  assert(fit.region[0] === 'region' && fit.region[1] === 0 && fit.region[2], `the grid's scroll area is a labelled region in the tab order: ${JSON.stringify(fit)}`);
  assert(fit.canvasW <= fit.scrollerW && !fit.sideways && fit.page, `the grid fits its region at this width: ${JSON.stringify(fit)}`);
  assert(parseInt(fit.font, 10) >= 12 && fit.labelW >= 180, `row labels are at least 12 px: ${JSON.stringify(fit)}`);
  await page.shot('tracestore');
  await page.axe('tracestore (a tile)');

  // The pointer over the first row's label: the whole trace id as its tooltip.
  await page.js(`document.getElementById('tile-scroll').scrollIntoView({ block: 'center' })`);
  await page.pointAt('#tile-canvas', 20, 20 + 8);
  const tip = await page.js(`return document.getElementById('tile-canvas').title`);
  assert(tip === traceId(ROWS[0]), `the label's tooltip is the whole trace id: ${tip}`);
  // The pointer over the first row at the tile's 3rd commit with data (column 16, commit 784).
  await page.pointAt('#tile-canvas', fit.labelW + 16 * fit.cellW + 1, 20 + 8);
  const [hoverId, hoverCommit, hoverDigest] = await details(page);
  assert(hoverId === traceId(ROWS[0]) && hoverCommit === '784', `hover shows the first trace at commit 784: ${hoverId} ${hoverCommit}`);
  assert(hoverDigest === expected(ROWS[0], 784), `hover shows its digest ${expected(ROWS[0], 784)}, got ${hoverDigest}`);

  // Tab from Show tile reaches the grid's region; the arrow keys move: third row, commit 768 + 24.
  await page.keys('tile-load', '\uE004');
  assert(await page.js(`return document.activeElement.id`) === 'tile-scroll', 'Tab after Show tile focuses the grid');
  for (const key of [...'\uE015'.repeat(3), ...'\uE014'.repeat(24)]) await page.keys('tile-scroll', key);
  const [keyId, keyCommit, keyDigest] = await details(page);
  assert(keyId === traceId(ROWS[2]) && keyCommit === '792', `the arrow keys reach the third trace at commit 792: ${keyId} ${keyCommit}`);
  assert(keyDigest === expected(ROWS[2], 792), `its digest ${expected(ROWS[2], 792)}, got ${keyDigest}`);
  seen.cell = { id: keyId, commit: 792, digest: keyDigest };
  const [present, distinct] = await page.js(`return [document.getElementById('tile-commit-present').textContent,
    document.getElementById('tile-commit-digests').textContent]`);
  const j = commitsOf(NEWEST).indexOf(792);
  const holding = Array.from({ length: TRACES }, (_, i) => i).filter((i) => !missing(i, NEWEST, j));
  assert(present === `${holding.length} of ${TRACES}` && Number(distinct) === new Set(holding.map((i) => digest(i, NEWEST, j))).size,
    `commit 792's details: ${present}, ${distinct} distinct`);
  seen.commit = { commit: 792, present: holding.length };

  // Filters: OR values, suggestions from the tile's params.
  await page.type('tile-filter', 'os=mac|win');
  const orRows = count((p) => ['mac', 'win'].includes(p.os));
  await page.until(`return Number(document.getElementById('view-tracestore').dataset.rows) === arguments[0]`, 'the OR filter', orRows);
  await page.type('tile-filter', 'config=');
  const offered = await page.until(`const o = [...document.querySelectorAll('#tile-filter-values option')].map((x) => x.value);
    return o.length ? o : null`, 'the values offered');
  assert(JSON.stringify(offered) === JSON.stringify(CONFIGS.map((c) => `config=${c}`).sort()), `config's values offered: ${offered}`);
  await page.keys('tile-filter', 'gles|vk,os=');
  const osOffered = await page.js(`return [...document.querySelectorAll('#tile-filter-values option')].map((x) => x.value)`);
  assert(osOffered.length === 4 && osOffered.includes('config=gles|vk,os=android'), `os values after a comma: ${osOffered}`);
  await page.keys('tile-filter', 'linux|android');
  const both = count((p) => ['gles', 'vk'].includes(p.config) && ['linux', 'android'].includes(p.os));
  await page.until(`return Number(document.getElementById('view-tracestore').dataset.rows) === arguments[0]`, 'two OR entries', both);
  seen.filtered = { filter: 'config=gles|vk,os=linux|android', rows: both };

  // Group by: chosen by clicking the select and its option.
  const options = await page.js(`return [...document.getElementById('tile-group').options].map((o) => o.textContent)`);
  assert(JSON.stringify(options) === JSON.stringify(['(no grouping)', 'config', 'name', 'os', 'source_type']), `Group by offers the params: ${options}`);
  await page.select('#tile-group', 'os');
  assert(await page.js(`return document.getElementById('tile-group').value`) === 'os', 'os chosen in Group by');
  assert(await shownRows(page) === both, 'grouping keeps the filtered traces');
  await page.shot('tracestore-filtered-grouped');
  await page.axe('tracestore (filtered, grouped)');

  // Two traces compared: select one (a click), pin it, select another (keys), compare.
  await page.type('tile-filter', '');
  await page.select('#tile-group', '(no grouping)');
  await page.until(`return Number(document.getElementById('view-tracestore').dataset.rows) === ${TRACES}`, 'every trace again');
  await page.js(`document.getElementById('tile-scroll').scrollTop = 0`);
  await page.click('#tile-canvas'); // a click in the middle of the grid selects the cell there
  const [pinId] = await details(page);
  await page.click('#tile-pin');
  await page.keys('tile-scroll', '\uE015');
  const [otherId] = await details(page);
  const [a, b] = [ROWS[ROWS.findIndex((i) => traceId(i) === pinId)], ROWS[ROWS.findIndex((i) => traceId(i) === otherId)]];
  assert(a !== undefined && b !== undefined && a !== b, `two traces selected: ${pinId} ${otherId}`);
  const summary = await page.until(`return document.getElementById('tile-compare-summary')?.textContent`, 'the comparison');
  let same = 0;
  let differ = 0;
  commitsOf(NEWEST).forEach((commit) => {
    const [da, db] = [expected(a, commit), expected(b, commit)];
    if (da === db && !da.startsWith('missing')) same += 1; else if (da !== db) differ += 1;
  });
  assert(summary.startsWith(`${same} commit(s) with the same digest, ${differ} differing`), `the comparison: ${summary} (want ${same} same, ${differ} differing)`);
  await page.shot('tracestore-compare');
  await page.axe('tracestore (two traces compared)');

  // The state is in the URL: a reload shows the same tile, selection and comparison.
  const hash = await page.js('return location.hash');
  assert(hash.startsWith('#tracestore?') && hash.includes('trace=') && hash.includes('compare='), `the URL holds the state: ${hash}`);
  const token = await page.js(`return document.getElementById('token').value`);
  await page.reload();
  await page.until(`return document.body.dataset.ready === 'true'`, 'the page after the reload');
  if (token) {
    // The token is not kept by the page: type it again, then Show tile shows the URL's state.
    await settled(page, 'the restore without a token');
    await page.type('token', token);
    await page.click('#tile-load');
  }
  assert(await settled(page, 'the restored tile') === 'done', 'the tile after the reload');
  const restored = await page.until(`const d = document.getElementById('tile-detail-id')?.textContent;
    const c = document.getElementById('tile-compare-summary')?.textContent;
    return d && c ? [d, c] : null`, 'the restored selection and comparison');
  assert(restored[0] === otherId && restored[1] === summary, `reload restored the selection and comparison: ${JSON.stringify(restored)}`);
  // Back: the state before the last selection (the pinned trace, selected).
  await page.back();
  await page.until(`return document.getElementById('tile-detail-id')?.textContent === arguments[0]
    && !document.getElementById('tile-compare-summary')`, 'back to the pinned trace', pinId);
  assert(await page.js(STATE) === 'done', 'the tile after back');

  // Bad input in every field of the Put form: marked as typed, refused on Put (nothing written).
  await defaultButton(page, 'gold', 'put');
  await page.clear('gold-commit');
  await page.keys('gold-commit', '\uE004'); // leave the field: its message stays
  await page.type('gold-params', 'name=bad,os=linux');
  await page.type('gold-digest', '0123456789abcdef0123456789abcdef');
  const noCommit = await putOutcome(page, 'put without a commit', () => page.click('#gold-form button[data-op="put"]'));
  assert(noCommit.alert === 'Not written: Commit: a commit (repo index) is required', `an empty Commit is refused: ${noCommit.text}`);
  assert(await page.js(`return document.getElementById('gold-commit').getAttribute('aria-invalid')`) === 'true', 'Commit marked invalid');
  await page.type('gold-commit', '1001');
  await page.type('gold-digest', 'xyz');
  const digestMessage = await page.js(`return document.getElementById('gold-digest-error')?.textContent ?? ''`);
  const badDigest = await putOutcome(page, 'put with digest xyz', () => page.click('#gold-form button[data-op="put"]'));
  assert(badDigest.alert?.startsWith('Not written: Digest: ') && badDigest.alert.endsWith(digestMessage) && digestMessage !== '', `digest xyz is refused: ${badDigest.text} (as typed: ${digestMessage})`);
  await page.type('gold-digest', '0123456789abcdef0123456789abcdef');
  await page.clear('gold-params');
  await page.keys('gold-params', 'name=');
  const badParams = await putOutcome(page, 'put with an empty param', () => page.click('#gold-form button[data-op="put"]'));
  assert(badParams.alert === 'Not written: Params: "name=" is not key=value (both non-empty)', `an empty param value is refused: ${badParams.text}`);
  await page.clear('gold-params');
  await page.keys('gold-params', ' ');
  const noParams = await putOutcome(page, 'put without params', () => page.click('#gold-form button[data-op="put"]'));
  assert(noParams.alert === 'Not written: Params: a trace needs at least one param (key=value)', `no params is refused: ${noParams.text}`);
  await page.shot('tracestore-bad-input');
  await page.axe('tracestore (bad input marked)');

  // Bad tile indexes are refused before any read; a tile without data is said to be empty.
  for (const bad of ['-1', '2.5', '8388608']) {
    await page.type('tile-index', bad);
    await page.click('#tile-load');
    const refused = await page.until(`return document.querySelector('#tile-status [role="alert"]')?.textContent`, `tile index ${bad} refused`);
    assert(refused.startsWith('Not shown: Tile index: a tile index is a whole number') && await page.js(`return document.getElementById('tile-index').getAttribute('aria-invalid')`) === 'true',
      `tile index ${bad}: ${refused}`);
  }
  await page.type('tile-index', '9');
  await page.click('#tile-load');
  assert(await settled(page, 'tile 9') === 'done', 'tile 9 read');
  const nine = await page.js(`return document.getElementById('tile-status').textContent`);
  assert(nine.startsWith('Tile 9 (commits 2304–2559): 0 trace(s);'), `a tile without data says so: ${nine}`);

  // A good put, from the view; then the table's check.
  await page.type('gold-commit', '1000');
  await page.type('gold-params', 'name=circle,os=linux');
  await page.type('gold-digest', '8db9913366b07bd14df9a68459e2958b');
  const put = await putOutcome(page, 'put', () => page.keys('gold-digest', '\uE007'));
  assert(put.alert === null && put.text.startsWith('put 8db9913366b07bd14df9a68459e2958b at commit 1000'), `put: ${put.text}`);
  const checked = await putOutcome(page, 'check', () => page.click('#gold-form button[data-op="check"]'));
  assert(checked.alert === null && /Schemagold/.test(checked.text) && /Left0/.test(checked.text), `gold check: ${checked.text}`);
  await page.type('tile-index', '');
  await page.click('#tile-load');
  assert(await settled(page, 'the tile again') === 'done', 'the tile again');
  const after = await page.js(`return Number(document.getElementById('view-tracestore').dataset.traces)`);
  assert(after === TRACES + 1, `the trace put from the view is in the tile: ${after}`);

  // Migrate: the points imported and the one put above, each trace's row per tile.
  let points = 1;
  for (let k = 0; k < TILES; k++) {
    commitsOf(k).forEach((_, j) => { points += Array.from({ length: TRACES }, (__, i) => i).filter((i) => !missing(i, k, j)).length; });
  }
  const traceRows = Array.from({ length: TILES }, (_, k) => Array.from({ length: TRACES }, (__, i) => i)
    .filter((i) => commitsOf(k).some((___, j) => !missing(i, k, j))).length).reduce((a, b) => a + b, 0) + 1;
  await migration.check(page, { points, traceRows, traces: TRACES + 1, settled });
}

/** The gateway is gone: Show tile fails within OFFLINE_ERROR_MS, the grid is marked stale, the header says so. */
export async function offline(page) {
  const hadData = await page.js(`return Number(document.getElementById('view-tracestore').dataset.traces) > 0`);
  await offlineError(page, { view: 'tracestore', button: '#tile-load', out: 'tile-status', staleId: 'tile-stale', hadData });
  assert(await page.js(STATE) === 'failed', 'the view is not left "done"');
}

/** An empty server: the first Show tile says to set up, Set up works, Show tile then works. */
export async function setup(page) {
  await page.click('#tile-load');
  await settled(page, 'Show tile on an empty store');
  const hint = await page.js(`return document.querySelector('#tile-status [role="alert"]')?.textContent ?? null`);
  assert(hint?.includes('Set up'), `the empty store's hint: ${hint}`);
  await page.shot('tracestore-not-set-up');
  await page.axe('tracestore (empty store)');
  await page.click('#tile-setup');
  await page.until(`return document.getElementById('tile-status').textContent.startsWith('Set up:')`, 'Set up to succeed');
  await page.click('#tile-load');
  assert(await settled(page, 'Show tile after Set up') === 'empty', 'Show tile after Set up: the table is there, with no tile');
}

export async function after(cli) {
  await migration.after(cli, NEWEST);
  const tile = JSON.parse(await cli(['--json', 'gold', 'tile', String(NEWEST)]));
  const byId = new Map(tile.traces.map((t) => [t.id, t]));
  // What the details panel showed is what the store holds.
  const cellTrace = byId.get(seen.cell.id);
  const stored = cellTrace.digests[tile.commits.indexOf(seen.cell.commit)] || 'missing (no digest at this commit)';
  assert(stored === seen.cell.digest, `the view showed ${seen.cell.digest} at ${seen.cell.commit}, the CLI reads ${stored}`);
  const col = tile.commits.indexOf(seen.commit.commit);
  const present = tile.traces.filter((t) => t.digests[col]).length;
  assert(present === seen.commit.present, `commit ${seen.commit.commit}: the view counted ${seen.commit.present} traces with a digest, the CLI ${present}`);
  // The view's put is there; the refused ones are not (commit 1001, the bad params).
  const circle = byId.get(',name=circle,os=linux,');
  assert(circle && circle.digests[tile.commits.indexOf(1000)] === '8db9913366b07bd14df9a68459e2958b', 'the digest put from the view');
  assert(!byId.has(',name=bad,os=linux,') && !tile.traces.some((t) => t.digests[tile.commits.indexOf(1001)]),
    'nothing was written by the refused puts');
  const empty = JSON.parse(await cli(['--json', 'gold', 'tile', '0']));
  assert(!empty.traces.some((t) => t.params.name === 'bad' || t.digests[0] === '0123456789abcdef0123456789abcdef'), 'no refused put at commit 0');
}
