// End-to-end test of the browser tool (wasm/www): `rowkit serve --www WWW_DIR --token T` on a
// fresh embedded store (set up with `rowkit <schema> setup`, then filled by each view's
// `populate`), headless Chromium driven through chromedriver's W3C WebDriver HTTP API
// (webdriver.mjs), axe-core run in every state (no serious or critical violation allowed).
//
// The passes, in order:
// 1. The shell: the page loads without the token (a navigation cannot send a bearer header);
//    navigation by keyboard; the header's connection state; a tool directory without its
//    package gets a page saying so; a scan before the token is typed fails with an alert.
// 2. Each view's `check(page)` (views/<name>.mjs) drives its view and asserts what is on screen;
//    then each view's optional `settled(page)` waits for what its check left running.
// 3. The shell's own checks across views: the confirmation dialog (Cancel first, Escape
//    cancels), the browser's Back and Forward buttons between views and states, a reload and a
//    deep link restoring a view's state.
// 4. A 900 px wide window: every view fits (no horizontal scrolling), screenshot and axe again.
// 5. `setup(page)` of each view against a second, EMPTY server (`rowkit serve` on a fresh file,
//    its URL typed into the Gateway field); then that server is stopped and the CLI checks that
//    the tables the page created are those `rowkit <schema> setup` creates.
// 6. The gateway is stopped: each view's `offline(page)` must show an error within OFFLINE_ERROR_MS (the
//    seconds are printed) and the header says the gateway cannot be reached.
// 7. Each view's optional `after(cli)` checks the store from outside with the CLI.
// Screenshots of every view and state go to OUT_DIR (CI keeps them as artefacts).
//
// A view module exports `populate(cli)` (write its data before the gateway starts; `cli(args)`
// runs `rowkit --store <store> ...args` and resolves to its stdout), `check(page)` (page: the
// session helpers of webdriver.mjs plus `url`, `open(name)` and `shot(name)`), `setup(page)`,
// `offline(page)` and optionally `settled(page)` and `after(cli)`.
//
// Usage: node e2e.mjs ROWKIT_BIN WWW_DIR|embedded OUT_DIR   (CHROMEDRIVER: chromedriver path;
// `embedded` serves the tool built into ROWKIT_BIN; ROWKIT_E2E_STORE: see `store` below;
// ROWKIT_AXE_JS: axe-core's axe.min.js, which wasm/test.sh installs; ROWKIT_E2E_VIEWS: below)
// Exit 0 when every check passes; any failure throws (exit 1) with what was expected.
import { spawn, execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { OFFLINE_ERROR_MS, assert, openSession, sleep } from './webdriver.mjs';

/** The views, in the page's navigation order; each has views/<name>.mjs. */
const VIEWS = ['tracestore', 'mounttable', 'bucket', 'graph', 'keys', 'tables'];

/** The schema whose tables each view's Set up creates (the CLI's `rowkit <schema> setup`). */
const SCHEMA_OF = { tracestore: 'gold', mounttable: 'mt', bucket: 's3', graph: 'graph' };

/** A view's error after the server stopped must be on screen within this many ms. */

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
/** The tables of an embedded store file and their families, as `admin list-tables --json` says. */
const tablesOf = async (file) => JSON.parse((await run(rowkit, ['--store', `embedded:${file}`, '--json', 'admin', 'list-tables'])).stdout).tables;

/** Stops a child process and waits until it has exited (a redb file has one owner at a time). */
async function stop(child) {
  if (child.exitCode === null) child.kill();
  await new Promise((r) => (child.exitCode !== null ? r() : child.on('exit', r)));
}

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

// ROWKIT_E2E_VIEWS (comma-separated names): only those views' passes, for a quicker run while
// working on them (the shell's checks that need a view are skipped without it).
const only = process.env.ROWKIT_E2E_VIEWS?.split(',');
const views = [];
for (const name of VIEWS) if (!only || only.includes(name)) views.push({ name, ...(await import(`./views/${name}.mjs`)) });

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

/** The header's connection state: [text, data-state]. */
const connectionShown = () => session.js(`const c = document.getElementById('connection'); return [c.textContent, c.dataset.state]`);

/** Asserts that nothing on the page is wider than the window (no horizontal scrolling). */
async function fits(what) {
  const [scrollWidth, innerWidth, widest] = await session.js(`
    const wide = [...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > innerWidth + 1)
      .map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className && typeof e.className === 'string' ? '.' + e.className.split(' ').join('.') : '')
        + ' ' + Math.round(e.getBoundingClientRect().right) + 'px');
    return [document.documentElement.scrollWidth, innerWidth, wide.slice(0, 5)];`);
  assert(scrollWidth <= innerWidth, `${what} fits a ${innerWidth} px window: it is ${scrollWidth} px wide (${widest.join(', ')})`);
}

/** Opens view `v` and runs its pass `pass` (`setup`, `offline`), which every view exports. */
async function viewPass(v, pass) {
  assert(typeof v[pass] === 'function', `views/${v.name}.mjs exports ${pass}(page)`);
  await page.open(v.name);
  await v[pass](page);
}

/** The shell's own checks across views: confirmation, Back/Forward, reload, deep link. */
async function shellChecks() {
  // The confirmation dialog, through a view's destructive action (on screen as the view's
  // check left it); Escape cancels, so nothing changes.
  const trigger = CONFIRM_TRIGGERS.find((t) => views.some((v) => v.name === t.view));
  await page.open(trigger.view);
  if (await session.js(`return document.querySelector(arguments[0]) !== null`, trigger.css)) {
    await session.click(trigger.css);
    await session.until(`return document.getElementById('confirm-dialog').open`, 'the confirmation dialog');
    const [focused, title, ok] = await session.js(`return [document.activeElement.id, document.getElementById('confirm-title').textContent,
      document.getElementById('confirm-ok').textContent]`);
    assert(focused === 'confirm-cancel' && title && ok, `Cancel is focused first (focus on ${focused}), the dialog says what: ${title} / ${ok}`);
    await page.shot('shell-confirm');
    await session.axe('the confirmation dialog');
    await session.keys('confirm-cancel', '\uE00C'); // Escape
    await session.until(`return !document.getElementById('confirm-dialog').open`, 'Escape to close the dialog');
  } else {
    console.log(`e2e: confirmation dialog: SKIPPED (${trigger.view} has no ${trigger.css} on screen)`);
  }

  // Back and Forward (the browser's, through WebDriver) between views and states.
  const keyA = 'e2e-bucket\\x00\\x7fMphotos/a.jpg';
  const keyB = '09:ts:t:2147483646:,0=1,';
  const decoded = (key) => session.until(`return document.body.dataset.view === 'keys'
      && document.getElementById('key-input').value === arguments[0]
      && document.querySelector('#key-out table.fields > caption')?.textContent.startsWith('Row key decoded as')
      && document.querySelector('#key-out .segments')?.textContent === arguments[0]`, `the keys view showing ${key}`, key);
  await page.open('keys');
  await session.select('#key-schema', 'auto');
  for (const key of [keyA, keyB]) {
    await session.type('key-input', key);
    await session.click('#key-form button');
    await decoded(key);
  }
  const hashB = await session.js('return location.hash');
  assert(hashB === `#keys?${new URLSearchParams({ key: keyB })}`, `the key is in the URL: ${hashB}`);
  await page.open('tables');
  const tablesHash = await session.js('return location.hash');
  assert(tablesHash.startsWith('#tables?table=badwolf'), `the tables view's link keeps its state: ${tablesHash}`);
  await session.back();
  await decoded(keyB);
  await session.back();
  await decoded(keyA);
  await session.forward();
  await decoded(keyB);
  await page.shot('shell-back-forward');
  // A reload keeps the view and its state.
  await session.reload();
  await session.until(`return document.body.dataset.ready === 'true'`, 'the page after the reload');
  await decoded(keyB);
  const current = await session.js(`return document.getElementById('nav-keys').getAttribute('aria-current')`);
  assert(current === 'page', 'after the reload the keys view is the current one');
  // A deep link into the table browser: the scan's fields and the page are restored; the token
  // is not kept by the page (a reload asks for it again), so Scan runs once it is typed.
  const link = `${gateway.url}/#tables?table=badwolf&prefix=browse%3A&limit=3`;
  await session.navigate('about:blank');
  await session.navigate(link);
  await session.until(`return document.body.dataset.ready === 'true'`, 'the deep link to load');
  await session.until(`return document.body.dataset.view === 'tables' && document.getElementById('browse-table').value === 'badwolf'
    && document.getElementById('browse-prefix').value === 'browse:' && document.getElementById('browse-limit').value === '3'`, 'the deep link\'s fields');
  await session.type('token', token);
  const scanned = await session.outcome('browse-out', 'Scan after the deep link', () => session.click('#browse-scan'));
  assert(scanned.alert === null && scanned.text.includes('3 row(s) of badwolf, page 1, more follow'), `the deep link's scan: ${scanned.text}`);

  // The connection state with the token.
  await session.until(`return document.getElementById('connection').textContent === arguments[0]`,
    'the header to say connected with the token', `connected · gateway ${gateway.url} (with token)`);
}

/**
 * Where the shell's check finds a destructive action that asks first: a view and the button
 * (on screen after that view's check).
 */
const CONFIRM_TRIGGERS = [{ view: 'mounttable', css: '#mt-details button[data-op="delete-subtree"]' }];

try {
  // The page and the wasm package load without the token: only the data API requires it.
  await session.navigate(`${gateway.url}/`);
  await session.until(`return document.body.dataset.ready`, 'the page to load the wasm package');
  const ready = await session.js(`return [document.body.dataset.ready, document.getElementById('status').textContent]`);
  assert(ready[0] === 'true', `the page started, status: ${ready[1]}`);
  const probed = await session.until(`const c = document.getElementById('connection');
    return c.dataset.state !== 'checking' && [c.textContent, c.dataset.state]`, 'the first probe of the gateway');
  assert(probed[1] === 'connected' && probed[0] === `connected · gateway ${gateway.url}`, `the header's connection state: ${probed}`);

  // The shell: one navigation link per view, the first one current, the others hidden.
  const nav = await session.js(`return [...document.querySelectorAll('nav a')].map((a) =>
    [a.getAttribute('href'), a.getAttribute('aria-current'), document.getElementById('view-' + a.hash.slice(1)).hidden])`);
  assert(JSON.stringify(nav.map((n) => n[0])) === JSON.stringify(VIEWS.map((n) => `#${n}`)), `navigation links: ${JSON.stringify(nav)}`);
  assert(nav.every(([, current, hidden], i) => (i === 0) === (current === 'page') && (i === 0) === !hidden),
    `only the first view is current and shown: ${JSON.stringify(nav)}`);
  await session.axe('the shell');
  // Keyboard: Right from the first link focuses the second; Enter on it shows its view.
  await session.js(`document.querySelector('nav a').focus()`);
  await session.keys(`nav-${VIEWS[0]}`, '\uE014');
  const focused = await session.js(`return document.activeElement.id`);
  assert(focused === `nav-${VIEWS[1]}`, `ArrowRight moves to the next view's link, focus on ${focused}`);
  await session.keys(`nav-${VIEWS[1]}`, '\uE007');
  await session.until(`return document.body.dataset.view === arguments[0]`, 'Enter on a link shows its view', VIEWS[1]);

  // A tool directory without its built package (a checkout before wasm/build.sh): the page
  // says why, as an alert, instead of waiting forever.
  const source = fileURLToPath(new URL('../../www', import.meta.url));
  const bare = path.join(work, 'bare-www');
  fs.cpSync(source, bare, { recursive: true, filter: (src) => path.relative(source, src).split(path.sep)[0] !== 'pkg' });
  const bareGateway = await startAndFindAddress(rowkit,
    ['--store', 'memory:', 'serve', '--listen', '127.0.0.1:0', '--www', bare], 'rowkit serve --www (no package)');
  await session.navigate(`${bareGateway.url}/`);
  await session.until(`return document.body.dataset.ready === 'failed'`, 'the page without its package to give up');
  const [role, said] = await session.js(`const s = document.getElementById('status'); return [s.getAttribute('role'), s.textContent]`);
  assert(role === 'alert' && said.includes('/pkg/rowkit.js is not served (HTTP 404)') && said.includes('wasm/build.sh'),
    `the page says why the tool cannot start: ${role} ${said}`);
  await stop(bareGateway.child);
  await session.navigate(`${gateway.url}/`);
  await session.until(`return document.body.dataset.ready === 'true'`, 'the page again');

  await page.open('tables');
  const denied = await session.outcome('browse-out', 'a scan without the token', () => session.click('#browse-form button'));
  assert(denied.alert?.startsWith('unauthenticated: ') && denied.alert.includes('Authorization: Bearer'),
    `a scan without the token fails with the gateway's 401 as an alert, got: ${denied.text}`);
  assert(!/^(\w+): \1/i.test(denied.alert), `the error line does not repeat itself: ${denied.alert}`);
  const detail = await session.js(`return document.querySelector('#browse-out details > summary')?.textContent`);
  assert(detail === 'Details', `the error's detail is behind a disclosure: ${detail}`);
  await page.shot('tables-unauthenticated');
  await session.axe('an error with its details');
  await session.type('token', token);

  for (const v of views) {
    await page.open(v.name);
    await v.check(page);
    await session.axe(`${v.name} after its check`);
  }
  // What a check left running (the bucket view's migration waits out its settle time while the
  // views after it are checked), before anything reloads the page.
  for (const v of views.filter((v) => v.settled)) {
    await page.open(v.name);
    await v.settled(page);
  }

  if (['keys', 'tables', 'mounttable'].every((name) => views.some((v) => v.name === name))) await shellChecks();
  else console.log('e2e: the shell checks across views: SKIPPED (ROWKIT_E2E_VIEWS leaves out keys, tables or mounttable)');

  // A 900 px window: every view, as its check left it, fits without horizontal scrolling.
  await session.resize(900, 1200);
  for (const v of views) {
    await page.open(v.name);
    await fits(`the ${v.name} view`);
    await page.shot(`${v.name}-900px`);
    await session.axe(`${v.name} at 900 px`);
  }
  await session.resize(1280, 1400);

  // Set up against an empty server: its URL typed into the Gateway field (cleared first).
  const emptyFile = path.join(work, 'empty.redb');
  const emptyToken = `e2e-empty-${crypto.randomUUID()}`;
  const empty = await startAndFindAddress(rowkit,
    ['--store', `embedded:${emptyFile}`, 'serve', '--listen', '127.0.0.1:0', '--token', emptyToken], 'rowkit serve (empty store)');
  await session.clear('gateway');
  await session.type('gateway', empty.url);
  await session.click('#nav-keys'); // leaves the field: its change is seen
  // A reload keeps the Gateway (this tab's sessionStorage), never the token.
  await session.reload();
  await session.until(`return document.body.dataset.ready === 'true'`, 'the page after the reload');
  const kept = await session.js(`return [document.getElementById('gateway').value, document.getElementById('token').value]`);
  assert(kept[0] === empty.url && kept[1] === '', `a reload keeps the gateway, not the token: ${JSON.stringify(kept)}`);
  await session.type('token', emptyToken);
  await session.click('#nav-keys');
  await session.until(`return document.getElementById('connection').textContent === arguments[0]`,
    'the header to name the empty server', `connected · gateway ${empty.url} (with token)`);
  const setUp = [];
  for (const v of views) {
    await viewPass(v, 'setup');
    setUp.push(v.name);
  }
  await stop(empty.child);
  const created = await tablesOf(emptyFile);
  // The views with a schema of their own; the key inspector and the table browser have none.
  for (const name of setUp.filter((n) => SCHEMA_OF[n])) {
    const schema = SCHEMA_OF[name];
    const reference = path.join(work, `reference-${schema}.redb`);
    await run(rowkit, ['--store', `embedded:${reference}`, schema, 'setup']);
    for (const want of await tablesOf(reference)) {
      const got = created.find((t) => t.table === want.table);
      assert(got && JSON.stringify(got.families) === JSON.stringify(want.families),
        `${name}'s Set up created table ${want.table} as \`rowkit ${schema} setup\` does: ${JSON.stringify(got)} vs ${JSON.stringify(want)}`);
    }
  }
  console.log(`e2e: setup: ${setUp.length ? setUp.join(', ') : 'no view'} set up an empty server (tables checked with the CLI)`);
  await session.clear('gateway');
  await session.type('token', token);
  await session.click('#nav-keys');

  // The gateway stops: every view shows an error within seconds and the header says so.
  await stop(gateway.child);
  const started = Date.now();
  await session.waitFor(OFFLINE_ERROR_MS, `return document.getElementById('connection').dataset.state === 'unreachable'`,
    'the header to notice the stopped gateway');
  const [downText] = await connectionShown();
  assert(downText.startsWith(`cannot reach the gateway at ${gateway.url} since `), `the header says the gateway is gone: ${downText}`);
  console.log(`e2e: offline: the header noticed after ${((Date.now() - started) / 1000).toFixed(1)} s: ${downText}`);
  await page.shot('shell-offline');
  for (const v of views) {
    const t0 = Date.now();
    await viewPass(v, 'offline');
    console.log(`e2e: offline: ${v.name} showed its error in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  }
} finally {
  await session.close();
  await stop(gateway.child);
}

// From outside: what the page wrote is in the store.
for (const v of views) if (v.after) await v.after(cli);
console.log(`e2e: ok (shell, navigation by keyboard, 401 alert before the token, back/forward, reload, deep link, 900 px, axe; views ${views.map((v) => v.name).join(', ')}; setup on an empty server; offline; store checked)`);
// chromedriver keeps the event loop alive; exiting runs `cleanup`.
process.exit(0);
