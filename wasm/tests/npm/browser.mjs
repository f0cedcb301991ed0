// The esbuild bundle's entry (`--platform=browser`, the wasm as a file asset): loads the wasm
// from the URL esbuild gives it, runs the checks and leaves the outcome in
// `window.rowkitOutcome` for the WebDriver runner (browser-run.mjs).
import init, * as rowkit from 'rowkit';
import wasmUrl from 'rowkit/rowkit_bg.wasm';
import { exportedNames, run } from './checks.mjs';

(async () => {
  try {
    await init({ module_or_path: wasmUrl });
    const vectors = await (await fetch('./mounttable.json')).json();
    window.rowkitOutcome = { checked: await run(rowkit, vectors), exports: exportedNames(rowkit), wasmUrl };
  } catch (e) {
    window.rowkitOutcome = { error: String(e && e.stack ? e.stack : e) };
  }
})();
