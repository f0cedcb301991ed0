// Runs the esbuild bundle (dist/: browser.html, the bundle, its wasm asset, mounttable.json) in
// headless Chromium through the e2e harness's WebDriver helpers, served over HTTP by the wasm
// harness's serve-dir.mjs, and checks its outcome and that it exports what the types declare.
// Usage: node browser-run.mjs DIST_DIR EXPORTS_JSON
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { openSession } from '../e2e/webdriver.mjs';

const [dist, exportsFile] = process.argv.slice(2);
const children = [];
const stopAll = () => { for (const c of children) c.kill(); };
process.on('exit', stopAll);

const server = spawn(process.execPath, [fileURLToPath(new URL('../harness/serve-dir.mjs', import.meta.url)), dist], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
children.push(server);
const [firstLine] = await once(server.stdout, 'data');
const base = String(firstLine).trim();

const session = await openSession(children);
try {
  await session.navigate(`${base}/browser.html`);
  const outcome = await session.waitFor(60_000, 'return window.rowkitOutcome', 'the bundle to run its checks');
  if (outcome.error) throw new Error(`in Chromium: ${outcome.error}`);
  for (const line of outcome.checked) console.log(`browser: ok: ${line}`);
  const declared = JSON.parse(fs.readFileSync(exportsFile, 'utf8'));
  if (JSON.stringify(outcome.exports) !== JSON.stringify(declared)) {
    throw new Error(`the bundle's rowkit exports ${outcome.exports}, rowkit.d.ts declares ${declared}`);
  }
  console.log(`browser: ok: exports the ${declared.length} values rowkit.d.ts declares; wasm loaded from ${outcome.wasmUrl}`);
} finally {
  await session.close();
}
process.exit(0);
