// End-to-end test of the browser tool (wasm/www): `rowkit serve --www wasm/www --token T` on a
// fresh embedded store (set up with `rowkit <schema> setup`), headless Chromium driven through
// chromedriver's W3C WebDriver HTTP API. The page itself loads without the token (a navigation
// cannot send a bearer header); a scan before the token is typed in fails with an alert, then
// one operation per schema runs through the page (the first by pressing Enter in a field, which
// must run the panel's main operation), a key is decoded in the inspector and a table scanned
// in the browser; a screenshot of each panel goes to OUT_DIR. Then the gateway is stopped (the
// redb file has one owner at a time) and `rowkit admin dump --json` checks from outside that
// the rows were written.
//
// Usage: node e2e.mjs ROWKIT_BIN WWW_DIR OUT_DIR   (CHROMEDRIVER: chromedriver path)
// Exit 0 when every check passes; any failure throws (exit 1) with what was expected.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const [rowkit, www, outDir] = process.argv.slice(2);
if (!rowkit || !www || !outDir) throw new Error('usage: node e2e.mjs ROWKIT_BIN WWW_DIR OUT_DIR');
if (!fs.existsSync(path.join(www, 'pkg', 'rowkit.js'))) throw new Error(`${www}/pkg missing: run wasm/build.sh`);
fs.mkdirSync(outDir, { recursive: true });
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'rowkit-e2e-'));
const store = `embedded:${path.join(work, 'e2e.redb')}`;
const children = [];
const cleanup = () => {
  for (const c of children) c.kill();
  fs.rmSync(work, { recursive: true, force: true });
};
process.on('exit', cleanup);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const check = (cond, what) => { if (!cond) throw new Error(`check failed: ${what}`); };

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

async function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

for (const schema of ['mt', 'gold', 's3', 'graph']) {
  execFileSync(rowkit, ['--store', store, schema, 'setup'], { stdio: 'ignore' });
}
const token = `e2e-${crypto.randomUUID()}`;
// Override for local runs without `rowkit serve`; it reads the token from ROWKIT_GATEWAY_TOKEN.
const serveCmd = process.env.ROWKIT_SERVE_CMD;
const gateway = serveCmd
  ? await startAndFindAddress(serveCmd, [store.slice('embedded:'.length), www], 'gateway',
    { ...process.env, ROWKIT_GATEWAY_TOKEN: token })
  : await startAndFindAddress(rowkit,
    ['--store', store, 'serve', '--listen', '127.0.0.1:0', '--www', www, '--token', token], 'rowkit serve');

