// End-to-end test of the browser tool (wasm/www): `rowkit serve --www WWW_DIR --token T` on a
// fresh embedded store (set up with `rowkit <schema> setup`, then filled by each view's
// `populate`), headless Chromium driven through chromedriver's W3C WebDriver HTTP API
// (webdriver.mjs). The page itself loads without the token (a navigation cannot send a bearer
// header); a scan before the token is typed in fails with an alert. Then each view's `check`
// (views/<name>.mjs) drives its view and asserts what is on screen, with a screenshot of each
// view in OUT_DIR. Then the gateway is stopped (the redb file has one owner at a time) and each
// view's optional `after` checks the store from outside with the CLI.
//
// A view module exports `populate(cli)` (write its data before the gateway starts; `cli(args)`
// runs `rowkit --store <store> ...args` and resolves to its stdout), `check(page)` (page: the
// session helpers of webdriver.mjs plus `url`, `open(name)` and `shot(name)`), and optionally
// `after(cli)`.
//
// Usage: node e2e.mjs ROWKIT_BIN WWW_DIR|embedded OUT_DIR   (CHROMEDRIVER: chromedriver path;
// `embedded` serves the tool built into ROWKIT_BIN; ROWKIT_E2E_STORE: see `store` below)
// Exit 0 when every check passes; any failure throws (exit 1) with what was expected.
import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

import { assert, openSession, sleep } from './webdriver.mjs';

/** The views, in the page's navigation order; each has views/<name>.mjs. */
const VIEWS = ['tracestore', 'mounttable', 'bucket', 'graph', 'keys', 'tables'];

const [rowkit, www, outDir] = process.argv.slice(2);
if (!rowkit || !www || !outDir) throw new Error('usage: node e2e.mjs ROWKIT_BIN WWW_DIR OUT_DIR');
// `embedded`: the tool built into rowkit (no --www).
const embedded = www === 'embedded';
if (!embedded && !fs.existsSync(path.join(www, 'pkg', 'rowkit.js'))) throw new Error(`${www}/pkg missing: run wasm/build.sh`);
fs.mkdirSync(outDir, { recursive: true });
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'rowkit-e2e-'));
// ROWKIT_E2E_STORE: another store for the CLI and the gateway alike, e.g. a Bigtable emulator
// (`bigtable://p/i?emulator=127.0.0.1:8086`, whose tables must not exist yet).
const store = process.env.ROWKIT_E2E_STORE || `embedded:${path.join(work, 'e2e.redb')}`;
const children = [];
const cleanup = () => {
  for (const c of children) c.kill();
  fs.rmSync(work, { recursive: true, force: true });
};
process.on('exit', cleanup);

const run = promisify(execFile);
/** `rowkit --store <store> ...args`, resolving to its stdout. */
const cli = async (args) => (await run(rowkit, ['--store', store, ...args], { maxBuffer: 1 << 28 })).stdout;

// A child process whose output is scanned for `127.0.0.1:PORT`.
async function startAndFindAddress(cmd, args, what, env = process.env) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], env });
  children.push(child);
  let log = '';
  child.stdout.on('data', (d) => { log += d; });
  child.stderr.on('data', (d) => { log += d; });
  for (let i = 0; i < 300; i++) {
    const m = log.match(/127\.0\.0\.1:(\d+)/);
    if (m) return { child, url: `http://127.0.0.1:${m[1]}` };
    if (child.exitCode !== null) break;
    await sleep(100);
  }
  throw new Error(`${what} did not report an address:\n${log}`);
}

const views = [];
for (const name of VIEWS) views.push({ name, ...(await import(`./views/${name}.mjs`)) });

for (const schema of ['mt', 'gold', 's3', 'graph']) await cli([schema, 'setup']);
for (const v of views) await v.populate(cli);

