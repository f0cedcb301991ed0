// Trace store view: a tile of 1 200 traces × 12 commits (some points missing) imported with the
// CLI, shown as the grid: every trace counted, hover and the arrow keys show the trace, commit
// and digest under the pointer (checked against the data written), filter and grouping by
// params; then a digest put from the view and the table checked.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { assert } from '../webdriver.mjs';
import { defaultButton, dump, op } from './panel.mjs';

const TRACES = 1200;
const TILE = 3;
const COMMITS = Array.from({ length: 12 }, (_, k) => TILE * 256 + 5 * k);
const OSES = ['linux', 'mac', 'win'];

const name = (i) => `test_${String(i).padStart(4, '0')}`;
const params = (i) => ({ name: name(i), os: OSES[i % 3], config: i % 2 ? 'gles' : '8888' });
const missing = (i, k) => (i + k) % 7 === 0;
/** The digest of trace `i` at the k-th commit: a few per trace, as a trace changes rarely. */
const digest = (i, k) => `d${((i * 31 + Math.floor(k / 4)) % 97).toString(16).padStart(31, '0')}`;

/** The trace names in the grid's row order (by trace id, `,k=v,` in key order). */
const ROWS = Array.from({ length: TRACES }, (_, i) => i)
  .map((i) => [`,${Object.entries(params(i)).sort().map(([k, v]) => `${k}=${v}`).join(',')},`, name(i)])
  .sort((a, b) => (a[0] < b[0] ? -1 : 1)).map((r) => r[1]);

export async function populate(cli) {
  const lines = COMMITS.map((commit, k) => JSON.stringify({
    commit,
    entries: Array.from({ length: TRACES }, (_, i) => i).filter((i) => !missing(i, k))
      .map((i) => ({ params: params(i), digest: digest(i, k) })),
  }));
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'rowkit-e2e-gold-')), 'tile.jsonl');
  fs.writeFileSync(file, `${lines.join('\n')}\n`);
  await cli(['gold', 'import', file]);
}

/** What the details panel shows: [trace name param, commit, digest text]. */
const details = (page) => page.js(`const d = document.getElementById('tile-details');
  const name = [...d.querySelectorAll('table.params tr')].find((r) => r.cells[0]?.textContent === 'name' || r.querySelector('th')?.textContent === 'name');
  return [name?.querySelector('td').textContent ?? null, document.getElementById('tile-detail-commit')?.textContent ?? null,
    document.getElementById('tile-detail-digest')?.textContent.trim() ?? null];`);

/** The digest the view must show for trace `traceName` at `commit`. */
function expected(traceName, commit) {
  const i = Number(traceName.slice('test_'.length));
  const k = COMMITS.indexOf(commit);
  if (k < 0 || missing(i, k)) return 'missing (no digest at this commit)';
  return digest(i, k);
}

export async function check(page) {
  await page.click('#tile-load');
  await page.until(`return ['done', 'failed'].includes(document.getElementById('view-tracestore').dataset.state)`, 'the tile to stream in');
  const [state, traces, status, label] = await page.js(`const s = document.getElementById('view-tracestore');
    return [s.dataset.state, Number(s.dataset.traces), document.getElementById('tile-status').textContent,
      document.getElementById('tile-canvas').getAttribute('aria-label')];`);
  assert(state === 'done' && traces === TRACES, `the newest tile streamed in with ${TRACES} traces: ${state} ${traces} ${status}`);
  assert(status.startsWith(`Tile ${TILE} (commits 768–1023): ${TRACES} trace(s);`) && /\d+ missing point/.test(status),
    `the status says which tile and how many traces: ${status}`);
  assert(label.includes(`${TRACES} trace(s)`), `the canvas has a text alternative: ${label}`);

  // Hover over the cell of the first row at the tile's 6th column (commit 773).
  await page.js(`document.getElementById('tile-canvas').scrollIntoView({ block: 'center' })`);
  await page.pointAt('#tile-canvas', 220 + 5 * 3 + 1, 18 + 4);
  const [hoverName, hoverCommit, hoverDigest] = await details(page);
  assert(hoverName === ROWS[0] && hoverCommit === '773', `hover shows the first trace at commit 773: ${hoverName} ${hoverCommit}`);
  assert(hoverDigest === expected(hoverName, 773), `hover shows its digest ${expected(hoverName, 773)}, got ${hoverDigest}`);
  await page.shot('tracestore');

  // The arrow keys: from the first cell down to the third row and right to commit 768 + 15.
  await page.js(`document.getElementById('tile-canvas').focus()`);
  for (const key of [...'\uE015'.repeat(3), ...'\uE014'.repeat(15)]) await page.keys('tile-canvas', key);
  const [keyName, keyCommit, keyDigest] = await details(page);
  assert(keyName === ROWS[2] && keyCommit === '783', `the arrow keys reach the third trace at commit 783: ${keyName} ${keyCommit}`);
  assert(keyDigest === expected(keyName, 783), `its digest ${expected(keyName, 783)}, got ${keyDigest}`);
  assert(keyDigest === 'missing (no digest at this commit)', `${keyName} has no point at commit 783: shown as missing`);

  // Filter by params, then group by one.
  await page.type('tile-filter', 'os=mac');
  const macs = await page.until(`return Number(document.getElementById('view-tracestore').dataset.rows) === 400 && 400`, 'the filter');
  assert(macs === 400, 'the filter keeps the 400 mac traces');
  await page.type('tile-filter', '');
  await page.js(`const g = document.getElementById('tile-group'); g.value = 'config'; g.dispatchEvent(new Event('change'))`);
  await page.until(`return Number(document.getElementById('view-tracestore').dataset.rows) === ${TRACES}`, 'all traces again');
  await page.shot('tracestore-grouped');

  await defaultButton(page, 'gold', 'put');
  await page.type('gold-commit', '1000');
  await op(page, 'gold', 'put');
  // The view's Check runs the schema's check machine over the gateway.
  const report = JSON.parse(await op(page, 'gold', 'check'));
  assert(report.schema === 'gold' && report.left === 0 && report.rows_scanned >= TRACES,
    `gold check: ${JSON.stringify(report).slice(0, 300)}`);
  await page.click('#tile-load');
  await page.until(`return document.getElementById('view-tracestore').dataset.state === 'done'`, 'the tile again');
  const after = await page.js(`return Number(document.getElementById('view-tracestore').dataset.traces)`);
  assert(after === TRACES + 1, `the trace put from the view is in the tile: ${after}`);
}

export async function after(cli) {
  const cells = await dump(cli, 'gold');
  assert(cells.some((c) => c.value_hex === '8db9913366b07bd14df9a68459e2958b'), 'gold has the digest cell');
}