const port = await freePort();
const driver = spawn(process.env.CHROMEDRIVER || 'chromedriver', [`--port=${port}`], { stdio: 'ignore' });
children.push(driver);
const wd = `http://127.0.0.1:${port}`;
async function call(method, p, body) {
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(wd + p, {
        method,
        headers: { 'content-type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      const j = await r.json();
      if (!r.ok) throw new Error(`${method} ${p}: ${JSON.stringify(j.value)}`);
      return j.value;
    } catch (e) {
      if (i > 50 || !String(e).includes('fetch failed')) throw e;
      await sleep(100); // chromedriver still starting
    }
  }
}

const session = await call('POST', '/session', {
  capabilities: { alwaysMatch: { browserName: 'chrome', 'goog:chromeOptions': {
    args: ['--headless=new', '--no-sandbox', '--disable-dev-shm-usage', '--window-size=1280,1400'],
  } } },
});
const s = `/session/${session.sessionId}`;
const ELEMENT = 'element-6066-11e4-a52e-4f735466cecf';
const js = (script, ...args) => call('POST', `${s}/execute/sync`, { script, args });
const find = async (css) => {
  const v = await call('POST', `${s}/element`, { using: 'css selector', value: css });
  const id = v[ELEMENT];
  if (!id) throw new Error(`no element id for ${css}: ${JSON.stringify(v)}`);
  return id;
};
async function type(id, text) {
  const e = await find(`#${id}`);
  await call('POST', `${s}/element/${e}/clear`, {});
  await call('POST', `${s}/element/${e}/value`, { text });
}
async function until(script, what, ...args) {
  for (let i = 0; i < 300; i++) {
    if (await js(script, ...args)) return;
    await sleep(100);
  }
  throw new Error(`timed out waiting for ${what}`);
}
// Runs `act` (which starts something that writes to OUT_ID) and returns the output once it
// has changed: its text and, for an error, the text of its role="alert" element.
async function outcome(outId, what, act) {
  await js(`document.getElementById(arguments[0]).textContent = ''`, outId);
  await act();
  await until(`const o = document.getElementById(arguments[0]);
    return o.textContent !== '' && !o.hasAttribute('aria-busy');`, what, outId);
  const [text, failed, alert] = await js(`const o = document.getElementById(arguments[0]);
    return [o.textContent, o.classList.contains('error'), o.querySelector('[role="alert"]')?.textContent ?? null];`, outId);
  check(failed === (alert !== null), `${what}: an error (and only an error) is shown as an alert`);
  return { text, alert };
}
const click = async (css) => call('POST', `${s}/element/${await find(css)}/click`, {});
// Clicks a panel's operation button and returns the output text; the operation must succeed.
async function op(panel, name) {
  const { text, alert } = await outcome(`${panel}-out`, `${panel} ${name}`,
    () => click(`#${panel}-form button[data-op="${name}"]`));
  check(alert === null, `${panel} ${name} succeeded, got: ${text}`);
  return text;
}
async function screenshot(sectionId, name = sectionId) {
  // Top-aligned first: chromedriver's own scrolling can leave a section cut at the viewport's edge.
  await js(`document.getElementById(arguments[0]).scrollIntoView({ block: 'start' })`, sectionId);
  const png = await call('GET', `${s}/element/${await find(`#${sectionId}`)}/screenshot`);
  const file = path.join(outDir, `${name}.png`);
  fs.writeFileSync(file, Buffer.from(png, 'base64'));
  console.log(`e2e: screenshot ${file}`);
}

const results = {};
try {
  // The page and the wasm package load without the token: only the data API requires it.
  await call('POST', `${s}/url`, { url: gateway.url + '/' });
  await until(`return document.body.dataset.ready === 'true'`, 'the page to load the wasm package');

  const denied = await outcome('browse-out', 'a scan without the token', () => click('#browse-form button'));
  check(denied.alert?.startsWith('unauthenticated: ') && denied.alert.includes('Authorization: Bearer'),
    `a scan without the token fails with the gateway's 401 as an alert, got: ${denied.text}`);
  await screenshot('browse', 'browse-unauthenticated');
  await type('token', token);

  // Enter in a field submits a form with its default button: in every schema panel that is the
  // main operation, never Set up (a plain button, run only when clicked).
  const defaults = await js(`return [...document.querySelectorAll('section.panel form')]
    .map((f) => [f.id, f.querySelector('button:default')?.dataset.op ?? null,
      f.querySelector('button[data-op="setup"]').type]);`);
  check(JSON.stringify(defaults) === JSON.stringify([['mt-form', 'mount', 'button'], ['gold-form', 'put', 'button'],
    ['s3-form', 'put', 'button'], ['graph-form', 'add', 'button']]), `default buttons: ${JSON.stringify(defaults)}`);
  // Pressing Enter runs Mount (Set up would answer "ok" or fail: the mount table is set up).
  await type('mt-name', 'e2e/svc');
  await type('mt-server', '/127.0.0.1:8101');
  const entered = await outcome('mt-out', 'Enter in the server field', async () => {
    await call('POST', `${s}/element/${await find('#mt-server')}/value`, { text: '\uE007' });
  });
  check(entered.alert === null && typeof JSON.parse(entered.text).deadlineUs === 'number',
    `Enter in a field runs Mount, got: ${entered.text}`);
  results.mount = entered.text;
  results.resolve = JSON.parse(await op('mt', 'resolve'));
  check(results.resolve.servers[0]?.server === '/127.0.0.1:8101', 'resolve shows the mounted server');
  await screenshot('mt');

  await type('gold-commit', '1000');
  await op('gold', 'put');
  results.tile = JSON.parse(await op('gold', 'tile'));
  check(results.tile.traces.some((t) => t.digest === '8db9913366b07bd14df9a68459e2958b'), 'the tile has the digest put');
  // Each schema panel's Check runs that schema's check machine over the gateway.
  results.goldCheck = JSON.parse(await op('gold', 'check'));
  check(results.goldCheck.schema === 'gold' && results.goldCheck.left === 0 && results.goldCheck.rows_scanned >= 2,
    `gold check: ${JSON.stringify(results.goldCheck)}`);
  await screenshot('gold');

  await type('s3-bucket', 'e2e-bucket');
  await op('s3', 'bucket');
  await op('s3', 'put');
  results.list = JSON.parse(await op('s3', 'list'));
  check(JSON.stringify(results.list.CommonPrefixes) === '["photos/"]', 'the listing groups photos/');
  results.s3Check = JSON.parse(await op('s3', 'check'));
  check(results.s3Check.left === 0 && results.s3Check.rows_scanned >= 2, `s3 check: ${JSON.stringify(results.s3Check)}`);
  await screenshot('s3');

  await type('graph-id', 'e2e');
  await op('graph', 'create');
  await op('graph', 'add');
  results.query = JSON.parse(await op('graph', 'query'));
  check(results.query.length === 1, 'the graph has one triple');
  results.graphCheck = JSON.parse(await op('graph', 'check'));
  check(results.graphCheck.left === 0 && results.graphCheck.rows_scanned === 5,
    `graph check of e2e (its graph row and four index rows): ${JSON.stringify(results.graphCheck)}`);
  await screenshot('graph');

  await type('key-input', 'e2e-bucket\\x00\\x7fMphotos/cat.jpg');
  await click('#key-form button');
  await until(`return document.querySelector('#key-out table') !== null`, 'the decoded key');
  const keyText = await js(`return document.getElementById('key-out').textContent`);
  check(keyText.includes('photos/cat.jpg') && keyText.includes('s3'), `the inspector decodes an s3 key: ${keyText}`);
  const keyCaption = await js(`return document.querySelector('#key-out table > caption')?.textContent ?? null`);
  check(keyCaption === 'Row key decoded as s3 (master)', `the inspector's table has a caption, got ${keyCaption}`);
  await screenshot('keys');

  await js(`document.getElementById('browse-table').value = 'badwolf'`);
  await type('browse-prefix', 'e2e:');
  await click('#browse-form button');
  await until(`return document.querySelector('#browse-out table') !== null`, 'the scan');
  const caption = await js(`return document.querySelector('#browse-out caption').textContent`);
  check(caption === '4 row(s)', `the browser shows the triple's four index rows, got ${caption}`);
  await screenshot('browse');
} finally {
  await call('DELETE', s).catch(() => {});
  gateway.child.kill();
  await new Promise((r) => (gateway.child.exitCode !== null ? r() : gateway.child.on('exit', r)));
}

// From outside: the rows the page wrote are in the store.
function dump(table) {
  const text = execFileSync(rowkit, ['--store', store, '--json', 'admin', 'dump', table], { encoding: 'utf8' });
  const doc = JSON.parse(text);
  const cells = Object.values(doc).find(Array.isArray) ?? [];
  return cells;
}
const mtCells = dump('mounttable');
check(mtCells.some((c) => c.row_key.endsWith('/e2e/svc') && c.qualifier === '/127.0.0.1:8101'), 'mounttable has the e2e/svc mount');
const goldCells = dump('gold');
check(goldCells.some((c) => c.value_hex === '8db9913366b07bd14df9a68459e2958b'), 'gold has the digest cell');
const s3Cells = dump('objmeta');
check(s3Cells.some((c) => c.row_key === 'e2e-bucket\\x00\\x7fMphotos/cat.jpg'), 'objmeta has the object row');
const graphCells = dump('badwolf');
check(graphCells.filter((c) => c.row_key.startsWith('e2e:')).length === 4, 'badwolf has four index rows');
check(graphCells.some((c) => c.row_key === 'graph:e2e'), 'badwolf has the graph row');
console.log('e2e: ok (page without the token, 401 alert before it; mt mount by Enter, gold put, s3 bucket+put, graph create+add; inspector; browser; dump checked)');
// chromedriver keeps the event loop alive; exiting runs `cleanup`.
process.exit(0);
