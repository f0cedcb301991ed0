// End-to-end test of the browser tool (wasm/www): `rowkit serve --www wasm/www` on a fresh
// embedded store (set up with `rowkit <schema> setup`), headless Chromium driven through
// chromedriver's W3C WebDriver HTTP API. One operation per schema through the page, a key
// decoded in the inspector and a table scanned in the browser; a screenshot of each panel goes
// to OUT_DIR. Then the gateway is stopped (the redb file has one owner at a time) and
// `rowkit admin dump --json` checks from outside that the rows were written.
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
async function startAndFindAddress(cmd, args, what) {
  const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });
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
const serveCmd = process.env.ROWKIT_SERVE_CMD; // override for local runs without `rowkit serve`
const gateway = serveCmd
  ? await startAndFindAddress(serveCmd, [store.slice('embedded:'.length), www], 'gateway')
  : await startAndFindAddress(rowkit, ['--store', store, 'serve', '--listen', '127.0.0.1:0', '--www', www], 'rowkit serve');

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
// Clicks a panel's operation button and returns the output text once it has changed.
async function op(panel, name) {
  await js(`document.getElementById(arguments[0]).textContent = ''`, `${panel}-out`);
  await call('POST', `${s}/element/${await find(`#${panel}-form button[data-op="${name}"]`)}/click`, {});
  await until(`const o = document.getElementById(arguments[0]);
    return o.textContent !== '' && !o.hasAttribute('aria-busy');`, `${panel} ${name}`, `${panel}-out`);
  const [text, failed] = await js(`const o = document.getElementById(arguments[0]);
    return [o.textContent, o.classList.contains('error')];`, `${panel}-out`);
  check(!failed, `${panel} ${name} succeeded, got: ${text}`);
  return text;
}
async function screenshot(sectionId) {
  const png = await call('GET', `${s}/element/${await find(`#${sectionId}`)}/screenshot`);
  const file = path.join(outDir, `${sectionId}.png`);
  fs.writeFileSync(file, Buffer.from(png, 'base64'));
  console.log(`e2e: screenshot ${file}`);
}

const results = {};
try {
  await call('POST', `${s}/url`, { url: gateway.url + '/' });
  await until(`return document.body.dataset.ready === 'true'`, 'the page to load the wasm package');

  await type('mt-name', 'e2e/svc');
  await type('mt-server', '/127.0.0.1:8101');
  results.mount = await op('mt', 'mount');
  results.resolve = JSON.parse(await op('mt', 'resolve'));
  check(results.resolve.servers[0]?.server === '/127.0.0.1:8101', 'resolve shows the mounted server');
  await screenshot('mt');

  await type('gold-commit', '1000');
  await op('gold', 'put');
  results.tile = JSON.parse(await op('gold', 'tile'));
  check(results.tile.traces.some((t) => t.digest === '8db9913366b07bd14df9a68459e2958b'), 'the tile has the digest put');
  await screenshot('gold');

  await type('s3-bucket', 'e2e-bucket');
  await op('s3', 'bucket');
  await op('s3', 'put');
  results.list = JSON.parse(await op('s3', 'list'));
  check(JSON.stringify(results.list.CommonPrefixes) === '["photos/"]', 'the listing groups photos/');
  await screenshot('s3');

  await type('graph-id', 'e2e');
  await op('graph', 'create');
  await op('graph', 'add');
  results.query = JSON.parse(await op('graph', 'query'));
  check(results.query.length === 1, 'the graph has one triple');
  await screenshot('graph');

  await type('key-input', 'e2e-bucket\\x00\\x7fMphotos/cat.jpg');
  await call('POST', `${s}/element/${await find('#key-form button')}/click`, {});
  await until(`return document.querySelector('#key-out table') !== null`, 'the decoded key');
  const keyText = await js(`return document.getElementById('key-out').textContent`);
  check(keyText.includes('photos/cat.jpg') && keyText.includes('s3'), `the inspector decodes an s3 key: ${keyText}`);
  await screenshot('keys');

  await js(`document.getElementById('browse-table').value = 'badwolf'`);
  await type('browse-prefix', 'e2e:');
  await call('POST', `${s}/element/${await find('#browse-form button')}/click`, {});
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
console.log('e2e: ok (mt mount, gold put, s3 bucket+put, graph create+add; inspector; browser; dump checked)');
// chromedriver keeps the event loop alive; exiting runs `cleanup`.
process.exit(0);
