// The big tile measured in the browser (optional, not part of the e2e run): a trace store of
// TRACES traces (default 10 000) × 256 commits, imported with `rowkit gold import`, served by
// `rowkit serve`, and shown by the trace store view in headless Chromium: the time to the first
// rows on the grid and to the whole tile (the view's data-first-rows-ms / data-whole-ms,
// measured in the page from the click), over RUNS runs (default 3); then the tile filtered
// with OR values and grouped through the form, rows counted and timed. Figures go to
// benches/README.md; nothing here asserts a time.
//
// Usage: node big-tile.mjs ROWKIT_BIN WWW_DIR|embedded [TRACES] [RUNS]   (a release rowkit:
// the gateway's speed is part of what is measured; CHROMEDRIVER: chromedriver path)
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { assert, openSession, sleep } from './webdriver.mjs';

const [rowkit, www, tracesArg, runsArg] = process.argv.slice(2);
if (!rowkit || !www) throw new Error('usage: node big-tile.mjs ROWKIT_BIN WWW_DIR|embedded [TRACES] [RUNS]');
const TRACES = Number(tracesArg ?? 10000);
const RUNS = Number(runsArg ?? 3);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'rowkit-big-tile-'));
const store = `embedded:${path.join(work, 'big.redb')}`;
const children = [];
process.on('exit', () => {
  for (const c of children) c.kill();
  fs.rmSync(work, { recursive: true, force: true });
});

// 256 commits of tile 0, one Put per commit; digests change every 16 commits, 1 point in 50 missing.
const started = Date.now();
execFileSync(rowkit, ['--store', store, 'gold', 'setup'], { stdio: 'inherit' });
const file = path.join(work, 'tile.jsonl');
const out = fs.openSync(file, 'w');
for (let c = 0; c < 256; c++) {
  const entries = [];
  for (let i = 0; i < TRACES; i++) {
    if ((i * 7 + c) % 50 === 0) continue;
    const d = ((i * 131 + (c >> 4) * 17) % 4093).toString(16).padStart(32, 'a');
    entries.push({ params: { name: `t${i}`, os: ['linux', 'mac', 'win'][i % 3], config: ['8888', 'gles', 'vk'][i % 3 === 0 ? 0 : i % 2 + 1] }, digest: d });
  }
  fs.writeSync(out, `${JSON.stringify({ commit: c, entries })}\n`);
}
fs.closeSync(out);
execFileSync(rowkit, ['--store', store, 'gold', 'import', file], { stdio: 'inherit' });
console.log(`big-tile: ${TRACES} traces × 256 commits imported in ${((Date.now() - started) / 1000).toFixed(1)} s`);

const serve = spawn(rowkit, ['--store', store, 'serve', '--listen', '127.0.0.1:0', ...(www === 'embedded' ? [] : ['--www', www])],
  { stdio: ['ignore', 'pipe', 'inherit'] });
children.push(serve);
let url = null;
serve.stdout.on('data', (d) => { url ??= String(d).match(/http:\/\/127\.0\.0\.1:\d+/)?.[0] ?? null; });
for (let i = 0; i < 300 && !url; i++) await sleep(100);
assert(url, 'rowkit serve printed its URL');

const session = await openSession(children);
try {
  const browser = await session.js('return navigator.userAgent');
  console.log(`big-tile: ${browser}`);
  for (let run = 1; run <= RUNS; run++) {
    // A fresh page per run: nothing cached between runs but what the browser caches itself.
    await session.navigate(`${url}/#tracestore`);
    await session.until(`return document.body.dataset.ready === 'true'`, 'the page');
    await session.click('#tile-load');
    const doc = await session.waitFor(600_000, `const s = document.getElementById('view-tracestore');
      return ['done', 'failed'].includes(s.dataset.state) && [s.dataset.state, s.dataset.traces, s.dataset.firstRowsMs, s.dataset.wholeMs,
        document.getElementById('tile-status').textContent]`, 'the tile');
    assert(doc[0] === 'done' && Number(doc[1]) === TRACES, `run ${run}: ${JSON.stringify(doc)}`);
    // The grid answers while holding the whole tile: a scroll to the end repaints.
    const repaint = await session.js(`const s = document.getElementById('tile-scroll');
      const t = performance.now(); s.scrollTop = s.scrollHeight;
      return new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(performance.now() - t))));`);
    console.log(`big-tile: run ${run}: first rows ${doc[2]} ms, whole tile ${doc[3]} ms, scroll to the end repainted in ${Math.round(repaint)} ms`);
  }
  // The whole tile filtered with OR values and grouped, as a user does it (typing, clicking the
  // select's option): the rows shown are counted against the data written, and timed.
  const wantRows = Array.from({ length: TRACES }, (_, i) => i).filter((i) => ['mac', 'win'].includes(['linux', 'mac', 'win'][i % 3])).length;
  let t = Date.now();
  await session.type('tile-filter', 'os=mac|win');
  await session.until(`return Number(document.getElementById('view-tracestore').dataset.rows) === arguments[0]`, 'the OR filter', wantRows);
  const filtered = Date.now() - t;
  t = Date.now();
  await session.select('#tile-group', 'config');
  await session.until(`return document.getElementById('tile-group').value === 'config'
    && Number(document.getElementById('view-tracestore').dataset.rows) === arguments[0]`, 'the grouping', wantRows);
  console.log(`big-tile: filter os=mac|win (${wantRows} rows) in ${filtered} ms, grouped by config in ${Date.now() - t} ms`);
} finally {
  await session.close();
}
process.exit(0);