const token = `e2e-${crypto.randomUUID()}`;
// Override for local runs without `rowkit serve`; it reads the token from ROWKIT_GATEWAY_TOKEN.
const serveCmd = process.env.ROWKIT_SERVE_CMD;
const gateway = serveCmd
  ? await startAndFindAddress(serveCmd, [store.replace(/^embedded:/, ''), www], 'gateway',
    { ...process.env, ROWKIT_GATEWAY_TOKEN: token })
  : await startAndFindAddress(rowkit,
    ['--store', store, 'serve', '--listen', '127.0.0.1:0', ...(embedded ? [] : ['--www', www]), '--token', token], 'rowkit serve');

const session = await openSession(children);
const page = {
  ...session,
  url: gateway.url,
  /** Shows the view `name` by its navigation link and waits until its section is visible. */
  async open(name) {
    await session.click(`#nav-${name}`);
    await session.until(`const s = document.getElementById('view-' + arguments[0]);
      return s && !s.hidden && document.getElementById('nav-' + arguments[0]).getAttribute('aria-current') === 'page';`,
    `the ${name} view`, name);
  },
  /** A screenshot of the view on screen, OUT_DIR/<name>.png. */
  async shot(name) {
    const file = path.join(outDir, `${name}.png`);
    await session.screenshot('section.view:not([hidden])', file);
    console.log(`e2e: screenshot ${file}`);
  },
};

try {
  // The page and the wasm package load without the token: only the data API requires it.
  await session.navigate(`${gateway.url}/`);
  await session.until(`return document.body.dataset.ready`, 'the page to load the wasm package');
  const ready = await session.js(`return [document.body.dataset.ready, document.getElementById('status').textContent]`);
  assert(ready[0] === 'true', `the page started, status: ${ready[1]}`);

  // The shell: one navigation link per view, the first one current, the others hidden.
  const nav = await session.js(`return [...document.querySelectorAll('nav a')].map((a) =>
    [a.getAttribute('href'), a.getAttribute('aria-current'), document.getElementById('view-' + a.hash.slice(1)).hidden])`);
  assert(JSON.stringify(nav.map((n) => n[0])) === JSON.stringify(VIEWS.map((n) => `#${n}`)), `navigation links: ${JSON.stringify(nav)}`);
  assert(nav.every(([, current, hidden], i) => (i === 0) === (current === 'page') && (i === 0) === !hidden),
    `only the first view is current and shown: ${JSON.stringify(nav)}`);
  // Keyboard: Right from the first link focuses the second; Enter on it shows its view.
  await session.js(`document.querySelector('nav a').focus()`);
  await session.keys(`nav-${VIEWS[0]}`, '\uE014');
  const focused = await session.js(`return document.activeElement.id`);
  assert(focused === `nav-${VIEWS[1]}`, `ArrowRight moves to the next view's link, focus on ${focused}`);
  await session.keys(`nav-${VIEWS[1]}`, '\uE007');
  await session.until(`return document.body.dataset.view === arguments[0]`, 'Enter on a link shows its view', VIEWS[1]);

  await page.open('tables');
  const denied = await session.outcome('browse-out', 'a scan without the token', () => session.click('#browse-form button'));
  assert(denied.alert?.startsWith('unauthenticated: ') && denied.alert.includes('Authorization: Bearer'),
    `a scan without the token fails with the gateway's 401 as an alert, got: ${denied.text}`);
  await page.shot('tables-unauthenticated');
  await session.type('token', token);

  for (const v of views) {
    await page.open(v.name);
    await v.check(page);
  }
} finally {
  await session.close();
  gateway.child.kill();
  await new Promise((r) => (gateway.child.exitCode !== null ? r() : gateway.child.on('exit', r)));
}

// From outside: what the page wrote is in the store.
for (const v of views) if (v.after) await v.after(cli);
console.log(`e2e: ok (shell, navigation by keyboard, 401 alert before the token; views ${VIEWS.join(', ')}; store checked)`);
// chromedriver keeps the event loop alive; exiting runs `cleanup`.
process.exit(0);
